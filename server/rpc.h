/*
 * rpc.h - the JSON-RPC 2.0 envelope and the two protocol eras.
 *
 * rpc_handle() takes one POST body and its MCP headers, validates the
 * envelope, picks the era (a request whose params._meta names
 * io.modelcontextprotocol/protocolVersion is 2026-07-28 "modern"; anything
 * else is the legacy initialize-handshake era), checks the modern headers
 * and the session, and dispatches to mcp.c. The answer is the call's
 * (call.h); the transport turns its kind into a status code.
 */
#ifndef SKILL_RPC_H
#define SKILL_RPC_H

#include <stddef.h>

#include "proto.h"

struct call;

/* The MCP headers of one POST (borrowed), NULL when absent. */
struct rpc_headers {
    const char *protocol_version;   /* MCP-Protocol-Version */
    const char *method;             /* Mcp-Method */
    const char *name;               /* Mcp-Name */
    const char *session_id;         /* Mcp-Session-Id */
    /* A transport without HTTP headers (stdio): a 2026-07-28 request has no
     * MCP-Protocol-Version, Mcp-Method or Mcp-Name to repeat its body, so
     * only the body is checked. */
    int headerless;
};

/*
 * Any HTTP thread. Parses body into c (whose client and peer the transport
 * set), dispatches it and, unless the outcome is pending (call_pending),
 * completes it (call_finish) before returning. c->out says what kind of
 * answer it was, for the transport's status code.
 */
void rpc_handle(struct call *c, const char *body, size_t len, const struct rpc_headers *h);

/* For tests: 1 sends every body through a tree, none through the view of
 * the common shapes (struct rpc_view), so both can be held to one answer. */
extern int rpc_view_off;
/* For tests: 1 when the view reads body (and no tree is built for it). */
int rpc_view_takes(const char *body, size_t len);

/* A pending call, once its transport is ready for the answer (callbacks
 * set, connection parked): starts the script or the wait. */
void rpc_start(struct call *c);

/* The transport's client went away before the answer: nothing more is
 * delivered, and a running script is stopped. */
void rpc_abandon(struct call *c);

/* The client hung up while its connection is parked: a running script is
 * stopped, and the call still completes (its answer resumes the connection,
 * which then ends). */
void rpc_hangup(struct call *c);

#endif
