/*
 * http_stream.c - the answers that are streams: a call's SSE answer, the
 * notification streams (a --stateful session's GET, subscriptions/listen),
 * the parked connection under both, and the watch that sees the clients of
 * parked calls hang up.
 */
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "call.h"
#include "envelope.h"
#include "http_int.h"
#include "notify.h"
#include "rpc.h"
#include "session.h"

/* ---- parked streams ----------------------------------------------------------
 *
 * A streamed response (a call's SSE answer, a notification stream) is pulled
 * by libmicrohttpd through a content reader on the connection's thread,
 * while what it sends comes from other threads. With nothing to send, the
 * reader parks the connection (MHD_suspend_connection) and a producer
 * resumes it. Both happen under the stream's mutex, which orders "suspend"
 * before "resume": a wake between the reader's last look and its park is
 * not lost. Once the stream is dead (libmicrohttpd has freed the response)
 * a late wake resumes nothing. Who guards out is the stream's own rule.
 */
struct parked {
    pthread_mutex_t mu;
    struct MHD_Connection *con;
    int suspended, dead;        /* guarded by mu */
    struct buf out;             /* framed bytes not yet sent */
    size_t off;
};

static void parked_init(struct parked *p, struct MHD_Connection *con)
{
    pthread_mutex_init(&p->mu, NULL);
    buf_init(&p->out, 0);
    p->con = con;
}

static void parked_cleanup(struct parked *p)
{
    pthread_mutex_destroy(&p->mu);
    buf_cleanup(&p->out);
}

/* One SSE message event carrying json. */
static void parked_event(struct parked *p, const char *json, size_t len)
{
    buf_puts(&p->out, "event: message\ndata: ");
    buf_append(&p->out, json, len);
    buf_puts(&p->out, "\n\n");
}

/* Reader: up to max of the bytes not yet sent into dst; 0 when there are none. */
static size_t parked_take(struct parked *p, char *dst, size_t max)
{
    size_t avail = p->out.len - p->off;
    if (!avail)
        return 0;
    size_t n = avail < max ? avail : max;
    memcpy(dst, p->out.p + p->off, n);
    p->off += n;
    if (p->off == p->out.len) {
        buf_reset(&p->out);
        p->off = 0;
    }
    return n;
}

/* Any thread, p->mu held: a parked reader runs again. */
static void parked_wake_locked(struct parked *p)
{
    if (p->suspended && !p->dead) {
        p->suspended = 0;
        MHD_resume_connection(p->con);
    }
}

/* Reader, p->mu held (and released here): nothing to send, so the
 * connection is parked until a wake; what the reader returns. */
static ssize_t parked_sleep_unlock(struct parked *p)
{
    p->suspended = 1;
    MHD_suspend_connection(p->con);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* libmicrohttpd has freed the response: no wake may resume its connection. */
static void parked_kill(struct parked *p)
{
    pthread_mutex_lock(&p->mu);
    p->dead = 1;
    pthread_mutex_unlock(&p->mu);
}

/* The response of a parked stream, read by reader and freed by done. */
static struct MHD_Response *parked_response(MHD_ContentReaderCallback reader, void *cls,
                                            MHD_ContentReaderFreeCallback done)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, cls, done);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    return r;
}

/* ---- live progress over SSE -------------------------------------------------
 *
 * When the call streams (call_streams: the client accepts text/event-stream
 * and asked for progress or logging, or --sse), the answer is a stream: the
 * events the protocol layer renders while the script runs, then the
 * response. The completing thread appends them under the stream's mutex;
 * libmicrohttpd pulls them through sse_read(), which parks the connection
 * when there is nothing to send. A stream closed by the client before the
 * answer abandons the call (which stops its script).
 */
struct sse {
    struct parked p;            /* out guarded by p.mu */
    int done;                   /* guarded by p.mu */
    struct call *call;
};

