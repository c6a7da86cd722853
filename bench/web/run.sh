#!/usr/bin/env bash
# What 50 open web UI tabs cost the API (issue 19): wrk against GET /v1/leaderboard/ops
# (as bench/api's leaderboard_64 case) alone and while bench/web/tabs.py simulates
# 50 visible tabs polling as the pages do (ETag revalidation), alternated REPEATS
# times; plus the server + PostgreSQL CPU the tabs use on their own, with and without
# If-None-Match. Data: tests/web/seed.sql + bench/api/seed.sql (1,007 ops, 10,084 candidates).
# Usage: bench/web/run.sh [BUILD_DIR] [OUT_JSON]   (DURATION=10 s per wrk run, REPEATS=3)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/web.json}
duration=${DURATION:-10}
repeats=${REPEATS:-3}
alone_s=${ALONE_S:-30}
source "$root/bench/lib/cluster.sh"
bench_cluster web
psql -q -v ON_ERROR_STOP=1 "$url" -f "$root/tests/web/seed.sql" >/dev/null
psql -q -v ON_ERROR_STOP=1 "$url" -f "$root/bench/api/seed.sql" >/dev/null
psql -q -v ON_ERROR_STOP=1 "$url" -c \
  "INSERT INTO workers (host, pid, device, version, slots) VALUES ('bench-host', 1, 'pthread-haswell', '0.1.0', 1)" >/dev/null
admin=$("$build_dir/bin/kforge-server" token create --scope admin --database-url "$url" --log-level error)
bench_server

# name seconds command...: runs the command, records server + PostgreSQL ticks spent meanwhile.
measure() {
  local name=$1 server0 pg0 start end
  shift
  server0=$(cpu_ticks "$server_pid"); pg0=$(pg_ticks); start=$(date +%s.%N)
  "$@" >"$work/$name.json"
  end=$(date +%s.%N)
  echo "{\"server_ticks\": $(( $(cpu_ticks "$server_pid") - server0 )), \"pg_ticks\": $(( $(pg_ticks) - pg0 ))," \
       "\"wall_s\": $(awk "BEGIN{print $end - $start}"), \"ticks_per_s\": $(getconf CLK_TCK)}" >"$work/$name.cpu.json"
}
wrk_leaderboard() {
  wrk -t2 -c64 -d"${duration}s" --timeout 10s -s "$root/bench/api/report.lua" "$base/v1/leaderboard/ops" | tail -n 1
}
postmaster=$(head -n 1 "$(find "$work/pg" -name postmaster.pid | head -n 1)")
# tabs.py counts the server's and this cluster's CPU itself, over its timed window only.
tabs() { python3 "$root/bench/web/tabs.py" "$port" "$1" "$admin" --server-pid "$server_pid" --postmaster-pid "$postmaster" "${@:2}"; }

curl -fsS "$base/v1/leaderboard/ops" >/dev/null  # warm the pool and the caches
tabs 5 >/dev/null

echo "bench: idle ${alone_s}s, then 50 tabs alone (${alone_s}s with ETag, ${alone_s}s without)" >&2
measure idle sleep "$alone_s"
tabs "$alone_s" >"$work/tabs_etag.json"
tabs "$alone_s" --no-etag >"$work/tabs_no_etag.json"
pages="leaderboard jobs generation training op workers"
for page in $pages; do
  echo "bench: the $page tabs alone (${alone_s}s)" >&2
  tabs "$alone_s" --only "$page" >"$work/page_$page.json"
done

for round in $(seq 1 "$repeats"); do
  echo "bench: round $round: leaderboard alone, then with 50 tabs" >&2
  measure "alone_$round" wrk_leaderboard
  tabs $((duration + 4)) >"$work/tabs_during_$round.json" &
  tabs_pid=$!
  sleep 2
  measure "with_tabs_$round" wrk_leaderboard
  wait "$tabs_pid"
done
uptime_after=$(uptime)

