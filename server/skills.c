/*
 * skills.c - discovery, the immutable snapshot, and its safe reclamation.
 *
 * Discovery reads only the frontmatter of each SKILL.md (16 KiB, or up to
 * 256 KiB when the fence is not closed by then) and lists the skill's files;
 * bodies are read on first load_skill. A rescan first stats everything the
 * current snapshot watched; when nothing moved it stops there, allocating
 * nothing. Otherwise it builds a new snapshot, reusing the entries of skills
 * whose SKILL.md and folders did not change, and publishes it with one
 * atomic store.
 *
 * Reclamation: a reader publishes the snapshot it is about to take in its
 * thread's hazard slot, checks that it is still current, takes a reference
 * and clears the slot. A retired snapshot is freed only by the rescanning
 * thread, once no hazard slot names it and its count is zero (checked in
 * that order; see docs/internals.md for why the order matters).
 *
 * Called by: main (new/free), the HTTP threads (acquire/find/body), the
 * refresher and reload_skills (rescan).
 */
#include "skills.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontmatter.h"
#include "jail.h"
#include "search.h"
#include "util.h"

#include <sys/resource.h>
#include <sys/syscall.h>

#define FM_FIRST_READ (16u << 10)
#define FM_MAX_READ (256u << 10)
#define SKILL_MD_MAX (4u << 20)
#define WALK_MAX_DEPTH 8
#define WALK_MAX_ENTRIES 10000
#define HP_SLOTS 256

struct skills {
    const char *roots[64];
    size_t nroots;
    const char *hooks_dir;
    _Atomic(struct snapshot *) cur;
    snapshot_ext_build_fn ext_build;
    snapshot_ext_free_fn ext_free;
    void *ext_arg;
    skills_gate_fn gate;
    void (*gate_release)(void *ref);
    void *gate_arg;

    /* rescans: one at a time; late arrivals share the next one */
    pthread_mutex_t scan_mu;
    pthread_cond_t scan_cv;
    int scanning;
    uint64_t scans_started, scans_finished;
    struct skills_report last;      /* of scan number scans_finished */
    uint64_t next_gen;

    struct snapshot *retired;       /* guarded by scan_mu */

    /* inotify on every watched folder: an unchanged tick reads nothing and
     * stats nothing. Owned by the scanner (one rescan at a time). */
    int ino_fd;                     /* -1: no inotify, every tick stats */
    int ino_dirty;                  /* a change may have slipped in before the watches */
    int ino_pending;                /* watches not set up yet (done on the first tick) */
    uint64_t last_full_ns;          /* the last stat pass */

    /* the body indexer (skills_index_bodies) */
    int ix_on;
    pthread_t ix_thread;
    pthread_mutex_t ix_mu;
    pthread_cond_t ix_cv;
    int ix_want;
    atomic_int ix_stop;
};

/* A rebuild reads the bodies of at most this many new or changed skills
 * itself; past that (a library swapped wholesale) the indexer does. */
#define INLINE_BODIES 64

/* Even with inotify, a full stat pass now and then (network filesystems do
 * not always send events). */
#define FULL_PASS_NS (60ull * 1000000000u)

/* ---- hazard slots -------------------------------------------------------- */

static _Atomic(struct snapshot *) hp[HP_SLOTS];
static atomic_bool hp_taken[HP_SLOTS];
static pthread_mutex_t hp_fallback = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t hp_key;
static pthread_once_t hp_once = PTHREAD_ONCE_INIT;
static _Thread_local int hp_slot = -1;

static void hp_thread_exit(void *arg)
{
    int slot = (int)(intptr_t)arg - 1;
    if (slot >= 0) {
        atomic_store(&hp[slot], NULL);
        atomic_store(&hp_taken[slot], 0);
    }
}

static void hp_init(void)
{
    pthread_key_create(&hp_key, hp_thread_exit);
}

/* This thread's slot, claimed on first use; -1 when all are taken. */
static int hp_mine(void)
{
    if (hp_slot >= 0)
        return hp_slot;
    pthread_once(&hp_once, hp_init);
    for (int i = 0; i < HP_SLOTS; i++) {
        _Bool expect = 0;
        if (atomic_compare_exchange_strong(&hp_taken[i], &expect, 1)) {
            hp_slot = i;
            pthread_setspecific(hp_key, (void *)(intptr_t)(i + 1));
            return i;
        }
    }
    return -1;
}

struct snapshot *skills_acquire(struct skills *S)
{
    struct snapshot *s;
    int slot = hp_mine();
    if (slot < 0) {
        /* More threads than slots: the rescanner holds this mutex while it
         * reclaims, so a reference taken under it is safe. */
        pthread_mutex_lock(&hp_fallback);
        s = atomic_load(&S->cur);
        atomic_fetch_add(&s->refs, 1);
        pthread_mutex_unlock(&hp_fallback);
        return s;
    }
    for (;;) {
        s = atomic_load(&S->cur);
        atomic_store(&hp[slot], s);
        if (atomic_load(&S->cur) == s)
            break;
    }
    atomic_fetch_add(&s->refs, 1);
    atomic_store(&hp[slot], NULL);
    return s;
}

void skills_release(struct snapshot *s)
{
    if (s)
        atomic_fetch_sub(&s->refs, 1);
}

static int hp_protects(const struct snapshot *s)
{
    for (int i = 0; i < HP_SLOTS; i++)
        if (atomic_load(&hp[i]) == s)
            return 1;
    return 0;
}

/* ---- entries ------------------------------------------------------------- */

static void skill_body_free_(struct skill_body *b)
{
    if (!b)
        return;
    free(b->text);
    free(b->sec);
    free(atomic_load(&b->rendered[0]));
    free(atomic_load(&b->rendered[1]));
    if (b->sec_rendered)
        for (size_t i = 0; i < 2 * b->nsec; i++)
            free(atomic_load(&b->sec_rendered[i]));
    free(b->sec_rendered);
    free(b);
}

void skills_body_free(struct skill_body *b)
{
    skill_body_free_(b);
}

/* k->xterms once an index published in S->cur holds them: each later build
 * takes them from the index it replaces (search_new_carry), so the list is
 * freed. Never dereferenced; any non-NULL value means "read". */
static char xterms_merged_mark;
#define XTERMS_MERGED ((struct search_terms *)(void *)&xterms_merged_mark)

static void skill_unref(struct skill *k)
{
    if (!k || atomic_fetch_sub(&k->refs, 1) != 1)
        return;
    json_decref(k->execution);
    json_decref(k->warnings);
    search_terms_free(k->terms);
    struct search_terms *xt = atomic_load(&k->xterms);
    if (xt != XTERMS_MERGED)
        search_terms_free(xt);
    for (size_t i = 0; i < SKILL_CARD_TIERS; i++)
        free(atomic_load(&k->card[i]));
    free(k->hook_pre);
    free(k->hook_post);
    for (size_t i = 0; i < k->nfiles; i++)
        free(k->files[i].path);
    free(k->files);
    for (size_t i = 0; i < k->ndirs; i++)
        free(k->dir_paths[i]);
    free(k->dir_paths);
    free(k->dir_keys);
    skill_body_free_(atomic_load(&k->body));
    free(k);
}

static void snapshot_free(struct skills *S, struct snapshot *s)
{
    if (!s)
        return;
    if (s->ext && S->ext_free)
        S->ext_free(s->ext);
    if (s->gate) {
        for (size_t i = 0; i < s->n; i++) {
            free(s->gate[i].reason);
            skill_unref(s->gate[i].serve);
        }
        free(s->gate);
    }
    if (s->gate_ref && S->gate_release)
        S->gate_release(s->gate_ref);
    for (size_t i = 0; i < s->n; i++)
        skill_unref(s->v[i]);
    free(s->v);
    free(s->by_qname);
    free(s->by_name);
    free(s->shared);
    search_free(s->search);
    json_decref(s->errors);
    free(s->hook_pre);
    free(s->hook_post);
    for (size_t i = 0; i < s->nw; i++)
        if (s->w[i].owned)
            free(s->w[i].path);
    free(s->w);
    free(s);
}

/* ---- stat keys ----------------------------------------------------------- */

static void key_of(const struct stat *st, struct fkey *k)
{
    k->dev = st->st_dev;
    k->ino = st->st_ino;
    k->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    k->size = S_ISDIR(st->st_mode) ? 0 : (int64_t)st->st_size;
}

static int key_eq(const struct fkey *a, const struct fkey *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns &&
           a->size == b->size;
}

/* ---- building ------------------------------------------------------------ */

struct build {
    struct skills *S;
    struct snapshot *old;
    struct skill **v;
    size_t n, cap;
    struct watch *w;
    size_t nw, wcap;
    json_t *errors;
    uint32_t *seen;         /* open-addressing set of v[] indexes + 1, by qname */
    size_t seen_cap;        /* power of two, at least twice n */
    struct cand *c;         /* skill folders found by the scan, in order */
    size_t nc, ccap;
};

static uint32_t hash_str(const char *s, size_t n);

