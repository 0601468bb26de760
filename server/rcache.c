/*
 * rcache.c - the read paths' render caches (see rcache.h).
 *
 * Called by: the HTTP threads (tools.c, resources.c), scan.c (freeing an
 * entry's file replies).
 */
#include "rcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "skills_int.h"
#include "util.h"

/* A file changed more recently than this is not kept: the clock file times
 * come from ticks coarsely, so a second same-size write could keep the key. */
#define RACY_NS 1000000000ll

static int full_path(char *out, const char *dir, const char *rel);

/* ---- change epoch ------------------------------------------------------------ */

/*
 * One inotify instance watching every folder a kept reply's files live in,
 * and each of their ancestors up to "/" (a renamed parent moves the path).
 * The kernel queues an event before a write(), rename() or chmod() returns,
 * so "nothing queued and no drain under way" proves that no watched folder
 * changed since the epoch was last bumped. A reply verified by stats at
 * epoch E is served without stats while the epoch is still E.
 */
static struct {
    pthread_once_t once;
    int fd;
    atomic_uint seq;            /* odd while a drain reads the queue */
    atomic_uint_fast64_t epoch; /* bumped by every drain that read events */
    pthread_mutex_t drain_mu;
    pthread_mutex_t add_mu;     /* serialises watch set-up */
    atomic_int full;            /* a watch could not be added: stats from then on */
} ch = {.once = PTHREAD_ONCE_INIT, .fd = -1, .drain_mu = PTHREAD_MUTEX_INITIALIZER,
        .add_mu = PTHREAD_MUTEX_INITIALIZER};

/* A forked worker would share the queue, and a drain in one process would
 * hide events from the other: the child checks with stats. */
static void ch_forked(void)
{
    if (ch.fd >= 0)
        close(ch.fd);
    ch.fd = -1;
}

static void ch_init(void)
{
    pthread_atfork(NULL, NULL, ch_forked);
    ch.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ch.fd < 0)
        log_warn("rcache: inotify unavailable (%s); kept replies are checked with stats",
                 strerror(errno));
}

/* Reads every queued event, bumping the epoch; skipped when another thread
 * is at it (the caller falls back to stats anyway). */
static void ch_drain(void)
{
    if (pthread_mutex_trylock(&ch.drain_mu))
        return;
    atomic_fetch_add(&ch.seq, 1);
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(ch.fd, ev, sizeof ev) > 0)
        ;
    atomic_fetch_add(&ch.epoch, 1);
    atomic_fetch_add(&ch.seq, 1);
    pthread_mutex_unlock(&ch.drain_mu);
}

/* The epoch plus one when nothing changed since it was bumped, else 0. */
static uint64_t ch_quiet(void)
{
    if (ch.fd < 0)
        return 0;
    unsigned s1 = atomic_load(&ch.seq);
    if (s1 & 1)
        return 0;
    uint64_t e = atomic_load(&ch.epoch);
    int pending = 0;
    atomic_thread_fence(memory_order_seq_cst);
    if (ioctl(ch.fd, FIONREAD, &pending) < 0)
        return 0;
    atomic_thread_fence(memory_order_seq_cst);
    if (pending > 0) {
        ch_drain();
        return 0;
    }
    return atomic_load(&ch.seq) == s1 ? e + 1 : 0;
}

uint64_t rcache_epoch(void)
{
    return ch_quiet();
}

/* Filesystems whose changes are all made through this kernel (so inotify
 * hears of them): not network or FUSE ones. */
static int local_fs(const char *dir)
{
    struct statfs sf;
    if (statfs(dir, &sf) < 0)
        return 0;
    switch ((unsigned long)sf.f_type) {
    case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC: case OVERLAYFS_SUPER_MAGIC: case F2FS_SUPER_MAGIC:
        return 1;
    default:
        return 0;
    }
}

static int ch_add(const char *path, uint32_t mask)
{
    /* Not through a symlink: a watch on its target hears nothing of the
     * target's own parents, so a path through one is checked with stats. */
    if (inotify_add_watch(ch.fd, path, mask | IN_MASK_ADD | IN_DONT_FOLLOW) >= 0)
        return 0;
    /* A folder gone or replaced by a file concerns its own skill only; a
     * file gone has nothing to watch (its folder hears it come back). */
    if (errno == ENOENT && !(mask & IN_ONLYDIR))
        return 0;
    if (errno != ENOSPC && errno != ENOMEM)
        return -1;
    if (!atomic_exchange(&ch.full, 1))
        log_warn("rcache: inotify watch on %s failed (%s); kept replies are checked with "
                 "stats", path, strerror(errno));
    return -1;
}

