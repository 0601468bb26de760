/*
 * tstore_redis.c - task records in Redis (several workers or instances),
 * through hiredis: one connection per thread, short timeouts. See tstore.h
 * for the rules both stores keep.
 *
 * Layout (all keys under "skill-mcp:"):
 *   task:<id>      hash, the record; PEXPIREd to ttl when it finishes, and
 *                  to ttl + the longest a run can take while it works
 *   live:<client>  zset of the client's working tasks (the per-client bound;
 *                  entries whose task ended or whose owner died are dropped
 *                  when the next task is created)
 *   tasks:<client> zset of all the client's tasks, for tasks/list
 *   quota:<key>    zset of every record the client keeps (the bound on stored
 *                  records: at the bound the oldest finished one is deleted),
 *                  scored in creation order (the creation ms, made to grow
 *                  strictly: two tasks of one millisecond keep their order)
 *   owner:<owner>  the owning worker's heartbeat (PX 5 s, renewed every
 *                  tick): a working task whose owner's heartbeat is gone
 *                  is reported failed
 * Multi-key changes are Lua scripts, so they are atomic.
 */
#include "tstore.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "util.h"

#define HEARTBEAT_PX 5000
#define REDIS_TIMEOUT_MS 1000

struct rstore {
    struct tstore base;
    struct tstore_cfg cfg;
    char owner[96];
    pthread_mutex_t mu;         /* guards conns */
    char host[256], password[256], where[300];
    int port, db;
    pthread_key_t conn_key;     /* this thread's connection */
    struct connref { redisContext *c; struct connref *next; } *conns;  /* all */
};


static int parse_url(struct rstore *t, const char *url)
{
    const char *p = url;
    if (!strncmp(p, "redis://", 8))
        p += 8;
    else
        return -1;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t n = (size_t)(at - pw);
        if (n >= sizeof t->password)
            return -1;
        memcpy(t->password, pw, n);
        t->password[n] = '\0';
        p = at + 1;
    }
    size_t hl = strcspn(p, ":/");
    if (!hl || hl >= sizeof t->host)
        return -1;
    memcpy(t->host, p, hl);
    t->host[hl] = '\0';
    p += hl;
    t->port = 6379;
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v < 1 || v > 65535)
            return -1;
        t->port = (int)v;
        p = end;
    }
    t->db = 0;
    if (*p == '/' && p[1]) {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end || v < 0 || v > 100000)
            return -1;
        t->db = (int)v;
        p = end;
    } else if (*p == '/') {
        p++;
    }
    if (*p)
        return -1;
    snprintf(t->where, sizeof t->where, "redis at %s:%d", t->host, t->port);
    return 0;
}

/* Connections are freed by the store's free, after every thread that may
 * use one has stopped, or when they fail. */
static void conn_add(struct rstore *t, redisContext *c)
{
    struct connref *r = xmalloc(sizeof *r);
    r->c = c;
    pthread_mutex_lock(&t->mu);
    r->next = t->conns;
    t->conns = r;
    pthread_mutex_unlock(&t->mu);
}

static void conn_drop(struct rstore *t, redisContext *c)
{
    pthread_mutex_lock(&t->mu);
    for (struct connref **pp = &t->conns; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            struct connref *r = *pp;
            *pp = r->next;
            free(r);
            break;
        }
    pthread_mutex_unlock(&t->mu);
    redisFree(c);
    pthread_setspecific(t->conn_key, NULL);
}

