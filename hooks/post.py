#!/usr/bin/env python3
"""Global post hook (--hooks-dir): the organisation's audit log.

Runs after every script call, after the skill's own post hook, so it sees
the result that actually goes back to the caller. When HOOK_AUDIT_LOG is
set, appends one JSON line per call to it:

    {"ts", "request_id", "skill", "script", "status", "duration_ms",
     "caller", "stdout_bytes"}

`stdout_bytes` is the size (UTF-8 bytes) of the stdout returned, after any
redaction or replacement; `duration_ms` is the script's. Argument values and
output are not logged (they may hold personal data); env values never reach
a hook at all.

Never changes the result: prints nothing and exits 0, whatever happens. A
failed write is reported on stderr and the call goes on (an audit outage must
not take the service down; monitor the log's growth instead).

stdin:  {"skill", "script", "args", "mode", "caller", "request_id",
         "env_keys", "result": {...}}
env:    HOOK_AUDIT_LOG (the server passes its HOOK_* variables to hooks,
        never to scripts)
"""

import datetime
import json
import os
import sys


def main():
    raw = sys.stdin.buffer.read()  # always to EOF: the server writes all of it
    path = os.environ.get("HOOK_AUDIT_LOG")
    if not path:
        return 0
    try:
        req = json.loads(raw)
    except ValueError as e:
        sys.stderr.write("audit hook: unreadable hook input (%s); not audited\n" % e)
        return 0
    if not isinstance(req, dict):
        sys.stderr.write("audit hook: hook input is not an object; not audited\n")
        return 0
    result = req.get("result") if isinstance(req.get("result"), dict) else {}
    stdout = result.get("stdout")
    caller = req.get("caller")
    if len(json.dumps(caller)) > 1024:
        caller = json.dumps(caller)[:1024]
    entry = {
        "ts": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "request_id": req.get("request_id"),
        "skill": str(req.get("skill", ""))[:300],
        "script": str(req.get("script", ""))[:300],
        "status": result.get("status"),
        "duration_ms": result.get("duration_ms"),
        "caller": caller,
        "stdout_bytes": len(stdout.encode("utf-8", "surrogatepass")) if isinstance(stdout, str) else None,
    }
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write on O_APPEND: lines never interleave
        finally:
            os.close(fd)
    except OSError as e:
        sys.stderr.write("audit hook: cannot write %s: %s\n" % (path, e.strerror or e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
