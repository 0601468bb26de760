/*
 * main.c - wiring, read top to bottom: flags -> skills -> loop -> HTTP ->
 * wait for a signal -> stop in reverse order.
 *
 * Signals are taken synchronously with sigwait() on this thread (blocked in
 * every other thread), so no handler ever runs inside library code.
 * SIGHUP rescans the skills now; SIGINT/SIGTERM stop the server.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accesslog.h"
#include "auth.h"
#include "cli.h"
#include "config.h"
#include "http.h"
#include "lock.h"
#include "loop.h"
#include "notify.h"
#include "redact.h"
#include "acl.h"
#include "runner.h"
#include "script.h"
#include "sdnotify.h"
#include "shape.h"
#include "search.h"
#include "session.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "stdio_mcp.h"
#include "tasks.h"
#include "tools.h"
#include "util.h"

static const char instructions[] =
    "This server is a library of skills: expert instructions, references and scripts for "
    "specific tasks. Call list_skills first (pass a query describing the task to rank skills "
    "by relevance). Before acting on a skill, call load_skill to read its instructions (or "
    "one section of them), then follow them. Use read_skill_file for the references a skill "
    "points to, and run_skill_script to run a skill's bundled scripts rather than "
    "re-implementing them.";

static void log_listening(const struct srv *S, int port)
{
    const char *h = S->cfg.host;
    int v6 = strchr(h, ':') && h[0] != '[';
    log_info("skill-mcp %s listening on http%s://%s%s%s:%d%s (%d worker(s) x %d threads, "
             "refresh %gs)",
             SKILL_VERSION, S->cfg.tls_cert ? "s" : "", v6 ? "[" : "", h, v6 ? "]" : "", port,
             S->cfg.path,
             S->cfg.workers, S->cfg.threads, S->cfg.refresh_interval);
}

/* Requests in flight on the transport being served. */
static long in_flight(struct http *http, struct stdio_mcp *io)
{
    return io ? stdio_active(io) : http_active(http);
}

/*
 * sigwait(), but with --stdio the end of stdin stops the server as SIGTERM
 * does (*sig 0): the client is done with it. 0 with *sig set, or nonzero to
 * wait again.
 */
static int next_signal(const sigset_t *sigs, struct stdio_mcp *io, int *sig)
{
    if (!io)
        return sigwait(sigs, sig);
    struct timespec ts = {0, 100 * 1000000};
    int got = sigtimedwait(sigs, NULL, &ts);
    if (got > 0) {
        *sig = got;
        return 0;
    }
    *sig = 0;
    return !stdio_ended(io);
}

/* How long a drain waits with no request in flight before it ends. */
#define DRAIN_QUIET_NS (200ull * 1000000u)

static const char instructions_read_only[] =
    "This server is a library of skills: expert instructions, references and scripts for "
    "specific tasks. Call list_skills first (pass a query describing the task to rank skills "
    "by relevance). Before acting on a skill, call load_skill to read its instructions (or "
    "one section of them), then follow them. Use read_skill_file for the references a skill "
    "points to. This server does not run scripts.";

/* ---- one serving process ------------------------------------------------- */

static atomic_int http_stopped;

static void *http_stopper(void *arg)
{
    http_stop(arg);
    atomic_store(&http_stopped, 1);
    return NULL;
}

/*
 * http_stop() joins every HTTP thread. One blocked in a read that never
 * returns (a skill file on a hung mount) would hold it, and the process,
 * for ever: stop from another thread, and exit without it after a while.
 */
static void stop_http_or_exit(struct http *http)
{
    pthread_t th;
    if (pthread_create(&th, NULL, http_stopper, http)) {
        http_stop(http);
        return;
    }
    for (int i = 0; i < 200 && !atomic_load(&http_stopped); i++) {
        struct timespec ts = {0, 25 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&http_stopped)) {
        log_error("the HTTP threads did not stop in 5 s (a request stuck in a read); exiting "
                  "without them");
        fflush(NULL);
        _exit(1);
    }
    pthread_join(th, NULL);
}

