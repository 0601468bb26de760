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
 * The records live in a task store (tstore.h): tstore_mem.c or
 * tstore_redis.c, which also describes the Redis layout.
 */
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acl.h"
#include "call.h"
#include "hooks.h"
#include "proto.h"
#include "runner.h"
#include "tools.h"
#include "tstore.h"
#include "util.h"

#define EXT_TASKS "io.modelcontextprotocol/tasks"
#define RELATED_TASK "io.modelcontextprotocol/related-task"
#define POLL_MS 250             /* the tasks thread's tick */
#define CLIENT_POLL_MS 1000     /* pollInterval suggested to clients */
/* A cancelled run still owes its result for this long (kill grace, drain,
 * post hook); another worker cannot see the owner's runs, so it waits by
 * the clock. */
#define CANCEL_SETTLE_MS 10000
#define PAGE 20                 /* tasks/list page */
/* A task that ended before anything ran (unknown skill, bad arguments) is
 * kept this long at most: long enough to read, too short to hoard. */
#define EARLY_TTL_MS 60000

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
    struct call *call;          /* answered through call_finish() */
    struct tasks_wait *next;
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
    struct tstore *store;
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

static const char *client_of(const struct call *c)
{
    return c->client ? c->client : "";
}

static int unavailable(struct call *c, const char *why)
{
    return call_error(c, RPC_INTERNAL_ERROR, NULL, "tasks unavailable: %s", why);
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
    return live || (t->store->shared && wall_ms() - r->updated < CANCEL_SETTLE_MS);
}

/* The answer of tasks/result for a finished record, set on c. */
static void answer_record(struct call *c, const struct trec *r)
{
    json_t *res = r->result && strcmp(r->status, "failed") ? json_loads(r->result, 0, NULL) : NULL;
    if (!res) {
        /* The run itself never produced a result: the request's answer is
         * this error. */
        call_error(c, RPC_INTERNAL_ERROR, NULL, "%s",
                   r->msg[0] ? r->msg : "the task ended without a result");
        return;
    }
    json_t *meta = json_object_get(res, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(res, "_meta", meta);
    }
    json_object_set_new(meta, RELATED_TASK, json_pack("{s:s}", "taskId", r->id));
    call_result(c, res);
}

/* A waiting tasks/result is answered: its call completes (once) and the
 * wait lets go of it. */
static void wait_end(struct tasks_wait *w)
{
    call_finish(w->call);
    call_unref(w->call);
    free(w);
}

/* A wait that was never started (its call ended first). */
static void wait_drop(struct tasks_wait *w)
{
    free(w);
}

/* ---- the tasks thread ------------------------------------------------------------- */

static void free_finish(struct finish *f)
{
    free(f->result);
    free(f);
}

