/*
 * test_shape.c - the token estimate and result fitting (server/shape.c, shape_tokens.c).
 */
#include "harness.h"
#include "shape.h"
#include "util.h"

#include <jansson.h>

/* ---- helpers -------------------------------------------------------------- */

static const char english[] =
    "Small language models that run on a laptop have a context window of thirty or forty "
    "thousand tokens, and they read every token of a tool result before they can answer. A "
    "result that is larger than the window does not fail loudly: the client keeps the model "
    "busy prefilling text it will never use.\n";

/* 33 characters of common Chinese, 3 bytes each. */
static const char chinese[] = "小型语言模型在笔记本电脑上运行时上下文窗口只有三四万个词元而且在回";

static size_t dumped(json_t *v, size_t *tokens)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
    size_t n = strlen(s), c = shape_chars(s, n);
    if (tokens)
        *tokens = shape_tokens(s, n);
    free(s);
    return c;
}

static int fields_has(json_t *r, const char *path)
{
    json_t *f = json_object_get(json_object_get(r, "_truncated"), "fields");
    size_t i;
    json_t *v;
    json_array_foreach(f, i, v)
        if (strcmp(json_string_value(v), path) == 0)
            return 1;
    return 0;
}

/* n bytes of numbered lines "line 000001: ...\n". */
static char *lines_text(size_t n)
{
    char *s = xmalloc(n + 1);
    size_t at = 0, k = 0;
    while (at < n) {
        char l[80];
        int w = snprintf(l, sizeof l, "line %06zu: the quick brown fox jumps over the dog\n", ++k);
        size_t take = (size_t)w < n - at ? (size_t)w : n - at;
        memcpy(s + at, l, take);
        at += take;
    }
    s[n] = '\0';
    return s;
}

static json_t *script_like(const char *out)
{
    return json_pack("{s:s, s:i, s:s, s:s, s:f, s:f, s:f, s:b, s:I, s:I, s:s, s:s}", "status",
                     "ok", "exit_code", 0, "stdout", out, "stderr", "", "duration_ms", 41.2,
                     "timeout", 60.0, "stall_timeout", 20.0, "truncated", 0, "stdout_bytes",
                     (json_int_t)strlen(out), "stderr_bytes", (json_int_t)0, "hint",
                     "The script succeeded; stdout is its answer.", "request_id",
                     "r-92b4a16d22bd73f7");
}

static int quiet;

static int within(json_t *r, const struct shape_budget *b)
{
    size_t t, c = dumped(r, &t);
    if (b->max_chars && c > b->max_chars) {
        printf("# %zu chars > %zu\n", c, b->max_chars);
        return 0;
    }
    if (b->max_tokens && t > b->max_tokens) {
        printf("# %zu tokens > %zu\n", t, b->max_tokens);
        return 0;
    }
    if (!quiet)
        printf("# used %zu/%zu chars, %zu/%zu tokens\n", c, b->max_chars, t, b->max_tokens);
    return 1;
}

/* ---- token estimate ------------------------------------------------------- */

TEST(tokens_english_at_least_quarter_chars)
{
    size_t n = strlen(english);
    CHECK(shape_tokens(english, n) >= n / 4);
    CHECK(shape_tokens(english, n) <= n / 2);
    CHECK_EQ(shape_tokens("", 0), 0);
    CHECK_EQ(shape_tokens("hello", 5), 2);
    CHECK_EQ(shape_tokens(" the cat", 8), 2);
}

TEST(tokens_cjk_at_least_one_per_char)
{
    size_t n = strlen(chinese);
    CHECK_EQ(shape_chars(chinese, n), 33);
    CHECK(shape_tokens(chinese, n) >= 33);
    /* kana and Hangul too */
    const char *ja = "ひらがなカタカナ", *ko = "한국어문서";
    CHECK(shape_tokens(ja, strlen(ja)) >= 8);
    CHECK(shape_tokens(ko, strlen(ko)) >= 5);
}

TEST(tokens_other_text)
{
    /* digits in threes, hex counted densely, invalid bytes one each */
    CHECK_EQ(shape_tokens("1234567", 7), 3);
    const char *hex = "5feceb66ffc86f38d952786c6d696c79";
    CHECK(shape_tokens(hex, strlen(hex)) >= 16);
    CHECK_EQ(shape_tokens("\xff\xfe", 2), 2);
    const char *emoji = "\xF0\x9F\x9A\x80";     /* U+1F680 */
    CHECK(shape_tokens(emoji, 4) >= 2);
    CHECK_EQ(shape_chars(emoji, 4), 2);
    /* stray 4-byte lead bytes (invalid UTF-8) are one unit each: the count
     * never exceeds the bytes (found by fuzz_shape) */
    CHECK_EQ(shape_chars("\xff;", 2), 2);
    CHECK_EQ(shape_chars("\xf0", 1), 1);
    CHECK_EQ(shape_chars("\xf8\x80", 2), 1);
}

