#!/usr/bin/env bash
# The security bench: every adversarial kernel through kforge-worker check, results in
# bench/results/security.json (run.py), and the CPU eager baseline under both allocators
# (cpu_baseline_allocator; --allocator-only refreshes just that key). Run: bench/security/run.sh [BUILD_DIR] [--allocator-only]
set -euo pipefail
exec python3 "$(dirname "$0")/run.py" "$@"
