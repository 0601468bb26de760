/*
 * call.h - one request, from the transport that read it to the bytes that
 * answer it.
 *
 * A transport creates the call (call_new), says who is asking (client,
 * peer) and how it wants a late answer (call_on_complete, and
 * call_on_event for notifications sent before it), then hands the body to
 * rpc_handle(). rpc.c fills in what the request carries (era, id,
 * session, progress token); a method sets the call's outcome, exactly one
 * of the kinds below. An outcome that is known at once is completed before
 * rpc_handle() returns; a pending one (a script run through its hooks, a
 * tasks/result waiting for its task) is started by rpc_start() once the
 * transport is ready for it, and completed later on another thread.
 *
 * Every call ends in call_finish(): it renders the outcome for the call's
 * era, wraps it in its JSON-RPC envelope and hands the bytes to the
 * transport, once. A second completion is refused; a transport that went
 * away (call_detach) gets nothing, and the bytes are dropped.
 */
#ifndef SKILL_CALL_H
#define SKILL_CALL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "srv.h"

struct hook_plan;
struct snapshot;
struct tasks_wait;
struct view;

enum call_kind {
    CALL_NONE,              /* nothing yet */
    CALL_RESULT,            /* a result object: result */
    CALL_RAW,               /* a result already rendered as bytes: raw */
    CALL_RESPONSE,          /* the whole JSON-RPC response: response */
    CALL_ERROR,             /* a JSON-RPC error: error */
    CALL_ACCEPTED,          /* a notification or a response: no body */
    CALL_RUN,               /* pending: a script and its hooks (run) */
    CALL_WAIT,              /* pending: tasks/result of a working task (wait) */
};

/* Which results carry ttlMs/cacheScope (and resultType), added when the
 * call is rendered for its era (call_finish, call_render_kept). */
enum call_cache {
    CALL_CACHE_NONE,        /* neither era */
    CALL_CACHE_MODERN,      /* on 2026-07-28, with its other result members */
    CALL_CACHE_BOTH,        /* on either era (the skills extension: its clients check
                               them whatever version was negotiated) */
};

typedef void (*call_bytes_fn)(char *bytes, size_t len, void *arg);
typedef void (*call_event_fn)(const char *bytes, size_t len, void *arg);

/*
 * A request of one of the common shapes, read without building a tree
 * (rpc.c): a legacy tools/call of a tool that reads no script, or a
 * skills/get / resources/read, whose params hold only plain strings. Every
 * string is NUL-terminated and has no NUL inside; all are borrowed while
 * rpc_handle() runs. Anything else is parsed into a tree as before.
 */
#define RPC_VIEW_ARGS 8
struct rpc_view {
    const char *name;       /* tools/call: params.name, else NULL */
    const char *uri;        /* skills/get, resources/read: params.uri, else NULL */
    size_t urilen;
    size_t nargs;           /* params.arguments: its members in order, keys unique */
    const char *key[RPC_VIEW_ARGS], *val[RPC_VIEW_ARGS];
    size_t vlen[RPC_VIEW_ARGS];
};

/* The string argument key of a view, or NULL. */
const char *call_view_arg(const struct rpc_view *v, const char *key, size_t *len);

struct call {
    struct srv *S;
    /* from the transport */
    const char *client;     /* authenticated client id (borrowed), or NULL */
    const void *peer;       /* the peer's struct sockaddr (borrowed), or NULL */
    int can_stream;         /* the transport can send events before the answer */
    int stream_always;      /* ... and the client wants every script answer streamed */
    /* from the request (rpc.c) */
    int modern;             /* the 2026-07-28 era */
    json_t *id;             /* the request id (owned), or NULL */
    json_t *params;         /* borrowed while rpc_handle() runs, NULL after */
    const struct rpc_view *pv;  /* the request read without a tree (rpc.c; params is
                                   then NULL), borrowed while rpc_handle() runs, or NULL */
    const char *method;     /* static name for logs, or NULL */
    char tool[64];          /* tools/call: the tool's name, for logs and metrics */
    char skill[128];        /* tools/call: the skill argument (arguments.name), for the access log */
    const char *session;    /* --stateful: the live session (borrowed), or NULL */
    struct session_table *sessions; /* the table session lives in: S->sessions, or the
                                       stdio transport's own (one session) */
    char session_minted[40];    /* --stateful: the session initialize started, or "" */
    int session_gone;       /* --stateful: the session is unknown or ended */
    json_t *progress_token; /* _meta.progressToken (owned), or NULL */
    int log_level;          /* the session's logging level, or SESSION_LEVEL_NONE */
    int log_stream;         /* a pending run sends its stderr as log notifications */
    json_t *client_info;    /* _meta clientInfo (borrowed while dispatching), or NULL */
    struct snapshot *snap;  /* taken on first call_snapshot(), released with the call */
    int snap_hold;          /* how snap is held (skills_acquire_held) */
    const struct view *view;    /* the skills this caller may see (--acl), NULL: all */
    json_t *listen;         /* subscriptions/listen: the honored filter (owned), or NULL */
    /* a pending run, while it lasts */
    char run_id[40];        /* the runner's request id, to cancel it */
    double progress;
    /* The outcome, the final bytes and the completion state follow in
     * call.c's own part of the allocation (call_new): read them through
     * the functions below. */
};

