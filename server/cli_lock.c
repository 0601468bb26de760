/*
 * cli_lock.c - `skill-mcp lock approve|revoke|diff|status|gc`: the command
 * line over the lock file (lockfile.h) and its store (lockstore.h).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "lockfile.h"
#include "lockstore.h"
#include "skills.h"
#include "util.h"

/* ---- skill-mcp lock ----------------------------------------------------------------- */

struct cli {
    const char *file;
    const char *roots[CFG_MAX_ROOTS];
    size_t nroots;
    const char *store;
    const char *by;
    int all;
    int dry_run;                /* gc: report only */
    long grace;                 /* gc: seconds an unreferenced item is kept */
    const char *names[256];
    size_t nnames;
};

static void cli_usage(FILE *f)
{
    fprintf(f,
            "usage: skill-mcp lock approve NAME... | --all [--by WHO] [--lock-store DIR]\n"
            "       skill-mcp lock revoke NAME... [--by WHO]\n"
            "       skill-mcp lock diff [NAME...]\n"
            "       skill-mcp lock status [NAME...]\n"
            "       skill-mcp lock gc --lock-store DIR [--grace SECONDS] [--dry-run]\n"
            "common: --lock FILE (default skills.lock), --skills DIR (repeatable, default ./skills)\n"
            "diff and status exit 1 when a skill is not approved as it is now.\n"
            "gc removes from the store what the lock no longer names, once it and the lock\n"
            "are older than the grace (default 3600 s).\n");
}

static const char *who_default(void)
{
    const char *v = getenv("SUDO_USER");
    if (!v || !*v)
        v = getenv("USER");
    if (!v || !*v)
        v = getlogin();
    if (!v || !*v) {
        struct passwd *pw = getpwuid(getuid());
        v = pw ? pw->pw_name : NULL;
    }
    return v && *v ? v : "unknown";
}

static int cli_parse(struct cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->file = "skills.lock";
    c->grace = 3600;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--lock")       ? &c->file
                            : !strcmp(a, "--lock-store") ? &c->store
                            : !strcmp(a, "--by")         ? &c->by
                                                         : NULL;
        if (slot || !strcmp(a, "--skills")) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                x_fprintf_text(stderr, "skill-mcp lock: %s needs a value\n", a);
                return -1;
            }
            if (slot)
                *slot = argv[++i];
            else if (c->nroots < CFG_MAX_ROOTS)
                c->roots[c->nroots++] = argv[++i];
        } else if (!strcmp(a, "--all")) {
            c->all = 1;
        } else if (!strcmp(a, "--dry-run")) {
            c->dry_run = 1;
        } else if (!strcmp(a, "--grace")) {
            char *end;
            errno = 0;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (i + 1 >= argc || errno || end == argv[i + 1] || *end || v < 0) {
                x_fprintf_text(stderr, "skill-mcp lock: --grace needs a number of seconds (0 or more)\n");
                return -1;
            }
            c->grace = v;
            i++;
        } else if (a[0] == '-') {
            x_fprintf_text(stderr, "skill-mcp lock: unknown option '%s'\n", a);
            return -1;
        } else if (c->nnames < sizeof c->names / sizeof *c->names) {
            c->names[c->nnames++] = a;
        }
    }
    if (!c->nroots)
        c->roots[c->nroots++] = "./skills";
    if (!c->by)
        c->by = who_default();
    if (!lock_who_valid(c->by, strlen(c->by))) {
        x_fprintf_text(stderr, "skill-mcp lock: --by '%s': 1-64 characters of A-Z a-z 0-9 . _ @ + -\n",
                       c->by);
        return -1;
    }
    return 0;
}

