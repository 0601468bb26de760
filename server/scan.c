/*
 * scan.c - the tree scan: finds the skill folders under every root, reuses
 * the entries of skills whose SKILL.md and folders did not change, and
 * builds the others (walks the folder, parses the frontmatter, tokenizes
 * the card for search), and lists every path the refresher must watch.
 *
 * Discovery reads only the frontmatter of each SKILL.md (16 KiB, or up to
 * 256 KiB when the fence is not closed by then) and lists the skill's files;
 * bodies are read later (bodies.c).
 *
 * Called by: skills.c (scan_tree, in the scanner role), lock.c
 * (skills_entry_load), and anyone naming or listing skill folders.
 */
#include "skills_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontmatter.h"
#include "jail.h"
#include "rcache.h"
#include "search.h"
#include "util.h"

#define FM_FIRST_READ (16u << 10)
#define FM_MAX_READ (256u << 10)
#define WALK_MAX_DEPTH 8
#define WALK_MAX_ENTRIES 10000

/* ---- entries ------------------------------------------------------------- */

static char exec_none_mark;
/* k->execution once the frontmatter was found to have no 'execution' */
#define EXEC_NONE ((json_t *)(void *)&exec_none_mark)

json_t *skills_execution(const struct skill *k)
{
    /* the cache, like the cards and replies kept with the entry, is written once */
    struct skill *m = (struct skill *)(uintptr_t)k;
    json_t *ex = atomic_load_explicit(&m->execution, memory_order_acquire);
    if (ex)
        return ex == EXEC_NONE ? NULL : ex;
    /* 'execution' is never a placeholder: the stored text has it as it is */
    json_t *o = k->fm_rest ? json_loads(k->fm_rest, 0, NULL) : NULL;
    json_t *v = json_object_get(o, "execution");
    json_t *mine = v ? json_incref(v) : EXEC_NONE;
    json_decref(o);
    json_t *none = NULL;
    if (!atomic_compare_exchange_strong(&m->execution, &none, mine)) {
        if (mine != EXEC_NONE)
            json_decref(mine);      /* another thread kept its copy first */
        mine = none;
    }
    return mine == EXEC_NONE ? NULL : mine;
}

struct card *skills_card_keep(struct skill *k, int tier, struct card *c)
{
    struct card_link *mine = (struct card_link *)(void *)c;
    mine->tier = (uint32_t)tier;
    struct card_link *head = atomic_load_explicit(&k->cards, memory_order_acquire);
    for (;;) {
        for (struct card_link *l = head; l; l = l->next)
            if (l->tier == (uint32_t)tier) {
                free(c);    /* another thread kept this tier first */
                return (struct card *)(void *)l;
            }
        mine->next = head;
        if (atomic_compare_exchange_weak_explicit(&k->cards, &head, mine, memory_order_acq_rel,
                                                  memory_order_acquire))
            return c;
        /* head is the list as another thread grew it: look again */
    }
}

static void skill_unref(struct skill *k)
{
    if (!k || atomic_fetch_sub(&k->refs, 1) != 1)
        return;
    json_t *ex = atomic_load(&k->execution);
    if (ex != EXEC_NONE)
        json_decref(ex);
    json_decref(k->warnings);
    search_terms_free(k->terms);
    struct search_terms *xt = atomic_load(&k->xterms);
    if (xt != XTERMS_MERGED)
        search_terms_free(xt);
    for (struct card_link *l = atomic_load(&k->cards), *next; l; l = next) {
        next = l->next;
        free(l);
    }
    if (k->hooks) {
        free(k->hooks->pre);
        free(k->hooks->post);
        free(k->hooks);
    }
    free(k->files);         /* the block of files, folder keys and paths (walk_pack) */
    skills_body_free(atomic_load(&k->body));
    rcache_files_free(atomic_load(&k->rfiles), k->nfiles);
    free(k);
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
    int rootfd[64];         /* the roots' folders, open until every candidate is prepared */
    size_t nrootfd;
    struct seen_problem *prev;  /* the previous generation's problems, by hash (lazily) */
    size_t nprev;
    int prev_ready;
    struct term_chunk *term_chunks; /* the new entries' card terms (terms_keep) */
    struct skill **unkeyed; /* served, but watched by the list: see struct snap */
    size_t nunkeyed, ucap;
};

struct seen_problem {
    uint64_t h;
    size_t i;               /* in old->errors */
};

static uint64_t problem_hash(const char *level, const char *skill, const char *path,
                             const char *msg)
{
    const char *part[4] = {level, skill ? skill : "", path, msg};
    uint64_t h = 0;
    for (int i = 0; i < 4; i++)
        h = h * 0x100000001b3ULL ^ hash_fnv1a(part[i], strlen(part[i]) + 1);
    return h;
}

static int seen_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct seen_problem *)a)->h, y = ((const struct seen_problem *)b)->h;
    return x < y ? -1 : x > y;
}

