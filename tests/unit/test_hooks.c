/*
 * test_hooks.c - the hook chain around one script (server/hooks.c): which
 * hooks run for which script and in what order, what a denial or a failing
 * hook does to the call, what a pre hook may change, and the input JSON each
 * hook reads. The chain runs for real: bash hooks and scripts on a runner
 * driven by a libuv loop in this thread.
 */
#include "harness.h"
#include "tmptree.h"
#include "config.h"
#include "hooks.h"
#include "runner.h"
#include "script.h"
#include "skills.h"
#include "srv.h"
#include "util.h"

#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[64], dir[4096], gdir[4200], logdir[4200];
static struct cfg C;
static struct srv S;
static uv_loop_t loop;

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* Every hook logs its kind and its folder to $HOOK_LOG_DIR/order, keeps its stdin as
 * "<kind>.json", and denies or fails when a flag file named after it is
 * there. */
#define HOOK_SH                                                                                \
    "in=$(cat)\n"                                                                              \
    "d=${0%/*}\n"                                                                              \
    "printf '%s\\n' \"$SKILL_HOOK:${d##*/}\" >>\"$HOOK_LOG_DIR/order\"\n"                       \
    "printf '%s' \"$in\" >\"$HOOK_LOG_DIR/$SKILL_HOOK.json\"\n"                                \
    "f=\"$HOOK_LOG_DIR/deny $SKILL_HOOK\"\n"                                                   \
    "if [ -e \"$f\" ]; then printf '{\"reason\": \"%s\"}' \"$(cat \"$f\")\"; exit 3; fi\n"      \
    "f=\"$HOOK_LOG_DIR/out $SKILL_HOOK\"\n"                                                    \
    "if [ -e \"$f\" ]; then cat \"$f\"; fi\n"                                                  \
    "exit 0\n"

struct outcome {
    int done, ok;
    json_t *result;
};

static void on_done(json_t *result, int ok, double ms, void *arg)
{
    struct outcome *o = arg;
    o->done = 1;
    o->ok = ok;
    o->result = result;
}

static char *slurp(const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", logdir, name);
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    char *buf = xcalloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void flag(const char *name, const char *text)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", logdir, name);
    put(p, text);
}

/* Empties the log folder between chains. */
static void reset_log(void)
{
    static const char *const names[] = {"order", "global pre.json", "skill pre.json",
                                        "skill post.json", "global post.json", "deny global pre",
                                        "deny skill pre", "deny skill post", "out skill pre",
                                        "out skill post", "script", NULL};
    for (const char *const *n = names; *n; n++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", logdir, *n);
        unlink(p);
    }
}

/* Runs the chain for k with the call's args; the result (new reference). */
static json_t *run_chain(const struct snapshot *snap, const struct skill *k, const char *args,
                         const char *mode, int *ok)
{
    json_error_t e;
    json_t *a = json_loads(args, 0, &e);
    struct err why;
    struct run_job *j = script_prepare(S.scripts, &C, k, a, &why);
    if (!j) {
        printf("# script_prepare: %s\n", why.msg);
        json_decref(a);
        return NULL;
    }
    struct hook_plan *p = hook_plan_new(&S, snap, k, j, a, NULL, NULL);
    if (mode)
        hook_set_mode(p, mode);
    struct outcome o = {0};
    hook_start(p, on_done, &o);
    json_decref(a);
    uint64_t t0 = now_ns();
    while (!o.done && now_ns() - t0 < 60ull * 1000000000ull)
        uv_run(&loop, UV_RUN_ONCE);
    *ok = o.ok;
    return o.result;
}

static struct skill K, Bare;
static int run_uid, run_gid;    /* the script user a root run expects */
static struct snapshot Snap, NoGlobal;

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

