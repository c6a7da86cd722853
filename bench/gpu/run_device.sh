#!/usr/bin/env bash
# kforge on a GPU host (the H100 device machine: Ubuntu 24.04, PyTorch 2.x + Triton, CUDA,
# NVIDIA OpenCL + PoCL, no apt, no PostgreSQL), stage by stage in one call:
#   bash bench/gpu/run_device.sh build test check timing e2e teacher
#   build   unpack .devcarry/gpu-deps.tar.xz (bench/gpu/bundle_host_deps.sh), build with tests
#           ON against the host's PyTorch (KFORGE_WITH_HTTP=OFF: worker + database, no cpprest)
#   test    the gpu-labelled tests and the harness tests (the Python runner on CUDA)
#   check   kforge-worker check: suite ops on the GPU with targets opencl (NVIDIA), cuda, triton
#   timing  bench/gpu/timing_vs_do_bench.py: kforge's protocol against triton.testing.do_bench
#   e2e     PostgreSQL + kforge-server (carried) + a GPU worker; POST level-2 ops per target
#   teacher kforge-codegen bench --target cuda / triton: the teacher autotuned per suite op,
#           vs CUDA eager and torch.compile (TEACHER_TARGETS, TEACHER_FILTER, TEACHER_ARGS)
# Results land in $OUT (logs, JSON); state in build-gpu/ and var/gpu/ while the machine is warm.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/kforge_out}
mkdir -p "$OUT" var/gpu
JOBS=${JOBS:-$(nproc)}
deps=/opt/kforge-deps
export KFORGE_PYTHON=${KFORGE_PYTHON:-$(command -v python3)}
export LD_LIBRARY_PATH=$deps/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KFORGE_PG_BINDIR=$deps/lib/postgresql/15/bin
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/stages.log"; }

stage_build() {
  if [ ! -d "$deps" ]; then
    mkdir -p /opt && tar -C /opt -xJf .devcarry/gpu-deps.tar.xz && mv /opt/deps "$deps"
    sed -i "s#@DEPS@#$deps#" "$deps"/lib/x86_64-linux-gnu/pkgconfig/*.pc
  fi
  local torch_prefix
  torch_prefix=$("$KFORGE_PYTHON" -c 'import torch;print(torch.utils.cmake_prefix_path)')
  local started=$SECONDS
  # The system compiler: /opt/gcc builds against a newer libstdc++ than the binaries load.
  PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig cmake -S . -B build-gpu -G Ninja \
    -DKFORGE_WITH_HTTP=OFF -DKFORGE_BUILD_TESTS=ON -DKFORGE_RUNNER_DEVICE=cuda -DKFORGE_PYTHON="$KFORGE_PYTHON" \
    -DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$deps;$deps/lib/x86_64-linux-gnu/cmake" > "$OUT/build.log" 2>&1 &&
    cmake --build build-gpu -j"$JOBS" >> "$OUT/build.log" 2>&1
  local rc=$?
  log "build rc=$rc in $((SECONDS - started)) s"
  [ $rc -eq 0 ] || { grep -E "error|Error" "$OUT/build.log" | head -30; tail -20 "$OUT/build.log"; return 1; }
  cp -f "$deps/bin/kforge-server" "$deps/bin/kforge" build-gpu/bin/ 2>/dev/null || true
  build-gpu/bin/kforge-worker devices | tee "$OUT/devices.txt"
}

stage_test() {
  local started=$SECONDS
  # The whole suite that this build has (no HTTP tests), against a throwaway PostgreSQL
  # from the bundle; gpu-labelled tests run for real here.
  KFORGE_RUNNER_DEVICE=cuda scripts/test.sh build-gpu -j 8 > "$OUT/test.log" 2>&1
  local rc=$?
  log "test rc=$rc in $((SECONDS - started)) s: $(grep -E 'tests passed|tests failed' "$OUT/test.log" | tail -1)"
  grep -E "\(Failed\)|\(Skipped\)|Not Run|Timeout" "$OUT/test.log" | head -20
  return 0
}

stage_check() {
  python3 bench/gpu/check_suite.py --bin build-gpu/bin --out "$OUT/check.json" ${CHECK_ARGS:-} 2>&1 | tee "$OUT/check.log" | tail -40
}

stage_timing() {
  python3 bench/gpu/timing_vs_do_bench.py --runner build-gpu/bin/runner/kforge_runner.py --out "$OUT/timing.json" \
    2>&1 | tee "$OUT/timing.log" | tail -20
}

stage_teacher() {
  # One results file per target; rows are written after every op, so a run cut short
  # keeps what it measured. TEACHER_FILTER=level2/ selects a level (a path substring).
  local target
  for target in ${TEACHER_TARGETS:-cuda triton}; do
    local started=$SECONDS
    build-gpu/bin/kforge-codegen bench --target "$target" --filter "${TEACHER_FILTER:-}" \
      --out "$OUT/teacher_$target.json" ${TEACHER_ARGS:-} > "$OUT/teacher_$target.log" 2>&1
    log "teacher $target rc=$? in $((SECONDS - started)) s: $(tail -1 "$OUT/teacher_$target.log")"
  done
}

stage_e2e() {
  bash bench/gpu/e2e.sh build-gpu 2>&1 | tee "$OUT/e2e.log" | tail -40
}

[ $# -gt 0 ] || set -- build test
for stage in "$@"; do
  case "$stage" in
    build|test|check|timing|e2e|teacher) "stage_$stage" || { log "stage $stage failed"; exit 1; } ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
