/*
 * test_util.c - the byte loops that take the word-at-a-time fast path:
 * buf_json_escape against jansson's own escaping, and utf8_valid against a
 * byte-by-byte reference, for every alignment and every position of the
 * byte that matters; then the primitives written once in util.c (UTF-8
 * decoding, validation and cuts, FNV-1a, hex, percent-encoding, ISO 8601
 * time, list pages and cursors), each at its edges.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

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

/* A fixed-seed generator: a failure is reproducible. */
static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Up to cap bytes of printable ASCII with quotes and backslashes; with high
 * also bytes from 0x80 (JSON text of any language), else newlines and
 * control bytes. Returns the length. */
static size_t random_text(uint64_t *x, char *s, size_t cap, int high)
{
    size_t n = (size_t)(*x % cap);
    for (size_t i = 0; i < n; i++) {
        unsigned r = (unsigned)(xorshift(x) % (high ? 16 : 64));
        if (r == 0 || r == 1)
            s[i] = r == 0 ? '"' : '\\';
        else if (high)
            s[i] = r == 2 ? (char)(0x80 + *x % 128) : (char)(0x20 + *x % 96);
        else
            s[i] = r == 2 ? '\n' : r == 3 ? (char)(*x % 32) : (char)(0x20 + *x % 95);
    }
    return n;
}

TEST(escape_random_text)
{
    /* pseudo-random ASCII with a sprinkle of specials: a fixed seed, so a
     * failure is reproducible */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    char s[4096];
    for (int round = 0; round < 200; round++) {
        size_t n = random_text(&x, s, sizeof s, 0);
        CHECK(escape_matches(s, n));
    }
}

/* buf_json_escape_text (compact JSON as a string's contents) gives what
 * buf_json_escape gives text without control bytes, and buf_json_text_escapes
 * counts exactly the bytes it adds: quotes, backslashes and their
 * neighbours at every offset of 0..40 bytes (the word loop and the tail),
 * then pseudo-random JSON-like text with UTF-8 and bytes >= 0x7F. */
static int text_escape_matches(const char *s, size_t n)
{
    struct buf want, got;
    buf_init(&want, 0);
    buf_init(&got, 0);
    buf_puts(&got, "x");    /* appends after what is there */
    /* a count too low only costs a reallocation: 0 must give the same bytes */
    struct buf low;
    buf_init(&low, 0);
    int low_ok = buf_json_escape_text(&low, s, n, 0) == 0;
    int ok = buf_json_escape(&want, s, n) == 0 &&
             buf_json_escape_text(&got, s, n, buf_json_text_escapes(s, n)) == 0 && low_ok && low.len == want.len && !memcmp(low.p ? low.p : "", want.p ? want.p : "", want.len) &&
             got.len == want.len + 1 && !memcmp(got.p + 1, want.p ? want.p : "", want.len) &&
             got.p[got.len] == '\0' && buf_json_text_escapes(s, n) == want.len - n;
    if (!ok)
        printf("# text escape of %zu bytes: got %zu, want %zu\n", n, got.len - 1, want.len);
    buf_cleanup(&want);
    buf_cleanup(&got);
    buf_cleanup(&low);
    return ok;
}

TEST(escape_json_text_like_the_general_escape)
{
    static const unsigned char special[] = {'"', '\\', '!', '#', '[', ']', 0x7F, 0x80, 0xA2,
                                            0xDC, 0x5C ^ 0x80, 0x22 ^ 0x80, ' '};
    char s[48];
    for (size_t n = 0; n <= 40; n++)
        for (size_t at = 0; at < (n ? n : 1); at++)
            for (size_t k = 0; k < sizeof special; k++) {
                memset(s, 'a', sizeof s);
                if (n) {
                    s[at] = (char)special[k];
                    s[n - 1 - at] = '"';    /* a second escape elsewhere in the word */
                }
                CHECK(text_escape_matches(s, n));
            }
    uint64_t x = 0xD1B54A32D192ED03ULL;
    char t[2048];
    for (int round = 0; round < 200; round++) {
        size_t n = random_text(&x, t, sizeof t, 1);
        CHECK(text_escape_matches(t, n));
    }
}

/* A count kept with a card that is wrong must cost bytes, never memory
 * safety: every count from none to past the true one gives the general
 * escape's bytes after what the buffer held, the undercounts growing it
 * midway (escapes at the start, the end and between); a bounded buffer
 * that the count says is too small is left as it was. */
