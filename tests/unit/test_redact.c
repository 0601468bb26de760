/*
 * test_redact.c - the redaction engine (server/redact.c): each built-in
 * pattern, the file format and its errors, overlaps, buffer ends, UTF-8,
 * JSON that must stay JSON, environment values, counts and the metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "redact.h"
#include "shape.h"
#include "stats.h"
#include "util.h"

#define GHP "ghp_0123456789abcdefghijABCDEFGHIJ012345"     /* 36 after the prefix */

static struct redact_set *builtins(void)
{
    struct err err = {0};
    struct redact_set *s = redact_set_parse(NULL, 0, NULL, 1, &err);
    if (!s)
        printf("# %s\n", err.msg);
    return s;
}

/* Redacts text with set s (and env e); a static copy of the result (the
 * text itself when nothing changed). */
static const char *red(const struct redact_set *s, const struct redact_env *e, const char *text,
                       json_t *counts)
{
    static char out[1 << 16];
    size_t n;
    char *r = redact_text(s, e, text, strlen(text), &n, counts);
    snprintf(out, sizeof out, "%s", r ? r : text);
    free(r);
    return out;
}

static long count_of(json_t *counts, const char *name)
{
    return (long)json_integer_value(json_object_get(counts, name));
}

TEST(builtin_bearer_token)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "Authorization: Bearer abc.DEF-123_x/y+z==\nnext", NULL),
              "Authorization: Bearer [REDACTED:bearer-token]\nnext");
    CHECK_STR(red(s, NULL, "curl -H 'authorization: bearer tok3n' x", NULL),
              "curl -H 'authorization: bearer [REDACTED:bearer-token]' x");
    /* the prose word is not a token */
    CHECK_STR(red(s, NULL, "bearer tokens are sent in a header", NULL),
              "bearer tokens are sent in a header");
    redact_set_free(s);
}

TEST(builtin_aws_keys)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "key AKIAIOSFODNN7EXAMPLE and ASIAIOSFODNN7EXAMPLE.", NULL),
              "key [REDACTED:aws-access-key] and [REDACTED:aws-access-key].");
    /* a longer word is not a key */
    CHECK_STR(red(s, NULL, "XAKIAIOSFODNN7EXAMPLE", NULL), "XAKIAIOSFODNN7EXAMPLE");
    CHECK_STR(red(s, NULL, "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                  NULL),
              "aws_secret_access_key = [REDACTED:aws-secret-key]\n");
    CHECK_STR(red(s, NULL, "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NULL),
              "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]");
    redact_set_free(s);
}

TEST(builtin_private_key)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL,
                  "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC==\n"
                  "-----END RSA PRIVATE KEY-----\nafter",
                  NULL),
              "before\n[REDACTED:private-key]\nafter");
    CHECK_STR(red(s, NULL,
                  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----",
                  NULL),
              "[REDACTED:private-key]");
    /* a public key or certificate is not a secret */
    CHECK_STR(red(s, NULL, "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", NULL),
              "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----");
    redact_set_free(s);
}

TEST(builtin_github_tokens)
{
    struct redact_set *s = builtins();
    CHECK(s);
    const char *pre[] = {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"};
    for (size_t i = 0; i < 5; i++) {
        char in[128];
        snprintf(in, sizeof in, "t=%s0123456789abcdefghijABCDEFGHIJ012345 ok", pre[i]);
        CHECK_STR(red(s, NULL, in, NULL), "t=[REDACTED:github-token] ok");
    }
    CHECK_STR(red(s, NULL, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", NULL),
              "[REDACTED:github-token]");
    /* too short to be one */
    CHECK_STR(red(s, NULL, "ghp_short", NULL), "ghp_short");
    redact_set_free(s);
}

TEST(builtin_slack_token)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "xoxb-1234567890-abcdefABCDEF and xoxp-12345678901", NULL),
              "[REDACTED:slack-token] and [REDACTED:slack-token]");
    CHECK_STR(red(s, NULL, "xoxz-1234567890", NULL), "xoxz-1234567890");
    redact_set_free(s);
}

TEST(builtin_password_value_only)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "password=hunter2 user=bob", NULL),
              "password=[REDACTED:password] user=bob");
    CHECK_STR(red(s, NULL, "passwd: s3cr3t!\n", NULL), "passwd: [REDACTED:password]\n");
    CHECK_STR(red(s, NULL, "client_secret=abc&x=1", NULL), "client_secret=[REDACTED:password]&x=1");
    /* quoted: up to the closing quote, spaces included */
    CHECK_STR(red(s, NULL, "DB_PASSWORD=\"p4ss word\" next", NULL),
              "DB_PASSWORD=\"[REDACTED:password]\" next");
    CHECK_STR(red(s, NULL, "secret: 'a b c'", NULL), "secret: '[REDACTED:password]'");
    /* no value on the line: the next line is not taken */
    CHECK_STR(red(s, NULL, "password:\nnext", NULL), "password:\nnext");
    CHECK_STR(red(s, NULL, "the password is long", NULL), "the password is long");
    redact_set_free(s);
}

/* A value of any length goes whole: a bounded repeat replaced a prefix and
 * passed the tail on. 1 MB keeps to linear time (possessive repeats). */
