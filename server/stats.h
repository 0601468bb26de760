/*
 * stats.h - per-tool call counters and latency histograms.
 *
 * Lock-free: every counter is an atomic, and a latency lands in one of a
 * fixed set of log-spaced buckets, so recording costs two atomic adds on the
 * request path. The counters are kept in STATS_SHARDS copies and each thread
 * adds into its own (readers sum them): two HTTP threads counting the same
 * call into one cache line would pass that line between cores on every
 * request. Percentiles are read off the buckets (upper bound of the
 * bucket holding the rank, so they are accurate to within ~19%).
 */
#ifndef SKILL_STATS_H
#define SKILL_STATS_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#define STATS_BUCKETS 96
#define STATS_SHARDS 8      /* threads past this share a copy (all workers' threads count) */    /* 4 per power of two, from 1 us to ~16 min */

struct stats_hist {
    atomic_uint_fast64_t calls, errors;
    atomic_uint_fast64_t b[STATS_BUCKETS];
};

/* HTTP-level outcomes by JSON-RPC method (the last slot counts the rest). */
#define STATS_METHODS 16
#define STATS_STATUS 6          /* 200, 202, 400, 403/404/405, 413/415/406, 5xx */

/* Per-skill usage: a bounded table (label cardinality stays bounded); skills
 * past it are counted as "other". */
#define STATS_SKILLS 256

/* A slot of a table keyed by name, claimed on first use. */
struct stats_name {
    atomic_int state;           /* 0 free, 1 being claimed, 2 named */
    char name[96];
};

struct stats_skill {
    struct stats_name id;
    atomic_uint_fast64_t calls, errors, scripts;
};

enum stats_use { STATS_USE_CALL, STATS_USE_SCRIPT };

/* Redactions by pattern name: a bounded table like the skills' (a redaction
 * file may name up to 200 patterns; past the table they count as "other"). */
#define STATS_REDACT 64

struct stats_redact {
    struct stats_name id;
    atomic_uint_fast64_t n;
};

/*
 * The counters live in one shared mapping made before workers are forked,
 * so every worker of an instance counts into the same numbers. The pointers
 * below are shard 0 (which alone holds the names); shard k's counter is at
 * the same offset plus k * shard_size.
 */
struct stats {
    struct stats_hist *tools;   /* one per tool, indexed as the tool table */
    atomic_uint_fast64_t (*requests)[STATS_STATUS];     /* [STATS_METHODS] */
    struct stats_skill *skills;                         /* [STATS_SKILLS + 1], last = other */
    struct stats_redact *redact;                        /* [STATS_REDACT + 1], last = other */
    size_t shared_size, shard_size;
    atomic_uint *next_shard;    /* in the mapping: threads of every worker draw from it */
    const char *const *names;
    size_t ntools;
    uint64_t started_ns;
};

/* names is borrowed for the life of st. Call before threads start and
 * before workers are forked. */
void stats_init(struct stats *st, const char *const *names, size_t n);
void stats_cleanup(struct stats *st);
/* Any thread. */
void stats_record(struct stats *st, size_t tool, uint64_t ns, int is_error);
/* New reference: {tool: {calls, errors, p50_ms, p95_ms, p99_ms}}. */
json_t *stats_tools_json(const struct stats *st);

/* Any thread or worker: one use of a skill (a load/read call, or a script
 * run), and whether it failed. */
void stats_skill(struct stats *st, const char *skill, enum stats_use use, int is_error);
/* New reference: {skill: {calls, errors, scripts}} for the skills used. */
json_t *stats_skills_json(const struct stats *st);

/* Any thread or worker: n replacements by the redaction pattern name
 * ("env:NAME" counts as "env": names chosen by callers are not labels). */
void stats_redacted(struct stats *st, const char *name, uint64_t n);

/* Any thread: one HTTP request answered (method may be NULL; else a string
 * that never changes, such as mcp.c's names: it may be known by its address). */
void stats_request(struct stats *st, const char *method, unsigned http_status);

/* Appends the Prometheus text of the counters and histograms to b. */
struct buf;
void stats_prometheus(const struct stats *st, struct buf *b);

#endif
