#!/usr/bin/env python3
"""async-job post hook: fail a submit that exited 0 without a job id.

submit.py prints {"job_id": "job-17", "id": "job-17", "status": "queued",
...} and exits 0 only when the service accepted the job; the job id is the
key to poll and to fetch the result with. submit.py checks the reply itself;
this hook is the guard that holds whatever the script becomes: a submit that
exits 0 with no id (an edit or a bug in submit.py, a reply shape it misreads)
would leave the model with a "success" and nothing to poll, so it would
submit again and start the job twice, or give up silently. The hook turns
that into a clear failure: exit 1 with the reason on stderr. The call then
ends "failed" with this reason, and submit.py's output is withheld.

Every other call (poll.py, result.py, a failed submit) passes through
unchanged: nothing printed, exit 0.

stdin: {"skill", "script", "args", ..., "result": {"status", "exit_code", "stdout", ...}}
"""

import json
import re
import sys

JOB_ID_RE = re.compile(r"\A[A-Za-z0-9._:-]{1,128}\Z")


def fail(reason):
    sys.stderr.write(reason + "\n")
    return 1


def main():
    raw = sys.stdin.buffer.read()  # always to EOF: the server writes all of it
    try:
        req = json.loads(raw)
    except ValueError as e:
        return fail("async-job post hook: unreadable hook input (%s)" % e)
    script = str(req.get("script", "")) if isinstance(req, dict) else ""
    # "submit.py" and "scripts/submit.py" name the same script
    if script not in ("submit.py", "scripts/submit.py"):
        return 0
    result = req.get("result")
    if not isinstance(result, dict) or result.get("status") != "ok" or result.get("exit_code") != 0:
        return 0  # a failed submit says why itself
    stdout = result.get("stdout") or ""
    try:
        out = json.loads(stdout)
    except ValueError:
        out = None
    # submit.py prints the key as "job_id" (and as "id", for older readers)
    job_id = (out.get("job_id") or out.get("id")) if isinstance(out, dict) else None
    if isinstance(job_id, str) and JOB_ID_RE.match(job_id):
        return 0
    return fail("submit.py exited 0 but printed no job id (stdout: %r), so there is nothing to "
                "poll or fetch. The job may or may not have been created: submit again with the "
                "same payload (the same idempotency key) only if the API honours "
                "Idempotency-Key; otherwise check with the service first." % stdout[:200])


if __name__ == "__main__":
    sys.exit(main())
