/*
 * tasks.c - run_skill_script as an MCP task, with its record in process
 * memory (one worker) or in Redis (several workers or instances).
 *
 * A record: id (128 random bits, hex), client (the authenticated client,
 * "" when there is no authentication), quota (whose records it counts
 * against: the client, or without authentication "addr:<peer address>",
 * an IPv6 one by its /64: see x_peer_key),
 * status, status message, created and
 * updated times, ttl, the owning worker, the script's request id, and once
 * finished the CallToolResult as JSON text. Stored statuses are working,
 * completed, tool_error (the script's result is isError), failed (the
 * server could not finish the task: it shut down, or the owning worker
 * died) and cancelled; tool_error reads as `failed` on 2025-11-25 and as
 * `completed` (with the isError result) on 2026-07-28, as each era defines.
 *
 * Terminal states never change again: the finishing write only replaces
 * `working`, so a cancel that won keeps `cancelled` (the killed script's
 * result is still kept for tasks/result).
 *
 * Redis layout (all keys under "skill-mcp:"):
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
 *                  second): a working task whose owner's heartbeat is gone
 *                  is reported failed
 * Multi-key changes are Lua scripts, so they are atomic.
 */
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "mcp.h"
#include "rpc.h"
#include "runner.h"
#include "tools.h"
#include "util.h"

#define EXT_TASKS "io.modelcontextprotocol/tasks"
#define RELATED_TASK "io.modelcontextprotocol/related-task"
#define POLL_MS 250             /* the tasks thread's tick */
#define CLIENT_POLL_MS 1000     /* pollInterval suggested to clients */
/* A cancelled run still owes its result for this long (kill grace, drain,
 * post hook); another worker cannot see the owner's runs, so it waits by
 * the clock. */
#define CANCEL_SETTLE_MS 10000
#define HEARTBEAT_PX 5000
#define PAGE 20                 /* tasks/list page */
#define MEM_MAX_TASKS 10000     /* records kept in memory at most */
/* A task that ended before anything ran (unknown skill, bad arguments) is
 * kept this long at most: long enough to read, too short to hoard. */
#define EARLY_TTL_MS 60000
#define REDIS_TIMEOUT_MS 1000

struct trec {
    char id[40];
    char client[80];
    char quota[80];
    char status[16];
    char msg[400];
    int64_t created, updated, ttl;  /* ms since the epoch; ttl in ms */
    char owner[96];
    char rid[40];
    char *result;                   /* CallToolResult JSON, or NULL */
};

/* A task this worker runs. */
struct live {
    struct tasks *t;
    char id[40], rid[40], client[80];
    int64_t ttl;
    int cancel;                 /* the record says cancelled: stop the run */
    struct live *next;
};

/* A finished run whose record is still to be written (Redis). */
struct finish {
    char id[40], client[80], status[16], msg[400];
    int64_t ttl;
    char *result;
    struct finish *next;
};

/* A tasks/result waiting for its task to end. */
struct tasks_wait {
    struct tasks *t;
    char id[40], client[80];
    json_t *rpc_id;
    void (*done)(char *body, size_t len, void *arg);
    void *arg;
    struct tasks_wait *next;
};

/* Memory store entry. */
struct mtask {
    struct trec r;
    int64_t expires;            /* ms since the epoch; 0 while working */
    struct mtask *next;
};

struct tasks {
    struct srv *S;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stopping, quiescing, no_runner;
    struct live *live;              /* guarded by mu */
    struct finish *finishes;        /* guarded by mu */
    struct tasks_wait *waits;       /* guarded by mu */
    struct mtask *mem, **mem_tail;  /* memory store, guarded by mu */
    size_t nmem;
    /* Redis */
    int redis;
    char host[256], password[256], where[300];
    int port, db;
    pthread_key_t conn_key;     /* this thread's connection */
    struct connref { redisContext *c; struct connref *next; } *conns;  /* all, guarded by mu */
    char owner[96];
};

/* ---- small helpers --------------------------------------------------------- */

static int64_t wall_ms(void)
{
    return now_wall_ms();
}

static void iso(int64_t ms, char *out, size_t n)
{
    iso_utc_ms(ms, out, n);
}

static void new_id(char *out, size_t n)
{
    char hex[33];
    if (x_random_hex(hex, 16) < 0)
        abort();            /* no CSPRNG: a guessable id would leak other clients' results */
    snprintf(out, n, "%s", hex);
}

static int is_terminal(const char *st)
{
    return strcmp(st, "working") != 0;
}

static void trec_cleanup(struct trec *r)
{
    free(r->result);
    r->result = NULL;
}

static const char *client_of(const struct mcp_call *c)
{
    return c->client ? c->client : "";
}

static int unavailable(struct mcp_call *c, const char *why)
{
    return mcp_error(c, RPC_INTERNAL_ERROR, NULL, "tasks unavailable: %s", why);
}

/* ---- Redis ----------------------------------------------------------------- */

static int parse_url(struct tasks *t, const char *url)
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

/* Connections are freed by tasks_free(), after every thread that may use
 * one has stopped, or when they fail. */
static void conn_add(struct tasks *t, redisContext *c)
{
    struct connref *r = xmalloc(sizeof *r);
    r->c = c;
    pthread_mutex_lock(&t->mu);
    r->next = t->conns;
    t->conns = r;
    pthread_mutex_unlock(&t->mu);
}

