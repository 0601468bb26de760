/*
 * srv.h - the one server state struct, passed explicitly everywhere. The
 * fields are set in main() before the HTTP threads start and are read-only
 * after that, except what is itself thread-safe (skills, stats).
 */
#ifndef SKILL_SRV_H
#define SKILL_SRV_H

#include <jansson.h>

#include "config.h"
#include "shape.h"
#include "stats.h"

struct skills;
struct auth;
struct runner;
struct run_shared;
struct scripts;
struct tasks;
struct lock;
struct session_table;
struct redact;
struct acl;

struct srv {
    struct cfg cfg;
    struct skills *skills;
    struct stats stats;
    json_t *tools_list;         /* the tools/list "tools" array */
    char *tools_raw[2];         /* tools/list result bytes: [legacy, modern] */
    size_t tools_raw_len[2];
    const char *instructions;   /* initialize / server/discover instructions */
    int64_t ttl_ms;             /* ttlMs on cacheable results */
    struct shape_budget budget; /* what one copy of a tool result may use */
    struct runner *runner;      /* lives on the loop thread; run_submit from anywhere */
    struct run_shared *run_shared; /* script counters shared by the instance's workers */
    size_t run_shared_size;
    int worker;                 /* this process's index among the workers (0 when alone) */
    struct auth *auth;          /* --auth-tokens, or NULL: no authentication */
    struct scripts *scripts;    /* interpreters and base environment */
    struct tasks *tasks;        /* --enable-tasks, or NULL */
    struct lock *lock;          /* --lock / --audit-log, or NULL */
    struct session_table *sessions; /* --stateful: legacy sessions, else NULL */
    struct redact *redact;      /* secret patterns (redact.c); NULL: nothing redacted */
    struct acl *acl;            /* --acl: per-caller visibility, or NULL: all see all */
};

#endif
