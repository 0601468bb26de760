/*
 * call.c - the request context and its one way to end (call_finish).
 */
#include "call.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "envelope.h"
#include "hooks.h"
#include "json.h"
#include "proto.h"
#include "session.h"
#include "skills.h"
#include "util.h"

/* What a method or a transport may not touch. */
struct call_outcome {
    enum call_kind kind;
    union {
        json_t *result;                 /* CALL_RESULT (owned) */
        struct {
            const char *p;              /* borrowed (valid while the snapshot is
                                           held), or owned */
            size_t len;
            char *owned;
        } raw;                          /* CALL_RAW */
        struct {
            char *p;
            size_t len;
        } response;                     /* CALL_RESPONSE (owned) */
        struct {
            int code;
            char *msg;                  /* owned: at most 511 bytes (the call
                                           stays small enough for malloc's
                                           per-thread cache) */
            json_t *data;               /* owned, or NULL */
        } error;                        /* CALL_ERROR */
        struct hook_plan *run;          /* CALL_RUN (owned until started) */
        struct {
            struct tasks_wait *w;       /* CALL_WAIT (owned until started) */
            void (*drop)(struct tasks_wait *w); /* frees one never started */
        } wait;
    } u;
    int task;               /* CALL_RESULT: the result is a task (call_result_task) */
    int cacheable;          /* enum call_cache: the ttlMs/cacheScope members it takes */
    int transport;          /* an error about headers or _meta: the transport refuses */
};

/* A call as call.c allocates it: the public request context first, then
 * the answer and its completion state. */
struct call_priv {
    struct call pub;
    /* the answer */
    struct call_outcome out;
    char *body;             /* with no completion callback: the final bytes */
    size_t len;
    /* completion, guarded by mu */
    pthread_mutex_t mu;
    int refs, completed, detached;
    call_bytes_fn on_complete;
    call_event_fn on_event;
    void *arg;
};

static inline struct call_priv *P(const struct call *c)
{
    return (struct call_priv *)(uintptr_t)((const char *)c - offsetof(struct call_priv, pub));
}

const char *call_view_arg(const struct rpc_view *v, const char *key, size_t *len)
{
    for (size_t i = 0; i < v->nargs; i++)
        if (!strcmp(v->key[i], key)) {
            if (len)
                *len = v->vlen[i];
            return v->val[i];
        }
    return NULL;
}

struct call *call_new(struct srv *S)
{
    struct call *c = &((struct call_priv *)xcalloc(1, sizeof(struct call_priv)))->pub;
    c->S = S;
    P(c)->refs = 1;
    c->log_level = SESSION_LEVEL_NONE;
    pthread_mutex_init(&P(c)->mu, NULL);
    /* --acl: until the transport says who is asking, the call sees what a
     * caller with no identity sees (the * rules), never every skill */
    if (S->acl)
        call_set_view(c, acl_classify(S->acl, NULL));
    return c;
}

const void *call_own_lock(const struct call *c)
{
    return &P(c)->mu;
}

void call_ref(struct call *c)
{
    pthread_mutex_lock(&P(c)->mu);
    P(c)->refs++;
    pthread_mutex_unlock(&P(c)->mu);
}

void call_unref(struct call *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&P(c)->mu);
    int last = --P(c)->refs == 0;
    pthread_mutex_unlock(&P(c)->mu);
    if (!last)
        return;
    call_clear(c);
    skills_release_held(c->snap, c->snap_hold);
    json_decref(c->id);
    json_decref(c->progress_token);
    json_decref(c->listen);
    free(P(c)->body);
    pthread_mutex_destroy(&P(c)->mu);
    free(P(c));
}

void call_on_complete(struct call *c, call_bytes_fn done, void *arg)
{
    pthread_mutex_lock(&P(c)->mu);
    P(c)->on_complete = done;
    P(c)->arg = arg;
    pthread_mutex_unlock(&P(c)->mu);
}

void call_on_event(struct call *c, call_event_fn event, void *arg)
{
    pthread_mutex_lock(&P(c)->mu);
    P(c)->on_event = event;
    P(c)->arg = arg;
    pthread_mutex_unlock(&P(c)->mu);
}

int call_detach(struct call *c)
{
    pthread_mutex_lock(&P(c)->mu);
    int done = P(c)->completed;
    P(c)->detached = 1;
    P(c)->on_complete = NULL;
    P(c)->on_event = NULL;
    P(c)->arg = NULL;
    pthread_mutex_unlock(&P(c)->mu);
    return done;
}

int call_streams(const struct call *c)
{
    return c->can_stream && (c->progress_token || c->log_stream || c->stream_always);
}

void call_set_view(struct call *c, const struct acl_class *k)
{
    if (k)
        c->view = acl_view(call_snapshot(c), k);
}

struct snapshot *call_snapshot(struct call *c)
{
    if (!c->snap)
        c->snap = skills_acquire_held(c->S->skills, &c->snap_hold);
    return c->snap;
}

