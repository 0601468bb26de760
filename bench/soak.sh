#!/usr/bin/env bash
# bench/soak.sh - the soak: 1,000,000 mixed requests (list_skills,
# list_skills(query), load_skill, read_skill_file, and every 500th a
# run_skill_script) on 8 keep-alive connections, while 300 slow clients from
# 127.0.0.2 send whole requests one byte every 50 ms and two more keep
# scripts (a 0.3 s nap) in flight. Every answer is checked against what it
# must be (bench/soak.c); the server's RSS is sampled throughout.
#
#   bench/soak.sh            the full soak (~5-10 min on 2 cores); writes
#                            bench/results/soak-<date>.md
#   bench/soak.sh --smoke    20,000 requests, 50 slow clients (seconds);
#                            no results file
#   SOAK_N=... SOAK_FAST=... SOAK_SLOW=...   override the sizes
#
# Exit status 1 on any wrong answer, transport error, or a server that died.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
STRICT_SUMMARY=soak
smoke=0; [ "${1:-}" = --smoke ] && smoke=1
N=${SOAK_N:-$([ $smoke = 1 ] && echo 20000 || echo 1000000)}
FAST=${SOAK_FAST:-$([ $smoke = 1 ] && echo 4 || echo 8)}
SLOW=${SOAK_SLOW:-$([ $smoke = 1 ] && echo 50 || echo 300)}
BIN=${SKILL_MCP_BIN:-build/skill-mcp}

[ -x "$BIN" ] || { echo "soak: $BIN missing (run make)"; exit 1; }
mkdir -p build/bench
cc -O2 -Wall -Wextra -o build/bench/soak bench/soak.c $(pkg-config --cflags --libs jansson) -lpthread

tmp=$(mktemp -d); pid=""
chmod 755 "$tmp"   # a root server runs scripts as nobody
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
strict_at_exit cleanup
lib="$tmp/lib"
for i in $(seq 0 19); do
    n=$(printf 's%02d' "$i")
    mkdir -p "$lib/$n/references"
    printf -- '---\nname: %s\ndescription: Soak skill number %d about topic%02d\n---\n# %s\n\nmarker-%s\n\n## Usage\nSome text for %s.\n' \
        "$n" "$i" "$i" "$n" "$n" "$n" >"$lib/$n/SKILL.md"
    python3 -c "import sys; print('\n'.join('reference line %d of $n' % k for k in range(40 + $i)))" >"$lib/$n/references/r.md"
done
mkdir -p "$lib/runner/scripts"
printf -- '---\nname: runner\ndescription: Runs the soak scripts\n---\n# runner\n' >"$lib/runner/SKILL.md"
printf 'printf "echo:%%s\\n" "$1"\n' >"$lib/runner/scripts/echo.sh"
printf 'sleep 0.3\nprintf "nap:%%s\\n" "$1"\n' >"$lib/runner/scripts/nap.sh"
chmod -R a+rX "$lib"

# --log-level warn keeps a million request lines out of the log, the
# "listening" line with them: the port is read back from the kernel.
"$BIN" --skills "$lib" --port 0 --refresh-interval 0 --max-connections-per-ip 1000 \
    --max-connections 2048 --log-level warn 2>"$tmp/srv.log" &
pid=$!
PORT=$(bench_port $pid) || { echo "soak: the server did not start"; cat "$tmp/srv.log"; exit 1; }
up=0
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && { up=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ $up = 1 ] || { echo "soak: /healthz did not answer"; cat "$tmp/srv.log"; exit 1; }

cmd="build/bench/soak $PORT $N $FAST $SLOW 127.0.0.2 $lib $pid"
set +e
line=$($cmd | tail -n 1)
rc=$?
set -e
echo "$line"
crashes=0
kill -0 "$pid" 2>/dev/null || crashes=1
if grep -qE 'AddressSanitizer|runtime error|Segmentation' "$tmp/srv.log"; then crashes=1; fi
echo "crashes=$crashes"
if [ $smoke = 0 ]; then
    out="bench/results/soak-$(date -u +%Y-%m-%d).md"
    {
        echo "# Soak $(date -u +%Y-%m-%dT%H:%MZ)"
        echo
        echo "Machine: $(nproc) cores, $(uname -sr), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
        echo "Server: $BIN as $(id -un) (a root server runs the scripts as nobody), default flags but --max-connections-per-ip 1000 --max-connections 2048 --log-level warn"
        echo
        echo "Command: \`bench/soak.sh\` (N=$N, $FAST fast connections, $SLOW slow clients from 127.0.0.2)"
        echo
        echo '```'
        echo "$line"
        echo "crashes=$crashes"
        echo '```'
    } >"$out"
    echo "wrote $out"
fi
if [ "$rc" -eq 0 ] && [ $crashes = 0 ]; then strict_summary 1 0; else strict_summary 0 1; exit 1; fi
