/*
 * test_session.c - the --stateful session table (server/session.c): ids,
 * lookup by client, levels, DELETE, idle expiry, eviction when full, and
 * a table that keeps working through heavy churn.
 */
#include "harness.h"
#include "session.h"

#include <pthread.h>
#include <time.h>

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

TEST(ids_are_random_visible_hex)
{
    struct session_table *t = session_new(8, 60);
    char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1];
    CHECK_EQ(session_create(t, NULL, a), 0);
    CHECK_EQ(session_create(t, NULL, b), 0);
    CHECK_EQ(strlen(a), SESSION_ID_LEN);
    for (size_t i = 0; i < SESSION_ID_LEN; i++)
        CHECK((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
    CHECK(strcmp(a, b) != 0);
    session_free(t);
}

TEST(touch_level_end)
{
    struct session_table *t = session_new(8, 60);
    char id[SESSION_ID_LEN + 1];
    int level = 99;
    CHECK_EQ(session_create(t, NULL, id), 0);
    CHECK_EQ(session_touch(t, id, NULL, &level), 1);
    CHECK_EQ(level, SESSION_LEVEL_NONE);
    CHECK_EQ(session_set_level(t, id, NULL, SESSION_LEVEL_WARNING), 1);
    CHECK_EQ(session_touch(t, id, NULL, &level), 1);
    CHECK_EQ(level, SESSION_LEVEL_WARNING);
    CHECK_EQ(session_end(t, id, NULL), 1);
    CHECK_EQ(session_touch(t, id, NULL, &level), 0);
    CHECK_EQ(session_end(t, id, NULL), 0);
    CHECK_EQ(session_set_level(t, id, NULL, SESSION_LEVEL_DEBUG), 0);
    struct session_counts c;
    session_counts(t, &c);
    CHECK_EQ(c.live, 0);
    CHECK_EQ(c.created, 1);
    CHECK_EQ(c.ended, 1);
    session_free(t);
}

TEST(bad_and_foreign_ids)
{
    struct session_table *t = session_new(8, 60);
    char id[SESSION_ID_LEN + 1];
    CHECK_EQ(session_create(t, "alice", id), 0);
    CHECK_EQ(session_touch(t, id, "alice", NULL), 1);
    CHECK_EQ(session_touch(t, id, "bob", NULL), 0);      /* another client's id */
    CHECK_EQ(session_touch(t, id, NULL, NULL), 0);
    CHECK_EQ(session_end(t, id, "bob"), 0);
    CHECK_EQ(session_touch(t, id, "alice", NULL), 1);    /* still alive */
    char upper[SESSION_ID_LEN + 1];
    for (size_t i = 0; i <= SESSION_ID_LEN; i++)
        upper[i] = (char)((id[i] >= 'a' && id[i] <= 'f') ? id[i] - 32 : id[i]);
    int has_letter = strcmp(upper, id) != 0;
    if (has_letter)
        CHECK_EQ(session_touch(t, upper, "alice", NULL), 0);
    CHECK_EQ(session_touch(t, "", "alice", NULL), 0);
    CHECK_EQ(session_touch(t, "zz", "alice", NULL), 0);
    char longer[SESSION_ID_LEN + 2];
    snprintf(longer, sizeof longer, "%s0", id);
    CHECK_EQ(session_touch(t, longer, "alice", NULL), 0);
    CHECK_EQ(session_touch(t, "../../../etc/passwd-but-longer-than-32-bytes", "alice", NULL), 0);
    session_free(t);
}

TEST(level_names)
{
    CHECK_EQ(session_level_of("debug"), SESSION_LEVEL_DEBUG);
    CHECK_EQ(session_level_of("info"), SESSION_LEVEL_INFO);
    CHECK_EQ(session_level_of("emergency"), SESSION_LEVEL_EMERGENCY);
    CHECK_EQ(session_level_of("INFO"), SESSION_LEVEL_NONE);
    CHECK_EQ(session_level_of("warn"), SESSION_LEVEL_NONE);
    CHECK_EQ(session_level_of(NULL), SESSION_LEVEL_NONE);
}

TEST(idle_expiry)
{
    struct session_table *t = session_new(8, 1);
    char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1];
    CHECK_EQ(session_create(t, NULL, a), 0);
    CHECK_EQ(session_create(t, NULL, b), 0);
    /* b is used every 400 ms and stays; a is left alone and goes. */
    for (int i = 0; i < 4; i++) {
        nap_ms(400);
        CHECK_EQ(session_touch(t, b, NULL, NULL), 1);
    }
    CHECK_EQ(session_touch(t, a, NULL, NULL), 0);
    struct session_counts c;
    session_counts(t, &c);
    CHECK_EQ(c.expired, 1);
    CHECK_EQ(c.live, 1);
    nap_ms(1300);
    session_sweep(t);
    session_counts(t, &c);
    CHECK_EQ(c.live, 0);
    CHECK_EQ(c.expired, 2);
    session_free(t);
}

