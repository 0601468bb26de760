/*
 * skills.h - the skill index: scan the roots, build an immutable snapshot,
 * publish it through one atomic pointer, refresh it in the background.
 * Implemented by skills.c (the snapshot), scan.c (the tree scan) and
 * bodies.c (the body cache and indexer), which share skills_int.h.
 *
 * Readers (HTTP threads) call skills_acquire() once per request and use only
 * that snapshot; it never changes while held. No lock is taken on that path.
 * A rescan builds a new snapshot off to the side, reusing the entries of
 * skills whose files did not change, and swaps it in; the old one is freed
 * when its last reader releases it (hazard pointer + reference count; see
 * docs/internals/snapshot.md).
 */
#ifndef SKILL_SKILLS_H
#define SKILL_SKILLS_H

#include <jansson.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "markdown.h"

/* Identity of a file or directory's content, as far as stat can tell. */
struct fkey {
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns;
    int64_t size;
};

struct skill_file {
    char *path;             /* relative to the skill folder, '/'-separated */
    int64_t size;
    int64_t mtime_ns;       /* with size, tells an edit in place (notify.c) */
};

/* Bytes rendered once and kept with the entry they describe. */
struct skill_rendered {
    size_t len;
    size_t key_len;         /* the argument it answers (a section name as asked),
                               stored at data + len + 1 */
    char data[];
};

/* A SKILL.md body read on first use; immutable once published. */
struct skill_body {
    char *text;             /* the body, frontmatter removed, NUL-terminated */
    size_t len;
    struct md_section *sec;
    size_t nsec;
    struct fkey key;        /* the SKILL.md it was read from */
    /* load_skill(name) rendered once per era, on first use (set-once CAS) */
    _Atomic(struct skill_rendered *) rendered[2];
    /* load_skill(name, section): [2 * section + era], the same way; the
     * first spelling of the section asked for is the one kept */
    _Atomic(struct skill_rendered *) *sec_rendered;
};

struct rcache_files;

/* Fields whose placeholders an entry's frontmatter text leaves out. */
#define SKILL_FM_SLOTS 5

/* How many shapes of a list_skills card an entry keeps (tools.c). */
#define SKILL_CARD_TIERS 7

/*
 * An entry's strings (names, paths, description, tags, the frontmatter
 * text) live in one block it owns, so none of them is freed on its own.
 * The frontmatter is not kept as a tree (a jansson object costs ~2 KB a
 * skill, most of a large library's memory): what the serving paths read
 * is kept as fields, the rest as text that skills_frontmatter() parses.
 */
struct card;

/* A skill's own hooks (most have none: no room in every entry). */
struct skill_hooks {
    char *pre;              /* absolute path of hooks/pre.*, or NULL */
    char *post;             /* absolute path of hooks/post.*, or NULL */
};

/*
 * The head of a list_skills card (tools_list.c's struct card begins with
 * it). An entry keeps its cards in a list, at most one per tier, each
 * rendered on first use: most entries are never shown, and most that are
 * have one tier or two, where a slot per tier was 64 bytes of new memory
 * for every entry a first query showed (a fault a 64 entries).
 */
struct card_link {
    struct card_link *next; /* set before the card is published, never after */
    uint32_t tier;
};

