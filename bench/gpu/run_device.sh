#!/usr/bin/env bash
# kforge on a GPU host (the H100 device machine: Ubuntu 24.04, PyTorch 2.x + Triton, CUDA,
# NVIDIA OpenCL + PoCL, no apt, no PostgreSQL), stage by stage in one call:
#   bash bench/gpu/run_device.sh build test check timing e2e teacher
#   prebuilt  instead of build: unpack the binaries bench/gpu/build_prebuilt.sh made here
#   build   unpack .devcarry/gpu-deps.tar.xz (bench/gpu/bundle_host_deps.sh), build with tests
#           ON against the host's PyTorch (KFORGE_WITH_HTTP=OFF: worker + database, no cpprest)
#   gtest   GTESTS='bin[:K/N][=FILTER] ...': test binaries run directly (for a prebuilt tree); gtest_wait
#   test    the gpu-labelled tests and the harness tests (the Python runner on CUDA)
#   check   kforge-worker check: suite ops on the GPU with targets opencl (NVIDIA), cuda, triton
#   timing  bench/gpu/timing_vs_do_bench.py: kforge's protocol against triton.testing.do_bench
#           (TIMING_ARGS: its extra flags; default --worker build-gpu/bin/kforge-worker, the CUDA case)
#   e2e     PostgreSQL + kforge-server (carried) + a GPU worker; POST level-2 ops per target
#           (E2E_OPS, E2E_TARGETS, E2E_SAMPLES: samples per generation, default 4)
#   train   bench/training/run_device.sh $TRAIN_STAGES (default 'restore sft eval-sft ship') with the
#           prebuilt kforge-train; results under $OUT/train (the shipped model in $OUT/train/models)
#   jitcost bench/gpu/jit_cost.py: a teacher triton candidate's first calls per shape in a fresh
#           process (Triton's JIT outside the harness; JITCOST_ARGS, e.g. --ops silu_mul)
#   adversarial  every kernel of tests/worker/harness/adversarial_gpu/manifest.json, per target
#   harness  overhead, candidates/s (cold, warm) and timing spread per target
#   teacher kforge-codegen bench --target cuda / triton: the teacher autotuned per suite op,
#           vs CUDA eager and torch.compile (TEACHER_TARGETS, TEACHER_FILTER, TEACHER_ARGS)
#   kernelbench  bench/kernelbench/run.py --check on the carried checkout .cache/kernelbench
#           (KB_TARGET, default triton; KB_LEVELS, default 1,2; KB_JOBS, default 6; KB_CHECK_FLAGS:
#           kforge-worker check's flags, e.g. '--trials 2 --time-budget 0.5'; KB_ARGS: more run.py
#           flags, e.g. --only 1,2,3; KB_GPUS=N: N runs side by side, one per GPU); rows are
#           written after every problem, so a call cut off keeps what it checked
#   jaildiag  which jail layer hides NVIDIA's OpenCL platform from a jailed child: one check
#           of an honest OpenCL kernel on the GPU per layer left out (KFORGE_SANDBOX_DISABLE)
#   jailcost  what a jailed child's start costs here: checks in a row and 16 at once, per sandbox layer off
#   diag    why tests crash on this host (std::filesystem symbols, a backtrace)
#   summarize  bench/gpu/summarize.py: $OUT/gpu.json in the keys of bench/results/gpu.json
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
# At most 8 files come back from a device call: everything but the summaries (and the training
# state, which would push run.tgz over the 16 MiB a file may have) goes into run.tgz.
# A second invocation in the same call packs into run2.tgz, and so on: none overwrites another's.
pack() {
  local files name=run.tgz n=1
  files=$(cd "$OUT" && ls | grep -v -E '^(gpu.json|kernelbench.json|stages.log|train_state.tgz|run[0-9]*.tgz)$')
  while [ -e "$OUT/$name" ]; do n=$((n + 1)); name=run$n.tgz; done
  [ -n "$files" ] && (cd "$OUT" && tar czf "$name" $files && rm -rf $files)
}
trap pack EXIT
# A device call is killed at its time limit, and then nothing comes back: every stage runs
# under what is left of BUDGET_S (default 540 s), so the summary and the archive always do.
deadline=$((SECONDS + ${BUDGET_S:-540}))
# CALL_END (epoch seconds, e.g. `export CALL_END=$(( $(date +%s) + 570 ))` first thing in the
# call): every invocation of the call also ends by then, so budgets that add up to more than
# the call's limit cannot get the call killed (and its files lost) as happened on 2026-11-28.
if [ -n "${CALL_END:-}" ]; then
  left=$((CALL_END - $(date +%s)))
  [ $((SECONDS + left)) -lt $deadline ] && deadline=$((SECONDS + left))
