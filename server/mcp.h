/*
 * mcp.h - the MCP method table (initialize, ping, the tools, resources,
 * prompts, skills and tasks methods, server/discover) and the start of a
 * pending call.
 *
 * rpc.c has validated the envelope and chosen the era before a method
 * runs; a method sets its call's outcome (call.h).
 */
#ifndef SKILL_MCP_H
#define SKILL_MCP_H

#include <jansson.h>

struct call;

/*
 * Runs method on c. Returns 0 when the method exists for this era (the
 * outcome is set on c), -1 when it does not (the caller answers -32601).
 */
int mcp_dispatch(struct call *c, const char *method);

/* A notification (no id): notifications/cancelled stops that request's
 * script when it was this client's. */
void mcp_notify(struct call *c, const char *method);

/*
 * Starts a pending call: a script run through its hooks (its stderr sent
 * as events when the transport listens for them), or a tasks/result wait.
 * Either ends in call_finish() on another thread.
 */
void mcp_start(struct call *c);

/* The transport is gone: detach it and stop the call's script, if any. */
void mcp_abandon(struct call *c);

/* The client hung up; the transport still waits for the answer to end the
 * connection: stop the call's script, if any, without detaching. */
void mcp_hangup(struct call *c);

/* The capabilities object this server declares: listChanged and
 * subscribe only where they can be delivered (a stream exists, and for
 * subscribe a session to keep them in). New reference. */
json_t *mcp_capabilities(int list_changed, int subscribe);

#endif
