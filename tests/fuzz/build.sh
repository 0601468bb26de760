#!/usr/bin/env bash
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
. tests/strict.sh
[ "${1:-}" = "--smoke" ] && STRICT_SUMMARY=fuzz
OUT=build-fuzz
CC=${FUZZ_CC:-clang}
TIME=${FUZZ_TIME:-20}
PKGS="jansson yaml-0.1"

CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iserver"
LIBS="$(pkg-config --libs $PKGS) -lm"
CFLAGS="$CFLAGS $(pkg-config --cflags $PKGS)"

# Every source is compiled once (instrumented, not linked as a fuzzer) and
# each target links what it needs: four targets link the whole server, and
# compiling it four times was most of this script's time.
ALL="libmicrohttpd jansson yaml-0.1 libuv libpcre2-8 libcrypto libarchive hiredis libcurl jose"
OBJ="$OUT/obj"
rm -rf "$OBJ"
mkdir -p "$OBJ"
OCFLAGS="${CFLAGS/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,} $(pkg-config --cflags $ALL) -DSKILL_VERSION=\"fuzz\""
export OCFLAGS CC OBJ
# shellcheck disable=SC2016
ls server/*.c | grep -v server/main.c | xargs -P "$(nproc)" -I{} sh -c \
    'o="$OBJ/$(basename {} .c).o"; $CC $OCFLAGS -c -o "$o" {} || { rm -f "$o"; exit 255; }'
SMALL="$OBJ/frontmatter.o $OBJ/fmfast.o $OBJ/yamlcore.o $OBJ/markdown.o $OBJ/shape.o $OBJ/shape_json.o $OBJ/shape_tokens.o $OBJ/json.o $OBJ/util.o"
link() {    # link TARGET OBJECTS LIBS
    # shellcheck disable=SC2086
    $CC $CFLAGS -o "$OUT/fuzz_$1" "tests/fuzz/fuzz_$1.c" $2 $3 && echo "built $OUT/fuzz_$1"
}
for t in frontmatter fmfast markdown shape shapejson json; do
    link "$t" "$SMALL" "$LIBS" &
done
# The JWT splitter and claims checks need jansson and libjose's base64url
# (loaded by dynlib.o, as the server does).
link jwt "$OBJ/jwt.o $OBJ/dynlib.o $OBJ/util.o" "$(pkg-config --libs jansson jose) -lm -lpthread" &
wait
# The request path, the URI resolver, the lock parser, fetch's index and
# archive reading and redaction link the whole server but main.c.
for t in rpc uri lock fetch redact acl; do
    link "$t" "$OBJ/*.o" "$(pkg-config --libs $ALL) -lpthread -lm" &
    [ "$t" = uri ] && wait
done
wait
for t in frontmatter fmfast markdown shape shapejson json jwt rpc uri lock fetch redact acl; do
    [ -x "$OUT/fuzz_$t" ] || { echo "FAIL: fuzz_$t did not build" >&2; exit 1; }
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

# Seeds for the fast path of the frontmatter parser: the SKILL.md cases, the
# bundled skills and a few hand-made and generated ones (tests/fuzz/seeds-fmfast).
MSEEDS="$OUT/seeds-fmfast"
rm -rf "$MSEEDS"
mkdir -p "$MSEEDS"
cp "$SEEDS"/* tests/fuzz/seeds-fmfast/* "$MSEEDS"/
i=0
find skills -name SKILL.md | sort | while read -r f; do
    i=$((i + 1))
    cp "$f" "$MSEEDS/skill-$i"
done

status=0
passed=0
failed=0
# Seeds for the request path: a few real requests of every kind.
RSEEDS="$OUT/seeds-rpc"
rm -rf "$RSEEDS"
mkdir -p "$RSEEDS"
n=0
for body in \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_skills","arguments":{"query":"first","tags":["a"],"limit":2}}}' \
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"load_skill","arguments":{"name":"alpha","section":"usage"}}}' \
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_skill_file","arguments":{"name":"team/beta","path":"SKILL.md","max_bytes":10}}}' \
    '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"skill://alpha/references/r.md"}}' \
    '{"jsonrpc":"2.0","id":6,"method":"skills/get","params":{"uri":"skill://alpha/SKILL.md"}}' \
    '{"jsonrpc":"2.0","id":7,"method":"resources/directory/read","params":{"uri":"skill://alpha"}}' \
    '{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"alpha","arguments":{"task":"x"}}}' \
    '{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' \
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'; do
    n=$((n + 1))
    printf '%s' "$body" >"$RSEEDS/seed-$n"
done

# Seeds for the lock parser: a valid entry, a revoked one, comments.
LSEEDS="$OUT/seeds-lock"
rm -rf "$LSEEDS"
mkdir -p "$LSEEDS"
f1="sha256:$(printf 'a' | sha256sum | cut -c1-64)"
lines="$f1 1 SKILL.md
$f1 1 scripts/run.py
"
d="sha256:$(printf '%s' "$lines" | sha256sum | cut -c1-64)"
printf '# lock\nteam/a %s execution=none approved-by=alice approved-at=2026-11-29T10:00:00Z\n  %s 1 SKILL.md\n  %s 1 scripts/run.py\n' \
    "$d" "$f1" "$f1" >"$LSEEDS/seed-1"
printf 'b %s execution=%s approved-by=x approved-at=2026-11-29T10:00:00Z revoked-by=y revoked-at=2026-11-30T00:00:00Z\n  %s 1 SKILL.md\n  %s 1 scripts/run.py\n' \
    "$d" "$f1" "$f1" "$f1" >"$LSEEDS/seed-2"

# Seeds for fetch: an index (first byte even) and tar.gz archives (first
# byte odd), one good and a few with a hazard each.
FSEEDS="$OUT/seeds-fetch"
rm -rf "$FSEEDS"
mkdir -p "$FSEEDS"
printf '\000{"$schema":"https://schemas.agentskills.io/discovery/0.2.0/schema.json","skills":[{"name":"a","description":"d","type":"archive","url":"a.tar.gz","digest":"sha256:%064d"},{"name":"b"}]}' 0 \
    >"$FSEEDS/seed-index"
python3 - "$FSEEDS" <<'PY'
import io, os, sys, tarfile
out = sys.argv[1]
def add(t, name, data=b'', typ=tarfile.REGTYPE, link=''):
    ti = tarfile.TarInfo(name); ti.type = typ; ti.linkname = link; ti.size = len(data) if typ == tarfile.REGTYPE else 0
    t.addfile(ti, io.BytesIO(data) if typ == tarfile.REGTYPE else None)
cases = {
    'good': [('a/', b'', tarfile.DIRTYPE, ''), ('a/SKILL.md', b'---\nname: a\ndescription: d\n---\n', tarfile.REGTYPE, '')],
    'dotdot': [('a/../x', b'x', tarfile.REGTYPE, '')],
    'link': [('a/l', b'', tarfile.SYMTYPE, '../x'), ('a/h', b'', tarfile.LNKTYPE, 'a/l')],
    'dup': [('a/f', b'1', tarfile.REGTYPE, ''), ('a/f', b'2', tarfile.REGTYPE, '')],
}
for name, members in cases.items():
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode='w:gz', format=tarfile.PAX_FORMAT) as t:
        for m in members:
            add(t, *m)
    open(os.path.join(out, 'seed-' + name), 'wb').write(b'\x01' + b.getvalue())
PY

fuzz_one() {    # fuzz_one TARGET: 0 when it ran its time without a crash
    local t=$1 seeds dict=
    local corpus="$OUT/corpus-$t"
    mkdir -p "$corpus"
    case $t in
    rpc) seeds=$RSEEDS ;;
    lock) seeds=$LSEEDS ;;
    fetch) seeds=$FSEEDS ;;
    fmfast) seeds=$MSEEDS ;;
    shape | shapejson | uri | json | jwt | redact | acl) seeds=tests/fuzz/seeds-$t ;;
    *) seeds=$SEEDS ;;
    esac
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$OUT/fuzz_$t" -max_total_time="$TIME" -max_len=65536 -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=0 $dict \
            -artifact_prefix="$OUT/crash-$t-" "$corpus" "$seeds" \
            >"$OUT/fuzz_$t.log" 2>&1
}

# One target per core at a time: the smoke is time-boxed per target, so the
# run takes half as long on two cores and each target fuzzes as long.
TARGETS="frontmatter fmfast markdown rpc shape shapejson uri lock fetch json jwt redact acl"
JOBS=$(nproc)
set -- $TARGETS
while [ $# -gt 0 ]; do
    batch=
    for _ in $(seq "$JOBS"); do
        [ $# -gt 0 ] || break
        echo "fuzzing $1 for ${TIME}s"
        fuzz_one "$1" &
        batch="$batch $1:$!"
        shift
    done
    for tp in $batch; do
        t=${tp%%:*}
        if ! wait "${tp#*:}"; then
            echo "FAIL: fuzz_$t crashed; see $OUT/fuzz_$t.log and $OUT/crash-$t-*" >&2
            tail -n 40 "$OUT/fuzz_$t.log" >&2
            status=1
            failed=$((failed + 1))
        else
            grep -E '^#[0-9]+.*DONE' "$OUT/fuzz_$t.log" | tail -n 1 || true
            passed=$((passed + 1))
        fi
    done
done
strict_summary "$passed" "$failed"
exit $status
