/*
 * faults.c - what a page's first touch costs on this machine: 16 MiB of
 * fresh anonymous memory touched a page at a time, then the same mapped
 * with MAP_POPULATE, then 2 MiB pages (MADV_HUGEPAGE, when the kernel
 * gives them). A build's temporaries and a first query's new cards pay the
 * first; bench/README.md quotes it.
 *
 *   cc -O2 -o build/bench/faults bench/faults.c && build/bench/faults
 *   -> "touch 14.5 us  populate 8.4 us  thp 0.3 us (a 4 KiB page)"
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#define SIZE ((size_t)16 << 20)
#define PAGE 4096u

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static double touch(char *p)
{
    double t0 = now_us();
    for (size_t i = 0; i < SIZE; i += PAGE)
        p[i] = 1;
    return now_us() - t0;
}

int main(void)
{
    const int prot = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
    char *a = mmap(NULL, SIZE, prot, anon, -1, 0);
    double t0 = now_us();
    char *b = mmap(NULL, SIZE, prot, anon | MAP_POPULATE, -1, 0);
    double populate = now_us() - t0;
    char *c = mmap(NULL, SIZE + (2u << 20), prot, anon, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED || c == MAP_FAILED)
        return 1;
    char *h = (char *)(((uintptr_t)c + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
    madvise(h, SIZE, MADV_HUGEPAGE);
    double pages = (double)(SIZE / PAGE);
    double ta = touch(a);
    populate += touch(b);
    double th = touch(h);
    printf("touch %.1f us  populate %.1f us  thp %.1f us (a 4 KiB page)\n", ta / pages,
           populate / pages, th / pages);
    return 0;
}
