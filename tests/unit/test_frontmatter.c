/*
 * test_frontmatter.c - fm_parse: the data-driven cases under
 * tests/data/frontmatter/{valid,invalid}/<case>/ plus the cases that need C
 * (partial reads, body offsets). Run from the repository root.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontmatter.h"
#include "harness.h"
#include "json_same.h"

#define DATA "tests/data/frontmatter"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    size_t n = 0, cap = 0, r;

    if (!f)
        return NULL;
    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            p = realloc(p, cap);
            if (!p)
                abort();
        }
        r = fread(p + n, 1, cap - n - 1, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    p[n] = '\0';
    *len = n;
    return p;
}

/* Names of the case folders under dir, sorted; NULL-terminated. */
static char **cases(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v = NULL;
    size_t n = 0, i, j;

    *count = 0;
    if (!d)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        v = realloc(v, (n + 2) * sizeof(*v));
        if (!v)
            abort();
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    for (i = 1; i < n; i++)             /* insertion sort, a few dozen names */
        for (j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    if (v)
        v[n] = NULL;
    *count = n;
    return v;
}

static void free_cases(char **v)
{
    size_t i;

    for (i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static int run_valid(const char *name)
{
    char path[512], *text;
    size_t len;
    struct fm fm;
    struct err err;
    json_t *want;
    json_error_t jerr;
    int rc, ok = 1;

    snprintf(path, sizeof(path), DATA "/valid/%s/SKILL.md", name);
    text = slurp(path, &len);
    if (!text) {
        printf("#   %s: cannot read %s\n", name, path);
        return 0;
    }
    snprintf(path, sizeof(path), DATA "/valid/%s/expected.json", name);
    want = json_load_file(path, JSON_DECODE_ANY, &jerr);
    if (!want) {
        printf("#   %s: bad expected.json: %s\n", name, jerr.text);
        free(text);
        return 0;
    }
    memset(&err, 0, sizeof(err));
    rc = fm_parse(text, len, 1, &fm, &err);
    if (rc != 0) {
        printf("#   %s: fm_parse = %d: %d:%d: %s\n", name, rc, err.line, err.col, err.msg);
        ok = 0;
    } else {
        if (!json_equal(fm.fields, want)) {
            char *got = json_dumps(fm.fields, JSON_SORT_KEYS | JSON_ENCODE_ANY);
            char *exp = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
            printf("#   %s: fields differ\n#     got:  %s\n#     want: %s\n", name, got, exp);
            free(got);
            free(exp);
            ok = 0;
        }
        if (fm.body_off > len || fm.fm_off + fm.fm_len > len) {
            printf("#   %s: offsets out of range\n", name);
            ok = 0;
        }
        fm_cleanup(&fm);
    }
    json_decref(want);
    free(text);
    return ok;
}

static int run_invalid(const char *name)
{
    char path[512], *text, *want, *line_s;
    size_t len, wl, ll;
    struct fm fm;
    struct err err;
    int rc, ok = 1;

    snprintf(path, sizeof(path), DATA "/invalid/%s/SKILL.md", name);
    text = slurp(path, &len);
    snprintf(path, sizeof(path), DATA "/invalid/%s/expected-error", name);
    want = slurp(path, &wl);
    snprintf(path, sizeof(path), DATA "/invalid/%s/expected-line", name);
    line_s = slurp(path, &ll);           /* optional */
    if (!text || !want) {
        printf("#   %s: missing SKILL.md or expected-error\n", name);
        free(text);
        free(want);
        free(line_s);
        return 0;
    }
    while (wl > 0 && (want[wl - 1] == '\n' || want[wl - 1] == '\r'))
        want[--wl] = '\0';
    memset(&err, 0, sizeof(err));
    rc = fm_parse(text, len, 1, &fm, &err);
    if (rc != -EINVAL) {
        printf("#   %s: fm_parse = %d, want -EINVAL\n", name, rc);
        if (rc == 0)
            fm_cleanup(&fm);
        ok = 0;
    } else if (!strstr(err.msg, want)) {
        printf("#   %s: error \"%s\" does not contain \"%s\"\n", name, err.msg, want);
        ok = 0;
    } else if (fm.fields) {
        printf("#   %s: fields set on error\n", name);
        ok = 0;
    } else if (line_s && atoi(line_s) != err.line) {
        printf("#   %s: error line %d, want %d (%s)\n", name, err.line, atoi(line_s), err.msg);
        ok = 0;
    } else if (err.line < 1 || err.col < 1) {
        printf("#   %s: no position in error \"%s\"\n", name, err.msg);
        ok = 0;
    }
    free(text);
    free(want);
    free(line_s);
    return ok;
}

TEST(valid_cases)
{
    size_t n, i, failed = 0;
    char **v = cases(DATA "/valid", &n);

    CHECK(n >= 15);
    for (i = 0; i < n; i++)
        if (!run_valid(v[i]))
            failed++;
    free_cases(v);
    CHECK_EQ(failed, 0);
}

TEST(invalid_cases)
{
    size_t n, i, failed = 0;
    char **v = cases(DATA "/invalid", &n);

    CHECK(n >= 20);
    for (i = 0; i < n; i++)
        if (!run_invalid(v[i]))
            failed++;
    free_cases(v);
    CHECK_EQ(failed, 0);
}

static int parse(const char *s, int complete, struct fm *fm, struct err *err)
{
    memset(err, 0, sizeof(*err));
    return fm_parse(s, strlen(s), complete, fm, err);
}

TEST(body_offsets)
{
    struct fm fm;
    struct err err;
    const char *s = "---\nname: x\n---\n# Body\n";
    const char *crlf = "---\r\nname: x\r\n--- \r\nBody\r\n";
    const char *bom = "\xEF\xBB\xBF---\nname: x\n...\nBody";

    CHECK_EQ(parse(s, 1, &fm, &err), 0);
    CHECK_STR(s + fm.body_off, "# Body\n");
    CHECK_EQ(fm.fm_off, 4);
    CHECK_MEM(s + fm.fm_off, fm.fm_len, "name: x\n");
    fm_cleanup(&fm);
    CHECK(fm.fields == NULL);

    CHECK_EQ(parse(crlf, 1, &fm, &err), 0);
    CHECK_STR(crlf + fm.body_off, "Body\r\n");
    CHECK_MEM(crlf + fm.fm_off, fm.fm_len, "name: x\r\n");
    fm_cleanup(&fm);

    CHECK_EQ(parse(bom, 1, &fm, &err), 0);
    CHECK_STR(bom + fm.body_off, "Body");
    CHECK_EQ(fm.fm_off, 7);
    fm_cleanup(&fm);
}

TEST(body_first_closing_fence_wins)
{
    struct fm fm;
    struct err err;
    const char *s = "---\nname: x\n---\nintro\n---\nname: y\n---\n";

    CHECK_EQ(parse(s, 1, &fm, &err), 0);
    CHECK_STR(s + fm.body_off, "intro\n---\nname: y\n---\n");
    CHECK_STR(json_string_value(json_object_get(fm.fields, "name")), "x");
    fm_cleanup(&fm);
}

TEST(body_empty_at_eof)
{
    struct fm fm;
    struct err err;
    const char *s = "---\nname: x\n---";

    CHECK_EQ(parse(s, 1, &fm, &err), 0);
    CHECK_EQ(fm.body_off, strlen(s));
    fm_cleanup(&fm);
    CHECK_EQ(parse(s, 0, &fm, &err), -EAGAIN);      /* "---" may go on */
}

TEST(unclosed_incomplete_is_eagain)
{
    struct fm fm;
    struct err err;

    CHECK_EQ(parse("---\nname: x\ndescription: y\n", 0, &fm, &err), -EAGAIN);
    CHECK(fm.fields == NULL);
    CHECK_EQ(parse("---\nname: x\ndescription: y\n", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "frontmatter is not closed") != NULL);
    CHECK_EQ(parse("--", 0, &fm, &err), -EAGAIN);
    CHECK_EQ(parse("\xEF\xBB", 0, &fm, &err), -EAGAIN);
    CHECK_EQ(parse("---", 0, &fm, &err), -EAGAIN);
    CHECK_EQ(parse("", 0, &fm, &err), -EAGAIN);
    CHECK_EQ(parse("# no fence", 0, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "does not start with") != NULL);
    CHECK_EQ(parse("---", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "not closed") != NULL);
}

TEST(cut_at_16k_in_a_value)
{
    struct fm fm;
    struct err err;
    size_t n = 40000, i, len;
    char *s = malloc(n + 100);
    const char *d;

    CHECK(s != NULL);
    len = (size_t)sprintf(s, "---\nname: long\ndescription: ");
    for (i = 0; i < 20000; i++)
        s[len++] = (char)('a' + (i % 26));
    len += (size_t)sprintf(s + len, "\n---\n# Body\n");
    CHECK_EQ(fm_parse(s, 16384, 0, &fm, &err), -EAGAIN);
    CHECK(fm.fields == NULL);
    CHECK_EQ(fm_parse(s, len, 1, &fm, &err), 0);
    d = json_string_value(json_object_get(fm.fields, "description"));
    CHECK(d != NULL);
    CHECK_EQ(strlen(d), 20000);
    CHECK_STR(s + fm.body_off, "# Body\n");
    fm_cleanup(&fm);
    free(s);
}

TEST(cut_inside_utf8_sequence)
{
    struct fm fm;
    struct err err;
    const char *s = "---\nname: \xE4\xB8\xAD\xE6\x96\x87\n---\n";

    /* a read that stops mid-character is not an encoding error */
    CHECK_EQ(fm_parse(s, 12, 0, &fm, &err), -EAGAIN);
    CHECK_EQ(parse(s, 1, &fm, &err), 0);
    CHECK_STR(json_string_value(json_object_get(fm.fields, "name")), "\xE4\xB8\xAD\xE6\x96\x87");
    fm_cleanup(&fm);
}

TEST(error_positions)
{
    struct fm fm;
    struct err err;

    CHECK_EQ(parse("---\nname: x\nname: y\n---\n", 1, &fm, &err), -EINVAL);
    CHECK_EQ(err.line, 3);
    CHECK_EQ(err.col, 1);
    CHECK(strstr(err.msg, "'name'") != NULL);
    CHECK(strstr(err.msg, "line 2") != NULL);

    /* a BOM is not a line */
    CHECK_EQ(parse("\xEF\xBB\xBF---\na: 1\nb: *x\n---\n", 1, &fm, &err), -EINVAL);
    CHECK_EQ(err.line, 3);
    CHECK_EQ(err.col, 4);

    /* CRLF counts once per line */
    CHECK_EQ(parse("---\r\na: 1\r\n\r\nb:\r\n  c: \xFF\r\n---\r\n", 1, &fm, &err), -EINVAL);
    CHECK_EQ(err.line, 5);
    CHECK_EQ(err.col, 6);
    CHECK(strstr(err.msg, "UTF-8") != NULL);
}

TEST(scalar_typing)
{
    struct fm fm;
    struct err err;
    json_t *f;

    CHECK_EQ(parse("---\na: 9223372036854775807\nb: -9223372036854775808\n"
                   "c: 0x7FFFFFFFFFFFFFFF\nd: 0xFFFFFFFFFFFFFFFFFF\ne: 1e999\n"
                   "f: 0o\ng: '1.0'\nh: 1.0\nj: +\nk: -.5e-3\n---\n", 1, &fm, &err), 0);
    f = fm.fields;
    CHECK(json_is_integer(json_object_get(f, "a")));
    CHECK(json_integer_value(json_object_get(f, "a")) == 9223372036854775807LL);
    CHECK(json_integer_value(json_object_get(f, "b")) == -9223372036854775807LL - 1);
    CHECK(json_integer_value(json_object_get(f, "c")) == 9223372036854775807LL);
    CHECK_STR(json_string_value(json_object_get(f, "d")), "0xFFFFFFFFFFFFFFFFFF");
    CHECK_STR(json_string_value(json_object_get(f, "e")), "1e999");
    CHECK_STR(json_string_value(json_object_get(f, "f")), "0o");
    CHECK_STR(json_string_value(json_object_get(f, "g")), "1.0");
    CHECK(json_is_real(json_object_get(f, "h")));
    CHECK(json_real_value(json_object_get(f, "k")) == -0.0005);
    CHECK_STR(json_string_value(json_object_get(f, "j")), "+");
    fm_cleanup(&fm);
}

TEST(tagged_numbers)
{
    struct fm fm;
    struct err err;

    CHECK_EQ(parse("---\na: !!float 0o17\nb: !!float 0x10\nc: !!float -3\nd: !!int 0x10\n---\n",
                   1, &fm, &err), 0);
    CHECK(json_real_value(json_object_get(fm.fields, "a")) == 15.0);
    CHECK(json_real_value(json_object_get(fm.fields, "b")) == 16.0);
    CHECK(json_real_value(json_object_get(fm.fields, "c")) == -3.0);
    CHECK(json_integer_value(json_object_get(fm.fields, "d")) == 16);
    fm_cleanup(&fm);
    CHECK_EQ(parse("---\na: !!int 99999999999999999999\n---\n", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "not a valid !!int") != NULL);
    CHECK_EQ(parse("---\na: !!null x\n---\n", 1, &fm, &err), -EINVAL);
    CHECK_EQ(parse("---\na: !!bool yes\n---\n", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "'yes' is not a valid !!bool value") != NULL);
    CHECK_EQ(parse("---\na: !!seq x\n---\n", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "cannot be used on a scalar") != NULL);
}

TEST(null_err_and_buf)
{
    struct fm fm;

    CHECK_EQ(fm_parse("---\na: *b\n---\n", 14, 1, &fm, NULL), -EINVAL);
    CHECK_EQ(fm_parse(NULL, 0, 1, &fm, NULL), -EINVAL);
    fm_cleanup(NULL);
}

/*
 * Parse "---\n" yaml "---\n" with the fast path and with libyaml alone: the
 * results must be the same, and the fast path must have taken it or not as
 * the case says. Returns 1 when all holds (and prints why not).
 */
static int fast_case(const char *yaml, int want_fast, int want_ok)
{
    char *doc = malloc(strlen(yaml) + 9);
    struct fm f1, f2;
    struct err e1, e2;
    int r1, r2, ok = 1;

    if (!doc)
        abort();
    memcpy(doc, "---\n", 4);
    memcpy(doc + 4, yaml, strlen(yaml));
    memcpy(doc + 4 + strlen(yaml), "---\n", 5);
    memset(&e1, 0, sizeof(e1));
    memset(&e2, 0, sizeof(e2));
    fm_set_fast(1);
    r1 = fm_parse(doc, strlen(doc), 1, &f1, &e1);
    fm_set_fast(0);
    r2 = fm_parse(doc, strlen(doc), 1, &f2, &e2);
    fm_set_fast(1);
    if (r1 != r2 || (r1 == 0) != want_ok) {
        printf("#   %s: fast %d, libyaml %d (%s), want %s\n", yaml, r1, r2, e2.msg,
               want_ok ? "success" : "an error");
        ok = 0;
    } else if (r1 != 0) {
        if (strcmp(e1.msg, e2.msg) != 0 || e1.line != e2.line || e1.col != e2.col) {
            printf("#   %s: errors differ: %d:%d %s / %d:%d %s\n", yaml, e1.line, e1.col,
                   e1.msg, e2.line, e2.col, e2.msg);
            ok = 0;
        }
        if (want_fast) {
            printf("#   %s: an error cannot come from the fast path\n", yaml);
            ok = 0;
        }
    } else {
        if (!json_same(f1.fields, f2.fields)) {
            char *a = json_dumps(f1.fields, 0), *b = json_dumps(f2.fields, 0);
            printf("#   %s: fields differ\n#     fast:    %s\n#     libyaml: %s\n", yaml, a, b);
            free(a);
            free(b);
            ok = 0;
        }
        if (f1.fast != want_fast || f2.fast) {
            printf("#   %s: fast path %s it\n", yaml, f1.fast ? "took" : "did not take");
            ok = 0;
        }
        if (f1.body_off != f2.body_off || f1.fm_off != f2.fm_off || f1.fm_len != f2.fm_len) {
            printf("#   %s: offsets differ\n", yaml);
            ok = 0;
        }
        fm_cleanup(&f1);
        fm_cleanup(&f2);
    }
    free(doc);
    return ok;
}

/* Every shape the fast path reads: same result as libyaml, and it read it. */
TEST(fast_path_shapes)
{
    static const char *const cases[] = {
        "name: x\n",
        "name: analyse-accessibility-00714\ndescription: >-\n  Compact data html\n"
        "  validate accessibility.\ntags: [web, component]\nversion: \"2.3.20\"\n",
        "description: one plain line\n",
        "d: trailing spaces   \n",
        "d: a:b, c#d [e] {f} -g ?h !i &j *k 'l' \"m\" %n @o `p\n",
        "d: caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xC2\xA0nbsp\n",
        "# a comment\n\nname: x\n\n# another\n",
        "a: 1\n   \nb: 2\n",
        "k_1-2: x\n9: nine\ntrue: key\nnull: key\n",
        "n: 12\nm: -7\np: +3\nbig: 99999999999999999999\nhuge: 1e999\n",
        "f: 1.5\ng: -.5\nh: 1e3\ni: 1.0\nj: -1.5e-3\n",
        "h: 0x1F\no: 0o17\nx: 0xFFFFFFFFFFFFFFFFFF\n",
        "a: ~\nb: null\nc: Null\nd: NULL\n",
        "a: true\nb: False\nc: TRUE\nd: yes\ne: off\n",
        "a: .inf\nb: -.Inf\nc: .nan\n",
        "v: 1.2.0\nw: 1.\n",
        "empty:\nnext: 1\n",
        "empty:   \n",
        "last:\n",
        "q: \"double 'q' # x: y\"  \n",
        "q: \"\"\ns: ''\n",
        "s: 'single \"q\" \\\\ and # and : '\n",
        "q: \"  padded  \"\n",
        "q: \"1\"\nr: 'true'\n",
        "tags: [a, b c, 1, 2.5, ~, true, -3]\n",
        "tags: []\n",
        "tags: [one]   \n",
        "d: >-\n  one\n  two\n",
        "d: >\n  one\n  two\n",
        "d: >+\n  one\n  two\n",
        "d: |\n  one\n  two\n",
        "d: |-\n  one\n  two\n",
        "d: |+\n  one\nnext: x\n",
        "d: >-  \n    four spaces\n    # not a comment\n    trailing  \nx: 1\n",
        "d: >\n  one\n\n\nnext: x\n",
        "d: |-\n  one\n  \n\nnext: x\n",
        "d: |\n  one\n\n",
        "d: |\n  - not a list\n  key: not a map\n",
        "k.x/y: z\n",
        " # indented comment\nk: x\n  # and another\n",
        "m: {a: 1, b.c: x y, d: ~}\nn: {}\n",
        "k:\n  nested: map\n",
        "execution:\n  default: {timeout: 30, stall_timeout: 20}\n  scripts/check.sh:\n"
        "    description: From many list create files existing.\n    timeout: 60\n"
        "  scripts/fetch.sh:\n    description: >-\n      Folded\n      twice.\n"
        "    args: [a, b]\nlicense: MIT\n",
        "a:\n    deep:\n      deeper: 1\n    back: 2\nb: 3\n",
        "a:\n# comment between\n\n  b: 1\n",
        "a:\n  # only a comment under it\nb: 1\n",
        "a:\n  l: |\n    x\n\n  m: 1\n",
        "a:\n  b: |\n   x\n",
        NULL
    };
    size_t i, failed = 0;

    for (i = 0; cases[i]; i++)
        if (!fast_case(cases[i], 1, 1))
            failed++;
    CHECK_EQ(failed, 0);
}

/* Everything else goes to libyaml: same result (or the same error) as libyaml alone. */
TEST(fast_path_falls_back)
{
    static const struct { const char *yaml; int ok; } cases[] = {
        { "description: a: b\n", 0 },
        { "name: x #c\n", 1 },
        { "name: x#c\ny: a #\n", 1 },
        { "k: 'it''s'\n", 1 },
        { "k: \"a\\\"b\"\n", 1 },
        { "k: \"a\\nb\"\n", 1 },
        { "k: \"unclosed\n", 0 },
        { "k: \"a\" b\n", 0 },
        { "k: 'a' # c\n", 1 },
        { "tags: [a, [b]]\n", 1 },
        { "tags: [a,b]\n", 1 },
        { "tags: [ a ]\n", 1 },
        { "tags: [a, ]\n", 1 },
        { "tags: [\"a\", 'b']\n", 1 },
        { "tags: [a: b]\n", 1 },
        { "tags: [a\n  , b]\n", 1 },
        { "tags: [a, b] # c\n", 1 },
        { "k: >2\n   x\n", 1 },
        { "k: >\n  a\n\n  b\n", 1 },
        { "k: |\n  a\n    more\n  b\n", 1 },
        { "k: |\n    a\n  less\n", 0 },
        { "k: |\n  a\n   \nn: 1\n", 1 },
        { "k: |+\n  a\n\nn: 1\n", 1 },
        { "k: >\nn: 1\n", 1 },
        { "k: > # c\n  a\n", 1 },
        { "k: >\n\ta\n", 0 },
        { "k:\n- a\n- b\n", 1 },
        { "k: plain\n  continued\n", 1 },
        { "k: &a 1\nb: *a\n", 0 },
        { "k: !!str 1\n", 1 },
        { "k: !custom 1\n", 0 },
        { "<<: {a: 1}\n", 0 },
        { "a: 1\na: 2\n", 0 },
        { "name: x\r\ndescription: y\r\n", 1 },
        { "name: x\n\tdescription: y\n", 0 },
        { "name:\tx\n", 1 },
        { "name: x\t\n", 1 },
        { "key : x\n", 1 },
        { "key:x\n", 0 },
        { "k:  two spaces\n", 1 },
        { "\"quoted key\": x\n", 1 },
        { "- a\n- b\n", 0 },
        { "just a scalar\n", 0 },
        { "# only a comment\n", 0 },
        { "  indented: x\n", 1 },
        { "k: -x\n", 1 },
        { "k: - x\n", 0 },
        { "k: ?x\n", 1 },
        { "k: :x\n", 1 },
        { "k: ends:\n", 0 },
        { "k: x\n--- y\n", 0 },
        { "k: a\xC2\x85" "b\n", 0 },     /* NEL and LS break lines */
        { "k: a\xE2\x80\xA8" "b\n", 0 },
        { "k: a\xEF\xBB\xBF" "b\n", 1 },
        { "k: a\x7F" "b\n", 0 },
        { "k: a\x01" "b\n", 0 },
        { "\xC3\xA9: non-ASCII key\n", 1 },
        { "a:\n    b: 1\n  c: 2\n", 0 },
        { "a:\n  b: 1\n    c: 2\n", 0 },
        { "a:\n  b: |\n   x\n  c: 1\n d: 2\n", 0 },
        { "a:\n  b: 1\n  b: 2\n", 0 },
        { "m: {a: 1, a: 2}\n", 0 },
        { "m: {a: 1,b: 2}\n", 1 },
        { "m: {a: [1]}\n", 1 },
        { "m: {a:1}\n", 1 },
        { "m: {a: 1} # c\n", 1 },
        { "m: {\"a\": 1}\n", 1 },
        { "a:\n b:\n  c:\n   d:\n    e:\n     f:\n      g:\n       h:\n        i: 9\n", 1 },
        { ".a: x\n", 1 },
        { "a: x\n  # indented comment, then more\n  y\n", 0 },
        { NULL, 0 }
    };
    size_t i, failed = 0;

    for (i = 0; cases[i].yaml; i++)
        if (!fast_case(cases[i].yaml, 0, cases[i].ok))
            failed++;
    CHECK_EQ(failed, 0);
}

/* The fast path's values themselves, not only their agreement with libyaml. */
TEST(fast_path_values)
{
    struct fm fm;
    struct err err;
    json_t *f;

    CHECK_EQ(parse("---\nd: >-\n  one\n  two\nl: |\n  a\n  b\nt: [x, 2]\nn:\nv: \"1.0\"\n"
                   "r: 1.0\ni: -3\n---\n", 1, &fm, &err), 0);
    CHECK(fm.fast);
    f = fm.fields;
    CHECK_STR(json_string_value(json_object_get(f, "d")), "one two");
    CHECK_STR(json_string_value(json_object_get(f, "l")), "a\nb\n");
    CHECK_STR(json_string_value(json_array_get(json_object_get(f, "t"), 0)), "x");
    CHECK(json_is_integer(json_array_get(json_object_get(f, "t"), 1)));
    CHECK(json_is_null(json_object_get(f, "n")));
    CHECK_STR(json_string_value(json_object_get(f, "v")), "1.0");
    CHECK(json_is_real(json_object_get(f, "r")));
    CHECK_EQ(json_integer_value(json_object_get(f, "i")), -3);
    CHECK_STR(json_object_iter_key(json_object_iter(f)), "d");
    fm_cleanup(&fm);

    /* the duplicate still gets libyaml's message with both lines */
    CHECK_EQ(parse("---\na: 1\nb: 2\na: 3\n---\n", 1, &fm, &err), -EINVAL);
    CHECK(strstr(err.msg, "duplicate key 'a' (first defined on line 2)") != NULL);
    CHECK_EQ(err.line, 4);
}

int main(void)
{
    RUN(valid_cases);
    RUN(invalid_cases);
    RUN(body_offsets);
    RUN(body_first_closing_fence_wins);
    RUN(body_empty_at_eof);
    RUN(unclosed_incomplete_is_eagain);
    RUN(cut_at_16k_in_a_value);
    RUN(cut_inside_utf8_sequence);
    RUN(error_positions);
    RUN(scalar_typing);
    RUN(tagged_numbers);
    RUN(null_err_and_buf);
    RUN(fast_path_shapes);
    RUN(fast_path_falls_back);
    RUN(fast_path_values);
    DONE();
}
