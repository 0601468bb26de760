/*
 * test_script.c - the run_skill_script policy (server/script.c
 * script_prepare): timeouts and their clamps, stall detection, the caller's
 * environment, interpreters by suffix, the script's one identity whatever
 * its spelling, and the runner's check at spawn that the path still names
 * the file the jail approved.
 */
#include "harness.h"
#include "tmptree.h"
#include "config.h"
#include "runner.h"
#include "script.h"
#include "skills.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[64], dir[4096];
static struct cfg C;
static struct scripts *SC;

static void put(const char *rel, const char *text)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static void mk(const char *rel)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    mkdir(p, 0755);
}

/* A skill over dir with this frontmatter (JSON). */
static struct skill *skill_of(const char *fm)
{
    struct skill *k = xcalloc(1, sizeof *k);
    k->qname = "s";
    k->name = "s";
    k->dir_abs = dir;
    json_error_t e;
    json_t *o = json_loads(fm, 0, &e);
    if (!o) {
        printf("# bad frontmatter %s: %s\n", fm, e.text);
        exit(2);
    }
    json_decref(o);
    /* as a build leaves it: the text, parsed by skills_execution() on first use */
    k->fm_rest = xstrdup(fm);
    atomic_init(&k->refs, 1);
    return k;
}

static void skill_free(struct skill *k)
{
    free((char *)(uintptr_t)k->fm_rest);
    skills_entry_release(k);
}

static struct err why;

/* script_prepare with args (JSON); NULL with why set on refusal. */
static struct run_job *prep(struct skill *k, const char *args)
{
    json_error_t e;
    json_t *a = json_loads(args, 0, &e);
    if (!a) {
        printf("# bad args %s: %s\n", args, e.text);
        exit(2);
    }
    why.msg[0] = '\0';
    struct run_job *j = script_prepare(SC, &C, k, a, &why);
    json_decref(a);
    return j;
}

static const char *env_of(const struct run_job *j, const char *name)
{
    size_t n = strlen(name);
    for (char **e = j->envp; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* 1 when an interpreter-side argv entry (not the script) contains s */
static int argv_sub(const struct run_job *j, const char *s)
{
    for (size_t i = 0; i + 1 < j->argv_fixed; i++)
        if (strstr(j->argv[i], s))
            return 1;
    return 0;
}

static int argv_has(const struct run_job *j, const char *s)
{
    for (char **a = j->argv; *a; a++)
        if (!strcmp(*a, s))
            return 1;
    return 0;
}

#define EXEC_FM                                                                              \
    "{\"name\":\"s\",\"description\":\"d\",\"execution\":{"                                \
    "\"default\":{\"timeout\":40,\"stall_timeout\":15},"                                    \
    "\"scripts/sub/danger.sh\":{\"timeout\":2,\"stall_timeout\":1},"                        \
    "\"scripts/huge.sh\":{\"timeout\":1e300,\"stall_timeout\":1e300},"                      \
    "\"scripts/./top.sh\":{\"timeout\":3}}}"

TEST(timeout_policy)
{
    struct skill *plain = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct skill *k = skill_of(EXEC_FM);
    struct run_job *j;

    /* the server's default where the skill is silent */
    CHECK((j = prep(plain, "{\"script\":\"top.sh\"}")));
    CHECK(j->timeout_s == 30 && j->stall_s == 20);
    run_job_free(j);
    /* the skill's default */
    CHECK((j = prep(k, "{\"script\":\"top.sh\"}")));
    CHECK(j->timeout_s == 40 && j->stall_s == 15);
    run_job_free(j);
    /* the script's own entry */
    CHECK((j = prep(k, "{\"script\":\"scripts/sub/danger.sh\"}")));
    CHECK(j->timeout_s == 2 && j->stall_s == 1);
    run_job_free(j);
    /* the server's ceiling bounds what the skill declares, 1e300 included */
    CHECK((j = prep(k, "{\"script\":\"huge.sh\"}")));
    CHECK(j->timeout_s == 600 && j->stall_s == 600);
    run_job_free(j);
    /* the caller may lower */
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"timeout\":5,\"stall_timeout\":4}")));
    CHECK(j->timeout_s == 5 && j->stall_s == 4);
    run_job_free(j);
    /* ... never raise */
    CHECK((j = prep(k, "{\"script\":\"scripts/sub/danger.sh\",\"timeout\":100,\"stall_timeout\":50}")));
    CHECK(j->timeout_s == 2 && j->stall_s == 1);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"scripts/sub/danger.sh\",\"timeout\":1e300}")));
    CHECK(j->timeout_s == 2);
    run_job_free(j);
    /* bad values are refused, with the reason */
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"timeout\":0}"));
    CHECK(strstr(why.msg, "'timeout' must be a number of seconds above 0"));
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"timeout\":-1e300}"));
    CHECK(strstr(why.msg, "'timeout'"));
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"timeout\":\"5\"}"));
    CHECK(strstr(why.msg, "'timeout'"));
    skill_free(plain);
    skill_free(k);
}