static void tick(struct tasks *t, int final)
{
    struct err why;
    /* 1. write finished runs */
    pthread_mutex_lock(&t->mu);
    struct finish *fl = t->finishes;
    t->finishes = NULL;
    pthread_mutex_unlock(&t->mu);
    struct finish *keep = NULL;
    while (fl) {
        struct finish *f = fl;
        fl = f->next;
        int rc = tstore_finish(t->store, f->id, f->client, f->status, f->msg, f->result, f->ttl,
                               &why);
        if (rc < 0 && !final) {
            /* Redis is away: keep the result and try again next tick. */
            log_warn("task %s: cannot store its result yet: %s", f->id, why.msg);
            f->next = keep;
            keep = f;
            continue;
        }
        if (rc < 0)
            log_error("task %s: its result is lost (%s): %s", f->id, f->status, why.msg);
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
    if (!final)
        tstore_tick(t->store);
    if (t->store->shared && !final) {
        char ids[64][40];
        int n = 0;
        pthread_mutex_lock(&t->mu);
        for (struct live *l = t->live; l && n < 64; l = l->next)
            if (!l->cancel)
                snprintf(ids[n++], sizeof ids[0], "%s", l->id);
        pthread_mutex_unlock(&t->mu);
        for (int i = 0; i < n; i++) {
            int cancelled = tstore_cancelled(t->store, ids[i], &why);
            if (cancelled < 0)
                break;
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
        int answered = 1;
        int rc = tstore_get(t->store, w->id, w->client, &r, &why);
        if (rc < 0)
            call_error(w->call, RPC_INTERNAL_ERROR, NULL, "tasks unavailable: %s", why.msg);
        else if (rc == 1)
            call_error(w->call, RPC_INVALID_PARAMS, NULL,
                       "Failed to retrieve task: Task not found or expired");
        else if (is_terminal(r.status) && (final || !settling(t, &r)))
            answer_record(w->call, &r);
        else if (final)
            call_error(w->call, RPC_INTERNAL_ERROR, NULL,
                       "the server is shutting down; poll tasks/get later");
        else
            answered = 0;
        if (rc == 0)
            trec_cleanup(&r);
        if (!answered) {
            w->next = still;
            still = w;
            continue;
        }
        wait_end(w);
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
}

static void *tasks_main(void *arg)
{
    struct tasks *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stopping) {
        struct timespec ts = now_after_ms(POLL_MS);
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

/* url with its password shown as "***", for messages about a URL that may
 * not parse. Without an '@' nothing marks where a password ends
 * ("redis://:PASSWORD" is one), so all after the first ':' past the scheme
 * is hidden. */
static void url_redacted(const char *url, char *out, size_t n)
{
    const char *pw;
    size_t len = url_password(url, &pw);
    const char *scheme = strstr(url, "://");
    const char *colon = strchr(scheme ? scheme + 3 : url, ':');
    if (len)
        snprintf(out, n, "%.*s***%s", (int)(pw - url), url, pw + len);
    else if (colon && colon[1])
        snprintf(out, n, "%.*s***", (int)(colon + 1 - url), url);
    else
        snprintf(out, n, "%s", url);
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
            /* From --config the URL is in a file already: nothing to say. */
            int on_argv = 0;
            for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--tasks-redis") && i + 1 < argc)
                    on_argv = 1, scrub(argv[++i]);
                else if (!strncmp(argv[i], "--tasks-redis=", 14))
                    on_argv = 1, scrub(argv[i] + 14);
            }
            if (on_argv)
                log_warn("the Redis password is on the command line (--tasks-redis), where "
                         "other users may read it before it is scrubbed; use "
                         "--tasks-redis-file FILE, the " REDIS_ENV " environment variable or "
                         "--config FILE");
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
        if (tstore_redis_url_ok(c->tasks_redis) < 0) {
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
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    char rnd[40];
    new_id(rnd, sizeof rnd);
    snprintf(t->owner, sizeof t->owner, "%.63s:%d:%.8s", host, (int)getpid(), rnd);
    const struct cfg *cf = &S->cfg;
    struct tstore_cfg sc = {
        .max_live = cf->max_tasks_per_client,
        .max_records = cf->max_task_records_per_client,
        /* the longest a run may take: queue, hooks, script, hooks */
        .run_ms = (int64_t)((cf->script_queue_timeout + cf->max_script_timeout +
                             4 * cf->hook_timeout + 60) * 1000),
        .owner = t->owner,
    };
    /* The URL was checked at start-up. */
    t->store = cf->tasks_redis ? tstore_redis_new(&sc, cf->tasks_redis) : tstore_mem_new(&sc);
    if (!t->store) {
        log_error("tasks: --tasks-redis does not parse");
        tasks_free(t);
        return NULL;
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
    tstore_free(t->store);
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

static int declares_ext(const struct call *c)
{
    json_t *meta = json_object_get(c->params, "_meta");
    json_t *caps = json_object_get(meta, "io.modelcontextprotocol/clientCapabilities");
    return json_object_get(json_object_get(caps, "extensions"), EXT_TASKS) != NULL;
}

int tasks_wanted(struct call *c, const char *tool)
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
        call_error(c, RPC_INVALID_PARAMS, NULL, "params.task must be an object");
        return -1;
    }
    json_t *ttl = json_object_get(task, "ttl");
    if (ttl && !json_is_null(ttl) && (!json_is_number(ttl) || json_number_value(ttl) < 0)) {
        call_error(c, RPC_INVALID_PARAMS, NULL, "params.task.ttl must be a number of milliseconds");
        return -1;
    }
    if (!runs) {
        call_error(c, RPC_METHOD_NOT_FOUND, NULL,
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
    if (!t->store->shared) {
        /* The record gets its result before the run stops counting as
         * live, so settling() never sees neither. */
        tstore_finish(t->store, l->id, l->client, status, msg, bytes, l->ttl, NULL);
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
    if (t->store->shared) {
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
static void quota_of(const struct call *c, char *out, size_t n)
{
    if (c->client)
        snprintf(out, n, "%s", c->client);
    else
        x_peer_key(c->peer, out, n);
}

int tasks_create(struct call *c)
{
    struct tasks *t = c->S->tasks;
    struct trec r;
    struct err why;
    pthread_mutex_lock(&t->mu);
    int quiescing = t->quiescing;
    pthread_mutex_unlock(&t->mu);
    if (quiescing)
        return unavailable(c, "the server is shutting down");   /* drops the run */
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
    struct hook_plan *plan = call_run_plan(c);
    if (plan) {
        snprintf(r.rid, sizeof r.rid, "%s", hook_request_id(plan));
        snprintf(r.skill, sizeof r.skill, "%s", hook_skill(plan));
    }
    else if (r.ttl > EARLY_TTL_MS)
        r.ttl = EARLY_TTL_MS;
    quota_of(c, r.quota, sizeof r.quota);
    int rc = tstore_create(t->store, &r, &why);
    if (rc != 0) {
        if (rc < 0)
            return unavailable(c, why.msg);
        if (rc == 2)
            return call_error(c, RPC_INVALID_PARAMS, NULL,
                             "Too many task records: this client keeps %d, all working "
                             "(--max-task-records-per-client). Wait for one to finish.",
                             c->S->cfg.max_task_records_per_client);
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "Too many live tasks: this client has %d tasks working already "
                         "(--max-tasks-per-client). Wait for one to finish or cancel one.",
                         c->S->cfg.max_tasks_per_client);
    }
    log_info("task %s: created%s%s", r.id, r.client[0] ? " for " : "", r.client);
    if (plan) {
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
        call_take_run(c);      /* the task owns it now */
        hook_set_mode(plan, "task");
        hook_start(plan, on_task_done, l);
    } else {
        /* The call was answered without running anything (bad arguments,
         * a busy client): the task is over as soon as it exists. */
        size_t rawlen;
        const char *raw = call_raw_bytes(c, &rawlen, NULL);
        char *copy = xstrndup(raw ? raw : "{}", raw ? rawlen : 2);
        json_t *res = json_loads(copy, 0, NULL);
        int err = json_is_true(json_object_get(res, "isError"));
        json_decref(res);
        const char *st = err ? "tool_error" : "completed";
        if (tstore_finish(t->store, r.id, r.client, st,
                          err ? "run_skill_script returned an error; the result says why" : "",
                          copy, r.ttl, &why) < 0) {
            free(copy);
            return unavailable(c, why.msg);
        }
        snprintf(r.status, sizeof r.status, "%s", st);
        free(copy);
    }
    call_result_task(c, task_json(&r, c->modern, 0));
    return 0;
}

/* ---- methods --------------------------------------------------------------------- */

/* The task id parameter, after the era and capability checks. */
static const char *need_task(struct call *c)
{
    if (!c->S->tasks) {
        call_error(c, RPC_METHOD_NOT_FOUND, NULL,
                  "Method not found: tasks are not enabled on this server (--enable-tasks)");
        return NULL;
    }
    if (c->modern && !declares_ext(c)) {
        call_error(c, RPC_MISSING_CAPABILITY,
                  json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", EXT_TASKS),
                  "Missing required client capability: extensions.%s", EXT_TASKS);
        return NULL;
    }
    json_t *id = json_object_get(c->params, "taskId");
    if (!json_is_string(id)) {
        call_error(c, RPC_INVALID_PARAMS, NULL, "params.taskId (a string) is required");
        return NULL;
    }
    return json_string_value(id);
}

/* The record of the request's taskId, visible to its client: 0 with *r
 * filled (trec_cleanup it), or -1 with the error answered; what names the
 * operation in the not-found message ("retrieve", "update"). */
/* A task of a skill the caller may no longer see (--acl, rules changed
 * since it ran) is gone for it, as the skill is. */
static int hidden(const struct call *c, const struct trec *r)
{
    return c->view && r->skill[0] && !acl_class_sees(c->view->cls, r->skill);
}

static int lookup(struct call *c, const char **id, struct trec *r, const char *what)
{
    struct err why;
    if (!(*id = need_task(c)))
        return -1;
    int rc = tstore_get(c->S->tasks->store, *id, client_of(c), r, &why);
    if (rc < 0)
        return unavailable(c, why.msg);
    if (rc == 0 && hidden(c, r))
        rc = 1;
    if (rc == 1) {
        trec_cleanup(r);
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "Failed to %s task: Task not found or expired", what);
    }
    return 0;
}

int tasks_m_get(struct call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "retrieve") < 0)
        return -1;
    call_result(c, task_json(&r, c->modern, 1));
    trec_cleanup(&r);
    return 0;
}

int tasks_m_result(struct call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "retrieve") < 0)
        return -1;
    if (is_terminal(r.status) && !settling(c->S->tasks, &r)) {
        answer_record(c, &r);
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
    call_wait(c, w, wait_drop);
    return 0;
}

void tasks_wait_start(struct tasks_wait *w, struct call *c)
{
    struct tasks *t = w->t;
    w->call = c;
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
    call_error(c, RPC_INTERNAL_ERROR, NULL, "the server is shutting down; poll tasks/get later");
    wait_end(w);
}

int tasks_m_list(struct call *c)
{
    if (!c->S->tasks)
        return call_error(c, RPC_METHOD_NOT_FOUND, NULL,
                         "Method not found: tasks are not enabled on this server "
                         "(--enable-tasks)");
    size_t off = 0;
    json_t *cur = json_object_get(c->params, "cursor");
    if (cur && !json_is_null(cur)) {
        if (list_cursor_parse(json_string_value(cur), 1000000, &off) < 0)
            return call_error(c, RPC_INVALID_PARAMS, NULL,
                             "invalid cursor: pass the nextCursor of the previous page");
    }
    struct trec recs[PAGE];
    size_t n;
    int more;
    struct err why;
    if (tstore_list(c->S->tasks->store, client_of(c), off, recs, PAGE, &n, &more, &why) < 0)
        return unavailable(c, why.msg);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        if (!hidden(c, &recs[i]))
            json_array_append_new(a, task_json(&recs[i], 0, 0));
    json_t *res = json_pack("{s:o}", "tasks", a);
    if (more) {
        char next[24];
        snprintf(next, sizeof next, "%zu", off + n);
        json_object_set_new(res, "nextCursor", json_string(next));
    }
    call_result(c, res);
    return 0;
}

int tasks_m_cancel(struct call *c)
{
    const char *id = need_task(c);
    if (!id)
        return -1;
    struct tasks *t = c->S->tasks;
    char was[16] = "";
    struct err why = {0};
    if (c->view) {
        struct trec h;
        int g = tstore_get(t->store, id, client_of(c), &h, &why);
        int gone = g == 0 && hidden(c, &h);
        if (g == 0)
            trec_cleanup(&h);
        if (gone)
            return call_error(c, RPC_INVALID_PARAMS, NULL,
                             "Failed to cancel task: Task not found or expired");
    }
    int rc = tstore_cancel(t->store, id, client_of(c), was, sizeof was, &why);
    if (rc < 0)
        return unavailable(c, why.msg);
    if (rc == 1)
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "Failed to cancel task: Task not found or expired");
    if (rc == 2)
        return call_error(c, RPC_INVALID_PARAMS, NULL,
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
        call_result(c, json_object());
        return 0;
    }
    struct trec r;
    if (tstore_get(t->store, id, client_of(c), &r, &why) != 0)
        return unavailable(c, why.msg);
    call_result(c, task_json(&r, 0, 0));
    trec_cleanup(&r);
    return 0;
}

int tasks_m_update(struct call *c)
{
    const char *id;
    struct trec r;
    if (lookup(c, &id, &r, "update") < 0)
        return -1;
    trec_cleanup(&r);
    return call_error(c, RPC_INVALID_PARAMS, NULL,
                     "Task %s never asks for input (a script gets all of its input when it "
                     "starts): there is nothing to update",
                     id);
}
