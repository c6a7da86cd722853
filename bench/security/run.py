#!/usr/bin/env python3
# Runs every regression kernel of tests/worker/harness/adversarial/manifest.json through
# `kforge-worker check` (the real sandbox, PoCL, timing on) and writes
# bench/results/security.json: each kernel's outcome, escapes and credited hacks, and the CPU
# eager baseline of a large-output op under both baseline allocators (cpu_baseline_allocator).
# Run: bench/security/run.sh [BUILD_DIR] [--allocator-only]  (the test of the same kernels:
# ctest -R harness_adversarial; of the allocator: ctest -R harness_steady_allocator)
import json, os, platform, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
ALLOCATOR_ONLY = "--allocator-only" in sys.argv[1:]  # refresh cpu_baseline_allocator, keep the other keys
BUILD = ARGS[0] if ARGS else os.path.join(ROOT, "build")
RESULTS = os.path.join(ROOT, "bench/results/security.json")
# Issue 14: eager's outputs were fresh, page-faulted mappings on every call. The held-out op of the
# issue (two 32 MiB intermediates per call), timed by the baseline path with each allocator,
# interleaved round by round so both see the same machine.
ALLOCATOR_OP = "suite/level2/l1_distance.json"
ALLOCATOR_ROUNDS = 5
ESCAPE_MARKER = "/tmp/kforge-adversarial-escape"
SECRET = "9071836425"  # put in the worker's environment: it must never appear in a result


def allowed(result, expect):
    outcome = result.get("outcome")
    for want in expect:
        if want == "correct_inert" and outcome == "correct":
            return True
        if want == "correct_weak" and outcome == "correct" and result.get("weak_test"):
            return True
        if want == outcome:
            return True
    return False


def check_json(cmd, env):
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True)
    try:
        return json.loads(proc.stdout.decode("utf-8", "replace"))
    except ValueError:
        raise SystemExit(f"{' '.join(cmd)}: no result: {proc.stderr.decode('utf-8', 'replace')[-300:]}")


def measure_baseline_allocator(worker, env):
    """The eager baseline's median under the default and the caching allocator, side by side."""
    kernel = subprocess.run([os.path.join(BUILD, "bin", "kforge-codegen"), "emit", ALLOCATOR_OP], cwd=ROOT,
                            capture_output=True, check=True).stdout
    rounds = []
    with tempfile.NamedTemporaryFile(suffix=".cl") as kernel_file:
        kernel_file.write(kernel)
        kernel_file.flush()
        for round_idx in range(ALLOCATOR_ROUNDS):
            row = {}
            for allocator in ("default", "caching"):
                result = check_json([worker, "check", ALLOCATOR_OP, kernel_file.name, "--baseline-allocator", allocator],
                                    env)
                baseline = result.get("baseline") or {}
                row[allocator] = {"median_ms": baseline.get("median_ms"), "iqr_ms": baseline.get("iqr_ms"),
                                  "runs": baseline.get("runs"), "others_cores": baseline.get("others_cores"),
                                  "speedup": result.get("speedup"), "suspicious": result.get("suspicious"),
                                  "environment_baseline": result.get("environment", {}).get("baseline")}
                print(f"allocator round {round_idx + 1}: {allocator:8} eager {row[allocator]['median_ms']} ms", flush=True)
            rounds.append(row)
    default_ms = statistics.median(r["default"]["median_ms"] for r in rounds)
    caching_ms = statistics.median(r["caching"]["median_ms"] for r in rounds)
    ratios = [r["default"]["median_ms"] / r["caching"]["median_ms"] for r in rounds]  # paired: same round
    spec = json.load(open(os.path.join(ROOT, ALLOCATOR_OP)))
    return {"op": f"{spec['name']} ({ALLOCATOR_OP}: {spec['source'].strip().splitlines()[-1].strip()}, "
                  f"inputs {spec['inputs'][0]['shape']} float32)",
            "default_median_ms": default_ms, "caching_median_ms": caching_ms,
            "default_over_caching": statistics.median(ratios), "ratio_per_round": ratios,
            "command": f"bench/security/run.sh {os.path.relpath(BUILD, ROOT)} --allocator-only (per round: "
                       f"kforge-worker check {ALLOCATOR_OP} L1.cl --baseline-allocator default|caching, L1.cl from "
                       f"kforge-codegen emit {ALLOCATOR_OP}; medians of {ALLOCATOR_ROUNDS} interleaved rounds)",
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_average": os.getloadavg()[0],
            "rounds": rounds}


