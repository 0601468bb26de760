/*
 * test_tstore.c - the memory task store's rules (tstore.h): the per-client
 * live cap, the record cap recycling the quota's own oldest finished record
 * (never another's), ttl expiry, terminal records staying terminal, and
 * client isolation. The clock is the test's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "tstore.h"
#include "util.h"

static int64_t fake_now = 1000000;

static int64_t clock_ms(void)
{
    return fake_now;
}

static struct tstore *mem(int max_live, int max_records, size_t max_total)
{
    struct tstore_cfg c = {
        .max_live = max_live, .max_records = max_records, .max_total = max_total,
        .run_ms = 60000, .owner = "test", .now_ms = clock_ms,
    };
    return tstore_mem_new(&c);
}

/* A working record: id from n (32 hex digits), client, quota = client. */
static struct trec rec(int n, const char *client)
{
    struct trec r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%032x", n);
    snprintf(r.client, sizeof r.client, "%s", client);
    snprintf(r.quota, sizeof r.quota, "%s", client);
    snprintf(r.status, sizeof r.status, "working");
    r.created = r.updated = fake_now;
    r.ttl = 5000;
    return r;
}

static struct err why;

static int create(struct tstore *s, int n, const char *client)
{
    struct trec r = rec(n, client);
    return tstore_create(s, &r, &why);
}

static int finish(struct tstore *s, int n, const char *client, const char *status, int64_t ttl)
{
    char id[40];
    snprintf(id, sizeof id, "%032x", n);
    return tstore_finish(s, id, client, status, "", "{\"content\":[]}", ttl, &why);
}

/* 0 found, 1 not; *status gets the status when found. */
static int get(struct tstore *s, int n, const char *client, char status[16])
{
    char id[40];
    struct trec r;
    snprintf(id, sizeof id, "%032x", n);
    int rc = tstore_get(s, id, client, &r, &why);
    if (rc == 0 && status)
        snprintf(status, 16, "%s", r.status);
    if (rc == 0)
        trec_cleanup(&r);
    return rc;
}

TEST(live_cap_per_client)
{
    struct tstore *s = mem(2, 100, 0);
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(create(s, 2, "alice"), 0);
    CHECK_EQ(create(s, 3, "alice"), 1);         /* two working already */
    CHECK_EQ(create(s, 4, "bob"), 0);           /* bob's cap is his own */
    CHECK_EQ(finish(s, 1, "alice", "completed", 5000), 0);
    CHECK_EQ(create(s, 3, "alice"), 0);         /* a finished one no longer counts */
    tstore_free(s);
}

TEST(record_cap_recycles_own_oldest_finished)
{
    struct tstore *s = mem(5, 3, 0);
    /* bob's finished record is the oldest in the store */
    CHECK_EQ(create(s, 100, "bob"), 0);
    CHECK_EQ(finish(s, 100, "bob", "completed", 60000), 0);
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(create(s, 2, "alice"), 0);
    CHECK_EQ(create(s, 3, "alice"), 0);
    CHECK_EQ(finish(s, 2, "alice", "completed", 60000), 0);
    CHECK_EQ(finish(s, 3, "alice", "completed", 60000), 0);
    /* alice keeps 3: the next drops her oldest finished one (2), not the
     * working 1, and not bob's */
    CHECK_EQ(create(s, 4, "alice"), 0);
    CHECK_EQ(get(s, 1, "alice", NULL), 0);
    CHECK_EQ(get(s, 2, "alice", NULL), 1);
    CHECK_EQ(get(s, 3, "alice", NULL), 0);
    CHECK_EQ(get(s, 4, "alice", NULL), 0);
    CHECK_EQ(get(s, 100, "bob", NULL), 0);
    tstore_free(s);
}

