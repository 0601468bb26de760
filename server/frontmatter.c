/*
 * frontmatter.c - find the '---' fences of a SKILL.md and turn the YAML
 * between them into a jansson object, with libyaml's event API.
 *
 * Walking events (not libyaml's document API) lets us refuse what we do not
 * want before it costs anything: anchors and aliases (alias bombs), custom
 * tags, complex keys, duplicate keys and nesting deeper than FM_MAX_DEPTH.
 * Plain scalars are typed by the YAML 1.2 core schema; see yc_resolve() in
 * yamlcore.c.
 *
 * Start-up parses every SKILL.md, and libyaml's per-character reader and
 * event machinery were over half of it, while nearly all frontmatter is a
 * few `key: value` lines. So a fast path (fmfast.c) reads that narrow
 * subset itself and gives up on anything else, without a word: libyaml
 * then parses the same text, and stays the reference for every error and
 * every unusual case. The fast path shares yc_resolve() for typing, and
 * tests/fuzz/fuzz_fmfast.c holds its output to libyaml's, byte for byte.
 */
#include "frontmatter.h"
#include "fmfast.h"
#include "yamlcore.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define FM_MAX_DEPTH 64
#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

static int fast_off;            /* fm_set_fast(0): tests compare both paths */

void fm_set_fast(int on)
{
    fast_off = !on;
}

struct ctx {
    yaml_parser_t parser;
    struct err *err;
    int line_base;      /* file line (1-based) of the first YAML line */
    const char *yaml;   /* the text being parsed, for error messages */
    size_t len;
};

