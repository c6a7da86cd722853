#!/usr/bin/env bash
# kforge end to end on a GPU host: PostgreSQL (from the bundle), kforge-server, and a GPU
# worker that registers its devices (target:cuda, target:triton, device:gpu...); then
# POSTs level-2 suite ops as generations with target triton, cuda and opencl (device gpu)
# and prints each verified kernel with speedup_vs_eager and speedup_vs_compile. OPS names
# level-2 ops (silu_mul) or suite paths (level1/add); E2E_SEQUENTIAL=1 posts one generation
# at a time, so seconds_to_result is one generation's latency (the p50/p90 in "summary").
# Each row carries where the generation's time went (its result's phases_ms, seconds:
# bench/lib/phase_split.py), printed as one "split" line per op, and "summary" the median
# of every phase per target.
# Called by bench/gpu/run_device.sh e2e (after build); writes $OUT/e2e.json after every op
# ("complete": false until the last), so a run cut off by a call's budget keeps its rows.
# Usage: bash bench/gpu/e2e.sh BUILD_DIR [OPS] [TARGETS]
set -uo pipefail
build=${1:-build-gpu}
ops=${2:-silu_mul,gelu_add,softmax_bias,rms_norm_silu,add_layer_norm}
targets=${3:-triton,cuda,opencl}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/kforge_out}
export KFORGE_DATA_DIR=${KFORGE_DATA_DIR:-/tmp/kforge-e2e}
export KFORGE_PG_FAST=1
rm -rf "$KFORGE_DATA_DIR" && mkdir -p "$KFORGE_DATA_DIR" && chmod o+x "$KFORGE_DATA_DIR"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; wait 2>/dev/null; scripts/pg.sh stop >/dev/null 2>&1; }
trap cleanup EXIT
export KFORGE_DATABASE_URL=$(scripts/pg.sh start) || { echo "e2e: PostgreSQL did not start"; exit 1; }
"$build/bin/kforge-server" migrate || exit 1
token=$("$build/bin/kforge-server" token create --scope admin --name e2e)
"$build/bin/kforge-server" --port 8080 --web-dir web > "$OUT/e2e_server.log" 2>&1 &
pids+=($!)
"$build/bin/kforge-worker" --slots 1 > "$OUT/e2e_worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf http://127.0.0.1:8080/v1/ready >/dev/null && break; sleep 0.2; done
# Latency is measured against a running worker, as a user meets one: POSTs begin once the
# worker has registered (CUDA and OpenCL probed) and its child pool has had E2E_SETTLE_S
# (default 15 s) to start its runners (torch, CUDA, Triton and torch.compile loaded).
for _ in $(seq 300); do grep -q 'msg=registered' "$OUT/e2e_worker.log" && break; sleep 0.2; done
sleep "${E2E_SETTLE_S:-15}"
started=$(date +%s.%N)
python3 - "$token" "$ops" "$targets" "$OUT/e2e.json" <<'EOF'
import json, os, sys, time, urllib.error, urllib.request
sys.path.insert(0, "bench/lib")
from phase_split import format_split, median_split, split_row
token, ops, targets, out = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4]
base = "http://127.0.0.1:8080"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:
        raise SystemExit(f"e2e: {method} {path} -> {err.code}: {err.read().decode(errors='replace')[:2000]}")
sequential = os.environ.get("E2E_SEQUENTIAL") == "1"


def post(op, target):
    spec = json.load(open(f"suite/{op}.json" if "/" in op else f"suite/level2/{op}.json"))
    spec = {k: spec[k] for k in ("name", "source", "inputs", "extra_shapes", "tolerance") if k in spec}
    body = {"op": spec, "target": target, "samples": int(os.environ.get("E2E_SAMPLES", "4")), "time_budget_s": 600}
    if target == "opencl":
        body["device"] = "gpu"
    posted = time.time()
    gen = call("POST", "/v1/generations", body)
    return {"op": op, "target": target, "id": gen["id"], "posted": posted}