TEST(record_cap_all_working_refused)
{
    struct tstore *s = mem(5, 2, 0);
    CHECK_EQ(create(s, 100, "bob"), 0);
    CHECK_EQ(finish(s, 100, "bob", "completed", 60000), 0);
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(create(s, 2, "alice"), 0);
    CHECK_EQ(create(s, 3, "alice"), 2);         /* both working: nothing of hers to drop */
    CHECK_EQ(get(s, 100, "bob", NULL), 0);      /* and bob's is not taken instead */
    CHECK_EQ(get(s, 1, "alice", NULL), 0);
    CHECK_EQ(get(s, 2, "alice", NULL), 0);
    tstore_free(s);
}

TEST(store_full_of_working_is_an_error)
{
    struct tstore *s = mem(5, 5, 2);
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(create(s, 2, "bob"), 0);
    memset(&why, 0, sizeof why);
    CHECK_EQ(create(s, 3, "carol"), -1);
    CHECK_STR(why.msg, "the server keeps 2 working tasks already; try again later");
    CHECK_EQ(finish(s, 1, "alice", "completed", 60000), 0);
    CHECK_EQ(create(s, 3, "carol"), 0);         /* the finished one made room */
    CHECK_EQ(get(s, 1, "alice", NULL), 1);
    tstore_free(s);
}

