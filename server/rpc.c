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

/* The checks that follow the envelope's, and the dispatch: a request from
 * a tree and one read as a view (params NULL) go the same way from here. */
static void handle_checked(struct call *out, const struct rpc_headers *h, const char *method,
                           json_t *params, int has_id)
{
    struct srv *S = out->S;
    json_t *meta = params ? json_object_get(params, "_meta") : NULL;
    int modern = meta && json_object_get(meta, "io.modelcontextprotocol/protocolVersion");
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
    if (!has_id) {
        /* Notifications need no answer. */
        mcp_notify(out, method);
        call_accepted(out);
    } else {
        dispatch(out, method, meta);
    }
    out->params = NULL;
    out->client_info = NULL;
}

/* ---- the common shapes without a tree ----------------------------------- */

/*
 * Why: a tree is some 6,000 instructions of a small request's own 15,000
 * (jansson's objects, their hash tables and strings, built and freed) for
 * four members and a name or two. The requests most often sent have a
 * fixed shape, read here in one pass over a copy of the body: each string
 * is NUL-terminated in place.
 *
 * A body is read only when it is sure to take the path a tree would and to
 * end the same: an object with exactly jsonrpc "2.0", an id (a string, or
 * an integer of at most 18 digits and no sign) and method, in any order,
 * and params holding only what the method reads (tools/call: name, one of
 * the tools below, and arguments of string members; skills/get and
 * resources/read: uri). Every string is plain (jf_plain_string). Anything
 * else (another member or type, a duplicate, an escape, _meta, a
 * notification, an error to report) is left to the tree, which decides
 * and words it. tests/unit/test_rpc.c and tests/fuzz/fuzz_rpc.c hold both
 * paths to the same answer for every body.
 */
#define VIEW_MAX_BODY 1024

int rpc_view_off;

struct vscan {
    char *p, *end;
};

/* The copy ends in a NUL (past end): no scan below runs over it, so only
 * the string scan checks for the end, where it stops. */
