# Checks teacher kernels for suite ops on a GPU host through the real harness
# (`kforge-worker check ... --target T --device D`): the teacher's schedule (--schedule)
# in each of --targets (opencl on NVIDIA's OpenCL platform, cuda and triton on CUDA
# device 0), and where a source is given for cuda / triton (files named <op>.cu / <op>.py in
# --programs), that source instead of the teacher's. Writes one row per (op, target) with
# the outcome, message and speedups.
# With --jobs N, N checks run side by side: they compile and verify in parallel and take
# turns to time (kforge-worker check --timing-lock), so timings are as if run alone.
# Usage (GPU host): python3 bench/gpu/check_suite.py --bin build-gpu/bin --out check.json [--ops a,b] [--level 2] [--jobs 4]
#                   [--targets opencl,cuda,triton]
import argparse
import concurrent.futures
import glob
import json
import os
import subprocess
import time


def run(cmd, timeout=600):
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr, time.time() - started


def check(bin_dir, op_path, program_path, target, device, extra):
    cmd = [f"{bin_dir}/kforge-worker", "check", op_path, program_path, "--device", device,
           "--timing-lock", os.path.abspath("var/gpu/timing.lock")] + extra
    if target != "opencl":
        cmd += ["--target", target]
    rc, out, err, seconds = run(cmd)
    try:
        result = json.loads(out)
    except ValueError:
        return {"outcome": "harness_failure", "message": (err or out)[-600:], "seconds": seconds}
    keep = {k: result.get(k) for k in ("outcome", "message", "rule", "speedup", "speedup_vs_eager",
                                         "speedup_vs_compile", "suspicious", "weak_test")}
    for side in ("kernel", "baseline", "baseline_compile"):
        if result.get(side):
            keep[f"{side}_ms"] = result[side].get("median_ms")
    keep["device"] = result.get("environment", {}).get("device")
    keep["seconds"] = round(seconds, 2)
    return keep


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--suite", default="suite")
    parser.add_argument("--level", default="2")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all of the level)")
    parser.add_argument("--programs", default="", help="folder with OP.cu / OP.py sources for the cuda / triton targets")
    parser.add_argument("--schedule", default="0", help="teacher schedule index (of each target's space)")
    parser.add_argument("--targets", default="opencl,cuda,triton", help="comma-separated targets to check")
    parser.add_argument("--extra", default="--trials 3", help="extra kforge-worker check flags")
    parser.add_argument("--jobs", type=int, default=1, help="checks side by side (they take turns to time)")
    args = parser.parse_args()
    wanted = {name for name in args.ops.split(",") if name}
    ops = sorted(glob.glob(f"{args.suite}/level{args.level}/*.json"))
    os.makedirs("var/gpu/programs", exist_ok=True)
    work = []  # (op, target, op_path, program path or None, error)
    for op_path in ops:
        name = os.path.basename(op_path)[:-5]
        if wanted and name not in wanted:
            continue
        for target, ext in (("opencl", "cl"), ("cuda", "cu"), ("triton", "py")):
            if target not in args.targets.split(","):
                continue
            given = os.path.join(args.programs, f"{name}.{ext}") if args.programs else ""
            if given and os.path.exists(given) and target != "opencl":
                work.append((name, target, op_path, given, ""))
                continue
            rc, program, err, _ = run([f"{args.bin}/kforge-codegen", "emit", op_path, args.schedule, "--target", target])
            if rc == 0 and program.strip():
                path = f"var/gpu/programs/{name}.{ext}"
                with open(path, "w") as file:
                    file.write(program)
                work.append((name, target, op_path, path, ""))
            else:
                work.append((name, target, op_path, None, (err or program)[-300:]))

    def one(item):
        name, target, op_path, path, err = item
        if path is None:
            row = {"op": name, "target": target, "outcome": "not_lowered", "message": err}
        else:
            device = "NVIDIA" if target == "opencl" else "cuda"
            row = {"op": name, "target": target, **check(args.bin, op_path, path, target, device, args.extra.split())}
        print(f"{row['op']:24s} {row['target']:7s} {row['outcome']:15s} eager x{row.get('speedup_vs_eager') or row.get('speedup') or 0:.2f} "
              f"compile x{row.get('speedup_vs_compile') or 0:.2f} {(row.get('message') or '')[:80]}", flush=True)
        return row

    rows = []
    command = "python3 bench/gpu/check_suite.py " + " ".join(f"--{k} {v}" for k, v in vars(args).items() if v)

    def save():  # after every row: a call cut off at its time limit keeps what it measured
        with open(args.out, "w") as file:
            json.dump({"rows": rows, "command": command}, file, indent=1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for row in pool.map(one, work):
            rows.append(row)
            save()
    save()


if __name__ == "__main__":
    main()