static void conn_drop(struct tasks *t, redisContext *c)
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
static redisContext *conn(struct tasks *t, char *why, size_t wl)
{
    redisContext *c = pthread_getspecific(t->conn_key);
    if (c)
        return c;
    struct timeval tv = {REDIS_TIMEOUT_MS / 1000, (REDIS_TIMEOUT_MS % 1000) * 1000};
    c = redisConnectWithTimeout(t->host, t->port, tv);
    if (!c || c->err) {
        snprintf(why, wl, "%s: %s", t->where, c ? c->errstr : "cannot connect");
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
            snprintf(why, wl, "%s: %s failed: %s", t->where, steps[i][0],
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
static redisReply *cmd(struct tasks *t, char *why, size_t wl, int argc, const char **argv)
{
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = pthread_getspecific(t->conn_key) != NULL;
        redisContext *c = conn(t, why, wl);
        if (!c)
            return NULL;
        r = redisCommandArgv(c, argc, argv, NULL);
        if (r && !c->err)
            break;
        snprintf(why, wl, "%s: %s", t->where, c->err ? c->errstr : "no reply");
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
        snprintf(why, wl, "%s: %s", t->where, r->str);
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
    "  'ttl', ARGV[4], 'owner', ARGV[5], 'client', ARGV[6], 'rid', ARGV[7])\n"
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

/* ---- the store --------------------------------------------------------------- */

static struct mtask *mem_find(struct tasks *t, const char *id)
{
    for (struct mtask *m = t->mem; m; m = m->next)
        if (!strcmp(m->r.id, id))
            return m;
    return NULL;
}

static void mem_sweep(struct tasks *t, int64_t now)
{
    struct mtask **pp = &t->mem;
    t->mem_tail = &t->mem;
    while (*pp) {
        struct mtask *m = *pp;
        if (m->expires && m->expires <= now) {
            *pp = m->next;
            trec_cleanup(&m->r);
            free(m);
            t->nmem--;
            continue;
        }
        pp = &m->next;
        t->mem_tail = pp;
    }
}

static void mem_drop(struct tasks *t, struct mtask **pp)
{
    struct mtask *m = *pp;
    *pp = m->next;
    if (t->mem_tail == &m->next)
        t->mem_tail = pp;
    trec_cleanup(&m->r);
    free(m);
    t->nmem--;
}

/* Drops the oldest finished record (of quota, or of anyone when NULL):
 * 0, or -1 when every such record is still working. */
static int mem_evict_oldest(struct tasks *t, const char *quota)
{
    for (struct mtask **pp = &t->mem; *pp; pp = &(*pp)->next)
        if ((!quota || !strcmp((*pp)->r.quota, quota)) && (*pp)->expires) {
            mem_drop(t, pp);
            return 0;
        }
    return -1;
}

/* 0 created, 1 the client is at its bound of working tasks, 2 it keeps
 * max_records records all working, -1 store error (why). */
static int st_create(struct tasks *t, const struct trec *r, int max_live, char *why, size_t wl)
{
    const struct cfg *cf = &t->S->cfg;
    int max_records = cf->max_task_records_per_client;
    /* the longest a run may take: queue, hooks, script, hooks */
    int64_t run_ms = (int64_t)((cf->script_queue_timeout + cf->max_script_timeout +
                                4 * cf->hook_timeout + 60) * 1000);
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        mem_sweep(t, wall_ms());
        int n = 0, kept = 0;
        for (struct mtask *m = t->mem; m; m = m->next) {
            n += !strcmp(m->r.client, r->client) && !strcmp(m->r.status, "working");
            kept += !strcmp(m->r.quota, r->quota);
        }
        if (n >= max_live) {
            pthread_mutex_unlock(&t->mu);
            return 1;
        }
        /* A client at its bound makes room from its own oldest results; a
         * full store (many clients) from the oldest result of anyone. */
        for (; kept >= max_records; kept--)
            if (mem_evict_oldest(t, r->quota) < 0) {
                pthread_mutex_unlock(&t->mu);
                return 2;
            }
        if (t->nmem >= MEM_MAX_TASKS && mem_evict_oldest(t, NULL) < 0) {
            pthread_mutex_unlock(&t->mu);
            snprintf(why, wl, "the server keeps %d working tasks already; try again later",
                     MEM_MAX_TASKS);
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
    char k1[200], k2[200], k3[200], k4[200], k5[200], max[16], created[24], ttl[24], px[16],
        life[24], recs[16];
    key(k1, sizeof k1, "task", r->id);
    key(k2, sizeof k2, "live", r->client);
    key(k3, sizeof k3, "tasks", r->client);
    key(k4, sizeof k4, "owner", r->owner);
    key(k5, sizeof k5, "quota", r->quota);
    snprintf(max, sizeof max, "%d", max_live);
    snprintf(recs, sizeof recs, "%d", max_records);
    snprintf(created, sizeof created, "%lld", (long long)r->created);
    snprintf(ttl, sizeof ttl, "%lld", (long long)r->ttl);
    snprintf(px, sizeof px, "%d", HEARTBEAT_PX);
    snprintf(life, sizeof life, "%lld", (long long)(r->ttl + run_ms));
    const char *argv[] = {"EVAL", LUA_CREATE, "5", k1, k2, k3, k4, k5, r->id, max, created, ttl,
                          r->owner, r->client, r->rid, px, life, recs};
    redisReply *rep = cmd(t, why, wl, (int)(sizeof argv / sizeof *argv), argv);
    if (!rep)
        return -1;
    long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return v == 1 ? 0 : v == 2 ? 2 : 1;
}

static int st_finish(struct tasks *t, const char *id, const char *client, const char *status,
                     const char *msg, const char *result, int64_t ttl, char *why, size_t wl)
{
    int64_t now = wall_ms();
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        struct mtask *m = mem_find(t, id);
        if (m) {
            if (!strcmp(m->r.status, "working")) {
                snprintf(m->r.status, sizeof m->r.status, "%s", status);
                snprintf(m->r.msg, sizeof m->r.msg, "%s", msg);
                m->r.updated = now;
            }
            if (result) {
                free(m->r.result);
                m->r.result = xstrdup(result);
            }
            m->expires = now + ttl;
        }
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
    char k1[200], k2[200], upd[24], px[24];
    key(k1, sizeof k1, "task", id);
    key(k2, sizeof k2, "live", client);
    snprintf(upd, sizeof upd, "%lld", (long long)now);
    snprintf(px, sizeof px, "%lld", (long long)(ttl > 0 ? ttl : 1));
    const char *argv[] = {"EVAL", LUA_FINISH, "2", k1, k2, status, msg, result ? result : "",
                          upd, px, id};
    redisReply *rep = cmd(t, why, wl, (int)(sizeof argv / sizeof *argv), argv);
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
        else if (!strcmp(f, "result"))
            r->result = xstrdup(v);
    }
}

static const char OWNER_GONE[] =
    "The server process that ran this task stopped (a worker restart or crash); its result "
    "is lost. Run the script again.";

/*
 * Reads the record of task id for client: 0 found, 1 no such task (or not
 * this client's, or expired), -1 store error. A working task whose owner's
 * heartbeat is gone is finished as failed first.
 */
static int st_get(struct tasks *t, const char *id, const char *client, struct trec *r,
                  char *why, size_t wl)
{
    memset(r, 0, sizeof *r);
    if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
        return 1;
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        mem_sweep(t, wall_ms());
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
    char k[200];
    key(k, sizeof k, "task", id);
    const char *argv[] = {"HGETALL", k};
    redisReply *rep = cmd(t, why, wl, 2, argv);
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
        if (!(rep = cmd(t, why, wl, 2, ex))) {
            trec_cleanup(r);
            return -1;
        }
        int alive = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
        freeReplyObject(rep);
        if (!alive) {
            if (st_finish(t, id, client, "failed", OWNER_GONE, NULL, r->ttl, why, wl) < 0) {
                trec_cleanup(r);
                return -1;
            }
            snprintf(r->status, sizeof r->status, "failed");
            snprintf(r->msg, sizeof r->msg, "%s", OWNER_GONE);
            r->updated = wall_ms();
        }
    }
    return 0;
}

static const char CANCELLED_MSG[] = "The task was cancelled by request.";

/* 0 cancelled now, 1 no such task, 2 already terminal (*was set), -1 error. */
static int st_cancel(struct tasks *t, const char *id, const char *client, char *was, size_t wasl,
                     char *why, size_t wl)
{
    if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
        return 1;
    int64_t now = wall_ms();
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        mem_sweep(t, now);
        struct mtask *m = mem_find(t, id);
        int rc = 1;
        if (m && !strcmp(m->r.client, client)) {
            if (strcmp(m->r.status, "working")) {
                snprintf(was, wasl, "%s", m->r.status);
                rc = 2;
            } else {
                snprintf(m->r.status, sizeof m->r.status, "cancelled");
                snprintf(m->r.msg, sizeof m->r.msg, "%s", CANCELLED_MSG);
                m->r.updated = now;
                rc = 0;
            }
        }
        pthread_mutex_unlock(&t->mu);
        return rc;
    }
    char k[200], upd[24];
    key(k, sizeof k, "task", id);
    snprintf(upd, sizeof upd, "%lld", (long long)now);
    const char *argv[] = {"EVAL", LUA_CANCEL, "1", k, client, upd, CANCELLED_MSG};
    redisReply *rep = cmd(t, why, wl, (int)(sizeof argv / sizeof *argv), argv);
    if (!rep)
        return -1;
    int rc;
    const char *s = rep->str ? rep->str : "";
    if (!strcmp(s, "ok"))
        rc = 0;
    else if (!*s)
        rc = 1;
    else {
        snprintf(was, wasl, "%s", s);
        rc = 2;
    }
    freeReplyObject(rep);
    return rc;
}

/* Up to PAGE records of client from offset; *more when others follow. */
static int st_list(struct tasks *t, const char *client, size_t offset, struct trec *out,
                   size_t *n, int *more, char *why, size_t wl)
{
    *n = 0;
    *more = 0;
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        mem_sweep(t, wall_ms());
        size_t i = 0;
        for (struct mtask *m = t->mem; m; m = m->next) {
            if (strcmp(m->r.client, client))
                continue;
            if (i >= offset && *n < PAGE) {
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
    char k[200], from[24], to[24];
    key(k, sizeof k, "tasks", client);
    snprintf(from, sizeof from, "%zu", offset);
    snprintf(to, sizeof to, "%zu", offset + PAGE);    /* one more: is there a next page? */
    const char *argv[] = {"ZRANGE", k, from, to};
    redisReply *ids = cmd(t, why, wl, 4, argv);
    if (!ids)
        return -1;
    for (size_t i = 0; ids->type == REDIS_REPLY_ARRAY && i < ids->elements; i++) {
        if (*n == PAGE) {
            *more = 1;
            break;
        }
        const char *id = ids->element[i]->str;
        if (!id)
            continue;
        int rc = st_get(t, id, client, &out[*n], why, wl);
        if (rc < 0) {
            freeReplyObject(ids);
            for (size_t j = 0; j < *n; j++)
                trec_cleanup(&out[j]);
            return -1;
        }
        if (rc == 1) {
            /* expired: drop it from the index */
            const char *rm[] = {"ZREM", k, id};
            redisReply *r = cmd(t, why, wl, 3, rm);
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

/* ---- rendering ------------------------------------------------------------------ */

static const char *status_for(const char *st, int modern)
{
    if (!strcmp(st, "tool_error"))
        return modern ? "completed" : "failed";
    return st;
}

static json_t *task_json(const struct trec *r, int modern, int detail)
{
    char c[40], u[40];
    iso(r->created, c, sizeof c);
    iso(r->updated ? r->updated : r->created, u, sizeof u);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "taskId", r->id, "status",
                          status_for(r->status, modern), "createdAt", c, "lastUpdatedAt", u);
    if (r->msg[0])
        json_object_set_new(o, "statusMessage", json_string(r->msg));
    json_object_set_new(o, modern ? "ttlMs" : "ttl", json_integer(r->ttl));
    if (!is_terminal(r->status))
        json_object_set_new(o, modern ? "pollIntervalMs" : "pollInterval",
                            json_integer(CLIENT_POLL_MS));
    if (modern && detail) {
        if (!strcmp(r->status, "failed"))
            json_object_set_new(o, "error", json_pack("{s:i, s:s}", "code", RPC_INTERNAL_ERROR,
                                                      "message", r->msg));
        else if (r->result && (!strcmp(r->status, "completed") ||
                               !strcmp(r->status, "tool_error"))) {
            json_t *res = json_loads(r->result, 0, NULL);
            if (res)
                json_object_set_new(o, "result", res);
        }
    }
    return o;
}

/* Cancelled, but its killed run has not yet handed in the result that
 * tasks/result promises: the answer waits for it rather than saying
 * "cancelled" now and returning the result to the next caller. */
static int settling(struct tasks *t, const struct trec *r)
{
    if (strcmp(r->status, "cancelled") || r->result)
        return 0;
    int live = 0;
    pthread_mutex_lock(&t->mu);
    for (struct live *l = t->live; l && !live; l = l->next)
        live = !strcmp(l->id, r->id);
    pthread_mutex_unlock(&t->mu);
    return live || (t->redis && wall_ms() - r->updated < CANCEL_SETTLE_MS);
}

/* The whole JSON-RPC response of tasks/result for a finished record. */
static char *result_response(const struct trec *r, json_t *rpc_id, size_t *len)
{
    json_t *resp;
    json_t *res = r->result && strcmp(r->status, "failed") ? json_loads(r->result, 0, NULL) : NULL;
    if (res) {
        json_t *meta = json_object_get(res, "_meta");
        if (!json_is_object(meta)) {
            meta = json_object();
            json_object_set_new(res, "_meta", meta);
        }
        json_object_set_new(meta, RELATED_TASK, json_pack("{s:s}", "taskId", r->id));
        resp = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", rpc_id, "result", res);
    } else {
        /* The run itself never produced a result: the request's answer is
         * this error. */
        resp = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", rpc_id, "error",
                         "code", RPC_INTERNAL_ERROR, "message",
                         r->msg[0] ? r->msg : "the task ended without a result");
    }
    char *s = json_dumps(resp, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(resp);
    *len = strlen(s);
    return s;
}

static char *error_response(json_t *rpc_id, int code, const char *msg, size_t *len)
{
    json_t *resp = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", rpc_id, "error",
                             "code", code, "message", msg);
    char *s = json_dumps(resp, JSON_COMPACT);
    json_decref(resp);
    *len = strlen(s);
    return s;
}

/* ---- the tasks thread ------------------------------------------------------------- */

static void heartbeat(struct tasks *t)
{
    char k[200], px[16], why[300];
    key(k, sizeof k, "owner", t->owner);
    snprintf(px, sizeof px, "%d", HEARTBEAT_PX);
    const char *argv[] = {"SET", k, "1", "PX", px};
    redisReply *r = cmd(t, why, sizeof why, 5, argv);
    if (r)
        freeReplyObject(r);
}

static void free_finish(struct finish *f)
{
    free(f->result);
    free(f);
}

static void tick(struct tasks *t, int final)
{
    char why[400];
    /* 1. write finished runs */
    pthread_mutex_lock(&t->mu);
    struct finish *fl = t->finishes;
    t->finishes = NULL;
    pthread_mutex_unlock(&t->mu);
    struct finish *keep = NULL;
    while (fl) {
        struct finish *f = fl;
        fl = f->next;
        int rc = st_finish(t, f->id, f->client, f->status, f->msg, f->result, f->ttl, why,
                           sizeof why);
        if (rc < 0 && !final) {
            /* Redis is away: keep the result and try again next tick. */
            log_warn("task %s: cannot store its result yet: %s", f->id, why);
            f->next = keep;
            keep = f;
            continue;
        }
        if (rc < 0)
            log_error("task %s: its result is lost (%s): %s", f->id, f->status, why);
        free_finish(f);
    }
    if (keep) {
        pthread_mutex_lock(&t->mu);
        struct finish **pp = &keep;
        while (*pp)
            pp = &(*pp)->next;
        *pp = t->finishes;
        t->finishes = keep;
        pthread_mutex_unlock(&t->mu);
    }
    /* 2. cancels: a record marked cancelled (by any worker) stops its run */
    if (t->redis && !final) {
        heartbeat(t);
        char ids[64][40];
        int n = 0;
        pthread_mutex_lock(&t->mu);
        for (struct live *l = t->live; l && n < 64; l = l->next)
            if (!l->cancel)
                snprintf(ids[n++], sizeof ids[0], "%s", l->id);
        pthread_mutex_unlock(&t->mu);
        for (int i = 0; i < n; i++) {
            char k[200];
            key(k, sizeof k, "task", ids[i]);
            const char *argv[] = {"HGET", k, "status"};
            redisReply *r = cmd(t, why, sizeof why, 3, argv);
            if (!r)
                break;
            int cancelled = r->str && !strcmp(r->str, "cancelled");
            freeReplyObject(r);
            if (!cancelled)
                continue;
            pthread_mutex_lock(&t->mu);
            for (struct live *l = t->live; l; l = l->next)
                if (!strcmp(l->id, ids[i]))
                    l->cancel = 1;
            pthread_mutex_unlock(&t->mu);
        }
    }
    pthread_mutex_lock(&t->mu);
    /* Again every tick: a cancel that arrived while a hook ran still stops
     * the script that follows. */
    for (struct live *l = t->live; l; l = l->next)
        if (l->cancel && !t->no_runner && t->S->runner)
            run_cancel(t->S->runner, l->rid);
    struct tasks_wait *wl = t->waits;
    t->waits = NULL;
    pthread_mutex_unlock(&t->mu);
    /* 3. blocked tasks/result */
    struct tasks_wait *still = NULL;
    while (wl) {
        struct tasks_wait *w = wl;
        wl = w->next;
        struct trec r;
        size_t len;
        char *body = NULL;
        int rc = st_get(t, w->id, w->client, &r, why, sizeof why);
        if (rc < 0) {
            char m[500];
            snprintf(m, sizeof m, "tasks unavailable: %s", why);
            body = error_response(w->rpc_id, RPC_INTERNAL_ERROR, m, &len);
        } else if (rc == 1) {
            body = error_response(w->rpc_id, RPC_INVALID_PARAMS,
                                  "Failed to retrieve task: Task not found or expired", &len);
        } else if (is_terminal(r.status) && (final || !settling(t, &r))) {
            body = result_response(&r, w->rpc_id, &len);
        } else if (final) {
            body = error_response(w->rpc_id, RPC_INTERNAL_ERROR,
                                  "the server is shutting down; poll tasks/get later", &len);
        }
        if (rc == 0)
            trec_cleanup(&r);
        if (!body) {
            w->next = still;
            still = w;
            continue;
        }
        w->done(body, len, w->arg);
        json_decref(w->rpc_id);
        free(w);
    }
    if (still) {
        pthread_mutex_lock(&t->mu);
        struct tasks_wait **pp = &still;
        while (*pp)
            pp = &(*pp)->next;
        *pp = t->waits;
        t->waits = still;
        pthread_mutex_unlock(&t->mu);
    }
    if (!t->redis) {
        pthread_mutex_lock(&t->mu);
        mem_sweep(t, wall_ms());
        pthread_mutex_unlock(&t->mu);
    }
}

static void *tasks_main(void *arg)
{
    struct tasks *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += POLL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stopping)
            break;
        pthread_mutex_unlock(&t->mu);
        tick(t, 0);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    tick(t, 1);
    return NULL;
}

/* ---- life cycle ------------------------------------------------------------------ */

#define REDIS_ENV "SKILL_MCP_TASKS_REDIS"

/* The password of a redis:// URL: where it starts in url and its length
 * (0 when there is none). */
static size_t url_password(const char *url, const char **pw)
{
    const char *p = strncmp(url, "redis://", 8) ? url : url + 8;
    const char *at = strrchr(p, '@');
    *pw = NULL;
    if (!at)
        return 0;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    *pw = colon ? colon + 1 : p;
    return (size_t)(at - *pw);
}

/* url with its password shown as "***", for messages. */
static void url_redacted(const char *url, char *out, size_t n)
{
    const char *pw;
    size_t len = url_password(url, &pw);
    if (!len)
        snprintf(out, n, "%s", url);
    else
        snprintf(out, n, "%.*s***%s", (int)(pw - url), url, pw + len);
}

/* Overwrites the password inside s (an argv or environ string) in place. */
static void scrub(char *s)
{
    const char *pw;
    size_t len = url_password(s, &pw);
    if (len)
        memset(s + (pw - s), '*', len);
}

static char *read_url_file(const char *path)
{
    char buf[4096];
    int fd;
    struct stat st;
    if ((fd = x_open_regular(AT_FDCWD, path, &st)) < 0) {
        fprintf(stderr, "skill-mcp: --tasks-redis-file %s: %s\n", path,
                fd == -EINVAL || fd == -EISDIR ? "not a regular file" : strerror(-fd));
        return NULL;
    }
    size_t n = x_pread_full(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n] = '\0';
    while (n && strchr(" \t\r\n", buf[n - 1]))
        buf[--n] = '\0';
    if (!n || strchr(buf, '\n')) {
        fprintf(stderr, "skill-mcp: --tasks-redis-file %s: expected one line holding "
                        "redis://[:PASSWORD@]HOST[:PORT][/DB]\n", path);
        return NULL;
    }
    if (st.st_mode & 077)
        log_warn("--tasks-redis-file %s can be read by other users (mode %03o); make it 0600",
                 path, (unsigned)(st.st_mode & 0777));
    return xstrdup(buf);
}

int tasks_take_url(struct cfg *c, int argc, char **argv)
{
    static char *url;       /* lives as long as the configuration */
    char *env = getenv(REDIS_ENV);
    int from_env = env && *env;
    if (c->tasks_redis && c->tasks_redis_file) {
        fprintf(stderr, "skill-mcp: give the Redis URL once: --tasks-redis or "
                        "--tasks-redis-file, not both\n");
        return -1;
    }
    if (c->tasks_redis_file) {
        if (!(url = read_url_file(c->tasks_redis_file)))
            return -1;
    } else if (c->tasks_redis) {
        url = xstrdup(c->tasks_redis);
        const char *pw;
        if (url_password(url, &pw)) {
            log_warn("the Redis password is on the command line (--tasks-redis), where other "
                     "users may read it before it is scrubbed; use --tasks-redis-file FILE or "
                     "the " REDIS_ENV " environment variable");
            for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--tasks-redis") && i + 1 < argc)
                    scrub(argv[++i]);
                else if (!strncmp(argv[i], "--tasks-redis=", 14))
                    scrub(argv[i] + 14);
            }
        }
    } else if (from_env && c->enable_tasks) {
        /* Only with tasks on: an environment shared with other services
         * must not stop a server that does not use it. */
        url = xstrdup(env);
    }
    if (env) {
        /* Scrubbed in the original block too, which /proc/PID/environ shows. */
        memset(env, 0, strlen(env));
        unsetenv(REDIS_ENV);
    }
    if (url)
        c->tasks_redis = url;
    return 0;
}

int tasks_check_config(const struct cfg *c)
{
    if (!c->enable_tasks) {
        if (c->tasks_redis)
            fprintf(stderr, "skill-mcp: --tasks-redis needs --enable-tasks\n");
        return c->tasks_redis ? -1 : 0;
    }
    if (c->no_scripts) {
        fprintf(stderr, "skill-mcp: --enable-tasks runs scripts as tasks; it cannot go with "
                        "--no-scripts\n");
        return -1;
    }
    if (c->max_task_records_per_client < c->max_tasks_per_client) {
        fprintf(stderr, "skill-mcp: --max-task-records-per-client (%d) must be at least "
                        "--max-tasks-per-client (%d): working tasks are records too\n",
                c->max_task_records_per_client, c->max_tasks_per_client);
        return -1;
    }
    if (c->tasks_redis) {
        struct tasks t;
        memset(&t, 0, sizeof t);
        if (parse_url(&t, c->tasks_redis) < 0) {
            char shown[600];
            url_redacted(c->tasks_redis, shown, sizeof shown);
            fprintf(stderr, "skill-mcp: invalid value '%s' for --tasks-redis: expected "
                            "redis://[:PASSWORD@]HOST[:PORT][/DB]\n", shown);
            return -1;
        }
    } else if (c->workers > 1) {
        fprintf(stderr, "skill-mcp: --enable-tasks with --workers %d needs --tasks-redis URL: "
                        "a task kept in one worker's memory could not be polled or cancelled "
                        "through the others\n", c->workers);
        return -1;
    }
    return 0;
}

struct tasks *tasks_start(struct srv *S)
{
    if (!S->cfg.enable_tasks)
        return NULL;
    struct tasks *t = xcalloc(1, sizeof *t);
    t->S = S;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->mem_tail = &t->mem;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    char rnd[40];
    new_id(rnd, sizeof rnd);
    snprintf(t->owner, sizeof t->owner, "%.63s:%d:%.8s", host, (int)getpid(), rnd);
    if (S->cfg.tasks_redis) {
        t->redis = 1;
        parse_url(t, S->cfg.tasks_redis);      /* checked at start-up */
        pthread_key_create(&t->conn_key, NULL);
        char why[300];
        redisContext *c = conn(t, why, sizeof why);
        if (!c)
            log_warn("tasks: %s; tasks are unavailable until it answers (everything else "
                     "works)", why);
        else
            log_info("tasks: records in %s", t->where);
    }
    if (pthread_create(&t->thread, NULL, tasks_main, t)) {
        log_error("cannot start the tasks thread");
        tasks_free(t);
        return NULL;
    }
    t->running = 1;
    return t;
}

void tasks_quiesce(struct tasks *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->quiescing = 1;
    t->no_runner = 1;       /* the runner goes away with the loop */
    pthread_mutex_unlock(&t->mu);
}

void tasks_stop(struct tasks *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stopping = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->running)
        pthread_join(t->thread, NULL);
    t->running = 0;
}

void tasks_free(struct tasks *t)
{
    if (!t)
        return;
    tasks_stop(t);
    while (t->live) {
        struct live *l = t->live;
        t->live = l->next;
        free(l);
    }
    while (t->finishes) {
        struct finish *f = t->finishes;
        t->finishes = f->next;
        free_finish(f);
    }
    while (t->mem) {
        struct mtask *m = t->mem;
        t->mem = m->next;
        trec_cleanup(&m->r);
        free(m);
    }
    while (t->conns) {
        struct connref *r = t->conns;
        t->conns = r->next;
        redisFree(r->c);
        free(r);
    }
    if (t->redis)
        pthread_key_delete(t->conn_key);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void tasks_capabilities(const struct srv *S, json_t *caps, int discover)
{
    if (!S->tasks)
        return;
    if (!discover) {
        json_object_set_new(caps, "tasks",
                            json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests",
                                      "tools", "call"));
        return;
    }
    json_t *ext = json_object_get(caps, "extensions");
    if (json_is_object(ext))
        json_object_set_new(ext, EXT_TASKS, json_object());
}

/* ---- creating ------------------------------------------------------------------- */

static int declares_ext(const struct mcp_call *c)
{
    json_t *meta = json_object_get(c->params, "_meta");
    json_t *caps = json_object_get(meta, "io.modelcontextprotocol/clientCapabilities");
    return json_object_get(json_object_get(caps, "extensions"), EXT_TASKS) != NULL;
}

int tasks_wanted(struct mcp_call *c, const char *tool)
{
    if (!c->S->tasks)
        return 0;   /* the capability is not declared: task metadata is ignored */
    int runs = !strcmp(tool, "run_skill_script");
    if (c->modern)
        return runs && declares_ext(c);
    json_t *task = json_object_get(c->params, "task");
    if (!task || json_is_null(task))
        return 0;
    if (!json_is_object(task)) {
        mcp_error(c, RPC_INVALID_PARAMS, NULL, "params.task must be an object");
        return -1;
    }
    json_t *ttl = json_object_get(task, "ttl");
    if (ttl && !json_is_null(ttl) && (!json_is_number(ttl) || json_number_value(ttl) < 0)) {
        mcp_error(c, RPC_INVALID_PARAMS, NULL, "params.task.ttl must be a number of milliseconds");
        return -1;
    }
    if (!runs) {
        mcp_error(c, RPC_METHOD_NOT_FOUND, NULL,
                  "Tool '%.64s' cannot run as a task (only run_skill_script can)", tool);
        return -1;
    }
    return 1;
}

static void on_task_done(json_t *result, int ok, double ms, void *arg)
{
    struct live *l = arg;
    struct tasks *t = l->t;
    char msg[400] = "";
    const char *status;
    const char *st = json_string_value(json_object_get(result, "status"));
    pthread_mutex_lock(&t->mu);
    int quiescing = t->quiescing;
    pthread_mutex_unlock(&t->mu);
    if (quiescing) {
        status = "failed";
        snprintf(msg, sizeof msg, "The server shut down before the task finished; the script "
                                  "was stopped. Run it again.");
    } else if (ok) {
        status = "completed";
    } else {
        status = "tool_error";
        snprintf(msg, sizeof msg, "run_skill_script ended with status %s; the result says why",
                 st ? st : "failed");
    }
    size_t len;
    char *bytes = tools_render_run(t->S, result, ok, ms, 0, &len);
    log_info("task %s: run ended (%s)", l->id, status);
    if (!t->redis) {
        /* The record gets its result before the run stops counting as
         * live, so settling() never sees neither. */
        char why[300];
        st_finish(t, l->id, l->client, status, msg, bytes, l->ttl, why, sizeof why);
        free(bytes);
    }
    pthread_mutex_lock(&t->mu);
    for (struct live **pp = &t->live; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    pthread_cond_signal(&t->cv);        /* a tasks/result may be waiting */
    pthread_mutex_unlock(&t->mu);
    if (t->redis) {
        struct finish *f = xcalloc(1, sizeof *f);
        snprintf(f->id, sizeof f->id, "%s", l->id);
        snprintf(f->client, sizeof f->client, "%s", l->client);
        snprintf(f->status, sizeof f->status, "%s", status);
        snprintf(f->msg, sizeof f->msg, "%s", msg);
        f->ttl = l->ttl;
        f->result = bytes;
        pthread_mutex_lock(&t->mu);
        f->next = t->finishes;
        t->finishes = f;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    free(l);
}

/* Whose records a new task counts against: the authenticated client, or
 * without authentication the peer's address (a client can mint sessions at
 * will, not addresses). */
static void quota_of(const struct mcp_call *c, char *out, size_t n)
{
    if (c->client)
        snprintf(out, n, "%s", c->client);
    else
        x_peer_key(c->peer, out, n);
}

int tasks_create(struct mcp_call *c)
{
    struct tasks *t = c->S->tasks;
    struct trec r;
    char why[400];
    pthread_mutex_lock(&t->mu);
    int quiescing = t->quiescing;
    pthread_mutex_unlock(&t->mu);
    if (quiescing) {
        hook_plan_free(c->plan);
        c->plan = NULL;
        return unavailable(c, "the server is shutting down");
    }
    memset(&r, 0, sizeof r);
    new_id(r.id, sizeof r.id);
    snprintf(r.client, sizeof r.client, "%s", client_of(c));
    snprintf(r.status, sizeof r.status, "working");
    snprintf(r.owner, sizeof r.owner, "%s", t->owner);
    r.created = r.updated = wall_ms();
    int64_t max_ttl = (int64_t)(c->S->cfg.task_ttl * 1000);
    r.ttl = max_ttl;
    json_t *req_ttl = json_object_get(json_object_get(c->params, "task"), "ttl");
    if (!c->modern && json_is_number(req_ttl)) {
        double v = json_number_value(req_ttl);
        /* a requested ttl may shorten the default, not lengthen it */
        r.ttl = v < 1000 ? 1000 : v > (double)max_ttl ? max_ttl : (int64_t)v;
    }
    if (c->plan)
        snprintf(r.rid, sizeof r.rid, "%s", hook_request_id(c->plan));
    else if (r.ttl > EARLY_TTL_MS)
        r.ttl = EARLY_TTL_MS;
    quota_of(c, r.quota, sizeof r.quota);
    int rc = st_create(t, &r, c->S->cfg.max_tasks_per_client, why, sizeof why);
    if (rc != 0) {
        hook_plan_free(c->plan);
        c->plan = NULL;
        if (rc < 0)
            return unavailable(c, why);
        if (rc == 2)
            return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                             "Too many task records: this client keeps %d, all working "
                             "(--max-task-records-per-client). Wait for one to finish.",
                             c->S->cfg.max_task_records_per_client);
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "Too many live tasks: this client has %d tasks working already "
                         "(--max-tasks-per-client). Wait for one to finish or cancel one.",
                         c->S->cfg.max_tasks_per_client);
    }
    log_info("task %s: created%s%s", r.id, r.client[0] ? " for " : "", r.client);
    if (c->plan) {
        struct live *l = xcalloc(1, sizeof *l);
        l->t = t;
        snprintf(l->id, sizeof l->id, "%s", r.id);
        snprintf(l->rid, sizeof l->rid, "%s", r.rid);
        snprintf(l->client, sizeof l->client, "%s", r.client);
        l->ttl = r.ttl;
        pthread_mutex_lock(&t->mu);
        l->next = t->live;
        t->live = l;
        pthread_mutex_unlock(&t->mu);
        struct hook_plan *p = c->plan;
        c->plan = NULL;
        hook_set_mode(p, "task");
        hook_start(p, on_task_done, l);
    } else {
        /* The call was answered without running anything (bad arguments,
         * a busy client): the task is over as soon as it exists. */
        char *copy = xstrndup(c->raw ? c->raw : "{}", c->raw ? c->rawlen : 2);
        json_t *res = json_loads(copy, 0, NULL);
        int err = json_is_true(json_object_get(res, "isError"));
        json_decref(res);
        const char *st = err ? "tool_error" : "completed";
        if (st_finish(t, r.id, r.client, st, err ? "run_skill_script returned an error; the "
                                                   "result says why" : "",
                      copy, r.ttl, why, sizeof why) < 0) {
            free(copy);
            return unavailable(c, why);
        }
        snprintf(r.status, sizeof r.status, "%s", st);
        free(copy);
        free(c->raw_owned);
        c->raw_owned = NULL;
        c->raw = NULL;
    }
    json_t *task = task_json(&r, c->modern, 0);
    if (c->modern) {
        json_object_set_new(task, "resultType", json_string("task"));
        json_object_set_new(task, "_meta",
                            json_pack("{s:{s:s, s:s}}", "io.modelcontextprotocol/serverInfo",
                                      "name", "skill-mcp", "version", SKILL_VERSION));
        c->result = task;
    } else {
        c->result = json_pack("{s:o}", "task", task);
    }
    return 0;
}

/* ---- methods --------------------------------------------------------------------- */

/* The task id parameter, after the era and capability checks. */
static const char *need_task(struct mcp_call *c)
{
    if (!c->S->tasks) {
        mcp_error(c, RPC_METHOD_NOT_FOUND, NULL,
                  "Method not found: tasks are not enabled on this server (--enable-tasks)");
        return NULL;
    }
    if (c->modern && !declares_ext(c)) {
        mcp_error(c, RPC_MISSING_CAPABILITY,
                  json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", EXT_TASKS),
                  "Missing required client capability: extensions.%s", EXT_TASKS);
        return NULL;
    }
    json_t *id = json_object_get(c->params, "taskId");
    if (!json_is_string(id)) {
        mcp_error(c, RPC_INVALID_PARAMS, NULL, "params.taskId (a string) is required");
        return NULL;
    }
    return json_string_value(id);
}

/* The record of the request's taskId, visible to its client: 0 with *r
 * filled (trec_cleanup it), or -1 with the error answered; what names the
 * operation in the not-found message ("retrieve", "update"). */
static int lookup(struct mcp_call *c, const char **id, struct trec *r, const char *what)
{
    char why[400];
    if (!(*id = need_task(c)))
        return -1;
    int rc = st_get(c->S->tasks, *id, client_of(c), r, why, sizeof why);
    if (rc < 0)
        return unavailable(c, why);
    if (rc == 1) {
        trec_cleanup(r);
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "Failed to %s task: Task not found or expired", what);
    }
    return 0;
}

int tasks_m_get(struct mcp_call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "retrieve") < 0)
        return -1;
    c->result = task_json(&r, c->modern, 1);
    trec_cleanup(&r);
    return 0;
}

