#!/usr/bin/env bash
# Reliability run of issue 18, against the real binaries and a throwaway PostgreSQL:
# the fuzz suite (tests/server/api_fuzz_test.cpp) once per seed, the Idempotency-Key race
# (tests/server/api_idempotency_test.cpp, 100 rounds of 10 parallel POSTs) and the fault
# suite (tests/worker/jobs/faults_test.cpp: worker SIGKILL x 20, PostgreSQL restart x 5,
# server SIGKILL x 5 under load). Writes bench/results/reliability.json from the tests'
# "KFORGE_RESULT" lines, with the command, the load average and the machine.
# Usage: bench/reliability/run.sh [BUILD_DIR] [OUT_JSON]
#   env: FUZZ_SEEDS ("18 19 20"), IDEMPOTENCY_ROUNDS (100), WORKER_KILLS (20), PG_RESTARTS (5), SERVER_KILLS (5)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/reliability.json}
seeds=${FUZZ_SEEDS:-18 19 20}
work=$(mktemp -d /tmp/kforge-bench-reliability-XXXXXX)
export KFORGE_DATA_DIR=$work KFORGE_PG_FAST=1
unset KFORGE_PG_PORT
cleanup() {
  "$root/scripts/pg.sh" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

uptime_before=$(uptime)
export KFORGE_TEST_DATABASE_URL=$("$root/scripts/pg.sh" start)
log=$work/results.log
run() {  # name command...: runs a test binary, keeps its output, fails the run if it fails
  echo "reliability: $1" >&2
  local started=$SECONDS status=0
  "${@:2}" >"$work/$1.out" 2>&1 || status=$?
  grep '^KFORGE_RESULT ' "$work/$1.out" | sed "s/^KFORGE_RESULT /$1 $status $((SECONDS - started)) /" >>"$log" || true
  if [ "$status" -ne 0 ]; then
    echo "reliability: $1 failed (status $status); its output:" >&2
    tail -n 40 "$work/$1.out" >&2
  fi
}
for seed in $seeds; do
  run "fuzz_seed_$seed" env KFORGE_FUZZ_SEED="$seed" "$build_dir/bin/api_fuzz_test"
done
run idempotency env KFORGE_IDEMPOTENCY_ROUNDS="${IDEMPOTENCY_ROUNDS:-100}" "$build_dir/bin/api_idempotency_test"
run faults env KFORGE_FAULT_WORKER_KILLS="${WORKER_KILLS:-20}" KFORGE_FAULT_PG_RESTARTS="${PG_RESTARTS:-5}" \
  KFORGE_FAULT_SERVER_KILLS="${SERVER_KILLS:-5}" "$build_dir/bin/jobs_faults_test"
uptime_after=$(uptime)

python3 - "$log" "$out" "$seeds" <<PY
import json, os, platform, sys
log, out, seeds = sys.argv[1], sys.argv[2], sys.argv[3].split()
runs = {}
for line in open(log):
    name, status, seconds, kind, payload = line.split(" ", 4)
    runs.setdefault(kind, []).append({"run": name, "exit_status": int(status), "seconds": int(seconds),
                                      **json.loads(payload)})
fuzz = runs.get("fuzz", [])
def total(rows, key): return sum(r.get(key, 0) for r in rows)
def one(kind): return (runs.get(kind) or [None])[0]  # None: the test did not report (failed early)
result = {
  "command": "bench/reliability/run.sh build bench/results/reliability.json"
             " (FUZZ_SEEDS='${seeds}' IDEMPOTENCY_ROUNDS=${IDEMPOTENCY_ROUNDS:-100} WORKER_KILLS=${WORKER_KILLS:-20}"
             " PG_RESTARTS=${PG_RESTARTS:-5} SERVER_KILLS=${SERVER_KILLS:-5})",
  "code": """$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)""",
  "fuzz": {"requests": total(fuzz, "requests"), "server_crashes": total(fuzz, "server_crashes"),
           "status_5xx": total(fuzz, "status_5xx"), "undocumented_status": total(fuzz, "undocumented_status"),
           "schema_errors": total(fuzz, "schema_errors"), "seeds": [r["seed"] for r in fuzz], "runs": fuzz},
  "idempotency_race": one("idempotency") or {},
  "faults": {"worker_sigkill": one("faults_worker_sigkill"), "postgres_restart": one("faults_postgres_restart"),
             "server_sigkill_under_load": one("faults_server_sigkill")},
  "environment": {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                  "uptime_before": """${uptime_before}""".strip(), "uptime_after": """${uptime_after}""".strip(),
                  "note": "2-core machine shared with other helpers building and testing"},
}
faults = [f for f in result["faults"].values() if f is not None]
result["summary"] = {
  "fuzz_requests": result["fuzz"]["requests"], "server_crashes": result["fuzz"]["server_crashes"],
  "status_5xx": result["fuzz"]["status_5xx"],
  "lost_jobs": sum(f.get("lost_jobs", 0) for f in faults),
  "duplicate_candidates": sum(f.get("duplicate_candidates", 0) for f in faults),
  "stuck_jobs": sum(f.get("stuck_jobs", 0) for f in faults),
  "idempotency_mismatches": result["idempotency_race"].get("idempotency_mismatches"),
  "fault_runs_reported": len(faults),
  "all_tests_passed": len(faults) == 3 and bool(fuzz) and bool(result["idempotency_race"])
                      and all(r["exit_status"] == 0 for rows in runs.values() for r in rows),
}
json.dump(result, open(out, "w"), indent=2)
print(json.dumps(result["summary"]))
PY
