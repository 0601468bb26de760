/*
 * http.c - libmicrohttpd glue. Runs in MHD's thread pool: every request is
 * handled to completion on the thread that read it (the read path takes no
 * lock and does no I/O beyond the socket).
 *
 * Order of checks: path (operations endpoints first), Host/Origin (403),
 * bearer token (401) and rate (429) when --auth-tokens is set, DELETE of a
 * session (--stateful), method (405), media types (415/406), body size
 * (413), then rpc_handle() (which checks the session of a legacy request).
 * This is the only file that picks HTTP status codes.
 */
#include "http.h"
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl.h"
#include "accesslog.h"
#include "auth.h"
#include "call.h"
#include "discovery.h"
#include "envelope.h"
#include "metrics.h"
#include "notify.h"
#include "oauth.h"
#include "pcount.h"
#include "rpc.h"
#include "session.h"
#include "skills.h"
#include "util.h"

/* Set when the drain begins: every answer from then on closes its
 * connection, so no keep-alive client sends a request the drain's end
 * would cut off. One HTTP server per process. */
atomic_int http_closing;

/* What a 405 offers: DELETE ends a session with --stateful. Set once at start. */
static const char *allow_methods = "POST";

/* --allowed-origins: the origins that get CORS headers. Set once at start. */
const char *http_cors_origins;

/* Queues body (malloc'd, or NULL for none; freed by libmicrohttpd). */
enum MHD_Result http_send_bytes(struct MHD_Connection *con, unsigned status, char *body,
                                size_t len, const char *ctype)
{
    return http_reply(con, NULL, status, body, len, ctype);
}

/* A JSON-RPC error without an id, for transport-level refusals. */
enum MHD_Result http_send_error(struct MHD_Connection *con, unsigned status, int code,
                                const char *msg)
{
    size_t len;
    char *s = env_error(NULL, code, msg, NULL, &len);
    return http_send_bytes(con, status, s, len, "application/json");
}

/* Every answer goes out here; an MCP answer (rq set) also carries the
 * client's RateLimit-* headers. */
enum MHD_Result http_reply(struct MHD_Connection *con, const struct req *rq, unsigned status,
                           char *body, size_t len, const char *ctype)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, body ? MHD_RESPMEM_MUST_FREE
                                                        : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (atomic_load(&http_closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (ctype && !strcmp(ctype, "text/event-stream")) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
    }
    if (rq && rq->call && rq->call->session_minted[0])
        MHD_add_response_header(r, "Mcp-Session-Id", rq->call->session_minted);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow_methods);
    if (rq && rq->rl_limit > 0) {
        char v[32];
        snprintf(v, sizeof v, "%d", rq->rl_limit);
        MHD_add_response_header(r, "RateLimit-Limit", v);
        snprintf(v, sizeof v, "%d", rq->rl_remaining);
        MHD_add_response_header(r, "RateLimit-Remaining", v);
        snprintf(v, sizeof v, "%d", rq->rl_reset);
        MHD_add_response_header(r, "RateLimit-Reset", v);
    }
    if (status == MHD_HTTP_TOO_MANY_REQUESTS) {
        char v[32];
        snprintf(v, sizeof v, "%d", rq->rl_reset > 0 ? rq->rl_reset : 1);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (rq && rq->challenge)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, rq->challenge);
    http_cors_headers(r, con);
    enum MHD_Result ret = MHD_queue_response(con, status, r);
    MHD_destroy_response(r);
    return ret;
}

/*
 * A JSON-RPC reply (body malloc'd). With --sse, a 200 reply to a client that
 * accepts text/event-stream goes out as a stream of one event: the bytes
 * are framed, never re-rendered. Other statuses stay JSON: they are
 * refusals, and a client reads those before it reads any stream.
 */
static enum MHD_Result reply_rpc(struct MHD_Connection *con, const struct req *rq,
                                 unsigned status, char *body, size_t len)
{
    if (!rq->sse || status != MHD_HTTP_OK || !body)
        return http_reply(con, rq, status, body, len, "application/json");
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "event: message\n");
    /* One data: line per line of the body (compact JSON has none, but a
     * newline inside must never end the event early). */
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(body + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (body + off)) : len - off;
        buf_puts(&b, "data: ");
        buf_append(&b, body + off, n);
        buf_puts(&b, "\n");
        off += n + (nl ? 1 : 0);
    }
    buf_puts(&b, "\n");
    free(body);
    size_t flen;
    char *framed = buf_steal(&b, &flen);
    return http_reply(con, rq, status, framed, flen, "text/event-stream");
}

