#!/usr/bin/env bash
# Instructions per request of the tools whose replies carry text, under
# callgrind: list_skills, list_skills(query), load_skill, load_skill(section),
# read_skill_file and resources/read of an 18 KB reference, and skills/get,
# on the bundled skills (or DIR). Same method as profile.sh: one HTTP thread under valgrind; for each call 5 warm-up
# requests, then counters zeroed (callgrind_control -z), exactly K requests
# on one keep-alive connection (build/bench/mcpc), counters dumped (-d).
#
#   bench/profile-tools.sh [DIR] [K]     (defaults skills/ and 200)
#   BENCH_BIN=path/to/skill-mcp          profile another build (before/after)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
DIR=${1:-skills}; K=${2:-200}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
if [ -z "${BENCH_BIN:-}" ]; then make -s all; fi
BIN=${BENCH_BIN:-build/skill-mcp}
mkdir -p build/bench
cc -O2 -o build/bench/mcpc bench/mcpc.c

tmp=$(mktemp -d); VG=
cleanup() { [ -n "$VG" ] && kill "$VG" 2>/dev/null && wait "$VG" 2>/dev/null; rm -rf "$tmp"; }
strict_at_exit cleanup
PORT=$(build/bench/mcpc port)
valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$tmp/cg.out" \
    "$BIN" --skills "$DIR" --port "$PORT" --threads 1 --refresh-interval 0 \
    --log-level warn 2>"$tmp/vg.log" &
VG=$!

call() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s"%s}}' "$1" "$2"; }
for _ in $(seq 600); do
    build/bench/mcpc run "$PORT" 1 "$(call list_skills '')" >/dev/null 2>&1 && break
    sleep 0.5
done

rpc() { printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}' "$1" "$2"; }
declare -a NAMES BODIES
NAMES+=("list_skills");         BODIES+=("$(call list_skills '')")
NAMES+=('list_skills(query "profile a csv spreadsheet")')
BODIES+=("$(call list_skills ',"arguments":{"query":"profile a csv spreadsheet"}')")
NAMES+=('load_skill(csv-profile)')
BODIES+=("$(call load_skill ',"arguments":{"name":"csv-profile"}')")
NAMES+=('load_skill(csv-profile, section "usage")')
BODIES+=("$(call load_skill ',"arguments":{"name":"csv-profile","section":"usage"}')")
NAMES+=('read_skill_file(api-fetch, references/hangs.md)')
BODIES+=("$(call read_skill_file ',"arguments":{"name":"api-fetch","path":"references/hangs.md"}')")
NAMES+=('resources/read(skill://api-fetch/references/hangs.md)')
BODIES+=("$(rpc resources/read '{"uri":"skill://api-fetch/references/hangs.md"}')")
NAMES+=('skills/get(skill://csv-profile/SKILL.md)')
BODIES+=("$(rpc skills/get '{"uri":"skill://csv-profile/SKILL.md"}')")
for i in "${!NAMES[@]}"; do
    build/bench/mcpc run "$PORT" 5 "${BODIES[$i]}" >/dev/null
    callgrind_control -z "$VG" >/dev/null
    build/bench/mcpc run "$PORT" "$K" "${BODIES[$i]}" >"$tmp/run.$i"
    callgrind_control -d "case$i" "$VG" >/dev/null
done
kill "$VG"; wait "$VG" 2>/dev/null || true; VG=

echo "# callgrind: $DIR, $K requests per call, 1 HTTP thread, --log-level warn ($BIN)"
echo
echo "| call | instructions / request | reply bytes | errors |"
echo "|---|---:|---:|---:|"
for i in "${!NAMES[@]}"; do
    f=$(grep -l "^desc: Trigger: dump case$i\$" "$tmp"/cg.out.* | head -1)
    t=$(sed -nE 's/^summary: ([0-9]+)/\1/p' "$f")
    printf '| %s | %s | %s | %s |\n' "${NAMES[$i]}" "$(awk -v t="$t" -v k="$K" 'BEGIN {printf "%.0f", t / k}')" \
        "$(sed -nE 's/.*bytes=([0-9]+).*/\1/p' "$tmp/run.$i")" "$(sed -nE 's/.*errors=([0-9]+).*/\1/p' "$tmp/run.$i")"
done
