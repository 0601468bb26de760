/*
 * tstore_mem.c - task records in process memory (one worker): a list in
 * creation order under one mutex. Expired records are swept on every op
 * and every tick. See tstore.h for the rules.
 */
#include "tstore.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MEM_MAX_TASKS 10000     /* records kept at most, by default */

/* One record. */
struct mtask {
    struct trec r;
    int64_t expires;            /* ms since the epoch; 0 while working */
    struct mtask *next;
};

struct mstore {
    struct tstore base;
    struct tstore_cfg cfg;
    pthread_mutex_t mu;
    struct mtask *mem, **mem_tail;  /* oldest first */
    size_t nmem;
};


static int64_t now(const struct mstore *t)
{
    return t->cfg.now_ms ? t->cfg.now_ms() : now_wall_ms();
}

static struct mtask *mem_find(struct mstore *t, const char *id)
{
    for (struct mtask *m = t->mem; m; m = m->next)
        if (!strcmp(m->r.id, id))
            return m;
    return NULL;
}

static void mem_drop(struct mstore *t, struct mtask **pp)
{
    struct mtask *m = *pp;
    *pp = m->next;
    if (t->mem_tail == &m->next)
        t->mem_tail = pp;
    trec_cleanup(&m->r);
    free(m);
    t->nmem--;
}

static void mem_sweep(struct mstore *t, int64_t at)
{
    for (struct mtask **pp = &t->mem; *pp;)
        if ((*pp)->expires && (*pp)->expires <= at)
            mem_drop(t, pp);
        else
            pp = &(*pp)->next;
}

/* Drops the oldest finished record (of quota, or of anyone when NULL):
 * 0, or -1 when every such record is still working. */
static int mem_evict_oldest(struct mstore *t, const char *quota)
{
    for (struct mtask **pp = &t->mem; *pp; pp = &(*pp)->next)
        if ((!quota || !strcmp((*pp)->r.quota, quota)) && (*pp)->expires) {
            mem_drop(t, pp);
            return 0;
        }
    return -1;
}

static int mem_create(struct tstore *s, const struct trec *r, struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    pthread_mutex_lock(&t->mu);
    mem_sweep(t, now(t));
    int n = 0, kept = 0;
    for (struct mtask *m = t->mem; m; m = m->next) {
        n += !strcmp(m->r.client, r->client) && !strcmp(m->r.status, "working");
        kept += !strcmp(m->r.quota, r->quota);
    }
    if (n >= t->cfg.max_live) {
        pthread_mutex_unlock(&t->mu);
        return 1;
    }
    /* A client at its bound makes room from its own oldest results; a
     * full store (many clients) from the oldest result of anyone. */
    for (; kept >= t->cfg.max_records; kept--)
        if (mem_evict_oldest(t, r->quota) < 0) {
            pthread_mutex_unlock(&t->mu);
            return 2;
        }
    if (t->nmem >= t->cfg.max_total && mem_evict_oldest(t, NULL) < 0) {
        pthread_mutex_unlock(&t->mu);
        err_set(why, 0, 0, "the server keeps %zu working tasks already; try again later",
                 t->cfg.max_total);
        return -1;
    }
    struct mtask *m = xcalloc(1, sizeof *m);
    m->r = *r;
    m->r.result = r->result ? xstrdup(r->result) : NULL;
    *t->mem_tail = m;
    t->mem_tail = &m->next;
    t->nmem++;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static int mem_finish(struct tstore *s, const char *id, const char *client, const char *status,
                      const char *msg, const char *result, int64_t ttl, struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    pthread_mutex_lock(&t->mu);
    int64_t at = now(t);
    struct mtask *m = mem_find(t, id);
    if (m) {
        if (!strcmp(m->r.status, "working")) {
            snprintf(m->r.status, sizeof m->r.status, "%s", status);
            snprintf(m->r.msg, sizeof m->r.msg, "%s", msg);
            m->r.updated = at;
        }
        if (result) {
            free(m->r.result);
            m->r.result = xstrdup(result);
        }
        m->expires = at + ttl;
    }
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static int mem_get(struct tstore *s, const char *id, const char *client, struct trec *r,
                   struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    memset(r, 0, sizeof *r);
    if (!tstore_id_ok(id))
        return 1;
    pthread_mutex_lock(&t->mu);
    mem_sweep(t, now(t));
    struct mtask *m = mem_find(t, id);
    int rc = 1;
    if (m && !strcmp(m->r.client, client)) {
        *r = m->r;
        r->result = m->r.result ? xstrdup(m->r.result) : NULL;
        rc = 0;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static int mem_cancel(struct tstore *s, const char *id, const char *client, char *was,
                      size_t wasl, struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    if (!tstore_id_ok(id))
        return 1;
    pthread_mutex_lock(&t->mu);
    int64_t at = now(t);
    mem_sweep(t, at);
    struct mtask *m = mem_find(t, id);
    int rc = 1;
    if (m && !strcmp(m->r.client, client)) {
        if (strcmp(m->r.status, "working")) {
            snprintf(was, wasl, "%s", m->r.status);
            rc = 2;
        } else {
            snprintf(m->r.status, sizeof m->r.status, "cancelled");
            snprintf(m->r.msg, sizeof m->r.msg, "%s", tstore_cancelled_msg);
            m->r.updated = at;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static int mem_list(struct tstore *s, const char *client, size_t offset, struct trec *out,
                    size_t cap, size_t *n, int *more, struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    *n = 0;
    *more = 0;
    pthread_mutex_lock(&t->mu);
    mem_sweep(t, now(t));
    size_t i = 0;
    for (struct mtask *m = t->mem; m; m = m->next) {
        if (strcmp(m->r.client, client))
            continue;
        if (i >= offset && *n < cap) {
            out[*n] = m->r;
            out[*n].result = NULL;
            (*n)++;
        } else if (i >= offset) {
            *more = 1;
            break;
        }
        i++;
    }
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static int mem_cancelled(struct tstore *s, const char *id, struct err *why)
{
    struct mstore *t = (struct mstore *)s;
    pthread_mutex_lock(&t->mu);
    struct mtask *m = mem_find(t, id);
    int rc = m && !strcmp(m->r.status, "cancelled");
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static void mem_tick(struct tstore *s)
{
    struct mstore *t = (struct mstore *)s;
    pthread_mutex_lock(&t->mu);
    mem_sweep(t, now(t));
    pthread_mutex_unlock(&t->mu);
}

static void mem_free(struct tstore *s)
{
    struct mstore *t = (struct mstore *)s;
    while (t->mem) {
        struct mtask *m = t->mem;
        t->mem = m->next;
        trec_cleanup(&m->r);
        free(m);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const struct tstore_ops mem_ops = {
    .create = mem_create,
    .finish = mem_finish,
    .get = mem_get,
    .cancel = mem_cancel,
    .list = mem_list,
    .cancelled = mem_cancelled,
    .tick = mem_tick,
    .free = mem_free,
};

struct tstore *tstore_mem_new(const struct tstore_cfg *cfg)
{
    struct mstore *t = xcalloc(1, sizeof *t);
    t->base.ops = &mem_ops;
    t->cfg = *cfg;
    t->cfg.owner = NULL;        /* not kept: the caller's string */
    if (!t->cfg.max_total)
        t->cfg.max_total = MEM_MAX_TASKS;
    pthread_mutex_init(&t->mu, NULL);
    t->mem_tail = &t->mem;
    return &t->base;
}