static void report(struct build *b, const char *level, const char *skill, const char *path,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(struct build *b, const char *level, const char *skill, const char *path,
                   const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(b->errors, json_pack("{s:s?, s:s, s:s, s:s}", "skill", skill,
                                               "path", path, "message", msg, "level", level));
    /* Logged when found; a reused entry's warnings are carried, not re-logged. */
    log_msg(strcmp(level, "error") ? LOG_WARN : LOG_ERROR, "skill %s: %s (%s)",
            skill ? skill : "-", msg, path);
}

/* !owned: path lives in an entry the snapshot holds (most watches are a
 * skill's SKILL.md and folders: no second copy of ~13,000 paths at 5,000
 * skills). */
static void watch_put(struct build *b, char *path, const struct stat *st, int owned)
{
    if (b->nw == b->wcap) {
        b->wcap = b->wcap ? b->wcap * 2 : 64;
        b->w = xrealloc(b->w, b->wcap * sizeof *b->w);
    }
    struct watch *w = &b->w[b->nw++];
    w->path = path;
    w->owned = (unsigned char)owned;
    w->missing = st == NULL;
    if (st)
        key_of(st, &w->key);
    else
        memset(&w->key, 0, sizeof w->key);
}

static void watch_add(struct build *b, const char *path, const struct stat *st)
{
    watch_put(b, xstrdup(path), st, 1);
}

/* Names that are never part of a skill: VCS folders, caches, dotfiles. */
int skills_ignored_name(const char *n)
{
    return n[0] == '.' || !strcmp(n, "__pycache__") || !strcmp(n, "node_modules");
}

struct dent {
    char *name;
    unsigned char type;     /* DT_*, DT_UNKNOWN when the filesystem does not say */
};

static int dent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

/*
 * The entries of the open directory fd, sorted by name, ignored names left
 * out. getdents64 directly rather than opendir: no fstat, no 32 KiB DIR
 * buffer per folder. A build lists every folder of the library, and on
 * these machines system calls are most of its time.
 */
static struct dent *list_fd(int fd, size_t *count)
{
    char buf[8192] __attribute__((aligned(8)));
    struct dent *v = NULL;
    size_t n = 0, cap = 0;
    ssize_t r;
    while ((r = getdents64(fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < r;) {
            const struct dirent64 *d = (const struct dirent64 *)(void *)(buf + off);
            off += d->d_reclen;
            if (skills_ignored_name(d->d_name))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                v = xrealloc(v, cap * sizeof *v);
            }
            v[n].name = xstrdup(d->d_name);
            v[n].type = d->d_type;
            n++;
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, dent_cmp);
    *count = n;
    return v;
}

static void dents_free(struct dent *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

char **skills_list_dir(const char *path, size_t *count)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t n;
    *count = 0;
    if (fd < 0)
        return NULL;
    struct dent *d = list_fd(fd, &n);
    close(fd);
    char **v = n ? xmalloc(n * sizeof *v) : NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = d[i].name;
    free(d);
    *count = n;
    return v;
}

void skills_free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

const char *skills_name_problem(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 64)
        return "must be 1-64 characters";
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '-'))
            return "may use only lowercase letters, digits and '-'";
    if (n[0] == '-' || n[len - 1] == '-')
        return "must not start or end with '-'";
    if (strstr(n, "--"))
        return "must not contain '--'";
    return NULL;
}

struct walk {
    struct skill_file *files;
    size_t nfiles, fcap;
    char **dirs;
    struct fkey *dkeys;
    size_t ndirs, dcap;
    size_t entries;
    int truncated;
    int escaped;            /* a symlink left the skill */
    char first_escape[256];
};

static void walk_add_dir(struct walk *w, const char *path, const struct stat *st)
{
    if (w->ndirs == w->dcap) {
        w->dcap = w->dcap ? w->dcap * 2 : 8;
        w->dirs = xrealloc(w->dirs, w->dcap * sizeof *w->dirs);
        w->dkeys = xrealloc(w->dkeys, w->dcap * sizeof *w->dkeys);
    }
    w->dirs[w->ndirs] = xstrdup(path);
    key_of(st, &w->dkeys[w->ndirs]);
    w->ndirs++;
}

/* Is real (a resolved path) inside dir (resolved, no trailing slash)? */
static int path_within(const char *real, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(real, dir, n) && (real[n] == '/' || real[n] == '\0');
}

/* Walks the open folder dfd (abs names it; rel is its path in the skill).
 * Entries are stat'ed relative to dfd: a one-component lookup. */
static void walk_dir(struct walk *w, const char *skilldir, int dfd, const char *abs,
                     const char *rel, int depth)
{
    size_t n;
    struct dent *names = list_fd(dfd, &n);
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i].name;
        char childabs[PATH_MAX], childrel[PATH_MAX];
        struct stat lst, st;
        if (++w->entries > WALK_MAX_ENTRIES) {
            w->truncated = 1;
            break;
        }
        if (!*rel && !strcmp(nm, "SKILL.md"))
            continue;
        if ((size_t)snprintf(childrel, sizeof childrel, "%s%s%s", rel, *rel ? "/" : "", nm) >=
            sizeof childrel)
            continue;
        if (fstatat(dfd, nm, &lst, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        int regular = S_ISREG(lst.st_mode);
        /* Folders and links need the absolute path (kept as a watch, or
         * resolved); a plain file needs only its relative one. */
        if (!regular && (size_t)snprintf(childabs, sizeof childabs, "%s/%s", abs, nm) >=
                            sizeof childabs)
            continue;
        if (S_ISLNK(lst.st_mode)) {
            char real[PATH_MAX];
            if (!realpath(childabs, real) || !path_within(real, skilldir)) {
                if (!w->escaped)
                    snprintf(w->first_escape, sizeof w->first_escape, "%s", childrel);
                w->escaped++;
                continue;
            }
        }
        if (!S_ISLNK(lst.st_mode))
            st = lst;           /* no link: lstat already said everything */
        else if (stat(childabs, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (S_ISLNK(lst.st_mode))
                continue;   /* an inner link to a folder would list files twice */
            if (depth + 1 >= WALK_MAX_DEPTH) {
                w->truncated = 1;
                continue;
            }
            int cfd = openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0)
                continue;
            walk_add_dir(w, childabs, &st);
            walk_dir(w, skilldir, cfd, childabs, childrel, depth + 1);
            close(cfd);
        } else if (S_ISREG(st.st_mode)) {
            if (w->nfiles == w->fcap) {
                w->fcap = w->fcap ? w->fcap * 2 : 16;
                w->files = xrealloc(w->files, w->fcap * sizeof *w->files);
            }
            w->files[w->nfiles].path = xstrdup(childrel);
            w->files[w->nfiles].size = (int64_t)st.st_size;
            w->nfiles++;
        }
    }
    dents_free(names, n);
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct skill_file *)a)->path, ((const struct skill_file *)b)->path);
}

/* Reads up to max bytes of fd from offset 0, stopping early once it has the
 * size that stat reported (one read for a small file, not two). */
