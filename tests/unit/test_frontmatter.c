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
    DONE();
}
