/*
 * shape.c - token estimate and result fitting (see shape.h, docs/shaping.md).
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

size_t shape_tokens(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, t = 0, q = 0, run = 0;   /* q: quarter tokens */
    while (i < n) {
        unsigned c = p[i];
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
    return t + cdiv(q, 4);
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

/* ---- sizes (the cost unit: shape_int.h) ------------------------------------ */

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(6))

double shape_cost_of(const struct ctx *x, double chars, double tokens)
{
    double a = x->kc * chars, b = x->kt * tokens;
    return a > b ? a : b;
}

/* Characters of s[0..n) once escaped into a JSON string (no quotes). */
size_t shape_json_chars(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned ch = p[i];
        if (ch == '"' || ch == '\\')
            c += 2;
        else if (ch < 0x20)
            c += ch == '\n' || ch == '\t' || ch == '\r' || ch == '\b' || ch == '\f' ? 2 : 6;
        else if ((ch & 0xC0) != 0x80)
            c += ch >= 0xF0 ? 2 : 1;
    }
    return c;
}

/* Cost of s[0..n) as the inside of a JSON string. */
double shape_text_cost(const struct ctx *x, const char *s, size_t n)
{
    return shape_cost_of(x, (double)shape_json_chars(s, n), (double)shape_tokens(s, n));
}

/* Cost of fixed punctuation: chars characters, tokens tokens. */
double shape_punct(const struct ctx *x, double chars, double tokens)
{
    return shape_cost_of(x, chars, tokens);
}

/* The marker put in place of the middle of a string. */
int shape_marker(char *out, size_t size, size_t omitted, int newlines)
{
    return snprintf(out, size, "%s[... %zu characters omitted: narrow the call ...]%s",
                    newlines ? "\n" : "", omitted, newlines ? "\n" : "");
}

double shape_marker_cost(const struct ctx *x, size_t omitted, int newlines)
{
    char m[128];
    int n = shape_marker(m, sizeof m, omitted, newlines);
    return shape_text_cost(x, m, (size_t)n);
}

/* Size of a value and how small it can be cut, measured once. */
struct snode {
    double cost;            /* serialised */
    double min;             /* after the deepest cut the rules allow */
    double ov;              /* containers: brackets, keys, separators */
    size_t n;
    struct snode *kid;      /* containers: one per element / member, in order */
    int text;               /* a member of texts that is JSON: its index + 1 */
};

static void snode_free(struct snode *sn)
{
    for (size_t i = 0; i < sn->n; i++)
        snode_free(&sn->kid[i]);
    free(sn->kid);
}

static void measure_text(const struct ctx *x, int t, json_t *m, struct snode *sn);

/* The index in texts of member k, or -1. */
static int text_of(const struct ctx *x, const char *k)
{
    for (size_t i = 0; i < x->ntexts; i++)
        if (!strcmp(x->texts[i].field, k))
            return (int)i;
    return -1;
}

static void measure(const struct ctx *x, json_t *v, struct snode *sn)
{
    char num[64];
    memset(sn, 0, sizeof *sn);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        sn->n = json_object_size(v);
        sn->kid = xcalloc(sn->n ? sn->n : 1, sizeof *sn->kid);
        sn->ov = shape_punct(x, 2, 1);
        double mins = 0, costs = 0;
        size_t i = 0;
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) {
            size_t kl = strlen(k);
            sn->ov += shape_text_cost(x, k, kl) + shape_punct(x, 4, 2);   /* "k":  , */
            int t = v == x->root ? text_of(x, k) : -1;
            if (t >= 0 && x->docs[t])
                measure_text(x, t, m, &sn->kid[i]);
            else
                measure(x, m, &sn->kid[i]);
            costs += sn->kid[i].cost;
            mins += sn->kid[i].min;
            i++;
        }
        sn->cost = sn->ov + costs;
        sn->min = sn->ov + mins;
        break;
    }
    case JSON_ARRAY: {
        sn->n = json_array_size(v);
        sn->kid = xcalloc(sn->n ? sn->n : 1, sizeof *sn->kid);
        sn->ov = shape_punct(x, 2, 1);
        sn->cost = sn->ov;
        for (size_t i = 0; i < sn->n; i++) {
            measure(x, json_array_get(v, i), &sn->kid[i]);
            sn->cost += sn->kid[i].cost + shape_punct(x, 1, 1);
        }
        sn->min = sn->n ? sn->ov + sn->kid[0].min + shape_punct(x, 1, 1) : sn->cost;
        break;
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        sn->cost = shape_text_cost(x, s, n) + shape_punct(x, 2, 1);
        sn->min = sn->cost;
        if (n >= MIN_CUT) {
            double m = shape_marker_cost(x, shape_chars(s, n), 0) + shape_punct(x, 2, 1);
            if (m < sn->cost)
                sn->min = m;
        }
        break;
    }
    case JSON_INTEGER: {
        int k = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        sn->cost = shape_text_cost(x, num, (size_t)k);
        sn->min = sn->cost;
        break;
    }
    case JSON_REAL: {
        int k = snprintf(num, sizeof num, "%.6g", json_real_value(v));
        sn->cost = shape_text_cost(x, num, (size_t)k) + shape_punct(x, 2, 1);   /* ".0", exponent */
        sn->min = sn->cost;
        break;
    }
    default:
        sn->cost = shape_punct(x, 5, 1);
        sn->min = sn->cost;
        break;
    }
}

/* ---- cutting -------------------------------------------------------------- */

static void note_path(struct ctx *x)
{
    const char *p = x->path.p ? x->path.p : "";
    size_t i;
    json_t *f;
    json_array_foreach(x->fields, i, f)
        if (strcmp(json_string_value(f), p) == 0)
            return;
    if (json_array_size(x->fields) < MAX_FIELDS)
        json_array_append_new(x->fields, json_string(p));
}

static size_t char_start_back(const char *s, size_t p)
{
    while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80)
        p--;
    return p;
}

static size_t char_start_fwd(const char *s, size_t n, size_t p)
{
    while (p < n && ((unsigned char)s[p] & 0xC0) == 0x80)
        p++;
    return p;
}

/*
 * The longest prefix (suffix when tail) of s[0..n) whose cost is at most
 * target, on a character boundary, preferably ending before a newline (a
 * suffix: starting after one). total is the cost of all of s. Measures
 * only what it keeps, a few times.
 */