/*
 * Watches k's folder, the folders of its files, every ancestor and the
 * files themselves (SKILL.md too): 1 when all are watched (its replies may
 * then skip stats), else 0.
 */
static int ch_watch(const struct skill *k)
{
    char kdir[SKILL_DIR_MAX];
    const char *dir = skills_dir(k, kdir);
    pthread_once(&ch.once, ch_init);
    if (ch.fd < 0 || atomic_load(&ch.full) || !local_fs(dir))
        return 0;
    const uint32_t here = IN_ONLYDIR | IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE |
                          IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    /* IN_ATTRIB too: a folder above made unreadable (chmod) ends reads
     * through it, kept or not. */
    const uint32_t above = IN_ONLYDIR | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                           IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    /* Each file's own inode as well: a name added to it later (a hard
     * link anywhere) writes it without an event in any watched folder. */
    const uint32_t file = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    char path[PATH_MAX];
    int ok = 1;
    pthread_mutex_lock(&ch.add_mu);
    size_t dl = strlen(dir);
    if (dl >= sizeof path)
        ok = 0;
    for (size_t i = 1; ok && i < dl; i++)
        if (dir[i] == '/') {
            memcpy(path, dir, i);
            path[i] = '\0';
            ok = ch_add(path, above) == 0;
        }
    if (ok)
        ok = ch_add("/", above) == 0 && ch_add(dir, here) == 0;
    for (size_t f = 0; ok && f < k->nfiles; f++) {
        if (full_path(path, dir, k->files[f].path) < 0) {
            ok = 0;
            break;
        }
        for (char *sl = path + dl + 1; ok && (sl = strchr(sl, '/')); sl++) {
            *sl = '\0';
            ok = ch_add(path, here) == 0;
            *sl = '/';
        }
        if (ok)
            ok = ch_add(path, file) == 0;
    }
    if (ok && dl + sizeof "/SKILL.md" > sizeof path)
        ok = 0;
    if (ok) {
        memcpy(path, dir, dl);
        memcpy(path + dl, "/SKILL.md", sizeof "/SKILL.md");
        ok = ch_add(path, file) == 0;
    }
    pthread_mutex_unlock(&ch.add_mu);
    return ok;
}

/* ---- file replies ----------------------------------------------------------- */

