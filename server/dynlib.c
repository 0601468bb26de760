/*
 * dynlib.c - see dynlib.h.
 */
#include "dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Set by the Makefile from the libraries built against (objdump's SONAME);
 * these are Debian 12's. */
#ifndef DL_SONAME_CURL
#define DL_SONAME_CURL "libcurl.so.4"
#endif
#ifndef DL_SONAME_ARCHIVE
#define DL_SONAME_ARCHIVE "libarchive.so.13"
#endif
#ifndef DL_SONAME_JOSE
#define DL_SONAME_JOSE "libjose.so.0"
#endif
/* The packages holding them (dpkg -S at build time); Debian 12's names. */
#ifndef DL_PACKAGE_CURL
#define DL_PACKAGE_CURL "libcurl4"
#endif
#ifndef DL_PACKAGE_ARCHIVE
#define DL_PACKAGE_ARCHIVE "libarchive13"
#endif
#ifndef DL_PACKAGE_JOSE
#define DL_PACKAGE_JOSE "libjose0"
#endif

/* A failed load is tried again after this long, not at once: a library
 * missing for good costs a search per second, not one per archive of an
 * index, and one that was installed since (or whose failure was passing: no
 * descriptor or memory left) is found without a restart. */
#define RETRY_NS 1000000000ull

struct dynlib_table dynlib_fn;

static struct lib {
    const char *soname, *package;
    pthread_mutex_t mu;
    atomic_int ok;          /* set once, with release order, after the table */
    int tried;              /* under mu */
    unsigned long long tried_ns;
    char why[320];
} libs[DL_COUNT] = {
    [DL_CURL] = {DL_SONAME_CURL, DL_PACKAGE_CURL, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, ""},
    [DL_ARCHIVE] = {DL_SONAME_ARCHIVE, DL_PACKAGE_ARCHIVE, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, ""},
    [DL_JOSE] = {DL_SONAME_JOSE, DL_PACKAGE_JOSE, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, ""},
};

static unsigned long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void load(enum dynlib which)
{
    struct lib *l = &libs[which];
    /* RTLD_NOW: a missing symbol is found here, not at a later call */
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (!e)
            e = "not found";
        /* The loader names the open's or map's error in words only. No
         * descriptor or memory left says nothing of the package: naming it
         * would send the operator to install what is there. */
        int passing = strstr(e, strerror(EMFILE)) || strstr(e, strerror(ENFILE)) ||
                      strstr(e, strerror(ENOMEM));
        if (passing)
            snprintf(l->why, sizeof l->why, "cannot load %s (%s): tried again on a use a "
                     "second from now", l->soname, e);
        else
            snprintf(l->why, sizeof l->why, "cannot load %s (%s): install the %s package",
                     l->soname, e, l->package);
        return;
    }
    /* Each loader writes its own library's members only (two may run at
     * once); a failed one leaves them unused, as ok stays 0, and closes the
     * handle so that a later try finds the library afresh. */
#define DYNLIB_LOOKUP(lib, fn) \
    if (lib == which) { \
        void *p = dlsym(h, #fn); \
        if (!p) { \
            snprintf(l->why, sizeof l->why, "%s has no %s: install the %s package it was " \
                     "built against", l->soname, #fn, l->package); \
            dlclose(h); \
            return; \
        } \
        memcpy(&dynlib_fn.fn, &p, sizeof p); \
    }
    DYNLIB_FUNCS(DYNLIB_LOOKUP)
#undef DYNLIB_LOOKUP
    atomic_store_explicit(&l->ok, 1, memory_order_release);
}

int dynlib_need(enum dynlib lib, char *err, size_t errlen)
{
    if ((unsigned)lib >= DL_COUNT)
        return -1;
    struct lib *l = &libs[lib];
    if (atomic_load_explicit(&l->ok, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&l->mu);
    unsigned long long now = mono_ns();
    if (!atomic_load_explicit(&l->ok, memory_order_relaxed) &&
        (!l->tried || now - l->tried_ns >= RETRY_NS)) {
        load(lib);
        l->tried = 1;
        l->tried_ns = now;
    }
    int ok = atomic_load_explicit(&l->ok, memory_order_relaxed);
    if (!ok && err && errlen)
        snprintf(err, errlen, "%s", l->why);
    pthread_mutex_unlock(&l->mu);
    return ok ? 0 : -1;
}

const char *dynlib_soname(enum dynlib lib)
{
    return (unsigned)lib < DL_COUNT ? libs[lib].soname : "";
}