TEST(escape_json_text_wrong_counts)
{
    static const char *const texts[] = {
        "\"", "\\", "{\"name\":\"a\\\\b\"}", "\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\",
        "{\"description\":\"ends in a backslash \\\\\"}",
        "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"x",
        "plain text with one \" in the middle of a longer run of words",
        NULL,   /* long: past the buffer's first capacity */
    };
    static char long_text[1500];
    for (size_t i = 0; i < sizeof long_text - 1; i++)
        long_text[i] = i % 3 == 0 ? '\\' : i % 7 == 0 ? '"' : 'a';
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        const char *s = texts[t] ? texts[t] : long_text;
        size_t n = strlen(s), exact = buf_json_text_escapes(s, n);
        struct buf want;
        buf_init(&want, 0);
        CHECK(buf_json_escape(&want, s, n) == 0);
        CHECK(exact == want.len - n);
        for (size_t count = 0; count <= exact + 3; count++) {
            struct buf got;
            buf_init(&got, 0);
            buf_puts(&got, "prefix");
            CHECK(buf_json_escape_text(&got, s, n, count) == 0);
            CHECK(got.len == 6 + want.len);
            CHECK(!memcmp(got.p, "prefix", 6) && !memcmp(got.p + 6, want.p, want.len));
            CHECK(got.p[got.len] == '\0');
            buf_cleanup(&got);
        }
        struct buf tight;
        buf_init(&tight, 2 + n);
        buf_puts(&tight, "p:");
        int rc = buf_json_escape_text(&tight, s, n, exact);
        CHECK(rc == -ENOSPC);
        CHECK(tight.len == 2 && !strcmp(tight.p, "p:"));
        rc = buf_json_escape_text(&tight, s, n, 0);
        CHECK(rc == -ENOSPC);
        CHECK(tight.len == 2 && !strcmp(tight.p, "p:"));
        buf_cleanup(&tight);
        buf_cleanup(&want);
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

/* ---- UTF-8 ------------------------------------------------------------------ */

/* Decodes exactly the k bytes at s, expecting length want (0: refused). */
static int dec(const char *s, size_t k, size_t want, uint32_t cpwant)
{
    uint32_t cp = 0xDEADBEEF;
    size_t got = utf8_decode(s, k, &cp);
    if (got != want || (want && cp != cpwant) || (!want && cp != 0xDEADBEEF)) {
        printf("# utf8_decode of %zu bytes: got %zu U+%04X, want %zu U+%04X\n", k, got,
               (unsigned)cp, want, (unsigned)cpwant);
        return 0;
    }
    return 1;
}

TEST(utf8_decode_edges)
{
    CHECK(dec("a", 1, 1, 'a'));
    CHECK(dec("", 1, 1, 0));                        /* NUL is U+0000 */
    CHECK(dec("a", 0, 0, 0));                       /* nothing to read */
    CHECK(dec("\x7f", 1, 1, 0x7F));
    CHECK(dec("\xc2\x80", 2, 2, 0x80));             /* each length's first and last */
    CHECK(dec("\xdf\xbf", 2, 2, 0x7FF));
    CHECK(dec("\xe0\xa0\x80", 3, 3, 0x800));
    CHECK(dec("\xef\xbf\xbf", 3, 3, 0xFFFF));
    CHECK(dec("\xf0\x90\x80\x80", 4, 4, 0x10000));
    CHECK(dec("\xf4\x8f\xbf\xbf", 4, 4, 0x10FFFF));
    CHECK(dec("\xed\x9f\xbf", 3, 3, 0xD7FF));       /* either side of the surrogates */
    CHECK(dec("\xee\x80\x80", 3, 3, 0xE000));
    /* overlong forms */
    CHECK(dec("\xc0\xaf", 2, 0, 0));
    CHECK(dec("\xc1\xbf", 2, 0, 0));
    CHECK(dec("\xe0\x80\xaf", 3, 0, 0));
    CHECK(dec("\xe0\x9f\xbf", 3, 0, 0));
    CHECK(dec("\xf0\x80\x80\xaf", 4, 0, 0));
    CHECK(dec("\xf0\x8f\xbf\xbf", 4, 0, 0));
    /* surrogates, alone and as a CESU-8 pair */
    CHECK(dec("\xed\xa0\x80", 3, 0, 0));
    CHECK(dec("\xed\xbf\xbf", 3, 0, 0));
    CHECK(dec("\xed\xa0\xbd\xed\xb8\x80", 6, 0, 0));
    /* above U+10FFFF, and lead bytes that never start anything */
    CHECK(dec("\xf4\x90\x80\x80", 4, 0, 0));
    CHECK(dec("\xf5\x80\x80\x80", 4, 0, 0));
    CHECK(dec("\xff", 1, 0, 0));
    CHECK(dec("\x80", 1, 0, 0));
    CHECK(dec("\xbf\xbf", 2, 0, 0));
    /* truncated: by n, and by a byte that is not a continuation */
    CHECK(dec("\xc3\xa9", 1, 0, 0));
    CHECK(dec("\xe6\x97\xa5", 2, 0, 0));
    CHECK(dec("\xf0\x9f\x98\x80", 3, 0, 0));
    CHECK(dec("\xc3(", 2, 0, 0));
    CHECK(dec("\xe6\x97(", 3, 0, 0));
    CHECK(dec("\xf0\x9f\x98(", 4, 0, 0));
    /* only its own bytes count: what follows is not read */
    CHECK(dec("\xc3\xa9\xff", 3, 2, 0xE9));
}

/* Every scalar value encodes and decodes to itself; every 1-, 2- and 3-byte
 * string decodes exactly when it is the encoding of what it decodes to. */
TEST(utf8_fold_pairs_and_leaves_the_rest)
{
    static const uint32_t pairs[][2] = {
        { 'A', 'a' }, { 'Z', 'z' }, { 'a', 'a' }, { '@', '@' }, { '[', '[' },
        { 0xC0, 0xE0 }, { 0xC9, 0xE9 }, { 0xDE, 0xFE }, { 0xD7, 0xD7 },   /* x sign stays */
        { 0xDF, 0xDF }, { 0xB5, 0xB5 },                 /* sharp s, micro: no pair */
        { 0x100, 0x101 }, { 0x101, 0x101 }, { 0x141, 0x142 }, { 0x139, 0x13A },
        { 0x17D, 0x17E }, { 0x178, 0xFF }, { 0x130, 0x130 }, { 0x131, 0x131 },
        { 0x152, 0x153 },
        { 0x391, 0x3B1 }, { 0x3A3, 0x3C3 }, { 0x3AB, 0x3CB }, { 0x3A2, 0x3A2 },
        { 0x401, 0x451 }, { 0x40F, 0x45F }, { 0x410, 0x430 }, { 0x42F, 0x44F },
        { 0xFF21, 'a' }, { 0xFF3A, 'z' }, { 0xFF41, 'a' }, { 0xFF10, '0' }, { 0xFF19, '9' },
        { 0xFF20, 0xFF20 }, { 0x65E5, 0x65E5 }, { 0x1F600, 0x1F600 }, { 0xFFFFFFFFu, 0xFFFFFFFFu },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (utf8_fold(pairs[i][0]) != pairs[i][1])
            printf("# utf8_fold(U+%04X) = U+%04X, want U+%04X\n", (unsigned)pairs[i][0],
                   (unsigned)utf8_fold(pairs[i][0]), (unsigned)pairs[i][1]);
        CHECK_EQ(utf8_fold(pairs[i][0]), pairs[i][1]);
    }
    /* a folded character is its own fold: both sides of a comparison meet */
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        uint32_t f = utf8_fold(cp);
        CHECK_EQ(utf8_fold(f), f);
    }
}

