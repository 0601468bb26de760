#!/usr/bin/env python3
"""rest.py - call a JSON REST API: METHOD PATH relative to a base URL.

    rest.py METHOD PATH [--base-url URL] [--json BODY] [--query k=v]...
            [--timeout S] [--max-items N] [--max-bytes N]
            [--count-only | [--fields a,b.c] [--limit N]] [--rows NAME]

Base URL: --base-url, else env REST_BASE_URL. Auth: env REST_TOKEN, sent as
"Authorization: Bearer <token>" and never printed (it is redacted from any
echoed text). stdout: one JSON object {status, ok, method, url, data|text,
...}, or {"total": N} with --count-only. stderr: diagnostics, and a warning
when the output is over SKILL_OUTPUT_BUDGET_BYTES.

The rows that --count-only, --fields and --limit work on are the answer
itself when it is a list, else the envelope's list member: --rows NAME, else
the first of ROW_KEYS that holds a list, else its only list when its other
members are scalars and it holds objects.

Exit codes: 0 2xx, 1 HTTP error status (JSON still printed), 2 bad arguments
or configuration, 3 network error / timeout, 4 the answer has no rows for
--count-only/--fields/--limit (not JSON, no list, or over --max-bytes).
"""

import argparse
import json
import math
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
ROW_KEYS = ("data", "items", "results", "records", "rows", "entries")
# A list is often one page of many, so the API's own total beats len(rows).
TOTAL_KEYS = ("total", "total_count", "totalCount", "count")
DEFAULT_MAX_BYTES = 4 << 20
# SKILL.md's execution timeout and stall timeout for this script: a longer
# --timeout would be cut short by the server, without rest.py's message.
CEILING_S = 45
STALL_S = 40
MAX_TIMEOUT_S = 30
# The filters and the printer recurse once a level; an answer nested deeper
# is shown as text rather than crash the script.
MAX_DEPTH = 200


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


class NoRows(Exception):
    """The answer holds nothing that --count-only/--fields/--limit can work on."""


def describe(doc):
    if isinstance(doc, dict):
        keys = list(doc)
        return "an object with keys: %s" % (", ".join(keys[:20]) + (", ..." if len(keys) > 20 else "") or "none")
    return "a JSON %s" % {str: "string", bool: "boolean", int: "number", float: "number",
                          list: "list"}.get(type(doc), "null")


def find_rows(doc, rows_key=None):
    """(key, rows): key is None when the answer itself is the list. Without
    rows_key, an object's rows are its first ROW_KEYS member holding a list,
    else its only list when that list holds objects and every other member
    is a scalar (total, page, next). An object with an object member, or
    with a list of strings (tags), is a record, not an envelope, and
    counting its lists would mislead."""
    if rows_key is not None:
        if not isinstance(doc, dict) or rows_key not in doc:
            raise NoRows("--rows %s: the answer has no member %r; it is %s" % (rows_key, rows_key, describe(doc)))
        if not isinstance(doc[rows_key], list):
            raise NoRows("--rows %s: that member is %s, not a list" % (rows_key, describe(doc[rows_key])))
        return rows_key, doc[rows_key]
    if isinstance(doc, list):
        return None, doc
    if isinstance(doc, dict):
        for k in ROW_KEYS:
            if isinstance(doc.get(k), list):
                return k, doc[k]
        lists = [k for k, v in doc.items() if isinstance(v, list)]
        if (len(lists) == 1 and all(isinstance(r, dict) for r in doc[lists[0]])
                and not any(isinstance(v, dict) for v in doc.values())):
            return lists[0], doc[lists[0]]
        if lists:
            raise NoRows("the answer is an object whose lists (%s) are not called %s; if one of them holds "
                         "the rows, name it with --rows" % (", ".join(lists[:20]), "/".join(ROW_KEYS)))
    raise NoRows("the answer has no list of rows; it is %s" % describe(doc))


