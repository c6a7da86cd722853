#!/usr/bin/env bash
# End-to-end benchmark: the real stack (scripts/pg.sh, kforge-server, one CPU kforge-worker
# that bench/e2e/e2e.py starts per phase) and a mix of 10 suite ops posted through the API;
# writes bench/results/e2e.json. Usage: bench/e2e/run.sh [BUILD_DIR] [OUT]   (bench/README.md)
# E2E_OPS=level1/add,level2/silu_mul runs a smaller mix (a smoke run; not the committed result).
# E2E_MODELS=models registers the shipped models first, as `make run` does, so every generation
# also samples the default model (kforge-tiny) beside the teacher: what a fresh install does.
# Each worker phase starts with an empty PoCL kernel cache (POCL_CACHE_DIR) and check-result
# cache (TRUNCATE check_results), so ops are timed as new ops; the repeat phase says so.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/e2e.json}
source "$root/bench/lib/cluster.sh"
bench_cluster e2e
bench_server
token=$("$build_dir/bin/kforge-server" token create --scope admin --name e2e --database-url "$url" 2>/dev/null)
[ -z "${E2E_MODELS:-}" ] || "$build_dir/bin/kforge-server" models ship "$E2E_MODELS" --database-url "$url" >&2
python3 "$root/bench/e2e/e2e.py" --url "$base" --token "$token" --suite "$root/suite" --out "$out" \
  --worker "$build_dir/bin/kforge-worker" --database-url "$url" --log "$work/worker.log" \
  --command "${E2E_MODELS:+E2E_MODELS=$E2E_MODELS }bench/e2e/run.sh ${1:-build}" ${E2E_OPS:+--ops "$E2E_OPS"}