TEST(utf8_round_trip_and_every_short_string)
{
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        char u[4];
        uint32_t back = 0;
        size_t k = utf8_encode(cp, u);
        CHECK_EQ(k, cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);
        CHECK_EQ(utf8_decode(u, k, &back), k);
        CHECK_EQ(back, cp);
        CHECK_EQ(utf8_decode(u, k - 1, &back), 0);
    }
    /* the reference: a 3-byte string starts with a character exactly when
     * it starts with the encoding of one */
    unsigned char *want = calloc(1u << 24, 1);
    CHECK(want);
    for (uint32_t cp = 0; cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        char u[4];
        size_t k = utf8_encode(cp, u);
        uint32_t base = 0;
        for (size_t i = 0; i < k; i++)
            base |= (uint32_t)(unsigned char)u[i] << (16 - 8 * i);
        for (uint32_t tail = 0; tail < 1u << (8 * (3 - k)); tail++)
            want[base | tail] = (unsigned char)k;
    }
    size_t wrong = 0;
    for (uint32_t v = 0; v < (1u << 24); v++) {
        unsigned char s[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8),
                              (unsigned char)v};
        uint32_t cp = 0;
        size_t k = utf8_decode(s, 3, &cp);
        char u[4];
        if (k != want[v] || (k && (utf8_encode(cp, u) != k || memcmp(u, s, k)))) {
            if (!wrong++)
                printf("# %02X %02X %02X: decoded length %zu, want %u\n", s[0], s[1], s[2], k,
                       want[v]);
        }
    }
    free(want);
    CHECK_EQ(wrong, 0);
}

TEST(utf8_valid_len_points_at_the_culprit)
{
    CHECK_EQ(utf8_valid_len("", 0), 0);
    CHECK_EQ(utf8_valid_len("abc", 3), 3);
    CHECK_EQ(utf8_valid_len("ab\0c", 4), 2);
    CHECK_EQ(utf8_valid_len("caf\xc3\xa9!", 6), 6);
    CHECK_EQ(utf8_valid_len("caf\xc3", 4), 3);                  /* truncated at the end */
    CHECK_EQ(utf8_valid_len("0123456789\xed\xa0\x80", 13), 10); /* after the 8-byte run */
    CHECK_EQ(utf8_valid_len("\xc0\xaf", 2), 0);
    CHECK(utf8_valid("\xe6\x97\xa5\xf0\x9f\x98\x80", 7));
    CHECK(!utf8_valid("\xe6\x97\xa5\xf0\x9f\x98", 6));
    CHECK_EQ(utf8_seq((const unsigned char *)"", 1), 0);        /* NUL is no sequence here */
    CHECK_EQ(utf8_seq((const unsigned char *)"\xc3\xa9", 2), 2);
}

TEST(utf8_trim_never_splits_a_character)
{
    static const char *const texts[] = {"a\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
                                        "x\xf0\x9f\x98\x80y", "plain", "\xc3\xa9\xc3\xa9"};
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        const char *s = texts[t];
        size_t n = strlen(s);
        for (size_t cut = 0; cut <= n; cut++) {
            size_t k = utf8_trim(s, cut);
            CHECK(k <= cut);
            CHECK(utf8_valid(s, k));                    /* a whole prefix */
            /* the longest one: no valid prefix lies between k and cut */
            for (size_t j = k + 1; j <= cut; j++)
                CHECK(!utf8_valid(s, j));
        }
    }
    CHECK_EQ(utf8_trim("a\xc3\xa9", 2), 1);
    CHECK_EQ(utf8_trim("\xf0\x9f\x98\x80", 3), 0);
    CHECK_EQ(utf8_trim("\xf0\x9f\x98\x80", 4), 4);
}

TEST(buf_put_utf8_appends_the_encoding)
{
    struct buf b;
    buf_init(&b, 5);
    CHECK_EQ(buf_put_utf8(&b, 0xE9), 0);
    CHECK_EQ(buf_put_utf8(&b, 0x1F600), -ENOSPC);               /* 2 + 4 > 5 */
    CHECK_EQ(buf_put_utf8(&b, 0x65E5), 0);
    CHECK_MEM(b.p, b.len, "\xc3\xa9\xe6\x97\xa5");
    buf_cleanup(&b);
}

/* ---- hashing ------------------------------------------------------------------- */

