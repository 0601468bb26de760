/*
 * skills.c - the immutable snapshot: building it from a scan (scan.c), its
 * lookup tables and search index, publishing it, rescans and its safe
 * reclamation.
 *
 * A rescan first stats everything the current snapshot watched (or reads
 * inotify events); when nothing moved it stops there, allocating nothing.
 * Otherwise it builds a new snapshot, reusing the entries of skills whose
 * SKILL.md and folders did not change, and publishes it with one atomic
 * store.
 *
 * Reclamation: a reader publishes the snapshot it is about to take in its
 * thread's hazard slot, checks that it is still current, takes a reference
 * and clears the slot; a request's reader (skills_acquire_held) keeps the
 * slot instead of counting, so a request writes no shared line. A retired snapshot is freed only by the rescanning
 * thread, once no hazard slot names it and its count is zero (checked in
 * that order; see docs/internals/snapshot.md for why the order matters).
 *
 * Called by: main (new/free), the HTTP threads (acquire/find), the
 * refresher and reload_skills (rescan).
 */
#include "skills_int.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "search.h"
#include "util.h"

#define HP_SLOTS 256

/* Even with inotify, a full stat pass now and then (network filesystems do
 * not always send events). */
#define FULL_PASS_NS (60ull * 1000000000u)

/* ---- hazard slots -------------------------------------------------------- */

/* One cache line a slot: two threads storing into neighbouring slots on
 * every request would otherwise pass one line between their cores. */
struct hp_slot {
    _Alignas(64) _Atomic(struct snapshot *) p;
};
static struct hp_slot hp_[HP_SLOTS];
#define hp(i) (hp_[i].p)
static pthread_mutex_t hp_fallback = PTHREAD_MUTEX_INITIALIZER;

/* A slot still holding a snapshot belongs to a call that outlives its
 * thread: it stays taken (and the snapshot protected) for good. */
static int hp_keep(int slot)
{
    return atomic_load(&hp(slot)) != NULL;
}

static struct tslot hp_slot_set[HP_SLOTS];
static struct tslots hp_slots = TSLOTS_INIT(hp_slot_set, hp_keep);
static _Thread_local int hp_slot = -1;

/* This thread's slot, claimed on first use; -1 when all are taken. */
static inline int hp_mine(void)
{
    return tslot_mine(&hp_slots, &hp_slot);
}

struct snapshot *skills_acquire(struct skills *S)
{
    struct snapshot *s;
    int slot = hp_mine();
    if (slot < 0 || atomic_load_explicit(&hp(slot), memory_order_relaxed)) {
        /* More threads than slots, or this thread's slot holds a request's
         * snapshot (skills_acquire_held): the rescanner holds this mutex
         * while it reclaims, so a reference taken under it is safe. */
        pthread_mutex_lock(&hp_fallback);
        s = atomic_load(&S->cur);
        atomic_fetch_add(&snap_of(s)->refs, 1);
        pthread_mutex_unlock(&hp_fallback);
        return s;
    }
    for (;;) {
        s = atomic_load(&S->cur);
        atomic_store(&hp(slot), s);
        if (atomic_load(&S->cur) == s)
            break;
    }
    atomic_fetch_add(&snap_of(s)->refs, 1);
    atomic_store(&hp(slot), NULL);
    return s;
}

struct snapshot *skills_acquire_held(struct skills *S, int *hold)
{
    int slot = hp_mine();
    /* The slot is busy while an earlier request of this thread still holds
     * it (a nested acquire, or a call finished on another thread): then a
     * counted reference, as skills_acquire. */
    if (slot < 0 || atomic_load_explicit(&hp(slot), memory_order_relaxed)) {
        *hold = 0;
        return skills_acquire(S);
    }
    struct snapshot *s;
    for (;;) {
        s = atomic_load(&S->cur);
        atomic_store(&hp(slot), s);
        if (atomic_load(&S->cur) == s)
            break;
    }
    *hold = slot + 1;
    return s;
}

void skills_release_held(struct snapshot *s, int hold)
{
    if (hold > 0)
        atomic_store(&hp(hold - 1), NULL);
    else
        skills_release(s);
}

