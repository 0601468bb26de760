/*
 * test_hotpath.c - the hot-path rule: list_skills and load_skill, as an HTTP
 * thread runs them (rpc_handle on the POST body, both protocol eras, the
 * request's view of the common shapes and its tree for the others, through
 * the answer's completion), touch no disk, take no lock and parse no skill
 * file once warm.
 *
 * The calls run on threads of their own under a seccomp filter that traps
 * every system call but the allocator's (mmap, brk, madvise, ...) and the
 * clock's; a trapped call is recorded by number and fails with ENOSYS, so
 * the thread carries on and the test names every call made. With one probe
 * thread no other runs (the fixture starts no body indexer), so futex, a
 * lock's wait, is trapped too; with two it is allowed (the allocator's own
 * locks). Locks and parsers are counted by the linker: this binary is
 * linked with --wrap for the pthread, C11 and semaphore lock functions,
 * libyaml's parser and the frontmatter and Markdown parsers (see the
 * Makefile), so every call to them from the server's objects passes a
 * counter first. The log is at the server's default level (a line per
 * request is a write the filter names), and the answer goes to a completion
 * callback as the transport's does. Not seen: a lock spun by hand on an
 * atomic, work done only on a timer or on a count of calls that lands in
 * the warm-up rounds or past the checked ones, and allocation (the
 * allocator's system calls are allowed).
 */
#include "harness.h"
#include "acl.h"
#include "call.h"
#include "fmfast.h"
#include "frontmatter.h"
#include "markdown.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <threads.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <yaml.h>

#define FIXTURE_NAME "hotpath"
#include "srv_fixture.h"

/* ---- counting: locks and parsers (--wrap) --------------------------------- */

/* The functions counted: the Makefile's --wrap list is read off these lines. */
#define WRAPPED(X)                                                                          \
    X(int, pthread_mutex_lock, (pthread_mutex_t *m), (m))                                   \
    X(int, pthread_mutex_trylock, (pthread_mutex_t *m), (m))                                \
    X(int, pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *t), (m, t)) \
    X(int, pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l))                               \
    X(int, pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l))                               \
    X(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *l), (l))                            \
    X(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *l), (l))                            \
    X(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *l, const struct timespec *t), (l, t)) \
    X(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t *l, const struct timespec *t), (l, t)) \
    X(int, pthread_spin_lock, (pthread_spinlock_t *l), (l))                                 \
    X(int, pthread_spin_trylock, (pthread_spinlock_t *l), (l))                              \
    X(int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))              \
    X(int, pthread_cond_timedwait,                                                          \
      (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))         \
    X(int, sem_wait, (sem_t *s), (s))                                                       \
    X(int, sem_trywait, (sem_t *s), (s))                                                    \
    X(int, sem_timedwait, (sem_t *s, const struct timespec *t), (s, t))                     \
    X(int, mtx_lock, (mtx_t *m), (m))                                                       \
    X(int, mtx_trylock, (mtx_t *m), (m))                                                    \
    X(int, mtx_timedlock, (mtx_t *m, const struct timespec *t), (m, t))                     \
    X(int, yaml_parser_initialize, (yaml_parser_t *p), (p))                                 \
    X(int, fm_parse, (const char *buf, size_t len, int complete, struct fm *out,            \
      struct err *err), (buf, len, complete, out, err))                                     \
    X(json_t *, fm_fast_parse, (const char *s, size_t len), (s, len))                       \
    X(size_t, md_sections, (const char *body, size_t len, struct md_section **out),         \
      (body, len, out))

#define W_ENUM(ret, fn, params, args) W_##fn,
#define W_NAME(ret, fn, params, args) #fn,
enum { WRAPPED(W_ENUM) W_N };
static const char *const w_names[W_N] = {WRAPPED(W_NAME)};
static _Thread_local int counting;
static _Thread_local unsigned wraps[W_N];
/* The running call's own lock (call_own_lock): a mutex of the request's
 * own, which no other request takes, is not one that requests share. */
static _Thread_local const void *own_lock;

