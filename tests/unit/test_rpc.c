/*
 * test_rpc.c - the JSON-RPC envelope, the two protocol eras and the MCP
 * methods (server/rpc.c, mcp.c, resources.c) driven through rpc_handle()
 * over a temporary skill tree.
 */
#include "harness.h"
#include "call.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

#include <ftw.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- fixture: a skill tree and a server over it ------------------------- */

#define FIXTURE_NAME "rpc"
#include "srv_fixture.h"

/* ---- driving rpc_handle ------------------------------------------------------ */

/* What the last call answered, read off its context (body already parsed
 * and freed). */
enum { RPC_OUT_RESULT = 1, RPC_OUT_ERROR, RPC_OUT_ACCEPTED, RPC_OUT_PENDING };
struct answer {
    int kind, code, transport, modern;
    const char *method;
    char tool[64], skill[128];
    char *body;
    size_t len;
};
static struct answer O;
static const struct rpc_headers NOH = {0};

/* One request through a fresh context, as a transport without a
 * completion callback sees it. */
static void answer(const char *body, size_t len, const struct rpc_headers *h, struct answer *o)
{
    struct call *c = call_new(&S);
    rpc_handle(c, body, len, h);
    memset(o, 0, sizeof *o);
    switch (call_kind(c)) {
    case CALL_RESULT:
    case CALL_RAW:
    case CALL_RESPONSE:
        o->kind = RPC_OUT_RESULT;
        break;
    case CALL_ERROR:
        o->kind = RPC_OUT_ERROR;
        o->code = call_error_code(c);
        o->transport = call_is_transport_error(c);
        break;
    case CALL_ACCEPTED:
        o->kind = RPC_OUT_ACCEPTED;
        break;
    default:
        o->kind = RPC_OUT_PENDING;
        break;
    }
    o->modern = c->modern;
    o->method = c->method;
    memcpy(o->tool, c->tool, sizeof o->tool);
    memcpy(o->skill, c->skill, sizeof o->skill);
    o->body = call_take_body(c, &o->len);
    call_unref(c);
}

/* Runs one POST body; returns the parsed response (NULL when there is none,
 * or when the bytes are not valid JSON: then body_bad is set). */
static int body_bad;
static json_t *rpc_h(const char *body, size_t len, const struct rpc_headers *h)
{
    json_t *r = NULL;
    body_bad = 0;
    answer(body, len, h, &O);
    if (O.body) {
        json_error_t e;
        r = json_loadb(O.body, O.len, 0, &e);
        if (!r) {
            body_bad = 1;
            printf("# response does not parse: %s (byte %d)\n", e.text, e.position);
        }
        if (O.len != strlen(O.body))
            printf("# response length %zu != strlen %zu\n", O.len, strlen(O.body));
    }
    free(O.body);
    O.body = NULL;
    return r;
}

static json_t *rpc(const char *body)
{
    return rpc_h(body, strlen(body), &NOH);
}

static json_t *rpc_hdr(const char *body, const char *version)
{
    struct rpc_headers h = {.protocol_version = version};
    return rpc_h(body, strlen(body), &h);
}

static int ecode(json_t *r)
{
    return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static json_t *edata(json_t *r)
{
    return json_object_get(json_object_get(r, "error"), "data");
}

static json_t *result(json_t *r)
{
    return json_object_get(r, "result");
}

static const char *sget(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int has_str(json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return 1;
    return 0;
}

/* A JSON-RPC error answer with this code; transport flag; id as given (JSON text). */
#define CHECK_RPC_ERROR(r, code_, transport_, id_json) do {                  \
        CHECK((r) != NULL);                                                  \
        CHECK_EQ(O.kind, RPC_OUT_ERROR);                                     \
        CHECK_EQ(O.code, (code_));                                           \
        CHECK_EQ(ecode(r), (code_));                                         \
        CHECK_EQ(O.transport, (transport_));                                 \
        CHECK_STR(sget((r), "jsonrpc"), "2.0");                              \
        CHECK(json_is_string(json_object_get(json_object_get((r), "error"), "message"))); \
        CHECK(result(r) == NULL);                                            \
        json_t *id_ = json_loads((id_json), JSON_DECODE_ANY, NULL);          \
        int same_ = json_equal(id_, json_object_get((r), "id"));             \
        json_decref(id_);                                                    \
        CHECK(same_);                                                        \
    } while (0)

#define CHECK_RPC_RESULT(r) do {                                             \
        CHECK((r) != NULL);                                                  \
        if (O.kind != RPC_OUT_RESULT) {                                      \
            char *d_ = json_dumps((r), JSON_COMPACT);                        \
            H_FAIL("expected a result: %s", d_);                             \
            free(d_);                                                        \
            return;                                                          \
        }                                                                    \
        CHECK(json_is_object(result(r)));                                    \
        CHECK(json_object_get((r), "error") == NULL);                        \
    } while (0)

/* ---- modern-era requests ---------------------------------------------------- */

#define MODERN "2026-07-28"

struct mreq {
    const char *method;
    const char *params;     /* JSON object text without _meta, or NULL */
    const char *version;    /* _meta protocolVersion; NULL: absent */
    int no_caps;            /* leave clientCapabilities out */
    json_t *caps;           /* or use this (stolen) */
    int no_id;
    /* headers */
    const char *hv, *hm, *hn;
    int headerless;         /* a transport without headers (stdio) */
};

static json_t *modern_req(const struct mreq *q)
{
    json_t *params = q->params ? json_loads(q->params, 0, NULL) : json_object();
    if (!params) {
        printf("# bad test params %s\n", q->params);
        return NULL;
    }
    json_t *meta = json_object();
    if (q->version)
        json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion",
                            json_string(q->version));
    if (q->caps)
        json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", q->caps);
    else if (!q->no_caps)
        json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", json_object());
    json_object_set_new(params, "_meta", meta);
    json_t *req = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", q->method, "params",
                            params);
    if (!q->no_id)
        json_object_set_new(req, "id", json_integer(7));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct rpc_headers h = {.protocol_version = q->hv, .method = q->hm, .name = q->hn,
                            .headerless = q->headerless};
    json_t *r = rpc_h(body, strlen(body), &h);
    free(body);
    return r;
}