TEST(fnv1a_known_values)
{
    /* the published FNV-1a 64 test vectors */
    CHECK(hash_fnv1a("", 0) == 0xcbf29ce484222325ull);
    CHECK(hash_fnv1a("a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(hash_fnv1a("foobar", 6) == 0x85944171f73967e8ull);
    CHECK(hash_fnv1a("a\0b", 3) != hash_fnv1a("a", 1));         /* length, not NUL, ends it */
    CHECK_EQ(hash_fnv1a32("foobar", 6), 0x72ad2699u);
    CHECK_EQ(hash_fnv1a32("", 0), 0x4fd0bfc1u);
}

/* ---- hex --------------------------------------------------------------------------- */

TEST(hex_encode_and_decode)
{
    for (int c = 0; c < 256; c++) {
        int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        CHECK_EQ(hex_digit(c), want);
    }
    CHECK_EQ(hex_digit(-1), -1);
    char out[16];
    hex_encode("\x00\xff\x10\xab", 4, out);
    CHECK_STR(out, "00ff10ab");
    hex_encode("", 0, out);
    CHECK_STR(out, "");
    unsigned char bytes[8] = {0};
    CHECK_EQ(hex_decode("00fF10Ab", 8, bytes), 0);
    CHECK(!memcmp(bytes, "\x00\xff\x10\xab", 4));
    CHECK_EQ(hex_decode("", 0, bytes), 0);
    CHECK_EQ(hex_decode("abc", 3, bytes), -EINVAL);             /* odd */
    CHECK_EQ(hex_decode("abcd", 3, bytes), -EINVAL);            /* odd, though a digit follows */
    CHECK_EQ(hex_decode("0g", 2, bytes), -EINVAL);
    CHECK_EQ(hex_decode("g0", 2, bytes), -EINVAL);
    CHECK_EQ(hex_decode("0 ", 2, bytes), -EINVAL);
    CHECK_EQ(hex_decode("1\0", 2, bytes), -EINVAL);
}

/* ---- percent-encoding ------------------------------------------------------------ */

static int pct(const char *in, const char *want)
{
    char out[64];
    size_t n = 99;
    int rc = pct_decode(in, strlen(in), out, &n);
    if (!want)
        return rc == -EINVAL;
    return rc == 0 && n == strlen(want) && !strcmp(out, want);
}

TEST(percent_decode_edges)
{
    CHECK(pct("", ""));
    CHECK(pct("plain", "plain"));
    CHECK(pct("%41%62c", "Abc"));
    CHECK(pct("a%2fb%2Fc", "a/b/c"));
    CHECK(pct("%C3%A9", "\xc3\xa9"));
    CHECK(pct("%25", "%"));
    CHECK(pct("%2541", "%41"));                 /* decoded once, never twice */
    CHECK(pct("+", "+"));                       /* not form encoding */
    CHECK(pct("%2", NULL));                     /* cut short */
    CHECK(pct("a%", NULL));
    CHECK(pct("%zz", NULL));
    CHECK(pct("%z1", NULL));
    CHECK(pct("%1z", NULL));
    CHECK(pct("% 1", NULL));
    CHECK(pct("%00", NULL));                    /* would cut the string short */
    CHECK(pct("ok%00", NULL));
    CHECK(pct("%01", "\x01"));
    /* an escape the length cuts off is cut short, though bytes follow */
    char out[8];
    CHECK_EQ(pct_decode("%41", 2, out, NULL), -EINVAL);
    /* in place */
    char s[] = "a%20b";
    size_t n;
    CHECK_EQ(pct_decode(s, strlen(s), s, &n), 0);
    CHECK_STR(s, "a b");
    CHECK_EQ(n, 3);
}

TEST(percent_encode_round_trips_every_byte)
{
    struct buf b;
    buf_init(&b, 0);
    CHECK_EQ(buf_pct_encode(&b, "a b/\xc3\xbc~-._:@", 12, "/"), 0);
    CHECK_MEM(b.p, b.len, "a%20b/%C3%BC~-._%3A%40");
    buf_reset(&b);
    CHECK_EQ(buf_pct_encode(&b, "a/b", 3, NULL), 0);
    CHECK_MEM(b.p, b.len, "a%2Fb");
    buf_reset(&b);
    CHECK_EQ(buf_pct_encode(&b, "a\0b", 3, ""), 0);           /* NUL is never kept */
    CHECK_MEM(b.p, b.len, "a%00b");
    char all[255];
    for (int i = 0; i < 255; i++)
        all[i] = (char)(i + 1);
    buf_reset(&b);
    CHECK_EQ(buf_pct_encode(&b, all, sizeof all, "!$&'()*+,;=:@/"), 0);
    char back[sizeof all + 1];
    size_t n;
    CHECK_EQ(pct_decode(b.p, b.len, back, &n), 0);
    CHECK_EQ(n, sizeof all);
    CHECK(!memcmp(back, all, n));
    buf_cleanup(&b);
    /* over the cap: nothing appended */
    buf_init(&b, 4);
    buf_puts(&b, "x");
    CHECK_EQ(buf_pct_encode(&b, "ab c", 4, NULL), -ENOSPC);
    CHECK_MEM(b.p, b.len, "x");
    buf_cleanup(&b);
}

/* ---- ISO 8601 ------------------------------------------------------------------ */

/* t through iso_utc_ms when ms, else iso_utc; 1 when it gives want. */
static int iso_is(int64_t t, int ms, const char *want)
{
    char out[40];
    (ms ? iso_utc_ms : iso_utc)(t, out, sizeof out);
    if (strcmp(out, want))
        printf("# %s(%lld) = \"%s\", want \"%s\"\n", ms ? "iso_utc_ms" : "iso_utc",
               (long long)t, out, want);
    return !strcmp(out, want);
}
#define iso_s(t, want) iso_is(t, 0, want)
#define iso_ms(t, want) iso_is(t, 1, want)

TEST(iso8601_edges)
{
    CHECK(iso_s(0, "1970-01-01T00:00:00Z"));
    CHECK(iso_ms(0, "1970-01-01T00:00:00.000Z"));
    CHECK(iso_s(1709210096, "2024-02-29T12:34:56Z"));          /* a leap day */
    CHECK(iso_s(951782400, "2000-02-29T00:00:00Z"));           /* 2000 is a leap year */
    CHECK(iso_s(4107542399, "2100-02-28T23:59:59Z"));          /* 2100 is not */
    CHECK(iso_s(4107542400, "2100-03-01T00:00:00Z"));
    CHECK(iso_s(253402300799, "9999-12-31T23:59:59Z"));
    CHECK(iso_s(253402300800, ""));                            /* past four digits */
    CHECK(iso_s(-1, "1969-12-31T23:59:59Z"));
    /* milliseconds are cut, never rounded up into the next second */
    CHECK(iso_ms(1999, "1970-01-01T00:00:01.999Z"));
    CHECK(iso_ms(1709210096999, "2024-02-29T12:34:56.999Z"));
    CHECK(iso_ms(1709210096001, "2024-02-29T12:34:56.001Z"));
    /* before the epoch the millisecond counts forward from its second */
    CHECK(iso_ms(-1, "1969-12-31T23:59:59.999Z"));
    CHECK(iso_ms(-1000, "1969-12-31T23:59:59.000Z"));
    CHECK(iso_ms(-1001, "1969-12-31T23:59:58.999Z"));
    char out[ISO_UTC_LEN + 1], small[8];
    iso_utc(0, out, sizeof out);
    CHECK_EQ(strlen(out), ISO_UTC_LEN);
    iso_utc(0, small, sizeof small);                           /* cut, still terminated */
    CHECK_STR(small, "1970-01");
    char now[ISO_UTC_MS_LEN + 1];
    now_utc(now, sizeof now);
    CHECK_EQ(strlen(now), ISO_UTC_MS_LEN);
    CHECK(now[ISO_UTC_MS_LEN - 1] == 'Z' && now[10] == 'T' && now[19] == '.');
}

/* ---- list pages -------------------------------------------------------------------- */

static int win(size_t total, size_t off, size_t per, size_t s, size_t e, size_t next)
{
    struct list_window w = list_window(total, off, per);
    if (w.start != s || w.end != e || w.next != next)
        printf("# list_window(%zu, %zu, %zu) = [%zu, %zu) next %zu\n", total, off, per,
               w.start, w.end, w.next);
    return w.start == s && w.end == e && w.next == next;
}

TEST(list_window_edges)
{
    CHECK(win(10, 0, 3, 0, 3, 3));
    CHECK(win(10, 3, 3, 3, 6, 6));
    CHECK(win(10, 7, 3, 7, 10, 0));             /* ends exactly at the last item */
    CHECK(win(10, 9, 3, 9, 10, 0));
    CHECK(win(10, 10, 3, 10, 10, 0));           /* at the end: empty, last */
    CHECK(win(10, 500, 3, 10, 10, 0));          /* past it */
    CHECK(win(0, 0, 3, 0, 0, 0));
    CHECK(win(10, 2, (size_t)-1, 2, 10, 0));    /* no overflow in off + per */
    CHECK(win((size_t)-1, (size_t)-3, 2, (size_t)-3, (size_t)-1, 0));
}

TEST(cursor_parse_edges)
{
    size_t off = 77;
    CHECK_EQ(list_cursor_parse("0", 10, &off), 0);
    CHECK_EQ(off, 0);
    CHECK_EQ(list_cursor_parse("42", 100, &off), 0);
    CHECK_EQ(off, 42);
    CHECK_EQ(list_cursor_parse("100", 100, &off), 0);                /* max itself */
    CHECK_EQ(off, 100);
    CHECK_EQ(list_cursor_parse("101", 100, &off), -EINVAL);
    CHECK_EQ(list_cursor_parse("7", 5, &off), -EINVAL);         /* a digit above a small max */
    CHECK_EQ(list_cursor_parse("5", 5, &off), 0);
    CHECK_EQ(off, 5);
    CHECK_EQ(list_cursor_parse("0", 0, &off), 0);
    CHECK_EQ(list_cursor_parse("1", 0, &off), -EINVAL);
    CHECK_EQ(list_cursor_parse("99999999999999999999999999", (size_t)-1, &off), -EINVAL);
    CHECK_EQ(list_cursor_parse("18446744073709551615", (size_t)-1, &off), 0);
    CHECK(off == (size_t)-1);
    CHECK_EQ(list_cursor_parse("18446744073709551616", (size_t)-1, &off), -EINVAL);
    static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "1.0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_EQ(list_cursor_parse(bad[i], 1000, &off), -EINVAL);
    CHECK_EQ(list_cursor_parse(NULL, 1000, &off), -EINVAL);
    CHECK(off == (size_t)-1);                                   /* untouched on failure */
}

/* ---- error records ------------------------------------------------------------ */

TEST(err_set_keeps_a_url_and_stays_utf8)
{
    struct err e;
    char url[401];
    memset(url, 'u', 400);
    url[400] = '\0';
    err_set(&e, 3, 4, "%s: HTTP status 404", url);
    CHECK_EQ(e.line, 3);
    CHECK_EQ(e.col, 4);
    CHECK_EQ(strlen(e.msg), 400 + strlen(": HTTP status 404"));   /* not cut at 256 */
    /* a "%.Ns" cut inside a character of the input */
    err_set(&e, 0, 0, "name '%.2s' refused", "a\xc3\xa9");
    CHECK(utf8_valid(e.msg, strlen(e.msg)));
    CHECK_STR(e.msg, "name 'a?' refused");
    err_set(NULL, 0, 0, "nothing");                                /* allowed */
}

TEST(err_fileline_names_file_and_line)
{
    struct err e = {.line = 3, .col = 4};
    err_fileline(&e, "acl.txt", 7, "bad '%s'", "frob");
    CHECK_STR(e.msg, "acl.txt:7: bad 'frob'");
    CHECK_EQ(e.line, 7);
    CHECK_EQ(e.col, 0);
    err_fileline(&e, "acl.txt", 0, "cannot read");
    CHECK_STR(e.msg, "acl.txt: cannot read");
    CHECK_EQ(e.line, 0);
    /* what is cut inside a character (the message at 399 bytes) is repaired */
    char big[600];
    memset(big, 'a', sizeof big);
    memcpy(big + 398, "\xc3\xa9", 2);
    big[500] = '\0';
    err_fileline(&e, "f", 1, "%s", big);
    CHECK(utf8_valid(e.msg, strlen(e.msg)));
    CHECK_EQ(strlen(e.msg), 5 + 399);
    CHECK_EQ(e.msg[403], '?');
    err_fileline(NULL, "f", 1, "nothing");                        /* allowed */
}

/* A path near PATH_MAX does not push the line and the reason out of the
 * message: the path gives up its head, and a cut character is not left. */
TEST(err_fileline_long_path_keeps_line_and_reason)
{
    struct err e;
    char file[1200];
    size_t n = 0;
    while (n + 3 < sizeof file - 20) {
        memcpy(file + n, n % 7 ? "\xc3\xa9" : "/", n % 7 ? 2 : 1);
        n += n % 7 ? 2 : 1;
    }
    memcpy(file + n, "/tail-acl", 10);
    err_fileline(&e, file, 12, "'%s' is not 'see' or 'run'", "frob");
    size_t len = strlen(e.msg);
    CHECK(utf8_valid(e.msg, len));
    CHECK(len < sizeof e.msg);
    const char *want = "/tail-acl:12: 'frob' is not 'see' or 'run'";
    CHECK(len > strlen(want));
    CHECK_STR(e.msg + len - strlen(want), want);
    CHECK(!strncmp(e.msg, "...", 3));
    CHECK(!strchr(e.msg, '?'));             /* cut between characters, not inside one */
    CHECK_EQ(e.line, 12);
    err_fileline(&e, file, 0, "cannot read");
    CHECK(utf8_valid(e.msg, strlen(e.msg)));
    CHECK(strstr(e.msg, "/tail-acl: cannot read") != NULL);
}

TEST(err_copy_cuts_between_characters)
{
    struct err e;
    err_set(&e, 0, 0, "ab\xc3\xa9z");
    char out[8];
    err_copy(out, 4, &e);                   /* "ab" and half of the e-acute */
    CHECK_STR(out, "ab");
    err_copy(out, sizeof out, &e);
    CHECK_STR(out, "ab\xc3\xa9z");
    err_copy(out, 5, &e);
    CHECK_STR(out, "ab\xc3\xa9");
}

/* A deadline a condition wait rejects (tv_nsec past a second) or that
 * lands early would turn a thread's tick into a spin or a stall. */
TEST(now_after_ms_is_a_normalised_deadline)
{
    static const long ms[] = {0, 1, 200, 250, 999, 1000, 1999, 60000};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        int64_t a = now_wall_ms();
        struct timespec d = now_after_ms(ms[i]);
        int64_t b = now_wall_ms() + 1;     /* now_wall_ms truncates */
        CHECK(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
        int64_t dn = (int64_t)d.tv_sec * 1000000000 + d.tv_nsec;
        CHECK(dn >= (a + ms[i]) * 1000000);
        CHECK(dn <= (b + ms[i]) * 1000000);
    }
}

/* ---- per-thread slots -------------------------------------------------------- */

#define TS_N 4
static struct tslot ts_set[TS_N];
static atomic_int ts_kept[TS_N];     /* the exit hook's answer per slot */
static int ts_keep(int slot)
{
    return atomic_load(&ts_kept[slot]);
}
static struct tslots ts = TSLOTS_INIT(ts_set, ts_keep);
static _Thread_local int ts_mine = -1;

struct ts_arg {
    pthread_barrier_t *claimed, *release;   /* NULL: claim and leave */
    int slot, again;
    int keep;       /* leaves its slot guarding something */
};

static void *ts_thread(void *p)
{
    struct ts_arg *a = p;
    a->slot = tslot_mine(&ts, &ts_mine);
    a->again = tslot_mine(&ts, &ts_mine);
    if (a->claimed) {
        pthread_barrier_wait(a->claimed);
        pthread_barrier_wait(a->release);
    }
    if (a->keep && a->slot >= 0)
        atomic_store(&ts_kept[a->slot], 1);
    return NULL;
}

/* n threads that each claim and hold their slot until released; *extra,
 * the slot of one more thread that comes while they hold theirs. */
static void ts_round(struct ts_arg *a, int n, int keep, int *extra)
{
    pthread_barrier_t claimed, release;
    pthread_t th[TS_N + 1];
    pthread_barrier_init(&claimed, NULL, (unsigned)n + 1);
    pthread_barrier_init(&release, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        a[i] = (struct ts_arg){&claimed, &release, -2, -2, keep};
        pthread_create(&th[i], NULL, ts_thread, &a[i]);
    }
    pthread_barrier_wait(&claimed);
    struct ts_arg x = {NULL, NULL, -2, -2, 0};
    pthread_create(&th[n], NULL, ts_thread, &x);
    pthread_join(th[n], NULL);
    *extra = x.slot;
    pthread_barrier_wait(&release);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&claimed);
    pthread_barrier_destroy(&release);
}

TEST(tslots_one_per_thread_given_back_at_exit)
{
    struct ts_arg a[TS_N];
    int extra, seen[TS_N] = {0};
    /* all taken: distinct slots, the same one on a second call, none left */
    ts_round(a, TS_N, 0, &extra);
    for (int i = 0; i < TS_N; i++) {
        CHECK(a[i].slot >= 0 && a[i].slot < TS_N);
        CHECK_EQ(a[i].again, a[i].slot);
        CHECK_EQ(seen[a[i].slot]++, 0);
    }
    CHECK_EQ(extra, -1);
    /* every thread exited: the slots are free again */
    ts_round(a, TS_N, 0, &extra);
    for (int i = 0; i < TS_N; i++)
        CHECK(a[i].slot >= 0);
    CHECK_EQ(extra, -1);
    /* a slot its hook keeps stays taken after its thread is gone */
    ts_round(a, 1, 1, &extra);
    int kept = a[0].slot;
    CHECK(kept >= 0);
    CHECK(extra >= 0 && extra != kept);
    ts_round(a, TS_N - 1, 0, &extra);
    for (int i = 0; i < TS_N - 1; i++)
        CHECK(a[i].slot >= 0 && a[i].slot != kept);
    CHECK_EQ(extra, -1);
}

/* x_u64_dec and x_i64_dec write what printf writes, at every width and edge. */
TEST(decimal_matches_printf)
{
    uint64_t u[] = {0, 1, 9, 10, 99, 100, 12345, 4294967295u, 4294967296u,
                    999999999999999999u, 10000000000000000000u, UINT64_MAX};
    char got[21], want[32];
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) {
        size_t n = x_u64_dec(got, u[i]);
        snprintf(want, sizeof want, "%" PRIu64, u[i]);
        CHECK_STR(got, want);
        CHECK_EQ(n, strlen(want));
    }
    int64_t s[] = {0, 1, -1, 9, -9, 10, -10, 123456789, -123456789, INT64_MAX, INT64_MIN,
                   INT64_MIN + 1};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        size_t n = x_i64_dec(got, s[i]);
        snprintf(want, sizeof want, "%" PRId64, s[i]);
        CHECK_STR(got, want);
        CHECK_EQ(n, strlen(want));
    }
    /* every power of ten and its neighbours */
    for (uint64_t p = 1; p <= 1000000000000000000u; p *= 10)
        for (uint64_t d = p - 1; d <= p + 1; d++) {
            x_u64_dec(got, d);
            snprintf(want, sizeof want, "%" PRIu64, d);
            CHECK_STR(got, want);
        }
}

