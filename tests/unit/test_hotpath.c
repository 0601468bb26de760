/*
 * test_hotpath.c - the hot-path rule: list_skills and load_skill touch no
 * disk, take no lock and parse no skill file.
 *
 * The calls run on a thread of their own under a seccomp filter that traps
 * every system call but the allocator's (mmap, brk, madvise, ...), the
 * clock's and futex (the allocator's own locks); a trapped call is recorded
 * by number and fails with ENOSYS, so the thread carries on and the test
 * names every call made. Locks and parsers are counted by the linker:
 * this binary is linked with --wrap for the pthread lock functions, libyaml's
 * parser and the frontmatter and Markdown parsers (see the Makefile), so
 * every call to them from the server's objects passes a counter first. The
 * counters are per thread: the body indexer's own locks do not count.
 */
#include "harness.h"
#include "call.h"
#include "fmfast.h"
#include "frontmatter.h"
#include "markdown.h"
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
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <yaml.h>

#define FIXTURE_NAME "hotpath"
#include "srv_fixture.h"

/* ---- counting: locks and parsers (--wrap) --------------------------------- */

enum { W_MUTEX, W_TRYLOCK, W_RDLOCK, W_WRLOCK, W_SPIN, W_COND, W_YAML, W_FM, W_FMFAST, W_MD,
       W_N };
static const char *const w_names[W_N] = {
    "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_rwlock_rdlock",
    "pthread_rwlock_wrlock", "pthread_spin_lock", "pthread_cond_wait",
    "yaml_parser_initialize", "fm_parse", "fm_fast_parse", "md_sections",
};
static _Thread_local int counting;
static _Thread_local unsigned wraps[W_N];

#define COUNT(w) do { if (counting) wraps[w]++; } while (0)

/* __wrap_fn counts a call of fn on a counting thread, then calls it. */
#define WRAP(ret, fn, w, params, args)              \
    ret __real_##fn params;                         \
    ret __wrap_##fn params;                         \
    ret __wrap_##fn params                          \
    {                                               \
        COUNT(w);                                   \
        return __real_##fn args;                    \
    }

WRAP(int, pthread_mutex_lock, W_MUTEX, (pthread_mutex_t *m), (m))
WRAP(int, pthread_mutex_trylock, W_TRYLOCK, (pthread_mutex_t *m), (m))
WRAP(int, pthread_rwlock_rdlock, W_RDLOCK, (pthread_rwlock_t *l), (l))
WRAP(int, pthread_rwlock_wrlock, W_WRLOCK, (pthread_rwlock_t *l), (l))
WRAP(int, pthread_spin_lock, W_SPIN, (pthread_spinlock_t *l), (l))
WRAP(int, pthread_cond_wait, W_COND, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
WRAP(int, yaml_parser_initialize, W_YAML, (yaml_parser_t *p), (p))
WRAP(int, fm_parse, W_FM,
     (const char *buf, size_t len, int complete, struct fm *out, struct err *err),
     (buf, len, complete, out, err))
WRAP(json_t *, fm_fast_parse, W_FMFAST, (const char *s, size_t len), (s, len))
WRAP(size_t, md_sections, W_MD, (const char *body, size_t len, struct md_section **out),
     (body, len, out))

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
static volatile sig_atomic_t ntrapped;
static volatile int trapped[MAX_TRAPPED];

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

/* This thread from now on: every system call but the allowed ones traps. */
static int sandbox_thread(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* the allocator (its arenas grow, shrink and lock) and the clock */
        ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mremap), ALLOW(__NR_brk),
        ALLOW(__NR_madvise), ALLOW(__NR_mprotect), ALLOW(__NR_futex),
        ALLOW(__NR_clock_gettime), ALLOW(__NR_gettimeofday),
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
    const char *tool, *args;
    int modern;
    int rc;                     /* tools_call's return */
    size_t len;                 /* the answer's bytes */
    unsigned wraps[W_N];
    int nsys, sys[MAX_TRAPPED];
};

/* tool(args) on this thread, its locks, parses and system calls counted
 * (the arguments are built before and freed after: the request's own parse
 * is not the skill's). */
static void one_call(struct probe *p)
{
    json_error_t e;
    json_t *a = p->args ? json_loads(p->args, 0, &e) : NULL;
    struct call *c = call_new(&S);
    c->modern = p->modern;
    memset(wraps, 0, sizeof wraps);
    ntrapped = 0;
    counting = 1;
    p->rc = tools_call(c, p->tool, a);
    counting = 0;
    memcpy(p->wraps, wraps, sizeof wraps);
    p->nsys = ntrapped;
    for (int i = 0; i < ntrapped && i < MAX_TRAPPED; i++)
        p->sys[i] = trapped[i];
    size_t len = 0;
    int owned = 0;
    if (p->rc == 0 && call_raw_bytes(c, &len, &owned))
        p->len = len;
    call_unref(c);
    json_decref(a);
}

/*
 * A serving thread's life in short: warm (the calls once each, unchecked),
 * then under the filter (the calls again, checked). A thread's first use of
 * its per-thread slots takes a lock once, as each HTTP thread does when it
 * starts serving; the rule is about every request after that.
 */
struct run {
    struct probe *warm, *checked;
    size_t nwarm, nchecked;
    int sandboxed;
};