/* A well-formed modern request: matching headers, capabilities present. */
static json_t *modern(const char *method, const char *params, const char *name)
{
    struct mreq q = {.method = method, .params = params, .version = MODERN, .hv = MODERN,
                     .hm = method, .hn = name};
    return modern_req(&q);
}

/* ---- envelope ------------------------------------------------------------------ */

TEST(empty_body)
{
    json_t *r = rpc_h("", 0, &NOH);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    CHECK_EQ(O.modern, 0);
    json_decref(r);
}

TEST(invalid_json)
{
    static const char *const bad[] = {"{",      "{\"jsonrpc\":",  "nul",       "[1,]",
                                      "{'a':1}", "{\"a\":1}}",    "  ",        "\"",
                                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *r = rpc(bad[i]);
        if (!r || O.kind != RPC_OUT_ERROR || O.code != RPC_PARSE_ERROR || O.transport) {
            H_FAIL("body %s: expected -32700, got kind %d code %d", bad[i], O.kind, O.code);
            json_decref(r);
            return;
        }
        json_decref(r);
    }
}

TEST(binary_garbage)
{
    static const char junk[] = "\x00\xff\xfe{\x01\x80\"\\";
    json_t *r = rpc_h(junk, sizeof junk - 1, &NOH);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
    /* a valid request followed by a NUL byte */
    static const char nul[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0";
    r = rpc_h(nul, sizeof nul, &NOH);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
    /* invalid UTF-8 inside a string */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xc3ng\"}");
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
}

TEST(deep_nesting)
{
    size_t depth = 10000;
    char *b = malloc(2 * depth + 16);
    memset(b, '[', depth);
    memset(b + depth, ']', depth);
    json_t *r = rpc_h(b, 2 * depth, &NOH);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
    /* unbalanced, never closed */
    r = rpc_h(b, depth, &NOH);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
    free(b);

    /* objects inside a real request */
    struct buf q;
    buf_init(&q, 0);
    buf_puts(&q, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":");
    for (size_t i = 0; i < depth; i++)
        buf_puts(&q, "{\"a\":");
    buf_puts(&q, "1");
    for (size_t i = 0; i < depth; i++)
        buf_puts(&q, "}");
    buf_puts(&q, "}}");
    r = rpc_h(q.p, q.len, &NOH);
    buf_cleanup(&q);
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
}

/* A body nested 64 deep is served, 65 deep is a parse error, whichever
 * parser reads it (a real sends it to jansson's). */
static json_t *nested_ping(size_t depth, const char *inner)
{
    struct buf q;
    buf_init(&q, 0);
    /* the request object and params are two levels */
    buf_puts(&q, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":");
    for (size_t i = 2; i < depth; i++)
        buf_puts(&q, i % 2 ? "[" : "{\"k\":");
    buf_puts(&q, inner);
    for (size_t i = depth; i > 2; i--)
        buf_puts(&q, (i - 1) % 2 ? "]" : "}");
    buf_puts(&q, "}}");
    json_t *r = rpc_h(q.p, q.len, &NOH);
    buf_cleanup(&q);
    return r;
}

TEST(nesting_limit_is_64_for_both_parsers)
{
    const char *inner[] = {"1", "1.5", "\"s\""};
    for (size_t i = 0; i < 3; i++) {
        json_t *r = nested_ping(64, inner[i]);
        CHECK(r != NULL);
        CHECK(json_is_object(json_object_get(r, "result")));
        json_decref(r);
        r = nested_ping(65, inner[i]);
        CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
        json_decref(r);
    }
}

TEST(brackets_inside_strings_are_not_nesting)
{
    struct buf q;
    buf_init(&q, 0);
    buf_puts(&q, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\\\"");
    for (int i = 0; i < 500; i++)
        buf_puts(&q, "[{");
    buf_puts(&q, "\\\\\"}}");
    json_t *r = rpc_h(q.p, q.len, &NOH);
    buf_cleanup(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);

    /* modest real nesting is fine */
    buf_init(&q, 0);
    buf_puts(&q, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":");
    for (int i = 0; i < 40; i++)
        buf_puts(&q, "[");
    for (int i = 0; i < 40; i++)
        buf_puts(&q, "]");
    buf_puts(&q, "}}");
    r = rpc_h(q.p, q.len, &NOH);
    buf_cleanup(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);
}

TEST(duplicate_keys)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}");
    CHECK_RPC_ERROR(r, RPC_PARSE_ERROR, 0, "null");
    json_decref(r);
}

TEST(batch_and_non_object)
{
    json_t *r = rpc("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 0, "null");
    CHECK(strstr(sget(json_object_get(r, "error"), "message"), "batch"));
    json_decref(r);
    r = rpc("[]");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 0, "null");
    json_decref(r);
    static const char *const scalars[] = {"1", "\"x\"", "null", "true", "1.5"};
    for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++) {
        r = rpc(scalars[i]);
        CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 0, "null");
        json_decref(r);
    }
}

/* A body the envelope check refuses, and the id its answer carries. */
struct bad_envelope {
    const char *body, *id;
};

#define CHECK_ALL_INVALID(cases) do {                                         \
        for (size_t i_ = 0; i_ < sizeof(cases) / sizeof *(cases); i_++) {    \
            json_t *r_ = rpc((cases)[i_].body);                               \
            CHECK_RPC_ERROR(r_, RPC_INVALID_REQUEST, 0, (cases)[i_].id);      \
            json_decref(r_);                                                  \
        }                                                                     \
    } while (0)

TEST(jsonrpc_member)
{
    static const struct bad_envelope cases[] = {
        {"{\"id\":1,\"method\":\"ping\"}", "1"},
        {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", "1"},
        {"{\"jsonrpc\":2.0,\"id\":\"a\",\"method\":\"ping\"}", "\"a\""},
        /* even a notification with a bad envelope gets an answer */
        {"{\"jsonrpc\":\"1.0\",\"method\":\"notifications/initialized\"}", "null"},
    };
    CHECK_ALL_INVALID(cases);
}

TEST(bad_ids)
{
    static const char *const ids[] = {"null", "1.5", "{}", "[]", "true", "{\"a\":1}"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                 ids[i]);
        json_t *r = rpc(body);
        CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 0, "null");
        json_decref(r);
    }
}