/*
 * Serves listen_fd until SIGINT/SIGTERM, then drains: stop accepting, wait
 * for requests in flight (running scripts included) up to
 * --shutdown-timeout, stop what is left, exit. A second signal cuts the
 * drain short. Returns the process exit code.
 */
static int serve(struct srv *S, int listen_fd, const sigset_t *sigs, int announce, int port)
{
    /* With a lock, the first snapshot is judged before any request. */
    int gated = lock_active(S->lock);
    S->skills = skills_new_gated(S->cfg.roots, S->cfg.nroots, S->cfg.hooks_dir, tools_ext_build,
                                 tools_ext_free, S, gated ? lock_gate : NULL,
                                 gated ? lock_gate_release : NULL, S->lock);
    if (!S->skills) {
        fprintf(stderr, "skill-mcp: no usable --skills directory; give one with --skills DIR\n");
        return 2;
    }
    skills_on_publish(notify_publish);
    skills_index_bodies(S->skills, tools_card_sizes);
    if (S->cfg.stateful)
        S->sessions = session_new((size_t)S->cfg.max_sessions, S->cfg.session_idle_timeout);
    struct loop *loop = loop_start(S, S->cfg.refresh_interval);
    S->tasks = tasks_start(S);
    struct http *http = NULL;
    struct stdio_mcp *io = NULL;
    if (loop && S->cfg.stdio)
        io = stdio_start(S);
    else if (loop)
        http = http_start(S, listen_fd);
    if (!http && !io) {
        tasks_quiesce(S->tasks);
        loop_stop(loop);
        tasks_free(S->tasks);
        S->tasks = NULL;
        skills_free(S->skills);
        session_free(S->sessions);
        return 1;
    }
    if (io)
        log_info("skill-mcp %s serving MCP on stdin/stdout (refresh %gs)", SKILL_VERSION,
                 S->cfg.refresh_interval);
    else if (announce)
        log_listening(S, port);
    /* The first snapshot is published and the listener answers: what
     * /readyz calls ready is what systemd is told. */
    {
        char status[96];
        snprintf(status, sizeof status, "serving %zu skill root(s)", S->cfg.nroots);
        sdn_ready(status);
    }
    if (!announce)
        log_debug("worker serving");

    int sig = 0;
    for (;;) {
        if (next_signal(sigs, io, &sig) || sig == SIGCHLD)
            continue;   /* scripts are watched through pidfds, not SIGCHLD */
        if (sig == SIGHUP) {
            log_info("SIGHUP: rescanning skills");
            lock_reload(S->lock, 1);
            skills_rescan(S->skills, 1, NULL);
            if (S->auth)
                auth_reload(S->auth, 1);
            redact_reload(S->redact);
            if (acl_reload(S->acl, 1) > 0)
                notify_rules_changed();
            accesslog_reopen();
            continue;
        }
        break;
    }
    sdn_stopping();
    if (io)
        stdio_quiesce(io);
    else
        http_quiesce(http);
    /* after the quiesce: once this line is out, /readyz already says 503 */
    log_info("%s: draining (up to %gs)",
             sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "stdin closed",
             S->cfg.shutdown_timeout);
    uint64_t end = now_ns() + (uint64_t)(S->cfg.shutdown_timeout * 1e9);
    /* No request in flight is not enough: a keep-alive client's next request
     * may be in the socket, not yet read. The drain ends after a quiet spell
     * (every answer now closes its connection, so the spell ends for good). */
    uint64_t quiet_since = 0;
    for (;;) {
        uint64_t now = now_ns();
        if (in_flight(http, io) > 0)
            quiet_since = 0;
        else if (!quiet_since)
            quiet_since = now;
        if ((quiet_since && now - quiet_since >= DRAIN_QUIET_NS) || now >= end)
            break;
        struct timespec ts = {0, 10 * 1000000};
        siginfo_t si;
        int got = sigtimedwait(sigs, &si, &ts);
        /* Ctrl-C or a whole-group kill reaches a worker directly and then
         * again from the master: only a signal from elsewhere cuts the drain. */
        if ((got == SIGTERM || got == SIGINT) && si.si_pid != getppid()) {
            log_warn("second signal: stopping now");
            break;
        }
    }
    if (in_flight(http, io) > 0)
        log_warn("%ld request(s) still in flight; stopping them", in_flight(http, io));
    /* Scripts still running are stopped and answered before the HTTP side
     * goes: libmicrohttpd must not be stopped with suspended connections.
     * Tasks stopped here end as failed; their records are written and every
     * tasks/result still waiting is answered. */
    tasks_quiesce(S->tasks);
    loop_stop(loop);
    tasks_stop(S->tasks);
    /* The stopped scripts' answers were just handed back: let them go out. */
    for (int i = 0; i < 40 && in_flight(http, io) > 0; i++) {
        struct timespec ts = {0, 25 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (io)
        stdio_stop(io);
    else
        stop_http_or_exit(http);
    tasks_free(S->tasks);
    S->tasks = NULL;
    skills_free(S->skills);
    session_free(S->sessions);
    S->sessions = NULL;
    return 0;
}

/* ---- the supervising master (--workers N > 1) ------------------------------ */

struct worker {
    pid_t pid;
    uint64_t started_ns, restart_at_ns;
    uint64_t beat_ns;           /* its last watchdog heartbeat (or its start) */
    int ready;
    double backoff_s;
    int recent_crashes;
    uint64_t window_start_ns;
};

/* Workers' ready and heartbeat messages to the master (sdnotify.h). */
static int notify_pipe[2] = {-1, -1};

static pid_t spawn_worker(struct srv *S, int listen_fd, const sigset_t *sigs, int index)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        char tag[16];
        snprintf(tag, sizeof tag, "w%d", index);
        log_set_tag(tag);
        /* A master killed outright must not leave its workers serving. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            exit(0);
        S->worker = index;
        auth_set_worker(S->auth, index);
        if (notify_pipe[1] >= 0) {
            close(notify_pipe[0]);
            sdn_worker(notify_pipe[1], index);
        }
        /* The worker's threads are created here, after the fork. */
        exit(serve(S, listen_fd, sigs, 0, 0));
    }
    if (pid < 0)
        log_error("cannot fork worker %d: %s", index, strerror(errno));
    return pid;
}