TEST(budget_of)
{
    struct shape_budget b = shape_budget_of(128000, 0.25, 48000);
    CHECK_EQ(b.max_tokens, 32000);
    CHECK_EQ(b.max_chars, 48000);
    b = shape_budget_of(30000, 0, 1000);
    CHECK_EQ(b.max_tokens, 0);
}

/* ---- shape_json ----------------------------------------------------------- */

TEST(under_budget_untouched)
{
    json_t *r = script_like("hello\n");
    json_t *copy = json_deep_copy(r);
    struct shape_budget b = {32000, 48000};
    CHECK_EQ(shape_json(r, &b, NULL), 0);
    CHECK(json_equal(r, copy));
    struct shape_budget none = {0, 0};
    CHECK_EQ(shape_json(r, &none, NULL), 0);
    CHECK(json_equal(r, copy));
    json_decref(r);
    json_decref(copy);
}

TEST(script_stdout_1mb)
{
    char *out = lines_text(1 << 20);
    json_t *r = script_like(out);
    struct shape_budget b = {8000, 24000};
    CHECK_EQ(shape_json(r, &b, "Pass --limit to the script to print less."), 1);
    CHECK(within(r, &b));
    CHECK_STR(json_string_value(json_object_get(r, "status")), "ok");
    CHECK(json_is_integer(json_object_get(r, "exit_code")));
    CHECK_STR(json_string_value(json_object_get(r, "hint")),
              "The script succeeded; stdout is its answer.");
    CHECK_STR(json_string_value(json_object_get(r, "request_id")), "r-92b4a16d22bd73f7");
    CHECK(json_is_string(json_object_get(r, "stderr")));
    const char *s = json_string_value(json_object_get(r, "stdout"));
    CHECK(s);
    CHECK(strncmp(s, "line 000001: the quick brown fox jumps over the dog\n", 52) == 0);
    CHECK(strstr(s, " characters omitted: narrow the call ...]\n"));
    CHECK(strstr(s, "\n[... "));
    /* the last line, whole */
    const char *last = strrchr(out, '\n');
    while (last > out && last[-1] != '\n')
        last--;
    CHECK(strstr(s, last) && strlen(strstr(s, last)) == strlen(last));
    CHECK(fields_has(r, "stdout"));
    json_t *tr = json_object_get(r, "_truncated");
    CHECK(json_integer_value(json_object_get(tr, "original_tokens")) > 200000);
    CHECK(json_integer_value(json_object_get(tr, "kept_tokens")) <= 8000);
    CHECK_STR(json_string_value(json_object_get(tr, "hint")),
              "Pass --limit to the script to print less.");
    json_decref(r);
    free(out);
}

TEST(list_5000_cards)
{
    json_t *skills = json_array();
    for (int i = 0; i < 5000; i++) {
        char name[32];
        snprintf(name, sizeof name, "skill-%04d", i);
        json_array_append_new(skills, json_pack("{s:s, s:s, s:s, s:[s], s:s}", "name", name,
                                                "qualified_name", name, "description",
                                                "Profile a CSV file: column types, null counts "
                                                "and the most common values.",
                                                "tags", "data", "version", "1.0.0"));
    }
    json_t *r = json_pack("{s:o, s:i, s:i, s:s}", "skills", skills, "total", 5000, "generation",
                          7, "next_cursor", "5000");
    struct shape_budget b = {4000, 12000};
    CHECK_EQ(shape_json(r, &b, "Call list_skills with a query or a smaller limit."), 1);
    CHECK(within(r, &b));
    CHECK_EQ(json_integer_value(json_object_get(r, "total")), 5000);
    CHECK_EQ(json_integer_value(json_object_get(r, "generation")), 7);
    json_t *kept = json_object_get(r, "skills");
    CHECK(json_array_size(kept) > 10);
    CHECK(json_array_size(kept) < 5000);
    /* from the start, whole */
    CHECK_STR(json_string_value(json_object_get(json_array_get(kept, 0), "name")), "skill-0000");
    CHECK_STR(json_string_value(json_object_get(json_array_get(kept, 1), "name")), "skill-0001");
    CHECK(json_is_array(json_object_get(json_array_get(kept, 0), "tags")));
    CHECK(fields_has(r, "skills"));
    json_decref(r);
}