void call_clear(struct call *c)
{
    struct call_outcome *o = &P(c)->out;
    switch (o->kind) {
    case CALL_RESULT:
        json_decref(o->u.result);
        break;
    case CALL_RAW:
        free(o->u.raw.owned);
        break;
    case CALL_RESPONSE:
        free(o->u.response.p);
        break;
    case CALL_ERROR:
        free(o->u.error.msg);
        json_decref(o->u.error.data);
        break;
    case CALL_RUN:
        hook_plan_free(o->u.run);
        break;
    case CALL_WAIT:
        if (o->u.wait.drop)
            o->u.wait.drop(o->u.wait.w);
        break;
    case CALL_NONE:
    case CALL_ACCEPTED:
        break;
    }
    int cacheable = o->cacheable;
    memset(o, 0, sizeof *o);
    o->cacheable = cacheable;
}

/* Outcomes are set by the thread that owns the call until it completes;
 * completion is published under mu, read here without it. */
static int completed(struct call *c)
{
    return __atomic_load_n(&P(c)->completed, __ATOMIC_ACQUIRE);
}

/* May an outcome be set? Yes (the one before freed) until completion. */
static int settable(struct call *c)
{
    if (completed(c))
        return 0;
    call_clear(c);
    return 1;
}

int call_error(struct call *c, int code, json_t *data, const char *fmt, ...)
{
    if (!settable(c)) {
        json_decref(data);
        return -1;
    }
    struct call_outcome *o = &P(c)->out;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(msg);   /* "%.128s" of caller input may split a character */
    o->u.error.msg = xstrdup(msg);
    o->kind = CALL_ERROR;
    o->u.error.code = code;
    o->u.error.data = data;
    return -1;
}

int call_result(struct call *c, json_t *result)
{
    if (!settable(c)) {
        json_decref(result);
        return -1;
    }
    P(c)->out.kind = CALL_RESULT;
    P(c)->out.u.result = result;
    return 0;
}

int call_result_task(struct call *c, json_t *task)
{
    if (call_result(c, task) < 0)
        return -1;
    P(c)->out.task = 1;
    return 0;
}

int call_raw(struct call *c, const char *raw, size_t len, char *owned)
{
    if (!settable(c)) {
        free(owned);
        return -1;
    }
    P(c)->out.kind = CALL_RAW;
    P(c)->out.u.raw.p = raw;
    P(c)->out.u.raw.len = len;
    P(c)->out.u.raw.owned = owned;
    return 0;
}

int call_response(struct call *c, char *bytes, size_t len)
{
    if (!settable(c)) {
        free(bytes);
        return -1;
    }
    P(c)->out.kind = CALL_RESPONSE;
    P(c)->out.u.response.p = bytes;
    P(c)->out.u.response.len = len;
    return 0;
}

int call_accepted(struct call *c)
{
    if (!settable(c))
        return -1;
    P(c)->out.kind = CALL_ACCEPTED;
    return 0;
}

int call_run(struct call *c, struct hook_plan *plan)
{
    if (!settable(c)) {
        hook_plan_free(plan);
        return -1;
    }
    P(c)->out.kind = CALL_RUN;
    P(c)->out.u.run = plan;
    return 0;
}

int call_wait(struct call *c, struct tasks_wait *w, void (*drop)(struct tasks_wait *w))
{
    if (!settable(c)) {
        if (drop)
            drop(w);
        return -1;
    }
    P(c)->out.kind = CALL_WAIT;
    P(c)->out.u.wait.w = w;
    P(c)->out.u.wait.drop = drop;
    return 0;
}

struct hook_plan *call_take_run(struct call *c)
{
    if (P(c)->out.kind != CALL_RUN)
        return NULL;
    struct hook_plan *p = P(c)->out.u.run;
    P(c)->out.u.run = NULL;
    return p;
}

struct tasks_wait *call_take_wait(struct call *c)
{
    if (P(c)->out.kind != CALL_WAIT)
        return NULL;
    struct tasks_wait *w = P(c)->out.u.wait.w;
    P(c)->out.u.wait.w = NULL;
    P(c)->out.u.wait.drop = NULL;
    return w;
}

void call_cacheable(struct call *c, enum call_cache how)
{
    P(c)->out.cacheable = (int)how;
}

void call_transport_error(struct call *c)
{
    P(c)->out.transport = 1;
}

int call_pending(const struct call *c)
{
    return P(c)->out.kind == CALL_RUN || P(c)->out.kind == CALL_WAIT;
}

/* What a caller with a view (--acl) sees is not what another would: no
 * shared cache may keep it, whichever era named the scope. */
static void private_scope(const struct call *c, json_t *result)
{
    if (c->view && json_object_get(result, "cacheScope"))
        json_object_set_new(result, "cacheScope", json_string("private"));
}

/* CALL_CACHE_BOTH: the members a 2026-07-28 cacheable result has, on the
 * earlier era too (its clients check them whatever version was
 * negotiated); on 2026-07-28 the envelope adds the rest. */
