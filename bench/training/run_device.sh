#!/usr/bin/env bash
# The GPU-scale training runs (issues #8 and #17) on a device machine with an NVIDIA GPU and
# PoCL on its CPU cores: SFT, GRPO and expert iteration (rft) on the GPU, every check through
# the real harness on PoCL. One or more stages per call (a device command is limited to 10 min):
#   bash bench/training/run_device.sh STAGE...
#   stages: build restore data sft eval-sft grpo eval-grpo rft eval-rft ship policy-bench check-sweep pack
# (restore: unpack .devcarry/train_state.tgz, the state `pack` wrote on an earlier machine:
# dataset, SFT checkpoint and whatever GRPO/rft runs finished, instead of running them again).
# GRPO and its evaluation are per seed: SEED=1 bash run_device.sh grpo eval-grpo writes
# grpo_s1/ and eval_grpo_s1.json. rft draws as many samples as one GRPO run (RFT_OPS ops x
# GROUP samples x RFT_ROUNDS = GRPO_STEPS x TASKS_PER_STEP x GROUP by default).
# `ship` writes the model with the best held-out correct rate, bf16, with its provenance, to
# $OUT/models/kforge-tiny (copy it to models/ in the checkout: models/README.md).
# State lives in build-dev/ and var/dev/ (ignored, kept while the machine stays warm); each
# stage copies its results to $OUT. Summary: bench/training/summarize_device.py.
# Knobs (environment): see the defaults below. A CPU smoke run of every stage (minutes, 2 cores):
#   WORK=var/smoke DEVICE=cpu BIN=build/bin/kforge-train PRESET=kforge-micro SYNTH=8 DATA_LIMIT_OPS=6 \
#   SFT_STEPS=10 SFT_BATCH=4 EVAL_SAMPLES=2 EVAL_LIMIT_OPS=2 GRPO_STEPS=2 GROUP=2 TASKS_PER_STEP=2 \
#   GRPO_LIMIT_OPS=4 CURRICULUM_EVERY=1 CURRICULUM_SAMPLES=1 RFT_ROUNDS=1 RFT_STEPS=2 RL_OPS=4 MAX_NEW_TOKENS=64 \
#   THREADS=2 OUT=var/smoke/out bash bench/training/run_device.sh data sft eval-sft grpo eval-grpo rft eval-rft ship pack
# (ctest -R train_device_script runs it, with PYTHON: a python with torch, for ship).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: run_device.sh STAGE... (build restore data sft eval-sft grpo eval-grpo rft eval-rft ship policy-bench check-sweep pack)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/kforge_out}
work=${WORK:-var/dev}
bin=${BIN:-build-dev/bin/kforge-train}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu BIN=build/bin/kforge-train: a small smoke run on a CPU machine
mkdir -p "$OUT" "$work"
THREADS=${THREADS:-$(nproc)}
SYNTH=${SYNTH:-1200}
VARIANTS=${VARIANTS:-4}
SYNTH_VARIANTS=${SYNTH_VARIANTS:-2}
PRESET=${PRESET:-kforge-tiny}
PRECISION=${PRECISION:-bf16}
SFT_STEPS=${SFT_STEPS:-2000}
SEED=${SEED:-0}
GRPO_STEPS=${GRPO_STEPS:-30}
GROUP=${GROUP:-8}
TASKS_PER_STEP=${TASKS_PER_STEP:-8}
RFT_ROUNDS=${RFT_ROUNDS:-2}
RFT_OPS=${RFT_OPS:-$((GRPO_STEPS * TASKS_PER_STEP / RFT_ROUNDS))}
EVAL_SAMPLES=${EVAL_SAMPLES:-8}
SAMPLE="--temperature ${TEMPERATURE:-0.7} --top-p 0.95 --max-new-tokens ${MAX_NEW_TOKENS:-768}"
log() { echo "[$(date +%T)] $*" | tee -a "$work/stages.log"; }
# The tasks GRPO and rft train on: the suite's train split plus RL_OPS fresh synthetic ops
# that SFT never saw (another seed, sources of the SFT synthetic set excluded), so the policy
# meets ops it has not memorised and its failures carry signal. Never the held-out split.
rl_suite() {
  [ -d "$work/rl_suite" ] && return 0
  rm -rf "$work/rl" && mkdir -p "$work/rl_suite"
  python3 tools/synth_ops.py --out "$work/rl" --count "${RL_OPS:-200}" --seed 1 --exclude "$work/synth" > "$work/rl.json"
  cp -r suite/level1 suite/level2 "$work/rl/level9" "$work/rl_suite/"
}
model_of() {
  case "$1" in
  sft) echo "$work/sft/checkpoint-$SFT_STEPS" ;;
  grpo) echo "$work/grpo_s$SEED/final" ;;
  rft) echo "$work/rft/final" ;;
  esac
}
label_of() { [ "$1" = grpo ] && echo "grpo_s$SEED" || echo "$1"; }

