#!/usr/bin/env python3
"""submit.py - submit a job: POST API_BASE_URL/jobs, print its job id at once.

    submit.py [--payload JSON] [--idempotency-key KEY] [--timeout S]

One request, no waiting for the job: the job id is the key to fetch the result
later with result.py.

stdout: {"job_id": "...", "id": "..." (same value, kept for older readers),
"status": "queued", "idempotency_key": "...", "next": "..."}.
Exit: 0 accepted, 1 HTTP error, 2 bad arguments/config, 3 network error.

Every submission carries an Idempotency-Key header: --idempotency-key, or by
default the SHA-256 of the request body (the payload as canonical JSON). If
the reply is lost in transit, running submit.py again with the same payload
(or the same key) is harmless on an API that honours the header: it answers
with the job it already created. submit.py itself never retries.
"""

import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import jobclient  # noqa: E402

PROG = "submit.py"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        jobclient.die(PROG, "%s (usage: submit.py [--payload JSON] [--idempotency-key KEY])" % message)


def canonical_body(payload):
    """The bytes sent: sorted keys, no spaces, so equal payloads give equal keys."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def main(argv):
    ap = Parser(description="Submit a job to API_BASE_URL/jobs; prints the job id at once.")
    ap.add_argument("--payload", default="{}", help='job parameters as a JSON object (default {})')
    ap.add_argument("--idempotency-key", metavar="KEY",
                    help="Idempotency-Key header (default: sha256 of the request body)")
    ap.add_argument("--timeout", type=float, default=15.0, help="request timeout in seconds (default 15)")
    a = ap.parse_args(argv)
    try:
        payload = json.loads(a.payload)
    except ValueError as e:
        jobclient.die(PROG, "--payload is not valid JSON: %s" % e)
    if not isinstance(payload, dict):
        jobclient.die(PROG, "--payload must be a JSON object")
    if not 0 < a.timeout <= 20:
        jobclient.die(PROG, "--timeout must be in (0, 20] (the script's timeout is 30 s)")
    body = canonical_body(payload)
    key = a.idempotency_key
    if key is None:
        key = hashlib.sha256(body).hexdigest()
    elif not 1 <= len(key) <= 255 or not all("!" <= c <= "~" for c in key):
        jobclient.die(PROG, "--idempotency-key must be 1-255 visible ASCII characters, no spaces")
    url = jobclient.base_url(PROG) + "/jobs"
    try:
        status, reply, _ = jobclient.call("POST", url, body=body, timeout=a.timeout,
                                          extra_headers={"Idempotency-Key": key})
    except jobclient.ApiError as e:
        jobclient.log("%s: %s (the job may or may not have been created)" % (PROG, e))
        jobclient.emit({"error": str(e), "idempotency_key": key,
                        "hint": "if the API honours Idempotency-Key, run submit.py again with the same "
                                "payload (same key): it returns the job already created instead of a "
                                "second one; otherwise check with the service before resubmitting"})
        return 3
    if status not in (200, 201, 202) or not isinstance(reply, dict) or not reply.get("id"):
        jobclient.log("%s: submission failed: HTTP %s" % (PROG, status))
        jobclient.emit({"error": "submission failed", "http_status": status, "body": reply})
        return 1
    job_id = str(reply["id"])
    # "id" repeats "job_id" for readers of the earlier output (hooks/post.py reads "id").
    jobclient.emit({"job_id": job_id, "id": job_id, "status": reply.get("status", "queued"),
                    "idempotency_key": key,
                    "next": "later: " + jobclient.result_hint(job_id)})
    jobclient.log("submitted job %s (Idempotency-Key %s)" % (job_id, key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