TEST(good_ids_echoed)
{
    static const char *const ids[] = {"\"abc\"", "0", "-5", "9007199254740993", "\"\"",
                                      "\"\\u00e9\\n\""};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                 ids[i]);
        json_t *r = rpc(body);
        CHECK_RPC_RESULT(r);
        json_t *want = json_loads(ids[i], JSON_DECODE_ANY, NULL);
        int same = json_equal(want, json_object_get(r, "id"));
        json_decref(want);
        json_decref(r);
        if (!same) {
            H_FAIL("id %s not echoed", ids[i]);
            return;
        }
    }
}

TEST(method_member)
{
    static const struct bad_envelope cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "1"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", "1"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", "1"},
    };
    CHECK_ALL_INVALID(cases);
}

TEST(params_member)
{
    static const struct bad_envelope cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}", "1"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":\"x\"}", "1"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":3}", "1"},
    };
    CHECK_ALL_INVALID(cases);
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":null}");
    CHECK_RPC_RESULT(r);
    json_decref(r);
}

TEST(notifications_and_responses)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    CHECK(r == NULL);
    CHECK(!body_bad);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
    CHECK_EQ(O.len, 0);
    r = rpc("{\"jsonrpc\":\"2.0\",\"method\":\"no/such/method\",\"params\":{}}");
    CHECK(r == NULL);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
    r = rpc("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
            "\"params\":{\"requestId\":1}}");
    CHECK(r == NULL);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
    /* a client's answer to a server request */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
    CHECK(r == NULL);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"error\":{\"code\":-1,\"message\":\"no\"}}");
    CHECK(r == NULL);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
    /* neither: junk */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":3}");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 0, "3");
    json_decref(r);
}

TEST(unknown_method)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/nope\"}");
    CHECK_RPC_ERROR(r, RPC_METHOD_NOT_FOUND, 0, "1");
    CHECK_EQ(O.modern, 0);
    CHECK_STR(sget(edata(r), "method"), "tools/nope");
    json_decref(r);
    /* method names are case-sensitive */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"PING\"}");
    CHECK_RPC_ERROR(r, RPC_METHOD_NOT_FOUND, 0, "1");
    json_decref(r);
}

/* ---- legacy era ---------------------------------------------------------------- */

static json_t *initialize(const char *version)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}}",
             version);
    return rpc(body);
}

TEST(initialize_versions)
{
    static const char *const cases[][2] = {{"2025-06-18", "2025-06-18"},
                                           {"2025-11-25", "2025-11-25"},
                                           {"1999-01-01", "2025-11-25"},
                                           {"2026-07-28", "2025-11-25"},
                                           {"", "2025-11-25"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *r = initialize(cases[i][0]);
        CHECK_RPC_RESULT(r);
        const char *got = sget(result(r), "protocolVersion");
        if (!got || strcmp(got, cases[i][1])) {
            H_FAIL("initialize %s: got %s, want %s", cases[i][0], got ? got : "(null)",
                   cases[i][1]);
            json_decref(r);
            return;
        }
        json_decref(r);
    }
    json_t *r = initialize("2025-06-18");
    json_t *res = result(r);
    CHECK_STR(sget(json_object_get(res, "serverInfo"), "name"), "skill-mcp");
    CHECK_STR(sget(json_object_get(res, "serverInfo"), "version"), SKILL_VERSION);
    CHECK(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
    CHECK(json_is_object(json_object_get(json_object_get(res, "capabilities"), "resources")));
    CHECK_STR(sget(res, "instructions"), S.instructions);
    CHECK(json_object_get(res, "resultType") == NULL);
    CHECK_EQ(O.modern, 0);
    json_decref(r);
}

TEST(initialize_without_version)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
            "\"params\":{\"protocolVersion\":20250618}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
}

TEST(ping)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    CHECK_RPC_RESULT(r);
    CHECK_EQ(json_object_size(result(r)), 0);
    CHECK_EQ(O.modern, 0);
    CHECK_STR(O.method, "ping");
    json_decref(r);
}

TEST(set_level)
{
    static const char *const ok[] = {"debug", "info", "notice", "warning", "error",
                                     "critical", "alert", "emergency"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char body[160];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
                 "\"params\":{\"level\":\"%s\"}}",
                 ok[i]);
        json_t *r = rpc(body);
        CHECK_RPC_RESULT(r);
        CHECK_EQ(json_object_size(result(r)), 0);
        json_decref(r);
    }
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
                    "\"params\":{\"level\":\"loud\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":{}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
            "\"params\":{\"level\":\"DEBUG\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
}

TEST(legacy_protocol_header)
{
    static const char *const ok[] = {"2025-11-25", "2025-06-18", "2025-03-26", " 2025-11-25 "};
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        json_t *r = rpc_hdr(ping, ok[i]);
        CHECK_RPC_RESULT(r);
        json_decref(r);
    }
    json_t *r = rpc_hdr(ping, "bogus");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 1, "1");
    json_decref(r);
    r = rpc_hdr(ping, "");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 1, "1");
    json_decref(r);
    char longv[200];
    memset(longv, '2', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    r = rpc_hdr(ping, longv);
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 1, "1");
    json_decref(r);
    /* the modern version in the header, without the modern _meta */
    r = rpc_hdr(ping, MODERN);
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 1, "1");
    json_decref(r);
    /* a notification with a bad header is still refused */
    r = rpc_hdr("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", "bogus");
    CHECK_RPC_ERROR(r, RPC_INVALID_REQUEST, 1, "null");
    json_decref(r);
}

