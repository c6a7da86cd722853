#!/usr/bin/env python3
"""bench/training/ship_model.py on a real kforge-tiny checkpoint (kforge-policy init):
it picks the evaluated model with the best held-out correct rate, writes its weights as
bf16 (half the bytes, every float tensor BF16, values the fp32 ones rounded), leaves the
optimizer and trainer state behind, records the evaluation in provenance.json, and the
C++ policy loads the result: its logits stay within bf16 rounding of the fp32 model's.
kforge-train eval samples the shipped model and writes --samples-out even when the sampled
bytes are not UTF-8. A size over --max-mb fails. Usage: ship_model_test.py BIN_DIR (ctest -R train_ship_model)."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIP = os.path.join(ROOT, "bench", "training", "ship_model.py")


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def logits(policy, model, out):
    subprocess.run([policy, "logits", "--model", model, "--tokens", "5 6 7 8", "--out", out], check=True)
    with open(out, "rb") as f:
        data = f.read()
    return struct.unpack(f"<{len(data) // 4}f", data)


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: no torch in this interpreter (scripts/python-env.sh makes build/py)")
        sys.exit(77)
    policy = os.path.join(sys.argv[1], "kforge-policy")
    work = tempfile.mkdtemp(prefix="kforge-ship-test-")
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print("FAIL:", what)

    try:
        rng = random.Random(0)
        words = ["__kernel", "void", "float", "get_global_id", "out", "x", "+", "*", "(", ")", "{", "}", ";"]
        with open(os.path.join(work, "corpus.txt"), "w") as f:
            f.write("\n".join(" ".join(rng.choice(words) for _ in range(30)) for _ in range(300)))
        subprocess.run([policy, "train-tokenizer", "--out", os.path.join(work, "tok.json"), "--vocab-size", "300",
                        os.path.join(work, "corpus.txt")], check=True, stdout=subprocess.DEVNULL)
        sft = os.path.join(work, "sft", "checkpoint-2")
        os.makedirs(sft)
        subprocess.run([policy, "init", "--preset", "kforge-tiny", "--tokenizer", os.path.join(work, "tok.json"),
                        "--vocab-size", "300", "--out", sft], check=True, stdout=subprocess.DEVNULL)
        open(os.path.join(sft, "optimizer.pt"), "wb").write(b"optimizer state")
        json.dump({"step": 2}, open(os.path.join(sft, "trainer_state.json"), "w"))
        grpo = os.path.join(work, "grpo_s0", "final")
        shutil.copytree(sft, grpo)
        evals = {"sft": {"correct_rate": 0.2, "fast_1": 0.1}, "grpo_s0": {"correct_rate": 0.3, "fast_1": 0.05},
                 "rft": {"correct_rate": 0.9, "fast_1": 0.9}}  # rft has no checkpoint here: skipped
        for label, metrics in evals.items():
            metrics.update({"ops": 29, "rule_violation_rate": 0.04, "intervals": {"pass_at_1": [0.1, 0.5]}})
            json.dump(metrics, open(os.path.join(work, f"eval_{label}.json"), "w"))
        json.dump({"suite_train": {"records": 10}}, open(os.path.join(work, "dataset.json"), "w"))

        out = os.path.join(work, "shipped")
        done = subprocess.run([sys.executable, SHIP, work, out, "--command", "run_device.sh ship", "--sft-steps", "2"],
                              capture_output=True, text=True)
        check(done.returncode == 0, f"ship exits 0: {done.stderr}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        check(report["shipped"] == "grpo_s0", f"the best evaluated checkpoint is shipped: {report}")
        check("rft: no checkpoint" in done.stderr, f"an evaluation without a checkpoint is skipped: {done.stderr}")
        names = sorted(os.listdir(out))
        check(names == ["config.json", "model.safetensors", "provenance.json", "tokenizer.json"], f"files: {names}")
        fp32, bf16 = header(os.path.join(grpo, "model.safetensors")), header(os.path.join(out, "model.safetensors"))
        tensors = [k for k in fp32 if k != "__metadata__"]
        check(sorted(tensors) == sorted(k for k in bf16 if k != "__metadata__"), "the same tensors")
        check(all(bf16[k]["dtype"] == "BF16" and bf16[k]["shape"] == fp32[k]["shape"] for k in tensors),
              "every float tensor is BF16 with its shape")
        ratio = os.path.getsize(os.path.join(out, "model.safetensors")) / os.path.getsize(os.path.join(grpo, "model.safetensors"))
        check(0.49 < ratio < 0.51, f"half the bytes: {ratio:.3f}")
        config = json.load(open(os.path.join(out, "config.json")))
        check(config.get("torch_dtype") == "bfloat16", f"config says bfloat16: {config.get('torch_dtype')}")
        provenance = json.load(open(os.path.join(out, "provenance.json")))
        check(provenance["model"] == "grpo_s0" and provenance["checkpoint"] == "grpo_s0/final", str(provenance))
        check(provenance["evaluation"]["correct_rate"] == 0.3 and provenance["evaluation"]["split"] == "heldout",
              f"the evaluation: {provenance['evaluation']}")
        check(provenance["command"] == "run_device.sh ship", "the command")

        reference = logits(policy, grpo, os.path.join(work, "fp32.bin"))
        shipped = logits(policy, out, os.path.join(work, "bf16.bin"))
        check(len(reference) == len(shipped) and len(reference) == 4 * 300, f"logits [4, 300]: {len(shipped)}")
        scale = max(abs(v) for v in reference)
        worst = max(abs(a - b) for a, b in zip(reference, shipped))
        check(0 < worst <= 0.05 * scale + 1e-3, f"bf16 logits within rounding of fp32: worst {worst} of scale {scale}")

        # The shipped model samples through kforge-train eval. A random model's bytes are
        # rarely UTF-8: --samples-out must still be written (it threw json type_error 316).
        samples_out = os.path.join(work, "samples.jsonl")
        evaluated = subprocess.run([os.path.join(sys.argv[1], "kforge-train"), "eval", "--suite", os.path.join(ROOT, "suite"),
                                    "--model", out, "--split", "heldout", "--samples", "2", "--k", "2", "--limit-ops", "1",
                                    "--max-new-tokens", "48", "--temperature", "1.0", "--trials", "1", "--time=0",
                                    "--samples-out", samples_out, "--log-level", "error"],
                                   capture_output=True, text=True, errors="replace")
        check(evaluated.returncode == 0, f"kforge-train eval on the shipped model: {evaluated.stderr[-500:]}")
        lines = [json.loads(l) for l in open(samples_out, encoding="utf-8")] if os.path.exists(samples_out) else []
        check(len(lines) == 2, f"two samples written: {len(lines)}")
        check(any("\ufffd" in l["completion"] for l in lines), "invalid bytes became U+FFFD (the seed samples some)")

        small = subprocess.run([sys.executable, SHIP, work, os.path.join(work, "small"), "--command", "x",
                                "--sft-steps", "2", "--max-mb", "1"], capture_output=True, text=True)
        check(small.returncode != 0 and "exceeds --max-mb 1" in small.stderr, f"too big fails: {small.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