/* x_strlcpy leaves what snprintf(out, cap, "%s", s) leaves. */
TEST(strlcpy_matches_snprintf)
{
    const char *in[] = {"", "a", "abc", "abcdefgh", "abcdefghi", "abcdefghijklmnop"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        for (size_t cap = 1; cap <= 12; cap++) {
            char got[16], want[16];
            memset(got, 'x', sizeof got);
            memset(want, 'x', sizeof want);
            size_t n = x_strlcpy(got, in[i], cap);
            snprintf(want, cap, "%s", in[i]);
            CHECK(!memcmp(got, want, sizeof got));
            CHECK_EQ(n, strlen(want));
        }
}

/* x_casestr finds what glibc's strcasestr finds (the C locale), at the
 * same place: every needle the server gives it, in headers of every case. */
TEST(casestr_matches_strcasestr)
{
    const char *needles[] = {"text/event-stream", "application/json", "application/*", "a", ""};
    const char *hays[] = {
        "", "a", "text/event-stream", "TEXT/EVENT-STREAM", "application/json, text/event-stream",
        "text/html;q=0.9, Application/JSON;q=0.8", "text/event-strea", "text/event-streamx",
        "xtext/event-stream", "application/jso", "application/*", "APPLICATION/*;q=0.1",
        "aapplication/json", "applicationapplication/json", "text/event-text/event-stream",
        "t\xc3\xa9xt/event-stream", "\xff\xfe\x61pplication/json", "*/*",
        "text/Event-Stream ; q=1", "application/jsonp",
    };
    for (size_t i = 0; i < sizeof needles / sizeof *needles; i++)
        for (size_t j = 0; j < sizeof hays / sizeof *hays; j++) {
            const char *want = strcasestr(hays[j], needles[i]);
            const char *got = x_casestr(hays[j], needles[i]);
            if (got != want) {
                H_FAIL("'%s' in '%s': at %td, strcasestr at %td", needles[i], hays[j],
                       got ? got - hays[j] : -1, want ? want - hays[j] : -1);
                return;
            }
        }
    /* random bytes from a small alphabet around the needles' letters */
    static const char alphabet[] = "tTeExX/-sSrRaAmM\xc3 ";
    unsigned seed = 7;
    for (int round = 0; round < 20000; round++) {
        char h[24];
        size_t n = (size_t)(round % 23);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            h[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        h[n] = '\0';
        const char *nd = (round & 1) ? "text" : "ex/t";
        if (x_casestr(h, nd) != strcasestr(h, nd)) {
            H_FAIL("'%s' in '%s'", nd, h);
            return;
        }
    }
}

/* jansson's allocator (x_install_json_alloc): every block holds what was
 * asked, live blocks never overlap, and the blocks are malloc's own. */
TEST(json_alloc_blocks_fit_and_are_mallocs_own)
{
    x_install_json_alloc();
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    enum { N = 400 };
    static unsigned char *live[N];
    static size_t len[N];
    unsigned seed = 11;
    for (int round = 0; round < 20000; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t i = (seed >> 8) % N;
        if (live[i]) {
            for (size_t k = 0; k < len[i]; k++)
                CHECK_EQ(live[i][k], (unsigned char)(i + k));
            f(live[i]);
            live[i] = NULL;
            continue;
        }
        seed = seed * 1103515245u + 12345u;
        len[i] = (seed >> 8) % 300;
        live[i] = m(len[i]);
        CHECK(live[i] != NULL);
        CHECK(malloc_usable_size(live[i]) >= len[i]);
        for (size_t k = 0; k < len[i]; k++)
            live[i][k] = (unsigned char)(i + k);
    }
    for (size_t i = 0; i < N; i++)
        f(live[i]);
    /* malloc's block to the cache, the cache's to free() */
    f(malloc(40));
    free(m(40));
    json_t *o = json_pack("{s:s, s:i}", "a", "b", "c", 1);
    char *d = json_dumps(o, JSON_COMPACT);
    CHECK_STR(d, "{\"a\":\"b\",\"c\":1}");
    free(d);
    json_decref(o);
}

static void *ja_thread(void *arg)
{
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    static void *p[2000];
    for (size_t i = 0; i < 2000; i++)
        p[i] = m(i % 240);
    for (size_t i = 0; i < 2000; i++)
        f(p[i]);
    return arg;
}

/* What a thread keeps it gives back when it exits. */
TEST(json_alloc_thread_gives_back_at_exit)
{
    x_install_json_alloc();
    pthread_t t;
    /* a first thread: whatever the C library keeps for threads is set up */
    CHECK_EQ(pthread_create(&t, NULL, ja_thread, NULL), 0);
    pthread_join(t, NULL);
    size_t before = mallinfo2().uordblks;
    CHECK_EQ(pthread_create(&t, NULL, ja_thread, NULL), 0);
    pthread_join(t, NULL);
    size_t after = mallinfo2().uordblks;
    /* kept, up to 64 blocks of 15 sizes would be some 100 KB */
    if (after > before + 8192) {
        H_FAIL("%zu bytes still in use after the thread exited", after - before);
        return;
    }
}

struct ja_hold {
    void **blocks;
    size_t n, in_use;
};

static void *ja_free_thread(void *arg)
{
    struct ja_hold *h = arg;
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    for (size_t i = 0; i < h->n; i++)
        f(h->blocks[i]);
    h->in_use = mallinfo2().uordblks;
    return NULL;
}

/* A thread that frees more blocks of one size than it will reuse (a tree
 * built on one thread and dropped on another, a burst) keeps a bounded
 * number of them, not all. */
TEST(json_alloc_thread_keeps_a_bounded_number)
{
    x_install_json_alloc();
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    enum { N = 2000 };
    static void *blocks[N];
    struct ja_hold h = {blocks, N, 0};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, ja_thread, NULL), 0);
    pthread_join(t, NULL);
    size_t before = mallinfo2().uordblks;
    for (size_t i = 0; i < N; i++)
        blocks[i] = m(40);
    CHECK_EQ(pthread_create(&t, NULL, ja_free_thread, &h), 0);
    pthread_join(t, NULL);
    /* all N kept would be some 96 KB; 64 and the C library's own few, 4 KB */
    if (h.in_use > before + 8192)
        H_FAIL("%zu bytes in use while the thread that freed them ran", h.in_use - before);
}