fi
bounded() {
  local left=$((deadline - SECONDS - 25))
  [ $left -gt 10 ] || { log "no time left for: $*"; return 124; }
  timeout -k 5 "$left" "$@"
}

unpack_deps() {
  if [ ! -d "$deps" ]; then
    mkdir -p /opt && tar -C /opt -xJf .devcarry/gpu-deps.tar.xz && mv /opt/deps "$deps"
    sed -i "s#@DEPS@#$deps#" "$deps"/lib/x86_64-linux-gnu/pkgconfig/*.pc
  fi
}

# The host's torch and its CUDA wheels (NVRTC, NCCL) stand in for the build machine's.
use_host_torch() {
  # Once: on a warm machine the line after this function has already run it when `prebuilt` comes.
  [ -n "${KFORGE_HOST_TORCH:-}" ] && return
  local torch_lib
  torch_lib=$("$KFORGE_PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=$torch_lib:$(ls -d "$torch_lib"/../../nvidia/*/lib 2>/dev/null | tr '\n' ':')$LD_LIBRARY_PATH
  KFORGE_HOST_TORCH=1
}
[ -f build-gpu/PREBUILT ] && use_host_torch

# prebuilt: the binaries bench/gpu/build_prebuilt.sh made on the CPU machine against the same
# PyTorch wheel (.devcarry/prebuilt.tar.xz), instead of `build`: a fresh GPU host spends about
# 570 s of device time building (measured 2026-11-28 on 32 cores), this stage a few seconds.
stage_prebuilt() {
  unpack_deps
  mkdir -p build-gpu && tar -C build-gpu -xJf .devcarry/prebuilt.tar.xz || return 1
  use_host_torch
  local missing
  missing=$(ldd build-gpu/bin/kforge-worker build-gpu/bin/kforge-codegen | grep 'not found' | sort -u)
  [ -z "$missing" ] || { log "prebuilt: missing libraries: $missing"; return 1; }
  # The e2e stage's server and CLI come from the deps bundle (HTTP is built on the CPU machine).
  cp -f "$deps/bin/kforge-server" "$deps/bin/kforge" build-gpu/bin/ 2>/dev/null || true
  log "prebuilt: $(cat build-gpu/PREBUILT 2>/dev/null)"
  build-gpu/bin/kforge-worker devices | tee "$OUT/devices.txt"
}

