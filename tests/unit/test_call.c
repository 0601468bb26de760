/*
 * test_call.c - the request context and its completion (server/call.c) and
 * the JSON-RPC envelopes of both eras (server/envelope.c).
 *
 * A transport hands its bytes to the context through callbacks; the tests
 * play the transport: a counting receiver, and one that goes away while
 * the call is still running (a client that closes its stream mid-run).
 */
#include "harness.h"
#include "call.h"
#include "envelope.h"
#include "proto.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE_NAME "call"
#include "srv_fixture.h"

static json_t *parse(const char *s, size_t len)
{
    json_error_t e;
    json_t *j = s ? json_loadb(s, len, 0, &e) : NULL;
    if (s && !j)
        printf("# does not parse: %s: %.*s\n", e.text, (int)len, s);
    return j;
}

static const char *sget(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ---- envelopes -------------------------------------------------------------- */

TEST(env_result_legacy)
{
    size_t len;
    json_t *id = json_integer(7);
    json_t *r = json_pack("{s:i}", "n", 1);
    char *s = env_result(id, r, 0, 5000, &len);
    json_decref(r);
    json_decref(id);
    /* a legacy result is wrapped as it is: no era members, no ttl */
    CHECK_MEM(s, len, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"n\":1}}");
    free(s);
}

TEST(env_result_modern)
{
    size_t len;
    json_t *id = json_string("a");
    json_t *r = json_pack("{s:i}", "n", 1);
    char *s = env_result(id, r, 1, -1, &len);
    json_decref(r);
    json_t *j = parse(s, len);
    free(s);
    CHECK(j != NULL);
    CHECK_STR(sget(j, "id"), "a");
    json_t *res = json_object_get(j, "result");
    CHECK_STR(sget(res, "resultType"), "complete");
    CHECK_STR(sget(json_object_get(json_object_get(res, "_meta"),
                                   "io.modelcontextprotocol/serverInfo"),
                   "name"),
              "skill-mcp");
    CHECK(json_object_get(res, "ttlMs") == NULL);   /* not cacheable */
    json_decref(j);
    /* cacheable: ttlMs and cacheScope */
    r = json_pack("{s:i}", "n", 1);
    s = env_result(id, r, 1, 5000, &len);
    json_decref(r);
    j = parse(s, len);
    free(s);
    CHECK(j != NULL);
    res = json_object_get(j, "result");
    CHECK_EQ(json_integer_value(json_object_get(res, "ttlMs")), 5000);
    CHECK_STR(sget(res, "cacheScope"), "public");
    json_decref(j);
    /* a result that says its own resultType keeps it (a CreateTaskResult) */
    r = json_pack("{s:s}", "resultType", "task");
    s = env_result(id, r, 1, -1, &len);
    json_decref(r);
    j = parse(s, len);
    free(s);
    CHECK(j != NULL);
    CHECK_STR(sget(json_object_get(j, "result"), "resultType"), "task");
    json_decref(j);
    json_decref(id);
}

TEST(env_result_raw_both_eras)
{
    size_t len;
    json_t *id = json_integer(3);
    const char *legacy = "{\"content\":[]}";
    char *s = env_result_raw(id, legacy, strlen(legacy), &len);
    CHECK_MEM(s, len, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}");
    free(s);
    /* the modern members a tool renders by hand match the decorated tree */
    const char *modern = "{\"content\":[]" ENV_MODERN_TAIL "}";
    s = env_result_raw(NULL, modern, strlen(modern), &len);
    json_t *j = parse(s, len);
    free(s);
    CHECK(j != NULL);
    CHECK(json_is_null(json_object_get(j, "id")));
    json_t *want = json_pack("{s:[]}", "content");
    env_decorate_modern(want, -1);
    CHECK(json_equal(json_object_get(j, "result"), want));
    json_decref(want);
    json_decref(j);
    json_decref(id);
}

TEST(env_error_shapes)
{
    size_t len;
    json_t *id = json_integer(9);
    char *s = env_error(id, RPC_INVALID_PARAMS, "bad", json_pack("{s:s}", "name", "x"), &len);
    CHECK_MEM(s, len, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,\"message\":"
                      "\"bad\",\"data\":{\"name\":\"x\"}}}");
    free(s);
    /* no id (a refusal before the id is known); a message that is not UTF-8 */
    s = env_error(NULL, RPC_PARSE_ERROR, "cut \xc3", NULL, &len);
    json_t *j = parse(s, len);
    free(s);
    CHECK(j != NULL);
    CHECK(json_is_null(json_object_get(j, "id")));
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(j, "error"), "code")),
             RPC_PARSE_ERROR);
    CHECK(json_is_string(json_object_get(json_object_get(j, "error"), "message")));
    json_decref(j);
    json_decref(id);
}