TEST(stall_policy)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    double server_stall = C.script_stall_timeout;
    /* stall detection off on the server and in the skill: a caller's value
     * turns it on, and 1e300 is clamped to the ceiling, not converted as is */
    C.script_stall_timeout = 0;
    CHECK((j = prep(k, "{\"script\":\"top.sh\"}")));
    CHECK(j->stall_s == 0);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"stall_timeout\":1e300}")));
    CHECK(j->stall_s == C.max_script_timeout);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"stall_timeout\":7}")));
    CHECK(j->stall_s == 7);
    run_job_free(j);
    C.script_stall_timeout = server_stall;
    /* the caller cannot switch it off */
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"stall_timeout\":0}"));
    CHECK(strstr(why.msg, "cannot be switched off"));
    skill_free(k);
}

TEST(env_allowlist)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"env\":{\"REGION\":\"eu\"}}")));
    CHECK_STR(env_of(j, "REGION"), "eu");
    CHECK_STR(env_of(j, "SKILL_NAME"), "s");
    CHECK_STR(env_of(j, "PATH"), "/usr/local/bin:/usr/bin:/bin");
    CHECK(!env_of(j, "HOME"));  /* the runner adds the scratch HOME at spawn */
    run_job_free(j);
    static const char *const refused[] = {"LD_PRELOAD", "PYTHONPATH", "NODE_OPTIONS", "BASH_ENV",
                                          "PATH", "SKILL_DIR", "http_proxy", "ld_preload",
                                          "GLIBC_TUNABLES", NULL};
    for (const char *const *n = refused; *n; n++) {
        char args[200];
        snprintf(args, sizeof args, "{\"script\":\"top.sh\",\"env\":{\"%s\":\"x\"}}", *n);
        CHECK(!prep(k, args));
        CHECK(strstr(why.msg, "is not allowed"));
        CHECK(strstr(why.msg, *n));
    }
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"env\":{\"1X\":\"x\"}}"));
    CHECK(strstr(why.msg, "must start with a letter"));
    CHECK(!prep(k, "{\"script\":\"top.sh\",\"env\":{\"A\":1}}"));
    CHECK(strstr(why.msg, "must be a string"));
    skill_free(k);
}

TEST(interpreter_by_suffix)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"scripts/run.py\"}")));
    CHECK(argv_sub(j, "python"));
    CHECK(argv_has(j, "-E") && argv_has(j, "-s") && argv_has(j, "-B"));
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"top.sh\"}")));
    CHECK(argv_sub(j, "bash") && !argv_sub(j, "python"));
    CHECK(!argv_has(j, "-B"));
    run_job_free(j);
    CHECK(!prep(k, "{\"script\":\"notes.txt\"}"));
    CHECK(strstr(why.msg, "no interpreter"));
    CHECK(!prep(k, "{\"script\":\"references/r.md\"}"));
    CHECK(strstr(why.msg, "only files in the skill's scripts/ folder"));
    skill_free(k);
}

/* Python is started with its bytecode cache outside the skill: it neither
 * reads nor writes __pycache__ next to the script. */
TEST(python_cache_outside_skill)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"scripts/run.py\"}")));
    int found = 0;
    for (size_t i = 0; i + 1 < j->argv_fixed; i++)
        if (!strcmp(j->argv[i], "-X") && !strncmp(j->argv[i + 1], "pycache_prefix=", 15))
            found = 1;
    CHECK(found);
    run_job_free(j);
    skill_free(k);
}