def write_results(out):
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def main():
    worker = os.path.join(BUILD, "bin", "kforge-worker")
    if ALLOCATOR_ONLY:
        out = json.load(open(RESULTS))
        out["cpu_baseline_allocator"] = measure_baseline_allocator(worker, dict(os.environ))
        write_results(out)
        return 0
    manifest = json.load(open(os.path.join(ROOT, "tests/worker/harness/adversarial/manifest.json")))
    env = dict(os.environ, KFORGE_SECRET_SEED=SECRET, KFORGE_DATABASE_URL="postgresql://kforge:not-for-kernels@db/kforge")
    if os.path.exists(ESCAPE_MARKER):
        os.remove(ESCAPE_MARKER)
    rows, escapes, credited = [], 0, 0
    honest_speedup = None
    for entry in manifest["kernels"]:
        started = time.time()
        proc = subprocess.run([worker, "check", entry["op"], entry["file"], "--time-budget", "0.5"], cwd=ROOT, env=env,
                              capture_output=True)
        text = proc.stdout.decode("utf-8", "replace")
        try:
            result = json.loads(text)
        except ValueError:
            result = {"outcome": "no_result", "message": (text + proc.stderr.decode("utf-8", "replace"))[-300:]}
        escaped = []
        if proc.returncode not in (0, 1):
            escaped.append(f"kforge-worker check ended with {proc.returncode}")
        if os.path.exists(ESCAPE_MARKER):
            escaped.append("a file appeared on the host")
            os.remove(ESCAPE_MARKER)
        if SECRET in text or "not-for-kernels" in text:
            escaped.append("a secret of the worker's environment came back in the result")
        ok = allowed(result, entry["expect"])
        is_attack = entry["class"] != "control"
        hack = is_attack and result.get("outcome") == "correct" and not ok
        if entry["class"] == "control" and result.get("outcome") == "correct":
            honest_speedup = result.get("speedup")
        escapes += bool(escaped)
        credited += hack
        rows.append({"file": entry["file"], "op": entry["op"], "class": entry["class"], "attack": entry["attack"],
                     "expect": entry["expect"], "outcome": result.get("outcome"), "rule": result.get("rule", ""),
                     "weak_test": result.get("weak_test", False), "speedup": result.get("speedup"),
                     "message": (result.get("message") or "")[:240], "as_expected": ok, "escaped": escaped,
                     "credited_hack": hack, "seconds": round(time.time() - started, 2)})
        print(f"{os.path.basename(entry['file']):34} {result.get('outcome'):15} {'ok' if ok else 'UNEXPECTED'}", flush=True)
    out = {"command": "bench/security/run.sh " + os.path.relpath(BUILD, ROOT),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "kernels_checked": len(rows), "escapes": escapes, "credited_hacks": credited,
           "unexpected": sum(not r["as_expected"] for r in rows), "honest_speedup": honest_speedup,
           "sandbox": rows and json.loads(subprocess.run([worker, "check", manifest["kernels"][0]["op"],
                                                          manifest["kernels"][0]["file"], "--no-time"], cwd=ROOT,
                                                         env=env, capture_output=True).stdout or b"{}")
           .get("environment", {}).get("sandbox", ""),
           "kernels": rows,
           "cpu_baseline_allocator": measure_baseline_allocator(worker, env)}
    write_results(out)
    print(f"escapes: {escapes}, credited_hacks: {credited}, unexpected: {out['unexpected']}")
    return 0 if escapes == 0 and credited == 0 and out["unexpected"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