static void sse_push(struct sse *e, const char *json, size_t len, int last)
{
    pthread_mutex_lock(&e->p.mu);
    parked_event(&e->p, json, len);
    e->done |= last;
    parked_wake_locked(&e->p);
    pthread_mutex_unlock(&e->p.mu);
}

/* Completing thread: a notification before the answer. */
static void sse_event(const char *bytes, size_t len, void *arg)
{
    sse_push(arg, bytes, len, 0);
}

/* Completing thread: the answer, last event of the stream. */
static void sse_complete(char *bytes, size_t len, void *arg)
{
    sse_push(arg, bytes ? bytes : "", bytes ? len : 0, 1);
    free(bytes);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct sse *e = cls;
    (void)pos;
    pthread_mutex_lock(&e->p.mu);
    size_t n = parked_take(&e->p, out, max);
    if (n) {
        pthread_mutex_unlock(&e->p.mu);
        return (ssize_t)n;
    }
    if (e->done) {
        pthread_mutex_unlock(&e->p.mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    return parked_sleep_unlock(&e->p);
}

/* libmicrohttpd is done with the response: sent, or the client went away.
 * Once the call is abandoned no callback can reach e. */
static void sse_free(void *cls)
{
    struct sse *e = cls;
    rpc_abandon(e->call);
    call_unref(e->call);
    parked_cleanup(&e->p);
    free(e);
}

int http_accepts_sse(struct MHD_Connection *con)
{
    return http_accept_has_sse(
        MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
}

int http_accept_has_sse(const char *accept)
{
    return accept && x_casestr(accept, "text/event-stream");
}

enum MHD_Result http_sse_start(struct MHD_Connection *con, struct call *c)
{
    struct sse *e = xcalloc(1, sizeof *e);
    parked_init(&e->p, con);
    e->call = c;
    call_ref(c);
    call_on_event(c, sse_event, e);
    call_on_complete(c, sse_complete, e);
    struct MHD_Response *r = parked_response(sse_read, e, sse_free);
    if (atomic_load(&http_closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    http_cors_headers(r, con);
    enum MHD_Result ret = MHD_queue_response(con, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    rpc_start(c);
    return ret;
}

/* ---- notification streams ----------------------------------------------------
 *
 * GET on the MCP path with a --stateful session's Mcp-Session-Id opens the
 * session's stream of list-change notifications (notify.h): one per
 * session (a second gets 409), ended by DELETE of the session, the drain,
 * or the client leaving. The connection is parked while there is nothing
 * to send; notify's wake, the keep-alive and the hang-up watcher resume it.
 * Lock order: notify's lock, then the stream's (wake runs under notify's);
 * the reader never holds the stream's lock while it drains.
 */
#define NS_KEEPALIVE_NS (15ull * 1000000000ull)

struct nstream {
    atomic_int refs;
    struct parked p;            /* out is the reader's alone */
    int woken, keepalive, hung; /* guarded by p.mu */
    struct notify_listener *l;
    int ended;
    _Atomic uint64_t last_ns;   /* when bytes last went out */
    char sid[SESSION_ID_LEN + 1];   /* the GET stream's session, or "" */
    char client[72];
    char *final;                /* subscriptions/listen: the response that ends it */
    size_t final_len;
};

void http_ns_unref(struct nstream *e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    parked_cleanup(&e->p);
    free(e->final);
    free(e);
}

/* Any thread: something for the reader (*flag set), which is resumed. */
static void ns_poke(struct nstream *e, int *flag)
{
    pthread_mutex_lock(&e->p.mu);
    *flag = 1;
    parked_wake_locked(&e->p);
    pthread_mutex_unlock(&e->p.mu);
}

static void ns_wake(void *arg)
{
    struct nstream *e = arg;
    ns_poke(e, &e->woken);
}

/* Watcher thread: a client that left is dropped (its slot freed); an idle
 * stream gets a keep-alive, and keeps its session from expiring. */
static void ns_watch(struct srv *S, struct nstream *e, int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        ns_poke(e, &e->hung);
        return;
    }
    if (now_ns() - atomic_load(&e->last_ns) < NS_KEEPALIVE_NS)
        return;
    atomic_store(&e->last_ns, now_ns());
    if (e->sid[0] && !session_touch(S->sessions, e->sid, e->client[0] ? e->client : NULL, NULL))
        notify_end_session(e->sid);
    ns_poke(e, &e->keepalive);
}

static void ns_sink(const char *json, size_t len, void *arg)
{
    struct nstream *e = arg;
    parked_event(&e->p, json, len);
}

static ssize_t ns_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct nstream *e = cls;
    (void)pos;
    for (;;) {
        size_t n = parked_take(&e->p, out, max);
        if (n) {
            atomic_store(&e->last_ns, now_ns());
            return (ssize_t)n;
        }
        if (e->ended && e->final) {
            ns_sink(e->final, e->final_len, e);
            free(e->final);
            e->final = NULL;
            continue;
        }
        if (e->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&e->p.mu);
        int hung = e->hung, ka = e->keepalive;
        e->woken = e->keepalive = 0;
        pthread_mutex_unlock(&e->p.mu);
        if (hung)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        int got = notify_drain(e->l, ns_sink, e);
        if (got < 0) {
            e->ended = 1;
            continue;
        }
        if (got > 0)
            continue;
        if (ka) {
            buf_puts(&e->p.out, ": keep-alive\n\n");
            continue;
        }
        pthread_mutex_lock(&e->p.mu);
        if (e->woken || e->hung || e->keepalive) {
            pthread_mutex_unlock(&e->p.mu);
            continue;
        }
        return parked_sleep_unlock(&e->p);
    }
}

static void ns_free(void *cls)
{
    struct nstream *e = cls;
    notify_unlisten(e->l);  /* no wake after this */
    parked_kill(&e->p);     /* nor a poke of the watcher's */
    http_ns_unref(e);
}

static enum MHD_Result ns_start(struct http *h, struct MHD_Connection *con, struct req *rq,
                                struct notify_listen_opts *o, const char *first, size_t firstlen);

/* HEAD's answer: a stream's headers. A reader that ends at once keeps the
 * length unknown, as GET's is (no Content-Length: 0 that GET would not
 * send); not chunked, since libmicrohttpd would then send the last chunk,
 * a body HEAD must not have, so the connection closes after it instead. */
static ssize_t no_stream(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)cls;
    (void)pos;
    (void)out;
    (void)max;
    return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result stream_head(struct http *h, struct MHD_Connection *con, struct req *rq,
                                   const char *sid)
{
    if (atomic_load(&h->draining)) {
        rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
        return http_reply_error(con, rq, rq->status,
                           "Service Unavailable: the server is shutting down");
    }
    if (notify_session_listening(sid)) {
        rq->status = MHD_HTTP_CONFLICT;
        return http_reply_error(con, rq, rq->status,
                           "Conflict: this session already has its GET stream open (one per "
                           "session)");
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, no_stream, NULL, NULL);
    if (!r)
        return MHD_NO;
    MHD_set_response_options(r, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    if (atomic_load(&http_closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    http_cors_headers(r, con);
    rq->status = MHD_HTTP_OK;
    enum MHD_Result ret = MHD_queue_response(con, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/*
 * GET on the MCP path with --stateful: the session's notification stream.
 * HEAD (head set) gets the status and headers GET would get, and changes
 * nothing: no stream, and the session is looked up, not marked used.
 */
enum MHD_Result http_open_stream(struct http *h, struct MHD_Connection *con, struct req *rq,
                                 int head)
{
    struct srv *S = h->S;
    const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Session-Id");
    if (!http_accepts_sse(con)) {
        rq->status = MHD_HTTP_NOT_ACCEPTABLE;
        return http_reply_error(con, rq, rq->status,
                           "Not Acceptable: the GET stream is text/event-stream; send Accept: "
                           "text/event-stream");
    }
    if (!sid) {
        rq->status = MHD_HTTP_BAD_REQUEST;
        return http_reply_error(con, rq, rq->status,
                           "Bad Request: GET needs the Mcp-Session-Id header of a live session "
                           "(send initialize to start one)");
    }
    if (!(head ? session_live(S->sessions, sid, rq->client)
               : session_touch(S->sessions, sid, rq->client, NULL))) {
        rq->status = MHD_HTTP_NOT_FOUND;
        size_t len;
        char *b = env_error(NULL, RPC_SESSION_NOT_FOUND, "Session not found: it ended or expired",
                            NULL, &len);
        return http_reply(con, rq, rq->status, b, len, "application/json");
    }
    if (head)
        return stream_head(h, con, rq, sid);
    struct notify_listen_opts o = {.kinds = NOTIFY_ALL, .sessions = S->sessions,
                                   .session = sid, .client = rq->client, .exclusive = 1};
    return ns_start(h, con, rq, &o, ": stream open\n\n", 0);
}

/*
 * Opens a notification stream for rq with o (key, wake and arg filled in
 * here); first is what it sends at once, so the client sees it open. Else
 * refuses: 409 for a second stream of a session, 429 over a bound (or, for
 * a POST, the same refusal).
 */
static enum MHD_Result ns_start(struct http *h, struct MHD_Connection *con, struct req *rq,
                                struct notify_listen_opts *o, const char *first, size_t firstlen)
{
    if (atomic_load(&h->draining)) {
        /* notify_end_all has run: a stream opened now would hold the drain */
        rq->status = MHD_HTTP_SERVICE_UNAVAILABLE;
        return http_reply_error(con, rq, rq->status,
                           "Service Unavailable: the server is shutting down");
    }
    char key[128];
    if (rq->client) {
        snprintf(key, sizeof key, "client:%s", rq->client);
    } else {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        x_peer_key(ci ? ci->client_addr : NULL, key, sizeof key);
    }
    struct nstream *e = xcalloc(1, sizeof *e);
    atomic_init(&e->refs, 2);   /* the response's and rq's */
    parked_init(&e->p, con);
    atomic_init(&e->last_ns, now_ns());
    snprintf(e->sid, sizeof e->sid, "%s", o->session ? o->session : "");
    snprintf(e->client, sizeof e->client, "%s", rq->client ? rq->client : "");
    o->key = key;
    o->acl = h->S->acl;
    o->who = rq->who ? (struct acl_who){rq->client, rq->who->groups, rq->who->sub, rq->who->scopes}
                     : (struct acl_who){rq->client, "", "", ""};
    o->wake = ns_wake;
    o->arg = e;
    struct err why;
    e->l = notify_listen(o, &why);
    if (!e->l) {
        int conflict = errno == EEXIST;
        parked_cleanup(&e->p);
        free(e);
        rq->status = conflict ? MHD_HTTP_CONFLICT : MHD_HTTP_TOO_MANY_REQUESTS;
        char msg[sizeof "Too Many Requests: " + sizeof why.msg];   /* never cuts the reason */
        snprintf(msg, sizeof msg, "%s: %s", conflict ? "Conflict" : "Too Many Requests", why.msg);
        return http_reply_error(con, rq, rq->status, msg);
    }
    if (firstlen)
        ns_sink(first, firstlen, e);
    else
        buf_puts(&e->p.out, first);
    struct MHD_Response *r = parked_response(ns_read, e, ns_free);
    rq->status = MHD_HTTP_OK;
    rq->ns = e;
    enum MHD_Result ret = MHD_queue_response(con, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    http_watch_add(h, con, rq);
    return ret;
}

/*
 * subscriptions/listen (2026-07-28): a POST answered with a stream that
 * starts with notifications/subscriptions/acknowledged (the honored
 * subset), carries what was asked, every notification tagged with the
 * request id, and ends with the listen response when the server drains.
 */
enum MHD_Result http_open_listen(struct http *h, struct MHD_Connection *con, struct req *rq)
{
    struct call *c = rq->call;
    const char *const *uris = NULL;
    json_t *subs = json_object_get(c->listen, "resourceSubscriptions");
    size_t n = json_array_size(subs);
    const char **v = n ? xcalloc(n, sizeof *v) : NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(subs, i));
    uris = v;
    unsigned kinds = (json_is_true(json_object_get(c->listen, "resourcesListChanged"))
                          ? NOTIFY_RES_LIST : 0) |
                     (json_is_true(json_object_get(c->listen, "promptsListChanged"))
                          ? NOTIFY_PROMPT_LIST : 0) |
                     (n ? NOTIFY_UPDATED : 0);
    struct notify_listen_opts o = {.kinds = kinds, .uris = uris, .nuris = n,
                                   .subscription_id = c->id};
    json_t *ack = env_notification(
        "notifications/subscriptions/acknowledged",
        json_pack("{s:O, s:{s:O}}", "notifications", c->listen, "_meta",
                  "io.modelcontextprotocol/subscriptionId", c->id));
    char *a = json_dumps(ack, JSON_COMPACT);
    json_decref(ack);
    enum MHD_Result ret = ns_start(h, con, rq, &o, a, strlen(a));
    free(a);
    free(v);
    if (rq->ns) {
        rq->ns->final = rq->resp;
        rq->ns->final_len = rq->resp_len;
        rq->resp = NULL;
    }
    return ret;
}

/* ---- hang-ups of parked calls ------------------------------------------------
 *
 * libmicrohttpd does not look at a suspended connection's socket, so a
 * client that goes away while its script runs would go unseen until the
 * answer, and the script would run its full course for no one. A watcher
 * thread polls the sockets of parked script calls a few times a second and,
 * on a hang-up, stops the script (rpc_hangup). The call still completes: its
 * answer resumes the connection, whose write fails, and libmicrohttpd ends
 * it as usual (on_done takes it off the watch).
 */
#define WATCH_MS 200

void http_watch_add(struct http *h, struct MHD_Connection *con, struct req *rq)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || (!rq->ns && !rq->call->run_id[0]))
        return;     /* no script to stop (a tasks/result wait) */
    pthread_mutex_lock(&h->watch_mu);
    rq->watch_fd = ci->connect_fd;
    rq->watch_next = h->watch;
    h->watch = rq;
    rq->watched = 1;
    pthread_cond_signal(&h->watch_cv);
    pthread_mutex_unlock(&h->watch_mu);
}

void http_watch_remove(struct http *h, struct req *rq)
{
    if (!rq->watched)
        return;
    pthread_mutex_lock(&h->watch_mu);
    for (struct req **pp = &h->watch; *pp; pp = &(*pp)->watch_next)
        if (*pp == rq) {
            *pp = rq->watch_next;
            break;
        }
    rq->watched = 0;
    pthread_mutex_unlock(&h->watch_mu);
}

void *http_watch_main(void *arg)
{
    struct http *h = arg;
    pthread_mutex_lock(&h->watch_mu);
    while (!h->watch_stop) {
        if (!h->watch) {
            pthread_cond_wait(&h->watch_cv, &h->watch_mu);
            continue;
        }
        /* A hung-up call is cancelled again every round until it ends: the
         * runner takes a bounded number of cancels per wake-up. */
        for (struct req *rq = h->watch; rq; rq = rq->watch_next) {
            if (rq->ns) {
                ns_watch(h->S, rq->ns, rq->watch_fd);
                continue;
            }
            struct pollfd p = {.fd = rq->watch_fd, .events = POLLRDHUP};
            if (!rq->hung &&
                (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))))
                continue;
            if (!rq->hung)
                log_info("http: the client of a %s call hung up; stopping its script",
                         rq->call->tool[0] ? rq->call->tool : "pending");
            rq->hung = 1;
            rpc_hangup(rq->call);
        }
        struct timespec until = now_after_ms(WATCH_MS);
        pthread_cond_timedwait(&h->watch_cv, &h->watch_mu, &until);
    }
    pthread_mutex_unlock(&h->watch_mu);
    return NULL;
}