TEST(markdown_keeps_headings)
{
    struct buf md;
    buf_init(&md, 0);
    buf_puts(&md, "Intro paragraph before any heading.\n\n");
    int nh = 0;
    for (int i = 0; i < 40; i++) {
        buf_printf(&md, "%s Section %d\n\n", i % 4 == 0 ? "#" : i % 4 == 1 ? "##" : "###", i);
        nh++;
        buf_puts(&md, "```sh\n# not a heading: a comment in a fence\n```\n");
        for (int k = 0; k < 60; k++)
            buf_printf(&md, "Body line %d of section %d says something useful.\n", k, i);
    }
    json_t *r = json_pack("{s:s, s:s, s:s, s:s%, s:[], s:[], s:[]}", "name", "big",
                          "qualified_name", "big", "description", "A big skill.", "content", md.p,
                          md.len, "sections", "scripts", "files");
    struct shape_budget b = {3000, 10000};
    CHECK_EQ(shape_json(r, &b, "Call load_skill with section."), 1);
    CHECK(within(r, &b));
    const char *c = json_string_value(json_object_get(r, "content"));
    CHECK(c);
    for (int i = 0; i < 40; i++) {
        char h[64];
        snprintf(h, sizeof h, "%s Section %d\n", i % 4 == 0 ? "#" : i % 4 == 1 ? "##" : "###", i);
        if (!strstr(c, h)) {
            printf("# heading %d missing\n", i);
            CHECK(0);
        }
    }
    CHECK(strstr(c, "Body line 0 of section 0"));
    CHECK(strstr(c, "characters omitted: narrow the call"));
    CHECK(fields_has(r, "content"));
    CHECK(json_is_array(json_object_get(r, "files")));
    buf_cleanup(&md);
    json_decref(r);
}

TEST(cjk_cut_on_character_boundaries)
{
    struct buf t;
    buf_init(&t, 0);
    for (int i = 0; i < 2000; i++)
        buf_puts(&t, chinese);          /* one long line, no newline to snap to */
    json_t *r = json_pack("{s:s, s:s%}", "name", "zh", "content", t.p, t.len);
    struct shape_budget b = {1000, 0};
    CHECK(shape_json(r, &b, NULL) == 1);
    CHECK(within(r, &b));
    const char *c = json_string_value(json_object_get(r, "content"));
    CHECK(utf8_valid(c, strlen(c)));
    CHECK(strncmp(c, chinese, 30) == 0);
    CHECK(strstr(c, "characters omitted"));
    buf_cleanup(&t);
    json_decref(r);
}

TEST(number_array_only)
{
    json_t *a = json_array();
    for (int i = 0; i < 100000; i++)
        json_array_append_new(a, json_integer(i * 7));
    json_t *r = json_pack("{s:o, s:i}", "values", a, "count", 100000);
    struct shape_budget b = {500, 2000};
    CHECK_EQ(shape_json(r, &b, NULL), 1);
    CHECK(within(r, &b));
    json_t *v = json_object_get(r, "values");
    CHECK(json_array_size(v) >= 1);
    CHECK_EQ(json_integer_value(json_array_get(v, 0)), 0);
    CHECK_EQ(json_integer_value(json_array_get(v, 1)), 7);
    CHECK_EQ(json_integer_value(json_object_get(r, "count")), 100000);
    CHECK(fields_has(r, "values"));
    json_decref(r);
}