/*
 * The master speaks for its workers to systemd: READY=1 once every worker
 * has said it is ready, WATCHDOG=1 only while every live worker's serving
 * loop has beaten within the watchdog period (a hung worker stops the
 * petting, and systemd restarts the service).
 */
static void master_notify(struct worker *w, int n, int *announced, uint64_t *last_pet)
{
    char m[256];
    ssize_t got;
    while ((got = read(notify_pipe[0], m, sizeof m)) > 0) {
        for (ssize_t k = 0; k + 1 < got; k += 2) {
            int i = (unsigned char)m[k + 1];
            if (i >= n)
                continue;
            w[i].beat_ns = now_ns();
            if (m[k] == SDN_MSG_READY)
                w[i].ready = 1;
        }
    }
    int ready = 0;
    for (int i = 0; i < n; i++)
        ready += w[i].ready;
    if (!*announced && ready == n) {
        char status[96];
        *announced = 1;
        log_info("%d worker(s) ready", n);
        snprintf(status, sizeof status, "READY=1\nSTATUS=%d worker(s) ready", n);
        sdn_send(status);
    }
    uint64_t wd = sdn_watchdog_usec() * 1000, now = now_ns();
    if (!wd || now - *last_pet < wd / 2)
        return;
    for (int i = 0; i < n; i++)
        if (w[i].pid > 0 && now - w[i].beat_ns > wd) {
            log_warn("worker %d (pid %d) has not beaten for %.1fs: not petting the watchdog",
                     i, w[i].pid, (double)(now - w[i].beat_ns) / 1e9);
            *last_pet = now;    /* warn once per half period, not every tick */
            return;
        }
    *last_pet = now;
    sdn_send("WATCHDOG=1");
}

