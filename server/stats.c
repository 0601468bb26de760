/*
 * stats.c - see stats.h. Bucket i covers latencies up to 2^(i/4) us.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

#include "util.h"

#include <stdio.h>
#include <string.h>

static const char *const method_names[STATS_METHODS] = {
    "initialize", "ping", "logging/setLevel", "server/discover", "tools/list", "tools/call",
    "resources/list", "resources/templates/list", "resources/read", "prompts/list",
    "prompts/get", "skills/list", "skills/get", "resources/directory/read", "notification",
    "other",
};
static const char *const status_names[STATS_STATUS] = {"200", "202", "400", "403_404_405",
                                                       "406_413_415", "5xx"};

/* This thread's copy of the counters, drawn on first use. */
static _Thread_local int my_shard = -1;

static unsigned shard_of(const struct stats *st)
{
    if (my_shard < 0)
        my_shard = (int)(atomic_fetch_add(st->next_shard, 1) % STATS_SHARDS);
    return (unsigned)my_shard;
}

/* The counter p (in shard 0) in this thread's shard. */
#define MINE(st, p) ((__typeof__(p))((uintptr_t)(p) + shard_of(st) * (st)->shard_size))

/* The counter p (in shard 0) summed over the shards. */
static uint64_t sum(const struct stats *st, const atomic_uint_fast64_t *p)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < STATS_SHARDS; k++)
        v += atomic_load_explicit(
            (const atomic_uint_fast64_t *)((uintptr_t)p + k * st->shard_size),
            memory_order_relaxed);
    return v;
}

static unsigned status_slot(unsigned s)
{
    return s == 200 ? 0 : s == 202 ? 1 : s == 400 ? 2 : (s >= 403 && s <= 405) ? 3
           : s >= 500 ? 5 : 4;
}

/* The slot named name in a table of n slots (stride bytes apart, each
 * starting with its stats_name), claimed on first use (lock-free, across
 * processes); past 16 probes, the slot after the table ("other"). */
static struct stats_name *named_slot(void *table, size_t stride, unsigned n, const char *name)
{
    uint32_t h = hash_fnv1a32(name, strlen(name));
    for (unsigned probe = 0; probe < 16; probe++) {
        struct stats_name *k = (struct stats_name *)((char *)table + ((h + probe) % n) * stride);
        int state = atomic_load(&k->state);
        if (state == 0) {
            int expect = 0;
            if (atomic_compare_exchange_strong(&k->state, &expect, 1)) {
                snprintf(k->name, sizeof k->name, "%s", name);
                atomic_store(&k->state, 2);
                return k;
            }
            state = expect;
        }
        while (state == 1)      /* another thread is writing the name */
            state = atomic_load(&k->state);
        if (!strncmp(k->name, name, sizeof k->name - 1))
            return k;
    }
    return (struct stats_name *)((char *)table + n * stride);
}

static struct stats_skill *skill_slot(struct stats *st, const char *name)
{
    return (struct stats_skill *)named_slot(st->skills, sizeof *st->skills, STATS_SKILLS, name);
}

void stats_redacted(struct stats *st, const char *name, uint64_t n)
{
    if (!st->redact || !name || !n)
        return;
    if (!strncmp(name, "env:", 4))
        name = "env";
    struct stats_redact *r =
        (struct stats_redact *)named_slot(st->redact, sizeof *st->redact, STATS_REDACT, name);
    atomic_fetch_add_explicit(MINE(st, &r->n), n, memory_order_relaxed);
}

void stats_skill(struct stats *st, const char *skill, enum stats_use use, int is_error)
{
    if (!st->skills || !skill)
        return;
    struct stats_skill *k = skill_slot(st, skill);
    atomic_fetch_add_explicit(MINE(st, use == STATS_USE_SCRIPT ? &k->scripts : &k->calls), 1,
                              memory_order_relaxed);
    if (is_error)
        atomic_fetch_add_explicit(MINE(st, &k->errors), 1, memory_order_relaxed);
}

