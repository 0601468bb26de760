/*
 * spawn.c - the floor for run_skill_script: posix_spawn the interpreter on a
 * script directly and wait for it, N times; prints the median in ms.
 *
 *   bench/spawn N /usr/bin/bash script.sh
 */
#include <spawn.h>
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
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        pid_t pid;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
            return 1;
        waitpid(pid, NULL, 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("%.3f\n", t[n / 2]);
    free(t);
    return 0;
}