/* Reply buffers (x_reply_alloc): each holds what was asked, a kept one
 * is used again only when big enough, any may go to free(), and a thread
 * gives back what it kept when it exits. */
TEST(reply_buffers_fit_and_are_mallocs_own)
{
    unsigned seed = 5;
    for (int round = 0; round < 2000; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 8) % 100000;
        unsigned char *p = x_reply_alloc(n);
        CHECK(p != NULL);
        CHECK(malloc_usable_size(p) >= n);
        memset(p, (int)(round & 0xff), n);
        if (round % 7 == 0)
            free(p);
        else
            x_reply_free(p);
    }
    x_reply_free(malloc(3000));     /* malloc's own block to the kept */
    x_reply_free(NULL);
}

static void *rb_thread(void *arg)
{
    void *p[8];
    for (size_t i = 0; i < 8; i++)
        p[i] = x_reply_alloc(16384 + i);
    for (size_t i = 0; i < 8; i++)
        x_reply_free(p[i]);
    return arg;
}

TEST(reply_buffers_given_back_at_thread_exit)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, rb_thread, NULL), 0);
    pthread_join(t, NULL);
    size_t before = mallinfo2().uordblks;
    CHECK_EQ(pthread_create(&t, NULL, rb_thread, NULL), 0);
    pthread_join(t, NULL);
    size_t after = mallinfo2().uordblks;
    /* the 4 kept would be 64 KB */
    if (after > before + 8192)
        H_FAIL("%zu bytes still in use after the thread exited", after - before);
}

