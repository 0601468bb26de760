#!/usr/bin/env bash
# run_examples.sh - run the example skills' scripts and hooks against fakeapi
# and check outputs and exit codes. Starts fakeapi on a free port and stops
# it (by PID) on exit. Needs python3, bash, curl, git (optional).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
skills="$root/skills"
tmp=$(mktemp -d)
pass=0; fail=0
fa_pid=""
cleanup() { [ -n "$fa_pid" ] && kill "$fa_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

python3 "$here/fakeapi.py" --port 0 --lifetime 300 > "$tmp/fa.out" 2> "$tmp/fa.err" &
fa_pid=$!
for _ in $(seq 50); do grep -q '^PORT ' "$tmp/fa.out" 2>/dev/null && break; sleep 0.1; done
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
    sed 's/^/   out: /' "$tmp/out" | head -n 5; sed 's/^/   err: /' "$tmp/err" | head -n 5
  fi
}
PY="python3 -E -s"

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
# api-fetch
check "fetch ok" api-fetch 0 '"status": 200' -- $PY scripts/fetch.py "$B/items"
check "fetch flaky retries" api-fetch 0 '"attempts": 3' -- $PY scripts/fetch.py "$B/flaky?key=rx1"
check "fetch ratelimit retry-after" api-fetch 0 'after 1s: HTTP 429' -- $PY scripts/fetch.py "$B/ratelimit?key=rx1"
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
# async-job
J=(API_BASE_URL="$B")
check "job submit" async-job 0 '"id": "job-' "${J[@]}" -- $PY scripts/submit.py --payload '{"x":1}'
job=$(grep -o 'job-[0-9]*' "$tmp/out" | head -n 1)
check "job result before done" async-job 1 '"ready": false' "${J[@]}" -- $PY scripts/result.py "$job"
check "job poll" async-job 0 '"status": "done"' "${J[@]}" -- $PY scripts/poll.py "$job" --interval 0.3
check "job poll progress on stderr" async-job 0 'poll 1 ' "${J[@]}" -- $PY scripts/poll.py "$job" --interval 0.3
check "job result" async-job 0 '"rows": 3' "${J[@]}" -- $PY scripts/result.py "$job"
check "job max-wait" async-job 4 '"finished": false' "${J[@]}" -- sh -c "$PY scripts/poll.py \$($PY scripts/submit.py 2>/dev/null | grep -o 'job-[0-9]*' | head -n 1) --interval 1 --max-wait 1.5"
# internal-api + hooks
I=(INTERNAL_API_URL="$B/internal" INTERNAL_API_TOKEN=testtoken)
check "internal query" internal-api 0 '"total": 3' "${I[@]}" -- $PY scripts/query.py users
check "internal bad token" internal-api 1 'rejected' INTERNAL_API_URL="$B/internal" INTERNAL_API_TOKEN=x -- $PY scripts/query.py users
pre_ok='{"skill":"internal-api","script":"scripts/query.py","args":["users"],"mode":"run","caller":"t","request_id":"r","env_keys":["INTERNAL_API_TOKEN"]}'
pre_w='{"skill":"internal-api","script":"scripts/query.py","args":["users","--write"],"env_keys":["INTERNAL_API_TOKEN"]}'
pre_nt='{"skill":"internal-api","script":"scripts/query.py","args":["users"],"env_keys":[]}'
check "hook pre allow" internal-api 0 'read-only access' -- sh -c "printf '%s' '$pre_ok' | $PY hooks/pre.py"
check "hook pre deny write" internal-api 1 'read-only' -- sh -c "printf '%s' '$pre_w' | $PY hooks/pre.py"
check "hook pre deny no token" internal-api 1 'INTERNAL_API_TOKEN' -- sh -c "printf '%s' '$pre_nt' | $PY hooks/pre.py"
check "hook post redacts" internal-api 0 'redacted-email' -- sh -c "printf '%s' '{\"result\":{\"stdout\":\"a@b.example tok_X1\",\"stderr\":\"\"}}' | $PY hooks/post.py"
if grep -q 'tok_X1\|a@b.example' "$tmp/out"; then fail=$((fail + 1)); echo "FAIL post hook left data"; fi
check "global pre audit" csv-profile 0 '"decision": "allow"' SKILL_AUDIT_LOG="$tmp/audit" -- sh -c "printf '%s' '$pre_ok' | $PY $root/hooks/pre.py && cat $tmp/audit"
check "global pre deny .." csv-profile 1 "contains '..'" -- sh -c "printf '%s' '{\"script\":\"../x\"}' | $PY $root/hooks/pre.py"

echo "passed: $pass  failed: $fail"
echo "SUMMARY skills: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