struct skill {
    atomic_long refs;
    char *name;             /* folder name (the end of qname) */
    char *qname;            /* "skill" or "team/skill" */
    char *team;             /* NULL for top-level skills */
    /* its folder, absolute, symlinks resolved: read it with skills_dir().
     * Stored only when it is not its root's resolved path + "/" + qname
     * (dir_base 0), its SKILL.md never (skills_md_path) */
    const char *dir_abs;
    const char *description;/* frontmatter 'description' (always a non-empty string) */
    const char *version;    /* frontmatter 'version' when a string, or NULL */
    const char *fm_name;    /* frontmatter 'name' when a string, or NULL */
    const char *title;      /* frontmatter 'title' when a string, or NULL */
    _Atomic(json_t *) execution; /* read it with skills_execution(): parsed from
                                    fm_rest on first use */
    const char *fm_rest;    /* the frontmatter as compact JSON, 'description' set to ""
                               (it is kept once, above), less the members fm_slots
                               names; NULL when nothing else is left. See
                               skills_frontmatter() */
    char **tags;            /* normalised tags */
    /* every file but SKILL.md, sorted; the same block then holds the keys
     * and paths of its folders (skills_dir_keys, skills_dir_paths) */
    struct skill_file *files;
    struct fkey md_key;
    _Atomic(struct skill_body *) body;
    json_t *warnings;       /* what discovery reported about this entry, NULL for nothing */
    /* name, tags and description tokenized for search (discovery's threads),
     * until the build that merges them: later builds carry them from the
     * index */
    struct search_terms *terms;
    /* body and references tokenized for search: set once, after discovery
     * (skills_index_bodies), NULL until then; freed (replaced by a mark)
     * once an index holding them is current, since later builds take
     * them from that index */
    _Atomic(struct search_terms *) xterms;
    /* read with skills_card(), kept with skills_card_keep() */
    _Atomic(struct card_link *) cards;
    struct skill_hooks *hooks;  /* NULL when it has none */
    _Atomic(struct rcache_files *) rfiles; /* replies rendered from its files (rcache.c),
                                              NULL until the first is kept */
    /* Counts in 32 bits: a walk keeps at most 10,000 files and folders, and
     * tags and the body's offset are within a 256 KiB frontmatter. */
    uint32_t ntags;
    uint32_t nfiles;
    uint32_t ndirs;
    uint32_t body_off;      /* offset of the body in SKILL.md */
    unsigned root;          /* index of its --skills root */
    /* the scanner's alone: a file in one of its folders was written in
     * place (inotify), so the next rescan stats its files before reuse */
    unsigned char files_moved;
    /* card_tokens, card_chars and card_keep are set (tools_card_sizes), published by a
     * release store of 1: from then on they are read-only */
    _Atomic unsigned char card_sized;
    unsigned char card_marker;  /* bit t - 2: tier t's cut ends with the marker */
    unsigned char dir_base;     /* the root its folder is composed from (scan.c), or 0 */
    /* The tokens and characters of each tier's card and the description
     * bytes each cut tier keeps, worked out once off the request path, so
     * that a page picks tiers without rendering the cards it does not show. */
    uint16_t card_tokens[SKILL_CARD_TIERS];
    uint16_t card_chars[SKILL_CARD_TIERS];
    uint16_t card_keep[SKILL_CARD_TIERS - 2];
    /* where the placeholders left out of fm_rest go (scan.c, scan_fm_strip);
     * 0: fm_rest is the whole text */
    uint16_t fm_slots;
};

/* The stat keys and paths of k's folders, ndirs of each: the skill folder
 * ([0]; its path is "", the end of qname) and every folder below it,
 * paths relative to the skill folder (skills_dir_path gives the absolute
 * one). They follow the files in one block, so the entry keeps no pointer
 * to them. NULL when there are none. */
static inline struct fkey *skills_dir_keys(const struct skill *k)
{
    return k->files ? (struct fkey *)(void *)(k->files + k->nfiles) : NULL;
}

static inline char **skills_dir_paths(const struct skill *k)
{
    return k->files ? (char **)(void *)(skills_dir_keys(k) + k->ndirs) : NULL;
}

/* k's card at tier, or NULL when it is not rendered yet. Any thread. */
static inline struct card *skills_card(const struct skill *k, int tier)
{
    const struct card_link *l = atomic_load_explicit(&((struct skill *)(uintptr_t)k)->cards,
                                                     memory_order_acquire);
    for (; l; l = l->next)
        if (l->tier == (uint32_t)tier)
            return (struct card *)(uintptr_t)l;
    return NULL;
}

/* Keeps c (malloc'd) as k's card at tier and returns it, unless another
 * thread kept one first: then frees c and returns that one. Any thread. */
struct card *skills_card_keep(struct skill *k, int tier, struct card *c);

/*
 * What a lock of approved versions (lock.c) decided about one entry when the
 * snapshot was built. Read-only once published, like the rest of it.
 */
struct lock_entry;
struct skill_gate {
    char *reason;           /* quarantined: why, naming the approving command; NULL: served */
    struct skill *serve;    /* quarantined but served: the approved version, from the store */
    const struct lock_entry *approved; /* its lock entry (borrowed from what the gate returned), or NULL */
    char digest[72];        /* the manifest digest of the tree when built ("" if unreadable) */
};

/* Opaque per-snapshot data built by a higher layer (pre-rendered replies). */
struct snapshot;
struct snapshot_ext;
typedef struct snapshot_ext *(*snapshot_ext_build_fn)(const struct snapshot *s, void *arg);
typedef void (*snapshot_ext_free_fn)(struct snapshot_ext *);

/*
 * Data a higher layer hangs on a published snapshot (the per-caller views of
 * acl.c): pushed lock-free onto s->attached, each node freed by its own
 * function when the snapshot is.
 */
struct snapshot_attach {
    struct snapshot_attach *next;
    void (*free)(struct snapshot_attach *a);
};

/*
 * A published snapshot, as readers see it. Its reference count, lookup
 * tables, watch list and place on the retired list are the index's own
 * (struct snap in skills_int.h): reach them through skills_* functions.
 */