static inline void v_ws(struct vscan *s)
{
    while (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')
        s->p++;
}

/* ch after optional whitespace; 0 when it is not there. */
static inline int v_ch(struct vscan *s, char ch)
{
    v_ws(s);
    if (*s->p != ch)
        return 0;
    s->p++;
    return 1;
}

/* A plain string, NUL-terminated in place, or NULL. */
static inline const char *v_str(struct vscan *s, size_t *n)
{
    v_ws(s);
    if (*s->p != '"')
        return NULL;
    char *start = s->p + 1;
    const char *q = jf_plain_string(start, s->end);
    if (!q)
        return NULL;
    *n = (size_t)(q - start);
    s->p = start + *n;
    *s->p++ = '\0';
    return start;
}

/* After a key's opening quote: 1, and past the key's closing quote, when
 * the key is name (n bytes); else 0 with nothing read. The members the
 * view reads have such names: compared whole, they need no string scan. */
static inline int v_name(struct vscan *s, const char *name, size_t n)
{
    if (s->end - s->p <= (ptrdiff_t)n || memcmp(s->p, name, n) || s->p[n] != '"')
        return 0;
    s->p += n + 1;
    return 1;
}

/* A string that is exactly word (n bytes, no escape): 1 and past it, else 0
 * with nothing read but whitespace. The values the view compares (the
 * version, the methods, the tools) need no string scan either. */
static inline int v_word(struct vscan *s, const char *word, size_t n)
{
    v_ws(s);
    if (*s->p != '"')
        return 0;
    s->p++;
    if (v_name(s, word, n))
        return 1;
    s->p--;
    return 0;
}

/* The next member's key (after '{' or ','), or NULL. */
static inline const char *v_key(struct vscan *s, size_t *n)
{
    const char *k = v_str(s, n);
    return k && v_ch(s, ':') ? k : NULL;
}

/* After a member: 1 for ',', 0 for the closing '}', -1 for anything else. */
static inline int v_next(struct vscan *s)
{
    if (v_ch(s, ','))
        return 1;
    return v_ch(s, '}') ? 0 : -1;
}

static int v_args(struct vscan *s, struct rpc_view *v)
{
    if (!v_ch(s, '{'))
        return -1;
    if (v_ch(s, '}'))
        return 0;
    for (;;) {
        size_t kl, vl;
        const char *k = v_key(s, &kl), *val = k ? v_str(s, &vl) : NULL;
        if (!val || v->nargs == RPC_VIEW_ARGS)
            return -1;
        for (size_t i = 0; i < v->nargs; i++)
            if (!strcmp(v->key[i], k))
                return -1;
        v->key[v->nargs] = k;
        v->val[v->nargs] = val;
        v->vlen[v->nargs++] = vl;
        int r = v_next(s);
        if (r <= 0)
            return r;
    }
}

static int v_params(struct vscan *s, struct rpc_view *v, int *has_args)
{
    if (!v_ch(s, '{'))
        return -1;
    if (v_ch(s, '}'))
        return 0;
    for (;;) {
        if (!v_ch(s, '"'))
            return -1;
        int key = v_name(s, "name", 4) ? 0 : v_name(s, "uri", 3) ? 1 : v_name(s, "arguments", 9) ? 2 : -1;
        if (key < 0 || !v_ch(s, ':'))
            return -1;
        if (key == 0) {
            /* the tools a view serves: none runs a script or reads params
             * beyond name and arguments */
            if (v->name)
                return -1;
            v->name = v_word(s, "load_skill", 10)        ? "load_skill"
                      : v_word(s, "list_skills", 11)     ? "list_skills"
                      : v_word(s, "read_skill_file", 15) ? "read_skill_file"
                                                         : NULL;
            if (!v->name)
                return -1;
        } else if (key == 1) {
            if (v->uri || !(v->uri = v_str(s, &v->urilen)))
                return -1;
        } else {
            if (*has_args || v_args(s, v) < 0)
                return -1;
            *has_args = 1;
        }
        int r = v_next(s);
        if (r <= 0)
            return r;
    }
}

/* Reads buf (a writable copy of the body, a NUL after it) as a view; 0 with method and the
 * id set, or -1: the tree decides. */
static int view_read(char *buf, size_t len, struct rpc_view *v, const char **method,
                     json_t **id)
{
    struct vscan s = {buf, buf + len};
    const char *m = NULL, *ids = NULL;
    size_t idl = 0;
    int jv = 0;
    long long idn = -1;
    int has_params = 0, has_args = 0;
    if (!v_ch(&s, '{'))
        return -1;
    for (;;) {
        if (!v_ch(&s, '"'))
            return -1;
        int key = v_name(&s, "jsonrpc", 7)  ? 0
                  : v_name(&s, "id", 2)     ? 1
                  : v_name(&s, "method", 6) ? 2
                  : v_name(&s, "params", 6) ? 3
                                            : -1;
        if (key < 0 || !v_ch(&s, ':'))
            return -1;
        if (key == 0) {
            if (jv || !(jv = v_word(&s, "2.0", 3)))
                return -1;
        } else if (key == 2) {
            if (m)
                return -1;
            m = v_word(&s, "tools/call", 10)         ? "tools/call"
                : v_word(&s, "skills/get", 10)       ? "skills/get"
                : v_word(&s, "resources/read", 14)   ? "resources/read"
                                                     : NULL;
            if (!m)
                return -1;
        } else if (key == 3) {
            if (has_params || v_params(&s, v, &has_args) < 0)
                return -1;
            has_params = 1;
        } else {
            if (ids || idn >= 0)
                return -1;
            v_ws(&s);
            if (*s.p == '"') {
                if (!(ids = v_str(&s, &idl)))
                    return -1;
            } else {
                /* what jf_number takes, without a sign */
                const char *d = s.p;
                idn = 0;
                if (s.p < s.end && *s.p == '0') {
                    s.p++;
                } else {
                    while (s.p < s.end && *s.p >= '0' && *s.p <= '9' && s.p - d < 18)
                        idn = idn * 10 + (*s.p++ - '0');
                    if (s.p == d)
                        return -1;
                }
                if (s.p < s.end && ((*s.p >= '0' && *s.p <= '9') || *s.p == '.' || *s.p == 'e' ||
                                    *s.p == 'E'))
                    return -1;
            }
        }
        int r = v_next(&s);
        if (r < 0)
            return -1;
        if (!r)
            break;
    }
    v_ws(&s);
    if (s.p != s.end || !jv || !m || !has_params || (!ids && idn < 0))
        return -1;
    /* tools/call reads name (and arguments); skills/get and resources/read uri alone */
    if (m[0] == 't' ? !v->name || v->uri : !v->uri || v->name || has_args)
        return -1;
    *id = ids ? json_stringn_nocheck(ids, idl) : json_integer(idn);
    if (!*id)
        return -1;
    *method = m;
    return 0;
}

int rpc_view_takes(const char *body, size_t len)
{
    char buf[VIEW_MAX_BODY + 1];
    struct rpc_view v = {0};
    const char *method;
    json_t *id;
    if (len > sizeof buf)
        return 0;
    memcpy(buf, body, len);
    buf[len] = '\0';
    if (view_read(buf, len, &v, &method, &id) < 0)
        return 0;
    json_decref(id);
    return 1;
}

/* A body of the common shapes, handled without a tree; 0, or -1 with
 * nothing done. */
static int handle_view(struct call *out, char *buf, struct rpc_view *v, const char *body,
                       size_t len, const struct rpc_headers *h)
{
    const char *method;
    json_t *id;
    if (rpc_view_off || len > VIEW_MAX_BODY)
        return -1;
    memcpy(buf, body, len);
    buf[len] = '\0';
    v->name = v->uri = NULL;
    v->urilen = v->nargs = 0;
    if (view_read(buf, len, v, &method, &id) < 0)
        return -1;
    out->id = id;
    out->pv = v;
    handle_checked(out, h, method, NULL, 1);
    out->pv = NULL;
    return 0;
}

/* Parses and checks the request into c; the outcome is set on c. */
static void handle(struct call *out, json_t *req, const struct rpc_headers *h)
{
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
    handle_checked(out, h, method, params, id != NULL);
}

void rpc_handle(struct call *c, const char *body, size_t len, const struct rpc_headers *h)
{
    json_error_t jerr;
    json_t *req = NULL;
    const size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    /* The depth check guards jansson's recursion: a tree from the fast
     * parser is never deeper than it allows, so only a body the fast
     * parser leaves to jansson is scanned for it. */
    /* the view's strings live in vbuf until the answer is made */
    char vbuf[VIEW_MAX_BODY + 1];
    struct rpc_view v;
    if (handle_view(c, vbuf, &v, body, len, h) == 0)
        ;   /* answered without a tree */
    else if (len == 0 ||
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