json_t *stats_skills_json(const struct stats *st)
{
    json_t *o = json_object();
    for (unsigned i = 0; i <= STATS_SKILLS; i++) {
        const struct stats_skill *k = &st->skills[i];
        uint64_t c = sum(st, &k->calls), e = sum(st, &k->errors), sc = sum(st, &k->scripts);
        if (atomic_load(&k->id.state) != 2 || (!c && !sc && !e))
            continue;
        json_object_set_new(o, k->id.name,
                            json_pack("{s:I, s:I, s:I}", "calls", (json_int_t)c, "errors",
                                      (json_int_t)e, "scripts", (json_int_t)sc));
    }
    return o;
}

void stats_request(struct stats *st, const char *method, unsigned http_status)
{
    /* The method is one of mcp.c's static names: the one this thread saw
     * last is known by its address, the others by a search (the first byte
     * first: a call of strcmp per name was most of this). */
    static _Thread_local const char *last;
    static _Thread_local unsigned last_m;
    unsigned m = STATS_METHODS - 1;
    if (!method && http_status == 202)
        m = STATS_METHODS - 2;
    if (method && method == last) {
        m = last_m;
    } else if (method) {
        for (unsigned i = 0; i < STATS_METHODS - 2; i++)
            if (method[0] == method_names[i][0] && !strcmp(method, method_names[i])) {
                m = i;
                break;
            }
        last = method;
        last_m = m;
    }
    atomic_fetch_add_explicit(MINE(st, &st->requests[m][status_slot(http_status)]), 1,
                              memory_order_relaxed);
}

void stats_prometheus(const struct stats *st, struct buf *b)
{
    buf_puts(b, "# HELP skill_mcp_requests_total MCP requests answered, by JSON-RPC method and "
                "HTTP status.\n# TYPE skill_mcp_requests_total counter\n");
    for (unsigned m = 0; m < STATS_METHODS; m++)
        for (unsigned s = 0; s < STATS_STATUS; s++) {
            uint64_t v = sum(st, &st->requests[m][s]);
            if (v)
                buf_printf(b, "skill_mcp_requests_total{method=\"%s\",status=\"%s\"} %llu\n",
                           method_names[m], status_names[s], (unsigned long long)v);
        }
    buf_puts(b, "# HELP skill_mcp_skill_uses_total Uses of each skill (at most 256 named, the "
                "rest as other), by kind: call (load/read), script, error.\n"
                "# TYPE skill_mcp_skill_uses_total counter\n");
    for (unsigned i = 0; i <= STATS_SKILLS; i++) {
        const struct stats_skill *k = &st->skills[i];
        if (atomic_load(&k->id.state) != 2)
            continue;
        uint64_t v[3] = {sum(st, &k->calls), sum(st, &k->scripts), sum(st, &k->errors)};
        static const char *const kind[3] = {"call", "script", "error"};
        for (int j = 0; j < 3; j++)
            if (v[j])
                buf_printf(b, "skill_mcp_skill_uses_total{skill=\"%s\",kind=\"%s\"} %llu\n",
                           k->id.name, kind[j], (unsigned long long)v[j]);
    }
    buf_puts(b, "# HELP skill_mcp_redactions_total Secrets replaced in what reaches the model, "
                "by pattern (env: values the server passed to the script).\n"
                "# TYPE skill_mcp_redactions_total counter\n");
    for (unsigned i = 0; i <= STATS_REDACT; i++) {
        const struct stats_redact *r = &st->redact[i];
        uint64_t v = sum(st, &r->n);
        if (atomic_load(&r->id.state) == 2 && v)
            buf_printf(b, "skill_mcp_redactions_total{pattern=\"%s\"} %llu\n", r->id.name,
                       (unsigned long long)v);
    }
    buf_puts(b, "# HELP skill_mcp_tool_calls_total Tool calls, by tool and outcome.\n"
                "# TYPE skill_mcp_tool_calls_total counter\n");
    for (size_t t = 0; t < st->ntools; t++) {
        uint64_t calls = sum(st, &st->tools[t].calls), errs = sum(st, &st->tools[t].errors);
        buf_printf(b, "skill_mcp_tool_calls_total{tool=\"%s\",outcome=\"ok\"} %llu\n",
                   st->names[t], (unsigned long long)(calls - errs));
        buf_printf(b, "skill_mcp_tool_calls_total{tool=\"%s\",outcome=\"error\"} %llu\n",
                   st->names[t], (unsigned long long)errs);
    }
    buf_puts(b, "# HELP skill_mcp_tool_duration_seconds Tool call latency (scripts: until the "
                "answer).\n# TYPE skill_mcp_tool_duration_seconds histogram\n");
    for (size_t t = 0; t < st->ntools; t++) {
        uint64_t cum = 0;
        double sum_est = 0;
        /* Export every 4th boundary: the powers of two of microseconds. */
        for (unsigned i = 0; i < STATS_BUCKETS; i++) {
            uint64_t v = sum(st, &st->tools[t].b[i]);
            cum += v;
            sum_est += (double)v * pow(2.0, i / 4.0) / 1e6;
            if (i % 4 == 0)
                buf_printf(b, "skill_mcp_tool_duration_seconds_bucket{tool=\"%s\",le=\"%g\"} "
                              "%llu\n",
                           st->names[t], pow(2.0, i / 4.0) / 1e6, (unsigned long long)cum);
        }
        buf_printf(b, "skill_mcp_tool_duration_seconds_bucket{tool=\"%s\",le=\"+Inf\"} %llu\n",
                   st->names[t], (unsigned long long)cum);
        buf_printf(b, "skill_mcp_tool_duration_seconds_sum{tool=\"%s\"} %g\n", st->names[t],
                   sum_est);
        buf_printf(b, "skill_mcp_tool_duration_seconds_count{tool=\"%s\"} %llu\n", st->names[t],
                   (unsigned long long)cum);
    }
}

