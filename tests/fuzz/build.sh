#!/bin/sh
# tests/fuzz/build.sh - build the libFuzzer targets into build-fuzz/.
#
#   tests/fuzz/build.sh           build only
#   tests/fuzz/build.sh --smoke   build, then run each target for ~20 s over a
#                                 seed corpus made of tests/data/frontmatter/**/SKILL.md;
#                                 exits non-zero if any target crashes
#   FUZZ_TIME=300 tests/fuzz/build.sh --smoke    run longer
#
# Run from anywhere; paths are relative to the repository root.
set -eu

cd "$(dirname "$0")/../.."
OUT=build-fuzz
CC=${FUZZ_CC:-clang}
TIME=${FUZZ_TIME:-20}
PKGS="jansson yaml-0.1"

CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iserver"
LIBS="$(pkg-config --libs $PKGS) -lm"
CFLAGS="$CFLAGS $(pkg-config --cflags $PKGS)"

mkdir -p "$OUT"
for t in frontmatter markdown; do
    # shellcheck disable=SC2086
    $CC $CFLAGS -o "$OUT/fuzz_$t" "tests/fuzz/fuzz_$t.c" \
        server/frontmatter.c server/markdown.c server/util.c $LIBS
    echo "built $OUT/fuzz_$t"
done

[ "${1:-}" = "--smoke" ] || exit 0

# Seed corpus: every SKILL.md test case (and the markdown target also gets
# them, as bodies). libFuzzer writes new inputs into the first directory only.
SEEDS="$OUT/seeds"
rm -rf "$SEEDS"
mkdir -p "$SEEDS"
i=0
find tests/data/frontmatter -name SKILL.md | sort | while read -r f; do
    i=$((i + 1))
    cp "$f" "$SEEDS/seed-$i"
done

status=0
passed=0
failed=0
for t in frontmatter markdown; do
    corpus="$OUT/corpus-$t"
    mkdir -p "$corpus"
    echo "fuzzing $t for ${TIME}s"
    if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$OUT/fuzz_$t" -max_total_time="$TIME" -max_len=65536 -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=0 \
            -artifact_prefix="$OUT/crash-$t-" "$corpus" "$SEEDS" \
            >"$OUT/fuzz_$t.log" 2>&1; then
        echo "FAIL: fuzz_$t crashed; see $OUT/fuzz_$t.log and $OUT/crash-$t-*" >&2
        tail -n 40 "$OUT/fuzz_$t.log" >&2
        status=1
        failed=$((failed + 1))
    else
        grep -E '^#[0-9]+.*DONE' "$OUT/fuzz_$t.log" | tail -n 1 || true
        passed=$((passed + 1))
    fi
done
echo "SUMMARY fuzz: $passed passed, $failed failed"
exit $status