def wait(job, deadline):
    """Polls the generation until it is done; notes when its first candidate was checked."""
    while True:
        gen = call("GET", f"/v1/generations/{job['id']}")
        if "first_candidate_s" not in job and (gen.get("progress") or {}).get("checked", 0) > 0:
            job["first_candidate_s"] = round(time.time() - job["posted"], 1)
        if gen["status"] in ("succeeded", "failed", "cancelled") or time.time() > deadline:
            return gen
        time.sleep(0.25)


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def write(rows, complete):
    """e2e.json with the rows so far and their summary per target (complete: every pair was
    posted or the deadline passed); returns the summary."""
    summary = {}
    for target in targets:
        done = [r["seconds_to_result"] for r in rows if r["target"] == target and r["verified"]]
        summary[target] = {"post_to_verified_p50_s": quantile(done, 0.5), "post_to_verified_p90_s": quantile(done, 0.9),
                           "verified": f"{len(done)}/{sum(1 for r in rows if r['target'] == target)}",
                           "phases_median_s": median_split([r["phases_s"] for r in rows if r["target"] == target])}
    with open(out + ".tmp", "w") as file:
        json.dump({"rows": rows, "sequential": sequential, "summary": summary, "complete": complete,
                   "command": ("E2E_SEQUENTIAL=1 " if sequential else "") + "bash bench/gpu/run_device.sh build e2e"},
                  file, indent=1)
    os.replace(out + ".tmp", out)
    return summary


rows = []
deadline = time.time() + float(os.environ.get("E2E_DEADLINE_S", "480"))
# E2E_SEQUENTIAL=1: one generation at a time (each waits for the last), so seconds_to_result
# is one generation's latency on a warm worker, not a queue's; else all are posted at once.
pairs = [(op, target) for op in ops for target in targets]
jobs = [] if sequential else [post(op, target) for op, target in pairs]
for idx in range(len(pairs)):
    if sequential:
        if time.time() > deadline:
            break
        jobs.append(post(*pairs[idx]))
    job = jobs[idx]
    gen = wait(job, deadline)
    best = gen.get("best") or {}
    environment = (best.get("details") or {}).get("environment") or {}
    row = {"op": job["op"], "target": job["target"], "status": gen["status"],
           "verified": bool(best) and best.get("outcome") == "correct",
           "speedup_vs_eager": best.get("speedup"), "speedup_vs_compile": best.get("speedup_vs_compile"),
           "kernel_ms": best.get("kernel_ms"), "device": best.get("device"),
           "generator": (gen.get("result") or {}).get("generator"), "error": gen.get("error"),
           "seconds_to_result": round(time.time() - job["posted"], 1),
           "first_candidate_s": job.get("first_candidate_s"),
           "candidates": gen.get("candidates"), "source_head": (best.get("source") or "")[:400],
           # why a baseline is missing (a torch.compile failure says so here), and the quiet-window record
           "baseline_note": environment.get("baseline"),
           "sandbox": environment.get("sandbox"),
           "timing": (gen.get("result") or {}).get("timing"),
           "inductor": (gen.get("result") or {}).get("inductor"),  # harvested, or why not
           "phases_s": split_row(gen.get("result"))}
    rows.append(row)
    print(f"{row['op']:16s} {row['target']:7s} {row['status']:10s} verified={row['verified']} "
          f"eager x{row['speedup_vs_eager'] or 0:.2f} compile x{row['speedup_vs_compile'] or 0:.2f} "
          f"{row['seconds_to_result']} s {(row['error'] or '')[:80]}", flush=True)
    if row["verified"] and row["speedup_vs_compile"] is None:
        print(f"  no torch.compile baseline: {row['baseline_note']}", flush=True)
    print(f"  split {row['op']} {row['target']}: {format_split(row['phases_s'])}", flush=True)
    write(rows, complete=False)  # a run cut short (a device call's budget) keeps the rows it has

summary = write(rows, complete=True)
print("summary", json.dumps(summary), flush=True)
EOF
echo "e2e: $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s"
tail -5 "$OUT/e2e_worker.log"
