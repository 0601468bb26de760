/*
 * json.c - JSON on the request hot path.
 *
 * Why: every request is parsed and every reply is serialised, and jansson
 * does both one character at a time. Its lexer reads the body through a
 * stream with a UTF-8 check per byte (some 20k instructions for a 100-byte
 * request, a fifth of the whole request); its dump_string walks a string
 * codepoint by codepoint (some 350k instructions for an 18 KB file in a
 * reply). Both are most of what the server adds over bare HTTP.
 *
 * jansson stays the representation (json_t, built with its own
 * constructors) and the reference. jf_parse handles only what it is sure
 * of: objects, arrays, strings (with escapes), integers of up to 18 digits,
 * true/false/null, nesting up to JF_PARSE_DEPTH. Anything else (a real, a
 * long integer, a duplicate key, a NUL in a key or, without
 * JSON_ALLOW_NUL, in a string, deeper nesting, any syntax error, other
 * flags) drops what it built and hands the whole input to json_loadb, so
 * every unusual case and every error message is jansson's own. jf_dump
 * writes what json_dumps writes (compact, precision 6); reals are rare in
 * replies and are formatted by jansson itself.
 *
 * tests/fuzz/fuzz_json.c holds both to that: for any input, jf_parse and
 * json_loadb agree on success, on the tree and on its key order, and
 * jf_dump and json_dumps agree byte for byte.
 */
#include "json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are rare and go to jansson (its own limit is 2048):
 * this bounds the recursion here. */
#define JF_PARSE_DEPTH JSON_PARSE_FAST_DEPTH
/* Trees are built by the server or parsed (at most 2048 deep); the cap
 * bounds the recursion if ever a tree is not. */
#define JF_DUMP_DEPTH 4096

#define JF_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

struct jf_p {
    const unsigned char *p, *end;
    size_t flags;
    int depth;
    /* Decoded strings with escapes, bump-allocated: each is no longer than
     * its raw text, so the input's length is enough for all of them. */
    char *scratch;
    size_t sused, scap;
};

/* 1 for the bytes a string scan must stop at: '"', '\\', control bytes and
 * the lead of a multi-byte sequence (checked as UTF-8 the way jansson's
 * lexer checks it). */
const unsigned char jf_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     /* '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,     /* '\\' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

/* ---- parse ------------------------------------------------------------- */

static void jf_ws(struct jf_p *ps)
{
    const unsigned char *p = ps->p;
    while (p < ps->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    ps->p = p;
}

static int jf_hex4(const unsigned char *p, const unsigned char *end)
{
    if (end - p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (int)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (int)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (int)(c - 'A' + 10);
        else
            return -1;
    }
    return v;
}

/* The rest of a string from its first backslash at p, decoded into the
 * scratch space. -1 falls back (a bad escape, a lone surrogate, ...). */
static int jf_string_esc(struct jf_p *ps, const unsigned char *start, const unsigned char *p,
                         const char **out, size_t *outlen, int *nul)
{
    const unsigned char *end = ps->end;
    if (!ps->scratch) {
        ps->scap = (size_t)(end - ps->p) + 1;
        ps->scratch = malloc(ps->scap);
        if (!ps->scratch)
            return -1;
    }
    if (ps->scap - ps->sused < (size_t)(end - start))
        return -1;      /* not reached: decoded text is never longer than raw */
    char *d0 = ps->scratch + ps->sused, *d = d0;
    memcpy(d, start, (size_t)(p - start));
    d += p - start;
    int hasnul = 0;
    for (;;) {
        if (p >= end)
            return -1;
        unsigned c = *p;
        if (c == '"')
            break;
        if (c == '\\') {
            if (end - p < 2)
                return -1;
            char e;
            switch (p[1]) {
            case '"': e = '"'; break;
            case '\\': e = '\\'; break;
            case '/': e = '/'; break;
            case 'b': e = '\b'; break;
            case 'f': e = '\f'; break;
            case 'n': e = '\n'; break;
            case 'r': e = '\r'; break;
            case 't': e = '\t'; break;
            case 'u': {
                int cp = jf_hex4(p + 2, end);
                if (cp < 0)
                    return -1;
                p += 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
                        return -1;
                    int lo = jf_hex4(p + 2, end);
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return -1;
                    p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return -1;
                }
                if (cp == 0)
                    hasnul = 1;
                d += utf8_encode((uint32_t)cp, d);
                continue;
            }
            default:
                return -1;
            }
            *d++ = e;
            p += 2;
            continue;
        }
        if (c < 0x20)
            return -1;
        if (c >= 0x80) {
            size_t k = utf8_seq(p, (size_t)(end - p));
            if (!k)
                return -1;
            memcpy(d, p, k);
            d += k;
            p += k;
            continue;
        }
        *d++ = (char)c;
        p++;
    }
    ps->p = p + 1;
    *out = d0;
    *outlen = (size_t)(d - d0);
    *nul = hasnul;
    ps->sused += (size_t)(d - d0);
    return 0;
}

