#!/usr/bin/env bash
# kforge end to end on a GPU host: PostgreSQL (from the bundle), kforge-server, and a GPU
# worker that registers its devices (target:cuda, target:triton, device:gpu...); then
# POSTs level-2 suite ops as generations with target triton, cuda and opencl (device gpu)
# and prints each verified kernel with speedup_vs_eager and speedup_vs_compile.
# Called by bench/gpu/run_device.sh e2e (after build); writes $OUT/e2e.json.
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
started=$(date +%s.%N)
python3 - "$token" "$ops" "$targets" "$OUT/e2e.json" <<'EOF'
import json, os, sys, time, urllib.error, urllib.request
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
jobs = []
for op in ops:
    spec = json.load(open(f"suite/level2/{op}.json"))
    spec = {k: spec[k] for k in ("name", "source", "inputs", "extra_shapes", "tolerance") if k in spec}
    for target in targets:
        body = {"op": spec, "target": target, "samples": int(os.environ.get("E2E_SAMPLES", "4")), "time_budget_s": 600}
        if target == "opencl":
            body["device"] = "gpu"
        posted = time.time()
        gen = call("POST", "/v1/generations", body)
        jobs.append({"op": op, "target": target, "id": gen["id"], "posted": posted})
rows = []
deadline = time.time() + 480
for job in jobs:
    while True:
        gen = call("GET", f"/v1/generations/{job['id']}")
        if gen["status"] in ("succeeded", "failed", "cancelled") or time.time() > deadline:
            break
        time.sleep(0.5)
    best = gen.get("best") or {}
    details = best.get("details") or {}
    row = {"op": job["op"], "target": job["target"], "status": gen["status"],
           "verified": bool(best) and best.get("outcome") == "correct",
           "speedup_vs_eager": best.get("speedup"), "speedup_vs_compile": best.get("speedup_vs_compile"),
           "kernel_ms": best.get("kernel_ms"), "device": best.get("device"),
           "generator": (gen.get("result") or {}).get("generator"), "error": gen.get("error"),
           "seconds_to_result": round(time.time() - job["posted"], 1),
           "candidates": gen.get("candidates"), "source_head": (best.get("source") or "")[:400]}
    rows.append(row)
    print(f"{row['op']:16s} {row['target']:7s} {row['status']:10s} verified={row['verified']} "
          f"eager x{row['speedup_vs_eager'] or 0:.2f} compile x{row['speedup_vs_compile'] or 0:.2f} "
          f"{(row['error'] or '')[:80]}", flush=True)
json.dump({"rows": rows, "command": "bash bench/gpu/run_device.sh build e2e"}, open(out, "w"), indent=1)
EOF
echo "e2e: $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s"
tail -5 "$OUT/e2e_worker.log"