/* ---- the request context ---------------------------------------------------- */

struct receiver {
    atomic_int calls, events;
    atomic_int gone;            /* set once the transport has let go */
    atomic_int late;            /* a callback after that */
    char *last;
    size_t last_len;
};

static void rx_done(char *bytes, size_t len, void *arg)
{
    struct receiver *r = arg;
    if (atomic_load(&r->gone))
        atomic_fetch_add(&r->late, 1);
    atomic_fetch_add(&r->calls, 1);
    free(r->last);
    r->last = bytes;
    r->last_len = len;
}

static void rx_event(const char *bytes, size_t len, void *arg)
{
    struct receiver *r = arg;
    if (atomic_load(&r->gone))
        atomic_fetch_add(&r->late, 1);
    atomic_fetch_add(&r->events, 1);
}

/* A batch is refused with one error whose id is null (there is no one
 * request to answer), delivered once to the transport. */
TEST(batch_refused_once)
{
    struct receiver rx = {0};
    struct call *c = call_new(&S);
    call_on_complete(c, rx_done, &rx);
    const char *body = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]";
    rpc_handle(c, body, strlen(body), &(struct rpc_headers){0});
    CHECK_EQ(atomic_load(&rx.calls), 1);
    size_t blen;
    CHECK(call_body(c, &blen) == NULL);     /* the callback got the bytes */
    json_t *j = parse(rx.last, rx.last_len);
    CHECK(j != NULL);
    CHECK(json_is_null(json_object_get(j, "id")));
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(j, "error"), "code")),
             RPC_INVALID_REQUEST);
    json_decref(j);
    /* completed already: a second completion is refused and sends nothing */
    CHECK_EQ(call_finish(c), -1);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    call_unref(c);
    free(rx.last);
}

/* A pending call is completed once, with its era's bytes; events go out
 * before the answer, never after it. */
TEST(pending_completed_once)
{
    struct receiver rx = {0};
    struct call *c = call_new(&S);
    c->modern = 1;
    c->id = json_integer(42);
    call_on_complete(c, rx_done, &rx);
    call_on_event(c, rx_event, &rx);
    call_run(c, NULL);          /* a run whose plan the chain already owns */
    CHECK(call_pending(c));
    call_event(c, "{}", 2);
    CHECK_EQ(atomic_load(&rx.events), 1);
    CHECK_EQ(atomic_load(&rx.calls), 0);
    const char *raw = "{\"content\":[]" ENV_MODERN_TAIL "}";
    call_raw(c, raw, strlen(raw), NULL);
    CHECK_EQ(call_finish(c), 0);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    json_t *j = parse(rx.last, rx.last_len);
    CHECK(j != NULL);
    CHECK_EQ(json_integer_value(json_object_get(j, "id")), 42);
    CHECK_STR(sget(json_object_get(j, "result"), "resultType"), "complete");
    json_decref(j);
    call_error(c, RPC_INTERNAL_ERROR, NULL, "too late");
    CHECK_EQ(call_finish(c), -1);
    call_event(c, "{}", 2);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    CHECK_EQ(atomic_load(&rx.events), 1);
    call_unref(c);
    free(rx.last);
}

/* A tasks/result wait stands in for the real one: only its drop is seen. */
static int drops;
static void count_drop(struct tasks_wait *w)
{
    (void)w;
    drops++;
}