/* Checks every tool of a tools/list result. */
static int tools_ok(json_t *res)
{
    static const char *const ro[] = {"list_skills", "load_skill", "read_skill_file",
                                     "skill_server_stats"};
    json_t *tools = json_object_get(res, "tools");
    size_t i;
    json_t *t;
    int seen = 0;
    if (json_array_size(tools) != 5)
        return 0;
    json_array_foreach(tools, i, t) {
        const char *name = sget(t, "name");
        json_t *ann = json_object_get(t, "annotations");
        if (!name || !json_is_string(json_object_get(t, "description")))
            return 0;
        if (!json_is_object(json_object_get(t, "inputSchema")) ||
            !json_is_object(json_object_get(t, "outputSchema")))
            return 0;
        if (strcmp(sget(json_object_get(t, "inputSchema"), "type"), "object"))
            return 0;
        if (!json_is_boolean(json_object_get(ann, "readOnlyHint")))
            return 0;
        int want_ro = 0;
        for (size_t k = 0; k < 4; k++)
            if (!strcmp(name, ro[k])) {
                want_ro = 1;
                seen++;
            }
        if (json_is_true(json_object_get(ann, "readOnlyHint")) != want_ro)
            return 0;
        if (!want_ro && strcmp(name, "reload_skills"))
            return 0;
    }
    return seen == 4;
}

TEST(tools_list_legacy)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    CHECK_RPC_RESULT(r);
    CHECK(tools_ok(result(r)));
    CHECK(json_object_get(result(r), "ttlMs") == NULL);
    CHECK(json_object_get(result(r), "resultType") == NULL);
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
            "\"params\":{\"cursor\":\"abc\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
            "\"params\":{\"cursor\":null}}");
    CHECK_RPC_RESULT(r);
    json_decref(r);
}

TEST(tools_call_legacy)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                    "\"params\":{\"name\":\"list_skills\"}}");
    CHECK_RPC_RESULT(r);
    CHECK_EQ(json_integer_value(json_object_get(
                 json_object_get(result(r), "structuredContent"), "total")),
             8);
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"nope\",\"arguments\":{}}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    CHECK_STR(sget(edata(r), "name"), "nope");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"list_skills\",\"arguments\":[]}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"list_skills\",\"arguments\":\"x\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    /* a tool's own failure is a result with isError, not a JSON-RPC error */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"load_skill\",\"arguments\":{\"name\":\"nope\"}}}");
    CHECK_RPC_RESULT(r);
    CHECK(json_is_true(json_object_get(result(r), "isError")));
    json_decref(r);
    /* arguments: null is no arguments */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
            "\"params\":{\"name\":\"skill_server_stats\",\"arguments\":null}}");
    CHECK_RPC_RESULT(r);
    CHECK(!json_is_true(json_object_get(result(r), "isError")));
    json_decref(r);
}

TEST(prompts)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\"}");
    CHECK_RPC_RESULT(r);
    CHECK(json_is_array(json_object_get(result(r), "prompts")));
    /* every skill is a prompt, by qualified name, with an optional "task" */
    CHECK_EQ(json_array_size(json_object_get(result(r), "prompts")), 8);
    json_t *p0 = json_array_get(json_object_get(result(r), "prompts"), 0);
    CHECK_STR(sget(p0, "name"), "acme/billing");
    CHECK_STR(sget(json_array_get(json_object_get(p0, "arguments"), 0), "name"), "task");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\","
            "\"params\":{\"name\":\"y\",\"arguments\":{\"task\":\"do it\"}}}");
    CHECK_RPC_RESULT(r);
    json_t *m0 = json_array_get(json_object_get(result(r), "messages"), 0);
    CHECK_STR(sget(m0, "role"), "user");
    CHECK_STR(sget(json_object_get(m0, "content"), "text"), "# Y\n\nBody of y.\n\n\nTask: do it");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\","
            "\"params\":{\"name\":\"p\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    CHECK_STR(sget(edata(r), "name"), "p");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\"}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\","
            "\"params\":{\"cursor\":\"x\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
}

/* ---- resources -------------------------------------------------------------------- */

static json_t *read_uri(const char *uri)
{
    json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", 1, "method",
                            "resources/read", "params", "uri", uri);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *r = rpc(body);
    free(body);
    return r;
}

static json_t *content0(json_t *r)
{
    return json_array_get(json_object_get(result(r), "contents"), 0);
}

static char *slurp(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    char *d = calloc(1, 65536);
    size_t n = fread(d, 1, 65535, f);
    d[n] = '\0';
    fclose(f);
    return d;
}

TEST(resources_list)
{
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");
    CHECK_RPC_RESULT(r);
    json_t *a = json_object_get(result(r), "resources");
    CHECK_EQ(json_array_size(a), 8);
    CHECK_STR(sget(json_array_get(a, 0), "uri"), "skill://acme/billing/SKILL.md");
    CHECK_STR(sget(json_array_get(a, 0), "mimeType"), "text/markdown");
    CHECK(json_object_get(result(r), "nextCursor") == NULL);
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\","
            "\"params\":{\"cursor\":\"zz\"}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/templates/list\"}");
    CHECK_RPC_RESULT(r);
    CHECK_EQ(json_array_size(json_object_get(result(r), "resourceTemplates")), 2);
    json_decref(r);
}

