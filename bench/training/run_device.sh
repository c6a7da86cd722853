#!/usr/bin/env bash
# The GPU-scale training run (issue #8) on a device machine with an NVIDIA GPU and PoCL
# on its CPU cores: kforge-tiny SFT and GRPO on the GPU, every check through the real
# harness on PoCL. One stage per call, because a device command is limited to 10 min:
#   bash bench/training/run_device.sh build|restore|data|sft|eval-sft|grpo|eval-grpo
# (restore: unpack .devcarry/train_state.tgz, a dataset + SFT checkpoint from an earlier
# machine, instead of running data and sft again).
# State lives in build-dev/ and var/dev/ (ignored, kept while the machine stays warm);
# each stage copies its results to $OUT. Knobs (environment): see the defaults below.
set -euo pipefail
stage=${1:?usage: run_device.sh build|restore|data|sft|eval-sft|grpo|eval-grpo}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/kforge_out}
work=var/dev
bin=build-dev/bin/kforge-train
mkdir -p "$OUT" "$work"
THREADS=${THREADS:-$(nproc)}
SYNTH=${SYNTH:-1200}
VARIANTS=${VARIANTS:-4}
SYNTH_VARIANTS=${SYNTH_VARIANTS:-2}
SFT_STEPS=${SFT_STEPS:-2000}
GRPO_STEPS=${GRPO_STEPS:-40}
EVAL_SAMPLES=${EVAL_SAMPLES:-8}
SAMPLE="--temperature ${TEMPERATURE:-0.7} --top-p 0.95 --max-new-tokens ${MAX_NEW_TOKENS:-768}"
log() { echo "[$(date +%T)] $*" | tee -a "$work/stages.log"; }

case "$stage" in
build)
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  # The system compiler: the image's /opt/gcc builds against a newer libstdc++ than the one
  # the binaries load, and std::filesystem::remove_all crashed (SIGSEGV) in such a build.
  cmake -S . -B build-dev -G Ninja -DKFORGE_WITH_SERVER=OFF -DKFORGE_BUILD_TESTS=OFF \
    -DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$root/.devcarry/deps" > "$work/build.log" 2>&1
  cmake --build build-dev --target kforge-train kforge-sandbox -j"$THREADS" >> "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; exit 1; }
  { nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; python3 -c 'import torch;print("torch", torch.__version__)';
    build-dev/bin/kforge-probe 2>/dev/null | head -5 || true; } > "$work/env.txt" 2>&1
  cp "$work/env.txt" "$OUT/"
  log "build done"
  ;;
restore)
  tar xzf .devcarry/train_state.tgz -C "$work"
  log "restored: $(wc -l < "$work/dataset.jsonl") pairs, $(ls -d "$work"/sft/checkpoint-* | tr '\n' ' ')"
  ;;
data)
  # Suite train split (VARIANTS schedules per op) + SYNTH synthetic ops (tools/synth_ops.py),
  # every pair verified by the harness on PoCL; THREADS shards in parallel.
  python3 tools/synth_ops.py --out "$work/synth" --count "$SYNTH" --seed 0 > "$work/synth.json"
  check="--no-time --trials 1 --max-check-elements 65536 --log-level error"
  for shard in $(seq 0 $((THREADS - 1))); do
    POCL_MAX_PTHREAD_COUNT=2 "$bin" dataset --suite suite --variants "$VARIANTS" $check --shard "$shard/$THREADS" \
      --out "$work/ds_suite.$shard.jsonl" > "$work/ds_suite.$shard.json" 2>/dev/null &
  done
  wait
  for shard in $(seq 0 $((THREADS - 1))); do
    POCL_MAX_PTHREAD_COUNT=2 "$bin" dataset --suite "$work/synth" --variants "$SYNTH_VARIANTS" $check --shard "$shard/$THREADS" \
      --out "$work/ds_synth.$shard.jsonl" > "$work/ds_synth.$shard.json" 2>/dev/null &
  done
  wait
  cat "$work"/ds_suite.*.jsonl "$work"/ds_synth.*.jsonl > "$work/dataset.jsonl"
  python3 - "$work" > "$work/dataset.json" <<'EOF'
