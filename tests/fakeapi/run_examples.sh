#!/usr/bin/env bash
# run_examples.sh - run the example skills' scripts and hooks against fakeapi
# and check outputs and exit codes. Starts fakeapi on a free port and stops
# it (by PID) on exit. Needs python3, bash, curl, git (optional).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skills="$root/skills"
tmp=$(mktemp -d)
pass=0; fail=0
fa_pid=""
cleanup() { [ -n "$fa_pid" ] && kill "$fa_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# The lifetime only bounds a fakeapi this script failed to stop (cleanup
# stops it by PID); a loaded machine runs these checks for more than 300 s.
python3 "$here/fakeapi.py" --port 0 --lifetime 1800 > "$tmp/fa.out" 2> "$tmp/fa.err" &
fa_pid=$!
for _ in $(seq 100); do grep -q '^PORT ' "$tmp/fa.out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/^PORT/{print $2; exit}' "$tmp/fa.out")
[ -n "$port" ] || { echo "fakeapi did not start"; cat "$tmp/fa.err"; exit 1; }
B="http://127.0.0.1:$port"
echo "fakeapi on $B (pid $fa_pid)"

# run SKILL EXPECTED_RC GREP_STDOUT [ENV...] -- CMD...   (cwd = skill dir, clean env)
check() {
  local name=$1 skill=$2 want_rc=$3 pattern=$4; shift 4
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0=$(date +%s%N)
  ( cd "$skills/$skill" && env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 TMPDIR="$tmp" "${envs[@]}" \
      timeout 120 "$@" < /dev/null ) > "$tmp/out" 2> "$tmp/err"
  local rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ "$rc" = "$want_rc" ] && grep -Eq -- "$pattern" "$tmp/out" "$tmp/err"; then
    pass=$((pass + 1)); printf 'PASS %-44s rc=%s %6d ms\n' "$name" "$rc" "$ms"
  else
    fail=$((fail + 1)); printf 'FAIL %-44s rc=%s (want %s) %d ms\n' "$name" "$rc" "$want_rc" "$ms"
    sed 's/^/   out: /' "$tmp/out" | head -n 5 | cut -c1-400; sed 's/^/   err: /' "$tmp/err" | head -n 5 | cut -c1-400
  fi
}
PY="python3 -E -s"
# expect_that NAME 'SHELL CONDITION': a check on what the previous run left in
# $tmp/out and $tmp/err (evaluated in this shell)
expect_that() {
  if eval "$2"; then pass=$((pass + 1)); printf 'PASS %-44s\n' "$1"
  else fail=$((fail + 1)); printf 'FAIL %-44s\n' "$1"; sed 's/^/   err: /' "$tmp/err" | head -n 5; fi
}
# skill_timeout SKILL SCRIPT: the execution timeout SKILL.md declares for SCRIPT
skill_timeout() {
  awk -v s="  $2:" '$0 == s {f = 1; next} f && /^  [^ ]/ {f = 0} f && $1 == "timeout:" {print $2; exit}' \
    "$skills/$1/SKILL.md"
}

# syntax
for f in $(find "$skills" "$root/hooks" "$here" -name '*.py'); do
  python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" \
    && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL syntax $f"; }
done
for f in $(find "$skills" "$here" -name '*.sh'); do
  bash -n "$f" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL syntax $f"; }
done