int tasks_m_result(struct mcp_call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "retrieve") < 0)
        return -1;
    if (is_terminal(r.status) && !settling(c->S->tasks, &r)) {
        size_t len;
        c->raw_response = result_response(&r, c->id, &len);
        c->raw_response_len = len;
        trec_cleanup(&r);
        return 0;
    }
    trec_cleanup(&r);
    /* Still working: the answer waits for the end (the HTTP side parks
     * the connection; the tasks thread answers it). */
    struct tasks_wait *w = xcalloc(1, sizeof *w);
    w->t = c->S->tasks;
    snprintf(w->id, sizeof w->id, "%s", id);
    snprintf(w->client, sizeof w->client, "%s", client_of(c));
    w->rpc_id = json_deep_copy(c->id);
    c->wait = w;
    return 0;
}

void tasks_wait_start(struct tasks_wait *w, void (*done)(char *body, size_t len, void *arg),
                      void *arg)
{
    struct tasks *t = w->t;
    w->done = done;
    w->arg = arg;
    pthread_mutex_lock(&t->mu);
    if (!t->stopping) {
        w->next = t->waits;
        t->waits = w;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return;
    }
    pthread_mutex_unlock(&t->mu);
    /* no tasks thread left to answer it */
    size_t len;
    char *body = error_response(w->rpc_id, RPC_INTERNAL_ERROR,
                                "the server is shutting down; poll tasks/get later", &len);
    json_decref(w->rpc_id);
    free(w);
    done(body, len, arg);
}

