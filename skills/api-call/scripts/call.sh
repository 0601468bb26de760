#!/usr/bin/env bash
# call.sh - call an endpoint of the API at $API_BASE_URL with curl.
#
#   call.sh [--method M] ENDPOINT [JSON]
#
#   ENDPOINT  path under API_BASE_URL, e.g. /items or items/3
#   JSON      optional request body; when given, the default method is POST
#
# Environment: API_BASE_URL (required), API_TOKEN (optional; sent as
# "Authorization: Bearer ..." through curl's config on stdin, so it never
# appears in argv, on stdout or on stderr), API_MAX_TIME (per-attempt
# seconds, default 15, max 30), API_MAX_BYTES (stdout cap, default 65536).
#
# stdout: the response body (capped). stderr: one status line, plus a hint on
# errors. Exit: 0 = 2xx/3xx, 1 = HTTP 4xx/5xx, 2 = usage/config, 3 = network
# error or timeout (curl exit code shown).
set -u
set -o pipefail

die() { echo "call.sh: error: $*" >&2; exit 2; }
usage() { echo "usage: call.sh [--method GET|POST|PUT|PATCH|DELETE] ENDPOINT [JSON]" >&2; }

method=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --method|-X) [ $# -ge 2 ] || die "--method needs a value"; method=$(printf '%s' "$2" | tr '[:lower:]' '[:upper:]'); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; args+=("$@"); break ;;
    -*) usage; die "unknown option: $1" ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -ge 1 ] || { usage; die "ENDPOINT is required"; }
[ ${#args[@]} -le 2 ] || { usage; die "too many arguments (quote the JSON body as one argument)"; }
endpoint=${args[0]}
body=${args[1]-}
has_body=0; [ ${#args[@]} -eq 2 ] && has_body=1

[ -n "$method" ] || { [ $has_body -eq 1 ] && method=POST || method=GET; }
case "$method" in GET|POST|PUT|PATCH|DELETE|HEAD) ;; *) die "unsupported method: $method" ;; esac
if [ $has_body -eq 1 ]; then
  case "$method" in GET|HEAD) die "a JSON body cannot be sent with $method" ;; esac
  trimmed=$(printf '%s' "$body" | tr -d ' \t\r\n')
  case "$trimmed" in
    \{*\}|\[*\]) ;;
    *) die "JSON body must be an object {...} or array [...]" ;;
  esac
fi

base=${API_BASE_URL:-}
[ -n "$base" ] || die "API_BASE_URL is not set (e.g. https://api.example.com/v1)"
case "$base" in http://*|https://*) ;; *) die "API_BASE_URL must start with http:// or https://" ;; esac
case "$endpoint" in *://*|//*) die "ENDPOINT must be a path under API_BASE_URL, not a full URL" ;; esac
case "$endpoint" in *[[:space:]]*) die "ENDPOINT must not contain spaces (URL-encode them as %20)" ;; esac
url="${base%/}/${endpoint#/}"

max_time=${API_MAX_TIME:-15}
max_bytes=${API_MAX_BYTES:-65536}
case "$max_time" in ''|*[!0-9]*) die "API_MAX_TIME must be whole seconds" ;; esac
case "$max_bytes" in ''|*[!0-9]*) die "API_MAX_BYTES must be a number" ;; esac
[ "$max_time" -ge 1 ] && [ "$max_time" -le 30 ] || die "API_MAX_TIME must be between 1 and 30"

# Retries: only for methods that are safe to repeat. curl retries timeouts,
# 408, 429, 500, 502, 503 and 504, waits 1 s then doubles (or honours
# Retry-After). --retry-max-time 25: no new attempt starts after 25 s, and a
# Retry-After that would pass 25 s ends the retries at once. Worst case:
# 25 s + one last attempt (max 30 s) = 55 s. `timeout 80` is the backstop,
# below the skill's 90 s execution timeout.
retries=0
case "$method" in GET|HEAD|PUT|DELETE) retries=2 ;; esac
hard_limit=80

tmp=$(mktemp -d "${TMPDIR:-/tmp}/apicall.XXXXXX") || die "cannot create a temp dir"
trap 'rm -rf "$tmp"' EXIT

