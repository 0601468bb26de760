/*
 * test_json.c - the hot-path parser and serialiser (server/json.c), each
 * checked against jansson, the reference: same accept/reject, same trees
 * (types, key order), same error reports, same bytes.
 */
#include "harness.h"
#include "json_same.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>

#define SERVER_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6))

/* ---- helpers -------------------------------------------------------------- */

/* jf_parse and json_loadb on the same input: 1 accepted, 0 rejected (with
 * the same error report), -1 they disagree (reason printed). */
static int compare_parse(const char *s, size_t n, size_t flags)
{
    json_error_t e1, e2;
    json_t *ref = json_loadb(s, n, flags, &e1);
    json_t *got = jf_parse(s, n, flags, &e2);
    int r;
    if (!ref != !got) {
        printf("# %.*s (flags %zu): jansson %s, jf_parse %s\n", (int)n, s, flags,
               ref ? "accepts" : "rejects", got ? "accepts" : "rejects");
        r = -1;
    } else if (!ref) {
        r = strcmp(e1.text, e2.text) == 0 && e1.line == e2.line && e1.column == e2.column &&
                    e1.position == e2.position && strcmp(e1.source, e2.source) == 0
                ? 0
                : -1;
        if (r < 0)
            printf("# %.*s: errors differ: \"%s\" vs \"%s\"\n", (int)n, s, e1.text, e2.text);
    } else {
        r = json_equal(ref, got) && json_same(ref, got) && strcmp(e1.source, e2.source) == 0 &&
                    e1.line == e2.line && e2.text[0] == '\0'
                ? 1
                : -1;
        if (r < 0)
            printf("# %.*s: trees differ\n", (int)n, s);
    }
    json_decref(ref);
    json_decref(got);
    return r;
}

/* jf_dumps against json_dumps: 1 same bytes, 0 both fail, -1 differ. */
static int compare_dump(const json_t *v)
{
    char *ref = json_dumps(v, DUMP_FLAGS);
    size_t n = 0;
    char *got = jf_dumps(v, &n);
    int r = !ref && !got ? 0 : ref && got && n == strlen(ref) && memcmp(ref, got, n) == 0 ? 1 : -1;
    if (r < 0)
        printf("# json_dumps %s\n# jf_dumps   %s\n", ref ? ref : "(null)", got ? got : "(null)");
    free(ref);
    free(got);
    return r;
}

/* Counts allocations, to tell the fast path from jansson's lexer. */
static size_t n_alloc;
static void *count_malloc(size_t n)
{
    n_alloc++;
    return malloc(n);
}

/* ---- parse ---------------------------------------------------------------- */

struct pcase {
    const char *in;
    size_t len;         /* 0: strlen */
    int ok_server;      /* accepted with the server's flags */
    int ok_zero;        /* accepted with flags 0 */
};

