# The GPU harness's own cost and stability, per target, on one op (silu_mul 4096x2048):
# cold = one `kforge-worker check` process per candidate (Checker set-up, reference runner,
# sandbox start included); warm = N distinct candidates through one Checker. Reports
# candidates/s cold and warm, the harness overhead per warm candidate (phases_ms.overhead:
# total minus compile, run and timing) and the spread of the kernel medians of the N
# candidates (the same kernel, made distinct by a comment so no result cache hits).
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


def check(bin_dir, op, programs, target, extra):
    device = ["--device", "gpu"] if target == "opencl" else []
    cmd = [f"{bin_dir}/kforge-worker", "check", op, *programs, "--target", target, *device, *extra]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.time() - started
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not results:
        raise RuntimeError(f"{target}: no results: {proc.stderr[-800:]}")
    return results, wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--op", default="suite/level2/silu_mul.json")
    parser.add_argument("--warm", type=int, default=8)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--targets", default="cuda,triton,opencl")
    args = parser.parse_args()
    extra = ["--trials", "3", "--time-budget", "0.5", "--no-compile-baseline"]
    report = {"op": args.op, "targets": {}, "command": "python3 bench/gpu/harness_bench.py --bin build-gpu/bin"}
    with tempfile.TemporaryDirectory() as folder:
        for target in args.targets.split(","):
            programs = variants(PROGRAMS[target], args.warm + args.cold, folder)
            cold_walls = []
            for program in programs[args.warm:]:
                results, wall = check(args.bin, args.op, [program], target, extra)
                cold_walls.append(wall)
            results, wall = check(args.bin, args.op, programs[: args.warm], target, extra)
            outcomes = [r["outcome"] for r in results]
            medians = [r["kernel"]["median_ms"] for r in results if r.get("kernel")]
            overheads = [r["phases_ms"]["overhead"] for r in results[1:]]
            row = {
                "outcomes": outcomes,
                "candidates_per_s_cold": len(cold_walls) / sum(cold_walls),
                "candidates_per_s_warm": len(results) / wall,
                "overhead_ms_warm": statistics.median(overheads) if overheads else None,
                "compile_ms_median": statistics.median(r["phases_ms"]["compile"] for r in results),
                "kernel_medians_ms": medians,
                "timing_spread_pct": 100 * (max(medians) - min(medians)) / statistics.median(medians) if medians else None,
                "timing_iqr_spread_pct": (100 * (sorted(medians)[len(medians) * 3 // 4] - sorted(medians)[len(medians) // 4])
                                          / statistics.median(medians)) if medians else None,
            }
            report["targets"][target] = row
            print(f"{target:7s} cold {row['candidates_per_s_cold']:.2f}/s  warm {row['candidates_per_s_warm']:.2f}/s  "
                  f"overhead {row['overhead_ms_warm']:.1f} ms  spread {row['timing_spread_pct']:.2f}% "
                  f"(IQR {row['timing_iqr_spread_pct']:.2f}%)  outcomes {set(outcomes)}", flush=True)
    json.dump(report, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