static int64_t ctime_of(const struct stat *st)
{
    return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

struct rcache_files;
static uint64_t ch_current(struct skill *k, struct rcache_files *f, uint64_t quiet);

/*
 * What both kinds of kept reply start with: the renders of a slot form a
 * chain, newest first; a replaced one stays readable until the entry is
 * freed (a reader may hold it), so a slot takes RCACHE_FILE_VERSIONS at most.
 */
struct rc_rec {
    struct rc_rec *older;   /* the render this one replaced */
    atomic_uint_fast64_t verified;  /* ch_quiet() when its stat last matched; 0: never */
    unsigned depth;         /* renders before this one in the slot */
    size_t len, size;       /* the reply's length; size: the whole allocation, for the budget */
};

struct rc_file {
    struct rc_rec r;
    struct fkey key;        /* the file when it was read */
    int64_t ctime_ns;       /* too: a restored mtime (touch -d) must not hide an edit */
    size_t arglen;
    char data[];            /* the reply, NUL, the argument it answers, NUL */
};

/* One file as a whole-skill reply saw it: ctime too, as the manifest's
 * digests do (a restored mtime must not hide an edit). */
struct rc_stamp {
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns, ctime_ns, size;
};

struct rc_entry {
    struct rc_rec r;
    size_t n;
    struct rc_stamp *st;    /* n stamps: SKILL.md, then every listed file */
    char data[];            /* the reply (the stamps follow it) */
};

struct rcache_files {
    atomic_int watched;     /* 1: every folder of the entry is watched (ch_watch) */
    atomic_uint_fast64_t watched_at;    /* ch_quiet() when the watches were last renewed */
    _Atomic(struct rc_rec *) entry[RCACHE_ENTRY_KINDS];
    _Atomic(struct rc_rec *) slot[];    /* RCACHE_KINDS per file */
};

static atomic_size_t files_bytes;

/*
 * Charges size bytes to *used, which may not pass cap once the freed bytes
 * of what the new record replaces are given back: 1, or 0 with nothing
 * charged. The add comes first, so that threads racing for the last room
 * cannot all see it free.
 */
static int charge(atomic_size_t *used, size_t size, size_t freed, size_t cap)
{
    if (atomic_fetch_add(used, size) + size - freed > cap) {
        atomic_fetch_sub(used, size);
        return 0;
    }
    return 1;
}

/*
 * A new record of size bytes (len of them the reply) to go in front of old:
 * charged to the budget, chained; NULL when the slot has had its renders or
 * the budget is spent.
 */
static void *rec_new(struct rc_rec *old, size_t size, size_t len)
{
    unsigned depth = old ? old->depth + 1 : 0;
    if (depth >= RCACHE_FILE_VERSIONS || !charge(&files_bytes, size, 0, RCACHE_FILES_BYTES))
        return NULL;
    struct rc_rec *r = xmalloc(size);
    r->older = old;
    atomic_init(&r->verified, 0);
    r->depth = depth;
    r->len = len;
    r->size = size;
    return r;
}

/* Publishes r in slot in place of old: 1, or 0 (r given back) when another
 * thread kept one first. */
static int rec_swap(_Atomic(struct rc_rec *) *slot, struct rc_rec *old, struct rc_rec *r)
{
    if (atomic_compare_exchange_strong_explicit(slot, &old, r, memory_order_acq_rel,
                                                memory_order_acquire))
        return 1;
    atomic_fetch_sub(&files_bytes, r->size);
    free(r);
    return 0;
}

static void rec_free_chain(struct rc_rec *r)
{
    while (r) {
        struct rc_rec *older = r->older;
        atomic_fetch_sub(&files_bytes, r->size);
        free(r);
        r = older;
    }
}

static int path_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct skill_file *)elem)->path);
}

long rcache_file_index(const struct skill *k, const char *path)
{
    if (!k->nfiles)
        return -1;
    const struct skill_file *f = bsearch(path, k->files, k->nfiles, sizeof *k->files, path_cmp);
    return f ? (long)(f - k->files) : -1;
}

/* dir/rel into out (PATH_MAX); 0, or -1 when it does not fit. */
static int full_path(char *out, const char *dir, const char *rel)
{
    size_t dl = strlen(dir), rl = strlen(rel);
    if (dl + 1 + rl + 1 > PATH_MAX)
        return -1;
    memcpy(out, dir, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, rel, rl + 1);
    return 0;
}

const char *rcache_file_get(struct skill *k, size_t fi, enum rcache_kind kind, const char *arg,
                            size_t *len, struct stat *st)
{
    char kdir[SKILL_DIR_MAX];
    char path[PATH_MAX];
    st->st_mode = 0;
    /* Too large to be kept when scanned: no stat spent on it. */
    if (k->files[fi].size > RCACHE_FILE_MAX)
        return NULL;
    size_t al = strlen(arg);
    struct rcache_files *f = atomic_load_explicit(&k->rfiles, memory_order_acquire);
    uint64_t quiet = f && atomic_load(&f->watched) ? ch_quiet() : 0;
    if (quiet) {
        struct rc_file *r = (struct rc_file *)atomic_load_explicit(
            &f->slot[fi * RCACHE_KINDS + kind], memory_order_acquire);
        if (r && atomic_load(&r->r.verified) == quiet && al == r->arglen &&
            !memcmp(r->data + r->r.len + 1, arg, al)) {
            st->st_mode = S_IFREG;
            st->st_size = (off_t)r->key.size;
            *len = r->r.len;
            return r->data;
        }
    }
    /* composed only past the kept reply: a path that does not fit was never kept */
    if (full_path(path, skills_dir(k, kdir), k->files[fi].path) < 0)
        return NULL;
    quiet = ch_current(k, f, quiet);
    /* The last component is not followed: a file swapped for a symlink has
     * another key, and is read (and refused) through the jail again. */
    if (fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) < 0) {
        st->st_mode = 0;
        return NULL;
    }
    if (!f || !S_ISREG(st->st_mode))
        return NULL;
    struct rc_file *r = (struct rc_file *)atomic_load_explicit(
        &f->slot[fi * RCACHE_KINDS + kind], memory_order_acquire);
    if (!r)
        return NULL;
    struct fkey key;
    key_of(st, &key);
    if (!key_eq(&key, &r->key) || ctime_of(st) != r->ctime_ns || al != r->arglen ||
        memcmp(r->data + r->r.len + 1, arg, al))
        return NULL;
    /* The epoch was read before the stat: no event since means no change
     * (through any of the file's names: its own inode is watched). */
    if (quiet)
        atomic_store(&r->r.verified, quiet);
    *len = r->r.len;
    return r->data;
}