static const struct pcase cases[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"list_skills\","
     "\"arguments\":{\"query\":\"csv\"}}}", 0, 1, 1},
    {"{}", 0, 1, 1},
    {"[]", 0, 1, 1},
    {" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n\t\r ", 0, 1, 1},
    {"[true,false,null,0,-0,-1,123456789012345678,-123456789012345678]", 0, 1, 1},
    {"[1.5,-0.0,1e300,1E-7,2.5e+3,0.1]", 0, 1, 1},
    {"[9223372036854775807,-9223372036854775808,1234567890123456789]", 0, 1, 1},
    {"[9223372036854775808]", 0, 0, 0},
    {"[-9223372036854775809]", 0, 0, 0},
    {"[1e400]", 0, 0, 0},
    {"\"top\"", 0, 1, 0},
    {"42", 0, 1, 0},
    {"true", 0, 1, 0},
    {"null ", 0, 1, 0},
    {"", 0, 0, 0},
    {"   ", 0, 0, 0},
    {"{\"a\":1} x", 0, 0, 0},
    {"{\"a\":1}{}", 0, 0, 0},
    {"{\"a\":1,}", 0, 0, 0},
    {"[1,]", 0, 0, 0},
    {"[,1]", 0, 0, 0},
    {"{\"a\" 1}", 0, 0, 0},
    {"{a:1}", 0, 0, 0},
    {"{\"a\":01}", 0, 0, 0},
    {"[-]", 0, 0, 0},
    {"[+1]", 0, 0, 0},
    {"[1.]", 0, 0, 0},
    {"[.5]", 0, 0, 0},
    {"[truex]", 0, 0, 0},
    {"[tru]", 0, 0, 0},
    {"[nul", 0, 0, 0},
    {"[\"abc", 0, 0, 0},
    {"[\"a\tb\"]", 0, 0, 0},
    {"[\"a\x01\"]", 0, 0, 0},
    {"[\"\\x\"]", 0, 0, 0},
    {"[\"\\u12G4\"]", 0, 0, 0},
    {"[\"\\u12\"]", 0, 0, 0},
    {"[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", 0, 1, 1},
    {"[\"\\u00e9\\u65E5\\ud83d\\ude00\\u001f\\u007f\"]", 0, 1, 1},
    {"[\"\\ud800\"]", 0, 0, 0},
    {"[\"\\ud800\\u0041\"]", 0, 0, 0},
    {"[\"\\udc00\"]", 0, 0, 0},
    {"[\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"]", 0, 1, 1},
    {"[\"\xff\"]", 0, 0, 0},
    {"[\"\xc0\x80\"]", 0, 0, 0},
    {"[\"\xed\xa0\x80\"]", 0, 0, 0},
    {"[\"\xf4\x90\x80\x80\"]", 0, 0, 0},
    {"[\"\xe6\x97\"]", 0, 0, 0},
    {"\xef\xbb\xbf{}", 0, 0, 0},
    {"{\"a\":1,\"a\":2}", 0, 0, 1},
    {"{\"a\":{\"b\":1,\"b\":1}}", 0, 0, 1},
    {"{\"\\u0061\":1,\"a\":2}", 0, 0, 1},
    {"[\"a\\u0000b\"]", 0, 1, 0},
    {"{\"k\\u0000\":1}", 0, 0, 0},
    {"[\"a\0b\"]", 7, 0, 0},
    {"[1]\0", 4, 0, 0},
    {"{\"a\":\"x\"}\f", 0, 0, 0},
    {"[\"\\u0000\"]", 0, 1, 0},
};

TEST(table_matches_jansson)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct pcase *c = &cases[i];
        size_t n = c->len ? c->len : strlen(c->in);
        int a = compare_parse(c->in, n, SERVER_FLAGS);
        int z = compare_parse(c->in, n, 0);
        if (a != c->ok_server || z != c->ok_zero) {
            H_FAIL("case %zu \"%.*s\": server flags %d (want %d), flags 0 %d (want %d)", i, (int)n,
                   c->in, a, c->ok_server, z, c->ok_zero);
            return;
        }
        CHECK(compare_parse(c->in, n, JSON_DECODE_ANY) >= 0);
        CHECK(compare_parse(c->in, n, JSON_DECODE_ANY | JSON_ALLOW_NUL) >= 0);
        CHECK(compare_parse(c->in, n, JSON_REJECT_DUPLICATES) >= 0);
        /* flags the fast path does not know go straight to jansson */
        CHECK(compare_parse(c->in, n, SERVER_FLAGS | JSON_DECODE_INT_AS_REAL) >= 0);
        CHECK(compare_parse(c->in, n, SERVER_FLAGS | JSON_DISABLE_EOF_CHECK) >= 0);
    }
}

TEST(every_prefix_matches_jansson)
{
    /* every cut of a realistic request, so each "ends too early" path */
    const char *req = "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":"
                      "\"read_skill_file\",\"arguments\":{\"name\":\"a\\u00e9\\n\",\"path\":"
                      "\"x\xc3\xa9\",\"list\":[true,false,null,-7,[]],\"o\":{}}}}";
    size_t n = strlen(req);
    for (size_t k = 0; k <= n; k++) {
        int r = compare_parse(req, k, SERVER_FLAGS);
        if (r != (k == n ? 1 : 0)) {
            H_FAIL("prefix %zu of %zu: %d", k, n, r);
            return;
        }
    }
}

TEST(key_order_is_document_order)
{
    const char *s = "{\"zeta\":1,\"alpha\":{\"y\":1,\"b\":2,\"x\":3},\"mid\\u0041\":3,\"\":4}";
    json_t *v = jf_parse(s, strlen(s), SERVER_FLAGS, NULL);
    CHECK(v);
    const char *want[] = {"zeta", "alpha", "midA", ""};
    size_t i = 0;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        CHECK(i < 4);
        CHECK_STR(k, want[i]);
        i++;
    }
    CHECK_EQ(i, 4);
    char *d = jf_dumps(v, NULL);
    CHECK_STR(d, "{\"zeta\":1,\"alpha\":{\"y\":1,\"b\":2,\"x\":3},\"midA\":3,\"\":4}");
    free(d);
    json_decref(v);
}