for stage in "$@"; do
case "$stage" in
build)
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  # The system compiler: the image's /opt/gcc builds against a newer libstdc++ than the one
  # the binaries load, and std::filesystem::remove_all crashed (SIGSEGV) in such a build.
  cmake -S . -B build-dev -G Ninja -DKFORGE_WITH_SERVER=OFF -DKFORGE_BUILD_TESTS=OFF \
    -DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$root/.devcarry/deps" > "$work/build.log" 2>&1
  cmake --build build-dev --target kforge-train kforge-sandbox kforge-policy -j"$THREADS" >> "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; exit 1; }
  { nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; python3 -c 'import torch;print("torch", torch.__version__)';
    build-dev/bin/kforge-probe 2>/dev/null | head -5 || true; } > "$work/env.txt" 2>&1
  cp "$work/env.txt" "$OUT/"
  log "build done"
  ;;
restore)
  tar xzf "${STATE:-.devcarry/train_state.tgz}" -C "$work"
  log "restored: $(wc -l < "$work/dataset.jsonl") pairs, $(ls -d "$work"/sft/checkpoint-* "$work"/grpo_s*/final "$work"/rft/final 2>/dev/null | tr '\n' ' ')"
  ;;
data)
  # Suite train split (VARIANTS schedules per op) + SYNTH synthetic ops (tools/synth_ops.py),
  # every pair verified by the harness on PoCL; THREADS shards in parallel.
  # A shard whose summary exists is kept: after a failure, running the stage again redoes
  # only the shards that failed (their errors are in ds_<part>.<shard>.err).
  [ -s "$work/synth.json" ] || python3 tools/synth_ops.py --out "$work/synth" --count "$SYNTH" --seed 0 > "$work/synth.json"
  check="--no-time --trials 1 --max-check-elements 65536 --log-level error"
  run_shards() {  # PART SUITE VARIANTS
    local part=$1 suite=$2 variants=$3 shard
    for shard in $(seq 0 $((THREADS - 1))); do
      [ -s "$work/ds_$part.$shard.json" ] && continue
      POCL_MAX_PTHREAD_COUNT=2 "$bin" dataset --suite "$suite" --variants "$variants" $check \
        ${DATA_LIMIT_OPS:+--limit-ops $DATA_LIMIT_OPS} --shard "$shard/$THREADS" --out "$work/ds_$part.$shard.jsonl" \
        > "$work/ds_$part.$shard.json" 2> "$work/ds_$part.$shard.err" &
    done
    wait
    for shard in $(seq 0 $((THREADS - 1))); do
      [ -s "$work/ds_$part.$shard.json" ] ||
        { log "data: $part shard $shard failed: $(tail -c 400 "$work/ds_$part.$shard.err")"; exit 1; }
    done
  }
  run_shards suite suite "$VARIANTS"
  run_shards synth "$work/synth" "$SYNTH_VARIANTS"
  cat "$work"/ds_suite.*.jsonl "$work"/ds_synth.*.jsonl > "$work/dataset.jsonl"
  python3 - "$work" > "$work/dataset.json" <<'EOF'
