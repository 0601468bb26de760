/*
 * rpc.h - the JSON-RPC 2.0 envelope and the two protocol eras.
 *
 * rpc_handle() takes one POST body and its MCP headers, validates the
 * envelope, picks the era (a request whose params._meta names
 * io.modelcontextprotocol/protocolVersion is 2026-07-28 "modern"; anything
 * else is the legacy initialize-handshake era), checks the modern headers,
 * dispatches to mcp.c and serialises the reply. It says what kind of answer
 * it produced; http.c turns that into a status code.
 */
#ifndef SKILL_RPC_H
#define SKILL_RPC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "srv.h"

struct tasks_wait;

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define RPC_HEADER_MISMATCH -32020
#define RPC_MISSING_CAPABILITY -32021
#define RPC_UNSUPPORTED_VERSION -32022
#define RPC_SESSION_NOT_FOUND -32001      /* legacy era, as the SDKs answer it */

#define MCP_MODERN_VERSION "2026-07-28"

/* What rpc_decorate_modern() adds (no ttl), as bytes to append to a result. */
#define RPC_MODERN_TAIL                                                            \
    ",\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" \
    "{\"name\":\"skill-mcp\",\"version\":\"" SKILL_VERSION "\"}}"

struct rpc_headers {
    const char *protocol_version;   /* MCP-Protocol-Version, or NULL */
    const char *method;             /* Mcp-Method */
    const char *name;               /* Mcp-Name */
    const char *client;             /* authenticated client id, or NULL */
    const char *session_id;         /* Mcp-Session-Id, or NULL */
    const void *peer;               /* the peer's struct sockaddr (borrowed), or NULL */
};

enum rpc_kind {
    RPC_OUT_RESULT,         /* 200 */
    RPC_OUT_ERROR,          /* a JSON-RPC error; see code and transport */
    RPC_OUT_ACCEPTED,       /* a notification: 202, no body */
    RPC_OUT_PENDING,        /* a script must run first: see job */
    RPC_OUT_WAIT,           /* tasks/result of a working task: see wait */
};

struct rpc_out {
    enum rpc_kind kind;
    int code;               /* JSON-RPC error code when kind == RPC_OUT_ERROR */
    int transport;          /* the error is about headers/_meta: HTTP 400 */
    int modern;             /* answered on the 2026-07-28 era */
    char *body;             /* malloc'd response bytes, NULL when accepted */
    size_t len;
    const char *method;     /* borrowed static string for logs, or NULL */
    char tool[64];          /* tools/call: the tool's name, for logs and metrics */
    struct hook_plan *plan; /* RPC_OUT_PENDING: the caller starts it */
    json_t *id;             /* RPC_OUT_PENDING: the request id (new reference) */
    json_t *progress_token; /* RPC_OUT_PENDING: _meta.progressToken, or NULL (new ref) */
    int log_stream;         /* RPC_OUT_PENDING: modern _meta logLevel, or a session level,
                             * asks for log lines */
    struct tasks_wait *wait;    /* RPC_OUT_WAIT: the caller parks the connection on it */
    int session_gone;       /* --stateful: the Mcp-Session-Id is unknown or ended (404) */
    char session_id[40];    /* --stateful: the session initialize minted, or "" */
};

/* Any HTTP thread. Fills *out; free out->body. */
void rpc_handle(struct srv *S, const char *body, size_t len, const struct rpc_headers *h,
                struct rpc_out *out);

/* Adds resultType, serverInfo _meta and (ttl_ms >= 0) ttlMs/cacheScope. */
void rpc_decorate_modern(json_t *result, int64_t ttl_ms);

/* Serialises a complete response around already-rendered result bytes. */
char *rpc_wrap_raw(json_t *id, const char *raw, size_t rawlen, size_t *outlen);

#endif
