#!/usr/bin/env bash
# Autotunes every suite op with the teacher compiler on this host's OpenCL device and
# times it against libtorch eager (same process, threads = device compute units).
# Usage: bench/codegen/run.sh [BUILD_DIR] [extra kforge-codegen bench args...]
# Writes bench/results/codegen.json (command, environment and load recorded inside).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
shift || true
cmake --build "$root/$build" --target kforge-codegen >/dev/null
cd "$root"
mkdir -p bench/results
echo "uptime before: $(uptime)" >&2
"$build/bin/kforge-codegen" bench --max-schedules 4 --time-budget 0.25 --out bench/results/codegen.json "$@"
echo "uptime after: $(uptime)" >&2