static ssize_t read_prefix(int fd, char *buf, size_t max, off_t size)
{
    size_t got = 0;
    while (got < max && (size <= 0 || got < (size_t)size)) {
        ssize_t r = pread(fd, buf + got, max - got, (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/*
 * Parses the frontmatter of SKILL.md at path (whose stat is st). Returns 0
 * and fills *f, or -1 with *err set.
 */
static int parse_skill_md(int dfd, const char *path, const struct stat *st, struct fm *f,
                          struct err *err)
{
    int fd, rc = -1;
    char *buf = NULL;
    if (st->st_size > (off_t)SKILL_MD_MAX) {
        err_set(err, 0, 0, "SKILL.md is %lld bytes, over the 4 MiB limit",
                (long long)st->st_size);
        return -1;
    }
    struct stat now;
    fd = x_open_regular(dfd, path, &now);
    if (fd < 0) {
        err_set(err, 0, 0, "cannot open SKILL.md: %s",
                fd == -EINVAL ? "not a regular file" : strerror(-fd));
        return -1;
    }
    size_t want = FM_FIRST_READ;
    for (;;) {
        buf = xrealloc(buf, want);
        ssize_t got = read_prefix(fd, buf, want, st->st_size);
        if (got < 0) {
            err_set(err, 0, 0, "cannot read SKILL.md: %s", strerror(errno));
            break;
        }
        int complete = (size_t)got < want;
        if (got == 0) {
            err_set(err, 0, 0, "SKILL.md is empty");
            break;
        }
        rc = fm_parse(buf, (size_t)got, complete, f, err);
        if (rc == -EAGAIN) {
            if (want >= FM_MAX_READ) {
                err_set(err, 0, 0,
                        "frontmatter is not closed within the first 256 KiB of SKILL.md");
                rc = -1;
                break;
            }
            want = FM_MAX_READ;
            continue;
        }
        rc = rc == 0 ? 0 : -1;
        break;
    }
    free(buf);
    close(fd);
    return rc;
}

/* Tags from a YAML list of scalars or a comma/space separated string, into
 * *out (each xstrdup'ed; free with skills_free_names). */
static size_t take_tags(json_t *t, char ***out)
{
    size_t cap = 0, n = 0;
    char **v = NULL;
    if (json_is_array(t)) {
        size_t i;
        json_t *x;
        json_array_foreach(t, i, x) {
            char num[64];
            const char *s = json_is_string(x) ? json_string_value(x) : NULL;
            if (!s && json_is_number(x)) {
                snprintf(num, sizeof num, "%g", json_number_value(x));
                s = num;
            }
            if (!s || !*s)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 4;
                v = xrealloc(v, cap * sizeof *v);
            }
            v[n++] = xstrdup(s);
        }
    } else if (json_is_string(t)) {
        const char *s = json_string_value(t);
        while (*s) {
            size_t skip = strspn(s, ", \t");
            s += skip;
            size_t len = strcspn(s, ", \t");
            if (!len)
                break;
            if (n == cap) {
                cap = cap ? cap * 2 : 4;
                v = xrealloc(v, cap * sizeof *v);
            }
            v[n++] = xstrndup(s, len);
            s += len;
        }
    }
    *out = v;
    return n;
}

/* A string copied into an entry's block at *at (NULL stays NULL). */
static char *pack_str(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *r = memcpy(*at, s, n);
    *at += n;
    return r;
}

static size_t pack_len(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/*
 * A new entry with every string in one block after the struct: names and
 * paths, and when fields (the parsed frontmatter, which must have a
 * non-empty string 'description') is given, what is kept of it. fields is
 * left as it was, but for its 'description', which may be emptied.
 */
static struct skill *entry_new(const char *name, const char *qname, const char *team,
                               const char *real, const char *md, json_t *fields)
{
    const char *desc = NULL, *version = NULL, *fm_name = NULL, *title = NULL;
    char *rest = NULL, **tags = NULL;
    size_t ntags = 0;
    json_t *dj = NULL;
    if (fields) {
        dj = json_incref(json_object_get(fields, "description"));
        desc = json_string_value(dj);
        json_t *x = json_object_get(fields, "version");
        version = json_is_string(x) ? json_string_value(x) : NULL;
        x = json_object_get(fields, "name");
        fm_name = json_is_string(x) ? json_string_value(x) : NULL;
        x = json_object_get(fields, "title");
        title = json_is_string(x) ? json_string_value(x) : NULL;
        ntags = take_tags(json_object_get(fields, "tags"), &tags);
        /* The description is kept once, as a field (the parser refuses NUL
         * in values, so the C string is all of it). */
        json_object_set_new(fields, "description", json_string(""));
        rest = json_dumps(fields, JSON_COMPACT);
    }
    size_t len = ntags * sizeof(char *) + pack_len(name) + pack_len(qname) +
                 pack_len(team) + pack_len(real) + pack_len(md) + pack_len(desc) +
                 pack_len(version) + pack_len(fm_name) + pack_len(title) + pack_len(rest);
    for (size_t i = 0; i < ntags; i++)
        len += pack_len(tags[i]);
    /* sizeof *k keeps the pointer array that opens the block aligned */
    struct skill *k = xcalloc(1, sizeof *k + len);
    char *at = (char *)(k + 1) + ntags * sizeof(char *);
    atomic_init(&k->refs, 1);
    if (ntags) {
        k->tags = (char **)(void *)(k + 1);
        for (size_t i = 0; i < ntags; i++)
            k->tags[i] = pack_str(&at, tags[i]);
        k->ntags = ntags;
    }
    k->name = pack_str(&at, name);
    k->qname = pack_str(&at, qname);
    k->team = pack_str(&at, team);
    k->dir = pack_str(&at, real);
    k->md_path = pack_str(&at, md);
    k->description = pack_str(&at, desc);
    k->version = pack_str(&at, version);
    k->fm_name = pack_str(&at, fm_name);
    k->title = pack_str(&at, title);
    k->fm_rest = pack_str(&at, rest);
    if (fields)
        k->execution = json_incref(json_object_get(fields, "execution"));
    skills_free_names(tags, ntags);
    free(rest);
    json_decref(dj);
    return k;
}

json_t *skills_frontmatter(const struct skill *k)
{
    json_t *o = k->fm_rest ? json_loads(k->fm_rest, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    /* Set in place: the key keeps its position. */
    json_t *d = json_object_get(o, "description");
    if (k->description && (!json_is_string(d) || !json_string_length(d)))
        json_object_set_new(o, "description", json_string(k->description));
    return o;
}

static struct skill *find_in(const struct snapshot *s, const char *qname)
{
    if (!s)
        return NULL;
    int amb;
    struct skill *k = skills_find(s, qname, strlen(qname), &amb);
    return k && !strcmp(k->qname, qname) ? k : NULL;
}

/* Could the old entry serve unchanged? Its SKILL.md and folders all match. */
static int entry_unchanged(const struct skill *k, const struct stat *md)
{
    struct fkey now;
    struct stat st;
    key_of(md, &now);
    if (!key_eq(&now, &k->md_key))
        return 0;
    for (size_t i = 0; i < k->ndirs; i++) {
        if (stat(k->dir_paths[i], &st) < 0)
            return 0;
        key_of(&st, &now);
        if (!key_eq(&now, &k->dir_keys[i]))
            return 0;
    }
    return 1;
}

static void seen_put(struct build *b, size_t idx)
{
    const char *q = b->v[idx]->qname;
    size_t mask = b->seen_cap - 1, i = hash_str(q, strlen(q)) & mask;
    while (b->seen[i])
        i = (i + 1) & mask;
    b->seen[i] = (uint32_t)idx + 1;
}

/* Every entry goes into the qname set, so a shadowed duplicate is found in
 * O(1) rather than by a scan (quadratic at library scale). */
static void push_skill(struct build *b, struct skill *k)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->v = xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n++] = k;
    if (b->n * 2 > b->seen_cap) {
        free(b->seen);
        b->seen_cap = b->seen_cap ? b->seen_cap * 2 : 256;
        while (b->seen_cap < b->n * 2)
            b->seen_cap *= 2;
        b->seen = xcalloc(b->seen_cap, sizeof *b->seen);
        for (size_t i = 0; i < b->n; i++)
            seen_put(b, i);
    } else {
        seen_put(b, b->n - 1);
    }
}

static int have_qname(const struct build *b, const char *qname)
{
    if (!b->seen_cap)
        return 0;
    size_t mask = b->seen_cap - 1, i = hash_str(qname, strlen(qname)) & mask;
    for (; b->seen[i]; i = (i + 1) & mask)
        if (!strcmp(b->v[b->seen[i] - 1]->qname, qname))
            return 1;
    return 0;
}

static void add_watches_of(struct build *b, const struct skill *k, const struct stat *md)
{
    watch_put(b, k->md_path, md, 0);
    for (size_t i = 0; i < k->ndirs; i++) {
        if (b->nw == b->wcap) {
            b->wcap = b->wcap ? b->wcap * 2 : 64;
            b->w = xrealloc(b->w, b->wcap * sizeof *b->w);
        }
        struct watch *w = &b->w[b->nw++];
        w->path = k->dir_paths[i];
        w->owned = 0;
        w->key = k->dir_keys[i];
        w->missing = 0;
    }
    if (!b->S->gate)
        return;
    /* A lock judges file contents: an edit in place must lead to a rebuild. */
    for (size_t i = 0; i < k->nfiles; i++) {
        char abs[PATH_MAX];
        struct stat st;
        snprintf(abs, sizeof abs, "%s/%s", k->dir, k->files[i].path);
        watch_add(b, abs, stat(abs, &st) == 0 ? &st : NULL);
    }
}

/* "hooks/pre.py" is a pre hook; one per kind (the first in name order). */
static int hook_kind(const char *file, const char *kind)
{
    size_t n = strlen(kind);
    return !strncmp(file, kind, n) && file[n] == '.' && file[n + 1] && !strchr(file + n + 1, '/');
}

static void find_skill_hooks(struct build *b, struct skill *k)
{
    for (size_t i = 0; i < k->nfiles; i++) {
        const char *p = k->files[i].path;
        if (strncmp(p, "hooks/", 6))
            continue;
        char abs[PATH_MAX];
        snprintf(abs, sizeof abs, "%s/%s", k->dir, p);
        for (int kind = 0; kind < 2; kind++) {
            char **slot = kind ? &k->hook_post : &k->hook_pre;
            if (!hook_kind(p + 6, kind ? "post" : "pre"))
                continue;
            if (*slot)
                report(b, "warning", k->qname, abs,
                       "more than one %s hook; only %s runs", kind ? "post" : "pre", *slot);
            else
                *slot = xstrdup(abs);
        }
    }
}

/*
 * A build is three passes. The scan (serial, cheap: readdir and stat) lists
 * candidate skill folders in order. Preparing a candidate (stat checks for
 * reuse, walking its folder, parsing its frontmatter) is where a build's
 * time goes and touches nothing shared, so it runs on several threads.
 * Applying the results is serial again and in scan order, so shadowing,
 * reports and the resulting snapshot do not depend on thread timing.
 */
struct cand {
    unsigned root;
    char *team;             /* NULL for top-level skills */
    char *name;
    char *qname;
    char *dir;              /* as found under the root */
    char *real;             /* canonical path when known without realpath */
    struct stat mdst;
    struct stat dirst;      /* of the folder itself, when real is known */
    int pending;            /* a root's plain folder: prepare stats it and its SKILL.md */
    int kind;               /* set by prepare when pending: CAND_SKILL, _TEAM or _NONE */
    struct cand *kids;      /* a team: its skill folders, prepared with it */
    size_t nkids;
    /* set by prepare */
    struct skill *old;      /* the previous entry of that qualified name */
    int reuse;              /* old serves unchanged */
    int real_errno;         /* realpath failed: no k */
    struct skill *k;        /* the new entry, when not reused */
    const char *problem;    /* why k cannot serve (into err.msg, or static) */
    struct err err;
    int truncated, escaped;
    char first_escape[256];
};

enum { CAND_SKILL, CAND_TEAM, CAND_NONE };

static void cand_init(struct cand *c, unsigned root, const char *team, const char *name,
                      const char *dir, const char *real, const struct stat *dirst,
                      const struct stat *mdst);
static int child_dir(int dfd, const struct dent *d, struct stat *st, int *link);
static int has_skill_md(int dfd, const char *name, struct stat *mst);
static void prepare(const struct snapshot *old, struct cand *c);

/* A team folder: its skill folders (one level down) become its kids,
 * prepared here, on the thread that found the team. */
static void prepare_team(const struct snapshot *old, struct cand *c)
{
    int tfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0)
        return;
    size_t n;
    struct dent *names = list_fd(tfd, &n);
    c->kids = xcalloc(n ? n : 1, sizeof *c->kids);
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX], real[PATH_MAX];
        struct stat st, mst;
        int link;
        if (!child_dir(tfd, &names[i], &st, &link))
            continue;
        snprintf(dir, sizeof dir, "%s/%s", c->dir, names[i].name);
        /* No symlink on the way: the canonical path is known without realpath. */
        if (c->real && !link)
            snprintf(real, sizeof real, "%s/%s", c->real, names[i].name);
        /* A folder without SKILL.md at this depth is not a skill: folders
         * nest one level only (team/skill). */
        if (has_skill_md(tfd, names[i].name, &mst))
            cand_init(&c->kids[c->nkids++], c->root, c->name, names[i].name, dir,
                      c->real && !link ? real : NULL, &st, &mst);
    }
    dents_free(names, n);
    close(tfd);
    for (size_t i = 0; i < c->nkids; i++)
        prepare(old, &c->kids[i]);
}

