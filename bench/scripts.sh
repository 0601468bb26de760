#!/usr/bin/env bash
# The runner's cost: run_skill_script p50 (wrk, one connection) for a
# trivial sh and python script, with and without a pre+post hook, against
# spawning the same interpreter on the same script directly; and list_skills
# latency while 24 long scripts are in flight. Prints a markdown table.
#
#   bench/scripts.sh [--smoke]
#   BENCH_BIN=/path/to/skill-mcp bench/scripts.sh   (another build, e.g. main's)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
SMOKE=0; [ "${1:-}" = --smoke ] && SMOKE=1
[ $SMOKE = 1 ] && STRICT_SUMMARY=bench-scripts
DUR=${BENCH_DURATION:-5s}; N=${BENCH_SPAWNS:-300}
[ $SMOKE = 1 ] && { DUR=1s; N=30; }
BIN=${BENCH_BIN:-build/skill-mcp}
[ -n "${BENCH_BIN:-}" ] || make -s all
mkdir -p build/bench
cc -O2 -o build/bench/spawn bench/spawn.c

tmp=$(mktemp -d); pids=()
chmod 755 "$tmp"   # a root server runs scripts as nobody
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
strict_at_exit cleanup
for s in plain hooked; do
    mkdir -p "$tmp/lib/$s/scripts"
    printf -- '---\nname: %s\ndescription: benchmark skill\n---\n# %s\n' "$s" "$s" >"$tmp/lib/$s/SKILL.md"
    printf ':\n' >"$tmp/lib/$s/scripts/true.sh"
    printf 'pass\n' >"$tmp/lib/$s/scripts/pass.py"
    printf 'import time\nfor i in range(10):\n    time.sleep(0.05)\n' >"$tmp/lib/$s/scripts/wait.py"
done
mkdir -p "$tmp/lib/hooked/hooks"
printf 'read -r -d "" _ || true\n' >"$tmp/lib/hooked/hooks/pre.sh"
printf 'read -r -d "" _ || true\n' >"$tmp/lib/hooked/hooks/post.sh"

"$BIN" --skills "$tmp/lib" --port 0 --refresh-interval 0 --max-script-concurrency 8 \
    2>"$tmp/srv.log" &
SRV=$!; pids+=($SRV)
PORT=$(bench_port $SRV) && bench_wait_up "$PORT" $SRV || { echo "skill-mcp did not start"; cat "$tmp/srv.log"; exit 1; }
URL=http://127.0.0.1:$PORT/mcp
PY=$(sed -nE 's/.*\.py runs with ([^ ]+).*/\1/p' "$tmp/srv.log" | head -1)
SH=$(sed -nE 's/.*\.sh runs with ([^ ]+).*/\1/p' "$tmp/srv.log" | head -1)
[ -n "$PY" ] && [ -n "$SH" ] || { echo "the server log names no .py/.sh interpreter:"; cat "$tmp/srv.log"; exit 1; }

body() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_skill_script","arguments":{"name":"%s","script":"%s"}}}' "$1" "$2"; }
wrk_result() { # url body conns -> RESULT line; wrk's own output when it has none
    local out
    out=$(BENCH_BODY="$2" wrk -t1 -c"$3" -d"$DUR" -s bench/post.lua "$1" 2>&1) || true
    grep RESULT <<<"$out" && return 0
    echo "wrk against $1 gave no RESULT line:" >&2
    sed 's/^/    /' <<<"$out" >&2
    return 1
}
p50_ms() { wrk_result "$1" "$2" "${3:-1}" | sed -nE 's/.*p50_us=([0-9]+).*/\1/p' | awk '{printf "%.2f", $1 / 1000}'; }

direct_sh=$(build/bench/spawn "$N" "$SH" "$tmp/lib/plain/scripts/true.sh")
direct_py=$(build/bench/spawn "$N" "$PY" -E -s -B "$tmp/lib/plain/scripts/pass.py")
srv_sh=$(p50_ms "$URL" "$(body plain scripts/true.sh)")
srv_py=$(p50_ms "$URL" "$(body plain scripts/pass.py)")
hook_sh=$(p50_ms "$URL" "$(body hooked scripts/true.sh)")

# list_skills while 24 scripts (0.5 s each) are in flight against a cap of 8
BENCH_BODY="$(body plain scripts/wait.py)" wrk -t1 -c24 -d"$DUR" -s bench/post.lua "$URL" >"$tmp/load.txt" 2>&1 &
LOAD=$!; pids+=($LOAD)
sleep 0.5
busy=$(wrk_result "$URL" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills"}}' 4)
wait $LOAD || true
loadline=$(grep RESULT "$tmp/load.txt" || echo "RESULT rps=0")

ov() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a - b}'; }
echo "| measurement | p50 ms |"
echo "|---|---:|"
echo "| spawn bash true.sh directly | $direct_sh |"
echo "| run_skill_script true.sh | $srv_sh (overhead $(ov "$srv_sh" "$direct_sh")) |"
echo "| spawn python3 -E -s -B pass.py directly | $direct_py |"
echo "| run_skill_script pass.py | $srv_py (overhead $(ov "$srv_py" "$direct_py")) |"
echo "| run_skill_script true.sh with pre+post sh hooks | $hook_sh (hooks add $(ov "$hook_sh" "$srv_sh"); two extra bash starts cost $(ov "$(awk -v d="$direct_sh" 'BEGIN{print 2*d}')" 0)) |"
echo
echo "list_skills while 24 x 0.5 s scripts run (cap 8): $(sed -E 's/RESULT //' <<<"$busy")"
echo "the scripts themselves: $(sed -E 's/RESULT //' <<<"$loadline") (cap 8 / 0.5 s = 16 req/s ceiling)"
[ $SMOKE = 0 ] || strict_summary 1 0
