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
#include <strings.h>

#include "call.h"
#include "json.h"
#include "mcp.h"
#include "session.h"
#include "skills.h"
#include "util.h"

#define MAX_JSON_DEPTH 64
_Static_assert(JSON_PARSE_FAST_DEPTH <= MAX_JSON_DEPTH,
               "the fast parser's trees must pass the depth check it skips");

static void set_error(struct call *c, int code, const char *msg, json_t *data, int transport)
{
    call_error(c, code, data, "%s", msg);
    if (transport)
        call_transport_error(c);
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
static int check_modern(const struct rpc_headers *h, const char *method, json_t *params,
                        json_t *meta, struct call *out)
{
    char val[1024];
    const char *v = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
    /* The header must repeat _meta first; only when they agree does the
     * version itself matter (-32020 before -32022). */
    if (!v || (!h->headerless && (!h->protocol_version ||
                                  header_value(h->protocol_version, val, sizeof val) < 0 ||
                                  strcmp(val, v)))) {
        set_error(out, RPC_HEADER_MISMATCH,
                  "MCP-Protocol-Version header is missing or does not match "
                  "_meta.io.modelcontextprotocol/protocolVersion",
                  NULL, 1);
        return -1;
    }
    if (strcmp(v, MCP_MODERN_VERSION)) {
        json_t *sup = json_array();
        size_t n;
        const struct proto_version *pv = proto_versions(&n);
        for (size_t i = 0; i < n; i++)
            if (pv[i].use & (PROTO_MODERN | PROTO_NEGOTIATE))
                json_array_append_new(sup, json_string(pv[i].name));
        json_t *data = json_pack("{s:o, s:s}", "supported", sup, "requested", v);
        set_error(out, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version", data, 1);
        return -1;
    }
    if (!h->headerless &&
        (!h->method || header_value(h->method, val, sizeof val) < 0 || strcmp(val, method))) {
        set_error(out, RPC_HEADER_MISMATCH,
                  "Mcp-Method header is missing or does not match the request method", NULL, 1);
        return -1;
    }
    if (!h->headerless && needs_name(method)) {
        const char *want = name_param(method, params);
        if (!h->name || header_value(h->name, val, sizeof val) < 0 || !want ||
            strcmp(val, want)) {
            set_error(out, RPC_HEADER_MISMATCH,
                      "Mcp-Name header is missing or does not match params.name / params.uri",
                      NULL, 1);
            return -1;
        }
    }
    if (!json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
        set_error(out, RPC_INVALID_PARAMS,
                  "_meta.io.modelcontextprotocol/clientCapabilities is required", NULL, 1);
        return -1;
    }
    return 0;
}

/* The message of a refused MCP-Protocol-Version header, from the version list. */
static void header_versions_msg(char *out, size_t cap)
{
    size_t n, off;
    const struct proto_version *pv = proto_versions(&n);
    off = (size_t)snprintf(out, cap, "Bad Request: unsupported MCP-Protocol-Version (supported: ");
    for (size_t i = 0, k = 0; i < n && off < cap; i++)
        if (pv[i].use & PROTO_HEADER)
            off += (size_t)snprintf(out + off, cap - off, "%s%s", k++ ? ", " : "", pv[i].name);
    for (size_t i = 0; i < n && off < cap; i++)
        if (pv[i].use & PROTO_MODERN)
            off += (size_t)snprintf(out + off, cap - off, " with initialize; %s with _meta)",
                                    pv[i].name);
}

/* Dispatches a request with an id; the outcome is set on c. */
static void dispatch(struct call *c, const char *method, json_t *meta)
{
    struct srv *S = c->S;
    if (mcp_dispatch(c, method) < 0) {
        set_error(c, RPC_METHOD_NOT_FOUND, "Method not found", json_pack("{s:s}", "method", method),
                  0);
        return;
    }
    if (call_kind(c) != CALL_ERROR && !c->modern && S->sessions && c->method &&
        !strcmp(c->method, "initialize") &&
        session_create(S->sessions, c->client, c->session_minted) < 0)
        call_error(c, RPC_INTERNAL_ERROR, NULL, "Internal error: no session could be started");
    if (call_kind(c) == CALL_RUN) {
        json_t *tok = json_object_get(meta, "progressToken");
        if (json_is_string(tok) || json_is_integer(tok))
            c->progress_token = json_incref(tok);
        /* Script stderr goes out at level info. */
        c->log_stream = c->modern ? json_is_string(json_object_get(
                                        meta, "io.modelcontextprotocol/logLevel"))
                                  : c->log_level != SESSION_LEVEL_NONE &&
                                        c->log_level <= SESSION_LEVEL_INFO;
    }
}

/* Parses and checks the request into c; the outcome is set on c. */
static void handle(struct call *out, json_t *req, const struct rpc_headers *h)
{
    struct srv *S = out->S;
    if (json_is_array(req)) {
        set_error(out, RPC_INVALID_REQUEST,
                  "Invalid Request: batches are not supported; send one request per POST",
                  NULL, 0);
        return;
    }
    if (!json_is_object(req)) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: expected a JSON object", NULL, 0);
        return;
    }
    /* One pass over the members rather than a hashed lookup of each: keys
     * are unique (duplicates are refused) and have no NUL. */
    json_t *id = NULL, *jvj = NULL, *mj = NULL, *params = NULL;
    for (void *it = json_object_iter(req); it; it = json_object_iter_next(req, it)) {
        const char *k = json_object_iter_key(it);
        size_t kl = json_object_iter_key_len(it);
        json_t *v = json_object_iter_value(it);
        if (kl == 2 && !memcmp(k, "id", 2))
            id = v;
        else if (kl == 7 && !memcmp(k, "jsonrpc", 7))
            jvj = v;
        else if (kl == 6 && !memcmp(k, "method", 6))
            mj = v;
        else if (kl == 6 && !memcmp(k, "params", 6))
            params = v;
    }
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: id must be a string or an integer",
                  NULL, 0);
        return;
    }
    out->id = json_incref(id);
    const char *jv = json_string_value(jvj);
    if (!jv || strcmp(jv, "2.0")) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"", NULL, 0);
        return;
    }
    if (!mj) {
        /* A response to a server request (none are sent) or junk. */
        if (id && (json_object_get(req, "result") || json_object_get(req, "error"))) {
            call_accepted(out);
            return;
        }
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: method is required", NULL, 0);
        return;
    }
    if (!json_is_string(mj)) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: method must be a string", NULL, 0);
        return;
    }
    const char *method = json_string_value(mj);
    if (strlen(method) != json_string_length(mj)) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: method contains a NUL byte", NULL,
                  0);
        return;
    }
    if (params && !json_is_object(params) && !json_is_null(params)) {
        set_error(out, RPC_INVALID_REQUEST, "Invalid Request: params must be an object", NULL, 0);
        return;
    }
    if (json_is_null(params))
        params = NULL;
    json_t *meta = json_object_get(params, "_meta");
    int modern = json_object_get(meta, "io.modelcontextprotocol/protocolVersion") != NULL;
    out->modern = modern;

    if (modern) {
        if (check_modern(h, method, params, meta, out) < 0)
            return;
    } else if (h->protocol_version) {
        char val[64];
        const char *ok = NULL;
        if (header_value(h->protocol_version, val, sizeof val) == 0) {
            if (proto_supports(val, PROTO_MODERN)) {
                set_error(out, RPC_INVALID_PARAMS,
                          "a 2026-07-28 request must carry "
                          "_meta.io.modelcontextprotocol/protocolVersion",
                          NULL, 1);
                return;
            }
            ok = proto_supports(val, PROTO_HEADER);
        }
        if (!ok) {
            char msg[256];
            header_versions_msg(msg, sizeof msg);
            set_error(out, RPC_INVALID_REQUEST, msg, NULL, 1);
            return;
        }
    }

    /* --stateful: every legacy message but initialize names a live session.
     * The modern era has no sessions and ignores the header. */
    if (!modern && S->sessions && strcmp(method, "initialize")) {
        if (!h->session_id) {
            set_error(out, RPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required (send initialize to "
                      "start a session)",
                      NULL, 1);
            return;
        }
        if (!session_touch(S->sessions, h->session_id, out->client, &out->log_level)) {
            set_error(out, RPC_SESSION_NOT_FOUND,
                      "Session not found: it ended or expired; send initialize to start a new "
                      "one",
                      NULL, 0);
            out->session_gone = 1;
            return;
        }
        out->session = h->session_id;
        out->sessions = S->sessions;
    }

    out->params = params;
    if (!id) {
        /* Notifications need no answer. */
        mcp_notify(out, method);
        call_accepted(out);
    } else {
        dispatch(out, method, meta);
    }
    out->params = NULL;
    out->client_info = NULL;
}

void rpc_handle(struct call *c, const char *body, size_t len, const struct rpc_headers *h)
{
    json_error_t jerr;
    json_t *req = NULL;
    const size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    /* The depth check guards jansson's recursion: a tree from the fast
     * parser is never deeper than it allows, so only a body the fast
     * parser leaves to jansson is scanned for it. */
    if (len == 0 ||
        (!(req = jf_parse_fast(body, len, flags)) &&
         (too_deep(body, len) || !(req = json_loadb(body, len, flags, &jerr)))))
        set_error(c, RPC_PARSE_ERROR,
                  len == 0 ? "Parse error: empty body" : "Parse error: the body is not valid JSON",
                  NULL, 0);
    else
        handle(c, req, h);
    /* What is known now is answered now; a pending outcome holds what it
     * needs without the snapshot. */
    if (!call_pending(c))
        call_finish(c);
    skills_release_held(c->snap, c->snap_hold);
    c->snap = NULL;
    json_decref(req);
}

void rpc_start(struct call *c)
{
    mcp_start(c);
}

void rpc_abandon(struct call *c)
{
    mcp_abandon(c);
}

void rpc_hangup(struct call *c)
{
    mcp_hangup(c);
}