/* Resolves the named skills (all when none are named); prints unknown names. */
static int cli_pick(const struct snapshot *s, const struct cli *c, struct skill ***out,
                    size_t *n)
{
    *out = xcalloc(s->n + c->nnames + 1, sizeof **out);
    *n = 0;
    if (!c->nnames) {
        for (size_t i = 0; i < s->n; i++)
            (*out)[(*n)++] = s->v[i];
        return 0;
    }
    int bad = 0;
    for (size_t i = 0; i < c->nnames; i++) {
        int amb;
        struct skill *k = skills_find(s, c->names[i], strlen(c->names[i]), &amb);
        if (!k) {
            x_fprintf_text(stderr, "skill-mcp lock: %s: %s\n", c->names[i],
                           amb ? "names skills of several teams; give the qualified name"
                               : "no such skill (or it does not load: see `skill-mcp validate`)");
            bad = 1;
            continue;
        }
        (*out)[(*n)++] = k;
    }
    return bad ? -1 : 0;
}

struct approve_arg {
    struct lock_entry *v;
    size_t n;
    int revoke;
    const char *by;
    char at[LOCK_TIME_LEN + 1];
    int missing;
};

static int approve_edit(const struct lock_table *cur, struct lock_entry **upd, size_t *n,
                        void *arg)
{
    struct approve_arg *a = arg;
    *upd = xcalloc(a->n + 1, sizeof **upd);
    for (size_t i = 0; i < a->n; i++) {
        if (!a->revoke) {
            lock_entry_copy(&(*upd)[(*n)++], &a->v[i]);
     continue;
 }
 const struct lock_entry *e = lock_find(cur, a->v[i].qname);
 if (!e) {
     x_fprintf_text(stderr, "skill-mcp lock: %s is not in the lock; nothing to revoke\n",
                    a->v[i].qname);
     a->missing = 1;
     continue;
 }
 struct lock_entry *d = &(*upd)[(*n)++];
 lock_entry_copy(d, e);
 free(d->revoked_by);
 d->revoked_by = xstrdup(a->by);
 memcpy(d->revoked_at, a->at, sizeof a->at);
    }
    return 0;
}

static int cli_revoke(const struct cli *c)
{
    if (!c->nnames) {
        x_fprintf_text(stderr, "skill-mcp lock revoke: name the skill(s) to revoke\n");
        return 2;
    }
    struct approve_arg a = {.revoke = 1, .by = c->by};
    lock_iso_now(a.at);
    a.v = xcalloc(c->nnames, sizeof *a.v);
    for (size_t i = 0; i < c->nnames; i++)
        a.v[a.n++].qname = xstrdup(c->names[i]);
    struct err e = {0};
    int rc = lock_edit(c->file, approve_edit, &a, NULL, &e);
    for (size_t i = 0; i < a.n; i++)
        free(a.v[i].qname);
    free(a.v);
    if (rc < 0) {
        x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < c->nnames && !a.missing; i++)
        x_fprintf_text(stdout, "revoked %s (by %s at %s): quarantined at the next refresh, or now on SIGHUP\n",
                       c->names[i], c->by, a.at);
    return a.missing ? 1 : 0;
}