def count_of(doc, rows_key=None):
    if rows_key is not None:
        find_rows(doc, rows_key)  # a --rows that names nothing is an error even when a total is there
    if isinstance(doc, dict):
        for k in TOTAL_KEYS:
            v = doc.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
    return len(find_rows(doc, rows_key)[1])


def nested_deeper(doc, limit):
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return False


def load_json(text, notes):
    """The API's JSON as Python values, or ValueError. A byte-order mark is
    skipped (RFC 8259 lets a parser ignore one). NaN, Infinity and numbers
    beyond a double (1e400) would print back as no JSON at all, so they are
    kept as strings of their text, with a note."""
    odd = []

    def keep(text):
        odd.append(text)
        return text

    def number(text):
        v = float(text)
        return keep(text) if math.isinf(v) else v

    try:
        doc = json.loads(text[1:] if text.startswith("\ufeff") else text, parse_constant=keep,
                         parse_float=number)
    except RecursionError:
        raise ValueError("nested too deep")
    if nested_deeper(doc, MAX_DEPTH):
        raise ValueError("nested deeper than %d levels" % MAX_DEPTH)
    if odd:
        notes.append("numbers JSON cannot hold are kept as strings: %s" % ", ".join(sorted(set(odd))[:5]))
    return doc


def parse_fields(text):
    """'id, customer.name' -> a tree {"id": True, "customer": {"name": True}}."""
    tree = {}
    for part in text.split(","):
        name = part.strip()
        if not name:
            die("--fields needs field names separated by commas, e.g. --fields id,status,customer.name; got %r" % text)
        segs = name.split(".")
        if not all(segs):
            die("--fields: %r has an empty part; nested fields are dotted paths like customer.name" % name)
        node = tree
        for i, seg in enumerate(segs):
            if node.get(seg) is True:
                break  # the whole member is kept already
            if i == len(segs) - 1:
                node[seg] = True
            else:
                if not isinstance(node.get(seg), dict):
                    node[seg] = {}
                node = node[seg]
    return tree


def field_paths(tree, prefix=()):
    for k, sub in tree.items():
        if sub is True:
            yield prefix + (k,)
        else:
            yield from field_paths(sub, prefix + (k,))


_MISSING = object()


def project(value, tree, row=False):
    """Keep only the members of tree; a list on the way applies the rest of
    the path to each of its objects. What has none of the fields is left
    out, never null: a member, a list element, a nested object. A row itself
    stays (as {}), so rows keep their number."""
    if isinstance(value, list):
        kept = [project(v, tree) for v in value]
        kept = [v for v in kept if v is not _MISSING]
        return kept if kept or not value else _MISSING
    if not isinstance(value, dict):
        return _MISSING
    out = {}
    for k, sub in tree.items():
        if k in value:
            v = value[k] if sub is True else project(value[k], sub)
            if v is not _MISSING:
                out[k] = v
    return out if out or row else _MISSING


def has_path(value, segs):
    if not segs:
        return True
    if isinstance(value, list):
        return any(has_path(v, segs) for v in value)
    return isinstance(value, dict) and segs[0] in value and has_path(value[segs[0]], segs[1:])


def shape(doc, rows_key, tree, limit, max_items, notes):
    """The answer with rows projected to tree and cut to limit (None: the
    --max-items cap instead); every other list is capped at max_items.
    Returns (data, limited) where limited is {"kept", "total"} or None."""
    key, rows = find_rows(doc, rows_key)
    where = "data" if key is None else "data.%s" % key
    total = len(rows)
    if tree is not None:
        first = next((r for r in rows if isinstance(r, dict)), None)
        have = "; rows have: " + ", ".join(list(first)[:30]) if first is not None else ""
        for segs in field_paths(tree) if rows else ():
            if not any(has_path(r, segs) for r in rows):
                notes.append("--fields: no row has %s%s" % (".".join(segs), have))
        rows = [project(r, tree, row=True) if isinstance(r, dict) else r for r in rows]
    limited = None
    if limit is None:
        rows = cap(rows, max_items, where, notes)
    else:
        if total > limit:
            rows, limited = rows[:limit], {"kept": limit, "total": total}
        rows = [cap(r, max_items, "%s[%d]" % (where, i), notes) for i, r in enumerate(rows)]
    if key is None:
        return rows, limited
    return {k: (rows if k == key else cap(v, max_items, "data.%s" % k, notes)) for k, v in doc.items()}, limited