static int supervise(struct srv *S, int listen_fd, const sigset_t *sigs, int port)
{
    int n = S->cfg.workers;
    struct worker *w = xcalloc((size_t)n, sizeof *w);
    if (sdn_enabled() && pipe2(notify_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        log_warn("cannot create the workers' notify pipe: %s", strerror(errno));
        notify_pipe[0] = notify_pipe[1] = -1;
    }
    for (int i = 0; i < n; i++) {
        w[i].pid = spawn_worker(S, listen_fd, sigs, i);
        w[i].started_ns = w[i].beat_ns = now_ns();
        w[i].backoff_s = 1;
    }
    log_set_tag("master");
    log_listening(S, port);
    int stopping = 0, announced = 0;
    uint64_t deadline = 0, last_pet = 0;
    /* A tick short enough to pet a watchdog of a second or less in time. */
    long tick_ns = 200 * 1000000;
    if (sdn_watchdog_usec() && (long)(sdn_watchdog_usec() * 1000 / 4) < tick_ns)
        tick_ns = (long)(sdn_watchdog_usec() * 1000 / 4);
    for (;;) {
        struct timespec ts = {0, tick_ns};
        int sig = sigtimedwait(sigs, NULL, &ts);
        if (notify_pipe[0] >= 0)
            master_notify(w, n, &announced, &last_pet);
        if (sig == SIGHUP) {
            log_info("SIGHUP: forwarded to %d workers", n);
            for (int i = 0; i < n; i++)
                if (w[i].pid > 0)
                    kill(w[i].pid, SIGHUP);
        } else if ((sig == SIGTERM || sig == SIGINT) && !stopping) {
            stopping = 1;
            sdn_stopping();
            deadline = now_ns() + (uint64_t)((S->cfg.shutdown_timeout + 5) * 1e9);
            /* New connections must be refused, not left waiting on a socket
             * no worker will accept from again. */
            close(listen_fd);
            log_info("%s: draining %d workers", sig == SIGINT ? "SIGINT" : "SIGTERM", n);
            for (int i = 0; i < n; i++)
                if (w[i].pid > 0)
                    kill(w[i].pid, SIGTERM);
        }
        /* reap */
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            for (int i = 0; i < n; i++) {
                if (w[i].pid != pid)
                    continue;
                w[i].pid = 0;
                w[i].ready = 0;
                if (stopping)
                    break;
                uint64_t now = now_ns();
                double lived = (double)(now - w[i].started_ns) / 1e9;
                if (now - w[i].window_start_ns > 60ull * 1000000000u) {
                    w[i].window_start_ns = now;
                    w[i].recent_crashes = 0;
                }
                w[i].recent_crashes++;
                /* Its scripts die with it, and its script slots come back. */
                run_shared_reap(S->run_shared, i);
                auth_script_reap(S->auth, i);
                if (lived > 10)
                    w[i].backoff_s = 1;
                w[i].restart_at_ns = now + (uint64_t)((lived > 10 ? 0 : w[i].backoff_s) * 1e9);
                if (lived <= 10)
                    w[i].backoff_s = w[i].backoff_s * 2 > 30 ? 30 : w[i].backoff_s * 2;
                if (WIFSIGNALED(st))
                    log_error("worker %d (pid %d) killed by signal %d after %.1fs", i, pid,
                              WTERMSIG(st), lived);
                else
                    log_error("worker %d (pid %d) exited with %d after %.1fs", i, pid,
                              WEXITSTATUS(st), lived);
                if (w[i].recent_crashes >= 5)
                    log_error("worker %d is crash-looping: %d exits in the last minute; "
                              "restarting every %.0fs", i, w[i].recent_crashes, w[i].backoff_s);
            }
        }
        if (stopping) {
            int alive = 0;
            for (int i = 0; i < n; i++)
                alive += w[i].pid > 0;
            if (!alive)
                break;
            if (now_ns() > deadline) {
                log_warn("workers did not stop in time; killing them");
                for (int i = 0; i < n; i++)
                    if (w[i].pid > 0)
                        kill(w[i].pid, SIGKILL);
                deadline = now_ns() + 1000000000ull * 3600;
            }
            continue;
        }
        for (int i = 0; i < n; i++)
            if (!w[i].pid && now_ns() >= w[i].restart_at_ns) {
                w[i].pid = spawn_worker(S, listen_fd, sigs, i);
                w[i].started_ns = w[i].beat_ns = now_ns();
                if (w[i].pid > 0)
                    log_info("worker %d restarted (pid %d)", i, w[i].pid);
            }
    }
    free(w);
    if (notify_pipe[0] >= 0) {
        close(notify_pipe[0]);
        close(notify_pipe[1]);
    }
    return 0;
}

