"""httpclient.py - a small, bounded HTTP client on top of urllib (stdlib only).

Imported by fetch.py (a sibling module in the same scripts/ folder). Every call
is bounded in time:

  * each attempt has a socket timeout (connect, and each read),
  * the whole call has a deadline (all attempts + all waits),
  * retries are bounded, with exponential backoff + jitter, on 429/5xx and on
    connection errors; every wait is at most max_backoff: a Retry-After that
    asks for longer ends the call with a clear error instead,
  * a line goes to stderr before each attempt ("attempt 1/3: GET URL (timeout 10 s)"),
  * the body is read in chunks and capped at max_bytes (a response that never
    ends cannot keep us reading forever),
  * a heartbeat line goes to stderr while we wait, so a stall detector watching
    the script's output knows it is alive.

Progress and diagnostics go to stderr; nothing here writes to stdout.
"""

import email.utils
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

RETRY_STATUS = {429, 500, 502, 503, 504}
# Non-idempotent methods are retried only when the server said it did not
# process the request (429, 503) or the connection was never established.
SAFE_RETRY_STATUS_NON_IDEMPOTENT = {429, 503}
IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"}
KEEP_HEADERS = ("content-type", "content-length", "content-encoding", "location",
                "retry-after", "etag", "last-modified", "cache-control",
                "www-authenticate", "x-request-id", "x-ratelimit-remaining",
                "x-ratelimit-reset")
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
CHUNK = 65536


class FetchError(Exception):
    """No usable response: bad input, network failure, timeout, or budget spent."""

    def __init__(self, message, kind="network", attempts=0, elapsed_ms=0):
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.elapsed_ms = elapsed_ms


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class _Heartbeat:
    """Print 'still waiting' to stderr every `every` seconds until stopped."""

    def __init__(self, what, every):
        self.what, self.every = what, every
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = None

    def __enter__(self):
        if self.every and self.every > 0:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.every):
            log("still waiting for %s (%.0fs)" % (self.what, time.monotonic() - self._t0))

    def __exit__(self, *exc):
        self._stop.set()
        return False


def parse_retry_after(value, now=None):
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def backoff_delay(retry_no, base, cap):
    """Exponential backoff with jitter: base*2^(n-1), +/-25% jitter, never above cap."""
    d = base * (2 ** (retry_no - 1)) * random.uniform(0.75, 1.25)
    return round(min(cap, d), 2)


def _display_url(url):
    """The URL without user:password@ (it goes to stderr, which is streamed)."""
    p = urllib.parse.urlsplit(url)
    if "@" not in p.netloc:
        return url
    return urllib.parse.urlunsplit((p.scheme, p.netloc.rpartition("@")[2], p.path, p.query, p.fragment))