/*
 * The setters are the one way to write an outcome: each replaces the one
 * before until the call completes; after call_finish one is refused, frees
 * what it was handed (LeakSanitizer checks it under make asan) and leaves
 * the outcome that was sent.
 */
TEST(outcome_set_until_completed)
{
    struct receiver rx = {0};
    struct call *c = call_new(&S);
    c->id = json_integer(7);
    call_on_complete(c, rx_done, &rx);
    CHECK_EQ(call_result(c, json_pack("{s:i}", "a", 1)), 0);
    CHECK_EQ(call_error(c, RPC_INTERNAL_ERROR, json_object(), "replaced"), -1);
    CHECK_EQ(call_kind(c), CALL_ERROR);
    CHECK_EQ(call_result(c, json_pack("{s:i}", "b", 2)), 0);
    CHECK_EQ(call_kind(c), CALL_RESULT);
    CHECK_EQ(call_finish(c), 0);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    drops = 0;
    struct tasks_wait *fake = (struct tasks_wait *)&rx;
    CHECK_EQ(call_wait(c, fake, count_drop), -1);
    CHECK_EQ(drops, 1);
    char *owned = xstrdup("{\"late\":true}");
    CHECK_EQ(call_raw(c, owned, strlen(owned), owned), -1);
    CHECK_EQ(call_result(c, json_object()), -1);
    CHECK_EQ(call_response(c, xstrdup("{}"), 2), -1);
    CHECK_EQ(call_accepted(c), -1);
    CHECK_EQ(call_run(c, NULL), -1);
    CHECK_EQ(call_error(c, RPC_INTERNAL_ERROR, json_object(), "too late"), -1);
    CHECK_EQ(call_kind(c), CALL_RESULT);
    CHECK(!call_pending(c) && call_finish(c) == -1);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    json_t *j = parse(rx.last, rx.last_len);
    CHECK(j != NULL);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(j, "result"), "b")), 2);
    json_decref(j);
    call_unref(c);
    free(rx.last);
}

/* A pending outcome is handed over once to whoever starts it; the call
 * stays pending until its answer is set, and what was taken is no longer
 * the call's to drop. */
TEST(pending_taken_once)
{
    struct receiver rx = {0};
    struct call *c = call_new(&S);
    c->id = json_integer(8);
    call_on_complete(c, rx_done, &rx);
    drops = 0;
    struct tasks_wait *fake = (struct tasks_wait *)&rx;
    CHECK_EQ(call_wait(c, fake, count_drop), 0);
    CHECK(call_pending(c));
    CHECK(call_take_run(c) == NULL);
    CHECK(call_take_wait(c) == fake);
    CHECK(call_take_wait(c) == NULL);
    CHECK(call_pending(c));
    CHECK_EQ(call_result(c, json_object()), 0);
    CHECK_EQ(drops, 0);
    CHECK_EQ(call_finish(c), 0);
    CHECK_EQ(atomic_load(&rx.calls), 1);
    /* one never started is the call's: dropped with it */
    struct call *d = call_new(&S);
    CHECK_EQ(call_wait(d, fake, count_drop), 0);
    call_unref(d);
    CHECK_EQ(drops, 1);
    call_unref(c);
    free(rx.last);
}

/* The era members of a cacheable result are added where the call is
 * rendered: CALL_CACHE_MODERN on 2026-07-28 only, CALL_CACHE_BOTH (the
 * skills extension) on either era; and a kept reply gets the same. */
