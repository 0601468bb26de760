/*
 * test_skills.c - discovery, snapshot reuse, broken skills, rescans, and the
 * reclamation scheme under concurrent readers and swaps.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sys/inotify.h>
#include <sys/syscall.h>
#include "frontmatter.h"
#include "harness.h"
#include "quiet.h"
#include "tmptree.h"
#include "search.h"
#include "skills.h"
#include "skills_int.h"
#include "util.h"

static char root[256];

/* This program's inotify_init1 stands in for libc's (the server's objects
 * are linked into it): it fails with fail_inotify while that is set. */
static int fail_inotify;
int inotify_init1(int flags)
{
    if (fail_inotify) {
        errno = fail_inotify;
        return -1;
    }
    return (int)syscall(SYS_inotify_init1, flags);
}

static void writef(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void writef(const char *rel, const char *fmt, ...)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void skill(const char *rel, const char *name, const char *desc)
{
    char p[256];
    snprintf(p, sizeof p, "%s/SKILL.md", rel);
    writef(p, "---\nname: %s\ndescription: %s\ntags: [t1, t2]\n---\n# %s\n\n## Usage\nuse it\n",
           name, desc, name);
}

static void fresh_root(void)
{
    if (root[0])
        tt_rm_rf(root);
    snprintf(root, sizeof root, "/tmp/skills-test-XXXXXX");
    if (!mkdtemp(root))
        abort();
}

/* mtime granularity can hide an edit made in the same tick: bump it. */
static void touch_later(const char *rel)
{
    char path[512];
    struct timespec ts[2];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec += 2;
    ts[1] = ts[0];
    utimensat(AT_FDCWD, path, ts, 0);
}

static struct skills *open_root(void)
{
    const char *roots[] = {root};
    return skills_new(roots, 1, NULL, NULL, NULL, NULL);
}

TEST(discovers_top_level_and_team_skills)
{
    fresh_root();
    skill("alpha", "alpha", "First skill");
    skill("acme/billing", "billing", "Bills");
    skill("acme/reports", "reports", "Acme reports");
    skill("globex/reports", "reports", "Globex reports");
    writef("notes.txt", "not a skill\n");
    writef(".hidden/SKILL.md", "---\nname: hidden\ndescription: no\n---\n");
    struct skills *S = open_root();
    CHECK(S != NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 4);
    CHECK_STR(s->v[0]->qname, "acme/billing");
    CHECK_STR(s->v[3]->qname, "globex/reports");
    int amb;
    struct skill *k = skills_find(s, "billing", 7, &amb);
    CHECK(k && !strcmp(k->qname, "acme/billing"));
    CHECK(!skills_find(s, "reports", 7, &amb));
    CHECK_EQ(amb, 1);
    k = skills_find(s, "globex/reports", 14, &amb);
    CHECK(k && !strcmp(k->team, "globex"));
    CHECK(!skills_find(s, "nope", 4, &amb));
    CHECK_EQ(amb, 0);
    CHECK_EQ(k->ntags, 2);
    skills_release(s);
    skills_free(S);
}

TEST(lists_files_but_not_vcs_or_escaping_links)
{
    fresh_root();
    skill("alpha", "alpha", "First");
    writef("alpha/references/a.md", "ref\n");
    writef("alpha/scripts/run.py", "print(1)\n");
    writef("alpha/.git/config", "x\n");
    writef("alpha/scripts/__pycache__/run.pyc", "x\n");
    writef("outside.txt", "secret\n");
    char link[512], target[512];
    snprintf(link, sizeof link, "%s/alpha/references/leak.txt", root);
    snprintf(target, sizeof target, "%s/outside.txt", root);
    CHECK_EQ(symlink(target, link), 0);
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    int amb;
    struct skill *k = skills_find(s, "alpha", 5, &amb);
    CHECK(k != NULL);
    CHECK_EQ(k->nfiles, 2);
    CHECK_STR(k->files[0].path, "references/a.md");
    CHECK_STR(k->files[1].path, "scripts/run.py");
    /* the escaping link is reported */
    char *e = json_dumps(s->errors, 0);
    int reported = strstr(e, "symlink") != NULL;
    free(e);
    CHECK(reported);
    skills_release(s);
    skills_free(S);
}

/* A skill with more files, folders and name bytes than a walk keeps
 * inline: every file listed once, sorted, with its size; every folder's
 * path and key kept, so adding or removing a file deep down is a change. */
TEST(wide_and_deep_skill_lists_every_file_and_folder)
{
    fresh_root();
    skill("wide", "wide", "Wide");
    char rel[400], pad[120];
    memset(pad, 'x', 100);
    pad[100] = '\0';
    for (int i = 11; i >= 0; i--) {
        snprintf(rel, sizeof rel, "wide/scripts/f%02d-%s.sh", i, pad);
        writef(rel, "%.*s", i + 1, "0123456789ab");
    }
    writef("wide/references/deep/a/b/c/d/n.md", "note\n");
    /* sorted by whole path, '-' before '/', not folder by folder */
    writef("wide/docs/y.md", "y\n");
    writef("wide/docs-x.md", "x\n");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    int amb;
    struct skill *k = skills_find(s, "wide", 4, &amb);
    CHECK(k != NULL);
    CHECK_EQ(k->nfiles, 15);
    CHECK_STR(k->files[0].path, "docs-x.md");
    CHECK_STR(k->files[1].path, "docs/y.md");
    CHECK_STR(k->files[2].path, "references/deep/a/b/c/d/n.md");
    CHECK_EQ(k->files[2].size, 5);
    for (int i = 0; i < 12; i++) {
        snprintf(rel, sizeof rel, "scripts/f%02d-%s.sh", i, pad);
        CHECK_STR(k->files[i + 3].path, rel);
        CHECK_EQ(k->files[i + 3].size, i + 1);
    }
    /* the skill folder, docs, scripts, references and its five folders below */
    CHECK_EQ(k->ndirs, 9);
    char kdir[SKILL_DIR_MAX], real[PATH_MAX], dpath[SKILL_DIR_MAX];
    const char *dir = skills_dir(k, kdir);
    /* the folder is composed from its root, and is the folder's real path */
    CHECK(k->dir_abs == NULL && k->dir_base != 0);
    CHECK(realpath(root, real) != NULL);
    CHECK(strlen(real) < sizeof real - 8);
    strcat(real, "/wide");
    CHECK_STR(dir, real);
    CHECK_STR(skills_dir_paths(k)[0], "");
    /* not a byte of the folders' block: the end of the entry's own name */
    CHECK(skills_dir_paths(k)[0] == k->qname + strlen(k->qname));
    CHECK_STR(skills_dir_path(k, 0, dpath), real);
    for (size_t i = 0; i < k->ndirs; i++) {
        struct stat st;
        struct fkey now;
        CHECK(skills_dir_paths(k)[i][0] != '/');
        skills_dir_path(k, i, dpath);
        CHECK(strncmp(dpath, dir, strlen(dir)) == 0);
        CHECK_EQ(stat(dpath, &st), 0);
        key_of(&st, &now);
        CHECK(key_eq(&now, &skills_dir_keys(k)[i]));
    }
    /* the folders below are kept relative to the skill's */
    char want[1024], md[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/references/deep/a/b/c/d", dir);
    int found = 0;
    for (size_t i = 1; i < k->ndirs; i++) {
        found += !strcmp(skills_dir_path(k, i, dpath), want);
        found += !strcmp(skills_dir_paths(k)[i], "references/deep/a/b/c/d") * 10;
    }
    CHECK_EQ(found, 11);
    /* SKILL.md's path is derived on use, and is the file the key was taken of */
    snprintf(want, sizeof want, "%s/SKILL.md", dir);
    CHECK_STR(skills_md_path(k, md, sizeof md), want);
    {
        struct stat st;
        struct fkey now;
        CHECK_EQ(stat(md, &st), 0);
        key_of(&st, &now);
        CHECK(key_eq(&now, &k->md_key));
    }
    /* a served entry's SKILL.md and folders are watched through its keys:
     * the list names none of them, the stat pass counts all of them */
    size_t mine = 0;
    for (size_t i = 0; i < s->n; i++) {
        CHECK(snap_keyed(s, i));
        mine += 1 + s->v[i]->ndirs;
    }
    for (size_t i = 0; i < snap_of(s)->nw; i++) {
        const char *wp = snap_of(s)->w[i].path;
        for (size_t j = 0; j < s->n; j++) {
            CHECK(strcmp(wp, skills_md_path(s->v[j], md, sizeof md)) != 0);
            for (size_t d = 0; d < s->v[j]->ndirs; d++)
                CHECK(strcmp(wp, skills_dir_path(s->v[j], d, dpath)) != 0);
        }
    }
    CHECK_EQ(snap_watched(s), snap_of(s)->nw + mine);
    skills_release(s);

    struct skills_report r;
    skills_rescan(S, 1, &r);
    CHECK_EQ(json_array_size(r.changed), 0);
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    CHECK(skills_find(s, "wide", 4, &amb) == k);
    skills_release(s);

    writef("wide/references/deep/a/b/c/d/m.md", "more\n");
    skills_rescan(S, 1, &r);
    CHECK_EQ(json_array_size(r.changed), 1);
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    k = skills_find(s, "wide", 4, &amb);
    CHECK(k != NULL && k->nfiles == 16);
    CHECK_STR(k->files[2].path, "references/deep/a/b/c/d/m.md");
    skills_release(s);

    snprintf(rel, sizeof rel, "%s/wide/scripts/f05-%s.sh", root, pad);
    CHECK_EQ(unlink(rel), 0);
    skills_rescan(S, 1, &r);
    CHECK_EQ(json_array_size(r.changed), 1);
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    k = skills_find(s, "wide", 4, &amb);
    CHECK(k != NULL && k->nfiles == 15);
    snprintf(rel, sizeof rel, "scripts/f06-%s.sh", pad);
    CHECK_STR(k->files[9].path, rel);  /* after the two docs, m.md, n.md and f00-f04 */
    skills_release(s);
    skills_free(S);
}

/* Folders too big for one getdents64 read lose no entry, on ext4 and tmpfs
 * (/tmp and /dev/shm here): the root, a team folder, a skill folder and a
 * folder inside it, with names of every length up to 255. */
static void many_entries_tree(void)
{
    char rel[512], name[300];
    for (int i = 0; i < 300; i++) {     /* ~12 KB of records in the root */
        snprintf(rel, sizeof rel, "root-skill-%03d-%.*s", i, i % 23, "abcdefghijklmnopqrstuvw");
        skill(rel, "r", "Root skill");
    }
    for (int i = 0; i < 260; i++) {     /* and in a team folder */
        snprintf(rel, sizeof rel, "team/member-%03d-%.*s", i, i % 31, "abcdefghijklmnopqrstuvwxyz01234");
        skill(rel, "m", "Team member");
    }
    skill("big", "big", "Big");
    for (int i = 0; i < 61; i++) {      /* 280-byte records: 29 to a read */
        memset(name, 'a' + i % 26, 255);
        snprintf(name, 4, "%03d", i);
        name[3] = 'n';
        name[255] = '\0';
        snprintf(rel, sizeof rel, "big/%s", name);
        writef(rel, "x");
    }
    for (int i = 0; i < 700; i++) {     /* every shorter length */
        snprintf(rel, sizeof rel, "big/references/r%03d%.*s.md", i, i % 60,
                 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefgh");
        writef(rel, "y");
    }
}

static int many_entries_all_listed(void)
{
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    int amb, ok = 1;
    struct skill *k = skills_find(s, "big", 3, &amb);
    ok &= k != NULL && k->nfiles == 761;
    ok &= k != NULL && k->ndirs == 2;
    ok &= s->n == 300 + 260 + 1;
    size_t team = 0, top = 0;
    for (size_t i = 0; i < s->n; i++) {
        team += !strncmp(s->v[i]->qname, "team/member-", 12);
        top += !strncmp(s->v[i]->qname, "root-skill-", 11);
    }
    ok &= team == 260 && top == 300;
    if (!ok)
        fprintf(stderr, "  under %s: %zu skills, big has %u files and %u folders\n", root, s->n,
                k ? k->nfiles : 0u, k ? k->ndirs : 0);
    skills_release(s);
    skills_free(S);
    return ok;
}

TEST(folders_over_many_reads_lose_no_entry)
{
    const char *bases[] = {"/tmp/skills-many-XXXXXX", "/dev/shm/skills-many-XXXXXX"};
    for (size_t b = 0; b < 2; b++) {
        if (root[0])
            tt_rm_rf(root);
        snprintf(root, sizeof root, "%s", bases[b]);
        if (!mkdtemp(root)) {
            CHECK(b == 1);  /* /tmp must work; a machine may lack /dev/shm */
            root[0] = '\0';
            continue;
        }
        many_entries_tree();
        CHECK(many_entries_all_listed());
    }
    tt_rm_rf(root);
    root[0] = '\0';
}

/* A signal that comes while getdents64 runs ends that read early, on any
 * filesystem (the kernel stops filling at a pending signal once it has one
 * entry): a short read is not the end of a folder. SIGSTOP, a cgroup
 * freezer and a tracer do the same to a server whose signals are blocked.
 * The storm's thread blocks the signal, so the listing threads take it. */
static atomic_int storm_stop;
static atomic_long storm_taken;

static void storm_count(int sig)
{
    (void)sig;
    atomic_fetch_add(&storm_taken, 1);
}

static void *storm(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&storm_stop))
        kill(getpid(), SIGUSR1);
    return NULL;
}

TEST(a_signal_during_a_listing_loses_no_entry)
{
    fresh_root();
    many_entries_tree();
    struct sigaction sa = {.sa_handler = storm_count, .sa_flags = SA_RESTART}, was;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, &was), 0);
    atomic_store(&storm_stop, 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, storm, NULL), 0);
    int ok = 1, builds = 0;
    while (ok && builds < 40) {
        ok = many_entries_all_listed();
        builds++;
    }
    atomic_store(&storm_stop, 1);
    pthread_join(t, NULL);
    CHECK_EQ(sigaction(SIGUSR1, &was, NULL), 0);
    if (!ok)
        fprintf(stderr, "  build %d of 40 missed entries\n", builds);
    CHECK(ok);
    CHECK(atomic_load(&storm_taken) > 0);     /* the listings did run under signals */
}

