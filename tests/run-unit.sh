#!/usr/bin/env bash
# Runs every unit test binary in BUILD/tests with a timeout each and prints
# `SUMMARY unit: P passed, F failed` (tests counted from their TAP lines).
# A binary fails when a test fails, when it exits non-zero, when its TAP plan
# ("1..N") is missing or does not match the tests it reported (it stopped
# early), and when it runs no test at all. A skipped or todo test fails too
# unless tests/skips-allowed.txt lists it (tests/check-skips.sh).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build=${1:-build}
pass=0; fail=0; allowed_all=0; ran=0
out_file=$(mktemp "${TMPDIR:-/tmp}/skill-mcp-unit.XXXXXX")
trap 'rm -f "$out_file"' EXIT
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    [ -f "$t" ] || continue
    ran=$((ran + 1))
    name=$(basename "$t")
    timeout 120 "$t" >"$out_file" 2>&1; rc=$?
    p=$(grep -c '^ok ' "$out_file"); f=$(grep -c '^not ok ' "$out_file")
    plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$out_file" | tail -n 1)
    skips=$("$here/check-skips.sh" unit "$out_file")
    read -r _ _ allowed _ unexpected <<<"$(tail -n 1 <<<"$skips")"
    allowed=${allowed:-0}; unexpected=${unexpected:-1}
    # A skip is reported as "ok": it is neither a pass nor, when allowed, a failure.
    p=$((p - allowed - unexpected)); [ "$p" -lt 0 ] && p=0
    pass=$((pass + p)); fail=$((fail + f + unexpected)); allowed_all=$((allowed_all + allowed))
    why=""
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        why="exited $rc without a failing test (crash or timeout)"
    elif [ -z "$plan" ]; then
        why="printed no TAP plan (1..N): it stopped before DONE()"
    elif [ "$plan" -ne $((p + f + allowed + unexpected)) ]; then
        why="planned $plan tests but reported $((p + f + allowed + unexpected))"
    elif [ "$plan" -eq 0 ]; then
        why="ran no test"
    fi
    if [ -n "$why" ]; then
        fail=$((fail + 1))
        echo "FAIL $name $why:"
        tail -n 30 "$out_file"
    elif [ "$f" -ne 0 ] || [ "$unexpected" -ne 0 ]; then
        echo "FAIL $name: $f failed, $unexpected unexpected skip(s)"
        grep -E '^(not ok|#)' "$out_file" | head -n 40
        sed '$d' <<<"$skips" | grep -v '^skip ' || true
    else
        echo "ok   $name: $p passed"
    fi
    [ "$allowed" -gt 0 ] && grep '^skip \|^todo ' <<<"$skips"
done
if [ "$ran" -eq 0 ]; then
    echo "FAIL no test binaries in $build/tests (make unit-build first)"
    fail=$((fail + 1))
fi
[ "$allowed_all" -gt 0 ] && echo "run-unit: $allowed_all allowed skip(s), listed in tests/skips-allowed.txt"
echo "SUMMARY unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
