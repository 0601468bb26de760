/*
 * redact.c - see redact.h.
 *
 * One pass, leftmost first: each pattern is compiled and JIT compiled on its
 * own, and the scan keeps, for every pattern, its next match at or after
 * the current position. The match that starts first is replaced (of two
 * that start at one place, the earlier pattern's: built-ins first, then the
 * file's order), the position moves past it, and only the patterns whose
 * next match started before the new position search again, from there. So
 * each pattern reads the text once, from left to right, and no two
 * replacements overlap.
 *
 * Why not one alternation "(p0)|(p1)|..." of all patterns: it reads the text
 * once, but each position that starts any pattern enters the matcher, and
 * PCRE2's JIT loses what makes a single pattern fast, the vectorised search
 * for its first characters ("ghp_", "AKIA", "-----BEGIN"). Measured on 10
 * MB of mixed text (bench/redact.c), the built-ins took about 3 times longer
 * joined than one after the other. Separate patterns also keep their own
 * meaning: back references, \Q, (*CRLF) or an extended-mode comment could
 * not leak into a neighbour.
 *
 * Environment values are found with memmem (exact bytes; there are few and
 * they are not patterns), then merged with the pattern matches before the
 * text is rewritten once.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "redact.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reloadable.h"
#include "shape.h"
#include "stats.h"
#include "util.h"

#define REDACT_FILE_MAX (1 << 20)

struct pat {
    char name[REDACT_NAME_MAX + 1];
    pcre2_code *re;
};

struct redact_set {
    struct pat *pat;
    size_t npat;
    uint32_t max_caps;          /* the most capture groups of one pattern */
};

struct env_val {
    char name[REDACT_NAME_MAX + 8];     /* "env:NAME" */
    char *val;
    size_t len;
};

struct redact_env {
    struct env_val *v;
    size_t n;
};

/*
 * The built-in credentials. \K keeps a key or header name out of the match,
 * so only the value is replaced. A value runs to its end however long it is
 * (a bound would replace a prefix and pass the rest on): every repeat is
 * possessive, so a match is one pass over the value, never a backtrack.
 * Minimum lengths stay where a real credential has them.
 */
/* After a password's key: the value alone (\K), quoted or bare. */
#define PW_VALUE                                                                          \
    "[\"']?[ \\t]*[:=][ \\t]*"                                                          \
    "(?:\"\\K(?:[^\"\\\\\\r\\n]++|\\\\[^\\r\\n])++|'\\K[^'\\r\\n]++|\\K[^\\s\"',;&<>]++)"

static const struct {
    const char *name, *re;
} builtin[] = {
    /* RFC 6750 token68 after "Authorization: Bearer", as a header or a
     * JSON/YAML member ("Authorization": "Bearer ...") */
    {"bearer-token",
     "(?i)(?<![A-Za-z0-9_-])authorization[\"']?[ \\t]*[:=][ \\t]*[\"']?bearer[ \\t]+\\K"
     "[A-Za-z0-9._~+/-]++=*"},
    {"aws-access-key", "(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"},
    {"aws-secret-key",
     "(?i)(?<![A-Za-z0-9])aws_secret_access_key[\"']?[ \\t]*[:=][ \\t]*[\"']?\\K"
     "(?-i)[A-Za-z0-9/+]{30,}+={0,2}"},
    /* the whole block; one whose END is missing (output cut short) up to
     * the end of its base64 body */
    {"private-key",
     "-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY-----(?:[\\s\\S]{0,32768}?-----END[A-Z0-9 ]{0,40} "
     "PRIVATE KEY-----|[A-Za-z0-9+/=\\s:,\\\\-]*+)"},
    {"github-token",
     "(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{22,}+)"
     "(?![A-Za-z0-9_])"},
    {"slack-token", "(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}+"},
    /* the value of password=, passwd:, secret= (also db_password,
     * client_secret); two patterns of one name, each with a first letter in
     * two cases, which the JIT searches for vectorised (one pattern would
     * start with any of p P s S and enter the matcher far more often) */
    {"password",
     "(?i)(?<![A-Za-z0-9])passw(?:or)?d" PW_VALUE},
    {"password",
     "(?i)(?<![A-Za-z0-9])secret" PW_VALUE},
};
#define NBUILTIN (sizeof builtin / sizeof *builtin)

static const uint32_t COMPILE_OPTS = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE;

/* ---- parsing and compiling ------------------------------------------------- */

struct src {
    char name[REDACT_NAME_MAX + 1];
    char *re;
    size_t relen;
    size_t line;            /* 0: built-in */
    pcre2_code *code;
};

