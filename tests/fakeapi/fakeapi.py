#!/usr/bin/env python3
"""fakeapi.py - a tiny local HTTP API for testing the example skills.

Standard library only. Binds to 127.0.0.1 only. Prints "PORT <n>" as the first
line on stdout (flushed), then serves until --lifetime seconds have passed
(default 300), so it can never outlive a test run by much.

    python3 tests/fakeapi/fakeapi.py --port 0 [--lifetime 300] [--verbose]

See tests/fakeapi/README.md for the endpoints.
"""

import argparse
import itertools
import json
import os
import select
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "testtoken"
HANG_LIMIT_S = 60.0
SLOW_LIMIT_MS = 10000

_lock = threading.Lock()
_items = {
    1: {"id": 1, "name": "apple", "price": 1.25, "tags": ["fruit"]},
    2: {"id": 2, "name": "bread", "price": 3.5, "tags": ["bakery"]},
    3: {"id": 3, "name": "cheese", "price": 7.0, "tags": ["dairy"]},
}
_item_ids = itertools.count(4)
_jobs = {}
_job_ids = itertools.count(1)
_flaky = {}
_ratelimit = {}

_USERS = [
    {"id": 1, "name": "Ada Lovelace", "email": "ada@example.com",
     "api_token": "tok_A1b2C3d4E5f6", "role": "admin"},
    {"id": 2, "name": "Grace Hopper", "email": "grace.hopper@example.org",
     "api_token": "tok_Z9y8X7w6", "role": "viewer"},
    {"id": 3, "name": "Alan Turing", "email": "alan@turing.example",
     "api_token": "tok_q1w2e3r4t5", "role": "viewer"},
]
# 500 orders with nested customers and line items, built once and never
# changed, so a test can assert exact values (order 1 is shipped, belongs to
# customer 1 "Customer 001" in Lyon). One page of all of them is about 240 KB,
# some 60K tokens: more than a 30K-token model can take in one result.
ORDER_COUNT = 500
_ORDER_STATUS = ("shipped", "pending", "cancelled", "delivered")
_CITIES = (("Lyon", "FR"), ("Porto", "PT"), ("Graz", "AT"), ("Turku", "FI"), ("Leeds", "GB"))


def _order(i):
    c = (i - 1) % 40 + 1
    city, country = _CITIES[(c - 1) % len(_CITIES)]
    lines = [{"sku": "SKU-%04d" % ((i * 7 + k * 13) % 1000), "qty": (i + k) % 5 + 1,
              "unit_price": round(((i * 31 + k * 17) % 9000) / 100 + 1, 2)} for k in range(i % 3 + 1)]
    return {"id": i, "number": "SO-%05d" % (10000 + i), "status": _ORDER_STATUS[(i - 1) % 4],
            "created_at": "2026-%02d-%02dT%02d:%02d:00Z" % ((i - 1) % 12 + 1, (i - 1) % 28 + 1, i % 24, i % 60),
            "customer": {"id": c, "name": "Customer %03d" % c, "email": "customer%03d@example.com" % c,
                         "address": {"street": "%d Harbour Road" % (c * 3), "city": city, "country": country}},
            "lines": lines, "currency": "EUR",
            "amount": round(sum(l["qty"] * l["unit_price"] for l in lines), 2),
            "note": "Deliver to the loading dock between 8 and 16; call the customer on arrival."}


_ORDERS = [_order(i) for i in range(1, ORDER_COUNT + 1)]

_TEAMS = [
    {"id": 1, "name": "platform", "members": [1, 2]},
    {"id": 2, "name": "research", "members": [3]},
]