TEST(cache_members_by_era)
{
    for (int modern = 0; modern < 2; modern++)
        for (int how = CALL_CACHE_NONE; how <= CALL_CACHE_BOTH; how++)
            for (int kept = 0; kept < 2; kept++) {
                struct call *c = call_new(&S);
                c->id = json_integer(9);
                c->modern = modern;
                call_cacheable(c, (enum call_cache)how);
                json_t *r = json_pack("{s:i}", "a", 1);
                if (kept) {
                    if (how == CALL_CACHE_NONE) {   /* kept replies are cacheable */
                        json_decref(r);
                        call_unref(c);
                        continue;
                    }
                    size_t n;
                    char *bytes = call_render_kept(c, r, &n);
                    json_decref(r);
                    call_raw(c, bytes, n, bytes);
                } else {
                    call_result(c, r);
                }
                CHECK_EQ(call_finish(c), 0);
                size_t blen;
                const char *body = call_body(c, &blen);
                json_t *j = parse(body, blen);
                json_t *res = json_object_get(j, "result");
                int ttl = modern ? how != CALL_CACHE_NONE : how == CALL_CACHE_BOTH;
                printf("# modern %d, cache %d, kept %d\n", modern, how, kept);
                CHECK_EQ(json_integer_value(json_object_get(res, "a")), 1);
                CHECK_EQ(json_object_get(res, "ttlMs") != NULL, ttl);
                if (ttl) {
                    CHECK_EQ(json_integer_value(json_object_get(res, "ttlMs")), S.ttl_ms);
                    CHECK_STR(sget(res, "cacheScope"), "public");
                }
                CHECK_EQ(sget(res, "resultType") != NULL, modern || ttl);
                CHECK_EQ(json_object_get(res, "_meta") != NULL, modern);
                json_decref(j);
                call_unref(c);
            }
}

/* A task result's era members are the protocol layer's: the task object
 * alone in, the era's reply out. */
TEST(task_members_by_era)
{
    static const char *want[2] = {
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"task\":"
        "{\"taskId\":\"t1\",\"status\":\"working\",\"ttl\":60000}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":"
        "{\"taskId\":\"t1\",\"status\":\"working\",\"ttlMs\":60000,\"resultType\":\"task\","
        "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
        "{\"name\":\"" SERVER_NAME "\",\"version\":\"" SKILL_VERSION "\"}}}}",
    };
    for (int modern = 0; modern < 2; modern++) {
        struct call *c = call_new(&S);
        c->id = json_integer(3);
        c->modern = modern;
        CHECK_EQ(call_result_task(c, json_pack("{s:s, s:s, s:i}", "taskId", "t1", "status",
                                               "working", modern ? "ttlMs" : "ttl", 60000)),
                 0);
        CHECK_EQ(call_finish(c), 0);
        printf("# modern %d\n", modern);
        size_t blen;
        const char *body = call_body(c, &blen);
        CHECK_MEM(body, blen, want[modern]);
        call_unref(c);
        /* a plain result set after it is no task */
        c = call_new(&S);
        c->id = json_integer(4);
        c->modern = modern;
        call_result_task(c, json_object());
        call_result(c, json_pack("{s:i}", "a", 1));
        CHECK_EQ(call_finish(c), 0);
        body = call_body(c, &blen);
        json_t *j = parse(body, blen);
        json_t *res = json_object_get(j, "result");
        CHECK(json_object_get(res, "task") == NULL);
        CHECK_EQ(json_integer_value(json_object_get(res, "a")), 1);
        if (modern)
            CHECK_STR(sget(res, "resultType"), "complete");
        json_decref(j);
        call_unref(c);
    }
}

/* The script side of a run: it ends on its own thread, like the loop
 * thread's done callback. */
static void *finish_run(void *arg)
{
    struct call *c = arg;
    char *bytes = xstrdup("{\"content\":[]}");
    call_raw(c, bytes, strlen(bytes), bytes);
    call_finish(c);
    call_unref(c);
    return NULL;
}

/*
 * The HTTP stream's case: the client closes the connection while the
 * script runs. The transport abandons the call and frees its state; the run
 * then ends and its answer must go nowhere (no callback into the freed
 * transport, no crash; under ASan a use after free would fail here).
 */
