# Folds a later device call's measurements into bench/results/gpu.json: `harness` (harness.json,
# timing.json from run_device.sh ... harness timing), keeping the replaced values under
# harness.previous so a change is visible side by side; `teacher` (teacher_<target>.json from
# run_device.sh ... teacher with a TEACHER_FILTER), adding the levels the call measured.
# The call's raw files are copied under bench/results/gpu_<date>/ with a suffix.
# Usage: python3 bench/gpu/merge_call.py CALL_DIR --section harness --command "..." --suffix gate_compare
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("call_dir")
parser.add_argument("--command", required=True, help="the device command that produced CALL_DIR")
parser.add_argument("--section", choices=["harness", "teacher"], default="harness")
parser.add_argument("--suffix", required=True, help="names the copied raw files: <file>_<suffix>.json")
parser.add_argument("--notes", help="replaces harness.notes: how to read the new numbers")
parser.add_argument("--results", default="bench/results/gpu.json")
parser.add_argument("--raw-dir", default="bench/results/gpu_2026_11_24")
args = parser.parse_args()

with tempfile.TemporaryDirectory() as folder:
    summary = os.path.join(folder, "gpu.json")
    subprocess.run([sys.executable, "bench/gpu/summarize.py", "--in", args.call_dir, "--out", summary,
                    "--command", args.command], check=True, stdout=subprocess.DEVNULL)
    fresh = json.load(open(summary))[args.section]
results = json.load(open(args.results))
if args.section == "harness":
    harness = results.setdefault("harness", {})
    previous = {key: harness[key] for key in fresh if key in harness and harness[key] != fresh[key]}
    if previous:
        previous["command"] = results.get("command")
        harness.setdefault("previous", []).append(previous)
    harness.update(fresh)
    harness["command"] = args.command
    if args.notes:
        harness["notes"] = args.notes
    raw = ("harness.json", "timing.json")
else:
    teacher = results.setdefault("teacher", {})
    levels = [key for key in fresh if key.startswith("level")]
    for level in levels:
        teacher[level] = dict(fresh[level], command=args.command, bench_commands=fresh.get("command"))
        if args.notes:
            teacher[level]["notes"] = args.notes
    # Worst matmul-class op over every level measured so far.
    for target, value in fresh.get("matmul_vs_eager_min", {}).items():
        known = teacher.setdefault("matmul_vs_eager_min", {}).get(target)
        teacher["matmul_vs_eager_min"][target] = value if known is None else min(known, value)
    raw = ("teacher_cuda.json", "teacher_triton.json")
for name in raw:
    source = os.path.join(args.call_dir, name)
    if os.path.exists(source):
        shutil.copy(source, os.path.join(args.raw_dir, f"{os.path.splitext(name)[0]}_{args.suffix}.json"))
json.dump(results, open(args.results, "w"), indent=1)
print(json.dumps(results[args.section], indent=1)[:1500])
