/*
 * main.c - wiring, read top to bottom: flags -> skills -> loop -> HTTP ->
 * wait for a signal -> stop in reverse order.
 *
 * Signals are taken synchronously with sigwait() on this thread (blocked in
 * every other thread), so no handler ever runs inside library code.
 * SIGHUP rescans the skills now; SIGINT/SIGTERM stop the server.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "http.h"
#include "loop.h"
#include "script.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

static const char instructions[] =
    "This server is a library of skills: expert instructions, references and scripts for "
    "specific tasks. Call list_skills first (pass a query describing the task to rank skills "
    "by relevance). Before acting on a skill, call load_skill to read its instructions (or "
    "one section of them), then follow them. Use read_skill_file for the references a skill "
    "points to, and run_skill_script to run a skill's bundled scripts rather than "
    "re-implementing them.";

static const char instructions_read_only[] =
    "This server is a library of skills: expert instructions, references and scripts for "
    "specific tasks. Call list_skills first (pass a query describing the task to rank skills "
    "by relevance). Before acting on a skill, call load_skill to read its instructions (or "
    "one section of them), then follow them. Use read_skill_file for the references a skill "
    "points to. This server does not run scripts.";

int main(int argc, char **argv)
{
    struct srv S = {0};
    sigset_t sigs;
    int rc = cfg_parse(&S.cfg, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;

    log_set_level((enum log_level)S.cfg.log_level);
    log_set_json(S.cfg.log_json);
    x_install_json_alloc();

    /* Block the signals before any thread starts, so all inherit the mask. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    size_t ntools;
    const char *const *names = tools_names(&ntools);
    stats_init(&S.stats, names, ntools);
    S.instructions = S.cfg.no_scripts ? instructions_read_only : instructions;
    S.ttl_ms = S.cfg.refresh_interval > 0 ? (int64_t)(S.cfg.refresh_interval * 1000) : 60000;
    tools_setup(&S);
    if (!S.cfg.no_scripts)
        S.scripts = script_setup(&S.cfg);

    S.skills = skills_new(S.cfg.roots, S.cfg.nroots, S.cfg.hooks_dir, tools_ext_build, tools_ext_free, &S);
    if (!S.skills) {
        fprintf(stderr, "skill-mcp: no usable --skills directory; give one with --skills DIR\n");
        return 2;
    }
    struct loop *loop = loop_start(&S, S.cfg.refresh_interval);
    int port = 0;
    struct http *http = loop ? http_start(&S, &port) : NULL;
    if (!http) {
        loop_stop(loop);
        skills_free(S.skills);
        return 1;
    }
    const char *h = S.cfg.host;
    int v6 = strchr(h, ':') && h[0] != '[';
    log_info("skill-mcp %s listening on http://%s%s%s:%d%s (%d threads, refresh %gs)",
             SKILL_VERSION, v6 ? "[" : "", h, v6 ? "]" : "", port, S.cfg.path, S.cfg.threads,
             S.cfg.refresh_interval);

    for (;;) {
        int sig = 0;
        if (sigwait(&sigs, &sig))
            continue;
        if (sig == SIGHUP) {
            log_info("SIGHUP: rescanning skills");
            skills_rescan(S.skills, 1, NULL);
            continue;
        }
        log_info("%s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
        break;
    }

    /* Scripts still running are stopped and answered before the HTTP side
     * goes: libmicrohttpd must not be stopped with suspended connections. */
    http_quiesce(http);
    loop_stop(loop);
    http_stop(http);
    skills_free(S.skills);
    tools_cleanup(&S);
    script_free(S.scripts);
    stats_cleanup(&S.stats);
    return 0;
}
