/*
 * reloadable.h - a rule file that is read once, then again on SIGHUP or when
 * it changes, with the parsed set swapped in whole: --acl, --redact and
 * --auth-tokens.
 *
 * A module embeds a struct reloadable, loads the first version itself (its
 * start-up errors are its own), hands the set to reloadable_init and from
 * then on calls reloadable_reload and reads reloadable_cur. The helper owns:
 *
 *   - the stat identity (inode, device, size, mtime, ctime) of the version
 *     last read, good or bad: an unchanged file is not read again, and a bad
 *     version (or a vanished file) is reported once, until it changes;
 *   - one reload at a time (a mutex no reader takes);
 *   - the set in force, published with a release store and read with one
 *     acquire load: no lock, no reference count on the read path;
 *   - the sets a reload replaced, kept until reloadable_fini (a reader may
 *     still hold one: a class, a stream or a table entry for as long as its
 *     request or run lasts; docs/internals/rule-files.md);
 *   - the two log lines, "WHAT not reloaded, keeping the N KEPT: why" and
 *     "FILE: N UNIT loaded".
 */
#ifndef SKILL_RELOADABLE_H
#define SKILL_RELOADABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/stat.h>

struct err;

struct reloadable_kind {
    const char *what;   /* "access rules": the subject of the refusal line */
    const char *kept;   /* "in force": what follows the count kept */
    const char *unit;   /* "access rules": what follows the count loaded */
    /* Reads and parses file (never NULL here). The set, with *st the
     * identity of what was read when the file could be opened; or NULL with
     * "file[:line]: what" in err->msg. */
    void *(*load)(void *ctx, const char *file, struct stat *st, struct err *err);
    void (*free)(void *set);
    size_t (*count)(const void *set);
    /* Optional: do two sets say the same? A reload that reads the same
     * rules keeps the set in force and reports no change, so that a SIGHUP
     * with nothing edited (a log rotation) is not taken as new rules. */
    int (*same)(const void *a, const void *b);
};

struct reloadable_retired;

struct reloadable {
    const struct reloadable_kind *kind;
    void *ctx;                      /* handed to kind->load */
    char *file;                     /* NULL: the first set is the only one */
    _Atomic(void *) cur;
    pthread_mutex_t mu;             /* one reload at a time; guards what follows */
    struct stat seen;               /* of the version last read, good or bad (zero: none) */
    struct reloadable_retired *retired;
};

/* Takes set (never NULL) as the set in force; st is the identity it was
 * read from (NULL: none). file may be NULL: then reloads do nothing. */
void reloadable_init(struct reloadable *r, const struct reloadable_kind *k, void *ctx,
                     const char *file, void *set, const struct stat *st);
/*
 * Reads the file again when its identity changed since the version last
 * read, or always with force (SIGHUP). 1: a new set is in force (logged);
 * 0: nothing to do; -1: the file did not load, the set in force stays
 * (logged, once per version unless forced). Any thread.
 */
int reloadable_reload(struct reloadable *r, int force);
/* Frees the set in force and every retired one. */
void reloadable_fini(struct reloadable *r);

/* The set in force: one acquire load, pairing with the reload's release. */
static inline void *reloadable_cur(struct reloadable *r)
{
    return atomic_load_explicit(&r->cur, memory_order_acquire);
}

/* 1 when x and y name the same version of a file (inode, device, size,
 * mtime and ctime to the nanosecond). The lock file's reload (lock.c) uses
 * it too. */
int reloadable_same_file(const struct stat *x, const struct stat *y);

/*
 * Reads the whole of file (a regular file of at most max bytes) for a
 * loader, named in messages as noun ("the access rules file"): the bytes,
 * NUL terminated, with *n and *st set; or NULL with "file: what" in err.
 */
char *reloadable_read(const char *file, size_t max, const char *noun, struct stat *st,
                      size_t *n, struct err *err);

#endif
