/*
 * http.c - libmicrohttpd glue. Runs in MHD's thread pool: every request is
 * handled to completion on the thread that read it (the read path takes no
 * lock and does no I/O beyond the socket).
 *
 * Order of checks: path (operations endpoints first), Host/Origin (403),
 * bearer token (401) and rate (429) when --auth-tokens is set, DELETE of a
 * session (--stateful), method (405), media types (415/406), body size
 * (413), then rpc_handle() (which checks the session of a legacy request).
 * The transport's files (http*.c) are the only ones that pick HTTP status
 * codes; this one holds the libmicrohttpd callbacks, the answers, the auth
 * checks, the access log line, the acceptor thread and the daemon's start
 * and stop.
 */
#include "http.h"
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl.h"
#include "accesslog.h"
#include "auth.h"
#include "call.h"
#include "connslots.h"
#include "envelope.h"
#include "notify.h"
#include "pcount.h"
#include "rpc.h"
#include "session.h"
#include "util.h"

/* Set when the drain begins: every answer from then on closes its
 * connection, so no keep-alive client sends a request the drain's end
 * would cut off. One HTTP server per process. */
atomic_int http_closing;

/* What a 405 offers: DELETE ends a session with --stateful. Set once at start. */
static const char *allow_methods = "POST";

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
    /* the buffer goes back to this thread's few (x_reply_alloc) once sent */
    struct MHD_Response *r =
        body ? MHD_create_response_from_buffer_with_free_callback(len, body, x_reply_free)
             : MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
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
    /* what clients send first, found without the case-blind search */
    if (!strncmp(accept, "application/json", 16))
        return 1;
    return x_casestr(accept, "application/json") || strstr(accept, "*/*") ||
           x_casestr(accept, "application/*");
}

/* Content-Length as strtoull reads it: plain digits (what clients send)
 * here, anything else by strtoull. */
static unsigned long long content_length(const char *cl)
{
    unsigned long long v = 0;
    const char *p = cl;
    while (*p >= '0' && *p <= '9' && p - cl < 19)
        v = v * 10 + (unsigned)(*p++ - '0');
    return p > cl && !*p ? v : strtoull(cl, NULL, 10);
}