TEST(order_of_the_chain)
{
    int ok;
    reset_log();
    json_t *r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\",\"args\":[\"a\"]}", NULL, &ok);
    CHECK(r);
    CHECK(ok);
    CHECK_STR(str(r, "status"), "ok");
    CHECK_STR(str(r, "stdout"), "script a\n");
    char *order = slurp("order");
    CHECK_STR(order, "global pre:global\nskill pre:hooks\nskill post:hooks\nglobal post:global\n");
    free(order);
    /* the script ran between the pre and the post hooks */
    char *pre = slurp("skill pre.json"), *post = slurp("skill post.json");
    CHECK(pre && post);
    CHECK(!strstr(pre, "\"result\""));
    CHECK(strstr(post, "\"result\""));
    free(pre);
    free(post);
    json_decref(r);
}

TEST(which_hooks_run)
{
    int ok;
    /* a skill without hooks: only the global ones */
    reset_log();
    json_t *r = run_chain(&Snap, &Bare, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && ok);
    char *order = slurp("order");
    CHECK_STR(order, "global pre:global\nglobal post:global\n");
    free(order);
    json_decref(r);
    /* no global hooks: only the skill's */
    reset_log();
    r = run_chain(&NoGlobal, &K, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && ok);
    order = slurp("order");
    CHECK_STR(order, "skill pre:hooks\nskill post:hooks\n");
    free(order);
    json_decref(r);
    /* neither: the script alone */
    reset_log();
    r = run_chain(&NoGlobal, &Bare, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && ok);
    CHECK_STR(str(r, "stdout"), "script\n");
    CHECK(!slurp("order"));
    json_decref(r);
}

TEST(the_input_a_hook_reads)
{
    int ok;
    reset_log();
    json_t *r = run_chain(&Snap, &K,
                          "{\"script\":\"scripts//echo.sh\",\"args\":[\"x\",\"y\"],"
                          "\"env\":{\"REGION\":\"eu\"}}",
                          "task", &ok);
    CHECK(r && ok);
    char *text = slurp("global pre.json");
    CHECK(text);
    json_error_t e;
    json_t *in = json_loads(text, 0, &e);
    free(text);
    CHECK(in);
    CHECK_STR(str(in, "skill"), "hk");
    CHECK_STR(str(in, "script"), "scripts/echo.sh");   /* the one identity, not the spelling */
    CHECK_STR(str(in, "mode"), "task");
    CHECK(json_is_null(json_object_get(in, "caller")));
    CHECK_STR(str(in, "request_id"), str(r, "request_id"));
    json_t *args = json_object_get(in, "args");
    CHECK(json_array_size(args) == 2);
    CHECK_STR(json_string_value(json_array_get(args, 1)), "y");
    json_t *keys = json_object_get(in, "env_keys");
    CHECK(json_array_size(keys) == 1);
    CHECK_STR(json_string_value(json_array_get(keys, 0)), "REGION");
    CHECK(!json_object_get(in, "env"));  /* the names, never the values */
    CHECK(!json_object_get(in, "result"));
    json_decref(in);
    /* a post hook reads the same plus the script's result */
    text = slurp("global post.json");
    CHECK(text);
    in = json_loads(text, 0, &e);
    free(text);
    CHECK(in);
    CHECK_STR(str(in, "script"), "scripts/echo.sh");
    json_t *res = json_object_get(in, "result");
    CHECK(json_is_object(res));
    CHECK_STR(str(res, "status"), "ok");
    CHECK_STR(str(res, "stdout"), "script x y eu\n");
    json_decref(in);
    json_decref(r);
}

TEST(a_pre_hook_denies)
{
    int ok;
    /* the global pre hook: nothing else runs */
    reset_log();
    flag("deny global pre", "not on fridays");
    json_t *r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r);
    CHECK(!ok);
    CHECK_STR(str(r, "status"), "denied");
    CHECK(strstr(str(r, "hint"), "Denied by the global pre hook"));
    CHECK(strstr(str(r, "hint"), "not on fridays"));
    CHECK_STR(str(r, "stdout"), "");
    char *order = slurp("order");
    CHECK_STR(order, "global pre:global\n");
    free(order);
    CHECK(!slurp("script"));
    json_decref(r);
    /* the skill's pre hook: the global one ran, the script and posts do not */
    reset_log();
    flag("deny skill pre", "missing ticket");
    r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && !ok);
    CHECK_STR(str(r, "status"), "denied");
    CHECK(strstr(str(r, "hint"), "Denied by the skill pre hook"));
    CHECK(strstr(str(r, "hint"), "missing ticket"));
    order = slurp("order");
    CHECK_STR(order, "global pre:global\nskill pre:hooks\n");
    free(order);
    CHECK(!slurp("script"));
    json_decref(r);
}

