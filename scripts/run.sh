#!/usr/bin/env bash
# Starts kforge locally: the embedded PostgreSQL (data kept in $KFORGE_DATA_DIR,
# default ./var), kforge-server on $KFORGE_PORT (default 8080), one kforge-worker,
# and supervises them: a server or worker that exits is restarted (with backoff) and
# the reason logged to $KFORGE_DATA_DIR/log/run.log; PostgreSQL is never stopped
# because a child died (and is started again if it stops). Ctrl-C stops server and
# worker, then PostgreSQL; data stays for the next run. Children's pids are in
# $KFORGE_DATA_DIR/run/. Models shipped under models/ (or $KFORGE_MODELS_DIR) are
# registered on first start. Usage: scripts/run.sh BUILD_DIR (called by `make run`).
# Test: ctest -R scripts_run_test.
set -euo pipefail
build_dir=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export KFORGE_DATA_DIR=${KFORGE_DATA_DIR:-$root/var}
port=${KFORGE_PORT:-8080}
mkdir -p "$KFORGE_DATA_DIR/log"

# A second `make run` must fail clearly, not fight over the port or the cluster.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run: port $port is already in use (another 'make run'?). Stop it, or set KFORGE_PORT." >&2
  exit 1
fi
if [ -f "$KFORGE_DATA_DIR/run.pid" ] && kill -0 "$(cat "$KFORGE_DATA_DIR/run.pid")" 2>/dev/null; then
  echo "run: kforge is already running from $KFORGE_DATA_DIR (pid $(cat "$KFORGE_DATA_DIR/run.pid"))." >&2
  exit 1
fi
echo $$ >"$KFORGE_DATA_DIR/run.pid"

if [ -z "${KFORGE_DATABASE_URL:-}" ]; then
  KFORGE_DATABASE_URL=$(scripts/pg.sh start)
  started_pg=1
else
  started_pg=0
fi
export KFORGE_DATABASE_URL

mkdir -p "$KFORGE_DATA_DIR/run"
runlog="$KFORGE_DATA_DIR/log/run.log"
say() { echo "run: $*" >&2; echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" >>"$runlog"; }

# Why a child ended, from its wait status.
describe_exit() {
  if [ "$1" -gt 128 ]; then echo "killed by SIG$(kill -l $(($1 - 128)) 2>/dev/null || echo $(($1 - 128)))"
  else echo "exit status $1"; fi
}

# supervise NAME LOG CMD...: runs CMD, restarts it whenever it exits, with a delay that
# doubles from 1 s to 30 s while it keeps dying within a minute of starting. TERM stops it.
supervise() {
  local name=$1 log=$2 child="" delay=1 started rc
  shift 2
  trap 'trap - TERM INT; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null; exit 0' TERM INT
  while true; do
    started=$(date +%s)
    "$@" 2>>"$log" &
    child=$!
    echo "$child" >"$KFORGE_DATA_DIR/run/$name.pid"
    rc=0
    wait "$child" || rc=$?
    child=""
    if [ $(($(date +%s) - started)) -ge 60 ]; then delay=1; fi
    say "$name exited ($(describe_exit "$rc")) after $(($(date +%s) - started)) s; restarting in ${delay} s (log: $log)"
    sleep "$delay" & wait $! || true
    delay=$((delay * 2 > 30 ? 30 : delay * 2))
  done
}

# Keeps the embedded cluster up: if PostgreSQL stops (crash, OOM kill), start it again.
watch_postgres() {
  trap 'exit 0' TERM INT
  while true; do
    sleep 5 & wait $! || true
    if ! scripts/pg.sh status >/dev/null 2>&1; then
      say "PostgreSQL is not running; starting it again"
      scripts/pg.sh start >/dev/null 2>>"$KFORGE_DATA_DIR/log/pg-start.log" || say "PostgreSQL did not start; retrying"
    fi
  done
}

pids=()
stop_all() {
  trap - INT TERM EXIT
  echo
  echo "run: stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ "$started_pg" = 1 ] && scripts/pg.sh stop >/dev/null
  rm -f "$KFORGE_DATA_DIR/run.pid" "$KFORGE_DATA_DIR"/run/*.pid
  echo "run: stopped (data kept in $KFORGE_DATA_DIR)"
  exit 0
}
trap stop_all INT TERM EXIT

"$build_dir/bin/kforge-server" migrate >/dev/null
# A fresh admin token for local use (only its sha256 is stored).
admin_token=$("$build_dir/bin/kforge-server" token create --scope admin --name "make run" 2>/dev/null)
# The models that ship with kforge (models/<name>/) become version 1 of <name> on first
# start; a name that has a version (even archived) is left alone.
models_dir=${KFORGE_MODELS_DIR:-$root/models}
shipped=$("$build_dir/bin/kforge-server" models ship "$models_dir" 2>>"$runlog") || say "models ship failed (see $runlog)"
shipped=$(echo "$shipped" | paste -sd ';' -)
[ -n "$shipped" ] && say "models: $shipped"
supervise kforge-server "$KFORGE_DATA_DIR/log/server.log" \
  "$build_dir/bin/kforge-server" --port "$port" --web-dir "$root/web" &
pids+=($!)
supervise kforge-worker "$KFORGE_DATA_DIR/log/worker.log" "$build_dir/bin/kforge-worker" &
pids+=($!)
if [ "$started_pg" = 1 ]; then
  watch_postgres &
  pids+=($!)
fi

for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$port/v1/ready" >/dev/null 2>&1; then break; fi
  sleep 0.1
done
cat <<MSG
kforge is running
  web UI and API  http://127.0.0.1:$port/    (try: curl http://127.0.0.1:$port/v1/health)
  database        $KFORGE_DATABASE_URL
  logs            $KFORGE_DATA_DIR/log/  (restarts: run.log)
  models          ${shipped:-none shipped in $models_dir: generations use the teacher compiler}
  admin token     $admin_token
                  (export KFORGE_TOKEN=$admin_token; build/bin/kforge --help)
Press Ctrl-C to stop.
MSG
# The supervisors never return on their own; this waits until Ctrl-C (or TERM).
while true; do wait || true; sleep 1; done