TEST(broken_skill_reported_and_previous_version_kept)
{
    fresh_root();
    skill("alpha", "alpha", "Good version");
    skill("beta", "beta", "Beta");
    writef("broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 2);
    CHECK_EQ(json_array_size(s->errors), 1);
    skills_release(s);

    writef("alpha/SKILL.md", "---\nname: alpha\ndescription: \"half-writ\n");
    touch_later("alpha/SKILL.md");
    struct skills_report r;
    skills_rescan(S, 0, &r);
    s = skills_acquire(S);
    int amb;
    struct skill *k = skills_find(s, "alpha", 5, &amb);
    CHECK(k != NULL);
    CHECK_STR(k->description, "Good version");
    char *errs = json_dumps(r.errors, 0);
    CHECK(strstr(errs, "previous version") != NULL);
    free(errs);
    skills_report_cleanup(&r);
    /* The served previous version of alpha is not what is on disk: the list
     * watches alpha's current files (copies: the entry they were read into
     * is gone, which ASan would report), not the entry's keys. */
    CHECK(!snap_keyed(s, 0));
    CHECK(snap_keyed(s, 1));
    char want[2][600];
    int seen[2] = {0, 0};
    snprintf(want[0], sizeof want[0], "%s/alpha/SKILL.md", root);
    snprintf(want[1], sizeof want[1], "%s/broken/SKILL.md", root);
    for (size_t i = 0; i < snap_of(s)->nw; i++)
        for (int j = 0; j < 2; j++)
            seen[j] |= strstr(snap_of(s)->w[i].path, want[j] + strlen(root)) != NULL;
    CHECK(seen[0] && seen[1]);
    skills_release(s);

    /* an unchanged tick after that does not rebuild again */
    skills_rescan(S, 0, &r);
    CHECK_EQ(r.unchanged, 1);
    skills_report_cleanup(&r);
    skills_free(S);
}

TEST(rescan_reports_added_changed_removed_and_reuses_entries)
{
    fresh_root();
    skill("alpha", "alpha", "A");
    skill("beta", "beta", "B");
    skill("gamma", "gamma", "C");
    struct skills *S = open_root();
    struct snapshot *s0 = skills_acquire(S);
    struct skill *beta0 = s0->v[1];
    uint64_t g0 = s0->generation;

    struct skills_report r;
    skills_rescan(S, 0, &r);
    CHECK_EQ(r.unchanged, 1);
    CHECK_EQ(r.gen_after, g0);
    skills_report_cleanup(&r);

    skill("delta", "delta", "D");
    writef("alpha/SKILL.md", "---\nname: alpha\ndescription: A2\n---\nbody\n");
    touch_later("alpha/SKILL.md");
    char p[512];
    snprintf(p, sizeof p, "%s/gamma/SKILL.md", root);
    unlink(p);
    snprintf(p, sizeof p, "%s/gamma", root);
    rmdir(p);
    skills_rescan(S, 0, &r);
    CHECK_EQ(r.gen_after, g0 + 1);
    CHECK_EQ(json_array_size(r.added), 1);
    CHECK_STR(json_string_value(json_array_get(r.added, 0)), "delta");
    CHECK_EQ(json_array_size(r.removed), 1);
    CHECK_STR(json_string_value(json_array_get(r.removed, 0)), "gamma");
    CHECK_EQ(json_array_size(r.changed), 1);
    CHECK_STR(json_string_value(json_array_get(r.changed, 0)), "alpha");
    skills_report_cleanup(&r);

    struct snapshot *s1 = skills_acquire(S);
    int amb;
    /* the old snapshot is untouched while held; beta's entry is shared */
    CHECK_STR(s0->v[0]->description, "A");
    CHECK(skills_find(s1, "beta", 4, &amb) == beta0);
    CHECK_STR(skills_find(s1, "alpha", 5, &amb)->description, "A2");
    skills_release(s0);
    skills_release(s1);
    skills_free(S);
}

static void rename_over(const char *rel, const char *text)
{
    char tmp[512], path[512];
    /* beside it, under an ignored name: only its folder's key moves */
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(tmp, sizeof tmp, "%.*s.next", (int)(strrchr(path, '/') + 1 - path), path);
    FILE *f = fopen(tmp, "w");
    fputs(text, f);
    fclose(f);
    CHECK_EQ(rename(tmp, path), 0);
}

/*
 * The stat pass takes a served entry's keys from the entry, also when the
 * entry was reused from an earlier snapshot: a change to its folders or
 * SKILL.md that no write event names (a file removed deep down, a SKILL.md
 * renamed over) is still seen by the next tick.
 */
TEST(tick_sees_changes_under_reused_entries)
{
    fresh_root();
    skill("alpha", "alpha", "A");
    skill("beta", "beta", "B");
    writef("beta/references/deep/x.md", "x\n");
    writef("beta/references/deep/y.md", "y\n");
    struct skills *S = open_root();
    struct skills_report r;
    skills_rescan(S, 0, &r);        /* the first tick sets up the watches */
    CHECK_EQ(r.unchanged, 1);
    skills_report_cleanup(&r);
    struct snapshot *s = skills_acquire(S);
    int amb;
    struct skill *beta0 = skills_find(s, "beta", 4, &amb);
    skills_release(s);

    /* a rebuild for alpha: beta's entry is reused */
    rename_over("alpha/SKILL.md", "---\nname: alpha\ndescription: A2\n---\n");
    skills_rescan(S, 0, &r);
    CHECK_EQ(json_array_size(r.changed), 1);
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    CHECK(skills_find(s, "beta", 4, &amb) == beta0);
    CHECK_EQ(snap_of(s)->nw, 1);    /* the root alone */
    skills_release(s);
    skills_rescan(S, 0, &r);
    CHECK_EQ(r.unchanged, 1);
    skills_report_cleanup(&r);

    /* a file removed from the reused entry's deepest folder */
    char p[512];
    snprintf(p, sizeof p, "%s/beta/references/deep/x.md", root);
    CHECK_EQ(unlink(p), 0);
    skills_rescan(S, 0, &r);
    CHECK_EQ(r.unchanged, 0);
    CHECK_EQ(json_array_size(r.changed), 1);
    CHECK_STR(json_string_value(json_array_get(r.changed, 0)), "beta");
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    struct skill *beta1 = skills_find(s, "beta", 4, &amb);
    CHECK(beta1 != beta0 && beta1->nfiles == 1);
    skills_release(s);

    /* and its SKILL.md renamed over, after another reuse */
    rename_over("alpha/SKILL.md", "---\nname: alpha\ndescription: A3\n---\n");
    skills_rescan(S, 0, &r);
    skills_report_cleanup(&r);
    rename_over("beta/SKILL.md", "---\nname: beta\ndescription: B2\n---\n");
    skills_rescan(S, 0, &r);
    CHECK_EQ(json_array_size(r.changed), 1);
    skills_report_cleanup(&r);
    s = skills_acquire(S);
    CHECK_STR(skills_find(s, "beta", 4, &amb)->description, "B2");
    skills_release(s);
    skills_free(S);
}

static size_t hits_of(struct skills *S, const char *q, const char *want)
{
    struct snapshot *s = skills_acquire(S);
    struct search_hit h[8];
    size_t n = search_query(skills_search(s), q, h, 8);
    if (n && strcmp(s->v[h[0].doc]->qname, want) != 0)
        n = 0;
    skills_release(s);
    return n;
}

/* The first snapshot answers before its index is built: skills_new returns
 * while the index's thread is held, the entries are served, a query made
 * meanwhile waits and then ranks, and skills_free waits for the thread. */
static sem_t late_in, late_go;
static atomic_int late_answered;

static void late_hold(void)
{
    sem_post(&late_in);
    sem_wait(&late_go);
}

static void *late_query(void *arg)
{
    size_t n = hits_of(arg, "quokka", "beta");
    atomic_store(&late_answered, 1);
    return (void *)(uintptr_t)n;
}

/* The index's thread reached the hook (10 s at most: a build that never
 * calls it fails here rather than hangs). */
static int late_reached(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 10;
    return sem_timedwait(&late_in, &t) == 0;
}

static void *late_free(void *arg)
{
    skills_free(arg);
    atomic_store(&late_answered, 1);
    return NULL;
}

TEST(first_snapshot_served_before_its_index)
{
    fresh_root();
    skill("alpha", "alpha", "Feeds the wombat.");
    skill("beta", "beta", "Counts every quokka.");
    sem_init(&late_in, 0, 0);
    sem_init(&late_go, 0, 0);
    skills_index_late_hook = late_hold;
    struct skills *S = open_root();
    CHECK(S != NULL);
    int held = late_reached();
    CHECK(held);
    if (!held) {
        skills_index_late_hook = NULL;
        skills_free(S);
        return;
    }
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 2);
    int amb;
    CHECK(skills_find(s, "beta", 4, &amb) != NULL);
    CHECK(atomic_load(&s->search_ix) == NULL);
    skills_release(s);
    atomic_store(&late_answered, 0);
    pthread_t t;
    pthread_create(&t, NULL, late_query, S);
    usleep(50000);
    CHECK_EQ(atomic_load(&late_answered), 0);   /* waiting for the index */
    sem_post(&late_go);
    void *r;
    pthread_join(t, &r);
    CHECK_EQ((size_t)(uintptr_t)r, 1);
    skills_free(S);

    /* A stop while the index is being built waits for it, then frees. */
    S = open_root();
    CHECK(S != NULL);
    CHECK(late_reached());
    atomic_store(&late_answered, 0);
    pthread_create(&t, NULL, late_free, S);
    usleep(50000);
    CHECK_EQ(atomic_load(&late_answered), 0);
    sem_post(&late_go);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&late_answered), 1);
    skills_index_late_hook = NULL;
    sem_destroy(&late_in);
    sem_destroy(&late_go);
}

