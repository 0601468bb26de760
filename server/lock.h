/*
 * lock.h - the runtime side of the lock of approved skill versions
 * (--lock FILE, --lock-mode, --lock-store DIR, --lock-serve): the snapshot
 * gate that quarantines what is not approved as it is now, pin on first
 * use, and the audit line of every script run (--audit-log FILE). The file
 * format is lockfile.h; reading and writing it, and the store of approved
 * versions, lockstore.h; `skill-mcp lock ...` is cli_lock.c.
 *
 * Threads: lock_gate runs on whichever thread rebuilds the snapshot (one at
 * a time); lock_reload and lock_audit on any thread. Writers (the CLI, and
 * the server in pin mode) hold flock on the lock file's folder, re-read the
 * file, and replace it with a temporary file and rename, so concurrent
 * writers never lose each other's entries and readers never see half a file.
 */
#ifndef SKILL_LOCK_H
#define SKILL_LOCK_H

#include "lockfile.h"

struct err;
struct snapshot;
struct cfg;

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

/* The skills gate (see skills_new_gated); arg is the struct lock. Returns
 * the lock table the judgement borrows from (lock_gate_release frees it). */
void *lock_gate(struct snapshot *s, void *arg);
void lock_gate_release(void *ref);

/*
 * One JSON audit line for a finished script run: to --audit-log (one
 * write(2), O_APPEND, so workers never interleave) or else to stderr.
 * approved_at may be NULL or "". Any thread.
 */
void lock_audit(struct lock *L, const char *skill, const char *manifest_digest,
                const char *approved_at, const char *client, const char *request_id,
                const char *script, const char *status, long exit_code, double duration_ms);

#endif
