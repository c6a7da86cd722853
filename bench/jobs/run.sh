#!/usr/bin/env bash
# Training/evaluation jobs benchmark: a throwaway PostgreSQL, kforge-server and one
# kforge-worker; bench/jobs/pipeline.py runs bench/jobs/cases.json through the API and
# writes bench/results/jobs.json. Usage: bench/jobs/run.sh [BUILD_DIR] (default build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
export KFORGE_DATA_DIR=$(mktemp -d /tmp/kforge-bench-jobs-XXXXXX)
export KFORGE_SUITE_DIR="$root/suite"
unset KFORGE_PG_PORT
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  "$root/scripts/pg.sh" stop >/dev/null 2>&1 || true
  rm -rf "$KFORGE_DATA_DIR"
}
trap cleanup EXIT INT TERM
export KFORGE_DATABASE_URL=$("$root/scripts/pg.sh" start)
"$build/bin/kforge-server" migrate >/dev/null
token=$("$build/bin/kforge-server" token create --scope admin --name bench 2>/dev/null)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$KFORGE_DATA_DIR/log"
"$build/bin/kforge-server" --port "$port" 2>>"$KFORGE_DATA_DIR/log/server.log" &
pids+=($!)
"$build/bin/kforge-worker" --poll-s 0.5 2>>"$KFORGE_DATA_DIR/log/worker.log" &
pids+=($!)
python3 "$root/bench/jobs/pipeline.py" --url "http://127.0.0.1:$port" --token "$token" --build "$build" \
  --data-dir "$KFORGE_DATA_DIR" --cases "$root/bench/jobs/cases.json" --out "$root/bench/results/jobs.json"