static void wait_bodies(struct skills *S)
{
    size_t done = 0, n = 1;
    for (int i = 0; i < 1000 && done != n; i++) {
        skills_bodies_indexed(S, &done, &n);
        if (done != n)
            usleep(10000);
    }
    CHECK_EQ(done, n);
}

/* Once an index holds a skill's body terms, later rebuilds take them from
 * the index they replace: an unchanged skill stays findable by its body and
 * references through any number of rescans, next to an edited one. */
TEST(body_terms_survive_rescans)
{
    fresh_root();
    writef("alpha/SKILL.md", "---\nname: alpha\ndescription: A\n---\n# Alpha\nwombat\n");
    writef("beta/SKILL.md", "---\nname: beta\ndescription: B\n---\n# Beta\nquokka quokka\n");
    writef("beta/references/notes.md", "# Notes\nnumbat\n");
    skill("gamma", "gamma", "C");
    struct skills *S = open_root();
    CHECK_EQ(hits_of(S, "quokka", "beta"), 0);
    skills_index_bodies(S, NULL);
    wait_bodies(S);
    CHECK_EQ(hits_of(S, "quokka", "beta"), 1);
    CHECK_EQ(hits_of(S, "numbat", "beta"), 1);

    writef("alpha/SKILL.md", "---\nname: alpha\ndescription: A\n---\n# Alpha\nplatypus\n");
    touch_later("alpha/SKILL.md");
    skill("delta", "delta", "D");
    struct skills_report r;
    skills_rescan(S, 0, &r);
    CHECK_EQ(json_array_size(r.changed), 1);
    skills_report_cleanup(&r);
    size_t done, n;
    skills_bodies_indexed(S, &done, &n);
    CHECK_EQ(n, 4);
    CHECK_EQ(done, 4);
    CHECK_EQ(hits_of(S, "platypus", "alpha"), 1);
    CHECK_EQ(hits_of(S, "wombat", "alpha"), 0);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(hits_of(S, "quokka", "beta"), 1);
        CHECK_EQ(hits_of(S, "numbat", "beta"), 1);
        skills_rescan(S, 1, NULL);
    }
    skills_bodies_indexed(S, &done, &n);
    CHECK_EQ(done, 4);
    skills_free(S);
}

/* An entry keeps no card terms once an index has merged them, and the
 * chunks that held a build's new ones are gone with the build; a rebuild
 * that reuses it still finds it by its name, tags and description, and an
 * edited skill by its new description only. */
