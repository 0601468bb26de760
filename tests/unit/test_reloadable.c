/*
 * test_reloadable.c - the reloadable rule file helper behind --acl,
 * --redact and --auth-tokens: a good version swaps and is logged, a bad one
 * keeps the set in force and is reported once until the file changes, an
 * unchanged file is not read again, a vanished one keeps the set, a forced
 * reload reads anyway; the whole-file reader's refusals; and readers racing
 * reloads (run under ThreadSanitizer by `make tsan`).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "tmptree.h"
#include "reloadable.h"
#include "util.h"

/* A set is one number from the file; check is derived from it, so a reader
 * that saw the pointer before the fields would see them disagree. */
struct tset {
    size_t n;
    size_t check;
};

static int loads;       /* calls of tload (the reloading thread alone) */

static void *tload(void *ctx, const char *file, struct stat *st, struct err *err)
{
    loads++;
    size_t len;
    char *text = reloadable_read(file, 64, "the test file", st, &len, err);
    if (!text)
        return NULL;
    char *end;
    unsigned long v = strtoul(text, &end, 10);
    int ok = end != text && *end == '\n';
    free(text);
    if (!ok) {
        err_fileline(err, file, 1, "not a number");
        return NULL;
    }
    struct tset *s = xmalloc(sizeof *s);
    s->n = v;
    s->check = ~(size_t)v;
    return s;
}

static void tfree(void *s)
{
    free(s);
}

static size_t tcount(const void *s)
{
    return ((const struct tset *)s)->n;
}

static const struct reloadable_kind tkind = {
    .what = "test rules", .kept = "in force", .unit = "test rules",
    .load = tload, .free = tfree, .count = tcount,
};

/* ---- the log, captured from stderr ---------------------------------------- */

static char cap_path[] = "/tmp/reloadable-log-XXXXXX";
static int cap_saved = -1;
static char cap_buf[8192];

static void cap_begin(void)
{
    fflush(stderr);
    cap_saved = dup(2);
    int fd = open(cap_path, O_WRONLY | O_TRUNC);
    dup2(fd, 2);
    close(fd);
}

static const char *cap_end(void)
{
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    int fd = open(cap_path, O_RDONLY);
    size_t n = fd >= 0 ? x_pread_full(fd, cap_buf, sizeof cap_buf - 1) : 0;
    if (fd >= 0)
        close(fd);
    cap_buf[n] = '\0';
    return cap_buf;
}

static int count_of(const char *hay, const char *needle)
{
    int k = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        k++;
    return k;
}

/* One reload with its log captured into *log. */
static int reload_logged(struct reloadable *r, int force, const char **log)
{
    cap_begin();
    int rc = reloadable_reload(r, force);
    *log = cap_end();
    return rc;
}

static int opened(struct reloadable *r, const char *path)
{
    struct err err = {0};
    struct stat st;
    struct tset *s = tload(NULL, path, &st, &err);
    if (!s)
        return 0;
    reloadable_init(r, &tkind, NULL, path, s, &st);
    return 1;
}

static size_t cur_n(struct reloadable *r)
{
    return ((const struct tset *)reloadable_cur(r))->n;
}

/* ---- tests ------------------------------------------------------------------ */

TEST(good_version_swaps_and_logs)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "3\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    const struct tset *old = reloadable_cur(&r);
    CHECK_EQ(old->n, 3);

    tt_put_at(path, "5\n", 1001);
    const char *log;
    CHECK_EQ(reload_logged(&r, 0, &log), 1);
    CHECK_EQ(cur_n(&r), 5);
    char want[128];
    snprintf(want, sizeof want, "%s: 5 test rules loaded", path);
    if (!strstr(log, want))
        H_FAIL("log '%s' lacks '%s'", log, want);
    /* a reader that still holds the replaced set can use it */
    CHECK_EQ(old->n, 3);
    CHECK_EQ(old->check, ~(size_t)3);
    reloadable_fini(&r);
    unlink(path);
}