/* This thread's connection, made on first use and after an error. */
static redisContext *conn(struct rstore *t, struct err *why)
{
    redisContext *c = pthread_getspecific(t->conn_key);
    if (c)
        return c;
    struct timeval tv = {REDIS_TIMEOUT_MS / 1000, (REDIS_TIMEOUT_MS % 1000) * 1000};
    c = redisConnectWithTimeout(t->host, t->port, tv);
    if (!c || c->err) {
        err_set(why, 0, 0, "%s: %s", t->where, c ? c->errstr : "cannot connect");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    char dbs[16];
    snprintf(dbs, sizeof dbs, "%d", t->db);
    const char *steps[2][2] = {{"AUTH", t->password}, {"SELECT", dbs}};
    int need[2] = {t->password[0] != 0, t->db != 0};
    /* A connection that fails AUTH or SELECT is not kept: the next request
     * starts again from the connect. */
    for (int i = 0; i < 2; i++) {
        if (!need[i])
            continue;
        redisReply *r = redisCommandArgv(c, 2, steps[i], NULL);
        if (!r || c->err || r->type == REDIS_REPLY_ERROR) {
            err_set(why, 0, 0, "%s: %s failed: %s", t->where, steps[i][0],
                     c->err ? c->errstr : r ? r->str : "no reply");
            if (r)
                freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    pthread_setspecific(t->conn_key, c);
    conn_add(t, c);
    return c;
}

/* One command; NULL (why set, connection dropped) on any failure. A
 * connection kept from earlier may have been closed by a Redis restart:
 * that one is retried once on a fresh connection. */
static redisReply *cmd(struct rstore *t, struct err *why, int argc, const char **argv)
{
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = pthread_getspecific(t->conn_key) != NULL;
        redisContext *c = conn(t, why);
        if (!c)
            return NULL;
        r = redisCommandArgv(c, argc, argv, NULL);
        if (r && !c->err)
            break;
        err_set(why, 0, 0, "%s: %s", t->where, c->err ? c->errstr : "no reply");
        if (r)
            freeReplyObject(r);
        r = NULL;
        conn_drop(t, c);
        if (!reused)
            return NULL;
    }
    if (!r)
        return NULL;
    if (r->type == REDIS_REPLY_ERROR) {
        err_set(why, 0, 0, "%s: %s", t->where, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static void key(char *out, size_t n, const char *kind, const char *name)
{
    snprintf(out, n, "skill-mcp:%s:%s", kind, name);
}

/* Creates the record unless the client has max working tasks already
 * (0; working entries whose task ended or whose owner is gone do not
 * count), or keeps cap records all working (2). At cap, its expired
 * entries and then its oldest finished records are deleted first. */
static const char LUA_CREATE[] =
    "local ids = redis.call('ZRANGE', KEYS[2], 0, -1)\n"
    "for _, id in ipairs(ids) do\n"
    "  local st = redis.call('HMGET', 'skill-mcp:task:' .. id, 'status', 'owner')\n"
    "  if st[1] ~= 'working' or redis.call('EXISTS', 'skill-mcp:owner:' .. (st[2] or '')) == 0 then\n"
    "    redis.call('ZREM', KEYS[2], id)\n"
    "  end\n"
    "end\n"
    "if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end\n"
    "local cap = tonumber(ARGV[10])\n"
    "local n = redis.call('ZCARD', KEYS[5])\n"
    "if n >= cap then\n"
    "  for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do\n"
    "    if n < cap then break end\n"
    "    local k = 'skill-mcp:task:' .. id\n"
    "    local st = redis.call('HMGET', k, 'status', 'client')\n"
    "    if not st[1] then\n"
    "      redis.call('ZREM', KEYS[5], id)\n"
    "      n = n - 1\n"
    "    elseif st[1] ~= 'working' then\n"
    "      redis.call('DEL', k)\n"
    "      redis.call('ZREM', KEYS[5], id)\n"
    "      redis.call('ZREM', 'skill-mcp:tasks:' .. (st[2] or ''), id)\n"
    "      n = n - 1\n"
    "    end\n"
    "  end\n"
    "  if n >= cap then return 2 end\n"
    "end\n"
    "redis.call('SET', KEYS[4], '1', 'PX', ARGV[8])\n"
    "redis.call('HSET', KEYS[1], 'status', 'working', 'created', ARGV[3], 'updated', ARGV[3],\n"
    "  'ttl', ARGV[4], 'owner', ARGV[5], 'client', ARGV[6], 'rid', ARGV[7], 'skill', ARGV[11])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[9])\n"
    "redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[9])\n"
    "redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[3], ARGV[9])\n"
    "local sc = tonumber(ARGV[3])\n"
    "local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')\n"
    "if last[2] and tonumber(last[2]) >= sc then sc = tonumber(last[2]) + 1 end\n"
    "redis.call('ZADD', KEYS[5], sc, ARGV[1])\n"
    "redis.call('PEXPIRE', KEYS[5], ARGV[9])\n"
    "return 1\n";

/* Ends a working record (a terminal one keeps its status); keeps the result. */
static const char LUA_FINISH[] =
    "local st = redis.call('HGET', KEYS[1], 'status')\n"
    "if not st then return 0 end\n"
    "if st == 'working' then\n"
    "  redis.call('HSET', KEYS[1], 'status', ARGV[1], 'msg', ARGV[2], 'updated', ARGV[4])\n"
    "end\n"
    "if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'result', ARGV[3]) end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[5])\n"
    "redis.call('ZREM', KEYS[2], ARGV[6])\n"
    "return 1\n";

/* Cancels a working record of this client: 'ok', the terminal status, or
 * '' when there is no such task for this client. */
static const char LUA_CANCEL[] =
    "local st = redis.call('HMGET', KEYS[1], 'status', 'client')\n"
    "if not st[1] or st[2] ~= ARGV[1] then return '' end\n"
    "if st[1] ~= 'working' then return st[1] end\n"
    "redis.call('HSET', KEYS[1], 'status', 'cancelled', 'msg', ARGV[3], 'updated', ARGV[2])\n"
    "return 'ok'\n";

static int r_create(struct tstore *s, const struct trec *r, struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    char k1[200], k2[200], k3[200], k4[200], k5[200], max[16], created[24], ttl[24], px[16],
        life[24], recs[16];
    key(k1, sizeof k1, "task", r->id);
    key(k2, sizeof k2, "live", r->client);
    key(k3, sizeof k3, "tasks", r->client);
    key(k4, sizeof k4, "owner", r->owner);
    key(k5, sizeof k5, "quota", r->quota);
    snprintf(max, sizeof max, "%d", t->cfg.max_live);
    snprintf(recs, sizeof recs, "%d", t->cfg.max_records);
    snprintf(created, sizeof created, "%lld", (long long)r->created);
    snprintf(ttl, sizeof ttl, "%lld", (long long)r->ttl);
    snprintf(px, sizeof px, "%d", HEARTBEAT_PX);
    snprintf(life, sizeof life, "%lld", (long long)(r->ttl + t->cfg.run_ms));
    const char *argv[] = {"EVAL", LUA_CREATE, "5", k1, k2, k3, k4, k5, r->id, max, created, ttl,
                          r->owner, r->client, r->rid, px, life, recs, r->skill};
    redisReply *rep = cmd(t, why, (int)(sizeof argv / sizeof *argv), argv);
    if (!rep)
        return -1;
    long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return v == 1 ? 0 : v == 2 ? 2 : 1;
}

static int r_finish(struct tstore *s, const char *id, const char *client, const char *status,
                    const char *msg, const char *result, int64_t ttl, struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    char k1[200], k2[200], upd[24], px[24];
    key(k1, sizeof k1, "task", id);
    key(k2, sizeof k2, "live", client);
    snprintf(upd, sizeof upd, "%lld", (long long)now_wall_ms());
    snprintf(px, sizeof px, "%lld", (long long)(ttl > 0 ? ttl : 1));
    const char *argv[] = {"EVAL", LUA_FINISH, "2", k1, k2, status, msg, result ? result : "",
                          upd, px, id};
    redisReply *rep = cmd(t, why, (int)(sizeof argv / sizeof *argv), argv);
    if (!rep)
        return -1;
    freeReplyObject(rep);
    return 0;
}

static void fill_from_hash(struct trec *r, redisReply *rep)
{
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *v = rep->element[i + 1]->str;
        if (!f || !v)
            continue;
        if (!strcmp(f, "status"))
            snprintf(r->status, sizeof r->status, "%s", v);
        else if (!strcmp(f, "msg"))
            snprintf(r->msg, sizeof r->msg, "%s", v);
        else if (!strcmp(f, "created"))
            r->created = strtoll(v, NULL, 10);
        else if (!strcmp(f, "updated"))
            r->updated = strtoll(v, NULL, 10);
        else if (!strcmp(f, "ttl"))
            r->ttl = strtoll(v, NULL, 10);
        else if (!strcmp(f, "owner"))
            snprintf(r->owner, sizeof r->owner, "%s", v);
        else if (!strcmp(f, "client"))
            snprintf(r->client, sizeof r->client, "%s", v);
        else if (!strcmp(f, "rid"))
            snprintf(r->rid, sizeof r->rid, "%s", v);
        else if (!strcmp(f, "skill"))
            snprintf(r->skill, sizeof r->skill, "%s", v);
        else if (!strcmp(f, "result"))
            r->result = xstrdup(v);
    }
}

static const char OWNER_GONE[] =
    "The server process that ran this task stopped (a worker restart or crash); its result "
    "is lost. Run the script again.";

static int r_get(struct tstore *s, const char *id, const char *client, struct trec *r,
                 struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    memset(r, 0, sizeof *r);
    if (!tstore_id_ok(id))
        return 1;
    char k[200];
    key(k, sizeof k, "task", id);
    const char *argv[] = {"HGETALL", k};
    redisReply *rep = cmd(t, why, 2, argv);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY || !rep->elements) {
        freeReplyObject(rep);
        return 1;
    }
    snprintf(r->id, sizeof r->id, "%s", id);
    fill_from_hash(r, rep);
    freeReplyObject(rep);
    if (strcmp(r->client, client) || !r->status[0]) {
        trec_cleanup(r);
        return 1;
    }
    if (!strcmp(r->status, "working") && strcmp(r->owner, t->owner)) {
        char hb[200];
        key(hb, sizeof hb, "owner", r->owner);
        const char *ex[] = {"EXISTS", hb};
        if (!(rep = cmd(t, why, 2, ex))) {
            trec_cleanup(r);
            return -1;
        }
        int alive = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
        freeReplyObject(rep);
        if (!alive) {
            if (r_finish(s, id, client, "failed", OWNER_GONE, NULL, r->ttl, why) < 0) {
                trec_cleanup(r);
                return -1;
            }
            snprintf(r->status, sizeof r->status, "failed");
            snprintf(r->msg, sizeof r->msg, "%s", OWNER_GONE);
            r->updated = now_wall_ms();
        }
    }
    return 0;
}

static int r_cancel(struct tstore *s, const char *id, const char *client, char *was, size_t wasl,
                    struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    if (!tstore_id_ok(id))
        return 1;
    char k[200], upd[24];
    key(k, sizeof k, "task", id);
    snprintf(upd, sizeof upd, "%lld", (long long)now_wall_ms());
    const char *argv[] = {"EVAL", LUA_CANCEL, "1", k, client, upd, tstore_cancelled_msg};
    redisReply *rep = cmd(t, why, (int)(sizeof argv / sizeof *argv), argv);
    if (!rep)
        return -1;
    int rc;
    const char *str = rep->str ? rep->str : "";
    if (!strcmp(str, "ok"))
        rc = 0;
    else if (!*str)
        rc = 1;
    else {
        snprintf(was, wasl, "%s", str);
        rc = 2;
    }
    freeReplyObject(rep);
    return rc;
}

static int r_list(struct tstore *s, const char *client, size_t offset, struct trec *out,
                  size_t cap, size_t *n, int *more, struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    *n = 0;
    *more = 0;
    char k[200], from[24], to[24];
    key(k, sizeof k, "tasks", client);
    snprintf(from, sizeof from, "%zu", offset);
    snprintf(to, sizeof to, "%zu", offset + cap);    /* one more: is there a next page? */
    const char *argv[] = {"ZRANGE", k, from, to};
    redisReply *ids = cmd(t, why, 4, argv);
    if (!ids)
        return -1;
    for (size_t i = 0; ids->type == REDIS_REPLY_ARRAY && i < ids->elements; i++) {
        if (*n == cap) {
            *more = 1;
            break;
        }
        const char *id = ids->element[i]->str;
        if (!id)
            continue;
        int rc = r_get(s, id, client, &out[*n], why);
        if (rc < 0) {
            freeReplyObject(ids);
            for (size_t j = 0; j < *n; j++)
                trec_cleanup(&out[j]);
            return -1;
        }
        if (rc == 1) {
            /* expired: drop it from the index */
            const char *rm[] = {"ZREM", k, id};
            redisReply *r = cmd(t, why, 3, rm);
            if (r)
                freeReplyObject(r);
            continue;
        }
        trec_cleanup(&out[*n]);
        (*n)++;
    }
    freeReplyObject(ids);
    return 0;
}

static int r_cancelled(struct tstore *s, const char *id, struct err *why)
{
    struct rstore *t = (struct rstore *)s;
    char k[200];
    key(k, sizeof k, "task", id);
    const char *argv[] = {"HGET", k, "status"};
    redisReply *r = cmd(t, why, 3, argv);
    if (!r)
        return -1;
    int cancelled = r->str && !strcmp(r->str, "cancelled");
    freeReplyObject(r);
    return cancelled;
}

/* The owner heartbeat: working records of this worker stay alive while it is. */
static void r_tick(struct tstore *s)
{
    struct rstore *t = (struct rstore *)s;
    char k[200], px[16];
    key(k, sizeof k, "owner", t->owner);
    snprintf(px, sizeof px, "%d", HEARTBEAT_PX);
    const char *argv[] = {"SET", k, "1", "PX", px};
    redisReply *r = cmd(t, NULL, 5, argv);
    if (r)
        freeReplyObject(r);
}

static void r_free(struct tstore *s)
{
    struct rstore *t = (struct rstore *)s;
    while (t->conns) {
        struct connref *r = t->conns;
        t->conns = r->next;
        redisFree(r->c);
        free(r);
    }
    pthread_key_delete(t->conn_key);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const struct tstore_ops redis_ops = {
    .create = r_create,
    .finish = r_finish,
    .get = r_get,
    .cancel = r_cancel,
    .list = r_list,
    .cancelled = r_cancelled,
    .tick = r_tick,
    .free = r_free,
};

int tstore_redis_url_ok(const char *url)
{
    struct rstore t;
    memset(&t, 0, sizeof t);
    return parse_url(&t, url);
}

struct tstore *tstore_redis_new(const struct tstore_cfg *cfg, const char *url)
{
    struct rstore *t = xcalloc(1, sizeof *t);
    if (parse_url(t, url) < 0) {
        free(t);
        return NULL;
    }
    t->base.ops = &redis_ops;
    t->base.shared = 1;
    t->cfg = *cfg;
    snprintf(t->owner, sizeof t->owner, "%s", cfg->owner ? cfg->owner : "");
    t->cfg.owner = t->owner;
    pthread_mutex_init(&t->mu, NULL);
    pthread_key_create(&t->conn_key, NULL);
    struct err why;
    redisContext *c = conn(t, &why);
    if (!c)
        log_warn("tasks: %s; tasks are unavailable until it answers (everything else "
                 "works)", why.msg);
    else
        log_info("tasks: records in %s", t->where);
    return &t->base;
}
