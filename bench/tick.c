/*
 * tick.c - the cost of a refresh tick that finds nothing changed, measured
 * inside the process: the server's own skills_new() over a library, then
 * ROUNDS calls of skills_rescan(S, 0, ...), exactly what the refresh timer
 * does (loop.c: skills_rescan(S, 0, NULL)).
 *
 *   build/bench/tick DIR [ROUNDS]
 *   -> "skills=N watched=W build_ms=B tick_ms_p50=T tick_ms_min=M unchanged=U/R
 *       allocs_per_tick=A bytes_per_tick=Y"
 *
 * Linked against the objects in build/obj/ (all but main.o), like the unit tests.
 * Allocations are counted by interposing malloc & co. in this executable
 * (forwarding to glibc's __libc_* entry points), so calls from libc, libuv
 * and jansson count too. The timed rounds pass a report (to read r.ms and
 * r.unchanged); the counted rounds pass NULL as the timer does, since
 * copying a report for the caller allocates by design.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skills_int.h"
#include "util.h"

/* ---- allocation counter -------------------------------------------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_long n_allocs, n_bytes;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, (long)n, memory_order_relaxed);
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, (long)(a * b), memory_order_relaxed);
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, (long)n, memory_order_relaxed);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    void *p = __libc_memalign(align, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_memalign(align, n);
}

/* ---- the measurement ------------------------------------------------------- */

static double now_msf(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tick DIR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 100;
    if (rounds < 1)
        rounds = 1;
    log_set_level(LOG_WARN);
    const char *roots[1] = {argv[1]};
    long ba = atomic_load(&n_allocs);
    double t0 = now_msf();
    struct skills *S = skills_new(roots, 1, NULL, NULL, NULL, NULL);
    if (!S)
        return 1;
    struct snapshot *s = skills_acquire(S);
    /* the build with its index, which a thread of its own builds */
    skills_search(s);
    double build_ms = now_msf() - t0;
    long build_allocs = atomic_load(&n_allocs) - ba;
    size_t nskills = s->n, nwatched = snap_watched(s);
    skills_release(s);

    /* warm the dentry cache and the code once, then time */
    skills_rescan(S, 0, NULL);
    double *ms = calloc((size_t)rounds, sizeof *ms);
    int unchanged = 0;
    for (int i = 0; i < rounds; i++) {
        struct skills_report r;
        skills_rescan(S, 0, &r);
        ms[i] = r.ms;
        unchanged += r.unchanged;
        skills_report_cleanup(&r);
    }
    long a0 = atomic_load(&n_allocs), b0 = atomic_load(&n_bytes);
    for (int i = 0; i < rounds; i++)
        skills_rescan(S, 0, NULL);
    long allocs = atomic_load(&n_allocs) - a0, bytes = atomic_load(&n_bytes) - b0;

    qsort(ms, (size_t)rounds, sizeof *ms, cmp_d);
    printf("skills=%zu watched=%zu build_ms=%.1f build_allocs=%ld tick_ms_p50=%.3f tick_ms_min=%.3f "
           "unchanged=%d/%d allocs_per_tick=%.2f bytes_per_tick=%.0f\n",
           nskills, nwatched, build_ms, build_allocs, ms[(rounds - 1) / 2], ms[0], unchanged, rounds,
           (double)allocs / rounds, (double)bytes / rounds);
    free(ms);
    skills_free(S);
    return 0;
}