static void prepare(const struct snapshot *old, struct cand *c)
{
    char real[PATH_MAX], md[PATH_MAX + 16];
    struct fm f = {0};

    if (c->pending) {
        /* The scan only listed this folder; whether it is a skill (it holds
         * a SKILL.md) or a team folder is found here, off the serial path. */
        snprintf(md, sizeof md, "%s/SKILL.md", c->dir);
        if (stat(c->dir, &c->dirst) < 0 || !S_ISDIR(c->dirst.st_mode)) {
            c->kind = CAND_NONE;
            return;
        }
        if (stat(md, &c->mdst) < 0 || !S_ISREG(c->mdst.st_mode)) {
            c->kind = CAND_TEAM;
            prepare_team(old, c);
            return;
        }
    }
    c->old = find_in(old, c->qname);
    if (c->old && c->old->root == c->root && entry_unchanged(c->old, &c->mdst)) {
        c->reuse = 1;
        return;
    }
    if (c->real)
        snprintf(real, sizeof real, "%s", c->real);
    else if (!realpath(c->dir, real)) {
        c->real_errno = errno ? errno : ENOENT;
        return;
    }

    struct walk w = {0};
    struct stat dst;
    int dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->real)
        dst = c->dirst;     /* the scan's stat of this very folder (no link on the way) */
    if (dfd >= 0 && (c->real || fstat(dfd, &dst) == 0)) {
        walk_add_dir(&w, real, &dst);
        walk_dir(&w, real, dfd, real, "", 0);
    }
    c->truncated = w.truncated;
    c->escaped = w.escaped;
    memcpy(c->first_escape, w.first_escape, sizeof c->first_escape);

    snprintf(md, sizeof md, "%s/SKILL.md", real);
    int rc = parse_skill_md(dfd >= 0 ? dfd : AT_FDCWD, dfd >= 0 ? "SKILL.md" : md, &c->mdst,
                            &f, &c->err);
    if (dfd >= 0)
        close(dfd);
    json_t *desc = rc < 0 ? NULL : json_object_get(f.fields, "description");
    if (rc < 0)
        c->problem = c->err.msg;
    else if (!json_is_string(desc) || !*json_string_value(desc))
        c->problem = "frontmatter has no 'description' (a non-empty string is required)";
    struct skill *k = entry_new(c->name, c->qname, c->team, real, md,
                                c->problem ? NULL : f.fields);
    json_decref(f.fields);
    k->root = c->root;
    key_of(&c->mdst, &k->md_key);
    k->files = w.files;
    k->nfiles = w.nfiles;
    if (k->nfiles)
        qsort(k->files, k->nfiles, sizeof *k->files, file_cmp);
    k->dir_paths = w.dirs;
    k->dir_keys = w.dkeys;
    k->ndirs = w.ndirs;
    c->k = k;
    if (c->problem)
        return;
    k->body_off = f.body_off;
    k->terms = search_terms_new(&(struct search_doc){
        .name = k->qname, .description = k->description,
        .tags = (const char *const *)k->tags, .ntags = k->ntags});
}

static void cand_free(struct cand *c)
{
    for (size_t i = 0; i < c->nkids; i++)
        cand_free(&c->kids[i]);
    free(c->kids);
    skill_unref(c->k);
    free(c->team);
    free(c->name);
    free(c->qname);
    free(c->dir);
    free(c->real);
}

/* The candidate's outcome: reuse, serve the new entry, or report why not. */
static void apply(struct build *b, struct cand *c)
{
    char md[PATH_MAX + 16];
    struct skill *k = c->k;

    snprintf(md, sizeof md, "%s/SKILL.md", c->dir);
    if (have_qname(b, c->qname)) {
        report(b, "warning", c->qname, md,
               "shadowed: a skill with the same qualified name in an earlier --skills root "
               "wins");
        return;
    }
    if (c->reuse) {
        struct skill *old = c->old;
        atomic_fetch_add(&old->refs, 1);
        push_skill(b, old);
        add_watches_of(b, old, &c->mdst);
        size_t i;
        json_t *w;
        json_array_foreach(old->warnings, i, w)
            json_array_append_new(b->errors, json_deep_copy(w));
        return;
    }
    if (!k) {
        report(b, "error", c->qname, md, "cannot resolve the skill folder: %s",
               strerror(c->real_errno));
        return;
    }
    snprintf(md, sizeof md, "%s", k->md_path);
    if (c->problem) {
        char where[32] = "";
        if (c->err.line && c->problem == c->err.msg)
            snprintf(where, sizeof where, " (line %d)", c->err.line);
        if (c->old) {
            report(b, "error", c->qname, md, "%s%s; serving the previous version", c->problem,
                   where);
            atomic_fetch_add(&c->old->refs, 1);
            push_skill(b, c->old);
        } else {
            report(b, "error", c->qname, md, "%s%s; skill not served", c->problem, where);
        }
        /* Watch what is on disk now, so a broken file does not rebuild every tick. */
        watch_add(b, md, &c->mdst);
        for (size_t i = 0; i < k->ndirs; i++) {
            struct stat st;
            if (stat(k->dir_paths[i], &st) == 0)
                watch_add(b, k->dir_paths[i], &st);
        }
        return;
    }

    const char *name = c->name;
    size_t mark = json_array_size(b->errors);
    if (!k->fm_name)
        report(b, "warning", c->qname, md,
               "frontmatter has no 'name'; the folder name '%s' is used", name);
    else if (strcmp(k->fm_name, name))
        report(b, "warning", c->qname, md,
               "frontmatter name '%s' differs from the folder name '%s'; the skill is served "
               "as '%s'",
               k->fm_name, name, c->qname);
    if (skills_name_problem(name))
        report(b, "warning", c->qname, md, "skill name '%s' %s", name, skills_name_problem(name));
    if (strlen(k->description) > 1024)
        report(b, "warning", c->qname, md, "description is over 1024 characters");
    if (c->truncated)
        report(b, "warning", c->qname, k->dir,
               "more than %d entries or deeper than %d folders; the file list is cut",
               WALK_MAX_ENTRIES, WALK_MAX_DEPTH);
    if (c->escaped)
        report(b, "warning", c->qname, k->dir,
               "%d symlink(s) point outside the skill (first: %s); they are not served",
               c->escaped, c->first_escape);
    find_skill_hooks(b, k);
    /* Most entries have nothing to say: no array for them (a jansson array
     * is two blocks, ~130 bytes a skill). */
    if (json_array_size(b->errors) > mark)
        k->warnings = json_array();
    for (size_t i = mark; i < json_array_size(b->errors); i++)
        json_array_append_new(k->warnings, json_deep_copy(json_array_get(b->errors, i)));
    push_skill(b, k);
    c->k = NULL;            /* the snapshot owns it now */
    add_watches_of(b, k, &c->mdst);
}