TEST(a_failing_post_hook_withholds_output)
{
    int ok;
    reset_log();
    flag("deny skill post", "redaction broke");
    json_t *r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\",\"args\":[\"secret\"]}", NULL, &ok);
    CHECK(r && !ok);
    CHECK_STR(str(r, "status"), "failed");
    CHECK(strstr(str(r, "hint"), "skill post hook"));
    CHECK(strstr(str(r, "hint"), "withheld"));
    char *dump = json_dumps(r, 0);
    int leaked = strstr(dump, "script secret") != NULL;
    free(dump);
    CHECK(!leaked);
    char *script = slurp("script");
    CHECK(script);          /* the script did run */
    free(script);
    char *order = slurp("order");
    CHECK_STR(order, "global pre:global\nskill pre:hooks\nskill post:hooks\n");
    free(order);
    json_decref(r);
}

TEST(a_pre_hook_changes_args_and_env)
{
    int ok;
    reset_log();
    flag("out skill pre", "{\"args\": [\"from-hook\"], \"env\": {\"REGION\": \"us\"}, "
                          "\"note\": \"rewritten\"}");
    json_t *r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\",\"args\":[\"mine\"]}", NULL, &ok);
    CHECK(r && ok);
    CHECK_STR(str(r, "stdout"), "script from-hook us\n");
    CHECK_STR(str(r, "note"), "rewritten");
    /* later hooks see what it changed */
    char *text = slurp("global post.json");
    CHECK(text && strstr(text, "\"from-hook\"") && strstr(text, "\"REGION\""));
    free(text);
    json_decref(r);
    /* a variable that is not allowed fails the call */
    reset_log();
    flag("out skill pre", "{\"env\": {\"LD_PRELOAD\": \"/x.so\"}}");
    r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && !ok);
    CHECK_STR(str(r, "status"), "failed");
    CHECK(strstr(str(r, "hint"), "returned malformed output: its 'env' sets a variable that "
                                 "is not allowed, or a non-string value."));
    CHECK(!slurp("script"));
    json_decref(r);
    reset_log();
    flag("out skill pre", "{\"args\": [1]}");
    r = run_chain(&Snap, &K, "{\"script\":\"echo.sh\"}", NULL, &ok);
    CHECK(r && !ok);
    CHECK(strstr(str(r, "hint"), "returned malformed output: its 'args' must be a list of "
                                 "strings."));
    CHECK(!slurp("script"));
    json_decref(r);
}

/* The runner's child sets everything itself between clone and exec: the
 * rlimits, a new session, default signals, and on a root server the script
 * user with no supplementary groups, no capabilities and no_new_privs. */
