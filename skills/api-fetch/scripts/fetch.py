#!/usr/bin/env python3
"""fetch.py - fetch one URL with timeouts, bounded retries and a capped body.

    fetch.py URL [--method GET] [--header K:V]... [--data STR | --json STR]
             [--timeout S] [--retries N] [--backoff-cap S] [--max-bytes N]
             [--deadline S] [--retry-on-timeout]

stdout: one JSON object {status, reason, url, headers, body, truncated, binary,
bytes, elapsed_ms, attempts} - or {error, kind, attempts, elapsed_ms} when no
response could be obtained.

stderr, first line: the worst-case retry budget, checked against the skill's
execution timeout for this script (the ceiling); then one line before each
attempt ("attempt 1/3: GET URL (timeout 10 s)") and before each wait.

Exit codes: 0 = 2xx/3xx response, 1 = HTTP error status (JSON still printed),
2 = bad arguments or a budget over the ceiling, 3 = network error / timeout /
deadline (no response).
"""

import argparse
import json
import os
import sys

# Python puts the script's own directory first on sys.path (also under -E -s);
# the explicit insert keeps the sibling import working under -P or runpy too.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # do not leave __pycache__/ in the skill folder
import httpclient  # noqa: E402

# The execution timeout of scripts/fetch.py in this skill's SKILL.md
# (execution: scripts/fetch.py: timeout: 90). The server kills the script at
# that point, so the worst case of the retry loop must fit below it. Keep the
# two in step: tests/fakeapi/run_examples.sh checks that they agree.
CEILING_S = 90


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("fetch.py: error: %s\n(usage: fetch.py URL [--method M] [--header K:V]... "
                         "[--timeout S] [--retries N] [--backoff-cap S] [--max-bytes N])\n" % message)
        sys.exit(2)


def parse_args(argv):
    ap = Parser(description="Fetch a URL with timeouts, bounded retries and a capped body.")
    ap.add_argument("url")
    ap.add_argument("--method", default="GET", help="HTTP method (default GET)")
    ap.add_argument("--header", action="append", default=[], metavar="K:V",
                    help="request header, repeatable")
    body = ap.add_mutually_exclusive_group()
    body.add_argument("--data", help="raw request body (UTF-8 text)")
    body.add_argument("--json", dest="json_body", help="JSON request body (validated, sets Content-Type)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="per-attempt socket timeout in seconds: connect, and each read (default 10)")
    ap.add_argument("--retries", type=int, default=2,
                    help="extra attempts on 429/5xx/connection errors (default 2, max 5)")
    ap.add_argument("--backoff-cap", type=float, default=8.0,
                    help="longest wait between attempts, backoff or Retry-After (default 8, max 30)")
    ap.add_argument("--max-bytes", type=int, default=16384,
                    help="cap on the body kept in the output (default 16384)")
    ap.add_argument("--deadline", type=float, default=60.0,
                    help="total budget for all attempts and waits, seconds (default 60)")
    ap.add_argument("--retry-on-timeout", action="store_true",
                    help="also retry when the server accepted but did not answer in time")
    a = ap.parse_args(argv)
    if not 0 < a.timeout <= 120:
        ap.error("--timeout must be in (0, 120]")
    if not 0 <= a.retries <= 5:
        ap.error("--retries must be between 0 and 5")
    if not 0 <= a.backoff_cap <= 30:
        ap.error("--backoff-cap must be between 0 and 30")
    if not 0 <= a.max_bytes <= 1048576:
        ap.error("--max-bytes must be between 0 and 1048576")
    if not 0 < a.deadline <= 80:
        ap.error("--deadline must be in (0, 80] (the skill's execution timeout is %ds)" % CEILING_S)
    return a, ap


def check_budget(a):
    """Print the worst case of the retry loop (first stderr line); exit 2 if over the ceiling."""
    budget = a.timeout * (a.retries + 1) + a.backoff_cap * a.retries
    sys.stderr.write("budget: timeout %g s \u00d7 (retries %d + 1) + backoff cap %g s \u00d7 %d = %g s "
                     "(ceiling %d s)\n" % (a.timeout, a.retries, a.backoff_cap, a.retries, budget, CEILING_S))
    sys.stderr.flush()
    if budget > CEILING_S:
        sys.stderr.write("fetch.py: error: refusing to start: the worst case (%g s) is over the %d s "
                         "execution timeout of fetch.py, so the server would kill it before it could "
                         "answer. Lower --timeout, --retries or --backoff-cap.\n" % (budget, CEILING_S))
        sys.exit(2)


def main(argv):
    a, ap = parse_args(argv)
    check_budget(a)
    headers = {}
    for h in a.header:
        k, sep, v = h.partition(":")
        if not sep or not k.strip():
            ap.error("--header must look like Name:Value, got %r" % h)
        headers[k.strip()] = v.strip()
    data = None
    if a.json_body is not None:
        try:
            data = json.dumps(json.loads(a.json_body)).encode()
        except ValueError as e:
            ap.error("--json is not valid JSON: %s" % e)
        headers.setdefault("Content-Type", "application/json")
    elif a.data is not None:
        data = a.data.encode()

    try:
        out = httpclient.request(a.url, method=a.method, headers=headers, data=data,
                                 timeout=a.timeout, retries=a.retries, max_bytes=a.max_bytes,
                                 max_backoff=a.backoff_cap,
                                 deadline_s=a.deadline, retry_on_timeout=a.retry_on_timeout)
    except httpclient.FetchError as e:
        if e.kind == "usage":
            ap.error(str(e))
        sys.stderr.write("fetch.py: %s\n" % e)
        json.dump({"error": str(e), "kind": e.kind, "url": a.url, "attempts": e.attempts,
                   "elapsed_ms": e.elapsed_ms}, sys.stdout)
        sys.stdout.write("\n")
        return 3

    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    if out.get("body_error"):
        sys.stderr.write("fetch.py: incomplete body: %s\n" % out["body_error"])
        return 3
    if out["status"] >= 400:
        sys.stderr.write("fetch.py: HTTP %d %s after %d attempt(s)\n"
                         % (out["status"], out["reason"], out["attempts"]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