# csv-profile
check "csv sample" csv-profile 0 '"rows":10' -- $PY scripts/profile.py assets/sample.csv
check "csv missing file" csv-profile 2 'file not found' -- $PY scripts/profile.py nope.csv
check "csv max-rows" csv-profile 0 '"rows_truncated":true' -- $PY scripts/profile.py assets/sample.csv --max-rows 2
# text-stats
printf '今天天气很好。Hello world!\n' > "$tmp/t.txt"
check "text file cjk" text-stats 0 '"cjk_chars":6' -- $PY scripts/stats.py "$tmp/t.txt"
check "text no arg" text-stats 2 'required' -- $PY scripts/stats.py
# repo-digest
check "digest root" repo-digest 0 'Files by extension' -- bash scripts/digest.sh "$root"
check "digest bad dir" repo-digest 2 'no such directory' -- bash scripts/digest.sh /nonexistent
# api-fetch (and async-job, api-call below): no file may appear in the skill folders
touch "$tmp/skills-start"
check "fetch ok" api-fetch 0 '"status": 200' -- $PY scripts/fetch.py "$B/items"
expect_that "fetch budget is the first stderr line" \
  'head -n 1 "$tmp/err" | grep -qx "budget: timeout 10 s × (retries 2 + 1) + backoff cap 8 s × 2 = 46 s (ceiling 90 s)"'
expect_that "fetch ceiling = SKILL.md timeout" \
  'c=$(skill_timeout api-fetch scripts/fetch.py); [ -n "$c" ] && head -n 1 "$tmp/err" | grep -q "(ceiling $c s)$"'
check "fetch flaky retries" api-fetch 0 '"attempts": 3' -- $PY scripts/fetch.py "$B/flaky?key=rx1"
expect_that "fetch a line before each attempt" \
  '[ "$(grep -cE "^attempt [123]/3: GET http://127\.0\.0\.1:[0-9]+/flaky\?key=rx1 \(timeout 10 s\)$" "$tmp/err")" = 3 ]'
check "fetch over budget refused" api-fetch 2 'refusing to start' -- $PY scripts/fetch.py "$B/items" --timeout 60 --retries 5
expect_that "fetch over budget: budget first, no attempt" \
  'head -n 1 "$tmp/err" | grep -q "= 400 s (ceiling 90 s)" && ! grep -q "^attempt" "$tmp/err" && [ ! -s "$tmp/out" ]'
check "fetch ratelimit retry-after" api-fetch 0 'HTTP 429; waiting 1s \(Retry-After\) before attempt 2/3' -- $PY scripts/fetch.py "$B/ratelimit?key=rx1"
check "fetch retry-after over backoff cap" api-fetch 3 '"kind": "retry_after"' -- $PY scripts/fetch.py "$B/ratelimit?key=rx2" --backoff-cap 0.5
check "fetch hang timeout 2" api-fetch 3 'read timed out' -- $PY scripts/fetch.py "$B/hang" --timeout 2
check "fetch refused" api-fetch 3 'connection refused' -- $PY scripts/fetch.py "http://127.0.0.1:1/" --retries 1
check "fetch 404" api-fetch 1 '"status": 404' -- $PY scripts/fetch.py "$B/items/999"
# rest-client
R=(REST_BASE_URL="$B" REST_TOKEN=testtoken)
check "rest list" rest-client 0 '"ok": true' "${R[@]}" -- $PY scripts/rest.py GET /items
check "rest post" rest-client 0 '"status": 201' "${R[@]}" -- $PY scripts/rest.py POST /items --json '{"name":"t"}'
check "rest internal with token" rest-client 0 'Ada' "${R[@]}" -- $PY scripts/rest.py GET /internal/users
check "rest no base url" rest-client 2 'no base URL' -- $PY scripts/rest.py GET /items
check "rest timeout" rest-client 3 'timed out' "${R[@]}" -- $PY scripts/rest.py GET /hang --timeout 1
expect_that "rest ceiling = SKILL.md timeout" \
  'grep -qx "CEILING_S = $(skill_timeout rest-client scripts/rest.py)" "$skills/rest-client/scripts/rest.py"'