static int name_ok(const char *s, size_t n)
{
    if (!n || n > REDACT_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* Compiles one pattern, JIT included. */
static int compile_one(struct src *p, const char *file, struct err *err)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p->re, p->relen, COMPILE_OPTS, &ec, &off, NULL);
    if (!re) {
        PCRE2_UCHAR m[256];
        pcre2_get_error_message(ec, m, sizeof m);
        err_fileline(err, p->line ? file : "built-in pattern", p->line,
                     "pattern '%s' does not compile at offset %zu: %s", p->name, (size_t)off,
                     (char *)m);
        return -1;
    }
    size_t minlen = 0;
    pcre2_pattern_info(re, PCRE2_INFO_MINLENGTH, &minlen);
    if (!minlen) {
        pcre2_code_free(re);
        err_fileline(err, file, p->line,
             "pattern '%s' can match the empty string; it must match at least one character",
             p->name);
        return -1;
    }
    /* partial matching too: a stream holds back what could be a match's start */
    int jr = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);
    if (jr)
        log_warn("redact: no JIT for pattern '%s' (PCRE2 error %d); it is matched interpreted",
                 p->name, jr);
    p->code = re;
    return 0;
}

struct redact_set *redact_set_parse(const char *text, size_t n, const char *file, int builtins,
                                    struct err *err)
{
    struct src *p = xcalloc(NBUILTIN + REDACT_MAX_PATTERNS, sizeof *p);
    size_t np = 0, line = 0;
    struct redact_set *set = NULL;
    if (!file)
        file = "(redact)";
    if (builtins)
        for (size_t i = 0; i < NBUILTIN; i++, np++) {
            snprintf(p[np].name, sizeof p[np].name, "%s", builtin[i].name);
            p[np].re = xstrdup(builtin[i].re);
            p[np].relen = strlen(builtin[i].re);
        }
    size_t nb = np;
    const char *s = text ? text : "", *end = s + (text ? n : 0);
    while (s < end) {
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        const char *e = eol ? eol : end;
        line++;
        const char *q = s;
        s = eol ? eol + 1 : end;
        while (e > q && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        while (q < e && (*q == ' ' || *q == '\t'))
            q++;
        if (q == e || *q == '#')
            continue;
        if (memchr(q, '\0', (size_t)(e - q))) {
            err_fileline(err, file, line, "a NUL byte in the line");
            goto out;
        }
        const char *ne = q;
        while (ne < e && *ne != ' ' && *ne != '\t')
            ne++;
        const char *r = ne;
        while (r < e && (*r == ' ' || *r == '\t'))
            r++;
        if (!name_ok(q, (size_t)(ne - q))) {
            err_fileline(err, file, line,
                         "'%.*s' is not a pattern name (1-%d of A-Z a-z 0-9 _ . -), then tabs or "
                         "spaces and the pattern",
                         (int)(ne - q > 80 ? 80 : ne - q), q, REDACT_NAME_MAX);
            goto out;
        }
        if (r == e) {
            err_fileline(err, file, line,
                         "'%.*s' has no pattern: write NAME, then tabs or spaces, then a PCRE2 "
                         "pattern",
                         (int)(ne - q), q);
            goto out;
        }
        if (np - nb >= REDACT_MAX_PATTERNS) {
            err_fileline(err, file, line, "more than %d patterns", REDACT_MAX_PATTERNS);
            goto out;
        }
        struct src *cur = &p[np];
        memcpy(cur->name, q, (size_t)(ne - q));
        for (size_t i = 0; i < np; i++)
            if (!strcmp(p[i].name, cur->name)) {
                if (p[i].line)
                    err_fileline(err, file, line,
                                 "the name '%s' is already used on line %zu", cur->name,
                                 p[i].line);
                else
                    err_fileline(err, file, line, "the name '%s' is a built-in pattern's",
                                 cur->name);
                goto out;
            }
        cur->re = xstrndup(r, (size_t)(e - r));
        cur->relen = (size_t)(e - r);
        cur->line = line;
        np++;
    }
    for (size_t i = 0; i < np; i++)
        if (compile_one(&p[i], file, err) < 0)
            goto out;
    set = xcalloc(1, sizeof *set);
    set->npat = np;
    set->pat = xcalloc(np ? np : 1, sizeof *set->pat);
    for (size_t i = 0; i < np; i++) {
        memcpy(set->pat[i].name, p[i].name, sizeof set->pat[i].name);
        set->pat[i].re = p[i].code;
        p[i].code = NULL;
        uint32_t caps = 0;
        pcre2_pattern_info(set->pat[i].re, PCRE2_INFO_CAPTURECOUNT, &caps);
        if (caps > set->max_caps)
            set->max_caps = caps;
    }
out:
    for (size_t i = 0; i < np; i++) {
        free(p[i].re);
        pcre2_code_free(p[i].code);
    }
    free(p);
    return set;
}

void redact_set_free(struct redact_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->npat; i++)
        pcre2_code_free(s->pat[i].re);
    free(s->pat);
    free(s);
}

const char *redact_builtin(size_t i, const char **name)
{
    if (i >= NBUILTIN)
        return NULL;
    *name = builtin[i].name;
    return builtin[i].re;
}