static const char *field(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/*
 * Whether the previous generation had this very problem. Every rebuild
 * (an edit anywhere, reload_skills, the body indexer's republish) meets a
 * broken skill again; the log says what is new, the errors list says what
 * is, so an unchanged problem is not logged twice.
 */
static int reported_before(struct build *b, const char *level, const char *skill,
                           const char *path, const char *msg)
{
    if (!b->old || !b->old->errors)
        return 0;
    if (!b->prev_ready) {
        b->prev_ready = 1;
        size_t n = json_array_size(b->old->errors);
        b->prev = n ? xmalloc(n * sizeof *b->prev) : NULL;
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(b->old->errors, i);
            const char *sk = json_string_value(json_object_get(e, "skill"));
            b->prev[b->nprev++] = (struct seen_problem){
                problem_hash(field(e, "level"), sk, field(e, "path"), field(e, "message")), i};
        }
        if (b->nprev)
            qsort(b->prev, b->nprev, sizeof *b->prev, seen_cmp);
    }
    uint64_t h = problem_hash(level, skill, path, msg);
    size_t lo = 0, hi = b->nprev;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->prev[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < b->nprev && b->prev[lo].h == h; lo++) {
        json_t *e = json_array_get(b->old->errors, b->prev[lo].i);
        const char *sk = json_string_value(json_object_get(e, "skill"));
        if (!strcmp(field(e, "level"), level) && !strcmp(field(e, "path"), path) &&
            !strcmp(field(e, "message"), msg) && !strcmp(sk ? sk : "", skill ? skill : "") &&
            !sk == !skill)
            return 1;
    }
    return 0;
}

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
    /* Folder and file names are bytes, and JSON carries only UTF-8: a name
     * that is not would make json_pack fail and the problem vanish. */
    char skill_t[256], path_t[PATH_MAX];
    utf8_sanitize(msg);
    if (skill && !utf8_valid(skill, strlen(skill))) {
        snprintf(skill_t, sizeof skill_t, "%s", skill);
        utf8_sanitize(skill_t);
        skill = skill_t;
    }
    if (!utf8_valid(path, strlen(path))) {
        snprintf(path_t, sizeof path_t, "%s", path);
        utf8_sanitize(path_t);
        path = path_t;
    }
    json_array_append_new(b->errors, json_pack("{s:s?, s:s, s:s, s:s}", "skill", skill,
                                               "path", path, "message", msg, "level", level));
    /* Logged when found; a reused entry's warnings are carried, not re-logged. */
    if (!reported_before(b, level, skill, path, msg))
        log_msg(strcmp(level, "error") ? LOG_WARN : LOG_ERROR, "skill %s: %s (%s)",
                skill ? skill : "-", msg, path);
}

/* A served entry's SKILL.md and folders are not listed: the stat pass reads
 * them from the entry (at 100,000 skills, ~2.6 watches a skill were 12 MB). */
static void watch_add(struct build *b, const char *path, const struct stat *st)
{
    if (b->nw == b->wcap) {
        b->wcap = b->wcap ? b->wcap * 2 : 64;
        b->w = xrealloc(b->w, b->wcap * sizeof *b->w);
    }
    struct watch *w = &b->w[b->nw++];
    w->path = xstrdup(path);
    w->missing = st == NULL;
    if (st)
        key_of(st, &w->key);
    else
        memset(&w->key, 0, sizeof w->key);
}

/* Names that are never part of a skill: VCS folders, caches, dotfiles. */
int scan_ignored_name(const char *n)
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
 * these machines system calls are most of its time. Yet only the empty
 * read ends a folder: a read with room to spare is no sign of the end, on
 * any filesystem, since the kernel stops filling at a pending signal, and
 * SIGSTOP, a cgroup freezer or a tracer makes one pending even with every
 * blockable signal blocked.
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
            if (scan_ignored_name(d->d_name))
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

/*
 * What walking a skill folder found. Names go into one string buffer (by
 * offset, since it grows) and the arrays start in storage inside the
 * struct, so a typical skill allocates nothing while it is walked; the
 * entry then gets all of it as one exact-size block (walk_pack). At 100,000
 * skills a block per file and folder name and arrays grown by doubling
 * were ~60 % slack and a quarter of the build's allocations.
 */
#define WALK_INLINE_FILES 8
#define WALK_INLINE_DIRS 4
#define WALK_INLINE_STR 1024

struct walk_file {
    size_t off;             /* of its relative path in str */
    int64_t size;
    int64_t mtime_ns;
};

struct walk {
    struct walk_file *files;
    size_t nfiles, fcap;
    size_t *doff;           /* of each folder's path in the skill in str ("" for its own) */
    struct fkey *dkeys;
    size_t ndirs, dcap;
    char *str;
    size_t slen, scap;
    size_t entries;
    int truncated;
    int escaped;            /* a symlink left the skill */
    char first_escape[256];
    int bytes_names;        /* files whose names are not UTF-8 */
    char first_bytes_name[256];
    struct walk_file files0[WALK_INLINE_FILES];
    size_t doff0[WALK_INLINE_DIRS];
    struct fkey dkeys0[WALK_INLINE_DIRS];
    char str0[WALK_INLINE_STR];
};

static void walk_init(struct walk *w)
{
    w->files = w->files0;
    w->fcap = WALK_INLINE_FILES;
    w->doff = w->doff0;
    w->dkeys = w->dkeys0;
    w->dcap = WALK_INLINE_DIRS;
    w->str = w->str0;
    w->scap = WALK_INLINE_STR;
}

static void walk_release(struct walk *w)
{
    if (w->files != w->files0)
        free(w->files);
    if (w->doff != w->doff0)
        free(w->doff);
    if (w->dkeys != w->dkeys0)
        free(w->dkeys);
    if (w->str != w->str0)
        free(w->str);
}

/* Grows an array that may still be the inline one (cap elements of size each). */
static void *walk_grow(void *v, const void *inline_v, size_t *cap, size_t size)
{
    size_t ncap = *cap * 2;
    void *nv = v == inline_v ? memcpy(xmalloc(ncap * size), v, *cap * size)
                             : xrealloc(v, ncap * size);
    *cap = ncap;
    return nv;
}

static size_t walk_str(struct walk *w, const char *s)
{
    size_t n = strlen(s) + 1, off = w->slen;
    while (w->slen + n > w->scap)
        w->str = walk_grow(w->str, w->str0, &w->scap, 1);
    memcpy(w->str + off, s, n);
    w->slen += n;
    return off;
}

static void walk_add_dir(struct walk *w, const char *path, const struct stat *st)
{
    if (w->ndirs == w->dcap) {
        size_t cap = w->dcap;
        w->doff = walk_grow(w->doff, w->doff0, &cap, sizeof *w->doff);
        w->dkeys = walk_grow(w->dkeys, w->dkeys0, &w->dcap, sizeof *w->dkeys);
    }
    w->doff[w->ndirs] = walk_str(w, path);
    key_of(st, &w->dkeys[w->ndirs]);
    w->ndirs++;
}

