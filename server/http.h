/*
 * http.h - the libmicrohttpd daemon: the MCP endpoint, Host/Origin checks,
 * body caps and HTTP status codes. JSON-RPC is rpc.c's business.
 */
#ifndef SKILL_HTTP_H
#define SKILL_HTTP_H

#include "srv.h"

struct http;

/*
 * Binds cfg host:port and starts serving with cfg threads. Returns NULL
 * after logging why it could not. *port gets the bound port (useful with
 * --port 0). Call from the main thread.
 */
struct http *http_start(struct srv *S, int *port);
/* Stops accepting new connections (requests on open ones still arrive). */
void http_quiesce(struct http *h);
void http_stop(struct http *h);

#endif
