/*
 * stdio_mcp.h - the stdio transport (--stdio): newline-delimited JSON-RPC
 * on the process's stdin and stdout, one session, for clients that start
 * the server as their child (Claude Desktop, Cursor, Codex, Claude Code).
 *
 * Like http.c it only parses, frames and writes: each line is one call
 * (call.h) handed to rpc_handle(), and each answer or notification is one
 * line on stdout. (Not "stdio.h": the unit tests build with -Iserver, where
 * that name would stand in for the C library's header.)
 */
#ifndef SKILL_STDIO_MCP_H
#define SKILL_STDIO_MCP_H

#include <stddef.h>

#include "srv.h"

struct stdio_mcp;

/*
 * Takes fd 0 and fd 1 for the protocol, before any thread starts or
 * anything is logged: both move to descriptors no child inherits, fd 0
 * becomes /dev/null and fd 1 a copy of stderr, so that a stray printf (or a
 * child that inherits fd 1) lands in the log instead of corrupting the
 * stream. 0, or -1 after printing why on stderr.
 */
int stdio_claim(void);

/* Starts reading requests (after stdio_claim). NULL after logging why. */
struct stdio_mcp *stdio_start(struct srv *S);

/* stdin reached its end (or failed): the client is done, drain and exit. */
int stdio_ended(struct stdio_mcp *io);

/* Calls read but not yet answered, running scripts included. */
long stdio_active(struct stdio_mcp *io);

/* Stops reading stdin; answers still in flight are written. */
void stdio_quiesce(struct stdio_mcp *io);

/* Stops the reader and frees io; nothing is written after it returns. */
void stdio_stop(struct stdio_mcp *io);

/*
 * Any thread: sends json[0..len) (one JSON-RPC notification, compact, no
 * newline needed) as one line on the stdio session, between whole answers,
 * never inside one. For unsolicited notifications such as
 * notifications/tools/list_changed. 0 when written; -1 when there is no
 * stdio session (an HTTP server, or before stdio_start / after
 * stdio_stop) or the client stopped reading.
 */
int stdio_notify(const char *json, size_t len);

#endif
