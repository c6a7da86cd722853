#!/usr/bin/env python3
# Runs every regression kernel of tests/worker/harness/adversarial/manifest.json through
# `kforge-worker check` (the real sandbox, PoCL, timing on) and writes
# bench/results/security.json: each kernel's outcome, escapes and credited hacks.
# Run: bench/security/run.sh [BUILD_DIR]  (the test of the same kernels: ctest -R harness_adversarial)
import json, os, platform, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
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


def main():
    manifest = json.load(open(os.path.join(ROOT, "tests/worker/harness/adversarial/manifest.json")))
    worker = os.path.join(BUILD, "bin", "kforge-worker")
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
           "kernels": rows}
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/results/security.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"escapes: {escapes}, credited_hacks: {credited}, unexpected: {out['unexpected']}")
    return 0 if escapes == 0 and credited == 0 and out["unexpected"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
