/*
 * jail.h - reach a file inside one skill folder and nowhere else.
 *
 * Paths are checked as text first (clear reasons for the caller), then
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) relative to
 * the skill folder, so the kernel refuses any symlink or '..' that would
 * leave it, whatever the text looked like. Never compares unresolved
 * strings to decide containment.
 */
#ifndef SKILL_JAIL_H
#define SKILL_JAIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct err;

/*
 * Why rel may not be asked for, or NULL when its text is acceptable:
 * empty, too long, NUL bytes, absolute, '..' or '.' components, backslashes,
 * and components that are dotfiles / VCS / cache folders.
 */
const char *jail_check(const char *rel, size_t len);

struct jail_file {
    char *data;         /* malloc'd, NUL-terminated; at most max bytes */
    size_t len;         /* bytes in data */
    int64_t size;       /* the file's full size */
    int truncated;      /* size > len */
};

/*
 * Reads up to max bytes of dir/rel. Returns 0, or a negative errno with
 * why (may be NULL) set to a caller-safe message that names no path: the
 * caller adds the path (-ENOENT not found, -EISDIR a folder, -EXDEV leaves
 * the skill, -EINVAL bad path text); a longer file is cut at max
 * (out->truncated). Any thread.
 */
int jail_read(const char *dir, const char *rel, size_t max, struct jail_file *out,
              struct err *why);
void jail_file_cleanup(struct jail_file *f);

/*
 * Opens rel (already checked by jail_check) read-only beneath the folder
 * dirfd: openat2 RESOLVE_BENEATH, or on kernels without it a walk that
 * refuses every symlink. Returns an fd or a negative errno (-EXDEV when the
 * path would leave the folder).
 */
int jail_open_beneath(int dirfd, const char *rel);

/*
 * jail_open_beneath for a file that must be regular (a FIFO or device in
 * its place would hold the thread: it is opened O_NONBLOCK and refused),
 * fstat'ed into *st: the fd, or a negative errno (-EXDEV the path leaves
 * the folder, -EISDIR a folder, -EINVAL any other kind of file). For
 * SKILL.md, which the scan and load_skill open before any path text is
 * involved.
 */
int jail_open_regular(int dirfd, const char *rel, struct stat *st);

/*
 * Opens the absolute path read-only, as jail_open_regular does, only when
 * it names a regular file through no symbolic link at all
 * (openat2 RESOLVE_NO_SYMLINKS over every component) and its text is plain
 * (absolute, no empty, '.' or '..' component): then the path as written is
 * the file's real path, with no need to ask /proc which path the
 * descriptor has. The fd, or a negative errno: -EINVAL text that is not
 * plain or a file that is not regular, -EISDIR a folder, -ELOOP a link on
 * the way, -ENOSYS a kernel without openat2. A caller that needs links
 * followed falls back to its full resolution on any error.
 */
int jail_open_plain(const char *path, struct stat *st);

/* An O_PATH descriptor of the skill folder dir, or a negative errno. */
int jail_root(const char *dir);

/*
 * Opens rel beneath rootfd (from jail_root) for reading, as jail_read does,
 * and fstats it into *st. Returns the descriptor of a regular file (close
 * it), or a negative errno with why set, as jail_read. Any thread.
 */
int jail_open(int rootfd, const char *rel, struct stat *st, struct err *why);

#endif