int tasks_m_list(struct mcp_call *c)
{
    if (!c->S->tasks)
        return mcp_error(c, RPC_METHOD_NOT_FOUND, NULL,
                         "Method not found: tasks are not enabled on this server "
                         "(--enable-tasks)");
    size_t off = 0;
    json_t *cur = json_object_get(c->params, "cursor");
    if (cur && !json_is_null(cur)) {
        if (list_cursor_parse(json_string_value(cur), 1000000, &off) < 0)
            return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                             "invalid cursor: pass the nextCursor of the previous page");
    }
    struct trec recs[PAGE];
    size_t n;
    int more;
    char why[400];
    if (st_list(c->S->tasks, client_of(c), off, recs, &n, &more, why, sizeof why) < 0)
        return unavailable(c, why);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, task_json(&recs[i], 0, 0));
    c->result = json_pack("{s:o}", "tasks", a);
    if (more) {
        char next[24];
        snprintf(next, sizeof next, "%zu", off + n);
        json_object_set_new(c->result, "nextCursor", json_string(next));
    }
    return 0;
}

int tasks_m_cancel(struct mcp_call *c)
{
    const char *id = need_task(c);
    if (!id)
        return -1;
    struct tasks *t = c->S->tasks;
    char was[16] = "", why[400];
    int rc = st_cancel(t, id, client_of(c), was, sizeof was, why, sizeof why);
    if (rc < 0)
        return unavailable(c, why);
    if (rc == 1)
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "Failed to cancel task: Task not found or expired");
    if (rc == 2)
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "Cannot cancel task: already in terminal status '%s'",
                         status_for(was, c->modern));
    log_info("task %s: cancel requested", id);
    /* This worker's own run stops at once; another worker's when its
     * tasks thread next reads the record. */
    pthread_mutex_lock(&t->mu);
    for (struct live *l = t->live; l; l = l->next)
        if (!strcmp(l->id, id))
            l->cancel = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (c->modern) {
        c->result = json_object();
        return 0;
    }
    struct trec r;
    if (st_get(t, id, client_of(c), &r, why, sizeof why) != 0)
        return unavailable(c, why);
    c->result = task_json(&r, 0, 0);
    trec_cleanup(&r);
    return 0;
}

int tasks_m_update(struct mcp_call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "update") < 0)
        return -1;
    trec_cleanup(&r);
    return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                     "Task %s never asks for input (a script gets all of its input when it "
                     "starts): there is nothing to update",
                     id);
}
