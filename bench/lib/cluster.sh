# Shared by bench/api/run.sh and bench/web/run.sh (source it; they are its tests):
# a throwaway PostgreSQL cluster and kforge-server for one benchmark run, removed
# on exit, and the CPU accounting both report. Needs `root` and `build_dir` set.
#   bench_cluster NAME       work dir, KFORGE_DATA_DIR, cleanup trap; sets url, uptime_before
#   bench_server [FLAGS...]  (re)starts kforge-server on one free port; sets port, base, server_pid
#   cpu_ticks PID, pg_ticks  clock ticks of a process / of this cluster's processes

bench_cluster() {
  work=$(mktemp -d "/tmp/kforge-bench-$1-XXXXXX")
  export KFORGE_DATA_DIR=$work KFORGE_PG_FAST=1
  unset KFORGE_PG_PORT
  server_pid=""
  trap bench_cleanup EXIT INT TERM
  uptime_before=$(uptime)
  url=$("$root/scripts/pg.sh" start)
  "$build_dir/bin/kforge-server" migrate --database-url "$url" >/dev/null 2>&1
}

bench_cleanup() {
  bench_stop_server
  "$root/scripts/pg.sh" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}

bench_stop_server() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

bench_server() {
  bench_stop_server
  port=${port:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
  base="http://127.0.0.1:$port"
  "$build_dir/bin/kforge-server" --port "$port" --database-url "$url" --web-dir "$root/web" "$@" \
    2>>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 1 100); do curl -fsS "$base/v1/ready" >/dev/null 2>&1 && break; sleep 0.1; done
}

# CPU time (clock ticks) of the server and of all PostgreSQL processes: per-request
# CPU cost does not depend on how busy the shared machine is, unlike rps.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() {  # this cluster's postmaster and its children only (other clusters share the user)
  local postmaster total=0 pid
  postmaster=$(head -n 1 "$(find "$work/pg" -name postmaster.pid | head -n 1)")
  for pid in "$postmaster" $(pgrep -P "$postmaster"); do total=$((total + $(cpu_ticks "$pid"))); done
  echo "$total"
}
