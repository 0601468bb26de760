/*
 * test_util.c - the byte loops that take the word-at-a-time fast path:
 * buf_json_escape against jansson's own escaping, and utf8_valid against a
 * byte-by-byte reference, for every alignment and every position of the
 * byte that matters.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>

#include "harness.h"
#include "util.h"

/* jansson's rendering of the string s[0..n), without the quotes. */
static char *jansson_escape(const char *s, size_t n)
{
    json_t *j = json_stringn_nocheck(s, n);
    char *d = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(j);
    size_t len = strlen(d);
    memmove(d, d + 1, len - 2);
    d[len - 2] = '\0';
    return d;
}

static int escape_matches(const char *s, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    buf_json_escape(&b, s, n);
    char *want = jansson_escape(s, n);
    int ok = b.len == strlen(want) && memcmp(b.p ? b.p : "", want, b.len) == 0;
    if (!ok)
        printf("# escape of %zu bytes: got \"%.*s\" want \"%s\"\n", n, (int)b.len,
               b.p ? b.p : "", want);
    free(want);
    buf_cleanup(&b);
    return ok;
}

TEST(escape_every_special_byte_at_every_position)
{
    /* every byte jansson escapes, and neighbours of the ranges, at each
     * offset of strings 0..40 long, so both the word loop and the tail see it */
    static const unsigned char special[] = {0x00, 0x01, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1B,
                                            0x1F, 0x20, '"',  '\\', '/',  0x7F, 0x21, 0x5B,
                                            0x5D, 0x23};
    char s[48];
    for (size_t n = 0; n <= 40; n++)
        for (size_t at = 0; at < (n ? n : 1); at++)
            for (size_t k = 0; k < sizeof special; k++) {
                memset(s, 'a', sizeof s);
                if (n)
                    s[at] = (char)special[k];
                CHECK(escape_matches(s, n));
            }
}

TEST(escape_utf8_passes_through)
{
    const char *t = "grüße, 日本語 and 😀 inside a longer line of text \"quoted\"\n";
    CHECK(escape_matches(t, strlen(t)));
    /* high bytes next to a control byte inside one word */
    const char u[] = "\xc3\xa9\x01\xc3\xa9\x1f\xe2\x80\xa8x";
    CHECK(escape_matches(u, sizeof u - 1));
}

TEST(escape_random_text)
{
    /* pseudo-random ASCII with a sprinkle of specials: a fixed seed, so a
     * failure is reproducible */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    char s[4096];
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(x % sizeof s);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            unsigned r = (unsigned)(x % 64);
            s[i] = r == 0 ? '"' : r == 1 ? '\\' : r == 2 ? '\n' : r == 3 ? (char)(x % 32)
                                                                         : (char)(0x20 + x % 95);
        }
        CHECK(escape_matches(s, n));
    }
}

/* The reference: one byte at a time, the same rules (no NUL, well-formed
 * UTF-8 as jansson accepts it). */
static int valid_ref(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    int ok = j != NULL && memchr(s, 0, n) == NULL;
    json_decref(j);
    return ok;
}

TEST(utf8_valid_matches_reference)
{
    static const char *const pieces[] = {"a", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
                                         "\x80", "\xc3", "\xed\xa0\x80", "\xc0\xaf",
                                         "\xf4\x90\x80\x80", "\0", "\x7f"};
    char s[64];
    /* a bad or multi-byte piece at every offset of a run of ASCII */
    for (size_t n = 0; n <= 40; n++)
        for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++)
            for (size_t at = 0; at <= n; at++) {
                memset(s, 'b', sizeof s);
                const char *pc = pieces[p];
                size_t pl = *pc ? strlen(pc) : 1;
                if (at + pl > n)
                    continue;
                memcpy(s + at, pc, pl);
                int got = utf8_valid(s, n), want = valid_ref(s, n);
                if (got != want)
                    printf("# n=%zu piece=%zu at=%zu: got %d want %d\n", n, p, at, got, want);
                CHECK_EQ(got, want);
            }
}

