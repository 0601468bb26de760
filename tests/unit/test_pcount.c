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
    DONE();
}
