/*
 * http.h - the libmicrohttpd daemon: the MCP endpoint, Host/Origin checks,
 * body caps and HTTP status codes. JSON-RPC is rpc.c's business.
 */
#ifndef SKILL_HTTP_H
#define SKILL_HTTP_H

#include "srv.h"

struct http;

/*
 * Creates the listening socket for cfg host:port (before workers are forked,
 * so they all accept on it). Returns the fd, or -1 after logging why; *port
 * gets the bound port (useful with --port 0).
 */
int http_listen(const struct cfg *c, int *port);

/* Logs a warning for each --allowed-hosts / --allowed-origins entry that no
 * request can match (a Host entry with a port, an origin with a path). */
void http_warn_peer_lists(const struct cfg *c);

/*
 * Starts serving listen_fd with cfg threads. Returns NULL after logging why
 * it could not. Call from the main thread (of a worker).
 */
struct http *http_start(struct srv *S, int listen_fd);

/* Requests in flight, running scripts included (for a graceful drain). */
long http_active(struct http *h);
/* Stops accepting new connections: connections the kernel already queued are
 * taken in first, then the listening socket is closed. Requests on open
 * connections still arrive and are answered, each with Connection: close,
 * so that every client comes back on a new connection (refused). */
void http_quiesce(struct http *h);
void http_stop(struct http *h);

#endif
