#!/usr/bin/env python3
"""Summarises one training run (bench/training/run_cpu.sh) into
bench/results/training.json and bench/results/training_curves.png.

Usage: summarize.py WORK_DIR RESULTS_DIR "exact command"
The PNG has no text (pure Python, no matplotlib here): see bench/results/README-training.md
for what each panel and colour is.
"""
import json
import os
import platform
import struct
import subprocess
import sys
import zlib


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    return json.loads(text.splitlines()[-1]) if text.startswith("{") and "\n{" in text else json.loads(text)


class Canvas:
    def __init__(self, width, height):
        self.w, self.h = width, height
        self.px = bytearray([255] * width * height * 3)

    def set(self, x, y, rgb):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(rgb)

    def line(self, x0, y0, x1, y1, rgb, thick=1):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for ox in range(thick):
                for oy in range(thick):
                    self.set(x0 + ox, y0 + oy, rgb)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def png(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                    chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def panel(canvas, x0, y0, w, h, series, y_max):
    """series: list of (values, rgb); x is the index. Axes in grey, y from 0 to y_max."""
    grey = (160, 160, 160)
    canvas.line(x0, y0 + h, x0 + w, y0 + h, grey)
    canvas.line(x0, y0, x0, y0 + h, grey)
    for frac in (0.25, 0.5, 0.75, 1.0):  # light grid
        y = y0 + h - int(frac * h)
        for x in range(x0, x0 + w, 6):
            canvas.set(x, y, (220, 220, 220))
    for values, rgb in series:
        if not values:
            continue
        n = max(2, len(values))
        points = [(x0 + int(i * w / (n - 1)), y0 + h - int(min(v, y_max) / y_max * h) if y_max > 0 else y0 + h)
                  for i, v in enumerate(values)]
        if len(points) == 1:
            points.append((x0 + w, points[0][1]))
        for (ax, ay), (bx, by) in zip(points, points[1:]):
            canvas.line(ax, ay, bx, by, rgb, thick=2)


def environment():
    env = {"machine": platform.machine(), "python": platform.python_version(), "nproc": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        env["load_average"] = os.getloadavg()
    except OSError:
        pass
    try:
        env["torch"] = subprocess.run(["python3", "-c", "import torch;print(torch.__version__)"], capture_output=True,
                                      text=True, timeout=60).stdout.strip()
    except Exception:
        pass
    return env


def main():
    work, results, command = sys.argv[1], sys.argv[2], sys.argv[3]
    sft_steps = read_jsonl(os.path.join(work, "sft", "metrics.jsonl"))
    grpo_steps = read_jsonl(os.path.join(work, "grpo", "metrics.jsonl"))
    eval_sft = read_json(os.path.join(work, "eval_sft.json")) or {}
    eval_grpo = read_json(os.path.join(work, "eval_grpo.json")) or {}
    last = grpo_steps[-1] if grpo_steps else {}
    summary = {
        "heldout_correct_sft": eval_sft.get("correct_rate"),
        "heldout_correct_grpo": eval_grpo.get("correct_rate"),
        "heldout_fast1_sft": eval_sft.get("fast_1"),
        "heldout_fast1_grpo": eval_grpo.get("fast_1"),
        "heldout_compile_sft": eval_sft.get("compile_rate"),
        "heldout_compile_grpo": eval_grpo.get("compile_rate"),
        "heldout_outcomes_sft": eval_sft.get("outcomes"),
        "heldout_outcomes_grpo": eval_grpo.get("outcomes"),
        "heldout_ops": eval_sft.get("ops"),
        "samples_per_op": (eval_sft.get("per_op") or [{}])[0].get("samples"),
        "grpo_steps": len(grpo_steps),
        "hacking_rate_last_step": last.get("hacking_rate"),
        "rule_violation_rate_last_step": last.get("rule_violation_rate"),
        "suspicious_rate_last_step": last.get("suspicious_rate"),
        "dataset": read_json(os.path.join(work, "dataset.json")),
        "sft": read_json(os.path.join(work, "sft.json")),
        "curves": {
            "sft_loss": [s["loss"] for s in sft_steps],
            "sft_val_loss": [[s["step"], s["val_loss"]] for s in sft_steps if "val_loss" in s],
            "grpo_reward_mean": [s["reward_mean"] for s in grpo_steps],
            "grpo_reward_max": [s["reward_max"] for s in grpo_steps],
            "grpo_correct_rate": [s["correct_rate"] for s in grpo_steps],
            "grpo_hacking_rate": [s["hacking_rate"] for s in grpo_steps],
            "grpo_rule_violation_rate": [s["rule_violation_rate"] for s in grpo_steps],
            "grpo_outcomes": [s["outcomes"] for s in grpo_steps],
            "grpo_groups_dropped": [s["groups_dropped"] for s in grpo_steps],
            "grpo_seconds": [s["seconds"] for s in grpo_steps],
        },
        "goal": "GRPO improves held-out correct rate and fast_1 by >= 5 points over SFT",
        "command": command,
        "environment": environment(),
    }
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "training.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    canvas = Canvas(900, 360)
    loss = summary["curves"]["sft_loss"]
    panel(canvas, 40, 20, 380, 300, [(loss, (30, 90, 200)),
                                     ([v for _, v in summary["curves"]["sft_val_loss"]], (230, 120, 20))],
          max(loss + [1e-9]))
    rewards = summary["curves"]["grpo_reward_mean"]
    panel(canvas, 480, 20, 380, 300, [(rewards, (30, 90, 200)),
                                      (summary["curves"]["grpo_reward_max"], (150, 190, 240)),
                                      (summary["curves"]["grpo_correct_rate"], (40, 160, 60)),
                                      (summary["curves"]["grpo_hacking_rate"], (210, 40, 40))],
          max(summary["curves"]["grpo_reward_max"] + [1.0]))
    canvas.png(os.path.join(results, "training_curves.png"))
    print(json.dumps({k: summary[k] for k in ("heldout_correct_sft", "heldout_correct_grpo", "heldout_fast1_sft",
                                              "heldout_fast1_grpo", "grpo_steps", "hacking_rate_last_step")}))


if __name__ == "__main__":
    main()
