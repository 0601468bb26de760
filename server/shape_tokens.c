/*
 * shape_tokens.c - the token estimate and character count every budget is
 * measured in (see shape.h, docs/shaping.md "The estimate").
 */
#include "shape.h"
#include "shape_int.h"
#include "json.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- token estimate ------------------------------------------------------ */

/*
 * A cheap imitation of the o200k/cl100k pre-tokenizer, charged so that each
 * piece costs at least what BPE makes of it (docs/shaping.md has the full
 * table and its measured error):
 *   letters       a piece is [A-Z]*[a-z]* (camelCase splits): ceil(len/4);
 *                 all capitals ceil(len/2); touching a digit ceil(len/2)
 *   opaque runs   [A-Za-z0-9]{16,} with 2+ digits and 2+ letters (hex,
 *                 base64, hashes): ceil(len*3/4)
 *   digits        ceil(len/3) (BPE groups at most three digits)
 *   whitespace    one space before a letter is free (" the" is one token);
 *                 any other run costs 1 + len/8
 *   backslash     with the byte after it (a JSON escape): 1
 *   punctuation   ceil(len/2) per run; a run's last character before a
 *                 letter joins the word when it is one of _ . / - @ $ # '
 *   CJK ideographs, kana, fullwidth forms 1.25, Hangul syllables 1.5
 *   other non-ASCII: 1 for 2-byte characters and General Punctuation,
 *                 2 for other 3-byte characters, 3 for 4-byte (emoji),
 *                 1 per invalid byte
 */
#define WORD_CHARS 4
#define CAPS_CHARS 2
#define MIXED_CHARS 2
#define DIGIT_CHARS 3
#define PUNCT_CHARS 2
#define SPACE_CHARS 8
#define CJK_QUARTERS 5      /* 1.25 tokens per ideograph or kana */
#define HANGUL_QUARTERS 6   /* 1.5 tokens per Hangul syllable */
#define OPAQUE_RUN 16       /* [A-Za-z0-9] runs this long with digits: hex, base64 */