def _opener(url):
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host in LOOPBACK:
        # Never send loopback traffic through an HTTP proxy from the env.
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _classify(exc):
    """(message, retryable, kind) for an exception raised by urlopen/read."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return "connect timed out", True, "timeout"
        if isinstance(reason, socket.gaierror):
            temporary = reason.errno == socket.EAI_AGAIN
            return "DNS lookup failed: %s" % (reason.strerror or reason), temporary, "dns"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused", True, "network"
        if isinstance(reason, OSError):
            return "connection error: %s" % (reason.strerror or reason), True, "network"
        return "URL error: %s" % reason, False, "network"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        # The server accepted the connection and got the request but did not
        # answer in time. Retrying usually just waits again: not retried
        # unless retry_on_timeout is set.
        return "read timed out (server accepted but did not answer)", None, "timeout"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return "connection reset by server", True, "network"
    if isinstance(exc, OSError):
        return "I/O error: %s" % exc, True, "network"
    return "%s: %s" % (type(exc).__name__, exc), False, "network"


def _read_capped(resp, max_bytes, deadline):
    """Read up to max_bytes (+1 to detect truncation) before the deadline."""
    buf = bytearray()
    while len(buf) <= max_bytes:
        if time.monotonic() > deadline:
            return bytes(buf), "deadline reached while reading the body"
        chunk = resp.read(min(CHUNK, max_bytes + 1 - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf), None


def _decode(raw, content_type):
    charset = "utf-8"
    for part in (content_type or "").split(";")[1:]:
        k, _, v = part.strip().partition("=")
        if k.lower() == "charset" and v:
            charset = v.strip('"').lower()
    if b"\x00" in raw[:4096]:
        return None
    try:
        return raw.decode(charset, errors="replace")
    except LookupError:
        return raw.decode("utf-8", errors="replace")


def request(url, method="GET", headers=None, data=None, timeout=10.0, retries=2,
            max_bytes=65536, deadline_s=60.0, backoff=0.5, max_backoff=8.0,
            retry_on_timeout=False, heartbeat=10.0):
    """Perform one HTTP request with bounded retries.

    Returns a dict: status, reason, url, headers (subset), body (str or None),
    truncated, binary, bytes, elapsed_ms, attempts, [body_error].
    HTTP error statuses are returned, not raised (after retries for 429/5xx).
    Raises FetchError when no response could be obtained.
    """
    method = method.upper()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError("only absolute http:// or https:// URLs are allowed, got %r" % url, "usage")
    if timeout <= 0 or retries < 0 or max_bytes < 0 or deadline_s <= 0:
        raise FetchError("timeout and deadline must be > 0, retries and max_bytes >= 0", "usage")

    t0 = time.monotonic()
    deadline = t0 + deadline_s
    attempts_total = retries + 1
    opener = _opener(url)
    hdrs = {"User-Agent": "skill-api-fetch/1.0", "Accept": "*/*"}
    hdrs.update(headers or {})
    shown_url = _display_url(url)

    def elapsed_ms():
        return int((time.monotonic() - t0) * 1000)

    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0.05:
            raise FetchError("deadline of %gs spent before attempt %d" % (deadline_s, attempt),
                             "timeout", attempt - 1, elapsed_ms())
        per_try = min(timeout, remaining)
        log("attempt %d/%d: %s %s (timeout %g s)" % (attempt, attempts_total, method, shown_url,
                                                     round(per_try, 1)))
        req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
        why, wait_hint, retryable, resp = None, None, False, None
        try:
            with _Heartbeat("%s %s" % (method, parts.netloc), heartbeat):
                resp = opener.open(req, timeout=per_try)
        except urllib.error.HTTPError as e:
            resp = e  # an HTTP response with an error status
        except Exception as e:  # noqa: BLE001 - classified below
            why, retryable, kind = _classify(e)
            if retryable is None:
                retryable = retry_on_timeout
            if not retryable or attempt >= attempts_total:
                hint = ""
                if kind == "timeout" and not retry_on_timeout and attempt < attempts_total:
                    hint = " (read timeouts are not retried; pass --retry-on-timeout to retry)"
                raise FetchError("%s after %d attempt(s) in %.1fs%s" % (
                    why, attempt, (time.monotonic() - t0), hint), kind, attempt, elapsed_ms())

        if resp is not None:
            status = resp.status if hasattr(resp, "status") else resp.code
            retry_ok = RETRY_STATUS if method in IDEMPOTENT else SAFE_RETRY_STATUS_NON_IDEMPOTENT
            if status in retry_ok and attempt < attempts_total:
                why = "HTTP %d" % status
                wait_hint = parse_retry_after(resp.headers.get("Retry-After"))
                retryable = True
                resp.close()  # discard the body; do not wait on it
            else:
                try:
                    with _Heartbeat("response body", heartbeat):
                        raw, body_error = _read_capped(resp, max_bytes, deadline)
                except Exception as e:  # noqa: BLE001 - timeout mid-body
                    raw, body_error = b"", _classify(e)[0] + " while reading the body"
                finally:
                    resp.close()
                truncated = len(raw) > max_bytes
                raw = raw[:max_bytes]
                ctype = resp.headers.get("Content-Type", "")
                text = _decode(raw, ctype)
                if truncated and text and text.endswith("\ufffd"):
                    text = text.rstrip("\ufffd")
                out = {
                    "status": status,
                    "reason": getattr(resp, "reason", "") or "",
                    "url": resp.geturl() if hasattr(resp, "geturl") else url,
                    "headers": {k: v for k, v in ((h, resp.headers.get(h)) for h in KEEP_HEADERS) if v},
                    "body": text,
                    "truncated": truncated or bool(body_error),
                    "binary": text is None,
                    "bytes": len(raw),
                    "elapsed_ms": elapsed_ms(),
                    "attempts": attempt,
                }
                if body_error:
                    out["body_error"] = body_error
                return out

        # Retry: compute the wait, keep it inside the backoff cap and the deadline.
        # Every wait is at most max_backoff, so the budget printed by fetch.py
        # (timeout x attempts + max_backoff x retries) is a true upper bound.
        if wait_hint is not None:
            delay, src = wait_hint, "Retry-After"
            if delay > max_backoff:
                raise FetchError("%s; the server asked for a %gs wait (Retry-After), more than the %gs "
                                 "backoff cap; wait that long, then call again (do not loop)"
                                 % (why, delay, max_backoff), "retry_after", attempt, elapsed_ms())
        else:
            delay, src = backoff_delay(attempt, backoff, max_backoff), "backoff"
        remaining = deadline - time.monotonic()
        if delay >= remaining - 0.1:
            raise FetchError("%s; the next attempt would need a %.1fs wait (%s) but only %.1fs of the "
                             "%gs deadline is left" % (why, delay, src, max(0, remaining), deadline_s),
                             "timeout", attempt, elapsed_ms())
        log("%s; waiting %gs (%s) before attempt %d/%d" % (why, delay, src, attempt + 1, attempts_total))
        _sleep_with_progress(delay, heartbeat)


def _sleep_with_progress(delay, every):
    end = time.monotonic() + delay
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        step = min(left, every) if every and every > 0 else left
        time.sleep(step)
        if end - time.monotonic() > 0:
            log("waiting, %.0fs left before next attempt" % (end - time.monotonic()))
