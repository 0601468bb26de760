/*
 * test_acl.c - the --acl file: its parser (every error with FILE:LINE),
 * JIT, the semantics of classes (union, run implies see, nobody matched
 * sees nothing, who matches what), views over a snapshot (built once per
 * class, lookups and suggestions as if hidden entries did not exist), and
 * reloads.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <fcntl.h>
#include <ftw.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acl.h"
#include "call.h"
#include "harness.h"
#include "tmptree.h"
#include "srv.h"
#include "skills.h"
#include "util.h"

static struct acl_rules *P(const char *text, char *err)
{
    struct err e = {0};
    struct acl_rules *r = acl_parse(text, strlen(text), "acl.txt", &e);
    snprintf(err, 512, "%s", e.msg);
    return r;
}

#define BAD(text, want)                                                         \
    do {                                                                        \
        char e_[512];                                                           \
        struct acl_rules *r_ = P(text, e_);                                     \
        CHECK(r_ == NULL);                                                      \
        if (!strstr(e_, want))                                                  \
            H_FAIL("error '%s' does not contain '%s'", e_, want);               \
    } while (0)

TEST(parses_every_kind_and_skips_comments)
{
    char err[512];
    struct acl_rules *r = P("# comment\n\n   # indented comment\n"
                            "client:ci-bot    see   ^ops/.*\n"
                            "group:platform\trun\t^ops/(deploy|rollback)$\r\n"
                            "sub:alice@x see .*\n"
                            "scope:skills.all see .*\n"
                            "* see ^public/   \n"
                            "client:a see a b#c", err);
    CHECK(r != NULL);
    CHECK_EQ(acl_rules_count(r), 6);
    acl_rules_free(r);
    r = P("", err);
    CHECK(r != NULL);
    CHECK_EQ(acl_rules_count(r), 0);
    acl_rules_free(r);
}

TEST(every_error_names_file_and_line)
{
    BAD("* see .*\nuser:bob see .*\n", "acl.txt:2: 'user:bob' names nobody");
    BAD("client: see .*\n", "acl.txt:1: 'client:' needs a name");
    BAD("group:a,b see .*\n", "acl.txt:1: 'group:a,b' needs a name");
    BAD("\n\nclient:x\n", "acl.txt:3: missing 'see' or 'run'");
    BAD("client:x read .*\n", "acl.txt:1: 'read' is not 'see' or 'run'");
    BAD("client:x see\n", "acl.txt:1: missing the skills pattern");
    BAD("client:x see    \n", "acl.txt:1: missing the skills pattern");
    BAD("# a\nclient:x see ops/(\n", "acl.txt:2: the pattern does not compile at offset 5");
    BAD("client:x see \xff\xfe\n", "acl.txt:1: the line is not valid UTF-8");
    {
        static const char nul[] = "* see .*\n* see a\0b\n";
        struct err e;
        CHECK(acl_parse(nul, sizeof nul - 1, "acl.txt", &e) == NULL);
        CHECK(strstr(e.msg, "acl.txt:2: a NUL byte") != NULL);
        CHECK_EQ(e.line, 2);
    }
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i <= ACL_MAX_RULES; i++)
        buf_puts(&b, "* see x\n");
    char want[64];
    snprintf(want, sizeof want, "acl.txt:%d: more than %d rules", ACL_MAX_RULES + 1,
             ACL_MAX_RULES);
    BAD(b.p, want);
    buf_cleanup(&b);
}

TEST(patterns_are_jit_compiled)
{
    char err[512];
    struct acl_rules *r = P("* see ops/\nclient:x run a(b|c)$\n", err);
    CHECK(r != NULL);
    uint32_t jit = 0;
    if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit)
        CHECK_EQ(acl_rules_jitted(r), 2);
    acl_rules_free(r);
}

TEST(semantics_union_run_implies_see_nobody_sees_nothing)
{
    char err[512];
    struct acl_rules *r = P("client:ci see ops/\n"
                            "group:platform run ops/deploy$\n"
                            "sub:alice@x see .*\n"
                            "scope:skills.all see team/\n"
                            "* see public/\n", err);
    CHECK(r != NULL);
    /* anchored at the start, not at the end */
    const struct acl_class *anon = acl_rules_classify(r, NULL);
    CHECK(acl_class_sees(anon, "public/x"));
    CHECK(!acl_class_sees(anon, "x/public/y"));
    CHECK(!acl_class_sees(anon, "ops/deploy"));
    CHECK(!acl_class_runs(anon, "public/x"));
    /* client: union with '*' */
    struct acl_who ci = {.client = "ci"};
    const struct acl_class *k = acl_rules_classify(r, &ci);
    CHECK(acl_class_sees(k, "ops/anything"));
    CHECK(acl_class_sees(k, "public/x"));
    CHECK(!acl_class_runs(k, "ops/anything"));
    /* group: run implies see; the pattern's $ pins the name */
    struct acl_who g = {.client = "bob", .groups = "dev,platform"};
    k = acl_rules_classify(r, &g);
    CHECK(acl_class_runs(k, "ops/deploy"));
    CHECK(acl_class_sees(k, "ops/deploy"));
    CHECK(!acl_class_sees(k, "ops/deployer"));
    /* a group name is matched whole, not as a substring */
    struct acl_who g2 = {.client = "bob", .groups = "platforms,xplatform"};
    CHECK(!acl_class_sees(acl_rules_classify(r, &g2), "ops/deploy"));
    /* sub and scope */
    struct acl_who s = {.client = "c1", .sub = "alice@x"};
    CHECK(acl_class_sees(acl_rules_classify(r, &s), "secret/x"));
    struct acl_who sc = {.client = "c2", .scopes = "openid skills.all"};
    CHECK(acl_class_sees(acl_rules_classify(r, &sc), "team/a"));
    struct acl_who sc2 = {.client = "c2", .scopes = "skills.all.more"};
    CHECK(!acl_class_sees(acl_rules_classify(r, &sc2), "team/a"));
    /* a client id is not a subject */
    struct acl_who notsub = {.client = "alice@x"};
    CHECK(!acl_class_sees(acl_rules_classify(r, &notsub), "secret/x"));
    acl_rules_free(r);
    /* no rule matches: nothing */
    r = P("client:ci see .*\n", err);
    CHECK(!acl_class_sees(acl_rules_classify(r, NULL), "a"));
    acl_rules_free(r);
}