TEST(card_terms_survive_rescans)
{
    fresh_root();
    writef("alpha/SKILL.md", "---\nname: alpha\ndescription: Feeds the wombat.\n"
                             "tags: [marsupial]\n---\nbody\n");
    skill("beta", "beta", "Counts every quokka.");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    skills_search(s);   /* the first index is built after the snapshot is served */
    for (size_t i = 0; i < s->n; i++)
        CHECK(s->v[i]->terms == NULL);
    CHECK(snap_of(s)->term_chunks == NULL);     /* unmapped with the index */
    skills_release(s);
    CHECK_EQ(hits_of(S, "quokka", "beta"), 1);

    writef("beta/SKILL.md", "---\nname: beta\ndescription: Counts every bilby.\n---\nbody\n");
    touch_later("beta/SKILL.md");
    skill("gamma", "gamma", "Tracks a numbat.");
    for (int i = 0; i < 3; i++) {
        skills_rescan(S, i > 0, NULL);
        CHECK_EQ(hits_of(S, "wombat", "alpha"), 1);
        CHECK_EQ(hits_of(S, "marsupial", "alpha"), 1);
        CHECK_EQ(hits_of(S, "alpha", "alpha"), 1);
        CHECK_EQ(hits_of(S, "bilby", "beta"), 1);
        CHECK_EQ(hits_of(S, "quokka", "beta"), 0);
        CHECK_EQ(hits_of(S, "numbat", "gamma"), 1);
    }
    s = skills_acquire(S);
    for (size_t i = 0; i < s->n; i++)
        CHECK(s->v[i]->terms == NULL);
    CHECK(snap_of(s)->term_chunks == NULL);
    skills_release(s);
    skills_free(S);
}

TEST(earlier_root_wins_and_shadowed_is_reported)
{
    fresh_root();
    skill("one/alpha", "alpha", "from one");
    skill("two/alpha", "alpha", "from two");
    char r1[300], r2[300];
    snprintf(r1, sizeof r1, "%s/one", root);
    snprintf(r2, sizeof r2, "%s/two", root);
    const char *roots[] = {r1, r2};
    struct skills *S = skills_new(roots, 2, NULL, NULL, NULL, NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 1);
    CHECK_STR(s->v[0]->description, "from one");
    char *e = json_dumps(s->errors, 0);
    CHECK(strstr(e, "shadowed") != NULL);
    free(e);
    skills_release(s);
    skills_free(S);
}

/* Every folder of k, as the entry gives it back, is the real path of the
 * folder under its root it was found at (qname), and of its folders. */
static int dirs_are_real(const struct skill *k, const char *under)
{
    char kdir[SKILL_DIR_MAX], path[PATH_MAX], real[PATH_MAX], d[SKILL_DIR_MAX];
    snprintf(path, sizeof path, "%s/%s", under, k->qname);
    if (!realpath(path, real) || strcmp(skills_dir(k, kdir), real)) {
        printf("# %s: %s != %s\n", k->qname, skills_dir(k, kdir), real);
        return 0;
    }
    for (size_t i = 0; i < k->ndirs; i++) {
        const char *rel = skills_dir_paths(k)[i];
        snprintf(path, sizeof path, "%s%s%s", real, *rel ? "/" : "", rel);
        if (strcmp(skills_dir_path(k, i, d), path))
            return 0;
    }
    return 1;
}

/* Folders are composed from the root's real path and the qualified name
 * when that is where they are, and kept whole when a link leads elsewhere:
 * either way the path given back is the real one. Two roots, one reached
 * through a link, a team reached through a link, linked skill folders. */
TEST(folder_paths_composed_from_the_root_equal_the_real_ones)
{
    fresh_root();
    skill("one/plain", "plain", "Plain");
    skill("one/acme/billing", "billing", "Team skill");
    writef("one/acme/billing/scripts/run.sh", "echo\n");
    writef("one/acme/billing/references/deep/x.md", "x\n");
    skill("elsewhere/far", "far", "Outside the root");
    writef("elsewhere/far/scripts/a.sh", "a\n");
    skill("one/inner", "inner", "Linked to from inside the root");
    skill("elsewhere/teamdir/member", "member", "In a linked team folder");
    skill("two/second", "second", "Second root");
    writef("two/second/docs/y.md", "y\n");
    char link[600], target[600], r1[300], r2[300];
    snprintf(link, sizeof link, "%s/one/far", root);
    snprintf(target, sizeof target, "%s/elsewhere/far", root);
    CHECK_EQ(symlink(target, link), 0);
    snprintf(link, sizeof link, "%s/one/alias", root);
    CHECK_EQ(symlink("inner", link), 0);
    snprintf(link, sizeof link, "%s/one/linkteam", root);
    snprintf(target, sizeof target, "%s/elsewhere/teamdir", root);
    CHECK_EQ(symlink(target, link), 0);
    /* the second root is named through a link to it */
    snprintf(link, sizeof link, "%s/two-link", root);
    snprintf(target, sizeof target, "%s/two", root);
    CHECK_EQ(symlink(target, link), 0);
    snprintf(r1, sizeof r1, "%s/one", root);
    snprintf(r2, sizeof r2, "%s/two-link", root);
    const char *roots[] = {r1, r2};
    struct skills *S = skills_new(roots, 2, NULL, NULL, NULL, NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 7);
    static const struct {
        const char *qname;
        int composed;
        size_t ndirs;
    } want[] = {
        {"acme/billing", 1, 4}, {"alias", 0, 1},  {"far", 0, 2},   {"inner", 1, 1},
        {"linkteam/member", 0, 1}, {"plain", 1, 1}, {"second", 1, 2},
    };
    for (size_t i = 0; i < s->n; i++) {
        struct skill *k = s->v[i];
        CHECK_STR(k->qname, want[i].qname);
        CHECK_EQ(k->ndirs, want[i].ndirs);
        CHECK(dirs_are_real(k, k->root ? r2 : r1));
        if (want[i].composed)
            CHECK(k->dir_abs == NULL && k->dir_base != 0);
        else
            CHECK(k->dir_abs != NULL && k->dir_base == 0);
    }
    /* each root its own base; the same root in another index, the same one */
    CHECK(s->v[0]->dir_base != s->v[6]->dir_base);
    CHECK_EQ(s->v[0]->dir_base, s->v[5]->dir_base);
    unsigned char b0 = s->v[0]->dir_base, b1 = s->v[6]->dir_base;
    skills_release(s);
    skills_free(S);
    const char *swapped[] = {r2, r1};
    S = skills_new(swapped, 2, NULL, NULL, NULL, NULL);
    s = skills_acquire(S);
    CHECK_EQ(s->n, 7);
    for (size_t i = 0; i < s->n; i++) {
        CHECK(dirs_are_real(s->v[i], s->v[i]->root ? r1 : r2));
        if (s->v[i]->dir_base)
            CHECK_EQ(s->v[i]->dir_base, s->v[i]->root ? b0 : b1);
    }
    skills_release(s);
    skills_free(S);
}

/* A library big enough to be prepared on several threads: the snapshot and
 * the reports come out the same as a one-by-one build would give (scan
 * order, shadowing by root, broken entries), build after build. */
TEST(large_library_builds_deterministically_on_threads)
{
    enum { N = 700 };
    fresh_root();
    for (int i = 0; i < N; i++) {
        char rel[64], name[32];
        snprintf(name, sizeof name, "s%04d", i);
        if (i % 10 == 3)
            snprintf(rel, sizeof rel, "one/team%d/%s", i % 4, name);
        else
            snprintf(rel, sizeof rel, "one/%s", name);
        if (i % 50 == 7) {
            char p[96];
            snprintf(p, sizeof p, "%s/SKILL.md", rel);
            writef(p, "---\nname: %s\ndescription: [unclosed\n---\nbody\n", name);
        } else {
            skill(rel, name, i % 2 ? "odd csv profile" : "even pdf extract");
        }
        if (i % 7 == 0) {
            char p[96];
            snprintf(p, sizeof p, "%s/scripts/run.sh", rel);
            writef(p, "echo %d\n", i);
        }
    }
    /* shadowed by root "one" */
    skill("two/s0001", "s0001", "shadowed copy");
    skill("two/s0002", "s0002", "shadowed copy");
    skill("two/extra", "extra", "only in two");
    char r1[300], r2[300];
    snprintf(r1, sizeof r1, "%s/one", root);
    snprintf(r2, sizeof r2, "%s/two", root);
    const char *roots[] = {r1, r2};

    char *errs[2], *names[2];
    for (int rep = 0; rep < 2; rep++) {
        struct skills *S = skills_new(roots, 2, NULL, NULL, NULL, NULL);
        struct snapshot *s = skills_acquire(S);
        size_t broken = (N - 7 + 49) / 50;
        CHECK_EQ(s->n, N - broken + 1);
        errs[rep] = json_dumps(s->errors, JSON_COMPACT);
        size_t len = 0;
        for (size_t i = 0; i < s->n; i++)
            len += strlen(s->v[i]->qname) + strlen(s->v[i]->description) + 2;
        names[rep] = calloc(1, len + 1);
        for (size_t i = 0; i < s->n; i++) {
            strcat(names[rep], s->v[i]->qname);
            strcat(names[rep], "=");
            strcat(names[rep], s->v[i]->description);
            strcat(names[rep], ";");
        }
        int amb;
        struct skill *k = skills_find(s, "s0001", 5, &amb);
        CHECK(k != NULL);
        CHECK_STR(k->description, "odd csv profile");
        k = skills_find(s, "team1/s0013", 11, &amb);
        CHECK(k != NULL);
        k = skills_find(s, "s0007", 5, &amb);
        CHECK(k == NULL);
        k = skills_find(s, "s0014", 5, &amb);
        CHECK(k != NULL && k->nfiles == 1);
        CHECK_STR(k->files[0].path, "scripts/run.sh");
        /* one report per broken skill and per shadowed copy, in scan order */
        size_t nerr = json_array_size(s->errors);
        CHECK_EQ(nerr, broken + 2);
        const char *first = json_string_value(json_object_get(json_array_get(s->errors, 0), "skill"));
        CHECK_STR(first, "s0007");
        const char *last =
            json_string_value(json_object_get(json_array_get(s->errors, nerr - 1), "message"));
        CHECK(strstr(last, "shadowed") != NULL);
        skills_release(s);

        /* a rescan after editing a few entries on the threaded path */
        writef("one/s0100/SKILL.md", "---\nname: s0100\ndescription: edited %d\n---\nx\n", rep);
        touch_later("one/s0100/SKILL.md");
        struct skills_report r;
        skills_rescan(S, 0, &r);
        CHECK_EQ(json_array_size(r.changed), 1);
        skills_report_cleanup(&r);
        s = skills_acquire(S);
        k = skills_find(s, "s0100", 5, &amb);
        CHECK(k != NULL);
        char want[32];
        snprintf(want, sizeof want, "edited %d", rep);
        CHECK_STR(k->description, want);
        skills_release(s);
        skills_free(S);
        skill("one/s0100", "s0100", "even pdf extract");
    }
    CHECK_STR(errs[0], errs[1]);
    CHECK_STR(names[0], names[1]);
    for (int rep = 0; rep < 2; rep++) {
        free(errs[rep]);
        free(names[rep]);
    }
}