/*
 * quiet, once every folder k's replies depend on is watched as it is now,
 * else 0. A watch follows an inode, not a path: a folder renamed away and
 * replaced by a new one at its path (a checkout, an editor saving a tree,
 * a skill moved in) makes one event, and then none for edits in the new
 * folder. So the first verification at each epoch adds the watches again
 * (a folder still watched keeps its watch), between two reads of the epoch
 * that must agree: a change during the renewal moves it. An entry whose
 * folders cannot all be watched any more is checked with stats.
 */
static uint64_t ch_current(struct skill *k, struct rcache_files *f, uint64_t quiet)
{
    if (!quiet || atomic_load(&f->watched_at) == quiet)
        return quiet;
    if (!ch_watch(k)) {
        atomic_store(&f->watched, 0);
        return 0;
    }
    if (ch_quiet() != quiet)
        return 0;
    atomic_store(&f->watched_at, quiet);
    return quiet;
}

/* k's table of slots, made by the first reply kept. */
static struct rcache_files *files_of(struct skill *k)
{
    struct rcache_files *f = atomic_load_explicit(&k->rfiles, memory_order_acquire);
    if (f)
        return f;
    struct rcache_files *mine =
        xcalloc(1, sizeof *mine + RCACHE_KINDS * k->nfiles * sizeof mine->slot[0]);
    /* Before any reply is kept: a reply is verified only by a later get,
     * which then reads the epoch after these watches exist. */
    atomic_init(&mine->watched, ch_watch(k));
    struct rcache_files *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&k->rfiles, &none, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    free(mine);
    return none;
}

int rcache_file_put(struct skill *k, size_t fi, enum rcache_kind kind, const char *arg,
                    const struct stat *st, const char *bytes, size_t len)
{
    if (!S_ISREG(st->st_mode) || st->st_size > RCACHE_FILE_MAX)
        return 0;
    struct fkey key;
    key_of(st, &key);
    /* Not the ctime: a file just touched (or made) would not be kept for a
     * second. Left open: two edits within one timestamp tick that both put
     * the old mtime back look alike. */
    if (now_wall_ms() * 1000000ll - key.mtime_ns < RACY_NS)
        return 0;
    struct rcache_files *f = files_of(k);
    _Atomic(struct rc_rec *) *slot = &f->slot[fi * RCACHE_KINDS + kind];
    struct rc_rec *head = atomic_load_explicit(slot, memory_order_acquire);
    const struct rc_file *old = (const struct rc_file *)head;
    size_t al = strlen(arg);
    if (old && key_eq(&old->key, &key) && old->ctime_ns == ctime_of(st) && old->arglen == al &&
        !memcmp(old->data + old->r.len + 1, arg, al))
        return 0;       /* another thread kept the same reply */
    struct rc_file *r = rec_new(head, sizeof(struct rc_file) + len + 1 + al + 1, len);
    if (!r)
        return 0;
    r->key = key;
    r->ctime_ns = ctime_of(st);
    r->arglen = al;
    memcpy(r->data, bytes, len);
    r->data[len] = '\0';
    memcpy(r->data + len + 1, arg, al + 1);
    return rec_swap(slot, head, &r->r);
}

void rcache_files_free(struct rcache_files *f, size_t nfiles)
{
    if (!f)
        return;
    for (size_t i = 0; i < RCACHE_ENTRY_KINDS; i++)
        rec_free_chain(atomic_load(&f->entry[i]));
    for (size_t i = 0; i < RCACHE_KINDS * nfiles; i++)
        rec_free_chain(atomic_load(&f->slot[i]));
    free(f);
}