struct snapshot {
    uint64_t generation;
    struct skill **v;       /* sorted by qname */
    size_t n;
    /* Read through skills_search(): the first snapshot is published before
     * its index is built (skills.c, index_late). */
    _Atomic(struct search_index *) search_ix;
    json_t *errors;         /* [{skill, path, message, level}] */
    struct snapshot_ext *ext;
    struct skill_gate *gate;/* per entry when a lock is in force, else NULL */
    char *hook_pre;         /* global hooks (--hooks-dir), absolute, or NULL */
    char *hook_post;
    double build_ms;
    int64_t built_at;       /* wall clock, seconds */
    _Atomic(struct snapshot_attach *) attached;
};

struct skills;

/* What one rescan changed; every array is a new reference. */
struct skills_report {
    uint64_t gen_before, gen_after;
    json_t *added, *removed, *changed, *errors;
    double ms;
    int unchanged;          /* the stat pass found nothing to rebuild */
};

/*
 * Creates the index over roots[0..nroots) and builds the first snapshot.
 * hooks_dir (may be NULL) holds the global pre.* / post.* hooks; it is
 * rescanned with the skills, so hooks change on reload.
 * ext_build/ext_free (may be NULL) attach pre-rendered data to every
 * snapshot. Returns NULL after logging when no root is a readable
 * directory. Call from the main thread before serving.
 */
struct skills *skills_new(const char *const *roots, size_t nroots, const char *hooks_dir,
                          snapshot_ext_build_fn ext_build, snapshot_ext_free_fn ext_free,
                          void *ext_arg);
void skills_free(struct skills *S);

/*
 * A gate judges every entry of each snapshot as it is built, before the
 * per-snapshot data (ext) is rendered: it fills s->gate and returns what
 * the judgement borrows from (NULL: nothing); release(that) runs when the
 * snapshot is freed. With a gate, every file of every skill is watched
 * too, so a file edited in place leads to a rebuild (and a fresh
 * judgement).
 */
typedef void *(*skills_gate_fn)(struct snapshot *s, void *arg);
/* skills_new with the gate set before the first snapshot is built. */
struct skills *skills_new_gated(const char *const *roots, size_t nroots, const char *hooks_dir,
                                snapshot_ext_build_fn ext_build, snapshot_ext_free_fn ext_free,
                                void *ext_arg, skills_gate_fn gate, void (*release)(void *ref),
                                void *gate_arg);

/* The gate of k in s (NULL without a gate, or when k is not an entry of s). */
const struct skill_gate *skills_gate_of(const struct snapshot *s, const struct skill *k);

/*
 * Loads the skill folder dir as a standalone entry named qname (a team/name
 * or a bare name), as discovery would; used to serve a stored approved
 * version. Returns a new entry (release with skills_entry_release), or NULL
 * when its SKILL.md does not load. Any thread.
 */
struct skill *skills_entry_load(const char *dir, const char *qname, unsigned root);
void skills_entry_release(struct skill *k);

/* Room for a skill folder's absolute path. */
#define SKILL_DIR_MAX PATH_MAX

/* k's folder, absolute, symlinks resolved: k's own string, or composed
 * into buf (SKILL_DIR_MAX bytes). Valid while k and buf are. Any thread. */
const char *skills_dir(const struct skill *k, char *buf);
/* The absolute path of k's folder d (< k->ndirs; 0 is the skill folder)
 * into buf (SKILL_DIR_MAX bytes). Returns buf. */
char *skills_dir_path(const struct skill *k, size_t d, char *buf);

/* k's SKILL.md, its folder + "/SKILL.md", into out (PATH_MAX + 16 bytes is
 * always enough). Returns out. */
char *skills_md_path(const struct skill *k, char *out, size_t n);

/*
 * k's whole frontmatter as a JSON object, equal to what the parser gave
 * (keys in file order): a new reference, parsed from the entry's text on
 * each call, so not for list_skills / load_skill. Any thread.
 */
json_t *skills_frontmatter(const struct skill *k);

/*
 * The frontmatter's 'execution' value (any JSON value), or NULL when it has
 * none; borrowed, read-only, lives as long as k. Parsed from k->fm_rest on
 * the first call and kept: most skills' subtree is never read, and a
 * jansson tree is ~1.7 KB where its text is ~100 bytes.
 */
json_t *skills_execution(const struct skill *k);

/*
 * Called once per generation that moved, on the rescanning thread, right
 * after next replaced prev (prev is still valid during the call). One per
 * process (notify.c's broadcaster); set before serving.
 */
typedef void (*skills_publish_fn)(const struct snapshot *prev, const struct snapshot *next);
void skills_on_publish(skills_publish_fn fn);

/* Any thread. The snapshot stays valid until skills_release(). Never NULL. */
struct snapshot *skills_acquire(struct skills *S);
void skills_release(struct snapshot *s);
/*
 * s's search index, any thread. The first snapshot is served before its
 * index is built (a start answers list_skills a build's index sooner): a
 * caller that comes meanwhile waits for it, every later one reads a
 * pointer. Never NULL.
 */