TEST(classes_are_interned)
{
    char err[512];
    struct acl_rules *r = P("client:a see x\nclient:b see y\ngroup:g see z\n", err);
    struct acl_who a = {.client = "a"}, a2 = {.client = "a", .groups = "other"},
                   b = {.client = "b"}, ag = {.client = "a", .groups = "g"};
    const struct acl_class *ka = acl_rules_classify(r, &a);
    CHECK(ka == acl_rules_classify(r, &a2));     /* same rules matched: same class */
    CHECK(ka != acl_rules_classify(r, &b));
    CHECK(ka != acl_rules_classify(r, &ag));
    CHECK(acl_rules_classify(r, NULL) == acl_rules_classify(r, &(struct acl_who){.client = "z"}));
    acl_rules_free(r);
}

/* ---- views over a snapshot ----------------------------------------------------- */

static char root[64];

static void put_skill(const char *qname)
{
    char path[256], text[512];
    tt_mkdirs(root, qname);
    const char *name = strrchr(qname, '/') ? strrchr(qname, '/') + 1 : qname;
    snprintf(path, sizeof path, "%s/SKILL.md", qname);
    int n = snprintf(text, sizeof text, "---\nname: %s\ndescription: the %s skill\n---\nbody\n", name, qname);
    tt_put(root, path, text, (size_t)n);
}