static void *run_main(void *arg)
{
    struct run *r = arg;
    for (size_t i = 0; i < r->nwarm; i++)
        one_call(&r->warm[i]);
    r->sandboxed = sandbox_thread() == 0;
    for (size_t i = 0; r->sandboxed && i < r->nchecked; i++)
        one_call(&r->checked[i]);
    return NULL;
}

static int run_thread(struct run *r)
{
    pthread_t t;
    if (pthread_create(&t, NULL, run_main, r) != 0 || pthread_join(t, NULL) != 0) {
        H_FAIL("cannot start the probe thread");
        return -1;
    }
    if (!r->sandboxed) {
        H_FAIL("the seccomp filter was refused (%s)", strerror(errno));
        return -1;
    }
    return 0;
}

/* What p did besides answering, printed; the number of things found. */
static int misdeeds(const struct probe *p)
{
    const char *args = p->args ? p->args : "";
    int bad = 0;
    if (p->rc != 0 || !p->len) {
        printf("# %s %s: no answer (rc %d)\n", p->tool, args, p->rc);
        bad++;
    }
    for (int i = 0; i < p->nsys && i < MAX_TRAPPED; i++) {
        printf("# %s %s: system call %d\n", p->tool, args, p->sys[i]);
        bad++;
    }
    for (int w = 0; w < W_N; w++)
        if (p->wraps[w]) {
            printf("# %s %s: %s called %u time(s)\n", p->tool, args, w_names[w], p->wraps[w]);
            bad++;
        }
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
    struct run r = {.checked = &p, .nchecked = 1};
    if (run_thread(&r))
        return;
    CHECK(p.nsys > 0);
    /* a rescan after an edit reads the edited SKILL.md again */
    skill_md("y", "y", "The y skill, edited", NULL, "# Y\n\nBody of y, edited.\n");
    struct skills_report rep;
    memset(&rep, 0, sizeof rep);
    memset(wraps, 0, sizeof wraps);
    counting = 1;
    skills_rescan(S.skills, 1, &rep);
    counting = 0;
    skills_report_cleanup(&rep);
    CHECK(wraps[W_MUTEX] > 0);
    CHECK(wraps[W_FM] > 0);
}

/*
 * Every shape of the two calls, in both eras: warmed twice (a skill's body
 * is read and its sections found on its first load, then cached with its
 * entry, the only disk a load touches; a query's first ranking fills the
 * page cache, its first hit claims the thread's slot), then twice under the
 * filter: no system call, no lock, no parse.
 */
static void all_shapes_touch_nothing(void)
{
    static const struct {
        const char *tool, *args;
    } calls[] = {
        {"list_skills", NULL},
        {"list_skills", "{}"},
        {"list_skills", "{\"query\":\"csv columns\"}"},
        {"list_skills", "{\"query\":\"long reference\",\"limit\":1}"},
        {"list_skills", "{\"tags\":[\"data\"]}"},
        {"list_skills", "{\"limit\":2,\"cursor\":null}"},
        {"load_skill", "{\"name\":\"csv-profile\"}"},
        {"load_skill", "{\"name\":\"x\",\"section\":\"usage\"}"},
        {"load_skill", "{\"name\":\"x\",\"section\":\"## Usage\"}"},
        {"load_skill", "{\"name\":\"acme/billing\",\"section\":\"invoices\"}"},
        {"load_skill", "{\"name\":\"reports\"}"},
        {"load_skill", "{\"name\":\"long\"}"},
        {"load_skill", "{\"name\":\"long\",\"section\":\"part 7\"}"},
        {"load_skill", "{\"name\":\"no-such-skill\"}"},
    };
    enum { N = sizeof calls / sizeof calls[0] };
    struct probe warm[4 * N], checked[4 * N];
    memset(warm, 0, sizeof warm);
    memset(checked, 0, sizeof checked);
    for (size_t i = 0; i < 4 * N; i++) {
        warm[i].tool = checked[i].tool = calls[i % N].tool;
        warm[i].args = checked[i].args = calls[i % N].args;
        warm[i].modern = checked[i].modern = (int)(i / N) % 2;
    }
    struct run r = {.warm = warm, .nwarm = 4 * N, .checked = checked, .nchecked = 4 * N};
    if (run_thread(&r))
        return;
    int bad = 0;
    for (size_t i = 0; i < 4 * N; i++)
        if (warm[i].rc != 0 || !warm[i].len) {
            printf("# warm-up %s %s: no answer\n", warm[i].tool, warm[i].args ? warm[i].args : "");
            bad++;
        }
    for (size_t i = 0; i < 4 * N; i++)
        bad += misdeeds(&checked[i]);
    CHECK_EQ(bad, 0);
}

TEST(list_and_load_touch_nothing)
{
    all_shapes_touch_nothing();
}

/* A small model's budget: pages cut to it, a long body cut with its note. */
TEST(list_and_load_touch_nothing_small_budget)
{
    server_down();
    static const char *const small[] = {"--context-tokens", "3000", NULL};
    server_up_with(small);
    struct probe p = {.tool = "load_skill", .args = "{\"name\":\"long\"}"};
    one_call(&p);
    CHECK_EQ(p.rc, 0);
    CHECK(p.len < 20000);   /* the 24 KB body was cut: the shaping path ran */
    all_shapes_touch_nothing();
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
    RUN(list_and_load_touch_nothing_small_budget);
    server_down();
    rm_tree(base);
    DONE();
}