TEST(long_values_replaced_whole)
{
    struct redact_set *s = builtins();
    CHECK(s);
    size_t big = 1 << 20;
    static const char *const keys[][2] = {
        {"password=", "\n"}, {"secret: \"", "\"\n"}, {"passwd='", "'\n"}, {NULL, NULL}};
    for (const char *const(*k)[2] = keys; (*k)[0]; k++) {
        size_t kl = strlen((*k)[0]);
        char *t = xmalloc(kl + big + 4);
        memcpy(t, (*k)[0], kl);
        memset(t + kl, 'x', big);
        strcpy(t + kl + big, (*k)[1]);
        size_t n = strlen(t), len;
        json_t *c = json_object();
        struct timespec a, z;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        char *r = redact_text(s, NULL, t, n, &len, c);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &z);
        double ms = (double)(z.tv_sec - a.tv_sec) * 1e3 + (double)(z.tv_nsec - a.tv_nsec) / 1e6;
        printf("# %s + 1 MB value: %.1f ms of CPU\n", (*k)[0], ms);
        CHECK(r);
        CHECK(!memchr(r, 'x', len));
        CHECK(len < kl + 40);
        CHECK_EQ(count_of(c, "password"), 1);
        CHECK(ms < 1000);
        free(r);
        free(t);
        json_decref(c);
    }
    /* the other unbounded credentials: one marker, no tail */
    char tok[400];
    memcpy(tok, "ghp_", 4);
    memset(tok + 4, 'a', 300);
    tok[304] = '\0';
    CHECK_STR(red(s, NULL, tok, NULL), "[REDACTED:github-token]");
    memcpy(tok, "xoxb-", 5);
    memset(tok + 5, 'b', 300);
    tok[305] = '\0';
    CHECK_STR(red(s, NULL, tok, NULL), "[REDACTED:slack-token]");
    redact_set_free(s);
}

/* Built-in kinds written with JSON escapes, in JSON and in plain text: the
 * escapes go with the secret, and JSON stays JSON. */
TEST(json_escaped_builtins)
{
    struct redact_set *s = builtins();
    CHECK(s);
    json_t *c = json_object();
    const char *r = red(s, NULL, "{\"token\":\"ghp_\\u00410123456789abcdefghijABCDEFGHIJ01234\"}", c);
    CHECK_STR(r, "{\"token\":\"[REDACTED:github-token]\"}");
    CHECK_EQ(count_of(c, "github-token"), 1);
    CHECK_STR(red(s, NULL, "id \\u0041KIAIOSFODNN7EXAMPLE in a log line", NULL),
              "id [REDACTED:aws-access-key] in a log line");
    CHECK_STR(red(s, NULL, "[\"xoxb\\u002d1234567890-abcdef\", \"ok\"]", NULL),
              "[\"[REDACTED:slack-token]\", \"ok\"]");
    /* a key block with \n escapes, a "+" spelled \u002b, an escaped "/" */
    r = red(s, NULL,
            "{\"key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIB\\u002bADAN\\/Bgkq\\nhkiG9w0B"
            "\\n-----END PRIVATE KEY-----\\n\", \"n\": 1}", NULL);
    CHECK_STR(r, "{\"key\": \"[REDACTED:private-key]\\n\", \"n\": 1}");
    /* cut short: no END, the escaped body goes to the string's end */
    r = red(s, NULL, "{\"key\": \"-----BEGIN RSA PRIVATE KEY-----\\u000aMIIEvQIB\\u002bAD\"}", NULL);
    CHECK_STR(r, "{\"key\": \"[REDACTED:private-key]\"}");
    json_t *j = json_loads(r, 0, NULL);
    CHECK(j);
    json_decref(j);
    /* a key name spelled with an escape still marks its value */
    CHECK_STR(red(s, NULL, "{\"pass\\u0077ord\": \"hunter2\"}", NULL),
              "{\"pass\\u0077ord\": \"[REDACTED:password]\"}");
    /* a backslash that starts no escape is text */
    CHECK_STR(red(s, NULL, "C:\\new\\x " GHP, NULL), "C:\\new\\x [REDACTED:github-token]");
    json_decref(c);
    redact_set_free(s);
}

TEST(counts_per_pattern)
{
    struct redact_set *s = builtins();
    CHECK(s);
    json_t *c = json_object();
    red(s, NULL, GHP " " GHP " AKIAIOSFODNN7EXAMPLE password=x", c);
    CHECK_EQ(count_of(c, "github-token"), 2);
    CHECK_EQ(count_of(c, "aws-access-key"), 1);
    CHECK_EQ(count_of(c, "password"), 1);
    CHECK_EQ(json_object_size(c), 3);
    json_decref(c);
    redact_set_free(s);
}

TEST(nothing_to_redact_returns_null)
{
    struct redact_set *s = builtins();
    CHECK(s);
    size_t n = 0;
    CHECK(!redact_text(s, NULL, "plain output\n", 13, &n, NULL));
    CHECK(!redact_text(s, NULL, "", 0, &n, NULL));
    redact_set_free(s);
}