/* The frontmatter as the parser gave it, from the entry's compact form:
 * every type, nesting and key order, the description kept once outside the
 * text. */
static const char *const rich_fm[] = {
    "---\n"
    "title: \"Rich \\\"quoted\\\" title\"\n"
    "name: rich\n"
    "description: >-\n"
    "  A long, folded description \xc3\xa9t\xc3\xa9 with \"quotes\"\n"
    "  and a backslash \\ in it.\n"
    "version: 1.0\n"
    "tags: \"alpha, beta gamma\"\n"
    "license: MIT\n"
    "metadata: {count: 3, ratio: 0.25, on: true, none: null, list: [1, two, {x: y}]}\n"
    "execution:\n"
    "  network: true\n"
    "  default: {timeout: 30, stall_timeout: 20}\n"
    "  scripts/run.sh: {timeout: 5, description: Runs}\n"
    "---\n# Rich\n",
    "---\nname: esc\ndescription: \"tab\\there \\u00e9 \\\\ end\"\nversion: \"2.1.0\"\n"
    "tags: [x, 7]\n---\nbody\n",
    /* every field the entry keeps apart, and empty ones in the file */
    "---\ntitle: ''\nname: tagged\ndescription: D\nversion: '3.0'\n"
    "tags: [one-tag, two-tag, three-tag]\nlicense: MIT\nkeywords: []\n---\nbody\n",
    "---\nname: ''\ndescription: E\ntags: []\nversion: ''\n---\nbody\n",
};

TEST(frontmatter_kept_compact_and_given_back_whole)
{
    fresh_root();
    writef("rich/SKILL.md", "%s", rich_fm[0]);
    writef("esc/SKILL.md", "%s", rich_fm[1]);
    writef("tagged/SKILL.md", "%s", rich_fm[2]);
    writef("empty/SKILL.md", "%s", rich_fm[3]);
    skill("plain", "plain", "Plain skill");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 5);
    static const char *const names[] = {"rich", "esc", "tagged", "empty"};
    for (size_t i = 0; i < 4; i++) {
        const char *name = names[i];
        int amb;
        struct skill *k = skills_find(s, name, strlen(name), &amb);
        CHECK(k != NULL);
        struct fm f = {0};
        struct err e;
        CHECK_EQ(fm_parse(rich_fm[i], strlen(rich_fm[i]), 1, &f, &e), 0);
        json_t *got = skills_frontmatter(k);
        char *want_s = json_dumps(f.fields, JSON_COMPACT);
        char *got_s = json_dumps(got, JSON_COMPACT);
        CHECK_STR(got_s, want_s);   /* values and key order */
        CHECK(json_equal(got, f.fields));
        free(want_s);
        free(got_s);
        json_decref(got);
        /* what the serving paths read without parsing */
        CHECK_STR(k->fm_name, i == 3 ? "" : name);
        CHECK_STR(k->description,
                  json_string_value(json_object_get(f.fields, "description")));
        /* nothing parsed at build time: the subtree comes from the text on
         * first use, then the same tree every time */
        CHECK(atomic_load(&k->execution) == NULL);
        json_t *ex = skills_execution(k);
        CHECK(json_equal(ex, json_object_get(f.fields, "execution")) ||
              (!ex && !json_object_get(f.fields, "execution")));
        CHECK(skills_execution(k) == ex);
        if (i == 0) {
            CHECK_STR(k->title, "Rich \"quoted\" title");
            CHECK(k->version == NULL); /* a real, not a string */
            CHECK_EQ(k->ntags, 3);
            CHECK_STR(k->tags[0], "alpha");
            CHECK_STR(k->tags[2], "gamma");
            CHECK(ex != NULL);
            CHECK(json_is_true(json_object_get(ex, "network")));
            CHECK_EQ(json_integer_value(json_object_get(json_object_get(ex, "scripts/run.sh"),
                                                        "timeout")), 5);
            /* the description is not stored twice */
            CHECK(strstr(k->fm_rest, "folded") == NULL);
        } else if (i == 2) {
            CHECK_STR(k->title, "");
            CHECK_STR(k->version, "3.0");
            CHECK_EQ(k->ntags, 3);
            CHECK_STR(k->tags[2], "three-tag");
            /* kept once: as fields, not again in the text */
            CHECK(strstr(k->fm_rest, "one-tag") == NULL);
            CHECK(strstr(k->fm_rest, "3.0") == NULL);
            CHECK(strstr(k->fm_rest, "tagged") == NULL);
            CHECK(strstr(k->fm_rest, "MIT") != NULL);
        } else if (i == 3) {
            CHECK_STR(k->version, "");
            CHECK_EQ(k->ntags, 0);
        } else {
            CHECK(k->title == NULL);
            CHECK_STR(k->version, "2.1.0");
            CHECK_EQ(k->ntags, 2);
            CHECK_STR(k->tags[1], "7");
            CHECK_STR(k->description, "tab\there \xc3\xa9 \\ end");
            CHECK(ex == NULL);
        }
        CHECK(i == 3 || k->warnings == NULL); /* nothing reported (but the empty name) */
        fm_cleanup(&f);
    }
    int amb;
    struct skill *k = skills_find(s, "plain", 5, &amb);
    json_t *got = skills_frontmatter(k);
    CHECK_STR(json_string_value(json_object_get(got, "description")), "Plain skill");
    CHECK_EQ(json_object_size(got), 3);
    json_decref(got);
    skills_release(s);
    skills_free(S);
}

static void *exec_reader(void *arg)
{
    return skills_execution(arg);
}

/* Threads asking for the same entry's 'execution' at once all get the one
 * tree that was kept (the others' parses are dropped). */
/* Members a frontmatter text may hold: the five placeholders first, then
 * others, one with what looks like placeholders and separators in a string. */
static const char *const fm_members[] = {
    "\"description\":\"\"", "\"name\":\"\"", "\"version\":\"\"", "\"title\":\"\"", "\"tags\":[]",
    "\"license\":\"M\\\",\\\"IT\"",
    "\"x\":{\"a\":[1,\"],\\\"name\\\":\\\"\\\",}\"],\"tags\":[]}",
};
#define FM_NMEMBERS (sizeof fm_members / sizeof *fm_members)

/* Every order of the members in set (bits of fm_members), one at a time in
 * perm[0..depth): the text they make goes through strip and join. */
static int fm_orders(unsigned set, unsigned used, size_t *perm, size_t depth, size_t *checked)
{
    if (used == set) {
        char text[1024] = "{", *o = text + 1;
        int only_ph = 1;
        for (size_t i = 0; i < depth; i++)
            o += sprintf(o, "%s%s", i ? "," : "", fm_members[perm[i]]);
        strcpy(o, "}");
        for (size_t i = 0; i < depth; i++)
            only_ph &= perm[i] < SKILL_FM_SLOTS;
        unsigned slots;
        char *rest = scan_fm_strip(text, &slots);
        char *back = scan_fm_join(rest, slots);
        int ok = back && !strcmp(back, text);
        /* every placeholder leaves the text, in its slot, and nothing else does */
        char want[1024] = "{";
        o = want + 1;
        for (size_t i = 0; i < depth; i++) {
            if (perm[i] < SKILL_FM_SLOTS)
                ok = ok && ((slots >> (3 * perm[i])) & 7u) == i + 1;
            else
                o += sprintf(o, "%s%s", o > want + 1 ? "," : "", fm_members[perm[i]]);
        }
        strcpy(o, "}");
        ok = ok && (only_ph || (rest && !strcmp(rest, want)));
        ok = ok && (only_ph ? rest == NULL && (depth == 0 || slots) : rest != NULL);
        if (!ok)
            printf("# %s -> %s (%#x) -> %s\n", text, rest ? rest : "(null)", slots,
                   back ? back : "(null)");
        free(rest);
        free(back);
        ++*checked;
        return ok;
    }
    for (size_t m = 0; m < FM_NMEMBERS; m++)
        if ((set >> m & 1u) && !(used >> m & 1u)) {
            perm[depth] = m;
            if (!fm_orders(set, used | 1u << m, perm, depth + 1, checked))
                return 0;
        }
    return 1;
}