TEST(unchanged_file_is_not_read_again)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "3\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    int before = loads;
    const char *log;
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(loads, before);
    CHECK_STR(log, "");
    /* the same bytes, another mtime: another version, read */
    tt_put_at(path, "3\n", 1001);
    CHECK_EQ(reload_logged(&r, 0, &log), 1);
    CHECK_EQ(loads, before + 1);
    /* forced (SIGHUP): read although unchanged */
    CHECK_EQ(reload_logged(&r, 1, &log), 1);
    CHECK_EQ(loads, before + 2);
    reloadable_fini(&r);
    unlink(path);
}

TEST(edit_with_its_old_mtime_put_back_is_read)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "3\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    /* past a timestamp tick: the edit's change time differs */
    usleep(20000);
    /* same inode, same size, the mtime put back (touch -d, rsync -t) */
    tt_put_at(path, "4\n", 1000);
    const char *log;
    CHECK_EQ(reload_logged(&r, 0, &log), 1);
    CHECK_EQ(cur_n(&r), 4);
    reloadable_fini(&r);
    unlink(path);
}

TEST(bad_version_keeps_the_set_and_is_reported_once)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "3\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    const void *kept = reloadable_cur(&r);

    tt_put_at(path, "three\n", 1001);
    const char *log;
    CHECK_EQ(reload_logged(&r, 0, &log), -1);
    CHECK(reloadable_cur(&r) == kept);
    char want[256];
    snprintf(want, sizeof want, "test rules not reloaded, keeping the 3 in force: %s:1: not a number",
             path);
    if (!strstr(log, want))
        H_FAIL("log '%s' lacks '%s'", log, want);
    CHECK_EQ(count_of(log, "not reloaded"), 1);

    /* the same bad version: neither read nor reported again */
    int before = loads;
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(loads, before);
    CHECK_EQ(count_of(log, "not reloaded"), 0);

    /* another bad version: reported again, once */
    tt_put_at(path, "four\n", 1002);
    CHECK_EQ(reload_logged(&r, 0, &log), -1);
    CHECK_EQ(count_of(log, "not reloaded"), 1);
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(count_of(log, "not reloaded"), 0);
    /* forced: the operator asked, so it is reported even if seen */
    CHECK_EQ(reload_logged(&r, 1, &log), -1);
    CHECK_EQ(count_of(log, "not reloaded"), 1);
    CHECK(reloadable_cur(&r) == kept);

    /* fixed: in force */
    tt_put_at(path, "7\n", 1003);
    CHECK_EQ(reload_logged(&r, 0, &log), 1);
    CHECK_EQ(cur_n(&r), 7);
    reloadable_fini(&r);
    unlink(path);
}

TEST(vanished_file_keeps_the_set)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "3\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    const void *kept = reloadable_cur(&r);
    unlink(path);
    const char *log;
    CHECK_EQ(reload_logged(&r, 0, &log), -1);
    CHECK(reloadable_cur(&r) == kept);
    CHECK(strstr(log, "test rules not reloaded, keeping the 3 in force: "));
    CHECK(strstr(log, "cannot read the test file: No such file or directory"));
    /* still gone: not reported on every check */
    CHECK_EQ(reload_logged(&r, 0, &log), 0);
    CHECK_EQ(count_of(log, "not reloaded"), 0);
    /* back */
    tt_put_at(path, "4\n", 1001);
    CHECK_EQ(reload_logged(&r, 0, &log), 1);
    CHECK_EQ(cur_n(&r), 4);
    reloadable_fini(&r);
    unlink(path);
}

TEST(no_file_never_reloads)
{
    struct reloadable r;
    struct tset *s = xmalloc(sizeof *s);
    s->n = 2;
    s->check = ~(size_t)2;
    reloadable_init(&r, &tkind, NULL, NULL, s, NULL);
    int before = loads;
    CHECK_EQ(reloadable_reload(&r, 1), 0);
    CHECK_EQ(loads, before);
    CHECK(reloadable_cur(&r) == s);
    reloadable_fini(&r);
    CHECK_EQ(reloadable_reload(NULL, 1), 0);
}

