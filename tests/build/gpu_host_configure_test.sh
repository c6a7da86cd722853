#!/usr/bin/env bash
# The GPU-host configuration (docs/gpu.md) configures from this tree: -DKFORGE_WITH_HTTP=OFF
# gives kforge-worker, kforge-sandbox and the tests that need no server, and no kforge-server,
# CLI or cpprestsdk. Run: ctest -R build_gpu_host_configure_test (configure only, ~20 s).
# Usage: tests/build/gpu_host_configure_test.sh SOURCE_DIR [PREFIX_PATH]
# PREFIX_PATH: the enclosing build's CMAKE_PREFIX_PATH (a GPU host finds pip's torch there).
set -euo pipefail
src=$1
prefix=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake -S "$src" -B "$dir" -G Ninja -DKFORGE_WITH_HTTP=OFF -DKFORGE_BUILD_TESTS=ON ${prefix:+"-DCMAKE_PREFIX_PATH=$prefix"} \
  > "$dir/configure.log" 2>&1 ||
  { tail -30 "$dir/configure.log"; echo "FAIL: configure with KFORGE_WITH_HTTP=OFF"; exit 1; }
targets=$(ninja -C "$dir" -t targets all | cut -d: -f1)
for want in bin/kforge-worker bin/kforge-sandbox bin/kforge-probe bin/worker_jobs_test; do
  grep -qx "$want" <<< "$targets" || { echo "FAIL: $want is not a target with KFORGE_WITH_HTTP=OFF"; exit 1; }
done
for unwanted in bin/kforge-server bin/kforge bin/cli_test bin/web_browser_test; do
  if grep -qx "$unwanted" <<< "$targets"; then echo "FAIL: $unwanted is built with KFORGE_WITH_HTTP=OFF"; exit 1; fi
done
if grep -rq "cpprest" "$dir/build.ninja"; then echo "FAIL: build.ninja names cpprest with KFORGE_WITH_HTTP=OFF"; exit 1; fi
echo "ok: KFORGE_WITH_HTTP=OFF configures the worker without the server, the CLI or cpprestsdk"
