#!/usr/bin/env bash
# The cost of redaction (server/redact.c, bench/redact.c): 10 MB of mixed
# script output redacted with the built-in patterns, median of 9 runs, and
# each built-in alone. The smoke runs 1 MB once and checks every planted
# secret was found.
#
#   bench/redact.sh [--smoke]
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
SMOKE=0; [ "${1:-}" = --smoke ] && SMOKE=1
[ $SMOKE = 1 ] && STRICT_SUMMARY=bench-redact
make -s all
mkdir -p build/bench
PKGS="jansson libpcre2-8"
# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE -Iserver $(pkg-config --cflags $PKGS) -o build/bench/redact \
    bench/redact.c build/obj/redact.o build/obj/reloadable.o build/obj/shape.o build/obj/shape_json.o build/obj/shape_tokens.o build/obj/stats.o build/obj/util.o \
    build/obj/json.o $(pkg-config --libs $PKGS) -lpthread -lm
if [ $SMOKE = 1 ]; then
    # every planted secret found (the binary exits 1 otherwise)
    if build/bench/redact 1 1; then strict_summary 1 0; else strict_summary 0 1; exit 1; fi
else
    build/bench/redact 10 9
fi
