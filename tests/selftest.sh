#!/usr/bin/env bash
# tests/selftest.sh - the test tooling's own guarantees, checked on fixtures
# (tests/selftest/) in a few seconds:
#   - tests/run-e2e.sh fails a run with a skipped or todo test the allow-list
#     does not name, and passes one it names, printing the reason;
#   - tests/run-unit.sh does the same for TAP skips, and fails a binary that
#     stops before its plan;
#   - a strict script (tests/strict.sh) that stops early names the command
#     and line, and still prints its SUMMARY line;
#   - the Makefile names a pkg-config package it cannot find.
# Last line: "SUMMARY selftest: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
pass=0; fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/skill-mcp-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# expect NAME WANT_RC PATTERN... -- CMD...: CMD's exit status is WANT_RC
# ("nonzero" for any but 0) and its output matches every PATTERN (grep -E).
expect() {
    local name=$1 want=$2; shift 2
    local pats=()
    while [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    "$@" >"$tmp/out" 2>&1
    local rc=$? ok=1 p
    if [ "$want" = nonzero ]; then [ "$rc" -ne 0 ] || ok=0; else [ "$rc" -eq "$want" ] || ok=0; fi
    for p in "${pats[@]}"; do grep -qE -- "$p" "$tmp/out" || { ok=0; echo "    missing: $p"; }; done
    if [ $ok = 1 ]; then pass=$((pass + 1)); echo "ok   $name"
    else fail=$((fail + 1)); echo "FAIL $name (exit $rc, want $want); output:"; tail -n 25 "$tmp/out" | sed 's/^/    /'; fi
}

F=tests/selftest
expect "run-e2e.sh: a skip not on the allow-list fails the run" 1 \
    'FAIL unexpected skip in e2e: "a test that skips itself" \(the feature it checks is missing\)' \
    '^SUMMARY e2e: 1 passed, 1 failed$' -- \
    env E2E_FILES="$F/skips.fixture.mjs" tests/run-e2e.sh /bin/true
expect "run-e2e.sh: an allowed skip passes, printed with its reason" 0 \
    '^skip e2e: a test that skips itself \(allowed: allowed by the self-test.s own list\)$' \
    '^SUMMARY e2e: 1 passed, 0 failed$' -- \
    env SKIPS_ALLOWED="$F/skips-allowed.txt" E2E_FILES="$F/skips.fixture.mjs" tests/run-e2e.sh /bin/true
expect "run-e2e.sh: a todo test fails the run" 1 \
    'FAIL unexpected todo in e2e: "a todo test"' '^SUMMARY e2e: 0 passed, 1 failed$' -- \
    env E2E_FILES="$F/todo.fixture.mjs" tests/run-e2e.sh /bin/true

# Unit binaries are stood in for by scripts printing TAP.
mkdir -p "$tmp/b1/tests" "$tmp/b2/tests"
printf '#!/bin/sh\nprintf "ok 1 - works\\nok 2 - skipped_on_purpose # SKIP no fixture\\nok 3 - quietly_skipped # SKIP no reason\\n1..3\\n"\n' >"$tmp/b1/tests/test_skips"
printf '#!/bin/sh\nprintf "ok 1 - works\\n"\n' >"$tmp/b2/tests/test_noplan"
chmod +x "$tmp/b1/tests/test_skips" "$tmp/b2/tests/test_noplan"
expect "run-unit.sh: only listed skips pass" 1 \
    '^skip unit: skipped_on_purpose \(allowed: ' 'FAIL unexpected skip in unit: "quietly_skipped" \(no reason\)' \
    '^SUMMARY unit: 1 passed, 1 failed$' -- \
    env SKIPS_ALLOWED="$F/skips-allowed.txt" tests/run-unit.sh "$tmp/b1"
expect "run-unit.sh: a binary that stops before its plan fails" 1 \
    'FAIL test_noplan printed no TAP plan' '^SUMMARY unit: 1 passed, 1 failed$' -- \
    tests/run-unit.sh "$tmp/b2"

expect "strict.sh: an early exit names its command and line, and prints the SUMMARY" nonzero \
    "stopped at .*stops-early\.sh:7: 'line=\\\$\(printf" '^SUMMARY stops-early: 0 passed, 1 failed$' -- \
    "$F/stops-early.sh"

expect "Makefile: a missing pkg-config package is named" nonzero 'no-such-package-xyz' -- \
    make -n BUILD="$tmp/build" PKGS="jansson no-such-package-xyz" "$tmp/build/obj/util.o"

echo "SUMMARY selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