/* The first header of each name the MCP endpoint reads (struct req_headers). */
enum MHD_Result http_pick_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t klen, const char *value, size_t vlen)
{
    struct req_headers *hd = cls;
    const char **slot = NULL;
    (void)kind;
    (void)vlen;
#define IS(name) (klen == sizeof name - 1 && !strncasecmp(key, name, sizeof name - 1))
    switch (klen) {
    case 4:
        slot = IS(MHD_HTTP_HEADER_HOST) ? &hd->host : NULL;
        break;
    case 6:
        slot = IS(MHD_HTTP_HEADER_ACCEPT) ? &hd->accept : IS("Origin") ? &hd->origin : NULL;
        break;
    case 8:
        slot = IS("Mcp-Name") ? &hd->mcp_name : NULL;
        break;
    case 10:
        slot = IS("Mcp-Method") ? &hd->mcp_method : NULL;
        break;
    case 12:
        slot = IS(MHD_HTTP_HEADER_CONTENT_TYPE) ? &hd->content_type : NULL;
        break;
    case 14:
        slot = IS(MHD_HTTP_HEADER_CONTENT_LENGTH) ? &hd->content_length
               : IS("Mcp-Session-Id")             ? &hd->session_id
                                                  : NULL;
        break;
    case 20:
        slot = IS("MCP-Protocol-Version") ? &hd->protocol_version : NULL;
        break;
    default:
        break;
    }
#undef IS
    if (slot == &hd->host)
        hd->hosts += hd->hosts < 2;
    else if (slot == &hd->origin)
        hd->origins += hd->origins < 2;
    if (slot && !*slot)
        *slot = value;
    return MHD_YES;
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
        if (!rq->who)
            rq->who = xmalloc(sizeof *rq->who);
        snprintf(rq->who->groups, sizeof rq->who->groups, "%s", who.groups);
        snprintf(rq->who->sub, sizeof rq->who->sub, "%s", who.sub);
        snprintf(rq->who->scopes, sizeof rq->who->scopes, "%s", who.scopes);
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
    if (!memchr(s, '%', n))
        return n;   /* nothing to decode: the usual path */
    char small[256], *tmp = n < sizeof small ? small : xmalloc(n + 1);
    if (pct_decode(s, n, tmp, &out) == 0) {
        memcpy(s, tmp, out + 1);
        n = out;
    }
    if (tmp != small)
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
        /* nearly every request is a POST: the other methods' tests are skipped */
        int post = !strcmp(method, "POST");
        if (accesslog_on()) {
            snprintf(rq->http_method, sizeof rq->http_method, "%s", method);
            rq->path = xstrndup(url, strnlen(url, 1024));
        }
#define REFUSE(st, msg) (rq->status = (st), http_send_error(con, (st), RPC_INVALID_REQUEST, (msg)))
        if (!post && !strcmp(method, "OPTIONS")) {
            int mcp = !strcmp(url, S->cfg.path);
            if (!mcp && !http_is_ops_path(url))
                return REFUSE(MHD_HTTP_NOT_FOUND, "Not Found: the MCP endpoint is elsewhere");
            const char *why = mcp || http_ops_checks_peer(url) ? http_check_peer(h, con) : NULL;
            if (why)
                return REFUSE(http_peer_status(why), why);
            rq->status = 1;     /* not an MCP request: kept out of the request log */
            return http_cors_preflight(con, mcp ? allow_methods : "GET, HEAD");
        }
        if (!post && (!strcmp(method, "GET") || !strcmp(method, "HEAD")) &&
            strcmp(url, S->cfg.path) && http_is_ops_path(url)) {
            /* Answer on the next call, after the (empty) request body, so
             * the connection can be kept alive for the next probe. */
            rq->ops = url;
            return MHD_YES;
        }
        if (strcmp(url, S->cfg.path))
            return REFUSE(MHD_HTTP_NOT_FOUND, "Not Found: the MCP endpoint is elsewhere");
        MHD_get_connection_values_n(con, MHD_HEADER_KIND, http_pick_header, &rq->hd);
        const char *why = http_check_peer_of(h, &rq->hd);
        if (why)
            return REFUSE(http_peer_status(why), why);
        enum MHD_Result refused;
        if (S->auth && http_authorize(S, con, rq, &refused) < 0)
            return refused;
        if (!post && !strcmp(method, "DELETE") && S->sessions) {
            /* Ends a --stateful session; there is no body to wait for. */
            const char *sid = rq->hd.session_id;
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
        if (!post && (!strcmp(method, "GET") || !strcmp(method, "HEAD")) && S->sessions)
            return http_open_stream(h, con, rq, method[0] == 'H');
        if (!post)
            return REFUSE(MHD_HTTP_METHOD_NOT_ALLOWED,
                          S->sessions ? "Method Not Allowed: POST JSON-RPC requests to this "
                                        "endpoint (GET opens a session's notification "
                                        "stream, DELETE ends a session)"
                                      : "Method Not Allowed: this server is stateless; POST "
                                        "JSON-RPC requests to this endpoint");
        if (!media_is(rq->hd.content_type, "application/json"))
            return REFUSE(MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                          "Unsupported Media Type: Content-Type must be application/json");
        if (!accepts_json(rq->hd.accept))
            return REFUSE(MHD_HTTP_NOT_ACCEPTABLE,
                          "Not Acceptable: the client must accept application/json");
        const char *cl = rq->hd.content_length;
        if (cl && content_length(cl) > S->cfg.max_body)
            return REFUSE(MHD_HTTP_CONTENT_TOO_LARGE,
                          "Payload Too Large: the body is over --max-body");
        rq->sse = S->cfg.sse && http_accept_has_sse(rq->hd.accept);
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
        .protocol_version = rq->hd.protocol_version,
        .method = rq->hd.mcp_method,
        .name = rq->hd.mcp_name,
        .session_id = rq->hd.session_id,
    };
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct call *c = rq->call = call_new(S);
    c->client = rq->client;
    call_set_view(c, rq->acl ? rq->acl : acl_classify(S->acl, NULL));
    c->peer = ci ? ci->client_addr : NULL;
    c->stream_always = rq->sse;
    rq->con = con;
    call_on_complete(c, plain_complete, rq);
    rpc_handle(c, rq->body.p ? rq->body.p : "", rq->body.len, &hd);
    if (c->listen && rq->ready)
        return http_open_listen(h, con, rq);
    unsigned status = MHD_HTTP_OK;
    switch (call_kind(c)) {
    case CALL_ACCEPTED:
        rq->status = MHD_HTTP_ACCEPTED;
        return http_reply(con, rq, MHD_HTTP_ACCEPTED, NULL, 0, NULL);
    case CALL_RUN:
    case CALL_WAIT:
        /* only a pending call can stream: no other pays for the Accept scan */
        c->can_stream = http_accept_has_sse(rq->hd.accept);
        rq->status = MHD_HTTP_OK;
        if (call_kind(c) == CALL_RUN && call_streams(c)) {
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
        if (call_is_transport_error(c) || call_error_code(c) == RPC_PARSE_ERROR ||
            call_error_code(c) == RPC_INVALID_REQUEST ||
            call_error_code(c) == RPC_MISSING_CAPABILITY)
            status = MHD_HTTP_BAD_REQUEST;
        else if (c->session_gone || (c->modern && call_error_code(c) == RPC_METHOD_NOT_FOUND))
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
        free(rq->who);
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

/* The listening socket's backlog: also the most connections the drain takes
 * in from it past --max-connections (see http_quiesce). */
#define HTTP_BACKLOG 1024

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
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, HTTP_BACKLOG) < 0) {
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

/*
 * The server accepts connections itself and hands them to libmicrohttpd
 * (MHD_add_connection), whose daemon has no listening socket. Quiescing a
 * daemon that owns one (MHD_quiesce_daemon) races its epoll workers in
 * libmicrohttpd 0.9.75: the quiescing thread and a worker both take the
 * socket out of the worker's epoll set, each after reading unlocked flags,
 * and the loser's epoll_ctl fails and aborts the process ("Failed to remove
 * listen FD from epoll set"). With no socket in any epoll set that path is
 * never taken; the drain stops this thread instead.
 *
 * At --max-connections (counted exactly by connslots) the socket is left
 * alone, so new connections wait in the kernel's backlog, and a close
 * wakes this thread through acc_wake. libmicrohttpd's own limit is set
 * above what this thread hands over, so it never refuses a connection.
 */
static void on_connection(void *cls, struct MHD_Connection *con, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http *h = cls;
    (void)socket_ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            connslots_started(h->slots, ci->connect_fd);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && connslots_closed(h->slots)) {
        uint64_t one = 1;
        if (write(h->acc_wake, &one, sizeof one) != sizeof one)
            log_warn("http: cannot wake the acceptor: %s", strerror(errno));
    }
}

/* Waits up to ms for acc_wake (a close, or the stop) and clears it. */
static void acc_nap(struct http *h, int ms)
{
    struct pollfd p = {.fd = h->acc_wake, .events = POLLIN};
    uint64_t v;
    if (poll(&p, 1, ms) > 0 && read(h->acc_wake, &v, sizeof v) < 0 && errno != EAGAIN)
        log_warn("http: acceptor: %s", strerror(errno));
}

/*
 * Accepts up to most connections that wait on the socket and hands them
 * over; past_limit ignores --max-connections (the drain). Returns how many
 * were accepted.
 */
static unsigned accept_some(struct http *h, unsigned most, int past_limit)
{
    static _Atomic uint64_t warned;
    unsigned n = 0;
    while (n < most && (past_limit || !connslots_full(h->slots, NULL))) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(h->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* what is queued waits until a descriptor frees */
                uint64_t now = now_ns(), prev = atomic_load(&warned);
                if ((!prev || now - prev >= 10ull * 1000000000ull) &&
                    atomic_compare_exchange_strong(&warned, &prev, now))
                    log_warn("http: cannot accept a connection: %s", strerror(errno));
                if (!past_limit)
                    acc_nap(h, 100);
            }
            break;
        }
        n++;
        connslots_take(h->slots, fd, (struct sockaddr *)&ss, sl);
        /* closes fd itself when it refuses (--max-connections-per-ip) */
        if (MHD_add_connection(h->d, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
            connslots_refused(h->slots, fd);
    }
    return n;
}

static void *acceptor_main(void *arg)
{
    struct http *h = arg;
    struct pollfd p[2] = {{.fd = h->acc_wake, .events = POLLIN},
                          {.fd = h->listen_fd, .events = POLLIN}};
    while (!atomic_load(&h->acc_quit)) {
        int unstarted = 0;
        int full = connslots_full(h->slots, &unstarted);
        /* full with a connection not started: look at it again in 100 ms,
         * in case libmicrohttpd dropped it without a word */
        int n = poll(p, full ? 1 : 2, full && unstarted ? 100 : -1);
        if (n < 0) {
            if (errno != EINTR) {
                log_warn("http: acceptor: poll: %s", strerror(errno));
                acc_nap(h, 100);
            }
            continue;
        }
        if (p[0].revents) {
            uint64_t v;
            if (read(h->acc_wake, &v, sizeof v) < 0 && errno != EAGAIN)
                log_warn("http: acceptor: %s", strerror(errno));
        }
        if (full) {
            if (n == 0)
                connslots_check(h->slots);
        } else if (p[1].revents) {
            /* a bounded batch, then the stop flag is looked at again */
            accept_some(h, 64, 0);
        }
    }
    return NULL;
}

/* Ends the acceptor; the socket stays open (the drain empties its backlog). */
static void acceptor_stop(struct http *h)
{
    if (!h->accepting)
        return;
    atomic_store(&h->acc_quit, 1);
    uint64_t one = 1;
    if (write(h->acc_wake, &one, sizeof one) != sizeof one)
        log_warn("http: cannot stop the acceptor: %s", strerror(errno));
    pthread_join(h->acceptor, NULL);
    h->accepting = 0;
}

static void http_free(struct http *h)
{
    if (h->acc_wake >= 0)
        close(h->acc_wake);
    connslots_free(h->slots);
    free(h->tls_cert);
    free(h->tls_key);
    pcount_free(h->active);
    free(h);
}

struct http *http_start(struct srv *S, int listen_fd)
{
    const struct cfg *c = &S->cfg;
    struct http *h = xcalloc(1, sizeof *h);
    h->S = S;
    h->active = pcount_new();
    h->loopback = cfg_is_loopback(c->host);
    h->listen_fd = listen_fd;
    h->slots = connslots_new((unsigned)c->max_connections);
    h->acc_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->acc_wake < 0) {
        log_error("cannot start the HTTP server: eventfd: %s", strerror(errno));
        http_free(h);
        return NULL;
    }
    if (S->sessions)
        allow_methods = "GET, HEAD, POST, DELETE";
    http_cors_origins = c->allowed_origins;
    if (c->access_log) {
        struct err why;
        if (accesslog_start(c->access_log, c->access_log_json, &why) < 0) {
            log_error("--access-log: %s", why.msg);
            http_free(h);
            return NULL;
        }
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    /* TLS polls: libmicrohttpd 0.9.75's epoll loop keeps a connection whose
     * handshake waits for the client marked readable and retries it without
     * sleeping, so one silent client (or half a ClientHello) would pin a
     * thread for as long as it stays (--connection-timeout never closed
     * it); poll asks the kernel each time. Not with MHD_USE_TURBO: its poll
     * loop never closes such a connection at --connection-timeout. */
    flags |= c->tls_cert ? MHD_USE_POLL : MHD_USE_EPOLL | MHD_USE_TURBO;
    if (strchr(c->host, ':'))
        flags |= MHD_USE_IPv6;
    pthread_mutex_init(&h->watch_mu, NULL);
    pthread_cond_init(&h->watch_cv, NULL);
    /* Limits at the edge: slow or greedy clients cannot pin threads or memory.
     * --max-connections is the acceptor's (connslots). libmicrohttpd splits
     * its own limit evenly between its threads and hands a new connection
     * to one of them by its descriptor's number, so each thread gets room
     * for all the acceptor may hand over: --max-connections, and the
     * backlog the drain takes in past it. */
    unsigned pool = c->threads > 1 ? (unsigned)c->threads : 1;
    struct MHD_OptionItem opts[9] = {
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_no_nul, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)(((unsigned)c->max_connections + HTTP_BACKLOG + 1) * pool),
         NULL},
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
            http_free(h);
            return NULL;
        }
        flags |= MHD_USE_TLS;
        opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert};
        opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key};
    }
    opts[nopt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    /* The logger goes first, or the options before it complain on stderr. */
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                            mhd_log, h, MHD_OPTION_NOTIFY_COMPLETED, on_done, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_ARRAY,
                            opts, MHD_OPTION_END);
    if (!h->d) {
        log_error("cannot start the HTTP server%s: %s",
                  c->tls_cert ? " (check --tls-cert and --tls-key)" : "",
                  errno ? strerror(errno) : "libmicrohttpd refused to start");
        accesslog_stop();
        http_free(h);
        return NULL;
    }
    int e = pthread_create(&h->acceptor, NULL, acceptor_main, h);
    if (e) {
        log_error("cannot start the HTTP server: the acceptor: %s", strerror(e));
        MHD_stop_daemon(h->d);
        accesslog_stop();
        http_free(h);
        return NULL;
    }
    h->accepting = 1;
    e = pthread_create(&h->watcher, NULL, http_watch_main, h);
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
    acceptor_stop(h);
    if (h->listen_fd < 0)
        return;
    /* A connection the kernel completed before now may already hold a whole
     * request: take in what the backlog holds, past --max-connections if
     * need be (libmicrohttpd's limit leaves room for a full backlog),
     * rather than reset it when the socket closes. */
    accept_some(h, HTTP_BACKLOG + 1, 1);
    close(h->listen_fd);
    h->listen_fd = -1;
}

void http_stop(struct http *h)
{
    if (!h)
        return;
    acceptor_stop(h);
    MHD_stop_daemon(h->d);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
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
    http_free(h);
}
