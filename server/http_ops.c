/*
 * http_ops.c - the operations endpoints: /healthz, /readyz, /metrics (its
 * text from metrics.c), GET /, the discovery index and the RFC 9728
 * metadata, each with HEAD.
 */
#include <errno.h>
#include <microhttpd.h>
#include <string.h>

#include "acl.h"
#include "auth.h"
#include "discovery.h"
#include "envelope.h"
#include "http_int.h"
#include "metrics.h"
#include "oauth.h"
#include "skills.h"

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
            *ret = http_send_error(con, http_peer_status(why), RPC_INVALID_REQUEST, why);
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
            *ret = http_send_error(con, http_peer_status(why), RPC_INVALID_REQUEST, why);
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