size_t redact_set_count(const struct redact_set *s)
{
    return s ? s->npat : 0;
}

const char *redact_set_name(const struct redact_set *s, size_t i)
{
    return s && i < s->npat ? s->pat[i].name : NULL;
}

/* ---- environment values ------------------------------------------------------ */

struct redact_env *redact_env_new(char *const *envp, json_t *names)
{
    struct redact_env *e = xcalloc(1, sizeof *e);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        const char *name = json_string_value(v);
        size_t nl = name ? strlen(name) : 0;
        if (!nl || nl > REDACT_NAME_MAX)
            continue;
        for (char *const *p = envp; p && *p; p++) {
            if (strncmp(*p, name, nl) || (*p)[nl] != '=')
                continue;
            const char *val = *p + nl + 1;
            size_t len = strlen(val);
            /* A short value ("1", "true", "eu-west-1"'s "eu") occurs all over
             * ordinary output: replacing it would wreck the output and, by
             * where the markers fall, tell the value anyway. Credentials are
             * longer than this. */
            if (len < REDACT_ENV_MIN)
                break;
            e->v = xrealloc(e->v, (e->n + 1) * sizeof *e->v);
            snprintf(e->v[e->n].name, sizeof e->v[e->n].name, "env:%s", name);
            e->v[e->n].val = xstrndup(val, len);
            e->v[e->n].len = len;
            e->n++;
            break;
        }
    }
    if (!e->n) {
        free(e);
        return NULL;
    }
    return e;
}

void redact_env_free(struct redact_env *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].val);
    free(e->v);
    free(e);
}

/* ---- matching ------------------------------------------------------------------ */

struct hit {
    size_t s, e;
    const char *name;
    int order;              /* env values first, then patterns in order */
    int bare;               /* a number of JSON text: replaced by a string */
};

struct hits {
    struct hit *h;
    size_t n, cap;
};

static void hit_add(struct hits *H, size_t s, size_t e, const char *name, int order)
{
    if (H->n == H->cap) {
        H->cap = H->cap ? H->cap * 2 : 16;
        H->h = xrealloc(H->h, H->cap * sizeof *H->h);
    }
    H->h[H->n++] = (struct hit){s, e, name, order, 0};
}

static int hit_cmp(const void *a, const void *b)
{
    const struct hit *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->order - y->order;
}

/* The next match of re at or after from that is not empty (an empty one,
 * possible only through \K, steps one character). 1 found, 0 none, <0 the
 * matcher's error. */
static int next_match(const pcre2_code *re, const char *t, size_t n, size_t from,
                      pcre2_match_data *md, size_t *s, size_t *e)
{
    while (from < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)t, n, from, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            return 0;
        if (rc < 0)
            return rc;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] > ov[0]) {
            *s = ov[0];
            *e = ov[1];
            return 1;
        }
        from = ov[1] > from ? ov[1] : from + 1;
        while (from < n && ((unsigned char)t[from] & 0xC0) == 0x80)
            from++;
    }
    return 0;
}

/* Pattern matches, leftmost first (see the top). -1 when the matcher failed. */
static int find_patterns(const struct redact_set *set, const char *t, size_t n, struct hits *H)
{
    if (!set || !set->npat || !n)
        return 0;
    pcre2_match_data *md = pcre2_match_data_create(set->max_caps + 1, NULL);
    if (!md)
        return -1;
    struct next {
        size_t s, e;
        int state;          /* 0 to search, 1 found, 2 no more */
    } *nx = xcalloc(set->npat, sizeof *nx);
    size_t pos = 0;
    int r = 0;
    for (;;) {
        size_t best = set->npat;
        for (size_t i = 0; i < set->npat; i++) {
            if (nx[i].state == 2)
                continue;
            if (nx[i].state == 0 || nx[i].s < pos) {
                int rc = next_match(set->pat[i].re, t, n, pos, md, &nx[i].s, &nx[i].e);
                if (rc < 0) {
                    PCRE2_UCHAR m[256];
                    pcre2_get_error_message(rc, m, sizeof m);
                    log_error("redact: matching '%s' failed (%s); the text is withheld",
                              set->pat[i].name, (char *)m);
                    r = -1;
                    goto done;
                }
                nx[i].state = rc ? 1 : 2;
                if (!rc)
                    continue;
            }
            if (best == set->npat || nx[i].s < nx[best].s)
                best = i;
        }
        if (best == set->npat)
            break;
        hit_add(H, nx[best].s, nx[best].e, set->pat[best].name, 1 + (int)best);
        pos = nx[best].e;
    }
done:
    free(nx);
    pcre2_match_data_free(md);
    return r;
}