TEST(canonical_identity)
{
    struct skill *k = skill_of(EXEC_FM);
    /* every spelling that names scripts/sub/danger.sh gets that one name and
     * its execution: entry */
    static const char *const same[] = {
        "scripts/sub/danger.sh", "scripts/sub//danger.sh", "scripts//sub/danger.sh",
        "scripts///sub///danger.sh", "scripts/alias.sh", "alias.sh", NULL,
    };
    for (const char *const *s = same; *s; s++) {
        char args[200];
        snprintf(args, sizeof args, "{\"script\":\"%s\"}", *s);
        struct run_job *j = prep(k, args);
        if (!j)
            printf("# %s: %s\n", *s, why.msg);
        CHECK(j);
        CHECK_STR(j->script, "scripts/sub/danger.sh");
        CHECK(j->timeout_s == 2 && j->stall_s == 1);
        char want[4200];
        snprintf(want, sizeof want, "%s/scripts/sub/danger.sh", dir);
        CHECK_STR(j->script_path, want);
        run_job_free(j);
    }
    /* every other spelling is refused, with a reason */
    static const char *const refused[][2] = {
        {"scripts/./sub/danger.sh", "'.'"},
        {"./scripts/sub/danger.sh", "'.'"},
        {"scripts/sub/../sub/danger.sh", "'..'"},
        {"scripts/sub/danger.sh/", "no such script"},
        {"scripts/SUB/danger.sh", "no such script"},
        {"scripts/sub/Danger.sh", "no such script"},
        {"danger.sh", "no such script"},
        {"sub/danger.sh", "only files in the skill's scripts/ folder"},
        {"scripts/sub/./danger.sh", "'.'"},
        {"scripts/sub", "folder"},
        {"/etc/passwd", "absolute"},
        {NULL, NULL},
    };
    for (size_t i = 0; refused[i][0]; i++) {
        char args[200];
        snprintf(args, sizeof args, "{\"script\":\"%s\"}", refused[i][0]);
        struct run_job *j = prep(k, args);
        if (j)
            printf("# %s ran as %s\n", refused[i][0], j->script);
        CHECK(!j);
        if (!strstr(why.msg, refused[i][1]))
            printf("# %s: %s\n", refused[i][0], why.msg);
        CHECK(strstr(why.msg, refused[i][1]));
    }
    /* a key written with './' applies to nothing: top.sh gets the default */
    struct run_job *j = prep(k, "{\"script\":\"scripts/top.sh\"}");
    CHECK(j);
    CHECK_STR(j->script, "scripts/top.sh");
    CHECK(j->timeout_s == 40);
    run_job_free(j);
    skill_free(k);
}

/* The runner's last check: the path must still name the file the jail
 * approved when the job was prepared. */
TEST(verify_at_spawn)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    char p[4200], outside[4200], tmp[4200];
    snprintf(p, sizeof p, "%s/scripts/swap.sh", dir);
    snprintf(outside, sizeof outside, "%s/outside.sh", base);
    snprintf(tmp, sizeof tmp, "%s/scripts/swap.tmp", dir);
    struct err e;
    put("scripts/swap.sh", "echo inside\n");
    FILE *f = fopen(outside, "w");
    CHECK(f);
    fputs("echo outside\n", f);
    fclose(f);

    struct run_job *j = prep(k, "{\"script\":\"swap.sh\"}");
    CHECK(j);
    CHECK_EQ(run_job_verify(j, &e), 0);
    /* swapped for a link to a file outside the skill */
    CHECK_EQ(symlink(outside, tmp), 0);
    CHECK_EQ(rename(tmp, p), 0);
    CHECK_EQ(run_job_verify(j, &e), -1);
    CHECK_STR(e.msg, "the script was replaced after it was checked; its path no longer names "
                     "the file the scripts/ jail approved");
    /* swapped for another regular file inside (a new inode) */
    put("scripts/swap.tmp", "echo other\n");
    CHECK_EQ(rename(tmp, p), 0);
    CHECK_EQ(run_job_verify(j, &e), -1);
    /* removed */
    CHECK_EQ(unlink(p), 0);
    CHECK_EQ(run_job_verify(j, &e), -1);
    CHECK(!strncmp(e.msg, "the script disappeared after it was checked (", 45));
    run_job_free(j);

    /* an edit in place is the same file: the lock, not this check, judges content */
    put("scripts/swap.sh", "echo inside\n");
    CHECK((j = prep(k, "{\"script\":\"swap.sh\"}")));
    put("scripts/swap.sh", "echo edited\n");
    CHECK_EQ(run_job_verify(j, &e), 0);
    run_job_free(j);
    skill_free(k);
}