static void cache_members(const struct call *c, json_t *result)
{
    if (P(c)->out.cacheable != CALL_CACHE_BOTH || !json_is_object(result))
        return;
    json_object_set_new(result, "resultType", json_string("complete"));
    json_object_set_new(result, "ttlMs", json_integer(c->S->ttl_ms));
    json_object_set_new(result, "cacheScope", json_string("public"));
}

char *call_render_kept(struct call *c, json_t *result, size_t *len)
{
    cache_members(c, result);
    if (c->modern)
        env_decorate_modern(result, c->S->ttl_ms);
    private_scope(c, result);
    return jf_dumps(result, len);
}

/* A task result: on 2026-07-28 the task object itself, resultType "task"
 * and the era's serverInfo _meta (nothing about caching: a task's result
 * comes later); on the earlier era the object under "task". */
static void task_members(const struct call *c, json_t **result)
{
    if (!c->modern) {
        *result = json_pack("{s:o}", "task", *result);
        return;
    }
    json_object_set_new(*result, "resultType", json_string("task"));
    json_object_set_new(*result, "_meta",
                        json_pack("{s:o}", "io.modelcontextprotocol/serverInfo",
                                  env_server_info()));
}

/* The outcome as the bytes of its JSON-RPC response (NULL for none). */
static char *render(struct call *c, size_t *len)
{
    struct call_outcome *o = &P(c)->out;
    char *s = NULL;
    *len = 0;
    switch (o->kind) {
    case CALL_RESULT: {
        if (o->task)
            task_members(c, &o->u.result);
        cache_members(c, o->u.result);
        int64_t ttl = o->cacheable ? c->S->ttl_ms : -1;
        if (c->view && c->modern && ttl >= 0) {
            env_decorate_modern(o->u.result, ttl);
            ttl = -1;
        }
        private_scope(c, o->u.result);
        s = env_result(c->id, o->u.result, c->modern, ttl, len);
        break;
    }
    case CALL_RAW:
        s = env_result_raw(c->id, o->u.raw.p, o->u.raw.len, len);
        break;
    case CALL_RESPONSE:
        s = o->u.response.p;
        *len = o->u.response.len;
        o->u.response.p = NULL;
        break;
    case CALL_ERROR:
        s = env_error(c->id, o->u.error.code, o->u.error.msg, o->u.error.data, len);
        o->u.error.data = NULL;
        break;
    case CALL_NONE:
        s = env_error(c->id, RPC_INTERNAL_ERROR, "Internal error: the call ended without an answer", NULL,
                      len);
        break;
    case CALL_ACCEPTED:
    case CALL_RUN:
    case CALL_WAIT:
        break;
    }
    return s;
}

int call_finish(struct call *c)
{
    pthread_mutex_lock(&P(c)->mu);
    if (P(c)->completed) {
        pthread_mutex_unlock(&P(c)->mu);
        return -1;
    }
    __atomic_store_n(&P(c)->completed, 1, __ATOMIC_RELEASE);
    size_t len;
    char *bytes = render(c, &len);
    if (P(c)->detached)
        free(bytes);
    else if (P(c)->on_complete)
        P(c)->on_complete(bytes, len, P(c)->arg);
    else {
        free(P(c)->body);
        P(c)->body = bytes;
        P(c)->len = len;
    }
    pthread_mutex_unlock(&P(c)->mu);
    return 0;
}

void call_event(struct call *c, const char *bytes, size_t len)
{
    pthread_mutex_lock(&P(c)->mu);
    if (!P(c)->completed && !P(c)->detached && P(c)->on_event)
        P(c)->on_event(bytes, len, P(c)->arg);
    pthread_mutex_unlock(&P(c)->mu);
}

enum call_kind call_kind(const struct call *c)
{
    return P(c)->out.kind;
}

int call_error_code(const struct call *c)
{
    return P(c)->out.kind == CALL_ERROR ? P(c)->out.u.error.code : 0;
}

int call_is_transport_error(const struct call *c)
{
    return P(c)->out.kind == CALL_ERROR && P(c)->out.transport;
}

const char *call_raw_bytes(const struct call *c, size_t *len, int *owned)
{
    const struct call_outcome *o = &P(c)->out;
    if (o->kind != CALL_RAW)
        return NULL;
    *len = o->u.raw.len;
    if (owned)
        *owned = o->u.raw.owned != NULL;
    return o->u.raw.p;
}

struct hook_plan *call_run_plan(const struct call *c)
{
    return P(c)->out.kind == CALL_RUN ? P(c)->out.u.run : NULL;
}

int call_has_events(const struct call *c)
{
    return P(c)->on_event != NULL;
}

const char *call_body(const struct call *c, size_t *len)
{
    *len = P(c)->len;
    return P(c)->body;
}

char *call_take_body(struct call *c, size_t *len)
{
    char *b = P(c)->body;
    *len = P(c)->len;
    P(c)->body = NULL;
    P(c)->len = 0;
    return b;
}