TEST(full_table_evicts_least_recently_used)
{
    enum { CAP = 4 };
    struct session_table *t = session_new(CAP, 60);
    char ids[CAP + 1][SESSION_ID_LEN + 1];
    for (int i = 0; i < CAP; i++) {
        CHECK_EQ(session_create(t, NULL, ids[i]), 0);
        nap_ms(2);
    }
    /* ids[0] is the oldest, but used now: ids[1] is the least recently used. */
    CHECK_EQ(session_touch(t, ids[0], NULL, NULL), 1);
    CHECK_EQ(session_create(t, NULL, ids[CAP]), 0);
    CHECK_EQ(session_touch(t, ids[1], NULL, NULL), 0);
    CHECK_EQ(session_touch(t, ids[0], NULL, NULL), 1);
    for (int i = 2; i <= CAP; i++)
        CHECK_EQ(session_touch(t, ids[i], NULL, NULL), 1);
    struct session_counts c;
    session_counts(t, &c);
    CHECK_EQ(c.live, CAP);
    CHECK_EQ(c.evicted, 1);
    session_free(t);
}

/* Thousands of creates and ends through a small table: every live id is
 * still found after the shifts that removals make. */
TEST(churn_keeps_every_live_id)
{
    enum { CAP = 64, ROUNDS = 20000 };
    struct session_table *t = session_new(CAP, 600);
    static char live[CAP][SESSION_ID_LEN + 1];
    int n = 0;
    unsigned seed = 7;
    for (int r = 0; r < ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        if (n < CAP && (n == 0 || (seed >> 16) % 3)) {
            CHECK_EQ(session_create(t, NULL, live[n]), 0);
            n++;
        } else {
            int k = (int)((seed >> 8) % (unsigned)n);
            CHECK_EQ(session_end(t, live[k], NULL), 1);
            memcpy(live[k], live[n - 1], sizeof live[k]);
            n--;
        }
        if (r % 997 == 0)
            for (int i = 0; i < n; i++)
                CHECK_EQ(session_touch(t, live[i], NULL, NULL), 1);
    }
    for (int i = 0; i < n; i++)
        CHECK_EQ(session_touch(t, live[i], NULL, NULL), 1);
    struct session_counts c;
    session_counts(t, &c);
    CHECK_EQ(c.live, (size_t)n);
    CHECK_EQ(c.evicted, 0);
    session_free(t);
}

static struct session_table *shared;

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        char id[SESSION_ID_LEN + 1];
        if (session_create(shared, NULL, id) < 0 || !session_touch(shared, id, NULL, NULL))
            return (void *)1;
        session_end(shared, id, NULL);     /* may already be evicted by another thread */
    }
    return NULL;
}

TEST(threads)
{
    shared = session_new(16, 60);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        bad += rv != NULL;
    }
    CHECK_EQ(bad, 0);
    struct session_counts c;
    session_counts(shared, &c);
    CHECK_EQ(c.created, 8000);
    CHECK_EQ(c.live, 0);
    session_free(shared);
}

/* One session touched from many threads at once (one client's concurrent
 * requests): a touch that read the clock before another thread's touch
 * took the lock must not find the session "idle" for a negative time. */
static char one_id[SESSION_ID_LEN + 1];

static void *toucher(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++)
        if (!session_touch(shared, one_id, NULL, NULL))
            return (void *)1;
    return NULL;
}

TEST(one_session_touched_from_threads)
{
    shared = session_new(16, 1800);
    CHECK_EQ(session_create(shared, NULL, one_id), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, toucher, NULL);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        bad += rv != NULL;
    }
    struct session_counts c;
    session_counts(shared, &c);
    session_free(shared);
    CHECK_EQ(bad, 0);
    CHECK_EQ(c.expired, 0);
    CHECK_EQ(c.live, 1);
}

int main(void)
{
    RUN(ids_are_random_visible_hex);
    RUN(touch_level_end);
    RUN(bad_and_foreign_ids);
    RUN(level_names);
    RUN(idle_expiry);
    RUN(full_table_evicts_least_recently_used);
    RUN(churn_keeps_every_live_id);
    RUN(threads);
    RUN(one_session_touched_from_threads);
    DONE();
}
