/*
 * skills_int.h - what the three parts of the skill index share, and no
 * other module: skills.c (the snapshot: publication, lookup tables, rescans,
 * reclamation), scan.c (the tree scan that builds entries and the watch
 * list) and bodies.c (the body cache and the body indexer). Everything else
 * uses skills.h.
 */
#ifndef SKILL_SKILLS_INT_H
#define SKILL_SKILLS_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "skills.h"

#define SKILL_MD_MAX (4u << 20)

/*
 * A path the refresher stats (and watches with inotify, for folders) besides
 * what the served entries carry: a served entry's SKILL.md and folders are
 * stat'ed against the entry's own keys (md_key, dir_keys), so the list holds
 * only the roots, team folders, global hooks, what is missing or broken, and
 * (under a gate) every file.
 */
struct watch {
    char *path;             /* owned */
    struct fkey key;
    unsigned char missing;  /* path did not exist when the snapshot was built */
};

/*
 * A snapshot as the index keeps it: the public part readers see first, then
 * what only skills.c, scan.c and bodies.c touch. Readers get a struct
 * snapshot *; snap_of() is free (pub is the first member).
 */
struct snap {
    struct snapshot pub;
    atomic_long refs;
    uint32_t *by_qname;     /* open-addressing tables of index+1 */
    uint32_t *by_name;      /* bare name -> first entry carrying it */
    unsigned char *shared;  /* per entry: its bare name is not unique */
    size_t tcap;            /* power of two */
    size_t bodies_indexed;  /* entries whose body terms are in search */
    struct watch *w;        /* what the refresher stats besides the entries' keys */
    size_t nw;
    /* per entry, or NULL when none is: 1 when what is on disk is not what the
     * entry was built from (a broken SKILL.md, the previous version served),
     * so its keys are not watched; the list holds its current ones */
    unsigned char *unkeyed;
    void *gate_ref;         /* what gate[].approved borrows from (released with s) */
    struct term_chunk *term_chunks; /* its new entries' card terms, until indexed */
    struct snapshot *retired_next;
};

static inline struct snap *snap_of(const struct snapshot *s)
{
    return (struct snap *)(uintptr_t)((const char *)s - offsetof(struct snap, pub));
}

/* Is entry i of s watched through its own keys? */
static inline int snap_keyed(const struct snapshot *s, size_t i)
{
    return !snap_of(s)->unkeyed || !snap_of(s)->unkeyed[i];
}

/* Paths a stat pass over s stats: the list, and each keyed entry's SKILL.md
 * and folders (benches, tests). */
static inline size_t snap_watched(const struct snapshot *s)
{
    size_t n = snap_of(s)->nw;
    for (size_t i = 0; i < s->n; i++)
        if (snap_keyed(s, i))
            n += 1 + s->v[i]->ndirs;
    return n;
}

struct bodies_indexer;

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
    int ino_init_errno;             /* why inotify_init1 last failed (logged once a cause), or 0 */
    uint64_t last_full_ns;          /* the last stat pass */
    /* A file written in place moves neither its folder's stat nor
     * SKILL.md's: the watched folders inotify named for such writes since
     * the last rescan (strings borrowed from the current snapshot's list and
     * entries, by watch descriptor, and told apart by address: an entry's
     * are relative to its folder), for that rescan to look into. */
    const char **wd_path;
    size_t nwd;
    const char *moved[64];
    size_t nmoved;
    int moved_all;                  /* more than moved holds: look into every entry */

    /* the body indexer (bodies.c), NULL until skills_index_bodies */
    struct bodies_indexer *ix;

    /* the first snapshot's index, built after it is published (index_late) */
    pthread_t late;
    int late_on;                    /* late is to be joined */
};

/* Called by the first index's thread before it builds (tests hold it there). */
extern void (*skills_index_late_hook)(void);

/* ---- stat keys ----------------------------------------------------------- */

static inline void key_of(const struct stat *st, struct fkey *k)
{
    k->dev = st->st_dev;
    k->ino = st->st_ino;
    k->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    k->size = S_ISDIR(st->st_mode) ? 0 : (int64_t)st->st_size;
}

static inline int key_eq(const struct fkey *a, const struct fkey *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns &&
           a->size == b->size;
}

/* ---- scan.c ---------------------------------------------------------------- */

/*
 * Scans every root and the hooks folder: a new snapshot (refs 0) with its
 * entries sorted by qualified name (v, n; reused ones taken from old), its
 * watch list, its problems and its global hooks. The rest (generation,
 * lookup tables, search index, gate) is the caller's. Scanner role.
 */
struct snapshot *scan_tree(struct skills *S, struct snapshot *old);
/*
 * A frontmatter text (compact JSON, as jansson dumps it) less the members
 * that are only placeholders for the fields an entry keeps ("description":"",
 * "name":"", "version":"", "title":"", "tags":[]), with *slots saying where
 * they were: NULL when nothing else is left. The stripped text is kept only
 * if scan_fm_join gives text back byte for byte; otherwise it is text
 * itself, *slots 0. malloc'd.
 */
char *scan_fm_strip(const char *text, unsigned *slots);
/* The whole text again from what scan_fm_strip kept (malloc'd; NULL for
 * NULL without slots). */
char *scan_fm_join(const char *rest, unsigned slots);
/* Is n a name never part of a skill (dotfiles, caches, VCS folders)? */
int scan_ignored_name(const char *n);

/* Reads up to max bytes of fd from offset 0, stopping early once it has the
 * size that stat reported (one read for a small file, not two). */
ssize_t scan_read_prefix(int fd, char *buf, size_t max, off_t size);

/* Frees the chunks holding the card terms of s's new entries: every entry's
 * terms pointer into them must be NULL by then (the build that indexes s). */
void scan_release_terms(struct snapshot *s);

/* ---- bodies.c -------------------------------------------------------------- */

/* k->xterms once an index published in S->cur holds them: each later build
 * takes them from the index it replaces (search_new_carry), so the list is
 * freed. Never dereferenced; any non-NULL value means "read". */
extern char bodies_merged_mark;
#define XTERMS_MERGED ((struct search_terms *)(void *)&bodies_merged_mark)

/* A rebuild after start-up: gives the new and changed entries of s their
 * body terms before s is published, unless there are too many of them. */
void bodies_inline(struct snapshot *s);
/* Wakes the body indexer when s has entries without body terms. */
void bodies_kick(struct skills *S, const struct snapshot *s);
/* s is current: frees the body-term lists its index holds. Scanner role. */
void bodies_release_xterms(struct snapshot *s);
/* Stops the indexer thread, if any (skills_free). */
void bodies_stop(struct skills *S);

#endif