TEST(resources_read_skill_md)
{
    char *want = slurp("skills/x/SKILL.md");
    CHECK(want != NULL);
    json_t *r = read_uri("skill://x/SKILL.md");
    CHECK_RPC_RESULT(r);
    json_t *c = content0(r);
    CHECK_STR(sget(c, "uri"), "skill://x/SKILL.md");
    CHECK_STR(sget(c, "mimeType"), "text/markdown");
    CHECK_STR(sget(c, "text"), want);
    CHECK(json_object_get(c, "blob") == NULL);
    json_decref(r);
    /* alias: skill://<name> is its SKILL.md */
    r = read_uri("skill://x");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), want);
    CHECK_STR(sget(content0(r), "mimeType"), "text/markdown");
    json_decref(r);
    free(want);

    want = slurp("skills/acme/billing/SKILL.md");
    r = read_uri("skill://acme/billing");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), want);
    json_decref(r);
    r = read_uri("skill://acme/billing/SKILL.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), want);
    json_decref(r);
    /* the unique bare name of a team skill */
    r = read_uri("skill://billing/SKILL.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), want);
    json_decref(r);
    free(want);
}

TEST(resources_read_files)
{
    json_t *r = read_uri("skill://acme/billing/references/a.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), "billing reference\n");
    CHECK_STR(sget(content0(r), "mimeType"), "text/markdown");
    json_decref(r);
    r = read_uri("skill://x/references/a.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), "# A\nhello\n");
    json_decref(r);
    /* alias: skill://<name>/files/<path> */
    r = read_uri("skill://x/files/references/a.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), "# A\nhello\n");
    json_decref(r);
    /* percent-encoding of ordinary characters */
    r = read_uri("skill://x/references%2Fa%2emd");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "text"), "# A\nhello\n");
    json_decref(r);
    r = read_uri("skill://x/scripts/run.py");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(content0(r), "mimeType"), "text/x-python");
    json_decref(r);
}

TEST(resources_read_binary)
{
    json_t *r = read_uri("skill://x/assets/b.bin");
    CHECK_RPC_RESULT(r);
    json_t *c = content0(r);
    CHECK(json_object_get(c, "text") == NULL);
    const char *blob = sget(c, "blob");
    CHECK(blob != NULL);
    CHECK_STR(sget(c, "mimeType"), "application/octet-stream");
    unsigned char out[16];
    int n = EVP_DecodeBlock(out, (const unsigned char *)blob, (int)strlen(blob));
    CHECK_EQ(n, 3);     /* EVP_DecodeBlock counts the padding */
    CHECK_STR(blob, "AP8=");
    CHECK_EQ(out[0], 0x00);
    CHECK_EQ(out[1], 0xff);
    json_decref(r);
}

TEST(resources_read_refused)
{
    static const char *const uris[] = {
        "skill://nope/SKILL.md",         "skill://x/../y/SKILL.md",
        "skill://x/%2e%2e/y/SKILL.md",    "skill://x/%2E%2E%2Fy%2FSKILL.md",
        "skill://x/%00",                  "skill://x/a%00b",
        "skill://x/%zz",                  "skill://x/%",
        "skill://x/escape",               "skill://x/.git/config",
        "skill://x//etc/passwd",          "skill://x/references",
        "skill://x/nope.md",              "skill://reports/SKILL.md",
        "skill://acme",                   "skill://",
        "file:///etc/passwd",             "https://example.com/",
        "skill://x/files/../SKILL.md",    "skill://x/references\\a.md",
    };
    for (size_t i = 0; i < sizeof uris / sizeof *uris; i++) {
        json_t *r = read_uri(uris[i]);
        if (!r || O.kind != RPC_OUT_ERROR || O.code != RPC_INVALID_PARAMS || O.transport ||
            !sget(edata(r), "uri") || strcmp(sget(edata(r), "uri"), uris[i])) {
            H_FAIL("%s: expected -32602 with data.uri, got kind %d code %d", uris[i], O.kind,
                   O.code);
            json_decref(r);
            return;
        }
        json_decref(r);
    }
    json_t *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\","
                    "\"params\":{}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\","
            "\"params\":{\"uri\":5}}");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "1");
    json_decref(r);
}

/* ---- modern era ---------------------------------------------------------------- */

TEST(modern_discover)
{
    json_t *r = modern("server/discover", NULL, NULL);
    CHECK_RPC_RESULT(r);
    CHECK_EQ(O.modern, 1);
    json_t *res = result(r);
    CHECK_STR(sget(res, "resultType"), "complete");
    CHECK(has_str(json_object_get(res, "supportedVersions"), MODERN));
    CHECK(has_str(json_object_get(res, "supportedVersions"), "2025-11-25"));
    CHECK(json_is_integer(json_object_get(res, "ttlMs")));
    CHECK(json_integer_value(json_object_get(res, "ttlMs")) >= 0);
    CHECK_EQ(json_integer_value(json_object_get(res, "ttlMs")), S.ttl_ms);
    CHECK_STR(sget(res, "cacheScope"), "public");
    json_t *si = json_object_get(json_object_get(res, "_meta"),
                                 "io.modelcontextprotocol/serverInfo");
    CHECK_STR(sget(si, "name"), "skill-mcp");
    CHECK_STR(sget(si, "version"), SKILL_VERSION);
    CHECK(json_is_object(json_object_get(res, "capabilities")));
    CHECK_STR(sget(res, "instructions"), S.instructions);
    json_decref(r);

    /* legacy server/discover: no modern decoration */
    r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
    CHECK_RPC_RESULT(r);
    CHECK_EQ(O.modern, 0);
    CHECK(json_object_get(result(r), "resultType") == NULL);
    json_decref(r);
}

TEST(modern_header_mismatch)
{
    struct mreq q = {.method = "server/discover", .version = MODERN, .hv = "2025-11-25",
                     .hm = "server/discover"};
    json_t *r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    CHECK_EQ(O.modern, 1);
    json_decref(r);
    q.hv = NULL;
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hv = MODERN;
    q.hm = "tools/list";
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hm = NULL;
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    /* whitespace around header values is not part of them */
    q.hv = "  " MODERN "\t";
    q.hm = " server/discover ";
    r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);
}

/* stdio has no headers: the body alone decides, and is still checked */
TEST(modern_headerless)
{
    const char *params = "{\"name\":\"list_skills\",\"arguments\":{}}";
    struct mreq q = {.method = "tools/call", .params = params, .version = MODERN,
                     .headerless = 1};
    json_t *r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    CHECK_EQ(O.modern, 1);
    CHECK_STR(sget(result(r), "resultType"), "complete");
    json_decref(r);
    q.version = "2099-01-01";
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_UNSUPPORTED_VERSION, 1, "7");
    json_decref(r);
    q.version = MODERN;
    q.no_caps = 1;
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 1, "7");
    json_decref(r);
    /* the same request from a transport with headers still needs them */
    q.no_caps = 0;
    q.headerless = 0;
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
}

