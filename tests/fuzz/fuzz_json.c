/*
 * fuzz_json.c - differential libFuzzer target: server/json.c against
 * jansson, its reference. For every input and each flag set the server
 * parses with, jf_parse and json_loadb must agree on success or failure;
 * on success the trees must be json_equal with the same types and key
 * order, and jf_dump must write exactly the bytes json_dumps writes, both
 * for the tree jf_parse built and for jansson's (reals included); and
 * buf_json_escape must write what json_dumps writes. Any difference aborts.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/json_same.h"
#include "json.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6))

static void differ(const char *what)
{
    fprintf(stderr, "fuzz_json: %s\n", what);
    abort();
}

static void same_dump(const json_t *v)
{
    char *ref = json_dumps(v, DUMP_FLAGS);
    size_t n = 0;
    char *got = jf_dumps(v, &n);
    if (!ref != !got)
        differ("one dump failed, the other did not");
    if (ref && (n != strlen(ref) || memcmp(ref, got, n) != 0)) {
        fprintf(stderr, "json_dumps: %s\njf_dumps:   %.*s\n", ref, (int)n, got);
        differ("dumps differ");
    }
    /* appending to a non-empty buffer leaves what was there */
    struct buf b;
    buf_init(&b, 0);
    buf_append(&b, "x", 1);
    int rc = jf_dump(&b, v);
    if ((rc == 0) != (ref != NULL) || (rc == 0 && (b.len != n + 1 || memcmp(b.p + 1, got, n))) ||
        (rc < 0 && b.len != 1) || b.p[0] != 'x')
        differ("jf_dump into a buffer differs");
    buf_cleanup(&b);
    free(ref);
    free(got);
}

static void one(const char *s, size_t n, size_t flags)
{
    json_error_t e1, e2;
    json_t *ref = json_loadb(s, n, flags, &e1);
    json_t *got = jf_parse(s, n, flags, &e2);
    if (!ref != !got)
        differ(ref ? "jf_parse rejected what jansson accepts" : "jf_parse accepted what jansson rejects");
    if (!ref) {
        if (strcmp(e1.text, e2.text) != 0 || e1.line != e2.line || e1.column != e2.column ||
            e1.position != e2.position)
            differ("error reports differ");
        return;
    }
    if (!json_equal(ref, got))
        differ("trees differ");
    if (!json_same(ref, got))
        differ("types or key order differ");
    if (strcmp(e1.source, e2.source) != 0 || e1.line != e2.line || e1.text[0] != e2.text[0])
        differ("error records on success differ");
    same_dump(ref);
    same_dump(got);
    json_decref(ref);
    json_decref(got);
}

/* buf_json_escape_utf8 accepts what jansson accepts as a string and writes
 * what json_dumps writes inside the quotes; buf_json_escape writes the same
 * bytes without the check. */
static void same_escape(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    struct buf x, y;
    buf_init(&x, 0);
    buf_init(&y, 0);
    int rc = buf_json_escape_utf8(&x, s, n);
    if ((rc == 0) != (j != NULL))
        differ("buf_json_escape_utf8 and jansson disagree on UTF-8");
    if (j) {
        char *d = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        size_t dl = d ? strlen(d) : 0;
        if (!d || dl < 2 || x.len != dl - 2 || memcmp(x.p ? x.p : "", d + 1, x.len) != 0)
            differ("buf_json_escape_utf8 and json_dumps differ");
        if (buf_json_escape(&y, s, n) != 0 || y.len != x.len ||
            memcmp(y.p ? y.p : "", x.p ? x.p : "", x.len) != 0)
            differ("buf_json_escape and buf_json_escape_utf8 differ");
        free(d);
        json_decref(j);
    }
    buf_cleanup(&x);
    buf_cleanup(&y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    same_escape(s, size);
    one(s, size, 0);
    one(s, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL);
    one(s, size, JSON_DECODE_ANY);
    return 0;
}
