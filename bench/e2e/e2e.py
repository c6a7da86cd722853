#!/usr/bin/env python3
# End-to-end numbers for bench/e2e/run.sh (which starts PostgreSQL and kforge-server): POST
# to first candidate and to verified kernel per op, generations per minute with 1 and 2 worker
# slots, the load average meanwhile, and where each generation's time went (phases_ms:
# bench/lib/phase_split.py). Usage: bench/e2e/run.sh [BUILD_DIR] (bench/README.md).
import argparse
import atexit
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from phase_split import format_split, median_split, split_row  # noqa: E402

# Five single ops and five fusions the teacher compiles on a CPU worker (no matmuls: one
# 1-GFLOP candidate timing on 2 loaded cores would dominate the mix).
OPS = ["level1/add", "level1/gelu", "level1/softmax_last", "level1/layer_norm", "level1/mean_last",
       "level2/silu_mul", "level2/gelu_add", "level2/softmax_bias", "level2/rms_norm_silu", "level2/add_layer_norm"]
DONE = ("succeeded", "failed", "cancelled")


class Api:
    def __init__(self, url, token):
        self.url, self.token = url, token

    def call(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise SystemExit("e2e: %s %s -> %d: %s" % (method, path, err.code, err.read()[:500]))


class LoadSampler(threading.Thread):
    """The 1-minute load average every 5 s while the benchmark runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(float(open("/proc/loadavg").read().split()[0]))
            self.stop.wait(5)


def suite_op(suite, name):
    spec = json.load(open(os.path.join(suite, name + ".json")))
    return {key: spec[key] for key in ("name", "source", "inputs", "extra_shapes", "tolerance") if key in spec}


def follow(api, jobs, timeout_s):
    """Polls until every job is done; sets first_candidate_s, verified_s, finished_s on each."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        open_jobs = [job for job in jobs if "finished_s" not in job]
        if not open_jobs:
            return
        for job in open_jobs:
            gen = api.call("GET", "/v1/generations/%d" % job["id"])
            now = time.time() - job["posted"]
            if "first_candidate_s" not in job and (gen.get("progress") or {}).get("checked", 0) > 0:
                job["first_candidate_s"] = round(now, 2)
            if gen["status"] in DONE:
                best = gen.get("best") or {}
                timing = (gen.get("result") or {}).get("timing") or {}
                job.update(status=gen["status"], finished_s=round(now, 2), speedup=best.get("speedup"),
                           verified=best.get("outcome") == "correct", generator=(gen.get("result") or {}).get("generator"),
                           best_generator=(gen.get("result") or {}).get("best_generator"),
                           proposed_by_generator=(gen.get("result") or {}).get("proposed_by_generator"),
                           quiet_wait_s=timing.get("quiet_wait_s"), timing_reliable=timing.get("reliable"),
                           phases_s=split_row(gen.get("result")))
                job.setdefault("first_candidate_s", round(now, 2))  # finished between two polls
                if job["verified"]:
                    job["verified_s"] = round(now, 2)
        time.sleep(0.25)
    raise SystemExit("e2e: generations still open after %d s: %s" % (timeout_s, [j["op"] for j in jobs if "finished_s" not in j]))


def post(api, suite, op, samples):
    body = {"op": suite_op(suite, op), "samples": samples, "target": "opencl"}
    posted = time.time()
    gen = api.call("POST", "/v1/generations", body)
    return {"op": op, "id": gen["id"], "posted": posted}


class Worker:
    """A kforge-worker with its own PoCL kernel cache: PoCL caches compiled kernels by source
    (~/.cache/pocl, shared with every other process here), so a warm cache would time the ops
    as repeats, not as new ops. pocl_cache names a folder to reuse (the warm phase)."""

    def __init__(self, args, slots, pocl_cache=None):
        self.log = open(args.log, "a")
        self.pocl_cache = pocl_cache or tempfile.mkdtemp(prefix="kforge-e2e-pocl-", dir=os.path.dirname(args.log))
        env = dict(os.environ, POCL_CACHE_DIR=self.pocl_cache)
        self.proc = subprocess.Popen([args.worker, "--database-url", args.database_url, "--slots", str(slots),
                                      "--poll-s", "0.5"], stderr=self.log, env=env)
        atexit.register(self.stop)  # never leave a worker behind when a phase fails

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=120)
        if not self.log.closed:
            self.log.close()


def rate(jobs, elapsed, how):
    print("e2e throughput: %d generations (%s) in %.1f s = %.2f/min" % (len(jobs), how, elapsed, len(jobs) / elapsed * 60),
          flush=True)
    return {"generations": len(jobs), "posted": how, "seconds": round(elapsed, 1),
            "generations_per_min": round(len(jobs) / elapsed * 60, 2),
            "verified": sum(1 for job in jobs if job.get("verified"))}


def forget_check_results(args):
    """Empties the checker's result cache (db/check_results.h: identical candidates are checked
    once across jobs), so a phase that posts ops an earlier phase posted times them as new."""
    subprocess.run(["psql", "-q", args.database_url, "-c", "TRUNCATE check_results"], check=True)


def quantile(values, q):
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 2) if values else None


