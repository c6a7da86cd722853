#!/usr/bin/env bash
# Starts kforge locally: the embedded PostgreSQL (data kept in $KFORGE_DATA_DIR,
# default ./var), kforge-server on $KFORGE_PORT (default 8080), one kforge-worker.
# Ctrl-C stops server and worker, then PostgreSQL; data stays for the next run.
# Usage: scripts/run.sh BUILD_DIR   (called by `make run`)
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

pids=()
stop_all() {
  trap - INT TERM EXIT
  echo
  echo "run: stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ "$started_pg" = 1 ] && scripts/pg.sh stop >/dev/null
  rm -f "$KFORGE_DATA_DIR/run.pid"
  echo "run: stopped (data kept in $KFORGE_DATA_DIR)"
  exit 0
}
trap stop_all INT TERM EXIT

"$build_dir/bin/kforge-server" migrate >/dev/null
# A fresh admin token for local use (only its sha256 is stored).
admin_token=$("$build_dir/bin/kforge-server" token create --scope admin --name "make run" 2>/dev/null)
"$build_dir/bin/kforge-server" --port "$port" --web-dir "$root/web" 2>>"$KFORGE_DATA_DIR/log/server.log" &
pids+=($!)
"$build_dir/bin/kforge-worker" 2>>"$KFORGE_DATA_DIR/log/worker.log" &
pids+=($!)

for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$port/v1/ready" >/dev/null 2>&1; then break; fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "run: kforge-server exited; see $KFORGE_DATA_DIR/log/server.log" >&2
    tail -n 5 "$KFORGE_DATA_DIR/log/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
cat <<MSG
kforge is running
  web UI and API  http://127.0.0.1:$port/    (try: curl http://127.0.0.1:$port/v1/health)
  database        $KFORGE_DATABASE_URL
  logs            $KFORGE_DATA_DIR/log/
  admin token     $admin_token
                  (export KFORGE_TOKEN=$admin_token; build/bin/kforge --help)
Press Ctrl-C to stop.
MSG
wait -n "${pids[@]}" || true
echo "run: a process exited; see $KFORGE_DATA_DIR/log/" >&2
exit 1