void skills_release(struct snapshot *s)
{
    if (s)
        atomic_fetch_sub(&snap_of(s)->refs, 1);
}

static int hp_protects(const struct snapshot *s)
{
    for (int i = 0; i < HP_SLOTS; i++)
        if (atomic_load(&hp(i)) == s)
            return 1;
    return 0;
}

/* ---- snapshots ----------------------------------------------------------- */

static void snapshot_free(struct skills *S, struct snapshot *s)
{
    if (!s)
        return;
    struct snap *p = snap_of(s);
    if (s->ext && S->ext_free)
        S->ext_free(s->ext);
    for (struct snapshot_attach *a = atomic_load(&s->attached), *next; a; a = next) {
        next = a->next;
        a->free(a);
    }
    if (s->gate) {
        for (size_t i = 0; i < s->n; i++) {
            free(s->gate[i].reason);
            skills_entry_release(s->gate[i].serve);
        }
        free(s->gate);
    }
    if (p->gate_ref && S->gate_release)
        S->gate_release(p->gate_ref);
    for (size_t i = 0; i < s->n; i++)
        skills_entry_release(s->v[i]);
    free(s->v);
    free(p->by_qname);
    free(p->by_name);
    free(p->shared);
    search_free(atomic_load_explicit(&s->search_ix, memory_order_relaxed));
    json_decref(s->errors);
    free(s->hook_pre);
    free(s->hook_post);
    for (size_t i = 0; i < p->nw; i++)
        free(p->w[i].path);
    free(p->w);
    free(p->unkeyed);
    free(p);
}

/* ---- lookup tables ------------------------------------------------------- */

static void table_put(uint32_t *t, size_t cap, const char *key, uint32_t val)
{
    size_t mask = cap - 1;
    size_t i = hash_fnv1a32(key, strlen(key)) & mask;
    while (t[i])
        i = (i + 1) & mask;
    t[i] = val;
}

/* Index+1 of the entry whose (bare or qualified) name is key, or 0. */
static uint32_t table_get(const uint32_t *t, size_t cap, const char *key, size_t len,
                          struct skill *const *v, int bare)
{
    size_t mask = cap - 1;
    size_t i = hash_fnv1a32(key, len) & mask;
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

/*
 * by_name holds the first entry of each bare name; shared[i] marks entries
 * whose bare name another entry carries too, so a lookup by that bare name
 * is refused as ambiguous instead of silently picking one team.
 */
static void build_tables(struct snapshot *s)
{
    struct snap *p = snap_of(s);
    size_t cap = 16;
    while (cap < s->n * 2 + 2)
        cap *= 2;
    p->tcap = cap;
    p->by_qname = xcalloc(cap, sizeof *p->by_qname);
    p->by_name = xcalloc(cap, sizeof *p->by_name);
    p->shared = xcalloc(s->n ? s->n : 1, 1);
    for (size_t i = 0; i < s->n; i++)
        table_put(p->by_qname, cap, s->v[i]->qname, (uint32_t)i + 1);
    for (size_t i = 0; i < s->n; i++) {
        const char *nm = s->v[i]->name;
        uint32_t x = table_get(p->by_name, cap, nm, strlen(nm), s->v, 1);
        if (x) {
            p->shared[x - 1] = 1;
            p->shared[i] = 1;
        } else {
            table_put(p->by_name, cap, nm, (uint32_t)i + 1);
        }
    }
}

char *skills_uri(const struct skill *k, const char *rel)
{
    static const char keep[] = "!$&'()*+,;=:@/";
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "skill://");
    buf_pct_encode(&b, k->qname, strlen(k->qname), keep);
    if (rel && *rel) {
        buf_puts(&b, "/");
        buf_pct_encode(&b, rel, strlen(rel), keep);
    }
    return buf_steal(&b, NULL);
}

struct skill *skills_find(const struct snapshot *s, const char *name, size_t len,
                          int *ambiguous)
{
    return skills_find_in(s, NULL, name, len, ambiguous, NULL);
}