TEST(match_at_buffer_end)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "last: " GHP, NULL), "last: [REDACTED:github-token]");
    CHECK_STR(red(s, NULL, "password=x", NULL), "password=[REDACTED:password]");
    /* an output cut inside a key block: the rest of the block still goes */
    CHECK_STR(red(s, NULL, "x\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI\nAoGCCqGSM49", NULL),
              "x\n[REDACTED:private-key]");
    redact_set_free(s);
}

TEST(overlapping_matches)
{
    struct err err = {0};
    const char *file = "abc\tfoo[0-9]+bar\nlong   \\d{3}bar-tail\n";
    struct redact_set *s = redact_set_parse(file, strlen(file), "f", 1, &err);
    if (!s)
        printf("# %s\n", err.msg);
    CHECK(s);
    json_t *c = json_object();
    /* leftmost first: abc takes "foo123bar"; "long" would start inside it
     * and is not looked for there (docs/security.md says so); the scan goes
     * on after it and finds the token */
    CHECK_STR(red(s, NULL, "x foo123bar-tail " GHP " y", c),
              "x [REDACTED:abc]-tail [REDACTED:github-token] y");
    CHECK_EQ(count_of(c, "abc"), 1);
    CHECK_EQ(count_of(c, "github-token"), 1);
    CHECK_EQ(json_object_size(c), 2);
    /* "long" starts first here */
    CHECK_STR(red(s, NULL, "x 123bar-tail", NULL), "x [REDACTED:long]");
    json_decref(c);
    redact_set_free(s);

    /* an environment value overlapping a token: one replacement, named by
     * the one that starts first */
    json_t *names = json_pack("[s,s]", "TOKEN", "PW");
    char *envp[] = {"TOKEN=ABCDEFGH ghp_0123", "PW=s3cr3t-v4lue", NULL};
    struct redact_env *e = redact_env_new(envp, names);
    s = builtins();
    CHECK(e && s);
    c = json_object();
    CHECK_STR(red(s, e, "ABCDEFGH " GHP " end", c), "[REDACTED:env:TOKEN] end");
    CHECK_EQ(json_object_size(c), 1);
    /* the same start: the environment value names it, and the pattern's
     * longer match is not cut short */
    CHECK_STR(red(s, e, "password=s3cr3t-v4lue-and-more x", NULL),
              "password=[REDACTED:env:PW] x");
    json_decref(c);
    redact_env_free(e);
    redact_set_free(s);
    json_decref(names);
}

TEST(utf8_preserved)
{
    struct redact_set *s = builtins();
    CHECK(s);
    CHECK_STR(red(s, NULL, "héllo 😀 password=pässwörd ünd " GHP " 日本語", NULL),
              "héllo 😀 password=[REDACTED:password] ünd [REDACTED:github-token] 日本語");
    redact_set_free(s);
}

TEST(invalid_utf8_does_not_crash)
{
    struct redact_set *s = builtins();
    CHECK(s);
    const char in[] = "\xff\xfe password=\xc3\x28 \xe2\x82 " GHP " \xf0\x9f\x98";
    size_t n;
    char *r = redact_text(s, NULL, in, sizeof in - 1, &n, NULL);
    CHECK(r);
    CHECK(strstr(r, "[REDACTED:github-token]"));
    CHECK(!strstr(r, "ghp_"));
    CHECK(!memcmp(r, "\xff\xfe", 2));
    free(r);
    /* every prefix, so that a match may end at any byte */
    for (size_t k = 0; k <= sizeof in - 1; k++)
        free(redact_text(s, NULL, in, k, &n, NULL));
    redact_set_free(s);
}

TEST(env_values)
{
    struct redact_set *s = builtins();
    json_t *names = json_pack("[s,s,s]", "API_TOKEN", "SHORT", "ABSENT");
    char *envp[] = {"PATH=/usr/bin", "API_TOKEN=s3cr3t-v4lue", "SHORT=abc", NULL};
    struct redact_env *e = redact_env_new(envp, names);
    CHECK(s && e);
    json_t *c = json_object();
    /* PATH is not one of the names; SHORT is under REDACT_ENV_MIN */
    CHECK_STR(red(s, e, "got s3cr3t-v4lue twice: s3cr3t-v4lue, abc, /usr/bin", c),
              "got [REDACTED:env:API_TOKEN] twice: [REDACTED:env:API_TOKEN], abc, /usr/bin");
    CHECK_EQ(count_of(c, "env:API_TOKEN"), 2);
    /* with no patterns at all, the environment is still redacted */
    struct err err = {0};
    struct redact_set *none = redact_set_parse("", 0, "f", 0, &err);
    CHECK(none);
    CHECK_EQ(redact_set_count(none), 0);
    CHECK_STR(red(none, e, "s3cr3t-v4lue " GHP, NULL), "[REDACTED:env:API_TOKEN] " GHP);
    redact_set_free(none);
    json_t *only_short = json_pack("[s]", "SHORT");
    CHECK(!redact_env_new(envp, only_short));
    json_decref(only_short);
    json_decref(c);
    json_decref(names);
    redact_env_free(e);
    redact_set_free(s);
}

/* A JSON encoder escapes what it prints: `"`, `\` and control characters
 * always, `/` in some encoders, every non-ASCII character with Python's
 * ensure_ascii, `<>&` with Go's. The value is found through its escapes,
 * and the whole escapes go. */