int main(void)
{
    RUN(escape_every_special_byte_at_every_position);
    RUN(escape_utf8_passes_through);
    RUN(escape_random_text);
    RUN(escape_json_text_like_the_general_escape);
    RUN(escape_json_text_wrong_counts);
    RUN(utf8_valid_matches_reference);
    RUN(random_hex);
    RUN(text_escape);
    RUN(fprintf_text_keeps_only_the_format_newline);
    RUN(peer_key_one_per_ipv4_address_and_ipv6_64);
    RUN(utf8_decode_edges);
    RUN(utf8_round_trip_and_every_short_string);
    RUN(utf8_fold_pairs_and_leaves_the_rest);
    RUN(utf8_valid_len_points_at_the_culprit);
    RUN(utf8_trim_never_splits_a_character);
    RUN(buf_put_utf8_appends_the_encoding);
    RUN(fnv1a_known_values);
    RUN(hex_encode_and_decode);
    RUN(percent_decode_edges);
    RUN(percent_encode_round_trips_every_byte);
    RUN(iso8601_edges);
    RUN(list_window_edges);
    RUN(cursor_parse_edges);
    RUN(err_set_keeps_a_url_and_stays_utf8);
    RUN(err_fileline_names_file_and_line);
    RUN(err_fileline_long_path_keeps_line_and_reason);
    RUN(err_copy_cuts_between_characters);
    RUN(now_after_ms_is_a_normalised_deadline);
    RUN(tslots_one_per_thread_given_back_at_exit);
    RUN(decimal_matches_printf);
    RUN(strlcpy_matches_snprintf);
    RUN(casestr_matches_strcasestr);
    RUN(json_alloc_blocks_fit_and_are_mallocs_own);
    RUN(json_alloc_thread_gives_back_at_exit);
    RUN(json_alloc_thread_keeps_a_bounded_number);
    RUN(reply_buffers_fit_and_are_mallocs_own);
    RUN(reply_buffers_given_back_at_thread_exit);
    DONE();
}
