#!/usr/bin/env python3
# Simulates N open kforge web UI tabs, all visible (the worst case: a hidden tab
# stops polling), each making exactly the requests its page makes (web/js/pages/*.js)
# at the page's interval over one keep-alive connection, revalidating with the ETag
# of its last response as the browser does. Every tab polls once untimed first (a
# tab that is open already holds its ETags); then the window of SECONDS is measured:
# request counts and, given --server-pid/--postmaster-pid, the CPU the server and
# that PostgreSQL cluster spent in it. Prints one JSON line. Used by bench/web/run.sh;
# alone: python3 bench/web/tabs.py PORT SECONDS ADMIN_TOKEN [--no-etag] [--only PAGE] [--server-pid N --postmaster-pid M]
import http.client
import json
import os
import sys
import threading
import time

# page -> (tabs out of 50, interval s, requests per poll). As in the pages: a
# generation's candidates and a training run's metrics and events are asked only when
# the generation / run itself changed (its GET answered 200, not 304).
PAGES = {
    # Leaderboard: every page of up to 1,000 rows, every 30 s (api.collect).
    "leaderboard": (10, 30.0, ["/v1/leaderboard/ops?limit=100&after={cursor}"]),
    # Jobs: the newest 50 jobs every 5 s.
    "jobs": (10, 5.0, ["/v1/jobs?limit=50"]),
    # A generation followed live every 2 s; then its new candidates if it changed.
    "generation": (10, 2.0, ["/v1/generations/{generation}", "+/v1/generations/{generation}/candidates?limit=100&after={last_candidate}"]),
    # A training run every 5 s; then new metrics and events if it changed.
    "training": (10, 5.0, ["/v1/training-jobs/{training}", "+/v1/training-jobs/{training}/metrics?limit=100&after={last_step}",
                           "+/v1/training-jobs/{training}/events?limit=100&after={last_event}"]),
    # An op page: its best kernels and new candidates, every 30 s.
    "op": (5, 30.0, ["/v1/leaderboard/ops?op_id={op}&limit=100", "/v1/ops/{op}/candidates?limit=100&after={last_op_candidate}"]),
    # Workers (admin token), every 10 s.
    "workers": (5, 10.0, ["/v1/workers?limit=100"]),
}
# A leading "+" marks a request made only when the poll's first request answered 200.


