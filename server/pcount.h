/*
 * pcount.h - a count of things in flight kept in one padded copy per thread
 * (readers sum the copies): the +1 and -1 of every request would otherwise
 * pass one cache line between the cores of the threads that serve them.
 *
 * Each thing is counted out of the copy it was counted into (pcount_inc
 * returns it), whatever thread ends it, so no copy goes below zero and a
 * sum is never negative. The sum is not one instant's total: each copy is
 * read at its own moment. What it does promise is what a drain needs:
 * anything in flight for the whole of a pcount_sum is in it, and when a sum
 * reads 0, everything that was counted out before the read began did all it
 * did before its pcount_dec (release, read by acquire loads).
 */
#ifndef SKILL_PCOUNT_H
#define SKILL_PCOUNT_H

#include <stdatomic.h>

#define PCOUNT_SHARDS 8     /* threads past this share a copy */

struct pcount {
    struct {
        _Alignas(64) atomic_long v;
    } s[PCOUNT_SHARDS];
};

/* A zeroed count, aligned for its copies (abort when out of memory). */
struct pcount *pcount_new(void);
void pcount_free(struct pcount *c);

/* Any thread: one more, in this thread's copy; returns the copy, for
 * pcount_dec. */
int pcount_inc(struct pcount *c);
/* Any thread: one fewer in copy shard (what pcount_inc returned). */
void pcount_dec(struct pcount *c, int shard);
/* Any thread: the copies summed. */
long pcount_sum(const struct pcount *c);

#endif
