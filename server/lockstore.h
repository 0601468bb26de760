/*
 * lockstore.h - reading and writing the lock file, and the store of
 * approved versions (--lock-store DIR).
 *
 * Writers hold flock on the lock file's folder, re-read the file, and
 * replace it through a temporary file and rename (lock_edit), so concurrent
 * writers never lose each other's entries and readers never see half a
 * file.
 *
 * The store keeps approved versions content-addressed: blobs/<sha256 hex>
 * holds file bytes, manifests/<digest hex> the file lines of one approved
 * version, and trees/<digest hex>/ a read-only copy of that version, made
 * on first need, from which a quarantined skill is served.
 */
#ifndef SKILL_LOCKSTORE_H
#define SKILL_LOCKSTORE_H

#include <stddef.h>
#include <sys/stat.h>

#include "lockfile.h"

struct err;
struct skill;

/* Reads and parses file; a missing file is an empty table when missing_ok. */
struct lock_table *lock_read(const char *file, int missing_ok, struct err *err);
/* The same, and *st gets the file's stat (zeroed when it is missing). */
struct lock_table *lock_read_st(const char *file, int missing_ok, struct stat *st,
                                struct err *err);

/* The time now as the lock writes it: 2026-11-29T10:00:00Z. */
void lock_iso_now(char out[LOCK_TIME_LEN + 1]);

/* flock (exclusive) on the folder of the lock file: an open fd, or -1. */
int lock_dir_flock(const char *file);

/* A deep copy of s (release with lock_entry_cleanup). */
void lock_entry_copy(struct lock_entry *d, const struct lock_entry *s);

/* Says which entries to put (*upd malloc'd, *n of them) given the table now
 * in the file; -1 changes nothing. */
typedef int (*lock_edit_fn)(const struct lock_table *cur, struct lock_entry **upd, size_t *n,
                            void *arg);

/*
 * The one way the lock file changes: flock, read what is there now, let fn
 * say which entries to put, write it back. *result (may be NULL) gets the
 * table written (or the one read, when fn changed nothing). 0, or -1 with
 * err set.
 */
int lock_edit(const char *file, lock_edit_fn fn, void *arg, struct lock_table **result,
              struct err *err);

/* Copies the approved files of k (manifest m) into the store; each blob is
 * checked against its digest. 0, or -1 with why (may be NULL) set. */
int lock_store_put(const char *store, const struct skill *k, const struct lock_manifest *m,
                   struct err *why);

/*
 * The read-only copy of an approved version, trees/<hex>/, made from the
 * blobs on first need (several workers may race: one rename wins, the
 * others drop their copy). Returns 0 with out set, or -1.
 */
int lock_store_tree(const char *store, const struct lock_entry *e, char *out, size_t outlen);

/* Removes path and, when it is a folder (never followed through a link),
 * everything beneath it; read-only folders are opened up first. 0 when
 * path is gone. */
int lock_rm_tree(const char *path);

#endif
