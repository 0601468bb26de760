#!/usr/bin/env python3
"""Global pre hook (example for --hooks-dir): audit every script call.

stdin:  {"skill", "script", "args", "mode", "caller", "request_id", "env_keys"}
Effect: if $SKILL_AUDIT_LOG is set, append one JSON line per call to it.
Exit 0 (allow) always, except when the script path contains ".." (deny,
reason on stderr). Never blocks on anything: the log write is a single
O_APPEND write, and a failing log write is reported on stderr, not fatal.
"""

import json
import os
import sys
import time

MAX_INPUT = 1 << 20
MAX_ARG = 200
MAX_ARGS = 50


def main():
    raw = sys.stdin.read(MAX_INPUT)
    try:
        req = json.loads(raw)
    except ValueError as e:
        sys.stderr.write("audit hook: unreadable hook input (%s); not audited\n" % e)
        return 0
    if not isinstance(req, dict):
        sys.stderr.write("audit hook: hook input is not an object; not audited\n")
        return 0

    script = str(req.get("script", ""))
    denied = ".." in script

    path = os.environ.get("SKILL_AUDIT_LOG")
    if path:
        args = req.get("args") if isinstance(req.get("args"), list) else []
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "request_id": req.get("request_id"),
            "caller": req.get("caller"),
            "skill": req.get("skill"),
            "script": script,
            "mode": req.get("mode"),
            # Argument values are truncated; env values are never seen here (only names).
            "args": [str(a)[:MAX_ARG] for a in args[:MAX_ARGS]],
            "env_keys": sorted(str(k) for k in (req.get("env_keys") or []))[:100],
            "decision": "deny" if denied else "allow",
        }
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as e:
            sys.stderr.write("audit hook: cannot write %s: %s\n" % (path, e.strerror or e))

    if denied:
        sys.stderr.write("script path %r contains '..'; refusing\n" % script[:200])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