/* A child that fails before exec is reaped, and the message names the
 * program and the step, as the client reads it in the result's hint. */
TEST(spawn_as_names_the_failed_step)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    put("scripts/ok.sh", "true\n");
    struct run_job *j = prep(k, "{\"script\":\"ok.sh\"}");
    CHECK(j);
    char *argv[] = {"/bin/true", NULL}, *envp[] = {NULL};
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    CHECK(devnull >= 0);
    struct err e = {.line = 7};
    pid_t pid = run_spawn_as(j, argv, envp, "/nonexistent-skill-mcp-dir", devnull, devnull,
                             devnull, &e);
    close(devnull);
    CHECK_EQ(pid, -1);
    CHECK_STR(e.msg, "cannot start /bin/true: chdir to the skill folder failed: "
                     "No such file or directory");
    CHECK_EQ(e.line, 0);
    run_job_free(j);
    skill_free(k);
}

/* A server started with 0-2 closed gets a job's pipes there: the child
 * must not overwrite one source while it moves another into place. Here
 * stdout and stderr come from fd 0, which stdin's /dev/null is moved onto. */
TEST(spawn_as_sources_among_targets)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    put("scripts/ok.sh", "true\n");
    struct run_job *j = prep(k, "{\"script\":\"ok.sh\"}");
    CHECK(j);
    int p[2], keep0 = dup(0);
    CHECK(keep0 >= 0 && pipe2(p, O_CLOEXEC) == 0);
    CHECK(dup3(p[1], 0, O_CLOEXEC) == 0);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; cat", NULL}, *envp[] = {NULL};
    struct err e = {0};
    pid_t pid = run_spawn_as(j, argv, envp, "/", devnull, 0, 0, &e);
    dup2(keep0, 0);
    close(keep0);
    close(devnull);
    close(p[1]);
    CHECK(pid > 0);
    char out[64];
    size_t got = 0;
    ssize_t r;
    while ((r = read(p[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(p[0]);
    int st = -1;
    if (pid > 0)
        waitpid(pid, &st, 0);
    CHECK_STR(out, "out\nerr\n");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    run_job_free(j);
    skill_free(k);
}

/* The caller's timeout is bounded by the server's ceiling even where the
 * skill asks for more than the ceiling: it can only lower what the policy
 * gives. */
TEST(caller_timeout_clamped_to_max)
{
    struct skill *k = skill_of(EXEC_FM);
    struct run_job *j;
    double ceiling = C.max_script_timeout;
    C.max_script_timeout = 35;
    /* the skill's default (40) is above the ceiling */
    CHECK((j = prep(k, "{\"script\":\"top.sh\"}")));
    CHECK(j->timeout_s == 35 && j->stall_s == 15);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"timeout\":1e300,\"stall_timeout\":1e300}")));
    CHECK(j->timeout_s == 35 && j->stall_s == 15);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"huge.sh\",\"timeout\":99999}")));
    CHECK(j->timeout_s == 35 && j->stall_s == 35);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"huge.sh\",\"timeout\":12.5}")));
    CHECK(j->timeout_s == 12.5);
    run_job_free(j);
    C.max_script_timeout = ceiling;
    skill_free(k);
}

/* The limits the runner's child sets come from the policy: RLIMIT_CPU is
 * the run's own ceiling + 1 s unless --script-cpu-limit says otherwise, and
 * the others are the server's. A hook gets --hook-timeout and the same
 * limits. */