TEST(frontmatter_placeholders_left_out_and_put_back_in_every_order)
{
    size_t perm[FM_NMEMBERS], checked = 0;
    for (unsigned set = 1; set < 1u << FM_NMEMBERS; set++)
        CHECK(fm_orders(set, 0, perm, 0, &checked));
    CHECK_EQ(checked, 13699);   /* every non-empty subset, in every order */

    /* past the positions a slot holds, a placeholder stays in the text */
    const char *far = "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"name\":\"\","
                      "\"tags\":[]}";
    unsigned slots;
    char *rest = scan_fm_strip(far, &slots);
    CHECK(rest != NULL);
    CHECK(strstr(rest, "\"name\":\"\"") != NULL);
    CHECK(strstr(rest, "\"tags\":[]") != NULL);
    CHECK_EQ(slots, 0);
    free(rest);
    const char *near = "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"name\":\"\","
                       "\"tags\":[]}";
    rest = scan_fm_strip(near, &slots);
    CHECK_STR(rest, "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"tags\":[]}");
    char *back = scan_fm_join(rest, slots);
    CHECK_STR(back, near);
    free(rest);
    free(back);

    /* what is not an object as jansson dumps one is kept as it is */
    static const char *const odd[] = {"", "[]", "{", "{\"name\":\"\"", "{\"name\":\"\",}",
                                      "{\"name\":\"\" }", "{}", "{\"name\":\"\"}x"};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        rest = scan_fm_strip(odd[i], &slots);
        back = scan_fm_join(rest, slots);
        CHECK_STR(back, odd[i]);
        CHECK(slots == 0 || strcmp(odd[i], "{}") != 0);
        free(rest);
        free(back);
    }
    CHECK(scan_fm_strip(NULL, &slots) == NULL && slots == 0);
    CHECK(scan_fm_join(NULL, 0) == NULL);
}

/* Through files: every order of six keys, each kept field in each shape
 * the entry may or may not keep apart; skills_frontmatter gives back what
 * the parser gave, and an entry whose text is only placeholders keeps
 * none. */
TEST(frontmatter_given_back_whole_in_every_key_order)
{
    static const char *const key[6] = {"name", "description", "tags", "version", "title",
                                       "license"};
    static const char *const val[6][3] = {
        {"%s", "''", "7"},
        {"Desc %s", "\"q \\\" , } ] %s\"", "[a, b]"},
        {"[x, y]", "[]", "\"p, q\""},
        {"\"1.0\"", "''", "2.5"},
        {"T", "''", "{a: 1}"},
        {"MIT", "'\"name\":\"\",\"tags\":[]'", "[]"},
    };
    fresh_root();
    int idx[6] = {0, 1, 2, 3, 4, 5}, made = 0;
    /* the 720 orders, by the Heap's-algorithm counters */
    int c[6] = {0};
    for (int i = 0;;) {
        for (int shape = 0; shape < 3; shape++) {
            char name[32], path[64], text[1024];
            snprintf(name, sizeof name, "s%03d-%d", made / 3, shape);
            char *o = text + sprintf(text, "---\n");
            for (int k = 0; k < 6; k++) {
                /* license is left out of every other order: only placeholders then */
                if (idx[k] == 5 && (made / 3) % 2)
                    continue;
                /* the description must be a non-empty string */
                int sh = idx[k] == 1 && shape == 2 ? 0 : shape;
                o += sprintf(o, "%s: ", key[idx[k]]);
                const char *v = val[idx[k]][sh], *at = strstr(v, "%s");
                o += at ? sprintf(o, "%.*s%s%s", (int)(at - v), v, name, at + 2)
                        : sprintf(o, "%s", v);
                o += sprintf(o, "\n");
            }
            sprintf(o, "---\nbody\n");
            snprintf(path, sizeof path, "%s/SKILL.md", name);
            writef(path, "%s", text);
            made++;
        }
        while (i < 6 && c[i] >= i) {
            c[i] = 0;
            i++;
        }
        if (i == 6)
            break;
        int j = i % 2 ? c[i] : 0, t = idx[j];
        idx[j] = idx[i];
        idx[i] = t;
        c[i]++;
        i = 0;
    }
    CHECK_EQ(made, 720 * 3);
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 720 * 3);
    size_t elided = 0, none_left = 0;
    for (size_t i = 0; i < s->n; i++) {
        struct skill *k = s->v[i];
        char path[PATH_MAX], buf[4096];
        snprintf(path, sizeof path, "%s/%s/SKILL.md", root, k->qname);
        FILE *fp = fopen(path, "r");
        CHECK(fp != NULL);
        size_t len = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        struct fm f = {0};
        struct err e;
        CHECK_EQ(fm_parse(buf, len, 1, &f, &e), 0);
        json_t *got = skills_frontmatter(k);
        char *want_s = json_dumps(f.fields, JSON_COMPACT);
        char *got_s = json_dumps(got, JSON_COMPACT);
        if (strcmp(got_s, want_s))
            printf("# %s: %s != %s\n", k->qname, got_s, want_s);
        CHECK_STR(got_s, want_s);
        elided += k->fm_slots != 0;
        none_left += k->fm_slots && !k->fm_rest;
        /* the first shape keeps every field apart: only license is text */
        if (k->qname[strlen(k->qname) - 1] == '0') {
            CHECK(k->fm_slots != 0);
            CHECK(!k->fm_rest == !json_object_get(f.fields, "license"));
        }
        free(want_s);
        free(got_s);
        json_decref(got);
        fm_cleanup(&f);
    }
    printf("# %zu of %zu texts without placeholders, %zu with nothing left\n", elided, s->n,
           none_left);
    CHECK(elided >= 720 * 2);
    CHECK(none_left >= 360);
    skills_release(s);
    skills_free(S);
}

TEST(execution_parsed_once_under_concurrent_callers)
{
    fresh_root();
    writef("rich/SKILL.md", "%s", rich_fm[0]);
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    int amb;
    struct skill *k = skills_find(s, "rich", 4, &amb);
    CHECK(k != NULL);
    pthread_t t[8];
    void *got[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, exec_reader, k);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], &got[i]);
    for (int i = 0; i < 8; i++)
        CHECK(got[i] != NULL && got[i] == (void *)skills_execution(k));
    skills_release(s);
    skills_free(S);
}

struct card_racer {
    struct skill *k;
    int tier;
    pthread_barrier_t *go;
    struct card *kept;
};

static void *card_keeper(void *arg)
{
    struct card_racer *r = arg;
    struct card *c = malloc(sizeof(struct card_link));
    pthread_barrier_wait(r->go);
    r->kept = skills_card_keep(r->k, r->tier, c);
    return NULL;
}

/*
 * An entry's cards are a list grown by compare and swap: threads keeping
 * cards of an entry at once each land theirs, once a tier (one tier raced
 * twice keeps one card, the other freed: ASan tells).
 */
TEST(cards_kept_by_racing_threads_all_land)
{
    fresh_root();
    skill("acme/alpha", "alpha", "A");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    struct skill *k = s->v[0];
    /* the bare name is the end of the qualified one, not a second copy */
    CHECK_STR(k->name, "alpha");
    CHECK(k->name == k->qname + 5);
    CHECK(k->fm_name == k->name);   /* the frontmatter's name, the same */
    CHECK(atomic_load(&k->cards) == NULL && skills_card(k, 0) == NULL);
    enum { RACERS = SKILL_CARD_TIERS + 1 };
    for (int round = 0; round < 200; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, RACERS);
        pthread_t t[RACERS];
        struct card_racer r[RACERS];
        for (int i = 0; i < RACERS; i++) {
            r[i] = (struct card_racer){k, i % SKILL_CARD_TIERS, &go, NULL};
            pthread_create(&t[i], NULL, card_keeper, &r[i]);
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < RACERS; i++)
            CHECK(r[i].kept != NULL && skills_card(k, r[i].tier) == r[i].kept);
        /* one card a tier in the list, each tier there once; then back to
         * no cards, for the next round to keep them again */
        unsigned seen = 0;
        int nodes = 0;
        for (struct card_link *l = atomic_exchange(&k->cards, NULL), *next; l; l = next) {
            next = l->next;
            CHECK(l->tier < SKILL_CARD_TIERS && !(seen & (1u << l->tier)));
            seen |= 1u << l->tier;
            nodes++;
            free(l);
        }
        CHECK_EQ(nodes, SKILL_CARD_TIERS);
    }
    skills_release(s);
    skills_free(S);
}