static int cli_approve(const struct cli *c, const struct snapshot *s)
{
    if (!c->nnames && !c->all) {
        x_fprintf_text(stderr, "skill-mcp lock approve: name the skill(s) to approve, or --all\n");
        return 2;
    }
    struct skill **ks;
    size_t nk;
    if (cli_pick(s, c, &ks, &nk) < 0) {
        free(ks);
        return 1;
    }
    struct approve_arg a = {.by = c->by};
    char *by = xstrdup(c->by);
    lock_iso_now(a.at);
    a.v = xcalloc(nk + 1, sizeof *a.v);
    struct lock_manifest *ms = xcalloc(nk + 1, sizeof *ms);
    int rc = 0;
    for (size_t i = 0; i < nk; i++) {
 struct err why;
 if (lock_manifest_of(ks[i], &ms[i], &why) < 0) {
     x_fprintf_text(stderr, "skill-mcp lock: %s: %s\n", ks[i]->qname, why.msg);
     rc = 1;
     continue;
 }
 if (c->store && lock_store_put(c->store, ks[i], &ms[i], &why) < 0) {
     x_fprintf_text(stderr, "skill-mcp lock: %s: not stored in %s: %s\n", ks[i]->qname,
                    c->store, why.msg);
     rc = 1;
     continue;
 }
 struct lock_entry *e = &a.v[a.n++];
 e->qname = ks[i]->qname;
 memcpy(e->digest, ms[i].digest, sizeof e->digest);
 memcpy(e->exec, ms[i].exec, sizeof e->exec);
 e->by = by;
 memcpy(e->at, a.at, sizeof a.at);
 e->files = ms[i].files;
 e->nfiles = ms[i].n;
    }
    struct err e = {0};
    if (!rc && lock_edit(c->file, approve_edit, &a, NULL, &e) < 0) {
 x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
 rc = 1;
    }
    /* Once more now that the lock names them: a `lock gc` that ran between
     * the first store and the lock edit may have taken a blob that was
     * unreferenced then (present blobs cost a stat). */
    for (size_t i = 0; !rc && c->store && i < nk; i++) {
 struct err why;
 if (lock_store_put(c->store, ks[i], &ms[i], &why) < 0) {
     x_fprintf_text(stderr, "skill-mcp lock: %s: not stored in %s: %s\n", ks[i]->qname,
                    c->store, why.msg);
     rc = 1;
 }
    }
    if (!rc)
        for (size_t i = 0; i < a.n; i++)
            x_fprintf_text(stdout, "approved %s %s (%zu files) by %s at %s\n", a.v[i].qname, a.v[i].digest,
                           a.v[i].nfiles, c->by, a.at);
    for (size_t i = 0; i < nk; i++)
        lock_manifest_cleanup(&ms[i]);
    free(ms);
    free(a.v);
    free(ks);
    free(by);
    return rc;
}

static const char *change_word(const struct lock_change_item *x)
{
    int script = lock_under(x->path, "scripts"), hook = lock_under(x->path, "hooks");
    switch (x->kind) {
    case LOCK_ADDED:
        return script ? "new script" : hook ? "new hook" : NULL;
    case LOCK_MODIFIED:
        return script ? "changed script" : hook ? "changed hook" : NULL;
    default:
        return NULL;
    }
}

/* diff (verbose) and status: one verdict per skill; 1 when any is not approved as it is. */
static int cli_report(const struct cli *c, const struct snapshot *s, int verbose)
{
    struct err e = {0};
    struct lock_table *t = lock_read(c->file, 1, &e);
    if (!t) {
        x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
        return 2;
    }
    struct skill **ks;
    size_t nk;
    if (cli_pick(s, c, &ks, &nk) < 0) {
        free(ks);
        lock_table_unref(t);
        return 2;
    }
    int unapproved = 0, widens = 0;
    for (size_t i = 0; i < nk; i++) {
        struct lock_manifest m;
        struct err why;
        const struct lock_entry *a = lock_find(t, ks[i]->qname);
        if (lock_manifest_of(ks[i], &m, &why) < 0) {
            x_fprintf_text(stdout, "%s: cannot be checked: %s\n", ks[i]->qname, why.msg);
            unapproved = 1;
            continue;
        }
        struct lock_change_item *ch;
        size_t n = lock_changes(a, &m, &ch);
        int w = 0;
        for (size_t j = 0; j < n; j++)
            w |= ch[j].widens;
        if (a && !a->revoked_by && !strcmp(a->digest, m.digest))
            x_fprintf_text(stdout, "%s: approved (by %s at %s)\n", ks[i]->qname, a->by, a->at);
        else if (a && a->revoked_by && !strcmp(a->digest, m.digest))
            x_fprintf_text(stdout, "%s: REVOKED by %s at %s (unchanged since approved by %s at %s)\n",
                           ks[i]->qname, a->revoked_by, a->revoked_at, a->by, a->at);
        else if (a)
            x_fprintf_text(stdout, "%s: %sCHANGED since approved by %s at %s%s\n", ks[i]->qname,
                           a->revoked_by ? "REVOKED and " : "", a->by, a->at,
                           w ? "  ! WIDENS what it can do" : "");
        else
            x_fprintf_text(stdout, "%s: NOT APPROVED (new to the lock)%s\n", ks[i]->qname,
                           w ? "  ! WIDENS what it can do" : "");
        if (!a || a->revoked_by || strcmp(a->digest, m.digest))
            unapproved = 1;
        widens |= w;
        for (size_t j = 0; verbose && j < n; j++) {
            static const char mark[] = {'A', 'R', 'M', 'X'};
            const char *word = change_word(&ch[j]);
            if (ch[j].kind == LOCK_EXEC_CHANGED)
                x_fprintf_text(stdout, "  ! X %s: the execution: block %s  WIDENS\n", ch[j].path,
                               a ? "changed" : "is new");
            else if (ch[j].widens)
                x_fprintf_text(stdout, "  ! %c %s  WIDENS: %s\n", mark[ch[j].kind], ch[j].path, word);
            else
                x_fprintf_text(stdout, "    %c %s\n", mark[ch[j].kind], ch[j].path);
        }
        free(ch);
        lock_manifest_cleanup(&m);
    }
    /* Approved skills that are gone from the tree: worth knowing, not a failure. */
    for (size_t i = 0; !c->nnames && i < t->n; i++) {
        int amb;
        if (!skills_find(s, t->v[i].qname, strlen(t->v[i].qname), &amb))
            x_fprintf_text(stdout, "%s: in the lock but not in the skills folders\n", t->v[i].qname);
    }
    if (verbose && widens)
        x_fprintf_text(stdout, "! marks changes that widen what a skill can do: review them first.\n");
    free(ks);
    lock_table_unref(t);
    return unapproved;
}