struct skill *skills_find_in(const struct snapshot *s, const unsigned char *mask,
                             const char *name, size_t len, int *ambiguous, size_t *idx)
{
    *ambiguous = 0;
    if (!s->n)
        return NULL;
    const struct snap *p = snap_of(s);
    uint32_t x = table_get(p->by_qname, p->tcap, name, len, s->v, 0);
    if (x && (!mask || mask[x - 1])) {
        if (idx)
            *idx = x - 1;
        return s->v[x - 1];
    }
    if (memchr(name, '/', len))
        return NULL;
    x = table_get(p->by_name, p->tcap, name, len, s->v, 1);
    if (!x)
        return NULL;
    if (!p->shared[x - 1]) {
        if (mask && !mask[x - 1])
            return NULL;
        if (idx)
            *idx = x - 1;
        return s->v[x - 1];
    }
    /* a shared bare name: what counts is how many of its entries are seen */
    size_t seen = 0, at = 0;
    for (size_t i = 0; i < s->n; i++)
        if ((!mask || mask[i]) && strlen(s->v[i]->name) == len &&
            !memcmp(s->v[i]->name, name, len)) {
            seen++;
            at = i;
        }
    if (seen == 1) {
        if (idx)
            *idx = at;
        return s->v[at];
    }
    *ambiguous = seen > 1;
    return NULL;
}

size_t skills_sharing(const struct snapshot *s, const char *name, const char **out, size_t max)
{
    return skills_sharing_in(s, NULL, name, out, max);
}

size_t skills_sharing_in(const struct snapshot *s, const unsigned char *mask, const char *name,
                         const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n && n < max; i++)
        if ((!mask || mask[i]) && !strcmp(s->v[i]->name, name))
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
    return skills_suggest_in(s, NULL, name, out, max);
}