static void cand_init(struct cand *c, unsigned root, const char *team, const char *name,
                      const char *dir, const char *real, const struct stat *dirst,
                      const struct stat *mdst)
{
    char qname[PATH_MAX];
    memset(c, 0, sizeof *c);
    snprintf(qname, sizeof qname, "%s%s%s", team ? team : "", team ? "/" : "", name);
    c->root = root;
    c->team = team ? xstrdup(team) : NULL;
    c->name = xstrdup(name);
    c->qname = xstrdup(qname);
    c->dir = xstrdup(dir);
    c->real = real ? xstrdup(real) : NULL;
    if (mdst)
        c->mdst = *mdst;
    if (dirst)
        c->dirst = *dirst;
}

static struct cand *cand_add(struct build *b, unsigned root, const char *team,
                             const char *name, const char *dir, const char *real,
                             const struct stat *dirst, const struct stat *mdst)
{
    if (b->nc == b->ccap) {
        b->ccap = b->ccap ? b->ccap * 2 : 64;
        b->c = xrealloc(b->c, b->ccap * sizeof *b->c);
    }
    struct cand *c = &b->c[b->nc++];
    cand_init(c, root, team, name, dir, real, dirst, mdst);
    return c;
}

struct prep_pool {
    struct cand *c;
    size_t n;
    const struct snapshot *old;
    atomic_size_t next;
};

#define PREP_CHUNK 16

static void *prep_worker(void *arg)
{
    struct prep_pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, PREP_CHUNK);
        if (i >= p->n)
            return NULL;
        size_t end = i + PREP_CHUNK < p->n ? i + PREP_CHUNK : p->n;
        for (; i < end; i++)
            prepare(p->old, &p->c[i]);
    }
}

/* Threads for preparing: the CPUs this process may use, at most 4 (past
 * that the build is bound by the filesystem and by the serial passes), and
 * none for a small library where starting threads costs more than it saves. */
static size_t prep_threads(size_t n)
{
    cpu_set_t set;
    size_t cpus = 1;
    if (n < 256)
        return 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = (size_t)CPU_COUNT(&set);
    return cpus < 1 ? 1 : cpus > 4 ? 4 : cpus;
}

static void prepare_all(struct build *b, size_t lo, size_t hi)
{
    if (hi <= lo)
        return;
    struct prep_pool p = {.c = b->c + lo, .n = hi - lo, .old = b->old};
    pthread_t t[3];
    size_t want = prep_threads(hi - lo), started = 0;
    atomic_init(&p.next, 0);
    while (started + 1 < want && pthread_create(&t[started], NULL, prep_worker, &p) == 0)
        started++;
    prep_worker(&p);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

/* The global hooks folder: watched like a skill folder, so hooks change on reload. */
static void scan_hooks_dir(struct build *b, struct snapshot *s, const char *dir)
{
    struct stat st;
    size_t n;
    char real[PATH_MAX];
    if (!dir)
        return;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(dir, real)) {
        report(b, "error", NULL, dir, "--hooks-dir is not a readable directory; no global hooks");
        watch_add(b, dir, NULL);
        return;
    }
    watch_add(b, dir, &st);
    char **names = skills_list_dir(real, &n);
    for (size_t i = 0; i < n; i++) {
        char abs[PATH_MAX];
        struct stat fst;
        snprintf(abs, sizeof abs, "%s/%s", real, names[i]);
        if (stat(abs, &fst) < 0 || !S_ISREG(fst.st_mode))
            continue;
        for (int kind = 0; kind < 2; kind++) {
            char **slot = kind ? &s->hook_post : &s->hook_pre;
            if (!hook_kind(names[i], kind ? "post" : "pre"))
                continue;
            watch_add(b, abs, &fst);
            if (*slot)
                report(b, "warning", NULL, abs, "more than one global %s hook; only %s runs",
                       kind ? "post" : "pre", *slot);
            else
                *slot = xstrdup(abs);
        }
    }
    skills_free_names(names, n);
}

/* Is name (in the folder dfd) a folder, following a link? Fills *st. */
static int child_dir(int dfd, const struct dent *d, struct stat *st, int *link)
{
    if (fstatat(dfd, d->name, st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    *link = S_ISLNK(st->st_mode);
    if (*link && fstatat(dfd, d->name, st, 0) < 0)
        return 0;
    return S_ISDIR(st->st_mode);
}

/* Does the folder name (in dfd) hold a SKILL.md file? Fills *mst. */
static int has_skill_md(int dfd, const char *name, struct stat *mst)
{
    char md[PATH_MAX];
    if ((size_t)snprintf(md, sizeof md, "%s/SKILL.md", name) >= sizeof md)
        return 0;
    return fstatat(dfd, md, mst, 0) == 0 && S_ISREG(mst->st_mode);
}

static void scan_root(struct build *b, unsigned root, const char *rootpath)
{
    struct stat rst;
    size_t n;
    int rfd = open(rootpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0 || fstat(rfd, &rst) < 0) {
        report(b, "error", NULL, rootpath, "skills root is not a readable directory");
        watch_add(b, rootpath, NULL);
        if (rfd >= 0)
            close(rfd);
        return;
    }
    watch_add(b, rootpath, &rst);
    char rootreal[PATH_MAX];
    int have_real = realpath(rootpath, rootreal) != NULL;
    struct dent *names = list_fd(rfd, &n);
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX], real[PATH_MAX];
        struct stat st, mst;
        int link;
        snprintf(dir, sizeof dir, "%s/%s", rootpath, names[i].name);
        if (names[i].type == DT_DIR && have_real) {
            /* A plain folder: prepare finds whether it is a skill or a team. */
            snprintf(real, sizeof real, "%s/%s", rootreal, names[i].name);
            struct cand *c = cand_add(b, root, NULL, names[i].name, dir, real, NULL, NULL);
            c->pending = 1;
            continue;
        }
        if (names[i].type != DT_DIR && names[i].type != DT_LNK && names[i].type != DT_UNKNOWN)
            continue;
        if (!child_dir(rfd, &names[i], &st, &link))
            continue;
        if (link && !(b->old))
            log_info("skills: %s is a symlinked folder; following it", dir);
        if (have_real && !link)
            snprintf(real, sizeof real, "%s/%s", rootreal, names[i].name);
        const char *known = have_real && !link ? real : NULL;
        if (has_skill_md(rfd, names[i].name, &mst)) {
            cand_add(b, root, NULL, names[i].name, dir, known, &st, &mst);
        } else {
            struct cand *c = cand_add(b, root, NULL, names[i].name, dir, known, &st, NULL);
            c->pending = 1;     /* no SKILL.md: prepare will call it a team */
        }
    }
    dents_free(names, n);
    close(rfd);
}

/* ---- lookup tables ------------------------------------------------------- */