size_t shape_fit_part(const struct ctx *x, const char *s, size_t n, double target, double total,
                      int tail)
{
    if (target <= 0 || n == 0)
        return 0;
    if (total <= target)
        return n;
    size_t good = 0, p = (size_t)((double)n * (target / total));
    if (p > n)
        p = n;
    for (int iter = 0; iter < 8 && p > 0; iter++) {
        size_t q = tail ? n - char_start_fwd(s, n, n - p) : char_start_back(s, p);
        double c = q ? shape_text_cost(x, tail ? s + n - q : s, q) : 0;
        size_t next;
        if (c <= target) {
            if (q > good)
                good = q;
            if (c >= 0.9 * target || q >= n)
                break;
            next = (size_t)((double)q * (target / (c > 0 ? c : 1)) * 0.97);
            if (next <= q)
                break;
        } else {
            next = (size_t)((double)q * (target / c) * 0.97);
            if (next >= q)
                next = q ? q - 1 : 0;
        }
        p = next > n ? n : next;
    }
    /* Prefer a line boundary in the last quarter of what is kept. */
    if (good > 8) {
        size_t lim = good / 4;
        for (size_t k = 0; k < lim; k++) {
            size_t at = tail ? n - good + k : good - 1 - k;
            if (s[at] == '\n')
                return tail ? good - k - 1 : good - 1 - k;
        }
    }
    return good;
}

static json_t *str_n(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    if (!v) {                       /* cannot happen on character boundaries */
        char *c = xstrndup(s, n);
        utf8_sanitize(c);
        v = json_string(c);
        free(c);
    }
    return v;
}

/* head + marker + tail of s[0..n) in at most target (content cost). */
static json_t *cut_head_tail(const struct ctx *x, const char *s, size_t n, double total,
                             double target)
{
    size_t chars = shape_chars(s, n);
    char m[128];
    double room = target - shape_marker_cost(x, chars, 1);
    if (room <= 0) {
        shape_marker(m, sizeof m, chars, 0);
        return json_string(m);
    }
    size_t h = shape_fit_part(x, s, n, room * HEAD_SHARE, total, 0);
    double used = h ? shape_text_cost(x, s, h) : 0;
    size_t t = shape_fit_part(x, s + h, n - h, room - used, total, 1);
    size_t omitted = shape_chars(s + h, n - h - t);
    int ml = shape_marker(m, sizeof m, omitted, 1);
    struct buf b;
    buf_init(&b, 0);
    buf_append(&b, s, h);
    buf_append(&b, m, (size_t)ml);
    buf_append(&b, s + n - t, t);
    json_t *v = str_n(b.p, b.len);
    buf_cleanup(&b);
    return v;
}

/* Markdown: a heading line is "#" to "######" then a space or the end of
 * the line, outside ``` / ~~~ fences. */
struct section {
    size_t hs, he;          /* heading line [hs, he) with its newline; hs == he: preamble */
    size_t be;              /* body [he, be) */
    double hc, bc;          /* costs */
};

static int is_heading(const char *l, size_t n)
{
    size_t k = 0;
    while (k < n && k < 7 && l[k] == '#')
        k++;
    return k >= 1 && k <= 6 && (k == n || l[k] == ' ' || l[k] == '\t' || l[k] == '\r');
}

static int is_fence(const char *l, size_t n)
{
    size_t k = 0;
    while (k < n && k < 3 && l[k] == ' ')
        k++;
    return n - k >= 3 && (memcmp(l + k, "```", 3) == 0 || memcmp(l + k, "~~~", 3) == 0);
}

/* Keeps every heading of s and cuts section bodies, largest first; NULL
 * when s has no heading or the headings alone do not fit. */
static json_t *cut_outline(const struct ctx *x, const char *s, size_t n, double target)
{
    size_t cap = 16, ns = 0;
    struct section *sec = xmalloc(cap * sizeof *sec);
    sec[0] = (struct section){0, 0, 0, 0, 0};
    ns = 1;
    int fenced = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) + 1 : n;
        if (is_fence(s + i, e - i))
            fenced = !fenced;
        else if (!fenced && is_heading(s + i, e - i)) {
            sec[ns - 1].be = i;
            if (ns == cap) {
                cap *= 2;
                sec = xrealloc(sec, cap * sizeof *sec);
            }
            sec[ns++] = (struct section){i, e, e, 0, 0};
        }
        i = e;
    }
    sec[ns - 1].be = n;
    json_t *out = NULL;
    if (ns == 1)
        goto done;
    double heads = 0, maxb = 0, mk = shape_marker_cost(x, n, 1);
    for (size_t i = 0; i < ns; i++) {
        sec[i].hc = shape_text_cost(x, s + sec[i].hs, sec[i].he - sec[i].hs);
        sec[i].bc = shape_text_cost(x, s + sec[i].he, sec[i].be - sec[i].he);
        heads += sec[i].hc;
        if (sec[i].bc > maxb)
            maxb = sec[i].bc;
    }
    double room = target - heads, floor_ = 0;
    for (size_t i = 0; i < ns; i++)
        floor_ += sec[i].bc < mk ? sec[i].bc : mk;
    if (floor_ > room)
        goto done;
    /* Largest L with sum(min(body, max(L, mk))) <= room. */
    double lo = mk, hi = maxb;
    for (int it = 0; it < 50 && hi - lo > 0.5; it++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t i = 0; i < ns; i++)
            sum += sec[i].bc < mid ? sec[i].bc : mid;
        if (sum <= room)
            lo = mid;
        else
            hi = mid;
    }
    struct buf b;
    buf_init(&b, 0);
    char m[128];
    for (size_t i = 0; i < ns; i++) {
        buf_append(&b, s + sec[i].hs, sec[i].he - sec[i].hs);
        const char *body = s + sec[i].he;
        size_t bl = sec[i].be - sec[i].he;
        if (sec[i].bc <= lo) {
            buf_append(&b, body, bl);
            continue;
        }
        size_t keep = shape_fit_part(x, body, bl, lo - mk, sec[i].bc, 0);
        int ml = shape_marker(m, sizeof m, shape_chars(body + keep, bl - keep), 1);
        buf_append(&b, body, keep);
        /* The marker ends the body on its own line. */
        buf_append(&b, keep ? m : m + 1, keep ? (size_t)ml : (size_t)ml - 1);
    }
    out = str_n(b.p ? b.p : "", b.len);
    buf_cleanup(&b);
done:
    free(sec);
    return out;
}

double shape_clamp(double l, double lo, double hi)
{
    return l < lo ? lo : l > hi ? hi : l;
}

/* ---- printed output that is JSON ------------------------------------------ */

