#!/usr/bin/env bash
# The security bench: every adversarial kernel through kforge-worker check, results in
# bench/results/security.json (run.py). Run: bench/security/run.sh [BUILD_DIR]
set -euo pipefail
exec python3 "$(dirname "$0")/run.py" "$@"