/* A new call with one reference (the transport's). */
struct call *call_new(struct srv *S);
void call_ref(struct call *c);
void call_unref(struct call *c);

/* Before rpc_handle(): where the final bytes (the receiver's to free) and
 * any earlier events (borrowed) go. Without a completion callback they are
 * kept (call_body). Callbacks run on whatever thread completes the
 * call, one at a time; they must not call back into the call. */
void call_on_complete(struct call *c, call_bytes_fn done, void *arg);
void call_on_event(struct call *c, call_event_fn event, void *arg);

/* The transport went away: nothing more is delivered to it. Returns once
 * no callback is running: 1 when the call had been completed already. */
int call_detach(struct call *c);

/* Does a pending script run stream events before its answer? (the transport
 * can, and there is progress or logging to send, or it always streams) */
int call_streams(const struct call *c);

/* The request's snapshot, acquired once. */
struct snapshot *call_snapshot(struct call *c);

/* --acl: what the caller of class k sees (acl_classify), set by the
 * transport once it knows who is asking; k NULL (no --acl) sees every
 * skill and costs nothing. Takes the snapshot the view belongs to. With
 * --acl, call_new starts a call with the view of a caller with no
 * identity, so a transport that never calls this fails closed. */
struct acl_class;
void call_set_view(struct call *c, const struct acl_class *k);

/*
 * Outcomes. These setters are the only writers of c->out: each replaces the
 * outcome before it (freed), and takes what it is handed. Once the call is
 * completed (call_finish) a setter is refused: it frees what it was handed,
 * leaves the outcome as it was and returns -1 (call_error returns -1
 * either way, for convenience); otherwise 0. data is stolen.
 */
int call_error(struct call *c, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int call_result(struct call *c, json_t *result);
/* The request was made a task: task is the task object (tasks.c builds
 * it), rendered as the era's task result (the era members added here). */
int call_result_task(struct call *c, json_t *task);
int call_raw(struct call *c, const char *raw, size_t len, char *owned);
int call_response(struct call *c, char *bytes, size_t len);
/* A notification or a response: nothing is sent. */
int call_accepted(struct call *c);
/* Pending outcomes, started by rpc_start (mcp_start) once the transport is
 * ready: a script run through its hooks, a tasks/result wait. */
int call_run(struct call *c, struct hook_plan *plan);
int call_wait(struct call *c, struct tasks_wait *w, void (*drop)(struct tasks_wait *w));
/* The pending run or wait handed over to whoever starts it (NULL when
 * there is none, or it was taken); the call stays pending until its
 * answer is set. */
struct hook_plan *call_take_run(struct call *c);
struct tasks_wait *call_take_wait(struct call *c);
/* Which era members a result takes (enum call_cache); kept across
 * outcomes. */
void call_cacheable(struct call *c, enum call_cache how);
/* The error is about headers or _meta: the transport refuses the request
 * (HTTP 400) rather than answering it. */
void call_transport_error(struct call *c);
/* A cacheable result rendered once, as call_finish would render it for
 * this call (the era's members, a private scope under --acl), for a reply
 * kept and later sent with call_raw. NULL if it cannot be dumped. */
char *call_render_kept(struct call *c, json_t *result, size_t *len);
void call_clear(struct call *c);

int call_pending(const struct call *c);

/* What the outcome is so far (the transport picks its status from it). */
enum call_kind call_kind(const struct call *c);
/* CALL_ERROR: its JSON-RPC code; 0 for any other outcome. */
int call_error_code(const struct call *c);
/* CALL_ERROR set with call_transport_error(): 1, else 0. */
int call_is_transport_error(const struct call *c);
/* CALL_RAW: its bytes (borrowed from the call), *len, and whether the call
 * owns them (*owned, may be NULL); NULL for any other outcome. */
const char *call_raw_bytes(const struct call *c, size_t *len, int *owned);
/* CALL_RUN: the plan not yet started (still the call's), else NULL. */
struct hook_plan *call_run_plan(const struct call *c);
/* Did the transport ask for events before the answer (call_on_event)? */
int call_has_events(const struct call *c);
/* With no completion callback: the final bytes kept once finished
 * (borrowed; NULL before, or for no answer), *len their length. */
const char *call_body(const struct call *c, size_t *len);
/* The same bytes handed to the caller (free()), leaving the call none. */
char *call_take_body(struct call *c, size_t *len);

/* The mutex that guards c's references and completion: no other call
 * takes it, and no other thread unless c runs a script or a task (tests
 * tell it from a lock that requests share). */
const void *call_own_lock(const struct call *c);

/* Renders the outcome for the call's era and delivers it: 0, or -1 when
 * the call was completed already (nothing is sent twice). */
int call_finish(struct call *c);

/* An event before the answer (a notification, borrowed bytes): dropped
 * when the transport did not ask for events or went away. */
void call_event(struct call *c, const char *bytes, size_t len);

#endif
