#!/usr/bin/env bash
# The CPU-scale training run behind bench/results/training.json: teacher dataset
# (train split) -> kforge-tiny SFT -> held-out eval -> GRPO from the SFT model ->
# held-out eval -> summary JSON + reward-curve PNG. Usage:
#   bench/training/run_cpu.sh [BUILD_DIR] [WORK_DIR]     (defaults: build, var/train_cpu)
# Knobs (environment): PRESET, VOCAB, SFT_STEPS, GRPO_STEPS, EVAL_SAMPLES, GROUP, TASKS_PER_STEP.
# Defaults fit a shared 2-core machine (kforge-micro); the GPU-scale run uses PRESET=kforge-tiny.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
work=${2:-var/train_cpu}
bin="$build/bin/kforge-train"
mkdir -p "$work"
PRESET=${PRESET:-kforge-micro}
VOCAB=${VOCAB:-1024}
SFT_STEPS=${SFT_STEPS:-150}
GRPO_STEPS=${GRPO_STEPS:-8}
EVAL_SAMPLES=${EVAL_SAMPLES:-2}
GROUP=${GROUP:-4}
TASKS_PER_STEP=${TASKS_PER_STEP:-4}
# Correctness checks on main shapes shrunk to 64k input elements (extra odd shapes
# kept) so a check costs ~2 s on 2 cores; eval times correct kernels at full shapes.
CHECK="--trials 1 --max-check-elements 65536"
SAMPLE="--temperature 0.7 --top-p 0.95 --max-new-tokens ${MAX_NEW_TOKENS:-384}"

[ -s "$work/dataset.jsonl" ] || "$bin" dataset --suite "$root/suite" --variants 2 --no-time $CHECK \
  --out "$work/dataset.jsonl" > "$work/dataset.json"
"$bin" sft --data "$work/dataset.jsonl" --out-dir "$work/sft" --preset "$PRESET" --vocab-size "$VOCAB" \
  --steps "$SFT_STEPS" --batch 8 --micro-batch 8 --max-tokens 1024 --lr 3e-3 --warmup 10 \
  --eval-every 25 --checkpoint-every 50 --seed 0 > "$work/sft.json"
sft_model="$work/sft/checkpoint-$SFT_STEPS"
"$bin" eval --suite "$root/suite" --model "$sft_model" --split heldout --samples "$EVAL_SAMPLES" --k "$EVAL_SAMPLES" \
  --trials 1 --time-budget-s 0.3 $SAMPLE --seed 1 --out "$work/eval_sft.json" > /dev/null
"$bin" grpo --suite "$root/suite" --model "$sft_model" --out-dir "$work/grpo" --steps "$GRPO_STEPS" \
  --group "$GROUP" --tasks-per-step "$TASKS_PER_STEP" --micro-batch 4 --lr 1e-4 --warmup 0 --check-threads 2 \
  $CHECK --time-budget-s 0.1 $SAMPLE --seed 0 > "$work/grpo.json"
"$bin" eval --suite "$root/suite" --model "$work/grpo/final" --split heldout --samples "$EVAL_SAMPLES" \
  --k "$EVAL_SAMPLES" --trials 1 --time-budget-s 0.3 $SAMPLE --seed 1 --out "$work/eval_grpo.json" > /dev/null
python3 "$root/bench/training/summarize.py" "$work" "$root/bench/results" \
  "bench/training/run_cpu.sh $build $work (PRESET=$PRESET VOCAB=$VOCAB SFT_STEPS=$SFT_STEPS GRPO_STEPS=$GRPO_STEPS EVAL_SAMPLES=$EVAL_SAMPLES GROUP=$GROUP TASKS_PER_STEP=$TASKS_PER_STEP)"
