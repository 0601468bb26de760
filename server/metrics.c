/*
 * metrics.c - the Prometheus text of /metrics: the index, the scripts, the
 * sessions and notification streams, then stats.c's counters. The
 * transport asks for the bytes and serves them.
 */
#include "metrics.h"

#include <string.h>

#include "notify.h"
#include "runner.h"
#include "session.h"
#include "skills.h"
#include "util.h"

void metrics_text(struct srv *S, struct buf *b)
{
    struct snapshot *s = skills_acquire(S->skills);
    size_t problems = 0, i;
    json_t *e;
    json_array_foreach(s->errors, i, e) if (!strcmp(
        json_string_value(json_object_get(e, "level")), "error")) problems++;
    buf_printf(b,
               "# HELP skill_mcp_up The server is answering.\n# TYPE skill_mcp_up gauge\n"
               "skill_mcp_up 1\n"
               "# HELP skill_mcp_uptime_seconds Seconds since start.\n"
               "# TYPE skill_mcp_uptime_seconds gauge\nskill_mcp_uptime_seconds %.1f\n"
               "# HELP skill_mcp_index_generation Generation of the skill index.\n"
               "# TYPE skill_mcp_index_generation gauge\nskill_mcp_index_generation %llu\n"
               "# HELP skill_mcp_skills Skills served.\n# TYPE skill_mcp_skills gauge\n"
               "skill_mcp_skills %zu\n"
               "# HELP skill_mcp_index_problems Broken skills and other errors in the index.\n"
               "# TYPE skill_mcp_index_problems gauge\nskill_mcp_index_problems %zu\n"
               "# HELP skill_mcp_index_build_seconds Time the current index took to build.\n"
               "# TYPE skill_mcp_index_build_seconds gauge\nskill_mcp_index_build_seconds %g\n",
               (double)(now_ns() - S->stats.started_ns) / 1e9,
               (unsigned long long)s->generation, s->n, problems, s->build_ms / 1000.0);
    skills_release(s);
    if (S->runner) {
        struct run_counters c;
        run_counters(S->runner, &c);
        buf_puts(b, "# HELP skill_mcp_scripts_total Scripts by outcome.\n"
                    "# TYPE skill_mcp_scripts_total counter\n");
        const char *names[] = {"started", "ok", "failed", "stalled", "timeout", "denied", "busy"};
        uint64_t vals[] = {c.started, c.ok, c.failed, c.stalled, c.timeout, c.denied, c.busy};
        for (int k = 0; k < 7; k++)
            buf_printf(b, "skill_mcp_scripts_total{outcome=\"%s\"} %llu\n", names[k],
                       (unsigned long long)vals[k]);
        buf_printf(b, "# HELP skill_mcp_scripts_live Script processes running now.\n"
                      "# TYPE skill_mcp_scripts_live gauge\nskill_mcp_scripts_live %lld\n"
                      "# HELP skill_mcp_scripts_queued Calls waiting for a script slot.\n"
                      "# TYPE skill_mcp_scripts_queued gauge\nskill_mcp_scripts_queued %lld\n",
                   (long long)c.live, (long long)c.queued);
    }
    if (S->sessions) {
        struct session_counts sc;
        session_sweep(S->sessions);
        session_counts(S->sessions, &sc);
        buf_printf(b, "# HELP skill_mcp_sessions Live --stateful sessions.\n"
                      "# TYPE skill_mcp_sessions gauge\nskill_mcp_sessions %zu\n"
                      "# HELP skill_mcp_sessions_total Sessions by how they started or ended.\n"
                      "# TYPE skill_mcp_sessions_total counter\n"
                      "skill_mcp_sessions_total{event=\"created\"} %llu\n"
                      "skill_mcp_sessions_total{event=\"deleted\"} %llu\n"
                      "skill_mcp_sessions_total{event=\"expired\"} %llu\n"
                      "skill_mcp_sessions_total{event=\"evicted\"} %llu\n",
                   sc.live, (unsigned long long)sc.created, (unsigned long long)sc.ended,
                   (unsigned long long)sc.expired, (unsigned long long)sc.evicted);
    }
    if (S->sessions)
        buf_printf(b, "# HELP skill_mcp_notify_streams Open notification streams.\n"
                      "# TYPE skill_mcp_notify_streams gauge\nskill_mcp_notify_streams %zu\n",
                   notify_count());
    stats_prometheus(&S->stats, b);
}
