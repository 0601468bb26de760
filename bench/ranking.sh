#!/usr/bin/env bash
# Ranking quality of list_skills(query) over a skill library: runs the
# server on LIBRARY_DIR, asks every query of bench/ranking/queries.tsv
# (query <TAB> expected qualified name) and prints top-1 and top-3 hit
# rates, with each miss. The body index is built in the background after
# start-up; the run waits (up to 10 s) for the server to log it.
#
#   bench/ranking.sh LIBRARY_DIR [BIN] [QUERIES]
#
# e.g. with the public library github.com/anthropics/skills checked out in
# /tmp/pubskills:  bench/ranking.sh /tmp/pubskills/skills
set -eu
cd "$(dirname "$0")/.."
LIB=${1:?usage: bench/ranking.sh LIBRARY_DIR [BIN] [QUERIES]}
BIN=${2:-build/skill-mcp}
QUERIES=${3:-bench/ranking/queries.tsv}
[ -d "$LIB" ] || { echo "not a directory: $LIB" >&2; exit 2; }
[ -x "$BIN" ] || make -s all
command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 1; }

log=$(mktemp); srv=
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null; rm -f "$log"; }
trap cleanup EXIT
"$BIN" --skills "$LIB" --port 0 --refresh-interval 0 2>"$log" &
srv=$!
url=
for _ in $(seq 300); do
    url=$(sed -nE 's/.*listening on (http:[^ ]+).*/\1/p' "$log" | head -1)
    [ -n "$url" ] && break
    kill -0 "$srv" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$url" ] || { echo "the server did not start" >&2; cat "$log" >&2; exit 1; }
indexed=0
for _ in $(seq 100); do
    grep -q "indexed the bodies" "$log" && { indexed=1; break; }
    sleep 0.1
done
[ $indexed = 1 ] || echo "note: no body index logged within 10 s (an older server?); ranking as is"
sleep 0.2   # the rescan that publishes the body index follows the log line

total=0; top1=0; top3=0
while IFS=$'\t' read -r q want; do
    case "$q" in ''|'#'*) continue ;; esac
    body=$(python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_skills","arguments":{"query":sys.argv[1],"limit":3}}}))' "$q")
    got=$(curl -s -X POST "$url" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
        -d "$body" | python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]["structuredContent"]
names = [] if r.get("hint") else [c["qualified_name"] for c in r["skills"]]
print(" ".join(names))')
    total=$((total + 1))
    first=${got%% *}
    if [ "$first" = "$want" ]; then top1=$((top1 + 1)); fi
    case " $got " in *" $want "*) top3=$((top3 + 1)) ;; *) ;; esac
    [ "$first" = "$want" ] || printf 'miss  %-48s want %-22s got %s\n' "$q" "$want" "${got:-(nothing)}"
done <"$QUERIES"
awk -v n="$total" -v a="$top1" -v b="$top3" 'BEGIN {
    printf "queries %d  top-1 %d (%.0f%%)  top-3 %d (%.0f%%)\n", n, a, n ? 100 * a / n : 0, b, n ? 100 * b / n : 0 }'