class Tab(threading.Thread):
    def __init__(self, port, page, index, admin_token, use_etag, stop_at, stats, lock):
        super().__init__(daemon=True)
        self.port, self.page, self.index = port, page, index
        self.admin_token, self.use_etag, self.stop_at = admin_token, use_etag, stop_at
        self.stats, self.lock = stats, lock
        self.etags = {}
        self.state = {"generation": 102 + index % 14, "training": 901 + index % 2, "op": 1 + index % 7,
                      "last_candidate": "", "last_step": "", "last_event": "", "last_op_candidate": "", "cursor": ""}
        self.conn = None

    def get(self, path):
        headers = {"Accept": "application/json"}
        if self.page == "workers":
            headers["Authorization"] = f"Bearer {self.admin_token}"
        if self.use_etag and path in self.etags:
            headers["If-None-Match"] = self.etags[path]
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                started = time.perf_counter()
                self.conn.request("GET", path, headers=headers)
                resp = self.conn.getresponse()
                body = resp.read()
                elapsed = time.perf_counter() - started
                break
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt == 1:
                    with self.lock:
                        self.stats["errors"] += 1
                    return None
        if resp.getheader("ETag"):
            self.etags[path] = resp.getheader("ETag")
        with self.lock:
            self.stats["requests"] += 1
            self.stats["status"][str(resp.status)] = self.stats["status"].get(str(resp.status), 0) + 1
            self.stats["bytes"] += len(body)
            self.stats["latency_s"].append(elapsed)
        if resp.status == 200:
            return json.loads(body)
        return None

    def poll(self):
        templates = PAGES[self.page][2]
        if self.page == "leaderboard":
            # Every page, as the UI's collect() does; cursors come from the 200s (a
            # 304 means the same page as before, so the remembered cursor holds).
            cursors = self.state.setdefault("cursors", [""])
            for page_idx in range(10):
                if page_idx >= len(cursors):
                    break
                body = self.get(templates[0].format(cursor=cursors[page_idx]))
                if body is not None:
                    del cursors[page_idx + 1:]
                    if body.get("has_more"):
                        cursors.append(body["next_cursor"])
            return
        changed = True
        for template_idx, template in enumerate(templates):
            if template.startswith("+"):
                if not changed:
                    continue
                template = template[1:]
            body = self.get(template.format(**self.state))
            if template_idx == 0:
                changed = body is not None  # None: 304 (or an error), nothing new to follow
            # The pages move their cursors forward; seeded data does not grow, so they settle.
            if body and isinstance(body.get("data"), list) and body["data"]:
                last = body["data"][-1]
                if "candidates?" in template and "generations" in template:
                    self.state["last_candidate"] = last["id"]
                elif "metrics?" in template:
                    self.state["last_step"] = last["step"]
                elif "events?" in template:
                    self.state["last_event"] = last["id"]
                elif "ops/" in template and "candidates?" in template:
                    self.state["last_op_candidate"] = last["id"]

    def run(self):
        interval = PAGES[self.page][1]
        # Tabs were opened at different moments: spread their phases over one interval.
        next_at = self.start_at + interval * (self.index % 10) / 10.0
        while True:
            now = time.time()
            if now >= self.stop_at:
                return
            if now < next_at:
                time.sleep(min(next_at - now, self.stop_at - now))
                continue
            self.poll()
            next_at += interval


def cpu_ticks(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except OSError:
        return 0


def cluster_ticks(server_pid, postmaster_pid):
    # The server, the postmaster and the postmaster's children (backends, walwriter...).
    total = cpu_ticks(server_pid) + cpu_ticks(postmaster_pid)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == postmaster_pid:
                    total += cpu_ticks(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return total


def option(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    port, seconds, admin_token = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    use_etag = "--no-etag" not in sys.argv
    server_pid, postmaster_pid = int(option("--server-pid", 0)), int(option("--postmaster-pid", 0))
    stats = {"requests": 0, "errors": 0, "bytes": 0, "status": {}, "latency_s": []}
    lock = threading.Lock()
    tabs = []
    only = option("--only")
    for page, (count, _, _) in PAGES.items():
        if only and page != only:
            continue
        tabs += [Tab(port, page, idx, admin_token, use_etag, 0, stats, lock) for idx in range(count)]
    for tab in tabs:  # the untimed first poll: tabs that are open already hold their ETags
        tab.poll()
    with lock:
        stats.update({"requests": 0, "errors": 0, "bytes": 0, "status": {}, "latency_s": []})
    start_at = time.time() + 0.2
    for tab in tabs:
        tab.start_at, tab.stop_at = start_at, start_at + seconds
    ticks0 = cluster_ticks(server_pid, postmaster_pid) if server_pid else 0
    cpu0 = time.process_time()
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join()
    if server_pid:
        spent = cluster_ticks(server_pid, postmaster_pid) - ticks0
        stats["server_pg_ms_per_s"] = round(1000.0 * spent / os.sysconf("SC_CLK_TCK") / (time.time() - start_at), 2)
    latencies = sorted(stats.pop("latency_s")) or [0.0]
    stats.update({
        "tabs": len(tabs), "seconds": seconds, "etag": use_etag,
        "requests_per_s": round(stats["requests"] / seconds, 2),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 3),
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
        "client_cpu_s": round(time.process_time() - cpu0, 3),
        "mix": {page: {"tabs": count, "interval_s": interval, "requests_per_poll": (" + ".join("if changed" if t.startswith("+") else "1" for t in templates)
                                                                   if page != "leaderboard" else "all pages")}
                for page, (count, interval, templates) in PAGES.items()},
    })
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
