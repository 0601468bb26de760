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

#include "frontmatter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* json_equal plus the same key order at every level. */
static int same(json_t *a, json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_object(a)) {
        void *ia = json_object_iter(a), *ib = json_object_iter(b);

        for (; ia && ib; ia = json_object_iter_next(a, ia), ib = json_object_iter_next(b, ib))
            if (strcmp(json_object_iter_key(ia), json_object_iter_key(ib)) != 0 ||
                !same(json_object_iter_value(ia), json_object_iter_value(ib)))
                return 0;
        return !ia && !ib;
    }
    if (json_is_array(a)) {
        size_t i;

        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    return json_equal(a, b);
}

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
    if (!same(f1.fields, f2.fields)) {
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
    /* a private copy so ASan sees reads past the end */
    char *buf = malloc(size ? size : 1);

    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    both(buf, size, 1);
    both(buf, size, 0);
    free(buf);
    return 0;
}