check "rest --timeout over the ceiling refused" rest-client 2 'must be in \(0, 30\]: the skill.s execution timeout is 45 s' "${R[@]}" -- $PY scripts/rest.py GET /items --timeout 31
check "rest flaky: one retry, then the 503" rest-client 1 'attempt 2/2 after 1s: HTTP 503' "${R[@]}" -- $PY scripts/rest.py GET '/flaky?key=rr1'
# rest-client filters at the source. json_is NAME EXPR: stdout of the last
# run is one JSON value d (json.load refuses trailing data) and the Python
# expression EXPR holds for it.
json_is() {
  if python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$tmp/out" "$2" 2> "$tmp/json_is.err"; then
    pass=$((pass + 1)); printf 'PASS %-44s\n' "$1"
  else
    fail=$((fail + 1)); printf 'FAIL %-44s\n' "$1"; head -c 600 "$tmp/out" | sed 's/^/   out: /'; echo
    sed 's/^/   err: /' "$tmp/json_is.err" | tail -n 3
  fi
}
RO="GET /orders"
check "rest orders unfiltered" rest-client 0 'showing 25 of 500 items' "${R[@]}" -- $PY scripts/rest.py $RO
json_is "rest orders unfiltered: parsed, 25 rows" 'd["data"]["total"] == 500 and len(d["data"]["data"]) == 25 and "_limited" not in d'
check "rest count-only envelope" rest-client 0 '^\{"total": 500\}$' "${R[@]}" -- $PY scripts/rest.py $RO --count-only
expect_that "rest count-only prints that and nothing else" '[ "$(cat "$tmp/out")" = "{\"total\": 500}" ] && [ ! -s "$tmp/err" ]'
check "rest count-only: the API's total, not the page" rest-client 0 '^\{"total": 500\}$' "${R[@]}" -- $PY scripts/rest.py GET '/orders?per_page=5' --count-only
check "rest count-only bare list" rest-client 0 '^\{"total": 7\}$' "${R[@]}" -- $PY scripts/rest.py GET '/orders?shape=bare&per_page=7' --count-only
check "rest count-only envelope count field" rest-client 0 '^\{"total": 2\}$' "${R[@]}" -- $PY scripts/rest.py GET /internal/teams --count-only
check "rest count-only named list, no total" rest-client 0 '^\{"total": 9\}$' "${R[@]}" -- $PY scripts/rest.py GET '/orders?shape=named&per_page=9' --count-only
check "rest count-only list beside an object refused" rest-client 4 'name it with --rows' "${R[@]}" -- $PY scripts/rest.py GET '/orders?shape=meta' --count-only
json_is "rest count-only refused: JSON error on stdout" 'd["ok"] is False and "--rows" in d["error"] and "data" not in d'
check "rest count-only --rows names the list" rest-client 0 '^\{"total": 500\}$' "${R[@]}" -- $PY scripts/rest.py GET '/orders?shape=meta' --count-only --rows orders
check "rest count-only on a record refused" rest-client 4 'lists \(tags\) are not called' "${R[@]}" -- $PY scripts/rest.py GET /items/1 --count-only
check "rest --fields on a record refused" rest-client 4 'no list of rows; it is an object with keys: status, time' "${R[@]}" -- $PY scripts/rest.py GET /health --fields status
check "rest --rows naming a scalar refused" rest-client 4 'that member is a JSON number, not a list' "${R[@]}" -- $PY scripts/rest.py $RO --rows page --limit 1
check "rest count-only over --max-bytes refused" rest-client 4 'over --max-bytes \(1000\)' "${R[@]}" -- $PY scripts/rest.py $RO --count-only --max-bytes 1000
check "rest count-only: an HTTP error shown whole" rest-client 1 '"status": 404' "${R[@]}" -- $PY scripts/rest.py GET /items/999 --count-only
check "rest fields nested + limit" rest-client 0 '"_limited": \{"kept": 2, "total": 500\}' "${R[@]}" -- \
  $PY scripts/rest.py $RO --fields 'id, customer.name,customer.address.city,lines.sku' --limit 2
json_is "rest fields: dotted paths keep the nesting, envelope kept" 'd["data"]["data"][0] == {"id": 1,
  "customer": {"name": "Customer 001", "address": {"city": "Lyon"}}, "lines": [{"sku": "SKU-0007"}, {"sku": "SKU-0020"}]}
  and [r["id"] for r in d["data"]["data"]] == [1, 2] and d["data"]["total"] == 500 and d["data"]["page"] == 1
  and all(list(r) == ["id", "customer", "lines"] for r in d["data"]["data"]) and "notes" not in d'