TEST(integer_and_real_typing)
{
    const char *s = "[1,-0,1.0,1e2,-5,0.5,123456789012345678,1234567890123456789]";
    json_t *v = jf_parse(s, strlen(s), SERVER_FLAGS, NULL);
    CHECK(v);
    const int real[] = {0, 0, 1, 1, 0, 1, 0, 0};
    for (size_t i = 0; i < 8; i++)
        CHECK_EQ(json_is_real(json_array_get(v, i)), real[i]);
    CHECK_EQ(json_integer_value(json_array_get(v, 6)), 123456789012345678LL);
    CHECK_EQ(json_integer_value(json_array_get(v, 7)), 1234567890123456789LL);
    CHECK_EQ(json_integer_value(json_array_get(v, 1)), 0);
    json_decref(v);
}

TEST(big_integers)
{
    json_error_t e;
    const char *max = "[9223372036854775807,-9223372036854775808]";
    json_t *v = jf_parse(max, strlen(max), SERVER_FLAGS, &e);
    CHECK(v);
    CHECK_EQ(json_integer_value(json_array_get(v, 0)), LLONG_MAX);
    CHECK_EQ(json_integer_value(json_array_get(v, 1)), LLONG_MIN);
    json_decref(v);
    CHECK(!jf_parse("[9223372036854775808]", 21, SERVER_FLAGS, &e));
    CHECK(strncmp(e.text, "too big integer", 15) == 0);
    CHECK(!jf_parse("[-9223372036854775809]", 22, SERVER_FLAGS, &e));
    CHECK(strncmp(e.text, "too big negative integer", 24) == 0);
}

TEST(nul_escapes)
{
    json_error_t e;
    const char *s = "[\"a\\u0000b\"]";
    json_t *v = jf_parse(s, strlen(s), SERVER_FLAGS, &e);
    CHECK(v);
    CHECK_EQ(json_string_length(json_array_get(v, 0)), 3);
    CHECK(memcmp(json_string_value(json_array_get(v, 0)), "a\0b", 3) == 0);
    char *d = jf_dumps(v, NULL);
    CHECK_STR(d, "[\"a\\u0000b\"]");
    free(d);
    json_decref(v);
    CHECK(!jf_parse(s, strlen(s), JSON_DECODE_ANY, &e));
    CHECK(strstr(e.text, "\\u0000 is not allowed without JSON_ALLOW_NUL"));
    const char *k = "{\"a\\u0000\":1}";
    CHECK(!jf_parse(k, strlen(k), SERVER_FLAGS, &e));
    CHECK(strstr(e.text, "NUL byte in object key not supported"));
}

TEST(duplicate_keys)
{
    json_error_t e;
    const char *s = "{\"a\":1,\"b\":2,\"a\":3}";
    CHECK(!jf_parse(s, strlen(s), SERVER_FLAGS, &e));
    CHECK(strstr(e.text, "duplicate object key"));
    json_t *v = jf_parse(s, strlen(s), 0, &e);
    CHECK(v);
    CHECK_EQ(json_object_size(v), 2);
    CHECK_EQ(json_integer_value(json_object_get(v, "a")), 3);
    char *d = jf_dumps(v, NULL);
    CHECK_STR(d, "{\"a\":3,\"b\":2}");
    free(d);
    json_decref(v);
}

static char *nested(size_t depth, int closed)
{
    char *s = malloc(2 * depth + 2);
    memset(s, '[', depth);
    if (closed)
        memset(s + depth, ']', depth);
    s[closed ? 2 * depth : depth] = '\0';
    return s;
}

TEST(deep_nesting)
{
    json_error_t e;
    /* 10,000 deep: jansson refuses it (its limit is 2048); the fast path
     * gives up long before and never recurses that far. */
    char *s = nested(10000, 1);
    CHECK(!jf_parse(s, strlen(s), SERVER_FLAGS, &e));
    CHECK(strstr(e.text, "maximum parsing depth"));
    CHECK_EQ(compare_parse(s, strlen(s), SERVER_FLAGS), 0);
    free(s);
    s = nested(10000, 0);
    CHECK_EQ(compare_parse(s, strlen(s), SERVER_FLAGS), 0);
    free(s);
    /* within jansson's limit but beyond the fast path's: accepted */
    s = nested(1000, 1);
    json_t *v = jf_parse(s, strlen(s), SERVER_FLAGS, &e);
    CHECK(v);
    CHECK_EQ(compare_parse(s, strlen(s), SERVER_FLAGS), 1);
    char *d = jf_dumps(v, NULL);
    CHECK(d && strcmp(d, s) == 0);
    free(d);
    json_decref(v);
    free(s);
    for (size_t k = 60; k < 70; k++) {
        s = nested(k, 1);
        CHECK_EQ(compare_parse(s, strlen(s), 0), 1);
        free(s);
    }
}