TEST(modern_mcp_name)
{
    const char *params = "{\"name\":\"list_skills\",\"arguments\":{}}";
    struct mreq q = {.method = "tools/call", .params = params, .version = MODERN, .hv = MODERN,
                     .hm = "tools/call"};
    json_t *r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hn = "load_skill";
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hn = "list_skills";
    r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    CHECK_EQ(O.modern, 1);
    json_decref(r);
    q.hn = "  list_skills  ";
    r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);
    /* RFC 2047-style base64 */
    unsigned char enc[64];
    EVP_EncodeBlock(enc, (const unsigned char *)"list_skills", 11);
    char hdr[96];
    snprintf(hdr, sizeof hdr, "=?base64?%s?=", (const char *)enc);
    CHECK_STR(hdr, "=?base64?bGlzdF9za2lsbHM=?=");
    q.hn = hdr;
    r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);
    q.hn = "=?BASE64?bGlzdF9za2lsbHM=?=";
    r = modern_req(&q);
    CHECK_RPC_RESULT(r);
    json_decref(r);
    /* base64 of something else, and broken base64 */
    q.hn = "=?base64?bG9hZF9za2lsbA==?=";   /* load_skill */
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hn = "=?base64?bGlzdF9za2lsbHM?=";    /* not a multiple of 4 */
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
    q.hn = "=?base64?!!!!?=";
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);

    /* resources/read names its uri */
    struct mreq rr = {.method = "resources/read", .params = "{\"uri\":\"skill://x/SKILL.md\"}",
                      .version = MODERN, .hv = MODERN, .hm = "resources/read",
                      .hn = "skill://x/SKILL.md"};
    r = modern_req(&rr);
    CHECK_RPC_RESULT(r);
    json_decref(r);
    rr.hn = "skill://y/SKILL.md";
    r = modern_req(&rr);
    CHECK_RPC_ERROR(r, RPC_HEADER_MISMATCH, 1, "7");
    json_decref(r);
}

TEST(modern_unsupported_version)
{
    struct mreq q = {.method = "server/discover", .version = "2099-01-01", .hv = "2099-01-01",
                     .hm = "server/discover"};
    json_t *r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_UNSUPPORTED_VERSION, 1, "7");
    CHECK_EQ(O.modern, 1);
    json_t *sup = json_object_get(edata(r), "supported");
    CHECK(json_is_array(sup));
    CHECK(has_str(sup, MODERN));
    CHECK_STR(sget(edata(r), "requested"), "2099-01-01");
    json_decref(r);
    /* a legacy version named in the modern _meta field is not modern either */
    q.version = "2025-11-25";
    q.hv = "2025-11-25";
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_UNSUPPORTED_VERSION, 1, "7");
    json_decref(r);
}

TEST(modern_client_capabilities)
{
    struct mreq q = {.method = "server/discover", .version = MODERN, .no_caps = 1, .hv = MODERN,
                     .hm = "server/discover"};
    json_t *r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 1, "7");
    CHECK_EQ(O.modern, 1);
    json_decref(r);
    q.no_caps = 0;
    q.caps = json_string("all");
    r = modern_req(&q);
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 1, "7");
    json_decref(r);
}

TEST(modern_legacy_only_methods)
{
    static const char *const m[] = {"initialize", "ping", "logging/setLevel"};
    for (size_t i = 0; i < 3; i++) {
        json_t *r = modern(m[i], "{\"protocolVersion\":\"2025-11-25\",\"level\":\"info\"}",
                           NULL);
        CHECK_RPC_ERROR(r, RPC_METHOD_NOT_FOUND, 0, "7");
        CHECK_EQ(O.modern, 1);     /* http.c maps this to 404 */
        json_decref(r);
    }
}

TEST(modern_notification)
{
    struct mreq q = {.method = "notifications/cancelled", .version = MODERN, .hv = MODERN,
                     .hm = "notifications/cancelled", .no_id = 1};
    json_t *r = modern_req(&q);
    CHECK(r == NULL);
    CHECK_EQ(O.kind, RPC_OUT_ACCEPTED);
}

TEST(modern_tools_list)
{
    json_t *r = modern("tools/list", NULL, NULL);
    CHECK_RPC_RESULT(r);
    json_t *res = result(r);
    CHECK(tools_ok(res));
    CHECK_STR(sget(res, "resultType"), "complete");
    CHECK_EQ(json_integer_value(json_object_get(res, "ttlMs")), S.ttl_ms);
    CHECK_STR(sget(res, "cacheScope"), "public");
    CHECK(json_is_object(json_object_get(json_object_get(res, "_meta"),
                                         "io.modelcontextprotocol/serverInfo")));
    json_decref(r);
    r = modern("tools/list", "{\"cursor\":\"5\"}", NULL);
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "7");
    json_decref(r);
}

TEST(modern_tools_call)
{
    json_t *r = modern("tools/call", "{\"name\":\"nope\",\"arguments\":{}}", "nope");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "7");
    CHECK_STR(sget(edata(r), "name"), "nope");
    CHECK_EQ(O.modern, 1);
    json_decref(r);
    r = modern("tools/call", "{\"name\":\"list_skills\",\"arguments\":[1]}", "list_skills");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "7");
    json_decref(r);
    r = modern("tools/call", "{\"name\":\"list_skills\",\"arguments\":{\"limit\":2}}",
               "list_skills");
    CHECK_RPC_RESULT(r);
    json_t *res = result(r);
    CHECK_STR(sget(res, "resultType"), "complete");
    CHECK(json_object_get(res, "ttlMs") == NULL);   /* tool results are not cached */
    CHECK_EQ(json_array_size(json_object_get(json_object_get(res, "structuredContent"),
                                             "skills")),
             2);
    json_decref(r);
    r = modern("tools/call", "{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\"}}",
               "load_skill");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(result(r), "resultType"), "complete");
    CHECK(!json_is_true(json_object_get(result(r), "isError")));
    json_decref(r);
}