check "rest fields: a whole member beats its paths" rest-client 0 '"ok": true' "${R[@]}" -- \
  $PY scripts/rest.py $RO --fields customer.name,customer --limit 1
json_is "rest fields: whole customer kept" 'd["data"]["data"][0]["customer"]["address"]["country"] == "FR"'
check "rest fields: missing keys left out" rest-client 0 'no row has nope; rows have: id, number, status' "${R[@]}" -- \
  $PY scripts/rest.py $RO --fields id,nope,customer.nope --limit 3
json_is "rest fields: missing keys are not null" 'd["data"]["data"] == [{"id": 1}, {"id": 2}, {"id": 3}]'
check "rest fields bare list, rows capped by --max-items" rest-client 0 'data: showing 25 of 100 items' "${R[@]}" -- \
  $PY scripts/rest.py GET '/orders?shape=bare&per_page=100' --fields number
json_is "rest fields bare list: only the field" 'isinstance(d["data"], list) and len(d["data"]) == 25
  and d["data"][0] == {"number": "SO-10001"} and "_limited" not in d'
check "rest limit alone" rest-client 0 '"_limited": \{"kept": 3, "total": 500\}' "${R[@]}" -- $PY scripts/rest.py $RO --limit 3
json_is "rest limit: whole rows, envelope total unchanged" 'len(d["data"]["data"]) == 3 and d["data"]["total"] == 500
  and d["data"]["data"][2]["customer"]["name"] == "Customer 003" and d["data"]["per_page"] == 500'
check "rest limit over --max-items" rest-client 0 '"kept": 40' "${R[@]}" -- $PY scripts/rest.py $RO --limit 40 --fields id
json_is "rest limit replaces --max-items for the rows" 'len(d["data"]["data"]) == 40 and "notes" not in d'
check "rest limit above the row count" rest-client 0 '"ok": true' "${R[@]}" -- $PY scripts/rest.py GET '/orders?per_page=4' --limit 10
json_is "rest limit above the rows: no _limited" 'len(d["data"]["data"]) == 4 and "_limited" not in d'
check "rest lone surrogate from the API" rest-client 0 '"status": 201' "${R[@]}" -- $PY scripts/rest.py POST /items --json '{"name": "\ud800x"}'
json_is "rest lone surrogate: stdout is still JSON" 'd["data"]["name"] == "\ud800x"'
# the output budget: the warning names the flags and an N that fits; output still printed
check "rest over budget warns, still prints" rest-client 0 'over SKILL_OUTPUT_BUDGET_BYTES=30000' "${R[@]}" SKILL_OUTPUT_BUDGET_BYTES=30000 -- \
  $PY scripts/rest.py $RO --limit 200
json_is "rest over budget: all 200 rows printed" 'len(d["data"]["data"]) == 200'
expect_that "rest over budget: names --count-only, --fields, --limit N" \
  'grep -q -- "--count-only" "$tmp/err" && grep -q -- "--fields with only the keys you need (rows have: id, number," "$tmp/err" &&
   grep -qE -- "--limit [0-9]+ \(fits\)" "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 1 ]'
fit=$(grep -oE -- '--limit [0-9]+ \(fits\)' "$tmp/err" | grep -oE '[0-9]+')
check "rest the suggested --limit fits" rest-client 0 '"ok": true' "${R[@]}" SKILL_OUTPUT_BUDGET_BYTES=30000 -- \
  $PY scripts/rest.py $RO --limit "${fit:-0}"
