#!/usr/bin/env bash
# make bench: drive skill-mcp and a bare libmicrohttpd server answering the
# same bytes with wrk on loopback, server and load generator pinned to
# separate cores, and report requests/s, p50, p99, RSS and the ratio to the
# bare server, median of RUNS runs.
#
#   bench/run.sh [--smoke]      (--smoke: 1 short run, no results file)
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
SMOKE=0; [ "${1:-}" = --smoke ] && SMOKE=1
[ $SMOKE = 1 ] && STRICT_SUMMARY=bench-smoke
DUR=${BENCH_DURATION:-5s}; RUNS=${BENCH_RUNS:-3}; CONNS=${BENCH_CONNS:-16}
[ $SMOKE = 1 ] && { DUR=1s; RUNS=1; }
BIN=build/skill-mcp
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
make -s all
mkdir -p build/bench
cc -O2 -o build/bench/bare bench/bare.c $(pkg-config --cflags --libs libmicrohttpd)

ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then SRV_CPU="taskset -c 0"; GEN_CPU="taskset -c 1"; THREADS=1
else SRV_CPU=""; GEN_CPU=""; THREADS=1; fi

tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
strict_at_exit cleanup

$SRV_CPU "$BIN" --skills skills --port 0 --threads $THREADS --refresh-interval 0 \
    --log-level warn 2>"$tmp/srv.log" &
SRV=$!; pids+=($SRV)
# The listening line is logged at info (off here); ask the kernel.
PORT=$(bench_port $SRV) && bench_wait_up "$PORT" $SRV || { echo "skill-mcp did not start"; cat "$tmp/srv.log"; exit 1; }
URL=http://127.0.0.1:$PORT/mcp

call() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2"; }
declare -a NAMES BODIES
NAMES+=("list_skills");            BODIES+=('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills"}}')
NAMES+=("list_skills(query)");     BODIES+=("$(call list_skills '{"query":"profile a csv spreadsheet"}')")
NAMES+=("load_skill");             BODIES+=("$(call load_skill '{"name":"csv-profile"}')")
NAMES+=("load_skill(section)");    BODIES+=("$(call load_skill '{"name":"csv-profile","section":"usage"}')")
NAMES+=("read_skill_file");        BODIES+=("$(call read_skill_file '{"name":"api-fetch","path":"references/hangs.md"}')")

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run_wrk() { # url body -> RESULT line; wrk's own output when it has none
    local out
    out=$(BENCH_BODY="$2" $GEN_CPU wrk -t1 -c"$CONNS" -d"$DUR" -s bench/post.lua "$1" 2>&1) || true
    grep RESULT <<<"$out" && return 0
    echo "wrk against $1 gave no RESULT line:" >&2
    sed 's/^/    /' <<<"$out" >&2
    return 1
}
rss_kb() { awk '/VmRSS/ {print $2}' /proc/$1/status; }

out="$tmp/table.md"
echo "| call | reply bytes | skill-mcp req/s | bare req/s | ratio | p50 µs | p99 µs | bare p50 µs | RSS KiB |" >"$out"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|" >>"$out"
for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]}; body=${BODIES[$i]}
    curl -s -o "$tmp/reply" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -d "$body" "$URL"
    size=$(stat -c %s "$tmp/reply")
    grep -q '"error"' "$tmp/reply" && { echo "$name failed: $(head -c 300 "$tmp/reply")"; exit 1; }
    $SRV_CPU build/bench/bare 0 "$tmp/reply" $THREADS >"$tmp/bare.out" & BARE=$!; pids+=($BARE)
    BPORT=""
    for _ in $(seq 100); do
        BPORT=$(sed -n 's/^PORT \([0-9][0-9]*\)$/\1/p' "$tmp/bare.out")
        [ -n "$BPORT" ] || ! kill -0 $BARE 2>/dev/null && break
        sleep 0.1
    done
    [ -n "$BPORT" ] && bench_wait_up "$BPORT" $BARE || { echo "the bare server did not start"; exit 1; }
    s_rps=(); b_rps=(); s_p50=(); s_p99=(); b_p50=()
    for r in $(seq "$RUNS"); do
        line=$(run_wrk "$URL" "$body")
        s_rps+=($(sed -E 's/.*rps=([0-9.]+).*/\1/' <<<"$line"))
        s_p50+=($(sed -E 's/.*p50_us=([0-9]+).*/\1/' <<<"$line"))
        s_p99+=($(sed -E 's/.*p99_us=([0-9]+).*/\1/' <<<"$line"))
        line=$(run_wrk "http://127.0.0.1:$BPORT/mcp" "$body")
        b_rps+=($(sed -E 's/.*rps=([0-9.]+).*/\1/' <<<"$line"))
        b_p50+=($(sed -E 's/.*p50_us=([0-9]+).*/\1/' <<<"$line"))
    done
    kill $BARE; wait $BARE 2>/dev/null || true
    S=$(printf '%s\n' "${s_rps[@]}" | median); B=$(printf '%s\n' "${b_rps[@]}" | median)
    ratio=$(awk -v s="$S" -v b="$B" 'BEGIN {printf "%.2f", (b > 0 ? s / b : 0)}')
    printf '| %s | %s | %.0f | %.0f | %s | %s | %s | %s | %s |\n' "$name" "$size" "$S" "$B" "$ratio" \
        "$(printf '%s\n' "${s_p50[@]}" | median)" "$(printf '%s\n' "${s_p99[@]}" | median)" \
        "$(printf '%s\n' "${b_p50[@]}" | median)" "$(rss_kb $SRV)" >>"$out"
done
cat "$out"
bench/acl.sh $([ $SMOKE = 1 ] && echo --smoke) | tee "$tmp/acl.md"
if [ $SMOKE = 1 ]; then
    rows=$(($(wc -l <"$out") - 2))
    strict_summary "$rows" 0
    exit 0
fi
mkdir -p bench/results
res=bench/results/$(date -u +%Y-%m-%dT%H%M%SZ).md
{
    echo "# skill-mcp benchmark, $(date -u +%Y-%m-%d)"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"
    echo "wrk -t1 -c$CONNS -d$DUR, median of $RUNS runs; server (1 HTTP thread) on core 0, wrk on core 1;"
    echo "bare = libmicrohttpd with the same flags answering the same bytes (bench/bare.c)."
    echo
    cat "$out"
    echo
    cat "$tmp/acl.md"
} >"$res"
echo "written $res"
