/*
 * stats.c - see stats.h. Bucket i covers latencies up to 2^(i/4) us.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

#include "util.h"

void stats_init(struct stats *st, const char *const *names, size_t n)
{
    st->tools = xcalloc(n, sizeof *st->tools);
    st->names = names;
    st->ntools = n;
    st->started_ns = now_ns();
}

void stats_cleanup(struct stats *st)
{
    free(st->tools);
    st->tools = NULL;
}

static unsigned bucket_of(uint64_t ns)
{
    double us = (double)ns / 1000.0;
    if (us <= 1.0)
        return 0;
    unsigned i = (unsigned)ceil(log2(us) * 4.0);
    return i >= STATS_BUCKETS ? STATS_BUCKETS - 1 : i;
}

void stats_record(struct stats *st, size_t tool, uint64_t ns, int is_error)
{
    if (tool >= st->ntools)
        return;
    struct stats_hist *h = &st->tools[tool];
    atomic_fetch_add_explicit(&h->calls, 1, memory_order_relaxed);
    if (is_error)
        atomic_fetch_add_explicit(&h->errors, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->b[bucket_of(ns)], 1, memory_order_relaxed);
}

static double pct_ms(const uint64_t *b, uint64_t total, double q)
{
    if (!total)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)total), seen = 0;
    for (unsigned i = 0; i < STATS_BUCKETS; i++) {
        seen += b[i];
        if (seen >= rank)
            return pow(2.0, i / 4.0) / 1000.0;
    }
    return pow(2.0, (STATS_BUCKETS - 1) / 4.0) / 1000.0;
}

json_t *stats_tools_json(const struct stats *st)
{
    json_t *o = json_object();
    for (size_t t = 0; t < st->ntools; t++) {
        const struct stats_hist *h = &st->tools[t];
        uint64_t b[STATS_BUCKETS], total = 0;
        for (unsigned i = 0; i < STATS_BUCKETS; i++) {
            b[i] = atomic_load_explicit(&h->b[i], memory_order_relaxed);
            total += b[i];
        }
        json_object_set_new(
            o, st->names[t],
            json_pack("{s:I, s:I, s:f, s:f, s:f}", "calls",
                      (json_int_t)atomic_load(&h->calls), "errors",
                      (json_int_t)atomic_load(&h->errors), "p50_ms", pct_ms(b, total, 0.50),
                      "p95_ms", pct_ms(b, total, 0.95), "p99_ms", pct_ms(b, total, 0.99)));
    }
    return o;
}
