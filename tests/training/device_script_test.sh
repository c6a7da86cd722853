#!/usr/bin/env bash
# bench/training/run_device.sh, every stage at smoke scale on the CPU (kforge-micro, PoCL):
# data -> sft -> eval -> grpo -> eval -> rft -> eval -> ship -> pack, then what each stage
# must leave behind is checked. Usage: device_script_test.sh KFORGE_TRAIN PYTHON
# (PYTHON: an interpreter with torch, for ship's bf16 cast). Exit 77 = skipped.
set -euo pipefail
bin=$1
python=${2:-python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v clinfo >/dev/null && ! clinfo -l 2>/dev/null | grep -q . && { echo "skipped: no OpenCL device"; exit 77; }
"$python" -c 'import torch' 2>/dev/null || { echo "skipped: $python has no torch (ship needs it)"; exit 77; }
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$root"
WORK=$work/w OUT=$work/out DEVICE=cpu BIN=$bin PYTHON=$python PRESET=kforge-micro SYNTH=8 DATA_LIMIT_OPS=6 \
  SFT_STEPS=10 SFT_BATCH=4 EVAL_SAMPLES=2 EVAL_LIMIT_OPS=2 GRPO_STEPS=2 GROUP=2 TASKS_PER_STEP=2 GRPO_LIMIT_OPS=4 \
  CURRICULUM_EVERY=1 CURRICULUM_SAMPLES=1 RFT_ROUNDS=1 RFT_STEPS=2 RL_OPS=4 MAX_NEW_TOKENS=64 THREADS=2 \
  bash bench/training/run_device.sh data sft eval-sft grpo eval-grpo rft eval-rft ship pack > "$work/log" 2>&1 ||
  { tr '\r' '\n' < "$work/log" | tail -30; echo "FAIL: run_device.sh exited non-zero"; exit 1; }
fail=0
for f in dataset.json sft.json eval_sft.json grpo_s0.json eval_grpo_s0.json rft.json eval_rft.json \
  models/kforge-tiny/model.safetensors models/kforge-tiny/provenance.json train_state.tgz; do
  [ -s "$work/out/$f" ] || { echo "FAIL: the run left no $f"; fail=1; }
done
[ -s "$work/w/grpo_s0/final/config.json" ] || { echo "FAIL: grpo wrote no final model"; fail=1; }
# GRPO_MAX_SECONDS: a run stops at its wall-clock budget and still writes final/ (the device
# call's timeout would kill it with nothing saved).
SEED=1 WORK=$work/w OUT=$work/out DEVICE=cpu BIN=$bin SFT_STEPS=10 GRPO_STEPS=50 GROUP=2 TASKS_PER_STEP=2 GRPO_LIMIT_OPS=4 \
  CURRICULUM_EVERY=0 MAX_NEW_TOKENS=64 THREADS=2 GRPO_MAX_SECONDS=1 \
  bash bench/training/run_device.sh grpo >> "$work/log" 2>&1 || { echo "FAIL: the budgeted grpo run exited non-zero"; fail=1; }
steps=$(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(d["steps"], d["steps_asked"])' "$work/out/grpo_s1.json" 2>/dev/null || true)
case "$steps" in
  "50 50"|"0 50"|"") echo "FAIL: GRPO_MAX_SECONDS=1 did not stop the run early with a step done (steps, asked: '$steps')"; fail=1 ;;
esac
[ -s "$work/w/grpo_s1/final/config.json" ] || { echo "FAIL: the budgeted grpo run wrote no final model"; fail=1; }
# pack leaves the optimizer out (with it the state was over what a device call brings back).
packed=$(tar tzf "$work/out/train_state.tgz")
if grep -q optimizer.pt <<<"$packed"; then echo "FAIL: train_state.tgz holds optimizer.pt"; fail=1; fi
grep -q '^sft/checkpoint-10/model.safetensors$' <<<"$packed" || { echo "FAIL: train_state.tgz lacks the SFT weights"; fail=1; }
[ $fail = 0 ] && echo "ok: every stage ran and left its files"
exit $fail