static void find_env(const struct redact_env *E, const char *t, size_t n, struct hits *H)
{
    for (size_t i = 0; E && i < E->n; i++) {
        const char *p = t, *end = t + n;
        while ((size_t)(end - p) >= E->v[i].len) {
            const char *m = memmem(p, (size_t)(end - p), E->v[i].val, E->v[i].len);
            if (!m)
                break;
            hit_add(H, (size_t)(m - t), (size_t)(m - t) + E->v[i].len, E->v[i].name, 0);
            p = m + E->v[i].len;
        }
    }
}

/* Overlapping hits become one, named by the first (sorted) of them. */
static void merge(struct hits *H)
{
    if (H->n < 2)
        return;
    qsort(H->h, H->n, sizeof *H->h, hit_cmp);
    size_t w = 0;
    for (size_t i = 1; i < H->n; i++) {
        if (H->h[i].s < H->h[w].e) {
            if (H->h[i].e > H->h[w].e)
                H->h[w].e = H->h[i].e;
        } else
            H->h[++w] = H->h[i];
    }
    H->n = w + 1;
}

/* ---- JSON text: string spans ------------------------------------------------ */

struct span {
    size_t s, e;            /* the content between the quotes */
    int key;
};

/* The strings of valid JSON (or JSON Lines) text, in order. */
static struct span *json_spans(const char *t, size_t n, size_t *count)
{
    struct span *sp = NULL;
    size_t ns = 0, cap = 0;
    size_t i = 0;
    while (i < n) {
        const char *q = memchr(t + i, '"', n - i);
        if (!q)
            break;
        size_t s = (size_t)(q - t) + 1, j = s;
        while (j < n && t[j] != '"')
            j += t[j] == '\\' ? 2 : 1;
        if (j > n)
            j = n;
        size_t k = j + 1;
        while (k < n && (t[k] == ' ' || t[k] == '\t' || t[k] == '\r' || t[k] == '\n'))
            k++;
        if (ns == cap) {
            cap = cap ? cap * 2 : 64;
            sp = xrealloc(sp, cap * sizeof *sp);
        }
        sp[ns++] = (struct span){s, j, k < n && t[k] == ':'};
        i = j + 1;
    }
    *count = ns;
    return sp;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15)
            return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