TEST(env_values_json_escaped)
{
    struct redact_set *s = builtins();
    json_t *names = json_pack("[s,s,s,s]", "Q", "U", "C", "A");
    char *envp[] = {"Q=pa\"ss\\word1", "U=p\xc3\xa4ssw\xc3\xb6rd-123", "C=line1\nline2",
                    "A=a&b<c>d/e" "\xf0\x9f\x98\x80", NULL};
    struct redact_env *e = redact_env_new(envp, names);
    CHECK(s && e);
    json_t *c = json_object();
    CHECK_STR(red(s, e, "{\"q\": \"pa\\\"ss\\\\word1\", \"n\": 1}", c),
              "{\"q\": \"[REDACTED:env:Q]\", \"n\": 1}");
    CHECK_STR(red(s, e, "{\"u\": \"x p\\u00e4ssw\\u00F6rd-123 y\"}", c),
              "{\"u\": \"x [REDACTED:env:U] y\"}");
    CHECK_STR(red(s, e, "[\"line1\\nline2\", \"line1\\u000aline2\"]", c),
              "[\"[REDACTED:env:C]\", \"[REDACTED:env:C]\"]");
    CHECK_STR(red(s, e, "{\"a\": \"a\\u0026b\\u003cc\\u003ed\\/e\\ud83d\\ude00!\"}", c),
              "{\"a\": \"[REDACTED:env:A]!\"}");
    /* as a key: numbered like every key */
    CHECK_STR(red(s, e, "{\"pa\\\"ss\\\\word1\": 1}", c), "{\"[REDACTED:env:Q#1]\": 1}");
    CHECK_EQ(count_of(c, "env:Q"), 2);
    CHECK_EQ(count_of(c, "env:C"), 2);
    /* printed as a number: the whole number becomes a string */
    json_t *nn = json_pack("[s]", "N");
    char *envn[] = {"N=9876543210", NULL};
    struct redact_env *en = redact_env_new(envn, nn);
    CHECK_STR(red(s, en, "{\"pin\": 9876543210, \"x\": [19876543210,9876543210.5], \"s\": \"9876543210\"}", NULL),
              "{\"pin\": \"[REDACTED:env:N]\", \"x\": [\"[REDACTED:env:N]\",\"[REDACTED:env:N]\"], \"s\": \"[REDACTED:env:N]\"}");
    CHECK_STR(red(s, en, "{\"i\": 9876543210}\n{\"i\": 1}\n", NULL), "{\"i\": \"[REDACTED:env:N]\"}\n{\"i\": 1}\n");
    redact_env_free(en);
    json_decref(nn);
    /* not JSON: the raw bytes only (an escape in text is not an encoding) */
    CHECK_STR(red(s, e, "pa\\\"ss\\\\word1 and line1\nline2", c), "pa\\\"ss\\\\word1 and [REDACTED:env:C]");
    json_decref(c);
    json_decref(names);
    redact_env_free(e);
    redact_set_free(s);
}

/* ---- JSON output stays JSON --------------------------------------------------- */

static void check_json(const char *in, const char *want)
{
    struct redact_set *s = builtins();
    size_t n;
    char *r = redact_text(s, NULL, in, strlen(in), &n, NULL);
    if (!r) {
        H_FAIL("nothing redacted in %s", in);
    } else {
        if (strcmp(r, want))
            H_FAIL("got  %s\n# want %s", r, want);
        if (shape_format_of(r, n) != shape_format_of(in, strlen(in)))
            H_FAIL("format changed: %s", r);
    }
    free(r);
    redact_set_free(s);
}

TEST(json_stays_json)
{
    int before = h_failed_checks;
    check_json("{\"password\": \"hunter2\", \"n\": 1}",
               "{\"password\": \"[REDACTED:password]\", \"n\": 1}");
    /* the header is split over a key and a value */
    check_json("{\"headers\": {\"Authorization\": \"Bearer abc.def\"}}",
               "{\"headers\": {\"Authorization\": \"Bearer [REDACTED:bearer-token]\"}}");
    /* a key block with \n escapes, ending at the string's quote */
    check_json("[\"-----BEGIN RSA PRIVATE KEY-----\\nMIIE\\n-----END RSA PRIVATE KEY-----\", 2]",
               "[\"[REDACTED:private-key]\", 2]");
    /* a cut-short key block would run on through \" and past the quote: it
     * stops at the string's end, and the escape stays whole */
    check_json("{\"k\": \"-----BEGIN EC PRIVATE KEY-----\\nAAAA\\\\\", \"x\": \"y\"}",
               "{\"k\": \"[REDACTED:private-key]\", \"x\": \"y\"}");
    /* a value that ends inside an escape: the escape goes with it */
    check_json("{\"a\": \"password=abc\\u00e9\"}", "{\"a\": \"password=[REDACTED:password]\"}");
    /* keys: numbered, so that two stay two */
    /* a quoted password with an escaped quote inside: all of it goes */
    check_json("{\"password\": \"ab\\\"cd\\\\ef\", \"n\": 1}",
               "{\"password\": \"[REDACTED:password]\", \"n\": 1}");
    check_json("{\"" GHP "\": 1, \"" GHP "x\": 2}",
               "{\"[REDACTED:github-token#1]\": 1, \"[REDACTED:github-token#2]\": 2}");
    CHECK_EQ(h_failed_checks, before);
}

