#!/usr/bin/env bash
# Runs every test through ctest against a throwaway PostgreSQL cluster, which is
# stopped and removed afterwards whatever happens. Called by `make test`.
# Usage: scripts/test.sh BUILD_DIR [ctest args...]
set -euo pipefail
build_dir=${1:-build}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)

export KFORGE_DATA_DIR=$(mktemp -d /tmp/kforge-test-XXXXXX)
export KFORGE_PG_FAST=1
unset KFORGE_PG_PORT
cleanup() {
  "$root/scripts/pg.sh" stop >/dev/null 2>&1 || true
  rm -rf "$KFORGE_DATA_DIR"
}
trap cleanup EXIT INT TERM

echo "test: starting throwaway PostgreSQL in $KFORGE_DATA_DIR"
export KFORGE_TEST_DATABASE_URL=$("$root/scripts/pg.sh" start)
echo "test: $KFORGE_TEST_DATABASE_URL"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" "$@"