stage_build() {
  unpack_deps
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
  local started=$SECONDS done_file=var/gpu/tests_done.txt exclude=""
  # The whole suite that this build has (no HTTP tests), against a throwaway PostgreSQL
  # from the bundle; gpu-labelled tests run for real here. It takes longer than one call
  # (about 4000 s of test time): TESTS_RESUME=1 on the warm machine runs only the tests
  # that have not yet passed or skipped on this build (var/gpu/tests_done.txt), so two
  # calls make one run of the suite; without it the list starts over.
  if [ -n "${TESTS_RESUME:-}" ] && [ -s "$done_file" ]; then
    exclude=$(python3 -c 'import re, sys
print("^(" + "|".join(re.escape(l.strip()) for l in open(sys.argv[1]) if l.strip()) + ")$")' "$done_file")
    log "test: resuming, $(wc -l < "$done_file") tests already passed or skipped"
  else
    rm -f "$done_file"
  fi
  KFORGE_RUNNER_DEVICE=cuda bounded scripts/test.sh build-gpu -j "${TEST_JOBS:-8}" ${TESTS:+-R "$TESTS"} \
    ${exclude:+-E "$exclude"} > "$OUT/test.log" 2>&1
  local rc=$?
  grep -E 'Test +#[0-9]+: ' "$OUT/test.log" | grep -E '(Passed|\*\*\*Skipped) +[0-9.]+ sec' |
    sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' >> "$done_file"
  log "test rc=$rc in $((SECONDS - started)) s: $(grep -E 'tests passed|tests failed' "$OUT/test.log" | tail -1);" \
    "$(wc -l < "$done_file") of $(cd build-gpu && ctest -N | grep -c 'Test *#') passed or skipped on this build so far"
  grep -E "\(Failed\)|\(Skipped\)|Not Run|Timeout" "$OUT/test.log" | head -20
  # Every test's whole output, skipped ones included (ctest prints only failures).
  cp build-gpu/Testing/Temporary/LastTest.log "$OUT/test_all_output.log" 2>/dev/null || true
  return 0
}

# gtest: GoogleTest binaries of build-gpu/bin run directly (a prebuilt tree has no ctest files).
# GTESTS: 'binary[:K/N][=FILTER] ...'; K/N runs shard K of N as ctest's nameKofN does. Entries
# after the first run in the background (the first runs alone: the NCCL test holds both GPUs)
# while later stages go on; gtest_wait collects them. Logs: $OUT/gtest.<binary>.<K>.log.
stage_gtest() {
  local first=1 entry
  for entry in ${GTESTS:-}; do
    local spec=${entry%%=*} filter="*" bin shard k n log
    [ "$spec" != "$entry" ] && filter=${entry#*=}
    bin=${spec%%:*}; shard=${spec#"$bin"}; shard=${shard#:}
    log="$OUT/gtest.$bin.${shard%%/*}.log"
    [ -n "$shard" ] || log="$OUT/gtest.$bin.all.log"
    local env=(GTEST_FILTER="$filter")
    if [ -n "$shard" ]; then
      k=${shard%%/*}; n=${shard#*/}
      env+=(GTEST_TOTAL_SHARDS="$n" GTEST_SHARD_INDEX=$((k - 1)))
    fi
    if [ $first -eq 1 ]; then
      run_gtest "$log" "$bin" "${env[@]}"
      log "gtest $entry: $(gtest_summary "$log")"
      first=0
    else
      run_gtest "$log" "$bin" "${env[@]}" &
      log "gtest $entry started in the background"
    fi
  done
}

run_gtest() {  # LOG BINARY VAR=VALUE...: the binary under the stage budget, its exit status appended
  local log=$1 bin=$2
  shift 2
  (export "$@"; bounded "build-gpu/bin/$bin" > "$log" 2>&1; echo "rc=$?" >> "$log")
}

gtest_summary() { grep -E '^\[  (PASSED|FAILED|SKIPPED) |^rc=' "$1" | tr '\n' ' '; }

stage_gtest_wait() {
  wait
  local log
  for log in "$OUT"/gtest.*.log; do log "$(basename "$log"): $(gtest_summary "$log")"; done
}

stage_check() {
  bounded python3 bench/gpu/check_suite.py --bin build-gpu/bin --out "$OUT/check.json" ${CHECK_ARGS:-} 2>&1 | tee "$OUT/check.log" | tail -40
}

stage_timing() {
  bounded python3 bench/gpu/timing_vs_do_bench.py --runner build-gpu/bin/runner/kforge_runner.py \
    ${TIMING_ARGS---worker build-gpu/bin/kforge-worker} --out "$OUT/timing.json" \
    2>&1 | tee "$OUT/timing.log" | tail -20
}

stage_teacher() {
  # Per target, TEACHER_SHARDS runs of kforge-codegen bench side by side (--shard I/N;
  # all targets at once), taking turns to time (--timing-lock), so compiling, checking and
  # torch.compile's compiles overlap while every measurement runs alone on the GPU. Each
  # shard writes its rows after every op and resumes (--resume), so a call cut off by its
  # budget keeps what it measured and the next call on the warm machine measures only the
  # ops still missing (TEACHER_FRESH=1 starts over). TEACHER_FILTER=level2/ selects a
  # level (a path substring). The shards' rows are merged into teacher_<target>.json.
  local target shard shards=${TEACHER_SHARDS:-4} started=$SECONDS
  for target in ${TEACHER_TARGETS:-cuda triton}; do
    for shard in $(seq 0 $((shards - 1))); do
      local results=var/gpu/teacher_${target}_${shard}of${shards}.json
      [ -z "${TEACHER_FRESH:-}" ] || rm -f "$results"
      bounded build-gpu/bin/kforge-codegen bench --target "$target" --filter "${TEACHER_FILTER:-}" --resume \
        --shard "$shard/$shards" --timing-lock "$root/var/gpu/timing.lock" --out "$results" ${TEACHER_ARGS:-} \
        >> "$OUT/teacher_${target}_$shard.log" 2>&1 &
    done
  done
  wait
  for target in ${TEACHER_TARGETS:-cuda triton}; do
    python3 - "$OUT/teacher_$target.json" var/gpu/teacher_${target}_*of${shards}.json <<'PY'
import json, sys
out, parts = sys.argv[1], [p for p in sys.argv[2:] if p.endswith(".json")]
merged = None
for path in sorted(parts):
    try:
        part = json.load(open(path))
    except (OSError, ValueError):
        continue
    if merged is None:
        merged = dict(part, ops=[], shards=[])
    merged["ops"] += part.get("ops", [])
    merged["shards"].append(part.get("command"))
if merged:
    merged["ops"].sort(key=lambda row: (row.get("level", 0), row.get("name", "")))
    json.dump(merged, open(out, "w"), indent=1)
    print(f"{out}: {len(merged['ops'])} ops from {len(merged['shards'])} shards")
PY
  done
  log "teacher (${TEACHER_TARGETS:-cuda triton}, $shards shards each) in $((SECONDS - started)) s"
}

stage_e2e() {
  bounded bash bench/gpu/e2e.sh build-gpu "${E2E_OPS:-silu_mul,gelu_add,softmax_bias,rms_norm_silu,add_layer_norm}" \
    "${E2E_TARGETS:-triton,cuda,opencl}" 2>&1 | tee "$OUT/e2e.log" | tail -40
}

stage_train() {
  # The training pipeline with the prebuilt kforge-train on the GPU (and its harness checks on
  # the host's PoCL), e.g. on the dataset built and packed on the CPU machine:
  # TRAIN_STAGES='restore sft eval-sft ship' with .devcarry/train_state.tgz carried.
  local rc
  (export BIN=build-gpu/bin/kforge-train OUT="$OUT/train"
   bounded bash bench/training/run_device.sh ${TRAIN_STAGES:-restore sft eval-sft ship}) 2>&1 | tee "$OUT/train.log" | tail -20
  rc=${PIPESTATUS[0]}
  # `pack`'s state comes back as a file of its own (pack() keeps it out of run.tgz).
  if [ -f "$OUT/train/train_state.tgz" ]; then mv "$OUT/train/train_state.tgz" "$OUT/"; fi
  return "$rc"
}

stage_jitcost() {
  bounded "$KFORGE_PYTHON" bench/gpu/jit_cost.py --bin build-gpu/bin --out "$OUT/jit_cost.json" ${JITCOST_ARGS:-} 2>&1 |
    tee "$OUT/jit_cost.log" | tail -12
}

stage_adversarial() {
  bounded python3 bench/gpu/adversarial.py --bin build-gpu/bin --out "$OUT/adversarial.json" 2>&1 | tee "$OUT/adversarial.log" | tail -40
}

stage_harness() {
  bounded python3 bench/gpu/harness_bench.py --bin build-gpu/bin --out "$OUT/harness.json" ${HARNESS_ARGS:-} 2>&1 | tee "$OUT/harness.log" | tail -10
}

stage_kernelbench() {
  # KB_GPUS=N (a host with N GPUs): N runs side by side, run I on GPU I (CUDA_VISIBLE_DEVICES)
  # with every Nth problem (--shard I/N) and its own timing lock, combined into one file.
  local gpus=${KB_GPUS:-1} i pids=() shards=""
  for ((i = 0; i < gpus; i++)); do
    local out="$OUT/kernelbench.json" log="$OUT/kernelbench.log" extra=()
    if [ "$gpus" -gt 1 ]; then
      out="$OUT/kernelbench.shard$i.json" log="$OUT/kernelbench.shard$i.log"
      extra=(--shard "$i/$gpus" --timing-lock "var/gpu/timing.gpu$i.lock")
      shards+="${shards:+,}$out"
    fi
    # One GPU per shard; a single run keeps the caller's CUDA_VISIBLE_DEVICES (unset: every GPU).
    (
      [ "$gpus" -gt 1 ] && export CUDA_VISIBLE_DEVICES=$i
      bounded python3 bench/kernelbench/run.py --kernelbench .cache/kernelbench --check --target "${KB_TARGET:-triton}" \
        --levels "${KB_LEVELS:-1,2}" --bin build-gpu/bin --jobs "${KB_JOBS:-6}" --python "$KFORGE_PYTHON" \
        --out "$out" "${extra[@]}" ${KB_CHECK_FLAGS:+--check-flags "$KB_CHECK_FLAGS"} ${KB_ARGS:-} > "$log" 2>&1
    ) &
    pids+=($!)
  done
  local rc=0
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  if [ "$gpus" -gt 1 ]; then
    python3 bench/kernelbench/run.py --kernelbench .cache/kernelbench --combine "$shards" --out "$OUT/kernelbench.json" \
      >> "$OUT/kernelbench.log" 2>&1
  fi
  log "kernelbench rc=$rc on $gpus GPU(s): $(tail -3 "$OUT/kernelbench.log" | tr '\n' ' ')"
}

stage_jaildiag() {
  local layer
  log "jaildiag: OpenCL loader variables: $(env | grep -E '^(OCL_ICD|OPENCL_VENDOR)' | tr '\n' ' ')"
  log "jaildiag: /etc/OpenCL/vendors: $(ls -l /etc/OpenCL/vendors 2>&1 | tr '\n' ' ')"
  for layer in none env user network filesystem seccomp limits all; do
    local disable=$layer
    [ "$layer" = none ] && disable=
    local line
    line=$(KFORGE_SANDBOX_DISABLE=$disable bounded build-gpu/bin/kforge-worker check suite/level2/silu_mul.json \
      tests/worker/harness/adversarial_gpu/honest.cl --target opencl --device gpu --trials 2 --no-time 2>&1 | tail -1)
    log "jaildiag without $layer: ${line:0:300}"
  done
}

# What a jailed child's start costs on this host, alone and 16 at once: JAILCOST_RUNS checks of
# an honest OpenCL kernel on PoCL in a row, then 16 side by side, per KFORGE_SANDBOX_DISABLE
# setting. The kernel is the same every run and the children build the warm-up kernel (a
# generation's children): outside the jail PoCL's kernel cache answers both builds, inside it
# each is a full compile (what made training's checks slow until c4901a8; README-training.md).
stage_jailcost() {
  log "jailcost: kernel $(uname -r), $(wc -l < /proc/self/mountinfo) mounts, $(nproc) cores"
  local disable run start
  local check=("${JAILCOST_BIN:-build-gpu/bin}/kforge-worker" check suite/level2/silu_mul.json
               tests/worker/harness/adversarial_gpu/honest.cl --target opencl --device cpu --trials 1 --no-time)
  elapsed() { python3 -c "import time,sys;print(round(time.time()-float(sys.argv[1]),2))" "$1"; }
  for disable in ${JAILCOST_LAYERS:-none filesystem,user user}; do  # none: every layer on
    [ "$disable" = none ] && disable=
    export KFORGE_SANDBOX_DISABLE=$disable
    local ok=0 pids=()
    start=$(date +%s.%N)
    for run in $(seq "${JAILCOST_RUNS:-4}"); do bounded "${check[@]}" > /dev/null 2>&1 && ok=$((ok + 1)); done
    log "jailcost without '${disable:-nothing}': ${JAILCOST_RUNS:-4} in a row $(elapsed "$start") s, $ok correct"
    ok=0
    start=$(date +%s.%N)
    for run in $(seq 16); do bounded "${check[@]}" > /dev/null 2>&1 & pids+=($!); done
    for run in "${pids[@]}"; do wait "$run" && ok=$((ok + 1)); done
    log "jailcost without '${disable:-nothing}': 16 at once $(elapsed "$start") s, $ok correct"
  done
  unset KFORGE_SANDBOX_DISABLE
}

# Why tests crash on this host: a backtrace, and which libraries define std::filesystem.
stage_diag() {
  local torch_lib
  torch_lib=$("$KFORGE_PYTHON" -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
  {
    echo "== std::filesystem symbols defined by torch's libraries"
    for lib in "$torch_lib"/libtorch_cpu.so "$torch_lib"/libc10.so; do
      echo "$lib: $(nm -D --defined-only "$lib" 2>/dev/null | grep -c '_ZNSt10filesystem')"
    done
    echo "== libstdc++ the tests load"; ldd build-gpu/bin/train_test | grep -E 'stdc|torch_cpu|c10'
    echo "== backtrace (cuda-gdb)"
    timeout 120 cuda-gdb -batch -ex run -ex bt --args build-gpu/bin/tools_synth_ops_test 2>&1 | grep -E '^#|signal|SIGSEGV' | head -30
  } > "$OUT/diag.txt" 2>&1
  cat "$OUT/diag.txt"
}

stage_summarize() {
  python3 bench/gpu/summarize.py --in "$OUT" --out "$OUT/gpu.json" && cat "$OUT/gpu.json" | head -60
}

[ $# -gt 0 ] || set -- build test
for stage in "$@"; do
  case "$stage" in
    build) stage_build || { log "stage build failed"; exit 1; } ;;
    prebuilt) stage_prebuilt || { log "stage prebuilt failed"; exit 1; } ;;
    test|gtest|gtest_wait|check|timing|e2e|jitcost|train|adversarial|harness|teacher|diag|jaildiag|jailcost|kernelbench|summarize) "stage_$stage" || log "stage $stage failed" ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
