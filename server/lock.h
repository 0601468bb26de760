/*
 * lock.h - the lock of approved skill versions (--lock FILE), the store of
 * approved versions (--lock-store DIR), the audit line of every script run
 * (--audit-log FILE) and `skill-mcp lock approve|revoke|diff|status`.
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
 *
 * Threads: lock_gate runs on whichever thread rebuilds the snapshot (one at
 * a time); lock_reload and lock_audit on any thread. Writers (the CLI, and
 * the server in pin mode) hold flock on the lock file's folder, re-read the
 * file, and replace it with a temporary file and rename, so concurrent
 * writers never lose each other's entries and readers never see half a file.
 */
#ifndef SKILL_LOCK_H
#define SKILL_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"

struct err;
struct skill;
struct snapshot;
struct cfg;

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
/* Reads and parses file; a missing file is an empty table when missing_ok. */
struct lock_table *lock_read(const char *file, int missing_ok, struct err *err);
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
 * *why set when a file cannot be read or a path cannot be recorded (a
 * newline in it). Release with lock_manifest_cleanup. Any thread.
 */
int lock_manifest_of(const struct skill *k, struct lock_manifest *m, const char **why);
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

/* ---- the server side ------------------------------------------------------ */

struct lock;

/*
 * From the flags (--lock, --lock-mode, --lock-store, --lock-serve,
 * --audit-log): NULL with *err unset when none is given; NULL with err set
 * when the lock file does not parse or the audit log cannot be opened (fail
 * closed, exit 2). Call before forking workers.
 */
struct lock *lock_open(const struct cfg *c, struct err *err);
void lock_free(struct lock *L);
/* 1 when --lock is in force (quarantine applies). */
int lock_active(const struct lock *L);

/*
 * Re-reads the lock file when it changed (stat), or always with force
 * (SIGHUP). A bad version is logged once and the previous table stays.
 * Returns 1 when a new table was installed (rebuild the snapshot), 0 when
 * nothing changed, -1 on error. Any thread.
 */
int lock_reload(struct lock *L, int force);

/* The skills gate (see skills_set_gate); arg is the struct lock. */
void lock_gate(struct snapshot *s, void *arg);
void lock_gate_release(void *ref);

/*
 * One JSON audit line for a finished script run: to --audit-log (one
 * write(2), O_APPEND, so workers never interleave) or else to stderr.
 * approved_at may be NULL or "". Any thread.
 */
void lock_audit(struct lock *L, const char *skill, const char *manifest_digest,
                const char *approved_at, const char *client, const char *request_id,
                const char *script, const char *status, long exit_code, double duration_ms);

/* `skill-mcp lock ...`; argv starts after "lock". Returns the exit code. */
int lock_cli(int argc, char **argv);

#endif
