/*
 * test_shapejson.c - printed output that is JSON (server/shape_json.c,
 * shape_json_texts): detection, cutting as JSON, exact numbers and text,
 * the fallback to text, and the worked example of docs/shaping.md.
 */
#include "harness.h"
#include "shape.h"
#include "util.h"

#include <jansson.h>
#include <time.h>

static const struct shape_text run_texts[] = {
    {"stdout", "stdout_format", "Ask for less: --count-only, --fields a,b, --limit N."},
    {"stderr", "stderr_format", NULL},
};

static json_t *script_like(const char *out, size_t n)
{
    return json_pack("{s:s, s:i, s:s%, s:s, s:f, s:f, s:f, s:b, s:I, s:I, s:s, s:s}", "status",
                     "ok", "exit_code", 0, "stdout", out, n, "stderr", "", "duration_ms", 41.2,
                     "timeout", 60.0, "stall_timeout", 20.0, "truncated", 0, "stdout_bytes",
                     (json_int_t)n, "stderr_bytes", (json_int_t)0, "hint",
                     "The script succeeded; stdout is its answer.", "request_id",
                     "r-92b4a16d22bd73f7");
}

static int within(json_t *r, const struct shape_budget *b)
{
    char *s = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(6));
    size_t n = strlen(s), c = shape_chars(s, n), t = shape_tokens(s, n);
    free(s);
    if ((b->max_chars && c > b->max_chars) || (b->max_tokens && t > b->max_tokens)) {
        printf("# over: %zu/%zu chars, %zu/%zu tokens\n", c, b->max_chars, t, b->max_tokens);
        return 0;
    }
    return 1;
}

static const char *out_of(json_t *r)
{
    return json_string_value(json_object_get(r, "stdout"));
}

static const char *fmt_of(json_t *r)
{
    return json_string_value(json_object_get(r, "stdout_format"));
}

/* A REST list of n orders as Python's json.dumps prints it. */
static char *orders(int n, size_t *len)
{
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b, "{\"total\": %d, \"page\": 1, \"data\": [", n);
    for (int i = 1; i <= n; i++)
        buf_printf(&b,
                   "%s{\"id\": %d, \"number\": \"ORD-%06d\", \"status\": \"%s\", "
                   "\"customer\": {\"id\": %d, \"name\": \"Customer %d\", \"email\": "
                   "\"customer%d@example.com\", \"address\": {\"city\": \"Springfield\", "
                   "\"zip\": \"%05d\"}}, \"items\": [{\"sku\": \"SKU-%d\", \"qty\": %d, "
                   "\"price\": %d.%02d}, {\"sku\": \"SKU-%d\", \"qty\": 1, \"price\": 9.99}], "
                   "\"total\": %d.%02d, \"currency\": \"EUR\", \"created_at\": "
                   "\"2026-11-%02dT10:%02d:00Z\", \"note\": \"Leave the parcel at the door "
                   "if nobody answers.\"}",
                   i > 1 ? ", " : "", i, i, i % 3 ? "shipped" : "pending", 1000 + i, i, i,
                   10000 + i, i * 7, 1 + i % 4, i % 90, i % 100, i * 3, 20 + i % 70, i % 100,
                   1 + i % 28, i % 60);
    buf_puts(&b, "]}\n");
    *len = b.len;
    return buf_steal(&b, NULL);
}

/* ---- detection ------------------------------------------------------------ */

