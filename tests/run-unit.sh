#!/usr/bin/env bash
# Runs every unit test binary in BUILD/tests with a timeout each and prints
# `SUMMARY unit: P passed, F failed` (tests counted from their TAP lines).
set -u
build=${1:-build}
pass=0; fail=0; crashed=0
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    out=$(timeout 120 "$t" 2>&1); rc=$?
    p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
    pass=$((pass + p)); fail=$((fail + f))
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        crashed=$((crashed + 1)); fail=$((fail + 1))
        echo "FAIL $(basename "$t") exited $rc without a failing test (crash or timeout):"
        tail -n 30 <<<"$out"
    elif [ "$f" -ne 0 ]; then
        echo "FAIL $(basename "$t"): $f failed"
        grep -E '^(not ok|#)' <<<"$out" | head -n 40
    else
        echo "ok   $(basename "$t"): $p passed"
    fi
done
echo "SUMMARY unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