TEST(body_is_read_once_and_sections_found)
{
    fresh_root();
    skill("alpha", "alpha", "A");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    struct skill_body *b, *b2;
    struct skill_body *tmp;
    struct err why;
    CHECK_EQ(skills_body(s->v[0], &b, &tmp, &why), 0);
    CHECK(tmp == NULL);
    CHECK(!strncmp(b->text, "# alpha", 7));
    CHECK_EQ(b->nsec, 2);
    CHECK_EQ(skills_body(s->v[0], &b2, &tmp, &why), 0);
    CHECK(b == b2);
    skills_release(s);
    skills_free(S);
}

TEST(bad_skill_files_are_reported_and_never_fatal)
{
    fresh_root();
    skill("good", "good", "Still served");
    writef("empty/SKILL.md", "%s", "");
    writef("unclosed/SKILL.md", "---\nname: unclosed\ndescription: no end fence\n# Body\n");
    writef("nofence/SKILL.md", "# Just markdown\n");
    /* binary garbage and a 10 MB file */
    char path[512];
    snprintf(path, sizeof path, "%s/binary", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/binary/SKILL.md", root);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 4096; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/huge", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/huge/SKILL.md", root);
    f = fopen(path, "wb");
    fputs("---\nname: huge\ndescription: big\n---\n", f);
    for (int i = 0; i < 10 * 1024; i++) {
        char line[1024];
        memset(line, 'x', sizeof line - 1);
        line[sizeof line - 1] = '\n';
        fwrite(line, 1, sizeof line, f);
    }
    fclose(f);
    struct skills *S = open_root();
    CHECK(S != NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 1);
    CHECK_STR(s->v[0]->qname, "good");
    char *e = json_dumps(s->errors, 0);
    int ok = strstr(e, "SKILL.md is empty") && strstr(e, "not closed") &&
             strstr(e, "over the 4 MiB limit") && strstr(e, "\"skill\": \"binary\"") &&
             strstr(e, "\"skill\": \"nofence\"");
    if (!ok)
        printf("# errors: %s\n", e);
    free(e);
    CHECK(ok);
    skills_release(s);
    skills_free(S);
}

/* A build's report judged by two of its lines (e: its JSON, freed here),
 * printed whole when either is missing; the snapshot and library closed. */
static void report_has(struct skills *S, struct snapshot *s, char *e, int refused, int warned)
{
    if (!refused || !warned)
        printf("# errors: %s\n", e ? e : "(not encodable)");
    free(e);
    skills_release(s);
    skills_free(S);
    CHECK(refused);
    CHECK(warned);
}

/* Folder and file names are bytes; JSON carries UTF-8 only. A skill whose
 * folder name is not UTF-8 is refused with a problem that says why (it was
 * served under a name no reply could carry, and its problems were dropped
 * because they could not be encoded); a file whose name is not UTF-8 stays
 * in the file list (the lock's digests cover it) and is reported. */
TEST(names_that_are_not_utf8_are_reported_not_dropped)
{
    fresh_root();
    skill("good", "good", "Still served");
    writef("good/references/ok.md", "ok\n");
    writef("good/references/r\xe9" "f.md", "latin-1 name\n");
    writef("good/scripts/d\xe9/x.sh", "true\n");   /* a fine name in a folder that is not */
    skill("caf\xe9", "cafe", "In a latin-1 folder");
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 1);
    CHECK_STR(s->v[0]->qname, "good");
    CHECK_EQ(s->v[0]->nfiles, 3);
    CHECK_EQ(json_array_size(s->errors), 2);
    char *e = json_dumps(s->errors, JSON_COMPACT);
    CHECK(e != NULL);
    int refused = e && strstr(e, "\"skill\":\"caf?\"") &&
                  strstr(e, "the folder name is not valid UTF-8") &&
                  strstr(e, "skill not served") && strstr(e, "\"level\":\"error\"");
    int warned = e && strstr(e, "2 file name(s) are not valid UTF-8 (first: references/r?f.md)") &&
                 strstr(e, "\"level\":\"warning\"");
    report_has(S, s, e, refused, warned);
}

/* What a build says about a skill it refuses or serves with a warning: the
 * line of a frontmatter error, a link out of the folder and the first such
 * link by name. The build keeps these apart from the candidate (most have
 * none); each must still reach the report, beside the skill it is about. */
TEST(refusals_and_warnings_keep_their_line_and_first_name)
{
    fresh_root();
    skill("good", "good", "Served");
    writef("dup/SKILL.md", "---\nname: dup\ndescription: first\ndescription: second\n---\nbody\n");
    skill("linky", "linky", "Served, one link not");
    writef("linky/references/in.md", "inside\n");
    char link[512];
    snprintf(link, sizeof link, "%s/linky/references/out.md", root);
    CHECK_EQ(symlink("/etc/hostname", link), 0);
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 2);
    char *e = json_dumps(s->errors, JSON_COMPACT);
    CHECK(e != NULL);
    int refused = e && strstr(e, "\"skill\":\"dup\"") &&
                  strstr(e, "duplicate key 'description' (first defined on line 3) (line 4); "
                            "skill not served");
    int warned = e && strstr(e, "\"skill\":\"linky\"") &&
                 strstr(e, "1 symlink(s) point outside the skill (first: references/out.md)");
    report_has(S, s, e, refused, warned);
}

/* SKILL.md is opened beneath its folder like every other file of a skill:
 * a link to a file inside the folder serves; a link out of it is refused
 * by the scan, and load_skill's later open refuses one put in place after
 * the scan instead of serving the outside file. */
TEST(skill_md_leading_out_of_the_folder_is_refused)
{
    fresh_root();
    skill("good", "good", "Served");
    writef("inside/real.md", "---\nname: inside\ndescription: Linked inside\n---\nbody inside\n");
    writef("secret.md", "---\nname: out\ndescription: Outside\n---\nsecret outside\n");
    char link[600], target[600];
    snprintf(link, sizeof link, "%s/inside/SKILL.md", root);
    CHECK_EQ(symlink("real.md", link), 0);
    snprintf(link, sizeof link, "%s/out", root);
    mkdir(link, 0755);
    snprintf(link, sizeof link, "%s/out/SKILL.md", root);
    snprintf(target, sizeof target, "%s/secret.md", root);
    CHECK_EQ(symlink(target, link), 0);
    struct skills *S = open_root();
    struct snapshot *s = skills_acquire(S);
    int amb;
    CHECK(skills_find(s, "out", 3, &amb) == NULL);
    struct skill *in = skills_find(s, "inside", 6, &amb);
    CHECK(in != NULL);
    char *e = json_dumps(s->errors, JSON_COMPACT);
    CHECK(e && strstr(e, "cannot open SKILL.md: it leads outside the skill folder; skill not served"));
    free(e);
    struct skill_body *b = NULL, *tmp = NULL;
    struct err why = {0};
    CHECK_EQ(skills_body(in, &b, &tmp, &why), 0);
    CHECK(b && strstr(b->text, "body inside"));
    skills_body_free(tmp);
    /* good's SKILL.md becomes a link out after the scan */
    struct skill *g = skills_find(s, "good", 4, &amb);
    CHECK(g != NULL);
    snprintf(link, sizeof link, "%s/good/SKILL.md", root);
    CHECK_EQ(unlink(link), 0);
    CHECK_EQ(symlink(target, link), 0);
    b = tmp = NULL;
    CHECK_EQ(skills_body(g, &b, &tmp, &why), -EXDEV);
    CHECK_STR(why.msg, "SKILL.md leads outside the skill folder");
    skills_body_free(tmp);
    skills_release(s);
    skills_free(S);
}

TEST(name_rules)
{
    CHECK(skills_name_problem("csv-profile") == NULL);
    CHECK(skills_name_problem("Csv") != NULL);
    CHECK(skills_name_problem("-a") != NULL);
    CHECK(skills_name_problem("a--b") != NULL);
    CHECK(skills_name_problem("") != NULL);
    char long_name[70];
    memset(long_name, 'a', 65);
    long_name[65] = '\0';
    CHECK(skills_name_problem(long_name) != NULL);
}

/* The canonical resource URI: subscriptions, change notices and skills/list
 * must spell a file alike, so a reserved character is escaped the same way
 * everywhere and the sub-delims, ':', '@' and '/' are not. */
TEST(canonical_uri)
{
    struct skill k = {.qname = "team/my skill"};
    char *u = skills_uri(&k, "scripts/a b%#?;=:@.py");
    CHECK_STR(u, "skill://team/my%20skill/scripts/a%20b%25%23%3F;=:@.py");
    free(u);
    u = skills_uri(&k, NULL);
    CHECK_STR(u, "skill://team/my%20skill");
    free(u);
    u = skills_uri(&k, "");
    CHECK_STR(u, "skill://team/my%20skill");
    free(u);
}

/* ---- concurrency: readers never see freed memory while snapshots swap ---- */

