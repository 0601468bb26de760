#!/usr/bin/env python3
"""submit.py - submit a job: POST API_BASE_URL/jobs, print the job id.

    submit.py [--payload JSON] [--timeout S]

stdout: {"id": "...", "status": "queued", "next": "..."}.
Exit: 0 accepted, 1 HTTP error, 2 bad arguments/config, 3 network error.
A submission is never retried automatically (it could create a second job).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import jobclient  # noqa: E402

PROG = "submit.py"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        jobclient.die(PROG, "%s (usage: submit.py [--payload JSON])" % message)


def main(argv):
    ap = Parser(description="Submit a job to API_BASE_URL/jobs.")
    ap.add_argument("--payload", default="{}", help='job parameters as a JSON object (default {})')
    ap.add_argument("--timeout", type=float, default=15.0, help="request timeout in seconds (default 15)")
    a = ap.parse_args(argv)
    try:
        payload = json.loads(a.payload)
    except ValueError as e:
        jobclient.die(PROG, "--payload is not valid JSON: %s" % e)
    if not isinstance(payload, dict):
        jobclient.die(PROG, "--payload must be a JSON object")
    if not 0 < a.timeout <= 60:
        jobclient.die(PROG, "--timeout must be in (0, 60]")
    url = jobclient.base_url(PROG) + "/jobs"
    try:
        status, body, _ = jobclient.call("POST", url, body=payload, timeout=a.timeout)
    except jobclient.ApiError as e:
        jobclient.log("%s: %s (the job may or may not have been created; do not resubmit blindly)" % (PROG, e))
        jobclient.emit({"error": str(e)})
        return 3
    if status not in (200, 201, 202) or not isinstance(body, dict) or not body.get("id"):
        jobclient.log("%s: submission failed: HTTP %s" % (PROG, status))
        jobclient.emit({"error": "submission failed", "status": status, "body": body})
        return 1
    job_id = str(body["id"])
    jobclient.emit({"id": job_id, "status": body.get("status", "queued"),
                    "next": 'run_skill_script(name="async-job", script="scripts/poll.py", args=["%s"])' % job_id})
    jobclient.log("submitted job %s" % job_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