TEST(fast_path_is_taken)
{
    /* A long string makes jansson's lexer grow its buffer many times; the
     * fast path allocates the string once. A real goes to jansson: then
     * jf_parse costs at least what json_loadb does. */
    char s[2100];
    memcpy(s, "{\"a\":\"", 6);
    memset(s + 6, 'x', 2000);
    memcpy(s + 2006, "\"}", 3);
    json_set_alloc_funcs(count_malloc, free);
    n_alloc = 0;
    json_t *v = json_loadb(s, strlen(s), SERVER_FLAGS, NULL);
    size_t ref = n_alloc;
    json_decref(v);
    n_alloc = 0;
    v = jf_parse(s, strlen(s), SERVER_FLAGS, NULL);
    size_t fast = n_alloc;
    json_decref(v);
    memcpy(s + 2006, "\",\"r\":1.5}", 11);
    n_alloc = 0;
    v = json_loadb(s, strlen(s), SERVER_FLAGS, NULL);
    size_t ref2 = n_alloc;
    json_decref(v);
    n_alloc = 0;
    v = jf_parse(s, strlen(s), SERVER_FLAGS, NULL);
    size_t slow = n_alloc;
    json_decref(v);
    x_install_json_alloc();
    CHECK(fast + 4 < ref);
    CHECK(slow > ref2);
}

/* ---- dump ----------------------------------------------------------------- */

TEST(dump_every_type)
{
    json_t *v = json_pack("{s:n, s:b, s:b, s:[I,I,I,I,I], s:[f,f,f,f,f,f,f], s:s, s:{}, s:[], "
                          "s:{s:[{s:s}]}}",
                          "null", "t", 1, "f", 0, "ints", (json_int_t)0, (json_int_t)-1,
                          (json_int_t)LLONG_MIN, (json_int_t)LLONG_MAX, (json_int_t)1234567,
                          "reals", 0.1, 1e300, -0.0, 3.0, 1.5e-7, 123456789.0, -2.5, "str",
                          "q\" b\\ s/ del\x7f tab\t nl\n cr\r bs\b ff\f \x01\x1f caf\xc3\xa9 "
                          "\xf0\x9f\x98\x80",
                          "o", "a", "n\"e\\s\ted", "k\x01", "deep", "v");
    CHECK(v);
    CHECK_EQ(compare_dump(v), 1);
    /* the server's own flags (no JSON_ENCODE_ANY) give the same for an object */
    char *ref = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
    char *got = jf_dumps(v, NULL);
    CHECK_STR(got, ref);
    CHECK(strstr(got, "tab\\t nl\\n cr\\r bs\\b ff\\f \\u0001\\u001F caf"));
    free(ref);
    free(got);
    json_decref(v);
    json_t *nul = json_stringn("a\0b", 3);
    CHECK_EQ(compare_dump(nul), 1);
    json_decref(nul);
    json_t *scalars[] = {json_null(), json_true(), json_integer(-42), json_real(2.0),
                         json_string(""), json_array(), json_object()};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        CHECK_EQ(compare_dump(scalars[i]), 1);
        json_decref(scalars[i]);
    }
}

TEST(dump_every_byte_at_every_offset)
{
    /* each byte value at each place of a 16-byte string: the 8-byte scan
     * and the byte-wise tail agree with jansson, escapes and failures alike */
    char s[17];
    for (int c = 1; c < 256; c++) {
        for (size_t pos = 0; pos < 16; pos++) {
            memset(s, 'a', 16);
            s[pos] = (char)c;
            json_t *v = json_stringn_nocheck(s, 16);
            int r = compare_dump(v);
            json_decref(v);
            if (r < 0 || (c < 0x80) != (r == 1)) {
                H_FAIL("byte 0x%02x at %zu: %d", c, pos, r);
                return;
            }
        }
    }
}