static uint32_t hash_str(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static void table_put(uint32_t *t, size_t cap, const char *key, uint32_t val)
{
    size_t mask = cap - 1;
    size_t i = hash_str(key, strlen(key)) & mask;
    while (t[i])
        i = (i + 1) & mask;
    t[i] = val;
}

/* Index+1 of the entry whose (bare or qualified) name is key, or 0. */
static uint32_t table_get(const uint32_t *t, size_t cap, const char *key, size_t len,
                          struct skill *const *v, int bare)
{
    size_t mask = cap - 1;
    size_t i = hash_str(key, len) & mask;
    for (size_t probes = 0; probes < cap; probes++) {
        uint32_t x = t[i];
        if (!x)
            return 0;
        const char *other = bare ? v[x - 1]->name : v[x - 1]->qname;
        if (strlen(other) == len && !memcmp(other, key, len))
            return x;
        i = (i + 1) & mask;
    }
    return 0;
}

static int skill_cmp(const void *a, const void *b)
{
    return strcmp((*(struct skill *const *)a)->qname, (*(struct skill *const *)b)->qname);
}

/*
 * by_name holds the first entry of each bare name; shared[i] marks entries
 * whose bare name another entry carries too, so a lookup by that bare name
 * is refused as ambiguous instead of silently picking one team.
 */
static void build_tables(struct snapshot *s)
{
    size_t cap = 16;
    while (cap < s->n * 2 + 2)
        cap *= 2;
    s->tcap = cap;
    s->by_qname = xcalloc(cap, sizeof *s->by_qname);
    s->by_name = xcalloc(cap, sizeof *s->by_name);
    s->shared = xcalloc(s->n ? s->n : 1, 1);
    for (size_t i = 0; i < s->n; i++)
        table_put(s->by_qname, cap, s->v[i]->qname, (uint32_t)i + 1);
    for (size_t i = 0; i < s->n; i++) {
        const char *nm = s->v[i]->name;
        uint32_t x = table_get(s->by_name, cap, nm, strlen(nm), s->v, 1);
        if (x) {
            s->shared[x - 1] = 1;
            s->shared[i] = 1;
        } else {
            table_put(s->by_name, cap, nm, (uint32_t)i + 1);
        }
    }
}

struct skill *skills_find(const struct snapshot *s, const char *name, size_t len,
                          int *ambiguous)
{
    *ambiguous = 0;
    if (!s->n)
        return NULL;
    uint32_t x = table_get(s->by_qname, s->tcap, name, len, s->v, 0);
    if (x)
        return s->v[x - 1];
    if (memchr(name, '/', len))
        return NULL;
    x = table_get(s->by_name, s->tcap, name, len, s->v, 1);
    if (!x)
        return NULL;
    if (s->shared[x - 1]) {
        *ambiguous = 1;
        return NULL;
    }
    return s->v[x - 1];
}

size_t skills_sharing(const struct snapshot *s, const char *name, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n && n < max; i++)
        if (!strcmp(s->v[i]->name, name))
            out[n++] = s->v[i]->qname;
    return n;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

size_t skills_suggest(const struct snapshot *s, const char *name, const char **out, size_t max)
{
    size_t n = 0;
    size_t best[16];
    if (max > 16)
        max = 16;
    for (size_t i = 0; i < s->n; i++) {
        const struct skill *k = s->v[i];
        size_t d = edit_distance(name, k->name);
        size_t dq = edit_distance(name, k->qname);
        if (dq < d)
            d = dq;
        if (strstr(k->qname, name) && strlen(name) >= 3)
            d = d > 1 ? 1 : d;
        size_t limit = strlen(name) / 2 + 1;
        if (d > (limit > 3 ? 3 : limit))
            continue;
        /* insertion into a small sorted list */
        size_t pos = n;
        while (pos > 0 && best[pos - 1] > d)
            pos--;
        if (pos >= max)
            continue;
        if (n < max)
            n++;
        for (size_t j = n - 1; j > pos; j--) {
            best[j] = best[j - 1];
            out[j] = out[j - 1];
        }
        best[pos] = d;
        out[pos] = k->qname;
    }
    return n;
}

/* ---- bodies -------------------------------------------------------------- */

int skills_body(struct skill *k, struct skill_body **out, struct skill_body **tmp,
                const char **why)
{
    struct skill_body *b = atomic_load(&k->body);
    *tmp = NULL;
    if (b) {
        *out = b;
        return 0;
    }
    struct stat st;
    int fd = x_open_regular(AT_FDCWD, k->md_path, &st);
    if (fd < 0) {
        *why = fd == -EINVAL || fd == -EISDIR ? "SKILL.md is not a regular file"
                                              : "SKILL.md cannot be opened";
        return fd;
    }
    if (st.st_size > (off_t)SKILL_MD_MAX) {
        close(fd);
        *why = "SKILL.md is over the 4 MiB limit";
        return -EFBIG;
    }
    size_t len = (size_t)st.st_size;
    char *raw = xmalloc(len + 1);
    ssize_t got = read_prefix(fd, raw, len, st.st_size);
    close(fd);
    if (got < 0) {
        free(raw);
        *why = "SKILL.md cannot be read";
        return -EIO;
    }
    len = (size_t)got;
    raw[len] = '\0';

    struct fkey key;
    key_of(&st, &key);
    size_t off = k->body_off;
    int same = key_eq(&key, &k->md_key);
    if (!same) {
        /* Edited since the snapshot: find the body in what is there now. */
        struct fm f = {0};
        struct err e;
        if (fm_parse(raw, len, 1, &f, &e) == 0) {
            off = f.body_off;
            fm_cleanup(&f);
        } else {
            off = 0;
        }
    }
    if (off > len)
        off = len;
    b = xcalloc(1, sizeof *b);
    b->len = len - off;
    b->text = xmalloc(b->len + 1);
    memcpy(b->text, raw + off, b->len);
    b->text[b->len] = '\0';
    free(raw);
    b->key = key;
    b->nsec = md_sections(b->text, b->len, &b->sec);
    if (b->nsec)
        b->sec_rendered = xcalloc(2 * b->nsec, sizeof *b->sec_rendered);
    if (!same) {
        *tmp = b;
        *out = b;
        return 0;
    }
    struct skill_body *expect = NULL;
    if (!atomic_compare_exchange_strong(&k->body, &expect, b)) {
        skill_body_free_(b);    /* another thread won the race; use its copy */
        b = expect;
    }
    *out = b;
    return 0;
}

/* ---- rescans ------------------------------------------------------------- */

/* Did anything the snapshot watched move? Stats only; allocates nothing. */
static int tree_changed(const struct snapshot *s)
{
    struct stat st;
    struct fkey k;
    for (size_t i = 0; i < s->nw; i++) {
        const struct watch *w = &s->w[i];
        if (stat(w->path, &st) < 0) {
            if (!w->missing)
                return 1;
            continue;
        }
        if (w->missing)
            return 1;
        key_of(&st, &k);
        if (!key_eq(&k, &w->key))
            return 1;
    }
    return 0;
}

/*
 * (Re)creates the inotify watches for the folders snapshot s watches. Files
 * (SKILL.md) are covered by their folder's watch. Falls back to stat passes
 * when inotify is unavailable or its watch limit is reached.
 */
static void watches_setup(struct skills *S, const struct snapshot *s)
{
    S->ino_pending = 0;
    if (S->ino_fd >= 0)
        close(S->ino_fd);
    S->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (S->ino_fd < 0)
        return;
    const uint32_t mask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                          IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    for (size_t i = 0; i < s->nw; i++) {
        const struct watch *w = &s->w[i];
        struct stat st;
        if (w->missing || stat(w->path, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (inotify_add_watch(S->ino_fd, w->path, mask) < 0) {
            log_warn("skills: inotify watch on %s failed (%s); refresh ticks will stat",
                     w->path, strerror(errno));
            close(S->ino_fd);
            S->ino_fd = -1;
            return;
        }
    }
    /* A missing root shows up as a change only through a stat pass. */
    for (size_t i = 0; i < s->nw; i++)
        if (s->w[i].missing)
            S->ino_dirty = 1;
    /* Anything that moved between the snapshot's stats and these watches. */
    if (tree_changed(s))
        S->ino_dirty = 1;
    S->last_full_ns = now_ns();
}

/* Has a watched path that was missing (a deleted skills root, a folder not
 * made yet) appeared? inotify cannot watch what does not exist, so these few
 * are stat'ed on every tick. */
static int missing_appeared(const struct snapshot *s)
{
    struct stat st;
    for (size_t i = 0; i < s->nw; i++)
        if (s->w[i].missing && stat(s->w[i].path, &st) == 0)
            return 1;
    return 0;
}

/* May the tree have moved since s? Events first, stats only when needed. */
static int maybe_changed(struct skills *S, const struct snapshot *s)
{
    if (S->ino_pending) {
        /* Set up on the first tick, not at start-up: it costs a stat pass
         * and one watch per folder, which cold start need not pay. */
        watches_setup(S, s);
    }
    if (S->ino_fd >= 0) {
        char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        int any = 0;
        while (read(S->ino_fd, ev, sizeof ev) > 0)
            any = 1;
        if (!any && !S->ino_dirty && now_ns() - S->last_full_ns < FULL_PASS_NS &&
            !missing_appeared(s))
            return 0;
        S->ino_dirty = 0;
    }
    S->last_full_ns = now_ns();
    if (tree_changed(s)) {
        S->ino_dirty = 1;       /* until a rebuild has set up fresh watches */
        return 1;
    }
    return 0;
}

/*
 * The search terms of k's body (its first SEARCH_BODY_MAX bytes) and of its
 * references/ Markdown files (SEARCH_REFS_MAX bytes in all, in path order),
 * read through the jail like read_skill_file. What cannot be read adds
 * nothing: the entry still gets terms, so it is not read again.
 */
static struct search_terms *body_terms(const struct skill *k)
{
    struct jail_file f = {0};
    const char *why;
    struct search_doc d = {0};
    struct buf refs;

    if (jail_read(k->dir, "SKILL.md", k->body_off + SEARCH_BODY_MAX, &f, &why) == 0 &&
        f.len > k->body_off) {
        d.body = f.data + k->body_off;
        d.body_len = f.len - k->body_off;
    }
    buf_init(&refs, 0);
    for (size_t i = 0; i < k->nfiles && refs.len < SEARCH_REFS_MAX; i++) {
        const char *p = k->files[i].path;
        size_t pl = strlen(p);
        if (strncmp(p, "references/", 11) || pl < 14 || strcasecmp(p + pl - 3, ".md"))
            continue;
        struct jail_file r = {0};
        if (jail_read(k->dir, p, SEARCH_REFS_MAX - refs.len, &r, &why) == 0) {
            buf_append(&refs, r.data, r.len);
            buf_puts(&refs, "\n");
        }
        jail_file_cleanup(&r);
    }
    if (refs.len) {
        d.refs = refs.p;
        d.refs_len = refs.len;
    }
    struct search_terms *t = search_terms_new(&d);
    jail_file_cleanup(&f);
    buf_cleanup(&refs);
    return t;
}

/* Gives k its body terms unless it has them (another thread may race: one
 * copy wins). Returns 1 when this call read them. */
static int index_body(struct skill *k)
{
    if (atomic_load(&k->xterms))
        return 0;
    struct search_terms *t = body_terms(k), *none = NULL;
    if (!atomic_compare_exchange_strong(&k->xterms, &none, t)) {
        search_terms_free(t);
        return 0;
    }
    return 1;
}

static struct snapshot *build_snapshot(struct skills *S, struct snapshot *old, uint64_t gen)
{
    struct build b = {.S = S, .old = old, .errors = json_array()};
    double t0 = now_ms();
    for (size_t i = 0; i < S->nroots; i++)
        scan_root(&b, (unsigned)i, S->roots[i]);
    prepare_all(&b, 0, b.nc);
    for (size_t i = 0; i < b.nc; i++) {
        struct cand *c = &b.c[i];
        if (c->pending && c->kind == CAND_TEAM) {
            watch_add(&b, c->dir, &c->dirst);
            for (size_t j = 0; j < c->nkids; j++)
                apply(&b, &c->kids[j]);
        } else if (!c->pending || c->kind == CAND_SKILL) {
            apply(&b, c);
        }
    }
    for (size_t i = 0; i < b.nc; i++)
        cand_free(&b.c[i]);
    free(b.c);

    struct snapshot *s = xcalloc(1, sizeof *s);
    scan_hooks_dir(&b, s, S->hooks_dir);
    atomic_init(&s->refs, 0);
    s->generation = gen;
    s->v = b.v;
    s->n = b.n;
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, skill_cmp);
    s->w = b.w;
    s->nw = b.nw;
    s->errors = b.errors;
    free(b.seen);
    build_tables(s);

    if (S->ix_on && old) {
        /* After start-up, an edited or new skill is searchable by its body
         * as soon as it is served at all. */
        size_t missing = 0;
        for (size_t i = 0; i < s->n; i++)
            missing += !atomic_load(&s->v[i]->xterms);
        if (missing <= INLINE_BODIES)
            for (size_t i = 0; i < s->n; i++)
                index_body(s->v[i]);
    }
    struct search_doc *docs = xcalloc(s->n ? s->n : 1, sizeof *docs);
    const struct search_terms **terms = xcalloc(s->n ? s->n : 1, sizeof *terms);
    const struct search_terms **xterms = xcalloc(s->n ? s->n : 1, sizeof *xterms);
    uint32_t *prev_doc = xcalloc(s->n ? s->n : 1, sizeof *prev_doc);
    for (size_t i = 0; i < s->n; i++) {
        docs[i].name = s->v[i]->qname;
        docs[i].description = s->v[i]->description;
        docs[i].tags = (const char *const *)s->v[i]->tags;
        docs[i].ntags = s->v[i]->ntags;
        terms[i] = s->v[i]->terms;
        struct search_terms *xt = atomic_load(&s->v[i]->xterms);
        xterms[i] = xt == XTERMS_MERGED ? NULL : xt;
        prev_doc[i] = SEARCH_NO_DOC;
    }
    /* A reused entry is the same object in old (both are sorted by name):
     * its body terms come from old's index. */
    for (size_t i = 0, j = 0; old && i < s->n && j < old->n;) {
        int c = strcmp(s->v[i]->qname, old->v[j]->qname);
        if (c == 0 && s->v[i] == old->v[j])
            prev_doc[i] = (uint32_t)j;
        i += c <= 0;
        j += c >= 0;
    }
    s->search = search_new_carry(docs, terms, xterms, s->n, old ? old->search : NULL, prev_doc);
    for (size_t i = 0; i < s->n; i++)
        s->bodies_indexed += (size_t)search_has_body(s->search, i);
    free(prev_doc);
    free(xterms);
    free(terms);
    free(docs);
    if (S->gate)
        S->gate(s, S->gate_arg);
    /* Parsing leaves freed blocks in every thread's arena (libyaml's buffers
     * above all); hand them back once per build rather than carry them. */
    malloc_trim(0);
    s->built_at = (int64_t)time(NULL);
    s->build_ms = now_ms() - t0;
    return s;
}

static void reclaim(struct skills *S)
{
    struct snapshot **pp = &S->retired;
    pthread_mutex_lock(&S->scan_mu);
    pthread_mutex_lock(&hp_fallback);
    while (*pp) {
        struct snapshot *r = *pp;
        /* Hazard first, count second: see the header comment. */
        if (!hp_protects(r) && atomic_load(&r->refs) == 0) {
            *pp = r->retired_next;
            snapshot_free(S, r);
        } else {
            pp = &r->retired_next;
        }
    }
    pthread_mutex_unlock(&hp_fallback);
    pthread_mutex_unlock(&S->scan_mu);
}

/* Did the lock's judgement of an entry change between two snapshots? */
static int gate_moved(const struct snapshot *a, size_t i, const struct snapshot *b, size_t j)
{
    if (!a->gate != !b->gate)
        return 1;
    if (!a->gate)
        return 0;
    const struct skill_gate *x = &a->gate[i], *y = &b->gate[j];
    if (!x->reason != !y->reason || (x->reason && strcmp(x->reason, y->reason)))
        return 1;
    if (!x->serve != !y->serve || strcmp(x->digest, y->digest))
        return 1;
    return 0;
}

static void diff(const struct snapshot *a, const struct snapshot *b, struct skills_report *r)
{
    size_t i = 0, j = 0;
    r->added = json_array();
    r->removed = json_array();
    r->changed = json_array();
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i]->qname, b->v[j]->qname);
        if (c < 0) {
            json_array_append_new(r->removed, json_string(a->v[i++]->qname));
        } else if (c > 0) {
            json_array_append_new(r->added, json_string(b->v[j++]->qname));
        } else {
            if (a->v[i] != b->v[j] || gate_moved(a, i, b, j))
                json_array_append_new(r->changed, json_string(b->v[j]->qname));
            i++;
            j++;
        }
    }
}