python3 - "$work" "$out" "$repeats" <<PY
import json, os, platform, statistics, subprocess, sys
work, out, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    return json.load(open(os.path.join(work, name + ".json")))
def cpu_ms_per_s(name):
    c = load(name + ".cpu")
    return 1000.0 * (c["server_ticks"] + c["pg_ticks"]) / c["ticks_per_s"] / c["wall_s"]
def cpu_ms_per_request(name):
    c, r = load(name + ".cpu"), load(name)
    return 1000.0 * (c["server_ticks"] + c["pg_ticks"]) / c["ticks_per_s"] / max(r["requests"], 1)
alone = [load(f"alone_{i}")["rps"] for i in range(1, repeats + 1)]
with_tabs = [load(f"with_tabs_{i}")["rps"] for i in range(1, repeats + 1)]
idle = cpu_ms_per_s("idle")
tabs_etag, tabs_no_etag = load("tabs_etag"), load("tabs_no_etag")
poll_etag = tabs_etag["server_pg_ms_per_s"] - idle
poll_no_etag = tabs_no_etag["server_pg_ms_per_s"] - idle
leader_ms = statistics.median(cpu_ms_per_request(f"alone_{i}") for i in range(1, repeats + 1))
ratio = statistics.median(with_tabs) / statistics.median(alone)
equivalent = poll_etag / leader_ms  # leaderboard requests/s the tabs' CPU could have served
result = {
  "command": "bench/web/run.sh build bench/results/web.json (DURATION=${duration} REPEATS=${repeats} ALONE_S=${alone_s})",
  "goal": "50 open tabs cost the API <= 5% of its leaderboard throughput",
  "leaderboard_rps_alone": alone,
  "leaderboard_rps_with_50_tabs": with_tabs,
  "throughput_ratio_median": round(ratio, 4),
  "throughput_cost_percent": round(100 * (1 - ratio), 2),
  "cpu": {
    "idle_server_pg_ms_per_s": round(idle, 2),
    "tabs_server_pg_ms_per_s_with_etag": round(poll_etag, 2),
    "tabs_server_pg_ms_per_s_without_etag": round(poll_no_etag, 2),
    "leaderboard_server_pg_ms_per_request": round(leader_ms, 4),
    "tabs_equivalent_leaderboard_rps": round(equivalent, 1),
    "tabs_cpu_cost_percent_of_leaderboard_rps": round(100 * equivalent / statistics.median(alone), 2),
  },
  "per_page": {page: {"tabs": p["tabs"], "requests_per_s": p["requests_per_s"], "status": p["status"],
                       "server_pg_ms_per_s": round(p["server_pg_ms_per_s"] - idle, 2),
                       "server_pg_ms_per_request": round((p["server_pg_ms_per_s"] - idle) / max(p["requests_per_s"], 0.01), 3)}
               for page, p in ((page, load(f"page_{page}")) for page in "${pages}".split())},
  "tabs_alone_with_etag": tabs_etag,
  "tabs_alone_without_etag": tabs_no_etag,
  "tabs_during_wrk": [load(f"tabs_during_{i}") for i in range(1, repeats + 1)],
  "wrk_runs": {"alone": [load(f"alone_{i}") for i in range(1, repeats + 1)],
               "with_tabs": [load(f"with_tabs_{i}") for i in range(1, repeats + 1)]},
  "server": {"flags": "defaults (access log on, leaderboard cache 1000 ms, pool 8)"},
  "environment": {
    "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
    "uptime_before": """${uptime_before}""".strip(), "uptime_after": """${uptime_after}""".strip(),
    "wrk": subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.splitlines()[0].strip(),
    "note": "2-core machine shared with other helpers; wrk, the tab simulator (Python) and the server share the cores",
  },
}
json.dump(result, open(out, "w"), indent=2)
print(json.dumps({k: result[k] for k in ["leaderboard_rps_alone", "leaderboard_rps_with_50_tabs", "throughput_ratio_median",
                                         "throughput_cost_percent"]} | {"cpu": result["cpu"]}))
PY
