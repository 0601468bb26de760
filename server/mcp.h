/*
 * mcp.h - the MCP method table (initialize, ping, the tools, resources and
 * prompts methods, server/discover) and the per-request call record.
 *
 * rpc.c has validated the envelope and chosen the era before a method
 * runs; a method fills either a result or an error in its call record.
 */
#ifndef SKILL_MCP_H
#define SKILL_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "skills.h"
#include "srv.h"

struct tasks_wait;

struct mcp_call {
    struct srv *S;
    int modern;
    json_t *params;         /* borrowed; an object or NULL */
    const char *client;     /* authenticated client id (borrowed), or NULL */
    json_t *id;             /* the request's id (borrowed) */
    const char *session;    /* --stateful: the request's live session id, or NULL */
    const void *peer;       /* the peer's struct sockaddr (borrowed), or NULL */
    struct snapshot *snap;  /* taken on first mcp_snapshot(), released by mcp_call_done */
    /* out */
    json_t *result;         /* new reference */
    const char *raw;        /* or rendered result bytes (borrowed, or raw_owned) */
    size_t rawlen;
    char *raw_owned;
    struct hook_plan *plan; /* or a script to run; the answer comes later */
    struct tasks_wait *wait;    /* or a tasks/result that waits for its task */
    char *raw_response;     /* or the whole JSON-RPC response (malloc'd) */
    size_t raw_response_len;
    int err;                /* JSON-RPC error code, 0 when none */
    char errmsg[512];
    json_t *errdata;        /* new reference or NULL */
    int cacheable;          /* the result takes ttlMs/cacheScope on the modern era */
    const char *method;     /* static name for logs */
};

/* The request's snapshot, acquired once. */
struct snapshot *mcp_snapshot(struct mcp_call *c);
/* Sets an error on c; returns -1 for convenience. */
int mcp_error(struct mcp_call *c, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Runs method on c. Returns 0 when the method exists for this era (result or
 * error set in c), -1 when it does not (the caller answers -32601).
 */
int mcp_dispatch(struct mcp_call *c, const char *method);
void mcp_call_done(struct mcp_call *c);

/* The capabilities object this server declares. New reference. */
json_t *mcp_capabilities(void);

/* resources.c */
int res_list(struct mcp_call *c);
int res_templates(struct mcp_call *c);
int res_read(struct mcp_call *c);
/* Offset cursor of a paginated list (params.cursor); -1 after an error. */
int res_offset_cursor(struct mcp_call *c, size_t *off);
/* MIME type by file extension; for an unknown one text/plain (text > 0),
 * application/octet-stream (text == 0) or NULL (text < 0). */
const char *res_mime_of(const char *path, int text);
/*
 * Resolves uri (which starts with "skill://") to its skill and the
 * percent-decoded path inside it ("" for the skill itself; not yet
 * jail-checked). *owned backs *path: free it. Returns 0, -1 after a
 * -32602 "Resource not found" error on c, or -2 after a -32602 error that
 * the skill exists but is quarantined (the message names the approving
 * command).
 */
int res_locate(struct mcp_call *c, const char *uri, struct skill **k, const char **path,
               char **owned);

/* skillsext.c: the MCP Skills extension (SEP-2640) and skills as prompts */
int skillsext_list(struct mcp_call *c);
int skillsext_get(struct mcp_call *c);
int skillsext_dir_read(struct mcp_call *c);
int skillsext_prompts_list(struct mcp_call *c);
int skillsext_prompts_get(struct mcp_call *c);

#endif
