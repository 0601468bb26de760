/*
 * test_validate.c - `skill-mcp validate` and `skill-mcp list` over the skill
 * trees in tests/data/validate/ (one root per problem; see the README there)
 * plus trees built at run time for the size limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"
#include "tmptree.h"
#include "util.h"
#include "validate.h"

#define DATA "tests/data/validate"

/* The findings of one root. */
static json_t *lint(const char *root)
{
    const char *roots[1] = {root};
    return validate_roots(roots, 1, NULL, 0, NULL);
}

/* The n-th finding (0-based) with the rule, or NULL. */
static json_t *nth(json_t *findings, const char *rule, int n)
{
    size_t i;
    json_t *f;
    json_array_foreach(findings, i, f)
        if (!strcmp(json_string_value(json_object_get(f, "rule")), rule) && n-- == 0)
            return f;
    return NULL;
}

static size_t count(json_t *findings, const char *rule)
{
    size_t n = 0;
    while (nth(findings, rule, (int)n))
        n++;
    return n;
}

static const char *sev(json_t *f)
{
    return json_string_value(json_object_get(f, "severity"));
}

static long long line(json_t *f)
{
    json_t *l = json_object_get(f, "line");
    return json_is_integer(l) ? json_integer_value(l) : 0;
}

static int contains(json_t *f, const char *field, const char *needle)
{
    const char *s = json_string_value(json_object_get(f, field));
    return s && strstr(s, needle);
}

/* Runs cli_validate_run / cli_list_run with output captured. */
static int run(int list, const char *const *args, int n, char **out, char **errout)
{
    char *argv[16];
    for (int i = 0; i < n; i++)
        argv[i] = (char *)(uintptr_t)args[i];
    argv[n] = NULL;
    FILE *o = tmpfile(), *e = tmpfile();
    int rc = list ? cli_list_run(n, argv, o, e) : cli_validate_run(n, argv, o, e);
    FILE *fs[2] = {o, e};
    char **dst[2] = {out, errout};
    for (int k = 0; k < 2; k++) {
        long len;
        fseek(fs[k], 0, SEEK_END);
        len = ftell(fs[k]);
        rewind(fs[k]);
        char *s = xmalloc((size_t)len + 1);
        size_t got = fread(s, 1, (size_t)len, fs[k]);
        s[got] = '\0';
        fclose(fs[k]);
        if (dst[k])
            *dst[k] = s;
        else
            free(s);
    }
    return rc;
}

TEST(clean_skill_has_no_findings)
{
    size_t n = 0;
    const char *roots[1] = {DATA "/clean"};
    json_t *f = validate_roots(roots, 1, NULL, 0, &n);
    if (json_array_size(f)) {
        char *s = json_dumps(f, JSON_INDENT(1));
        printf("# %s\n", s);
        free(s);
    }
    CHECK_EQ(n, 1);
    CHECK_EQ(json_array_size(f), 0);
    json_decref(f);
}

TEST(yaml_error_has_its_line)
{
    json_t *f = lint(DATA "/yaml-error");
    json_t *x = nth(f, "frontmatter", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 4);
    CHECK(contains(x, "message", "duplicate key"));
    CHECK(contains(x, "file", "bad-yaml/SKILL.md"));
    CHECK(contains(x, "skill", "bad-yaml"));
    CHECK(json_object_get(x, "hint"));
    json_decref(f);
}

TEST(name_rules)
{
    json_t *f = lint(DATA "/name-rules");
    json_t *x = nth(f, "name-rules", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 2);
    CHECK(contains(x, "message", "Bad_Name"));
    CHECK_EQ(count(f, "name-folder"), 0);   /* equal to its folder */
    json_decref(f);
}

TEST(name_differs_from_folder)
{
    json_t *f = lint(DATA "/name-folder");
    json_t *x = nth(f, "name-folder", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 3);
    CHECK(contains(x, "message", "other-name"));
    CHECK(contains(x, "hint", "some-folder"));
    CHECK_EQ(json_array_size(f), 1);
    json_decref(f);
}