TEST(the_child_sets_user_and_limits)
{
    int ok;
    json_t *r = run_chain(&NoGlobal, &Bare, "{\"script\":\"status.sh\"}", NULL, &ok);
    CHECK(r && ok);
    const char *out = str(r, "stdout");
    CHECK(out);
    for (const char *l = out; *l;) {       /* all of it, for a failure's reader */
        size_t n = strcspn(l, "\n");
        printf("# %.*s\n", (int)n, l);
        l += n + (l[n] == '\n');
    }
    char line[200];
    if (geteuid() == 0) {
        snprintf(line, sizeof line, "Uid:\t%d\t%d\t%d\t%d\n", run_uid, run_uid, run_uid,
                 run_uid);
        CHECK(strstr(out, line));
        snprintf(line, sizeof line, "Gid:\t%d\t%d\t%d\t%d\n", run_gid, run_gid, run_gid, run_gid);
        CHECK(strstr(out, line));
        const char *g = strstr(out, "Groups:");
        CHECK(g);
        size_t gl = strcspn(g, "\n");
        CHECK(strcspn(g, "0123456789") > gl);   /* no supplementary group left */
        CHECK(strstr(out, "NoNewPrivs:\t1\n"));
        CHECK(strstr(out, "CapEff:\t0000000000000000\n"));
        CHECK(strstr(out, "Max processes             256"));
    } else {
        snprintf(line, sizeof line, "Uid:\t%d\t", (int)getuid());
        CHECK(strstr(out, line));
    }
    CHECK(strstr(out, "SigIgn:\t0000000000000000\n"));    /* SIGPIPE is the script's again */
    CHECK(strstr(out, "SigBlk:\t0000000000000000\n"));
    /* RLIMIT_CPU: the default ceiling (30 s) + 1 s, hard a second above */
    CHECK(strstr(out, "Max cpu time              31                   32"));
    CHECK(strstr(out, "Max core file size        0                    0"));
    /* a session (and process group) of its own */
    CHECK(strstr(out, "session leader: yes"));
    json_decref(r);
}

/* A script's stdin arrives whole and once, a few bytes or past a pipe's
 * buffer (the runner puts what fits into the pipe before the child starts
 * and writes the rest as the script reads). */
TEST(a_script_reads_its_stdin_whole)
{
    static const size_t sizes[] = {0, 37, 65536, 200000};
    char path[4400];
    snprintf(path, sizeof path, "%s/stdin", logdir);
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        size_t n = sizes[t];
        char *text = xmalloc(n + 8);
        for (size_t i = 0; i + 7 <= n; i += 7)
            snprintf(text + i, 8, "%06zu\n", i / 7 % 1000000);
        for (size_t i = n - n % 7; i < n; i++)
            text[i] = 'z';
        text[n] = '\0';
        json_t *a = json_pack("{s:s, s:s%}", "script", "keep_stdin.sh", "stdin", text, n);
        char *args = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        unlink(path);
        int ok;
        json_t *r = run_chain(&NoGlobal, &Bare, args, NULL, &ok);
        free(args);
        CHECK(r && ok);
        json_decref(r);
        FILE *f = fopen(path, "rb");
        CHECK(f);
        char *got = xmalloc(n + 2);
        size_t len = f ? fread(got, 1, n + 1, f) : 0;
        if (f)
            fclose(f);
        if (len != n)
            printf("# %zu bytes given, %zu read\n", n, len);
        CHECK(len == n && !memcmp(got, text, n));
        free(got);
        free(text);
    }
}

static void slow_start(void)
{
    usleep(300 * 1000);
}

/* A ceiling is the script's own time: a start held 300 ms inside the
 * loop's tick (as other jobs' spawns hold it on a busy server) does not
 * take 300 ms off it. The loop's clock is the tick's start, so a timer set
 * from it without a refresh fired that much early. */
TEST(a_ceiling_counts_from_the_scripts_start)
{
    int ok;
    run_start_hook = slow_start;
    json_t *r = run_chain(&NoGlobal, &Bare, "{\"script\":\"forever.sh\",\"timeout\":1}", NULL, &ok);
    run_start_hook = NULL;
    CHECK(r);
    CHECK_STR(str(r, "status"), "timeout");
    double ms = json_number_value(json_object_get(r, "duration_ms"));
    /* a little under 1,000 is the loop clock's coarseness (a millisecond
     * unit, and a coarse clock where the machine has one) */
    if (ms < 990)
        printf("# duration_ms %.1f\n", ms);
    CHECK(ms >= 990);
    json_decref(r);
}

/* A queue timeout is the job's own wait: a job queued from a done
 * callback late in a tick (a slow scratch delete, other jobs' spawns and
 * done work before it) waits its full timeout from its queueing. X's done
 * queues Z, which takes the runner's one slot, holds the tick 300 ms, and
 * queues Y behind Z. */
