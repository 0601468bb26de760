/*
 * test_dynlib.c - dynlib_need from many threads at once: every caller sees
 * the whole table of its library (run under `make tsan` for the ordering),
 * and a library out of range is refused.
 */
#include "harness.h"
#include "dynlib.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define THREADS 16

/* Set once every thread is started, so their first needs meet. */
static atomic_int go;

static void *needer(void *arg)
{
    long seen = 0;
    char err[320];
    while (!atomic_load(&go))
        sched_yield();
    for (int i = 0; i < 200; i++) {
        enum dynlib lib = (enum dynlib)((i + (long)(intptr_t)arg) % DL_COUNT);
        if (dynlib_need(lib, err, sizeof err) != 0)
            return (void *)-1L;
        /* each library's pointers read only after its own need returned 0 */
        if (lib == DL_ARCHIVE && DL(archive_entry_new) && DL(archive_write_new))
            seen++;
        if (lib == DL_CURL && DL(curl_easy_init) && DL(curl_url))
            seen++;
        if (lib == DL_JOSE && DL(jose_b64_dec_buf) && DL(jose_jws_ver))
            seen++;
    }
    return (void *)seen;
}

TEST(concurrent_first_need)
{
    pthread_t t[THREADS];
    int n = 0;
    while (n < THREADS && pthread_create(&t[n], NULL, needer, (void *)(intptr_t)n) == 0)
        n++;
    atomic_store(&go, 1);
    long got[THREADS];
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        got[i] = (long)(intptr_t)r;
    }
    CHECK_EQ(n, THREADS);
    for (int i = 0; i < n; i++)
        CHECK_EQ(got[i], 200L);
    /* a working library is one atomic load from then on, and stays */
    CHECK_EQ(dynlib_need(DL_ARCHIVE, NULL, 0), 0);
}

TEST(out_of_range)
{
    char err[64] = "untouched";
    CHECK_EQ(dynlib_need(DL_COUNT, err, sizeof err), -1);
    CHECK_EQ(dynlib_need((enum dynlib)-1, err, sizeof err), -1);
    CHECK_STR(dynlib_soname(DL_COUNT), "");
    CHECK(strstr(dynlib_soname(DL_ARCHIVE), "libarchive.so.") == dynlib_soname(DL_ARCHIVE));
}

int main(void)
{
    RUN(concurrent_first_need);
    RUN(out_of_range);
    DONE();
}