static void walk_add_file(struct walk *w, const char *rel, const struct stat *st)
{
    if (w->nfiles == w->fcap)
        w->files = walk_grow(w->files, w->files0, &w->fcap, sizeof *w->files);
    w->files[w->nfiles].size = (int64_t)st->st_size;
    w->files[w->nfiles].mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    w->files[w->nfiles].off = walk_str(w, rel);
    w->nfiles++;
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
            walk_add_dir(w, childrel, &st);
            walk_dir(w, skilldir, cfd, childabs, childrel, depth + 1);
            close(cfd);
        } else if (S_ISREG(st.st_mode)) {
            /* Listed (the lock's digests cover every file a script could
             * read), but JSON cannot name it: the scan says so. */
            if (!utf8_valid(childrel, strlen(childrel)) && !w->bytes_names++)
                snprintf(w->first_bytes_name, sizeof w->first_bytes_name, "%s", childrel);
            walk_add_file(w, childrel, &st);
        }
    }
    dents_free(names, n);
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct skill_file *)a)->path, ((const struct skill_file *)b)->path);
}

/*
 * Gives k what w found, in one block: the files (sorted by path), the
 * folders' keys and paths, then their strings. k->files points at the
 * block (also when there are no files), so freeing it frees all of it.
 */
static void walk_pack(const struct walk *w, struct skill *k)
{
    if (!w->nfiles && !w->ndirs)
        return;
    /* The skill's own folder is "" (prepare walks it first, so it opens
     * the strings): the end of qname is an empty string already, and one
     * byte more would take most entries' block to the next size. */
    size_t skip = w->ndirs && w->doff[0] == 0 && !w->str[0] ? 1 : 0;
    size_t head = w->nfiles * sizeof *k->files + w->ndirs * (sizeof(struct fkey) +
                                                             sizeof(char *));
    char *blk = xmalloc(head + w->slen - skip);
    char *str = memcpy(blk + head, w->str + skip, w->slen - skip);
    k->files = (struct skill_file *)(void *)blk;
    for (size_t i = 0; i < w->nfiles; i++) {
        k->files[i].path = str + (w->files[i].off - skip);
        k->files[i].size = w->files[i].size;
        k->files[i].mtime_ns = w->files[i].mtime_ns;
    }
    k->nfiles = w->nfiles;
    if (k->nfiles > 1)
        qsort(k->files, k->nfiles, sizeof *k->files, file_cmp);
    k->ndirs = (uint32_t)w->ndirs;
    struct fkey *keys = skills_dir_keys(k);
    char **paths = skills_dir_paths(k);
    for (size_t i = 0; i < w->ndirs; i++) {
        keys[i] = w->dkeys[i];
        paths[i] = skip && i == 0 ? k->qname + strlen(k->qname) : str + (w->doff[i] - skip);
    }
}

ssize_t scan_read_prefix(int fd, char *buf, size_t max, off_t size)
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
 * Parses the frontmatter of SKILL.md in the skill folder dfd (its stat is
 * st), or of fd when it is open already (>= 0; closed here). Returns 0 and
 * fills *f, or -1 with *err set.
 */