# curl config text on stdin: the token never shows up in argv (ps) or output.
cfg=""
if [ -n "${API_TOKEN:-}" ]; then
  esc=${API_TOKEN//\\/\\\\}
  esc=${esc//\"/\\\"}
  cfg="header = \"Authorization: Bearer ${esc}\""
fi

curl_args=(-q -sS -X "$method" "$url"
  --connect-timeout 5 --max-time "$max_time"
  --retry "$retries" --retry-max-time 25 --retry-connrefused
  --max-filesize 10485760
  -H "Accept: application/json" -A "skill-api-call/1.0"
  -o "$tmp/body" -D "$tmp/headers"
  -w '%{http_code}'
  --config -)
[ "$method" = HEAD ] && curl_args+=(-I)
[ $has_body -eq 1 ] && curl_args+=(-H "Content-Type: application/json" --data-binary "$body")
# Keep loopback traffic off any proxy from the environment.
case "$url" in http://127.0.0.1[:/]*|http://localhost[:/]*|http://\[::1\]*) curl_args+=(--noproxy '*') ;; esac

t0=$(date +%s%N)
meta=$(printf '%s\n' "$cfg" | timeout "$hard_limit" curl "${curl_args[@]}" 2>"$tmp/err")
rc=$?
elapsed=$(( ($(date +%s%N) - t0) / 1000000 ))
shown="$method /${endpoint#/}"

if [ $rc -ne 0 ]; then
  msg=$(grep -v '^ *$' "$tmp/err" | tail -n 1 | cut -c1-300)
  case $rc in
    124) hint="gave up after ${hard_limit}s in total (the server kept asking to retry)" ;;
    6)  hint="could not resolve the host in API_BASE_URL; check the URL" ;;
    7)  hint="connection refused: the service is down or the port is wrong" ;;
    28) hint="timed out (connect 5s, transfer ${max_time}s); the endpoint is slow or hung. Narrow the request, or raise API_MAX_TIME (max 30)" ;;
    35|60) hint="TLS/certificate problem talking to the server" ;;
    52) hint="the server closed the connection without answering" ;;
    56) hint="the connection was reset while receiving" ;;
    63) hint="response larger than 10 MiB; ask for less (paging, filters)" ;;
    *)  hint="curl failed" ;;
  esac
  echo "call.sh: $shown failed after ${elapsed} ms (curl exit $rc): $hint. ${msg}" >&2
  exit 3
fi

code=${meta:-000}
size=$(wc -c < "$tmp/body")
head -c "$max_bytes" "$tmp/body"
[ "$size" -gt 0 ] && [ "$(tail -c 1 "$tmp/body" | od -An -c | tr -d ' ')" != '\n' ] && echo
trunc=""
[ "$size" -gt "$max_bytes" ] && trunc=", body truncated to $max_bytes of $size bytes"

status_line="HTTP $code $shown (${elapsed} ms${trunc})"
if [ "$code" -ge 200 ] && [ "$code" -lt 400 ]; then
  loc=$(grep -i '^location:' "$tmp/headers" | tail -n 1 | tr -d '\r' | cut -c1-200)
  echo "$status_line${loc:+; $loc}" >&2
  exit 0
fi
case "$code" in
  400) hint="bad request: fix the JSON body or parameters (the body above says what is wrong)" ;;
  401) hint="unauthorized: API_TOKEN is missing, wrong or expired" ;;
  403) hint="forbidden: the token lacks permission; do not retry" ;;
  404) hint="not found: check ENDPOINT and the id" ;;
  405) hint="method not allowed: use a different --method for this endpoint" ;;
  409) hint="conflict: re-read the resource and retry with current data" ;;
  413) hint="request body too large" ;;
  422) hint="validation failed: check field names and types" ;;
  429) hint="rate limited: wait (see Retry-After) before calling again; do not loop" ;;
  500) hint="server error: retried already; report it or try later" ;;
  502|503|504) hint="upstream unavailable: retried already; try again later" ;;
  *) hint="see references/errors.md" ;;
esac
echo "$status_line: $hint" >&2
exit 1