size_t skills_suggest_in(const struct snapshot *s, const unsigned char *mask, const char *name,
                         const char **out, size_t max)
{
    size_t n = 0;
    size_t best[16];
    if (max > 16)
        max = 16;
    for (size_t i = 0; i < s->n; i++) {
        if (mask && !mask[i])
            continue;
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

/* ---- rescans ------------------------------------------------------------- */

/* Is path's stat key other than *key (or is it gone)? */
static int key_moved(const char *path, const struct fkey *key)
{
    struct stat st;
    struct fkey k;
    if (stat(path, &st) < 0)
        return 1;
    key_of(&st, &k);
    return !key_eq(&k, key);
}

/* Did anything the snapshot watched move? Stats only; allocates nothing. */
static int tree_changed(const struct snapshot *s)
{
    struct stat st;
    char buf[PATH_MAX + 16];
    for (size_t i = 0; i < snap_of(s)->nw; i++) {
        const struct watch *w = &snap_of(s)->w[i];
        if (w->missing ? stat(w->path, &st) == 0 : key_moved(w->path, &w->key))
            return 1;
    }
    /* A keyed entry was reused or built only when what is on disk matched
     * its keys, so they are what the build saw. */
    for (size_t i = 0; i < s->n; i++) {
        const struct skill *k = s->v[i];
        if (!snap_keyed(s, i))
            continue;
        if (key_moved(skills_md_path(k, buf, sizeof buf), &k->md_key))
            return 1;
        for (size_t d = 0; d < k->ndirs; d++)
            if (key_moved(skills_dir_path(k, d, buf), &skills_dir_keys(k)[d]))
                return 1;
    }
    return 0;
}

/* Adds an inotify watch on the folder path (anything else is skipped),
 * known to read_events as id (a string that lives as long as the watch):
 * -1 when it cannot be added. */
static int ino_watch(struct skills *S, const char *path, const char *id)
{
    const uint32_t mask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                          IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return 0;
    int wd = inotify_add_watch(S->ino_fd, path, mask);
    if (wd < 0) {
        log_warn("skills: inotify watch on %s failed (%s); refresh ticks will stat", path,
                 strerror(errno));
        close(S->ino_fd);
        S->ino_fd = -1;
        return -1;
    }
    if ((size_t)wd >= S->nwd) {
        size_t n = S->nwd ? S->nwd : 64;
        while (n <= (size_t)wd)
            n *= 2;
        S->wd_path = xrealloc(S->wd_path, n * sizeof *S->wd_path);
        memset(S->wd_path + S->nwd, 0, (n - S->nwd) * sizeof *S->wd_path);
        S->nwd = n;
    }
    S->wd_path[wd] = id;
    return 0;
}

/*
 * (Re)creates the inotify watches for the folders snapshot s watches (its
 * list's and its keyed entries'). Files (SKILL.md) are covered by their
 * folder's watch. Falls back to stat passes when inotify is unavailable or
 * its watch limit is reached.
 */
static void watches_setup(struct skills *S, const struct snapshot *s)
{
    S->ino_pending = 0;
    if (S->ino_fd >= 0)
        close(S->ino_fd);
    S->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (S->ino_fd < 0) {
        /* Most often EMFILE: the user's fs.inotify.max_user_instances (128 by
         * default) is spent by other processes. Said once, not every rebuild. */
        if (errno != S->ino_init_errno)
            log_warn("skills: inotify unavailable (%s); refresh ticks will stat every watched "
                     "file", strerror(errno));
        S->ino_init_errno = errno;
        return;
    }
    S->ino_init_errno = 0;
    if (S->nwd)
        memset(S->wd_path, 0, S->nwd * sizeof *S->wd_path);
    for (size_t i = 0; i < snap_of(s)->nw; i++)
        if (!snap_of(s)->w[i].missing &&
            ino_watch(S, snap_of(s)->w[i].path, snap_of(s)->w[i].path) < 0)
            return;
    char path[SKILL_DIR_MAX];
    for (size_t i = 0; i < s->n; i++)
        for (size_t d = 0; snap_keyed(s, i) && d < s->v[i]->ndirs; d++)
            if (ino_watch(S, skills_dir_path(s->v[i], d, path), skills_dir_paths(s->v[i])[d]) <
                0)
                return;
    /* A missing root shows up as a change only through a stat pass. */
    for (size_t i = 0; i < snap_of(s)->nw; i++)
        if (snap_of(s)->w[i].missing)
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
    const struct snap *p = snap_of(s);
    struct stat st;
    for (size_t i = 0; i < p->nw; i++)
        if (p->w[i].missing && stat(p->w[i].path, &st) == 0)
            return 1;
    return 0;
}

/* Remembers that a file in the watched folder path was written in place. */
static void moved_add(struct skills *S, const char *path)
{
    for (size_t i = 0; i < S->nmoved; i++)
        if (S->moved[i] == path)
            return;
    if (S->nmoved < sizeof S->moved / sizeof *S->moved)
        S->moved[S->nmoved++] = path;
    else
        S->moved_all = 1;
}

/* Reads the pending inotify events: 1 when there were any. A file event
 * (not a folder's, not an ignored name) leaves its folder in S->moved. */
static int read_events(struct skills *S)
{
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    const uint32_t written = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB;
    int any = 0;
    ssize_t n;
    while ((n = read(S->ino_fd, ev, sizeof ev)) > 0) {
        any = 1;
        for (const char *p = ev; p < ev + n;) {
            const struct inotify_event *e = (const struct inotify_event *)(const void *)p;
            p += sizeof *e + e->len;
            if (!e->len || (e->mask & IN_ISDIR) || !(e->mask & written) ||
                scan_ignored_name(e->name) || e->wd < 0 || (size_t)e->wd >= S->nwd ||
                !S->wd_path[e->wd])
                continue;
            moved_add(S, S->wd_path[e->wd]);
        }
    }
    return any;
}

/* Marks (on) or unmarks the entries of s with a folder in S->moved; the
 * scan looks into the files of the marked ones (scan.c, entry_unchanged). */
static void moved_mark(struct skills *S, struct snapshot *s, int on)
{
    if (!S->nmoved && !S->moved_all)
        return;
    for (size_t i = 0; i < s->n; i++) {
        struct skill *k = s->v[i];
        int hit = S->moved_all;
        for (size_t d = 0; !hit && d < k->ndirs; d++)
            for (size_t m = 0; !hit && m < S->nmoved; m++)
                hit = S->moved[m] == skills_dir_paths(k)[d];
        if (hit)
            k->files_moved = (unsigned char)on;
    }
    if (!on) {
        S->nmoved = 0;
        S->moved_all = 0;
    }
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
        int any = read_events(S);
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
    return S->nmoved || S->moved_all;
}

/*
 * s's search index, from its entries' card and body terms (and old's index,
 * for the entries s took over from it). The entries' card terms go once
 * it holds them: the next build carries them from it.
 */
static struct search_index *index_build(struct snapshot *s, const struct snapshot *old)
{
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
    /* An entry whose card terms were released is always one old's index
     * holds (it was in every snapshot since its terms were merged); should
     * one ever come without, it is tokenized again rather than lose them. */
    struct search_terms **made = xcalloc(s->n ? s->n : 1, sizeof *made);
    for (size_t i = 0; i < s->n; i++) {
        if (!terms[i] && prev_doc[i] == SEARCH_NO_DOC)
            terms[i] = made[i] = search_terms_new(&docs[i]);
    }
    struct search_index *ix = search_new_carry(docs, terms, xterms, s->n,
                                               old ? skills_search(old) : NULL, prev_doc);
    for (size_t i = 0; i < s->n; i++) {
        snap_of(s)->bodies_indexed += (size_t)search_has_body(ix, i);
        search_terms_free(made[i]);
        /* ix holds them now, and s is published by every caller: the next
         * build carries them from it. Scanner role (or the first index's
         * thread, which every build waits for): no other build reads them. */
        search_terms_free(s->v[i]->terms);
        s->v[i]->terms = NULL;
    }
    free(made);
    scan_release_terms(s);
    free(prev_doc);
    free(xterms);
    free(terms);
    free(docs);
    return ix;
}

/* Waiters for a first snapshot's index (one process, rarely more than one
 * waiter, and only in the first moments after a start). */
static pthread_mutex_t late_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t late_cv = PTHREAD_COND_INITIALIZER;

struct search_index *skills_search(const struct snapshot *s)
{
    struct search_index *ix = atomic_load_explicit(&s->search_ix, memory_order_acquire);
    if (ix)
        return ix;
    pthread_mutex_lock(&late_mu);
    while (!(ix = atomic_load_explicit(&s->search_ix, memory_order_acquire)))
        pthread_cond_wait(&late_cv, &late_mu);
    pthread_mutex_unlock(&late_mu);
    return ix;
}

static void index_publish(struct snapshot *s, struct search_index *ix)
{
    pthread_mutex_lock(&late_mu);
    atomic_store_explicit(&s->search_ix, ix, memory_order_release);
    pthread_cond_broadcast(&late_cv);
    pthread_mutex_unlock(&late_mu);
}

void (*skills_index_late_hook)(void);

/*
 * The first snapshot's index, built while the snapshot already answers:
 * the index is a serial pass after the parallel one (~17 % of a build at
 * 5,000 skills, ~0.8 s at 100,000), and nothing but a query needs it. The
 * snapshot stays current until a build replaces it, and every build first
 * waits for its old snapshot's index (build_snapshot), so s outlives this.
 */
static void *index_late(void *arg)
{
    struct snapshot *s = arg;
    if (skills_index_late_hook)
        skills_index_late_hook();
    double t0 = now_ms();
    struct search_index *ix = index_build(s, NULL);
    /* logged first: a caller that waited for the index (validate_list,
     * which silences the log meanwhile) sees no line after it */
    log_info("skills: generation 1: search index of %zu skills (%.1f ms, on a thread of its "
             "own)", s->n, now_ms() - t0);
    index_publish(s, ix);
    malloc_trim(0);
    return NULL;
}

/* late: leave the index to index_late (the first snapshot only). */
static struct snapshot *build_snapshot(struct skills *S, struct snapshot *old, uint64_t gen,
                                       int late)
{
    double t0 = now_ms();
    /* The old snapshot's index first: it carries into this one, and its
     * thread frees the card terms of entries this build reuses. */
    if (old)
        skills_search(old);
    struct snapshot *s = scan_tree(S, old);
    s->generation = gen;
    build_tables(s);

    if (S->ix && old)
        bodies_inline(s);
    if (!late)
        atomic_store_explicit(&s->search_ix, index_build(s, old), memory_order_relaxed);
    if (S->gate)
        snap_of(s)->gate_ref = S->gate(s, S->gate_arg);
    /* Parsing leaves freed blocks in every thread's arena (libyaml's buffers
     * above all); hand them back once per build rather than carry them
     * (and once more after a late index, whose builder's go the same way). */
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
        if (!hp_protects(r) && atomic_load(&snap_of(r)->refs) == 0) {
            *pp = snap_of(r)->retired_next;
            snapshot_free(S, r);
        } else {
            pp = &snap_of(r)->retired_next;
        }
    }
    pthread_mutex_unlock(&hp_fallback);
    pthread_mutex_unlock(&S->scan_mu);
}

size_t skills_retired(struct skills *S)
{
    size_t n = 0;
    pthread_mutex_lock(&S->scan_mu);
    for (const struct snapshot *r = S->retired; r; r = snap_of(r)->retired_next)
        n++;
    pthread_mutex_unlock(&S->scan_mu);
    return n;
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

static _Atomic(skills_publish_fn) publish_hook;

void skills_on_publish(skills_publish_fn fn)
{
    atomic_store(&publish_hook, fn);
}

/* The rescan proper; the caller holds the scanner role (not the mutex). */
static void do_scan(struct skills *S, int force, struct skills_report *r)
{
    struct snapshot *old = atomic_load(&S->cur);
    double t0 = now_ms();
    memset(r, 0, sizeof *r);
    r->gen_before = r->gen_after = old->generation;
    if (force && S->ino_fd >= 0)
        read_events(S);
    if (!force && !maybe_changed(S, old)) {
        r->unchanged = 1;
        r->ms = now_ms() - t0;
        return;
    }
    moved_mark(S, old, 1);
    struct snapshot *s = build_snapshot(S, old, old->generation + 1, 0);
    moved_mark(S, old, 0);
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
    skills_publish_fn hook = atomic_load(&publish_hook);
    if (hook && s->generation != old->generation)
        hook(old, s);               /* old stays valid until retired below */
    bodies_release_xterms(s);
    bodies_kick(S, s);
    watches_setup(S, s);
    pthread_mutex_lock(&S->scan_mu);
    snap_of(old)->retired_next = S->retired;
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

static void set_gate(struct skills *S, skills_gate_fn gate, void (*release)(void *ref), void *arg)
{
    S->gate = gate;
    S->gate_release = release;
    S->gate_arg = arg;
}

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
    set_gate(S, gate, release, gate_arg);
    pthread_mutex_init(&S->scan_mu, NULL);
    pthread_cond_init(&S->scan_cv, NULL);
    struct snapshot *s = build_snapshot(S, NULL, 1, 1);
    /* before the index's thread starts, whose line comes after this one */
    log_info("skills: generation 1: %zu skills from %zu root(s), %zu problems (%.1f ms)", s->n,
             nroots, json_array_size(s->errors), s->build_ms);
    /* The index is built beside the default list's render (ext_build) and
     * the first answers; inline when no thread can be had. */
    S->late_on = pthread_create(&S->late, NULL, index_late, s) == 0;
    if (!S->late_on)
        index_publish(s, index_build(s, NULL));
    if (S->ext_build)
        s->ext = S->ext_build(s, S->ext_arg);
    atomic_init(&S->cur, s);
    S->ino_fd = -1;
    S->ino_pending = 1;
    return S;
}

void skills_free(struct skills *S)
{
    if (!S)
        return;
    bodies_stop(S);
    if (S->late_on)
        pthread_join(S->late, NULL);
    reclaim(S);
    while (S->retired) {
        struct snapshot *r = S->retired;
        S->retired = snap_of(r)->retired_next;
        snapshot_free(S, r);
    }
    snapshot_free(S, atomic_load(&S->cur));
    skills_report_cleanup(&S->last);
    if (S->ino_fd >= 0)
        close(S->ino_fd);
    free(S->wd_path);
    pthread_mutex_destroy(&S->scan_mu);
    pthread_cond_destroy(&S->scan_cv);
    free(S);
}

const struct skill_gate *skills_gate_of(const struct snapshot *s, const struct skill *k)
{
    if (!s->gate)
        return NULL;
    const struct snap *p = snap_of(s);
    uint32_t x = table_get(p->by_qname, p->tcap, k->qname, strlen(k->qname), s->v, 0);
    return x && s->v[x - 1] == k ? &s->gate[x - 1] : NULL;
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
