/*
 * test_cfgfile.c - --config FILE (server/cfgfile.c, applied by config.c):
 * every flag by its long name, the command line wins, and each refusal
 * names FILE:LINE.
 */
#include "harness.h"
#include "quiet.h"
#include "tmptree.h"
#include "config.h"
#include "cfgfile.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/skill-mcp-cfgfile.XXXXXX";
static char errbuf[4096];

static char *write_file(const char *name, const char *text)
{
    static char path[8][256];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

/* cfg_parse with stdout dropped and stderr kept in errbuf. */
static int parse(struct cfg *c, int argc, char **argv)
{
    char ep[300];
    snprintf(ep, sizeof ep, "%s/stderr", dir);
    struct quiet q = quiet_begin(NULL, ep);
    int r = cfg_parse(c, argc, argv);
    quiet_end(q);
    FILE *f = fopen(ep, "r");
    size_t n = fread(errbuf, 1, sizeof errbuf - 1, f);
    errbuf[n] = '\0';
    fclose(f);
    return r;
}

static int parse_file(struct cfg *c, const char *text)
{
    char *p = write_file("c.yaml", text);
    char *argv[] = {"skill-mcp", "--config", p, NULL};
    return parse(c, 3, argv);
}

TEST(every_kind_of_value)
{
    struct cfg c;
    CHECK_EQ(parse_file(&c, "# comment\n"
                            "host: 0.0.0.0\n"
                            "port: 9123\n"
                            "skills: [/a, /b]\n"
                            "refresh-interval: 0.5\n"
                            "max-body: 4096\n"
                            "log-level: warn\n"
                            "log-format: json\n"
                            "no-scripts: true\n"
                            "stateful: false\n"
                            "interpreter:\n  - .py=/usr/bin/python3\n  - .sh=/bin/sh\n"
                            "context-share: 0.5\n"
                            "allowed-origins: \"https://a.example, https://b.example\"\n"),
             0);
    CHECK_STR(c.host, "0.0.0.0");
    CHECK_EQ(c.port, 9123);
    CHECK_EQ(c.nroots, 2);
    CHECK_STR(c.roots[0], "/a");
    CHECK_STR(c.roots[1], "/b");
    CHECK(c.refresh_interval == 0.5);
    CHECK_EQ(c.max_body, 4096);
    CHECK_EQ(c.log_level, LOG_WARN);
    CHECK_EQ(c.log_json, 1);
    CHECK_EQ(c.no_scripts, 1);
    CHECK_EQ(c.stateful, 0);
    CHECK_EQ(c.ninterpreters, 2);
    CHECK_STR(c.interpreters[1], ".sh=/bin/sh");
    CHECK(c.context_share == 0.5);
    CHECK_STR(c.allowed_origins, "https://a.example, https://b.example");
    CHECK(c.config_file != NULL);
}

TEST(command_line_wins)
{
    struct cfg c;
    char *p = write_file("w.yaml", "port: 9000\nskills: [/from-file, /two]\nhost: ::1\n");
    char *argv[] = {"skill-mcp", "--port", "9001", "--config", p, "--skills", "/cli",
                    NULL};
    CHECK_EQ(parse(&c, 7, argv), 0);
    CHECK_EQ(c.port, 9001);
    CHECK_STR(c.host, "::1");
    /* a repeatable flag on the command line replaces the file's list */
    CHECK_EQ(c.nroots, 1);
    CHECK_STR(c.roots[0], "/cli");
}

TEST(empty_file_sets_nothing)
{
    struct cfg c;
    CHECK_EQ(parse_file(&c, ""), 0);
    CHECK_EQ(c.port, 8000);
    CHECK_EQ(parse_file(&c, "# only a comment\n"), 0);
    CHECK_EQ(c.port, 8000);
}

/* Each refusal: exit 2 (cfg_parse -1) and a message naming FILE:LINE. */
static void refused(const char *text, const char *where, const char *what)
{
    struct cfg c;
    char want[300];
    int r = parse_file(&c, text);
    snprintf(want, sizeof want, "c.yaml:%s: ", where);
    if (r != -1 || !strstr(errbuf, want) || !strstr(errbuf, what))
        H_FAIL("%s: rc %d, stderr: %s (wanted '%s' and '%s')", text, r, errbuf, want, what);
}

TEST(refusals_name_file_and_line)
{
    refused("port: 1\nprot: 2\n", "2", "unknown option 'prot'");
    refused("port: 1\nport: 2\n", "2", "port is given twice (first on line 1)");
    refused("\n\nport: 70000\n", "3", "invalid value '70000' for --port");
    refused("port: [1, 2]\n", "1", "port takes one value, not a list");
    refused("port: {a: 1}\n", "1", "expected a value or a list, not a mapping");
    refused("skills: [[a]]\n", "1", "a list of plain values expected");
    refused("no-scripts: yes\n", "1", "no-scripts is a switch: expected true or false");
    refused("no-scripts: \"true\"\n", "1", "expected true or false");
    refused("port:\n", "1", "port needs a value");
    refused("path: mcp\n", "1", "must start with '/'");
    refused("log-level: loud\n", "1", "expected debug, info, warn or error");
    refused("config: other.yaml\n", "1", "does not name another");
    refused("- port\n", "1", "expected a mapping");
    refused("port: 1\n---\nport: 2\n", "2", "one YAML document expected");
    refused("a: [\n", "2", "not valid YAML");
    refused("help: true\n", "1", "unknown option 'help'");
}

/* cfgfile_read's error keeps the line beside the words that name it. */
TEST(read_error_keeps_the_line)
{
    struct cfgfile cf;
    char *p = write_file("l.yaml", "port: 1\n\n---\nport: 2\n");
    CHECK_EQ(cfgfile_read(&cf, p), -1);
    char want[400];
    snprintf(want, sizeof want, "%s:3: one YAML document expected, found a second", p);
    CHECK_STR(cf.err.msg, want);
    CHECK_EQ(cf.err.line, 3);
    CHECK_EQ(cfgfile_read(&cf, "/nonexistent/skill-mcp.yaml"), -1);
    CHECK_EQ(cf.err.line, 0);
    CHECK(!strncmp(cf.err.msg, "/nonexistent/skill-mcp.yaml: ", 29));
}

TEST(missing_file)
{
    struct cfg c;
    char *argv[] = {"skill-mcp", "--config", "/nonexistent/skill-mcp.yaml", NULL};
    CHECK_EQ(parse(&c, 3, argv), -1);
    CHECK(strstr(errbuf, "/nonexistent/skill-mcp.yaml: cannot read the config file") != NULL);
}

TEST(directory_or_alias_refused)
{
    struct cfg c;
    char *argv[] = {"skill-mcp", "--config", dir, NULL};
    CHECK_EQ(parse(&c, 3, argv), -1);
    CHECK(strstr(errbuf, "cannot read the config file: Is a directory") != NULL);
    /* anchors and aliases (the billion laughs) are refused, never expanded */
    refused("port: &a 8000\nmax-body: *a\n", "2", "not an alias");
}

TEST(reader_lines)
{
    struct cfgfile cf;
    char *p = write_file("r.yaml", "a: 1\nb:\n  - x\n  - 'y'\nc: \"\"\n");
    CHECK_EQ(cfgfile_read(&cf, p), 0);
    CHECK_EQ(cf.n, 4);
    CHECK_STR(cf.e[0].key, "a");
    CHECK_EQ(cf.e[0].line, 1);
    CHECK_EQ(cf.e[2].line, 4);
    CHECK_EQ(cf.e[2].seq, 1);
    CHECK_EQ(cf.e[2].plain, 0);
    CHECK_STR(cf.e[3].val, "");     /* quoted empty: a value, not null */
    cfgfile_free(&cf);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(every_kind_of_value);
    RUN(command_line_wins);
    RUN(empty_file_sets_nothing);
    RUN(refusals_name_file_and_line);
    RUN(read_error_keeps_the_line);
    RUN(missing_file);
    RUN(directory_or_alias_refused);
    RUN(reader_lines);
    tt_rm_rf(dir);
    DONE();
}