import glob, json, sys
work = sys.argv[1]
def total(prefix):
    keys = ["ops", "ops_unsupported", "ops_with_examples", "variants_checked", "variants_correct", "records"]
    rows = [json.loads(open(f).read().strip().splitlines()[-1]) for f in glob.glob(f"{work}/{prefix}.*.json")]
    out = {k: sum(r[k] for r in rows) for k in keys}
    out["ops_failed"] = [failed for r in rows for failed in r.get("ops_failed", [])]
    return out
print(json.dumps({"suite_train": total("ds_suite"), "synthetic": total("ds_synth"),
                  "synth_generator": json.load(open(f"{work}/synth.json"))}))
EOF
  cat "$work/dataset.json"; cp "$work/dataset.json" "$OUT/"
  log "data done: $(wc -l < "$work/dataset.jsonl") pairs"
  ;;
sft)
  # Resumes from the newest checkpoint: when the call's time runs out, run the stage again.
  rc=0
  # --foreground: in the caller's process group, so a caller's timeout (bench/gpu/run_device.sh's
  # budget) kills the trainer too; in a group of its own it outlived the budget and the device
  # call was killed with its files on 2026-11-28.
  timeout --foreground "${SFT_TIMEOUT:-540}" "$bin" sft --data "$work/dataset.jsonl" --out-dir "$work/sft" --preset "$PRESET" --precision "$PRECISION" --vocab-size 4096 \
    --steps "$SFT_STEPS" --batch ${SFT_BATCH:-32} --micro-batch ${SFT_BATCH:-32} --max-tokens 1024 --lr ${SFT_LR:-1e-3} \
    --warmup 100 --eval-every 100 --checkpoint-every 500 --seed 0 --device "$DEVICE" > "$work/sft.json" || rc=$?
  cp "$work/sft/metrics.jsonl" "$OUT/sft_metrics.jsonl"
  [ "$rc" = 0 ] || { log "sft stopped (rc $rc) at $(wc -l < "$work/sft/metrics.jsonl") metric lines; run the stage again to resume"; exit "$rc"; }
  cp "$work/sft.json" "$OUT/"
  log "sft done"
  ;;
