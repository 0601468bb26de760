#!/usr/bin/env bash
# The runner's cost: run_skill_script p50 (wrk, one connection) for a
# trivial sh and python script, with and without a pre+post hook, against
# spawning the same interpreter on the same script directly, as the same
# user the server runs scripts as; and list_skills latency while 24 long
# scripts are in flight. Prints a markdown table.
#
#   bench/scripts.sh [--smoke]
#   BENCH_BIN=/path/to/skill-mcp bench/scripts.sh    (another build)
#   BENCH_BASE=/path/to/main/skill-mcp bench/scripts.sh
#       (both builds in the same run: every measurement alternates between
#       them, BENCH_ROUNDS times (default 6), which goes first alternating
#       too, and the median round is shown, so that a busy machine weighs on
#       both alike)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
SMOKE=0; [ "${1:-}" = --smoke ] && SMOKE=1
[ $SMOKE = 1 ] && STRICT_SUMMARY=bench-scripts
DUR=${BENCH_DURATION:-3s}; N=${BENCH_SPAWNS:-200}; ROUNDS=${BENCH_ROUNDS:-6}
[ $SMOKE = 1 ] && { DUR=1s; N=30; ROUNDS=1; }
BIN=${BENCH_BIN:-build/skill-mcp}
BASE=${BENCH_BASE:-}
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

SRV_URL=""
start_srv() { # bin log: sets SRV_URL (not a $(...): the server would hold its pipe open)
    "$1" --skills "$tmp/lib" --port 0 --refresh-interval 0 --max-script-concurrency 8 \
        </dev/null >/dev/null 2>"$2" &
    local pid=$! port
    pids+=($pid)
    port=$(bench_port $pid) && bench_wait_up "$port" $pid || { echo "$1 did not start" >&2; cat "$2" >&2; return 1; }
    SRV_URL="http://127.0.0.1:$port/mcp"
}
start_srv "$BIN" "$tmp/srv.log"; URL=$SRV_URL
[ -z "$BASE" ] || { start_srv "$BASE" "$tmp/base.log"; BURL=$SRV_URL; }
PY=$(sed -nE 's/.*\.py runs with ([^ ]+).*/\1/p' "$tmp/srv.log" | head -1)
SH=$(sed -nE 's/.*\.sh runs with ([^ ]+).*/\1/p' "$tmp/srv.log" | head -1)
[ -n "$PY" ] && [ -n "$SH" ] || { echo "the server log names no .py/.sh interpreter:"; cat "$tmp/srv.log"; exit 1; }
# the direct spawns run as the user the server runs scripts as
AS=()
if [ "$(id -u)" = 0 ]; then AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --); fi

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
median() { tr ' ' '\n' <<<"$*" | grep . | sort -g | awk '{v[NR] = $1} END {printf "%.2f", v[int((NR + 1) / 2)]}'; }

# the exact command the server runs for a .py: its flags, the launcher, the
# script on fd 3
python3 - >"$tmp/launcher.py" <<'PYEOF'
import re
s = open('server/script.c').read()
body = re.search(r'#define PY_LAUNCH\s*\\\n(.*?)\n\n', s, re.S).group(1)
print(''.join(p.encode().decode('unicode_escape') for p in re.findall(r'"((?:[^"\\]|\\.)*)"', body)), end='')
PYEOF
PYPATH=$tmp/lib/plain/scripts/pass.py
# what the hooks read: the pre hook's input, and the post hook's (with the result)
printf '{"skill":"hooked","script":"scripts/true.sh","args":[],"mode":"sync","caller":null,"request_id":"r-0123456789abcdef","env_keys":[]}' >"$tmp/pre.json"
printf '{"skill":"hooked","script":"scripts/true.sh","args":[],"mode":"sync","caller":null,"request_id":"r-0123456789abcdef","env_keys":[],"result":{"status":"ok","stdout":"","stderr":"","duration_ms":1.0,"timeout":30.0,"stall_timeout":20.0,"truncated":false,"stdout_bytes":0,"stderr_bytes":0,"hint":"The script succeeded; stdout is its answer.","request_id":"r-0123456789abcdef","exit_code":0}}' >"$tmp/post.json"