/* Wakes the body indexer when s has entries without body terms. */
static void indexer_kick(struct skills *S, const struct snapshot *s)
{
    if (!S->ix_on)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (!atomic_load(&s->v[i]->xterms)) {
            pthread_mutex_lock(&S->ix_mu);
            S->ix_want = 1;
            pthread_cond_signal(&S->ix_cv);
            pthread_mutex_unlock(&S->ix_mu);
            return;
        }
    }
}

/* s is current: the body terms its index holds need no list any more (the
 * next build takes them from s's index). Scanner role: no build reads the
 * lists meanwhile, and the indexer only ever sets a NULL one. */
static void release_xterms(struct snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!search_has_body(s->search, i))
            continue;
        struct search_terms *xt = atomic_exchange(&s->v[i]->xterms, XTERMS_MERGED);
        if (xt != XTERMS_MERGED)
            search_terms_free(xt);
    }
}

/* The rescan proper; the caller holds the scanner role (not the mutex). */
static void do_scan(struct skills *S, int force, struct skills_report *r)
{
    struct snapshot *old = atomic_load(&S->cur);
    double t0 = now_ms();
    memset(r, 0, sizeof *r);
    r->gen_before = r->gen_after = old->generation;
    if (!force && !maybe_changed(S, old)) {
        r->unchanged = 1;
        r->ms = now_ms() - t0;
        return;
    }
    struct snapshot *s = build_snapshot(S, old, old->generation + 1);
    diff(old, s, r);
    if (!json_array_size(r->added) && !json_array_size(r->removed) &&
        !json_array_size(r->changed) && json_equal(s->errors, old->errors)) {
        /* Nothing a client can see moved (a forced rescan of an unchanged
         * tree, or a touched folder): the generation only counts visible
         * changes. The new snapshot still carries fresh watch keys. */
        s->generation = old->generation;
    }
    /* Rendered once the generation is final: the pre-rendered pages carry it. */
    if (S->ext_build)
        s->ext = S->ext_build(s, S->ext_arg);
    r->gen_after = s->generation;
    /* Reports travel to other threads: give them their own copy, since
     * jansson's reference counts are not meant to be shared across threads. */
    r->errors = json_deep_copy(s->errors);
    atomic_store(&S->cur, s);
    release_xterms(s);
    indexer_kick(S, s);
    watches_setup(S, s);
    pthread_mutex_lock(&S->scan_mu);
    old->retired_next = S->retired;
    S->retired = old;
    pthread_mutex_unlock(&S->scan_mu);
    r->ms = now_ms() - t0;
    if (r->gen_after != r->gen_before)
        log_info("skills: generation %llu: %zu skills, %zu added, %zu removed, %zu changed, "
                 "%zu problems (%.1f ms)",
                 (unsigned long long)s->generation, s->n, json_array_size(r->added),
                 json_array_size(r->removed), json_array_size(r->changed),
                 json_array_size(s->errors), r->ms);
}