eval-sft|eval-grpo|eval-rft)
  which=${stage#eval-}
  label=$(label_of "$which")
  "$bin" eval --suite suite --model "$(model_of "$which")" --split heldout --samples "$EVAL_SAMPLES" --k "$EVAL_SAMPLES" \
    --trials 3 --time-budget-s 0.3 --serial-timing --check-threads "$THREADS" $SAMPLE --seed 1 --device "$DEVICE" \
    --precision "$PRECISION" ${EVAL_LIMIT_OPS:+--limit-ops $EVAL_LIMIT_OPS} --out "$work/eval_$label.json" --samples-out "$work/samples_$label.jsonl" > /dev/null
  cp "$work/eval_$label.json" "$work/samples_$label.jsonl" "$OUT/"
  python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print({k:v for k,v in d.items() if k!='per_op'})" "$work/eval_$label.json"
  log "eval $label done"
  ;;
grpo)
  # Issue 17's recipe: leave-one-out advantages, the speed bonus ranked among correct
  # samples only, a small KL to the SFT model, and a pass@1 curriculum (tasks with
  # 0 < pass@1 < 1, refreshed every CURRICULUM_EVERY steps). kforge-train grpo does not resume:
  # the run must fit one call. Budget on an H100 + 16 PoCL cores (run3): ~11.5 s a step at
  # 8 tasks x G 8, and a refresh samples ~320 tasks x 4 (~90 s): 30 steps with 2 refreshes.
  # On an H200 with every sandbox layer on and children without the warm-up build (c4901a8,
  # bench/results/gpu_2026_11_28g): a refresh of 182 tasks x 2 in ~65 s (sampling 24 s,
  # checking 41 s), then steps of ~8 s (sampling 3-5 s, checking 2-9 s).
  rl_suite
  rc=0  # timeout --foreground: see sft
  # --max-seconds: no step starts after GRPO_TIMEOUT less 90 s (a curriculum refresh and a
  # step), so final/ is written before the timeout (which is for a stuck run).
  timeout --foreground "${GRPO_TIMEOUT:-540}" "$bin" grpo --suite "$work/rl_suite" --model "$(model_of sft)" --out-dir "$work/grpo_s$SEED" \
    --max-seconds "${GRPO_MAX_SECONDS:-$(( ${GRPO_TIMEOUT:-540} - 90 ))}" --steps "$GRPO_STEPS" ${GRPO_LIMIT_OPS:+--limit-ops $GRPO_LIMIT_OPS} --group "$GROUP" --tasks-per-step "$TASKS_PER_STEP" --micro-batch 16 \
    --lr ${GRPO_LR:-1e-4} --warmup 0 --kl-beta ${KL_BETA:-1e-3} --advantage ${ADVANTAGE:-leave_one_out} \
    --speed-bonus among_correct --recheck ${RECHECK:-4} --curriculum-every ${CURRICULUM_EVERY:-15} \
    --curriculum-samples ${CURRICULUM_SAMPLES:-4} --checkpoint-every ${CHECKPOINT_EVERY:-10} \
    --check-threads "$THREADS" --trials 1 --max-check-elements 262144 --time-budget-s 0.05 \
    --temperature "${GRPO_TEMPERATURE:-1.0}" --top-p 1.0 --max-new-tokens "${MAX_NEW_TOKENS:-768}" \
    --precision "$PRECISION" --seed "$SEED" --device "$DEVICE" > "$work/grpo_s$SEED.json" || rc=$?
  cp "$work/grpo_s$SEED/metrics.jsonl" "$OUT/grpo_s${SEED}_metrics.jsonl" 2>/dev/null || true
  [ "$rc" = 0 ] || { log "grpo seed $SEED stopped (rc $rc); run the stage again to resume"; exit "$rc"; }
  cp "$work/grpo_s$SEED.json" "$OUT/"
  log "grpo seed $SEED done"
  ;;
rft)
  # Expert iteration with as many samples as one GRPO run: sample, keep verified kernels, fine-tune.
  rl_suite
  "$bin" rft --suite "$work/rl_suite" --model "$(model_of sft)" --out-dir "$work/rft" --rounds "$RFT_ROUNDS" \
    --samples "$GROUP" --limit-ops "$RFT_OPS" --keep-per-task 4 --steps ${RFT_STEPS:-50} --lr ${RFT_LR:-1e-4} \
    --check-threads "$THREADS" --trials 1 --max-check-elements 262144 --time-budget-s 0.05 \
    --temperature "${GRPO_TEMPERATURE:-1.0}" --top-p 1.0 --max-new-tokens "${MAX_NEW_TOKENS:-768}" \
    --precision "$PRECISION" --seed "$SEED" --device "$DEVICE" > "$work/rft.json"
  cp "$work/rft.json" "$OUT/"; cp "$work/rft/metrics.jsonl" "$OUT/rft_metrics.jsonl" 2>/dev/null || true
  log "rft done"
  ;;
