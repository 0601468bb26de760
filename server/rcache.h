/*
 * rcache.h - replies rendered once and served again while what they were
 * rendered from still holds: the read paths' render caches.
 *
 * Two kinds, both read by the HTTP threads without a lock:
 *
 * - File replies (read_skill_file, resources/read), kept with the entry:
 *   one slot per (file, kind). A hit costs one fstatat() of the file (or,
 *   once verified, one ioctl while inotify hears of no change in any
 *   watched folder: docs/internals/caches.md); the
 *   reply is served only while the file's stat key (device, inode, mtime,
 *   size) is the one it had before it was read, so an edited file is never
 *   served stale. A file changed within the last second is not kept (two
 *   same-size writes within one timestamp tick look alike). Bounded: files
 *   up to RCACHE_FILE_MAX bytes, RCACHE_FILE_VERSIONS renders per slot for
 *   the entry's life (a replaced render stays readable until the entry is
 *   freed, since a reader may hold it), RCACHE_FILES_BYTES in all.
 *
 * - Pages (list_skills with a query), kept with the snapshot they were
 *   ranked in: a set-associative table (sets x ways, clock eviction in each
 *   set) bounded by entries and by bytes. The key is the caller's view (a
 *   pointer: one caller's page is never served to another view), the era
 *   and the arguments. A reader names the page it copies out in its
 *   thread's hazard slot (it writes no shared line); a writer frees a page
 *   it replaced only once no slot names it.
 */
#ifndef SKILL_RCACHE_H
#define SKILL_RCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct skill;

/* ---- file replies ----------------------------------------------------------- */

#define RCACHE_FILE_MAX (64 * 1024)         /* files larger than this are read each time */
#define RCACHE_FILE_VERSIONS 4              /* renders per slot for an entry's life */
#define RCACHE_FILES_BYTES (64u << 20)      /* every kept file reply, all entries */

enum rcache_kind {
    RCACHE_TOOL_LEGACY,     /* read_skill_file, per era */
    RCACHE_TOOL_MODERN,
    RCACHE_RES_LEGACY,      /* resources/read, per era */
    RCACHE_RES_MODERN,
    RCACHE_KINDS
};

/* For tests: the change epoch as a hit reads it, plus one; 0 while a change
 * is queued (this call reads the queue and moves the epoch) or inotify is
 * not in use. */
uint64_t rcache_epoch(void);

/* Where the per-entry slots live: struct skill's rfiles (skills.h). */
struct rcache_files;

/* The index of path among k's files (k->files is sorted), or -1. */
long rcache_file_index(const struct skill *k, const char *path);

/*
 * The reply kept for file fi of k in kind, answering arg (the path or URI as
 * the caller spelled it), when the file is still the one it was rendered
 * from. *st gets the file's stat as seen now (st->st_mode is 0 when it could
 * not be taken): pass it to rcache_file_put after reading, so the key is
 * taken before the bytes and an edit between the two is never kept under
 * the old key. Returns NULL on a miss; the bytes are valid while k is held.
 */
const char *rcache_file_get(struct skill *k, size_t fi, enum rcache_kind kind, const char *arg,
                            size_t *len, struct stat *st);

/*
 * Keeps bytes[0..len) as the reply for (fi, kind, arg), st being what
 * rcache_file_get saw before the read. Refused (returns 0) when the file is
 * over the cap, was changed within the last second, the slot has had its
 * RCACHE_FILE_VERSIONS renders, or the byte budget is spent; 1 when kept.
 * Copies the bytes.
 */
int rcache_file_put(struct skill *k, size_t fi, enum rcache_kind kind, const char *arg,
                    const struct stat *st, const char *bytes, size_t len);

/*
 * Whole-skill replies (skills/get, per era), kept with the entry the same
 * way, but served only while SKILL.md and every listed file have the stat
 * they had (device, inode, mtime, ctime, size): a hit costs one fstatat()
 * per file. Entries of more than RCACHE_ENTRY_FILES files are not kept.
 */
#define RCACHE_ENTRY_KINDS 2
#define RCACHE_ENTRY_FILES 64
struct rcache_stamps;

/*
 * The kept reply of kind for k, or NULL. *stamps (free() it) gets the files'
 * stamps as seen now, taken before the caller renders: pass them to
 * rcache_entry_put.
 */
const char *rcache_entry_get(struct skill *k, unsigned kind, size_t *len,
                             struct rcache_stamps **stamps);
/* Keeps bytes as k's reply of kind; 0 when refused (a file changed within
 * the last second or could not be stamped, the slot's renders are spent,
 * too large, the budget). */
int rcache_entry_put(struct skill *k, unsigned kind, const struct rcache_stamps *stamps,
                     const char *bytes, size_t len);

/* Frees an entry's slots (scan.c, when the entry goes). */
void rcache_files_free(struct rcache_files *f, size_t nfiles);

/* Bytes held by file replies now (tests, stats). */
size_t rcache_files_bytes(void);

/* ---- pages ----------------------------------------------------------------- */

#define RCACHE_PAGE_SETS 64
#define RCACHE_PAGE_WAYS 4
#define RCACHE_PAGE_MAX (256 * 1024)        /* a larger page is rendered each time */
#define RCACHE_PAGES_BYTES (8u << 20)       /* per snapshot */
#define RCACHE_PAGE_SEEN_PER_WAY 4          /* keys asked once, remembered */

struct rcache_pages;

/* A table of sets x ways entries holding at most max_bytes of pages. */
struct rcache_pages *rcache_pages_new(size_t sets, size_t ways, size_t max_bytes);
void rcache_pages_free(struct rcache_pages *p);

/*
 * The page for (view, key[0..klen)) copied into a new buffer (*out, free()
 * it) with its length; 1 on a hit, 0 on a miss.
 */
int rcache_pages_get(struct rcache_pages *p, const void *view, const char *key, size_t klen,
                     char **out, size_t *len);

/*
 * Was (view, key) asked before, in this table's life? 1 if so; otherwise
 * records it and answers 0. A page is kept on its second ask, not its
 * first: most queries are asked once, and keeping their pages cost a first
 * query new memory, each page of it a fault (~13 us on a virtual machine),
 * and pushed out the pages of the queries that are repeated. The record is
 * a hash in a slot of its own that a later key may take, so a key can be
 * forgotten (its page is then kept an ask later) and two keys of one hash
 * meet (one is kept an ask early); neither changes what is answered.
 */
int rcache_pages_admit(struct rcache_pages *p, const void *view, const char *key, size_t klen);

/* Keeps a copy of the page; 0 when it is not kept (too large, over the
 * byte budget, or every candidate way is being read). */
int rcache_pages_put(struct rcache_pages *p, const void *view, const char *key, size_t klen,
                     const char *page, size_t len);

/* Pages and bytes held now (tests). */
void rcache_pages_usage(struct rcache_pages *p, size_t *pages, size_t *bytes);

#endif
