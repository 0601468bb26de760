/*
 * fmfast.c - the frontmatter fast path: most frontmatter is a handful of
 * flat `key: value` lines, and libyaml's reader and event machinery cost
 * far more than the text deserves. The functions below read a small,
 * unambiguous subset of block-mapping YAML and build the same object
 * frontmatter.c's event walk would; on anything else (or anything doubtful)
 * they say "not handled" and frontmatter.c runs libyaml on the same text.
 * They never report errors: every message, position and odd case stays
 * libyaml's. The subset is held to the event walk by the differential fuzz
 * target tests/fuzz/fuzz_fmfast.c.
 */
#include "fmfast.h"
#include "yamlcore.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAST_KEY_MAX 256        /* libyaml refuses simple keys over 1024 */
#define FAST_MAX_DEPTH 8        /* deeper is left to libyaml (FM_MAX_DEPTH) */

/*
 * Every byte is one libyaml reads without complaint and without meaning
 * anything but itself: printable ASCII and '\n', and (the text is valid
 * UTF-8) non-ASCII except C1 controls and NEL, U+2028/U+2029 (YAML line
 * breaks), U+FEFF and U+FFFE/U+FFFF. Tabs and CR fall back.
 */
static int fast_text_ok(const unsigned char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c;

        /* eight bytes at a time while all are printable ASCII (the
         * classic bit tricks: a byte below 0x20 or equal to 0x7F sets its
         * high bit in the test) */
        while (n - i >= 8) {
            uint64_t w, x;

            memcpy(&w, s + i, 8);
            x = w ^ (ones * 0x7F);
            if (((w | ((w - ones * 0x20) & ~w) | ((x - ones) & ~x)) & highs) != 0)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        c = s[i];
        if (c >= 0x20 && c < 0x7F)
            continue;
        if (c == '\n' || (c >= 0x80 && c < 0xC2) || (c > 0xC2 && c < 0xE2) ||
            (c > 0xE2 && c < 0xEF) || c > 0xEF)
            continue;           /* continuation bytes pass with their lead */
        if (c == 0xC2 && i + 1 < n && s[i + 1] >= 0xA0)
            continue;
        if (c == 0xE2 && i + 2 < n && !(s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)))
            continue;
        if (c == 0xEF && i + 2 < n && !(s[i + 1] == 0xBB && s[i + 2] == 0xBF) &&
            !(s[i + 1] == 0xBF && s[i + 2] >= 0xBE))
            continue;
        return 0;
    }
    return 1;
}

static int fast_key_first(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Inside a key also '-', '.' and '/' (`scripts/run.sh`). */
static int fast_key_char(char c)
{
    return fast_key_first(c) || c == '-' || c == '.' || c == '/';
}

/* Leading spaces of [s, s+n). */
static size_t fast_indent(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n && s[i] == ' ')
        i++;
    return i;
}

/*
 * A plain scalar that YAML cannot read as anything else: no indicator first
 * (but '-' before a digit or '.', a negative number), no ": " or " #"
 * inside, no ':' last; in a flow list or mapping (flow != 0) also none of
 * ",[]{}:#". Trailing spaces are already cut.
 */
static int fast_plain_ok(const char *v, size_t n, int flow)
{
    size_t i;

    if (n == 0)
        return 0;
    if (v[0] == '-' ? n < 2 || !((v[1] >= '0' && v[1] <= '9') || v[1] == '.')
                    : strchr("?:,[]{}#&*!|>'\"%@` ", v[0]) != NULL)
        return 0;
    if (v[n - 1] == ':' || v[n - 1] == ' ')
        return 0;
    for (i = 0; i < n; i++) {
        if (flow && strchr(",[]{}:#", v[i]))
            return 0;
        if (v[i] == ':' && i + 1 < n && v[i + 1] == ' ')
            return 0;
        if (v[i] == ' ' && i + 1 < n && v[i + 1] == '#')
            return 0;
    }
    return 1;
}

/* A plain scalar typed as the event walk types it (yc_resolve() wants a NUL). */
static json_t *fast_plain(const char *v, size_t n)
{
    char small[128], *s = n < sizeof(small) ? small : xmalloc(n + 1);
    enum yc_kind k;
    json_t *j;

    memcpy(s, v, n);
    s[n] = '\0';
    j = yc_resolve(s, n, &k);
    if (!j)
        j = json_stringn_nocheck(s, n);     /* the text is valid UTF-8 */
    if (s != small)
        free(s);
    return j;
}