expect_that "rest suggested --limit: at most 30000 bytes, no warning" '[ "$(wc -c < "$tmp/out")" -le 30000 ] && [ ! -s "$tmp/err" ]'
check "rest the suggested --limit is the largest" rest-client 0 'over SKILL_OUTPUT_BUDGET_BYTES=30000' "${R[@]}" SKILL_OUTPUT_BUDGET_BYTES=30000 -- \
  $PY scripts/rest.py $RO --limit "$(( ${fit:-0} + 1 ))"
check "rest no budget variable, no warning" rest-client 0 '"kept": 200' "${R[@]}" -- $PY scripts/rest.py $RO --limit 200
expect_that "rest no budget variable: stderr empty" '[ ! -s "$tmp/err" ] && [ "$(wc -c < "$tmp/out")" -gt 30000 ]'
check "rest over budget with --fields: a smaller --limit" rest-client 0 '"ok": true' "${R[@]}" SKILL_OUTPUT_BUDGET_BYTES=10000 -- \
  $PY scripts/rest.py $RO --fields id,customer.name --limit 500
expect_that "rest over budget with --fields: no --fields tip" \
  'grep -qE -- "--limit [0-9]+ \(fits\)" "$tmp/err" && ! grep -q -- "--fields with only" "$tmp/err"'
check "rest under budget, no warning" rest-client 0 '"ok": true' "${R[@]}" SKILL_OUTPUT_BUDGET_BYTES=30000 -- \
  $PY scripts/rest.py $RO --fields id,status --limit 500