TEST(limits_follow_policy)
{
    struct skill *k = skill_of(EXEC_FM);
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"scripts/sub/danger.sh\"}")));
    CHECK_EQ(j->lim_cpu_s, 3);
    CHECK_EQ(j->lim_as_mib, C.script_memory_mib);
    CHECK_EQ(j->lim_fsize_mib, C.script_fsize_mib);
    CHECK(j->lim_as_mib > 0 && j->lim_fsize_mib > 0);
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"timeout\":7.2}")));
    CHECK_EQ(j->lim_cpu_s, 9);
    /* a root server runs scripts as the script user, and only then is
     * RLIMIT_NPROC set by default */
    if (geteuid() == 0) {
        CHECK(j->run_uid > 0 && j->run_gid > 0);
        CHECK_EQ(j->lim_nproc, 256);
    } else {
        CHECK_EQ(j->run_uid, -1);
        CHECK_EQ(j->lim_nproc, 0);
    }
    run_job_free(j);

    char hook[4200];
    snprintf(hook, sizeof hook, "%s/hooks/pre.sh", dir);
    double hto = C.hook_timeout, stall = C.script_stall_timeout;
    j = script_hook_job(SC, &C, hook, dir, "{}", 2, "s", dir, "r-1", "skill pre", &why);
    CHECK(j);
    CHECK(j->timeout_s == 10 && j->stall_s == 0);
    CHECK_EQ(j->lim_cpu_s, 11);
    CHECK(j->hook);
    run_job_free(j);
    C.hook_timeout = 3;
    C.script_stall_timeout = 2;
    j = script_hook_job(SC, &C, hook, dir, "{}", 2, "s", dir, "r-1", "skill pre", &why);
    CHECK(j);
    CHECK(j->timeout_s == 3 && j->stall_s == 2);
    CHECK_EQ(j->lim_cpu_s, 4);
    run_job_free(j);
    C.hook_timeout = hto;
    C.script_stall_timeout = stall;
    skill_free(k);
}

/* Names a script may see: the base allowlist, the SKILL_* variables and
 * the caller's; with proxy/TLS variables from the server's environment. */
static int allowed_name(const char *kv, const char *caller)
{
    static const char *const names[] = {"PATH", "LANG", "TZ", "SKILL_NAME", "SKILL_DIR",
                                        "SKILL_REQUEST_ID", "SKILL_OUTPUT_BUDGET_BYTES", NULL};
    static const char *const net[] = {
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
        "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", NULL,
    };
    size_t n = strcspn(kv, "=");
    if (!strncmp(kv, "LC_", 3))
        return 1;
    if (caller && strlen(caller) == n && !strncmp(kv, caller, n))
        return 1;
    for (const char *const *p = names; *p; p++)
        if (strlen(*p) == n && !strncmp(kv, *p, n))
            return 1;
    for (const char *const *p = net; *p; p++)
        if (strlen(*p) == n && !strncmp(kv, *p, n))
            return 1;
    return 0;
}

/* The server's own environment (its secrets, HOOK_* configuration, loader
 * variables) never reaches a script: main() set some before script_setup. */
TEST(server_secrets_never_passed)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"top.sh\",\"env\":{\"REGION\":\"eu\"}}")));
    for (char **e = j->envp; *e; e++) {
        if (!allowed_name(*e, "REGION"))
            H_FAIL("a script's environment holds %s", *e);
        CHECK(!strstr(*e, "sekrit"));
    }
    CHECK(!env_of(j, "SKILL_MCP_TEST_SECRET") && !env_of(j, "HOOK_AUDIT_TEST"));
    CHECK(!env_of(j, "PYTHONSTARTUP"));
    run_job_free(j);
    /* hooks get the HOOK_* variables (the operator's configuration), and
     * still no other secret */
    char hook[4200];
    snprintf(hook, sizeof hook, "%s/hooks/pre.sh", dir);
    CHECK((j = script_hook_job(SC, &C, hook, dir, "{}", 2, "s", dir, "r-1", "skill pre", &why)));
    CHECK_STR(env_of(j, "HOOK_AUDIT_TEST"), "/var/log/audit");
    CHECK_STR(env_of(j, "SKILL_HOOK"), "skill pre");
    CHECK(!env_of(j, "SKILL_MCP_TEST_SECRET") && !env_of(j, "PYTHONSTARTUP"));
    run_job_free(j);
    skill_free(k);
}

/* The suffix alone picks the interpreter: a shebang neither changes it nor
 * makes a file without a known suffix runnable. */
TEST(interpreter_not_by_shebang)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    struct run_job *j;
    CHECK((j = prep(k, "{\"script\":\"shebang.sh\"}")));
    CHECK(argv_sub(j, "bash") && !argv_sub(j, "python"));
    run_job_free(j);
    CHECK((j = prep(k, "{\"script\":\"shebang.py\"}")));
    CHECK(argv_sub(j, "python") && !argv_sub(j, "bash"));
    run_job_free(j);
    CHECK(!prep(k, "{\"script\":\"tool\"}"));
    CHECK(strstr(why.msg, "no interpreter"));
    skill_free(k);
}