TEST(tiny_budget_keeps_envelope)
{
    char *out = lines_text(100000);
    json_t *r = script_like(out);
    json_t *err = json_string(out);
    json_object_set_new(r, "stderr", err);
    struct shape_budget b = {0, 200};
    int rc = shape_json(r, &b, "Pass --limit.");
    CHECK(rc == 1 || rc == 2);
    char *s = json_dumps(r, JSON_COMPACT);
    json_error_t e;
    json_t *back = json_loads(s, 0, &e);
    CHECK(back);
    json_decref(back);
    const char *keys[] = {"status", "exit_code", "stdout", "stderr", "duration_ms", "timeout",
                          "stall_timeout", "truncated", "stdout_bytes", "stderr_bytes", "hint",
                          "request_id", "_truncated"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        CHECK(json_object_get(r, keys[i]));
    CHECK(json_is_string(json_object_get(r, "stdout")));
    CHECK(json_is_boolean(json_object_get(r, "truncated")));
    CHECK(strlen(s) < 1000);
    printf("# tiny budget: rc %d, %zu chars\n", rc, strlen(s));
    free(s);
    free(out);
    json_decref(r);
}

TEST(nested_largest_leaf)
{
    char *big = lines_text(200000);
    json_t *r = json_pack("{s:{s:s, s:{s:s, s:i}}, s:s, s:[i,i]}", "server", "name", "skill-mcp",
                          "index", "log", big, "skills", 8, "note", "small", "pair", 1, 2);
    struct shape_budget b = {2000, 6000};
    CHECK_EQ(shape_json(r, &b, NULL), 1);
    CHECK(within(r, &b));
    CHECK(fields_has(r, "server.index.log"));
    CHECK_STR(json_string_value(json_object_get(r, "note")), "small");
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(json_object_get(r, "server"),
                                                                "index"), "skills")), 8);
    CHECK_EQ(json_array_size(json_object_get(r, "pair")), 2);
    CHECK_STR(json_string_value(json_object_get(json_object_get(r, "server"), "name")),
              "skill-mcp");
    json_decref(r);
    free(big);
}

TEST(array_of_one_huge_element)
{
    char *big = lines_text(300000);
    json_t *r = json_pack("{s:[{s:s, s:s}], s:i}", "problems", "skill", "x", "message", big,
                          "count", 1);
    struct shape_budget b = {1500, 5000};
    CHECK_EQ(shape_json(r, &b, NULL), 1);
    CHECK(within(r, &b));
    json_t *p = json_object_get(r, "problems");
    CHECK_EQ(json_array_size(p), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(p, 0), "skill")), "x");
    CHECK(fields_has(r, "problems"));
    CHECK(fields_has(r, "problems[0].message"));
    json_decref(r);
    free(big);
}

TEST(performance_10mb)
{
    size_t n = 10u << 20;
    char *big = lines_text(n);
    json_t *r = script_like(big);
    free(big);
    struct shape_budget b = shape_budget_of(128000, 0.25, 48000);
    b.max_tokens /= 2;
    b.max_chars /= 2;
    double t0 = now_ms();
    CHECK_EQ(shape_json(r, &b, NULL), 1);
    double ms = now_ms() - t0;
    printf("# shaping a 10 MB stdout took %.1f ms\n", ms);
    CHECK(within(r, &b));
    json_decref(r);
}


/* A small deterministic generator of results: random nesting, strings of
 * ASCII, CJK, Markdown and escapes, arrays of everything. */
static unsigned long rng_state = 12345;

static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005UL + 1442695040888963407UL;
    return (unsigned)(rng_state >> 33) % n;
}

static json_t *gen_string(void)
{
    static const char *parts[] = {"hello world ", "\n\"quoted\"\t", "\n## Heading\n",
                                  "小型语言模型", "ｶﾀｶﾅ한국어 ", "5feceb66ffc86f38d9", "\n",
                                  "\xF0\x9F\x9A\x80 ", "café ", "{\"k\":[1,2]}"};
    struct buf b;
    buf_init(&b, 0);
    unsigned n = rnd(4) == 0 ? rnd(3000) : rnd(20);
    for (unsigned i = 0; i < n; i++)
        buf_puts(&b, parts[rnd(sizeof parts / sizeof *parts)]);
    json_t *v = json_stringn(b.p ? b.p : "", b.len);
    buf_cleanup(&b);
    return v;
}

static json_t *gen(int depth)
{
    switch (depth > 3 ? 3 + rnd(3) : rnd(6)) {
    case 0: {
        json_t *o = json_object();
        unsigned n = rnd(6);
        for (unsigned i = 0; i < n; i++) {
            char k[16];
            snprintf(k, sizeof k, "k%u", i);
            json_object_set_new(o, k, gen(depth + 1));
        }
        return o;
    }
    case 1:
    case 2: {
        json_t *a = json_array();
        unsigned n = depth <= 1 && rnd(4) == 0 ? rnd(400) : rnd(5);
        for (unsigned i = 0; i < n; i++)
            json_array_append_new(a, gen(depth + 1));
        return a;
    }
    case 3:
        return gen_string();
    case 4:
        return json_integer((json_int_t)rnd(1000000));
    default:
        return rnd(2) ? json_real(rnd(100000) / 7.0) : json_null();
    }
}

