#!/usr/bin/env python3
"""Writes the model kforge ships (models/README.md) from a training run's work directory.

Picks, among the held-out evaluations in WORK (eval_<label>.json, written by
run_device.sh's eval-* stages), the model with the best correct rate (ties: fast_1, then
the later stage), copies its checkpoint's HF files to OUT_DIR with the weights cast to bf16,
and writes provenance.json: which run and checkpoint, the evaluation (with its intervals),
the dataset summary, and the command. Fails when the result exceeds --max-mb.

Usage: ship_model.py WORK OUT_DIR --command CMD [--sft-steps N] [--max-mb 25]
Needs torch (for the bf16 rounding); the safetensors format is read and written here
(8-byte header length, JSON header, raw little-endian data). Test: ctest -R train_ship_model.
"""
import argparse
import glob
import json
import os
import shutil
import struct
import sys

from summarize_device import read_json

SKIP = {"optimizer.pt", "trainer_state.json"}


def cast_safetensors_to_bf16(source, dest):
    """Copies a safetensors file with every F32 tensor rounded to BF16 (others unchanged)."""
    import torch

    with open(source, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    metadata = header.pop("__metadata__", None)
    out_header, chunks, offset = {}, [], 0
    for name in sorted(header, key=lambda n: header[n]["data_offsets"][0]):
        info = header[name]
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        dtype = info["dtype"]
        if dtype == "F32" and raw:
            values = torch.frombuffer(bytearray(raw), dtype=torch.float32)
            raw = values.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
            dtype = "BF16"
        out_header[name] = {"dtype": dtype, "shape": info["shape"], "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata is not None:
        out_header["__metadata__"] = metadata
    encoded = json.dumps(out_header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    with open(dest, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for chunk in chunks:
            f.write(chunk)


def checkpoint_of(work, label, sft_steps):
    if label == "sft":
        return os.path.join(work, "sft", f"checkpoint-{sft_steps}")
    return os.path.join(work, label, "final")  # grpo_s<seed>, rft


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work")
    parser.add_argument("out_dir")
    parser.add_argument("--command", required=True)
    parser.add_argument("--sft-steps", type=int, default=2000)
    parser.add_argument("--max-mb", type=float, default=25.0)
    args = parser.parse_args()

    order = ["sft", "rft"]  # later stages win ties
    candidates = []
    for path in sorted(glob.glob(os.path.join(args.work, "eval_*.json"))):
        label = os.path.basename(path)[len("eval_"):-len(".json")]
        with open(path) as f:
            evaluation = json.load(f)
        checkpoint = checkpoint_of(args.work, label, args.sft_steps)
        if not os.path.isfile(os.path.join(checkpoint, "model.safetensors")):
            print(f"ship: {label}: no checkpoint at {checkpoint}, skipped", file=sys.stderr)
            continue
        stage_rank = order.index(label) if label in order else len(order)
        candidates.append(((evaluation.get("correct_rate", 0), evaluation.get("fast_1", 0), stage_rank), label,
                           checkpoint, evaluation))
    if not candidates:
        sys.exit(f"ship: no evaluated checkpoint in {args.work} (run the eval-* stages first)")
    _, label, checkpoint, evaluation = max(candidates, key=lambda c: c[0])

    os.makedirs(args.out_dir, exist_ok=True)
    for name in sorted(os.listdir(checkpoint)):
        source = os.path.join(checkpoint, name)
        if name in SKIP or not os.path.isfile(source):
            continue
        if name == "model.safetensors":
            cast_safetensors_to_bf16(source, os.path.join(args.out_dir, name))
        elif name == "config.json":
            with open(source) as f:
                config = json.load(f)
            config["torch_dtype"] = "bfloat16"
            with open(os.path.join(args.out_dir, name), "w") as f:
                json.dump(config, f, indent=2)
        else:
            shutil.copy2(source, os.path.join(args.out_dir, name))

    def read(name):
        return read_json(os.path.join(args.work, name))

    keep = ["ops", "k", "correct_rate", "pass_at_1", "pass_at_k", "fast_1", "fast_1_5", "compile_rate",
            "rule_violation_rate", "geomean_speedup", "ops_with_correct", "intervals", "bootstrap"]
    provenance = {
        "model": label,
        "checkpoint": os.path.relpath(checkpoint, args.work),
        "chosen_by": "best held-out correct rate among " + ", ".join(sorted(c[1] for c in candidates)),
        "evaluation": dict({k: evaluation.get(k) for k in keep if k in evaluation}, split="heldout"),
        "evaluations": {c[1]: {"correct_rate": c[3].get("correct_rate"), "fast_1": c[3].get("fast_1")}
                        for c in candidates},
        "dataset": read("dataset.json"),
        "training": {name: read(f"{name}.json") for name in ["sft", label] if read(f"{name}.json") is not None},
        "command": args.command,
    }
    with open(os.path.join(args.out_dir, "provenance.json"), "w") as f:
        json.dump(provenance, f, indent=2)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out_dir, n)) for n in os.listdir(args.out_dir))
    print(json.dumps({"shipped": label, "out_dir": args.out_dir, "bytes": total,
                      "correct_rate": evaluation.get("correct_rate"), "fast_1": evaluation.get("fast_1")}))
    if total > args.max_mb * 1e6:
        sys.exit(f"ship: {total / 1e6:.1f} MB exceeds --max-mb {args.max_mb}")


if __name__ == "__main__":
    main()