def main():
    parser = argparse.ArgumentParser()
    for flag in ("url", "token", "suite", "out", "worker", "database-url", "log", "command"):
        parser.add_argument("--" + flag, required=True)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated suite ops (default: the mix of 10)")
    parser.add_argument("--timeout-s", type=int, default=900)
    args = parser.parse_args()
    ops = args.ops.split(",")
    api = Api(args.url, args.token)
    sampler = LoadSampler()
    sampler.start()
    started = time.time()

    # Latency and 1 slot: one op at a time on a 1-slot worker, so each number is one user's
    # wait; back to back, the worker idles at most one poll (0.25 s) between them.
    throughput = {}
    worker = Worker(args, 1)
    latency = []
    phase_start = time.time()
    for op in ops:
        job = post(api, args.suite, op, args.samples)
        follow(api, [job], args.timeout_s)
        latency.append(job)
        print("e2e latency %-22s first candidate %6.1f s  verified %s  speedup %s" %
              (op, job["first_candidate_s"], job.get("verified_s"), job.get("speedup")), flush=True)
        print("  split: " + format_split(job.get("phases_s")), flush=True)
    worker.stop()
    throughput["slots_1"] = rate(latency, time.time() - phase_start, "one at a time")

    # 2 slots: all ops posted at once to one worker with 2 slots, empty kernel and check-result
    # caches; then the same ops again on warm caches (what a repeated op costs).
    forget_check_results(args)
    worker = Worker(args, 2)
    phase_start = time.time()
    jobs = [post(api, args.suite, op, args.samples) for op in ops]
    follow(api, jobs, args.timeout_s)
    worker.stop()
    throughput["slots_2"] = rate(jobs, time.time() - phase_start, "all posted at once")
    throughput["slots_2"]["phases_median_s"] = median_split([job.get("phases_s") for job in jobs])
    worker = Worker(args, 2, pocl_cache=worker.pocl_cache)
    phase_start = time.time()
    jobs = [post(api, args.suite, op, args.samples) for op in ops]
    follow(api, jobs, args.timeout_s)
    worker.stop()
    throughput["slots_2_repeat_warm_caches"] = rate(jobs, time.time() - phase_start,
                                                          "all posted at once, the same ops again")

    sampler.stop.set()
    first = [job["first_candidate_s"] for job in latency]
    verified = [job["verified_s"] for job in latency if "verified_s" in job]
    loads = sampler.samples
    result = {
        "command": args.command,
        "note": "measured on a shared 2-core machine with other sessions' builds and tests running: "
                "the load average below is part of the result; an idle machine gives shorter times. Each "
                "worker phase starts with an empty PoCL kernel cache and check-result cache (new ops), "
                "except the repeat phase",
        "ops": ops, "samples": args.samples, "target": "opencl (PoCL on the CPU)",
        "post_to_first_candidate_s": quantile(first, 0.5),
        "post_to_first_candidate_p90_s": quantile(first, 0.9),
        "post_to_verified_kernel_p50_s": quantile(verified, 0.5),
        "post_to_verified_kernel_p90_s": quantile(verified, 0.9),
        "verified_ops": "%d/%d" % (len(verified), len(latency)),
        "generations_per_min": {key: throughput[key]["generations_per_min"] for key in ("slots_1", "slots_2")},
        "generations_per_min_repeat_ops_warm_caches": throughput["slots_2_repeat_warm_caches"]["generations_per_min"],
        "throughput": throughput,
        "load_average_1min": {"min": min(loads), "mean": round(statistics.mean(loads), 2), "max": max(loads),
                              "samples": len(loads), "cores": os.cpu_count()},
        # How long generations waited for a quiet window before timing (docs/jobs.md), and how
        # many verified kernels were still timed on a busy machine.
        "quiet_wait_s": {"p50": quantile([job.get("quiet_wait_s") or 0 for job in latency], 0.5),
                         "max": max([job.get("quiet_wait_s") or 0 for job in latency], default=None)},
        "timing_unreliable": "%d/%d" % (sum(1 for job in latency if job.get("timing_reliable") is False), len(verified)),
        "latency_rows": [{key: job.get(key) for key in ("op", "first_candidate_s", "verified_s", "status",
                                                        "speedup", "generator", "best_generator", "proposed_by_generator",
                                                        "quiet_wait_s", "timing_reliable",
                                                        "phases_s")}
                         for job in latency],
        # Where a generation's time went (seconds): the median of every phase over the latency runs.
        "phases_median_s": median_split([job.get("phases_s") for job in latency]),
        "duration_s": round(time.time() - started, 1),
        "environment": {"platform": platform.platform(), "cores": os.cpu_count(),
                        "git_commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                                     text=True, cwd=os.path.dirname(args.suite)).stdout.strip(),
                        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    # The GPU numbers (gpu_triton_*: bench/gpu/e2e.sh on the H100) live in the same file: kept.
    try:
        result.update({key: value for key, value in json.load(open(args.out)).items() if key.startswith("gpu_")})
    except (OSError, ValueError):
        pass
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)
    print("e2e: first candidate p50 %s s, verified p50 %s s p90 %s s, per min %s, load %s; wrote %s" %
          (result["post_to_first_candidate_s"], result["post_to_verified_kernel_p50_s"],
           result["post_to_verified_kernel_p90_s"], result["generations_per_min"], result["load_average_1min"],
           args.out))


if __name__ == "__main__":
    main()