static void report_copy(struct skills_report *dst, const struct skills_report *src)
{
    *dst = *src;
    dst->added = src->added ? json_deep_copy(src->added) : json_array();
    dst->removed = src->removed ? json_deep_copy(src->removed) : json_array();
    dst->changed = src->changed ? json_deep_copy(src->changed) : json_array();
    dst->errors = src->errors ? json_deep_copy(src->errors) : json_array();
}

void skills_report_cleanup(struct skills_report *r)
{
    json_decref(r->added);
    json_decref(r->removed);
    json_decref(r->changed);
    json_decref(r->errors);
    memset(r, 0, sizeof *r);
}

void skills_rescan(struct skills *S, int force, struct skills_report *out)
{
    pthread_mutex_lock(&S->scan_mu);
    /* A scan already running may have missed what made us call: wait for
     * one that starts after our arrival. */
    uint64_t target = S->scans_started + 1;
    while (S->scans_finished < target) {
        if (!S->scanning && S->scans_started < target) {
            struct skills_report r;
            S->scanning = 1;
            S->scans_started++;
            pthread_mutex_unlock(&S->scan_mu);
            do_scan(S, force, &r);
            pthread_mutex_lock(&S->scan_mu);
            skills_report_cleanup(&S->last);
            S->last = r;
            S->scanning = 0;
            S->scans_finished++;
            pthread_cond_broadcast(&S->scan_cv);
        } else {
            pthread_cond_wait(&S->scan_cv, &S->scan_mu);
        }
    }
    if (out) {
        report_copy(out, &S->last);
        if (!S->last.errors) {
            struct snapshot *cur = atomic_load(&S->cur);
            json_decref(out->errors);
            out->errors = json_deep_copy(cur->errors);
        }
    }
    pthread_mutex_unlock(&S->scan_mu);
    reclaim(S);
}

/* ---- lifecycle ----------------------------------------------------------- */

struct skills *skills_new(const char *const *roots, size_t nroots, const char *hooks_dir,
                          snapshot_ext_build_fn ext_build, snapshot_ext_free_fn ext_free,
                          void *ext_arg)
{
    return skills_new_gated(roots, nroots, hooks_dir, ext_build, ext_free, ext_arg, NULL, NULL,
                            NULL);
}

struct skills *skills_new_gated(const char *const *roots, size_t nroots, const char *hooks_dir,
                                snapshot_ext_build_fn ext_build, snapshot_ext_free_fn ext_free,
                                void *ext_arg, skills_gate_fn gate, void (*release)(void *ref),
                                void *gate_arg)
{
    struct skills *S = xcalloc(1, sizeof *S);
    S->hooks_dir = hooks_dir;
    size_t usable = 0;
    if (nroots > 64)
        nroots = 64;
    for (size_t i = 0; i < nroots; i++) {
        struct stat st;
        S->roots[i] = roots[i];
        if (stat(roots[i], &st) == 0 && S_ISDIR(st.st_mode))
            usable++;
        else
            log_error("skills root '%s' is not a readable directory", roots[i]);
    }
    S->nroots = nroots;
    if (!usable) {
        free(S);
        return NULL;
    }
    S->ext_build = ext_build;
    S->ext_free = ext_free;
    S->ext_arg = ext_arg;
    skills_set_gate(S, gate, release, gate_arg);
    pthread_mutex_init(&S->scan_mu, NULL);
    pthread_cond_init(&S->scan_cv, NULL);
    struct snapshot *s = build_snapshot(S, NULL, 1);
    if (S->ext_build)
        s->ext = S->ext_build(s, S->ext_arg);
    atomic_init(&S->cur, s);
    S->ino_fd = -1;
    S->ino_pending = 1;
    log_info("skills: generation 1: %zu skills from %zu root(s), %zu problems (%.1f ms)", s->n,
             nroots, json_array_size(s->errors), s->build_ms);
    return S;
}

/*
 * The body indexer: reads the bodies the current snapshot's entries lack,
 * then has a rescan publish them (every entry is reused, so the rescan
 * costs a stat pass and an index merge, and keeps the generation). It runs
 * at the lowest CPU priority: serving, and the cold start, come first.
 */
static void *indexer_main(void *arg)
{
    struct skills *S = arg;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    pthread_mutex_lock(&S->ix_mu);
    for (;;) {
        while (!S->ix_want && !S->ix_stop)
            pthread_cond_wait(&S->ix_cv, &S->ix_mu);
        if (S->ix_stop)
            break;
        S->ix_want = 0;
        pthread_mutex_unlock(&S->ix_mu);
        struct snapshot *s = skills_acquire(S);
        size_t read = 0;
        double t0 = now_ms();
        for (size_t i = 0; i < s->n && !atomic_load(&S->ix_stop); i++)
            read += (size_t)index_body(s->v[i]);
        skills_release(s);
        if (read && !atomic_load(&S->ix_stop)) {
            log_info("skills: indexed the bodies of %zu skills (%.1f ms)", read, now_ms() - t0);
            skills_rescan(S, 1, NULL);
            /* The snapshot the rescan retired held the frontmatter-only
             * index, and reading left buffers free in this thread's arena. */
            malloc_trim(0);
        }
        pthread_mutex_lock(&S->ix_mu);
    }
    pthread_mutex_unlock(&S->ix_mu);
    return NULL;
}

void skills_index_bodies(struct skills *S)
{
    if (S->ix_on)
        return;
    pthread_mutex_init(&S->ix_mu, NULL);
    pthread_cond_init(&S->ix_cv, NULL);
    S->ix_on = 1;
    if (pthread_create(&S->ix_thread, NULL, indexer_main, S) != 0) {
        log_warn("skills: no body indexer thread; only names, tags and descriptions are "
                 "searched");
        S->ix_on = 0;
        return;
    }
    indexer_kick(S, atomic_load(&S->cur));
}

void skills_bodies_indexed(struct skills *S, size_t *indexed, size_t *n)
{
    struct snapshot *s = skills_acquire(S);
    *indexed = s->bodies_indexed;
    *n = s->n;
    skills_release(s);
}

void skills_free(struct skills *S)
{
    if (!S)
        return;
    if (S->ix_on) {
        pthread_mutex_lock(&S->ix_mu);
        S->ix_stop = 1;
        pthread_cond_signal(&S->ix_cv);
        pthread_mutex_unlock(&S->ix_mu);
        pthread_join(S->ix_thread, NULL);
        pthread_mutex_destroy(&S->ix_mu);
        pthread_cond_destroy(&S->ix_cv);
    }
    reclaim(S);
    while (S->retired) {
        struct snapshot *r = S->retired;
        S->retired = r->retired_next;
        snapshot_free(S, r);
    }
    snapshot_free(S, atomic_load(&S->cur));
    skills_report_cleanup(&S->last);
    if (S->ino_fd >= 0)
        close(S->ino_fd);
    pthread_mutex_destroy(&S->scan_mu);
    pthread_cond_destroy(&S->scan_cv);
    free(S);
}

void skills_set_gate(struct skills *S, skills_gate_fn gate, void (*release)(void *ref),
                     void *arg)
{
    S->gate = gate;
    S->gate_release = release;
    S->gate_arg = arg;
}

const struct skill_gate *skills_gate_of(const struct snapshot *s, const struct skill *k)
{
    if (!s->gate)
        return NULL;
    uint32_t x = table_get(s->by_qname, s->tcap, k->qname, strlen(k->qname), s->v, 0);
    return x && s->v[x - 1] == k ? &s->gate[x - 1] : NULL;
}

struct skill *skills_entry_load(const char *dir, const char *qname, unsigned root)
{
    struct skills S0 = {0};
    struct build b = {.S = &S0, .errors = json_array()};
    struct stat md, dst;
    char mdp[PATH_MAX + 16], team[PATH_MAX];
    const char *slash = strrchr(qname, '/');
    snprintf(mdp, sizeof mdp, "%s/SKILL.md", dir);
    struct skill *k = NULL;
    if (stat(mdp, &md) == 0 && stat(dir, &dst) == 0) {
        if (slash)
            snprintf(team, sizeof team, "%.*s", (int)(slash - qname), qname);
        cand_add(&b, root, slash ? team : NULL, slash ? slash + 1 : qname, dir, NULL, &dst, &md);
        prepare(NULL, &b.c[0]);
        apply(&b, &b.c[0]);
        cand_free(&b.c[0]);
        free(b.c);
        if (b.n == 1)
            k = b.v[0];
    }
    free(b.v);
    free(b.seen);
    for (size_t i = 0; i < b.nw; i++)
        if (b.w[i].owned)
            free(b.w[i].path);
    free(b.w);
    json_decref(b.errors);
    return k;
}

void skills_entry_release(struct skill *k)
{
    skill_unref(k);
}

uint64_t skills_scans(struct skills *S)
{
    pthread_mutex_lock(&S->scan_mu);
    uint64_t n = S->scans_finished;
    pthread_mutex_unlock(&S->scan_mu);
    return n;
}

const char *const *skills_roots(const struct skills *S, size_t *n)
{
    *n = S->nroots;
    return S->roots;
}
