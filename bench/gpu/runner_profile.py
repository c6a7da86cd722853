#!/usr/bin/env python3
"""Where each sandboxed runner's time went, from a worker log written with KFORGE_RUNNER_PROFILE.

A worker (or kforge-worker check) started with KFORGE_RUNNER_PROFILE=N logs one "runner profile"
line per reply of every Python runner (docs/harness.md): its start (import, GPU gate wait and
hold, nvidia-smi/NVML), attach, build, prepare, each run and each timing, with wall and CPU
milliseconds and cProfile's N costliest functions. This prints them as a table in log order (the
time is when the parent read the reply) and, with --top MS, the profiles of commands that took
longer than MS.

Usage: python3 bench/gpu/runner_profile.py WORKER_LOG [--top 3000] [--json OUT]
(e.g. KFORGE_RUNNER_PROFILE=30 ... bash bench/gpu/run_device.sh e2e, then $OUT's e2e_worker.log)
"""
import argparse
import json
import re
import sys

LINE = re.compile(r'^ts=(\S+) .*msg="runner profile" pid=(\d+) what=("(?:[^"\\]|\\.)*"|\S+) profile="(.*)"\s*$')


def unquote(text):
    return json.loads('"' + text + '"') if text else text


def parse(path):
    rows = []
    with open(path, errors="replace") as file:
        for line in file:
            match = LINE.match(line)
            if not match:
                continue
            what = match.group(3)
            what = unquote(what[1:-1]) if what.startswith('"') else what
            profile = json.loads(unquote(match.group(4)))
            rows.append({"ts": match.group(1), "pid": int(match.group(2)), "what": what, **profile})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=float, default=0, help="print the profiles of commands over this many ms")
    parser.add_argument("--json", default="", help="write the rows (without the profiles' text) here")
    args = parser.parse_args()
    rows = parse(args.log)
    if not rows:
        sys.exit(f"{args.log}: no 'runner profile' lines (was the worker started with KFORGE_RUNNER_PROFILE?)")
    extra_keys = ["import_ms", "gate_wait_ms", "gate_held_ms", "host_facts_ms"]
    print(f"{'read at':12} {'pid':>6} {'cmd':10} {'what':34} {'wall ms':>9} {'cpu ms':>9}  start: import/gate wait/gate held/host facts")
    for row in rows:
        start = "/".join(str(row.get(key, "")) for key in extra_keys) if row["cmd"] == "start" else ""
        print(f"{row['ts'][11:23]:12} {row['pid']:>6} {row['cmd']:10} {row['what'][:34]:34} {row.get('wall_ms', 0):>9.1f} "
              f"{row.get('cpu_ms', 0):>9.1f}  {start}")
    if args.top > 0:
        for row in rows:
            if row.get("wall_ms", 0) >= args.top and row.get("top"):
                print(f"\n== pid {row['pid']} {row['cmd']} ({row['what']}): wall {row['wall_ms']} ms, cpu {row['cpu_ms']} ms")
                print(row["top"])
    if args.json:
        with open(args.json, "w") as file:
            json.dump([{k: v for k, v in row.items() if k != "top"} for row in rows], file, indent=1)


if __name__ == "__main__":
    main()
