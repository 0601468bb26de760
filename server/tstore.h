/*
 * tstore.h - where task records live: one interface, two stores.
 *
 *   tstore_mem.c    process memory (one worker): a list under a mutex
 *   tstore_redis.c  Redis (several workers or instances), through hiredis,
 *                   multi-key changes as Lua scripts so they are atomic
 *
 * tasks.c owns the protocol (ids, envelopes, waits, the live runs) and
 * calls a store only through the ops below, so both keep the same rules:
 *   - a client has at most max_live working tasks (create answers 1);
 *   - a quota (the client, or its address without authentication) keeps at
 *     most max_records records: at the bound its own oldest finished record
 *     is dropped, never another quota's; all of them working answers 2;
 *   - a finished record expires ttl ms after it finished;
 *   - a terminal record never changes status again (finish keeps a
 *     cancel's `cancelled`; cancel of a terminal task answers 2);
 *   - records are read, listed and cancelled only by their own client.
 *
 * Threads: every op may be called from any thread at once.
 */
#ifndef SKILL_TSTORE_H
#define SKILL_TSTORE_H

#include <stddef.h>
#include <stdint.h>

struct err;

/* A task record. */
struct trec {
    char id[40];                    /* 32 hex digits */
    char client[80];
    char quota[80];
    char status[16];                /* working completed tool_error failed cancelled */
    char msg[400];
    int64_t created, updated, ttl;  /* ms since the epoch; ttl in ms */
    char owner[96];
    char rid[40];
    char skill[256];                /* the qualified name of the skill run, or "" */
    char *result;                   /* CallToolResult JSON, or NULL */
};

void trec_cleanup(struct trec *r);

struct tstore_cfg {
    int max_live;           /* working tasks per client */
    int max_records;        /* records kept per quota */
    size_t max_total;       /* memory store: records at most (0: 10000) */
    int64_t run_ms;         /* the longest a run may take (a working Redis record's life) */
    const char *owner;      /* this worker, as records name their owner */
    int64_t (*now_ms)(void);    /* the wall clock in ms; NULL: the real one (tests set it) */
};

struct tstore;

/*
 * Every op returning int answers -1 on a store error, with *why set (NULL:
 * the caller does not want the words).
 * Records read out (get, list) are copies: trec_cleanup each.
 */
struct tstore_ops {
    /* 0 created, 1 the client is at max_live working tasks, 2 its quota
     * keeps max_records records all working. */
    int (*create)(struct tstore *s, const struct trec *r, struct err *why);
    /* Ends a working record (a terminal one keeps its status), keeps result
     * (may be NULL) and lets the record expire ttl ms from now. 0. */
    int (*finish)(struct tstore *s, const char *id, const char *client, const char *status,
                  const char *msg, const char *result, int64_t ttl, struct err *why);
    /* 0 found, 1 no such task for client (or expired). A working task whose
     * owner is gone reads (and is stored) as failed. */
    int (*get)(struct tstore *s, const char *id, const char *client, struct trec *r,
               struct err *why);
    /* 0 cancelled now, 1 no such task for client, 2 already terminal
     * (*was gets its status). */
    int (*cancel)(struct tstore *s, const char *id, const char *client, char *was, size_t wasl,
                  struct err *why);
    /* Up to cap records of client from offset, oldest first, without their
     * results; *more when others follow. 0. */
    int (*list)(struct tstore *s, const char *client, size_t offset, struct trec *out,
                size_t cap, size_t *n, int *more, struct err *why);
    /* 1 when task id's record says cancelled (another process may have
     * cancelled it), 0 not, -1 error. */
    int (*cancelled)(struct tstore *s, const char *id, struct err *why);
    /* Upkeep, on the tasks thread every tick: expiry, the owner heartbeat. */
    void (*tick)(struct tstore *s);
    void (*free)(struct tstore *s);
};

/* The head of every store. */
struct tstore {
    const struct tstore_ops *ops;
    int shared;             /* other processes read and write the same records */
};

/* A memory store. Never NULL. */
struct tstore *tstore_mem_new(const struct tstore_cfg *cfg);

/*
 * A Redis store for url (redis://[:PASSWORD@]HOST[:PORT][/DB]), or NULL when
 * the URL does not parse. A server that does not answer yet is logged, and
 * every op reports it until it answers.
 */
struct tstore *tstore_redis_new(const struct tstore_cfg *cfg, const char *url);
/* 0 when url parses as tstore_redis_new wants it, else -1. */
int tstore_redis_url_ok(const char *url);

static inline int tstore_create(struct tstore *s, const struct trec *r, struct err *why)
{
    return s->ops->create(s, r, why);
}

static inline int tstore_finish(struct tstore *s, const char *id, const char *client,
                                const char *status, const char *msg, const char *result,
                                int64_t ttl, struct err *why)
{
    return s->ops->finish(s, id, client, status, msg, result, ttl, why);
}

static inline int tstore_get(struct tstore *s, const char *id, const char *client,
                             struct trec *r, struct err *why)
{
    return s->ops->get(s, id, client, r, why);
}

static inline int tstore_cancel(struct tstore *s, const char *id, const char *client, char *was,
                                size_t wasl, struct err *why)
{
    return s->ops->cancel(s, id, client, was, wasl, why);
}

static inline int tstore_list(struct tstore *s, const char *client, size_t offset,
                              struct trec *out, size_t cap, size_t *n, int *more, struct err *why)
{
    return s->ops->list(s, client, offset, out, cap, n, more, why);
}

static inline int tstore_cancelled(struct tstore *s, const char *id, struct err *why)
{
    return s->ops->cancelled(s, id, why);
}

static inline void tstore_tick(struct tstore *s)
{
    s->ops->tick(s);
}

static inline void tstore_free(struct tstore *s)
{
    if (s)
        s->ops->free(s);
}

/* Shared by the stores: a well-formed id, and the message of a cancelled
 * record (a cancel must read the same from either store). */
int tstore_id_ok(const char *id);
extern const char tstore_cancelled_msg[];

#endif