TEST(name_missing)
{
    json_t *f = lint(DATA "/name-missing");
    json_t *x = nth(f, "name-required", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK(json_is_null(json_object_get(x, "line")));
    CHECK(contains(x, "hint", "name: nameless"));
    json_decref(f);
}

TEST(description_missing_and_long)
{
    json_t *f = lint(DATA "/desc-missing");
    json_t *x = nth(f, "description-required", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    json_decref(f);
    f = lint(DATA "/desc-long");
    x = nth(f, "description-length", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 4);
    CHECK(contains(x, "message", "1100"));
    json_decref(f);
}

TEST(compatibility_long)
{
    json_t *f = lint(DATA "/compat-long");
    json_t *x = nth(f, "compatibility", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 4);
    CHECK_EQ(json_array_size(f), 1);
    json_decref(f);
}

TEST(metadata_not_strings)
{
    json_t *f = lint(DATA "/metadata-bad");
    json_t *x = nth(f, "metadata", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK_EQ(line(x), 6);
    CHECK(contains(x, "message", "'version'"));
    CHECK_EQ(json_array_size(f), 1);
    json_decref(f);
}

TEST(execution_block)
{
    json_t *f = lint(DATA "/exec-bad");
    json_t *x;
    /* default: {timeout: -1} */
    x = nth(f, "execution", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 5);
    CHECK(contains(x, "message", "'timeout'"));
    /* scripts/run.py: timeout: "soon" */
    x = nth(f, "execution", 1);
    CHECK(x);
    CHECK_EQ(line(x), 8);
    /* run.py: 30 (not a map) */
    x = nth(f, "execution", 2);
    CHECK(x);
    CHECK_EQ(line(x), 11);
    CHECK(contains(x, "message", "must be a map"));
    CHECK_EQ(count(f, "execution"), 3);
    /* scripts/missing.py does not exist; ../escape.py is outside scripts/ */
    x = nth(f, "execution-script", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 9);
    CHECK(contains(x, "message", "scripts/missing.py"));
    x = nth(f, "execution-script", 1);
    CHECK(x);
    CHECK_EQ(line(x), 12);
    CHECK(contains(x, "message", "not a path under scripts/"));
    CHECK_EQ(count(f, "execution-script"), 2);
    json_decref(f);
}

TEST(execution_mode_is_a_warning)
{
    json_t *f = lint(DATA "/exec-mode");
    json_t *x = nth(f, "execution-mode", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK_EQ(line(x), 5);
    x = nth(f, "execution-mode", 1);
    CHECK(x);
    CHECK_EQ(line(x), 8);
    CHECK_EQ(json_array_size(f), 2);
    json_decref(f);
}

/* A key the server would never look up (it matches a script's resolved
 * path as written) is an error, not silently dead configuration. */
TEST(execution_keys_are_plain_paths)
{
    json_t *f = lint(DATA "/exec-plain");
    CHECK_EQ(count(f, "execution-script"), 3);
    static const int lines[] = {6, 7, 8};
    for (int i = 0; i < 3; i++) {
        json_t *x = nth(f, "execution-script", i);
        CHECK(x);
        CHECK_STR(sev(x), "error");
        CHECK_EQ(line(x), lines[i]);
        CHECK(contains(x, "message", "not written as a plain path"));
    }
    CHECK_EQ(json_array_size(f), 3);
    json_decref(f);
}

TEST(script_without_interpreter)
{
    json_t *f = lint(DATA "/script-ext");
    json_t *x = nth(f, "script-interpreter", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK(contains(x, "file", "scripts/run.rb"));
    CHECK_EQ(json_array_size(f), 1);    /* scripts/lib/helper.py is fine */
    json_decref(f);
    /* --interpreter .rb=... makes it known */
    const char *roots[1] = {DATA "/script-ext"}, *exts[1] = {".rb"};
    f = validate_roots(roots, 1, exts, 1, NULL);
    CHECK_EQ(json_array_size(f), 0);
    json_decref(f);
}

TEST(symlink_leaving_the_skill)
{
    json_t *f = lint(DATA "/symlink-escape");
    json_t *x = nth(f, "symlink-escape", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK(contains(x, "file", "references/shared.md"));
    CHECK_EQ(json_array_size(f), 1);    /* references/inside.md stays inside */
    json_decref(f);
}

TEST(teams_and_shadowing)
{
    size_t n = 0;
    const char *roots[1] = {DATA "/team"};
    json_t *f = validate_roots(roots, 1, NULL, 0, &n);
    CHECK_EQ(n, 3);
    json_t *x = nth(f, "name-folder", 0);
    CHECK(x);
    CHECK_STR(json_string_value(json_object_get(x, "skill")), "acme/mismatch");
    CHECK_EQ(json_array_size(f), 1);
    json_decref(f);

    const char *two[2] = {DATA "/shadow-a", DATA "/shadow-b"};
    f = validate_roots(two, 2, NULL, 0, &n);
    CHECK_EQ(n, 2);
    x = nth(f, "shadowed", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK(contains(x, "file", "shadow-b/dup/SKILL.md"));
    CHECK_EQ(json_array_size(f), 1);
    json_decref(f);
}

/* ---- trees built at run time ------------------------------------------------ */

static void write_file(const char *path, const char *head, size_t fill, char c, const char *tail)
{
    FILE *fp = fopen(path, "w");
    if (!fp) {
        /* fails the running test: the tree it checks would be incomplete */
        H_FAIL("cannot write %s", path);
        return;
    }
    fputs(head, fp);
    for (size_t i = 0; i < fill; i++)
        fputc(c == '\n' ? '\n' : (i % 80 == 79 ? '\n' : c), fp);
    fputs(tail, fp);
    fclose(fp);
}

static char tmp[64];

static void rmtree(const char *p)
{
    if (!strncmp(p, "/tmp/", 5))
        tt_rm_rf(p);
}

static const char *mkskill(const char *name)
{
    static char dir[PATH_MAX];
    char p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/scripts", dir);
    mkdir(p, 0755);
    return dir;
}

TEST(size_limits)
{
    char p[PATH_MAX * 2], head[256];
    snprintf(tmp, sizeof tmp, "/tmp/test_validate.XXXXXX");
    CHECK(mkdtemp(tmp));

    /* body over ~5,000 tokens: a warning on the first body line */
    const char *d = mkskill("big-body");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    write_file(p, "---\nname: big-body\ndescription: A long body.\n---\n", 40000, 'a',
               "\n");
    /* frontmatter not closed within 256 KiB */
    d = mkskill("open-fence");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    write_file(p, "---\nname: open-fence\ndescription: never closed\n# ", 300 << 10, 'x', "\n");
    /* SKILL.md over 4 MiB */
    d = mkskill("huge-md");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    write_file(p, "---\nname: huge-md\ndescription: A huge file.\n---\n", (4u << 20) + 10, 'z',
               "\n");
    /* 520 files and over 16 MiB */
    d = mkskill("many-files");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    write_file(p, "---\nname: many-files\ndescription: Too many files.\n---\nBody.\n", 0, 0, "");
    for (int i = 0; i < 520; i++) {
        snprintf(p, sizeof p, "%s/assets-%03d.txt", d, i);
        snprintf(head, sizeof head, "%d\n", i);
        write_file(p, head, 0, 0, "");
    }
    snprintf(p, sizeof p, "%s/assets-big.bin", d);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, 17ll << 20) == 0);
    close(fd);

    size_t n = 0;
    const char *roots[1] = {tmp};
    json_t *f = validate_roots(roots, 1, NULL, 0, &n);
    rmtree(tmp);
    CHECK_EQ(n, 4);
    json_t *x = nth(f, "body-tokens", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK_EQ(line(x), 5);
    CHECK(contains(x, "skill", "big-body"));
    x = nth(f, "frontmatter-size", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK(contains(x, "skill", "open-fence"));
    x = nth(f, "skill-md-size", 0);
    CHECK(x);
    CHECK_STR(sev(x), "error");
    CHECK(contains(x, "skill", "huge-md"));
    x = nth(f, "skill-files", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK(contains(x, "message", "522 files"));
    x = nth(f, "skill-size", 0);
    CHECK(x);
    CHECK_STR(sev(x), "warning");
    CHECK(contains(x, "skill", "many-files"));
    CHECK_EQ(count(f, "skill-size"), 1);   /* a 4 MiB SKILL.md alone is under 16 MiB */
    json_decref(f);
}

/* ---- command lines ------------------------------------------------------------- */

TEST(body_not_utf8)
{
    snprintf(tmp, sizeof tmp, "/tmp/skill-validate-utf8-XXXXXX");
    CHECK(mkdtemp(tmp));
    char p[PATH_MAX];
    const char *d = mkskill("latin");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    /* line 6 holds a Latin-1 e-acute; line 5 a correct UTF-8 one */
    write_file(p, "---\nname: latin\ndescription: A Latin-1 body.\n---\ncaf\xc3\xa9\ncaf\xe9\n",
               0, 0, "");
    d = mkskill("fine");
    snprintf(p, sizeof p, "%s/SKILL.md", d);
    write_file(p, "---\nname: fine\ndescription: A UTF-8 body.\n---\n\xe6\x97\xa5\xf0\x9f\x98\x80\n",
               0, 0, "");
    size_t n = 0;
    const char *roots[1] = {tmp};
    json_t *f = validate_roots(roots, 1, NULL, 0, &n);
    rmtree(tmp);
    CHECK_EQ(n, 2);
    CHECK_EQ(count(f, "body-utf8"), 1);
    json_t *x = nth(f, "body-utf8", 0);
    CHECK_STR(sev(x), "error");
    CHECK_EQ(line(x), 6);
    CHECK(contains(x, "skill", "latin"));
    CHECK(contains(x, "message", "0xE9"));
    json_decref(f);
}

TEST(exit_codes)
{
    char *out, *err;
    const char *clean[] = {DATA "/clean"};
    CHECK_EQ(run(0, clean, 1, &out, &err), 0);
    CHECK(strstr(out, "1 skill checked in 1 directory: 0 errors, 0 warnings"));
    free(out);
    free(err);

    const char *warn[] = {DATA "/exec-mode"};
    CHECK_EQ(run(0, warn, 1, &out, NULL), 0);   /* warnings only */
    CHECK(strstr(out, "exec-mode/SKILL.md:5: warning: "));
    CHECK(strstr(out, "[execution-mode, RFC-SKILL-1 \u00a72.4.3] (hint: "));
    free(out);

    const char *bad[] = {DATA "/clean", DATA "/name-folder"};
    CHECK_EQ(run(0, bad, 2, &out, NULL), 1);
    CHECK(strstr(out, "some-folder/SKILL.md:3: error: name 'other-name' differs"));
    free(out);

    /* no DIR: the server's default root, ./skills here (the bundled skills) */
    CHECK_EQ(run(1, NULL, 0, &out, NULL), 0);
    CHECK(strstr(out, "8 served, 0 shadowed, 0 broken"));
    free(out);
    const char *missing[] = {DATA "/clean", DATA "/no-such-dir"};
    CHECK_EQ(run(0, missing, 2, NULL, &err), 2);
    CHECK(strstr(err, "no-such-dir is not a readable directory"));
    free(err);
    const char *opt[] = {"--bogus", DATA "/clean"};
    CHECK_EQ(run(0, opt, 2, NULL, &err), 2);
    CHECK(strstr(err, "unknown option"));
    free(err);
    const char *help[] = {"--help"};
    CHECK_EQ(run(0, help, 1, NULL, &err), 0);
    CHECK(strstr(err, "usage: skill-mcp validate"));
    free(err);
    const char *nodir[] = {"--json"};
    CHECK_EQ(run(0, nodir, 1, &out, NULL), 0);
    CHECK(strstr(out, "\"errors\": 0") || strstr(out, "\"errors\":0"));
    free(out);
}

TEST(json_output_shape)
{
    char *out;
    const char *args[] = {"--json", DATA "/exec-bad", DATA "/clean"};
    CHECK_EQ(run(0, args, 3, &out, NULL), 1);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    free(out);
    CHECK(json_is_object(doc));
    json_t *fs = json_object_get(doc, "findings"), *sum = json_object_get(doc, "summary");
    CHECK(json_is_array(fs));
    CHECK(json_array_size(fs) > 0);
    size_t i;
    json_t *f;
    json_array_foreach(fs, i, f) {
        CHECK(json_is_string(json_object_get(f, "severity")));
        CHECK(json_is_string(json_object_get(f, "rule")));
        CHECK(json_is_string(json_object_get(f, "skill")));
        CHECK(json_is_string(json_object_get(f, "file")));
        CHECK(json_is_string(json_object_get(f, "message")));
        CHECK(json_is_string(json_object_get(f, "hint")));
        CHECK(contains(f, "clause", "RFC-SKILL-1 \u00a72.4"));
        json_t *l = json_object_get(f, "line");
        CHECK(json_is_integer(l) || json_is_null(l));
    }
    CHECK_EQ(json_integer_value(json_object_get(sum, "roots")), 2);
    CHECK_EQ(json_integer_value(json_object_get(sum, "skills")), 2);
    CHECK_EQ(json_integer_value(json_object_get(sum, "errors")), 5);
    CHECK_EQ(json_integer_value(json_object_get(sum, "warnings")), 0);
    CHECK(json_is_false(json_object_get(sum, "ok")));
    json_decref(doc);
}

static json_t *list_row(json_t *doc, const char *qname, int nth_)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "skills"), i, r)
        if (!strcmp(json_string_value(json_object_get(r, "qualified_name")), qname) &&
            nth_-- == 0)
            return r;
    return NULL;
}

static int has_flag(json_t *r, const char *flag)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "flags"), i, x)
        if (!strcmp(json_string_value(x), flag))
            return 1;
    return 0;
}

TEST(list_shows_discovery)
{
    const char *roots[] = {DATA "/team", DATA "/shadow-a", DATA "/shadow-b", DATA "/yaml-error",
                           DATA "/name-folder"};
    json_t *doc = validate_list(roots, 5);
    CHECK(doc);
    json_t *r = list_row(doc, "acme/billing", 0);
    CHECK(r);
    CHECK_STR(json_string_value(json_object_get(r, "name")), "billing");
    CHECK_STR(json_string_value(json_object_get(r, "root")), DATA "/team");
    CHECK_EQ(json_array_size(json_object_get(r, "flags")), 0);
    r = list_row(doc, "acme/mismatch", 0);
    CHECK(r && has_flag(r, "name-differs"));
    CHECK_STR(json_string_value(json_object_get(r, "frontmatter_name")), "wrong");
    r = list_row(doc, "dup", 0);
    CHECK(r && !has_flag(r, "shadowed"));
    CHECK_STR(json_string_value(json_object_get(r, "root")), DATA "/shadow-a");
    r = list_row(doc, "dup", 1);
    CHECK(r && has_flag(r, "shadowed"));
    CHECK_STR(json_string_value(json_object_get(r, "root")), DATA "/shadow-b");
    r = list_row(doc, "bad-yaml", 0);
    CHECK(r && has_flag(r, "broken"));
    CHECK(contains(r, "reason", "duplicate key"));
    CHECK_STR(json_string_value(json_object_get(r, "root")), DATA "/yaml-error");
    CHECK_STR(json_string_value(json_object_get(r, "path")), DATA "/yaml-error/bad-yaml");
    r = list_row(doc, "some-folder", 0);
    CHECK(r && has_flag(r, "name-differs"));
    json_t *sum = json_object_get(doc, "summary");
    CHECK_EQ(json_integer_value(json_object_get(sum, "served")), 5);
    CHECK_EQ(json_integer_value(json_object_get(sum, "shadowed")), 1);
    CHECK_EQ(json_integer_value(json_object_get(sum, "broken")), 1);
    json_decref(doc);

    char *out;
    const char *args[] = {DATA "/team"};
    CHECK_EQ(run(1, args, 1, &out, NULL), 0);
    CHECK(strstr(out, "QUALIFIED NAME"));
    CHECK(strstr(out, "acme/mismatch"));
    CHECK(strstr(out, "name-differs"));
    CHECK(strstr(out, "3 served, 0 shadowed, 0 broken"));
    free(out);
    const char *jargs[] = {"--json", DATA "/team"};
    CHECK_EQ(run(1, jargs, 2, &out, NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    free(out);
    CHECK(json_is_array(json_object_get(j, "skills")));
    CHECK_EQ(json_array_size(json_object_get(j, "skills")), 3);
    json_decref(j);
}

int main(void)
{
    x_install_json_alloc();
    RUN(clean_skill_has_no_findings);
    RUN(yaml_error_has_its_line);
    RUN(name_rules);
    RUN(name_differs_from_folder);
    RUN(name_missing);
    RUN(description_missing_and_long);
    RUN(compatibility_long);
    RUN(metadata_not_strings);
    RUN(execution_block);
    RUN(execution_mode_is_a_warning);
    RUN(execution_keys_are_plain_paths);
    RUN(script_without_interpreter);
    RUN(symlink_leaving_the_skill);
    RUN(teams_and_shadowing);
    RUN(size_limits);
    RUN(body_not_utf8);
    RUN(exit_codes);
    RUN(json_output_shape);
    RUN(list_shows_discovery);
    DONE();
}