expect_that "rest under budget: stderr empty" '[ ! -s "$tmp/err" ]'
# bad flags: a clear error, exit 2, nothing on stdout
for bad in "--limit -1|--limit must be a whole number" "--limit x|--limit must be a whole number" \
           "--limit 0|--limit must be a whole number" "--fields |--fields needs field names" \
           "--fields a,,b|--fields needs field names" "--fields a..b|has an empty part" \
           "--count-only --fields id|cannot be combined with --fields" \
           "--count-only --limit 2|cannot be combined with --limit" "--rows |--rows needs the name" \
           "--rows data|--rows only says where"; do
  flags=${bad%%|*}; want=${bad#*|}
  # shellcheck disable=SC2086 # the flags split into words; --fields '' and --rows '' keep an empty value
  set -- $flags; [ $# = 1 ] && set -- "$1" ""
  check "rest bad flag: $flags" rest-client 2 "^rest.py: error: .*$want" "${R[@]}" -- $PY scripts/rest.py $RO "$@"
  expect_that "rest bad flag: $flags: stdout empty" '[ ! -s "$tmp/out" ]'
done
# api-call
A=(API_BASE_URL="$B" API_TOKEN=testtoken)
check "call get" api-call 0 'HTTP 200' "${A[@]}" -- bash scripts/call.sh /items
check "call post" api-call 0 'HTTP 201' "${A[@]}" -- bash scripts/call.sh /items '{"name":"c"}'
check "call 401 without token" api-call 1 'HTTP 401' API_BASE_URL="$B" -- bash scripts/call.sh /internal/users
check "call flaky" api-call 0 '"attempt": 3' "${A[@]}" -- bash scripts/call.sh '/flaky?key=cx1'
check "call hang (API_MAX_TIME=1)" api-call 3 'curl exit 28' "${A[@]}" API_MAX_TIME=1 -- bash scripts/call.sh /hang
check "call refused" api-call 3 'curl exit 7' API_BASE_URL=http://127.0.0.1:1 -- bash scripts/call.sh /x
check "call token not echoed" api-call 0 'HTTP 200' "${A[@]}" -- bash scripts/call.sh /internal/users
if grep -q testtoken "$tmp/out" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL token appeared in output"; fi
expect_that "call bounded (connect, max-time, retries)" \
  'grep -q -- "--connect-timeout 5 --max-time \"\$max_time\"" "$skills/api-call/scripts/call.sh" &&
   grep -q -- "--retry \"\$retries\" --retry-max-time 25" "$skills/api-call/scripts/call.sh"'
# async-job
J=(API_BASE_URL="$B")
check "job submit" async-job 0 '"job_id": "job-' "${J[@]}" -- $PY scripts/submit.py --payload '{"x":1}'
job=$(grep -o 'job-[0-9]*' "$tmp/out" | head -n 1)
expect_that "job submit: default key = sha256(body)" \
  'grep -q "\"idempotency_key\": \"$(printf "%s" "{\"x\":1}" | sha256sum | cut -c1-64)\"" "$tmp/out"'
check "job result before done (call later)" async-job 0 '"ready": false.*call again later' "${J[@]}" -- $PY scripts/result.py "$job"
check "job poll" async-job 0 '"status": "done"' "${J[@]}" -- $PY scripts/poll.py "$job" --interval 0.3
check "job poll progress on stderr" async-job 0 'poll 1 ' "${J[@]}" -- $PY scripts/poll.py "$job" --interval 0.3
check "job result" async-job 0 '"rows": 3' "${J[@]}" -- $PY scripts/result.py "$job"
check "job max-wait" async-job 4 '"finished": false.*result\.py' "${J[@]}" -- sh -c "$PY scripts/poll.py \$($PY scripts/submit.py 2>/dev/null | grep -o 'job-[0-9]*' | head -n 1) --interval 1 --max-wait 1.5"
check "job max-wait over ceiling refused" async-job 2 'execution timeout is 300 s' "${J[@]}" -- $PY scripts/poll.py job-1 --max-wait 300
expect_that "job poll ceiling = SKILL.md timeout" \
  'grep -qx "CEILING_S = $(skill_timeout async-job scripts/poll.py)" "$skills/async-job/scripts/poll.py"'
# submit now, fetch by key later: result.py only, never poll.py
check "job submit, then result by key later" async-job 0 '"ready": true.*"rows": 3' "${J[@]}" -- sh -c "
  id=\$($PY scripts/submit.py --payload '{\"later\": 1}' 2>/dev/null | grep -o 'job-[0-9]*' | head -n 1)
  for i in 1 2 3 4 5 6; do
    out=\$($PY scripts/result.py \"\$id\") || exit 1
    case \$out in *'\"ready\": true'*) echo \"\$out\"; exit 0 ;; esac
    sleep 0.2
  done; exit 1"
# the Idempotency-Key header reaches the API (fakeapi does not act on it: a one-off listener records it)
idem=$(cd "$skills/async-job" && env -i PATH=/usr/bin:/bin HOME="$tmp" TMPDIR="$tmp" LANG=C.UTF-8 timeout 60 python3 - <<'EOF'
import http.server, subprocess, sys, threading
seen = []
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        seen.append(self.headers.get("Idempotency-Key"))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        b = b'{"id": "job-x", "status": "queued"}'
        self.send_response(202); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env = {"PATH": "/usr/bin:/bin", "API_BASE_URL": "http://127.0.0.1:%d" % srv.server_address[1]}
for extra in ([], ["--idempotency-key", "k-123"]):
    subprocess.run([sys.executable, "-E", "-s", "scripts/submit.py", "--payload", '{"x":1}'] + extra,
                   env=env, capture_output=True, timeout=30)
print(" ".join(str(k) for k in seen))
EOF
)
expect_that "job submit sends Idempotency-Key" \
  '[ "$idem" = "$(printf "%s" "{\"x\":1}" | sha256sum | cut -c1-64) k-123" ]'
expect_that "no files left in the api skills' folders" \
  '[ -z "$(find "$skills/api-fetch" "$skills/async-job" "$skills/api-call" -mindepth 1 -path "$skills/async-job/hooks" -prune -o -newer "$tmp/skills-start" -print -quit)" ]'
# async-job post hook: a submit that exits 0 must have printed a job id.
# hook_input SCRIPT STATUS EXIT_CODE STDOUT_FILE: a post hook's stdin on stdout.
hook_input() {
  python3 -c 'import json, sys
print(json.dumps({"skill": "t", "script": sys.argv[1], "args": [], "mode": "sync", "caller": None,
                  "request_id": "r-0123456789abcdef", "env_keys": [],
                  "result": {"status": sys.argv[2], "exit_code": int(sys.argv[3]),
                             "stdout": open(sys.argv[4]).read(), "stderr": "", "hint": "h"}}))' "$@"
}
check "job submit for the hook" async-job 0 '"id": "job-' "${J[@]}" -- $PY scripts/submit.py
cp "$tmp/out" "$tmp/submit.out"
hook_input scripts/submit.py ok 0 "$tmp/submit.out" > "$tmp/h-submit-ok.json"
printf '<html>accepted</html>\n' > "$tmp/submit-noid.out"
hook_input submit.py ok 0 "$tmp/submit-noid.out" > "$tmp/h-submit-noid.json"
hook_input scripts/submit.py failed 1 "$tmp/submit-noid.out" > "$tmp/h-submit-failed.json"
hook_input scripts/poll.py ok 0 "$tmp/submit-noid.out" > "$tmp/h-poll.json"
check "job post hook: real submit output passes" async-job 0 'passed' -- sh -c "$PY hooks/post.py < $tmp/h-submit-ok.json && echo passed"
[ -s "$tmp/err" ] && { fail=$((fail + 1)); echo "FAIL job post hook printed on stderr for a good submit"; }
check "job post hook: exit 0 without an id fails" async-job 1 'printed no job id' -- sh -c "$PY hooks/post.py < $tmp/h-submit-noid.json"
check "job post hook: a failed submit passes" async-job 0 'passed' -- sh -c "$PY hooks/post.py < $tmp/h-submit-failed.json && echo passed"
check "job post hook: other scripts pass" async-job 0 'passed' -- sh -c "$PY hooks/post.py < $tmp/h-poll.json && echo passed"
# internal-api + hooks
I=(INTERNAL_API_URL="$B/internal" INTERNAL_API_TOKEN=testtoken)
check "internal query" internal-api 0 '"total": 3' "${I[@]}" -- $PY scripts/query.py users
check "internal bad token" internal-api 1 'rejected' INTERNAL_API_URL="$B/internal" INTERNAL_API_TOKEN=x -- $PY scripts/query.py users
check "internal sends X-Request-Id" internal-api 0 '"X-[Rr]equest-[Ii]d": "r-0123456789abcdef"' INTERNAL_API_URL="$B" INTERNAL_API_TOKEN=t X_REQUEST_ID=r-0123456789abcdef -- $PY scripts/query.py echo
check "internal odd X_REQUEST_ID not sent" internal-api 0 'not a plain token' INTERNAL_API_URL="$B" INTERNAL_API_TOKEN=t X_REQUEST_ID='a b' -- $PY scripts/query.py echo
if grep -qi 'x-request-id' "$tmp/out"; then fail=$((fail + 1)); echo "FAIL an odd X_REQUEST_ID was sent"; fi
pre_ok='{"skill":"internal-api","script":"scripts/query.py","args":["users"],"mode":"sync","caller":null,"request_id":"r-0123456789abcdef","env_keys":["INTERNAL_API_TOKEN"]}'
pre_w='{"skill":"internal-api","script":"scripts/query.py","args":["users","--write"],"env_keys":["INTERNAL_API_TOKEN"]}'
pre_nt='{"skill":"internal-api","script":"scripts/query.py","args":["users"],"env_keys":[]}'
check "hook pre allow" internal-api 0 'read-only access' -- sh -c "printf '%s' '$pre_ok' | $PY hooks/pre.py"
check "hook pre injects the request id" internal-api 0 '"env": \{"X_REQUEST_ID": "r-0123456789abcdef"\}' -- sh -c "printf '%s' '$pre_ok' | $PY hooks/pre.py"
check "hook pre deny write" internal-api 1 'read-only' -- sh -c "printf '%s' '$pre_w' | $PY hooks/pre.py"
check "hook pre deny no token" internal-api 1 'INTERNAL_API_TOKEN' -- sh -c "printf '%s' '$pre_nt' | $PY hooks/pre.py"
check "hook post redacts" internal-api 0 'redacted-email' -- sh -c "printf '%s' '{\"result\":{\"stdout\":\"a@b.example tok_X1\",\"stderr\":\"\"}}' | $PY hooks/post.py"
if grep -q 'tok_X1\|a@b.example' "$tmp/out"; then fail=$((fail + 1)); echo "FAIL post hook left data"; fi
# global example hooks (hooks/): the org policy (pre) and the audit log (post)
big_args=$(python3 -c 'import json; print(json.dumps({"skill":"s","script":"scripts/x.py","args":["0123456789"]*3,"request_id":"r-1","caller":None}))')
check "global pre allows (prints nothing)" csv-profile 0 'allowed' -- sh -c "printf '%s' '$pre_ok' | $PY $root/hooks/pre.py > $tmp/pre.out && [ ! -s $tmp/pre.out ] && echo allowed"
check "global pre deny over HOOK_MAX_ARGS_BYTES" csv-profile 1 'total 30 bytes, over the limit of 29' HOOK_MAX_ARGS_BYTES=29 -- sh -c "printf '%s' '$big_args' | $PY $root/hooks/pre.py"
check "global pre allow at HOOK_MAX_ARGS_BYTES" csv-profile 0 'allowed' HOOK_MAX_ARGS_BYTES=30 -- sh -c "printf '%s' '$big_args' | $PY $root/hooks/pre.py && echo allowed"
check "global pre default limit 64 KiB" csv-profile 1 'over the limit of 65536' -- sh -c "python3 -c 'import json; print(json.dumps({\"script\":\"scripts/x.py\",\"args\":[\"y\"*40000,\"y\"*40000]}))' | $PY $root/hooks/pre.py"
check "global pre bad HOOK_MAX_ARGS_BYTES denies" csv-profile 1 'not a positive integer' HOOK_MAX_ARGS_BYTES=lots -- sh -c "printf '%s' '$pre_ok' | $PY $root/hooks/pre.py"
check "global pre deny .." csv-profile 1 "contains '..'" -- sh -c "printf '%s' '{\"script\":\"../x\",\"args\":[]}' | $PY $root/hooks/pre.py"
check "global pre denial audited" csv-profile 1 '"status": "denied"' HOOK_AUDIT_LOG="$tmp/audit-deny" HOOK_MAX_ARGS_BYTES=29 -- sh -c "printf '%s' '$big_args' | $PY $root/hooks/pre.py; rc=\$?; cat $tmp/audit-deny; exit \$rc"
hook_input scripts/profile.py ok 0 "$tmp/submit-noid.out" > "$tmp/h-audit.json"
check "global post audit line" csv-profile 0 '"stdout_bytes": 22' HOOK_AUDIT_LOG="$tmp/audit" -- sh -c "$PY $root/hooks/post.py < $tmp/h-audit.json > $tmp/post.out && [ ! -s $tmp/post.out ] && cat $tmp/audit"
check "global post audit fields" csv-profile 0 '^\{"ts": "[0-9T:.-]+Z", "request_id": "r-0123456789abcdef", "skill": "t", "script": "scripts/profile.py", "status": "ok", "duration_ms": null, "caller": null, "stdout_bytes": 22\}$' -- cat "$tmp/audit"
check "global post without HOOK_AUDIT_LOG" csv-profile 0 'passed' -- sh -c "$PY $root/hooks/post.py < $tmp/h-audit.json > $tmp/post.out && [ ! -s $tmp/post.out ] && echo passed"
check "global post never fails the call" csv-profile 0 'not audited' HOOK_AUDIT_LOG="$tmp/audit" -- sh -c "echo 'not json' | $PY $root/hooks/post.py"

echo "passed: $pass  failed: $fail"
echo "SUMMARY skills: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
