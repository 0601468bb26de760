/*
 * test_config.c - flag parsing and the loopback test (server/config.c).
 */
#include "harness.h"
#include "quiet.h"
#include "config.h"
#include "util.h"

#include <fcntl.h>
#include <unistd.h>

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* cfg_parse with stdout/stderr sent to /dev/null (usage text, messages). */
static int parse_quiet(struct cfg *c, int argc, char **argv)
{
    struct quiet q = quiet_begin(NULL, NULL);
    int r = cfg_parse(c, argc, argv);
    quiet_end(q);
    return r;
}

/* One-flag parse: {"skill-mcp", a, b} (b may be NULL). */
static int parse2(struct cfg *c, char *a, char *b)
{
    char *argv[] = {"skill-mcp", a, b, NULL};
    return parse_quiet(c, b ? 3 : 2, argv);
}

TEST(defaults)
{
    struct cfg c;
    char *argv[] = {"skill-mcp"};
    CHECK_EQ(cfg_parse(&c, ARGC(argv), argv), 0);
    CHECK_STR(c.host, "127.0.0.1");
    CHECK_EQ(c.port, 8000);
    CHECK_STR(c.path, "/mcp");
    CHECK(c.refresh_interval == 5.0);
    CHECK_EQ(c.nroots, 1);
    CHECK_STR(c.roots[0], "./skills");
    CHECK_EQ(c.max_body, 1 << 20);
    CHECK(c.threads >= 2 && c.threads <= 64);
    CHECK_EQ(c.log_level, LOG_INFO);
    CHECK_EQ(c.log_json, 0);
    CHECK(c.allowed_origins == NULL);
    CHECK(c.allowed_hosts == NULL);
}

TEST(argc_one_and_zero)
{
    struct cfg c;
    char *argv[] = {"skill-mcp", NULL};
    CHECK_EQ(cfg_parse(&c, 0, argv), 0);
    CHECK_EQ(c.nroots, 1);
}

TEST(repeated_skills_in_order)
{
    struct cfg c;
    char *argv[] = {"skill-mcp", "--skills", "/a", "--skills=/b", "--skills", "rel/c"};
    CHECK_EQ(cfg_parse(&c, ARGC(argv), argv), 0);
    CHECK_EQ(c.nroots, 3);
    CHECK_STR(c.roots[0], "/a");
    CHECK_STR(c.roots[1], "/b");
    CHECK_STR(c.roots[2], "rel/c");
    /* borrowed, not copied */
    CHECK(c.roots[0] == argv[2]);
}

TEST(too_many_roots)
{
    struct cfg c;
    char *argv[1 + 2 * (CFG_MAX_ROOTS + 1)];
    argv[0] = "skill-mcp";
    for (int i = 0; i < CFG_MAX_ROOTS + 1; i++) {
        argv[1 + 2 * i] = "--skills";
        argv[2 + 2 * i] = "/x";
    }
    CHECK_EQ(parse_quiet(&c, 1 + 2 * CFG_MAX_ROOTS, argv), 0);
    CHECK_EQ(c.nroots, CFG_MAX_ROOTS);
    CHECK_EQ(parse_quiet(&c, ARGC(argv), argv), -1);
}

TEST(flag_equals_value)
{
    struct cfg c;
    char *argv[] = {"skill-mcp",       "--host=0.0.0.0",        "--port=0",
                    "--path=/api/mcp", "--refresh-interval=0.5", "--threads=4",
                    "--max-body=2048", "--log-level=DEBUG",     "--log-format=json",
                    "--allowed-origins=*", "--allowed-hosts=a.example,b.example"};
    CHECK_EQ(cfg_parse(&c, ARGC(argv), argv), 0);
    CHECK_STR(c.host, "0.0.0.0");
    CHECK_EQ(c.port, 0);
    CHECK_STR(c.path, "/api/mcp");
    CHECK(c.refresh_interval == 0.5);
    CHECK_EQ(c.threads, 4);
    CHECK_EQ(c.max_body, 2048);
    CHECK_EQ(c.log_level, LOG_DEBUG);
    CHECK_EQ(c.log_json, 1);
    CHECK_STR(c.allowed_origins, "*");
    CHECK_STR(c.allowed_hosts, "a.example,b.example");
    CHECK_EQ(c.nroots, 1);
}

TEST(flag_space_value)
{
    struct cfg c;
    char *argv[] = {"skill-mcp", "--port", "65535", "--refresh-interval", "0",
                    "--log-level", "error", "--log-format", "text", "--skills", "s"};
    CHECK_EQ(cfg_parse(&c, ARGC(argv), argv), 0);
    CHECK_EQ(c.port, 65535);
    CHECK(c.refresh_interval == 0.0);
    CHECK_EQ(c.log_level, LOG_ERROR);
    CHECK_EQ(c.log_json, 0);
    CHECK_EQ(c.nroots, 1);
    CHECK_STR(c.roots[0], "s");
}

