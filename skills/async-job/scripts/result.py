#!/usr/bin/env python3
"""result.py - fetch the result of a finished job: GET API_BASE_URL/jobs/ID/result.

    result.py JOB_ID [--max-bytes N] [--timeout S]

stdout: {"id", "status", "result"} (result capped at --max-bytes of JSON).
Exit: 0 ok, 1 not ready / failed / HTTP error, 2 bad arguments, 3 network error.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import jobclient  # noqa: E402

PROG = "result.py"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        jobclient.die(PROG, "%s (usage: result.py JOB_ID [--max-bytes N])" % message)


def main(argv):
    ap = Parser(description="Fetch a finished job's result.")
    ap.add_argument("job_id")
    ap.add_argument("--max-bytes", type=int, default=16384, help="cap on the result JSON printed (default 16384)")
    ap.add_argument("--timeout", type=float, default=20.0, help="request timeout (default 20)")
    a = ap.parse_args(argv)
    if not 256 <= a.max_bytes <= 1048576:
        jobclient.die(PROG, "--max-bytes must be between 256 and 1048576")
    if not 0 < a.timeout <= 60:
        jobclient.die(PROG, "--timeout must be in (0, 60]")
    quoted = jobclient.check_job_id(PROG, a.job_id)
    url = "%s/jobs/%s/result" % (jobclient.base_url(PROG), quoted)
    try:
        status, body, _ = jobclient.call("GET", url, timeout=a.timeout, max_bytes=max(a.max_bytes * 4, 262144))
    except jobclient.ApiError as e:
        jobclient.log("%s: %s" % (PROG, e))
        jobclient.emit({"id": a.job_id, "error": str(e)})
        return 3
    if status == 409 or status == 202:
        jobclient.log("%s: job %s is not finished yet; run poll.py first" % (PROG, a.job_id))
        jobclient.emit({"id": a.job_id, "status": "running", "ready": False})
        return 1
    if status >= 400:
        msg = body.get("error") if isinstance(body, dict) else None
        jobclient.log("%s: HTTP %d%s" % (PROG, status, (": " + msg) if msg else ""))
        jobclient.emit({"id": a.job_id, "http_status": status, "error": msg or "request failed"})
        return 1
    result = body.get("result", body) if isinstance(body, dict) else body
    out = {"id": a.job_id, "status": body.get("status", "done") if isinstance(body, dict) else "done",
           "result": result}
    text = json.dumps(result, ensure_ascii=False)
    if len(text.encode("utf-8")) > a.max_bytes:
        out["result"] = text.encode("utf-8")[:a.max_bytes].decode("utf-8", errors="ignore")
        out["truncated"] = True
        out["note"] = "result is %d bytes of JSON; shown as truncated text. Raise --max-bytes for more" % len(text)
    jobclient.emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
