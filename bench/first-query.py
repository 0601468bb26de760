#!/usr/bin/env python3
"""first-query.py LIBRARY BIN [BIN2] - list_skills(query) the first time a
query is asked in a snapshot, by the server's own clock.

Starts BIN on LIBRARY (--threads 1 --refresh-interval 0), waits for the
body index, then asks 30 distinct three-word queries drawn from
gen-skills.py's domain words (two of one domain, one of another) once each (a
page is kept on its query's second ask, and answers from the third) and reads each call's milliseconds from the server's
request log line. With BIN2 the two builds are run alternately, ROUNDS
times each (default 3, env FIRST_QUERY_ROUNDS), and the pages are compared:
every query's reply must list the same cards in the same order, with the
same total and cursor (a difference in _truncated is printed apart). Prints p50 and p95 of each build.

The queries come from a fixed seed, so every run asks the same ones.
first-query.py --queries prints them, one a line, for the in-process
harness (bench/first-query.c) to ask the same ones.
"""
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib.util

spec = importlib.util.spec_from_file_location(
    "gen", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen-skills.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)


def queries(n=30):
    rng = random.Random("first-query-v1")
    out = []
    while len(out) < n:
        d = rng.sample(sorted(gen.DOMAINS), 2)
        a = rng.sample(gen.DOMAINS[d[0]], 2)
        q = "%s %s %s" % (a[0], a[1], rng.choice(gen.DOMAINS[d[1]]))
        if q not in out:
            out.append(q)
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def call(port, args):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "list_skills", "arguments": args}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/mcp" % port, data=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def run(lib, binary, qs):
    port = free_port()
    log = open("/tmp/first-query.%d.log" % os.getpid(), "w+")
    p = subprocess.Popen([binary, "--skills", lib, "--port", str(port), "--threads", "1",
                          "--refresh-interval", "0"], stderr=log, stdout=subprocess.DEVNULL)
    try:
        for _ in range(6000):
            log.seek(0)
            if "indexed the bodies" in log.read():
                break
            if p.poll() is not None:
                sys.exit("the server exited")
            time.sleep(0.1)
        time.sleep(1.0)     # the rescan that publishes the body index follows the log line
        log.seek(0)
        before = len(re.findall(r"tool=list_skills.* \d+ ([0-9.]+) ms", log.read()))
        pages = []
        for q in qs:
            r = call(port, {"query": q})["result"]["structuredContent"]
            pages.append(([json.dumps(c) for c in r["skills"]], r.get("total"),
                          r.get("next_cursor"), r.get("_truncated")))
        time.sleep(0.3)
        log.seek(0)
        ms = [float(m) for m in re.findall(r"tool=list_skills.* \d+ ([0-9.]+) ms", log.read())]
        return ms[before:], pages
    finally:
        p.terminate()
        p.wait()
        log.close()
        os.unlink(log.name)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    if sys.argv[1:] == ["--queries"]:
        print("\n".join(queries()))
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lib, bins = sys.argv[1], sys.argv[2:]
    qs = queries()
    rounds = int(os.environ.get("FIRST_QUERY_ROUNDS", "3" if len(bins) > 1 else "1"))
    ms = {b: [] for b in bins}
    pages = {}
    for r in range(rounds):
        for b in bins:
            m, pg = run(lib, b, qs)
            ms[b] += m
            pages.setdefault(b, pg)
            print("round %d %s: p50 %.3f ms" % (r + 1, b, statistics.median(m)), flush=True)
    for b in bins:
        print("%s: %d calls, p50 %.3f ms, p95 %.3f ms" % (b, len(ms[b]), statistics.median(ms[b]),
                                                         pct(ms[b], 0.95)))
    if len(bins) > 1:
        a, b = pages[bins[0]], pages[bins[1]]
        same = 0
        for q, x, y in zip(qs, a, b):
            if x[:3] == y[:3]:
                same += 1
            else:
                print("DIFFERENT: %r: %d vs %d cards, total %s vs %s" % (q, len(x[0]), len(y[0]),
                                                                         x[1], y[1]))
        print("pages with the same cards (bytes) in the same order: %d of %d" % (same, len(qs)))
        for q, x, y in zip(qs, a, b):
            if x[3] != y[3]:
                print("_truncated differs: %r: %s vs %s" % (q, x[3], y[3]))
    else:
        for q, x in zip(qs, pages[bins[0]]):
            print("%-45s cards %3d total %5s cursor %s" % (q, len(x[0]), x[1], x[2]))


if __name__ == "__main__":
    main()
