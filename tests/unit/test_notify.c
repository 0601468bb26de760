/*
 * test_notify.c - the list-change broadcaster (server/notify.c): what a
 * generation changed, coalescing for a listener that is behind, filters,
 * session subscriptions, the bounds, and the end of a session's listener.
 */
#include "harness.h"
#include "notify.h"
#include "session.h"
#include "skills.h"
#include "util.h"

#include <errno.h>

/* Entries with just what the diff reads. */
static struct skill *mk(const char *qname, int64_t mtime, const char *const *files,
                        const int64_t *sizes, size_t n)
{
    struct skill *k = calloc(1, sizeof *k);
    k->qname = strdup(qname);
    k->md_key.mtime_ns = mtime;
    k->files = calloc(n + 1, sizeof *k->files);
    for (size_t i = 0; i < n; i++) {
        k->files[i].path = strdup(files[i]);
        k->files[i].size = sizes[i];
    }
    k->nfiles = n;
    return k;
}

static void unmk(struct skill *k)
{
    for (size_t i = 0; i < k->nfiles; i++)
        free(k->files[i].path);
    free(k->files);
    free(k->qname);
    free(k);
}

struct got {
    int wakes;
    char log[4096];
    int n;
};

static void wake(void *arg)
{
    ((struct got *)arg)->wakes++;
}

static void sink(const char *json, size_t len, void *arg)
{
    struct got *g = arg;
    size_t at = strlen(g->log);
    snprintf(g->log + at, sizeof g->log - at, "%.*s\n", (int)len, json);
    g->n++;
}

TEST(diff_names_changed_files)
{
    const char *f1[] = {"references/a.md", "scripts/run.py"};
    int64_t s1[] = {10, 20}, s2[] = {10, 21};
    const char *f3[] = {"references/a.md"};
    struct skill *a1 = mk("alpha", 1, f1, s1, 2), *b1 = mk("beta", 1, NULL, NULL, 0);
    struct skill *a2 = mk("alpha", 1, f1, s2, 2);      /* run.py changed size */
    struct skill *c2 = mk("team/gamma", 1, f3, s1, 1);  /* added */
    struct skill *v1[] = {a1, b1}, *v2[] = {a2, b1, c2};
    struct snapshot x = {.v = v1, .n = 2}, y = {.v = v2, .n = 3};
    char **u;
    size_t n = notify_diff(&x, &y, &u);
    CHECK_EQ(n, 3);
    CHECK_STR(u[0], "skill://alpha/scripts/run.py");
    CHECK_STR(u[1], "skill://team/gamma/SKILL.md");
    CHECK_STR(u[2], "skill://team/gamma/references/a.md");
    notify_uris_free(u, n);
    /* the same entry on both sides: nothing moved */
    n = notify_diff(&x, &x, &u);
    CHECK_EQ(n, 0);
    notify_uris_free(u, n);
    /* removed beta, SKILL.md of alpha rewritten */
    struct skill *a3 = mk("alpha", 2, f1, s1, 2);
    struct skill *v3[] = {a3};
    struct snapshot z = {.v = v3, .n = 1};
    n = notify_diff(&x, &z, &u);
    CHECK_EQ(n, 2);
    CHECK_STR(u[0], "skill://alpha/SKILL.md");
    CHECK_STR(u[1], "skill://beta/SKILL.md");
    notify_uris_free(u, n);
    /* a file rewritten in place with the same size: its mtime tells */
    struct skill *a4 = mk("alpha", 1, f1, s1, 2);
    a4->files[0].mtime_ns = 5;
    struct skill *v4[] = {a4, b1};
    struct snapshot w = {.v = v4, .n = 2};
    n = notify_diff(&x, &w, &u);
    CHECK_EQ(n, 1);
    CHECK_STR(u[0], "skill://alpha/references/a.md");
    notify_uris_free(u, n);
    unmk(a1), unmk(b1), unmk(a2), unmk(c2), unmk(a3), unmk(a4);
}

TEST(covers)
{
    CHECK(notify_covers("skill://alpha/SKILL.md", "skill://alpha/SKILL.md"));
    CHECK(notify_covers("skill://alpha", "skill://alpha/scripts/run.py"));
    CHECK(notify_covers("skill://alpha/", "skill://alpha/SKILL.md"));
    CHECK(!notify_covers("skill://alpha", "skill://alphabet/SKILL.md"));
    CHECK(!notify_covers("skill://alpha/SKILL.md", "skill://alpha/scripts/run.py"));
}

/* Three generations while the listener does not drain: one of each kind. */
TEST(behind_listener_gets_one_of_each)
{
    const char *f[] = {"x.md"};
    int64_t s1[] = {1}, s2[] = {2}, s3[] = {3};
    struct skill *k1 = mk("alpha", 1, f, s1, 1), *k2 = mk("alpha", 1, f, s2, 1),
                 *k3 = mk("alpha", 1, f, s3, 1);
    struct skill *v1[] = {k1}, *v2[] = {k2}, *v3[] = {k3};
    struct snapshot g1 = {.v = v1, .n = 1}, g2 = {.v = v2, .n = 1}, g3 = {.v = v3, .n = 1};
    const char *uris[] = {"skill://alpha"};
    struct got g = {0};
    struct err why;
    struct notify_listen_opts o = {.key = "t1", .kinds = NOTIFY_ALL, .uris = uris, .nuris = 1,
                                   .wake = wake, .arg = &g};
    struct notify_listener *l = notify_listen(&o, &why);
    CHECK(l);
    notify_publish(&g1, &g2);
    notify_publish(&g2, &g3);
    notify_publish(&g3, &g1);
    CHECK_EQ(g.wakes, 1);   /* woken once: the later ones found it pending */
    CHECK_EQ(notify_drain(l, sink, &g), 3);
    CHECK(strstr(g.log, "\"notifications/resources/list_changed\""));
    CHECK(strstr(g.log, "\"notifications/prompts/list_changed\""));
    CHECK(strstr(g.log, "{\"uri\":\"skill://alpha\"}"));
    CHECK_EQ(notify_drain(l, sink, &g), 0);
    notify_unlisten(l);
    unmk(k1), unmk(k2), unmk(k3);
}