TEST(disconnect_mid_run)
{
    struct receiver *rx = xcalloc(1, sizeof *rx);
    struct call *c = call_new(&S);
    c->id = json_integer(1);
    call_on_complete(c, rx_done, rx);
    call_on_event(c, rx_event, rx);
    call_run(c, NULL);
    call_ref(c);                /* the running script's reference */
    rpc_abandon(c);             /* the stream closed */
    atomic_store(&rx->gone, 1);
    call_unref(c);              /* the transport's reference */
    /* rx stays allocated (marked gone) so that a late callback is counted
     * rather than only undefined */
    pthread_t t;
    pthread_create(&t, NULL, finish_run, c);
    pthread_join(t, NULL);
    int calls = atomic_load(&rx->calls), late = atomic_load(&rx->late);
    free(rx->last);
    free(rx);
    CHECK_EQ(calls, 0);
    CHECK_EQ(late, 0);
}

/* The same race run many times with both sides on their own threads: the
 * answer is delivered at most once, and never after the transport's
 * detach returned. */
struct detach_arg {
    struct call *c;
    struct receiver *rx;
};

static void *detach_side(void *arg)
{
    struct detach_arg *d = arg;
    rpc_abandon(d->c);
    atomic_store(&d->rx->gone, 1);
    return NULL;
}

TEST(disconnect_races_completion)
{
    int delivered = 0;
    for (int i = 0; i < 2000; i++) {
        struct receiver rx = {0};
        struct call *c = call_new(&S);
        call_on_complete(c, rx_done, &rx);
        call_run(c, NULL);
        call_ref(c);            /* the running script's */
        pthread_t a, b;
        struct detach_arg d = {c, &rx};
        pthread_create(&b, NULL, detach_side, &d);
        pthread_create(&a, NULL, finish_run, c);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        int calls = atomic_load(&rx.calls), late = atomic_load(&rx.late);
        call_unref(c);
        free(rx.last);
        CHECK(calls <= 1);
        CHECK_EQ(late, 0);
        delivered += calls;
    }
    printf("# %d of 2000 answers arrived before the detach\n", delivered);
}

/* Without a callback (a caller that reads the answer afterwards) the bytes
 * stay on the context. */
TEST(no_callback_keeps_body)
{
    struct call *c = call_new(&S);
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}";
    rpc_handle(c, body, strlen(body), &(struct rpc_headers){0});
    CHECK_EQ(call_kind(c), CALL_RESULT);
    size_t blen;
    const char *out = call_body(c, &blen);
    CHECK_MEM(out, blen, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
    call_unref(c);
}

/* Every id rpc.c lets through (a string or an integer) and none: the
 * envelope's bytes are json_dumps' of the same tree. */
TEST(env_result_raw_every_id)
{
    json_t *ids[] = {
        json_integer(0), json_integer(-1), json_integer(7), json_integer(1234567890123LL),
        json_integer(INT64_MAX), json_integer(INT64_MIN), json_string(""), json_string("abc"),
        json_string("\xc3\xa9\"\\/\n\x01\x7f"), json_stringn("a\0b", 3),
        json_string("\xe2\x80\xa8 \xf0\x9f\x98\x80"), NULL,
    };
    const char *raw = "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}";
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        size_t len;
        char *s = env_result_raw(ids[i], raw, strlen(raw), &len);
        json_t *tree = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                                 ids[i] ? ids[i] : json_null(), "result",
                                 json_loads(raw, 0, NULL));
        char *want = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK_MEM(s, len, want);
        CHECK_EQ(s[len], '\0');
        free(want);
        free(s);
        json_decref(tree);
        json_decref(ids[i]);
    }
    /* an empty result (never sent, but the length still adds up) */
    size_t len;
    char *s = env_result_raw(NULL, "", 0, &len);
    CHECK_MEM(s, len, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":}");
    free(s);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_WARN);
    make_tree();
    server_up();

    RUN(env_result_legacy);
    RUN(env_result_modern);
    RUN(env_result_raw_both_eras);
    RUN(env_result_raw_every_id);
    RUN(env_error_shapes);
    RUN(batch_refused_once);
    RUN(pending_completed_once);
    RUN(outcome_set_until_completed);
    RUN(pending_taken_once);
    RUN(cache_members_by_era);
    RUN(task_members_by_era);
    RUN(disconnect_mid_run);
    RUN(disconnect_races_completion);
    RUN(no_callback_keeps_body);

    server_down();
    rm_tree(base);
    DONE();
}
