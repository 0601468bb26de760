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
        /* Short is judged as written in JSON: 40 control bytes are 240
         * characters escaped, which no budget should have to keep whole. */
        size_t esc = n;
        for (size_t i = 0; i < n && esc < MIN_CUT; i++) {
            unsigned char ch = (unsigned char)s[i];
            esc += ch == '"' || ch == '\\' || ch == '\n' || ch == '\t' || ch == '\r' ? 1
                   : ch < 0x20                                                   ? 5
                                                                                 : 0;
        }
        if (esc >= MIN_CUT) {
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