/* ---- whole-skill replies ----------------------------------------------------- */

/*
 * The stamps of SKILL.md and every listed file into st[0 .. 1 + nfiles):
 * 0, or -1 when one cannot be taken, is not a regular file, or changed
 * within RACY_NS (then nothing is kept).
 */
static int stamp_all(const struct skill *k, struct rc_stamp *st)
{
    char kdir[SKILL_DIR_MAX];
    const char *dir = skills_dir(k, kdir);
    char path[PATH_MAX];
    int64_t now = now_wall_ms() * 1000000ll;
    for (size_t i = 0; i <= k->nfiles; i++) {
        struct stat sb;
        if (full_path(path, dir, i ? k->files[i - 1].path : "SKILL.md") < 0 ||
            fstatat(AT_FDCWD, path, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(sb.st_mode))
            return -1;
        st[i].dev = sb.st_dev;
        st[i].ino = sb.st_ino;
        st[i].mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        st[i].ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec;
        st[i].size = (int64_t)sb.st_size;
        if (now - st[i].mtime_ns < RACY_NS || now - st[i].ctime_ns < RACY_NS)
            return -1;
    }
    return 0;
}

struct rcache_stamps {
    size_t n;
    int ok;
    struct rc_stamp st[];
};

const char *rcache_entry_get(struct skill *k, unsigned kind, size_t *len,
                             struct rcache_stamps **stamps)
{
    *stamps = NULL;
    if (k->nfiles > RCACHE_ENTRY_FILES)
        return NULL;
    struct rcache_files *f = atomic_load_explicit(&k->rfiles, memory_order_acquire);
    struct rc_entry *e =
        f ? (struct rc_entry *)atomic_load_explicit(&f->entry[kind], memory_order_acquire)
          : NULL;
    uint64_t quiet = e && atomic_load(&f->watched) ? ch_quiet() : 0;
    if (quiet && atomic_load(&e->r.verified) == quiet) {
        *len = e->r.len;
        return e->data;
    }
    quiet = ch_current(k, f, quiet);
    struct rcache_stamps *s = xmalloc(sizeof *s + (k->nfiles + 1) * sizeof s->st[0]);
    s->n = k->nfiles + 1;
    s->ok = stamp_all(k, s->st) == 0;
    *stamps = s;
    if (!s->ok || !e || e->n != s->n || memcmp(e->st, s->st, s->n * sizeof s->st[0]))
        return NULL;
    if (quiet)
        atomic_store(&e->r.verified, quiet);
    *len = e->r.len;
    return e->data;
}

int rcache_entry_put(struct skill *k, unsigned kind, const struct rcache_stamps *stamps,
                     const char *bytes, size_t len)
{
    if (!stamps || !stamps->ok || len > RCACHE_FILE_MAX)
        return 0;
    struct rcache_files *f = files_of(k);
    _Atomic(struct rc_rec *) *slot = &f->entry[kind];
    struct rc_rec *head = atomic_load_explicit(slot, memory_order_acquire);
    size_t sts = stamps->n * sizeof stamps->st[0];
    size_t pad = (len + 1 + 7) & ~(size_t)7;
    struct rc_entry *e = rec_new(head, sizeof(struct rc_entry) + pad + sts, len);
    if (!e)
        return 0;
    e->n = stamps->n;
    memcpy(e->data, bytes, len);
    e->data[len] = '\0';
    e->st = (struct rc_stamp *)(void *)(e->data + pad);
    memcpy(e->st, stamps->st, sts);
    return rec_swap(slot, head, &e->r);
}

size_t rcache_files_bytes(void)
{
    return atomic_load(&files_bytes);
}

/* ---- pages ----------------------------------------------------------------- */

/*
 * A hit writes no line another thread writes: the reader names the page it
 * copies in its thread's hazard slot (one cache line each) instead of
 * counting itself into the way. A writer that takes a page out of its way
 * frees it only once no slot names it; until then the page waits on the
 * table's retired list (freed by a later put, or with the table). The
 * reader's store to its slot and its second load of the way, and the
 * writer's exchange of the way and its load of the slots, are sequentially
 * consistent: either the reader sees the way changed (and does not use the
 * page) or the writer sees the slot (and does not free it).
 */
#define PG_SLOTS 256

static struct {
    _Alignas(64) _Atomic(const void *) p;
} pg_hp[PG_SLOTS];
static struct tslot pg_slot_set[PG_SLOTS];
static struct tslots pg_slots = TSLOTS_INIT(pg_slot_set, NULL);
/* This thread's slot (tslot_mine): -1 until claimed, and while all are
 * taken (the thread then reads no page). */
static _Thread_local int pg_slot = -1;

static int pg_held(const void *pg)
{
    for (int i = 0; i < PG_SLOTS; i++)
        if (atomic_load(&pg_hp[i].p) == pg)
            return 1;
    return 0;
}

struct rc_page {
    uint64_t hash;
    const void *view;
    size_t klen, len, size;
    struct rc_page *retired;    /* next on the table's retired list */
    char data[];            /* the key, then the page */
};

struct rc_way {
    atomic_int writing;     /* a writer is replacing the page */
    _Atomic uint64_t hash;  /* of the page held (a hint: the page's key decides) */
    _Atomic(struct rc_page *) page;
    atomic_int used;        /* the clock's reference bit */
};

struct rcache_pages {
    size_t sets, ways, max_bytes;
    atomic_size_t bytes;
    atomic_size_t count;
    _Atomic(struct rc_page *) retired;  /* out of their ways, still named by a slot */
    atomic_uint *hand;      /* per set */
    /* The keys asked once (rcache_pages_admit): a hash a slot, the last
     * key that mapped there winning it; 0 is an empty slot. */
    _Atomic uint64_t *seen;
    size_t nseen;
    struct rc_way w[];
};

struct rcache_pages *rcache_pages_new(size_t sets, size_t ways, size_t max_bytes)
{
    if (!sets)
        sets = 1;
    if (!ways)
        ways = 1;
    struct rcache_pages *p = xcalloc(1, sizeof *p + sets * ways * sizeof p->w[0]);
    p->sets = sets;
    p->ways = ways;
    p->max_bytes = max_bytes;
    p->hand = xcalloc(sets, sizeof *p->hand);
    p->nseen = RCACHE_PAGE_SEEN_PER_WAY * sets * ways;
    p->seen = xcalloc(p->nseen, sizeof *p->seen);
    return p;
}

void rcache_pages_free(struct rcache_pages *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->sets * p->ways; i++)
        free(atomic_load(&p->w[i].page));
    for (struct rc_page *pg = atomic_load(&p->retired), *next; pg; pg = next) {
        next = pg->retired;
        free(pg);
    }
    free(p->hand);
    free(p->seen);
    free(p);
}

