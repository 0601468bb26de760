#!/usr/bin/env python3
"""rest.py - call a JSON REST API: METHOD PATH relative to a base URL.

    rest.py METHOD PATH [--base-url URL] [--json BODY] [--query k=v]...
            [--timeout S] [--max-items N] [--max-bytes N]

Base URL: --base-url, else env REST_BASE_URL. Auth: env REST_TOKEN, sent as
"Authorization: Bearer <token>" and never printed (it is redacted from any
echoed text). stdout: one JSON object {status, ok, method, url, data|text,
...}. stderr: diagnostics.

Exit codes: 0 2xx, 1 HTTP error status (JSON still printed), 2 bad arguments
or configuration, 3 network error / timeout.
"""

import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
IDEMPOTENT = ("GET", "HEAD", "PUT", "DELETE")
LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def die(msg, code=2):
    sys.stderr.write("rest.py: error: %s\n" % redact(msg))
    sys.exit(code)


def redact(text):
    tok = os.environ.get("REST_TOKEN")
    if tok and len(tok) >= 4 and isinstance(text, str):
        text = text.replace(tok, "***")
    return text


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die("%s (usage: rest.py METHOD PATH [--base-url URL] [--json BODY] [--query k=v]...)" % message)


def cap(obj, max_items, path="data", notes=None):
    """Truncate long lists (recursively) to max_items; record what was cut."""
    if isinstance(obj, list):
        if len(obj) > max_items:
            notes.append("%s: showing %d of %d items" % (path, max_items, len(obj)))
            obj = obj[:max_items]
        return [cap(v, max_items, "%s[%d]" % (path, i), notes) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return {k: cap(v, max_items, "%s.%s" % (path, k), notes) for k, v in obj.items()}
    return obj


class SameHostRedirect(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but drop the Authorization header when the host changes."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
            sys.stderr.write("rest.py: redirected to another host; Authorization not forwarded\n")
        return new


def build_url(base, path, queries):
    b = urllib.parse.urlsplit(base)
    if b.scheme not in ("http", "https") or not b.netloc:
        die("base URL must be an absolute http(s) URL, got %r (set REST_BASE_URL or --base-url)" % base)
    if "://" in path or path.startswith("//"):
        die("PATH must be relative to the base URL (e.g. /items/3), not a full URL")
    url = base.rstrip("/") + "/" + path.lstrip("/")
    pairs = []
    for q in queries:
        k, sep, v = q.partition("=")
        if not sep or not k:
            die("--query must look like key=value, got %r" % q)
        pairs.append((k, v))
    if pairs:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(pairs)
    return url


def main(argv):
    ap = Parser(description="Call a JSON REST API (base URL from REST_BASE_URL, token from REST_TOKEN).")
    ap.add_argument("method", help="one of " + ", ".join(METHODS))
    ap.add_argument("path", help="path under the base URL, e.g. /items or items/3")
    ap.add_argument("--base-url", help="overrides env REST_BASE_URL")
    ap.add_argument("--json", dest="body", help='request body as JSON text, e.g. \'{"name": "x"}\'')
    ap.add_argument("--query", action="append", default=[], metavar="K=V", help="query parameter, repeatable")
    ap.add_argument("--timeout", type=float, default=15.0, help="per-attempt timeout in seconds (default 15)")
    ap.add_argument("--max-items", type=int, default=25, help="cap every JSON list in the answer (default 25)")
    ap.add_argument("--max-bytes", type=int, default=262144, help="response bytes read at most (default 256 KiB)")
    a = ap.parse_args(argv)

    method = a.method.upper()
    if method not in METHODS:
        die("unknown method %r; use one of %s" % (a.method, ", ".join(METHODS)))
    if not 0 < a.timeout <= 60:
        die("--timeout must be in (0, 60]")
    if a.max_items < 1 or a.max_bytes < 1:
        die("--max-items and --max-bytes must be >= 1")
    base = a.base_url or os.environ.get("REST_BASE_URL", "")
    if not base:
        die("no base URL: set env REST_BASE_URL or pass --base-url")
    url = build_url(base, a.path, a.query)

    data = None
    headers = {"Accept": "application/json", "User-Agent": "skill-rest-client/1.0"}
    if a.body is not None:
        if method in ("GET", "HEAD", "DELETE"):
            die("--json is not allowed with %s" % method)
        try:
            data = json.dumps(json.loads(a.body)).encode("utf-8")
        except ValueError as e:
            die("--json is not valid JSON: %s" % e)
        headers["Content-Type"] = "application/json"
    elif method in ("POST", "PUT", "PATCH"):
        data = b""
    token = os.environ.get("REST_TOKEN")
    if token:
        headers["Authorization"] = "Bearer " + token

    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    handlers = [SameHostRedirect()]
    if host in LOOPBACK:
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    shown_url = redact(url)

    # One bounded retry, for idempotent methods only, on 502/503/504 or a
    # failed connection. Worst case: 2 x timeout + 1 s < the 60 s budget.
    attempts = 2 if method in IDEMPOTENT else 1
    t0 = time.monotonic()
    resp = None
    for attempt in range(1, attempts + 1):
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            resp = opener.open(req, timeout=a.timeout)
            break
        except urllib.error.HTTPError as e:
            resp = e
            if e.code in (502, 503, 504) and attempt < attempts:
                sys.stderr.write("attempt %d/%d after 1s: HTTP %d\n" % (attempt + 1, attempts, e.code))
                e.close()
                time.sleep(1)
                continue
            break
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (socket.timeout, TimeoutError)) or isinstance(e, (socket.timeout, TimeoutError)):
                msg = "timed out after %gs waiting for %s %s" % (a.timeout, method, shown_url)
                retry = False  # a server that does not answer usually will not answer again
            elif isinstance(reason, socket.gaierror):
                msg, retry = "cannot resolve host in %s" % shown_url, False
            else:
                msg, retry = "cannot connect to %s: %s" % (shown_url, getattr(reason, "strerror", None) or reason), True
            if retry and attempt < attempts:
                sys.stderr.write("attempt %d/%d after 1s: %s\n" % (attempt + 1, attempts, msg))
                time.sleep(1)
                continue
            sys.stderr.write("rest.py: %s\n" % redact(msg))
            json.dump({"ok": False, "error": redact(msg), "method": method, "url": shown_url}, sys.stdout)
            sys.stdout.write("\n")
            return 3

    status = resp.status if hasattr(resp, "status") else resp.code
    try:
        raw = resp.read(a.max_bytes + 1)
    except (OSError, socket.timeout) as e:
        raw = b""
        sys.stderr.write("rest.py: error reading the response body: %s\n" % e)
    finally:
        resp.close()
    truncated = len(raw) > a.max_bytes
    raw = raw[:a.max_bytes]
    out = {"status": status, "ok": 200 <= status < 300, "method": method, "url": shown_url,
           "elapsed_ms": int((time.monotonic() - t0) * 1000)}
    loc = resp.headers.get("Location")
    if loc:
        out["location"] = redact(loc)
    ctype = resp.headers.get("Content-Type", "")
    text = raw.decode("utf-8", errors="replace")
    notes = []
    if raw and "json" in ctype.lower() and not truncated:
        try:
            out["data"] = cap(json.loads(text), a.max_items, "data", notes)
        except ValueError:
            out["text"] = redact(text[:4000])
            notes.append("Content-Type says JSON but the body does not parse")
    elif raw:
        out["text"] = redact(text[:4000])
        if truncated or len(text) > 4000:
            notes.append("body truncated; raise --max-bytes or narrow the query")
    if notes:
        out["notes"] = notes[:10]
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    if not out["ok"]:
        hint = {401: "check REST_TOKEN (missing, wrong or expired)",
                403: "the token lacks permission for this resource",
                404: "check PATH and the id",
                409: "conflict with the current state; re-read the resource first",
                422: "the server rejected the JSON body; check field names and types",
                429: "rate limited; wait before calling again"}.get(status, "")
        sys.stderr.write("rest.py: HTTP %d%s\n" % (status, (": " + hint) if hint else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
