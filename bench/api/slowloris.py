#!/usr/bin/env python3
"""Slowloris-style client for bench/api/run.sh: opens N connections that send a
request line and then one header line every few seconds, never finishing the
headers. Prints JSON: how many connections it held open at the end.
Usage: slowloris.py PORT CONNECTIONS SECONDS"""
import json, socket, sys, time

port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for conn_idx in range(count):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    except OSError:
        break
opened = len(socks)
deadline = time.time() + seconds
while time.time() < deadline:
    for s in list(socks):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            socks.remove(s)
    time.sleep(2)
print(json.dumps({"connections_opened": opened, "still_open_at_end": len(socks)}))
for s in socks:
    s.close()
