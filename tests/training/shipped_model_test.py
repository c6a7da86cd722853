#!/usr/bin/env python3
"""The model kforge ships (models/kforge-tiny, models/README.md) is what its README says:
a Hugging Face directory under 25 MB, every float tensor BF16, a provenance.json with a
held-out evaluation and the command; and it works: kforge-train samples it (near-greedy,
T 0.01) on the first train-split op of the suite, and the harness (PoCL) finds the kernel
correct. Usage: shipped_model_test.py BIN_DIR (ctest -R train_shipped_model). Exit 77 =
skipped (no OpenCL device)."""
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "kforge-tiny")


def main():
    failures = []
    names = set(os.listdir(MODEL))
    want = {"config.json", "tokenizer.json", "model.safetensors", "provenance.json"}
    if not want <= names:
        failures.append(f"missing files: {sorted(want - names)}")
    total = sum(os.path.getsize(os.path.join(MODEL, n)) for n in names)
    if total >= 25e6:
        failures.append(f"{total} bytes, over 25 MB")
    with open(os.path.join(MODEL, "model.safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    dtypes = {info["dtype"] for name, info in header.items() if name != "__metadata__"}
    if dtypes != {"BF16"}:
        failures.append(f"tensor dtypes {sorted(dtypes)}, not all BF16")
    with open(os.path.join(MODEL, "config.json")) as f:
        if json.load(f).get("torch_dtype") != "bfloat16":
            failures.append("config.json torch_dtype is not bfloat16")
    with open(os.path.join(MODEL, "provenance.json")) as f:
        provenance = json.load(f)
    evaluation = provenance.get("evaluation", {})
    if evaluation.get("split") != "heldout" or not 0 <= evaluation.get("correct_rate", -1) <= 1:
        failures.append(f"provenance evaluation is not a held-out one: {evaluation}")
    if not provenance.get("command"):
        failures.append("provenance has no command")

    clinfo = subprocess.run(["sh", "-c", "command -v clinfo >/dev/null && clinfo -l"], capture_output=True, text=True)
    if clinfo.returncode == 0 and not clinfo.stdout.strip():
        print("skipped the sampling check: no OpenCL device")
        sys.exit(1 if failures else 77)
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "eval.json")
        subprocess.run([os.path.join(sys.argv[1], "kforge-train"), "eval", "--suite", os.path.join(ROOT, "suite"),
                        "--model", MODEL, "--split", "train", "--limit-ops", "1", "--samples", "1", "--k", "1",
                        "--trials", "1", "--no-time", "--check-threads", "1", "--temperature", "0.01",
                        "--max-new-tokens", "768", "--seed", "1", "--device", "cpu", "--precision", "fp32",
                        "--out", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            result = json.load(f)
        if result["correct_rate"] != 1.0:
            failures.append(f"the shipped model's kernel for {result['per_op'][0]['op']} is not correct: {result['outcomes']}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"ok: {total} bytes, BF16, held-out correct {evaluation['correct_rate']:.3f}, "
              f"a correct kernel for {result['per_op'][0]['op']}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