TEST(reader_refuses_what_it_cannot_take)
{
    struct err e = {0};
    struct stat st;
    size_t n;
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    /* at the cap: read */
    tt_put_at(path, "0123456789", 1000);
    char *t = reloadable_read(path, 10, "the test file", &st, &n, &e);
    CHECK(t);
    CHECK_EQ(n, 10);
    CHECK_STR(t, "0123456789");
    CHECK_EQ(st.st_size, 10);
    free(t);
    /* one byte over */
    CHECK(!reloadable_read(path, 9, "the test file", &st, &n, &e));
    char want[256];
    snprintf(want, sizeof want, "%s: the test file is over 9 bytes", path);
    CHECK_STR(e.msg, want);
    unlink(path);
    /* missing */
    CHECK(!reloadable_read(path, 9, "the test file", &st, &n, &e));
    snprintf(want, sizeof want, "%s: cannot read the test file: No such file or directory", path);
    CHECK_STR(e.msg, want);
    /* a FIFO would block a reader forever: refused without opening it for long */
    CHECK_EQ(mkfifo(path, 0600), 0);
    CHECK(!reloadable_read(path, 9, "the test file", &st, &n, &e));
    snprintf(want, sizeof want, "%s: the test file is not a regular file", path);
    CHECK_STR(e.msg, want);
    unlink(path);
    /* a folder */
    CHECK(!reloadable_read("/tmp", 9, "the test file", &st, &n, &e));
    CHECK(strstr(e.msg, "/tmp: cannot read the test file: Is a directory"));
}

/* ---- readers racing reloads ------------------------------------------------- */

static atomic_int stop;
static atomic_long reads;

static void *reader(void *arg)
{
    struct reloadable *r = arg;
    long bad = 0, k = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        const struct tset *s = reloadable_cur(r);
        if (s->check != ~s->n)
            bad++;
        k++;
    }
    atomic_fetch_add(&reads, k);
    return (void *)(intptr_t)bad;
}

TEST(readers_race_reloads)
{
    char path[] = "/tmp/reloadable-XXXXXX";
    close(mkstemp(path));
    tt_put_at(path, "0\n", 1000);
    struct reloadable r;
    CHECK(opened(&r, path));
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, reader, &r);
    int swapped = 0;
    /* stderr stays where it was: a ThreadSanitizer report must be seen */
    log_set_level(LOG_WARN);
    for (int i = 1; i <= 300; i++) {
        char text[32];
        snprintf(text, sizeof text, "%d\n", i);
        tt_put_at(path, text, 1000 + i);
        swapped += reloadable_reload(&r, 0) == 1;
    }
    log_set_level(LOG_INFO);
    atomic_store(&stop, 1);
    long bad = 0;
    for (int i = 0; i < 3; i++) {
        void *b;
        pthread_join(th[i], &b);
        bad += (long)(intptr_t)b;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(swapped, 300);
    CHECK_EQ(cur_n(&r), 300);
    CHECK(atomic_load(&reads) > 0);
    reloadable_fini(&r);
    unlink(path);
}

int main(void)
{
    int fd = mkstemp(cap_path);
    if (fd < 0)
        return 2;
    close(fd);
    RUN(good_version_swaps_and_logs);
    RUN(unchanged_file_is_not_read_again);
    RUN(edit_with_its_old_mtime_put_back_is_read);
    RUN(bad_version_keeps_the_set_and_is_reported_once);
    RUN(vanished_file_keeps_the_set);
    RUN(no_file_never_reloads);
    RUN(reader_refuses_what_it_cannot_take);
    RUN(readers_race_reloads);
    unlink(cap_path);
    DONE();
}