declare -A M
add() { M[$1]="${M[$1]:-} $2"; }
for r in $(seq "$ROUNDS"); do
    add direct_sh "$("${AS[@]}" build/bench/spawn "$N" "$SH" "$tmp/lib/plain/scripts/true.sh")"
    add direct_py "$("${AS[@]}" build/bench/spawn "$N" "$PY" -E -s -B "$tmp/lib/plain/scripts/pass.py")"
    add direct_pyx "$(SPAWN_FD3=$PYPATH "${AS[@]}" build/bench/spawn "$N" "$PY" -E -s -B -X pycache_prefix=/dev/null/skill-mcp -c "$(cat "$tmp/launcher.py")" "$PYPATH")"
    add direct_pre "$(SPAWN_STDIN=$tmp/pre.json "${AS[@]}" build/bench/spawn "$N" "$SH" "$tmp/lib/hooked/hooks/pre.sh")"
    add direct_post "$(SPAWN_STDIN=$tmp/post.json "${AS[@]}" build/bench/spawn "$N" "$SH" "$tmp/lib/hooked/hooks/post.sh")"
    # the build measured first in a round read slower (+1.1-1.4 ms on a
    # 2.1 ms true.sh call, whichever build it was): the order alternates,
    # round by round, and an even number of rounds leads with each as often
    order="new base"; [ $((r % 2)) = 0 ] && order="base new"
    for who in $order; do
        u=$URL; [ $who = base ] && { [ -n "$BASE" ] || continue; u=$BURL; }
        add ${who}_sh "$(p50_ms "$u" "$(body plain scripts/true.sh)")"
        add ${who}_py "$(p50_ms "$u" "$(body plain scripts/pass.py)")"
        add ${who}_hook "$(p50_ms "$u" "$(body hooked scripts/true.sh)")"
    done
done
for k in "${!M[@]}"; do M[$k]=$(median ${M[$k]}); done
direct_sh=${M[direct_sh]}; direct_py=${M[direct_py]}; direct_pyx=${M[direct_pyx]}
two_hooks=$(awk -v a="${M[direct_pre]}" -v b="${M[direct_post]}" 'BEGIN {printf "%.2f", a + b}')

# list_skills while 24 scripts (0.5 s each) are in flight against a cap of 8
BENCH_BODY="$(body plain scripts/wait.py)" wrk -t1 -c24 -d"$DUR" -s bench/post.lua "$URL" >"$tmp/load.txt" 2>&1 &
LOAD=$!; pids+=($LOAD)
sleep 0.5
busy=$(wrk_result "$URL" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills"}}' 4)
wait $LOAD || true
loadline=$(grep RESULT "$tmp/load.txt" || echo "RESULT rps=0")

ov() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a - b}'; }
two_sh=$(awk -v d="$direct_sh" 'BEGIN {printf "%.2f", 2 * d}')
echo "medians of $ROUNDS rounds (wrk -c1 -d$DUR each; $N direct spawns each)"
echo
if [ -n "$BASE" ]; then
    echo "| measurement | p50 ms ($BIN) | p50 ms ($BASE) |"
    echo "|---|---:|---:|"
else
    echo "| measurement | p50 ms |"
    echo "|---|---:|"
fi
row() { # label key direct
    local line="| $1 | ${M[new_$2]} (overhead $(ov "${M[new_$2]}" "$3")) |"
    [ -z "$BASE" ] || line="$line ${M[base_$2]} (overhead $(ov "${M[base_$2]}" "$3")) |"
    echo "$line"
}
hrow() {
    local line="| run_skill_script true.sh with pre+post sh hooks | ${M[new_hook]} (hooks add $(ov "${M[new_hook]}" "${M[new_sh]}")) |"
    [ -z "$BASE" ] || line="$line ${M[base_hook]} (hooks add $(ov "${M[base_hook]}" "${M[base_sh]}")) |"
    echo "$line"
}
blank=""; [ -z "$BASE" ] || blank=" |"
echo "| spawn bash true.sh directly | $direct_sh |$blank"
row "run_skill_script true.sh" sh "$direct_sh"
echo "| spawn python3 -E -s -B pass.py directly | $direct_py |$blank"
echo "| spawn python3 as the server does (-X pycache_prefix, -c launcher, script on fd 3) directly | $direct_pyx |$blank"
row "run_skill_script pass.py (overhead over the server's python command)" py "$direct_pyx"
hrow
echo "| the hook pair's two processes directly (bash pre.sh and post.sh, their input on a pipe) | $two_hooks |$blank"
echo "| two bash true.sh starts | $two_sh |$blank"
echo
echo "list_skills while 24 x 0.5 s scripts run (cap 8): $(sed -E 's/RESULT //' <<<"$busy")"
echo "the scripts themselves: $(sed -E 's/RESULT //' <<<"$loadline") (cap 8 / 0.5 s = 16 req/s ceiling)"
[ $SMOKE = 0 ] || strict_summary 1 0