TEST(value_with_equals_sign)
{
    struct cfg c;
    CHECK_EQ(parse2(&c, "--skills=/a=b", NULL), 0);
    CHECK_STR(c.roots[0], "/a=b");
    CHECK_EQ(parse2(&c, "--skills", "/c=d"), 0);
    CHECK_STR(c.roots[0], "/c=d");
}

TEST(bad_values)
{
    struct cfg c;
    CHECK_EQ(parse2(&c, "--port", "abc"), -1);
    CHECK_EQ(parse2(&c, "--port", "70000"), -1);
    CHECK_EQ(parse2(&c, "--port", "65536"), -1);
    CHECK_EQ(parse2(&c, "--port", "-1"), -1);
    CHECK_EQ(parse2(&c, "--port", "80x"), -1);
    CHECK_EQ(parse2(&c, "--port", ""), -1);
    CHECK_EQ(parse2(&c, "--port=", NULL), -1);
    CHECK_EQ(parse2(&c, "--port", "99999999999999999999999"), -1);
    CHECK_EQ(parse2(&c, "--refresh-interval", "-1"), -1);
    CHECK_EQ(parse2(&c, "--refresh-interval", "86401"), -1);
    CHECK_EQ(parse2(&c, "--refresh-interval", "nan"), -1);
    CHECK_EQ(parse2(&c, "--refresh-interval", "inf"), -1);
    CHECK_EQ(parse2(&c, "--refresh-interval", "5s"), -1);
    CHECK_EQ(parse2(&c, "--path", "nope"), -1);
    CHECK_EQ(parse2(&c, "--path", ""), -1);
    CHECK_EQ(parse2(&c, "--host", ""), -1);
    CHECK_EQ(parse2(&c, "--host=", NULL), -1);
    CHECK_EQ(parse2(&c, "--skills", ""), -1);
    CHECK_EQ(parse2(&c, "--log-level", "loud"), -1);
    CHECK_EQ(parse2(&c, "--log-format", "xml"), -1);
    CHECK_EQ(parse2(&c, "--threads", "0"), -1);
    CHECK_EQ(parse2(&c, "--threads", "257"), -1);
    CHECK_EQ(parse2(&c, "--max-body", "1023"), -1);
    CHECK_EQ(parse2(&c, "--max-body", "67108865"), -1);
}

TEST(bounds_ok)
{
    struct cfg c;
    CHECK_EQ(parse2(&c, "--port", "0"), 0);
    CHECK_EQ(c.port, 0);
    CHECK_EQ(parse2(&c, "--refresh-interval", "86400"), 0);
    CHECK(c.refresh_interval == 86400.0);
    CHECK_EQ(parse2(&c, "--threads", "1"), 0);
    CHECK_EQ(parse2(&c, "--threads", "256"), 0);
    CHECK_EQ(c.threads, 256);
    CHECK_EQ(parse2(&c, "--max-body", "1024"), 0);
    CHECK_EQ(parse2(&c, "--max-body", "67108864"), 0);
    CHECK_EQ(c.max_body, 64u << 20);
    CHECK_EQ(parse2(&c, "--log-level", "Warn"), 0);
    CHECK_EQ(c.log_level, LOG_WARN);
}

TEST(unknown_and_missing)
{
    struct cfg c;
    CHECK_EQ(parse2(&c, "--nope", NULL), -1);
    CHECK_EQ(parse2(&c, "--nope=1", NULL), -1);
    CHECK_EQ(parse2(&c, "--por", "80"), -1);        /* no prefix matching */
    CHECK_EQ(parse2(&c, "--portx", "80"), -1);
    CHECK_EQ(parse2(&c, "stray", NULL), -1);
    CHECK_EQ(parse2(&c, "-p", "80"), -1);
    /* missing value at the end */
    CHECK_EQ(parse2(&c, "--port", NULL), -1);
    CHECK_EQ(parse2(&c, "--skills", NULL), -1);
    char *argv[] = {"skill-mcp", "--skills", "a", "--host"};
    CHECK_EQ(parse_quiet(&c, ARGC(argv), argv), -1);
}

TEST(help_and_version)
{
    struct cfg c;
    CHECK_EQ(parse2(&c, "--help", NULL), 1);
    CHECK_EQ(parse2(&c, "-h", NULL), 1);
    CHECK_EQ(parse2(&c, "--version", NULL), 1);
    /* wins over what follows, and over bad flags that follow */
    CHECK_EQ(parse2(&c, "--help", "--port=abc"), 1);
    char *argv[] = {"skill-mcp", "--port", "9000", "--version"};
    CHECK_EQ(parse_quiet(&c, ARGC(argv), argv), 1);
}

