#!/usr/bin/env python3
"""internal-api post hook: redact e-mail addresses and tok_ tokens.

stdin: {"skill", "script", "args", ..., "result": {"stdout": ..., "stderr": ..., ...}}
stdout: {"result": <the same result with stdout/stderr redacted>}
Exit 0 always when the input is readable; the count of redactions goes to stderr.
"""

import json
import re
import sys

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
TOKEN_RE = re.compile(r"tok_[A-Za-z0-9]+")
MAX_INPUT = 16 << 20


def redact(text):
    text, n1 = EMAIL_RE.subn("[redacted-email]", text)
    text, n2 = TOKEN_RE.subn("tok_[redacted]", text)
    return text, n1, n2


def main():
    raw = sys.stdin.read(MAX_INPUT)
    try:
        req = json.loads(raw)
    except ValueError as e:
        sys.stderr.write("internal-api post hook: malformed hook input (%s)\n" % e)
        return 1
    result = req.get("result") if isinstance(req, dict) else None
    if not isinstance(result, dict):
        sys.stderr.write("internal-api post hook: no 'result' object in the input\n")
        return 1
    emails = tokens = 0
    out = dict(result)
    for key in ("stdout", "stderr"):
        if isinstance(out.get(key), str):
            out[key], n1, n2 = redact(out[key])
            emails += n1
            tokens += n2
    sys.stderr.write("internal-api post hook: redacted %d e-mail address(es), %d token(s)\n" % (emails, tokens))
    json.dump({"result": out}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