void stats_init(struct stats *st, const char *const *names, size_t n)
{
    size_t tools = n * sizeof *st->tools;
    size_t reqs = sizeof(atomic_uint_fast64_t[STATS_METHODS][STATS_STATUS]);
    size_t skills = (STATS_SKILLS + 1) * sizeof(struct stats_skill);
    size_t redact = (STATS_REDACT + 1) * sizeof(struct stats_redact);
    /* Whole cache lines, so no two shards share one. */
    st->shard_size = (tools + reqs + skills + redact + 63) & ~(size_t)63;
    st->shared_size = STATS_SHARDS * st->shard_size + 64;
    char *mem = x_shared_alloc(st->shared_size);
    st->next_shard = (atomic_uint *)(void *)(mem + STATS_SHARDS * st->shard_size);
    st->tools = (struct stats_hist *)mem;
    st->requests = (atomic_uint_fast64_t(*)[STATS_STATUS])(mem + tools);
    st->skills = (struct stats_skill *)(mem + tools + reqs);
    st->redact = (struct stats_redact *)(mem + tools + reqs + skills);
    snprintf(st->skills[STATS_SKILLS].id.name, sizeof st->skills[STATS_SKILLS].id.name, "other");
    atomic_store(&st->skills[STATS_SKILLS].id.state, 2);
    snprintf(st->redact[STATS_REDACT].id.name, sizeof st->redact[STATS_REDACT].id.name, "other");
    atomic_store(&st->redact[STATS_REDACT].id.state, 2);
    st->names = names;
    st->ntools = n;
    st->started_ns = now_ns();
}

void stats_cleanup(struct stats *st)
{
    x_shared_free(st->tools, st->shared_size);
    st->tools = NULL;
    st->requests = NULL;
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
    struct stats_hist *h = MINE(st, &st->tools[tool]);
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
            b[i] = sum(st, &h->b[i]);
            total += b[i];
        }
        json_object_set_new(
            o, st->names[t],
            json_pack("{s:I, s:I, s:f, s:f, s:f}", "calls",
                      (json_int_t)sum(st, &h->calls), "errors",
                      (json_int_t)sum(st, &h->errors), "p50_ms", pct_ms(b, total, 0.50),
                      "p95_ms", pct_ms(b, total, 0.95), "p99_ms", pct_ms(b, total, 0.99)));
    }
    return o;
}