/* A page out of its way: freed now, or retired while a reader names it. */
static void page_retire(struct rcache_pages *p, struct rc_page *pg)
{
    if (!pg_held(pg)) {
        atomic_fetch_sub(&p->bytes, pg->size);
        free(pg);
        return;
    }
    pg->retired = atomic_load(&p->retired);
    while (!atomic_compare_exchange_weak(&p->retired, &pg->retired, pg))
        ;
}

/* The retired pages no reader names any more are freed. */
static void pages_reclaim(struct rcache_pages *p)
{
    if (!atomic_load_explicit(&p->retired, memory_order_relaxed))
        return;
    struct rc_page *pg = atomic_exchange(&p->retired, NULL);
    while (pg) {
        struct rc_page *next = pg->retired;
        page_retire(p, pg);
        pg = next;
    }
}

static uint64_t page_hash(const void *view, const char *key, size_t klen)
{
    uint64_t h = hash_fnv1a(key, klen);
    uintptr_t v = (uintptr_t)view;
    h ^= (uint64_t)v * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static int page_is(const struct rc_page *pg, uint64_t h, const void *view, const char *key,
                   size_t klen)
{
    return pg && pg->hash == h && pg->view == view && pg->klen == klen &&
           !memcmp(pg->data, key, klen);
}

int rcache_pages_get(struct rcache_pages *p, const void *view, const char *key, size_t klen,
                     char **out, size_t *len)
{
    uint64_t h = page_hash(view, key, klen);
    struct rc_way *set = &p->w[(h % p->sets) * p->ways];
    int slot = -1;
    for (size_t i = 0; i < p->ways; i++) {
        struct rc_way *w = &set[i];
        if (atomic_load_explicit(&w->hash, memory_order_relaxed) != h)
            continue;
        if (slot < 0 && (slot = tslot_mine(&pg_slots, &pg_slot)) < 0)
            return 0;
        /* Named before it is looked at; used only if still the way's page
         * after that (a writer that took it out may not have seen the slot). */
        struct rc_page *pg = atomic_load(&w->page);
        atomic_store(&pg_hp[slot].p, pg);
        if (atomic_load(&w->page) != pg)
            continue;
        int hit = page_is(pg, h, view, key, klen);
        if (hit) {
            *len = pg->len;
            *out = xmalloc(pg->len + 1);
            memcpy(*out, pg->data + pg->klen, pg->len);
            (*out)[pg->len] = '\0';
            /* written only when the clock has cleared it */
            if (!atomic_load_explicit(&w->used, memory_order_relaxed))
                atomic_store_explicit(&w->used, 1, memory_order_relaxed);
        }
        atomic_store_explicit(&pg_hp[slot].p, NULL, memory_order_release);
        if (hit)
            return 1;
    }
    if (slot >= 0)
        atomic_store_explicit(&pg_hp[slot].p, NULL, memory_order_release);
    return 0;
}

int rcache_pages_admit(struct rcache_pages *p, const void *view, const char *key, size_t klen)
{
    uint64_t h = page_hash(view, key, klen) | 1;    /* never 0, the empty slot */
    /* Mixed, not h's own bits: its low bits chose the set, and its high
     * bits hardly move with a key's last byte (FNV-1a's prime). */
    uint64_t m = h * 0x9e3779b97f4a7c15ull;
    _Atomic uint64_t *slot = &p->seen[(m ^ (m >> 32)) % p->nseen];
    if (atomic_load_explicit(slot, memory_order_relaxed) == h)
        return 1;
    atomic_store_explicit(slot, h, memory_order_relaxed);
    return 0;
}

int rcache_pages_put(struct rcache_pages *p, const void *view, const char *key, size_t klen,
                     const char *page, size_t len)
{
    if (len > RCACHE_PAGE_MAX)
        return 0;
    pages_reclaim(p);
    uint64_t h = page_hash(view, key, klen);
    size_t si = h % p->sets;
    struct rc_way *set = &p->w[si * p->ways];
    struct rc_way *victim = NULL;
    for (size_t i = 0; i < p->ways; i++) {
        if (atomic_load_explicit(&set[i].hash, memory_order_relaxed) == h)
            return 0;   /* kept already (or a colliding key: the older one stays) */
        if (!victim && !atomic_load_explicit(&set[i].page, memory_order_relaxed))
            victim = &set[i];
    }
    /* The clock: a way used since the hand last passed gets another turn. */
    for (size_t n = 0; !victim && n < 2 * p->ways; n++) {
        struct rc_way *w = &set[atomic_fetch_add(&p->hand[si], 1) % p->ways];
        if (!atomic_exchange_explicit(&w->used, 0, memory_order_relaxed))
            victim = w;
    }
    if (!victim)
        return 0;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&victim->writing, &idle, 1))
        return 0;       /* being written: this page is not kept */
    size_t size = sizeof(struct rc_page) + klen + len;
    struct rc_page *old = atomic_load(&victim->page);
    size_t freed = old ? old->size : 0;
    if (!charge(&p->bytes, size, freed, p->max_bytes)) {
        atomic_store(&victim->writing, 0);
        return 0;
    }
    struct rc_page *pg = xmalloc(size);
    pg->hash = h;
    pg->view = view;
    pg->klen = klen;
    pg->len = len;
    pg->size = size;
    pg->retired = NULL;
    memcpy(pg->data, key, klen);
    memcpy(pg->data + klen, page, len);
    atomic_exchange(&victim->page, pg);
    atomic_store(&victim->hash, h);
    atomic_store_explicit(&victim->used, 1, memory_order_relaxed);
    if (old)
        page_retire(p, old);
    else
        atomic_fetch_add(&p->count, 1);
    atomic_store(&victim->writing, 0);
    return 1;
}

void rcache_pages_usage(struct rcache_pages *p, size_t *pages, size_t *bytes)
{
    *pages = atomic_load(&p->count);
    *bytes = atomic_load(&p->bytes);
}