TEST(ttl_expiry)
{
    struct tstore *s = mem(5, 5, 0);
    CHECK_EQ(create(s, 1, "alice"), 0);
    fake_now += 10 * 60000;
    CHECK_EQ(get(s, 1, "alice", NULL), 0);      /* working records do not expire */
    CHECK_EQ(finish(s, 1, "alice", "completed", 5000), 0);
    fake_now += 4999;
    CHECK_EQ(get(s, 1, "alice", NULL), 0);
    fake_now += 1;
    CHECK_EQ(get(s, 1, "alice", NULL), 1);      /* ttl ms after it finished */
    CHECK_EQ(create(s, 2, "alice"), 0);
    CHECK_EQ(finish(s, 2, "alice", "completed", 5000), 0);
    fake_now += 5000;
    tstore_tick(s);                             /* the tick sweeps too */
    size_t n = 9;
    int more = 1;
    struct trec out[4];
    CHECK_EQ(tstore_list(s, "alice", 0, out, 4, &n, &more, &why), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(more, 0);
    tstore_free(s);
}

TEST(terminal_stays_terminal)
{
    struct tstore *s = mem(5, 5, 0);
    char st[16], was[16] = "", id[40];
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(finish(s, 1, "alice", "completed", 60000), 0);
    snprintf(id, sizeof id, "%032x", 1);
    CHECK_EQ(tstore_cancel(s, id, "alice", was, sizeof was, &why), 2);
    CHECK_STR(was, "completed");
    CHECK_EQ(get(s, 1, "alice", st), 0);
    CHECK_STR(st, "completed");
    /* a cancel that won keeps `cancelled` when the killed run then finishes,
     * and the run's result is still kept */
    CHECK_EQ(create(s, 2, "alice"), 0);
    snprintf(id, sizeof id, "%032x", 2);
    CHECK_EQ(tstore_cancel(s, id, "alice", was, sizeof was, &why), 0);
    CHECK_EQ(tstore_cancelled(s, id, &why), 1);
    CHECK_EQ(finish(s, 2, "alice", "completed", 60000), 0);
    struct trec r;
    CHECK_EQ(tstore_get(s, id, "alice", &r, &why), 0);
    CHECK_STR(r.status, "cancelled");
    CHECK_STR(r.result, "{\"content\":[]}");
    trec_cleanup(&r);
    CHECK_EQ(tstore_cancel(s, id, "alice", was, sizeof was, &why), 2);
    CHECK_STR(was, "cancelled");
    tstore_free(s);
}

TEST(client_isolation)
{
    struct tstore *s = mem(5, 5, 0);
    char was[16] = "", id[40];
    CHECK_EQ(create(s, 1, "alice"), 0);
    CHECK_EQ(create(s, 2, "bob"), 0);
    snprintf(id, sizeof id, "%032x", 1);
    CHECK_EQ(get(s, 1, "bob", NULL), 1);        /* alice's task is not bob's to read */
    CHECK_EQ(tstore_cancel(s, id, "bob", was, sizeof was, &why), 1);
    CHECK_EQ(get(s, 1, "alice", NULL), 0);
    CHECK_EQ(tstore_cancelled(s, id, &why), 0);  /* bob's cancel did nothing */
    struct trec out[4];
    size_t n = 0;
    int more = 0;
    CHECK_EQ(tstore_list(s, "bob", 0, out, 4, &n, &more, &why), 0);
    CHECK_EQ(n, 1);
    CHECK_STR(out[0].client, "bob");
    CHECK(out[0].result == NULL);
    /* a malformed id is no task, not an error */
    CHECK_EQ(tstore_get(s, "../x", "alice", &out[0], &why), 1);
    tstore_free(s);
}

TEST(list_pages_in_creation_order)
{
    struct tstore *s = mem(10, 10, 0);
    for (int i = 1; i <= 5; i++)
        CHECK_EQ(create(s, i, "alice"), 0);
    struct trec out[2];
    size_t n = 0;
    int more = 0;
    CHECK_EQ(tstore_list(s, "alice", 0, out, 2, &n, &more, &why), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(more, 1);
    CHECK_EQ(strtol(out[0].id, NULL, 16), 1);
    CHECK_EQ(strtol(out[1].id, NULL, 16), 2);
    CHECK_EQ(tstore_list(s, "alice", 4, out, 2, &n, &more, &why), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(more, 0);
    CHECK_EQ(strtol(out[0].id, NULL, 16), 5);
    tstore_free(s);
}

TEST(redis_url_checked)
{
    CHECK_EQ(tstore_redis_url_ok("redis://127.0.0.1:6379/2"), 0);
    CHECK_EQ(tstore_redis_url_ok("redis://:pw@host"), 0);
    CHECK_EQ(tstore_redis_url_ok("http://host"), -1);
    CHECK_EQ(tstore_redis_url_ok("redis://host:0"), -1);
    CHECK_EQ(tstore_redis_url_ok("redis://host/x"), -1);
    struct tstore_cfg c = {.max_live = 1, .max_records = 1};
    CHECK(tstore_redis_new(&c, "redis://") == NULL);
}

/* A port on 127.0.0.1 that nothing listens on: bound, read, closed. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* Every op of a store that cannot reach Redis answers -1, and its words name
 * the server and the reason: they reach the client after "tasks unavailable: ". */
TEST(redis_unreachable_says_where)
{
    int port = dead_port();
    CHECK(port > 0);
    char url[64], want[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    snprintf(want, sizeof want, "redis at 127.0.0.1:%d: ", port);
    struct tstore_cfg c = {.max_live = 1, .max_records = 1, .run_ms = 1000, .owner = "test"};
    struct tstore *s = tstore_redis_new(&c, url);
    CHECK(s != NULL);
    memset(&why, 0, sizeof why);
    CHECK_EQ(create(s, 1, "alice"), -1);
    CHECK_EQ(strncmp(why.msg, want, strlen(want)), 0);
    CHECK(strlen(why.msg) > strlen(want));      /* and the reason after it */
    CHECK_EQ(why.line, 0);
    memset(&why, 0, sizeof why);
    char id[40];
    snprintf(id, sizeof id, "%032x", 1);
    CHECK_EQ(tstore_cancelled(s, id, &why), -1);
    CHECK_EQ(strncmp(why.msg, want, strlen(want)), 0);
    tstore_free(s);
}

int main(void)
{
    RUN(live_cap_per_client);
    RUN(record_cap_recycles_own_oldest_finished);
    RUN(record_cap_all_working_refused);
    RUN(store_full_of_working_is_an_error);
    RUN(ttl_expiry);
    RUN(terminal_stays_terminal);
    RUN(client_isolation);
    RUN(list_pages_in_creation_order);
    RUN(redis_url_checked);
    RUN(redis_unreachable_says_where);
    DONE();
}