static const volatile void *w_first(const volatile void *p, ...)
{
    return p;
}

/* __wrap_fn counts a call of fn on a counting thread, then calls it. */
#define W_DEFINE(ret, fn, params, args)                         \
    ret __real_##fn params;                                     \
    ret __wrap_##fn params;                                     \
    ret __wrap_##fn params                                      \
    {                                                           \
        if (counting && w_first args != own_lock)               \
            wraps[W_##fn]++;                                    \
        return __real_##fn args;                                \
    }
WRAPPED(W_DEFINE)

/* ---- counting: system calls (seccomp) --------------------------------------- */

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#define SYSRET(uc) ((uc)->uc_mcontext.gregs[REG_RAX])
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#define SYSRET(uc) ((uc)->uc_mcontext.regs[0])
#else
#error "test_hotpath: seccomp return register unknown on this architecture"
#endif

#define MAX_TRAPPED 64
/* Per thread, as the handler runs on the thread whose call trapped: two
 * probe threads must not count into one record. */
static _Thread_local volatile sig_atomic_t ntrapped;
static _Thread_local volatile int trapped[MAX_TRAPPED];

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    if (ntrapped < MAX_TRAPPED)
        trapped[ntrapped] = si->si_syscall;
    ntrapped++;
    SYSRET((ucontext_t *)ctx) = -ENOSYS;
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* This thread from now on: every system call but the allowed ones traps;
 * futex too unless futex_ok (two threads at once: the allocator's own
 * locks may then wait, glibc's on a block freed into another thread's
 * arena, a sanitizer's on any). */
static int sandbox_thread(int futex_ok)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* the allocator (its arenas grow and shrink) and the clock */
        ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mremap), ALLOW(__NR_brk),
        ALLOW(__NR_madvise), ALLOW(__NR_mprotect),
        ALLOW(__NR_clock_gettime), ALLOW(__NR_gettimeofday),
        ALLOW(futex_ok ? __NR_futex : __NR_clock_gettime),
        /* the thread's own end (the sanitizers' runtime takes down its
         * signal stack; a report's write is trapped too, and the run fails
         * on its exit status) */
        ALLOW(__NR_exit), ALLOW(__NR_exit_group), ALLOW(__NR_rt_sigprocmask),
        ALLOW(__NR_rt_sigreturn), ALLOW(__NR_sigaltstack), ALLOW(__NR_sched_yield),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* ---- the calls -------------------------------------------------------------- */

struct probe {
    const char *tool;
    char args[160];             /* the arguments' JSON, "" for none */
    int modern;
    int kind;                   /* call_kind of the answer */
    size_t len;                 /* the answer's bytes */
    unsigned wraps[W_N];
    int nsys, sys[MAX_TRAPPED];
};

/* The POST body of p, as a client of its era sends it. */
static size_t body_of(const struct probe *p, char *out, size_t cap)
{
    char args[200] = "";
    if (p->args[0])
        snprintf(args, sizeof args, ",\"arguments\":%s", p->args);
    int n = snprintf(out, cap,
                     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                     "\"params\":{\"name\":\"%s\"%s%s}}",
                     p->tool, args,
                     p->modern ? ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                                 "\"2026-07-28\",\"io.modelcontextprotocol/"
                                 "clientCapabilities\":{}}"
                               : "");
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The transport's side of a completion (http.c's plain_complete): the
 * bytes are handed over and released once sent. */
static void probe_complete(char *bytes, size_t len, void *arg)
{
    *(size_t *)arg = bytes ? len : 0;
    x_reply_free(bytes);
}

/*
 * p as an HTTP thread runs it, from the body to the answer's release, its
 * locks, parses and system calls counted (the body is composed before).
 */
static void one_call(struct probe *p)
{
    char body[512];
    size_t blen = body_of(p, body, sizeof body);
    struct rpc_headers h = {0};
    if (p->modern) {
        h.protocol_version = "2026-07-28";
        h.method = "tools/call";
        h.name = p->tool;
    }
    memset(wraps, 0, sizeof wraps);
    ntrapped = 0;
    counting = 1;
    struct call *c = call_new(&S);
    own_lock = call_own_lock(c);
    call_set_view(c, acl_classify(S.acl, NULL));
    size_t len = 0;
    call_on_complete(c, probe_complete, &len);
    rpc_handle(c, body, blen, &h);
    p->kind = call_kind(c);
    p->len = len;
    call_unref(c);
    counting = 0;
    own_lock = NULL;
    memcpy(p->wraps, wraps, sizeof wraps);
    p->nsys = ntrapped;
    for (int i = 0; i < ntrapped && i < MAX_TRAPPED; i++)
        p->sys[i] = trapped[i];
}

static int answered(const struct probe *p)
{
    return (p->kind == CALL_RESULT || p->kind == CALL_RAW || p->kind == CALL_RESPONSE) &&
           p->len > 0;
}

/*
 * A serving thread's life in short: warm (the calls, unchecked), then under
 * the filter (the calls again, checked). A thread's first use of its
 * per-thread slots takes a lock once, as each HTTP thread does when it
 * starts serving; the rule is about every request after that.
 */
struct run {
    const struct probe *calls;
    size_t n;
    struct probe *warm, *checked;   /* WARM_ROUNDS and CHECKED_ROUNDS times n */
    int futex_ok;                   /* allowed: another thread runs too */
    int sandboxed, sandbox_errno;
    pthread_t t;
};

#define WARM_ROUNDS 2
#define CHECKED_ROUNDS 8

static void *run_main(void *arg)
{
    struct run *r = arg;
    for (size_t i = 0; i < WARM_ROUNDS * r->n; i++) {
        r->warm[i] = r->calls[i % r->n];
        one_call(&r->warm[i]);
    }
    r->sandboxed = sandbox_thread(r->futex_ok) == 0;
    r->sandbox_errno = errno;
    for (size_t i = 0; r->sandboxed && i < CHECKED_ROUNDS * r->n; i++) {
        r->checked[i] = r->calls[i % r->n];
        one_call(&r->checked[i]);
    }
    return NULL;
}

/* What p did besides answering, printed; the number of things found. */
static int misdeeds(const struct probe *p, const char *when)
{
    const char *era = p->modern ? "modern" : "legacy";
    int bad = 0;
    if (!answered(p)) {
        printf("# %s %s %s %s: no answer (kind %d)\n", when, era, p->tool, p->args, p->kind);
        bad++;
    }
    for (int i = 0; i < p->nsys && i < MAX_TRAPPED; i++) {
        printf("# %s %s %s %s: system call %d\n", when, era, p->tool, p->args, p->sys[i]);
        bad++;
    }
    for (int w = 0; w < W_N; w++)
        if (p->wraps[w]) {
            printf("# %s %s %s %s: %s called %u time(s)\n", when, era, p->tool, p->args,
                   w_names[w], p->wraps[w]);
            bad++;
        }
    return bad;
}

/* The calls on nthreads threads at once; the number of misdeeds found. */
static int run_threads(const struct probe *calls, size_t n, int nthreads)
{
    struct run r[2];
    int bad = 0;
    if (nthreads > 2)
        nthreads = 2;
    /* the server's default level: a line it would write per request is a
     * system call the filter names */
    log_set_level(LOG_INFO);
    int started = 0;
    for (; started < nthreads; started++) {
        r[started] = (struct run){.calls = calls, .n = n, .futex_ok = nthreads > 1,
                                  .warm = xcalloc(WARM_ROUNDS * n, sizeof(struct probe)),
                                  .checked = xcalloc(CHECKED_ROUNDS * n, sizeof(struct probe))};
        if (pthread_create(&r[started].t, NULL, run_main, &r[started]) != 0) {
            printf("# cannot start a probe thread\n");
            free(r[started].warm);
            free(r[started].checked);
            bad++;
            break;
        }
    }
    /* every started thread is joined: each uses its run on this stack */
    for (int t = 0; t < started; t++) {
        pthread_join(r[t].t, NULL);
        if (!r[t].sandboxed) {
            printf("# the seccomp filter was refused (%s)\n", strerror(r[t].sandbox_errno));
            bad++;
        }
        for (size_t i = 0; i < WARM_ROUNDS * n; i++)
            if (!answered(&r[t].warm[i])) {
                printf("# warm-up %s %s: no answer\n", r[t].warm[i].tool, r[t].warm[i].args);
                bad++;
            }
        for (size_t i = 0; r[t].sandboxed && i < CHECKED_ROUNDS * n; i++)
            bad += misdeeds(&r[t].checked[i], "checked");
        free(r[t].warm);
        free(r[t].checked);
    }
    log_set_level(LOG_WARN);
    return bad;
}

/* ---- tests ---------------------------------------------------------------- */

/* The probe itself: a call that must read the disk is seen doing it, and a
 * lock and a parse in the server's objects are seen through the wraps, so a
 * clean result below is not a blind probe. */
TEST(probe_sees_disk_lock_and_parse)
{
    struct probe p = {.tool = "read_skill_file",
                      .args = "{\"name\":\"x\",\"path\":\"references/a.md\"}"};
    struct probe warm[WARM_ROUNDS], checked[CHECKED_ROUNDS];
    struct run r = {.calls = &p, .n = 1, .warm = warm, .checked = checked};
    CHECK(pthread_create(&r.t, NULL, run_main, &r) == 0);
    CHECK(pthread_join(r.t, NULL) == 0);
    if (!r.sandboxed)
        H_FAIL("the seccomp filter was refused (%s)", strerror(r.sandbox_errno));
    CHECK(r.sandboxed);
    CHECK(answered(&warm[0]));
    CHECK(checked[0].nsys > 0);
    /* a rescan after an edit reads the edited SKILL.md again */
    skill_md("y", "y", "The y skill, edited", NULL, "# Y\n\nBody of y, edited.\n");
    struct skills_report rep;
    memset(&rep, 0, sizeof rep);
    memset(wraps, 0, sizeof wraps);
    counting = 1;
    skills_rescan(S.skills, 1, &rep);
    counting = 0;
    skills_report_cleanup(&rep);
    CHECK(wraps[W_pthread_mutex_lock] > 0);
    CHECK(wraps[W_fm_parse] > 0);
}

/* Every shape of the two calls, in both eras. */
static const struct {
    const char *tool, *args;
} shapes[] = {
    {"list_skills", ""},
    {"list_skills", "{}"},
    {"list_skills", "{\"query\":\"csv columns\"}"},
    {"list_skills", "{\"query\":\"profile a csv file with columns\",\"limit\":3}"},
    {"list_skills", "{\"query\":\"r\u00e9sum\u00e9 \u6587\u4ef6\"}"},
    {"list_skills", "{\"query\":\"long reference\",\"limit\":1}"},
    {"list_skills", "{\"query\":\"reports\",\"tags\":[\"finance\"]}"},
    {"list_skills", "{\"tags\":[\"data\"]}"},
    {"list_skills", "{\"limit\":2,\"cursor\":null}"},
    {"list_skills", "{\"limit\":2,\"cursor\":\"CURSOR\"}"},
    {"list_skills", "{\"query\":\"\"}"},
    {"load_skill", "{\"name\":\"csv-profile\"}"},
    {"load_skill", "{\"name\":\"x\",\"section\":\"usage\"}"},
    {"load_skill", "{\"name\":\"x\",\"section\":\"## Usage\"}"},
    {"load_skill", "{\"name\":\"x\",\"section\":\"no such section\"}"},
    {"load_skill", "{\"name\":\"acme/billing\"}"},
    {"load_skill", "{\"name\":\"acme/billing\",\"section\":\"invoices\"}"},
    {"load_skill", "{\"name\":\"reports\"}"},
    {"load_skill", "{\"name\":\"long\"}"},
    {"load_skill", "{\"name\":\"long\",\"section\":\"part 7\"}"},
    {"load_skill", "{\"name\":\"no-such-skill\"}"},
    {"load_skill", "{\"name\":\"x\",\"extra\":1}"},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The next_cursor of list_skills {"limit":2}, asked once unchecked. */
static int first_cursor(char *out, size_t cap)
{
    struct probe p = {.tool = "list_skills", .args = "{\"limit\":2}"};
    char body[512];
    size_t blen = body_of(&p, body, sizeof body);
    struct call *c = call_new(&S);
    rpc_handle(c, body, blen, &(struct rpc_headers){0});
    size_t len = 0;
    char *ans = call_take_body(c, &len);
    call_unref(c);
    json_t *j = ans ? json_loadb(ans, len, 0, NULL) : NULL;
    free(ans);
    const char *cur = json_string_value(json_object_get(
        json_object_get(json_object_get(j, "result"), "structuredContent"), "next_cursor"));
    int ok = cur && strlen(cur) < cap;
    if (ok)
        strcpy(out, cur);
    json_decref(j);
    return ok ? 0 : -1;
}

/* Every shape, both eras, on nthreads threads at once: warmed twice (a
 * skill's body is read and its sections found on its first load, then
 * cached with its entry, the only disk a load touches; a query's first
 * ranking fills the page cache, its first hit claims the thread's slot),
 * then eight rounds under the filter. */
static int all_shapes(int nthreads)
{
    char cursor[64];
    if (first_cursor(cursor, sizeof cursor) < 0) {
        printf("# list_skills {\"limit\":2} gave no next_cursor\n");
        return 1;
    }
    struct probe calls[2 * NSHAPES];
    memset(calls, 0, sizeof calls);
    for (size_t i = 0; i < 2 * NSHAPES; i++) {
        calls[i].tool = shapes[i % NSHAPES].tool;
        calls[i].modern = i >= NSHAPES;
        const char *a = shapes[i % NSHAPES].args, *at = strstr(a, "CURSOR");
        if (at)
            snprintf(calls[i].args, sizeof calls[i].args, "%.*s%s%s", (int)(at - a), a, cursor,
                     at + 6);
        else
            snprintf(calls[i].args, sizeof calls[i].args, "%s", a);
    }
    return run_threads(calls, 2 * NSHAPES, nthreads);
}

TEST(list_and_load_touch_nothing)
{
    CHECK_EQ(all_shapes(1), 0);
}

/* Two threads at once: a path taken only when another reader or writer is
 * there (a page being kept, a body being cached) runs too. */
TEST(list_and_load_touch_nothing_two_threads)
{
    server_down();
    server_up();
    CHECK_EQ(all_shapes(2), 0);
}

/* A small model's budget: pages cut to it, a long body cut with its note. */
TEST(list_and_load_touch_nothing_small_budget)
{
    server_down();
    static const char *const small[] = {"--context-tokens", "3000", NULL};
    server_up_with(small);
    struct probe p = {.tool = "load_skill", .args = "{\"name\":\"long\"}"};
    one_call(&p);
    CHECK(answered(&p));
    CHECK(p.len < 20000);   /* the 24 KB body was cut: the shaping path ran */
    CHECK_EQ(all_shapes(1), 0);
}

/* A body of 24 sections of ~1 KB each. */
static void long_skill(void)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "# Long\n\nA long reference body.\n\n");
    for (int i = 1; i <= 24; i++) {
        buf_printf(&b, "## Part %d\n\n", i);
        for (int j = 0; j < 16; j++)
            buf_puts(&b, "Sixty-odd bytes of plain text to fill this section out. ");
        buf_puts(&b, "\n\n");
    }
    char text[32768];
    int n = snprintf(text, sizeof text,
                     "---\nname: long\ndescription: A long reference skill\ntags: [data]\n---\n%s",
                     b.p);
    put("skills/long/SKILL.md", text, (size_t)n);
    buf_cleanup(&b);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_WARN);
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, NULL);
    make_tree();
    long_skill();
    server_up();
    RUN(probe_sees_disk_lock_and_parse);
    RUN(list_and_load_touch_nothing);
    RUN(list_and_load_touch_nothing_two_threads);
    RUN(list_and_load_touch_nothing_small_budget);
    server_down();
    rm_tree(base);
    DONE();
}