import glob, json, sys
work = sys.argv[1]
def total(prefix):
    keys = ["ops", "ops_unsupported", "ops_with_examples", "variants_checked", "variants_correct", "records"]
    rows = [json.loads(open(f).read().strip().splitlines()[-1]) for f in glob.glob(f"{work}/{prefix}.*.json")]
    return {k: sum(r[k] for r in rows) for k in keys}
print(json.dumps({"suite_train": total("ds_suite"), "synthetic": total("ds_synth"),
                  "synth_generator": json.load(open(f"{work}/synth.json"))}))
EOF
  cat "$work/dataset.json"; cp "$work/dataset.json" "$OUT/"
  log "data done: $(wc -l < "$work/dataset.jsonl") pairs"
  ;;
sft)
  # Resumes from the newest checkpoint: when the call's time runs out, run the stage again.
  rc=0
  timeout "${SFT_TIMEOUT:-540}" "$bin" sft --data "$work/dataset.jsonl" --out-dir "$work/sft" --preset kforge-tiny --vocab-size 4096 \
    --steps "$SFT_STEPS" --batch ${SFT_BATCH:-32} --micro-batch ${SFT_BATCH:-32} --max-tokens 1024 --lr ${SFT_LR:-1e-3} \
    --warmup 100 --eval-every 100 --checkpoint-every 500 --seed 0 --device cuda > "$work/sft.json" || rc=$?
  cp "$work/sft/metrics.jsonl" "$OUT/sft_metrics.jsonl"
  [ "$rc" = 0 ] || { log "sft stopped (rc $rc) at $(wc -l < "$work/sft/metrics.jsonl") metric lines; run the stage again to resume"; exit "$rc"; }
  cp "$work/sft.json" "$OUT/"
  log "sft done"
  ;;
eval-sft|eval-grpo)
  which=${stage#eval-}
  model=$([ "$which" = sft ] && echo "$work/sft/checkpoint-$SFT_STEPS" || echo "$work/grpo/final")
  "$bin" eval --suite suite --model "$model" --split heldout --samples "$EVAL_SAMPLES" --k "$EVAL_SAMPLES" \
    --trials 3 --time-budget-s 0.3 --serial-timing --check-threads "$THREADS" $SAMPLE --seed 1 --device cuda \
    --out "$work/eval_$which.json" --samples-out "$work/samples_$which.jsonl" > /dev/null
  cp "$work/eval_$which.json" "$work/samples_$which.jsonl" "$OUT/"
  python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print({k:v for k,v in d.items() if k!='per_op'})" "$work/eval_$which.json"
  log "eval $which done"
  ;;
grpo)
  # GRPO tasks: the suite's train split plus RL_OPS fresh synthetic ops that SFT never saw
  # (another seed, sources of the SFT synthetic set excluded), so the policy meets ops it
  # has not memorised and its failures carry signal. Never the held-out split.
  rm -rf "$work/grpo_suite" "$work/rl" && mkdir -p "$work/grpo_suite"
  python3 tools/synth_ops.py --out "$work/rl" --count "${RL_OPS:-800}" --seed 1 --exclude "$work/synth" \
    > "$work/rl.json"
  cp -r suite/level1 suite/level2 "$work/rl/level9" "$work/grpo_suite/"
  "$bin" grpo --suite "$work/grpo_suite" --model "$work/sft/checkpoint-$SFT_STEPS" --out-dir "$work/grpo" \
    --steps "$GRPO_STEPS" --group ${GROUP:-8} --tasks-per-step ${TASKS_PER_STEP:-8} --micro-batch 16 \
    --lr ${GRPO_LR:-1e-4} --warmup 0 --kl-beta ${KL_BETA:-0} --check-threads "$THREADS" --trials 1 \
    --max-check-elements 262144 --time-budget-s 0.05 --temperature "${GRPO_TEMPERATURE:-1.0}" --top-p 1.0 \
    --max-new-tokens "${MAX_NEW_TOKENS:-768}" --seed 0 --device cuda > "$work/grpo.json"
  cp "$work/grpo.json" "$OUT/"; cp "$work/grpo/metrics.jsonl" "$OUT/grpo_metrics.jsonl"
  log "grpo done"
  ;;
*) echo "unknown stage $stage" >&2; exit 2 ;;
esac
