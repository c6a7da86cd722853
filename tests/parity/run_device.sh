#!/usr/bin/env bash
# One device call: build kforge-policy against the host's PyTorch, run the parity
# checks and the GPU benchmark, leave JSON + logs under $OUT. Run from the repo root
# of a copy that has ../deps (nlohmann-json + OpenCL headers/loader carried along):
#   bash tests/parity/run_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/kforge_out}
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/env.txt"
python3 -c 'import torch, transformers, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)' | tee -a "$OUT/env.txt"
TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
DEPS=$(cd .. && pwd)/deps
started=$(date +%s)
cmake -S . -B build -G Ninja -DKFORGE_WITH_SERVER=OFF -DKFORGE_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS" >"$OUT/build.log" 2>&1 &&
  cmake --build build --target kforge-policy -j"$(nproc)" >>"$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - started ))s"
if [ $rc -ne 0 ]; then tail -40 "$OUT/build.log"; exit 1; fi
export PYTHONUNBUFFERED=1
[ "${SKIP_PARITY:-0}" = 1 ] || timeout 200 python3 tests/parity/parity.py --kforge build/bin/kforge-policy --out "$OUT/parity.json" >"$OUT/parity.log" 2>&1
echo "parity rc=$?"; grep -E "diff|tokenizer|FAILED" "$OUT/parity.log"
[ "${SKIP_BENCH:-0}" = 1 ] || timeout "${BENCH_TIMEOUT:-330}" python3 bench/policy/bench_policy.py --kforge build/bin/kforge-policy --cases gpu_ \
  --repeats "${KFORGE_REPEATS:-1}" ${HF_LOOP:+--hf-loop} \
  --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
echo "bench rc=$?"
