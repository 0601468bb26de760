/*
 * session.c - the --stateful session table (see session.h).
 *
 * Open addressing with linear probing over a power-of-two array at least
 * twice the capacity, so probes stay short; removal shifts the following
 * entries back instead of leaving tombstones, so a long-running server never
 * degrades. The hash is the id's first 16 hex digits: the ids are random.
 */
#include "session.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CLIENT_MAX 64           /* AUTH_MAX_ID */

struct slot {
    int used;
    int level;
    uint64_t last_ns;
    char id[SESSION_ID_LEN + 1];
    char client[CLIENT_MAX + 1];    /* "" for an anonymous client */
    char **subs;            /* resources/subscribe: [uri, key] pairs */
    size_t nsubs;
};

struct session_table {
    pthread_mutex_t mu;
    struct slot *s;
    size_t mask, cap, live;
    uint64_t idle_ns;
    uint64_t created, ended, expired, evicted;
};

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

int session_level_of(const char *s)
{
    for (size_t i = 0; s && i < sizeof level_names / sizeof *level_names; i++)
        if (!strcmp(s, level_names[i]))
            return (int)i;
    return SESSION_LEVEL_NONE;
}

static void subs_clear(struct slot *s)
{
    for (size_t k = 0; k < 2 * s->nsubs; k++)
        free(s->subs[k]);
    free(s->subs);
    s->subs = NULL;
    s->nsubs = 0;
}

