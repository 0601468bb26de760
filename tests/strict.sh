# tests/strict.sh - sourced first (after `set -e...`) by the shell scripts of
# the test and bench tooling, so that none of them can stop without saying
# why.
#
# Always: pipefail, so `x=$(cmd | grep ...)` fails when cmd fails, not only
# when the last stage does.
#
# In a script running with `set -e`:
#   - an early exit prints the file, line and command that failed and its
#     status ("run.sh: stopped at bench/run.sh:72: 'line=$(run_wrk ...)'
#     exited 1"), on stderr;
#   - strict_at_exit FUNC runs FUNC on exit (cleanup); use it instead of
#     `trap ... EXIT`, which would replace this file's handler;
#   - STRICT_SUMMARY=NAME promises a "SUMMARY NAME: P passed, F failed"
#     line: print it with strict_summary P F; a script that exits without
#     having printed it gets "SUMMARY NAME: 0 passed, 1 failed" and a
#     non-zero status.
set -o pipefail

STRICT_WHY=""
STRICT_SUMMARY=${STRICT_SUMMARY:-}
STRICT_SUMMARY_DONE=""
STRICT_AT_EXIT=()

strict_at_exit() { STRICT_AT_EXIT+=("$@"); }

strict_summary() {
    echo "SUMMARY $STRICT_SUMMARY: $1 passed, $2 failed"
    STRICT_SUMMARY_DONE=1
}

# Records only: a failing command inside $(...) runs this too (set -E) but
# may be handled by its caller; the EXIT handler reports what ended the run.
strict_on_err() {
    case $- in *e*) ;; *) return 0 ;; esac   # inside set +e: tolerated
    STRICT_WHY="${BASH_SOURCE[1]:-$0}:$2: '$3' exited $1"
}

strict_on_exit() {
    local rc=$?
    set +e
    trap - ERR
    local f
    for f in "${STRICT_AT_EXIT[@]}"; do "$f"; done
    if [ "$rc" -ne 0 ] && [ -n "$STRICT_WHY" ]; then
        echo "${0##*/}: stopped at $STRICT_WHY" >&2
    fi
    if [ -n "$STRICT_SUMMARY" ] && [ -z "$STRICT_SUMMARY_DONE" ]; then
        echo "${0##*/}: exited (status $rc) before its summary" >&2
        echo "SUMMARY $STRICT_SUMMARY: 0 passed, 1 failed"
        [ "$rc" -eq 0 ] && rc=1
    fi
    exit "$rc"
}

case $- in
*e*)
    set -E
    trap 'strict_on_err $? $LINENO "$BASH_COMMAND"' ERR
    trap strict_on_exit EXIT
    ;;
esac