TEST(modern_resources_and_prompts)
{
    json_t *r = modern("resources/read", "{\"uri\":\"skill://nope/SKILL.md\"}",
                       "skill://nope/SKILL.md");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "7");
    CHECK_STR(sget(edata(r), "uri"), "skill://nope/SKILL.md");
    json_decref(r);
    r = modern("resources/read", "{\"uri\":\"skill://x/references/a.md\"}",
               "skill://x/references/a.md");
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(result(r), "resultType"), "complete");
    CHECK_EQ(json_integer_value(json_object_get(result(r), "ttlMs")), S.ttl_ms);
    CHECK_STR(sget(content0(r), "text"), "# A\nhello\n");
    json_decref(r);
    r = modern("prompts/list", NULL, NULL);
    CHECK_RPC_RESULT(r);
    CHECK_STR(sget(result(r), "cacheScope"), "public");
    json_decref(r);
    r = modern("prompts/get", "{\"name\":\"p\"}", "p");
    CHECK_RPC_ERROR(r, RPC_INVALID_PARAMS, 0, "7");
    json_decref(r);
    r = modern("resources/list", NULL, NULL);
    CHECK_RPC_RESULT(r);
    CHECK_EQ(json_array_size(json_object_get(result(r), "resources")), 8);
    CHECK_STR(sget(result(r), "resultType"), "complete");
    json_decref(r);
}

/* ---- error messages that quote the request ---------------------------------- */

/*
 * mcp.c and resources.c quote the caller's name/uri with a byte cap
 * ("Unknown tool: %.128s", "Resource not found: %.300s"). When the cap
 * falls inside a multibyte character the message is not UTF-8, json_pack()
 * in set_error() fails, and json_dumps(NULL) / strlen(NULL) crash the
 * worker. Run in a child so that a crash is a failed test, not a dead run.
 */
static int child_answers(const char *body, int want_code)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct answer o;
        answer(body, strlen(body), &NOH, &o);
        json_t *r = o.body ? json_loadb(o.body, o.len, 0, NULL) : NULL;
        int ok = r && ecode(r) == want_code;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        printf("# child died of signal %d\n", WTERMSIG(st));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static char *with_cut_char(const char *pre, size_t ascii, const char *post)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, pre);
    for (size_t i = 0; i < ascii; i++)
        buf_puts(&b, "a");
    for (int i = 0; i < 4; i++)
        buf_puts(&b, "\xc3\xa9");
    buf_puts(&b, post);
    return buf_steal(&b, NULL);
}

TEST(error_message_utf8_unknown_tool)
{
    char *body = with_cut_char("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"", 127, "\"}}");
    int ok = child_answers(body, RPC_INVALID_PARAMS);
    free(body);
    CHECK(ok);
}

TEST(error_message_utf8_unknown_prompt)
{
    char *body = with_cut_char("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\","
                               "\"params\":{\"name\":\"", 127, "\"}}");
    int ok = child_answers(body, RPC_INVALID_PARAMS);
    free(body);
    CHECK(ok);
}

TEST(error_message_utf8_resource_uri)
{
    /* "skill://" is 8 bytes: the cap of 300 falls in the 2nd byte of an e-acute */
    char *body = with_cut_char("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\","
                               "\"params\":{\"uri\":\"skill://", 291, "/SKILL.md\"}}");
    int ok = child_answers(body, RPC_INVALID_PARAMS);
    free(body);
    CHECK(ok);
}


/* ---- the view of the common shapes against the tree --------------------- */

/* body through the view (when it reads it) and through a tree: the same
 * answer byte for byte, and the same fields for the logs. Returns whether
 * the view read it, or -1 on a difference. */
static int both_ways(const char *body, size_t len, const struct rpc_headers *h)
{
    struct answer a, b;
    int took = rpc_view_takes(body, len);
    rpc_view_off = 0;
    answer(body, len, h, &a);
    rpc_view_off = 1;
    answer(body, len, h, &b);
    rpc_view_off = 0;
    int same = a.kind == b.kind && a.code == b.code && a.transport == b.transport &&
               a.modern == b.modern && a.method == b.method && !strcmp(a.tool, b.tool) &&
               !strcmp(a.skill, b.skill) && a.len == b.len &&
               (!a.len || !memcmp(a.body, b.body, a.len));
    if (!same)
        printf("# view and tree differ on %.*s:\n#  %.*s\n#  %.*s\n", (int)len, body,
               (int)a.len, a.body ? a.body : "", (int)b.len, b.body ? b.body : "");
    free(a.body);
    free(b.body);
    return same ? took : -1;
}

#define TC(args) "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":" args "}"
#define URI(m, u) "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"" m "\",\"params\":{\"uri\":\"" u "\"}}"

/* Read by the view: the common shapes, their tool failures and their errors. */
static const char *const view_bodies[] = {
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"Usage\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"usage\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"Details\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"nope\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"section\":\"Usage\",\"name\":\"csv-profile\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"billing\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"reports\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"nope\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"repor\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"extra\":\"1\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"extra\":\"1\",\"name\":\"x\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":\"\xc3\xa9\xe2\x82\xac\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"\xf0\x9f\x98\x80\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{}}"),
    TC("{\"name\":\"load_skill\"}"),
    TC("{\"arguments\":{\"name\":\"y\"},\"name\":\"load_skill\"}"),
    TC("{\"name\":\"list_skills\"}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"query\":\"profile a csv\"}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"query\":\"reports\",\"cursor\":\"x\"}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"limit\":\"5\"}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"tags\":\"csv\"}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"name\":\"x\"}}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"references/a.md\"}}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"assets/b.bin\"}}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"escape\"}}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"../y/SKILL.md\"}}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"utf8.txt\",\"max_bytes\":\"3\"}}"),
    URI("skills/get", "skill://x/SKILL.md"),
    URI("skills/get", "skill://acme/billing/SKILL.md"),
    URI("skills/get", "skill://billing/SKILL.md"),
    URI("skills/get", "skill://x/references/a.md"),
    URI("skills/get", "skill://nope/SKILL.md"),
    URI("skills/get", "skill://x"),
    URI("skills/get", "http://x/SKILL.md"),
    URI("skills/get", ""),
    URI("resources/read", "skill://x/SKILL.md"),
    URI("resources/read", "skill://x/references/a.md"),
    URI("resources/read", "skill://x/assets/b.bin"),
    URI("resources/read", "skill://x/utf8.txt"),
    URI("resources/read", "skill://x/escape"),
    URI("resources/read", "skill://x/../y/SKILL.md"),
    URI("resources/read", "skill://nope/a.md"),
    URI("resources/read", "file:///etc/passwd"),
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://y/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://y/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://y/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9<\",\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://y/SKILL.md\"}}",
    " {\t\"params\" :{ \"uri\" : \"skill://y/SKILL.md\" } ,\"method\":\"skills/get\",\"id\":3,\r\n\"jsonrpc\":\"2.0\"}\n",
};

