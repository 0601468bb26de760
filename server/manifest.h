/*
 * manifest.h - the file manifest of a skill for the MCP Skills extension:
 * every file with its size and "sha256:<hex>" digest, computed from the
 * bytes resources/read serves (read through jail.c, beneath the skill
 * folder, so a symlink cannot bring in an outside file).
 *
 * Digests are cached process-wide by (dev, inode) with mtime_ns and size as
 * validators, behind one mutex. Every use re-opens the file beneath the
 * skill folder and fstats it (one stat), so an edited file is rehashed,
 * never served with a stale digest. list_skills never calls into this
 * module; skills/list and skills/get pay for the first hash of a file.
 */
#ifndef SKILL_MANIFEST_H
#define SKILL_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

struct err;
struct skill;

/* "sha256:" + 64 lowercase hex digits */
#define MANIFEST_DIGEST_LEN 71

struct manifest_file {
    char *path;             /* relative to the skill folder; "SKILL.md" first */
    int64_t size;           /* bytes hashed */
    char digest[MANIFEST_DIGEST_LEN + 1];
};

struct manifest {
    struct manifest_file *v;
    size_t n;
    int64_t total;          /* sum of sizes */
    size_t skipped;         /* listed files that could not be opened now */
};

/* "sha256:" + 64 lowercase hex of md: the one digest text of the server
 * (manifests, the lock, the discovery index, fetch). */
void manifest_format_digest(const unsigned char md[32], char out[MANIFEST_DIGEST_LEN + 1]);
/* SHA-256 of data[0..n) in that text. Any thread. */
void manifest_sha256(const void *data, size_t n, char out[MANIFEST_DIGEST_LEN + 1]);

/*
 * Digest and size of rel beneath rootfd (a jail_root() descriptor), from
 * the cache when the file's (dev, inode, mtime_ns, size) still match.
 * Returns 0, or a negative errno with why (may be NULL) set (see jail_open).
 * Any thread.
 */
int manifest_digest(int rootfd, const char *rel, char digest[MANIFEST_DIGEST_LEN + 1],
                    int64_t *size, struct err *why);

/*
 * The manifest of k: SKILL.md, then k->files in order. Files that cannot be
 * opened beneath the skill folder now (deleted since the scan, or a link
 * that leaves the skill) are left out and counted in m->skipped. Returns 0,
 * or a negative errno when SKILL.md itself cannot be read (why set).
 * Release with manifest_cleanup(). Any thread.
 */
int manifest_build(const struct skill *k, struct manifest *m, struct err *why);
void manifest_cleanup(struct manifest *m);

/* Cache counters since start: digests served from the cache, files hashed. */
void manifest_counters(uint64_t *hits, uint64_t *hashed);

/* Empties the cache (tests). */
void manifest_cache_clear(void);

#endif