/* What the caller reads when the script or hook is not there: the words
 * the model acts on, whole. */
/* A run whose exec the kernel refused under RLIMIT_NPROC (EAGAIN: its user
 * was already over the cap when the child became it) names the limit and
 * says that a retry can work; any other start failure does not. */
TEST(start_refused_by_nproc_names_the_limit)
{
    struct run_job j;
    memset(&j, 0, sizeof j);
    j.status = RUN_FAILED;
    j.exit_code = -1;
    j.timeout_s = 10;
    snprintf(j.request_id, sizeof j.request_id, "r1");
    snprintf(j.error, sizeof j.error, "cannot start /usr/bin/bash: execve failed: %s",
             strerror(EAGAIN));
    j.start_errno = EAGAIN;
    j.lim_nproc = 20;
    json_t *r = script_result(&j, 4, 5);
    CHECK(r != NULL);
    CHECK_STR(json_string_value(json_object_get(r, "limit")), "processes");
    const char *hint = json_string_value(json_object_get(r, "hint"));
    CHECK(hint && strstr(hint, "--script-max-processes") && strstr(hint, "than the 20 it may"));
    CHECK(strstr(hint, "Retry when fewer scripts run") && !strstr(hint, "retrying will not help"));
    json_decref(r);

    /* no cap of its own: the limit the server inherited refused it */
    j.lim_nproc = 0;
    r = script_result(&j, 4, 5);
    CHECK_STR(json_string_value(json_object_get(r, "limit")), "processes");
    hint = json_string_value(json_object_get(r, "hint"));
    CHECK(hint && strstr(hint, "ulimit -u") && strstr(hint, "Retry when fewer scripts run"));
    json_decref(r);

    /* another errno: an ordinary start failure */
    j.start_errno = ENOENT;
    j.lim_nproc = 20;
    r = script_result(&j, 4, 5);
    CHECK(r && !json_object_get(r, "limit"));
    hint = json_string_value(json_object_get(r, "hint"));
    CHECK(hint && strstr(hint, "could not be started (cannot start"));
    json_decref(r);
}

/* The limit a failed run's stderr names: EAGAIN alone is not a fork's (a
 * LOCK_NB lock, a non-blocking read say the same); bwrap refused before the
 * script ran is a refused start. */
