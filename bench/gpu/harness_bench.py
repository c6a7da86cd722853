# The GPU harness's own cost and stability, per target, on one op (silu_mul 4096x2048):
# cold = one `kforge-worker check` process per candidate (Checker set-up, reference runner,
# sandbox start included); warm = N distinct candidates through one Checker. Reports
# candidates/s cold and warm, the harness overhead per warm candidate (phases_ms.overhead:
# total minus compile, run and timing) and the spread of the kernel medians of the N
# candidates (the same kernel, made distinct by a comment so no result cache hits).
# Warm runs repeat per spare policy (--policies: settle, gate, overlap; docs/harness.md)
# and record the median of every phase (phases_ms), so one call shows where the overhead
# goes and what each policy costs in overhead and in timing spread.
# Usage (GPU host): python3 bench/gpu/harness_bench.py --bin build-gpu/bin --out harness.json
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

PROGRAMS = {
    "cuda": "tests/worker/harness/adversarial_gpu/honest.cu",
    "triton": "tests/worker/harness/triton/honest_silu.py",
    "opencl": "tests/worker/harness/adversarial_gpu/honest.cl",
}


def variants(path, count, folder):
    text = open(path).read()
    comment = "#" if path.endswith(".py") else "//"
    out = []
    for idx in range(count):
        name = os.path.join(folder, f"v{idx}{os.path.splitext(path)[1]}")
        with open(name, "w") as file:
            file.write(f"{comment} variant {idx}\n{text}")
        out.append(name)
    return out


def check(bin_dir, op, programs, target, extra, opencl_device):
    device = ["--device", opencl_device] if target == "opencl" else []
    cmd = [f"{bin_dir}/kforge-worker", "check", op, *programs, "--target", target, *device, *extra]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.time() - started
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not results:
        raise RuntimeError(f"{target}: no results: {proc.stderr[-800:]}")
    return results, wall


def warm_row(results, wall):
    """Throughput, overhead and timing spread of one warm run (the first candidate, which
    starts the Checker, is left out of the per-candidate medians)."""
    medians = [r["kernel"]["median_ms"] for r in results if r.get("kernel")]
    later = results[1:] or results
    phases = sorted({name for r in later for name in r.get("phases_ms", {})})
    ordered = sorted(medians)
    return {
        "outcomes": [r["outcome"] for r in results],
        "candidates_per_s_warm": len(results) / wall,
        "overhead_ms_warm": statistics.median(r["phases_ms"]["overhead"] for r in later),
        "phases_ms_median": {name: round(statistics.median(r["phases_ms"].get(name, 0) for r in later), 1)
                             for name in phases},
        "kernel_medians_ms": medians,
        # the sandbox's layers, and whether the arena's inputs were page-locked (and why not)
        "sandbox": (results[0].get("environment") or {}).get("sandbox"),
        "timing_spread_pct": 100 * (max(medians) - min(medians)) / statistics.median(medians) if medians else None,
        "timing_iqr_spread_pct": (100 * (ordered[len(ordered) * 3 // 4] - ordered[len(ordered) // 4])
                                  / statistics.median(medians)) if medians else None,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--op", default="suite/level2/silu_mul.json")
    parser.add_argument("--warm", type=int, default=8)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--targets", default="cuda,triton,opencl")
    parser.add_argument("--policies", default="settle,gate,overlap")
    parser.add_argument("--opencl-device", default="gpu", help="cpu tries the script on PoCL")
    args = parser.parse_args()
    extra = ["--trials", "3", "--time-budget", "0.5", "--no-compile-baseline"]
    report = {"op": args.op, "targets": {}, "command": "python3 bench/gpu/harness_bench.py --bin build-gpu/bin"}
    with tempfile.TemporaryDirectory() as folder:
        for target in args.targets.split(","):
            programs = variants(PROGRAMS[target], args.warm + args.cold, folder)
            cold_walls = []
            for program in programs[args.warm:]:
                results, wall = check(args.bin, args.op, [program], target, extra, args.opencl_device)
                cold_walls.append(wall)
            report["targets"][target] = {"candidates_per_s_cold": len(cold_walls) / sum(cold_walls), "policies": {}}
            for policy in args.policies.split(","):
                results, wall = check(args.bin, args.op, programs[: args.warm], target,
                                      extra + ["--spare-policy", policy], args.opencl_device)
                row = warm_row(results, wall)
                report["targets"][target]["policies"][policy] = row
                print(f"{target:7s} {policy:8s} cold {len(cold_walls) / sum(cold_walls):.2f}/s  "
                      f"warm {row['candidates_per_s_warm']:.2f}/s  overhead {row['overhead_ms_warm']:.1f} ms  "
                      f"spread {row['timing_spread_pct']:.2f}% (IQR {row['timing_iqr_spread_pct']:.2f}%)  "
                      f"phases {row['phases_ms_median']}  outcomes {set(row['outcomes'])}", flush=True)
    json.dump(report, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