/* A string whose opening quote is just before ps->p: *out points into the
 * input when there is no escape, else into the scratch space. */
static int jf_string(struct jf_p *ps, const char **out, size_t *outlen, int *nul)
{
    const unsigned char *start = ps->p, *p = start, *end = ps->end;
    for (;;) {
        while (p < end && !jf_stop[*p])
            p++;
        if (p >= end)
            return -1;
        unsigned c = *p;
        if (c == '"') {
            *out = (const char *)start;
            *outlen = (size_t)(p - start);
            *nul = 0;
            ps->p = p + 1;
            return 0;
        }
        if (c >= 0x80) {
            size_t k = utf8_seq(p, (size_t)(end - p));
            if (!k)
                return -1;
            p += k;
            continue;
        }
        if (c == '\\')
            return jf_string_esc(ps, start, p, out, outlen, nul);
        return -1;          /* a raw control byte */
    }
}

/* An integer of at most 18 digits (it fits a json_int_t); anything longer,
 * a fraction or an exponent goes to jansson. */
static json_t *jf_number(struct jf_p *ps)
{
    const unsigned char *p = ps->p, *end = ps->end;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    const unsigned char *d = p;
    long long v = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9' && p - d < 18)
            v = v * 10 + (*p++ - '0');
    }
    if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
        return NULL;
    ps->p = p;
    return json_integer(neg ? -v : v);
}

static json_t *jf_value(struct jf_p *ps);

static json_t *jf_object(struct jf_p *ps)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    ps->p++;
    jf_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return o;
    }
    for (;;) {
        if (ps->p >= ps->end || *ps->p != '"')
            goto fail;
        ps->p++;
        const char *key;
        size_t klen;
        int nul;
        if (jf_string(ps, &key, &klen, &nul) < 0 || nul)
            goto fail;
        jf_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            goto fail;
        ps->p++;
        jf_ws(ps);
        json_t *v = jf_value(ps);
        if (!v)
            goto fail;
        size_t before = json_object_size(o);
        if (json_object_setn_new_nocheck(o, key, klen, v) < 0)
            goto fail;
        /* A duplicate key: jansson decides (an error, or the last value in
         * the first one's place). */
        if (json_object_size(o) == before)
            goto fail;
        jf_ws(ps);
        if (ps->p >= ps->end)
            goto fail;
        if (*ps->p == '}') {
            ps->p++;
            return o;
        }
        if (*ps->p != ',')
            goto fail;
        ps->p++;
        jf_ws(ps);
    }
fail:
    json_decref(o);
    return NULL;
}

static json_t *jf_array(struct jf_p *ps)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    ps->p++;
    jf_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return a;
    }
    for (;;) {
        json_t *v = jf_value(ps);
        if (!v || json_array_append_new(a, v) < 0)
            goto fail;
        jf_ws(ps);
        if (ps->p >= ps->end)
            goto fail;
        if (*ps->p == ']') {
            ps->p++;
            return a;
        }
        if (*ps->p != ',')
            goto fail;
        ps->p++;
        jf_ws(ps);
    }
fail:
    json_decref(a);
    return NULL;
}

static json_t *jf_literal(struct jf_p *ps, const char *word, size_t n, json_t *v)
{
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return NULL;
    ps->p += n;
    return v;
}

/* A value at ps->p (no leading whitespace). NULL: fall back. A value is
 * followed by whitespace, ',', ']', '}' or the end, which the caller
 * checks. */
static json_t *jf_value(struct jf_p *ps)
{
    if (ps->p >= ps->end)
        return NULL;
    json_t *v;
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > JF_PARSE_DEPTH)
            return NULL;
        v = *ps->p == '{' ? jf_object(ps) : jf_array(ps);
        ps->depth--;
        return v;
    case '"': {
        const char *s;
        size_t n;
        int nul;
        ps->p++;
        if (jf_string(ps, &s, &n, &nul) < 0 || (nul && !(ps->flags & JSON_ALLOW_NUL)))
            return NULL;
        return json_stringn_nocheck(s, n);
    }
    case 't':
        return jf_literal(ps, "true", 4, json_true());
    case 'f':
        return jf_literal(ps, "false", 5, json_false());
    case 'n':
        return jf_literal(ps, "null", 4, json_null());
    default:
        return jf_number(ps);
    }
}

