#!/usr/bin/env bash
# Queue benchmark: starts a throwaway PostgreSQL cluster (durable settings, as
# `make run` uses), runs bench/queue/cases.json with kforge-bench-queue and
# writes bench/results/queue.json. Usage: bench/queue/run.sh [BUILD_DIR] [--only case,...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"  # paths below are repo-relative, so the command recorded in the results is too
build_dir=${1:-build}
shift || true
cmake --build "$build_dir" --target kforge-bench-queue kforge-worker >/dev/null

export KFORGE_DATA_DIR=$(mktemp -d /tmp/kforge-bench-XXXXXX)
unset KFORGE_PG_PORT
cleanup() {
  "$root/scripts/pg.sh" stop >/dev/null 2>&1 || true
  rm -rf "$KFORGE_DATA_DIR"
}
trap cleanup EXIT INT TERM
url=$("$root/scripts/pg.sh" start)
echo "bench: PostgreSQL at $url (data in $KFORGE_DATA_DIR), load: $(cat /proc/loadavg)" >&2
"$build_dir/bin/kforge-bench-queue" --database-url "$url" --cases bench/queue/cases.json \
  --out bench/results/queue.json "$@"