/* `[a, b]` on one line, plain items only; v[0] is '['. */
static json_t *fast_flow(const char *v, size_t n)
{
    const char *close = memchr(v, ']', n);
    size_t i, len, at;
    json_t *arr;

    if (!close)
        return NULL;
    for (i = (size_t)(close - v) + 1; i < n; i++)
        if (v[i] != ' ')
            return NULL;
    len = (size_t)(close - v);          /* items are v[1..len) */
    arr = json_array();
    if (!arr || len == 1)
        return arr;
    for (at = 1; at < len;) {
        const char *comma = memchr(v + at, ',', len - at);
        size_t end = comma ? (size_t)(comma - v) : len;
        json_t *item;

        if (!fast_plain_ok(v + at, end - at, 1) ||
            (comma && (end + 2 >= len || v[end + 1] != ' ')))
            goto fail;
        item = fast_plain(v + at, end - at);
        if (!item || json_array_append_new(arr, item) < 0)
            goto fail;
        at = comma ? end + 2 : len;
    }
    return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* "text" or 'text' closed on the line, no escapes; v[0] is the quote. */
static json_t *fast_quoted(const char *v, size_t n)
{
    const char *close = memchr(v + 1, v[0], n - 1);
    size_t i, len;

    if (!close)
        return NULL;
    len = (size_t)(close - v) - 1;
    if (v[0] == '"' && memchr(v + 1, '\\', len))
        return NULL;
    for (i = len + 2; i < n; i++)
        if (v[i] != ' ')
            return NULL;
    return json_stringn_nocheck(v + 1, len);
}

/*
 * `{k: v, k2: v2}` on one line: keys and values plain, no duplicates; v[0]
 * is '{'.
 */
static json_t *fast_flow_map(const char *v, size_t n)
{
    const char *close = memchr(v, '}', n);
    size_t i, len, at;
    json_t *obj;

    if (!close)
        return NULL;
    for (i = (size_t)(close - v) + 1; i < n; i++)
        if (v[i] != ' ')
            return NULL;
    len = (size_t)(close - v);          /* entries are v[1..len) */
    obj = json_object();
    if (!obj || len == 1)
        return obj;
    for (at = 1; at < len;) {
        const char *comma = memchr(v + at, ',', len - at);
        size_t end = comma ? (size_t)(comma - v) : len, k = at;
        char key[FAST_KEY_MAX + 1];
        json_t *val;

        while (k < end && fast_key_char(v[k]))
            k++;
        if (k == at || k - at > FAST_KEY_MAX || !fast_key_first(v[at]) || k + 2 > end ||
            v[k] != ':' || v[k + 1] != ' ' || !fast_plain_ok(v + k + 2, end - k - 2, 1) ||
            (comma && (end + 2 >= len || v[end + 1] != ' ')))
            goto fail;
        memcpy(key, v + at, k - at);
        key[k - at] = '\0';
        if (json_object_get(obj, key))
            goto fail;
        val = fast_plain(v + k + 2, end - k - 2);
        if (!val || json_object_set_new_nocheck(obj, key, val) < 0)
            goto fail;
        at = comma ? end + 2 : len;
    }
    return obj;
fail:
    json_decref(obj);
    return NULL;
}

struct fast {
    const char *s;
    size_t len;
    size_t p;           /* start of the next line to read */
};

/* End of the line at p (its '\n', or len). */
static size_t fast_eol(const struct fast *f, size_t p)
{
    const char *nl = memchr(f->s + p, '\n', f->len - p);

    return nl ? (size_t)(nl - f->s) : f->len;
}

/*
 * A block scalar: the header v[0..n) ('|' or '>', then an optional '-' or
 * '+') of a value in a mapping indented by `parent`, and the lines from
 * f->p, all indented alike (more than parent), none blank inside. Blank
 * lines after it are let through only where chomping drops them. On success
 * f->p is the first line after the scalar.
 */
static json_t *fast_block(struct fast *f, size_t parent, const char *v, size_t n)
{
    int literal = v[0] == '|';
    char chomp = n > 1 ? v[1] : ' ';
    size_t p = f->p, indent = 0, lines = 0, total = 0, i, o, start = f->p, stop;
    char *text;
    json_t *j;

    if (n > 2 || (n == 2 && chomp != '-' && chomp != '+'))
        return NULL;
    while (p < f->len) {
        size_t e = fast_eol(f, p), sp = fast_indent(f->s + p, e - p);

        if (sp <= parent || sp == e - p)
            break;                      /* the next key, or a blank line */
        if (e == f->len)
            return NULL;                /* clipping differs without a break */
        if (indent == 0)
            indent = sp;
        else if (sp != indent)
            return NULL;
        total += e - p - indent;
        lines++;
        p = e + 1;
    }
    if (lines == 0)
        return NULL;
    stop = p;
    while (p < f->len) {                /* blank lines, up to the next key */
        size_t e = fast_eol(f, p), sp = fast_indent(f->s + p, e - p);

        if (sp != e - p)
            break;
        if (chomp == '+' || sp > indent)
            return NULL;
        p = e < f->len ? e + 1 : f->len;
    }
    if (p < f->len && fast_indent(f->s + p, fast_eol(f, p) - p) > parent)
        return NULL;
    total += lines - 1 + (chomp != '-');
    text = xmalloc(total + 1);
    for (o = 0, i = start; i < stop;) {
        size_t e = fast_eol(f, i);

        if (o > 0)
            text[o++] = literal ? '\n' : ' ';
        memcpy(text + o, f->s + i + indent, e - i - indent);
        o += e - i - indent;
        i = e + 1;
    }
    if (chomp != '-')
        text[o++] = '\n';
    j = json_stringn_nocheck(text, o);
    free(text);
    f->p = p;
    return j;
}

/*
 * Skips blank and comment lines from f->p; returns the indentation of the
 * next line that holds something, or -1 at the end of the text.
 */
static long fast_next_line(struct fast *f)
{
    while (f->p < f->len) {
        size_t e = fast_eol(f, f->p), sp = fast_indent(f->s + f->p, e - f->p);

        if (sp < e - f->p && f->s[f->p + sp] != '#')
            return (long)sp;
        f->p = e < f->len ? e + 1 : f->len;
    }
    return -1;
}

/*
 * The block mapping whose keys are indented by `indent`, from f->p up to
 * the first line indented less; NULL when it is not all in the subset.
 */
static json_t *fast_map(struct fast *f, size_t indent, int depth)
{
    json_t *obj = json_object();
    long sp;

    if (!obj)
        return NULL;
    while ((sp = fast_next_line(f)) >= 0 && (size_t)sp >= indent) {
        size_t e = fast_eol(f, f->p), n = e - f->p - indent, k = 0, vn;
        const char *line = f->s + f->p + indent, *v;
        char key[FAST_KEY_MAX + 1];
        json_t *val;

        if ((size_t)sp > indent)
            goto fail;
        while (k < n && fast_key_char(line[k]))
            k++;
        if (k == 0 || k > FAST_KEY_MAX || !fast_key_first(line[0]) || k == n ||
            line[k] != ':' || (k + 1 < n && line[k + 1] != ' '))
            goto fail;
        memcpy(key, line, k);
        key[k] = '\0';
        if (json_object_get(obj, key))
            goto fail;                  /* libyaml's message names both lines */
        v = k + 2 <= n ? line + k + 2 : line + n;
        vn = (size_t)(line + n - v);
        while (vn > 0 && v[vn - 1] == ' ')
            vn--;
        f->p = e < f->len ? e + 1 : f->len;
        if (vn == 0) {
            sp = fast_next_line(f);
            if (sp > (long)indent && depth < FAST_MAX_DEPTH)
                val = fast_map(f, (size_t)sp, depth + 1);
            else
                val = sp > (long)indent ? NULL : json_null();
        } else if (v[0] == ' ') {
            goto fail;
        } else if (v[0] == '"' || v[0] == '\'') {
            val = fast_quoted(v, vn);
        } else if (v[0] == '[') {
            val = fast_flow(v, vn);
        } else if (v[0] == '{') {
            val = fast_flow_map(v, vn);
        } else if (v[0] == '|' || v[0] == '>') {
            val = fast_block(f, indent, v, vn);
        } else {
            val = fast_plain_ok(v, vn, 0) ? fast_plain(v, vn) : NULL;
        }
        if (!val)
            goto fail;
        if (json_object_set_new_nocheck(obj, key, val) < 0)
            goto fail;
    }
    if (json_object_size(obj) > 0)
        return obj;
fail:
    json_decref(obj);
    return NULL;
}

/*
 * The whole text as a block mapping, or NULL: not handled (the caller runs
 * libyaml), never an error.
 */
json_t *fm_fast_parse(const char *s, size_t len)
{
    struct fast f;
    json_t *obj;

    if (!fast_text_ok((const unsigned char *)s, len))
        return NULL;
    f.s = s;
    f.len = len;
    f.p = 0;
    obj = fast_map(&f, 0, 1);
    if (obj && f.p < len) {             /* stopped at a line it cannot read */
        json_decref(obj);
        return NULL;
    }
    return obj;
}