TEST(escape_leaves_the_buffer_on_failure)
{
    /* buf_json_escape's bytes are checked against jansson in test_util;
     * here: a failure leaves what was there */
    struct buf b;
    buf_init(&b, 16);
    buf_puts(&b, "ab");
    CHECK_EQ(buf_json_escape(&b, "0123\n4567890123456", 19), -ENOSPC);
    CHECK_MEM(b.p, b.len, "ab");
    CHECK_EQ(buf_json_escape(&b, "\"\x01", 2), 0);
    CHECK_MEM(b.p, b.len, "ab\\\"\\u0001");
    buf_cleanup(&b);
    buf_init(&b, 0);
    buf_puts(&b, "ab");
    CHECK_EQ(buf_json_escape_utf8(&b, "x\n\xc3(", 4), -EILSEQ);
    CHECK_MEM(b.p, b.len, "ab");
    CHECK_EQ(buf_json_escape_utf8(&b, "\xc3\xa9\0", 3), 0);
    CHECK_MEM(b.p, b.len, "ab\xc3\xa9\\u0000");
    buf_cleanup(&b);
}

TEST(dump_large_string)
{
    size_t n = 20000;
    char *s = malloc(n);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + i % 26);
    s[100] = '"';
    s[5001] = '\n';
    s[9999] = '\\';
    memcpy(s + 15000, "\xc3\xa9\xe6\x97\xa5", 5);
    s[n - 1] = '\x1f';
    json_t *v = json_pack("{s:s%}", "text", s, n);
    CHECK(v);
    CHECK_EQ(compare_dump(v), 1);
    json_decref(v);
    free(s);
}

TEST(dump_failure_leaves_buffer)
{
    json_t *v = json_pack("{s:i, s:o}", "a", 1, "bad", json_stringn_nocheck("x\xff", 2));
    CHECK(v);
    CHECK_EQ(compare_dump(v), 0);
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "keep");
    CHECK(jf_dump(&b, v) < 0);
    CHECK_MEM(b.p, b.len, "keep");
    CHECK(jf_dump(&b, NULL) < 0);
    CHECK_MEM(b.p, b.len, "keep");
    buf_cleanup(&b);
    json_decref(v);
    /* a capped buffer that cannot take it all: -ENOSPC, unchanged */
    v = json_pack("{s:s}", "k", "0123456789012345678901234567890123456789");
    buf_init(&b, 16);
    buf_puts(&b, "ab");
    CHECK_EQ(jf_dump(&b, v), -ENOSPC);
    CHECK_MEM(b.p, b.len, "ab");
    buf_cleanup(&b);
    size_t len = 99;
    char *d = jf_dumps(v, &len);
    CHECK_EQ(len, strlen(d));
    CHECK_STR(d, "{\"k\":\"0123456789012345678901234567890123456789\"}");
    free(d);
    json_decref(v);
}

TEST(parse_then_dump_round_trip)
{
    const char *s = "{\"jsonrpc\":\"2.0\",\"id\":\"x\\/y\",\"result\":{\"text\":\"\\u00e9\\t\\\"\","
                    "\"n\":[1,-2,3.25,1e-10,true,null],\"e\":{}}}";
    json_t *v = jf_parse(s, strlen(s), SERVER_FLAGS, NULL);
    CHECK(v);
    CHECK_EQ(compare_dump(v), 1);
    char *d = jf_dumps(v, NULL);
    CHECK_STR(d, "{\"jsonrpc\":\"2.0\",\"id\":\"x/y\",\"result\":{\"text\":\"\xc3\xa9\\t\\\"\","
                 "\"n\":[1,-2,3.25,1e-10,true,null],\"e\":{}}}");
    free(d);
    json_decref(v);
}

int main(void)
{
    x_install_json_alloc();
    RUN(table_matches_jansson);
    RUN(every_prefix_matches_jansson);
    RUN(key_order_is_document_order);
    RUN(integer_and_real_typing);
    RUN(big_integers);
    RUN(nul_escapes);
    RUN(duplicate_keys);
    RUN(deep_nesting);
    RUN(fast_path_is_taken);
    RUN(dump_every_type);
    RUN(dump_every_byte_at_every_offset);
    RUN(escape_leaves_the_buffer_on_failure);
    RUN(dump_large_string);
    RUN(dump_failure_leaves_buffer);
    RUN(parse_then_dump_round_trip);
    DONE();
}
