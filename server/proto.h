/*
 * proto.h - protocol constants shared by every layer: JSON-RPC error codes
 * and the one list of protocol versions this server speaks. Header only,
 * so that the envelope, the tools and the method table can agree on them
 * without including each other.
 */
#ifndef SKILL_PROTO_H
#define SKILL_PROTO_H

#include <stddef.h>
#include <string.h>

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

/* How a version may be used (a bit set). */
#define PROTO_MODERN 1      /* named in _meta: the 2026-07-28 era */
#define PROTO_NEGOTIATE 2   /* initialize may settle on it (the first is the default) */
#define PROTO_HEADER 4      /* a legacy MCP-Protocol-Version header may name it */

struct proto_version {
    const char *name;
    int use;
};

/* Every version this server answers, newest first. */
static inline const struct proto_version *proto_versions(size_t *n)
{
    static const struct proto_version v[] = {
        {MCP_MODERN_VERSION, PROTO_MODERN},
        {"2025-11-25", PROTO_NEGOTIATE | PROTO_HEADER},
        {"2025-06-18", PROTO_NEGOTIATE | PROTO_HEADER},
        {"2025-03-26", PROTO_HEADER},
    };
    *n = sizeof v / sizeof *v;
    return v;
}

/* The entry naming version with one of the uses in mask, or NULL. */
static inline const char *proto_supports(const char *version, int mask)
{
    size_t n;
    const struct proto_version *v = proto_versions(&n);
    for (size_t i = 0; version && i < n; i++)
        if ((v[i].use & mask) && !strcmp(v[i].name, version))
            return v[i].name;
    return NULL;
}

/* The server's name in initialize, serverInfo _meta, metadata and stats. */
#define SERVER_NAME "skill-mcp"

#endif