TEST(stateful_and_sse)
{
    struct cfg c;
    char *a[] = {"skill-mcp", "--stateful", "--sse", "--max-sessions", "5",
                 "--session-idle-timeout", "2.5"};
    CHECK_EQ(cfg_parse(&c, ARGC(a), a), 0);
    CHECK_EQ(c.stateful, 1);
    CHECK_EQ(c.sse, 1);
    CHECK_EQ(c.max_sessions, 5);
    CHECK(c.session_idle_timeout == 2.5);
    char *d[] = {"skill-mcp"};
    CHECK_EQ(cfg_parse(&c, ARGC(d), d), 0);
    CHECK_EQ(c.stateful, 0);
    CHECK_EQ(c.sse, 0);
    CHECK_EQ(c.max_sessions, 1024);
    CHECK(c.session_idle_timeout == 1800);
    /* sessions live in one process: several workers on one port cannot keep them */
    char *w[] = {"skill-mcp", "--stateful", "--workers", "2"};
    CHECK_EQ(parse_quiet(&c, ARGC(w), w), -1);
    char *w1[] = {"skill-mcp", "--workers", "1", "--stateful"};
    CHECK_EQ(parse_quiet(&c, ARGC(w1), w1), 0);
    CHECK_EQ(parse2(&c, "--max-sessions", "0"), -1);
    CHECK_EQ(parse2(&c, "--session-idle-timeout", "0"), -1);
    CHECK_EQ(parse2(&c, "--stateful=1", NULL), -1);
}

TEST(reparse_resets)
{
    struct cfg c;
    char *a1[] = {"skill-mcp", "--skills", "/a", "--port", "1", "--log-format", "json"};
    CHECK_EQ(cfg_parse(&c, ARGC(a1), a1), 0);
    char *a2[] = {"skill-mcp"};
    CHECK_EQ(cfg_parse(&c, ARGC(a2), a2), 0);
    CHECK_EQ(c.nroots, 1);
    CHECK_STR(c.roots[0], "./skills");
    CHECK_EQ(c.port, 8000);
    CHECK_EQ(c.log_json, 0);
}

TEST(loopback_yes)
{
    CHECK(cfg_is_loopback("127.0.0.1"));
    CHECK(cfg_is_loopback("127.1.2.3"));
    CHECK(cfg_is_loopback("127.255.255.254"));
    CHECK(cfg_is_loopback("localhost"));
    CHECK(cfg_is_loopback("::1"));
    CHECK(cfg_is_loopback("[::1]"));
}

TEST(loopback_no)
{
    CHECK(!cfg_is_loopback("0.0.0.0"));
    CHECK(!cfg_is_loopback("::"));
    CHECK(!cfg_is_loopback("10.0.0.1"));
    CHECK(!cfg_is_loopback("192.168.1.127"));
    CHECK(!cfg_is_loopback("1270.0.0.1"));
    CHECK(!cfg_is_loopback("128.0.0.1"));
    CHECK(!cfg_is_loopback("example.com"));
    CHECK(!cfg_is_loopback("localhost.example.com"));
    CHECK(!cfg_is_loopback(""));
}

/*
 * "127." followed by a DNS name is a host name, not a 127.0.0.0/8 address:
 * http_start() resolves it (it may point anywhere) while cfg_is_loopback
 * calls it loopback.
 */
TEST(loopback_hostname_starting_127)
{
    CHECK(!cfg_is_loopback("127.attacker.example"));
    CHECK(!cfg_is_loopback("127.0.0.1.nip.io"));
}

/*
 * Other spellings of the loopback address. Missing one turns off the
 * loopback-only Host check (DNS-rebinding protection) in http.c although the
 * server is in fact bound to loopback.
 */
TEST(loopback_other_spellings)
{
    CHECK(cfg_is_loopback("LOCALHOST"));
    CHECK(cfg_is_loopback("0:0:0:0:0:0:0:1"));
    CHECK(cfg_is_loopback("[0:0:0:0:0:0:0:1]"));
    CHECK(cfg_is_loopback("::ffff:127.0.0.1"));
}

int main(void)
{
    RUN(defaults);
    RUN(argc_one_and_zero);
    RUN(repeated_skills_in_order);
    RUN(too_many_roots);
    RUN(flag_equals_value);
    RUN(flag_space_value);
    RUN(value_with_equals_sign);
    RUN(bad_values);
    RUN(bounds_ok);
    RUN(unknown_and_missing);
    RUN(help_and_version);
    RUN(reparse_resets);
    RUN(stateful_and_sse);
    RUN(loopback_yes);
    RUN(loopback_no);
    RUN(loopback_hostname_starting_127);
    RUN(loopback_other_spellings);
    DONE();
}
