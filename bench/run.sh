#!/usr/bin/env bash
# Runs one benchmark by name with the command bench/README.md gives for it, so the
# table there is the one list. Usage: bench/run.sh [NAME]   (no NAME: list them)
# Called by `make bench` / `make bench BENCH=NAME`; commands assume the build folder `build`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
table=bench/README.md
# Rows look like: | `name` | what | `command` | results |
names=$(sed -n 's/^| `\([a-z0-9-]*\)` |.*/\1/p' "$table")
if [ $# -eq 0 ] || [ -z "$1" ]; then
  echo "benchmarks (bench/README.md); run one with: make bench BENCH=NAME"
  for name in $names; do
    what=$(grep "^| \`$name\` |" "$table" | awk -F' \\| ' '{print $2}' | sed 's/ (\[.*//')
    printf "  %-13s %s\n" "$name" "$what"
  done
  exit 0
fi
row=$(grep "^| \`$1\` |" "$table" || true)
if [ -z "$row" ]; then
  echo "bench: no benchmark named '$1' in $table (have: $(echo $names))" >&2
  exit 2
fi
command=$(echo "$row" | awk -F' \\| ' '{print $3}' | sed 's/^`//; s/`$//')
echo "bench $1: $command"
exec bash -c "$command"
