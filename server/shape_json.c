/*
 * shape_json.c - printed output that is JSON (a script's stdout, a .json
 * file): parsed into spans over its text, its format told, its costs
 * measured, and cut as JSON so that it still parses (see shape.h,
 * docs/shaping.md "JSON output").
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
