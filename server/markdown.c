/*
 * markdown.c - the heading outline of a Markdown body (CommonMark-ish, one
 * pass over lines, no allocation besides the result array).
 *
 * Recognised: ATX headings (up to 3 leading spaces, 1-6 '#', then a blank or
 * end of line; the closing run of '#' is dropped) and setext headings (a
 * paragraph line underlined by '=' or '-'). Not headings: anything inside a
 * ``` / ~~~ fenced block, lines indented 4 or more columns, '#tag' without
 * a blank. A setext heading's title is its last paragraph line.
 */
#include "markdown.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Trim blanks (and a CR) off both ends of [*s, *e). */
static void trim(const char *b, size_t *s, size_t *e)
{
    while (*s < *e && is_blank(b[*s]))
        (*s)++;
    while (*e > *s && (is_blank(b[*e - 1]) || b[*e - 1] == '\r'))
        (*e)--;
}

struct list {
    struct md_section *v;
    size_t n, cap;
};

static void push(struct list *l, int level, size_t ts, size_t te, size_t start)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n].level = level;
    l->v[l->n].title_off = ts;
    l->v[l->n].title_len = te - ts;
    l->v[l->n].start = start;
    l->v[l->n].end = 0;
    l->n++;
}

/* Run of ch starting at i, bounded by e. */
static size_t run(const char *b, size_t i, size_t e, char ch)
{
    size_t k = i;

    while (k < e && b[k] == ch)
        k++;
    return k - i;
}

/* Is [i, e) only blanks? */
static int rest_blank(const char *b, size_t i, size_t e)
{
    for (; i < e; i++)
        if (!is_blank(b[i]))
            return 0;
    return 1;
}

/* Thematic break: 3+ of one of - * _ with only blanks between. */
static int is_break(const char *b, size_t i, size_t e)
{
    char ch = b[i];
    int count = 0;

    if (ch != '-' && ch != '*' && ch != '_')
        return 0;
    for (; i < e; i++) {
        if (b[i] == ch)
            count++;
        else if (!is_blank(b[i]))
            return 0;
    }
    return count >= 3;
}

/* List item or block quote start: these lines are not setext titles. */
static int is_container(const char *b, size_t i, size_t e)
{
    size_t k = i;

    if (b[i] == '>')
        return 1;
    if ((b[i] == '-' || b[i] == '*' || b[i] == '+') && (i + 1 == e || is_blank(b[i + 1])))
        return 1;
    while (k < e && k - i < 9 && b[k] >= '0' && b[k] <= '9')
        k++;
    return k > i && k < e && (b[k] == '.' || b[k] == ')') && (k + 1 == e || is_blank(b[k + 1]));
}

size_t md_sections(const char *body, size_t len, struct md_section **out)
{
    struct list l = { NULL, 0, 0 };
    size_t ls, le, stack[8], depth = 0, i;
    char fence = 0;             /* '`' or '~' while inside a fenced block */
    size_t fence_len = 0;
    int para = 0;               /* previous line is a paragraph line */
    size_t para_start = 0, para_ts = 0, para_te = 0;

    *out = NULL;
    if (!body)
        return 0;
    for (ls = 0; ls < len; ls = le + 1) {
        const char *nl = memchr(body + ls, '\n', len - ls);
        size_t e, p, col = 0, ts, te;

        le = nl ? (size_t)(nl - body) : len;
        e = le;
        if (e > ls && body[e - 1] == '\r')
            e--;

        /* indentation, tabs to the next multiple of 4 */
        for (p = ls; p < e && is_blank(body[p]); p++)
            col = body[p] == '\t' ? (col / 4 + 1) * 4 : col + 1;

        if (p == e) {                               /* blank line */
            para = 0;
            continue;
        }
        if (fence) {
            size_t r = run(body, p, e, fence);
            if (col < 4 && r >= fence_len && rest_blank(body, p + r, e))
                fence = 0;
            continue;
        }
        if (col >= 4)                               /* indented code or lazy text */
            continue;

        if (body[p] == '`' || body[p] == '~') {
            size_t r = run(body, p, e, body[p]);
            if (r >= 3 && (body[p] == '~' || !memchr(body + p + r, '`', e - p - r))) {
                fence = body[p];
                fence_len = r;
                para = 0;
                continue;
            }
        }

        if (body[p] == '#') {
            size_t r = run(body, p, e, '#');
            if (r <= 6 && (p + r == e || is_blank(body[p + r]))) {
                ts = p + r;
                te = e;
                trim(body, &ts, &te);
                /* closing sequence: a run of '#' preceded by a blank, or all */
                i = te;
                while (i > ts && body[i - 1] == '#')
                    i--;
                if (i < te && (i == ts || is_blank(body[i - 1]))) {
                    te = i;
                    trim(body, &ts, &te);
                }
                push(&l, (int)r, ts, te, ls);
                para = 0;
                continue;
            }
        }

        if (para && (body[p] == '=' || body[p] == '-')) {
            size_t r = run(body, p, e, body[p]);
            if (rest_blank(body, p + r, e)) {
                push(&l, body[p] == '=' ? 1 : 2, para_ts, para_te, para_start);
                para = 0;
                continue;
            }
        }

        if (is_break(body, p, e) || is_container(body, p, e)) {
            para = 0;
            continue;
        }
        para = 1;
        para_start = ls;
        para_ts = p;
        para_te = e;
        trim(body, &para_ts, &para_te);
    }

    /* ends: a section closes at the next heading of its level or higher */
    for (i = 0; i < l.n; i++) {
        while (depth > 0 && l.v[stack[depth - 1]].level >= l.v[i].level)
            l.v[stack[--depth]].end = l.v[i].start;
        stack[depth++] = i;
    }
    while (depth > 0)
        l.v[stack[--depth]].end = len;

    *out = l.v;
    return l.n;
}

/* ---- md_find ---------------------------------------------------------- */

/* Decode one code point at s[*i] (bounded by n); invalid bytes as 0x80000000|byte. */
static uint32_t decode(const unsigned char *s, size_t n, size_t *i)
{
    uint32_t cp;
    size_t k = utf8_decode(s + *i, n - *i, &cp);
    if (!k)
        cp = 0x80000000u | s[*i], k = 1;
    *i += k;
    return cp;
}

static int same(const char *a, size_t an, const char *b, size_t bn)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t i = 0, j = 0;

    while (i < an && j < bn)
        if (utf8_fold(decode(x, an, &i)) != utf8_fold(decode(y, bn, &j)))
            return 0;
    return i == an && j == bn;
}

long md_find(const char *body, const struct md_section *s, size_t n, const char *name)
{
    size_t a = 0, b, k;

    if (!name || !s)
        return -1;
    b = strlen(name);
    while (a < b && (is_blank(name[a]) || name[a] == '\r' || name[a] == '\n'))
        a++;
    while (a < b && name[a] == '#')
        a++;
    while (a < b && (is_blank(name[a]) || name[a] == '\r' || name[a] == '\n'))
        a++;
    while (b > a && (is_blank(name[b - 1]) || name[b - 1] == '\r' || name[b - 1] == '\n'))
        b--;
    for (k = 0; k < n; k++)
        if (same(body + s[k].title_off, s[k].title_len, name + a, b - a))
            return (long)k;
    return -1;
}
