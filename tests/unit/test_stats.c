/*
 * test_stats.c - the counters are kept per thread and read as one sum.
 */
#include <pthread.h>
#include <string.h>

#include "../../server/stats.h"
#include "../../server/util.h"
#include "harness.h"

static struct stats st;
static const char *const names[] = {"list_skills", "load_skill"};

static void *counter(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        stats_record(&st, 1, 3000, i % 10 == 0);
        stats_request(&st, "tools/call", 200);
        stats_skill(&st, "csv-profile", STATS_USE_CALL, 0);
    }
    return NULL;
}

/* Threads count into their own copies; every reader sees the sum. */
TEST(counts_from_threads_sum_up)
{
    stats_init(&st, names, 2);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, counter, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    counter(NULL);

    json_t *t = stats_tools_json(&st);
    json_t *ls = json_object_get(t, "load_skill");
    CHECK_EQ(json_integer_value(json_object_get(ls, "calls")), 4000);
    CHECK_EQ(json_integer_value(json_object_get(ls, "errors")), 400);
    CHECK(json_real_value(json_object_get(ls, "p50_ms")) > 0.002);
    json_decref(t);

    json_t *u = stats_skills_json(&st);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(u, "csv-profile"), "calls")),
             4000);
    json_decref(u);

    struct buf b;
    buf_init(&b, 1 << 20);
    stats_prometheus(&st, &b);
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"tools/call\",status=\"200\"} 4000\n"));
    CHECK(strstr(b.p, "skill_mcp_tool_calls_total{tool=\"load_skill\",outcome=\"ok\"} 3600\n"));
    CHECK(strstr(b.p, "skill_mcp_tool_duration_seconds_count{tool=\"load_skill\"} 4000\n"));
    CHECK(strstr(b.p, "skill_mcp_skill_uses_total{skill=\"csv-profile\",kind=\"call\"} 4000\n"));
    buf_cleanup(&b);
    stats_cleanup(&st);
}

/* Requests are counted under their own method whatever came before on the
 * thread: the same name, another, none, one not known. */
TEST(requests_by_method_in_any_order)
{
    stats_init(&st, names, 2);
    static const char *const seq[] = {"skills/get", "skills/get", "tools/call", "skills/get",
                                      NULL, "skills/list", "tasks/get", "skills/get",
                                      "tools/call"};
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++)
        stats_request(&st, seq[i], seq[i] ? 200 : 202);
    struct buf b;
    buf_init(&b, 1 << 20);
    stats_prometheus(&st, &b);
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"skills/get\",status=\"200\"} 4\n"));
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"tools/call\",status=\"200\"} 2\n"));
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"skills/list\",status=\"200\"} 1\n"));
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"notification\",status=\"202\"} 1\n"));
    CHECK(strstr(b.p, "skill_mcp_requests_total{method=\"other\",status=\"200\"} 1\n"));
    buf_cleanup(&b);
    stats_cleanup(&st);
}

int main(void)
{
    x_install_json_alloc();
    RUN(counts_from_threads_sum_up);
    RUN(requests_by_method_in_any_order);
    DONE();
}
