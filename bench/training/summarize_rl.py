#!/usr/bin/env python3
"""Issue 17's summary: GRPO against SFT and against expert iteration (rft) on the held-out
ops, from the files bench/training/run_device.sh's stages copy to $OUT (eval_sft.json,
eval_grpo_s<seed>.json, eval_rft.json, grpo_s<seed>_metrics.jsonl), into the keys the
issue names, merged into bench/results/training.json under "rl" (the issue-8 keys stay).

Usage: summarize_rl.py RUN_DIR RESULTS_JSON --command CMD
       summarize_rl.py --self-test          (ctest -R bench_summarize_rl)
A run meets the goal when correct rate and fast_1 are each >= 5 points above SFT's and the
95% intervals of correct rate (bootstrap over ops, from the evaluation) do not overlap.
"""
import glob
import json
import os
import sys

from summarize_device import read_json, read_jsonl

GOAL_PTS = 5.0


def interval(evaluation, name):
    value = (evaluation.get("intervals") or {}).get(name)
    return value if isinstance(value, list) and len(value) == 2 else None


def versus(run, base):
    """Points (x100) run minus base, and whether the correct-rate intervals are apart."""
    a, b = interval(run, "pass_at_1"), interval(base, "pass_at_1")
    separated = bool(a and b and (a[0] > b[1] or b[0] > a[1]))
    return {"correct_pts": round(100 * (run["correct_rate"] - base["correct_rate"]), 2),
            "fast1_pts": round(100 * (run["fast_1"] - base["fast_1"]), 2),
            "ci_separated": separated,
            "correct_interval": a, "baseline_correct_interval": b}


def summarize(run_dir):
    sft = read_json(os.path.join(run_dir, "eval_sft.json"))
    if sft is None:
        raise SystemExit(f"summarize_rl: no eval_sft.json in {run_dir}")
    rft = read_json(os.path.join(run_dir, "eval_rft.json"))
    seeds = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "eval_grpo_s*.json"))):
        seed = os.path.basename(path)[len("eval_grpo_s"):-len(".json")]
        grpo = read_json(path)
        steps = read_jsonl(os.path.join(run_dir, f"grpo_s{seed}_metrics.jsonl"))
        row = versus(grpo, sft)
        row["meets_goal"] = row["correct_pts"] >= GOAL_PTS and row["fast1_pts"] >= GOAL_PTS and row["ci_separated"]
        row["grpo_minus_rft_correct_pts"] = round(100 * (grpo["correct_rate"] - rft["correct_rate"]), 2) if rft else None
        row["heldout"] = {k: grpo.get(k) for k in ("correct_rate", "fast_1", "rule_violation_rate", "compile_rate")}
        row["steps"] = len(steps)
        watch = ("step", "correct_rate", "rule_violation_rate", "rules_caught", "suspicious_rate", "hacking_rate",
                 "rechecked", "recheck_failed", "recheck_fail_rate", "groups_kept", "groups_dropped", "seconds")
        row["per_step_watch"] = [{k: s.get(k) for k in watch} for s in steps]
        seeds[seed] = row
    if not seeds:
        raise SystemExit(f"summarize_rl: no eval_grpo_s<seed>.json in {run_dir}")
    first = seeds[sorted(seeds)[0]]
    best_label = max(["sft"] + [f"grpo_s{s}" for s in seeds] + (["rft"] if rft else []),
                     key=lambda l: (read_json(os.path.join(run_dir, f"eval_{l}.json")) or {}).get("correct_rate", 0))
    final = read_json(os.path.join(run_dir, f"eval_{best_label}.json"))
    return {
        "grpo_minus_sft": {k: first[k] for k in ("correct_pts", "fast1_pts", "ci_separated")},
        "runs_meeting_goal": sum(1 for r in seeds.values() if r["meets_goal"]),
        "grpo_minus_rft": {"correct_pts": first["grpo_minus_rft_correct_pts"]},
        "final_model": best_label,
        "final_rule_violation_rate": final.get("rule_violation_rate"),
        "heldout_sft": {k: sft.get(k) for k in ("correct_rate", "fast_1", "rule_violation_rate", "compile_rate")},
        "heldout_rft": {k: rft.get(k) for k in ("correct_rate", "fast_1", "rule_violation_rate")} if rft else None,
        "seeds": seeds,
        "goal": f"per seed: GRPO correct and fast_1 each >= {GOAL_PTS} points over SFT, 95% intervals apart; "
                "two seeds; GRPO >= rft",
    }


def self_test():
    import tempfile
    d = tempfile.mkdtemp()
    def put(name, correct, fast1, lo, hi, rule=0.1):
        json.dump({"correct_rate": correct, "fast_1": fast1, "rule_violation_rate": rule,
                   "intervals": {"pass_at_1": [lo, hi]}}, open(os.path.join(d, name), "w"))
    put("eval_sft.json", 0.20, 0.05, 0.12, 0.28)
    put("eval_grpo_s0.json", 0.40, 0.12, 0.30, 0.50, rule=0.03)  # +20, +7, apart: meets
    put("eval_grpo_s1.json", 0.26, 0.20, 0.18, 0.34)             # +6 but intervals overlap: does not
    put("eval_rft.json", 0.30, 0.10, 0.2, 0.4)
    with open(os.path.join(d, "grpo_s0_metrics.jsonl"), "w") as f:
        f.write(json.dumps({"step": 1, "rule_violation_rate": 0.2}) + "\n" + json.dumps({"step": 2}) + "\n")
    out = summarize(d)
    checks = [
        (out["grpo_minus_sft"] == {"correct_pts": 20.0, "fast1_pts": 7.0, "ci_separated": True}, out["grpo_minus_sft"]),
        (out["runs_meeting_goal"] == 1, out["runs_meeting_goal"]),
        (out["seeds"]["1"]["ci_separated"] is False, "overlapping intervals are not separated"),
        (out["grpo_minus_rft"]["correct_pts"] == 10.0, out["grpo_minus_rft"]),
        (out["final_model"] == "grpo_s0" and out["final_rule_violation_rate"] == 0.03, out["final_model"]),
        (out["seeds"]["0"]["steps"] == 2 and out["seeds"]["0"]["per_step_watch"][0]["rule_violation_rate"] == 0.2,
         out["seeds"]["0"]["per_step_watch"]),
    ]
    bad = [str(why) for ok, why in checks if not ok]
    print("ok" if not bad else "FAIL: " + "; ".join(bad))
    sys.exit(1 if bad else 0)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    if len(sys.argv) != 5 or sys.argv[3] != "--command":
        sys.exit(__doc__)
    run_dir, results_json, command = sys.argv[1], sys.argv[2], sys.argv[4]
    rl = summarize(run_dir)
    rl["command"] = command
    results = read_json(results_json) or {}
    results["rl"] = rl
    for key in ("grpo_minus_sft", "runs_meeting_goal", "grpo_minus_rft", "final_rule_violation_rate"):
        results[key] = rl[key]
    with open(results_json, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(json.dumps({k: rl[k] for k in ("grpo_minus_sft", "runs_meeting_goal", "grpo_minus_rft",
                                         "final_rule_violation_rate")}))


if __name__ == "__main__":
    main()
