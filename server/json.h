/*
 * json.h - JSON on the request hot path: a parser for the common shapes of
 * a request body and a serialiser, both over jansson's json_t.
 *
 * jansson stays the representation and the reference: jf_parse accepts
 * exactly what json_loadb accepts (anything it is not sure of goes to
 * json_loadb, errors included), and jf_dump writes the bytes json_dumps
 * writes. See json.c for why.
 */
#ifndef SKILL_JSON_H
#define SKILL_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

/*
 * json_loadb(s, len, flags, err), faster for the usual request. Same result,
 * same tree (types, key order), same errors; flags other than
 * JSON_DECODE_ANY, JSON_REJECT_DUPLICATES and JSON_ALLOW_NUL are simply
 * passed on to json_loadb.
 */
json_t *jf_parse(const char *s, size_t len, size_t flags, json_error_t *err);
/* Its own half, without json_loadb: the tree json_loadb would build, or
 * NULL where jf_parse would hand the input to json_loadb. A tree it
 * returns is nested at most 64 deep (JSON_PARSE_FAST_DEPTH). */
#define JSON_PARSE_FAST_DEPTH 64
json_t *jf_parse_fast(const char *s, size_t len, size_t flags);
/* 1 for the bytes a string scan stops at (json.c) */
extern const unsigned char jf_stop[256];

/* The closing quote of a string whose text starts at s (just after its
 * opening quote), or NULL when the string has an escape, a control byte or
 * bytes that are not UTF-8, or runs to e. The byte at e must be one the
 * scan stops at (a NUL): the end is checked only where it stops. A string
 * it passes is the same text in a tree from jf_parse_fast: a reader of the
 * common request shapes (rpc.c) takes it as is and leaves every other
 * string to the tree. */
static inline const char *jf_plain_string(const char *s, const char *e)
{
    const unsigned char *p = (const unsigned char *)s, *end = (const unsigned char *)e;
    for (;;) {
        while (!jf_stop[*p])
            p++;
        if (p >= end)
            return NULL;
        if (*p == '"')
            return (const char *)p;
        if (*p < 0x80)
            return NULL;    /* a backslash or a raw control byte */
        size_t k = utf8_seq(p, (size_t)(end - p));
        if (!k)
            return NULL;
        p += k;
    }
}

/*
 * Appends to b the bytes json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
 * JSON_REAL_PRECISION(6)) returns. 0, or negative (b unchanged) where
 * json_dumps would return NULL (a string that is not UTF-8, v NULL, a
 * tree nested deeper than 4096) or b cannot grow.
 */
int jf_dump(struct buf *b, const json_t *v);

/* The same as a new NUL-terminated string (free()); *len gets its length
 * when len is not NULL. NULL where json_dumps would return NULL. */
char *jf_dumps(const json_t *v, size_t *len);

#endif
