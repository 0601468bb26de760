/*
 * shape.c - token estimate and result fitting (see shape.h, docs/shaping.md).
 */
#include "shape.h"
#include "util.h"

#include <math.h>
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
static int is_digit(unsigned c) { return c >= '0' && c <= '9'; }
static int is_space(unsigned c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static size_t cdiv(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

/* Decodes one UTF-8 sequence at p[0..n) (n >= 1, p[0] >= 0x80): its length,
 * or 0 when it is not valid. */
static size_t utf8_decode(const unsigned char *p, size_t n, unsigned *cp)
{
    unsigned c = p[0];
    size_t k;
    unsigned v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2;
        v = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        v = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return k;
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

/* ---- sizes ---------------------------------------------------------------- */

/*
 * Sizes are in one unit, "cost": max(kc * characters, kt * tokens), scaled
 * so that the budget is B cost units whichever of its two limits binds
 * (kc = 1 and kt = max_chars / max_tokens when both are set). Costs of
 * parts add up to at least the cost of the whole.
 */
struct ctx {
    double kc, kt, B;
    json_t *fields;         /* paths that were cut */
    struct buf path;
};

#define MIN_CUT 64          /* strings shorter than this (bytes) are never cut */
#define MAX_FIELDS 32
#define HEAD_SHARE 0.6      /* of a cut string's room, for its head */
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(6))

static double cost_of(const struct ctx *x, double chars, double tokens)
{
    double a = x->kc * chars, b = x->kt * tokens;
    return a > b ? a : b;
}

/* Characters of s[0..n) once escaped into a JSON string (no quotes). */
static size_t json_chars(const char *s, size_t n)
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
static double text_cost(const struct ctx *x, const char *s, size_t n)
{
    return cost_of(x, (double)json_chars(s, n), (double)shape_tokens(s, n));
}

/* Cost of fixed punctuation: chars characters, tokens tokens. */
static double punct(const struct ctx *x, double chars, double tokens)
{
    return cost_of(x, chars, tokens);
}

/* The marker put in place of the middle of a string. */
static int marker(char *out, size_t size, size_t omitted, int newlines)
{
    return snprintf(out, size, "%s[... %zu characters omitted: narrow the call ...]%s",
                    newlines ? "\n" : "", omitted, newlines ? "\n" : "");
}

static double marker_cost(const struct ctx *x, size_t omitted, int newlines)
{
    char m[128];
    int n = marker(m, sizeof m, omitted, newlines);
    return text_cost(x, m, (size_t)n);
}

/* Size of a value and how small it can be cut, measured once. */
struct snode {
    double cost;            /* serialised */
    double min;             /* after the deepest cut the rules allow */
    double ov;              /* containers: brackets, keys, separators */
    size_t n;
    struct snode *kid;      /* containers: one per element / member, in order */
};

static void snode_free(struct snode *sn)
{
    for (size_t i = 0; i < sn->n; i++)
        snode_free(&sn->kid[i]);
    free(sn->kid);
}

static void measure(const struct ctx *x, json_t *v, struct snode *sn)
{
    char num[64];
    memset(sn, 0, sizeof *sn);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        sn->n = json_object_size(v);
        sn->kid = xcalloc(sn->n ? sn->n : 1, sizeof *sn->kid);
        sn->ov = punct(x, 2, 1);
        double mins = 0, costs = 0;
        size_t i = 0;
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) {
            size_t kl = strlen(k);
            sn->ov += text_cost(x, k, kl) + punct(x, 4, 2);   /* "k":  , */
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
        sn->ov = punct(x, 2, 1);
        sn->cost = sn->ov;
        for (size_t i = 0; i < sn->n; i++) {
            measure(x, json_array_get(v, i), &sn->kid[i]);
            sn->cost += sn->kid[i].cost + punct(x, 1, 1);
        }
        sn->min = sn->n ? sn->ov + sn->kid[0].min + punct(x, 1, 1) : sn->cost;
        break;
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        sn->cost = text_cost(x, s, n) + punct(x, 2, 1);
        sn->min = sn->cost;
        if (n >= MIN_CUT) {
            double m = marker_cost(x, shape_chars(s, n), 0) + punct(x, 2, 1);
            if (m < sn->cost)
                sn->min = m;
        }
        break;
    }
    case JSON_INTEGER: {
        int k = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        sn->cost = text_cost(x, num, (size_t)k);
        sn->min = sn->cost;
        break;
    }
    case JSON_REAL: {
        int k = snprintf(num, sizeof num, "%.6g", json_real_value(v));
        sn->cost = text_cost(x, num, (size_t)k) + punct(x, 2, 1);   /* ".0", exponent */
        sn->min = sn->cost;
        break;
    }
    default:
        sn->cost = punct(x, 5, 1);
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
static size_t fit_part(const struct ctx *x, const char *s, size_t n, double target, double total,
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
        double c = q ? text_cost(x, tail ? s + n - q : s, q) : 0;
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
    double room = target - marker_cost(x, chars, 1);
    if (room <= 0) {
        marker(m, sizeof m, chars, 0);
        return json_string(m);
    }
    size_t h = fit_part(x, s, n, room * HEAD_SHARE, total, 0);
    double used = h ? text_cost(x, s, h) : 0;
    size_t t = fit_part(x, s + h, n - h, room - used, total, 1);
    size_t omitted = shape_chars(s + h, n - h - t);
    int ml = marker(m, sizeof m, omitted, 1);
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
    double heads = 0, maxb = 0, mk = marker_cost(x, n, 1);
    for (size_t i = 0; i < ns; i++) {
        sec[i].hc = text_cost(x, s + sec[i].hs, sec[i].he - sec[i].hs);
        sec[i].bc = text_cost(x, s + sec[i].he, sec[i].be - sec[i].he);
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
        size_t keep = fit_part(x, body, bl, lo - mk, sec[i].bc, 0);
        int ml = marker(m, sizeof m, shape_chars(body + keep, bl - keep), 1);
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

static json_t *reduce(struct ctx *x, json_t *v, const struct snode *sn, double target);

static json_t *reduce_string(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    if (sn->min >= sn->cost)
        return json_incref(v);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    double q = punct(x, 2, 1), total = sn->cost - q, room = target - q;
    note_path(x);
    json_t *r = cut_outline(x, s, n, room);
    return r ? r : cut_head_tail(x, s, n, total, room);
}

static json_t *reduce_array(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    double avail = target - sn->ov, acc = 0, sep = punct(x, 1, 1);
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

static double clamp(double l, double lo, double hi)
{
    return l < lo ? lo : l > hi ? hi : l;
}

static json_t *reduce_object(struct ctx *x, json_t *v, const struct snode *sn, double target)
{
    /* Water-filling: the largest L with sum(clamp(L, min_i, cost_i)) <=
     * room; every member bigger than L is cut to L. */
    double room = target - sn->ov, lo = 0, hi = 0;
    for (size_t i = 0; i < sn->n; i++)
        if (sn->kid[i].cost > hi)
            hi = sn->kid[i].cost;
    for (int it = 0; it < 60 && hi - lo > 0.25; it++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (size_t i = 0; i < sn->n; i++)
            sum += clamp(mid, sn->kid[i].min, sn->kid[i].cost);
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
        double t = clamp(lo, c->min, c->cost);
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
    char *s = json_dumps(v, DUMP_FLAGS);
    size_t n = s ? strlen(s) : 0;
    *chars = shape_chars(s ? s : "", n);
    *tokens = shape_tokens(s ? s : "", n);
    free(s);
}

static int fits(const struct shape_budget *b, size_t chars, size_t tokens)
{
    return (!b->max_chars || chars <= b->max_chars) && (!b->max_tokens || tokens <= b->max_tokens);
}

int shape_json(json_t *result, const struct shape_budget *b, const char *hint)
{
    if (!result || !json_is_object(result) || !b || (!b->max_chars && !b->max_tokens))
        return 0;
    size_t c0, t0;
    dump_size(result, &c0, &t0);
    if (fits(b, c0, t0))
        return 0;

    struct ctx x = {0};
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
    struct snode root;
    measure(&x, orig, &root);

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
    double target = x.B - ts.cost - punct(&x, 16, 4) - 2 * punct(&x, 30, 8);
    snode_free(&ts);
    json_t *r = NULL;
    int rc = 2;
    size_t c = 0, t = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        json_decref(r);
        json_array_clear(json_object_get(trunc, "fields"));
        x.fields = json_object_get(trunc, "fields");
        if (target < root.min)
            target = root.min;
        r = reduce(&x, orig, &root, target);
        if (r == orig) {                /* nothing to cut at this target */
            json_decref(r);
            r = json_copy(orig);
        }
        json_object_set(r, "_truncated", trunc);
        dump_size(r, &c, &t);
        if (fits(b, c, t)) {
            rc = 1;
            break;
        }
        if (target <= root.min)
            break;                      /* cut as far as the rules go */
        double over = cost_of(&x, (double)c, (double)t) - x.B;
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