TEST(json_keys_stay_distinct)
{
    struct redact_set *s = builtins();
    CHECK(s);
    const char *in = "{\"AKIAIOSFODNN7EXAMPLE\": 1, \"AKIAIOSFODNN7EXAMPL2\": 2}";
    size_t n;
    char *r = redact_text(s, NULL, in, strlen(in), &n, NULL);
    CHECK(r);
    CHECK_STR(r, "{\"[REDACTED:aws-access-key#1]\": 1, \"[REDACTED:aws-access-key#2]\": 2}");
    CHECK_EQ(shape_format_of(r, n), SHAPE_JSON);
    free(r);
    /* JSON Lines too */
    in = "{\"t\": \"" GHP "\"}\n{\"t\": \"password=x\"}\n";
    r = redact_text(s, NULL, in, strlen(in), &n, NULL);
    CHECK(r);
    CHECK_STR(r, "{\"t\": \"[REDACTED:github-token]\"}\n{\"t\": \"password=[REDACTED:password]\"}\n");
    CHECK_EQ(shape_format_of(r, n), SHAPE_JSONL);
    free(r);
    redact_set_free(s);
}

TEST(json_match_outside_strings_left)
{
    struct err err = {0};
    const char *file = "digits\t[0-9]{6,}\n";
    struct redact_set *s = redact_set_parse(file, strlen(file), "f", 0, &err);
    CHECK(s);
    json_t *c = json_object();
    /* a number cannot hold the marker: left alone, and not counted */
    CHECK_STR(red(s, NULL, "{\"n\": 1234567, \"s\": \"1234567\"}", c),
              "{\"n\": 1234567, \"s\": \"[REDACTED:digits]\"}");
    CHECK_EQ(count_of(c, "digits"), 1);
    /* the same bytes as text are redacted everywhere */
    CHECK_STR(red(s, NULL, "n: 1234567", NULL), "n: [REDACTED:digits]");
    redact_set_free(s);
    /* a match that ends, or starts, inside an escape takes the whole escape */
    file = "end\tabc\\\\u00\nstart\t00e9z\n";
    s = redact_set_parse(file, strlen(file), "f", 0, &err);
    CHECK(s);
    CHECK_STR(red(s, NULL, "{\"a\": \"abc\\u00e9!\"}", NULL), "{\"a\": \"[REDACTED:end]!\"}");
    CHECK_STR(red(s, NULL, "{\"a\": \"x\\u00e9z!\"}", NULL), "{\"a\": \"x[REDACTED:start]!\"}");
    CHECK_STR(red(s, NULL, "[\"x\\\\u00e9z\"]", NULL), "[\"x\\\\u[REDACTED:start]\"]");
    json_decref(c);
    redact_set_free(s);
}

/* ---- the file ---------------------------------------------------------------- */

static void bad_file(const char *text, const char *want)
{
    struct err err = {0};
    struct redact_set *s = redact_set_parse(text, strlen(text), "pats.txt", 1, &err);
    if (s) {
        H_FAIL("accepted: %s", text);
        redact_set_free(s);
    } else if (!strstr(err.msg, want)) {
        H_FAIL("message \"%s\" lacks \"%s\"", err.msg, want);
    }
}

TEST(file_format)
{
    struct err err = {0};
    const char *text = "# comment\n\n   # indented comment\r\n"
                       "internal-host\tinternal\\.example\\.com\n"
                       "ticket   (?i)TICKET-[0-9]{4}   \r\n";
    struct redact_set *s = redact_set_parse(text, strlen(text), "f", 1, &err);
    if (!s)
        printf("# %s\n", err.msg);
    CHECK(s);
    CHECK_EQ(redact_set_count(s), 10);
    CHECK_STR(redact_set_name(s, 8), "internal-host");
    CHECK_STR(redact_set_name(s, 9), "ticket");
    CHECK_STR(red(s, NULL, "see internal.example.com ticket-1234 ", NULL),
              "see [REDACTED:internal-host] [REDACTED:ticket] ");
    redact_set_free(s);
    /* built-ins off: the file's patterns alone */
    s = redact_set_parse(text, strlen(text), "f", 0, &err);
    CHECK(s);
    CHECK_EQ(redact_set_count(s), 2);
    CHECK_STR(red(s, NULL, GHP, NULL), GHP);
    redact_set_free(s);
}

TEST(file_empty)
{
    struct err err = {0};
    struct redact_set *s = redact_set_parse("", 0, "empty", 1, &err);
    CHECK(s);
    CHECK_EQ(redact_set_count(s), 8);
    CHECK_STR(red(s, NULL, GHP, NULL), "[REDACTED:github-token]");
    redact_set_free(s);
    s = redact_set_parse("# nothing\n\n", 11, "empty", 0, &err);
    CHECK(s);
    CHECK_EQ(redact_set_count(s), 0);
    CHECK_STR(red(s, NULL, GHP, NULL), GHP);
    redact_set_free(s);
}