json_t *jf_parse_fast(const char *s, size_t len, size_t flags)
{
    if (!s || (flags & ~(size_t)JF_FLAGS))
        return NULL;
    struct jf_p ps = {(const unsigned char *)s, (const unsigned char *)s + len, flags, 0,
                      NULL, 0, 0};
    jf_ws(&ps);
    json_t *v = NULL;
    if (ps.p < ps.end && ((flags & JSON_DECODE_ANY) || *ps.p == '{' || *ps.p == '['))
        v = jf_value(&ps);
    if (v) {
        jf_ws(&ps);
        if (ps.p != ps.end) {
            json_decref(v);
            v = NULL;
        }
    }
    free(ps.scratch);
    return v;
}

json_t *jf_parse(const char *s, size_t len, size_t flags, json_error_t *err)
{
    json_t *v = jf_parse_fast(s, len, flags);
    if (!v)
        return json_loadb(s, len, flags, err);
    if (err) {
        /* what json_loadb leaves in err on success */
        err->text[0] = '\0';
        err->line = -1;
        err->column = -1;
        err->position = 0;
        memcpy(err->source, "<buffer>", sizeof "<buffer>");
    }
    return v;
}

/* ---- dump -------------------------------------------------------------- */

static int jf_str(struct buf *b, const char *s, size_t n)
{
    if (buf_append(b, "\"", 1) < 0)
        return -ENOSPC;
    int rc = buf_json_escape_utf8(b, s, n);
    if (rc < 0)
        return rc;
    return buf_append(b, "\"", 1);
}

static int jf_int(struct buf *b, json_int_t v)
{
    char tmp[24], *e = tmp + sizeof tmp, *q = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    return buf_append(b, q, (size_t)(e - q));
}

/* jansson's iterators take a json_t * though they change nothing. */
static json_t *jf_mut(const json_t *v)
{
    union {
        const json_t *c;
        json_t *m;
    } u = {v};
    return u.m;
}

static int jf_val(struct buf *b, const json_t *v, int depth)
{
    if (!v || depth > JF_DUMP_DEPTH)
        return -EINVAL;
    switch (json_typeof(v)) {
    case JSON_NULL:
        return buf_append(b, "null", 4);
    case JSON_TRUE:
        return buf_append(b, "true", 4);
    case JSON_FALSE:
        return buf_append(b, "false", 5);
    case JSON_INTEGER:
        return jf_int(b, json_integer_value(v));
    case JSON_REAL: {
        /* rare in replies: jansson's own formatting (jsonp_dtostr) */
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        if (!s)
            return -EINVAL;
        int rc = buf_puts(b, s);
        free(s);
        return rc;
    }
    case JSON_STRING:
        return jf_str(b, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (buf_append(b, "[", 1) < 0)
            return -ENOSPC;
        for (size_t i = 0; i < n; i++) {
            int rc;
            if ((i && buf_append(b, ",", 1) < 0))
                return -ENOSPC;
            if ((rc = jf_val(b, json_array_get(v, i), depth + 1)) < 0)
                return rc;
        }
        return buf_append(b, "]", 1);
    }
    case JSON_OBJECT: {
        json_t *o = jf_mut(v);
        if (buf_append(b, "{", 1) < 0)
            return -ENOSPC;
        for (void *it = json_object_iter(o); it;) {
            int rc;
            if ((rc = jf_str(b, json_object_iter_key(it), json_object_iter_key_len(it))) < 0 ||
                (rc = buf_append(b, ":", 1)) < 0 ||
                (rc = jf_val(b, json_object_iter_value(it), depth + 1)) < 0)
                return rc;
            it = json_object_iter_next(o, it);
            if (it && buf_append(b, ",", 1) < 0)
                return -ENOSPC;
        }
        return buf_append(b, "}", 1);
    }
    }
    return -EINVAL;
}

int jf_dump(struct buf *b, const json_t *v)
{
    size_t start = b->len;
    int rc = jf_val(b, v, 0);
    if (rc < 0) {
        b->len = start;
        if (b->p)
            b->p[start] = '\0';
    }
    return rc;
}

char *jf_dumps(const json_t *v, size_t *len)
{
    struct buf b;
    buf_init(&b, 0);
    if (jf_dump(&b, v) < 0) {
        buf_cleanup(&b);
        return NULL;
    }
    return buf_steal(&b, len);
}