/* Left to the tree: anything unusual. */
static const char *const tree_bodies[] = {
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"name\":\"y\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\\u0041\"}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\",\"section\":null}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":null}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\"},\"_meta\":{}}"),
    TC("{\"name\":\"load_skill\",\"arguments\":{\"name\":\"x\"},\"task\":{}}"),
    TC("{\"name\":\"load_skill\",\"name\":\"load_skill\"}"),
    TC("{\"name\":\"run_skill_script\",\"arguments\":{\"name\":\"x\"}}"),
    TC("{\"name\":\"skill_server_stats\",\"arguments\":{\"x\":\"1\"}}"),
    TC("{\"name\":\"nope\"}"),
    TC("{\"name\":7}"),
    TC("{\"uri\":\"skill://x/SKILL.md\",\"name\":\"load_skill\"}"),
    TC("{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"x\",\"path\":\"utf8.txt\",\"max_bytes\":3}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"tags\":[\"csv\"]}}"),
    TC("{\"name\":\"list_skills\",\"arguments\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\",\"f\":\"6\",\"g\":\"7\",\"h\":\"8\",\"i\":\"9\"}}"),
    URI("prompts/get", "skill://x/SKILL.md"),
    URI("resources/subscribe", "skill://x/SKILL.md"),
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\",\"name\":\"x\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\",\"arguments\":{}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":null}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":-1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1234567890123456789,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"},\"x\":1}",
    "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}} x",
    "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\xff\"}}",
    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/get\",\"params\":{\"uri\":\"skill://x/SKILL.md\"}}]",
};

static const struct rpc_headers *const view_headers[] = {
    &NOH,
    &(const struct rpc_headers){.protocol_version = "2025-06-18"},
    &(const struct rpc_headers){.protocol_version = "1999-01-01"},
    &(const struct rpc_headers){.protocol_version = "2026-07-28"},
    &(const struct rpc_headers){.protocol_version = "2026-07-28", .method = "tools/call",
                                .name = "load_skill"},
};

TEST(view_same_answer_as_tree)
{
    for (size_t hi = 0; hi < sizeof view_headers / sizeof *view_headers; hi++) {
        for (size_t i = 0; i < sizeof view_bodies / sizeof *view_bodies; i++) {
            const char *b = view_bodies[i];
            if (!rpc_view_takes(b, strlen(b)))
                printf("# the view does not read %s\n", b);
            CHECK_EQ(both_ways(b, strlen(b), view_headers[hi]), 1);
        }
        for (size_t i = 0; i < sizeof tree_bodies / sizeof *tree_bodies; i++) {
            const char *b = tree_bodies[i];
            CHECK_EQ(both_ways(b, strlen(b), view_headers[hi]), 0);
        }
    }
}

/* Every body one edit away from a common one: whatever the view reads of
 * them, it answers as the tree does. */
TEST(view_same_answer_one_edit_away)
{
    static const char edits[] = "\"\\ 0}],:{a\x01\xc3";
    const char *const seeds[] = {view_bodies[0], view_bodies[12], view_bodies[21],
                                 view_bodies[26], view_bodies[31], view_bodies[48]};
    char m[512];
    size_t took = 0, tried = 0;
    for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++) {
        size_t n = strlen(seeds[si]);
        for (size_t at = 0; at <= n; at++) {
            for (size_t e = 0; e <= sizeof edits - 1; e++) {
                size_t len;
                if (e == sizeof edits - 1) {      /* a byte dropped */
                    if (at == n)
                        continue;
                    memcpy(m, seeds[si], at);
                    memcpy(m + at, seeds[si] + at + 1, n - at - 1);
                    len = n - 1;
                } else {                          /* a byte put in */
                    memcpy(m, seeds[si], at);
                    m[at] = edits[e];
                    memcpy(m + at + 1, seeds[si] + at, n - at);
                    len = n + 1;
                }
                int r = both_ways(m, len, &NOH);
                CHECK(r >= 0);
                took += (size_t)r;
                tried++;
            }
        }
    }
    printf("# %zu of %zu edited bodies read by the view\n", took, tried);
    CHECK(took > 100);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_WARN);
    make_tree();
    server_up();

    RUN(empty_body);
    RUN(invalid_json);
    RUN(binary_garbage);
    RUN(deep_nesting);
    RUN(nesting_limit_is_64_for_both_parsers);
    RUN(brackets_inside_strings_are_not_nesting);
    RUN(duplicate_keys);
    RUN(batch_and_non_object);
    RUN(jsonrpc_member);
    RUN(bad_ids);
    RUN(good_ids_echoed);
    RUN(method_member);
    RUN(params_member);
    RUN(notifications_and_responses);
    RUN(unknown_method);
    RUN(initialize_versions);
    RUN(initialize_without_version);
    RUN(ping);
    RUN(set_level);
    RUN(legacy_protocol_header);
    RUN(tools_list_legacy);
    RUN(tools_call_legacy);
    RUN(prompts);
    RUN(resources_list);
    RUN(resources_read_skill_md);
    RUN(resources_read_files);
    RUN(resources_read_binary);
    RUN(resources_read_refused);
    RUN(modern_discover);
    RUN(modern_header_mismatch);
    RUN(modern_mcp_name);
    RUN(modern_headerless);
    RUN(modern_unsupported_version);
    RUN(modern_client_capabilities);
    RUN(modern_legacy_only_methods);
    RUN(modern_notification);
    RUN(modern_tools_list);
    RUN(modern_tools_call);
    RUN(modern_resources_and_prompts);
    RUN(error_message_utf8_unknown_tool);
    RUN(error_message_utf8_unknown_prompt);
    RUN(error_message_utf8_resource_uri);
    RUN(view_same_answer_as_tree);
    RUN(view_same_answer_one_edit_away);

    server_down();
    rm_tree(base);
    DONE();
}
