#!/usr/bin/env python3
"""Summarises the GPU training runs (bench/training/run_device.sh, files brought back
from the device's $OUT) into bench/results/training.json, training_curves.png and the
raw files next to them.

Usage: summarize_device.py RESULTS_DIR PRIMARY_RUN_DIR [LABEL=RUN_DIR ...]
The primary run gives the top-level numbers and the plot; every run (primary included)
is listed under "runs" with what differed. Needs python3-matplotlib for the plot.
"""
import json
import os
import shutil
import sys

RUN_NOTES = {
    "run1": "1500 synthetic ops named syn_pw_N etc.; GRPO on the train split + the SFT synthetic ops, "
            "lr 5e-5, T 0.7, 30 steps; held-out eval timed checks 16 at a time (no serial timing)",
    "run2": "same SFT model as run1 re-evaluated with serial timing; GRPO on the train split + 800 fresh "
            "synthetic ops SFT never saw, lr 1e-4, T 1.0, 30 steps",
    "run3": "synthetic ops renamed like the suite (tanh_mul_exp) and 1200 of them; new SFT; GRPO on the train "
            "split + 800 fresh synthetic ops, lr 1e-4, T 1.0, 20 steps (the committed run_device.sh defaults)",
}


def read_json(path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    with open(path) as f:
        return json.load(f)


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def eval_row(run_dir, which):
    e = read_json(os.path.join(run_dir, f"eval_{which}.json")) or {}
    keys = ["correct_rate", "fast_1", "fast_1_5", "fast_2", "compile_rate", "pass_at_k", "geomean_speedup",
            "ops_with_correct", "outcomes", "serial_timing"]
    return {k: e.get(k) for k in keys}


def run_summary(label, run_dir):
    sft, grpo = eval_row(run_dir, "sft"), eval_row(run_dir, "grpo")
    steps = read_jsonl(os.path.join(run_dir, "grpo_metrics.jsonl"))
    return {
        "label": label,
        "what": RUN_NOTES.get(label, ""),
        "heldout_sft": sft,
        "heldout_grpo": grpo,
        "delta_correct_points": round(100 * (grpo["correct_rate"] - sft["correct_rate"]), 2),
        "delta_fast1_points": round(100 * (grpo["fast_1"] - sft["fast_1"]), 2),
        "grpo_steps": len(steps),
        "dataset": read_json(os.path.join(run_dir, "dataset.json")),
    }


def plot(path, sft_steps, grpo_steps, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    ax.plot([s["step"] for s in sft_steps], [s["loss"] for s in sft_steps], lw=0.7, label="train loss")
    val = [(s["step"], s["val_loss"]) for s in sft_steps if "val_loss" in s]
    ax.plot([v[0] for v in val], [v[1] for v in val], "o-", ms=3, label="validation loss")
    ax.set_yscale("log"), ax.set_xlabel("SFT step"), ax.set_title("kforge-tiny SFT (H100)"), ax.legend()
    ax = axes[1]
    x = [s["step"] for s in grpo_steps]
    ax.plot(x, [s["reward_mean"] for s in grpo_steps], "o-", ms=3, label="mean reward")
    ax.plot(x, [s["reward_max"] for s in grpo_steps], lw=0.8, label="max reward")
    ax.plot(x, [s["correct_rate"] for s in grpo_steps], "s-", ms=3, label="correct rate")
    ax.plot(x, [s["rule_violation_rate"] for s in grpo_steps], "^-", ms=3, label="rule-violation rate")
    ax.plot(x, [s["hacking_rate"] for s in grpo_steps], "x-", ms=3, label="hacking rate")
    ax.set_xlabel("GRPO step (8 ops x 8 samples)"), ax.set_title("GRPO on train ops, harness reward"), ax.legend(fontsize=7)
    ax = axes[2]
    labels = [r["label"] for r in runs]
    width = 0.2
    for offset, (key, name) in enumerate([("correct_rate", "correct"), ("fast_1", "fast_1")]):
        for side, which in enumerate(["heldout_sft", "heldout_grpo"]):
            xs = [i + (offset * 2 + side - 1.5) * width for i in range(len(runs))]
            ax.bar(xs, [100 * r[which][key] for r in runs], width, label=f"{name} {which.split('_')[1].upper()}")
    ax.set_xticks(range(len(runs)), labels), ax.set_ylabel("% of held-out samples")
    ax.set_title("held-out split (29 ops x 8 samples)"), ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    results, primary = sys.argv[1], sys.argv[2]
    runs_args = [a.split("=", 1) for a in sys.argv[3:]]
    primary_label = next((label for label, d in runs_args if os.path.abspath(d) == os.path.abspath(primary)), "primary")
    runs = [run_summary(label, d) for label, d in runs_args] or [run_summary(primary_label, primary)]
    sft_steps = read_jsonl(os.path.join(primary, "sft_metrics.jsonl"))
    grpo_steps = read_jsonl(os.path.join(primary, "grpo_metrics.jsonl"))
    sft_eval, grpo_eval = eval_row(primary, "sft"), eval_row(primary, "grpo")
    last = grpo_steps[-1] if grpo_steps else {}
    with open(os.path.join(primary, "env.txt")) as f:
        env = f.read().strip().splitlines()
    out = {
        "heldout_correct_sft": sft_eval["correct_rate"],
        "heldout_correct_grpo": grpo_eval["correct_rate"],
        "heldout_fast1_sft": sft_eval["fast_1"],
        "heldout_fast1_grpo": grpo_eval["fast_1"],
        "heldout_compile_sft": sft_eval["compile_rate"],
        "heldout_compile_grpo": grpo_eval["compile_rate"],
        "heldout_outcomes_sft": sft_eval["outcomes"],
        "heldout_outcomes_grpo": grpo_eval["outcomes"],
        "heldout_ops": 29,
        "samples_per_op": 8,
        "grpo_steps": len(grpo_steps),
        "hacking_rate_last_step": last.get("hacking_rate"),
        "rule_violation_rate_last_step": last.get("rule_violation_rate"),
        "suspicious_rate_last_step": last.get("suspicious_rate"),
        "per_step_watch": [{"step": s["step"], "rule_violation_rate": s["rule_violation_rate"],
                            "hacking_rate": s["hacking_rate"], "suspicious_rate": s["suspicious_rate"]}
                           for s in grpo_steps],
        "goal": "GRPO improves held-out correct rate and fast_1 by >= 5 points over SFT",
        "goal_met": False,
        "primary_run": primary_label,
        "runs": runs,
        "dataset": read_json(os.path.join(primary, "dataset.json")),
        "sft": {"steps": len(sft_steps), "final_loss": sft_steps[-1]["loss"] if sft_steps else None,
                "val_loss": [[s["step"], s["val_loss"]] for s in sft_steps if "val_loss" in s],
                "seconds_per_step_median": sorted(s["seconds"] for s in sft_steps)[len(sft_steps) // 2] if sft_steps else None},
        "grpo_seconds_per_step_mean": {k: sum(s["seconds"][k] for s in grpo_steps) / len(grpo_steps)
                                       for k in (grpo_steps[0]["seconds"] if grpo_steps else {})},
        "command": "bash bench/training/run_device.sh build; ... data; ... sft (twice: resumes); ... eval-sft; "
                   "GRPO_STEPS=20 ... grpo; ... eval-grpo (one device call per stage, see the script)",
        "environment": {"device": env},
    }
    out["goal_met"] = (out["heldout_correct_grpo"] - out["heldout_correct_sft"] >= 0.05 and
                       out["heldout_fast1_grpo"] - out["heldout_fast1_sft"] >= 0.05)
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "training.json"), "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    for name in ["sft_metrics.jsonl", "grpo_metrics.jsonl", "eval_sft.json", "eval_grpo.json",
                 "samples_sft.jsonl", "samples_grpo.jsonl"]:
        src = os.path.join(primary, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(results, "training_" + name))
    plot(os.path.join(results, "training_curves.png"), sft_steps, grpo_steps, runs)
    print(json.dumps({k: out[k] for k in ["heldout_correct_sft", "heldout_correct_grpo", "heldout_fast1_sft",
                                          "heldout_fast1_grpo", "grpo_steps", "goal_met"]}))


if __name__ == "__main__":
    main()