static void fail(struct err *err, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(struct err *err, int line, int col, const char *fmt, ...)
{
    char msg[sizeof(err->msg)];
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(err, line, col, "%s", msg);
}

static void fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_at(struct ctx *c, yaml_mark_t m, const char *fmt, ...)
{
    char msg[sizeof(c->err->msg)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail(c->err, c->line_base + (int)m.line, (int)m.column + 1, "%s", msg);
}

/*
 * Copy at most ~48 bytes of s into out for an error message: control bytes
 * become '?', and the cut never splits a UTF-8 sequence.
 */
static const char *snippet(const char *s, size_t n, char out[64])
{
    size_t i, o = 0, lim = 48;
    int cut = 0;

    if (n > lim) {
        n = utf8_trim(s, lim);
        cut = 1;
    }
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (cut) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* Short form of a tag for messages: "tag:yaml.org,2002:int" -> "!!int". */
static const char *tag_name(const char *tag, char out[64])
{
    char tmp[64];
    size_t pl = strlen(YAML_TAG_PREFIX);

    if (strncmp(tag, YAML_TAG_PREFIX, pl) == 0) {
        snippet(tag + pl, strlen(tag + pl), tmp);      /* <= 51 bytes + NUL */
        out[0] = out[1] = '!';
        memcpy(out + 2, tmp, strlen(tmp) + 1);
        return out;
    }
    return snippet(tag, strlen(tag), out);
}

/* ---- fences ----------------------------------------------------------- */

/* Length of line content [s, e) without trailing spaces, tabs and CR. */
static size_t rstrip(const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return n;
}

static int is_fence(const char *s, size_t n, int allow_dots)
{
    n = rstrip(s, n);
    if (n != 3)
        return 0;
    return memcmp(s, "---", 3) == 0 || (allow_dots && memcmp(s, "...", 3) == 0);
}

/* 1-based line and column (in characters) of byte offset off in buf. */
static void position(const char *buf, size_t off, int *line, int *col)
{
    size_t i, ls = 0;
    int l = 1, c = 1;

    for (i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            l++;
            ls = i + 1;
        }
    }
    for (i = ls; i < off; i++)
        if (((unsigned char)buf[i] & 0xC0) != 0x80)
            c++;
    *line = l;
    *col = c;
}

static json_t *make_string(struct ctx *c, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    json_t *j;

    if (memchr(v, '\0', n)) {
        fail_at(c, ev->start_mark, "NUL characters are not allowed in values");
        return NULL;
    }
    j = json_stringn(v, n);
    if (!j)
        fail_at(c, ev->start_mark, "value is not valid UTF-8");
    return j;
}

/* Tags we honour; "!" is YAML's non-specific tag (a string for a scalar). */
static int tag_allowed(const char *tag)
{
    static const char *const ok[] = {
        "!", YAML_TAG_PREFIX "str", YAML_TAG_PREFIX "int", YAML_TAG_PREFIX "float",
        YAML_TAG_PREFIX "bool", YAML_TAG_PREFIX "null", YAML_TAG_PREFIX "map",
        YAML_TAG_PREFIX "seq", NULL
    };
    return yc_word_in(tag, strlen(tag), ok);
}

static int check_tag(struct ctx *c, const yaml_event_t *ev, const char *tag)
{
    char tn[64];

    if (!tag || tag_allowed(tag))
        return 0;
    fail_at(c, ev->start_mark, "custom tag '%s' is not allowed", tag_name(tag, tn));
    return -1;
}

static json_t *scalar(struct ctx *c, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    enum yc_kind want, got;
    json_t *j;
    char sn[64], tn[64];

    if (check_tag(c, ev, tag) < 0)
        return NULL;
    if (!tag) {
        if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            return make_string(c, ev);
        if (memchr(v, '\0', n))
            return make_string(c, ev);      /* reports the NUL */
        j = yc_resolve(v, n, &got);
        return j ? j : make_string(c, ev);
    }
    if (strcmp(tag, "!") == 0 || strcmp(tag, YAML_TAG_PREFIX "str") == 0)
        return make_string(c, ev);
    if (strcmp(tag, YAML_TAG_PREFIX "map") == 0 || strcmp(tag, YAML_TAG_PREFIX "seq") == 0) {
        fail_at(c, ev->start_mark, "tag '%s' cannot be used on a scalar", tag_name(tag, tn));
        return NULL;
    }
    want = strcmp(tag, YAML_TAG_PREFIX "null") == 0 ? YC_NULL
         : strcmp(tag, YAML_TAG_PREFIX "bool") == 0 ? YC_BOOL
         : strcmp(tag, YAML_TAG_PREFIX "int") == 0 ? YC_INT : YC_FLOAT;
    if (memchr(v, '\0', n))
        return make_string(c, ev);          /* reports the NUL */
    if (want == YC_FLOAT && yc_is_inf_nan(v, n))
        return make_string(c, ev);          /* JSON has no such number */
    j = yc_resolve(v, n, &got);
    if (want == YC_FLOAT && got == YC_INT && j) {
        double d = json_is_integer(j) ? (double)json_integer_value(j) : json_real_value(j);
        json_decref(j);
        j = json_real(d);
        got = YC_FLOAT;
    }
    if (want == YC_INT && j && !json_is_integer(j))
        got = YC_STR;                       /* too big for a 64-bit integer */
    if (got != want || !j) {
        json_decref(j);
        fail_at(c, ev->start_mark, "'%s' is not a valid %s value", snippet(v, n, sn), tag_name(tag, tn));
        return NULL;
    }
    return j;
}

/* ---- nodes ------------------------------------------------------------ */

/* The byte at a libyaml mark (line, column in characters) of the YAML text. */
static char char_at(const struct ctx *c, yaml_mark_t m)
{
    size_t i = 0, line = 0, col = 0;

    while (i < c->len && line < m.line)
        if (c->yaml[i++] == '\n')
            line++;
    while (i < c->len && col < m.column && c->yaml[i] != '\n') {
        i++;
        while (i < c->len && ((unsigned char)c->yaml[i] & 0xC0) == 0x80)
            i++;
        col++;
    }
    return i < c->len ? c->yaml[i] : '\0';
}

static int next(struct ctx *c, yaml_event_t *ev)
{
    const yaml_parser_t *yp = &c->parser;
    yaml_mark_t m;
    const char *p;

    if (yaml_parser_parse(&c->parser, ev))
        return 0;
    m = yp->problem ? yp->problem_mark : yp->mark;
    p = yp->problem ? yp->problem : "cannot parse";
    if (strstr(p, "cannot start any token") && char_at(c, m) == '\t')
        fail_at(c, m, "invalid YAML: tabs cannot be used for indentation, use spaces");
    else if (strstr(p, "mapping values are not allowed"))
        fail_at(c, m, "invalid YAML: %s (check the indentation, and quote values that "
                "contain ': ')", p);
    else if (strstr(p, "end of stream") && yp->context)
        fail_at(c, yp->context_mark, "invalid YAML: %s %s", p, yp->context);
    else if (yp->context && !strstr(yp->context, "next token"))
        fail_at(c, m, "invalid YAML: %s %s", p, yp->context);
    else
        fail_at(c, m, "invalid YAML: %s", p);
    return -1;
}

static int node(struct ctx *c, yaml_event_t *ev, int depth, json_t **out);

static int no_anchor(struct ctx *c, const yaml_event_t *ev, const yaml_char_t *anchor)
{
    char sn[64];

    if (!anchor)
        return 0;
    fail_at(c, ev->start_mark, "anchors and aliases are not allowed (&%s)",
            snippet((const char *)anchor, strlen((const char *)anchor), sn));
    return -1;
}

static int collection_tag(struct ctx *c, const yaml_event_t *ev, const yaml_char_t *t, const char *want)
{
    const char *tag = (const char *)t;
    char tn[64];

    if (!tag || strcmp(tag, "!") == 0 || strcmp(tag, want) == 0)
        return 0;
    if (check_tag(c, ev, tag) < 0)
        return -1;
    fail_at(c, ev->start_mark, "tag '%s' cannot be used on a %s", tag_name(tag, tn),
            ev->type == YAML_MAPPING_START_EVENT ? "mapping" : "list");
    return -1;
}

static int sequence(struct ctx *c, int depth, json_t *arr)
{
    for (;;) {
        yaml_event_t ev;
        json_t *child = NULL;

        if (next(c, &ev) < 0)
            return -1;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        if (node(c, &ev, depth + 1, &child) < 0)
            return -1;
        if (json_array_append_new(arr, child) < 0)
            return -1;
    }
}

static int mapping(struct ctx *c, int depth, json_t *obj)
{
    json_t *lines = json_object();     /* key -> line it was first seen on */
    int rc = -1;
    char sn[64];

    if (!lines)
        return -1;
    for (;;) {
        yaml_event_t ev;
        json_t *child = NULL, *first;
        char *key;
        int line;

        if (next(c, &ev) < 0)
            goto out;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            rc = 0;
            goto out;
        }
        if (ev.type == YAML_ALIAS_EVENT) {
            fail_at(c, ev.start_mark, "anchors and aliases are not allowed (*%s)",
                    snippet((const char *)ev.data.alias.anchor,
                            strlen((const char *)ev.data.alias.anchor), sn));
            yaml_event_delete(&ev);
            goto out;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            fail_at(c, ev.start_mark, "keys must be plain strings, not lists or mappings");
            yaml_event_delete(&ev);
            goto out;
        }
        if (no_anchor(c, &ev, ev.data.scalar.anchor) < 0 ||
            check_tag(c, &ev, (const char *)ev.data.scalar.tag) < 0) {
            yaml_event_delete(&ev);
            goto out;
        }
        if (memchr(ev.data.scalar.value, '\0', ev.data.scalar.length)) {
            fail_at(c, ev.start_mark, "NUL characters are not allowed in keys");
            yaml_event_delete(&ev);
            goto out;
        }
        if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev.data.scalar.tag &&
            strcmp((const char *)ev.data.scalar.value, "<<") == 0) {
            fail_at(c, ev.start_mark, "merge keys (<<) are not allowed");
            yaml_event_delete(&ev);
            goto out;
        }
        key = (char *)ev.data.scalar.value;
        line = c->line_base + (int)ev.start_mark.line;
        first = json_object_get(lines, key);
        if (first) {
            fail_at(c, ev.start_mark, "duplicate key '%s' (first defined on line %d)",
                    snippet(key, ev.data.scalar.length, sn), (int)json_integer_value(first));
            yaml_event_delete(&ev);
            goto out;
        }
        if (json_object_set_new(lines, key, json_integer(line)) < 0) {
            fail_at(c, ev.start_mark, "key is not valid UTF-8");
            yaml_event_delete(&ev);
            goto out;
        }
        key = xstrdup(key);
        yaml_event_delete(&ev);

        if (next(c, &ev) < 0 || node(c, &ev, depth + 1, &child) < 0) {
            free(key);
            goto out;
        }
        if (json_object_set_new(obj, key, child) < 0) {
            free(key);
            goto out;
        }
        free(key);
    }
out:
    json_decref(lines);
    return rc;
}