/* ---- subcommands ----------------------------------------------------------- */

/* `skill-mcp NAME ...`: each runs with argv after NAME and returns the exit
 * code. The --help text lists them from here. */
static const struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *args;
    const char *help;
} subcommands[] = {
    {"export", cli_export, "DIR [--skills DIR ...]",
     "write the discovery index and its artifacts to DIR as static files"},
    {"fetch", cli_fetch, "URL [--into DIR] [--name NAME]... [--json] ...",
     "install skills from an Agent Skills discovery index"},
    {"validate", cli_validate, "[--json] [DIR...]", "lint skills against the format and the rules"},
    {"list", cli_list, "[--json] [DIR...]", "show what discovery finds under each DIR"},
    {"token", cli_token, "add NAME [--rpm N] --file FILE", "make a client token"},
    {"lock", cli_lock, "approve|revoke|diff|status|gc ...",
     "review and approve skill versions (--lock)"},
};

static void usage_commands(FILE *f, int man)
{
    if (man) {
        for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++) {
            fprintf(f, ".br\n.B skill\\-mcp %s\n", subcommands[i].name);
            cfg_man_text(f, subcommands[i].args);
            fputc('\n', f);
        }
        fputs(".SH COMMANDS\n", f);
        for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++) {
            fprintf(f, ".TP\n.B %s\n", subcommands[i].name);
            cfg_man_text(f, subcommands[i].help);
            fputc('\n', f);
        }
        return;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        fprintf(f, "       skill-mcp %s %s\n", subcommands[i].name, subcommands[i].args);
    fprintf(f, "\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        fprintf(f, "  %-26s %s\n", subcommands[i].name, subcommands[i].help);
}