TEST(file_errors_name_the_line)
{
    int before = h_failed_checks;
    bad_file("ok\tabc\nonlyname\n", "pats.txt:2: 'onlyname' has no pattern");
    bad_file("# c\nbad/name\tabc\n", "pats.txt:2: 'bad/name' is not a pattern name");
    bad_file("a\tabc\n\nb\t(unclosed\n",
             "pats.txt:3: pattern 'b' does not compile at offset 9: missing closing parenthesis");
    bad_file("a\tx*\n", "pats.txt:1: pattern 'a' can match the empty string");
    bad_file("a\tx\na\ty\n", "pats.txt:2: the name 'a' is already used on line 1");
    bad_file("github-token\tx\n", "pats.txt:1: the name 'github-token' is a built-in");
    bad_file("a\tabc\nb\t\\K\n", "pats.txt:2: pattern 'b' can match the empty string");
    CHECK_EQ(h_failed_checks, before);
}

TEST(file_patterns_keep_their_own_meaning)
{
    struct err err = {0};
    /* each pattern is its own: \Q without \E, a back reference, a leading
     * (*CRLF) and an extended-mode comment touch no other pattern */
    const char *text = "lit\t\\Qa+b(\nrep\t(x[0-9])\\1\ncr\t(*CRLF)CR[0-9]\n"
                       "ext\t(?x) E X T # a comment\nnum\t[0-9]{5}\n";
    struct redact_set *s = redact_set_parse(text, strlen(text), "f", 0, &err);
    if (!s)
        printf("# %s\n", err.msg);
    CHECK(s);
    CHECK_STR(red(s, NULL, "x a+b( x1x1 x1x2 CR7 EXT 12345", NULL),
              "x [REDACTED:lit] [REDACTED:rep] x1x2 [REDACTED:cr] [REDACTED:ext] [REDACTED:num]");
    redact_set_free(s);
}

TEST(open_file_and_reload)
{
    char path[] = "/tmp/redact-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *v1 = "one\tONE[0-9]+\n";
    CHECK(write(fd, v1, strlen(v1)) == (ssize_t)strlen(v1));
    close(fd);
    struct err err = {0};
    struct redact *r = redact_open(path, 1, &err);
    CHECK(r);
    json_t *o = json_pack("{s:s}", "stdout", "ONE1 TWO2");
    const char *const f[] = {"stdout", NULL};
    json_t *c = redact_members(r, NULL, o, f, NULL);
    CHECK(c);
    CHECK_STR(json_string_value(json_object_get(o, "stdout")), "[REDACTED:one] TWO2");
    json_decref(c);
    /* a bad version is refused and the loaded set kept */
    FILE *w = fopen(path, "w");
    fputs("one\tONE[0-9]+\ntwo\t(TWO\n", w);
    fclose(w);
    CHECK_EQ(redact_reload(r), -1);
    json_object_set_new(o, "stdout", json_string("ONE1 TWO2"));
    json_decref(redact_members(r, NULL, o, f, NULL));
    CHECK_STR(json_string_value(json_object_get(o, "stdout")), "[REDACTED:one] TWO2");
    w = fopen(path, "w");
    fputs("two\tTWO[0-9]+\n", w);
    fclose(w);
    CHECK_EQ(redact_reload(r), 1);
    json_object_set_new(o, "stdout", json_string("ONE1 TWO2"));
    json_decref(redact_members(r, NULL, o, f, NULL));
    CHECK_STR(json_string_value(json_object_get(o, "stdout")), "ONE1 [REDACTED:two]");
    json_decref(o);
    redact_close(r);
    /* at start: a bad file names itself and its line */
    w = fopen(path, "w");
    fputs("# x\ngood\tabc\nbad\t[z-a]\n", w);
    fclose(w);
    CHECK(!redact_open(path, 1, &err));
    char want[300];
    snprintf(want, sizeof want, "%s:3: pattern 'bad' does not compile at offset 3: "
                                "range out of order in character class", path);
    CHECK_STR(err.msg, want);
    unlink(path);
    CHECK(!redact_open(path, 1, &err));
    CHECK(strstr(err.msg, "cannot read the redaction file"));
}

TEST(run_result_meta_and_metrics)
{
    struct stats st = {0};
    static const char *const names[] = {"t"};
    stats_init(&st, names, 1);
    struct err err = {0};
    struct redact *r = redact_open(NULL, 1, &err);
    CHECK(r);
    json_t *res = json_pack("{s:s, s:s, s:s, s:s, s:{s:i}}", "stdout", GHP " " GHP, "stderr",
                            "password=x", "hint", "ok", "status", "ok", "_meta", "x", 1);
    redact_run_result(r, NULL, res, &st);
    json_t *m = json_object_get(json_object_get(res, "_meta"), REDACT_META);
    CHECK(m);
    CHECK_EQ(count_of(m, "github-token"), 2);
    CHECK_EQ(count_of(m, "password"), 1);
    CHECK(!json_object_get(json_object_get(res, "_meta"), "x"));
    CHECK_STR(json_string_value(json_object_get(res, "stdout")),
              "[REDACTED:github-token] [REDACTED:github-token]");
    json_decref(res);
    /* nothing found: no _meta at all */
    res = json_pack("{s:s}", "stdout", "clean");
    redact_run_result(r, NULL, res, &st);
    CHECK(!json_object_get(res, "_meta"));
    json_decref(res);
    stats_redacted(&st, "env:API_TOKEN", 3);
    struct buf b;
    buf_init(&b, 0);
    stats_prometheus(&st, &b);
    CHECK(strstr(b.p, "skill_mcp_redactions_total{pattern=\"github-token\"} 2\n"));
    CHECK(strstr(b.p, "skill_mcp_redactions_total{pattern=\"password\"} 1\n"));
    CHECK(strstr(b.p, "skill_mcp_redactions_total{pattern=\"env\"} 3\n"));
    CHECK(!strstr(b.p, "API_TOKEN"));
    buf_cleanup(&b);
    redact_close(r);
    stats_cleanup(&st);
}

