/*
 * fuzz_fmfast.c - differential libFuzzer target for fm_parse's fast path.
 * Every input is parsed with the fast path on and with libyaml alone
 * (fm_set_fast(0)), as a whole file and as a prefix that may go on; any
 * difference aborts: return code, error text and position, offsets, and the
 * fields compared exactly (same JSON types, integer vs real, same key order).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/json_same.h"
#include "frontmatter.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void both(const char *buf, size_t len, int complete)
{
    struct fm f1, f2;
    struct err e1, e2;
    int r1, r2;

    memset(&e1, 0, sizeof(e1));
    memset(&e2, 0, sizeof(e2));
    fm_set_fast(1);
    r1 = fm_parse(buf, len, complete, &f1, &e1);
    fm_set_fast(0);
    r2 = fm_parse(buf, len, complete, &f2, &e2);
    fm_set_fast(1);
    if (r1 != r2) {
        fprintf(stderr, "fast %d, libyaml %d (%s)\n", r1, r2, r1 ? e1.msg : e2.msg);
        abort();
    }
    if (r1 != 0) {
        if (strcmp(e1.msg, e2.msg) != 0 || e1.line != e2.line || e1.col != e2.col)
            abort();
        return;
    }
    if (f2.fast || f1.body_off != f2.body_off || f1.fm_off != f2.fm_off || f1.fm_len != f2.fm_len)
        abort();
    if (!json_same(f1.fields, f2.fields)) {
        char *a = json_dumps(f1.fields, JSON_ENCODE_ANY), *b = json_dumps(f2.fields, JSON_ENCODE_ANY);

        fprintf(stderr, "fields differ\n  fast:    %s\n  libyaml: %s\n", a, b);
        free(a);
        free(b);
        abort();
    }
    fm_cleanup(&f1);
    fm_cleanup(&f2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_each_completeness(data, size, both);
    return 0;
}
