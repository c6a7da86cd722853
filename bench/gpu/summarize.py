# Gathers device runs' outputs (bench/gpu/run_device.sh: timing.json, adversarial.json,
# harness.json, e2e.json, check.json, teacher_<target>.json, devices.txt, test.log) into the
# keys of bench/results/gpu.json; with several folders a later one's file wins.
# Usage: python3 bench/gpu/summarize.py --in $OUT [MORE_OUT...] --out gpu.json [--command "..."]
import argparse
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from phase_split import format_split, median_split  # noqa: E402


def find(folders, name):
    """The file from the last folder that has it (later device calls win), or None."""
    for folder in reversed(folders):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def load(folders, name):
    path = find(folders, name)
    return json.load(open(path)) if path else None


def geomean(values):
    """Geometric mean of the positive values (None when there are none)."""
    logs = [math.log(v) for v in values if v and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def replace_rows(base, new_rows, why):
    """base's teacher rows with those of the same (level, name) replaced by new_rows, each marked
    with `source` = why; rows only in new_rows are added. Used by the results folders' merge.py."""
    key = lambda r: (r.get("level"), r.get("name"))  # noqa: E731
    new = {key(r): dict(r, source=why) for r in new_rows}
    rows = [new.pop(key(r), r) for r in base]
    rows += new.values()
    return sorted(rows, key=key)


def set_target_teacher(teacher, target, rows, summary, ceiling):
    """Writes one target's entries of gpu.json's `teacher` from its merged rows: the per-level
    keys of teacher_summary's `summary`, the slowest matmul-class row against eager and the
    memory-bound level-2 median against `ceiling` (copy_ceiling.py's file). Used by the results
    folders' merge.py."""
    for level in ("level1", "level2"):
        for key, per_target in summary.get(level, {}).items():
            if target in per_target:
                teacher[level].setdefault(key, {})[target] = per_target[target]
    correct = [r for r in rows if r.get("outcome") == "correct"]
    low = min((r for r in correct if "gflops" in r), key=lambda r: r["speedup_vs_eager"])
    teacher["matmul_vs_eager_min"][target] = low["speedup_vs_eager"]
    teacher["matmul_vs_eager_min_op"][target] = f"level{low['level']}/{low['name']}"
    fused = statistics.median(r["gbps"] for r in correct if r.get("level") == 2 and "gflops" not in r)
    teacher["memory_bound_gbps_median"][target] = fused
    teacher["memory_bound_copy_fraction_median"][target] = fused / ceiling["copy_ceiling_gbps"]
    teacher["memory_bound_copy_32mib_fraction_median"][target] = fused / ceiling["copy_32mib_gbps"]


def teacher_summary(folder, copy_ceiling_gbps):
    """teacher.level1/level2 per target from kforge-codegen bench's files, the memory-bound
    level-2 ops' share of the copy ceiling and the slowest matmul op against eager."""
    teacher = {}
    for target in ("cuda", "triton", "opencl"):
        bench = load(folder, f"teacher_{target}.json")
        if not bench:
            continue
        for level in (1, 2):
            rows = [r for r in bench.get("ops", []) if r.get("level") == level]
            if not rows:
                continue  # the run selected the other level
            entry = teacher.setdefault(f"level{level}", {})
            correct_rows = [r for r in rows if r.get("outcome") == "correct"]
            entry.setdefault("ops", {})[target] = len(rows)
            entry.setdefault("correct_share", {})[target] = len(correct_rows) / len(rows)
            entry.setdefault("geomean_vs_eager", {})[target] = geomean(r.get("speedup_vs_eager") for r in correct_rows)
            entry.setdefault("geomean_vs_compile", {})[target] = geomean(r.get("speedup_vs_compile") for r in correct_rows)
            entry.setdefault("faster_than_eager_share", {})[target] = sum(
                1 for r in correct_rows if (r.get("speedup_vs_eager") or 0) > 1) / len(rows)
            entry.setdefault("faster_than_compile_share", {})[target] = sum(
                1 for r in correct_rows if (r.get("speedup_vs_compile") or 0) > 1) / len(rows)
            outcomes = {}
            for r in rows:
                if r.get("outcome") != "correct":
                    outcomes[r.get("outcome")] = outcomes.get(r.get("outcome"), 0) + 1
            entry.setdefault("not_correct", {})[target] = outcomes
        correct = [r for r in bench.get("ops", []) if r.get("outcome") == "correct"]
        matmul = [r["speedup_vs_eager"] for r in correct if "gflops" in r]
        if matmul:
            teacher.setdefault("matmul_vs_eager_min", {})[target] = min(matmul)
        fused = [r["gbps"] / copy_ceiling_gbps for r in correct
                 if r.get("level") == 2 and "gflops" not in r and copy_ceiling_gbps]
        if fused:
            teacher.setdefault("memory_bound_copy_fraction_median", {})[target] = statistics.median(fused)
        teacher.setdefault("command", {})[target] = bench.get("command")
    return teacher


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--in", dest="folder", required=True, nargs="+",
                        help="device output folders; a file in a later folder replaces the same file in earlier ones")
    parser.add_argument("--command", default="", help="the command(s) that produced the folders, recorded as is")
    parser.add_argument("--copy-ceiling-gbps", type=float, default=None,
                        help="the device's copy ceiling when no folder has a timing.json that measured it")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = {"device": {}, "harness": {}, "e2e": {}, "tests": {}}
    devices = find(args.folder, "devices.txt")
    if devices:
        out["device"]["listing"] = open(devices).read().strip().splitlines()
    timing = load(args.folder, "timing.json")
    if timing:
        out["device"].update(name=timing["device"], torch=timing["torch"], triton=timing["triton"])
        out["copy_ceiling_gbps"] = timing.get("copy_ceiling_gbps")
        out["harness"]["timing_vs_do_bench_max_rel_diff"] = timing["timing_vs_do_bench_max_rel_diff"]
        out["harness"]["timing_vs_do_bench"] = timing["cases"]
    adversarial = load(args.folder, "adversarial.json")
    if adversarial:
        for key in ("adversarial_rejected_share", "adversarial_total", "credited_hacks", "controls_correct",
                    "controls_total"):
            out["harness"][key] = adversarial[key]
        out["harness"]["sandbox_per_target"] = adversarial.get("sandbox_per_target", {})
        out["harness"]["adversarial_not_as_expected"] = [
            {k: r[k] for k in ("file", "target", "expect", "outcome", "message")} for r in adversarial["rows"]
            if not r["as_expected"]]
    harness = load(args.folder, "harness.json")
    if harness:
        # Headline numbers are the default GPU spare policy's ("gate"); every policy's row is kept.
        per_target = {t: r["policies"].get("gate") or next(iter(r["policies"].values())) for t, r in harness["targets"].items()}
        out["harness"]["candidates_per_s"] = {t: {"cold": harness["targets"][t]["candidates_per_s_cold"],
                                                  "warm": r["candidates_per_s_warm"]} for t, r in per_target.items()}
        for key in ("overhead_ms_warm", "timing_spread_pct", "timing_iqr_spread_pct", "phases_ms_median"):
            out["harness"][key] = {t: r[key] for t, r in per_target.items()}
        out["harness"]["by_spare_policy"] = {
            t: {policy: {key: row[key] for key in ("overhead_ms_warm", "timing_spread_pct", "timing_iqr_spread_pct",
                                                    "candidates_per_s_warm")}
                for policy, row in r["policies"].items()} for t, r in harness["targets"].items()}
    # e2e rows from every folder: one call may have posted other targets than another.
    e2e_rows = {}
    for folder in args.folder:
        part = load([folder], "e2e.json")
        for row in (part or {}).get("rows", []):
            e2e_rows[(row["op"], row["target"])] = row
    e2e = {"rows": list(e2e_rows.values())} if e2e_rows else None
    if e2e:
        for target in sorted({r["target"] for r in e2e["rows"]}):
            rows = [r for r in e2e["rows"] if r["target"] == target]
            verified = [r for r in rows if r["verified"]]
            out["e2e"][target] = {
                "verified": bool(verified), "verified_ops": len(verified), "ops": len(rows),
                "speedup_vs_eager": {r["op"]: r["speedup_vs_eager"] for r in verified},
                "speedup_vs_compile": {r["op"]: r["speedup_vs_compile"] for r in verified},
                "seconds_to_result": {r["op"]: r["seconds_to_result"] for r in rows},
                "failures": {r["op"]: r["error"] for r in rows if not r["verified"]},
                # Where the time went (seconds; bench/lib/phase_split.py): per op, and the median.
                "phases_s": {r["op"]: r.get("phases_s") for r in rows if r.get("phases_s")},
                "phases_median_s": median_split([r.get("phases_s") for r in rows]),
            }
            for r in rows:
                if r.get("phases_s"):
                    print(f"e2e {target} {r['op']}: {r['seconds_to_result']} s to result; {format_split(r['phases_s'])}")
    teacher = teacher_summary(args.folder, out.get("copy_ceiling_gbps") or args.copy_ceiling_gbps)
    if teacher:
        out["teacher"] = teacher
    check = load(args.folder, "check.json")
    if check:
        out["check_suite"] = check["rows"]
    test_log = find(args.folder, "test.log")
    if test_log:
        text = open(test_log).read()
        summary = re.findall(r"\d+% tests passed, \d+ tests failed out of \d+", text)
        out["tests"]["summary"] = summary[-1] if summary else None
        out["tests"]["failed"] = re.findall(r"\d+ - (\S+) \(Failed\)", text)
        out["tests"]["gpu_labelled_passed"] = re.findall(r"Test +#\d+: (harness_cuda_backend_test|harness_triton_runner_test) \.+ +Passed", text)
    out["command"] = args.command or "bash bench/gpu/run_device.sh build test timing adversarial harness check e2e teacher summarize"
    out["sources"] = {name: find(args.folder, name) for name in (
        "timing.json", "adversarial.json", "harness.json", "e2e.json", "check.json", "teacher_cuda.json",
        "teacher_triton.json", "test.log") if find(args.folder, name)}
    json.dump(out, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