static atomic_int stop_flag;
static atomic_long reads_done;

static void *reader(void *arg)
{
    struct skills *S = arg;
    while (!atomic_load(&stop_flag)) {
        /* Both ways of holding a snapshot, as requests and the rest do. */
        int hold = 0, held = atomic_load(&reads_done) & 1;
        struct snapshot *s = held ? skills_acquire_held(S, &hold) : skills_acquire(S);
        /* Touch everything a request would: under ASan a freed snapshot or
         * entry is reported here. */
        size_t sum = 0;
        for (size_t i = 0; i < s->n; i++)
            sum += strlen(s->v[i]->qname) + strlen(s->v[i]->description);
        int amb;
        if (s->n && !skills_find(s, s->v[0]->qname, strlen(s->v[0]->qname), &amb))
            abort();
        if (sum == 0 && s->n)
            abort();
        if (held)
            skills_release_held(s, hold);
        else
            skills_release(s);
        atomic_fetch_add(&reads_done, 1);
    }
    return NULL;
}

/* Count of needle in the file at path. */
static int count_in_file(const char *path, const char *needle)
{
    char buf[8192];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    int c = 0;
    for (const char *p = buf; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

TEST(inotify_unavailable_is_logged_once_and_ticks_still_see_edits)
{
    fresh_root();
    skill("alpha", "alpha", "First");
    char log[300];
    snprintf(log, sizeof log, "%s.log", root);
    log_set_level(LOG_WARN);
    struct quiet q = quiet_begin(NULL, log);
    fail_inotify = EMFILE;
    struct skills *S = open_root();
    struct skills_report r;
    for (int i = 0; i < 3; i++) {   /* the first tick and two rebuilds */
        if (i)
            skill(i == 1 ? "beta" : "gamma", i == 1 ? "beta" : "gamma", "More");
        skills_rescan(S, 0, &r);
        skills_report_cleanup(&r);
    }
    quiet_end(q);
    CHECK_EQ(S->ino_fd, -1);
    CHECK_EQ(count_in_file(log, "inotify unavailable (Too many open files)"), 1);
    struct snapshot *s = skills_acquire(S);
    CHECK_EQ(s->n, 3);              /* the stat passes saw both new skills */
    skills_release(s);
    /* inotify back: used from the next rebuild on; a later failure is told again */
    fail_inotify = 0;
    skill("delta", "delta", "Fourth");
    q = quiet_begin(NULL, log);
    skills_rescan(S, 0, &r);
    skills_report_cleanup(&r);
    CHECK(S->ino_fd >= 0);
    fail_inotify = ENOMEM;
    skill("epsilon", "epsilon", "Fifth");
    touch_later("epsilon/SKILL.md");
    skills_rescan(S, 1, &r);
    skills_report_cleanup(&r);
    quiet_end(q);
    fail_inotify = 0;
    log_set_level(LOG_ERROR);
    CHECK_EQ(count_in_file(log, "inotify unavailable (Cannot allocate memory)"), 1);
    s = skills_acquire(S);
    CHECK_EQ(s->n, 5);
    skills_release(s);
    skills_free(S);
    unlink(log);
}

TEST(concurrent_readers_and_swaps)
{
    fresh_root();
    for (int i = 0; i < 20; i++) {
        char rel[64], name[32];
        snprintf(name, sizeof name, "s%02d", i);
        snprintf(rel, sizeof rel, "%s", name);
        skill(rel, name, "concurrent");
    }
    struct skills *S = open_root();
    pthread_t th[4];
    atomic_store(&stop_flag, 0);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, reader, S);
    uint64_t gen0;
    /* Held to the end: proves the current snapshot was replaced meanwhile. */
    struct snapshot *first = skills_acquire(S);
    gen0 = first->generation;
    for (int round = 0; round < 200; round++) {
        struct skills_report r;
        skills_rescan(S, 1, &r);    /* forced: a new snapshot every round */
        skills_report_cleanup(&r);
    }
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    struct snapshot *s = skills_acquire(S);
    CHECK(s != first);
    CHECK_EQ(s->generation, gen0);  /* nothing visible changed */
    CHECK_EQ(s->n, 20);
    skills_release(s);
    skills_release(first);
    CHECK(atomic_load(&reads_done) > 0);
    skills_free(S);
}

static void *release_elsewhere(void *arg)
{
    struct snapshot **sp = arg;
    skills_release_held(sp[0], (int)(intptr_t)sp[1]);
    return NULL;
}

/* A snapshot held through a hazard slot (no count taken) outlives the
 * rescans that replace it, and is freed once released, from any thread. */
TEST(held_snapshot_survives_rescans_until_released)
{
    fresh_root();
    skill("alpha", "alpha", "A");
    struct skills *S = open_root();
    struct skills_report r;
    int hold = 0;
    struct snapshot *s0 = skills_acquire_held(S, &hold);
    CHECK(hold > 0);
    CHECK_EQ(atomic_load(&snap_of(s0)->refs), 0);
    /* A second one while the slot is busy is counted instead. */
    int hold2 = -1;
    struct snapshot *s1 = skills_acquire_held(S, &hold2);
    CHECK_EQ(hold2, 0);
    CHECK(s1 == s0);
    CHECK_EQ(atomic_load(&snap_of(s0)->refs), 1);
    skills_release_held(s1, hold2);
    CHECK_EQ(atomic_load(&snap_of(s0)->refs), 0);

    skills_rescan(S, 1, &r);
    skills_report_cleanup(&r);
    skills_rescan(S, 1, &r);
    skills_report_cleanup(&r);
    CHECK_EQ(skills_retired(S), 1);     /* s0 waits; the one between is gone */
    CHECK_STR(s0->v[0]->description, "A");

    /* Released by another thread, as a call finished elsewhere is. */
    pthread_t th;
    void *arg[2] = {s0, (void *)(intptr_t)hold};
    pthread_create(&th, NULL, release_elsewhere, arg);
    pthread_join(th, NULL);
    skills_rescan(S, 1, &r);
    skills_report_cleanup(&r);
    CHECK_EQ(skills_retired(S), 0);
    /* The slot is free again for this thread. */
    struct snapshot *s2 = skills_acquire_held(S, &hold2);
    CHECK_EQ(hold2, hold);
    skills_release_held(s2, hold2);
    skills_free(S);
}

static struct skills *shared_S;
static atomic_int reload_calls;

static void *reloader(void *arg)
{
    struct skills_report r;
    skills_rescan(shared_S, 1, &r);
    atomic_fetch_add(&reload_calls, 1);
    skills_report_cleanup(&r);
    return NULL;
}

TEST(reloads_arriving_together_share_scans)
{
    fresh_root();
    skill("alpha", "alpha", "A");
    shared_S = open_root();
    uint64_t scans0 = skills_scans(shared_S);
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, reloader, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    /* Eight forced reloads at once coalesce into at most a few scans. */
    uint64_t scans = skills_scans(shared_S) - scans0;
    CHECK_EQ(atomic_load(&reload_calls), 8);
    CHECK(scans <= 8);
    CHECK(scans >= 1);
    printf("# 8 concurrent reloads -> %llu scans\n", (unsigned long long)scans);
    skills_free(shared_S);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_ERROR);
    RUN(discovers_top_level_and_team_skills);
    RUN(lists_files_but_not_vcs_or_escaping_links);
    RUN(wide_and_deep_skill_lists_every_file_and_folder);
    RUN(folders_over_many_reads_lose_no_entry);
    RUN(a_signal_during_a_listing_loses_no_entry);
    RUN(broken_skill_reported_and_previous_version_kept);
    RUN(rescan_reports_added_changed_removed_and_reuses_entries);
    RUN(tick_sees_changes_under_reused_entries);
    RUN(body_terms_survive_rescans);
    RUN(card_terms_survive_rescans);
    RUN(first_snapshot_served_before_its_index);
    RUN(earlier_root_wins_and_shadowed_is_reported);
    RUN(folder_paths_composed_from_the_root_equal_the_real_ones);
    RUN(large_library_builds_deterministically_on_threads);
    RUN(frontmatter_kept_compact_and_given_back_whole);
    RUN(frontmatter_placeholders_left_out_and_put_back_in_every_order);
    RUN(frontmatter_given_back_whole_in_every_key_order);
    RUN(execution_parsed_once_under_concurrent_callers);
    RUN(cards_kept_by_racing_threads_all_land);
    RUN(body_is_read_once_and_sections_found);
    RUN(bad_skill_files_are_reported_and_never_fatal);
    RUN(names_that_are_not_utf8_are_reported_not_dropped);
    RUN(refusals_and_warnings_keep_their_line_and_first_name);
    RUN(skill_md_leading_out_of_the_folder_is_refused);
    RUN(name_rules);
    RUN(canonical_uri);
    RUN(inotify_unavailable_is_logged_once_and_ticks_still_see_edits);
    RUN(concurrent_readers_and_swaps);
    RUN(held_snapshot_survives_rescans_until_released);
    RUN(reloads_arriving_together_share_scans);
    if (root[0])
        tt_rm_rf(root);
    DONE();
}