static int parse_skill_md(int dfd, int fd, const struct stat *st, struct fm *f,
                          struct err *err)
{
    int rc = -1;
    char *buf = NULL;
    if (st->st_size > (off_t)SKILL_MD_MAX) {
        err_set(err, 0, 0, "SKILL.md is %lld bytes, over the 4 MiB limit",
                (long long)st->st_size);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct stat now;
    if (fd < 0)
        fd = dfd < 0 ? -EBADF : jail_open_regular(dfd, "SKILL.md", &now);
    if (fd < 0) {
        err_set(err, 0, 0, "cannot open SKILL.md: %s",
                fd == -EINVAL  ? "not a regular file"
                : fd == -EXDEV ? "it leads outside the skill folder"
                : fd == -EBADF ? "the skill folder cannot be opened"
                               : strerror(-fd));
        return -1;
    }
    size_t want = FM_FIRST_READ;
    for (;;) {
        buf = xrealloc(buf, want);
        ssize_t got = scan_read_prefix(fd, buf, want, st->st_size);
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

/* ---- folder paths ---------------------------------------------------------- */

/*
 * The resolved paths of the roots, each kept once for the process: an
 * entry whose folder is root + "/" + qname (no link on the way, the usual
 * case) stores only the root's number here, not its path (~60 bytes a
 * skill). Only added to, so a number handed out names the same path for
 * good; past the last slot entries keep their absolute path.
 */
#define DIR_BASES 255
static _Atomic(const char *) dir_bases[DIR_BASES + 1];    /* [0]: none */
static pthread_mutex_t dir_bases_mu = PTHREAD_MUTEX_INITIALIZER;

/* real's number (1..DIR_BASES), added if new, or 0 when every slot is taken. */
static unsigned dir_base_of(const char *real)
{
    unsigned i;
    pthread_mutex_lock(&dir_bases_mu);
    for (i = 1; i <= DIR_BASES; i++) {
        const char *b = atomic_load_explicit(&dir_bases[i], memory_order_relaxed);
        if (!b) {
            atomic_store_explicit(&dir_bases[i], xstrdup(real), memory_order_release);
            break;
        }
        if (!strcmp(b, real))
            break;
    }
    pthread_mutex_unlock(&dir_bases_mu);
    return i <= DIR_BASES ? i : 0;
}

/* k's folder as two parts, *a + *b: its root's path and "/" + qname, or
 * its own path and "". */
static void dir_parts(const struct skill *k, const char **a, const char **b, const char **sep)
{
    if (k->dir_base) {
        *a = atomic_load_explicit(&dir_bases[k->dir_base], memory_order_acquire);
        *sep = "/";
        *b = k->qname;
    } else {
        *a = k->dir_abs;
        *sep = *b = "";
    }
}

/* The parts, back to back, into buf (n bytes, cut to fit): the stat pass
 * composes every keyed folder's path, and snprintf was most of its
 * instructions. */
static char *path_cat(char *buf, size_t n, const char *const *part, size_t np)
{
    size_t at = 0;
    for (size_t i = 0; i < np; i++) {
        size_t l = strlen(part[i]);
        if (l > n - 1 - at)
            l = n - 1 - at;
        memcpy(buf + at, part[i], l);
        at += l;
    }
    buf[at] = '\0';
    return buf;
}

const char *skills_dir(const struct skill *k, char *buf)
{
    if (!k->dir_base)
        return k->dir_abs;
    const char *p[3];
    dir_parts(k, &p[0], &p[2], &p[1]);
    return path_cat(buf, SKILL_DIR_MAX, p, 3);
}

char *skills_dir_path(const struct skill *k, size_t d, char *buf)
{
    const char *p[5];
    dir_parts(k, &p[0], &p[2], &p[1]);
    p[4] = skills_dir_paths(k)[d];
    p[3] = *p[4] ? "/" : "";
    return path_cat(buf, SKILL_DIR_MAX, p, 5);
}

/* ---- the frontmatter text without its placeholders ----------------------- */

/* The members entry_new leaves in the text for the fields kept elsewhere,
 * in slot order: 3 bits of fm_slots each, 0 for none, else the member's
 * position in the object + 1. Most frontmatter is little more than these
 * (~50 bytes a skill), so they are not stored. */
static const char *const fm_placeholder[SKILL_FM_SLOTS] = {
    "\"description\":\"\"", "\"name\":\"\"", "\"version\":\"\"", "\"title\":\"\"",
    "\"tags\":[]"};
#define FM_SLOT_BITS 3
#define FM_SLOT_POS_MAX 6       /* the last position a 3-bit slot holds */

/* Bytes of the member that opens s (compact JSON as jansson dumps it),
 * up to the ',' or '}' that ends it. */
static size_t fm_member_len(const char *s)
{
    int depth = 0, str = 0;
    const char *p = s;
    for (; *p; p++) {
        if (str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                str = 0;
        } else if (*p == '"') {
            str = 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (!depth)
                break;
            depth--;
        } else if (*p == ',' && !depth) {
            break;
        }
    }
    return (size_t)(p - s);
}

char *scan_fm_join(const char *rest, unsigned slots)
{
    if (!slots)
        return rest ? xstrdup(rest) : NULL;
    const char *r = rest && *rest == '{' ? rest + 1 : "}";
    size_t cap = strlen(r) + 2;
    for (int f = 0; f < SKILL_FM_SLOTS; f++)
        cap += strlen(fm_placeholder[f]) + 1;
    char *out = xmalloc(cap), *o = out;
    *o++ = '{';
    for (unsigned pos = 0;; pos++) {
        const char *m = NULL;
        size_t len = 0;
        for (int f = 0; f < SKILL_FM_SLOTS && !m; f++)
            if (((slots >> (FM_SLOT_BITS * f)) & 7u) == pos + 1) {
                m = fm_placeholder[f];
                len = strlen(m);
            }
        if (!m && *r && *r != '}') {
            m = r;
            len = fm_member_len(r);
            r += len;
            if (*r == ',')
                r++;
        }
        if (!m)
            break;
        if (pos)
            *o++ = ',';
        memcpy(o, m, len);
        o += len;
    }
    *o++ = '}';
    *o = '\0';
    return out;
}

char *scan_fm_strip(const char *text, unsigned *slots)
{
    *slots = 0;
    if (!text || *text != '{')
        return text ? xstrdup(text) : NULL;
    size_t n = strlen(text);
    /* at most the text, and a '}' it may lack */
    char *kept = xmalloc(n + 2), *o = kept;
    unsigned pos = 0, got = 0;
    *o++ = '{';
    for (const char *r = text + 1; *r && *r != '}'; pos++) {
        size_t len = fm_member_len(r);
        int f = 0;
        while (f < SKILL_FM_SLOTS && (pos > FM_SLOT_POS_MAX || (got >> f & 1u) ||
                                      strlen(fm_placeholder[f]) != len ||
                                      memcmp(r, fm_placeholder[f], len)))
            f++;
        if (f < SKILL_FM_SLOTS) {
            got |= 1u << f;
            *slots |= (pos + 1) << (FM_SLOT_BITS * f);
        } else {
            if (o > kept + 1)
                *o++ = ',';
            memcpy(o, r, len);
            o += len;
        }
        r += len;
        if (*r == ',')
            r++;
    }
    *o++ = '}';
    *o = '\0';
    if (!strcmp(kept, "{}")) {
        free(kept);
        kept = NULL;
    }
    /* Kept only if it gives back every byte: otherwise the whole text. */
    char *back = scan_fm_join(kept, *slots);
    if (!*slots || !back || strcmp(back, text)) {
        free(kept);
        kept = xstrdup(text);
        *slots = 0;
    }
    free(back);
    return kept;
}

/* k's frontmatter text as entry_new dumped it: borrowed, or put back
 * together into *own (free it). */
static const char *fm_text(const struct skill *k, char **own)
{
    *own = k->fm_slots ? scan_fm_join(k->fm_rest, k->fm_slots) : NULL;
    return *own ? *own : k->fm_rest;
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
                               const char *real, unsigned base, json_t *fields)
{
    const char *desc = NULL, *version = NULL, *fm_name = NULL, *title = NULL;
    char *rest = NULL, **tags = NULL;
    size_t ntags = 0;
    unsigned slots = 0;
    json_t *dj = NULL, *vj = NULL, *nj = NULL, *tj = NULL;
    if (fields) {
        dj = json_incref(json_object_get(fields, "description"));
        desc = json_string_value(dj);
        json_t *x = json_object_get(fields, "version");
        vj = json_is_string(x) ? json_incref(x) : NULL;
        version = json_string_value(vj);
        x = json_object_get(fields, "name");
        nj = json_is_string(x) ? json_incref(x) : NULL;
        fm_name = json_string_value(nj);
        x = json_object_get(fields, "title");
        tj = json_is_string(x) ? json_incref(x) : NULL;
        title = json_string_value(tj);
        x = json_object_get(fields, "tags");
        ntags = take_tags(x, &tags);
        /* What is kept as a field is not kept again in the text (the parser
         * refuses NUL in values, so a C string is all of a value): an empty
         * string or list stands in its place, so the key keeps its position,
         * and skills_frontmatter() puts the field back. Tags only when the
         * list is exactly what was kept: all strings, none empty. */
        json_object_set_new(fields, "description", json_string(""));
        if (vj)
            json_object_set_new(fields, "version", json_string(""));
        if (nj)
            json_object_set_new(fields, "name", json_string(""));
        if (tj)
            json_object_set_new(fields, "title", json_string(""));
        if (ntags && json_is_array(x) && json_array_size(x) == ntags) {
            size_t i, strs = 0;
            json_t *t;
            json_array_foreach(x, i, t)
                strs += json_is_string(t) != 0;
            if (strs == ntags)
                json_object_set_new(fields, "tags", json_array());
        }
        char *whole = json_dumps(fields, JSON_COMPACT);
        rest = scan_fm_strip(whole, &slots);
        free(whole);
    }
    /* name is the end of qname ("team/name" or "name"), and the frontmatter
     * name is most often the folder's: neither is kept twice */
    int fm_is_name = fm_name && !strcmp(fm_name, name);
    /* the folder is composed from its root when it is root + "/" + qname */
    const char *b = base ? atomic_load_explicit(&dir_bases[base], memory_order_acquire) : NULL;
    size_t bl = b ? strlen(b) : 0;
    if (!b || strncmp(real, b, bl) || real[bl] != '/' || strcmp(real + bl + 1, qname))
        base = 0;
    const char *dir_abs = base ? NULL : real;
    size_t len = ntags * sizeof(char *) + pack_len(qname) + pack_len(team) + pack_len(dir_abs) +
                 pack_len(desc) + pack_len(version) + (fm_is_name ? 0 : pack_len(fm_name)) +
                 pack_len(title) + pack_len(rest);
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
    k->qname = pack_str(&at, qname);
    k->name = k->qname + strlen(qname) - strlen(name);
    k->team = pack_str(&at, team);
    k->dir_abs = pack_str(&at, dir_abs);
    k->dir_base = (unsigned char)base;
    k->description = pack_str(&at, desc);
    k->version = pack_str(&at, version);
    k->fm_name = fm_is_name ? k->name : pack_str(&at, fm_name);
    k->title = pack_str(&at, title);
    k->fm_rest = pack_str(&at, rest);
    k->fm_slots = (uint16_t)slots;
    skills_free_names(tags, ntags);
    free(rest);
    json_decref(dj);
    json_decref(vj);
    json_decref(nj);
    json_decref(tj);
    return k;
}

char *skills_md_path(const struct skill *k, char *out, size_t n)
{
    const char *p[4];
    dir_parts(k, &p[0], &p[2], &p[1]);
    p[3] = "/SKILL.md";
    return n ? path_cat(out, n, p, 4) : out;
}

json_t *skills_frontmatter(const struct skill *k)
{
    char *own;
    const char *text = fm_text(k, &own);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(own);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    /* Set in place: the key keeps its position. An empty string or list
     * in the text stands for the field (entry_new); one that was empty in
     * the file has an empty field, or none, so either way it reads back. */
    json_t *d = json_object_get(o, "description");
    if (k->description && (!json_is_string(d) || !json_string_length(d)))
        json_object_set_new(o, "description", json_string(k->description));
    const char *const keys[3] = {"version", "name", "title"};
    const char *const vals[3] = {k->version, k->fm_name, k->title};
    for (int i = 0; i < 3; i++) {
        d = json_object_get(o, keys[i]);
        if (vals[i] && json_is_string(d) && !json_string_length(d))
            json_object_set_new(o, keys[i], json_string(vals[i]));
    }
    d = json_object_get(o, "tags");
    if (k->ntags && json_is_array(d) && !json_array_size(d)) {
        json_t *t = json_array();
        for (size_t i = 0; i < k->ntags; i++)
            json_array_append_new(t, json_string(k->tags[i]));
        json_object_set_new(o, "tags", t);
    }
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

/* Has a listed file of k a new size or mtime (or gone)? Asked only of an
 * entry inotify named (files_moved), so a rescan does not stat every file. */
static int files_changed(const struct skill *k)
{
    struct stat st;
    char dir[SKILL_DIR_MAX];
    const char *top = skills_dir(k, dir);
    for (size_t i = 0; i < k->nfiles; i++) {
        char abs[PATH_MAX];
        snprintf(abs, sizeof abs, "%s/%s", top, k->files[i].path);
        if (stat(abs, &st) < 0 || (int64_t)st.st_size != k->files[i].size ||
            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != k->files[i].mtime_ns)
            return 1;
    }
    return 0;
}

/* Could the old entry serve unchanged? Its SKILL.md and folders all match,
 * and so do its files when one of them may have been written in place. */
static int entry_unchanged(const struct skill *k, const struct stat *md)
{
    struct fkey now;
    struct stat st;
    key_of(md, &now);
    if (!key_eq(&now, &k->md_key))
        return 0;
    if (k->files_moved && files_changed(k))
        return 0;
    for (size_t i = 0; i < k->ndirs; i++) {
        char path[SKILL_DIR_MAX];
        if (stat(skills_dir_path(k, i, path), &st) < 0)
            return 0;
        key_of(&st, &now);
        if (!key_eq(&now, &skills_dir_keys(k)[i]))
            return 0;
    }
    return 1;
}

static void seen_put(struct build *b, size_t idx)
{
    const char *q = b->v[idx]->qname;
    size_t mask = b->seen_cap - 1, i = hash_fnv1a32(q, strlen(q)) & mask;
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
    size_t mask = b->seen_cap - 1, i = hash_fnv1a32(qname, strlen(qname)) & mask;
    for (; b->seen[i]; i = (i + 1) & mask)
        if (!strcmp(b->v[b->seen[i] - 1]->qname, qname))
            return 1;
    return 0;
}

/* A served entry's SKILL.md and folders are watched through its keys (the
 * stat pass reads them from the entry): only a gate's files are listed. */
static void add_watches_of(struct build *b, const struct skill *k)
{
    if (!b->S->gate)
        return;
    /* A lock judges file contents: an edit in place must lead to a rebuild. */
    char dir[SKILL_DIR_MAX];
    const char *top = skills_dir(k, dir);
    for (size_t i = 0; i < k->nfiles; i++) {
        char abs[PATH_MAX];
        struct stat st;
        snprintf(abs, sizeof abs, "%s/%s", top, k->files[i].path);
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
        char abs[PATH_MAX], dir[SKILL_DIR_MAX];
        snprintf(abs, sizeof abs, "%s/%s", skills_dir(k, dir), p);
        for (int kind = 0; kind < 2; kind++) {
            if (!hook_kind(p + 6, kind ? "post" : "pre"))
                continue;
            if (!k->hooks)
                k->hooks = xcalloc(1, sizeof *k->hooks);
            char **slot = kind ? &k->hooks->post : &k->hooks->pre;
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
    int rootfd;             /* its root, open while pending (-1: look up c->dir) */
    unsigned base;          /* its root's resolved path (dir_base_of), 0: none */
    struct cand *kids;      /* a team: its skill folders, prepared with it */
    size_t nkids;
    /* set by prepare */
    struct skill *old;      /* the previous entry of that qualified name */
    int reuse;              /* old serves unchanged */
    int real_errno;         /* realpath failed: no k */
    struct skill *k;        /* the new entry, when not reused */
    const char *problem;    /* why k cannot serve (into note->err.msg, or static) */
    struct cand_note *note; /* what apply reports beside it; NULL: nothing */
};

/* A candidate's rare diagnostics, apart: ~1.3 KB a candidate in place, a
 * build's candidates were most of its page faults (a fault costs ~13 us on
 * a virtual machine). */
struct cand_note {
    struct err err;
    int truncated, escaped, bytes_names;
    char first_escape[256];
    char first_bytes_name[256];
};

static struct cand_note *cand_note(struct cand *c)
{
    if (!c->note)
        c->note = xcalloc(1, sizeof *c->note);
    return c->note;
}

enum { CAND_SKILL, CAND_TEAM, CAND_NONE };

static void cand_init(struct cand *c, unsigned root, const char *team, const char *name,
                      const char *dir, const char *real, const struct stat *dirst,
                      const struct stat *mdst);
static int child_dir(int dfd, const struct dent *d, struct stat *st, int *link);
static int has_skill_md(int dfd, const char *name, struct stat *mst);
/*
 * An entry's card terms live only until the build that merges them into
 * the index (later builds carry them from it). Kept between the entries in
 * the preparing threads' heaps, their freed blocks would be holes no page
 * of which is ever handed back; kept in chunks of their own, they leave
 * with the build. tl_chunks is the preparing thread's list (NULL on other
 * threads: terms then stay in their own block). An entry not served is
 * freed before its build ends, while its chunk is still there.
 */
struct term_chunk {
    struct term_chunk *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
};

#define TERM_CHUNK_BYTES (256u << 10)

static _Thread_local struct term_chunk **tl_chunks;

static struct search_terms *terms_keep(struct search_terms *t)
{
    size_t n = (search_terms_bytes(t) + 7) & ~(size_t)7;
    struct term_chunk *ch = *tl_chunks;
    if (!ch || ch->cap - ch->used < n) {
        size_t cap = TERM_CHUNK_BYTES - sizeof *ch;
        if (n > cap)
            cap = n;
        ch = mmap(NULL, sizeof *ch + cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
        if (ch == MAP_FAILED)
            abort();
        ch->next = *tl_chunks;
        ch->used = 0;
        ch->cap = cap;
        *tl_chunks = ch;
    }
    struct search_terms *kept = search_terms_place(t, ch->data + ch->used);
    ch->used += n;
    search_terms_free(t);
    return kept;
}

void scan_release_terms(struct snapshot *s)
{
    struct term_chunk *ch = snap_of(s)->term_chunks;
    snap_of(s)->term_chunks = NULL;
    while (ch) {
        struct term_chunk *next = ch->next;
        munmap(ch, sizeof *ch + ch->cap);
        ch = next;
    }
}

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
        if (has_skill_md(tfd, names[i].name, &mst)) {
            cand_init(&c->kids[c->nkids], c->root, c->name, names[i].name, dir,
                      c->real && !link ? real : NULL, &st, &mst);
            c->kids[c->nkids++].base = c->base;
        }
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
    int dfd = -1, mdfd = -1;

    if (c->pending && c->rootfd >= 0) {
        /* A plain folder of the root (no link: c->real is its canonical
         * path). Opened once, by a one-component lookup, it answers the
         * folder's stat and serves the walk; a skill seen for the first
         * time has its SKILL.md opened (not stat'ed, then opened) for the
         * same reason: system calls are most of a cold start. */
        dfd = openat(c->rootfd, c->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || fstat(dfd, &c->dirst) < 0) {
            if (dfd >= 0)
                close(dfd);
            c->kind = CAND_NONE;
            return;
        }
        int md_ok;
        if (find_in(old, c->qname)) {
            md_ok = has_skill_md(dfd, ".", &c->mdst);
        } else {
            mdfd = jail_open_regular(dfd, "SKILL.md", &c->mdst);
            md_ok = mdfd >= 0 || has_skill_md(dfd, ".", &c->mdst);
        }
        if (!md_ok) {
            close(dfd);
            c->kind = CAND_TEAM;
            prepare_team(old, c);
            return;
        }
    } else if (c->pending) {
        /* The scan only listed this folder; whether it is a skill (it holds
         * a SKILL.md) or a team folder is found here, off the serial path. */
        snprintf(md, sizeof md, "%s/SKILL.md", c->dir);
        if (stat(c->dir, &c->dirst) < 0 || !S_ISDIR(c->dirst.st_mode)) {
            c->kind = CAND_NONE;
            return;
        }
        if (!has_skill_md(AT_FDCWD, c->dir, &c->mdst)) {
            c->kind = CAND_TEAM;
            prepare_team(old, c);
            return;
        }
    }
    c->old = find_in(old, c->qname);
    if (c->old && c->old->root == c->root && entry_unchanged(c->old, &c->mdst)) {
        c->reuse = 1;
        if (dfd >= 0)
            close(dfd);
        return;
    }
    if (c->real)
        snprintf(real, sizeof real, "%s", c->real);
    else if (!realpath(c->dir, real)) {
        c->real_errno = errno ? errno : ENOENT;
        return;
    }

    struct walk w = {0};
    walk_init(&w);
    struct stat dst;
    if (dfd < 0)
        dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->real)
        dst = c->dirst;     /* the scan's stat of this very folder (no link on the way) */
    if (dfd >= 0 && (c->real || fstat(dfd, &dst) == 0)) {
        walk_add_dir(&w, "", &dst);
        walk_dir(&w, real, dfd, real, "", 0);
    }
    if (w.truncated || w.escaped || w.bytes_names) {
        struct cand_note *n = cand_note(c);
        n->truncated = w.truncated;
        n->escaped = w.escaped;
        memcpy(n->first_escape, w.first_escape, sizeof n->first_escape);
        n->bytes_names = w.bytes_names;
        memcpy(n->first_bytes_name, w.first_bytes_name, sizeof n->first_bytes_name);
    }

    snprintf(md, sizeof md, "%s/SKILL.md", real);
    struct err perr = {0};
    int rc = parse_skill_md(dfd, mdfd, &c->mdst, &f, &perr);
    if (dfd >= 0)
        close(dfd);
    json_t *desc = rc < 0 ? NULL : json_object_get(f.fields, "description");
    if (rc < 0) {
        cand_note(c)->err = perr;
        c->problem = c->note->err.msg;
    }
    else if (!json_is_string(desc) || !*json_string_value(desc))
        c->problem = "frontmatter has no 'description' (a non-empty string is required)";
    else if (!utf8_valid(c->qname, strlen(c->qname)))
        c->problem = "the folder name is not valid UTF-8, and a skill's name must be text a "
                     "client can send (rename the folder)";
    struct skill *k = entry_new(c->name, c->qname, c->team, real, c->base,
                                c->problem ? NULL : f.fields);
    json_decref(f.fields);
    k->root = c->root;
    key_of(&c->mdst, &k->md_key);
    walk_pack(&w, k);
    walk_release(&w);
    c->k = k;
    if (c->problem)
        return;
    k->body_off = f.body_off;
    k->terms = search_terms_new(&(struct search_doc){
        .name = k->qname, .description = k->description,
        .tags = (const char *const *)k->tags, .ntags = k->ntags});
    if (tl_chunks)
        k->terms = terms_keep(k->terms);
}

static void cand_free(struct cand *c)
{
    for (size_t i = 0; i < c->nkids; i++)
        cand_free(&c->kids[i]);
    free(c->kids);
    skill_unref(c->k);
    free(c->note);
    free(c->name);          /* the block of all its names (cand_init) */
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
        add_watches_of(b, old);
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
    skills_md_path(k, md, sizeof md);
    if (c->problem) {
        char where[32] = "";
        if (c->note && c->note->err.line && c->problem == c->note->err.msg)
            snprintf(where, sizeof where, " (line %d)", c->note->err.line);
        if (c->old) {
            report(b, "error", c->qname, md, "%s%s; serving the previous version", c->problem,
                   where);
            atomic_fetch_add(&c->old->refs, 1);
            push_skill(b, c->old);
            /* its keys are not what is on disk: the list watches that */
            if (b->nunkeyed == b->ucap) {
                b->ucap = b->ucap ? b->ucap * 2 : 8;
                b->unkeyed = xrealloc(b->unkeyed, b->ucap * sizeof *b->unkeyed);
            }
            b->unkeyed[b->nunkeyed++] = c->old;
        } else {
            report(b, "error", c->qname, md, "%s%s; skill not served", c->problem, where);
        }
        /* Watch what is on disk now, so a broken file does not rebuild every
         * tick (a SKILL.md that leads nowhere is watched as missing, as the
         * tick's stat will find it). */
        struct stat now;
        watch_add(b, md, stat(md, &now) == 0 ? &c->mdst : NULL);
        for (size_t i = 0; i < k->ndirs; i++) {
            struct stat st;
            char path[SKILL_DIR_MAX];
            if (stat(skills_dir_path(k, i, path), &st) == 0)
                watch_add(b, path, &st);
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
    char dir[SKILL_DIR_MAX];
    const char *top = skills_dir(k, dir);
    const struct cand_note *n = c->note;
    if (n && n->truncated)
        report(b, "warning", c->qname, top,
               "more than %d entries or deeper than %d folders; the file list is cut",
               WALK_MAX_ENTRIES, WALK_MAX_DEPTH);
    if (n && n->escaped)
        report(b, "warning", c->qname, top,
               "%d symlink(s) point outside the skill (first: %s); they are not served",
               n->escaped, n->first_escape);
    if (n && n->bytes_names)
        report(b, "warning", c->qname, top,
               "%d file name(s) are not valid UTF-8 (first: %s): load_skill does not list them "
               "and read_skill_file cannot name them (rename them)",
               n->bytes_names, n->first_bytes_name);
    find_skill_hooks(b, k);
    /* Most entries have nothing to say: no array for them (a jansson array
     * is two blocks, ~130 bytes a skill). */
    if (json_array_size(b->errors) > mark)
        k->warnings = json_array();
    for (size_t i = mark; i < json_array_size(b->errors); i++)
        json_array_append_new(k->warnings, json_deep_copy(json_array_get(b->errors, i)));
    push_skill(b, k);
    c->k = NULL;            /* the snapshot owns it now */
    add_watches_of(b, k);
}

static void cand_init(struct cand *c, unsigned root, const char *team, const char *name,
                      const char *dir, const char *real, const struct stat *dirst,
                      const struct stat *mdst)
{
    char qname[PATH_MAX];
    memset(c, 0, sizeof *c);
    snprintf(qname, sizeof qname, "%s%s%s", team ? team : "", team ? "/" : "", name);
    c->root = root;
    c->rootfd = -1;
    /* One block for the five names (a build makes one candidate a skill). */
    char *at = xmalloc(pack_len(team) + pack_len(name) + pack_len(qname) + pack_len(dir) +
                       pack_len(real));
    c->name = pack_str(&at, name);
    c->qname = pack_str(&at, qname);
    c->dir = pack_str(&at, dir);
    c->team = pack_str(&at, team);
    c->real = pack_str(&at, real);
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
    pthread_mutex_t mu;
    struct term_chunk *chunks;  /* the workers' term chunks */
};

#define PREP_CHUNK 16

static void *prep_worker(void *arg)
{
    struct prep_pool *p = arg;
    struct term_chunk *mine = NULL;
    tl_chunks = &mine;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, PREP_CHUNK);
        if (i >= p->n)
            break;
        size_t end = i + PREP_CHUNK < p->n ? i + PREP_CHUNK : p->n;
        for (; i < end; i++)
            prepare(p->old, &p->c[i]);
    }
    tl_chunks = NULL;
    while (mine) {
        struct term_chunk *next = mine->next;
        pthread_mutex_lock(&p->mu);
        mine->next = p->chunks;
        p->chunks = mine;
        pthread_mutex_unlock(&p->mu);
        mine = next;
    }
    return NULL;
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
    pthread_mutex_init(&p.mu, NULL);
    pthread_t t[3];
    size_t want = prep_threads(hi - lo), started = 0;
    atomic_init(&p.next, 0);
    while (started + 1 < want && pthread_create(&t[started], NULL, prep_worker, &p) == 0)
        started++;
    prep_worker(&p);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_destroy(&p.mu);
    while (p.chunks) {
        struct term_chunk *next = p.chunks->next;
        p.chunks->next = b->term_chunks;
        b->term_chunks = p.chunks;
        p.chunks = next;
    }
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

/*
 * Does the folder name (in dfd; "." for dfd itself) hold an entry named
 * SKILL.md? Any kind counts: a link to a folder, a FIFO or a dangling link
 * named SKILL.md makes a skill that the parse refuses with its reason. Were
 * it a team folder instead, a SKILL.md linked to another folder would bring
 * that folder's skills in under this folder's name, past --acl rules and
 * unreported. Fills *mst with what SKILL.md leads to, or with the entry
 * itself when it leads nowhere.
 */
static int has_skill_md(int dfd, const char *name, struct stat *mst)
{
    char md[PATH_MAX];
    if ((size_t)snprintf(md, sizeof md, "%s/SKILL.md", name) >= sizeof md)
        return 0;
    if (fstatat(dfd, md, mst, 0) == 0)
        return 1;
    return fstatat(dfd, md, mst, AT_SYMLINK_NOFOLLOW) == 0;
}

static struct cand *cand_add_in(struct build *b, unsigned root, unsigned base,
                                const char *name, const char *dir, const char *real,
                                const struct stat *dirst, const struct stat *mdst)
{
    struct cand *c = cand_add(b, root, NULL, name, dir, real, dirst, mdst);
    c->base = base;
    return c;
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
    unsigned base = have_real ? dir_base_of(rootreal) : 0;
    struct dent *names = list_fd(rfd, &n);
    if (b->ccap < b->nc + n) {
        /* every entry may be a candidate: one array, not doublings copied */
        b->ccap = b->nc + n;
        b->c = xrealloc(b->c, b->ccap * sizeof *b->c);
    }
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX], real[PATH_MAX];
        struct stat st, mst;
        int link;
        snprintf(dir, sizeof dir, "%s/%s", rootpath, names[i].name);
        if (names[i].type == DT_DIR && have_real) {
            /* A plain folder: prepare finds whether it is a skill or a team. */
            snprintf(real, sizeof real, "%s/%s", rootreal, names[i].name);
            struct cand *c = cand_add_in(b, root, base, names[i].name, dir, real, NULL, NULL);
            c->pending = 1;
            c->rootfd = rfd;
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
            cand_add_in(b, root, base, names[i].name, dir, known, &st, &mst);
        } else {
            struct cand *c = cand_add_in(b, root, base, names[i].name, dir, known, &st, NULL);
            c->pending = 1;     /* no SKILL.md: prepare will call it a team */
        }
    }
    dents_free(names, n);
    b->rootfd[b->nrootfd++] = rfd;  /* prepare looks the candidates up in it */
}

static int skill_cmp(const void *a, const void *b)
{
    return strcmp((*(struct skill *const *)a)->qname, (*(struct skill *const *)b)->qname);
}

struct snapshot *scan_tree(struct skills *S, struct snapshot *old)
{
    struct build b = {.S = S, .old = old, .errors = json_array()};
    for (size_t i = 0; i < S->nroots; i++)
        scan_root(&b, (unsigned)i, S->roots[i]);
    prepare_all(&b, 0, b.nc);
    for (size_t i = 0; i < b.nrootfd; i++)
        close(b.rootfd[i]);
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

    struct snapshot *s = &((struct snap *)xcalloc(1, sizeof(struct snap)))->pub;
    scan_hooks_dir(&b, s, S->hooks_dir);
    atomic_init(&snap_of(s)->refs, 0);
    s->v = b.v;
    s->n = b.n;
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, skill_cmp);
    snap_of(s)->w = b.w;
    snap_of(s)->nw = b.nw;
    if (b.nunkeyed) {
        snap_of(s)->unkeyed = xcalloc(s->n, 1);
        for (size_t i = 0; i < b.nunkeyed; i++) {
            struct skill **at = bsearch(&b.unkeyed[i], s->v, s->n, sizeof *s->v, skill_cmp);
            snap_of(s)->unkeyed[at - s->v] = 1;
        }
    }
    free(b.unkeyed);
    snap_of(s)->term_chunks = b.term_chunks;
    s->errors = b.errors;
    free(b.seen);
    free(b.prev);
    return s;
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
    free(b.unkeyed);
    for (size_t i = 0; i < b.nw; i++)
        free(b.w[i].path);
    free(b.w);
    json_decref(b.errors);
    return k;
}

void skills_entry_release(struct skill *k)
{
    skill_unref(k);
}