TEST(processes_limit_read_from_stderr)
{
    static const struct {
        const char *err;
        int sandboxed;
        const char *limit;      /* NULL: none */
        const char *in_hint;
    } cases[] = {
        {"Traceback (most recent call last):\n  File \"/s/lock.py\", line 4, in <module>\n"
         "    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
         "BlockingIOError: [Errno 11] Resource temporarily unavailable\n",
         0, NULL, "exited with code 1"},
        {"cat: -: Resource temporarily unavailable\n", 0, NULL, "exited with code 1"},
        {"Traceback (most recent call last):\n  File \"/s/forks.py\", line 5, in <module>\n"
         "    if os.fork() == 0:\n"
         "BlockingIOError: [Errno 11] Resource temporarily unavailable\n",
         0, "processes", "could not start another process"},
        {"/s/run.sh: fork: retry: Resource temporarily unavailable\n", 0, "processes",
         "could not start another process"},
        {"Error: spawn /bin/ls EAGAIN\n", 0, "processes", "could not start another process"},
        {"RuntimeError: can't start new thread\n", 0, "processes",
         "could not start another process"},
        {"bwrap: Creating new namespace failed: Resource temporarily unavailable\n", 1,
         "processes", "could not be started: its user already had"},
        {"bwrap: Creating new namespace failed: Resource temporarily unavailable\n", 0, NULL,
         "exited with code 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct run_job j;
        memset(&j, 0, sizeof j);
        j.status = RUN_FAILED;
        j.exit_code = 1;
        j.timeout_s = 10;
        j.lim_nproc = 256;
        j.sandboxed = cases[i].sandboxed;
        snprintf(j.request_id, sizeof j.request_id, "r%zu", i);
        char *err = xstrdup(cases[i].err);
        j.err.data = err;
        j.err.len = j.err.total = strlen(err);
        json_t *r = script_result(&j, 4, 5);
        free(err);
        CHECK(r != NULL);
        const char *lim = json_string_value(json_object_get(r, "limit"));
        const char *hint = json_string_value(json_object_get(r, "hint"));
        if (cases[i].limit ? !lim || strcmp(lim, cases[i].limit) : lim != NULL)
            H_FAIL("case %zu: limit %s, want %s", i, lim ? lim : "(none)",
                   cases[i].limit ? cases[i].limit : "(none)");
        if (!hint || !strstr(hint, cases[i].in_hint))
            H_FAIL("case %zu: hint '%s' lacks '%s'", i, hint ? hint : "", cases[i].in_hint);
        json_decref(r);
    }
}

TEST(resolve_refusal_words)
{
    struct skill *k = skill_of("{\"name\":\"s\",\"description\":\"d\"}");
    CHECK(!prep(k, "{\"script\":\"scripts/nope.py\"}"));
    CHECK_STR(why.msg, "Cannot run 'scripts/nope.py' of skill 's': no such script in the "
                       "skill's scripts/ folder.");
    CHECK(!prep(k, "{\"script\":\"scripts/sub\"}"));
    CHECK_STR(why.msg, "Cannot run 'scripts/sub' of skill 's': that is a folder, not a script.");
    char hook[4200], want[4400];
    snprintf(hook, sizeof hook, "%s/hooks/gone.sh", dir);
    CHECK(!script_hook_job(SC, &C, hook, dir, "{}", 2, "s", dir, "r-1", "skill pre", &why));
    snprintf(want, sizeof want, "skill pre hook %s cannot run: the hook file is gone", hook);
    CHECK_STR(why.msg, want);
    skill_free(k);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    snprintf(base, sizeof base, "/tmp/skill-script-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 2;
    }
    char sk[200];
    chmod(base, 0755); /* a root test run: the default script user must reach it */
    snprintf(sk, sizeof sk, "%s/s", base);
    mkdir(sk, 0755);
    if (!realpath(sk, dir)) {
        perror("realpath");
        return 2;
    }
    mk("scripts");
    mk("scripts/sub");
    mk("references");
    put("scripts/top.sh", "echo top\n");
    put("scripts/huge.sh", "echo huge\n");
    put("scripts/run.py", "print('py')\n");
    put("scripts/notes.txt", "notes\n");
    put("scripts/sub/danger.sh", "echo danger\n");
    put("references/r.md", "# r\n");
    mk("hooks");
    put("hooks/pre.sh", "cat >/dev/null\n");
    put("scripts/shebang.sh", "#!/usr/bin/env python3\nprint('x')\n");
    put("scripts/shebang.py", "#!/bin/bash\necho x\n");
    put("scripts/tool", "#!/bin/bash\necho x\n");
    chmod(dir, 0755);
    /* what the server's environment holds must not leak into scripts */
    setenv("SKILL_MCP_TEST_SECRET", "sekrit", 1);
    setenv("HOOK_AUDIT_TEST", "/var/log/audit", 1);
    setenv("PYTHONSTARTUP", "/tmp/sekrit.py", 1);
    char link[4200];
    snprintf(link, sizeof link, "%s/scripts/alias.sh", dir);
    if (symlink("sub/danger.sh", link) < 0) {
        perror("symlink");
        return 2;
    }

    char *argv[] = {"skill-mcp", "--skills", base, NULL};
    int rc = cfg_parse(&C, 3, argv);
    if (rc != 0) {
        printf("# cfg_parse: %d\n", rc);
        return 2;
    }
    if (!(SC = script_setup(&C))) {
        printf("# script_setup failed\n");
        return 2;
    }

    RUN(timeout_policy);
    RUN(stall_policy);
    RUN(env_allowlist);
    RUN(interpreter_by_suffix);
    RUN(python_cache_outside_skill);
    RUN(resolve_refusal_words);
    RUN(canonical_identity);
    RUN(verify_at_spawn);
    RUN(spawn_as_names_the_failed_step);
    RUN(spawn_as_sources_among_targets);
    RUN(caller_timeout_clamped_to_max);
    RUN(limits_follow_policy);
    RUN(server_secrets_never_passed);
    RUN(interpreter_not_by_shebang);
    RUN(start_refused_by_nproc_names_the_limit);
    RUN(processes_limit_read_from_stderr);

    script_free(SC);
    tt_rm_rf(base);
    DONE();
}