TEST(format_of)
{
    static const struct {
        const char *s;
        enum shape_format f;
    } cases[] = {
        {"{\"a\": 1}\n", SHAPE_JSON},
        {"  [1, 2.5e-3, -0, 1e400, 12345678901234567890]  ", SHAPE_JSON},
        {"\"caf\\u00e9 \\ud83d\\ude00\"", SHAPE_JSON},
        {"42", SHAPE_JSON},
        {"null\n", SHAPE_JSON},
        {"{\"a\":1}\n{\"a\":2}\n", SHAPE_JSONL},
        {"{\"a\":1}\n\n[2]\n3", SHAPE_JSONL},
        {"", SHAPE_TEXT},
        {"   \n", SHAPE_TEXT},
        {"hello", SHAPE_TEXT},
        {"{\"a\": 1, \"a\": 2}", SHAPE_TEXT},           /* duplicate key */
        {"{\"a\": 1, \"\\u0061\": 2}", SHAPE_TEXT},     /* the same key, escaped */
        {"{\"a\": NaN}", SHAPE_TEXT},
        {"[1, 2,]", SHAPE_TEXT},
        {"{\"a\": 01}", SHAPE_TEXT},
        {"[1.]", SHAPE_TEXT},
        {"{\"a\": \"x\ty\"}", SHAPE_TEXT},              /* raw control character */
        {"{\"a\": \"\\x\"}", SHAPE_TEXT},
        {"{} {}", SHAPE_TEXT},
        {"{\"a\":1}\nnot json\n", SHAPE_TEXT},
        {"\xEF\xBB\xBF{}", SHAPE_TEXT},                 /* a byte order mark */
        {"[\"\xC3\x28\"]", SHAPE_TEXT},                 /* not UTF-8 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        enum shape_format f = shape_format_of(cases[i].s, strlen(cases[i].s));
        if (f != cases[i].f)
            printf("# case %zu: %s\n", i, cases[i].s);
        CHECK_EQ(f, cases[i].f);
    }
    /* duplicate keys among many members (the hashed check) */
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{");
    for (int i = 0; i < 100; i++)
        buf_printf(&b, "%s\"k%d\": %d", i ? ", " : "", i, i);
    buf_puts(&b, "}");
    CHECK_EQ(shape_format_of(b.p, b.len), SHAPE_JSON);
    b.len--;
    buf_puts(&b, ", \"k\\u0037\": 0}");
    CHECK_EQ(shape_format_of(b.p, b.len), SHAPE_TEXT);
    buf_cleanup(&b);
    /* nesting */
    buf_init(&b, 0);
    for (int i = 0; i < 200; i++)
        buf_puts(&b, "[");
    for (int i = 0; i < 200; i++)
        buf_puts(&b, "]");
    CHECK_EQ(shape_format_of(b.p, b.len), SHAPE_JSON);
    buf_reset(&b);
    for (int i = 0; i < 5000; i++)
        buf_puts(&b, "[");
    for (int i = 0; i < 5000; i++)
        buf_puts(&b, "]");
    CHECK_EQ(shape_format_of(b.p, b.len), SHAPE_TEXT);
    buf_cleanup(&b);
}

/* ---- cutting -------------------------------------------------------------- */

/* The worked example of docs/shaping.md, at --context-tokens 30000: each
 * copy of a result gets the per-copy budget (45% today, or the whole). */
TEST(orders_500_at_30000_tokens)
{
    size_t n;
    char *text = orders(500, &n);
    struct shape_budget whole = shape_budget_of(30000, 0.25, 48000);
    struct shape_budget half = {whole.max_tokens * 45 / 100, whole.max_chars * 45 / 100};
    const struct shape_budget *bs[] = {&half, &whole};
    for (int k = 0; k < 2; k++) {
        json_t *r = script_like(text, n);
        CHECK_EQ(shape_json_texts(r, bs[k], "run hint", run_texts, 2), 1);
        CHECK(within(r, bs[k]));
        CHECK_STR(fmt_of(r), "json");
        CHECK_STR(json_string_value(json_object_get(r, "stderr_format")), "text");
        const char *s = out_of(r);
        json_error_t e;
        json_t *o = json_loads(s, 0, &e);
        CHECK(o);
        CHECK_EQ(json_integer_value(json_object_get(o, "total")), 500);
        CHECK_EQ(json_integer_value(json_object_get(o, "page")), 1);
        json_t *data = json_object_get(o, "data");
        size_t kept = json_array_size(data);
        CHECK(kept >= 3);
        CHECK(kept < 500);
        /* whole rows, from the first */
        for (size_t i = 0; i < kept; i++) {
            json_t *row = json_array_get(data, i);
            CHECK_EQ(json_integer_value(json_object_get(row, "id")), (json_int_t)i + 1);
            CHECK(json_is_object(json_object_get(json_object_get(row, "customer"), "address")));
            CHECK_EQ(json_array_size(json_object_get(row, "items")), 2);
            CHECK_STR(json_string_value(json_object_get(row, "note")),
                      "Leave the parcel at the door if nobody answers.");
        }
        json_t *tr = json_object_get(o, "_truncated");
        CHECK_STR(json_string_value(json_object_get(tr, "path")), "data");
        CHECK_EQ(json_integer_value(json_object_get(tr, "kept")), (json_int_t)kept);
        CHECK_EQ(json_integer_value(json_object_get(tr, "total")), 500);
        const char *hint = json_string_value(json_object_get(tr, "hint"));
        CHECK(hint && strstr(hint, "--count-only") && strstr(hint, "--fields") &&
              strstr(hint, "--limit"));
        /* the result's own record names stdout */
        json_t *fields = json_object_get(json_object_get(r, "_truncated"), "fields");
        CHECK_STR(json_string_value(json_array_get(fields, 0)), "stdout");
        printf("# %s budget (%zu tokens, %zu chars): %zu of 500 rows, %zu tokens of %zu\n",
               k ? "whole" : "45%", bs[k]->max_tokens, bs[k]->max_chars, kept,
               shape_tokens(s, strlen(s)), shape_tokens(text, n));
        json_decref(o);
        json_decref(r);
    }
    free(text);
}

TEST(top_level_array)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "[");
    for (int i = 0; i < 2000; i++)
        buf_printf(&b, "%s{\"id\":%d,\"name\":\"row %d\",\"ok\":true}", i ? "," : "", i, i);
    buf_puts(&b, "]");
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {2000, 8000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    CHECK_STR(fmt_of(r), "json");
    json_t *a = json_loads(out_of(r), 0, NULL);
    CHECK(json_is_array(a));
    size_t n = json_array_size(a);
    CHECK(n > 10 && n < 2000);
    for (size_t i = 0; i + 1 < n; i++)
        CHECK_EQ(json_integer_value(json_object_get(json_array_get(a, i), "id")), (json_int_t)i);
    /* the record is the last element */
    json_t *tr = json_object_get(json_array_get(a, n - 1), "_truncated");
    CHECK_STR(json_string_value(json_object_get(tr, "path")), "");
    CHECK_EQ(json_integer_value(json_object_get(tr, "kept")), (json_int_t)n - 1);
    CHECK_EQ(json_integer_value(json_object_get(tr, "total")), 2000);
    /* kept rows are the printed bytes */
    CHECK(strncmp(out_of(r), b.p, 200) == 0);
    json_decref(a);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(nested_envelopes)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"ok\": true, \"meta\": {\"request\": \"abc\", \"result\": {\"count\": 900, "
                 "\"items\": [");
    for (int i = 0; i < 900; i++)
        buf_printf(&b, "%s{\"n\": %d, \"tags\": [\"a\", \"b\"], \"text\": \"item number %d\"}",
                   i ? ", " : "", i, i);
    buf_puts(&b, "], \"next\": \"cursor-2\"}}, \"log\": \"");
    for (int i = 0; i < 400; i++)
        buf_printf(&b, "log line %d of the request\\n", i);
    buf_puts(&b, "\"}");
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {3000, 10000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    json_t *o = json_loads(out_of(r), 0, NULL);
    CHECK(o);
    CHECK(json_is_true(json_object_get(o, "ok")));
    json_t *res = json_object_get(json_object_get(o, "meta"), "result");
    CHECK_EQ(json_integer_value(json_object_get(res, "count")), 900);
    CHECK_STR(json_string_value(json_object_get(res, "next")), "cursor-2");
    CHECK_STR(json_string_value(json_object_get(json_object_get(o, "meta"), "request")), "abc");
    size_t kept = json_array_size(json_object_get(res, "items"));
    CHECK(kept >= 1 && kept < 900);
    /* the long log string is cut head and tail, still a string */
    const char *log = json_string_value(json_object_get(o, "log"));
    CHECK(log && strstr(log, "characters omitted") && !strncmp(log, "log line 0 ", 11));
    json_t *tr = json_object_get(o, "_truncated");
    CHECK_STR(json_string_value(json_object_get(tr, "path")), "meta.result.items");
    CHECK_EQ(json_integer_value(json_object_get(tr, "total")), 900);
    json_t *paths = json_object_get(tr, "paths");
    CHECK_EQ(json_array_size(paths), 2);
    json_decref(o);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(json_lines)
{
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 3000; i++)
        buf_printf(&b, "{\"event\": \"tick\", \"seq\": %d, \"value\": %d.5}\n", i, i * 3);
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {2000, 8000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    CHECK_STR(fmt_of(r), "jsonl");
    const char *s = out_of(r);
    CHECK_EQ(shape_format_of(s, strlen(s)), SHAPE_JSONL);
    /* every line parses; the last is the record */
    size_t lines = 0;
    json_t *last = NULL;
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        json_decref(last);
        last = json_loadb(p, l, 0, NULL);
        CHECK(last);
        if (lines < 3)
            CHECK_EQ(json_integer_value(json_object_get(last, "seq")), (json_int_t)lines);
        lines++;
        p += l + (nl ? 1 : 0);
    }
    json_t *tr = json_object_get(last, "_truncated");
    CHECK_EQ(json_integer_value(json_object_get(tr, "total")), 3000);
    CHECK_EQ(json_integer_value(json_object_get(tr, "kept")), (json_int_t)lines - 1);
    json_decref(last);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(numbers_and_unicode_exact)
{
    static const char row[] =
        "{\"big\": 12345678901234567890, \"money\": 1.10, \"huge\": 1e400, \"neg\": -0, "
        "\"exp\": 2.50E+3, \"text\": \"caf\\u00e9 \xC3\xA9 \\ud83d\\ude00 \xF0\x9F\x98\x80 "
        "\xE5\xB0\x8F \\\" \\\\ \\/ \\n\"}";
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"rows\":[");
    for (int i = 0; i < 400; i++)
        buf_printf(&b, "%s%s", i ? "," : "", row);
    buf_puts(&b, "]}");
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {3000, 10000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    const char *s = out_of(r);
    CHECK_EQ(shape_format_of(s, strlen(s)), SHAPE_JSON);
    /* compact structure, every value as printed */
    static const char compact[] =
        "{\"big\":12345678901234567890,\"money\":1.10,\"huge\":1e400,\"neg\":-0,"
        "\"exp\":2.50E+3,\"text\":\"caf\\u00e9 \xC3\xA9 \\ud83d\\ude00 \xF0\x9F\x98\x80 "
        "\xE5\xB0\x8F \\\" \\\\ \\/ \\n\"}";
    CHECK(strncmp(s, "{\"rows\":[", 9) == 0);
    CHECK(strncmp(s + 9, compact, sizeof compact - 1) == 0);
    size_t kept = 0;
    for (const char *p = s; (p = strstr(p, compact)); p++)
        kept++;
    CHECK(kept > 3 && kept < 400);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(long_strings_cut_inside)
{
    /* one string, a top-level value: cut head and tail, still a JSON string,
     * escapes and surrogate pairs never split */
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "\"");
    for (int i = 0; i < 20000; i++)
        buf_puts(&b, i % 2 ? "\\ud83d\\ude00\\n" : "ab\\u00e9\\\"");
    buf_puts(&b, "\"");
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {1000, 4000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    CHECK_STR(fmt_of(r), "json");
    json_t *v = json_loads(out_of(r), JSON_DECODE_ANY, NULL);
    CHECK(json_is_string(v));
    CHECK(strstr(json_string_value(v), "characters omitted"));
    json_decref(v);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(invalid_json_is_text)
{
    static const char *const bad[][2] = {{"{\"a\": 1, \"a\": 2, \"pad\": \"", "\"}"},
                                         {"{\"a\": NaN, \"pad\": \"", "\"}"},
                                         {"[\"", "\",]"},
                                         {"{\"pad\": \"", "\"} trailing"}};
    char *pad = xmalloc(60001);
    memset(pad, 'x', 60000);
    for (int i = 0; i < 60000; i += 7)
        pad[i] = ' ';
    pad[60000] = '\0';
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        struct buf b;
        buf_init(&b, 0);
        buf_puts(&b, bad[k][0]);
        buf_puts(&b, pad);
        buf_puts(&b, bad[k][1]);
        json_t *r = script_like(b.p, b.len);
        struct shape_budget bu = {2000, 8000};
        CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
        CHECK(within(r, &bu));
        CHECK_STR(fmt_of(r), "text");
        const char *s = out_of(r);
        CHECK(!strncmp(s, b.p, 8));
        CHECK(strstr(s, "characters omitted: narrow the call"));
        json_decref(r);
        buf_cleanup(&b);
    }
    free(pad);
}

TEST(fitting_json_unchanged)
{
    static const char out[] = "{\n  \"total\": 2,\n  \"big\": 12345678901234567890,\n  \"x\": "
                              "1e400,\n  \"data\": [1.10, -0]\n}\n";
    json_t *r = script_like(out, sizeof out - 1);
    struct shape_budget bu = {7500, 48000};
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 0);
    CHECK_STR(out_of(r), out);
    CHECK_STR(fmt_of(r), "json");
    CHECK(!json_object_get(r, "_truncated"));
    json_decref(r);
}

TEST(compact_when_that_fits)
{
    /* pretty-printed JSON over the budget that fits once compact: whole */
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "[\n");
    for (int i = 0; i < 200; i++)
        buf_printf(&b, "%s                {\n                    \"id\": %d\n                }",
                   i ? ",\n" : "", i);
    buf_puts(&b, "\n]\n");
    json_t *r = script_like(b.p, b.len);
    struct shape_budget bu = {0, 4000};
    CHECK(b.len > 8000);
    CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
    CHECK(within(r, &bu));
    json_t *a = json_loads(out_of(r), 0, NULL);
    CHECK_EQ(json_array_size(a), 200);
    json_decref(a);
    json_decref(r);
    buf_cleanup(&b);
}

TEST(huge_number_falls_back_to_text)
{
    char *num = xmalloc(200001);
    memset(num, '7', 200000);
    num[200000] = '\0';
    json_t *r = script_like(num, 200000);
    struct shape_budget bu = {500, 2000};
    CHECK(shape_json_texts(r, &bu, NULL, run_texts, 2) >= 1);
    CHECK(within(r, &bu));
    CHECK_STR(fmt_of(r), "text");
    json_decref(r);
    free(num);
}

TEST(tiny_budgets_stay_json)
{
    size_t n;
    char *text = orders(50, &n);
    for (size_t c = 200; c < 3000; c += 97) {
        json_t *r = script_like(text, n);
        struct shape_budget bu = {0, c};
        int rc = shape_json_texts(r, &bu, NULL, run_texts, 2);
        CHECK(rc >= 1);
        const char *s = out_of(r);
        CHECK_EQ(shape_format_of(s, strlen(s)), SHAPE_JSON);
        CHECK_STR(fmt_of(r), "json");
        if (rc == 1)
            CHECK(within(r, &bu));
        json_decref(r);
    }
    free(text);
}

/* A measurement, not a check: how long 5 MB of JSON stdout takes. */
TEST(performance_5mb_json)
{
    size_t n;
    char *text = orders(12500, &n);
    struct shape_budget bu = shape_budget_of(30000, 0.25, 48000);
    /* the first run pays for fresh pages, later ones reuse them; CPU time
     * is what a busy machine does not blur */
    for (int k = 0; k < 3; k++) {
        json_t *r = script_like(text, n);
        struct timespec c0, c1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        double t0 = now_ms();
        CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
        double ms = now_ms() - t0;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        printf("# shaping %.1f MB of JSON stdout took %.1f ms (%.1f ms of CPU)\n",
               (double)n / 1e6, ms,
               (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6);
        CHECK(within(r, &bu));
        json_decref(r);
    }
    free(text);
}

/* An output that already has a _truncated member, however its key is
 * spelled, gets no second one: two equal keys would make it text. */
TEST(own_truncated_member_escaped)
{
    static const char *const keys[] = {"_truncated", "\\u005ftruncated", "_trunc\\u0061ted"};
    for (size_t k = 0; k < 3; k++) {
        struct buf b;
        buf_init(&b, 0);
        buf_printf(&b, "{\"%s\": \"mine\", \"rows\": [", keys[k]);
        for (int i = 0; i < 5000; i++)
            buf_printf(&b, "%s%d", i ? ", " : "", i);
        buf_puts(&b, "]}");
        json_t *r = script_like(b.p, b.len);
        struct shape_budget bu = {1500, 0};
        CHECK_EQ(shape_json_texts(r, &bu, NULL, run_texts, 2), 1);
        CHECK(within(r, &bu));
        CHECK_STR(fmt_of(r), "json");
        const char *o = out_of(r);
        CHECK_EQ(shape_format_of(o, strlen(o)), SHAPE_JSON);
        json_t *v = json_loads(o, JSON_REJECT_DUPLICATES, NULL);
        CHECK(v);
        CHECK_STR(json_string_value(json_object_get(v, "_truncated")), "mine");
        json_decref(v);
        json_decref(r);
        buf_cleanup(&b);
    }
}

int main(void)
{
    x_install_json_alloc();
    RUN(format_of);
    RUN(orders_500_at_30000_tokens);
    RUN(top_level_array);
    RUN(nested_envelopes);
    RUN(json_lines);
    RUN(numbers_and_unicode_exact);
    RUN(long_strings_cut_inside);
    RUN(invalid_json_is_text);
    RUN(fitting_json_unchanged);
    RUN(compact_when_that_fits);
    RUN(huge_number_falls_back_to_text);
    RUN(tiny_budgets_stay_json);
    RUN(own_truncated_member_escaped);
    RUN(performance_5mb_json);
    DONE();
}
