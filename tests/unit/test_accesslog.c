/* Unit tests for accesslog.c: the text and JSON lines, quoting of values that
 * come from the request, the drain's line, and a stop that writes what is
 * queued. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accesslog.h"
#include "harness.h"
#include "util.h"

static char path[64];

static char *slurp(void)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* The line without its timestamp (everything up to the first space). */
static const char *after_ts(const char *line)
{
    const char *sp = strchr(line, ' ');
    return sp ? sp : line;
}

static struct sockaddr_in peer4(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(40000)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    return sa;
}

TEST(text_line_and_quoting)
{
    struct err why;
    strcpy(path, "/tmp/skill-mcp-al-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ(accesslog_start(path, 0, &why), 0);
    CHECK(accesslog_on());
    struct sockaddr_in sa = peer4();
    struct accesslog_rec r = {.peer = (struct sockaddr *)&sa, .client = "alice", .http_method = "POST",
                              .path = "/mcp", .rpc = "tools/call", .tool = "load_skill",
                              .skill = "a b\"c\n", .status = 200, .us = 1234};
    accesslog_write(&r);
    struct accesslog_rec bare = {.http_method = "HEAD", .path = "/healthz", .status = 200, .us = 5,
                                 .client_gone = 1};
    accesslog_write(&bare);
    accesslog_drained(3, 1, 1.5);
    accesslog_stop();
    CHECK(!accesslog_on());
    char *text = slurp();
    CHECK(text);
    char *l1 = text, *l2 = strchr(l1, '\n');
    CHECK(l2);
    *l2++ = '\0';
    char *l3 = strchr(l2, '\n');
    CHECK(l3);
    *l3++ = '\0';
    CHECK_STR(after_ts(l1), " peer=127.0.0.1 client=alice method=POST path=/mcp status=200 "
                            "ms=1.234 rpc=tools/call tool=load_skill skill=\"a b\\\"c\\n\"");
    CHECK_STR(after_ts(l2), " peer=- client=- method=HEAD path=/healthz status=200 ms=0.005 rpc=- "
                            "tool=- skill=- client_gone=1");
    CHECK_STR(after_ts(l3), " drained: 3 requests answered during the drain, 1 cut off, in 1.500 s\n");
    unlink(path);
}

TEST(json_lines_parse)
{
    struct err why;
    strcpy(path, "/tmp/skill-mcp-al-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ(accesslog_start(path, 1, &why), 0);
    struct sockaddr_in sa = peer4();
    /* a skill argument that is not UTF-8 still makes a JSON line */
    struct accesslog_rec r = {.peer = (struct sockaddr *)&sa, .http_method = "POST", .path = "/mcp",
                              .rpc = "tools/call", .tool = "run_skill_script", .skill = "x\xff\"",
                              .status = 401, .us = 2000};
    accesslog_write(&r);
    accesslog_drained(0, 0, 0.25);
    accesslog_stop();
    char *text = slurp();
    CHECK(text);
    char *nl = strchr(text, '\n');
    CHECK(nl);
    *nl = '\0';
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    CHECK(o);
    CHECK_STR(json_string_value(json_object_get(o, "peer")), "127.0.0.1");
    CHECK_EQ(json_integer_value(json_object_get(o, "status")), 401);
    CHECK(json_real_value(json_object_get(o, "duration_ms")) == 2.0);
    CHECK_STR(json_string_value(json_object_get(o, "skill")), "x\\xFF\"");
    CHECK(!json_object_get(o, "client"));
    CHECK(json_is_false(json_object_get(o, "client_gone")));
    json_decref(o);
    json_t *d = json_loads(nl + 1, 0, &e);
    CHECK(d);
    CHECK_STR(json_string_value(json_object_get(d, "event")), "drained");
    CHECK_EQ(json_integer_value(json_object_get(d, "requests")), 0);
    json_decref(d);
    unlink(path);
}

TEST(bad_path_refused)
{
    struct err e, why;
    CHECK_EQ(accesslog_check("/nonexistent-dir/x/access.log", &e), -1);
    CHECK_STR(e.msg, "cannot open /nonexistent-dir/x/access.log for appending: "
                     "No such file or directory");
    CHECK_EQ(accesslog_start("/nonexistent-dir/x/access.log", 0, &why), -1);
    CHECK_STR(why.msg, "cannot open /nonexistent-dir/x/access.log for appending: "
                       "No such file or directory");
    CHECK(!accesslog_on());
    CHECK_EQ(accesslog_check("-", &e), 0);
}

int main(void)
{
    RUN(text_line_and_quoting);
    RUN(json_lines_parse);
    RUN(bad_path_refused);
    DONE();
}