class Handler(BaseHTTPRequestHandler):
    server_version = "fakeapi/1.0"
    protocol_version = "HTTP/1.1"

    # -- helpers -----------------------------------------------------------
    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fakeapi: %s\n" % (fmt % args))

    def _send(self, status, obj=None, headers=None, raw=None, ctype="application/json"):
        body = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else b"")
        self.send_response(status)
        if body or obj is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 1 << 20:
            return None, "body too large"
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}, None
        try:
            return json.loads(raw), None
        except ValueError as e:
            return None, "invalid JSON body: %s" % e

    def _route(self):
        u = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        parts = [p for p in u.path.split("/") if p]
        return parts, q

    # -- verbs -------------------------------------------------------------
    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        try:
            self._handle(method)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _handle(self, method):
        parts, q = self._route()
        key = q.get("key", self.client_address[0])

        if parts and parts[0] == "internal":
            if self.headers.get("Authorization") != "Bearer " + TOKEN:
                return self._send(401, {"error": "unauthorized", "detail": "missing or bad bearer token"},
                                  headers={"WWW-Authenticate": 'Bearer realm="fakeapi"'})
            return self._internal(method, parts[1:], q)

        if parts == ["health"] and method == "GET":
            return self._send(200, {"status": "ok", "time": time.time()})

        if parts and parts[0] == "items":
            return self._items(method, parts[1:], q)

        if parts == ["orders"] and method == "GET":
            try:
                page = int(q.get("page", "1"))
                per_page = int(q.get("per_page", str(ORDER_COUNT)))
            except ValueError:
                return self._send(400, {"error": "page and per_page must be integers"})
            if page < 1 or per_page < 1:
                return self._send(400, {"error": "page and per_page must be >= 1"})
            rows = _ORDERS[(page - 1) * per_page:page * per_page]
            more = page * per_page < ORDER_COUNT
            shape = q.get("shape", "envelope")
            if shape == "bare":
                return self._send(200, rows)
            if shape == "named":  # no total, rows under a name of their own
                return self._send(200, {"orders": rows, "next": "/orders?shape=named&page=%d&per_page=%d"
                                        % (page + 1, per_page) if more else None})
            if shape == "meta":  # an object beside the rows: no envelope a client can be sure of
                return self._send(200, {"orders": rows, "meta": {"total": ORDER_COUNT, "page": page}})
            if shape != "envelope":
                return self._send(400, {"error": "shape must be envelope, bare, named or meta"})
            return self._send(200, {"total": ORDER_COUNT, "page": page, "per_page": per_page, "data": rows})

        if parts and parts[0] == "jobs":
            return self._jobs(method, parts[1:])

        if parts == ["flaky"] and method == "GET":
            with _lock:
                n = _flaky[key] = _flaky.get(key, 0) + 1
            if n <= 2:
                return self._send(503, {"error": "service unavailable", "attempt": n})
            return self._send(200, {"ok": True, "attempt": n, "key": key})

        if parts == ["ratelimit"] and method == "GET":
            with _lock:
                n = _ratelimit[key] = _ratelimit.get(key, 0) + 1
            if n == 1:
                return self._send(429, {"error": "rate limited"}, headers={"Retry-After": "1"})
            return self._send(200, {"ok": True, "attempt": n, "key": key})

        if parts == ["slow"] and method == "GET":
            try:
                ms = max(0, min(int(q.get("ms", "1000")), SLOW_LIMIT_MS))
            except ValueError:
                return self._send(400, {"error": "ms must be an integer"})
            time.sleep(ms / 1000.0)
            return self._send(200, {"slept_ms": ms})

        if parts == ["odd"] and method == "GET":  # answers that are almost JSON, or JSON a client chokes on
            bodies = {
                "nan": (b'{"total": 2, "data": [{"id": 1, "v": NaN}, {"id": 2, "v": 1e400}]}', "application/json"),
                "deep": (b"[" * 100000 + b"]" * 100000, "application/json"),
                "deep900": (b'{"data": [' + b"[" * 900 + b"]" * 900 + b"]}", "application/json"),
                "bom": (b'\xef\xbb\xbf{"total": 1, "data": [{"id": 7}]}', "application/json"),
                "html": (b"<html>" + b"x" * 10000 + b"</html>", "text/html"),
            }
            if q.get("kind") not in bodies:
                return self._send(400, {"error": "kind must be one of " + ", ".join(sorted(bodies))})
            body, ctype = bodies[q["kind"]]
            return self._send(200, raw=body, ctype=ctype)

        if parts == ["hang"] and method == "GET":
            return self._hang()

        if parts == ["redirect"] and method == "GET":
            target = q.get("to", "/health")
            return self._send(302, {"location": target}, headers={"Location": target})

        if parts == ["echo"]:
            obj, err = self._body_json()
            return self._send(200, {"method": method, "path": self.path,
                                    "headers": dict(self.headers), "json": obj, "error": err})

        return self._send(404, {"error": "not found", "path": self.path})

    def _hang(self):
        # Accept the request and never answer; return as soon as the client
        # goes away (socket readable + EOF), or after HANG_LIMIT_S.
        sock = self.connection
        deadline = time.monotonic() + HANG_LIMIT_S
        while time.monotonic() < deadline:
            r, _, _ = select.select([sock], [], [], 0.25)
            if r:
                try:
                    if not sock.recv(1024):
                        break
                except OSError:
                    break
        self.close_connection = True

    def _items(self, method, rest, q):
        if not rest:
            if method == "GET":
                with _lock:
                    items = sorted(_items.values(), key=lambda i: i["id"])
                try:
                    limit = int(q.get("limit", "100"))
                except ValueError:
                    return self._send(400, {"error": "limit must be an integer"})
                if "name" in q:
                    items = [i for i in items if q["name"] in i["name"]]
                return self._send(200, {"items": items[:limit], "total": len(items)})
            if method == "POST":
                obj, err = self._body_json()
                if err or not isinstance(obj, dict):
                    return self._send(400, {"error": err or "body must be a JSON object"})
                with _lock:
                    new_id = next(_item_ids)
                    item = dict(obj, id=new_id)
                    _items[new_id] = item
                return self._send(201, item, headers={"Location": "/items/%d" % new_id})
            return self._send(405, {"error": "method not allowed"}, headers={"Allow": "GET, POST"})
        try:
            item_id = int(rest[0])
        except ValueError:
            return self._send(400, {"error": "item id must be an integer"})
        with _lock:
            item = _items.get(item_id)
        if item is None:
            return self._send(404, {"error": "item %d not found" % item_id})
        if method == "GET":
            return self._send(200, item)
        if method in ("PUT", "PATCH"):
            obj, err = self._body_json()
            if err or not isinstance(obj, dict):
                return self._send(400, {"error": err or "body must be a JSON object"})
            with _lock:
                item = dict(obj, id=item_id) if method == "PUT" else dict(item, **obj, id=item_id)
                _items[item_id] = item
            return self._send(200, item)
        if method == "DELETE":
            with _lock:
                _items.pop(item_id, None)
            return self._send(204)
        return self._send(405, {"error": "method not allowed"})

    def _jobs(self, method, rest):
        if not rest:
            if method != "POST":
                return self._send(405, {"error": "method not allowed"}, headers={"Allow": "POST"})
            obj, err = self._body_json()
            if err:
                return self._send(400, {"error": err})
            with _lock:
                job_id = "job-%d" % next(_job_ids)
                _jobs[job_id] = {"id": job_id, "polls": 0, "payload": obj,
                                 "fail": bool(isinstance(obj, dict) and obj.get("fail")),
                                 "created": time.time()}
            return self._send(202, {"id": job_id, "status": "queued"},
                              headers={"Location": "/jobs/" + job_id})
        job_id = rest[0]
        with _lock:
            job = _jobs.get(job_id)
            if job is None:
                return self._send(404, {"error": "job %s not found" % job_id})
            if len(rest) == 1 and method == "GET":
                job["polls"] += 1
                polls = job["polls"]
            else:
                polls = job["polls"]
        final = "failed" if job["fail"] else "done"
        status = "running" if polls <= 2 else final
        if len(rest) == 1 and method == "GET":
            out = {"id": job_id, "status": status, "progress": min(100, polls * 40)}
            if status == "failed":
                out["error"] = "job failed: payload asked for failure"
            return self._send(200, out)
        if rest[1:] == ["result"] and method == "GET":
            if status == "running":
                return self._send(409, {"error": "job not finished", "status": "running"})
            if status == "failed":
                return self._send(410, {"error": "job failed, no result", "status": "failed"})
            payload = job["payload"] if isinstance(job["payload"], dict) else {}
            return self._send(200, {"id": job_id, "status": "done",
                                    "result": {"rows": 3, "summary": "processed",
                                               "input": payload}})
        return self._send(404, {"error": "not found"})

    def _internal(self, method, rest, q):
        if method != "GET":
            return self._send(405, {"error": "internal API is read-only here"})
        tables = {"users": _USERS, "teams": _TEAMS}
        if not rest or rest[0] not in tables:
            return self._send(404, {"error": "unknown resource", "resources": sorted(tables)})
        rows = tables[rest[0]]
        if len(rest) == 1:
            return self._send(200, {"data": rows, "count": len(rows)})
        try:
            rid = int(rest[1])
        except ValueError:
            return self._send(400, {"error": "id must be an integer"})
        for r in rows:
            if r["id"] == rid:
                return self._send(200, {"data": r})
        return self._send(404, {"error": "%s %d not found" % (rest[0], rid)})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    verbose = False


def main():
    ap = argparse.ArgumentParser(description="Local fake API for skill tests (binds 127.0.0.1 only).")
    ap.add_argument("--port", type=int, default=0, help="port (0 = pick a free one)")
    ap.add_argument("--lifetime", type=float, default=300.0, help="exit after this many seconds (default 300)")
    ap.add_argument("--verbose", action="store_true", help="log requests to stderr")
    a = ap.parse_args()
    if a.lifetime <= 0:
        ap.error("--lifetime must be > 0")

    srv = Server(("127.0.0.1", a.port), Handler)
    srv.verbose = a.verbose
    sys.stdout.write("PORT %d\n" % srv.server_address[1])
    sys.stdout.flush()

    def expire():
        sys.stderr.write("fakeapi: lifetime of %gs reached, exiting\n" % a.lifetime)
        srv.shutdown()

    t = threading.Timer(a.lifetime, expire)
    t.daemon = True
    t.start()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    # Hanging handler threads are daemons; do not wait for them.
    os._exit(0)


if __name__ == "__main__":
    main()