enum MHD_Result http_reply_error(struct MHD_Connection *con, const struct req *rq,
                                 unsigned status, const char *msg)
{
    size_t len;
    char *s = env_error(NULL, RPC_INVALID_REQUEST, msg, NULL, &len);
    return http_reply(con, rq, status, s, len, "application/json");
}

/* "host[:port]" or "[v6]:port" -> host, lowercased, brackets kept for v6. */
void http_host_part(const char *in, char *out, size_t cap)
{
    size_t n;
    if (in[0] == '[') {
        const char *close = strchr(in, ']');
        n = close ? (size_t)(close - in + 1) : strlen(in);
    } else {
        const char *colon = strchr(in, ':');
        n = colon ? (size_t)(colon - in) : strlen(in);
    }
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)((in[i] >= 'A' && in[i] <= 'Z') ? in[i] + 32 : in[i]);
    out[n] = '\0';
}

static int loopback_name(const char *h)
{
    return cfg_is_loopback(h);
}

/* Is item in the comma-separated list (or the list "*")? */
static int in_list(const char *list, const char *item)
{
    if (!list)
        return 0;
    if (!strcmp(list, "*"))
        return 1;
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        size_t l2 = len;
        while (l2 && p[l2 - 1] == ' ')
            l2--;
        if (l2 == n && !strncasecmp(p, item, n))
            return 1;
        p += len;
    }
    return 0;
}

/* DNS-rebinding defence: Host must name this server, Origin must be ours. */
const char *http_check_peer(struct http *h, struct MHD_Connection *con)
{
    const struct cfg *c = &h->S->cfg;
    const char *host = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Origin");
    char name[256];
    if (h->loopback && !in_list(c->allowed_hosts, "*")) {
        if (!host)
            return "Forbidden: missing Host header";
        http_host_part(host, name, sizeof name);
        if (!loopback_name(name) && !in_list(c->allowed_hosts, name))
            return "Forbidden: Host is not allowed (DNS rebinding protection; see "
                   "--allowed-hosts)";
    } else if (c->allowed_hosts && host) {
        http_host_part(host, name, sizeof name);
        if (!in_list(c->allowed_hosts, name))
            return "Forbidden: Host is not allowed (see --allowed-hosts)";
    }
    if (origin && !in_list(c->allowed_origins, origin)) {
        const char *p = strstr(origin, "://");
        if (!p)
            return "Forbidden: Origin is not allowed (see --allowed-origins)";
        http_host_part(p + 3, name, sizeof name);
        if (!loopback_name(name))
            return "Forbidden: Origin is not allowed (see --allowed-origins)";
    }
    return NULL;
}

/* ---- CORS ----------------------------------------------------------------
 *
 * A page on another origin may read our answers only when its origin is
 * listed in --allowed-origins (or the list is "*"). Loopback origins pass
 * the Origin check without being listed, but get no CORS headers: any local
 * web page would otherwise read the library. The origin is echoed, never
 * "*", and no Access-Control-Allow-Credentials is sent: the browser sends
 * Authorization only because the page set it, not a cookie it holds.
 */
#define CORS_ALLOW_HEADERS                                                                   \
    "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, " \
    "Mcp-Name, Last-Event-ID"
#define CORS_EXPOSE_HEADERS                                                                  \
    "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, RateLimit-Limit, "              \
    "RateLimit-Remaining, RateLimit-Reset, Retry-After"
/* Chromium caps a cached preflight at 2 hours. */
#define CORS_MAX_AGE "7200"

/* The request's Origin when it may read the answer, else NULL. */
static const char *cors_origin(struct MHD_Connection *con)
{
    if (!http_cors_origins)
        return NULL;
    const char *o = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Origin");
    if (!o || !*o)
        return NULL;
    /* "null" (a file: page, a sandboxed frame) is no one in particular:
     * only a list that names it lets it in. */
    if (!strcmp(o, "null") && !strcmp(http_cors_origins, "*"))
        return NULL;
    return in_list(http_cors_origins, o) ? o : NULL;
}

void http_cors_headers(struct MHD_Response *r, struct MHD_Connection *con)
{
    /* Every answer varies with Origin once some origins get CORS headers: a
     * cache must not hand one origin's answer (or an answer without them)
     * to another. */
    if (http_cors_origins)
        MHD_add_response_header(r, "Vary", "Origin");
    const char *o = cors_origin(con);
    if (!o)
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
}

/* The answer to OPTIONS on a path that serves methods: 204 with Allow, and
 * for an allowed origin the preflight's permissions. No auth: a browser
 * never sends credentials with a preflight. */
