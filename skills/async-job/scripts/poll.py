#!/usr/bin/env python3
"""poll.py - "await": wait for a job, bounded. The last resort, not the usual path.

    poll.py JOB_ID [--interval S] [--max-wait S] [--timeout S]

The usual path is submit.py (returns the job id at once) and, later,
result.py JOB_ID (answers at once: the result, or "call again later"). Use
poll.py only when the answer is needed within this call and the job is known
to be short: it holds the call open for up to --max-wait seconds.

Prints a heartbeat line on stderr at every poll (so the stall detector sees
the script is alive), and one JSON object on stdout at the end.
Exit: 0 done, 1 failed (or HTTP error), 2 bad arguments, 3 network error,
4 still running when --max-wait ran out (fetch it later with result.py).
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import jobclient  # noqa: E402

PROG = "poll.py"
DONE = {"done", "succeeded", "success", "completed", "complete", "finished"}
FAILED = {"failed", "error", "cancelled", "canceled", "aborted"}
MAX_INTERVAL = 15.0      # stays under the 30 s stall_timeout, with margin
# The execution timeout of scripts/poll.py in SKILL.md (execution:
# scripts/poll.py: timeout: 300); tests/fakeapi/run_examples.sh checks they
# agree. --max-wait must end 30 s before it, to answer instead of being killed.
CEILING_S = 300
MAX_WAIT_LIMIT = CEILING_S - 30.0
MAX_NET_ERRORS = 3


class Parser(argparse.ArgumentParser):
    def error(self, message):
        jobclient.die(PROG, "%s (usage: poll.py JOB_ID [--interval S] [--max-wait S])" % message)


def main(argv):
    ap = Parser(description="Poll a job until done/failed or --max-wait.")
    ap.add_argument("job_id")
    ap.add_argument("--interval", type=float, default=2.0,
                    help="first wait between polls, grows x1.5 up to 15 s (default 2)")
    ap.add_argument("--max-wait", type=float, default=240.0,
                    help="give up after this many seconds (default 240, max 270)")
    ap.add_argument("--timeout", type=float, default=10.0, help="per-request timeout (default 10)")
    a = ap.parse_args(argv)
    if not 0.2 <= a.interval <= MAX_INTERVAL:
        jobclient.die(PROG, "--interval must be between 0.2 and %g seconds" % MAX_INTERVAL)
    if not 0 < a.max_wait <= MAX_WAIT_LIMIT:
        jobclient.die(PROG, "--max-wait must be in (0, %g] (poll.py's execution timeout is %d s); "
                            "for longer jobs fetch the result later with result.py" % (MAX_WAIT_LIMIT, CEILING_S))
    if not 0 < a.timeout <= 12:
        jobclient.die(PROG, "--timeout must be in (0, 12] (sleep 15 s + request 12 s < stall_timeout 30 s)")
    quoted = jobclient.check_job_id(PROG, a.job_id)
    url = "%s/jobs/%s" % (jobclient.base_url(PROG), quoted)

    t0 = time.monotonic()
    deadline = t0 + a.max_wait
    interval = a.interval
    polls = 0
    net_errors = 0
    last = None
    while True:
        polls += 1
        elapsed = time.monotonic() - t0
        try:
            status, body, headers = jobclient.call("GET", url, timeout=min(a.timeout, max(1.0, deadline - time.monotonic() + 1)))
            net_errors = 0
        except jobclient.ApiError as e:
            net_errors += 1
            jobclient.log("poll %d (%.1fs): network error %d/%d: %s" % (polls, elapsed, net_errors, MAX_NET_ERRORS, e))
            if net_errors >= MAX_NET_ERRORS:
                jobclient.emit({"job_id": a.job_id, "status": "unknown", "error": str(e), "polls": polls,
                                "elapsed_s": round(time.monotonic() - t0, 1)})
                return 3
            status, body, headers = None, None, {}
        if status == 404:
            jobclient.log("poll %d: job %s not found" % (polls, a.job_id))
            jobclient.emit({"job_id": a.job_id, "status": "not_found", "polls": polls})
            return 1
        if status is not None and status >= 400 and status not in (429, 502, 503, 504):
            jobclient.log("poll %d: HTTP %d" % (polls, status))
            jobclient.emit({"job_id": a.job_id, "status": "error", "http_status": status, "body": body,
                            "polls": polls})
            return 1
        if isinstance(body, dict) and status is not None and status < 400:
            last = body
            state = str(body.get("status", "unknown")).lower()
            progress = body.get("progress")
            jobclient.log("poll %d (%.1fs): %s%s" % (polls, time.monotonic() - t0, state,
                                                     (" %s%%" % progress) if progress is not None else ""))
            if state in DONE or state in FAILED:
                out = {"job_id": a.job_id, "status": state, "polls": polls,
                       "elapsed_s": round(time.monotonic() - t0, 1)}
                if state in DONE:
                    out["next"] = jobclient.result_hint(a.job_id)
                    jobclient.emit(out)
                    return 0
                out["error"] = body.get("error") or body.get("message") or "job failed"
                jobclient.emit(out)
                return 1
        elif status is not None:
            jobclient.log("poll %d (%.1fs): HTTP %d, will poll again" % (polls, time.monotonic() - t0, status))

        # Next wait: server hint (Retry-After) if any, else growing interval with jitter.
        hint = headers.get("Retry-After") if headers else None
        wait = float(hint) if hint and hint.strip().isdigit() else interval * random.uniform(0.9, 1.1)
        wait = min(wait, MAX_INTERVAL)
        interval = min(interval * 1.5, MAX_INTERVAL)
        remaining = deadline - time.monotonic()
        if remaining <= wait:
            state = str((last or {}).get("status", "unknown")).lower()
            jobclient.log("poll %d: still %s after --max-wait %gs; fetch the result later" % (polls, state, a.max_wait))
            jobclient.emit({"job_id": a.job_id, "status": state, "finished": False, "polls": polls,
                            "elapsed_s": round(time.monotonic() - t0, 1),
                            "next": "later (do not loop on poll.py): " + jobclient.result_hint(a.job_id)})
            return 4
        time.sleep(wait)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
