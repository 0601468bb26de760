/*
 * envelope.h - JSON-RPC 2.0 responses around a result or an error, for
 * each protocol era. Below both the method layer and the tools: a tool
 * renders its result bytes, whoever completes the call wraps them here.
 *
 * Every function returns malloc'd compact JSON (never NULL) and its length.
 * id is the request's id (a string or an integer), or NULL for null.
 */
#ifndef SKILL_ENVELOPE_H
#define SKILL_ENVELOPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* What env_decorate_modern() adds (no ttl), as bytes to append to a result
 * object rendered by hand (before its closing brace). */
#define ENV_MODERN_TAIL                                                            \
    ",\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" \
    "{\"name\":\"" SERVER_NAME "\",\"version\":\"" SKILL_VERSION "\"}}"

/* The 2026-07-28 result members: resultType, serverInfo _meta and, when
 * ttl_ms >= 0, ttlMs/cacheScope. */
void env_decorate_modern(json_t *result, int64_t ttl_ms);

/* The 2026-07-28 serverInfo member's value: {"name", "version"}. */
json_t *env_server_info(void);

/* A JSON-RPC notification object: {"jsonrpc", "method", "params"};
 * params is stolen. */
json_t *env_notification(const char *method, json_t *params);

/* A result object. modern: decorated first unless it already says its
 * resultType (then only a cacheable one, ttl_ms >= 0, gets its ttl). */
char *env_result(json_t *id, json_t *result, int modern, int64_t ttl_ms, size_t *len);

/* A result already rendered as bytes (a tool's CallToolResult, a list
 * rendered at start-up): wrapped as is, era members included or not. */
char *env_result_raw(json_t *id, const char *raw, size_t rawlen, size_t *len);

/* An error; data (stolen) may be NULL. A message that is not UTF-8 is
 * replaced, never a crash or bytes that are not JSON. */
char *env_error(json_t *id, int code, const char *msg, json_t *data, size_t *len);

#endif
