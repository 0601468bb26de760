/*
 * config.h - command-line flags, defaults and limits. Filled once by
 * cfg_parse() at start-up and read-only afterwards, so any thread may read
 * it without locks.
 */
#ifndef SKILL_CONFIG_H
#define SKILL_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#define CFG_MAX_ROOTS 32

/* The skills root when no --skills is given and ./skills does not exist:
 * where `make install` and the package put the library. */
#define CFG_INSTALLED_ROOT "/srv/skill-mcp/skills"
#define CFG_INSTALLED_ROOT_ROFF "/srv/skill\\-mcp/skills"

struct cfg {
    const char *config_file;            /* --config FILE: YAML, the command line wins */
    const char *roots[CFG_MAX_ROOTS];   /* --skills, in order; earlier wins */
    size_t nroots;
    const char *host;                   /* --host, default 127.0.0.1 */
    int port;                           /* --port, default 8000; 0 = any free */
    const char *path;                   /* --path, default /mcp */
    double refresh_interval;            /* --refresh-interval seconds; 0 = off */
    int threads;                        /* --threads, HTTP worker threads */
    size_t max_body;                    /* --max-body bytes */
    const char *tls_cert, *tls_key;     /* --tls-cert / --tls-key: PEM files, HTTPS */
    int max_connections;                /* --max-connections, per worker */
    int max_connections_per_ip;         /* --max-connections-per-ip, 0 = no limit */
    double connection_timeout;          /* --connection-timeout: idle/slow clients */
    size_t max_header_bytes;            /* --max-header-bytes: request line + headers */
    const char *allowed_origins;        /* --allowed-origins, comma list or "*" */
    const char *allowed_hosts;          /* --allowed-hosts, comma list or "*" */
    int workers;                        /* --workers N processes on one port, default 1 */
    double shutdown_timeout;            /* --shutdown-timeout: drain before exit, default 30 s */
    int log_level;                      /* --log-level (enum log_level) */
    int log_json;                       /* --log-format json */
    const char *access_log;             /* --access-log FILE, "-" = stdout, NULL = none */
    int access_log_json;                /* --access-log-format json */

    /* scripts */
    int no_scripts;                     /* --no-scripts: read-only server */
    int max_script_concurrency;         /* --max-script-concurrency, default 8 */
    double script_timeout;              /* --script-timeout, default 30 s */
    double script_stall_timeout;        /* --script-stall-timeout, default 20 s; 0 = off */
    double max_script_timeout;          /* --max-script-timeout, default 600 s */
    double script_queue_timeout;        /* --script-queue-timeout, default 30 s */
    int no_network_env;                 /* --no-network-env */
    const char *interpreters[16];       /* --interpreter EXT=PATH, in order */
    size_t ninterpreters;
    size_t max_output_bytes;            /* --max-output-bytes, retained per stream */
    const char *hooks_dir;              /* --hooks-dir: global pre/post hooks */
    const char *synonyms;               /* --synonyms FILE: more search synonym groups */
    const char *script_user;            /* --script-user: run scripts and hooks as this user */
    const char *auth_tokens;            /* --auth-tokens FILE: bearer tokens, per-client rpm */
    const char *oauth_issuer;           /* --oauth-issuer URL: JWT access tokens (oauth.h) */
    const char *oauth_audience;         /* --oauth-audience URI, default http[s]://HOST:PORT/PATH */
    const char *oauth_jwks;             /* --oauth-jwks URL: skip the issuer's metadata */
    const char *oauth_scopes;           /* --oauth-scopes LIST: every token must hold these */
    int oauth_rpm;                      /* --oauth-rpm N: each OAuth client id's rate, 0 = none */
    int public_index;                   /* --public-index: discovery needs no token */
    int metrics_public;                 /* --metrics-public: /metrics needs no token */
    int max_scripts_per_client;         /* --max-scripts-per-client; -1 = half the cap */
    double hook_timeout;                /* --hook-timeout, default 10 s */
    double script_cpu_limit;            /* --script-cpu-limit s; 0 = the ceiling + 1 s */
    long script_memory_mib;             /* --script-memory-limit MiB (RLIMIT_AS); 0 = none */
    long script_fsize_mib;              /* --script-file-size-limit MiB; 0 = none */
    int script_nproc;                   /* --script-max-processes; -1 = by script user */
    const char *sandbox;                /* --sandbox bwrap, or NULL */
    const char *bwrap_path;             /* --bwrap-path, or NULL: bwrap on PATH */
    int enable_tasks;                   /* --enable-tasks: run_skill_script as an MCP task */
    const char *tasks_redis;            /* --tasks-redis URL: task records in Redis */
    const char *tasks_redis_file;       /* --tasks-redis-file FILE: that URL, from a file */
    double task_ttl;                    /* --task-ttl: finished tasks kept, default 3600 s */
    int max_tasks_per_client;           /* --max-tasks-per-client, default 16 */
    int max_task_records_per_client;    /* --max-task-records-per-client, default 1000 */

    /* approved versions (lock.c) */
    const char *lock_file;              /* --lock FILE: serve only approved versions */
    const char *lock_mode;              /* --lock-mode strict|pin, default strict */
    const char *lock_store;             /* --lock-store DIR: approved versions kept */
    const char *lock_serve;             /* --lock-serve refuse|approved, default refuse */
    const char *audit_log;              /* --audit-log FILE: one JSON line per script run */

    /* transport */
    int stateful;                       /* --stateful: legacy Mcp-Session-Id sessions */
    int max_sessions;                   /* --max-sessions, default 1024 */
    double session_idle_timeout;        /* --session-idle-timeout, default 1800 s */
    int sse;                            /* --sse: replies as text/event-stream */
    int stdio;                          /* --stdio: serve on stdin/stdout, not HTTP */

    /* output shaping */
    long context_tokens;                /* --context-tokens, default 128000 */
    double context_share;               /* --context-share, default 0.25 */
    size_t max_result_chars;            /* --max-result-chars, default 48000 */

    /* redaction (redact.c) */
    const char *redact_file;            /* --redact FILE: more secret patterns */
    int no_redact_builtins;             /* --no-redact-builtins: only the file's patterns */

    /* per-caller visibility (acl.c) */
    const char *acl_file;               /* --acl FILE, or NULL: every caller sees every skill */
};

/*
 * Parses argv into *c (argv strings are borrowed, not copied).
 * Returns 0 to run, 1 when --help/--version was printed (exit 0), or -1
 * after printing a clear message to stderr (exit 2).
 */
int cfg_parse(struct cfg *c, int argc, char **argv);
/* The --help text on f. The subcommands' lines come from fn (main.c's
 * table), printed after the first usage line. */
void cfg_usage(FILE *f);
/* fn prints the subcommands: --help lines (man 0) or roff (man 1). */
void cfg_set_usage_commands(void (*fn)(FILE *f, int man));
/* skill-mcp(1) in roff, from the same tables as --help. */
void cfg_man(FILE *f);
/* s as roff text: escapes, hyphens as \-, no control character first. */
void cfg_man_text(FILE *f, const char *s);
/* ./skills when it is a directory, else CFG_INSTALLED_ROOT. */
const char *cfg_default_root(void);

/* 1 when host names a loopback address (127.0.0.0/8, ::1, localhost). */
int cfg_is_loopback(const char *host);

/*
 * NULL when url may name an issuer or a JWKS: https://, or http:// to a
 * loopback address (tests, local set-ups). Else the reason, static.
 */
const char *cfg_url_refused(const char *url);

#endif