check-sweep)
  # How fast the harness checks the SFT model's samples on this host (GRPO's curriculum
  # refresh ran past 10 s per check per thread on the H200 host, 2026-11-28): one eval of
  # SWEEP_OPS train ops x 4 samples, correctness only, per entry of SWEEP ("threads" or
  # "threads:VAR=value+VAR=value"), each bounded by SWEEP_TIMEOUT seconds.
  { echo "nproc $(nproc), /proc/cpuinfo $(grep -c ^processor /proc/cpuinfo), affinity $(taskset -pc $$ 2>&1 | cut -d: -f2)"
    echo "cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>&1)"
    echo "OpenCL: $(env | grep -E '^(OCL_ICD|OPENCL_VENDOR)' | tr '\n' ' ') vendors: $(ls /etc/OpenCL/vendors 2>&1 | tr '\n' ' ')"
    "$(dirname "$bin")/kforge-worker" check suite/level2/silu_mul.json tests/worker/harness/adversarial_gpu/honest.cl \
      --target opencl --trials 1 --no-time 2>&1 | tail -1 | python3 -c 'import json,sys
r=json.loads(sys.stdin.read()); e=r.get("environment",{})
print("worker check:", r.get("outcome"), "device", e.get("device"), "platform", e.get("platform"), "sandbox", e.get("sandbox"))'
  } 2>&1 | tee "$OUT/check_sweep_env.txt"
  for entry in ${SWEEP:-16 4 16:POCL_MAX_PTHREAD_COUNT=1 16:KFORGE_SANDBOX_DISABLE=filesystem,user}; do
    threads=${entry%%:*}; vars=""
    [ "$entry" != "$threads" ] && vars=${entry#*:}
    start=$(date +%s.%N); rc=0
    env ${vars//+/ } timeout --foreground "${SWEEP_TIMEOUT:-90}" "$bin" eval --suite suite --model "$(model_of sft)" --split train \
      --limit-ops "${SWEEP_OPS:-16}" --samples 4 --no-time --trials 1 --max-check-elements 262144 --check-threads "$threads" \
      $SAMPLE --seed 1 --device "$DEVICE" --precision "$PRECISION" --out "$work/sweep.json" > /dev/null 2> "$work/sweep.err" || rc=$?
    wall=$(python3 -c "import time,sys;print(round(time.time()-float(sys.argv[1]),1))" "$start")
    summary=$([ "$rc" = 0 ] && python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print("seconds", d["seconds"], "outcomes", d["outcomes"])' "$work/sweep.json" || tail -c 300 "$work/sweep.err")
    log "check-sweep threads $threads ${vars:-(defaults)}: rc $rc, wall ${wall}s, $summary"
  done
  cp "$work/stages.log" "$OUT/check_sweep.log"
  ;;
ship)
  # The evaluated model with the best held-out correct rate, bf16, with its provenance.
  "${PYTHON:-python3}" bench/training/ship_model.py "$work" "$OUT/models/kforge-tiny" \
    --command "bash bench/training/run_device.sh $*" --sft-steps "$SFT_STEPS"
  log "ship done: $(du -sh "$OUT/models/kforge-tiny" | cut -f1)"
  ;;
policy-bench)
  # GRPO's sampling shape on the GPU: 8 prompts x G 8, one by one vs one batch (bench/policy/README.md).
  build-dev/bin/kforge-policy bench --device "$DEVICE" --dtype bfloat16 --preset "$PRESET" --prompts 8 --group 8 \
    --prompt-len 300 --new-tokens "${MAX_NEW_TOKENS:-768}" --repeats 2 > "$OUT/policy_batched_$DEVICE.json"
  log "policy-bench done: $(python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(d['sequential_wall_s'], d['batched_wall_s'], d['batched_speedup'])" "$OUT/policy_batched_$DEVICE.json")"
  ;;
pack)
  # What a later machine needs to go on (restore): the dataset, the SFT checkpoint, finished runs.
  # (Whatever exists: a dataset built on a CPU machine can be carried alone.) Without the
  # optimizer's state: GRPO, rft and evaluation start from the weights, and with it the
  # archive (38 MB on 2026-11-28) is over the 16 MiB a device call can bring back.
  tar czf "$OUT/train_state.tgz" --exclude=optimizer.pt -C "$work" \
    $(cd "$work" && ls -d dataset.jsonl dataset.json synth "sft/checkpoint-$SFT_STEPS" grpo_s*/final rft/final eval_*.json 2>/dev/null)
  log "pack done: $(du -h "$OUT/train_state.tgz" | cut -f1)"
  ;;
*) echo "unknown stage $stage" >&2; exit 2 ;;
esac
done