enum MHD_Result http_cors_preflight(struct MHD_Connection *con, const char *methods)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    char allow[96];
    snprintf(allow, sizeof allow, "%s, OPTIONS", methods);
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (atomic_load(&http_closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    http_cors_headers(r, con);
    if (cors_origin(con)) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", methods);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
        MHD_add_response_header(r, "Access-Control-Max-Age", CORS_MAX_AGE);
        /* Private Network Access: a public page calling a server on loopback
         * or a private address asks first. */
        const char *pna = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                      "Access-Control-Request-Private-Network");
        if (pna && !strcasecmp(pna, "true"))
            MHD_add_response_header(r, "Access-Control-Allow-Private-Network", "true");
    }
    enum MHD_Result ret = MHD_queue_response(con, MHD_HTTP_NO_CONTENT, r);
    MHD_destroy_response(r);
    return ret;
}

static int media_is(const char *v, const char *want)
{
    size_t n = strlen(want);
    while (v && *v == ' ')
        v++;
    return v && !strncasecmp(v, want, n) && (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

static int accepts_json(const char *accept)
{
    if (!accept || !*accept)
        return 1;
    return strcasestr(accept, "application/json") || strstr(accept, "*/*") ||
           strcasestr(accept, "application/*");
}

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
    const char *accept =
        MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return accept && strcasestr(accept, "text/event-stream");
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

/* Any thread: the call's answer (NULL for none). A parked connection is
 * woken to send it. */
static void plain_complete(char *bytes, size_t len, void *arg)
{
    struct req *rq = arg;
    rq->resp = bytes;
    rq->resp_len = len;
    rq->ready = 1;
    if (rq->parked)
        MHD_resume_connection(rq->con);
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
    o->who = (struct acl_who){rq->client, rq->who_groups, rq->who_sub, rq->who_scopes};
    o->wake = ns_wake;
    o->arg = e;
    char why[200];
    e->l = notify_listen(o, why, sizeof why);
    if (!e->l) {
        int conflict = errno == EEXIST;
        parked_cleanup(&e->p);
        free(e);
        rq->status = conflict ? MHD_HTTP_CONFLICT : MHD_HTTP_TOO_MANY_REQUESTS;
        char msg[256];
        snprintf(msg, sizeof msg, "%s: %s", conflict ? "Conflict" : "Too Many Requests", why);
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

/* ---- operations endpoints -------------------------------------------------
 *
 * GET /healthz (alive), /readyz (index loaded, not draining) and /metrics
 * (Prometheus text). They never go through the MCP path. Health probes come
 * from load balancers with any Host header, so only /metrics is subject to
 * the Host/Origin check. Returns -1 for paths that are not operations
 * endpoints.
 */
static enum MHD_Result ops_text(struct MHD_Connection *con, struct req *rq, unsigned status,
                                struct buf *b, const char *ctype)
{
    size_t len;
    char *p = buf_steal(b, &len);
    rq->status = 1;     /* not an MCP request: kept out of the request log */
    return http_send_bytes(con, status, p, len, ctype);
}

int http_is_ops_path(const char *url)
{
    return !strcmp(url, "/") || !strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics") ||
           !strncmp(url, DISCOVERY_PREFIX, strlen(DISCOVERY_PREFIX)) ||
           !strncmp(url, OAUTH_PRM_PATH, strlen(OAUTH_PRM_PATH));
}

/* The operations endpoints that apply the Host/Origin check (the others
 * answer probes from anywhere, or are public by design). */
int http_ops_checks_peer(const char *url)
{
    return !strcmp(url, "/metrics") || !strncmp(url, DISCOVERY_PREFIX, strlen(DISCOVERY_PREFIX));
}

/*
 * The bearer token and rate checks of --auth-tokens, for every surface that
 * needs them: 0 when the request may go on (rq->client set), else the
 * refusal (401 or 429) is queued in *ret and rq->status set.
 */
int http_authorize(struct srv *S, struct MHD_Connection *con, struct req *rq,
                   enum MHD_Result *ret)
{
    const char *authz = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_AUTHORIZATION);
    struct auth_who who;
    int v = auth_verify(S->auth, authz, &who);
    rq->client = who.client;
    rq->acl = acl_classify(S->acl, &(struct acl_who){who.client, who.groups, who.sub, who.scopes});
    if (S->acl) {
        snprintf(rq->who_groups, sizeof rq->who_groups, "%s", who.groups);
        snprintf(rq->who_sub, sizeof rq->who_sub, "%s", who.sub);
        snprintf(rq->who_scopes, sizeof rq->who_scopes, "%s", who.scopes);
    }
    if (v != AUTH_OK) {
        rq->status = v == AUTH_SCOPE ? MHD_HTTP_FORBIDDEN : MHD_HTTP_UNAUTHORIZED;
        rq->challenge = auth_challenge(S->auth, v);
        *ret = http_reply_error(con, rq, rq->status, who.why);
        return -1;
    }
    int wait = auth_rate(S->auth, rq->client, &rq->rl_limit, &rq->rl_remaining, &rq->rl_reset);
    if (wait > 0) {
        rq->rl_reset = wait;
        rq->status = MHD_HTTP_TOO_MANY_REQUESTS;
        *ret = http_reply_error(con, rq, MHD_HTTP_TOO_MANY_REQUESTS,
                           "Too Many Requests: this client's rate limit is reached; "
                           "retry after the Retry-After seconds");
        return -1;
    }
    return 0;
}

/* An operations endpoint that serves skill content or usage (the discovery
 * index, /metrics) obeys --auth-tokens unless its flag opens it. Its
 * refusals stay out of the request log, like its answers. */
static int ops_authorize(struct http *h, struct MHD_Connection *con, struct req *rq, int open,
                         enum MHD_Result *ret)
{
    if (!h->S->auth || open)
        return 0;
    if (http_authorize(h->S, con, rq, ret) == 0)
        return 0;
    rq->status = 1;
    return -1;
}

/* 1 with *ret set when url is an operations endpoint, else 0. */
int http_ops_endpoint(struct http *h, struct MHD_Connection *con, const char *url,
                      struct req *rq, enum MHD_Result *ret)
{
    struct buf b;
    buf_init(&b, 0);
    if (!strcmp(url, "/healthz")) {
        buf_puts(&b, "ok\n");
        *ret = ops_text(con, rq, MHD_HTTP_OK, &b, "text/plain; charset=utf-8");
        return 1;
    }
    if (!strcmp(url, "/")) {
        /* Where a person or a plain HTTP tool that lands here should go. */
        buf_puts(&b, "{\"name\":\"" SERVER_NAME "\",\"mcp_endpoint\":\"");
        buf_json_escape(&b, h->S->cfg.path, strlen(h->S->cfg.path));
        buf_puts(&b, "\",\"discovery_index\":\"" DISCOVERY_PREFIX "index.json\"}\n");
        *ret = ops_text(con, rq, MHD_HTTP_OK, &b, "application/json");
        return 1;
    }
    if (!strcmp(url, "/readyz")) {
        int draining = atomic_load(&h->draining);
        buf_puts(&b, draining ? "draining\n" : "ready\n");
        *ret = ops_text(con, rq, draining ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, &b,
                        "text/plain; charset=utf-8");
        return 1;
    }
    if (!strncmp(url, DISCOVERY_PREFIX, strlen(DISCOVERY_PREFIX))) {
        /* The Agent Skills discovery index and its artifacts: the bytes are
         * what the digests cover, so never any Content-Encoding. */
        const char *why = http_check_peer(h, con);
        if (why) {
            rq->status = 1;
            *ret = http_send_error(con, MHD_HTTP_FORBIDDEN, RPC_INVALID_REQUEST, why);
            return 1;
        }
        if (ops_authorize(h, con, rq, h->S->cfg.public_index, ret) < 0) {
            buf_cleanup(&b);
            return 1;
        }
        char *body = NULL;
        size_t len = 0;
        const char *ctype = NULL;
        struct snapshot *snap = skills_acquire(h->S->skills);
        const struct acl_class *k = rq->acl ? rq->acl : acl_classify(h->S->acl, NULL);
        int rc = discovery_get_view(snap, acl_view(snap, k), url, &body, &len, &ctype);
        skills_release(snap);
        buf_cleanup(&b);
        rq->status = 1;
        if (rc == 0)
            *ret = http_send_bytes(con, MHD_HTTP_OK, body, len, ctype);
        else
            *ret = http_send_error(con, rc == -ENOENT ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR,
                              RPC_INVALID_REQUEST,
                              rc == -ENOENT ? "Not Found: no such skill artifact"
                                            : "the artifact cannot be built; see the server log");
        return 1;
    }
    if (!strncmp(url, OAUTH_PRM_PATH, strlen(OAUTH_PRM_PATH))) {
        /* RFC 9728 metadata: public by design (it is how a client without a
         * token learns where to get one). */
        char *body = NULL;
        size_t len = 0;
        buf_cleanup(&b);
        rq->status = 1;
        *ret = auth_metadata(h->S->auth, url, &body, &len) == 0
                   ? http_send_bytes(con, MHD_HTTP_OK, body, len, "application/json")
                   : http_send_error(con, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST,
                                "Not Found: no protected-resource metadata here");
        return 1;
    }
    if (!strcmp(url, "/metrics")) {
        const char *why = http_check_peer(h, con);
        if (why) {
            rq->status = 1;
            *ret = http_send_error(con, MHD_HTTP_FORBIDDEN, RPC_INVALID_REQUEST, why);
            return 1;
        }
        if (ops_authorize(h, con, rq, h->S->cfg.metrics_public, ret) < 0)
            return 1;
        metrics_text(h->S, &b);
        *ret = ops_text(con, rq, MHD_HTTP_OK, &b, "text/plain; version=0.0.4; charset=utf-8");
        return 1;
    }
    buf_cleanup(&b);
    return 0;
}

/*
 * libmicrohttpd's own unescaping turns %00 into a NUL that cuts the path
 * short: /metrics%00x would be served as /metrics, past a proxy rule that
 * matches /metrics exactly. A path (or argument) that does not decode
 * cleanly is kept as sent, so it names no route.
 */
static size_t unescape_no_nul(void *cls, struct MHD_Connection *con, char *s)
{
    (void)cls;
    (void)con;
    size_t n = strlen(s), out;
    char *tmp = xmalloc(n + 1);
    if (pct_decode(s, n, tmp, &out) == 0) {
        memcpy(s, tmp, out + 1);
        n = out;
    }
    free(tmp);
    return n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **ctx)
{
    struct http *h = cls;
    struct srv *S = h->S;
    struct req *rq = *ctx;

    if (!rq) {
        rq = xcalloc(1, sizeof *rq);
        rq->t0 = now_ns();
        rq->active_shard = pcount_inc(h->active);
        buf_init(&rq->body, S->cfg.max_body);
        *ctx = rq;
        if (accesslog_on()) {
            snprintf(rq->http_method, sizeof rq->http_method, "%s", method);
            rq->path = xstrndup(url, strnlen(url, 1024));
        }
#define REFUSE(st, msg) (rq->status = (st), http_send_error(con, (st), RPC_INVALID_REQUEST, (msg)))
        if (!strcmp(method, "OPTIONS")) {
            int mcp = !strcmp(url, S->cfg.path);
            if (!mcp && !http_is_ops_path(url))
                return REFUSE(MHD_HTTP_NOT_FOUND, "Not Found: the MCP endpoint is elsewhere");
            const char *why = mcp || http_ops_checks_peer(url) ? http_check_peer(h, con) : NULL;
            if (why)
                return REFUSE(MHD_HTTP_FORBIDDEN, why);
            rq->status = 1;     /* not an MCP request: kept out of the request log */
            return http_cors_preflight(con, mcp ? allow_methods : "GET, HEAD");
        }
        if ((!strcmp(method, "GET") || !strcmp(method, "HEAD")) && strcmp(url, S->cfg.path) &&
            http_is_ops_path(url)) {
            /* Answer on the next call, after the (empty) request body, so
             * the connection can be kept alive for the next probe. */
            rq->ops = url;
            return MHD_YES;
        }
        if (strcmp(url, S->cfg.path))
            return REFUSE(MHD_HTTP_NOT_FOUND, "Not Found: the MCP endpoint is elsewhere");
        const char *why = http_check_peer(h, con);
        if (why)
            return REFUSE(MHD_HTTP_FORBIDDEN, why);
        enum MHD_Result refused;
        if (S->auth && http_authorize(S, con, rq, &refused) < 0)
            return refused;
        if (!strcmp(method, "DELETE") && S->sessions) {
            /* Ends a --stateful session; there is no body to wait for. */
            const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Session-Id");
            if (!sid)
                return REFUSE(MHD_HTTP_BAD_REQUEST,
                              "Bad Request: DELETE needs the Mcp-Session-Id header of the "
                              "session to end");
            if (!session_end(S->sessions, sid, rq->client)) {
                rq->status = MHD_HTTP_NOT_FOUND;
                return http_send_error(con, MHD_HTTP_NOT_FOUND, RPC_SESSION_NOT_FOUND,
                                  "Session not found: it ended or expired");
            }
            notify_end_session(sid);
            rq->status = MHD_HTTP_NO_CONTENT;
            return http_reply(con, rq, MHD_HTTP_NO_CONTENT, NULL, 0, NULL);
        }
        if ((!strcmp(method, "GET") || !strcmp(method, "HEAD")) && S->sessions)
            return http_open_stream(h, con, rq, method[0] == 'H');
        if (strcmp(method, "POST"))
            return REFUSE(MHD_HTTP_METHOD_NOT_ALLOWED,
                          S->sessions ? "Method Not Allowed: POST JSON-RPC requests to this "
                                        "endpoint (GET opens a session's notification "
                                        "stream, DELETE ends a session)"
                                      : "Method Not Allowed: this server is stateless; POST "
                                        "JSON-RPC requests to this endpoint");
        const char *ct =
            MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!media_is(ct, "application/json"))
            return REFUSE(MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                          "Unsupported Media Type: Content-Type must be application/json");
        if (!accepts_json(MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_ACCEPT)))
            return REFUSE(MHD_HTTP_NOT_ACCEPTABLE,
                          "Not Acceptable: the client must accept application/json");
        const char *cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > S->cfg.max_body)
            return REFUSE(MHD_HTTP_CONTENT_TOO_LARGE,
                          "Payload Too Large: the body is over --max-body");
        rq->sse = S->cfg.sse && http_accepts_sse(con);
        rq->status = 0;
        return MHD_YES;
    }
    if (rq->ops && !rq->status) {
        enum MHD_Result r = MHD_NO;
        *upload_size = 0;
        http_ops_endpoint(h, con, rq->ops, rq, &r);
        return r;
    }
    if (rq->status && !rq->ready) {
        *upload_size = 0;   /* refused above; the upload is discarded */
        return MHD_YES;
    }
    if (rq->ready) {
        char *b = rq->resp;
        rq->resp = NULL;
        rq->status = MHD_HTTP_OK;
        return reply_rpc(con, rq, MHD_HTTP_OK, b, rq->resp_len);
    }
    if (*upload_size) {
        if (!rq->too_big && buf_append(&rq->body, upload, *upload_size) < 0)
            rq->too_big = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_big)
        return REFUSE(MHD_HTTP_CONTENT_TOO_LARGE, "Payload Too Large: the body is over --max-body");
#undef REFUSE

    struct rpc_headers hd = {
        .protocol_version = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                        "MCP-Protocol-Version"),
        .method = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Method"),
        .name = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Name"),
        .session_id = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Mcp-Session-Id"),
    };
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct call *c = rq->call = call_new(S);
    c->client = rq->client;
    call_set_view(c, rq->acl ? rq->acl : acl_classify(S->acl, NULL));
    c->peer = ci ? ci->client_addr : NULL;
    c->can_stream = http_accepts_sse(con);
    c->stream_always = rq->sse;
    rq->con = con;
    call_on_complete(c, plain_complete, rq);
    rpc_handle(c, rq->body.p ? rq->body.p : "", rq->body.len, &hd);
    if (c->listen && rq->ready)
        return http_open_listen(h, con, rq);
    unsigned status = MHD_HTTP_OK;
    switch (c->out.kind) {
    case CALL_ACCEPTED:
        rq->status = MHD_HTTP_ACCEPTED;
        return http_reply(con, rq, MHD_HTTP_ACCEPTED, NULL, 0, NULL);
    case CALL_RUN:
    case CALL_WAIT:
        rq->status = MHD_HTTP_OK;
        if (c->out.kind == CALL_RUN && call_streams(c)) {
            enum MHD_Result ret = http_sse_start(con, c);
            http_watch_add(h, con, rq);
            return ret;
        }
        /* Never block this thread on a script or a task: park the
         * connection until the answer wakes it. */
        rq->parked = 1;
        MHD_suspend_connection(con);
        rpc_start(c);
        http_watch_add(h, con, rq);
        return MHD_YES;
    case CALL_ERROR:
        if (c->out.transport || c->out.u.error.code == RPC_PARSE_ERROR ||
            c->out.u.error.code == RPC_INVALID_REQUEST ||
            c->out.u.error.code == RPC_MISSING_CAPABILITY)
            status = MHD_HTTP_BAD_REQUEST;
        else if (c->session_gone || (c->modern && c->out.u.error.code == RPC_METHOD_NOT_FOUND))
            status = MHD_HTTP_NOT_FOUND;
        break;
    default:
        break;
    }
    rq->status = status;
    char *b = rq->resp;
    rq->resp = NULL;
    rq->ready = 0;
    return reply_rpc(con, rq, status, b, rq->resp_len);
}