/* ---- gc ------------------------------------------------------------------------ */

static int hex_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int named(const char **v, size_t n, const char *hex)
{
    return bsearch(&hex, v, n, sizeof *v, hex_cmp) != NULL;
}

/*
 * Removes from the store what the lock no longer names: blobs no entry's
 * files use, manifests and trees of versions no entry holds (revoked
 * entries still hold theirs). The store belongs to this one lock.
 *
 * Servers judge by the lock they last read, and a server serving an old
 * approved version keeps doing so until it sees the new lock (at once on a
 * change, at most one refresh later). So nothing goes while the lock
 * changed within the grace, and nothing younger than the grace goes either
 * (an `approve` writes its blobs before the lock; a server builds a tree
 * before serving it).
 */
static int cli_gc(const struct cli *c)
{
    if (!c->store) {
        x_fprintf_text(stderr, "skill-mcp lock gc: --lock-store DIR is required\n");
        return 2;
    }
    /* Under the lock's flock for the whole run: an approve or a pin cannot
     * name a version between the read below and the removals. */
    int dfd = lock_dir_flock(c->file);
    if (dfd < 0) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s: cannot lock its folder: %s\n", c->file,
                       strerror(errno));
        return 2;
    }
    struct stat lst;
    if (stat(c->file, &lst) < 0) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s: %s; without the lock, everything in the store "
                               "stays\n", c->file, strerror(errno));
        close(dfd);
        return 2;
    }
    struct err e = {0};
    struct lock_table *t = lock_read(c->file, 0, &e);
    if (!t) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s\n", e.msg);
        close(dfd);
        return 2;
    }
    time_t now = time(NULL);
    if (now - lst.st_mtime < c->grace) {
        x_fprintf_text(stdout, "%s changed %lld s ago, within the grace of %ld s: servers may still serve "
                       "versions it no longer names. Nothing removed; run gc again later.\n",
                       c->file, (long long)(now - lst.st_mtime), c->grace);
        lock_table_unref(t);
        close(dfd);
        return 0;
    }
    size_t nf = 0;
    for (size_t i = 0; i < t->n; i++)
        nf += t->v[i].nfiles;
    const char **vers = xcalloc(t->n + 1, sizeof *vers), **blobs = xcalloc(nf + 1, sizeof *blobs);
    size_t nv = 0, nb = 0;
    for (size_t i = 0; i < t->n; i++) {
        vers[nv++] = t->v[i].digest + 7;
        for (size_t j = 0; j < t->v[i].nfiles; j++)
            blobs[nb++] = t->v[i].files[j].digest + 7;
    }
    qsort(vers, nv, sizeof *vers, hex_cmp);
    qsort(blobs, nb, sizeof *blobs, hex_cmp);

    static const char *const kinds[] = {"blobs", "manifests", "trees"};
    size_t gone[3] = {0}, kept[3] = {0}, young = 0;
    long long bytes = 0;
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", c->store, kinds[k]);
        DIR *d = opendir(dir);
        if (!d) {
            if (errno != ENOENT) {
                x_fprintf_text(stderr, "skill-mcp lock gc: %s: %s\n", dir, strerror(errno));
                rc = 1;
            }
            continue;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *nm = de->d_name;
            if (!strcmp(nm, ".") || !strcmp(nm, ".."))
                continue;
            /* a tree being built (".tmp-"), or one a crash left behind */
            int partial = k == 2 && !strncmp(nm, ".tmp-", 5);
            if (!partial && named(k == 0 ? blobs : vers, k == 0 ? nb : nv, nm)) {
                kept[k]++;
                continue;
            }
            char p[PATH_MAX];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, nm);
            if (lstat(p, &st) < 0)
                continue;
            if (now - st.st_mtime < c->grace) {
                young++;
                continue;
            }
            if (c->dry_run) {
                x_fprintf_text(stdout, "would remove %s/%s\n", kinds[k], nm);
            } else if (k == 2 && S_ISDIR(st.st_mode)) {
                /* out of the way first, so a server never sees half a tree */
                char away[PATH_MAX];
                snprintf(away, sizeof away, "%s/.gc-%.16s-%d", dir, nm, (int)getpid());
                if (partial || rename(p, away) < 0)
                    snprintf(away, sizeof away, "%s", p);
                if (lock_rm_tree(away) < 0) {
                    x_fprintf_text(stderr, "skill-mcp lock gc: cannot remove %s: %s\n", p,
                                   strerror(errno));
                    rc = 1;
                    continue;
                }
            } else if (unlink(p) < 0) {     /* a file, or a link (never followed) */
                x_fprintf_text(stderr, "skill-mcp lock gc: cannot remove %s: %s\n", p, strerror(errno));
                rc = 1;
                continue;
            }
            gone[k]++;
            if (k == 0)
                bytes += st.st_size;
        }
        closedir(d);
    }
    x_fprintf_text(stdout, "%s %zu blob(s) (%lld bytes), %zu manifest(s), %zu tree(s); kept %zu blob(s), "
                   "%zu manifest(s), %zu tree(s) the lock names, and %zu item(s) younger than %ld s\n",
                   c->dry_run ? "would remove" : "removed", gone[0], bytes, gone[1], gone[2], kept[0],
                   kept[1], kept[2], young, c->grace);
    free(vers);
    free(blobs);
    lock_table_unref(t);
    flock(dfd, LOCK_UN);
    close(dfd);
    return rc;
}

int cli_lock(int argc, char **argv)
{
    struct cli c;
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        cli_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    const char *cmd = argv[0];
    int kind = !strcmp(cmd, "approve") ? 1 : !strcmp(cmd, "revoke") ? 2
               : !strcmp(cmd, "diff")  ? 3 : !strcmp(cmd, "status") ? 4
               : !strcmp(cmd, "gc")    ? 5 : 0;
    if (!kind) {
        x_fprintf_text(stderr, "skill-mcp lock: unknown command '%s'\n", cmd);
        cli_usage(stderr);
        return 2;
    }
    if (cli_parse(&c, argc, argv) < 0)
        return 2;
    if (kind == 2)
        return cli_revoke(&c);
    if (kind == 5)
        return cli_gc(&c);
    log_set_level(LOG_ERROR);
    struct skills *sk = skills_new(c.roots, c.nroots, NULL, NULL, NULL, NULL);
    if (!sk) {
        x_fprintf_text(stderr, "skill-mcp lock: no usable --skills directory\n");
        return 2;
    }
    struct snapshot *snap = skills_acquire(sk);
    int rc = kind == 1 ? cli_approve(&c, snap) : cli_report(&c, snap, kind == 3);
    skills_release(snap);
    skills_free(sk);
    return rc;
}