/* Consumes *ev (always deleted). On success *out is a new reference. */
static int node(struct ctx *c, yaml_event_t *ev, int depth, json_t **out)
{
    json_t *j = NULL;
    char sn[64];
    int rc = -1;

    *out = NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        fail_at(c, ev->start_mark, "anchors and aliases are not allowed (*%s)",
                snippet((const char *)ev->data.alias.anchor,
                        strlen((const char *)ev->data.alias.anchor), sn));
        break;
    case YAML_SCALAR_EVENT:
        if (no_anchor(c, ev, ev->data.scalar.anchor) < 0)
            break;
        j = scalar(c, ev);
        rc = j ? 0 : -1;
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int map = ev->type == YAML_MAPPING_START_EVENT;
        const yaml_char_t *anchor = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        const yaml_char_t *tag = map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;

        if (no_anchor(c, ev, anchor) < 0 ||
            collection_tag(c, ev, tag, map ? YAML_TAG_PREFIX "map" : YAML_TAG_PREFIX "seq") < 0)
            break;
        if (depth > FM_MAX_DEPTH) {
            fail_at(c, ev->start_mark, "frontmatter is nested too deeply (more than %d levels)",
                    FM_MAX_DEPTH);
            break;
        }
        yaml_event_delete(ev);
        j = map ? json_object() : json_array();
        if (!j)
            return -1;
        if ((map ? mapping(c, depth, j) : sequence(c, depth, j)) < 0) {
            json_decref(j);
            return -1;
        }
        *out = j;
        return 0;
    }
    default:
        fail_at(c, ev->start_mark, "invalid YAML: unexpected event");
        break;
    }
    yaml_event_delete(ev);
    if (rc == 0)
        *out = j;
    return rc;
}

