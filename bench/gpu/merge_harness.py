# Folds a later device call's harness and timing measurements (harness.json, timing.json
# from bash bench/gpu/run_device.sh ... harness timing) into bench/results/gpu.json, keeping
# the replaced values under harness.previous so a change is visible side by side, and
# copies the call's raw files under bench/results/gpu_<date>/ with a suffix.
# Usage: python3 bench/gpu/merge_harness.py CALL_DIR --command "..." --suffix harness_policy
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
parser.add_argument("--suffix", required=True, help="names the copied raw files: <file>_<suffix>.json")
parser.add_argument("--notes", help="replaces harness.notes: how to read the new numbers")
parser.add_argument("--results", default="bench/results/gpu.json")
parser.add_argument("--raw-dir", default="bench/results/gpu_2026_11_24")
args = parser.parse_args()

with tempfile.TemporaryDirectory() as folder:
    summary = os.path.join(folder, "gpu.json")
    subprocess.run([sys.executable, "bench/gpu/summarize.py", "--in", args.call_dir, "--out", summary,
                    "--command", args.command], check=True, stdout=subprocess.DEVNULL)
    fresh = json.load(open(summary))["harness"]
results = json.load(open(args.results))
harness = results.setdefault("harness", {})
previous = {key: harness[key] for key in fresh if key in harness and harness[key] != fresh[key]}
if previous:
    previous["command"] = results.get("command")
    harness.setdefault("previous", []).append(previous)
harness.update(fresh)
harness["command"] = args.command
if args.notes:
    harness["notes"] = args.notes
for name in ("harness.json", "timing.json"):
    source = os.path.join(args.call_dir, name)
    if os.path.exists(source):
        shutil.copy(source, os.path.join(args.raw_dir, f"{os.path.splitext(name)[0]}_{args.suffix}.json"))
json.dump(results, open(args.results, "w"), indent=1)
print(json.dumps({k: harness[k] for k in ("overhead_ms_warm", "timing_vs_do_bench_max_rel_diff") if k in harness}))
