#!/usr/bin/env bash
# Autotunes every suite op with the teacher compiler through the harness Checker on this
# host's OpenCL device and times it against libtorch eager (matched threads, OpenBLAS too).
# Usage: bench/codegen/run.sh [BUILD_DIR] [extra kforge-codegen bench args...]
# Writes bench/results/codegen.json (command, environment and load recorded inside).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
shift || true
cmake --build "$root/$build" --target kforge-codegen kforge-sandbox >/dev/null
cd "$root"
mkdir -p bench/results
echo "uptime before: $(uptime)" >&2
"$build/bin/kforge-codegen" bench --max-schedules 4 --trials 3 --time-budget 0.5 --out bench/results/codegen.json "$@"
echo "uptime after: $(uptime)" >&2