/* The request's access log line, once its answer is out (or its client gone). */
static void access_line(struct MHD_Connection *con, const struct req *rq, int gone)
{
    const union MHD_ConnectionInfo *st =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_HTTP_STATUS);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct call *c = rq->call;
    struct accesslog_rec r = {
        .peer = ci ? ci->client_addr : NULL,
        .client = rq->client,
        .http_method = rq->http_method[0] ? rq->http_method : NULL,
        .path = rq->path,
        .rpc = c ? c->method : NULL,
        .tool = c && c->tool[0] ? c->tool : NULL,
        .skill = c && c->skill[0] ? c->skill : NULL,
        .status = st && st->http_status ? st->http_status : rq->status > 1 ? rq->status : 0,
        .us = (now_ns() - rq->t0) / 1000,
        .client_gone = gone,
    };
    accesslog_write(&r);
}

static void on_done(void *cls, struct MHD_Connection *con, void **ctx,
                    enum MHD_RequestTerminationCode toe)
{
    struct req *rq = *ctx;
    if (rq) {
        struct http *h = cls;
        http_watch_remove(h, rq);
        pcount_dec(h->active, rq->active_shard);
        int gone = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK;
        if (atomic_load(&h->draining)) {
            atomic_fetch_add(&h->drain_ended, 1);
            if (gone)
                atomic_fetch_add(&h->drain_cut, 1);
        }
        if (accesslog_on())
            access_line(con, rq, gone);
        if (rq->status && rq->status != 1) {
            double ms = (double)(now_ns() - rq->t0) / 1e6;
            const char *m = rq->call ? rq->call->method : NULL;
            stats_request(&h->S->stats, m, rq->status);
            log_request(m, rq->call ? rq->call->tool : "", rq->client, rq->status, ms,
                        toe != MHD_REQUEST_TERMINATED_COMPLETED_OK);
        }
        if (rq->ns)
            http_ns_unref(rq->ns);
        if (rq->call) {
            /* a pending answer that comes after this must not reach rq */
            call_detach(rq->call);
            call_unref(rq->call);
        }
        buf_cleanup(&rq->body);
        free(rq->resp);
        free(rq->path);
        free(rq);
        *ctx = NULL;
    }
}