TEST(ten_mb_in_one_pass)
{
    struct redact_set *s = builtins();
    CHECK(s);
    size_t n = 10u << 20;
    char *t = xmalloc(n + 1);
    static const char line[] = "2026-12-01 INFO request served path=/api/v1/items status=200 "
                               "bytes=5123 user=alice agent=curl/8.5\n";
    size_t at = 0, lines = 0;
    while (at + sizeof line <= n) {
        memcpy(t + at, line, sizeof line - 1);
        at += sizeof line - 1;
        if (++lines % 1000 == 0) {
            memcpy(t + at - 41, GHP, 40);   /* a token every 1000 lines */
        }
    }
    n = at;
    t[n] = '\0';
    json_t *c = json_object();
    size_t len;
    struct timespec a, z;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    char *r = redact_text(s, NULL, t, n, &len, c);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &z);
    double ms = (double)(z.tv_sec - a.tv_sec) * 1e3 + (double)(z.tv_nsec - a.tv_nsec) / 1e6;
    printf("# 10 MB redacted in %.1f ms of CPU (%ld tokens)\n", ms, count_of(c, "github-token"));
    CHECK(r);
    CHECK_EQ(count_of(c, "github-token"), (long)(lines / 1000));
    /* generous here (sanitizer builds, a shared machine); bench/redact.c
     * measures it */
    CHECK(ms < 1000);
    free(r);
    free(t);
    json_decref(c);
    redact_set_free(s);
}

/* ---- streaming ---- */

struct sink {
    char out[1 << 18];
    size_t len;
    int chunks;
    int partial_line;       /* a chunk that did not end a line */
};

static void sink_emit(const char *t, size_t n, void *arg)
{
    struct sink *k = arg;
    if (k->len + n < sizeof k->out) {
        memcpy(k->out + k->len, t, n);
        k->len += n;
        k->out[k->len] = '\0';
    }
    k->chunks++;
    if (!n || t[n - 1] != '\n')
        k->partial_line = 1;
}

static struct redact *open_builtins(void)
{
    struct err err = {0};
    struct redact *r = redact_open(NULL, 1, &err);
    if (!r)
        printf("# %s\n", err.msg);
    return r;
}

/* Fed one byte at a time, nothing of a secret goes out before it can be
 * recognised: whole lines only, a key block held to its END. */
TEST(stream_whole_lines_never_half_a_secret)
{
    struct redact *r = open_builtins();
    CHECK(r);
    static struct sink k;
    memset(&k, 0, sizeof k);
    struct redact_stream *rs = redact_stream_new(r, NULL, NULL, sink_emit, &k);
    static const char in[] = "step 1\ntoken " GHP " ok\n"
                             "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEF\n"
                             "-----END PRIVATE KEY-----\nstep 2\nlast";
    for (size_t i = 0; i < sizeof in - 1; i++) {
        redact_stream_feed(rs, in + i, 1);
        /* what went out so far holds no part of the key body */
        CHECK(!strstr(k.out, "MIIE") && !strstr(k.out, "hkiG"));
        CHECK(!strstr(k.out, "ghp_"));
    }
    CHECK(!k.partial_line);
    CHECK_STR(k.out, "step 1\ntoken [REDACTED:github-token] ok\n[REDACTED:private-key]\nstep 2\n");
    redact_stream_flush(rs);
    CHECK_STR(k.out, "step 1\ntoken [REDACTED:github-token] ok\n[REDACTED:private-key]\nstep 2\nlast");
    json_t *c = redact_stream_counts(rs);
    CHECK_EQ(count_of(c, "github-token"), 1);
    CHECK_EQ(count_of(c, "private-key"), 1);
    redact_stream_free(rs);
    redact_close(r);
}

/* A held block that never ends goes out, redacted, at the hold limit; so
 * does one over-long line. */