/* (the parsed form: shape_int.h) */
struct jparse {
    struct jdoc *d;
    const unsigned char *p;
    size_t i, end;
    /* duplicate-key check */
    uint32_t *slots;
    size_t nslots;
    struct buf k1, k2;
};

void shape_jdoc_free(struct jdoc *d)
{
    if (d)
        free(d->v);
    free(d);
}

static int jws(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void jskip(struct jparse *p)
{
    while (p->i < p->end && jws(p->p[p->i]))
        p->i++;
}

static uint32_t jnew(struct jparse *p, int type)
{
    struct jdoc *d = p->d;
    if (d->nv == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->v = xrealloc(d->v, d->cap * sizeof *d->v);
    }
    struct jnode *n = &d->v[d->nv];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    n->s = (uint32_t)p->i;
    return (uint32_t)d->nv++;
}

static int hexd(unsigned c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* A string at p->i (the opening quote); *esc set when it holds an escape. */
static int jstring(struct jparse *p, int *esc)
{
    const unsigned char *s = p->p;
    size_t i = p->i + 1, end = p->end;
    *esc = 0;
    for (;;) {
        while (i < end && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
            i++;
        if (i >= end)
            return -1;
        unsigned c = s[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            *esc = 1;
            if (i + 1 >= end)
                return -1;
            c = s[i + 1];
            if (c == 'u') {
                if (i + 6 > end || !hexd(s[i + 2]) || !hexd(s[i + 3]) || !hexd(s[i + 4]) ||
                    !hexd(s[i + 5]))
                    return -1;
                i += 6;
            } else if (strchr("\"\\/bfnrt", (int)c) && c) {
                i += 2;
            } else {
                return -1;
            }
            continue;
        }
        unsigned cp;
        size_t k = utf8_decode(s + i, end - i, &cp);
        if (!k)
            return -1;
        i += k;
    }
    p->i = i + 1;
    return 0;
}

static int jnumber(struct jparse *p)
{
    const unsigned char *s = p->p;
    size_t i = p->i, end = p->end;
    if (i < end && s[i] == '-')
        i++;
    if (i >= end || !is_digit(s[i]))
        return -1;
    if (s[i] == '0')
        i++;
    else
        while (i < end && is_digit(s[i]))
            i++;
    if (i < end && s[i] == '.') {
        i++;
        if (i >= end || !is_digit(s[i]))
            return -1;
        while (i < end && is_digit(s[i]))
            i++;
    }
    if (i < end && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < end && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= end || !is_digit(s[i]))
            return -1;
        while (i < end && is_digit(s[i]))
            i++;
    }
    p->i = i;
    return 0;
}

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = (unsigned char)s[i];
        v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* The key of member m as bytes to compare: as written, or decoded into b
 * when it holds an escape ("a" and "\u0061" are the same key). A lone
 * surrogate decodes to a byte no UTF-8 text holds, then its value. */
static const char *jkey(struct jparse *p, const struct jnode *m, struct buf *b, size_t *len)
{
    const char *k = (const char *)p->p + m->ks + 1;
    size_t n = m->ke - m->ks - 2;
    if (!m->kesc) {
        *len = n;
        return k;
    }
    buf_reset(b);
    for (size_t i = 0; i < n; i++) {
        if (k[i] != '\\') {
            buf_append(b, k + i, 1);
            continue;
        }
        char c = k[++i];
        if (c != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *at = strchr(from, c);
            buf_append(b, &to[at - from], 1);
            continue;
        }
        unsigned cp = hex4(k + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < n && k[i + 1] == '\\' && k[i + 2] == 'u') {
            unsigned lo = hex4(k + i + 3);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                buf_put_utf8(b, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
                i += 6;
                continue;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            char raw[3] = {(char)0xFF, (char)(cp >> 8), (char)cp};
            buf_append(b, raw, 3);
            continue;
        }
        buf_put_utf8(b, cp);
    }
    *len = b->len;
    return b->p ? b->p : "";
}

/* 1 when object o (its members parsed) has two equal keys. */
static int jdup(struct jparse *p, uint32_t o)
{
    struct jnode *v = p->d->v;
    size_t n = v[o].n;
    if (n < 2)
        return 0;
    if (n <= 8) {
        for (uint32_t a = o + 1; a < v[o].next; a = v[a].next)
            for (uint32_t b = v[a].next; b < v[o].next; b = v[b].next) {
                size_t la, lb;
                const char *ka = jkey(p, &v[a], &p->k1, &la);
                const char *kb = jkey(p, &v[b], &p->k2, &lb);
                if (la == lb && !memcmp(ka, kb, la))
                    return 1;
            }
        return 0;
    }
    size_t ns = 16;
    while (ns < 2 * n)
        ns *= 2;
    if (ns > p->nslots) {
        free(p->slots);
        p->slots = xmalloc(ns * sizeof *p->slots);
        p->nslots = ns;
    }
    memset(p->slots, 0, ns * sizeof *p->slots);
    for (uint32_t a = o + 1; a < v[o].next; a = v[a].next) {
        size_t la;
        const char *ka = jkey(p, &v[a], &p->k1, &la);
        size_t h = hash_fnv1a32(ka, la) & (ns - 1);
        while (p->slots[h]) {
            size_t lb;
            const char *kb = jkey(p, &v[p->slots[h]], &p->k2, &lb);
            if (la == lb && !memcmp(ka, kb, lb))
                return 1;
            h = (h + 1) & (ns - 1);
        }
        p->slots[h] = a;
    }
    return 0;
}

static int jvalue(struct jparse *p, int depth);

static int jmembers(struct jparse *p, uint32_t me, int depth, int obj)
{
    p->i++;
    jskip(p);
    if (p->i < p->end && p->p[p->i] == (obj ? '}' : ']')) {
        p->i++;
        return 0;
    }
    for (;;) {
        size_t ks = 0;
        int kesc = 0;
        if (obj) {
            if (p->i >= p->end || p->p[p->i] != '"')
                return -1;
            ks = p->i;
            if (jstring(p, &kesc) < 0)
                return -1;
            size_t ke = p->i;
            jskip(p);
            if (p->i >= p->end || p->p[p->i] != ':')
                return -1;
            p->i++;
            jskip(p);
            uint32_t k = (uint32_t)p->d->nv;
            if (jvalue(p, depth + 1) < 0)
                return -1;
            p->d->v[k].ks = (uint32_t)ks;
            p->d->v[k].ke = (uint32_t)ke;
            p->d->v[k].kesc = (uint8_t)kesc;
        } else if (jvalue(p, depth + 1) < 0) {
            return -1;
        }
        p->d->v[me].n++;
        jskip(p);
        if (p->i >= p->end)
            return -1;
        unsigned c = p->p[p->i++];
        if (c == (obj ? '}' : ']'))
            return 0;
        if (c != ',')
            return -1;
        jskip(p);
    }
}

static int jvalue(struct jparse *p, int depth)
{
    if (p->i >= p->end || depth > J_MAX_DEPTH)
        return -1;
    unsigned c = p->p[p->i];
    uint32_t me;
    int esc;
    switch (c) {
    case '{':
    case '[':
        me = jnew(p, c == '{' ? J_OBJ : J_ARR);
        if (jmembers(p, me, depth, c == '{') < 0)
            return -1;
        p->d->v[me].next = (uint32_t)p->d->nv;
        if (c == '{' && jdup(p, me))
            return -1;
        break;
    case '"':
        me = jnew(p, J_STR);
        if (jstring(p, &esc) < 0)
            return -1;
        break;
    case 't':
    case 'f':
    case 'n': {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t l = strlen(w);
        if (p->end - p->i < l || memcmp(p->p + p->i, w, l))
            return -1;
        me = jnew(p, J_LIT);
        p->i += l;
        break;
    }
    default:
        me = jnew(p, J_NUM);
        if (jnumber(p) < 0)
            return -1;
        break;
    }
    p->d->v[me].e = (uint32_t)p->i;
    if (c != '{' && c != '[')
        p->d->v[me].next = me + 1;
    return 0;
}

/* Parses s[0..n) as one JSON value or as JSON Lines; NULL when it is
 * neither (then it is text). */
struct jdoc *shape_jdoc_parse(const char *s, size_t n)
{
    if (n == 0 || n >= UINT32_MAX)
        return NULL;
    struct jdoc *d = xcalloc(1, sizeof *d);
    d->src = s;
    d->len = n;
    /* a value a separator or bracket at most: one allocation, of which
     * only the pages used are touched */
    size_t cap = 16;
    for (size_t i = 0; i < n; i++)
        cap += s[i] == ',' || s[i] == '[' || s[i] == '{' || s[i] == '\n';
    d->cap = cap;
    d->v = xmalloc(d->cap * sizeof *d->v);
    struct jparse p = {.d = d, .p = (const unsigned char *)s, .end = n};
    buf_init(&p.k1, 0);
    buf_init(&p.k2, 0);
    jskip(&p);
    int ok = p.i < n && jvalue(&p, 0) == 0;
    if (ok) {
        jskip(&p);
        ok = p.i == n;
    }
    d->format = SHAPE_JSON;
    if (!ok) {
        /* JSON Lines: every line that is not blank holds one value */
        d->nv = 0;
        p.i = 0;
        uint32_t root = jnew(&p, J_LINES);
        ok = 1;
        while (ok && p.i < n) {
            const char *nl = memchr(s + p.i, '\n', n - p.i);
            p.end = nl ? (size_t)(nl - s) : n;
            jskip(&p);
            if (p.i < p.end) {
                ok = jvalue(&p, 1) == 0;
                jskip(&p);
                ok = ok && p.i == p.end;
                d->v[root].n++;
            }
            p.i = p.end + 1;
        }
        d->v[root].e = (uint32_t)n;
        d->v[root].next = (uint32_t)d->nv;
        d->format = SHAPE_JSONL;
        ok = ok && d->v[root].n >= 2;
    }
    free(p.slots);
    buf_cleanup(&p.k1);
    buf_cleanup(&p.k2);
    if (!ok) {
        shape_jdoc_free(d);
        return NULL;
    }
    return d;
}

enum shape_format shape_format_of(const char *s, size_t n)
{
    struct jdoc *d = shape_jdoc_parse(s, n);
    enum shape_format f = d ? (enum shape_format)d->format : SHAPE_TEXT;
    shape_jdoc_free(d);
    return f;
}

const char *shape_format_name(enum shape_format f)
{
    return f == SHAPE_JSON ? "json" : f == SHAPE_JSONL ? "jsonl" : "text";
}

/* Cost of a token copied as is, once escaped into the outer string: the
 * characters exactly, the tokens with one more per backslash (\n becomes
 * \\n). */
static double jleaf_cost(const struct ctx *x, const char *s, size_t n, double *tokens)
{
    size_t bs = 0;
    for (size_t i = 0; i < n; i++)
        bs += s[i] == '\\';
    double t = (double)(shape_tokens(s, n) + bs);
    if (tokens)
        *tokens += t;
    return shape_cost_of(x, (double)shape_json_chars(s, n), t);
}

/* Costs of every node, children first, as compact JSON escaped into a
 * string; d->tokens sums their tokens. */
void shape_jmeasure(const struct ctx *x, struct jdoc *d, uint32_t i)
{
    struct jnode *v = d->v, *me = &v[i];
    double p1 = shape_punct(x, 1, 1);
    switch (me->type) {
    case J_OBJ:
    case J_ARR:
    case J_LINES: {
        double ov = me->type == J_LINES ? 0 : 2 * p1;
        double sep = me->type == J_LINES ? shape_punct(x, 2, 1) : p1;
        double cost = ov, mins = ov;
        int first = 1;
        d->tokens += me->type == J_LINES ? 0 : 2;
        for (uint32_t k = i + 1; k < me->next; k = v[k].next) {
            shape_jmeasure(x, d, k);
            d->tokens += me->type == J_OBJ ? 2 : 1;
            double kc = sep;
            if (me->type == J_OBJ)
                kc += jleaf_cost(x, d->src + v[k].ks, v[k].ke - v[k].ks, &d->tokens) + p1;
            cost += kc + v[k].cost;
            if (me->type == J_OBJ)
                mins += kc + v[k].min;
            else if (first)
                mins += kc + v[k].min;
            first = 0;
        }
        me = &d->v[i];
        me->cost = cost;
        me->min = mins;
        me->floor_ = ov;
        break;
    }
    case J_STR:
        me->cost = (float)jleaf_cost(x, d->src + me->s, me->e - me->s, &d->tokens);
        me->min = me->floor_ = me->cost;
        if (me->e - me->s >= MIN_CUT) {
            double m = shape_marker_cost(x, me->e - me->s, 0) + shape_punct(x, 4, 2);
            if (m < me->cost)
                me->min = m;
            me->floor_ = shape_punct(x, 4, 2);
        }
        break;
    default:
        me->cost = me->min = me->floor_ = (float)jleaf_cost(x, d->src + me->s, me->e - me->s, &d->tokens);
        break;
    }
}

/* Whitespace outside strings: what compacting saves. */
double shape_jws_cost(const struct ctx *x, const struct jdoc *d)
{
    size_t chars = 0, runs = 0;
    int instr = 0;
    const char *s = d->src;
    for (size_t i = 0; i < d->len; i++) {
        char c = s[i];
        if (instr) {
            if (c == '\\')
                i++;
            else if (c == '"')
                instr = 0;
            continue;
        }
        if (c == '"') {
            instr = 1;
        } else if (jws((unsigned char)c)) {
            runs += i == 0 || !jws((unsigned char)s[i - 1]);
            chars += c == ' ' ? 1 : 2;
        }
    }
    return shape_cost_of(x, (double)chars, (double)(runs + chars / 8));
}

/* ---- cutting JSON ---- */

struct jcut {
    char *path;
    size_t kept, total;     /* elements or members; total 0: a string */
    double cost;
};

struct jred {
    const struct ctx *x;
    const struct jdoc *d;
    struct buf out, path;
    struct jcut cuts[MAX_FIELDS];
    size_t ncuts;
};

static void jnote(struct jred *r, size_t kept, size_t total, double cost)
{
    if (r->ncuts == MAX_FIELDS)
        return;
    struct jcut *c = &r->cuts[r->ncuts++];
    c->path = xstrdup(r->path.p ? r->path.p : "");
    c->kept = kept;
    c->total = total;
    c->cost = cost;
}

static void jwhole(struct jred *r, uint32_t i)
{
    const struct jnode *v = r->d->v, *me = &v[i];
    const char *s = r->d->src;
    switch (me->type) {
    case J_OBJ:
    case J_ARR: {
        buf_append(&r->out, me->type == J_OBJ ? "{" : "[", 1);
        for (uint32_t k = i + 1; k < me->next; k = v[k].next) {
            if (k != i + 1)
                buf_append(&r->out, ",", 1);
            if (me->type == J_OBJ) {
                buf_append(&r->out, s + v[k].ks, v[k].ke - v[k].ks);
                buf_append(&r->out, ":", 1);
            }
            jwhole(r, k);
        }
        buf_append(&r->out, me->type == J_OBJ ? "}" : "]", 1);
        break;
    }
    case J_LINES:
        for (uint32_t k = i + 1; k < me->next; k = v[k].next) {
            jwhole(r, k);
            buf_append(&r->out, "\n", 1);
        }
        break;
    default:
        buf_append(&r->out, s + me->s, me->e - me->s);
        break;
    }
}

/* Length of the escape or character at s[i] (content of a JSON string). */
static size_t junit(const char *s, size_t n, size_t i)
{
    if (s[i] == '\\') {
        if (s[i + 1] != 'u')
            return 2;
        /* a surrogate pair stays together */
        if (i + 12 <= n && (s[i + 2] | 0x20) == 'd' && strchr("89abAB", s[i + 3]) &&
            s[i + 6] == '\\' && s[i + 7] == 'u')
            return 12;
        return 6;
    }
    size_t k = 1;
    while (i + k < n && ((unsigned char)s[i + k] & 0xC0) == 0x80)
        k++;
    return k;
}

/* A JSON string's content s[0..n) cut to head + marker + tail within
 * target (content cost). */
static void jcut_string(struct jred *r, const char *s, size_t n, double total, double target)
{
    const struct ctx *x = r->x;
    char m[128];
    double room = target - shape_marker_cost(x, n, 1) - shape_punct(x, 2, 2);
    size_t h = 0, t0 = n;
    if (room > 0) {
        size_t hp = shape_fit_part(x, s, n, room * HEAD_SHARE, total, 0);
        size_t tp = shape_fit_part(x, s, n, room - (hp ? shape_text_cost(x, s, hp) : 0), total, 1);
        /* back to unit boundaries: the head ends, the tail starts, on one */
        size_t i = 0;
        while (i < n) {
            size_t k = junit(s, n, i);
            if (i + k > hp)
                break;
            i += k;
        }
        h = i;
        while (i < n && i < n - tp)
            i += junit(s, n, i);
        t0 = i;
    }
    size_t omitted = 0;
    for (size_t i = h; i < t0; i += junit(s, n, i))
        omitted++;
    int ml = shape_marker(m, sizeof m, omitted, 0);
    buf_append(&r->out, "\"", 1);
    buf_append(&r->out, s, h);
    if (h)
        buf_append(&r->out, "\\n", 2);
    buf_append(&r->out, m, (size_t)ml);
    if (t0 < n)
        buf_append(&r->out, "\\n", 2);
    buf_append(&r->out, s + t0, n - t0);
    buf_append(&r->out, "\"", 1);
}

static void jreduce(struct jred *r, uint32_t i, double target);

static void jpath_push(struct jred *r, size_t *mark, const char *key, size_t kl, size_t index)
{
    *mark = r->path.len;
    if (key) {
        if (r->path.len)
            buf_append(&r->path, ".", 1);
        buf_append(&r->path, key, kl);
    } else {
        buf_printf(&r->path, "[%zu]", index);
    }
}

static void jpath_pop(struct jred *r, size_t mark)
{
    r->path.len = mark;
    if (r->path.p)
        r->path.p[mark] = '\0';
}

static void jreduce_object(struct jred *r, uint32_t i, double target)
{
    const struct ctx *x = r->x;
    const struct jnode *v = r->d->v, *me = &v[i];
    const char *s = r->d->src;
    double p1 = shape_punct(x, 1, 1), room = target - me->floor_, fixed = 0, mins = 0;
    /* the members that fit at their smallest, from the first */
    size_t k = 0;
    uint32_t end = i + 1;
    for (; end < me->next; end = v[end].next, k++) {
        double kc = jleaf_cost(x, s + v[end].ks, v[end].ke - v[end].ks, NULL) + 2 * p1;
        if (fixed + kc + mins + v[end].min > room)
            break;
        fixed += kc;
        mins += v[end].min;
    }
    room -= fixed;
    double lo = 0, hi = 0;
    for (uint32_t m = i + 1; m < end; m = v[m].next)
        if (v[m].cost > hi)
            hi = v[m].cost;
    for (int it = 0; it < 60 && hi - lo > 0.25; it++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (uint32_t m = i + 1; m < end; m = v[m].next)
            sum += shape_clamp(mid, v[m].min, v[m].cost);
        if (sum <= room)
            lo = mid;
        else
            hi = mid;
    }
    buf_append(&r->out, "{", 1);
    for (uint32_t m = i + 1; m < end; m = v[m].next) {
        if (m != i + 1)
            buf_append(&r->out, ",", 1);
        buf_append(&r->out, s + v[m].ks, v[m].ke - v[m].ks);
        buf_append(&r->out, ":", 1);
        double t = shape_clamp(lo, v[m].min, v[m].cost);
        if (t >= v[m].cost) {
            jwhole(r, m);
            continue;
        }
        size_t mark;
        jpath_push(r, &mark, s + v[m].ks + 1, v[m].ke - v[m].ks - 2, 0);
        jreduce(r, m, t);
        jpath_pop(r, mark);
    }
    buf_append(&r->out, "}", 1);
    if (k < me->n)
        jnote(r, k, me->n, me->cost);
}

static void jreduce_array(struct jred *r, uint32_t i, double target)
{
    const struct ctx *x = r->x;
    const struct jnode *v = r->d->v, *me = &v[i];
    int lines = me->type == J_LINES;
    double sep = lines ? shape_punct(x, 2, 1) : shape_punct(x, 1, 1);
    double avail = target - me->floor_, acc = 0;
    size_t kept = 0;
    uint32_t k = i + 1;
    if (!lines)
        buf_append(&r->out, "[", 1);
    for (; k < me->next && acc + v[k].cost + sep <= avail; k = v[k].next, kept++) {
        acc += v[k].cost + sep;
        if (!lines && kept)
            buf_append(&r->out, ",", 1);
        jwhole(r, k);
        if (lines)
            buf_append(&r->out, "\n", 1);
    }
    if (kept == 0 && k < me->next && avail - sep >= v[k].floor_) {
        size_t mark;
        jpath_push(r, &mark, NULL, 0, 0);
        jreduce(r, k, avail - sep);
        jpath_pop(r, mark);
        if (lines)
            buf_append(&r->out, "\n", 1);
        kept = 1;
    }
    if (!lines)
        buf_append(&r->out, "]", 1);
    if (kept < me->n)
        jnote(r, kept, me->n, me->cost);
}

static void jreduce(struct jred *r, uint32_t i, double target)
{
    const struct jnode *me = &r->d->v[i];
    if (me->cost <= target) {
        jwhole(r, i);
        return;
    }
    switch (me->type) {
    case J_OBJ:
        jreduce_object(r, i, target);
        break;
    case J_ARR:
    case J_LINES:
        jreduce_array(r, i, target);
        break;
    case J_STR:
        if (me->e - me->s < MIN_CUT) {
            jwhole(r, i);
        } else {
            const char *s = r->d->src + me->s + 1;
            size_t n = me->e - me->s - 2;
            jnote(r, 0, 0, me->cost);
            if (target < me->min)
                buf_append(&r->out, "\"\"", 2);
            else
                jcut_string(r, s, n, me->cost, target);
        }
        break;
    default:
        jwhole(r, i);
        break;
    }
}

/* The output's own _truncated: the largest collection cut (or string),
 * how many of its items were kept, and every path cut when there are
 * several. */
static void jrecord(struct buf *b, const struct jcut *c, size_t n, const char *hint)
{
    size_t main_ = 0;
    for (size_t i = 1; i < n; i++) {
        int ci = c[i].total > 0, cm = c[main_].total > 0;
        if (ci > cm || (ci == cm && c[i].cost > c[main_].cost))
            main_ = i;
    }
    buf_puts(b, "{\"path\":\"");
    buf_puts(b, n ? c[main_].path : "");
    buf_puts(b, "\"");
    if (n && c[main_].total)
        buf_printf(b, ",\"kept\":%zu,\"total\":%zu", c[main_].kept, c[main_].total);
    if (n > 1) {
        buf_puts(b, ",\"paths\":[");
        for (size_t i = 0; i < n; i++)
            buf_printf(b, "%s\"%s\"", i ? "," : "", c[i].path);
        buf_puts(b, "]");
    }
    if (hint) {
        buf_puts(b, ",\"hint\":\"");
        buf_json_escape(b, hint, strlen(hint));
        buf_puts(b, "\"");
    }
    buf_puts(b, "}");
}

static const char default_json_hint[] =
    "The output was cut to fit the context: the items kept are whole. Ask for less if the "
    "script can: a count alone (--count-only), fewer fields per item (--fields a,b), fewer "
    "items (--limit N).";

/* 1 when the root object already has a member named _truncated, compared
 * decoded: "\u005ftruncated" is that key too, and a second one would be a
 * duplicate that makes the output text. */
static int jhas_truncated(const struct jdoc *d)
{
    const struct jnode *v = d->v;
    struct jparse p = {.p = (const unsigned char *)d->src};
    buf_init(&p.k1, 0);
    int found = 0;
    for (uint32_t k = 1; k < v[0].next && !found; k = v[k].next) {
        size_t n;
        const char *key = jkey(&p, &v[k], &p.k1, &n);
        found = n == 10 && !memcmp(key, "_truncated", 10);
    }
    buf_cleanup(&p.k1);
    return found;
}

/*
 * d cut to target (cost of the string's content), as new text in *out.
 * 0, or -1 when not even its floor fits (a huge number alone).
 */
int shape_jdoc_cut(const struct ctx *x, const struct jdoc *d, double target, const char *hint,
                    struct buf *out)
{
    const struct jnode *root = &d->v[0];
    if (root->floor_ > target)
        return -1;
    struct jred r = {.x = x, .d = d};
    buf_init(&r.out, 0);
    buf_init(&r.path, 0);
    buf_puts(&r.path, "");
    int record = root->type != J_STR && root->type != J_NUM && root->type != J_LIT &&
                 !(root->type == J_OBJ && jhas_truncated(d));
    const char *h = hint ? hint : default_json_hint;
    double rc = 0;
    if (record) {
        /* room for the record, with a path of ~20 characters */
        static const char sample[] =
            ",{\"_truncated\":{\"path\":\"data.items.values\",\"kept\":123,\"total\":12345,"
            "\"paths\":[\"data.items.values\",\"data\"],\"hint\":\"\"}}";
        rc = jleaf_cost(x, sample, sizeof sample - 1, NULL) + shape_text_cost(x, h, strlen(h)) +
             shape_punct(x, 4, 2);
        if (rc > target / 3) {
            h = NULL;
            rc = jleaf_cost(x, sample, sizeof sample - 1, NULL);
            if (rc > target / 3)
                record = 0;
        }
    }
    double t = record ? target - rc : target;
    if (t < root->floor_)
        t = root->floor_;
    jreduce(&r, 0, t);
    if (record && r.ncuts) {
        struct buf rec;
        buf_init(&rec, 0);
        jrecord(&rec, r.cuts, r.ncuts, h);
        if (root->type == J_LINES) {
            buf_puts(&r.out, "{\"_truncated\":");
            buf_append(&r.out, rec.p, rec.len);
            buf_puts(&r.out, "}\n");
        } else {
            /* before the closing bracket */
            r.out.len--;
            int empty = r.out.p[r.out.len - 1] == (root->type == J_OBJ ? '{' : '[');
            buf_puts(&r.out, empty ? "" : ",");
            buf_puts(&r.out, root->type == J_OBJ ? "\"_truncated\":" : "{\"_truncated\":");
            buf_append(&r.out, rec.p, rec.len);
            buf_puts(&r.out, root->type == J_OBJ ? "}" : "}]");
        }
        buf_cleanup(&rec);
    }
    for (size_t i = 0; i < r.ncuts; i++)
        free(r.cuts[i].path);
    buf_cleanup(&r.path);
    *out = r.out;
    return 0;
}

/* A member holding JSON output: its cost as the string it is now, and how
 * small the JSON (or, failing that, the text) can be cut. */
static void measure_text(const struct ctx *x, int t, json_t *m, struct snode *sn)
{
    struct jdoc *d = x->docs[t];
    double q = shape_punct(x, 2, 1);
    memset(sn, 0, sizeof *sn);
    d->tokens = 0;
    shape_jmeasure(x, d, 0);
    sn->cost = d->v[0].cost + shape_jws_cost(x, d) + q;
    sn->min = d->v[0].floor_ + q;
    if (json_string_length(m) >= MIN_CUT) {
        double tm = shape_marker_cost(x, json_string_length(m), 0) + q;
        if (tm < sn->min)
            sn->min = tm;
    }
    sn->text = t + 1;
}

static json_t *reduce(struct ctx *x, json_t *v, const struct snode *sn, double target);

static json_t *reduce_string(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    if (sn->min >= sn->cost)
        return json_incref(v);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    double q = shape_punct(x, 2, 1), total = sn->cost - q, room = target - q;
    note_path(x);
    if (sn->text) {
        int t = sn->text - 1;
        struct buf out;
        if (shape_jdoc_cut(x, x->docs[t], room, x->texts[t].hint, &out) == 0) {
            json_t *r = str_n(out.p ? out.p : "", out.len);
            buf_cleanup(&out);
            return r;
        }
        x->as_text[t] = 1;      /* a number too long for any budget */
        return cut_head_tail(x, s, n, shape_text_cost(x, s, n), room);
    }
    json_t *r = cut_outline(x, s, n, room);
    return r ? r : cut_head_tail(x, s, n, total, room);
}

static json_t *reduce_array(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    double avail = target - sn->ov, acc = 0, sep = shape_punct(x, 1, 1);
    size_t kept = 0;
    while (kept < sn->n && acc + sn->kid[kept].cost + sep <= avail)
        acc += sn->kid[kept++].cost + sep;
    if (kept == sn->n)
        return json_incref(v);
    note_path(x);
    json_t *r = json_array();
    for (size_t i = 0; i < kept; i++)
        json_array_append(r, json_array_get(v, i));
    if (kept == 0) {
        size_t mark = x->path.len;
        buf_puts(&x->path, "[0]");
        json_array_append_new(r, reduce(x, json_array_get(v, 0), &sn->kid[0], avail - sep));
        x->path.len = mark;
        x->path.p[mark] = '\0';
    }
    return r;
}

static json_t *reduce_object(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    /* Water-filling: the largest L with sum(shape_clamp(L, min_i, cost_i)) <=
     * room; every member bigger than L is cut to L. */
    double room = target - sn->ov, lo = 0, hi = 0;
    for (size_t i = 0; i < sn->n; i++)
        if (sn->kid[i].cost > hi)
            hi = sn->kid[i].cost;
    for (int it = 0; it < 60 && hi - lo > 0.25; it++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t i = 0; i < sn->n; i++)
            sum += shape_clamp(mid, sn->kid[i].min, sn->kid[i].cost);
        if (sum <= room)
            lo = mid;
        else
            hi = mid;
    }
    json_t *r = json_object();
    size_t i = 0, mark = x->path.len;
    const char *k;
    json_t *m;
    json_object_foreach(v, k, m) {
        const struct snode *c = &sn->kid[i++];
        double t = shape_clamp(lo, c->min, c->cost);
        if (t >= c->cost) {
            json_object_set(r, k, m);
            continue;
        }
        if (mark)
            buf_puts(&x->path, ".");
        buf_puts(&x->path, k);
        json_object_set_new(r, k, reduce(x, m, c, t));
        x->path.len = mark;
        if (x->path.p)
            x->path.p[mark] = '\0';
    }
    return r;
}

static json_t *reduce(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    if (sn->cost <= target)
        return json_incref(v);
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return reduce_object(x, v, sn, target);
    case JSON_ARRAY:
        return reduce_array(x, v, sn, target);
    case JSON_STRING:
        return reduce_string(x, v, sn, target);
    default:
        return json_incref(v);
    }
}

/* ---- the result ----------------------------------------------------------- */

static const char default_hint[] =
    "The result was too large for the context and the fields listed were cut. Narrow the "
    "call to see the rest: a section, a smaller limit or max_bytes, a query, or a script "
    "argument that prints less.";

/* Serialises v as tools.c does; *chars and *tokens measure it. */
static void dump_size(json_t *v, size_t *chars, size_t *tokens)
{
    size_t n = 0;
    char *s = jf_dumps(v, &n);
    *chars = shape_chars(s ? s : "", n);
    *tokens = shape_tokens(s ? s : "", n);
    free(s);
}

/* The characters of v, and its tokens unless the characters are already
 * over max_chars (then *tokens is 0: the caller estimates them). */
static int dump_chars(json_t *v, size_t max_chars, size_t *chars, size_t *tokens)
{
    size_t n = 0;
    char *s = jf_dumps(v, &n);
    *chars = shape_chars(s ? s : "", n);
    int over = max_chars && *chars > max_chars;
    *tokens = over ? 0 : shape_tokens(s ? s : "", n);
    free(s);
    return !over;
}

/* Tokens of result, its JSON outputs counted by their parse (jmeasure):
 * one pass over megabytes of output fewer. */
static size_t tokens_estimate(const struct ctx *x, json_t *result)
{
    json_t *c = json_copy(result);
    double t = 0;
    for (size_t i = 0; i < x->ntexts; i++)
        if (x->docs[i]) {
            json_object_set_new(c, x->texts[i].field, json_string(""));
            t += x->docs[i]->tokens;
        }
    size_t c0, t0;
    dump_size(c, &c0, &t0);
    json_decref(c);
    return t0 + (size_t)t;
}

static int shape_fit(struct ctx *xp, json_t *result, const struct shape_budget *b,
                     const char *hint);

int shape_fits(const struct shape_budget *b, size_t chars, size_t tokens)
{
    return (!b->max_chars || chars <= b->max_chars) && (!b->max_tokens || tokens <= b->max_tokens);
}

int shape_json(json_t *result, const struct shape_budget *b, const char *hint)
{
    return shape_json_texts(result, b, hint, NULL, 0);
}

void shape_set_formats(json_t *result, const struct shape_text *texts, size_t ntexts)
{
    for (size_t i = 0; i < ntexts; i++) {
        json_t *v = json_object_get(result, texts[i].field);
        if (texts[i].format && json_is_object(result))
            json_object_set_new(result, texts[i].format,
                                json_string(shape_format_name(
                                    json_is_string(v) ? shape_format_of(json_string_value(v),
                                                                        json_string_length(v))
                                                      : SHAPE_TEXT)));
    }
}

int shape_json_texts(json_t *result, const struct shape_budget *b, const char *hint,
                     const struct shape_text *texts, size_t ntexts)
{
    if (!result || !json_is_object(result))
        return 0;
    struct ctx x = {0};
    x.texts = texts;
    x.ntexts = ntexts;
    x.docs = xcalloc(ntexts ? ntexts : 1, sizeof *x.docs);
    x.as_text = xcalloc(ntexts ? ntexts : 1, sizeof *x.as_text);
    for (size_t i = 0; i < ntexts; i++) {
        json_t *v = json_object_get(result, texts[i].field);
        if (json_is_string(v))
            x.docs[i] = shape_jdoc_parse(json_string_value(v), json_string_length(v));
        if (texts[i].format)
            json_object_set_new(result, texts[i].format,
                                json_string(shape_format_name(
                                    x.docs[i] ? (enum shape_format)x.docs[i]->format
                                              : SHAPE_TEXT)));
    }
    int rc = shape_fit(&x, result, b, hint);
    for (size_t i = 0; i < ntexts; i++) {
        if (x.as_text[i] && texts[i].format)
            json_object_set_new(result, texts[i].format, json_string("text"));
        shape_jdoc_free(x.docs[i]);
    }
    free(x.docs);
    free(x.as_text);
    return rc;
}

static int shape_fit(struct ctx *xp, json_t *result, const struct shape_budget *b,
                     const char *hint)
{
    struct ctx x = *xp;
    if (!b || (!b->max_chars && !b->max_tokens))
        return 0;
    size_t c0, t0;
    int docs = 0;
    for (size_t i = 0; i < x.ntexts; i++)
        docs |= x.docs[i] != NULL;
    /* JSON output over the characters is measured by its parse below. A
     * text's own characters are a floor of its escaped form: when they
     * alone are over, the dump (megabytes, escaped) is not needed to know. */
    int counted = 1;
    if (docs && b->max_chars) {
        size_t floor_chars = 0;
        for (size_t i = 0; i < x.ntexts; i++) {
            json_t *v = json_object_get(result, x.texts[i].field);
            if (json_is_string(v))
                floor_chars += shape_chars(json_string_value(v), json_string_length(v));
        }
        counted = floor_chars <= b->max_chars;
    }
    if (counted)
        counted = dump_chars(result, docs ? b->max_chars : 0, &c0, &t0);
    if (counted && shape_fits(b, c0, t0))
        return 0;

    if (b->max_chars) {
        x.kc = 1;
        x.kt = b->max_tokens ? (double)b->max_chars / (double)b->max_tokens : 0;
        x.B = (double)b->max_chars;
    } else {
        x.kt = 1;
        x.B = (double)b->max_tokens;
    }
    buf_init(&x.path, 0);

    /* A shallow copy is the stable original every attempt cuts from. */
    json_t *orig = json_copy(result);
    json_object_del(orig, "_truncated");
    x.root = orig;
    struct snode root;
    measure(&x, orig, &root);
    if (!counted)
        t0 = tokens_estimate(&x, result);

    json_t *trunc = json_pack("{s:[], s:I, s:I, s:s}", "fields", "original_tokens",
                              (json_int_t)t0, "kept_tokens", (json_int_t)t0, "hint",
                              hint ? hint : default_hint);
    struct snode ts;
    measure(&x, trunc, &ts);
    if (ts.cost > x.B / 3)
        json_object_del(trunc, "hint");
    snode_free(&ts);
    measure(&x, trunc, &ts);

    /* Room for the members, less _truncated and its paths (~30 chars each). */
    double target = x.B - ts.cost - shape_punct(&x, 16, 4) - 2 * shape_punct(&x, 30, 8);
    snode_free(&ts);
    json_t *r = NULL;
    int rc = 2;
    size_t c = 0, t = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        json_decref(r);
        json_array_clear(json_object_get(trunc, "fields"));
        x.fields = json_object_get(trunc, "fields");
        memset(x.as_text, 0, (x.ntexts ? x.ntexts : 1) * sizeof *x.as_text);
        if (target < root.min)
            target = root.min;
        r = reduce(&x, orig, &root, target);
        if (r == orig) {                /* nothing to cut at this target */
            json_decref(r);
            r = json_copy(orig);
        }
        json_object_set(r, "_truncated", trunc);
        dump_size(r, &c, &t);
        if (shape_fits(b, c, t)) {
            rc = 1;
            break;
        }
        if (target <= root.min)
            break;                      /* cut as far as the rules go */
        double over = shape_cost_of(&x, (double)c, (double)t) - x.B;
        if (over < 1)
            over = 1;
        target -= over + 0.01 * x.B;
    }
    /* kept_tokens only gets shorter than the placeholder it replaces. */
    json_object_set_new(trunc, "kept_tokens", json_integer((json_int_t)t));
    json_decref(trunc);
    json_object_clear(result);
    json_object_update(result, r);
    json_decref(r);
    json_decref(orig);
    snode_free(&root);
    buf_cleanup(&x.path);
    return rc;
}
