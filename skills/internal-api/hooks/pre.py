#!/usr/bin/env python3
"""internal-api pre hook: allow read-only use of the internal API only.

stdin: {"skill", "script", "args", "mode", "caller", "request_id", "env_keys"}
Allow: exit 0 and print {"note": "read-only access to the internal API",
       "env": {"X_REQUEST_ID": <request_id>}}; query.py sends X_REQUEST_ID as
       the X-Request-Id header, so the API's logs and the server's log share
       one id per call. (A request_id that is not a plain token is not
       injected; the call is still allowed.)
Deny:  exit 1 with the reason on stderr, when
  - an argument looks like a write (delete, drop, truncate, --write, ...),
  - INTERNAL_API_TOKEN is not among env_keys (the script could not run),
  - the input is not the expected JSON (fail closed).
"""

import json
import re
import sys

WRITE_RE = re.compile(r"(delete|drop|truncate|destroy|purge|--write|--method|--data|--json)", re.I)
REQUEST_ID_RE = re.compile(r"\A[A-Za-z0-9._:-]{1,128}\Z")  # safe in an HTTP header as is
MAX_INPUT = 1 << 20


def deny(reason):
    sys.stderr.write(reason + "\n")
    sys.exit(1)


def main():
    raw = sys.stdin.read(MAX_INPUT)
    try:
        req = json.loads(raw)
    except ValueError as e:
        deny("internal-api pre hook: malformed hook input (%s); denying" % e)
    if not isinstance(req, dict):
        deny("internal-api pre hook: hook input must be a JSON object; denying")
    args = req.get("args") or []
    if not isinstance(args, list):
        deny("internal-api pre hook: 'args' must be a list; denying")
    for arg in args:
        m = WRITE_RE.search(str(arg))
        if m:
            deny("internal-api is read-only: argument %r looks like a write (%r). "
                 "Only reads (RESOURCE [--id ID] [--limit N] [--fields ...]) are allowed."
                 % (str(arg)[:80], m.group(1).lower()))
    env_keys = req.get("env_keys") or []
    if "INTERNAL_API_TOKEN" not in env_keys:
        deny("internal-api needs INTERNAL_API_TOKEN in the script environment, and it is not "
             "configured; ask an operator to provide it (do not paste tokens into the chat)")
    out = {"note": "read-only access to the internal API"}
    rid = req.get("request_id")
    if isinstance(rid, str) and REQUEST_ID_RE.match(rid):
        out["env"] = {"X_REQUEST_ID": rid}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