/* one slot and a 1 s queue timeout; shut down with the main runner */
static struct runner *One;
static struct run_shared *One_sh;
static size_t One_size;

struct queued {
    struct runner *r;
    struct run_job *y, *z;
    int done;
};

static void queued_done(struct run_job *j, void *arg)
{
    (void)j;
    ((struct queued *)arg)->done++;
}

static void queue_two(struct run_job *x, void *arg)
{
    (void)x;
    struct queued *q = arg;
    q->done++;
    run_submit(q->r, q->z, queued_done, q);
    usleep(300 * 1000);
    run_submit(q->r, q->y, queued_done, q);
}

static struct run_job *prepared(const char *args)
{
    json_error_t e;
    json_t *a = json_loads(args, 0, &e);
    struct err why;
    struct run_job *j = script_prepare(S.scripts, &C, &Bare, a, &why);
    json_decref(a);
    if (!j)
        printf("# script_prepare: %s\n", why.msg);
    return j;
}

TEST(a_queue_timeout_counts_from_the_jobs_queueing)
{
    One_sh = run_shared_new(1, &One_size);
    One = run_new(&loop, One_sh, 0, 1, 1.0);
    struct queued q = {.r = One};
    struct run_job *x = prepared("{\"script\":\"echo.sh\"}");
    q.z = prepared("{\"script\":\"forever.sh\",\"timeout\":2}");
    q.y = prepared("{\"script\":\"echo.sh\"}");
    CHECK(x && q.y && q.z);
    if (!x || !q.y || !q.z)
        return;
    run_submit(q.r, x, queue_two, &q);
    while (q.done < 3)
        uv_run(&loop, UV_RUN_ONCE);
    if (q.z->status != RUN_TIMEOUT)
        printf("# Z: status %d, exit %d, error '%s', stderr '%.*s'\n", (int)q.z->status,
               q.z->exit_code, q.z->error, (int)q.z->err.len, q.z->err.data ? q.z->err.data : "");
    CHECK_EQ(q.z->status, RUN_TIMEOUT);
    CHECK_EQ(q.y->status, RUN_BUSY);
    /* a little under 1,000 is the loop clock's coarseness */
    if (q.y->queued_ms < 990)
        printf("# queued_ms %.1f\n", q.y->queued_ms);
    CHECK(q.y->queued_ms >= 990);
    run_job_free(x);
    run_job_free(q.y);
    run_job_free(q.z);
}

static void settled(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* Runs the loop for ms: the runners' timers (their sweeps) do their work. */
static void settle(uint64_t ms)
{
    uv_timer_t t;
    int done = 0;
    uv_timer_init(&loop, &t);
    t.data = &done;
    uv_timer_start(&t, settled, ms, 0);
    while (!done)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);   /* its close callback */
}

