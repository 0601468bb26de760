/*
 * test_metrics.c - the /metrics text, byte for byte: scrapers and
 * dashboards key on its names, labels and order.
 */
#include "harness.h"
#include "metrics.h"
#include "session.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

#include <string.h>

#define FIXTURE_NAME "metrics"
#include "srv_fixture.h"

/* The value after "name " up to the newline replaced by "N": the clock's
 * values change from one run to the next. */
static void blank_value(char *text, const char *name)
{
    char key[96];
    snprintf(key, sizeof key, "\n%s ", name);
    char *p = strstr(text, key);
    if (!p)
        return;
    p += strlen(key);
    char *nl = strchr(p, '\n');
    if (!nl)
        return;
    *p = 'N';
    memmove(p + 1, nl, strlen(nl) + 1);
}

static const char head[] =
    "# HELP skill_mcp_up The server is answering.\n# TYPE skill_mcp_up gauge\n"
    "skill_mcp_up 1\n"
    "# HELP skill_mcp_uptime_seconds Seconds since start.\n"
    "# TYPE skill_mcp_uptime_seconds gauge\nskill_mcp_uptime_seconds N\n"
    "# HELP skill_mcp_index_generation Generation of the skill index.\n"
    "# TYPE skill_mcp_index_generation gauge\nskill_mcp_index_generation 1\n"
    "# HELP skill_mcp_skills Skills served.\n# TYPE skill_mcp_skills gauge\n"
    "skill_mcp_skills 8\n"
    "# HELP skill_mcp_index_problems Broken skills and other errors in the index.\n"
    "# TYPE skill_mcp_index_problems gauge\nskill_mcp_index_problems 0\n"
    "# HELP skill_mcp_index_build_seconds Time the current index took to build.\n"
    "# TYPE skill_mcp_index_build_seconds gauge\nskill_mcp_index_build_seconds N\n";

static const char sessions[] =
    "# HELP skill_mcp_sessions Live --stateful sessions.\n"
    "# TYPE skill_mcp_sessions gauge\nskill_mcp_sessions 1\n"
    "# HELP skill_mcp_sessions_total Sessions by how they started or ended.\n"
    "# TYPE skill_mcp_sessions_total counter\n"
    "skill_mcp_sessions_total{event=\"created\"} 2\n"
    "skill_mcp_sessions_total{event=\"deleted\"} 1\n"
    "skill_mcp_sessions_total{event=\"expired\"} 0\n"
    "skill_mcp_sessions_total{event=\"evicted\"} 0\n"
    "# HELP skill_mcp_notify_streams Open notification streams.\n"
    "# TYPE skill_mcp_notify_streams gauge\nskill_mcp_notify_streams 0\n";

/* The index's gauges, the sessions' (with --stateful), then the counters
 * exactly as stats.c writes them. */
static void check_text(int with_sessions)
{
    stats_request(&S.stats, "tools/call", 200);
    stats_record(&S.stats, 0, 2000, 0);
    struct buf b, want;
    buf_init(&b, 1 << 22);
    buf_init(&want, 1 << 22);
    metrics_text(&S, &b);
    blank_value(b.p, "skill_mcp_uptime_seconds");
    blank_value(b.p, "skill_mcp_index_build_seconds");
    b.len = strlen(b.p);
    buf_puts(&want, head);
    if (with_sessions)
        buf_puts(&want, sessions);
    stats_prometheus(&S.stats, &want);
    CHECK(strstr(want.p, "skill_mcp_requests_total{method=\"tools/call\",status=\"200\"} "));
    CHECK_MEM(b.p, b.len, want.p);
    buf_cleanup(&b);
    buf_cleanup(&want);
}

TEST(text_without_sessions)
{
    check_text(0);
}

TEST(text_with_sessions)
{
    S.sessions = session_new(8, 60);
    char a[SESSION_ID_LEN + 1], c[SESSION_ID_LEN + 1];
    CHECK(session_create(S.sessions, NULL, a) == 0);
    CHECK(session_create(S.sessions, NULL, c) == 0);
    CHECK(session_end(S.sessions, a, NULL));
    check_text(1);
    session_free(S.sessions);
    S.sessions = NULL;
}

int main(void)
{
    make_tree();
    server_up();
    RUN(text_without_sessions);
    RUN(text_with_sessions);
    server_down();
    rm_tree(base);
    DONE();
}
