/*
 * rpc.c - JSON-RPC 2.0 envelope, era selection and modern header checks.
 *
 * The single place where protocol errors get their codes. Internal details
 * never reach the client: messages here are about the request, not about
 * the server.
 */
#include "rpc.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "json.h"
#include "mcp.h"
#include "runner.h"
#include "session.h"
#include "util.h"

#define MAX_JSON_DEPTH 64

static const char *const legacy_header_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

void rpc_decorate_modern(json_t *result, int64_t ttl_ms)
{
    json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/serverInfo",
                        json_pack("{s:s, s:s}", "name", "skill-mcp", "version", SKILL_VERSION));
    if (ttl_ms >= 0) {
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
        json_object_set_new(result, "cacheScope", json_string("public"));
    }
}

char *rpc_wrap_raw(json_t *id, const char *raw, size_t rawlen, size_t *outlen)
{
    struct buf b;
    char *ids = id ? jf_dumps(id, NULL) : NULL;   /* a string or an integer (checked) */
    buf_init(&b, 0);
    buf_reserve(&b, rawlen + 64 + (ids ? strlen(ids) : 4));
    buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_puts(&b, ids ? ids : "null");
    buf_puts(&b, ",\"result\":");
    buf_append(&b, raw, rawlen);
    buf_puts(&b, "}");
    free(ids);
    return buf_steal(&b, outlen);
}

static void set_error(struct rpc_out *out, json_t *id, int code, const char *msg, json_t *data,
                      int transport)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg);
    if (!err) {
        /* msg was not valid UTF-8: never let that become a crash or bad JSON */
        err = json_pack("{s:i, s:s}", "code", code, "message", "error (message not shown)");
    }
    if (data)
        json_object_set_new(err, "data", data);
    json_t *r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "error", err);
    out->kind = RPC_OUT_ERROR;
    out->code = code;
    out->transport = transport;
    out->body = jf_dumps(r, &out->len);
    json_decref(r);
}

/* Depth of nesting, to refuse pathological bodies before walking them. */
static int too_deep(const char *s, size_t len)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == '{' || ch == '[') {
            if (++depth > MAX_JSON_DEPTH)
                return 1;
        } else if (ch == '}' || ch == ']') {
            depth--;
        }
    }
    return 0;
}

/* Header value with optional whitespace trimmed and =?base64?...?= decoded. */
static int header_value(const char *h, char *out, size_t cap)
{
    while (*h == ' ' || *h == '\t')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n >= 12 && !strncasecmp(h, "=?base64?", 9) && !strncmp(h + n - 2, "?=", 2)) {
        const char *b = h + 9;
        size_t bl = n - 11;
        if (bl % 4 || (bl / 4) * 3 + 1 > cap)
            return -1;
        int got = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b, (int)bl);
        if (got < 0)
            return -1;
        while (bl && b[bl - 1] == '=') {
            bl--;
            got--;
        }
        out[got] = '\0';
        return 0;
    }
    if (n >= cap)
        return -1;
    memcpy(out, h, n);
    out[n] = '\0';
    return 0;
}

