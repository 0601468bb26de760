#!/usr/bin/env bash
# tests/run-e2e.sh BINARY - the end-to-end suite (tests/e2e/*.test.mjs) against
# a skill-mcp binary. Each test file starts its own server on --port 0.
#
# Last line of output, always: "SUMMARY e2e: P passed, F failed".
# Exit status: 0 when every test passed, 1 otherwise (runner crash included).
# A skipped or todo test counts as failed unless tests/skips-allowed.txt
# lists it (tests/check-skips.sh); an allowed one is printed with its reason.
#
# Environment: E2E_TIMEOUT (seconds, default 480) bounds the whole run, a
# ceiling for a loaded machine (the suite takes 2-4 min on an idle one);
# E2E_FILES overrides the test files (space-separated, relative to the repo);
# E2E_CONCURRENCY files run at once (default 4: most tests wait on servers,
# timers and scripts rather than the CPU: 133 s for the plain run at 4
# against 156 s at 3 on an idle 2-core machine).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
e2e="$here/e2e"
. "$here/lib.sh"

summary() { echo "SUMMARY e2e: $1 passed, $2 failed"; }

bin="$(binary_arg run-e2e "$@")" || { rc=$?; summary 0 1; exit $rc; }
export SKILL_MCP_BIN="$bin"

if ! command -v node >/dev/null 2>&1; then
    echo "run-e2e: node is not installed (needed for the MCP SDK client)" >&2
    summary 0 1
    exit 1
fi

# Dependencies: install from the lockfile when missing or out of date.
if ! npm_ready run-e2e "$e2e" @modelcontextprotocol/sdk; then
    summary 0 1
    exit 1
fi

cd "$repo" || exit 1
files="${E2E_FILES:-}"
if [ -z "$files" ]; then
    # The longest files start first: node runs them in the order given, and
    # in name order tasks.test.mjs (~50 s, mostly timers) started last and
    # ran alone for most of a minute at the end. The rest follow by name.
    long="tasks runner stdio trust workers hooks fetch completion progress"
    for f in $long; do
        [ -f "tests/e2e/$f.test.mjs" ] && files="$files tests/e2e/$f.test.mjs"
    done
    for f in tests/e2e/*.test.mjs; do
        [ -f "$f" ] || continue
        case " $long " in *" $(basename "$f" .test.mjs) "*) continue ;; esac
        files="$files $f"
    done
fi
if [ -z "$files" ]; then
    echo "run-e2e: no test files in tests/e2e" >&2
    summary 0 1
    exit 1
fi

log="$(mktemp "${TMPDIR:-/tmp}/skill-mcp-e2e.XXXXXX")"
trap 'rm -f "$log"' EXIT

# The runner (and every server it spawned) dies with the global timeout;
# the harness kills its servers on exit, and the process group goes too.
# shellcheck disable=SC2086
timeout --kill-after=10 "${E2E_TIMEOUT:-480}" \
    node --test --test-concurrency="${E2E_CONCURRENCY:-4}" --test-reporter=tap $files 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

pass="$(sed -n 's/^# pass \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"
fail="$(sed -n 's/^# fail \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"
cancelled="$(sed -n 's/^# cancelled \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"
skipped="$(sed -n 's/^# skipped \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"
todo="$(sed -n 's/^# todo \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)"

if [ -z "$pass" ] || [ -z "$fail" ]; then
    # The runner crashed or timed out before its closing lines.
    [ "$rc" = 124 ] && echo "run-e2e: timed out after ${E2E_TIMEOUT:-480} s" >&2
    echo "run-e2e: the test runner did not finish (exit $rc)" >&2
    summary "${pass:-0}" "$(( ${fail:-0} + 1 ))"
    exit 1
fi
fail=$(( fail + ${cancelled:-0} ))

echo
skips="$("$here/check-skips.sh" e2e "$log")"
printf '%s\n' "$skips" | sed '$d'
read -r _ _ allowed _ unexpected <<<"$(printf '%s\n' "$skips" | tail -n 1)"
# node's own count catches a skip whose TAP line the checker could not read.
unread=$(( ${skipped:-0} + ${todo:-0} - ${allowed:-0} - ${unexpected:-0} ))
if [ "$unread" -gt 0 ]; then
    echo "FAIL node reports $unread skipped/todo test(s) that tests/check-skips.sh did not find in the TAP output"
    unexpected=$(( ${unexpected:-0} + unread ))
fi
fail=$(( fail + ${unexpected:-1} ))   # no SKIPS line: the checker failed
[ "${allowed:-0}" -gt 0 ] && echo "run-e2e: ${allowed} allowed skip(s), listed in tests/skips-allowed.txt"

if [ "$fail" -gt 0 ]; then
    echo
    echo "Failed tests:"
    # Each "not ok" line with the first lines of its error message.
    awk '
        /^ *not ok / { sub(/^ */, ""); print "  " $0; inerr = 0; shown = 0; want = 1; next }
        !want { next }
        /^ *\.\.\.$/ { want = 0; next }
        /^ *error: \|-$/ { inerr = 1; next }
        /^ *error: / { sub(/^ *error: /, ""); print "      " $0; next }
        inerr && /^ *(code|name|expected|actual|operator|stack|failureType):/ { inerr = 0 }
        inerr && NF && shown < 4 { sub(/^ */, ""); print "      " $0; shown++ }
    ' "$log"
fi
summary "$pass" "$fail"
if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
    exit 1
fi
exit 0
