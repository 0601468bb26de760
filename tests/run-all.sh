#!/usr/bin/env bash
# make test: unit, end-to-end and conformance against the normal build, then
# unit and end-to-end again against the ASan+UBSan build. Prints each
# suite's summary and, last, the total as `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
total_p=0; total_f=0; status=0
declare -a lines

# account NAME RC LOG SECS: adds a finished suite's SUMMARY line to the totals
account() {
    local name=$1 rc=$2 log=$3 secs=$4
    local s; s=$(grep -E '^SUMMARY ' "$log" | tail -n 1)
    local p f
    p=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/p' <<<"$s")
    f=$(sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/p' <<<"$s")
    if [ -z "$p" ]; then p=0; f=1; s="SUMMARY $name: no summary (exit $rc)"; fi
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    total_p=$((total_p + p)); total_f=$((total_f + f))
    [ "$f" -ne 0 ] && status=1
    lines+=("$name: $p passed, $f failed ($secs s)")
}

run() {   # run NAME CMD...: captures the suite's SUMMARY line
    local name=$1; shift
    echo "=== $name"
    local t0=$SECONDS
    local log; log=$(mktemp)
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    account "$name" "$rc" "$log" $((SECONDS - t0))
    rm -f "$log"
}

# Suites that mostly wait (on servers, scripts, a fake API) run beside the
# next foreground suite: run_bg starts one with its output kept apart,
# wait_bg prints each one whole once it ended and counts it like run does.
bg=()
run_bg() {   # run_bg NAME CMD...
    local name=$1; shift
    local log; log=$(mktemp)
    local t0; t0=$(date +%s)
    ( "$@" >"$log" 2>&1; echo "$? $(( $(date +%s) - t0 ))" >"$log.rc" ) &
    bg+=("$name|$!|$log")
}
wait_bg() {
    local e name pid log rc secs
    for e in "${bg[@]}"; do
        IFS='|' read -r name pid log <<<"$e"
        wait "$pid"
        read -r rc secs <"$log.rc" 2>/dev/null || { rc=1; secs=0; }
        echo "=== $name (ran beside the suites above)"
        cat "$log"
        account "$name" "$rc" "$log" "$secs"
        rm -f "$log" "$log.rc"
    done
    bg=()
}

# Builds use both cores (the suites themselves are what the 15 minutes buy).
# Each stage below keeps both cores busy: a suite that mostly waits (on
# servers, scripts, timers) runs beside one that computes.
J=-j$(nproc)
make -s $J all unit-build || { echo "0 passed, 1 failed"; exit 1; }
# The unit binaries mostly sleep on timers and children: beside e2e.
run_bg unit tests/run-unit.sh build
run e2e tests/run-e2e.sh build/skill-mcp
wait_bg
# The ASan build compiles while the conformance stage waits on its servers
# and scripts (the build would otherwise stand alone for about a minute).
asan_log=$(mktemp)
( make -s $J asan-build >"$asan_log" 2>&1; echo $? >"$asan_log.rc" ) &
asan_pid=$!
run_bg skills bash tests/fakeapi/run_examples.sh
run_bg acceptance node acceptance/run.mjs --bin build/skill-mcp --summary
run_bg lint tests/lint.sh build
run_bg selftest tests/selftest.sh
run conformance tests/run-conformance.sh build/skill-mcp
wait_bg
wait "$asan_pid"
asan_rc=$(cat "$asan_log.rc" 2>/dev/null || echo 1)
if [ "$asan_rc" -eq 0 ]; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    run_bg unit-asan tests/run-unit.sh build-asan
    # ThreadSanitizer's build and run fill what e2e-asan leaves idle.
    run_bg tsan make -s tsan
    run e2e-asan tests/run-e2e.sh build-asan/skill-mcp
    wait_bg
else
    echo "=== asan-build"
    cat "$asan_log"
    echo "ASan build failed (exit $asan_rc)"
    lines+=("asan-build: 0 passed, 1 failed")
    total_f=$((total_f + 1)); status=1
    run tsan make -s $J tsan
fi
rm -f "$asan_log" "$asan_log.rc"
# The fuzz smoke is time-boxed per target (4 s each after its seeds: a
# smoke; longer runs are `FUZZ_TIME=300 tests/fuzz/build.sh --smoke`), so its
# length does not grow with what runs beside it. The deployment check builds the
# tree once more (the Dockerfile's build stage); the two cores are full here,
# which is what bounds this stage.
run_bg deploy bash tests/deploy-check.sh build/skill-mcp
run_bg deb bash tests/deb-check.sh build/skill-mcp
run_bg docs-commands node tests/docs-commands.mjs build/skill-mcp
run fuzz-smoke env FUZZ_TIME=4 tests/fuzz/build.sh --smoke
wait_bg
# The benchmark smokes pin a server and a load generator to the two cores:
# they run alone.
run bench-smoke bench/run.sh --smoke
run bench-scripts-smoke bench/scripts.sh --smoke
run bench-scale-smoke bench/scale.sh --smoke
run bench-redact-smoke bench/redact.sh --smoke
run soak-smoke bench/soak.sh --smoke

echo
echo "=== summary"
for l in "${lines[@]}"; do echo "  $l"; done
echo "$total_p passed, $total_f failed"
exit $status