TEST(views_hide_entries_from_lookup_and_suggestions)
{
    snprintf(root, sizeof root, "/tmp/acl-test-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    put_skill("ops/deploy");
    put_skill("dev/deploy");
    put_skill("public/hello");
    put_skill("secret");
    const char *roots[] = {root};
    struct skills *S = skills_new(roots, 1, NULL, NULL, NULL, NULL);
    CHECK(S != NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 4);
    char err[512];
    struct acl_rules *r = P("* see public/\ngroup:dev run dev/\n", err);
    struct acl_who dev = {.client = "d", .groups = "dev"};
    const struct acl_class *k = acl_rules_classify(r, &dev);
    const struct view *v = acl_view(s, k);
    CHECK(v != NULL);
    CHECK(acl_view(s, k) == v);     /* built once per snapshot and class */
    CHECK_EQ(v->visible, 2);
    CHECK(acl_view(s, NULL) == NULL);
    int amb;
    size_t idx = 99;
    /* "deploy" is shared by two teams, but only one is visible: not ambiguous */
    struct skill *f = skills_find_in(s, v->see, "deploy", 6, &amb, &idx);
    CHECK(f != NULL);
    CHECK_STR(f->qname, "dev/deploy");
    CHECK(view_runs(v, idx));
    CHECK(skills_find(s, "deploy", 6, &amb) == NULL && amb);
    CHECK(skills_find_in(s, v->see, "ops/deploy", 10, &amb, NULL) == NULL && !amb);
    CHECK(skills_find_in(s, v->see, "secret", 6, &amb, NULL) == NULL && !amb);
    f = skills_find_in(s, v->see, "public/hello", 12, &amb, &idx);
    CHECK(f && !view_runs(v, idx));
    const char *sug[3];
    size_t n = skills_suggest_in(s, v->see, "ops/deploy", sug, 3);
    for (size_t i = 0; i < n; i++)
        CHECK(strcmp(sug[i], "ops/deploy") != 0);
    CHECK(skills_suggest(s, "ops/deplo", sug, 3) >= 1);
    CHECK_STR(sug[0], "ops/deploy");
    n = skills_suggest_in(s, v->see, "ops/deplo", sug, 3);
    for (size_t i = 0; i < n; i++)
        CHECK(strcmp(sug[i], "ops/deploy") != 0);
    /* the anonymous caller's view is another one */
    const struct view *va = acl_view(s, acl_rules_classify(r, NULL));
    CHECK(va != v);
    CHECK_EQ(va->visible, 1);
    CHECK_STR(s->v[view_at(va, 0)]->qname, "public/hello");
    skills_release(s);

    /* a call starts with the view of a caller with no identity (fail closed) */
    char path[] = "/tmp/acl-call-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    static const char rules[] = "* see public/\ngroup:dev see dev/\n";
    CHECK(write(fd, rules, sizeof rules - 1) == (ssize_t)(sizeof rules - 1));
    close(fd);
    struct srv srv;
    memset(&srv, 0, sizeof srv);
    srv.skills = S;
    srv.acl = acl_open(path, NULL);
    CHECK(srv.acl != NULL);
    struct call *c = call_new(&srv);
    CHECK(c->view != NULL);
    CHECK_EQ(c->view->visible, 1);
    call_set_view(c, acl_classify(srv.acl, &dev));  /* the transport's word wins */
    CHECK_EQ(c->view->visible, 2);
    call_unref(c);
    srv.skills = NULL;
    acl_close(srv.acl);
    unlink(path);

    skills_free(S);     /* frees the views with the snapshot (ASan: no leak) */
    acl_rules_free(r);
    tt_rm_rf(root);
}

/* ---- the instance: open and reload ------------------------------------------------ */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

TEST(open_fails_closed_and_bad_reload_keeps_rules)
{
    char path[] = "/tmp/acl-file-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    struct err err;
    write_file(path, "* see a/\n* frob b\n");
    CHECK(acl_open(path, &err) == NULL);
    char want[128];
    snprintf(want, sizeof want, "%s:2: 'frob' is not 'see' or 'run'", path);
    CHECK_STR(err.msg, want);
    CHECK_EQ(err.line, 2);
    CHECK(acl_open("/nonexistent/acl", &err) == NULL);
    CHECK(strstr(err.msg, "/nonexistent/acl: cannot read the access rules") != NULL);
    CHECK_EQ(err.line, 0);

    write_file(path, "* see a/\n");
    struct acl *a = acl_open(path, &err);
    CHECK(a != NULL);
    CHECK(acl_class_sees(acl_classify(a, NULL), "a/x"));
    CHECK_EQ(acl_reload(a, 0), 0);          /* unchanged: nothing read */
    write_file(path, "* see b/\n* see (\n");
    struct timespec ts[2] = {{time(NULL) + 5, 0}, {time(NULL) + 5, 0}};
    utimensat(AT_FDCWD, path, ts, 0);
    CHECK_EQ(acl_reload(a, 0), -1);         /* bad: the old rules stay */
    CHECK(acl_class_sees(acl_classify(a, NULL), "a/x"));
    CHECK(!acl_class_sees(acl_classify(a, NULL), "b/x"));
    CHECK_EQ(acl_reload(a, 0), 0);          /* the same bad version: not read (or logged) again */
    write_file(path, "* see b/\n");
    ts[0].tv_sec = ts[1].tv_sec = time(NULL) + 10;
    utimensat(AT_FDCWD, path, ts, 0);
    const struct acl_class *before = acl_classify(a, NULL);
    CHECK_EQ(acl_reload(a, 0), 1);
    CHECK(acl_class_sees(acl_classify(a, NULL), "b/x"));
    CHECK(!acl_class_sees(acl_classify(a, NULL), "a/x"));
    CHECK(acl_classify(a, NULL) != before); /* a new rule set: new classes, new views */
    CHECK(acl_class_sees(before, "a/x"));   /* the old one is still valid */
    /* forced (SIGHUP) with nothing edited: the rules in force stay, and no
     * change is reported (listeners are not told to re-list) */
    const struct acl_class *kept = acl_classify(a, NULL);
    CHECK_EQ(acl_reload(a, 1), 0);
    CHECK(acl_classify(a, NULL) == kept);
    /* forced, edited: new rules, reported */
    write_file(path, "* see c/\n");
    CHECK_EQ(acl_reload(a, 1), 1);
    CHECK(acl_class_sees(acl_classify(a, NULL), "c/x"));
    CHECK(!acl_class_sees(acl_classify(a, NULL), "b/x"));
    CHECK(acl_classify(NULL, NULL) == NULL);
    acl_close(a);
    unlink(path);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    RUN(parses_every_kind_and_skips_comments);
    RUN(every_error_names_file_and_line);
    RUN(patterns_are_jit_compiled);
    RUN(semantics_union_run_implies_see_nobody_sees_nothing);
    RUN(classes_are_interned);
    RUN(views_hide_entries_from_lookup_and_suggestions);
    RUN(open_fails_closed_and_bad_reload_keeps_rules);
    DONE();
}
