/*
 * spawn.c - the floor for run_skill_script: posix_spawn the interpreter on a
 * script directly and wait for it, N times; prints the median in ms.
 *
 *   bench/spawn N /usr/bin/bash script.sh
 *
 * SPAWN_STDIN=FILE: each child reads FILE's bytes from a pipe, as a hook
 * reads its input. SPAWN_FD3=FILE: each child gets FILE open as fd 3, as a
 * Python script run by the server does.
 */
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: spawn N PROGRAM ARGS...\n");
        return 2;
    }
    int n = atoi(argv[1]);
    double *t = calloc((size_t)n, sizeof *t);
    const char *in_file = getenv("SPAWN_STDIN"), *fd3_file = getenv("SPAWN_FD3");
    char input[65536];
    ssize_t in_len = 0;
    if (in_file) {
        int fd = open(in_file, O_RDONLY);
        if (fd < 0 || (in_len = read(fd, input, sizeof input)) < 0)
            return 1;
        close(fd);
    }
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        pid_t pid;
        int p[2] = {-1, -1}, f3 = -1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (in_file) {
            if (pipe(p) < 0)
                return 1;
            posix_spawn_file_actions_adddup2(&fa, p[0], 0);
            posix_spawn_file_actions_addclose(&fa, p[1]);
        }
        if (fd3_file) {
            if ((f3 = open(fd3_file, O_RDONLY)) < 0)
                return 1;
            posix_spawn_file_actions_adddup2(&fa, f3, 3);
        }
        if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ))
            return 1;
        posix_spawn_file_actions_destroy(&fa);
        if (in_file) {
            close(p[0]);
            if (write(p[1], input, (size_t)in_len) != in_len)
                return 1;
            close(p[1]);
        }
        if (f3 >= 0)
            close(f3);
        waitpid(pid, NULL, 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("%.3f\n", t[n / 2]);
    free(t);
    return 0;
}