TEST(filters_and_subscription_id)
{
    const char *f[] = {"x.md"};
    int64_t s1[] = {1}, s2[] = {2};
    struct skill *k1 = mk("alpha", 1, f, s1, 1), *k2 = mk("alpha", 1, f, s2, 1);
    struct skill *v1[] = {k1}, *v2[] = {k2};
    struct snapshot g1 = {.v = v1, .n = 1}, g2 = {.v = v2, .n = 1};
    const char *other[] = {"skill://beta/SKILL.md"};
    json_t *id = json_integer(7);
    struct got g = {0};
    struct err why;
    struct notify_listen_opts o = {.key = "t2", .kinds = NOTIFY_PROMPT_LIST | NOTIFY_UPDATED,
                                   .uris = other, .nuris = 1, .subscription_id = id,
                                   .wake = wake, .arg = &g};
    struct notify_listener *l = notify_listen(&o, &why);
    json_decref(id);
    CHECK(l);
    notify_publish(&g1, &g2);
    CHECK_EQ(notify_drain(l, sink, &g), 1);
    CHECK_STR(g.log, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\","
                     "\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":7}}}\n");
    notify_unlisten(l);
    unmk(k1), unmk(k2);
}

TEST(session_subscriptions_and_end)
{
    const char *f[] = {"x.md"};
    int64_t s1[] = {1}, s2[] = {2};
    struct skill *k1 = mk("alpha", 1, f, s1, 1), *k2 = mk("alpha", 1, f, s2, 1);
    struct skill *v1[] = {k1}, *v2[] = {k2};
    struct snapshot g1 = {.v = v1, .n = 1}, g2 = {.v = v2, .n = 1};
    struct session_table *t = session_new(8, 60);
    char sid[SESSION_ID_LEN + 1];
    CHECK_EQ(session_create(t, NULL, sid), 0);
    CHECK_EQ(session_subscribe(t, sid, NULL, "skill://alpha/x.md", "skill://alpha/x.md", 2), 1);
    CHECK_EQ(session_subscribe(t, sid, NULL, "skill://a", "skill://a/SKILL.md", 2), 1);
    CHECK_EQ(session_subscribe(t, sid, NULL, "skill://b", "skill://b/SKILL.md", 2), -1);
    CHECK_EQ(session_subscribe(t, sid, "someone", "skill://b", "skill://b/SKILL.md", 2), 0);
    struct got g = {0};
    struct err why;
    struct notify_listen_opts o = {.key = "t3", .kinds = NOTIFY_UPDATED, .sessions = t,
                                   .session = sid, .exclusive = 1, .wake = wake, .arg = &g};
    struct notify_listener *l = notify_listen(&o, &why);
    CHECK(l);
    CHECK(!notify_listen(&o, &why));
    CHECK_EQ(errno, EEXIST);
    CHECK_STR(why.msg, "this session already has its GET stream open (one per session)");
    notify_publish(&g1, &g2);
    CHECK_EQ(notify_drain(l, sink, &g), 1);
    CHECK(strstr(g.log, "skill://alpha/x.md"));
    CHECK_EQ(session_unsubscribe(t, sid, NULL, "skill://alpha/x.md"), 1);
    notify_publish(&g2, &g1);
    CHECK_EQ(notify_drain(l, sink, &g), 0);
    notify_end_session(sid);
    CHECK_EQ(notify_drain(l, sink, &g), -1);
    notify_unlisten(l);
    session_free(t);
    unmk(k1), unmk(k2);
}

TEST(bound_per_key)
{
    struct notify_listener *l[NOTIFY_PER_KEY + 1];
    struct err why;
    struct notify_listen_opts o = {.key = "busy", .kinds = NOTIFY_ALL};
    for (int i = 0; i < NOTIFY_PER_KEY; i++)
        CHECK((l[i] = notify_listen(&o, &why)));
    CHECK(!notify_listen(&o, &why));
    CHECK_EQ(errno, EMFILE);
    CHECK(strstr(why.msg, "already has 8"));
    o.key = "other";
    CHECK((l[NOTIFY_PER_KEY] = notify_listen(&o, &why)));
    notify_unlisten(l[0]);
    o.key = "busy";
    CHECK((l[0] = notify_listen(&o, &why)));
    for (int i = 0; i <= NOTIFY_PER_KEY; i++)
        notify_unlisten(l[i]);
    CHECK_EQ(notify_count(), 0);
}

int main(void)
{
    RUN(diff_names_changed_files);
    RUN(covers);
    RUN(behind_listener_gets_one_of_each);
    RUN(filters_and_subscription_id);
    RUN(session_subscriptions_and_end);
    RUN(bound_per_key);
    DONE();
}
