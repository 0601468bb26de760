/*
 * dynlib.c - see dynlib.h.
 */
#include "dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

struct dynlib_table dynlib_fn;

static struct lib {
    const char *soname, *package;
    pthread_once_t once;
    int ok;
    char why[320];
} libs[DL_COUNT] = {
    [DL_CURL] = {DL_SONAME_CURL, "libcurl4", PTHREAD_ONCE_INIT, 0, ""},
    [DL_ARCHIVE] = {DL_SONAME_ARCHIVE, "libarchive13", PTHREAD_ONCE_INIT, 0, ""},
    [DL_JOSE] = {DL_SONAME_JOSE, "libjose0", PTHREAD_ONCE_INIT, 0, ""},
};

static void load(enum dynlib which)
{
    struct lib *l = &libs[which];
    /* RTLD_NOW: a missing symbol is found here, not at a later call */
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(l->why, sizeof l->why, "cannot load %s (%s): install the %s package",
                 l->soname, e ? e : "not found", l->package);
        return;
    }
    /* Each loader writes its own library's members only (two may run at
     * once); a failed one leaves them unused, as ok stays 0. */
#define DYNLIB_LOOKUP(lib, fn) \
    if (lib == which) { \
        void *p = dlsym(h, #fn); \
        if (!p) { \
            snprintf(l->why, sizeof l->why, "%s has no %s: install the %s package it was " \
                     "built against", l->soname, #fn, l->package); \
            return; \
        } \
        memcpy(&dynlib_fn.fn, &p, sizeof p); \
    }
    DYNLIB_FUNCS(DYNLIB_LOOKUP)
#undef DYNLIB_LOOKUP
    l->ok = 1;
}

static void load_curl(void)
{
    load(DL_CURL);
}

static void load_archive(void)
{
    load(DL_ARCHIVE);
}

static void load_jose(void)
{
    load(DL_JOSE);
}

int dynlib_need(enum dynlib lib, char *err, size_t errlen)
{
    static void (*const loaders[DL_COUNT])(void) = {
        [DL_CURL] = load_curl, [DL_ARCHIVE] = load_archive, [DL_JOSE] = load_jose};
    if ((unsigned)lib >= DL_COUNT)
        return -1;
    pthread_once(&libs[lib].once, loaders[lib]);
    if (libs[lib].ok)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", libs[lib].why);
    return -1;
}

const char *dynlib_soname(enum dynlib lib)
{
    return (unsigned)lib < DL_COUNT ? libs[lib].soname : "";
}
