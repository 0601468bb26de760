/*
 * pcount.c - see pcount.h.
 */
#include "pcount.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* This thread's copy, drawn on first use: consecutive threads get
 * different copies. */
static atomic_uint next_shard;
static _Thread_local int my_shard = -1;

struct pcount *pcount_new(void)
{
    /* calloc's 16-byte alignment would put two copies in one line */
    struct pcount *c = aligned_alloc(_Alignof(struct pcount), sizeof *c);
    if (!c) {
        log_error("out of memory (%zu bytes)", sizeof *c);
        abort();
    }
    memset(c, 0, sizeof *c);
    return c;
}

void pcount_free(struct pcount *c)
{
    free(c);
}

int pcount_inc(struct pcount *c)
{
    if (my_shard < 0)
        my_shard = (int)(atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
                         PCOUNT_SHARDS);
    atomic_fetch_add_explicit(&c->s[my_shard].v, 1, memory_order_relaxed);
    return my_shard;
}

void pcount_dec(struct pcount *c, int shard)
{
    atomic_fetch_sub_explicit(&c->s[shard].v, 1, memory_order_release);
}

long pcount_sum(const struct pcount *c)
{
    long n = 0;
    for (int k = 0; k < PCOUNT_SHARDS; k++)
        n += atomic_load_explicit(&c->s[k].v, memory_order_acquire);
    return n;
}
