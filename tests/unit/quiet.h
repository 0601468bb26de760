/*
 * quiet.h - runs code under test with its stdout and stderr sent to files
 * (or /dev/null), so that usage text and messages neither clutter the TAP
 * output nor go unchecked when a test wants to read them.
 */
#ifndef SKILL_QUIET_H
#define SKILL_QUIET_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

struct quiet {
    int so, se;
};

static inline int quiet_open(const char *path)
{
    return open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
}

/* From here stdout goes to out and stderr to err (NULL: /dev/null). */
static inline struct quiet quiet_begin(const char *out, const char *err)
{
    struct quiet q;
    fflush(stdout);
    fflush(stderr);
    q.so = dup(1);
    q.se = dup(2);
    int fo = quiet_open(out), fe = quiet_open(err);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    return q;
}

/* stdout and stderr back where they were. */
static inline void quiet_end(struct quiet q)
{
    fflush(stdout);
    fflush(stderr);
    dup2(q.so, 1);
    dup2(q.se, 2);
    close(q.so);
    close(q.se);
}

#endif
