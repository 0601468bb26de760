/*
 * jail.c - see jail.h. openat2 needs Linux 5.6; on an older kernel (ENOSYS)
 * the same walk is done one component at a time with O_NOFOLLOW, which
 * refuses every symlink rather than only escaping ones.
 */
#include "jail.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

#define JAIL_MAX_PATH 1024

const char *jail_check(const char *rel, size_t len)
{
    if (len == 0)
        return "the path is empty";
    if (len > JAIL_MAX_PATH)
        return "the path is too long";
    if (memchr(rel, '\0', len))
        return "the path contains a NUL byte";
    if (rel[0] == '/')
        return "absolute paths are not allowed; give a path relative to the skill folder";
    if (memchr(rel, '\\', len))
        return "backslashes are not allowed; use '/'";
    const char *p = rel, *end = rel + len;
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "'..' is not allowed: paths stay inside the skill folder";
        if (n == 1 && p[0] == '.')
            return "'.' is not allowed: write the plain path, without './'";
        if (n > 0 && p[0] == '.')
            return "dotfiles and VCS folders are not part of a skill";
        if (n == 11 && !memcmp(p, "__pycache__", 11))
            return "cache folders are not part of a skill";
        if (n == 12 && !memcmp(p, "node_modules", 12))
            return "node_modules is not part of a skill";
        p += n + 1;
    }
    return NULL;
}

int jail_open_beneath(int dirfd, const char *rel)
{
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS)
        return fd < 0 ? -errno : (int)fd;

    /* Old kernel: walk with O_NOFOLLOW; '..' was refused by jail_check. */
    char *copy = xstrdup(rel), *save = NULL;
    int cur = dup(dirfd);
    for (char *c = strtok_r(copy, "/", &save); c && cur >= 0;
         c = strtok_r(NULL, "/", &save)) {
        int next = openat(cur, c, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        int e = errno;
        close(cur);
        cur = next < 0 ? -(e == ELOOP ? EXDEV : e) : next;
    }
    free(copy);
    return cur;
}

int jail_open_regular(int dirfd, const char *rel, struct stat *st)
{
    int fd = jail_open_beneath(dirfd, rel);
    if (fd < 0)
        return fd == -ELOOP ? -EXDEV : fd;
    return x_keep_regular(fd, st);
}

static int plain_path(const char *p)
{
    if (p[0] != '/')
        return 0;
    for (p++;; p++) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!n || (p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.'))))
            return 0;
        if (!slash)
            return 1;
        p = slash;
    }
}

int jail_open_plain(const char *path, struct stat *st)
{
    if (!plain_path(path))
        return -EINVAL;
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (fd < 0)
        return -errno;
    return x_keep_regular((int)fd, st);
}

int jail_root(const char *dir)
{
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return dfd < 0 ? -errno : dfd;
}

int jail_open(int rootfd, const char *rel, struct stat *st, struct err *why)
{
    const char *bad = jail_check(rel, strlen(rel));
    if (bad) {
        err_set(why, 0, 0, "%s", bad);
        return -EINVAL;
    }
    int fd = jail_open_beneath(rootfd, rel);
    if (fd < 0) {
        switch (-fd) {
        case ENOENT:
        case ENOTDIR:
            err_set(why, 0, 0, "no such file in this skill");
            return -ENOENT;
        case EXDEV:
        case ELOOP:
            err_set(why, 0, 0, "the path leads outside the skill folder");
            return -EXDEV;
        default:
            err_set(why, 0, 0, "the file cannot be opened");
            return fd;
        }
    }
    if (fstat(fd, st) < 0) {
        close(fd);
        err_set(why, 0, 0, "the file cannot be read");
        return -EIO;
    }
    if (S_ISDIR(st->st_mode)) {
        close(fd);
        err_set(why, 0, 0, "that is a folder, not a file");
        return -EISDIR;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        err_set(why, 0, 0, "that is not a regular file");
        return -EINVAL;
    }
    return fd;
}

int jail_read(const char *dir, const char *rel, size_t max, struct jail_file *out,
              struct err *why)
{
    struct stat st;
    memset(out, 0, sizeof *out);
    const char *bad = jail_check(rel, strlen(rel));
    if (bad) {
        err_set(why, 0, 0, "%s", bad);
        return -EINVAL;
    }
    int dfd = jail_root(dir);
    if (dfd < 0) {
        err_set(why, 0, 0, "the skill folder cannot be opened");
        return -EIO;
    }
    int fd = jail_open(dfd, rel, &st, why);
    close(dfd);
    if (fd < 0)
        return fd;
    size_t want = (size_t)st.st_size < max ? (size_t)st.st_size : max;
    out->data = xmalloc(want + 1);
    size_t got = x_pread_full(fd, out->data, want);
    close(fd);
    out->data[got] = '\0';
    out->len = got;
    out->size = (int64_t)st.st_size;
    out->truncated = (int64_t)got < out->size;
    return 0;
}

void jail_file_cleanup(struct jail_file *f)
{
    free(f->data);
    memset(f, 0, sizeof *f);
}