/*
 * libmicrohttpd's own messages. Most report what a client did (reset a
 * connection, sent a bad request, went away mid-answer): the access log and
 * the request log already show that, so they are dropped, at every level.
 * A few mean the server is short of something; they are warnings, at most
 * one per kind every 10 s. The rest are debug.
 */
static const struct {
    const char *prefix;
    int level;                      /* -1: dropped */
} mhd_kinds[] = {
    {"The connection was forcibly closed by remote peer", -1},
    {"Connection was closed by remote side", -1},
    {"Connection socket is closed", -1},
    {"Failed to send", -1},
    {"Failed to parse", -1},
    {"Error processing request (HTTP response code is 4", -1},
    {"TLS encryption or decryption error", -1},
    {"Too late", -1},
    {"Server reached connection limit", LOG_WARN},
    {"Hit process or system resource limit", LOG_WARN},
    {"Failed to create a", LOG_WARN},
    {"Error allocating memory", LOG_WARN},
    {"Error accepting connection", LOG_WARN},
    {"Call to epoll", LOG_WARN},
    {"Fatal error", LOG_ERROR},
};
#define MHD_WARN_EVERY_NS (10ull * 1000000000ull)

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static _Atomic uint64_t last[sizeof mhd_kinds / sizeof *mhd_kinds];
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    for (size_t i = 0; i < sizeof mhd_kinds / sizeof *mhd_kinds; i++) {
        if (strncmp(msg, mhd_kinds[i].prefix, strlen(mhd_kinds[i].prefix)))
            continue;
        if (mhd_kinds[i].level < 0)
            return;
        uint64_t now = now_ns(), prev = atomic_load(&last[i]);
        if ((prev && now - prev < MHD_WARN_EVERY_NS) ||
            !atomic_compare_exchange_strong(&last[i], &prev, now))
            return;
        log_msg((enum log_level)mhd_kinds[i].level, "http: %s", msg);
        return;
    }
    log_debug("http: %s", msg);
}