def output_budget():
    text = os.environ.get("SKILL_OUTPUT_BUDGET_BYTES", "").strip()
    if not text:
        return None
    if text.isdigit() and int(text) > 0:
        return int(text)
    sys.stderr.write("rest.py: ignoring SKILL_OUTPUT_BUDGET_BYTES=%r: not a positive whole number\n" % text)
    return None


def render(out):
    """The bytes printed for out: one JSON value and a newline. A lone
    surrogate from the API (legal in JSON text, not in UTF-8) falls back to
    \\u escapes, so stdout is valid UTF-8 JSON whatever the API sent."""
    try:
        return (json.dumps(out, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(out) + "\n").encode("ascii")


def emit(out):
    sys.stdout.flush()
    sys.stdout.buffer.write(render(out))
    sys.stdout.flush()


def budget_advice(size, budget, doc, frame, rows_key, tree, max_items):
    """The stderr warning for an output of size bytes over budget: which flag
    helps, with the largest --limit whose output would fit."""
    tips = ["--count-only (prints only {\"total\": N})"]
    rows, why = None, "an HTTP error" if not frame["ok"] else "the answer is not JSON"
    if doc is not None:
        try:
            rows = find_rows(doc, rows_key)[1]
        except NoRows as e:
            why = str(e)
    if rows is None:
        tips = ["no rows to narrow (%s); ask the API for less with --query" % why]
    else:
        first = next((r for r in rows if isinstance(r, dict)), None)
        if tree is None and first is not None:
            tips.append("--fields with only the keys you need (rows have: %s)" % ", ".join(list(first)[:30]))

        def size_at(n):
            notes = []
            data, limited = shape(doc, rows_key, tree, n, max_items, notes)
            out = dict(frame, data=data)
            if limited:
                out["_limited"] = limited
            if notes:
                out["notes"] = notes[:10]
            return len(render(out))

        lo, hi = 0, len(rows)
        while lo < hi:  # the largest n in [1, len(rows)] whose output fits; 0 if none
            mid = (lo + hi + 1) // 2
            if size_at(mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        if lo >= 1:
            tips.append("--limit %d (fits)" % lo)
        else:
            tips.append("no --limit fits: even one row is over the budget%s" % ("" if tree is None else "; keep fewer --fields"))
    return ("rest.py: warning: the output is %d bytes, over SKILL_OUTPUT_BUDGET_BYTES=%d; it is printed anyway "
            "but may be cut. Narrow it: %s\n" % (size, budget, "; ".join(tips)))


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
    ap.add_argument("--timeout", type=float, default=15.0,
                    help="per-attempt timeout in seconds (default 15, at most %d)" % MAX_TIMEOUT_S)
    ap.add_argument("--max-items", type=int, default=25, help="cap every JSON list in the answer (default 25)")
    ap.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                    help="response bytes read at most (default 4 MiB)")
    ap.add_argument("--count-only", action="store_true",
                    help='print only {"total": N}: the envelope\'s total/count, else the number of rows')
    ap.add_argument("--fields", metavar="A,B.C", help="keep only these members of each row; dotted paths for nested ones")
    ap.add_argument("--limit", metavar="N", help="at most N rows (replaces --max-items for the rows)")
    ap.add_argument("--rows", metavar="NAME", help="the envelope member that holds the rows (default: found automatically)")
    a = ap.parse_args(argv)

    method = a.method.upper()
    if method not in METHODS:
        die("unknown method %r; use one of %s" % (a.method, ", ".join(METHODS)))
    if not 0 < a.timeout <= MAX_TIMEOUT_S:
        die("--timeout must be in (0, %d]: the skill's execution timeout is %d s and a script silent for %d s "
            "is stopped" % (MAX_TIMEOUT_S, CEILING_S, STALL_S))
    if a.max_items < 1 or a.max_bytes < 1:
        die("--max-items and --max-bytes must be >= 1")
    limit = None
    if a.limit is not None:
        if not a.limit.strip().isdecimal() or int(a.limit) < 1:
            die("--limit must be a whole number of rows >= 1, got %r (for just the number of rows use --count-only)"
                % a.limit)
        limit = int(a.limit)
    tree = parse_fields(a.fields) if a.fields is not None else None
    if a.count_only and (tree is not None or limit is not None):
        die("--count-only prints only the total and cannot be combined with %s; count first, then call "
            "again with --fields and a small --limit" % " or ".join(
                f for f, v in (("--fields", tree), ("--limit", limit)) if v is not None))
    if a.rows is not None and not a.rows.strip():
        die("--rows needs the name of the envelope member that holds the rows, e.g. --rows orders")
    filtering = a.count_only or tree is not None or limit is not None
    if a.rows is not None and not filtering:
        die("--rows only says where --count-only, --fields or --limit find the rows; add one of them")
    if filtering and method == "HEAD":
        die("--count-only, --fields and --limit need an answer body; HEAD has none")
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
    # failed connection, taken only when it can end (1 s pause + --timeout)
    # before the execution timeout, with 2 s to spare for the output.
    attempts = 2 if method in IDEMPOTENT else 1
    t0 = time.monotonic()
    resp = None

    def retry_fits():
        return time.monotonic() - t0 + 1 + a.timeout <= CEILING_S - 2

    for attempt in range(1, attempts + 1):
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            resp = opener.open(req, timeout=a.timeout)
            break
        except urllib.error.HTTPError as e:
            resp = e
            if e.code in (502, 503, 504) and attempt < attempts and retry_fits():
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
            if retry and attempt < attempts and retry_fits():
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
    doc = None
    if raw and "json" in ctype.lower() and not truncated:
        try:
            doc = load_json(text, notes)
        except ValueError as e:
            out["text"] = redact(text[:4000])
            notes.append("Content-Type says JSON but the body does not parse (%s)" % str(e)[:200])
    elif raw:
        out["text"] = redact(text[:4000])
        if truncated or len(text) > 4000:
            notes.append("body truncated; raise --max-bytes or narrow the query")

    # Filters apply to a 2xx answer only: an error answer is shown whole,
    # since it says what went wrong.
    if filtering and out["ok"]:
        try:
            if doc is None:
                raise NoRows("the answer is over --max-bytes (%d); raise --max-bytes or page with --query"
                             % a.max_bytes if truncated else "the answer is not JSON (Content-Type: %s)"
                             % (ctype or "none"))
            if a.count_only:
                emit({"total": count_of(doc, a.rows)})
                return 0
            data, limited = shape(doc, a.rows, tree, limit, a.max_items, notes)
        except NoRows as e:
            msg = "%s: %s" % ("--count-only" if a.count_only else "--fields/--limit", e)
            sys.stderr.write("rest.py: error: %s\n" % redact(msg))
            out.pop("text", None)
            out.update(ok=False, error=redact(msg))
            emit(out)
            return 4
        out["data"] = data
        if limited:
            out["_limited"] = limited
    elif doc is not None:
        out["data"] = cap(doc, a.max_items, "data", notes)
    if notes:
        out["notes"] = notes[:10]
    budget = output_budget()
    size = len(render(out))
    if budget is not None and size > budget:
        frame = {k: v for k, v in out.items() if k not in ("data", "notes", "_limited")}
        sys.stderr.write(redact(budget_advice(size, budget, doc if out["ok"] else None, frame, a.rows, tree,
                                              a.max_items)))
    emit(out)
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