TEST(random_hex)
{
    char a[65], b[65];
    memset(a, 'Z', sizeof a);
    CHECK_EQ(x_random_hex(a, 32), 0);
    CHECK_EQ(strlen(a), 64);
    for (size_t i = 0; i < 64; i++)
        CHECK((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
    CHECK_EQ(x_random_hex(b, 32), 0);
    CHECK(strcmp(a, b) != 0);   /* 256 bits: equal only if the generator is broken */
    /* every nibble value turns up over 64 draws of 32 bytes: the upper half
     * of out is read before it is overwritten, not re-encoded */
    int seen[16] = {0};
    for (int k = 0; k < 64; k++) {
        CHECK_EQ(x_random_hex(a, 32), 0);
        for (size_t i = 0; i < 64; i++)
            seen[a[i] <= '9' ? a[i] - '0' : a[i] - 'a' + 10]++;
    }
    for (int v = 0; v < 16; v++)
        CHECK(seen[v] > 4096 / 16 / 2);     /* expected 256 each */
    CHECK_EQ(x_random_hex(a, 0), 0);
    CHECK_STR(a, "");
    unsigned char r[4096] = {0};
    CHECK_EQ(x_random(r, sizeof r), 0);
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof r; i++)
        zeros += r[i] == 0;
    CHECK(zeros < 64);                      /* expected 16 */
}

/* buf_text_escape of s[0..n) as a string. */
static char *text_esc(const char *s, size_t n)
{
    struct buf b;
    buf_init(&b, 0);
    if (buf_text_escape(&b, s, n) < 0) {
        buf_cleanup(&b);
        return NULL;
    }
    return b.p ? b.p : xstrdup("");
}

TEST(text_escape)
{
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } v[] = {
        {"plain text, UTF-8 too: caf\xc3\xa9 \xe2\x9c\x93", 0, "plain text, UTF-8 too: caf\xc3\xa9 \xe2\x9c\x93"},
        {"a\nb\rc\td", 0, "a\\nb\\rc\\td"},
        {"\x1b[2K\rinstalled evil: ok", 0, "\\x1B[2K\\rinstalled evil: ok"},
        {"\x1b]0;title\x07", 0, "\\x1B]0;title\\x07"},
        {"del\x7f", 0, "del\\x7F"},
        {"nul\0in", 6, "nul\\x00in"},
        {"c1 \xc2\x9b" "31m \xc2\x85", 0, "c1 \\u{009B}31m \\u{0085}"},
        {"bidi \xe2\x80\xae" "evil \xe2\x81\xa6x\xe2\x81\xa9", 0, "bidi \\u{202E}evil \\u{2066}x\\u{2069}"},
        {"sep \xe2\x80\xa8 \xe2\x80\xa9 \xe2\x80\x8f", 0, "sep \\u{2028} \\u{2029} \\u{200F}"},
        {"bad \xff \xc3 \xed\xa0\x80 \xc0\xaf", 0, "bad \\xFF \\xC3 \\xED\\xA0\\x80 \\xC0\\xAF"},
        {"\x9b" "raw c1 byte", 0, "\\x9Braw c1 byte"},
        {"backslash \\ stays", 0, "backslash \\ stays"},
        {"", 0, ""},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char *got = text_esc(v[i].in, v[i].n ? v[i].n : strlen(v[i].in));
        int same = got && !strcmp(got, v[i].out);
        if (!same)
            H_FAIL("case %zu: want \"%s\", got \"%s\"", i, v[i].out, got ? got : "(null)");
        free(got);
        if (!same)
            return;
    }
    /* every byte value alone: the result is printable ASCII or passed-through UTF-8 */
    for (int c = 0; c < 256; c++) {
        char in = (char)c;
        char *got = text_esc(&in, 1);
        CHECK(got != NULL);
        for (const unsigned char *p = (const unsigned char *)got; *p; p++)
            if (*p < 0x20 || *p >= 0x7f) {
                H_FAIL("byte 0x%02x escaped to a raw 0x%02x", c, *p);
                free(got);
                return;
            }
        free(got);
    }
    /* a capped buffer is left as it was */
    struct buf b;
    buf_init(&b, 8);
    CHECK_EQ(buf_append(&b, "ok", 2), 0);
    CHECK_EQ(buf_text_escape(&b, "\x1b\x1b\x1b", 3), -ENOSPC);
    CHECK_EQ(b.len, 2);
    CHECK_STR(b.p, "ok");
    buf_cleanup(&b);
}

TEST(fprintf_text_keeps_only_the_format_newline)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    CHECK(f != NULL);
    x_fprintf_text(f, "installed %s: %s\n", "hz\ninstalled evil", "ok\x1b[0m");
    x_fprintf_text(f, "%s", "tail\n");           /* not the format's: escaped */
    x_fprintf_text(f, "[%s]\n", "");
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[2000] = '\n';
    x_fprintf_text(f, "%s\n", big);                /* past the stack buffer */
    fclose(f);
    const char *want = "installed hz\\ninstalled evil: ok\\x1B[0m\ntail\\n[]\n";
    CHECK(len > strlen(want));
    CHECK_EQ(memcmp(mem, want, strlen(want)), 0);
    const char *rest = mem + strlen(want);
    CHECK_EQ(strlen(rest), 2000 + 2 + 998 + 1);
    CHECK_EQ(memcmp(rest + 2000, "\\na", 3), 0);
    CHECK_EQ(rest[strlen(rest) - 1], '\n');
    free(mem);
}


static void key_of(const char *addr, char *out, size_t n)
{
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1)
        x_peer_key((struct sockaddr *)&s4, out, n);
    else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1)
        x_peer_key((struct sockaddr *)&s6, out, n);
    else
        x_peer_key(NULL, out, n);
}

/* One IPv6 host holds a /64: its addresses are one peer, or each of them
 * would get its own task records. */
TEST(peer_key_one_per_ipv4_address_and_ipv6_64)
{
    char a[80], b[80];
    key_of("2001:db8:1:2::1", a, sizeof a);
    key_of("2001:db8:1:2:ffff:1234:5678:9abc", b, sizeof b);
    CHECK_STR(a, "addr:2001:db8:1:2::/64");
    CHECK_STR(b, a);
    key_of("2001:db8:1:3::1", b, sizeof b);
    CHECK_STR(b, "addr:2001:db8:1:3::/64");
    key_of("::1", a, sizeof a);
    CHECK_STR(a, "addr:::/64");
    /* an IPv4 client of a dual-stack listener is its IPv4 address, not
     * ::ffff:0:0/64, which every IPv4 client would share */
    key_of("::ffff:192.0.2.7", a, sizeof a);
    CHECK_STR(a, "addr:192.0.2.7");
    key_of("::ffff:192.0.2.8", b, sizeof b);
    CHECK_STR(b, "addr:192.0.2.8");
    key_of("192.0.2.7", b, sizeof b);
    CHECK_STR(b, "addr:192.0.2.7");
    key_of("nothing", a, sizeof a);
    CHECK_STR(a, "addr:unknown");
}

int main(void)
{
    RUN(escape_every_special_byte_at_every_position);
    RUN(escape_utf8_passes_through);
    RUN(escape_random_text);
    RUN(utf8_valid_matches_reference);
    RUN(random_hex);
    RUN(text_escape);
    RUN(fprintf_text_keeps_only_the_format_newline);
    RUN(peer_key_one_per_ipv4_address_and_ipv6_64);
    DONE();
}
