# Runs every adversarial program of tests/worker/harness/adversarial_gpu/manifest.json
# through the real harness on a GPU (kforge-worker check --target T, timing on, so hacks
# that act only while timed are exercised) and reports which were rejected with the
# outcome the manifest expects. Writes JSON with adversarial_rejected_share, and per target
# the sandbox the children ran in (the jail's layers, applied and not: sandbox_per_target).
# Usage (GPU host): python3 bench/gpu/adversarial.py --bin build-gpu/bin --out adversarial.json
import argparse
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--manifest", default="tests/worker/harness/adversarial_gpu/manifest.json")
    parser.add_argument("--targets", default="cuda,triton,opencl")
    parser.add_argument("--jobs", type=int, default=6)
    args = parser.parse_args()
    manifest = json.load(open(args.manifest))
    kernels = [k for k in manifest["kernels"] if k["target"] in args.targets.split(",")]
    # Checks run side by side (each in its own processes); verdicts do not depend on timing.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda kernel: run_one(args, manifest, kernel), kernels))
    for row in rows:
        print(f"{'ok ' if row['as_expected'] else 'BAD'} {row['target']:7s} {row['file'].split('/')[-1]:28s} "
              f"{row['outcome']:15s} {row['rule_seen']:18s} {row['message'][:70]}")
    summarize(args, rows)


def run_one(args, manifest, kernel):
    device = "gpu" if kernel["target"] == "opencl" else ""
    cmd = [f"{args.bin}/kforge-worker", "check", manifest["op"], kernel["file"], "--target", kernel["target"],
           "--trials", "3", "--time-budget", "0.3", "--no-compile-baseline"] + (["--device", device] if device else [])
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"outcome": "harness_failure", "message": (proc.stderr or proc.stdout)[-500:]}
    expected = kernel["expect"].split("|")
    ok = result["outcome"] in expected and (not kernel["rule"] or result.get("rule") == kernel["rule"])
    return {**kernel, "outcome": result["outcome"], "rule_seen": result.get("rule", ""),
            "message": (result.get("message") or "")[:300], "as_expected": ok,
            "sandbox": result.get("environment", {}).get("sandbox", ""),
            "seconds": round(time.time() - started, 1)}


def summarize(args, rows):
    attacks = [r for r in rows if r["expect"] != "correct"]
    controls = [r for r in rows if r["expect"] == "correct"]
    summary = {
        "adversarial_rejected_share": sum(r["as_expected"] for r in attacks) / max(len(attacks), 1),
        "adversarial_total": len(attacks),
        "controls_correct": sum(r["as_expected"] for r in controls),
        "controls_total": len(controls),
        "credited_hacks": sum(r["outcome"] == "correct" for r in attacks),
        "sandbox_per_target": {r["target"]: r["sandbox"] for r in rows if r["sandbox"]},
        "rows": rows,
        "command": "python3 bench/gpu/adversarial.py --bin build-gpu/bin",
    }
    json.dump(summary, open(args.out, "w"), indent=1)
    print(f"rejected as expected: {sum(r['as_expected'] for r in attacks)}/{len(attacks)}; "
          f"credited hacks: {summary['credited_hacks']}; controls correct {summary['controls_correct']}/{len(controls)}")


if __name__ == "__main__":
    main()
