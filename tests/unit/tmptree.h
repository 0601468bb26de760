/*
 * tmptree.h - temporary file trees for the unit tests: a fresh folder under
 * /tmp, files, folders and links made in it (a failure ends the test program
 * with status 2: the fixture, not the code under test, is broken), and the
 * whole tree removed, links not followed.
 */
#ifndef SKILL_TMPTREE_H
#define SKILL_TMPTREE_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* buf (at least 32 bytes) becomes a new folder /tmp/skill-TAG-XXXXXX. */
static inline void tt_mkdtemp(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/skill-%s-XXXXXX", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* dir/rel, which must fit. */
static inline void tt_path(char *out, size_t n, const char *dir, const char *rel)
{
    if ((size_t)snprintf(out, n, "%s/%s", dir, rel) >= n) {
        fprintf(stderr, "tmptree: path too long: %s/%s\n", dir, rel);
        exit(2);
    }
}

/* dir/rel with exactly these bytes; its folder must exist. */
static inline void tt_put(const char *dir, const char *rel, const void *data, size_t len)
{
    char p[512];
    tt_path(p, sizeof p, dir, rel);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(p);
        exit(2);
    }
}

/* path with exactly text, written in place (the inode stays), its mtime set
 * to sec: each version's identity is known whatever the clock's resolution
 * (the tests of when a changed file is read again). */
static inline void tt_put_at(const char *path, const char *text, time_t sec)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    size_t len = strlen(text);
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || futimens(fd, ts) < 0) {
        perror(path);
        exit(2);
    }
    close(fd);
}

/* The folder dir/rel (it must not exist yet). */
static inline void tt_mkdir(const char *dir, const char *rel)
{
    char p[512];
    tt_path(p, sizeof p, dir, rel);
    if (mkdir(p, 0755) < 0) {
        perror(p);
        exit(2);
    }
}

/* dir/rel and every folder above it that is missing. */
static inline void tt_mkdirs(const char *dir, const char *rel)
{
    char p[512];
    tt_path(p, sizeof p, dir, rel);
    for (char *s = p + strlen(dir) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* dir/rel, a symbolic link to target. */
static inline void tt_link(const char *dir, const char *target, const char *rel)
{
    char p[512];
    tt_path(p, sizeof p, dir, rel);
    if (symlink(target, p) < 0) {
        perror(p);
        exit(2);
    }
}

static inline int tt_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

/* Removes path and all under it; a link is removed, never followed. */
static inline void tt_rm_rf(const char *path)
{
    nftw(path, tt_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