TEST(stream_hold_is_bounded)
{
    struct redact *r = open_builtins();
    CHECK(r);
    static struct sink k;
    memset(&k, 0, sizeof k);
    struct redact_stream *rs = redact_stream_new(r, NULL, NULL, sink_emit, &k);
    redact_stream_feed(rs, "-----BEGIN PRIVATE KEY-----\n", 28);
    CHECK_EQ(k.len, 0);
    char line[81];
    memset(line, 'A', 79);
    line[79] = '\n';
    line[80] = '\0';
    int fed = 0;
    while (!k.len && fed < (int)(REDACT_STREAM_HOLD / 80) + 2) {
        redact_stream_feed(rs, line, 80);
        fed++;
    }
    CHECK_EQ(fed, (int)((REDACT_STREAM_HOLD - 28 + 79) / 80));
    CHECK_EQ(k.chunks, 1);
    CHECK(!strstr(k.out, "AAAA"));
    CHECK_STR(k.out, "[REDACTED:private-key]");
    redact_stream_free(rs);

    memset(&k, 0, sizeof k);
    rs = redact_stream_new(r, NULL, NULL, sink_emit, &k);
    char *big = xmalloc(REDACT_STREAM_HOLD + 10);
    memset(big, 'x', REDACT_STREAM_HOLD + 10);
    redact_stream_feed(rs, big, REDACT_STREAM_HOLD + 10);
    CHECK_EQ(k.len, REDACT_STREAM_HOLD + 10);
    free(big);
    redact_stream_free(rs);
    redact_close(r);
}

/* The run's env values, also one with a line break, fed in pieces. */
TEST(stream_env_values)
{
    struct redact *r = open_builtins();
    CHECK(r);
    char *envp[] = {"API_TOKEN=tok-1234567890", "MULTI=first-half\nsecond-half", NULL};
    json_t *names = json_pack("[s,s]", "API_TOKEN", "MULTI");
    struct redact_env *e = redact_env_new(envp, names);
    CHECK(e);
    static struct sink k;
    memset(&k, 0, sizeof k);
    struct redact_stream *rs = redact_stream_new(r, e, NULL, sink_emit, &k);
    static const char in[] = "a tok-1234567890 b\nx first-half\nsecond-half y\n";
    for (size_t i = 0; i < sizeof in - 1; i += 3)
        redact_stream_feed(rs, in + i, sizeof in - 1 - i < 3 ? sizeof in - 1 - i : 3);
    redact_stream_flush(rs);
    CHECK_STR(k.out, "a [REDACTED:env:API_TOKEN] b\nx [REDACTED:env:MULTI] y\n");
    redact_stream_free(rs);
    redact_env_free(e);
    json_decref(names);
    redact_close(r);
}

/* The one function behind read_skill_file and resources/read: binary bytes
 * are searched too, counts returned and recorded. */
TEST(file_bytes_text_and_binary)
{
    struct redact *r = open_builtins();
    CHECK(r);
    static const char bin[] = "\x00\x01\xff AKIAIOSFODNN7EXAMPLE \x00\xfe";
    size_t len;
    json_t *c;
    char *out = redact_file(r, bin, sizeof bin - 1, &len, &c, NULL);
    CHECK(out);
    CHECK(c);
    static const char want[] = "\x00\x01\xff [REDACTED:aws-access-key] \x00\xfe";
    CHECK_EQ(len, sizeof want - 1);
    CHECK(!memcmp(out, want, len));
    CHECK_EQ(count_of(c, "aws-access-key"), 1);
    free(out);
    json_decref(c);
    CHECK(!redact_file(r, "plain\n", 6, &len, &c, NULL));
    CHECK(!c);
    CHECK(!redact_file(NULL, bin, sizeof bin - 1, &len, &c, NULL));
    CHECK(!c);
    redact_close(r);
}

TEST(meta_add_sums)
{
    json_t *res = json_pack("{s:{s:{s:i}}}", "_meta", REDACT_META, "github-token", 1);
    json_t *c = json_pack("{s:i, s:i}", "github-token", 2, "password", 1);
    redact_meta_add(res, c);
    json_t *m = json_object_get(json_object_get(res, "_meta"), REDACT_META);
    CHECK_EQ(count_of(m, "github-token"), 3);
    CHECK_EQ(count_of(m, "password"), 1);
    json_t *bare = json_object();
    redact_meta_add(bare, c);
    CHECK_EQ(count_of(json_object_get(json_object_get(bare, "_meta"), REDACT_META), "password"), 1);
    json_decref(bare);
    json_decref(res);
    json_decref(c);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    RUN(builtin_bearer_token);
    RUN(builtin_aws_keys);
    RUN(builtin_private_key);
    RUN(builtin_github_tokens);
    RUN(builtin_slack_token);
    RUN(builtin_password_value_only);
    RUN(long_values_replaced_whole);
    RUN(json_escaped_builtins);
    RUN(counts_per_pattern);
    RUN(nothing_to_redact_returns_null);
    RUN(match_at_buffer_end);
    RUN(overlapping_matches);
    RUN(utf8_preserved);
    RUN(invalid_utf8_does_not_crash);
    RUN(env_values);
    RUN(env_values_json_escaped);
    RUN(json_stays_json);
    RUN(json_keys_stay_distinct);
    RUN(json_match_outside_strings_left);
    RUN(file_format);
    RUN(file_empty);
    RUN(file_errors_name_the_line);
    RUN(file_patterns_keep_their_own_meaning);
    RUN(open_file_and_reload);
    RUN(run_result_meta_and_metrics);
    RUN(ten_mb_in_one_pass);
    RUN(stream_whole_lines_never_half_a_secret);
    RUN(stream_hold_is_bounded);
    RUN(stream_env_values);
    RUN(meta_add_sums);
    RUN(file_bytes_text_and_binary);
    DONE();
}
