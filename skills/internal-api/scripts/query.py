#!/usr/bin/env python3
"""query.py - read-only queries against the internal API.

    query.py RESOURCE [--id ID] [--limit N] [--fields a,b,c]

GET $INTERNAL_API_URL/RESOURCE[/ID] with "Authorization: Bearer
$INTERNAL_API_TOKEN" (the token is never printed), and "X-Request-Id:
$X_REQUEST_ID" when the skill's pre hook set it (a value that is not a plain
token is ignored, with a warning on stderr). stdout: one JSON object
{resource, id?, count, total, data}. Exit: 0 ok, 1 HTTP error, 2 bad
arguments or configuration, 3 network error / timeout.
"""

import argparse
import json
import os
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

PROG = "query.py"
NAME_RE = re.compile(r"\A[a-z][a-z0-9_-]{0,63}\Z")
ID_RE = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
REQUEST_ID_RE = re.compile(r"\A[A-Za-z0-9._:-]{1,128}\Z")  # no CR/LF, spaces or quotes: header-safe
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
TIMEOUT = 10.0


def die(msg, code=2):
    tok = os.environ.get("INTERNAL_API_TOKEN")
    if tok and len(tok) >= 4:
        msg = msg.replace(tok, "***")
    sys.stderr.write("%s: error: %s\n" % (PROG, msg))
    sys.exit(code)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die("%s (usage: query.py RESOURCE [--id ID] [--limit N] [--fields a,b])" % message)


def project(row, fields):
    if not fields or not isinstance(row, dict):
        return row
    return {k: row[k] for k in fields if k in row}


def main(argv):
    ap = Parser(description="Read-only query of the internal API.")
    ap.add_argument("resource", help="collection name, e.g. users or teams")
    ap.add_argument("--id", help="fetch one record by id")
    ap.add_argument("--limit", type=int, default=20, help="max records to print (default 20, max 200)")
    ap.add_argument("--fields", help="comma-separated fields to keep, e.g. id,name,role")
    a = ap.parse_args(argv)

    if not NAME_RE.match(a.resource):
        die("RESOURCE must be a lowercase name like 'users' (got %r)" % a.resource)
    if a.id is not None and not ID_RE.match(a.id):
        die("--id must be letters, digits, '-' or '_' (got %r)" % a.id)
    if not 1 <= a.limit <= 200:
        die("--limit must be between 1 and 200")
    fields = [f.strip() for f in a.fields.split(",") if f.strip()] if a.fields else None

    base = os.environ.get("INTERNAL_API_URL", "").rstrip("/")
    token = os.environ.get("INTERNAL_API_TOKEN", "")
    if not base:
        die("INTERNAL_API_URL is not set")
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        die("INTERNAL_API_URL must be an http(s) URL")
    if not token:
        die("INTERNAL_API_TOKEN is not set; the internal API requires it")

    url = "%s/%s" % (base, a.resource)
    if a.id is not None:
        url += "/" + urllib.parse.quote(a.id, safe="")
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    handlers = [urllib.request.ProxyHandler({})] if host in LOOPBACK else []
    opener = urllib.request.build_opener(*handlers)
    headers = {"Authorization": "Bearer " + token, "Accept": "application/json",
               "User-Agent": "skill-internal-api/1.0"}
    rid = os.environ.get("X_REQUEST_ID", "")
    if REQUEST_ID_RE.match(rid):
        headers["X-Request-Id"] = rid
    elif rid:
        sys.stderr.write("%s: warning: X_REQUEST_ID is not a plain token; not sent\n" % PROG)
    req = urllib.request.Request(url, method="GET", headers=headers)
    try:
        resp = opener.open(req, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        resp = e
    except (socket.timeout, TimeoutError):
        die("the internal API did not answer within %gs" % TIMEOUT, 3)
    except urllib.error.URLError as e:
        die("cannot reach the internal API at %s: %s" % (base, getattr(e.reason, "strerror", None) or e.reason), 3)
    try:
        raw = resp.read(1 << 20)
    except (OSError, socket.timeout) as e:
        die("error reading the response: %s" % e, 3)
    finally:
        resp.close()
    status = getattr(resp, "status", None) or resp.code
    try:
        body = json.loads(raw.decode("utf-8", errors="replace")) if raw else None
    except ValueError:
        body = None
    if status >= 400:
        msg = body.get("error") if isinstance(body, dict) else None
        hint = {401: "INTERNAL_API_TOKEN was rejected", 403: "no access to this resource",
                404: "no such resource or id"}.get(status, "")
        sys.stderr.write("%s: HTTP %d%s%s\n" % (PROG, status, (": " + hint) if hint else "",
                                                 (" (%s)" % msg) if msg else ""))
        out = {"resource": a.resource, "http_status": status, "error": msg or hint or "request failed"}
        if isinstance(body, dict) and isinstance(body.get("resources"), list):
            out["resources"] = body["resources"][:50]
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 1
    data = body.get("data", body) if isinstance(body, dict) else body
    out = {"resource": a.resource}
    if a.id is not None:
        out["id"] = a.id
        out["data"] = project(data, fields)
    elif isinstance(data, list):
        out["count"] = min(len(data), a.limit)
        out["total"] = len(data)
        out["data"] = [project(r, fields) for r in data[:a.limit]]
        if len(data) > a.limit:
            out["note"] = "showing %d of %d; raise --limit or query by --id" % (a.limit, len(data))
    else:
        out["data"] = data
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
