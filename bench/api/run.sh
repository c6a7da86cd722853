#!/usr/bin/env bash
# API load benchmark (issue 4): wrk against the real kforge-server on loopback with
# a throwaway PostgreSQL holding 1,000 ops and 10,000 candidates (seed.sql).
# Cases: GET /v1/health and GET /v1/leaderboard/ops at 64 and 1,000 connections,
# POST /v1/generations at 64, a slowloris-style client, then the leaderboard with
# its response cache off, and on cpprestsdk's own 40 HTTP threads; records rps, p50/p99,
# errors, open descriptors and health after each, plus the environment.
# Usage: bench/api/run.sh [BUILD_DIR] [OUT_JSON]   (DURATION=10 seconds per case)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/api.json}
duration=${DURATION:-10}
source "$root/bench/lib/cluster.sh"
bench_cluster api
psql -q -v ON_ERROR_STOP=1 "$url" -f "$root/bench/api/seed.sql"
token=$("$build_dir/bin/kforge-server" token create --scope submit --database-url "$url" --log-level error)
bench_server
healthy() { curl -fsS -m 5 "$base/v1/health" >/dev/null 2>&1 && echo true || echo false; }
fds() { ls "/proc/$server_pid/fd" | wc -l; }
run_case() {  # name connections path [script]
  local script=${4:-$root/bench/api/report.lua}
  echo "bench: $1" >&2
  local server0 pg0
  server0=$(cpu_ticks "$server_pid"); pg0=$(pg_ticks)
  KFORGE_TOKEN=$token wrk -t2 -c"$2" -d"${duration}s" --timeout 10s -s "$script" "$base$3" | tail -n 1 >"$work/$1.json"
  echo "{\"server_ticks\": $(( $(cpu_ticks "$server_pid") - server0 )), \"pg_ticks\": $(( $(pg_ticks) - pg0 ))," \
       "\"ticks_per_s\": $(getconf CLK_TCK)}" >"$work/$1.cpu.json"
}

curl -fsS "$base/v1/leaderboard/ops" >/dev/null  # warm the pool and caches
run_case health_64 64 /v1/health
run_case health_1000 1000 /v1/health
healthy_after_health_1000=$(healthy)
run_case leaderboard_64 64 /v1/leaderboard/ops
run_case leaderboard_1000 1000 /v1/leaderboard/ops
healthy_after_1000=$(healthy)
run_case post_generations_64 64 /v1/generations "$root/bench/api/post_generation.lua"
sleep 2
fds_after_load=$(fds)

echo "bench: slowloris" >&2
python3 "$root/bench/api/slowloris.py" "$port" 1000 $((duration + 10)) >"$work/slowloris.json" &
loris_pid=$!
sleep 5
fds_during_slowloris=$(fds)
run_case health_64_during_slowloris 64 /v1/health
wait "$loris_pid"
sleep 1
healthy_after_slowloris=$(healthy)
fds_after_slowloris=$(fds)

# The same leaderboard with its 1 s response cache off: what the database path costs.
bench_server --leaderboard-cache-ms 0
curl -fsS "$base/v1/leaderboard/ops" >/dev/null
run_case leaderboard_64_uncached 64 /v1/leaderboard/ops

# Side by side: the cached leaderboard on cpprestsdk's own pool size (40 threads),
# which the server used before --http-threads (docs/api.md, "Pool threads").
bench_server --http-threads 40
curl -fsS "$base/v1/leaderboard/ops" >/dev/null
run_case leaderboard_64_40_threads 64 /v1/leaderboard/ops
run_case leaderboard_1000_40_threads 1000 /v1/leaderboard/ops
uptime_after=$(uptime)

python3 - "$work" "$out" <<PY
import json, os, platform, subprocess, sys
work, out = sys.argv[1], sys.argv[2]
def case(name):
    c = json.load(open(os.path.join(work, name + ".json")))
    cpu = json.load(open(os.path.join(work, name + ".cpu.json")))
    n = max(c["requests"], 1)
    c["server_cpu_ms_per_request"] = round(cpu["server_ticks"] * 1000.0 / cpu["ticks_per_s"] / n, 4)
    c["postgres_cpu_ms_per_request"] = round(cpu["pg_ticks"] * 1000.0 / cpu["ticks_per_s"] / n, 4)
    return c
cases = {n: case(n) for n in ["health_64", "health_1000", "leaderboard_64", "leaderboard_1000",
                              "post_generations_64", "health_64_during_slowloris", "leaderboard_64_uncached",
                              "leaderboard_64_40_threads", "leaderboard_1000_40_threads"]}
def errs(c): return sum(c["errors"].values())
cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
result = {
  "command": "bench/api/run.sh build bench/results/api.json (DURATION=${duration})",
  "health_rps": cases["health_64"]["rps"],
  "leaderboard_rps": cases["leaderboard_64"]["rps"],
  "leaderboard_p99_ms": cases["leaderboard_64"]["p99_ms"],
  "leaderboard_p99_ms_with_40_http_threads": cases["leaderboard_64_40_threads"]["p99_ms"],
  "leaderboard_uncached_rps": cases["leaderboard_64_uncached"]["rps"],
  "leaderboard_uncached_p99_ms": cases["leaderboard_64_uncached"]["p99_ms"],
  "post_generations_rps": cases["post_generations_64"]["rps"],
  "errors": sum(errs(c) for n, c in cases.items()),
  "errors_at_64_connections": sum(errs(cases[n]) for n in ["health_64", "leaderboard_64", "post_generations_64"]),
  "healthy_after_1000_connections": "${healthy_after_1000}" == "true" and "${healthy_after_health_1000}" == "true",
  "healthy_after_slowloris": "${healthy_after_slowloris}" == "true",
  "open_fds": {"after_load": ${fds_after_load}, "during_slowloris": ${fds_during_slowloris},
               "after_slowloris": ${fds_after_slowloris}},
  "slowloris": json.load(open(os.path.join(work, "slowloris.json"))),
  "cases": cases,
  "data": {"ops": 1000, "candidates": 10000},
  "server": {"db_pool_size": 8, "executor_threads": 8, "max_queue": 1024, "access_log": True,
             "http_threads": "default: two per core, at least 4 (here $(( $(nproc) * 2 > 4 ? $(nproc) * 2 : 4 )))",
             "leaderboard_cache_ms": 1000, "uncached_case": "--leaderboard-cache-ms 0"},
  "goals": {"health_rps": ">= 10000", "leaderboard_rps": ">= 3000", "leaderboard_p99_ms": "< 50 at 64 connections",
            "errors": 0, "healthy_after_1000_connections": True},
  "environment": {
    "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
    "cpu_model": cpu[0] if cpu else "", "uptime_before": """${uptime_before}""".strip(),
    "uptime_after": """${uptime_after}""".strip(),
    "wrk": subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.splitlines()[0].strip(),
    "note": "2-core machine shared with other helpers compiling at the same time; wrk runs on the same cores",
  },
}
json.dump(result, open(out, "w"), indent=2)
print(json.dumps({k: result[k] for k in ["health_rps", "leaderboard_rps", "leaderboard_p99_ms", "leaderboard_p99_ms_with_40_http_threads",
                                         "leaderboard_uncached_rps", "post_generations_rps",
                                         "errors", "healthy_after_1000_connections", "healthy_after_slowloris"]}))
PY