static int parse_yaml(const char *yaml, size_t len, int line_base, json_t **out, struct err *err)
{
    struct ctx c;
    yaml_event_t ev;
    json_t *root = NULL;
    int rc = -1;

    memset(&c, 0, sizeof(c));
    c.err = err;
    c.line_base = line_base;
    c.yaml = yaml;
    c.len = len;
    *out = NULL;
    if (!yaml_parser_initialize(&c.parser)) {
        fail(err, 0, 0, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)yaml, len);
    yaml_parser_set_encoding(&c.parser, YAML_UTF8_ENCODING);

    if (next(&c, &ev) < 0)                          /* STREAM-START */
        goto out;
    yaml_event_delete(&ev);
    if (next(&c, &ev) < 0)
        goto out;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        fail(err, line_base, 1, "frontmatter is empty");
        goto out;
    }
    yaml_event_delete(&ev);                         /* DOCUMENT-START */
    if (next(&c, &ev) < 0)
        goto out;
    if (ev.type != YAML_MAPPING_START_EVENT && ev.type != YAML_ALIAS_EVENT) {
        fail_at(&c, ev.start_mark, "frontmatter must be a mapping of 'key: value' lines, not a %s",
                ev.type == YAML_SEQUENCE_START_EVENT ? "list" : "single value");
        yaml_event_delete(&ev);
        goto out;
    }
    if (node(&c, &ev, 1, &root) < 0)
        goto out;
    if (next(&c, &ev) < 0)                          /* DOCUMENT-END */
        goto out;
    yaml_event_delete(&ev);
    if (next(&c, &ev) < 0)
        goto out;
    if (ev.type != YAML_STREAM_END_EVENT) {
        fail_at(&c, ev.start_mark, "frontmatter must hold a single YAML document");
        yaml_event_delete(&ev);
        goto out;
    }
    yaml_event_delete(&ev);
    *out = root;
    root = NULL;
    rc = 0;