int main(void)
{
    log_set_level(LOG_ERROR);
    snprintf(base, sizeof base, "/tmp/skill-hooks-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 2;
    }
    chmod(base, 0755); /* a root test run: the default script user must reach it */
    char p[4400], real[4096];
    snprintf(p, sizeof p, "%s/hk", base);
    mkdir(p, 0755);
    if (!realpath(p, real)) {
        perror("realpath");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", real);
    snprintf(logdir, sizeof logdir, "%s/log", base);
    mkdir(logdir, 0777);
    chmod(logdir, 01777);   /* hooks and scripts run as nobody under root */
    snprintf(gdir, sizeof gdir, "%s/global", base);
    mkdir(gdir, 0755);
    snprintf(p, sizeof p, "%s/scripts", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/hooks", dir);
    mkdir(p, 0755);
    char script[8800];
    snprintf(script, sizeof script,
             "echo script >\"%s/script\"\necho script \"$@\" ${REGION:+\"$REGION\"}\n", logdir);
    snprintf(p, sizeof p, "%s/scripts/echo.sh", dir);
    put(p, script);
    snprintf(script, sizeof script, "cat >\"%s/stdin\"\n", logdir);
    snprintf(p, sizeof p, "%s/scripts/keep_stdin.sh", dir);
    put(p, script);
    snprintf(p, sizeof p, "%s/scripts/forever.sh", dir);
    put(p, "while :; do echo tick; sleep 0.05; done\n");
    snprintf(p, sizeof p, "%s/scripts/status.sh", dir);
    put(p, "grep -E '^(Uid|Gid|Groups|NoNewPrivs|CapEff|SigIgn|SigBlk):' /proc/self/status\n"
           "grep -E '^Max (cpu time|core file size|processes) ' /proc/self/limits\n"
           "s=$(cut -d' ' -f6 /proc/self/stat)\n"
           "[ \"$s\" = \"$$\" ] && echo 'session leader: yes' || echo \"session $s, pid $$\"\n");
    char hooks[4][4400];
    snprintf(hooks[0], sizeof hooks[0], "%s/pre.sh", gdir);
    snprintf(hooks[1], sizeof hooks[1], "%s/hooks/pre.sh", dir);
    snprintf(hooks[2], sizeof hooks[2], "%s/hooks/post.sh", dir);
    snprintf(hooks[3], sizeof hooks[3], "%s/post.sh", gdir);
    for (int i = 0; i < 4; i++)
        put(hooks[i], HOOK_SH);
    setenv("HOOK_LOG_DIR", logdir, 1);
    /* as the server: SIGPIPE ignored, and (as root) a supplementary group,
     * neither of which a script may inherit */
    signal(SIGPIPE, SIG_IGN);
    if (geteuid() == 0) {
        gid_t extra = 4;
        if (setgroups(1, &extra) < 0)
            perror("setgroups");
    }
    struct passwd *pw = getpwnam("nobody");
    run_uid = pw ? (int)pw->pw_uid : -1;
    run_gid = pw ? (int)pw->pw_gid : -1;

    char *argv[] = {"skill-mcp", "--skills", base, NULL};
    if (cfg_parse(&C, 3, argv) != 0) {
        printf("# cfg_parse failed\n");
        return 2;
    }
    S.cfg = C;
    if (!(S.scripts = script_setup(&C))) {
        printf("# script_setup failed\n");
        return 2;
    }
    uv_loop_init(&loop);
    size_t shsize;
    S.run_shared = run_shared_new(4, &shsize);
    S.runner = run_new(&loop, S.run_shared, 0, 4, 30);

    K.qname = K.name = "hk";
    K.dir_abs = dir;
    K.description = "d";
    static struct skill_hooks own;
    own.pre = hooks[1];
    own.post = hooks[2];
    K.hooks = &own;
    Bare = K;
    Bare.hooks = NULL;
    Snap.hook_pre = hooks[0];
    Snap.hook_post = hooks[3];

    RUN(order_of_the_chain);
    RUN(which_hooks_run);
    RUN(the_input_a_hook_reads);
    RUN(a_pre_hook_denies);
    RUN(a_failing_post_hook_withholds_output);
    RUN(a_pre_hook_changes_args_and_env);
    RUN(the_child_sets_user_and_limits);
    RUN(a_script_reads_its_stdin_whole);
    /* Two runners in one process see each other's scripts as their own
     * children: one that has just killed a stray sweeps again, and would
     * take the other's live script for one. The queue test runs while the
     * main runner has none to sweep, and the loop then runs until the
     * second runner's sweeps are done. */
    RUN(a_queue_timeout_counts_from_the_jobs_queueing);
    settle(1500);
    RUN(a_ceiling_counts_from_the_scripts_start);

    run_shutdown(S.runner);
    if (One)
        run_shutdown(One);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    run_free(S.runner);
    run_free(One);
    if (One_sh)
        x_shared_free(One_sh, One_size);
    uv_loop_close(&loop);
    script_free(S.scripts);
    tt_rm_rf(base);
    DONE();
}
