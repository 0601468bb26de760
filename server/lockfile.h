/*
 * lockfile.h - the lock file format: parsing and rendering the table of
 * approved versions, the manifest digests it records and what changed
 * since approval. Bytes and trees in, tables out: no lock file I/O here
 * (lockstore.h reads and writes it).
 *
 * The lock file is text kept in git, sorted by qualified name:
 *
 *     # comment
 *     billing/refunds sha256:<64 hex> execution=none approved-by=alice approved-at=2026-11-29T10:00:00Z
 *       sha256:<64 hex> 812 SKILL.md
 *       sha256:<64 hex> 2301 scripts/refund.py
 *
 * An entry line names the skill, the digest of its manifest, the digest of
 * its frontmatter's `execution:` block ("none" without one), who approved it
 * and when; a revoked entry adds revoked-by= and revoked-at=. The indented
 * lines under it are the approved files (digest, size, path), so
 * `lock diff` works from the lock alone. The manifest digest is SHA-256 over
 * exactly those lines ("<digest> <size> <path>\n", paths in byte order),
 * without the indentation: the same files, digests and sizes skills/get
 * lists. A file that does not parse, or whose file lines do not hash to the
 * entry's digest, is refused with file:line (fail closed).
 */
#ifndef SKILL_LOCKFILE_H
#define SKILL_LOCKFILE_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

struct buf;
struct err;
struct skill;

#define LOCK_TIME_LEN 20        /* 2026-11-29T10:00:00Z */
#define LOCK_MAX_LINE 8192
#define LOCK_MAX_FILES 20000    /* files per entry */

struct lock_file {
    char *path;
    int64_t size;
    char digest[MANIFEST_DIGEST_LEN + 1];
};

struct lock_entry {
    char *qname;
    char digest[MANIFEST_DIGEST_LEN + 1];       /* of the manifest */
    char exec[MANIFEST_DIGEST_LEN + 1];         /* of the execution: block, or "none" */
    char *by;                                   /* approved-by */
    char at[LOCK_TIME_LEN + 1];                 /* approved-at */
    char *revoked_by;                           /* NULL unless revoked */
    char revoked_at[LOCK_TIME_LEN + 1];
    struct lock_file *files;                    /* sorted by path */
    size_t nfiles;
    int line;
};

/* An immutable parsed lock, sorted by qname. */
struct lock_table {
    struct lock_entry *v;
    size_t n;
    long refs;                  /* atomic; see lock_table_ref */
};

/*
 * Parses the text of a lock file (file names it in messages). Returns a new
 * table (one reference; lock_table_unref), or NULL with err filled
 * ("file:line: what"). Any thread.
 */
struct lock_table *lock_parse(const char *text, size_t len, const char *file, struct err *err);
/* The file's text for t (a header comment, then entries sorted by qname); malloc'd. */
char *lock_render(const struct lock_table *t, size_t *len);
const struct lock_entry *lock_find(const struct lock_table *t, const char *qname);
void lock_table_ref(struct lock_table *t);
void lock_table_unref(struct lock_table *t);

/* The manifest of a skill tree as the lock records it (files sorted by path). */
struct lock_manifest {
    struct lock_file *files;
    size_t n;
    char digest[MANIFEST_DIGEST_LEN + 1];
    char exec[MANIFEST_DIGEST_LEN + 1];
};

/*
 * Hashes k's files now (through manifest.c's cache). Returns 0, or -1 with
 * why (may be NULL) set when a file cannot be read or a path cannot be recorded (a
 * newline in it). Release with lock_manifest_cleanup. Any thread.
 */
int lock_manifest_of(const struct skill *k, struct lock_manifest *m, struct err *why);
void lock_manifest_cleanup(struct lock_manifest *m);
/* SHA-256 over the file lines of files[0..n) (sorted by path). */
void lock_digest_files(const struct lock_file *files, size_t n,
                       char out[MANIFEST_DIGEST_LEN + 1]);

/*
 * 1 when rel (beneath the skill folder dir) is a file of the approved
 * version with the same digest now (one open and fstat when the digest is
 * cached). Any thread.
 */
int lock_file_approved(const struct lock_entry *e, const char *dir, const char *rel);

/* ---- what changed since approval ---------------------------------------- */

enum lock_change { LOCK_ADDED, LOCK_REMOVED, LOCK_MODIFIED, LOCK_EXEC_CHANGED };

struct lock_change_item {
    enum lock_change kind;
    const char *path;       /* borrowed from the entry or the manifest */
    int widens;             /* the change widens what the skill can do */
};

/*
 * The changes from approved files (or none, for a new skill) to now, in
 * path order, plus LOCK_EXEC_CHANGED when the execution: block changed.
 * Scripts (scripts/...) added or modified, hooks (hooks/...) added, and a
 * changed execution: block widen. Returns the count; *out is malloc'd.
 */
size_t lock_changes(const struct lock_entry *approved, const struct lock_manifest *now,
                    struct lock_change_item **out);

/* ---- pieces the store and the command line share ---------------------------- */

void lock_entry_cleanup(struct lock_entry *e);
/* qsort order of entries: by qname. */
int lock_entry_cmp(const void *a, const void *b);
/* Appends the file line "<digest> <size> <path>\n" of f to b. */
int lock_file_line(struct buf *b, const struct lock_file *f);
/* 1 when path lies beneath the folder dir (a relative path, e.g. "scripts"). */
int lock_under(const char *path, const char *dir);
/* 1 when s[0..n) may be an approved-by / revoked-by name. */
int lock_who_valid(const char *s, size_t n);

#endif
