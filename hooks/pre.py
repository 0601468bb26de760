#!/usr/bin/env python3
"""Global pre hook (--hooks-dir): the organisation's policy, checked first.

Runs before every script call, before the skill's own pre hook, so it
rejects early and cheaply. Denies (exit 1, the reason on stderr) a call

  - whose arguments add up to more than HOOK_MAX_ARGS_BYTES bytes (UTF-8;
    default 65536), or
  - whose script path contains "..".

Fails closed: unreadable input, or a HOOK_MAX_ARGS_BYTES that is not a
positive integer, denies the call (a policy that cannot be checked is not
passed). Anything else is allowed: exit 0, nothing printed, so the call goes
on unchanged.

When HOOK_AUDIT_LOG is set, a denial is also appended to it as one JSON line
with the fields hooks/post.py writes (status "denied", plus the reason): a
denied call never reaches the post hooks, and the audit log should still
show it.

stdin:  {"skill", "script", "args", "mode", "caller", "request_id", "env_keys"}
env:    HOOK_MAX_ARGS_BYTES, HOOK_AUDIT_LOG (the server passes its HOOK_*
        variables to hooks, never to scripts)
"""

import datetime
import json
import os
import sys

DEFAULT_MAX_ARGS_BYTES = 64 << 10


def audit_denial(req, reason):
    path = os.environ.get("HOOK_AUDIT_LOG")
    if not path:
        return
    caller = req.get("caller")
    if len(json.dumps(caller)) > 1024:
        caller = json.dumps(caller)[:1024]
    entry = {
        "ts": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "request_id": req.get("request_id"),
        "skill": str(req.get("skill", ""))[:300],
        "script": str(req.get("script", ""))[:300],
        "status": "denied",
        "duration_ms": 0,
        "caller": caller,
        "stdout_bytes": 0,
        "reason": reason[:500],
    }
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write on O_APPEND: lines never interleave
        finally:
            os.close(fd)
    except OSError as e:
        sys.stderr.write("policy hook: cannot write %s: %s\n" % (path, e.strerror or e))


def deny(req, reason):
    audit_denial(req, reason)
    sys.stderr.write(reason + "\n")
    return 1


def main():
    raw = sys.stdin.buffer.read()  # always to EOF: the server writes all of it
    try:
        req = json.loads(raw)
    except ValueError as e:
        return deny({}, "org policy: unreadable hook input (%s); denying" % e)
    if not isinstance(req, dict):
        return deny({}, "org policy: hook input is not a JSON object; denying")

    setting = os.environ.get("HOOK_MAX_ARGS_BYTES", "")
    try:
        limit = int(setting) if setting else DEFAULT_MAX_ARGS_BYTES
    except ValueError:
        limit = 0
    if limit <= 0:
        return deny(req, "org policy: HOOK_MAX_ARGS_BYTES=%r is not a positive integer; "
                         "denying every call until an operator fixes it" % setting[:40])

    script = str(req.get("script", ""))
    if ".." in script:
        return deny(req, "org policy: script path %r contains '..'" % script[:200])

    args = req.get("args")
    if not isinstance(args, list):
        return deny(req, "org policy: 'args' is not a list; denying")
    total = sum(len(str(a).encode("utf-8", "surrogatepass")) for a in args)
    if total > limit:
        return deny(req, "org policy: the arguments total %d bytes, over the limit of %d bytes "
                         "(HOOK_MAX_ARGS_BYTES); narrow the request (fewer or shorter "
                         "arguments)." % (total, limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