struct session_table *session_new(size_t cap, double idle_s)
{
    struct session_table *t = xcalloc(1, sizeof *t);
    size_t n = 16;
    while (n < cap * 2)
        n <<= 1;
    t->s = xcalloc(n, sizeof *t->s);
    t->mask = n - 1;
    t->cap = cap;
    t->idle_ns = (uint64_t)(idle_s * 1e9);
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void session_free(struct session_table *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    for (size_t i = 0; i <= t->mask; i++)
        if (t->s[i].used)
            subs_clear(&t->s[i]);
    free(t->s);
    free(t);
}

static size_t home_of(const struct session_table *t, const char *id)
{
    uint64_t h = 0;
    for (int i = 0; i < 16; i++) {
        char c = id[i];
        h = (h << 4) | (uint64_t)(c >= 'a' ? c - 'a' + 10 : c - '0');
    }
    return (size_t)h & t->mask;
}

/* Only ids this server could have minted are looked up: 32 lowercase hex. */
static int well_formed(const char *id)
{
    size_t i = 0;
    for (; id && i < SESSION_ID_LEN; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return id && id[i] == '\0';
}

/* Index of id's slot, or -1. */
static long find(const struct session_table *t, const char *id)
{
    for (size_t i = home_of(t, id);; i = (i + 1) & t->mask) {
        if (!t->s[i].used)
            return -1;
        if (!memcmp(t->s[i].id, id, SESSION_ID_LEN))
            return (long)i;
    }
}

/* Empties slot i and shifts back the entries of its probe run. */
static void drop(struct session_table *t, size_t i)
{
    size_t j = i;
    subs_clear(&t->s[i]);
    t->s[i].used = 0;
    t->live--;
    for (;;) {
        j = (j + 1) & t->mask;
        if (!t->s[j].used)
            return;
        size_t home = home_of(t, t->s[j].id);
        /* j stays when its home lies cyclically in (i, j]. */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        t->s[i] = t->s[j];
        t->s[j].used = 0;
        t->s[j].subs = NULL;    /* moved to i with the rest */
        t->s[j].nsubs = 0;
        i = j;
    }
}

/* now may be earlier than last_ns: a caller that read the clock before
 * another thread's touch took the lock is not idle for a negative time. */
static int expired(const struct session_table *t, const struct slot *s, uint64_t now)
{
    return now > s->last_ns && now - s->last_ns > t->idle_ns;
}

static void sweep_locked(struct session_table *t, uint64_t now)
{
    for (size_t i = 0; i <= t->mask;) {
        if (t->s[i].used && expired(t, &t->s[i], now)) {
            drop(t, i);
            t->expired++;
            continue;       /* the shift may have moved an unseen entry here */
        }
        i++;
    }
}

void session_sweep(struct session_table *t)
{
    pthread_mutex_lock(&t->mu);
    sweep_locked(t, now_ns());
    pthread_mutex_unlock(&t->mu);
}

int session_create(struct session_table *t, const char *client, char *out)
{
    if (x_random_hex(out, SESSION_ID_LEN / 2) < 0)
        return -1;

    pthread_mutex_lock(&t->mu);
    uint64_t now = now_ns();     /* under the lock: last_ns never goes back */
    if (t->live >= t->cap)
        sweep_locked(t, now);
    if (t->live >= t->cap) {
        size_t lru = 0;
        int have = 0;
        for (size_t i = 0; i <= t->mask; i++)
            if (t->s[i].used && (!have || t->s[i].last_ns < t->s[lru].last_ns)) {
                lru = i;
                have = 1;
            }
        drop(t, lru);
        t->evicted++;
    }
    size_t i = home_of(t, out);
    while (t->s[i].used)
        i = (i + 1) & t->mask;
    struct slot *s = &t->s[i];
    s->used = 1;
    s->level = SESSION_LEVEL_NONE;
    s->subs = NULL;
    s->nsubs = 0;
    s->last_ns = now;
    memcpy(s->id, out, SESSION_ID_LEN + 1);
    snprintf(s->client, sizeof s->client, "%s", client ? client : "");
    t->live++;
    t->created++;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

/* The live slot of id for client, or NULL; forgets it when expired. Locked. */
static struct slot *lookup(struct session_table *t, const char *id, const char *client,
                           uint64_t now)
{
    if (!well_formed(id))
        return NULL;
    long i = find(t, id);
    if (i < 0)
        return NULL;
    struct slot *s = &t->s[i];
    if (expired(t, s, now)) {
        drop(t, (size_t)i);
        t->expired++;
        return NULL;
    }
    /* Another client's id is as good as unknown: ids are not bearer tokens. */
    if (strcmp(s->client, client ? client : ""))
        return NULL;
    return s;
}

int session_touch(struct session_table *t, const char *id, const char *client, int *level)
{
    pthread_mutex_lock(&t->mu);
    uint64_t now = now_ns();     /* under the lock: last_ns never goes back */
    struct slot *s = lookup(t, id, client, now);
    if (s) {
        s->last_ns = now;
        if (level)
            *level = s->level;
    }
    pthread_mutex_unlock(&t->mu);
    return s != NULL;
}

int session_live(struct session_table *t, const char *id, const char *client)
{
    pthread_mutex_lock(&t->mu);
    int live = lookup(t, id, client, now_ns()) != NULL;
    pthread_mutex_unlock(&t->mu);
    return live;
}

int session_set_level(struct session_table *t, const char *id, const char *client, int level)
{
    pthread_mutex_lock(&t->mu);
    struct slot *s = lookup(t, id, client, now_ns());
    if (s)
        s->level = level;
    pthread_mutex_unlock(&t->mu);
    return s != NULL;
}

int session_end(struct session_table *t, const char *id, const char *client)
{
    pthread_mutex_lock(&t->mu);
    struct slot *s = lookup(t, id, client, now_ns());
    if (s) {
        drop(t, (size_t)(s - t->s));
        t->ended++;
    }
    pthread_mutex_unlock(&t->mu);
    return s != NULL;
}

int session_subscribe(struct session_table *t, const char *id, const char *client,
                      const char *uri, const char *key, size_t max)
{
    pthread_mutex_lock(&t->mu);
    struct slot *s = lookup(t, id, client, now_ns());
    int rc = s != NULL;
    for (size_t k = 0; s && k < s->nsubs; k++)
        if (!strcmp(s->subs[2 * k], uri))
            s = NULL;   /* already there */
    if (s && s->nsubs >= max) {
        rc = -1;
    } else if (s) {
        s->subs = xrealloc(s->subs, 2 * (s->nsubs + 1) * sizeof *s->subs);
        s->subs[2 * s->nsubs] = xstrdup(uri);
        s->subs[2 * s->nsubs + 1] = xstrdup(key);
        s->nsubs++;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int session_unsubscribe(struct session_table *t, const char *id, const char *client,
                        const char *uri)
{
    pthread_mutex_lock(&t->mu);
    struct slot *s = lookup(t, id, client, now_ns());
    for (size_t k = 0; s && k < s->nsubs; k++)
        if (!strcmp(s->subs[2 * k], uri)) {
            free(s->subs[2 * k]);
            free(s->subs[2 * k + 1]);
            memmove(&s->subs[2 * k], &s->subs[2 * k + 2],
                    2 * (s->nsubs - k - 1) * sizeof *s->subs);
            s->nsubs--;
            break;
        }
    pthread_mutex_unlock(&t->mu);
    return s != NULL;
}

void session_subs_each(struct session_table *t, const char *id, const char *client,
                       void (*fn)(const char *uri, const char *key, void *arg), void *arg)
{
    pthread_mutex_lock(&t->mu);
    struct slot *s = lookup(t, id, client, now_ns());
    for (size_t k = 0; s && k < s->nsubs; k++)
        fn(s->subs[2 * k], s->subs[2 * k + 1], arg);
    pthread_mutex_unlock(&t->mu);
}

void session_counts(struct session_table *t, struct session_counts *c)
{
    pthread_mutex_lock(&t->mu);
    c->created = t->created;
    c->ended = t->ended;
    c->expired = t->expired;
    c->evicted = t->evicted;
    c->live = t->live;
    pthread_mutex_unlock(&t->mu);
}
