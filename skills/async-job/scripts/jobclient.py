"""jobclient.py - shared helpers for submit.py, result.py and poll.py.

Talks to the job API at env API_BASE_URL (bearer token from env API_TOKEN,
optional, never printed). Standard library only; every request has a timeout.
Nothing here writes files.
"""

import json
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


class ApiError(Exception):
    def __init__(self, message, status=None, body=None):
        super().__init__(message)
        self.status = status
        self.body = body


def die(prog, msg, code=2):
    sys.stderr.write("%s: error: %s\n" % (prog, msg))
    sys.exit(code)


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def base_url(prog):
    base = os.environ.get("API_BASE_URL", "").rstrip("/")
    if not base:
        die(prog, "API_BASE_URL is not set (e.g. https://jobs.example.com/api)")
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        die(prog, "API_BASE_URL must start with http:// or https://")
    return base


def check_job_id(prog, job_id):
    if not job_id or len(job_id) > 128 or not all(c.isalnum() or c in "-_." for c in job_id) \
            or job_id in (".", ".."):
        die(prog, "invalid job id %r (letters, digits, '-', '_', '.')" % job_id)
    return urllib.parse.quote(job_id, safe="")


def call(method, url, body=None, timeout=10.0, max_bytes=262144, extra_headers=None):
    """One HTTP request; returns (status, parsed JSON or text, headers).

    HTTP error statuses are returned, not raised. Raises ApiError on network
    failure or timeout (message says which)."""
    headers = {"Accept": "application/json", "User-Agent": "skill-async-job/1.0"}
    headers.update(extra_headers or {})
    data = None
    if body is not None:
        # bytes are sent as they are (submit.py hashes exactly what it sends)
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    token = os.environ.get("API_TOKEN")
    if token:
        headers["Authorization"] = "Bearer " + token
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    handlers = [urllib.request.ProxyHandler({})] if host in LOOPBACK else []
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        resp = opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        resp = e
    except (socket.timeout, TimeoutError):
        raise ApiError("timed out after %gs waiting for %s %s" % (timeout, method, url))
    except urllib.error.URLError as e:
        r = e.reason
        if isinstance(r, (socket.timeout, TimeoutError)):
            raise ApiError("connect timed out after %gs (%s)" % (timeout, url))
        raise ApiError("cannot reach %s: %s" % (url, getattr(r, "strerror", None) or r))
    except OSError as e:
        raise ApiError("network error talking to %s: %s" % (url, e))
    try:
        raw = resp.read(max_bytes + 1)
    except (OSError, socket.timeout) as e:
        raise ApiError("error reading the response from %s: %s" % (url, e))
    finally:
        resp.close()
    status = getattr(resp, "status", None) or resp.code
    text = raw[:max_bytes].decode("utf-8", errors="replace")
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = text[:2000]
    return status, payload, resp.headers


def result_hint(job_id):
    return 'run_skill_script(name="async-job", script="scripts/result.py", args=["%s"])' % job_id


def emit(obj):
    json.dump(obj, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
