#!/usr/bin/env python3
"""result.py - fetch a job's result by its key, now: ready, or "call again later".

    result.py JOB_ID [--max-bytes N] [--timeout S]

Two short requests, no waiting: GET API_BASE_URL/jobs/ID (status), and when
the job is done, GET API_BASE_URL/jobs/ID/result.

stdout, one JSON object:
  done       {"job_id", "ready": true, "status": "done", "result": ...}      exit 0
  not yet    {"job_id", "ready": false, "status": "running", "progress",
              "hint": "call again later: ..."}                               exit 0
  failed     {"job_id", "ready": true, "status": "failed", "error"}          exit 1
  unknown id {"job_id", "status": "not_found"}                               exit 1
Exit 2 bad arguments, 3 network error. The result is capped at --max-bytes of JSON.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import jobclient  # noqa: E402

PROG = "result.py"
DONE = {"done", "succeeded", "success", "completed", "complete", "finished"}
FAILED = {"failed", "error", "cancelled", "canceled", "aborted"}


class Parser(argparse.ArgumentParser):
    def error(self, message):
        jobclient.die(PROG, "%s (usage: result.py JOB_ID [--max-bytes N] [--timeout S])" % message)


def not_ready(job_id, state, progress=None):
    out = {"job_id": job_id, "ready": False, "status": state,
           "hint": "not finished yet; call again later (tell the user, do other work first): "
                   + jobclient.result_hint(job_id)}
    if progress is not None:
        out["progress"] = progress
    jobclient.log("%s: job %s is %s%s; call again later" % (
        PROG, job_id, state, (" %s%%" % progress) if progress is not None else ""))
    jobclient.emit(out)
    return 0


def http_error(job_id, status, body):
    msg = body.get("error") if isinstance(body, dict) else None
    jobclient.log("%s: HTTP %d%s" % (PROG, status, (": " + str(msg)) if msg else ""))
    jobclient.emit({"job_id": job_id, "http_status": status, "error": msg or "request failed"})
    return 1


def main(argv):
    ap = Parser(description="Fetch a job's result by id; says 'call again later' if not done.")
    ap.add_argument("job_id")
    ap.add_argument("--max-bytes", type=int, default=16384, help="cap on the result JSON printed (default 16384)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="per-request timeout (default 10, max 12: two requests fit in 30 s)")
    a = ap.parse_args(argv)
    if not 256 <= a.max_bytes <= 1048576:
        jobclient.die(PROG, "--max-bytes must be between 256 and 1048576")
    if not 0 < a.timeout <= 12:
        jobclient.die(PROG, "--timeout must be in (0, 12] (two requests within the script's 30 s)")
    quoted = jobclient.check_job_id(PROG, a.job_id)
    job_url = "%s/jobs/%s" % (jobclient.base_url(PROG), quoted)
    try:
        status, body, _ = jobclient.call("GET", job_url, timeout=a.timeout)
        if status == 404:
            jobclient.log("%s: job %s not found (wrong id, or expired)" % (PROG, a.job_id))
            jobclient.emit({"job_id": a.job_id, "status": "not_found"})
            return 1
        if status in (429, 502, 503, 504):
            return not_ready(a.job_id, "unknown (HTTP %d)" % status)
        if status >= 400:
            return http_error(a.job_id, status, body)
        state = str(body.get("status", "unknown")).lower() if isinstance(body, dict) else "unknown"
        if state in FAILED:
            err = (body.get("error") or body.get("message") or "job failed") if isinstance(body, dict) else "job failed"
            jobclient.log("%s: job %s %s: %s" % (PROG, a.job_id, state, err))
            jobclient.emit({"job_id": a.job_id, "ready": True, "status": state, "error": err})
            return 1
        if state not in DONE:
            return not_ready(a.job_id, state, body.get("progress") if isinstance(body, dict) else None)
        status, body, _ = jobclient.call("GET", job_url + "/result", timeout=a.timeout,
                                         max_bytes=max(a.max_bytes * 4, 262144))
    except jobclient.ApiError as e:
        jobclient.log("%s: %s" % (PROG, e))
        jobclient.emit({"job_id": a.job_id, "error": str(e)})
        return 3
    if status in (202, 409):
        return not_ready(a.job_id, "running")
    if status >= 400:
        return http_error(a.job_id, status, body)
    result = body.get("result", body) if isinstance(body, dict) else body
    out = {"job_id": a.job_id, "ready": True, "status": "done", "result": result}
    text = json.dumps(result, ensure_ascii=False)
    if len(text.encode("utf-8")) > a.max_bytes:
        out["result"] = text.encode("utf-8")[:a.max_bytes].decode("utf-8", errors="ignore")
        out["truncated"] = True
        out["note"] = "result is %d bytes of JSON; shown as truncated text. Raise --max-bytes for more" % len(text)
    jobclient.emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
