#!/usr/bin/env bash
# Instruction counts of the list_skills hot path under callgrind: stable on a
# noisy machine where wall-clock numbers are not. Serves a generated library
# (default 5,000 skills) with one HTTP thread under valgrind, then for each
# call zeroes the counters (callgrind_control -z), sends exactly K requests
# on one keep-alive connection (build/bench/mcpc) and dumps (-d). Prints
# instructions per request and the top functions (exclusive) of each call,
# and the instructions of start-up (index build) up to the first answer.
#
#   bench/profile.sh [N_SKILLS] [K]       (defaults 5000 and 200)
#   BENCH_PROFILE_KEEP=DIR keeps the callgrind files in DIR
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-5000}; K=${2:-200}; TOP=${BENCH_PROFILE_TOP:-10}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
make -s all
mkdir -p build/bench
cc -O2 -o build/bench/mcpc bench/mcpc.c
FIX=build/bench/fixtures/s$N
python3 bench/gen-skills.py "$N" "$FIX"

tmp=$(mktemp -d); VG=
cleanup() { [ -n "$VG" ] && kill "$VG" 2>/dev/null && wait "$VG" 2>/dev/null; rm -rf "$tmp"; }
strict_at_exit cleanup
PORT=$(build/bench/mcpc port)
valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$tmp/cg.out" \
    build/skill-mcp --skills "$FIX" --port "$PORT" --threads 1 --refresh-interval 0 \
    --log-level warn 2>"$tmp/vg.log" &
VG=$!

body() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills"%s}}' "$1"; }
# The listening socket exists before the index is built: the first request
# waits for it. Start-up is everything up to that first answer.
for _ in $(seq 600); do
    build/bench/mcpc run "$PORT" 1 "$(body '')" >/dev/null 2>&1 && break
    sleep 0.5
done
callgrind_control -d startup "$VG" >/dev/null

declare -a NAMES BODIES
NAMES+=("list_skills");                          BODIES+=("$(body '')")
NAMES+=('list_skills(query="profile a csv spreadsheet")'); BODIES+=("$(body ',"arguments":{"query":"profile a csv spreadsheet"}')")
NAMES+=('list_skills(query="kubernetes")');      BODIES+=("$(body ',"arguments":{"query":"kubernetes"}')")
NAMES+=('list_skills(query="retry http request with timeout")'); BODIES+=("$(body ',"arguments":{"query":"retry http request with timeout"}')")
for i in "${!NAMES[@]}"; do
    callgrind_control -z "$VG" >/dev/null
    build/bench/mcpc run "$PORT" "$K" "${BODIES[$i]}" >"$tmp/run.$i"
    callgrind_control -d "case$i" "$VG" >/dev/null
done
callgrind_control -z "$VG" >/dev/null
sleep 1
callgrind_control -d idle "$VG" >/dev/null
kill "$VG"; wait "$VG" 2>/dev/null || true; VG=

total() { sed -nE 's/^summary: ([0-9]+)/\1/p' "$1"; }
dump_of() { grep -l "^desc: Trigger: dump $1\$" "$tmp"/cg.out.* | head -1; }
top() {
    callgrind_annotate --threshold=100 "$1" 2>/dev/null | sed -n '/file:function/,$p' | sed 1,2d |
        grep -E '^ *[0-9,]+ ' | grep -vE ':(clone|start_thread) ' |
        sed -E 's/^ *([0-9,]+) \( *([0-9.]+)%\) +(.*)$/\1|\2|\3/' | head -"$TOP" |
        awk -F'|' -v k="$K" '{ gsub(",", "", $1);
            fn = $3; obj = fn; sub(/ \[.*\]$/, "", fn); sub(/^.*\//, "", fn);
            if (fn ~ /^\?\?\?/) { sub(/^.*\[/, "", obj); sub(/\]$/, "", obj); sub(/^.*\//, "", obj);
                                   sub(/\.so.*/, ".so", obj); fn = obj " " substr(fn, 5) }
            printf "| %s | %.0f | %s%% |\n", fn, $1 / k, $2 }'
}

idle=$(total "$(dump_of idle)")
echo "# callgrind: $N skills, $K requests per call, 1 HTTP thread, --log-level warn"
echo
echo "start-up to the first answer: $(total "$(dump_of startup)" | awk '{printf "%.0f M instructions", $1 / 1e6}')"
echo "idle (1 s, no requests): $idle instructions"
echo
echo "| call | instructions / request | reply bytes |"
echo "|---|---:|---:|"
for i in "${!NAMES[@]}"; do
    t=$(total "$(dump_of "case$i")")
    printf '| %s | %s | %s |\n' "${NAMES[$i]}" "$(awk -v t="$t" -v k="$K" 'BEGIN {printf "%.0f", t / k}')" \
        "$(sed -nE 's/.*bytes=([0-9]+).*/\1/p' "$tmp/run.$i")"
done
for i in "${!NAMES[@]}"; do
    echo
    echo "top $TOP (exclusive) of ${NAMES[$i]}:"
    echo
    echo "| function | instructions / request | share |"
    echo "|---|---:|---:|"
    top "$(dump_of "case$i")"
done
echo
echo "top $TOP (exclusive) of start-up:"
echo
echo "| function | instructions | share |"
echo "|---|---:|---:|"
K=1 top "$(dump_of startup)"
if [ -n "${BENCH_PROFILE_KEEP:-}" ]; then
    mkdir -p "$BENCH_PROFILE_KEEP"
    cp "$tmp"/cg.out.* "$BENCH_PROFILE_KEEP"/
    echo
    echo "callgrind files kept in $BENCH_PROFILE_KEEP (callgrind_annotate --inclusive=yes FILE)"
fi