struct search_index *skills_search(const struct snapshot *s);
/*
 * The same, holding the snapshot through this thread's hazard slot rather
 * than its reference count (one store to a line no other thread writes,
 * where the count is one line every thread adds to). *hold says how it is
 * held: pass it to skills_release_held, from any thread. A thread's slot
 * holds one snapshot at a time; a second acquire while it is busy counts.
 */
struct snapshot *skills_acquire_held(struct skills *S, int *hold);
void skills_release_held(struct snapshot *s, int hold);

/*
 * Re-stats the tree and rebuilds if anything moved; callers that arrive
 * while a rescan is running share the next one. Fills *r (release with
 * skills_report_cleanup) when r is not NULL. Any thread; blocks for the
 * duration of the rescan. force: rebuild even when the stat pass sees no
 * change (reload_skills).
 */
void skills_rescan(struct skills *S, int force, struct skills_report *r);
void skills_report_cleanup(struct skills_report *r);

/*
 * Starts indexing the words of every skill's body and Markdown references
 * for list_skills(query). Discovery reads only frontmatter, so the first
 * snapshot is served at once; a low-priority thread then reads the bodies
 * of the entries that lack body terms and publishes a snapshot whose index
 * has them (the generation does not move). Later rebuilds read the bodies
 * of new and changed skills themselves, before publishing. Call once, after
 * skills_new; skills_free stops the thread.
 * prep (may be NULL) is called in that thread for every entry of the
 * snapshot it indexes, so that work an entry's requests would otherwise do
 * on first use is done there instead (it must be safe against requests
 * reading the entry meanwhile).
 */
void skills_index_bodies(struct skills *S, void (*prep)(struct skill *k));
/* Entries whose body terms are in the current snapshot's index, and all. */
void skills_bodies_indexed(struct skills *S, size_t *indexed, size_t *n);

/* Rescans completed so far (coalesced calls count once). Any thread. */
uint64_t skills_scans(struct skills *S);
/* Replaced snapshots not freed yet (a reader still holds them): tests. */
size_t skills_retired(struct skills *S);

/* Roots as given (borrowed, valid for the life of S). */
const char *const *skills_roots(const struct skills *S, size_t *n);

/* "skill://<qname>[/<rel>]", each part percent-encoded (unreserved,
 * sub-delims, ':', '@' and '/' stay): the one canonical spelling of a
 * skill's resource, that subscriptions and change notices are matched
 * under. rel NULL or "": the skill itself. malloc'd. */
char *skills_uri(const struct skill *k, const char *rel);

/*
 * Finds a skill by qualified or bare name in s. Returns it (borrowed, valid
 * while s is held), or NULL with *ambiguous set when a bare name is shared
 * by several teams.
 */
struct skill *skills_find(const struct snapshot *s, const char *name, size_t len,
                          int *ambiguous);

/* Qualified names of the entries whose bare name is name (borrowed). */
size_t skills_sharing(const struct snapshot *s, const char *name, const char **out, size_t max);

/* Up to max names closest to name (edit distance, then prefix), borrowed. */
size_t skills_suggest(const struct snapshot *s, const char *name, const char **out, size_t max);

/*
 * The same over the entries i with mask[i] set, as if the others did not
 * exist (mask NULL: every entry): a bare name shared with hidden entries
 * only is not ambiguous. skills_find_in sets *idx (may be NULL) to the
 * entry's index.
 */
struct skill *skills_find_in(const struct snapshot *s, const unsigned char *mask,
                             const char *name, size_t len, int *ambiguous, size_t *idx);
size_t skills_sharing_in(const struct snapshot *s, const unsigned char *mask, const char *name,
                         const char **out, size_t max);
size_t skills_suggest_in(const struct snapshot *s, const unsigned char *mask, const char *name,
                         const char **out, size_t max);

struct err;

/*
 * The skill's body, read on first use and cached in the entry. A file
 * changed since the snapshot is read fresh (and not cached). Returns 0, or a
 * negative errno with why (may be NULL) set. *out stays valid while
 * the snapshot is held; when *tmp is set the caller owns it and must
 * skills_body_free() it.
 */
int skills_body(struct skill *k, struct skill_body **out, struct skill_body **tmp,
                struct err *why);
void skills_body_free(struct skill_body *b);

/* A folder's entries, sorted, without the names that are never part of a
 * skill (dotfiles and VCS folders, caches) (NULL when it cannot be
 * read); free with skills_free_names. */
char **skills_list_dir(const char *path, size_t *count);
void skills_free_names(char **v, size_t n);

/* Validates a skill name by the Agent Skills rules; NULL if fine, else why. */
const char *skills_name_problem(const char *name);

#endif
