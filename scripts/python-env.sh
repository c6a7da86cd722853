#!/usr/bin/env bash
# Makes the Python environment kforge's tests use: a venv under BUILD_DIR/py on top of
# the system python3 (Debian's python3-torch comes through --system-site-packages) with
# the pinned packages of scripts/python-requirements.txt (triton, for the Triton runner
# in its CPU interpreter). Idempotent and quiet when done. Called by `make deps`.
# Usage: scripts/python-env.sh [BUILD_DIR]
set -euo pipefail
build_dir=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
requirements="$root/scripts/python-requirements.txt"
venv="$build_dir/py"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$stamp" "$requirements"; then exit 0; fi
mkdir -p "$build_dir"
echo "python-env: creating $venv ($(tr '\n' ' ' < "$requirements"))"
/usr/bin/python3 -m venv --system-site-packages "$venv"
if "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"; then
  cp "$requirements" "$stamp"
else
  # No registry (an offline machine): the tests that need these packages say they are skipped and why.
  echo "python-env: pip install failed; tests that need $(tr '\n' ' ' < "$requirements")will be skipped" >&2
fi