static int same_types(json_t *a, json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !same_types(v, w))
                return 0;
        }
    }
    return 1;
}

TEST(random_results)
{
    int reduced = 0, over = 0;
    quiet = 1;
    for (int i = 0; i < 300; i++) {
        json_t *r = json_object();
        unsigned n = 1 + rnd(6);
        for (unsigned k = 0; k < n; k++) {
            char key[16];
            snprintf(key, sizeof key, "m%u", k);
            json_object_set_new(r, key, gen(1));
        }
        json_t *orig = json_deep_copy(r);
        struct shape_budget b = {rnd(3) ? 50 + rnd(3000) : 0, rnd(3) ? 200 + rnd(9000) : 0};
        int rc = shape_json(r, &b, rnd(2) ? "narrow it" : NULL);
        char *s = json_dumps(r, JSON_COMPACT);
        json_error_t e;
        json_t *back = json_loads(s, 0, &e);
        free(s);
        CHECK(back);
        json_decref(back);
        CHECK(same_types(orig, r));
        if (rc == 0)
            CHECK(json_equal(orig, r));
        else
            CHECK(json_is_object(json_object_get(r, "_truncated")));
        if (rc == 1)
            CHECK(within(r, &b));
        reduced += rc != 0;
        over += rc == 2;
        json_decref(orig);
        json_decref(r);
    }
    quiet = 0;
    printf("# %d of 300 reduced, %d of them still over a tiny budget\n", reduced, over);
}

/* The prefix counts equal shape_tokens of every prefix, mid-character
 * ones included, for text of every kind the estimate tells apart and for
 * random mixes of it (short texts use the inline runs, long ones the heap). */
TEST(prefix_tokens_match_every_prefix)
{
    static const char *const pieces[] = {
        "the", "Quick", "HTTPServer", "ALLCAPS", "x", "a1b2c3d4e5f6g7h8i9", "deadbeef0123456789ab",
        "12345", "7", " ", "  ", "\t", "\n\n", "        \t", ".", "...", "-", "_", "@", "#", "'",
        "\"", "\\", "\\n", "\\\"", ",", ";", ":", "(", ")", "e.g.", "U.S.", "\xe2\x80\xa6",
        "\xe2\x80\x94", "\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "\xed\x95\x9c",
        "\xf0\x9f\x98\x80", "\xff", "\x80", "\xe4\xb8", "\x01", "base64/AbC+09==",
    };
    static const char *const fixed[] = {english, chinese, "", "a", "a1b2c3d4e5f6g7h8",
                                        "Use it: fast, simple \xe2\x80\x94 and safe!"};
    char buf[1400];
    size_t bad = 0;
    for (int k = 0; k < 406; k++) {
        size_t n = 0;
        if (k < 6) {
            n = strlen(fixed[k]);
            memcpy(buf, fixed[k], n);
        } else {
            size_t want = k < 200 ? 1 + rnd(120) : 400 + rnd(900);
            while (n < want) {
                const char *p = pieces[rnd(sizeof pieces / sizeof *pieces)];
                size_t l = strlen(p);
                if (n + l > sizeof buf)
                    break;
                memcpy(buf + n, p, l);
                n += l;
            }
        }
        struct shape_prefix sp;
        CHECK_EQ(shape_prefix_init(&sp, buf, n), shape_tokens(buf, n));
        for (size_t m = 0; m <= n; m++)
            if (shape_prefix_tokens(&sp, m) != shape_tokens(buf, m) && bad++ < 5)
                printf("# text %d, prefix %zu of %zu: %zu, not %zu\n", k, m, n,
                       shape_prefix_tokens(&sp, m), shape_tokens(buf, m));
        shape_prefix_free(&sp);
    }
    CHECK_EQ(bad, 0);
}

int main(void)
{
    x_install_json_alloc();
    RUN(tokens_english_at_least_quarter_chars);
    RUN(tokens_cjk_at_least_one_per_char);
    RUN(tokens_other_text);
    RUN(budget_of);
    RUN(under_budget_untouched);
    RUN(script_stdout_1mb);
    RUN(list_5000_cards);
    RUN(markdown_keeps_headings);
    RUN(cjk_cut_on_character_boundaries);
    RUN(number_array_only);
    RUN(tiny_budget_keeps_envelope);
    RUN(nested_largest_leaf);
    RUN(array_of_one_huge_element);
    RUN(random_results);
    RUN(prefix_tokens_match_every_prefix);
    RUN(performance_10mb);
    DONE();
}