static int is_upper(unsigned c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(unsigned c) { return c >= 'a' && c <= 'z'; }
static int is_alpha(unsigned c) { return is_upper(c) || is_lower(c); }
static int is_space(unsigned c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static size_t cdiv(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static int is_cjk(unsigned cp)
{
    return (cp >= 0x1100 && cp <= 0x11FF) ||    /* Hangul Jamo */
           (cp >= 0x2E80 && cp <= 0x9FFF) ||    /* radicals, CJK punctuation, kana, unified */
           (cp >= 0xA960 && cp <= 0xA97F) ||    /* Hangul Jamo extended-A */
           (cp >= 0xAC00 && cp <= 0xD7FF) ||    /* Hangul syllables, Jamo extended-B */
           (cp >= 0xF900 && cp <= 0xFAFF) ||    /* compatibility ideographs */
           (cp >= 0xFE30 && cp <= 0xFE4F) ||    /* compatibility forms */
           (cp >= 0xFF00 && cp <= 0xFFEF) ||    /* half- and fullwidth forms */
           (cp >= 0x20000 && cp <= 0x3FFFF);    /* supplementary ideographs */
}

/* Punctuation that BPE commonly glues to the word after it. */
static int is_joiner(unsigned c)
{
    return c == '_' || c == '.' || c == '/' || c == '-' || c == '@' || c == '$' || c == '#' ||
           c == '\'';
}

static int isalnum_(unsigned c)
{
    return is_alpha(c) || is_digit(c);
}

/* 1 when p starts an alphanumeric run that looks like hex, base64 or an id
 * (at least OPAQUE_RUN long, with two digits and two letters); *len = its
 * length either way. */
static int opaque_run(const unsigned char *p, size_t n, size_t *len)
{
    size_t j = 0, digits = 0;
    while (j < n && isalnum_(p[j])) {
        digits += is_digit(p[j]);
        j++;
    }
    *len = j;
    return j >= OPAQUE_RUN && digits >= 2 && j - digits >= 2;
}

/* The estimate's scan of p[i..n), adding to *tp and *qp (quarter tokens);
 * p[i - 1] is looked at as the text before. With rec, the start of each run
 * and the counts before it are appended to rec[*nrec] (room for n - i). */
static inline void tok_scan(const unsigned char *p, size_t i, size_t n, size_t *tp, size_t *qp,
                            struct shape_run *rec, size_t *nrec)
{
    size_t t = *tp, q = *qp, run = 0;
    while (i < n) {
        unsigned c = p[i];
        if (rec)
            rec[(*nrec)++] = (struct shape_run){(uint32_t)i, (uint32_t)t, (uint32_t)q};
        if (c >= 0x80) {
            unsigned cp = 0;
            size_t k = utf8_decode(p + i, n - i, &cp);
            if (!k) {
                t++;
                i++;
                continue;
            }
            if (cp >= 0xAC00 && cp <= 0xD7AF)
                q += HANGUL_QUARTERS;
            else if (is_cjk(cp))
                q += CJK_QUARTERS;
            else if (k == 4)
                t += 3;                             /* emoji: 2-4 byte tokens */
            else if (k == 3 && !(cp >= 0x2000 && cp <= 0x206F))
                t += 2;                             /* symbols, selectors, joiners */
            else
                t += 1;                             /* Latin, Cyrillic, Greek, quotes */
            i += k;
        } else if ((is_alpha(c) || is_digit(c)) && (i == 0 || !isalnum_(p[i - 1])) &&
                   opaque_run(p + i, n - i, &run)) {
            t += cdiv(run * 3, 4);
            i += run;
        } else if (is_alpha(c)) {
            size_t j = i;
            while (j < n && is_upper(p[j]))
                j++;
            size_t up = j - i;
            while (j < n && is_lower(p[j]))
                j++;
            size_t len = j - i;
            if ((i > 0 && is_digit(p[i - 1])) || (j < n && is_digit(p[j])))
                t += cdiv(len, MIXED_CHARS);        /* hex, base64, ids */
            else if (up == len)
                t += len > 1 ? cdiv(len, CAPS_CHARS) : 1;
            else if (up > 1)                        /* "HTTPServer", "KGCUwux" */
                t += cdiv(up - 1, CAPS_CHARS) + cdiv(len - up + 1, WORD_CHARS);
            else
                t += cdiv(len, WORD_CHARS);
            i = j;
        } else if (is_digit(c)) {
            size_t j = i;
            while (j < n && is_digit(p[j]))
                j++;
            t += cdiv(j - i, DIGIT_CHARS);
            i = j;
        } else if (is_space(c)) {
            size_t j = i;
            while (j < n && is_space(p[j]))
                j++;
            size_t len = j - i;
            if (j < n && p[j - 1] == ' ' && (is_alpha(p[j]) || p[j] >= 0x80))
                len--;
            if (len)
                t += 1 + len / SPACE_CHARS;
            i = j;
        } else if (c == '\\') {
            t++;
            i += i + 1 < n && p[i + 1] < 0x80 ? 2 : 1;
        } else {
            size_t j = i;
            while (j < n && p[j] < 0x80 && p[j] != '\\' && !is_alpha(p[j]) && !is_digit(p[j]) &&
                   !is_space(p[j]))
                j++;
            size_t len = j - i;
            if (j < n && is_alpha(p[j]) && is_joiner(p[j - 1]))
                len--;
            t += cdiv(len, PUNCT_CHARS);
            i = j;
        }
    }
    *tp = t;
    *qp = q;
}

size_t shape_tokens(const char *s, size_t n)
{
    size_t t = 0, q = 0;
    tok_scan((const unsigned char *)s, 0, n, &t, &q, NULL, NULL);
    return t + cdiv(q, 4);
}

size_t shape_prefix_init(struct shape_prefix *sp, const char *s, size_t n)
{
    sp->s = s;
    sp->n = n;
    sp->nrun = 0;
    sp->run = sp->local;
    if (n > UINT32_MAX / 8) {   /* counts kept in 32 bits: each prefix is scanned whole */
        sp->total = shape_tokens(s, n);
        return sp->total;
    }
    if (n > sizeof sp->local / sizeof sp->local[0])
        sp->run = xmalloc(n * sizeof *sp->run);
    size_t t = 0, q = 0;
    tok_scan((const unsigned char *)s, 0, n, &t, &q, sp->run, &sp->nrun);
    sp->total = t + cdiv(q, 4);
    return sp->total;
}

/*
 * The runs that end before the one holding byte m - 1 are scanned the same
 * in s[0..m) as in s[0..n): each run's extent and cost look at most one
 * byte past its end, which is still before m, and a run that is not an
 * opaque one stays so when its alphanumerics are cut short. So the prefix's
 * count is the count before that last run plus a scan of it up to m.
 */
size_t shape_prefix_tokens(const struct shape_prefix *sp, size_t m)
{
    if (m == sp->n)
        return sp->total;
    if (m > sp->n || !sp->nrun)
        return shape_tokens(sp->s, m);
    size_t lo = 0, hi = sp->nrun;   /* the last run starting before m */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->run[mid].at < m)
            lo = mid;
        else
            hi = mid;
    }
    size_t t = sp->run[lo].t, q = sp->run[lo].q;
    tok_scan((const unsigned char *)sp->s, sp->run[lo].at, m, &t, &q, NULL, NULL);
    return t + cdiv(q, 4);
}

void shape_prefix_free(struct shape_prefix *sp)
{
    if (sp->run != sp->local)
        free(sp->run);
    sp->run = NULL;
}

size_t shape_chars(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            c++;
        /* a surrogate pair; a stray lead byte (invalid UTF-8) is one unit,
         * so the count never exceeds n */
        if (p[i] >= 0xF0 && p[i] <= 0xF4 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80)
            c++;
    }
    return c;
}

struct shape_budget shape_budget_of(long context_tokens, double share, size_t max_chars)
{
    struct shape_budget b = {0, max_chars};
    if (context_tokens > 0 && share > 0) {
        double t = (double)context_tokens * share;
        b.max_tokens = t < 1 ? 1 : (size_t)t;
    }
    return b;
}

size_t shape_budget_bytes(const struct shape_budget *b)
{
    size_t n = b->max_chars;
    if (b->max_tokens && (!n || b->max_tokens * 4 < n))
        n = b->max_tokens * 4;
    return n;
}
