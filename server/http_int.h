/*
 * http_int.h - what the HTTP transport's files share: the server's and the
 * request's state, the answer helpers, the Host/Origin and CORS checks,
 * the streams and the hang-up watch, the operations endpoints. Every other
 * module uses http.h.
 */
#ifndef SKILL_HTTP_INT_H
#define SKILL_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "http.h"
#include "util.h"

struct call;
struct connslots;
struct nstream;

struct http {
    struct MHD_Daemon *d;
    char *tls_cert, *tls_key;   /* PEM text; libmicrohttpd reads them while running */
    struct srv *S;
    int loopback;
    atomic_int draining;        /* quiesced: /readyz says 503 */
    struct pcount *active;      /* requests in flight, scripts included */
    /* parked script calls whose sockets are watched for a hang-up */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cv;
    struct req *watch;          /* guarded by watch_mu */
    int watch_stop;             /* guarded by watch_mu */
    int watching;               /* the watcher runs: http_stop joins it */
    pthread_t watcher;
    /* requests ended while draining, and those cut off: the drain's last
     * access log line */
    atomic_long drain_ended, drain_cut;
    uint64_t drain_t0;
    /* the listening socket, accepted on by the acceptor thread (http.c)
     * until the drain closes it */
    int listen_fd;
    struct connslots *slots;    /* --max-connections, counted exactly */
    int acc_wake;               /* eventfd: a slot freed, or the acceptor ends */
    atomic_int acc_quit;
    int accepting;              /* the acceptor runs: joined before the socket closes */
    pthread_t acceptor;
};

/* The request headers the MCP endpoint reads, found in one pass over the
 * request's headers (each MHD_lookup_connection_value walks all of them):
 * the first of each name, any case, as the lookup finds it; NULL when
 * absent. Borrowed from libmicrohttpd until the request ends. */
struct req_headers {
    const char *host, *origin, *content_type, *accept, *content_length;
    const char *protocol_version, *mcp_method, *mcp_name, *session_id;
    unsigned char hosts, origins;   /* how many of each came (2 means 2 or more) */
};

struct req_who {
    char groups[256], sub[256], scopes[512];
};

struct req {
    struct buf body;
    int too_big;
    int active_shard;           /* where it is counted in h->active */
    uint64_t t0;
    unsigned status;            /* what was answered, for the log and metrics */
    const char *ops;            /* an operations endpoint (borrowed url), or NULL */
    const char *client;         /* authenticated client id (borrowed from auth), or NULL */
    const struct acl_class *acl;    /* --acl: the caller's class once authorized, or NULL */
    /* --acl: who it is, for a notification stream that outlives a rule
     * reload (allocated only with --acl: a kilobyte every request zeroed
     * and freed otherwise) */
    struct req_who *who;
    const char *challenge;      /* WWW-Authenticate of a 401/403 refusal (borrowed), or NULL */
    int rl_limit, rl_remaining, rl_reset;   /* RateLimit-* of this client, when limited */
    struct call *call;          /* the MCP request, once its body is read */
    /* the answer; for a pending call the connection is parked until it comes */
    struct MHD_Connection *con;
    int parked;
    char *resp;
    size_t resp_len;
    int ready;
    int sse;                    /* --sse and the client accepts text/event-stream */
    struct req_headers hd;      /* on the MCP endpoint, once its path is checked */
    /* on the hang-up watch (struct http): the connection's thread adds and
     * removes it; the watcher reads fd and sets hung under watch_mu */
    struct req *watch_next;
    int watched, watch_fd, hung;
    /* for the access log (only with --access-log) */
    char http_method[16];
    char *path;
    struct nstream *ns;         /* a notification stream (GET), or NULL */
};

/* Set when the drain begins: every answer from then on closes its
 * connection (http.c). */
extern atomic_int http_closing;
/* --allowed-origins: the origins that get CORS headers. Set once at start. */
extern const char *http_cors_origins;

/* ---- answers (http.c) ---- */

/* Every answer goes out here; an MCP answer (rq set) also carries the
 * client's RateLimit-* headers. body is malloc'd (or NULL), freed by
 * libmicrohttpd. */
enum MHD_Result http_reply(struct MHD_Connection *con, const struct req *rq, unsigned status,
                           char *body, size_t len, const char *ctype);
enum MHD_Result http_send_bytes(struct MHD_Connection *con, unsigned status, char *body,
                                size_t len, const char *ctype);
/* A JSON-RPC error without an id, for transport-level refusals. */
enum MHD_Result http_send_error(struct MHD_Connection *con, unsigned status, int code,
                                const char *msg);
enum MHD_Result http_reply_error(struct MHD_Connection *con, const struct req *rq,
                                 unsigned status, const char *msg);
/* --auth-tokens: 0 when the request may go on, else the refusal is queued
 * in *ret. */
int http_authorize(struct srv *S, struct MHD_Connection *con, struct req *rq,
                   enum MHD_Result *ret);

/* ---- Host/Origin and CORS ---- */

void http_host_part(const char *in, char *out, size_t cap);
/* NULL, or why the request's Host or Origin is refused; answer with
 * http_peer_status(why): 400 for a header that came more than once, 403
 * for the rest. */
const char *http_check_peer(struct http *h, struct MHD_Connection *con);
/* The same from the Host and Origin values (NULL: no such header) and how
 * many of each the request carried. */
const char *http_check_peer_of(struct http *h, const struct req_headers *hd);
/* An MHD_KeyValueIteratorN filling a struct req_headers (cls), counting
 * Host and Origin. */
enum MHD_Result http_pick_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t klen, const char *value, size_t vlen);
unsigned http_peer_status(const char *why);
void http_cors_headers(struct MHD_Response *r, struct MHD_Connection *con);
enum MHD_Result http_cors_preflight(struct MHD_Connection *con, const char *methods);

/* ---- streams and the hang-up watch ---- */

int http_accepts_sse(struct MHD_Connection *con);
/* The same for an Accept value (NULL: none). */
int http_accept_has_sse(const char *accept);
/* Answers c, which streams, with an SSE stream and starts it. */
enum MHD_Result http_sse_start(struct MHD_Connection *con, struct call *c);
/* GET (or HEAD: head set) on the MCP path with --stateful. */
enum MHD_Result http_open_stream(struct http *h, struct MHD_Connection *con, struct req *rq,
                                 int head);
/* subscriptions/listen: rq's call answered with a notification stream. */
enum MHD_Result http_open_listen(struct http *h, struct MHD_Connection *con, struct req *rq);
void http_ns_unref(struct nstream *e);
void http_watch_add(struct http *h, struct MHD_Connection *con, struct req *rq);
void http_watch_remove(struct http *h, struct req *rq);
void *http_watch_main(void *arg);

/* ---- operations endpoints ---- */

int http_is_ops_path(const char *url);
int http_ops_checks_peer(const char *url);
/* 1 with *ret set when url is an operations endpoint, else 0. */
int http_ops_endpoint(struct http *h, struct MHD_Connection *con, const char *url,
                      struct req *rq, enum MHD_Result *ret);

#endif
