#!/usr/bin/env bash
# tests/check-skips.sh SUITE TAP_LOG - holds the skipped and todo tests of one
# suite's TAP output against the allow-list (tests/skips-allowed.txt, or
# $SKIPS_ALLOWED).
#
# Prints each allowed skip with the list's reason, and each skip not on the
# list as a FAIL line naming the test. The last line is always
# "SKIPS allowed A unexpected U"; the exit status is 1 when U > 0.
#
# A `# TODO` test counts as a skip: node:test runs it but never fails the run
# on it, so it proves nothing until it is on the list with a reason.
set -uo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 SUITE TAP_LOG" >&2
    echo "SKIPS allowed 0 unexpected 1"
    exit 2
fi
suite=$1 log=$2
list=${SKIPS_ALLOWED:-"$(cd "$(dirname "$0")" && pwd)/skips-allowed.txt"}
if [ ! -r "$log" ]; then
    echo "check-skips: cannot read $log" >&2
    echo "SKIPS allowed 0 unexpected 1"
    exit 1
fi
if [ ! -r "$list" ]; then
    echo "check-skips: cannot read the allow-list $list" >&2
    echo "SKIPS allowed 0 unexpected 1"
    exit 1
fi

awk -v suite="$suite" -v listfile="$list" '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    BEGIN {
        # "SUITE TEST NAME  # REASON": the reason follows the last " # ".
        while ((getline line < listfile) > 0) {
            if (line ~ /^[ \t]*(#|$)/) continue
            s = trim(line)
            sp = index(s, " ")
            if (!sp) continue
            if (substr(s, 1, sp - 1) != suite) continue
            rest = substr(s, sp + 1)
            cut = 0
            for (i = length(rest) - 2; i > 0; i--) if (substr(rest, i, 3) == " # ") { cut = i; break }
            if (!cut) { bad_list[++nbad] = line; continue }
            allowed[trim(substr(rest, 1, cut - 1))] = trim(substr(rest, cut + 3))
        }
        close(listfile)
    }
    # TAP: "ok 3 - name # SKIP reason", indented for subtests; node escapes
    # "#" and "\" in names as "\#" and "\\".
    match($0, /^[ \t]*(not )?ok [0-9]+ - /) {
        body = substr($0, RLENGTH + 1)
        d = ""; rest = body; name = ""; found = 0
        while ((k = index(rest, " # ")) > 0) {
            head = substr(rest, 1, k - 1); tail = substr(rest, k + 3)
            if (head ~ /\\$/ ) { name = name head " # "; rest = tail; continue }
            if (toupper(tail) ~ /^(SKIP|TODO)([ \t]|$)/) { name = name head; d = tail; found = 1 }
            break
        }
        if (!found) next
        gsub(/\\#/, "#", name); gsub(/\\\\/, "\\", name)
        kind = toupper(substr(d, 1, 4)); why = trim(substr(d, 5))
        if (name in allowed) {
            na++
            printf "%s %s: %s (allowed: %s)\n", kind == "TODO" ? "todo" : "skip", suite, name, allowed[name]
        } else {
            nu++
            printf "FAIL unexpected %s in %s: \"%s\"%s\n", kind == "TODO" ? "todo" : "skip", suite, name, why != "" ? " (" why ")" : ""
        }
    }
    END {
        for (i = 1; i <= nbad; i++) { printf "FAIL %s: a line without \" # reason\": %s\n", listfile, bad_list[i]; nu++ }
        if (nu) printf "  Make the test run, or add \"%s <test name>  # <why it may skip>\" to %s.\n", suite, listfile
        printf "SKIPS allowed %d unexpected %d\n", na, nu
        exit nu > 0
    }
' "$log"