int main(int argc, char **argv)
{
    struct srv S = {0};
    sigset_t sigs;
    cfg_set_usage_commands(usage_commands);
    if (argc > 1 && !strcmp(argv[1], "help")) {
        cfg_usage(stdout);
        return 0;
    }
    for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof *subcommands; i++)
        if (!strcmp(argv[1], subcommands[i].name)) {
            x_install_json_alloc();
            return subcommands[i].run(argc - 2, argv + 2);
        }
    int rc = cfg_parse(&S.cfg, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    /* Before anything can write: from here on stdout is the protocol's. */
    if (S.cfg.stdio && stdio_claim() < 0)
        return 2;
    if (tasks_take_url(&S.cfg, argc, argv) < 0 || tasks_check_config(&S.cfg) < 0)
        return 2;

    log_set_level((enum log_level)S.cfg.log_level);
    log_set_json(S.cfg.log_json);
    http_warn_peer_lists(&S.cfg);
    x_install_json_alloc();
    sdn_init();

    /* Block the signals before any thread starts, so all inherit the mask. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Everything the workers share is set up before they are forked. */
    size_t ntools;
    const char *const *names = tools_names(&ntools);
    stats_init(&S.stats, names, ntools);
    S.run_shared = run_shared_new(S.cfg.max_script_concurrency, &S.run_shared_size);
    {
        /* A synonyms file that does not parse stops the start, naming its line. */
        struct err err;
        if (search_synonyms_init(S.cfg.synonyms, &err) < 0) {
            fprintf(stderr, "skill-mcp: --synonyms %s\n", err.msg);
            return 2;
        }
    }
    {
        /* Fail closed: a redaction file that does not compile stops the start. */
        struct err e = {0};
        S.redact = redact_open(S.cfg.redact_file, !S.cfg.no_redact_builtins, &e);
        if (!S.redact) {
            fprintf(stderr, "skill-mcp: --redact %s\n", e.msg);
            return 2;
        }
    }
    if (S.cfg.acl_file) {
        /* Fail closed: access rules that do not parse stop the start. */
        struct err e = {0};
        S.acl = acl_open(S.cfg.acl_file, &e);
        if (!S.acl) {
            fprintf(stderr, "skill-mcp: --acl %s\n", e.msg);
            redact_close(S.redact);
            x_shared_free(S.run_shared, S.run_shared_size);
            stats_cleanup(&S.stats);
            return 2;
        }
    }
    if (S.cfg.auth_tokens || S.cfg.oauth_issuer) {
        /* Fail closed: a token file that does not load stops the start. */
        struct err e = {0};
        S.auth = auth_load(S.cfg.auth_tokens, &e);
        if (!S.auth) {
            fprintf(stderr, "skill-mcp: %s\n", e.msg);
            acl_close(S.acl);
            redact_close(S.redact);
            x_shared_free(S.run_shared, S.run_shared_size);
            stats_cleanup(&S.stats);
            return 2;
        }
        auth_set_script_cap(S.auth, S.cfg.max_scripts_per_client);
        if (S.cfg.auth_tokens)
            log_info("auth: %d client(s) from %s", auth_count(S.auth), S.cfg.auth_tokens);
    }
    if (S.cfg.lock_file || S.cfg.audit_log) {
        /* Fail closed: a lock that does not parse stops the start. */
        struct err e = {0};
        S.lock = lock_open(&S.cfg, &e);
        if (!S.lock) {
            fprintf(stderr, "skill-mcp: %s\n", e.msg);
            auth_free(S.auth);
            acl_close(S.acl);
            redact_close(S.redact);
            x_shared_free(S.run_shared, S.run_shared_size);
            stats_cleanup(&S.stats);
            return 2;
        }
    }
    S.instructions = S.cfg.no_scripts ? instructions_read_only : instructions;
    S.ttl_ms = S.cfg.refresh_interval > 0 ? (int64_t)(S.cfg.refresh_interval * 1000) : 60000;
    tools_setup(&S);
    int port = 0, listen_fd = -1;
    if (!S.cfg.no_scripts && !(S.scripts = script_setup(&S.cfg)))
        rc = 2;                 /* the reason is logged */
    else if (!S.cfg.stdio)
        listen_fd = http_listen(&S.cfg, &port);
    if (listen_fd >= 0 && S.cfg.oauth_issuer) {
        /* Fail closed: an issuer whose keys cannot be had stops the start. */
        struct err e = {0};
        if (auth_oauth_init(S.auth, &S.cfg, port, &e) < 0) {
            fprintf(stderr, "skill-mcp: %s\n", e.msg);
            close(listen_fd);
            listen_fd = -1;
            rc = 2;
        }
    }
    if (S.scripts)
        script_set_output_budget(S.scripts, shape_budget_bytes(&S.budget));

    /* serve() and supervise() close listen_fd when they stop accepting. */
    if (!rc && listen_fd < 0 && !S.cfg.stdio)
        rc = 1;
    else if (!rc && S.cfg.workers > 1)
        rc = supervise(&S, listen_fd, &sigs, port);
    else if (!rc)
        rc = serve(&S, listen_fd, &sigs, 1, port);

    tools_cleanup(&S);
    script_free(S.scripts);
    stats_cleanup(&S.stats);
    x_shared_free(S.run_shared, S.run_shared_size);
    auth_free(S.auth);
    redact_close(S.redact);
    acl_close(S.acl);
    lock_free(S.lock);
    return rc;
}