/* cp as UTF-8 (a lone surrogate as the 3 bytes it would be). */
static size_t utf8_put(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * An environment value that a JSON encoder printed is escaped: `"`, `\` and
 * control characters always, `/` by some encoders, every non-ASCII
 * character with Python's ensure_ascii, `<>&` with Go's. The search of the
 * raw bytes misses those, so in JSON text each string that holds an escape
 * is searched again decoded, and a hit covers the whole escapes it was
 * decoded from.
 */
static void find_env_json(const struct redact_env *E, const char *t, size_t n, struct hits *H)
{
    size_t ns, cap = 0;
    struct span *sp = json_spans(t, n, &ns);
    char *dec = NULL;
    size_t *from = NULL, *to = NULL;
    for (size_t k = 0; k < ns; k++) {
        size_t s = sp[k].s, e = sp[k].e, d = 0;
        if (e <= s || !memchr(t + s, '\\', e - s))
            continue;
        if (e - s > cap) {      /* decoding never lengthens a string */
            cap = e - s;
            dec = xrealloc(dec, cap);
            from = xrealloc(from, cap * sizeof *from);
            to = xrealloc(to, cap * sizeof *to);
        }
        for (size_t p = s; p < e;) {
            size_t p0 = p, nb = 1;
            char b[4];
            unsigned cp, lo;
            if (t[p] != '\\' || p + 1 >= e) {
                b[0] = t[p++];
            } else if (t[p + 1] == 'u' && p + 6 <= e && hex4(t + p + 2, &cp)) {
                p += 6;
                if (cp >= 0xD800 && cp < 0xDC00 && p + 6 <= e && t[p] == '\\' &&
                    t[p + 1] == 'u' && hex4(t + p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
                nb = utf8_put(b, cp);
            } else {
                static const char esc[] = "bfnrt", val[] = "\b\f\n\r\t";
                const char *q = strchr(esc, t[p + 1]);
                b[0] = q && t[p + 1] ? val[q - esc] : t[p + 1];
                p += 2;
            }
            for (size_t i = 0; i < nb && d < cap; i++, d++) {
                dec[d] = b[i];
                from[d] = p0;
                to[d] = p;
            }
        }
        for (size_t i = 0; i < E->n; i++) {
            size_t len = E->v[i].len;
            for (size_t at = 0; d - at >= len;) {
                const char *m = memmem(dec + at, d - at, E->v[i].val, len);
                if (!m)
                    break;
                size_t j = (size_t)(m - dec);
                hit_add(H, from[j], to[j + len - 1], E->v[i].name, 0);
                at = j + len;
            }
        }
    }
    free(dec);
    free(from);
    free(to);
    free(sp);
}

/*
 * A secret a JSON encoder escaped ("ghp_\u0041...", a key block whose line
 * ends are "\n", "\/" in base64) is not what the patterns look for. Text
 * that holds a backslash is also read decoded: each JSON escape (\uXXXX
 * with its surrogate pair, \n, \", \/ ...) becomes the character it
 * stands for, anywhere in the text (a log line can print a JSON fragment),
 * the patterns run over that view, and a match maps back onto the original
 * bytes, covering the whole escapes it was decoded from.
 */
struct esc {
    size_t d, s;            /* where it starts, decoded and original */
    unsigned char dl, sl;   /* its length, decoded and original */
};

struct decoded {
    char *t;
    size_t n;
    struct esc *e;
    size_t ne;
};

static int decode_escapes(const char *t, size_t n, struct decoded *D)
{
    size_t cap = 0;
    D->t = xmalloc(n + 1);
    D->n = 0;
    D->e = NULL;
    D->ne = 0;
    for (size_t p = 0; p < n;) {
        const char *bs = memchr(t + p, '\\', n - p);
        size_t run = bs ? (size_t)(bs - t) - p : n - p;
        memcpy(D->t + D->n, t + p, run);
        D->n += run;
        p += run;
        if (!bs)
            break;
        char b[4];
        size_t nb = 1, sl = 2;
        unsigned cp, lo;
        static const char esc[] = "bfnrt\"/", val[] = "\b\f\n\r\t\"/";
        const char *q = p + 1 < n && t[p + 1] ? strchr(esc, t[p + 1]) : NULL;
        if (p + 6 <= n && t[p + 1] == 'u' && hex4(t + p + 2, &cp)) {
            sl = 6;
            if (cp >= 0xD800 && cp < 0xDC00 && p + 12 <= n && t[p + 6] == '\\' &&
                t[p + 7] == 'u' && hex4(t + p + 8, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                sl = 12;
            }
            nb = utf8_put(b, cp);
        } else if (p + 1 < n && t[p + 1] == '\\') {
            b[0] = '\\';
        } else if (q) {
            b[0] = val[q - esc];
        } else {
            D->t[D->n++] = t[p++];  /* not an escape: the backslash as it is */
            continue;
        }
        if (D->ne == cap) {
            cap = cap ? cap * 2 : 64;
            D->e = xrealloc(D->e, cap * sizeof *D->e);
        }
        D->e[D->ne++] = (struct esc){D->n, p, (unsigned char)nb, (unsigned char)sl};
        memcpy(D->t + D->n, b, nb);     /* never longer than the escape */
        D->n += nb;
        p += sl;
    }
    return D->ne > 0;
}

/* The escape at or before decoded offset x (NULL: none). */
static const struct esc *esc_at(const struct decoded *D, size_t x)
{
    size_t lo = 0, hi = D->ne;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (D->e[mid].d <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &D->e[lo - 1] : NULL;
}

/* Original offset of decoded byte x: end 0 its first byte, 1 just past it. */
static size_t orig_of(const struct decoded *D, size_t x, int end)
{
    const struct esc *e = esc_at(D, x);
    if (!e)
        return x + (size_t)end;
    if (x < e->d + e->dl)
        return end ? e->s + e->sl : e->s;
    return e->s + e->sl + (x - e->d - e->dl) + (size_t)end;
}

static int find_patterns(const struct redact_set *set, const char *t, size_t n, struct hits *H);

/* Pattern matches in the decoded view, as hits on the original text. One
 * the plain scan found too overlaps it and is merged with it: counted once. */
static int find_patterns_decoded(const struct redact_set *set, const char *t, size_t n,
                                 struct hits *H)
{
    struct decoded D;
    if (!set || !set->npat)
        return 0;
    if (!decode_escapes(t, n, &D)) {
        free(D.t);
        return 0;
    }
    struct hits h = {0};
    int r = find_patterns(set, D.t, D.n, &h);
    for (size_t i = 0; r >= 0 && i < h.n; i++)
        hit_add(H, orig_of(&D, h.h[i].s, 0), orig_of(&D, h.h[i].e - 1, 1), h.h[i].name,
                h.h[i].order);
    free(h.h);
    free(D.t);
    free(D.e);
    return r;
}

static int num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Widens [*s, *e) to the number token of JSON text it lies in; 0 when it
 * lies in none (a literal, or the text between tokens). */
static int number_token(const char *t, size_t n, size_t *s, size_t *e)
{
    size_t a = *s, z = *e;
    for (size_t i = a; i < z; i++)
        if (!num_char(t[i]))
            return 0;
    while (a > 0 && num_char(t[a - 1]))
        a--;
    while (z < n && num_char(t[z]))
        z++;
    if ((a > 0 && !strchr(" \t\r\n,:[", t[a - 1])) || (z < n && !strchr(" \t\r\n,]}", t[z])))
        return 0;
    *s = a;
    *e = z;
    return 1;
}

/*
 * Keeps each hit inside the string it starts in and off the middle of an
 * escape. A hit that starts outside every string is dropped, but for an
 * environment value printed as a number (a PIN, an account number): the
 * whole number goes, replaced by a string.
 */
static void clip_json(const char *t, size_t n, struct hits *H, int *key)
{
    size_t ns;
    struct span *sp = json_spans(t, n, &ns);
    size_t k = 0, w = 0, p = 0, p_span = (size_t)-1;
    for (size_t i = 0; i < H->n; i++) {
        struct hit h = H->h[i];
        while (k < ns && sp[k].e <= h.s)
            k++;
        if (k == ns || h.s < sp[k].s) {
            if (h.order == 0 && number_token(t, n, &h.s, &h.e) &&
                !(w && h.s < H->h[w - 1].e)) {
                h.bare = 1;
                key[w] = 0;
                H->h[w++] = h;
            }
            continue;
        }
        if (h.e > sp[k].e)
            h.e = sp[k].e;
        if (p_span != k) {
            p_span = k;
            p = sp[k].s;
        }
        /* walk the escapes up to the hit; p never goes back */
        size_t rs = h.s, re = h.e;
        while (p < re) {
            size_t len = 1;
            if (t[p] == '\\')
                len = p + 1 < n && t[p + 1] == 'u' ? 6 : 2;
            if (p < rs && p + len > rs)
                rs = p;
            if (p < re && p + len > re)
                re = p + len;
            p += len;
        }
        if (re > sp[k].e)
            re = sp[k].e;
        if (w && rs < H->h[w - 1].e)
            rs = H->h[w - 1].e;     /* widened into the previous one */
        if (rs >= re)
            continue;
        key[w] = sp[k].key;
        H->h[w++] = (struct hit){rs, re, h.name, h.order, 0};
    }
    H->n = w;
    free(sp);
}

/*
 * shape_format_of, without its parse of the whole text when the ends already
 * say "text": JSON (and each line of JSON Lines) ends with } ] " a digit or
 * the e or l of true, false, null; a value over several lines begins with {
 * or [, and otherwise the first line alone must be one.
 */
static enum shape_format format_of(const char *t, size_t n)
{
    size_t i = 0, z = n;
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n'))
        i++;
    while (z > i && (t[z - 1] == ' ' || t[z - 1] == '\t' || t[z - 1] == '\r' || t[z - 1] == '\n'))
        z--;
    if (i == n || !t[z - 1] || !strchr("}]\"0123456789el", t[z - 1]))
        return SHAPE_TEXT;
    char c = t[i];
    if (c == '{' || c == '[' || c == '"')
        return shape_format_of(t, n);
    if (!c || !strchr("-0123456789tfn", c))
        return SHAPE_TEXT;
    const char *nl = memchr(t + i, '\n', n - i);
    if (shape_format_of(t + i, nl ? (size_t)(nl - t) - i : n - i) == SHAPE_TEXT)
        return SHAPE_TEXT;
    return shape_format_of(t, n);
}

char *redact_text(const struct redact_set *set, const struct redact_env *E, const char *t,
                  size_t n, size_t *outlen, json_t *counts)
{
    struct hits H = {0};
    int bad = find_patterns(set, t, n, &H) < 0;
    if (!bad && memchr(t, '\\', n))
        bad = find_patterns_decoded(set, t, n, &H) < 0;
    if (bad) {
        /* fail closed: a text that could not be checked is not passed on */
        free(H.h);
        if (counts)
            json_object_set_new(counts, "error",
                                json_integer(json_integer_value(json_object_get(counts, "error")) + 1));
        static const char withheld[] = "[REDACTED:error]";
        *outlen = sizeof withheld - 1;
        return xstrdup(withheld);
    }
    find_env(E, t, n, &H);
    enum shape_format f = SHAPE_TEXT;
    int known = 0;
    if (E && memchr(t, '\\', n)) {
        f = format_of(t, n);
        known = 1;
        if (f != SHAPE_TEXT)
            find_env_json(E, t, n, &H);
    }
    if (!H.n) {
        free(H.h);
        return NULL;
    }
    merge(&H);
    int *key = NULL;
    if (!known)
        f = format_of(t, n);
    if (f != SHAPE_TEXT) {
        key = xcalloc(H.n, sizeof *key);
        clip_json(t, n, &H, key);
        if (!H.n) {
            free(key);
            free(H.h);
            return NULL;
        }
    }
    struct buf b;
    buf_init(&b, 0);
    buf_reserve(&b, n + H.n * 32);
    size_t at = 0;
    unsigned nkey = 0;
    for (size_t i = 0; i < H.n; i++) {
        buf_append(&b, t + at, H.h[i].s - at);
        if (H.h[i].bare)
            buf_printf(&b, "\"[REDACTED:%s]\"", H.h[i].name);
        else if (key && key[i])
            buf_printf(&b, "[REDACTED:%s#%u]", H.h[i].name, ++nkey);
        else
            buf_printf(&b, "[REDACTED:%s]", H.h[i].name);
        at = H.h[i].e;
        if (counts)
            json_object_set_new(counts, H.h[i].name,
                                json_integer(json_integer_value(json_object_get(counts, H.h[i].name)) + 1));
    }
    buf_append(&b, t + at, n - at);
    free(key);
    free(H.h);
    return buf_steal(&b, outlen);
}

/* ---- the server's instance ------------------------------------------------- */

struct redact {
    int builtins;
    struct reloadable rl;   /* of struct redact_set */
};

static void *load(void *ctx, const char *file, struct stat *st, struct err *err)
{
    const struct redact *r = ctx;
    size_t n;
    char *text = reloadable_read(file, REDACT_FILE_MAX, "the redaction file", st, &n, err);
    if (!text)
        return NULL;
    struct redact_set *s = redact_set_parse(text, n, file, r->builtins, err);
    free(text);
    return s;
}

static void set_free(void *s)
{
    redact_set_free(s);
}

static size_t set_count(const void *s)
{
    return ((const struct redact_set *)s)->npat;
}

/* a request or a run's stream may still be matching with a replaced set */
static const struct reloadable_kind kind = {
    .what = "redaction patterns", .kept = "loaded", .unit = "redaction patterns",
    .load = load, .free = set_free, .count = set_count,
};

struct redact *redact_open(const char *file, int builtins, struct err *err)
{
    struct redact *r = xcalloc(1, sizeof *r);
    r->builtins = builtins;
    struct stat st;
    struct redact_set *s = file ? load(r, file, &st, err)
                                : redact_set_parse(NULL, 0, NULL, builtins, err);
    if (!s) {
        free(r);
        return NULL;
    }
    reloadable_init(&r->rl, &kind, r, file, s, file ? &st : NULL);
    return r;
}

/* Always read again: a SIGHUP asked for it. */
int redact_reload(struct redact *r)
{
    return r ? reloadable_reload(&r->rl, 1) : 0;
}

void redact_close(struct redact *r)
{
    if (!r)
        return;
    reloadable_fini(&r->rl);
    free(r);
}

static void record(json_t *counts, struct stats *st)
{
    const char *name;
    json_t *c;
    json_object_foreach(counts, name, c)
        if (st)
            stats_redacted(st, name, (uint64_t)json_integer_value(c));
}

json_t *redact_members(struct redact *r, const struct redact_env *e, json_t *obj,
                       const char *const *fields, struct stats *st)
{
    if (!r || !json_is_object(obj))
        return NULL;
    const struct redact_set *set = reloadable_cur(&r->rl);
    json_t *counts = json_object();
    for (const char *const *f = fields; *f; f++) {
        json_t *v = json_object_get(obj, *f);
        if (!json_is_string(v))
            continue;
        size_t len;
        char *out = redact_text(set, e, json_string_value(v), json_string_length(v), &len,
                                counts);
        /* valid UTF-8 in, replacements of ASCII on character boundaries
         * (or whole escapes) out: still valid, no need to check it again */
        if (out)
            json_object_set_new(obj, *f, json_stringn_nocheck(out, len));
        free(out);
    }
    if (!json_object_size(counts)) {
        json_decref(counts);
        return NULL;
    }
    record(counts, st);
    return counts;
}

char *redact_file(struct redact *r, const char *data, size_t n, size_t *outlen, json_t **counts,
                  struct stats *st)
{
    *counts = NULL;
    if (!r)
        return NULL;
    const struct redact_set *set = reloadable_cur(&r->rl);
    json_t *c = json_object();
    char *out = redact_text(set, NULL, data, n, outlen, c);
    if (json_object_size(c)) {
        record(c, st);
        *counts = c;
    } else {
        json_decref(c);
    }
    return out;
}

void redact_run_result(struct redact *r, const struct redact_env *e, json_t *result,
                       struct stats *st)
{
    static const char *const fields[] = {"stdout", "stderr", "hint", "note", NULL};
    if (!json_is_object(result))
        return;
    json_object_del(result, "_meta");
    json_t *counts = redact_members(r, e, result, fields, st);
    if (counts)
        json_object_set_new(result, "_meta", json_pack("{s:o}", REDACT_META, counts));
}

/* ---- streaming ------------------------------------------------------------- */

struct redact_stream {
    const struct redact_set *set;   /* a reload retires, never frees, a set */
    const struct redact_env *env;
    struct stats *st;
    redact_emit_fn emit;
    void *arg;
    char *b;
    size_t len, cap;
    size_t checked;         /* bytes of b already known to hold no '\n' */
    json_t *counts;
    pcre2_match_data *md;
};

struct redact_stream *redact_stream_new(struct redact *r, const struct redact_env *e,
                                        struct stats *st, redact_emit_fn emit, void *arg)
{
    struct redact_stream *rs = xcalloc(1, sizeof *rs);
    rs->set = r ? reloadable_cur(&r->rl) : NULL;
    rs->env = e;
    rs->st = st;
    rs->emit = emit;
    rs->arg = arg;
    rs->counts = json_object();
    if (rs->set)
        rs->md = pcre2_match_data_create(rs->set->max_caps + 1, NULL);
    return rs;
}

void redact_stream_free(struct redact_stream *rs)
{
    if (!rs)
        return;
    free(rs->b);
    json_decref(rs->counts);
    pcre2_match_data_free(rs->md);
    free(rs);
}

json_t *redact_stream_counts(const struct redact_stream *rs)
{
    return rs->counts;
}

static size_t line_start(const char *t, size_t at)
{
    while (at && t[at - 1] != '\n')
        at--;
    return at;
}

/*
 * Where the text that may go out ends: n (the end of the last whole line),
 * or the start of the line where a match could begin that n cuts short.
 * PCRE2's hard partial matching says so of a pattern; an environment value
 * with a line break in it could begin in any of the last few lines.
 */
static size_t hold_from(struct redact_stream *rs, size_t n)
{
    size_t cut = n;
    const char *t = rs->b;
    for (size_t i = 0; rs->set && rs->md && i < rs->set->npat; i++) {
        size_t from = 0;
        while (from < cut) {
            int rc = pcre2_match(rs->set->pat[i].re, (PCRE2_SPTR)t, n, from,
                                 PCRE2_PARTIAL_HARD, rs->md, NULL);
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(rs->md);
            if (rc == PCRE2_ERROR_PARTIAL) {
                size_t at = line_start(t, ov[0] < n ? ov[0] : n);
                if (at < cut)
                    cut = at;
                break;
            }
            if (rc < 0)
                break;      /* no match, or the matcher's error: redact_text meets it */
            from = ov[1] > from ? ov[1] : from + 1;
            while (from < n && ((unsigned char)t[from] & 0xC0) == 0x80)
                from++;
        }
    }
    for (size_t i = 0; rs->env && i < rs->env->n; i++) {
        const struct env_val *v = &rs->env->v[i];
        if (!memchr(v->val, '\n', v->len))
            continue;
        /* the longest tail of the text that the value starts with */
        for (size_t k = v->len - 1 < n ? v->len - 1 : n; k; k--)
            if (!memcmp(t + n - k, v->val, k)) {
                size_t at = line_start(t, n - k);
                if (at < cut)
                    cut = at;
                break;
            }
    }
    return cut;
}

static void emit_redacted(struct redact_stream *rs, size_t n)
{
    if (!n)
        return;
    size_t len;
    json_t *c = json_object();
    char *out = rs->set || rs->env ? redact_text(rs->set, rs->env, rs->b, n, &len, c) : NULL;
    if (json_object_size(c)) {
        record(c, rs->st);
        const char *name;
        json_t *v;
        json_object_foreach(c, name, v)
            json_object_set_new(rs->counts, name,
                                json_integer(json_integer_value(json_object_get(rs->counts, name)) +
                                             json_integer_value(v)));
    }
    json_decref(c);
    rs->emit(out ? out : rs->b, out ? len : n, rs->arg);
    free(out);
    memmove(rs->b, rs->b + n, rs->len - n);
    rs->len -= n;
    rs->checked = 0;
}

void redact_stream_feed(struct redact_stream *rs, const char *p, size_t n)
{
    if (!n)
        return;
    if (rs->len + n + 1 > rs->cap) {
        rs->cap = (rs->len + n + 1) * 2;
        rs->b = xrealloc(rs->b, rs->cap);
    }
    memcpy(rs->b + rs->len, p, n);
    rs->len += n;
    rs->b[rs->len] = '\0';
    /* the new bytes alone can end a line: no new '\n', nothing changes */
    const char *nl = NULL;
    for (size_t i = rs->len; i > rs->checked; i--)
        if (rs->b[i - 1] == '\n') {
            nl = rs->b + i - 1;
            break;
        }
    rs->checked = rs->len;
    if (nl) {
        size_t whole = (size_t)(nl - rs->b) + 1;
        emit_redacted(rs, hold_from(rs, whole));
    }
    while (rs->len >= REDACT_STREAM_HOLD)
        emit_redacted(rs, rs->len);
}

void redact_stream_flush(struct redact_stream *rs)
{
    emit_redacted(rs, rs->len);
}

void redact_meta_add(json_t *result, json_t *counts)
{
    if (!json_is_object(result) || !json_object_size(counts))
        return;
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_t *have = json_object_get(meta, REDACT_META);
    if (!json_is_object(have)) {
        have = json_object();
        json_object_set_new(meta, REDACT_META, have);
    }
    const char *name;
    json_t *v;
    json_object_foreach(counts, name, v)
        json_object_set_new(have, name,
                            json_integer(json_integer_value(json_object_get(have, name)) +
                                         json_integer_value(v)));
}