int http_listen(const struct cfg *c, int *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char portstr[16], bare[256];
    const char *host = c->host;
    if (host[0] == '[') {
        http_host_part(host, bare, sizeof bare);
        bare[strlen(bare) - 1] = '\0';
        host = bare + 1;
    }
    snprintf(portstr, sizeof portstr, "%d", c->port);
    int gai = getaddrinfo(host, portstr, &hints, &ai);
    if (gai) {
        log_error("cannot resolve --host %s: %s", c->host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
        log_error("cannot listen on %s:%d: %s", c->host, c->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static char *read_pem(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        log_error("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b;
    buf_init(&b, 1 << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (buf_append(&b, chunk, n) < 0)
            break;
    fclose(f);
    return buf_steal(&b, NULL);
}

struct http *http_start(struct srv *S, int listen_fd)
{
    const struct cfg *c = &S->cfg;
    struct http *h = xcalloc(1, sizeof *h);
    h->S = S;
    h->active = pcount_new();
    h->loopback = cfg_is_loopback(c->host);
    if (S->sessions)
        allow_methods = "GET, HEAD, POST, DELETE";
    http_cors_origins = c->allowed_origins;
    if (c->access_log) {
        char why[512];
        if (accesslog_start(c->access_log, c->access_log_json, why, sizeof why) < 0) {
            log_error("--access-log: %s", why);
            pcount_free(h->active);
            free(h);
            return NULL;
        }
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO |
                     MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (strchr(c->host, ':'))
        flags |= MHD_USE_IPv6;
    pthread_mutex_init(&h->watch_mu, NULL);
    pthread_cond_init(&h->watch_cv, NULL);
    /* Limits at the edge: slow or greedy clients cannot pin threads or memory. */
    struct MHD_OptionItem opts[9] = {
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_no_nul, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, c->max_connections, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->max_connections_per_ip, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)c->max_header_bytes, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)c->connection_timeout, NULL},
    };
    size_t nopt = 5;
    /* One thread is the internal polling thread alone: a pool size of 0 or
     * 1 is refused with a warning. */
    if (c->threads > 1)
        opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, c->threads, NULL};
    if (c->tls_cert) {
        h->tls_cert = read_pem(c->tls_cert);
        h->tls_key = read_pem(c->tls_key);
        if (!h->tls_cert || !h->tls_key) {
            accesslog_stop();
            free(h->tls_cert);
            free(h->tls_key);
            pcount_free(h->active);
            free(h);
            return NULL;
        }
        flags |= MHD_USE_TLS;
        opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert};
        opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key};
    }
    opts[nopt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    /* The logger goes first, or the options before it complain on stderr. */
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                            mhd_log, h, MHD_OPTION_LISTEN_SOCKET, listen_fd,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!h->d) {
        log_error("cannot start the HTTP server%s: %s",
                  c->tls_cert ? " (check --tls-cert and --tls-key)" : "",
                  errno ? strerror(errno) : "libmicrohttpd refused to start");
        accesslog_stop();
        free(h->tls_cert);
        free(h->tls_key);
        pcount_free(h->active);
        free(h);
        return NULL;
    }
    int e = pthread_create(&h->watcher, NULL, http_watch_main, h);
    if (e)
        log_warn("http: no hang-up watcher (%s): a script runs on after its client leaves",
                 strerror(e));
    h->watching = !e;
    return h;
}

long http_active(struct http *h)
{
    return h ? pcount_sum(h->active) : 0;
}

void http_quiesce(struct http *h)
{
    if (!h)
        return;
    atomic_store(&http_closing, 1);
    h->drain_t0 = now_ns();
    atomic_store(&h->draining, 1);
    notify_end_all();   /* notification streams never end by themselves */
    MHD_socket s = MHD_quiesce_daemon(h->d);
    if (s == MHD_INVALID_SOCKET)
        return;
    /* A connection the kernel completed before the close may already hold a
     * whole request: hand it to libmicrohttpd rather than reset it. */
    for (int fd; (fd = accept4(s, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 ||
            MHD_add_connection(h->d, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
            close(fd);
    }
    close(s);
}

void http_stop(struct http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    if (atomic_load(&h->draining))
        accesslog_drained(atomic_load(&h->drain_ended), atomic_load(&h->drain_cut),
                          (double)(now_ns() - h->drain_t0) / 1e9);
    accesslog_stop();
    /* after the daemon: its last on_done calls take requests off the watch */
    pthread_mutex_lock(&h->watch_mu);
    h->watch_stop = 1;
    pthread_cond_signal(&h->watch_cv);
    pthread_mutex_unlock(&h->watch_mu);
    if (h->watching)
        pthread_join(h->watcher, NULL);
    pthread_mutex_destroy(&h->watch_mu);
    pthread_cond_destroy(&h->watch_cv);
    free(h->tls_cert);
    free(h->tls_key);
    pcount_free(h->active);
    free(h);
}
