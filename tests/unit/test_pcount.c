/*
 * test_pcount.c - the in-flight count kept per thread: exact once the
 * threads are done, never negative, and what is in flight during a read
 * is always in the sum (the drain's check).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "pcount.h"

#define CHURNERS 12     /* more threads than copies: some share one */

static struct pcount *pc;
static atomic_int stop, held;

/* A request's life, over and over: counted in and out. */
static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200000 && !atomic_load(&stop); i++) {
        int k = pcount_inc(pc);
        pcount_dec(pc, k);
    }
    return NULL;
}

/* A long request: counted in, held until told, counted out. */
static void *hold(void *arg)
{
    int *shard = arg;
    *shard = pcount_inc(pc);
    atomic_store(&held, 1);
    while (atomic_load(&held) == 1)
        ;
    return NULL;
}

/* Counted in on one thread, out on another (a request that libmicrohttpd
 * ends from another thread): out of the copy it went into. */
static void *count_in(void *arg)
{
    *(int *)arg = pcount_inc(pc);
    return NULL;
}

TEST(churning_threads_end_at_zero)
{
    pc = pcount_new();
    pthread_t th[CHURNERS];
    for (int i = 0; i < CHURNERS; i++)
        pthread_create(&th[i], NULL, churn, NULL);
    for (int i = 0; i < CHURNERS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(pcount_sum(pc), 0);
    pcount_free(pc);
}

/* While one request is in flight and others start and end on every other
 * thread, every sum counts it, and none is negative. */
TEST(in_flight_during_a_read_is_counted)
{
    pc = pcount_new();
    atomic_store(&stop, 0);
    atomic_store(&held, 0);
    int shard = -1;
    pthread_t h, th[CHURNERS];
    pthread_create(&h, NULL, hold, &shard);
    while (!atomic_load(&held))
        ;
    for (int i = 0; i < CHURNERS; i++)
        pthread_create(&th[i], NULL, churn, NULL);
    long low = 1 << 30;
    for (int r = 0; r < 200000; r++) {
        long n = pcount_sum(pc);
        if (n < low)
            low = n;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < CHURNERS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&held, 2);
    pthread_join(h, NULL);
    CHECK(low >= 1);
    CHECK_EQ(pcount_sum(pc), 1);
    pcount_dec(pc, shard);
    CHECK_EQ(pcount_sum(pc), 0);
    pcount_free(pc);
}

/* One thread counting into its copy while another counts out of that same
 * copy, both flat out: the copy takes both sides' writes at once (a
 * request libmicrohttpd ends on another thread), so an update that is a
 * load and a store rather than one atomic step loses some of them. */
#define HAMMER 2000000
static atomic_int shard_known, go;
static int hammered;

static void *inc_many(void *arg)
{
    (void)arg;
    hammered = pcount_inc(pc);
    atomic_store(&shard_known, 1);
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < HAMMER; i++)
        pcount_inc(pc);
    return NULL;
}

static void *dec_many(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < HAMMER; i++)
        pcount_dec(pc, hammered);
    return NULL;
}

/* Several rounds: on a loaded machine the two threads may share a core for
 * most of one, and then few of their writes truly overlap. */
TEST(one_copy_written_by_two_threads_at_once)
{
    long off = 0;
    for (int round = 0; round < 8; round++) {
        pc = pcount_new();
        atomic_store(&shard_known, 0);
        atomic_store(&go, 0);
        pthread_t a, b;
        pthread_create(&a, NULL, inc_many, NULL);
        while (!atomic_load(&shard_known))
            ;
        pthread_create(&b, NULL, dec_many, NULL);
        atomic_store(&go, 1);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        if (pcount_sum(pc) != 1 || atomic_load(&pc->s[hammered].v) != 1)
            off++;
        pcount_free(pc);
    }
    CHECK_EQ(off, 0);
}

TEST(counted_out_on_another_thread)
{
    pc = pcount_new();
    int shard[4];
    for (int i = 0; i < 4; i++) {
        pthread_t t;
        pthread_create(&t, NULL, count_in, &shard[i]);
        pthread_join(t, NULL);
    }
    CHECK_EQ(pcount_sum(pc), 4);
    for (int i = 0; i < 4; i++)
        pcount_dec(pc, shard[i]);
    /* every copy back at zero, not one at +4 and another at -4 */
    for (int k = 0; k < PCOUNT_SHARDS; k++)
        CHECK_EQ(atomic_load(&pc->s[k].v), 0);
    pcount_free(pc);
}

int main(void)
{
    RUN(churning_threads_end_at_zero);
    RUN(in_flight_during_a_read_is_counted);
    RUN(counted_out_on_another_thread);
    RUN(one_copy_written_by_two_threads_at_once);
    DONE();
}
