#!/usr/bin/env bash
# bench/acl.sh (called by bench/run.sh): what --acl costs list_skills. Two
# servers with the same token file and skills, one with --acl, driven in
# turn by wrk with the same token, median of RUNS runs each; the caller's
# rules let it see every skill, so both answer the same bytes and the
# difference is the per-request classify + view lookup. Reports the ratio.
#
#   bench/acl.sh [--smoke]
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
if [ "$(nproc)" -ge 2 ]; then SRV_CPU="taskset -c 0"; GEN_CPU="taskset -c 1"; else SRV_CPU=""; GEN_CPU=""; fi

tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
strict_at_exit cleanup

TOKEN=smcp_bench_acl_token
printf 'bench %s 0 groups=eng,bench\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" >"$tmp/tokens"
# A plausible team file: rules for others first, the caller's group last.
{
    for i in $(seq 20); do echo "client:svc$i see team$i/"; echo "group:g$i run team$i/deploy\$"; done
    echo "* see public/"
    echo "group:eng see .*"
} >"$tmp/acl"

start() { # extra flags... -> sets PORT (the server is started here, not in a subshell)
    $SRV_CPU "$BIN" --skills skills --port 0 --threads 1 --refresh-interval 0 --log-level warn \
        --auth-tokens "$tmp/tokens" "$@" >/dev/null 2>>"$tmp/srv.log" &
    local pid=$!; pids+=($pid)
    PORT=$(bench_port $pid) && bench_wait_up "$PORT" $pid || { cat "$tmp/srv.log"; exit 1; }
}
start; P0=$PORT
start --acl "$tmp/acl"; P1=$PORT
BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills"}}'
reply() { curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Authorization: Bearer $TOKEN" -d "$BODY" "http://127.0.0.1:$1/mcp"; }
[ "$(reply "$P0")" = "$(reply "$P1")" ] || { echo "the two servers answer different bytes"; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rps() {
    local out
    out=$(BENCH_BODY="$BODY" BENCH_AUTH="Bearer $TOKEN" $GEN_CPU wrk -t1 -c"$CONNS" -d"$DUR" \
        -s bench/post.lua "http://127.0.0.1:$1/mcp" 2>&1) || true
    grep -q 'errors=0' <<<"$out" || { echo "wrk: $out" >&2; return 1; }
    sed -nE 's/.*rps=([0-9.]+).*/\1/p' <<<"$out"
}
a=(); b=()
for _ in $(seq "$RUNS"); do a+=($(rps "$P0")); b+=($(rps "$P1")); done
A=$(printf '%s\n' "${a[@]}" | median); B=$(printf '%s\n' "${b[@]}" | median)
ratio=$(awk -v a="$A" -v b="$B" 'BEGIN {printf "%.3f", (a > 0 ? b / a : 0)}')
echo "| call | without --acl req/s | with --acl (42 rules) req/s | ratio |"
echo "|---|---:|---:|---:|"
printf '| list_skills | %.0f | %.0f | %s |\n' "$A" "$B" "$ratio"
[ $SMOKE = 1 ] && strict_summary 1 0
exit 0
