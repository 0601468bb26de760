/*
 * script_int.h - shared by script_env.c (the process-wide set-up) and
 * script.c (the per-call policy): the set-up's result and the few helpers
 * both use. Not for other modules: they see struct scripts only by pointer.
 */
#ifndef SKILL_SCRIPT_INT_H
#define SKILL_SCRIPT_INT_H

#include <stddef.h>

#include "runner.h"

struct interp {
    char ext[16];
    char *path;             /* NULL when missing */
    const char *args[5];    /* extra interpreter arguments before the script */
    char why[160];          /* when missing */
};

struct scripts {
    struct interp in[24];
    size_t n;
    char **base_env;        /* "NAME=value", NULL-terminated */
    size_t nbase;
    char **hook_env;        /* the server's HOOK_* variables: configuration for hooks */
    size_t nhook;
    /* --script-user: the runner's child becomes this user before exec */
    int uid, gid;           /* -1 when not switching */
    /* rlimits, set by the runner's child before exec */
    double cpu_s;           /* 0: each job's ceiling + 1 s */
    long as_mib, fsize_mib; /* 0 = none */
    int nproc;              /* 0 = none */
    /* --sandbox bwrap: the binds every sandbox gets, built once */
    char *bwrap;
    char **sb_base;
    size_t nsb_base;
    /* the default script user (nobody) cannot reach this skills root (by
     * root index) or the hooks folder: why, and runs there are refused */
    char *closed[64];
    char *closed_hooks;
    size_t budget_bytes;    /* what one result's stdout may carry; 0: unlimited */
};

/* Proxy and TLS variables: passed from the server's environment unless
 * --no-network-env, and never settable by a caller. NULL-terminated. */
extern const char *const script_network_vars[];

/* Appends kv (taken) to the NULL-terminated vector *v of *n entries. */
void script_push(char ***v, size_t *n, size_t *cap, char *kv);

/* "k=v", malloc'd. */
char *script_kv(const char *k, const char *v);

/*
 * Sets job j's limits and user from the set-up and appends to *v the argv
 * entries in front of the interpreter (the sandbox's, when there is one).
 * ro lists the folders the sandbox shows read-only; cwd is where the run
 * starts; network asks for the network under the sandbox.
 */
void script_wrap(const struct scripts *sc, struct run_job *j, const char *const *ro, size_t nro,
                 const char *cwd, int network, char ***v, size_t *n, size_t *cap);

#endif