out:
    json_decref(root);
    yaml_parser_delete(&c.parser);
    return rc;
}


/* ---- entry points ----------------------------------------------------- */

int fm_parse(const char *buf, size_t len, int complete, struct fm *out, struct err *err)
{
    static const char bom[] = "\xEF\xBB\xBF";
    const char *nl;
    size_t p = 0, ls, le, fm_off, close_off = 0, body_off = 0, bad;
    int closed = 0, nul, line, col;
    json_t *fields;

    memset(out, 0, sizeof(*out));
    if (!buf) {
        buf = "";
        len = 0;
    }
    if (len < 3 && !complete && len > 0 && memcmp(buf, bom, len) == 0)
        return -EAGAIN;
    if (len >= 3 && memcmp(buf, bom, 3) == 0)
        p = 3;

    /* opening fence */
    nl = len > p ? memchr(buf + p, '\n', len - p) : NULL;
    le = nl ? (size_t)(nl - buf) : len;
    if (!nl && !complete) {
        size_t n = rstrip(buf + p, le - p);
        if (n <= 3 && memcmp(buf + p, "---", n) == 0)
            return -EAGAIN;
    }
    if (!is_fence(buf + p, le - p, 0)) {
        fail(err, 1, 1, "SKILL.md does not start with a '---' frontmatter fence");
        return -EINVAL;
    }
    fm_off = nl ? le + 1 : len;

    /* closing fence: the first later line that is '---' or '...' */
    for (ls = fm_off; ls < len; ls = le + 1) {
        nl = memchr(buf + ls, '\n', len - ls);
        le = nl ? (size_t)(nl - buf) : len;
        if (!nl && !complete)
            break;                          /* the line may go on */
        if (is_fence(buf + ls, le - ls, 1)) {
            closed = 1;
            close_off = ls;
            body_off = nl ? le + 1 : len;
            break;
        }
        if (!nl)
            break;
    }
    if (!closed) {
        if (!complete)
            return -EAGAIN;
        fail(err, 1, 1, "frontmatter is not closed: add a '---' line after the last field");
        return -EINVAL;
    }

    bad = utf8_valid_len(buf + fm_off, close_off - fm_off);
    nul = bad < close_off - fm_off && !buf[fm_off + bad];
    if (bad != close_off - fm_off) {
        position(buf, fm_off + bad, &line, &col);
        fail(err, line, col, nul ? "frontmatter contains a NUL byte"
                                 : "frontmatter is not valid UTF-8");
        return -EINVAL;
    }

    fields = fast_off ? NULL : fm_fast_parse(buf + fm_off, close_off - fm_off);
    if (fields) {
        out->fast = 1;
    } else {
        position(buf, fm_off, &line, &col);
        if (parse_yaml(buf + fm_off, close_off - fm_off, line, &fields, err) < 0)
            return -EINVAL;
    }
    out->fields = fields;
    out->body_off = body_off;
    out->fm_off = fm_off;
    out->fm_len = close_off - fm_off;
    return 0;
}

void fm_cleanup(struct fm *f)
{
    if (!f)
        return;
    json_decref(f->fields);
    memset(f, 0, sizeof(*f));
}