/* The name a modern request must repeat in Mcp-Name, or NULL. */
static const char *name_param(const char *method, json_t *params)
{
    if (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get"))
        return json_string_value(json_object_get(params, "name"));
    if (!strcmp(method, "resources/read"))
        return json_string_value(json_object_get(params, "uri"));
    if (!strncmp(method, "tasks/", 6))
        return json_string_value(json_object_get(params, "taskId"));
    return NULL;
}

static int needs_name(const char *method)
{
    /* the tasks methods: the task id, so that a load balancer can route by it */
    return !strcmp(method, "tools/call") || !strcmp(method, "prompts/get") ||
           !strcmp(method, "resources/read") || !strcmp(method, "tasks/get") ||
           !strcmp(method, "tasks/update") || !strcmp(method, "tasks/cancel");
}

/* Modern-era checks; returns 0, or -1 after filling out. */
static int check_modern(const struct rpc_headers *h, json_t *id, const char *method,
                        json_t *params, json_t *meta, struct rpc_out *out)
{
    char val[1024];
    const char *v = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
    /* The header must repeat _meta first; only when they agree does the
     * version itself matter (-32020 before -32022). */
    if (!v || !h->protocol_version || header_value(h->protocol_version, val, sizeof val) < 0 ||
        strcmp(val, v)) {
        set_error(out, id, RPC_HEADER_MISMATCH,
                  "MCP-Protocol-Version header is missing or does not match "
                  "_meta.io.modelcontextprotocol/protocolVersion",
                  NULL, 1);
        return -1;
    }
    if (strcmp(v, MCP_MODERN_VERSION)) {
        json_t *data = json_pack("{s:[s,s,s], s:s}", "supported", MCP_MODERN_VERSION,
                                 "2025-11-25", "2025-06-18", "requested", v);
        set_error(out, id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version", data, 1);
        return -1;
    }
    if (!h->method || header_value(h->method, val, sizeof val) < 0 || strcmp(val, method)) {
        set_error(out, id, RPC_HEADER_MISMATCH,
                  "Mcp-Method header is missing or does not match the request method", NULL, 1);
        return -1;
    }
    if (needs_name(method)) {
        const char *want = name_param(method, params);
        if (!h->name || header_value(h->name, val, sizeof val) < 0 || !want ||
            strcmp(val, want)) {
            set_error(out, id, RPC_HEADER_MISMATCH,
                      "Mcp-Name header is missing or does not match params.name / params.uri",
                      NULL, 1);
            return -1;
        }
    }
    if (!json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
        set_error(out, id, RPC_INVALID_PARAMS,
                  "_meta.io.modelcontextprotocol/clientCapabilities is required", NULL, 1);
        return -1;
    }
    return 0;
}

void rpc_handle(struct srv *S, const char *body, size_t len, const struct rpc_headers *h,
                struct rpc_out *out)
{
    json_error_t jerr;
    json_t *req = NULL, *id = NULL;
    memset(out, 0, sizeof *out);

    if (len == 0 || too_deep(body, len) ||
        !(req = jf_parse(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                         &jerr))) {
        set_error(out, NULL, RPC_PARSE_ERROR,
                  len == 0 ? "Parse error: empty body" : "Parse error: the body is not valid JSON",
                  NULL, 0);
        return;
    }
    if (json_is_array(req)) {
        set_error(out, NULL, RPC_INVALID_REQUEST,
                  "Invalid Request: batches are not supported; send one request per POST",
                  NULL, 0);
        goto done;
    }
    if (!json_is_object(req)) {
        set_error(out, NULL, RPC_INVALID_REQUEST, "Invalid Request: expected a JSON object",
                  NULL, 0);
        goto done;
    }
    id = json_object_get(req, "id");
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        set_error(out, NULL, RPC_INVALID_REQUEST,
                  "Invalid Request: id must be a string or an integer", NULL, 0);
        goto done;
    }
    const char *jv = json_string_value(json_object_get(req, "jsonrpc"));
    json_t *mj = json_object_get(req, "method");
    if (!jv || strcmp(jv, "2.0")) {
        set_error(out, id, RPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"", NULL,
                  0);
        goto done;
    }
    if (!mj) {
        /* A response to a server request (none are sent) or junk. */
        if (id && (json_object_get(req, "result") || json_object_get(req, "error"))) {
            out->kind = RPC_OUT_ACCEPTED;
            goto done;
        }
        set_error(out, id, RPC_INVALID_REQUEST, "Invalid Request: method is required", NULL, 0);
        goto done;
    }
    if (!json_is_string(mj)) {
        set_error(out, id, RPC_INVALID_REQUEST, "Invalid Request: method must be a string", NULL,
                  0);
        goto done;
    }
    const char *method = json_string_value(mj);
    if (strlen(method) != json_string_length(mj)) {
        set_error(out, id, RPC_INVALID_REQUEST, "Invalid Request: method contains a NUL byte",
                  NULL, 0);
        goto done;
    }
    json_t *params = json_object_get(req, "params");
    if (params && !json_is_object(params) && !json_is_null(params)) {
        set_error(out, id, RPC_INVALID_REQUEST, "Invalid Request: params must be an object",
                  NULL, 0);
        goto done;
    }
    if (json_is_null(params))
        params = NULL;
    json_t *meta = json_object_get(params, "_meta");
    int modern = json_object_get(meta, "io.modelcontextprotocol/protocolVersion") != NULL;
    out->modern = modern;

    if (modern) {
        if (check_modern(h, id, method, params, meta, out) < 0)
            goto done;
    } else if (h->protocol_version) {
        char val[64];
        int ok = 0;
        if (header_value(h->protocol_version, val, sizeof val) == 0) {
            if (!strcmp(val, MCP_MODERN_VERSION)) {
                set_error(out, id, RPC_INVALID_PARAMS,
                          "a 2026-07-28 request must carry "
                          "_meta.io.modelcontextprotocol/protocolVersion",
                          NULL, 1);
                goto done;
            }
            for (size_t i = 0; i < 3; i++)
                ok |= !strcmp(val, legacy_header_versions[i]);
        }
        if (!ok) {
            set_error(out, id, RPC_INVALID_REQUEST,
                      "Bad Request: unsupported MCP-Protocol-Version (supported: 2025-11-25, "
                      "2025-06-18, 2025-03-26 with initialize; 2026-07-28 with _meta)",
                      NULL, 1);
            goto done;
        }
    }

    /* --stateful: every legacy message but initialize names a live session.
     * The modern era has no sessions and ignores the header. */
    int level = SESSION_LEVEL_NONE;
    const char *sid = NULL;
    if (!modern && S->sessions && strcmp(method, "initialize")) {
        if (!h->session_id) {
            set_error(out, id, RPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required (send initialize to "
                      "start a session)",
                      NULL, 1);
            goto done;
        }
        if (!session_touch(S->sessions, h->session_id, h->client, &level)) {
            set_error(out, id, RPC_SESSION_NOT_FOUND,
                      "Session not found: it ended or expired; send initialize to start a new "
                      "one",
                      NULL, 0);
            out->session_gone = 1;
            goto done;
        }
        sid = h->session_id;
    }

    if (!id) {
        /* Notifications need no answer. A cancel stops the script of that
         * call, when it was this client's (requests are matched by id and
         * authenticated client: anonymous clients can only cancel calls
         * made without a token, see docs/scripts.md). */
        if (!strcmp(method, "notifications/cancelled") && S->runner) {
            json_t *rid = json_object_get(params, "requestId");
            if (json_is_string(rid) || json_is_integer(rid)) {
                char *ids = jf_dumps(rid, NULL);
                run_cancel_rpc(S->runner, h->client, ids);
                free(ids);
            }
        }
        out->kind = RPC_OUT_ACCEPTED;
        goto done;
    }

    struct mcp_call c = {.S = S, .modern = modern, .params = params, .client = h->client,
                         .peer = h->peer, .id = id, .session = sid};
    if (mcp_dispatch(&c, method) < 0) {
        set_error(out, id, RPC_METHOD_NOT_FOUND, "Method not found",
                  json_pack("{s:s}", "method", method), 0);
        mcp_call_done(&c);
        goto done;
    }
    out->method = c.method;
    if (!c.err && !modern && S->sessions && c.method && !strcmp(c.method, "initialize") &&
        session_create(S->sessions, h->client, out->session_id) < 0)
        mcp_error(&c, RPC_INTERNAL_ERROR, NULL, "Internal error: no session could be started");
    if (c.method && !strcmp(c.method, "tools/call")) {
        const char *tn = json_string_value(json_object_get(params, "name"));
        snprintf(out->tool, sizeof out->tool, "%s", tn ? tn : "");
        utf8_sanitize(out->tool);
    }
    if (c.err) {
        set_error(out, id, c.err, c.errmsg, c.errdata, 0);
        c.errdata = NULL;
    } else if (c.wait) {
        out->kind = RPC_OUT_WAIT;
        out->wait = c.wait;
        c.wait = NULL;
    } else if (c.raw_response) {
        out->kind = RPC_OUT_RESULT;
        out->body = c.raw_response;
        out->len = c.raw_response_len;
        c.raw_response = NULL;
    } else if (c.plan) {
        out->kind = RPC_OUT_PENDING;
        out->plan = c.plan;
        out->id = json_deep_copy(id);
        char *ids = jf_dumps(id, NULL);
        hook_set_rpc_id(c.plan, ids);
        free(ids);
        json_t *tok = json_object_get(meta, "progressToken");
        if (json_is_string(tok) || json_is_integer(tok))
            out->progress_token = json_deep_copy(tok);
        /* Script stderr goes out at level info. */
        out->log_stream = modern ? json_is_string(json_object_get(
                                       meta, "io.modelcontextprotocol/logLevel"))
                                 : level != SESSION_LEVEL_NONE && level <= SESSION_LEVEL_INFO;
        c.plan = NULL;
    } else if (c.raw) {
        out->kind = RPC_OUT_RESULT;
        out->body = rpc_wrap_raw(id, c.raw, c.rawlen, &out->len);
    } else {
        if (modern && !json_object_get(c.result, "resultType"))
            rpc_decorate_modern(c.result, c.cacheable ? S->ttl_ms : -1);
        else if (modern && c.cacheable)
            rpc_decorate_modern(c.result, S->ttl_ms);
        json_t *r = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", c.result);
        out->kind = RPC_OUT_RESULT;
        out->body = jf_dumps(r, &out->len);
        json_decref(r);
    }
    mcp_call_done(&c);
done:
    json_decref(req);
}
