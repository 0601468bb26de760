/*
 * config.c - flag parsing. Every flag has one line in the table below with
 * its help text; values are checked here so that nothing downstream has to
 * re-validate them. A bad value is a clear message and exit code 2.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accesslog.h"
#include "cfgfile.h"
#include "util.h"

enum opt_kind {
    OPT_STR, OPT_INT, OPT_SIZE, OPT_SECONDS, OPT_ROOT, OPT_LEVEL, OPT_FORMAT, OPT_FLAG,
    OPT_INTERP, OPT_LONG, OPT_FRACTION, OPT_CONFIG
};

struct opt {
    const char *name;
    enum opt_kind kind;
    size_t off;
    long min, max;          /* OPT_INT / OPT_SIZE bounds */
    const char *arg;
    const char *help;
};

#define O(f) offsetof(struct cfg, f)
static const struct opt opts[] = {
    {"--config", OPT_CONFIG, O(config_file), 0, 0, "FILE",
     "read options from this YAML file (port: 8000, skills: [a, b]); flags given here win"},
    {"--skills", OPT_ROOT, 0, 0, 0, "DIR",
     "skills root; repeatable, earlier roots win (default ./skills if it exists, else "
     CFG_INSTALLED_ROOT ")"},
    {"--host", OPT_STR, O(host), 0, 0, "ADDR", "address to bind (default 127.0.0.1)"},
    {"--port", OPT_INT, O(port), 0, 65535, "N", "TCP port, 0 picks a free one (default 8000)"},
    {"--path", OPT_STR, O(path), 0, 0, "PATH", "MCP endpoint path (default /mcp)"},
    {"--refresh-interval", OPT_SECONDS, O(refresh_interval), 0, 86400, "SEC",
     "re-stat the skill tree every SEC seconds, 0 disables (default 5)"},
    {"--threads", OPT_INT, O(threads), 1, 256, "N",
     "HTTP threads per worker (default: cores, at least 2)"},
    {"--workers", OPT_INT, O(workers), 1, 64, "N",
     "worker processes serving one port, restarted if they crash (default 1)"},
    {"--shutdown-timeout", OPT_SECONDS, O(shutdown_timeout), 0, 3600, "SEC",
     "on SIGTERM, finish requests and scripts in flight for up to SEC (default 30)"},
    {"--max-body", OPT_SIZE, O(max_body), 1024, 64L << 20, "BYTES",
     "largest request body accepted (default 1048576)"},
    {"--tls-cert", OPT_STR, O(tls_cert), 0, 0, "FILE",
     "serve HTTPS with this PEM certificate (with --tls-key)"},
    {"--tls-key", OPT_STR, O(tls_key), 0, 0, "FILE", "the PEM private key for --tls-cert"},
    {"--max-connections", OPT_INT, O(max_connections), 1, 100000, "N",
     "open connections per worker at most (default 1024)"},
    {"--max-connections-per-ip", OPT_INT, O(max_connections_per_ip), 0, 100000, "N",
     "open connections from one address at most, 0 = no limit (default 64)"},
    {"--connection-timeout", OPT_SECONDS, O(connection_timeout), 1, 3600, "SEC",
     "close a connection idle or stalled this long (default 60)"},
    {"--max-header-bytes", OPT_SIZE, O(max_header_bytes), 4096, 16L << 20, "BYTES",
     "request line and headers at most (default 32768)"},
    {"--allowed-origins", OPT_STR, O(allowed_origins), 0, 0, "LIST",
     "extra allowed Origin values, comma-separated, or * (default: loopback origins)"},
    {"--allowed-hosts", OPT_STR, O(allowed_hosts), 0, 0, "LIST",
     "extra allowed Host names, comma-separated, or * (default: loopback names when bound to loopback)"},
    {"--log-level", OPT_LEVEL, O(log_level), 0, 0, "LEVEL", "debug|info|warn|error (default info)"},
    {"--log-format", OPT_FORMAT, O(log_json), 0, 0, "FMT", "text|json (default text)"},
    {"--access-log", OPT_STR, O(access_log), 0, 0, "FILE",
     "one line per HTTP request to FILE (- for standard output); reopened on SIGHUP"},
    {"--access-log-format", OPT_FORMAT, O(access_log_json), 0, 0, "FMT",
     "text|json lines in --access-log (default text)"},
    {"--no-scripts", OPT_FLAG, O(no_scripts), 0, 0, "",
     "read-only server: run_skill_script is not offered"},
    {"--max-script-concurrency", OPT_INT, O(max_script_concurrency), 1, 1024, "N",
     "live script processes at most; later calls wait in order (default 8)"},
    {"--script-timeout", OPT_SECONDS, O(script_timeout), 0, 86400, "SEC",
     "a script's ceiling when its skill declares none (default 30)"},
    {"--script-stall-timeout", OPT_SECONDS, O(script_stall_timeout), 0, 86400, "SEC",
     "kill a script silent for SEC seconds, 0 disables (default 20)"},
    {"--max-script-timeout", OPT_SECONDS, O(max_script_timeout), 0, 86400, "SEC",
     "the most a skill may declare as its timeout (default 600)"},
    {"--script-queue-timeout", OPT_SECONDS, O(script_queue_timeout), 0, 86400, "SEC",
     "how long a call waits for a free slot before it ends as busy (default 30)"},
    {"--no-network-env", OPT_FLAG, O(no_network_env), 0, 0, "",
     "do not pass proxy and TLS variables to scripts"},
    {"--interpreter", OPT_INTERP, 0, 0, 0, "EXT=PATH",
     "run scripts ending in EXT with PATH (repeatable; e.g. .py=/usr/bin/python3)"},
    {"--max-output-bytes", OPT_SIZE, O(max_output_bytes), 1024, 256L << 20, "BYTES",
     "stdout and stderr retained per script, each (default 1048576)"},
    {"--auth-tokens", OPT_STR, O(auth_tokens), 0, 0, "FILE",
     "require a bearer token from this file (client_id sha256 [rpm] per line)"},
    {"--oauth-issuer", OPT_STR, O(oauth_issuer), 0, 0, "URL",
     "accept OAuth 2.1 JWT access tokens from this authorization server (https://, or "
     "http:// on loopback)"},
    {"--oauth-audience", OPT_STR, O(oauth_audience), 0, 0, "URI",
     "this server's resource URI that tokens must name in aud (default "
     "http[s]://HOST:PORT/PATH; set it behind a proxy)"},
    {"--oauth-jwks", OPT_STR, O(oauth_jwks), 0, 0, "URL",
     "the issuer's JWKS, instead of the jwks_uri of its metadata"},
    {"--oauth-scopes", OPT_STR, O(oauth_scopes), 0, 0, "LIST",
     "scopes every OAuth token must hold, comma-separated (default: none)"},
    {"--oauth-rpm", OPT_INT, O(oauth_rpm), 0, 1000000, "N",
     "requests per minute for each OAuth client id, as a token file's rpm; 0 = no limit "
     "(default 600)"},
    {"--public-index", OPT_FLAG, O(public_index), 0, 0, "",
     "with --auth-tokens, serve the discovery index and its archives without a token"},
    {"--metrics-public", OPT_FLAG, O(metrics_public), 0, 0, "",
     "with --auth-tokens, serve /metrics without a token"},
    {"--max-scripts-per-client", OPT_INT, O(max_scripts_per_client), 0, 1024, "N",
     "with --auth-tokens, scripts one client may run at once; 0 = no per-client cap "
     "(default: half of --max-script-concurrency)"},
    {"--script-user", OPT_STR, O(script_user), 0, 0, "USER",
     "when the server runs as root, run scripts and hooks as USER (e.g. nobody)"},
    {"--script-cpu-limit", OPT_SECONDS, O(script_cpu_limit), 0, 86400, "SEC",
     "RLIMIT_CPU of scripts and hooks; 0 = their ceiling + 1 s (default 0)"},
    {"--script-memory-limit", OPT_LONG, O(script_memory_mib), 0, 1L << 30, "MIB",
     "RLIMIT_AS (address space) of scripts and hooks in MiB, 0 = none (default 2048)"},
    {"--script-file-size-limit", OPT_LONG, O(script_fsize_mib), 0, 1L << 30, "MIB",
     "RLIMIT_FSIZE (largest file written) of scripts and hooks in MiB, 0 = none (default 1024)"},
    {"--script-max-processes", OPT_INT, O(script_nproc), 0, 1 << 22, "N",
     "RLIMIT_NPROC of scripts and hooks, 0 = none (default 256 when they run as another user "
     "than the server, else none)"},
    {"--sandbox", OPT_STR, O(sandbox), 0, 0, "KIND",
     "none|bwrap: run scripts and hooks under bubblewrap (default none)"},
    {"--bwrap-path", OPT_STR, O(bwrap_path), 0, 0, "FILE",
     "the bwrap binary for --sandbox bwrap (default: bwrap on PATH)"},
    {"--redact", OPT_STR, O(redact_file), 0, 0, "FILE",
     "more secret patterns to redact from script output, hook output and files read "
     "(NAME PCRE2-PATTERN per line; reloaded on SIGHUP)"},
    {"--acl", OPT_STR, O(acl_file), 0, 0, "FILE",
     "who may see and run which skills (WHO see|run PATTERN per line; reloaded on SIGHUP "
     "and when the file changes; default: everyone sees everything)"},
    {"--no-redact-builtins", OPT_FLAG, O(no_redact_builtins), 0, 0, "",
     "do not redact the built-in credential patterns (environment values still are)"},
    {"--synonyms", OPT_STR, O(synonyms), 0, 0, "FILE",
     "more synonym groups for list_skills(query), one per line, comma-separated (default: "
     "the built-in groups only)"},
    {"--hooks-dir", OPT_STR, O(hooks_dir), 0, 0, "DIR",
     "global pre/post hooks run around every script (default: none)"},
    {"--hook-timeout", OPT_SECONDS, O(hook_timeout), 0, 3600, "SEC",
     "ceiling of one hook run (default 10)"},
    {"--enable-tasks", OPT_FLAG, O(enable_tasks), 0, 0, "",
     "let clients run run_skill_script as an MCP task and poll for its result"},
    {"--tasks-redis", OPT_STR, O(tasks_redis), 0, 0, "URL",
     "keep task records in Redis (redis://[:PASSWORD@]HOST[:PORT][/DB]); needed with --workers > 1; "
     "with a password prefer --tasks-redis-file or SKILL_MCP_TASKS_REDIS"},
    {"--tasks-redis-file", OPT_STR, O(tasks_redis_file), 0, 0, "FILE",
     "read the --tasks-redis URL from FILE (keeps a password off the command line)"},
    {"--task-ttl", OPT_SECONDS, O(task_ttl), 1, 604800, "SEC",
     "how long a finished task and its result are kept (default 3600)"},
    {"--max-tasks-per-client", OPT_INT, O(max_tasks_per_client), 1, 10000, "N",
     "tasks one client may have working at once (default 16)"},
    {"--max-task-records-per-client", OPT_INT, O(max_task_records_per_client), 1, 1000000, "N",
     "task records (finished ones included) one client keeps; its oldest finished go first "
     "(default 1000)"},
    {"--lock", OPT_STR, O(lock_file), 0, 0, "FILE",
     "serve only the skill versions this lock approves (see `skill-mcp lock`)"},
    {"--lock-mode", OPT_STR, O(lock_mode), 0, 0, "MODE",
     "strict: quarantine what the lock does not approve; pin: record first versions (default strict)"},
    {"--lock-store", OPT_STR, O(lock_store), 0, 0, "DIR",
     "keep approved versions here, content-addressed (filled by `lock approve`)"},
    {"--lock-serve", OPT_STR, O(lock_serve), 0, 0, "WHAT",
     "refuse: refuse a quarantined skill; approved: serve its approved version from the store (default refuse)"},
    {"--audit-log", OPT_STR, O(audit_log), 0, 0, "FILE",
     "append one JSON line per script run (default with --lock: the log on stderr)"},
    {"--stateful", OPT_FLAG, O(stateful), 0, 0, "",
     "legacy clients get Mcp-Session-Id sessions (needs load-balancer affinity; one worker)"},
    {"--max-sessions", OPT_INT, O(max_sessions), 1, 1000000, "N",
     "with --stateful, live sessions at most; the least recently used goes first (default 1024)"},
    {"--session-idle-timeout", OPT_SECONDS, O(session_idle_timeout), 1, 604800, "SEC",
     "with --stateful, end a session unused this long (default 1800)"},
    {"--sse", OPT_FLAG, O(sse), 0, 0, "",
     "answer every request as a text/event-stream when the client accepts it"},
    {"--stdio", OPT_FLAG, O(stdio), 0, 0, "",
     "serve one client on stdin/stdout (newline-delimited JSON-RPC) instead of HTTP"},
    {"--context-tokens", OPT_LONG, O(context_tokens), 1000, 100000000L, "N",
     "the client's context window in tokens (default 128000)"},
    {"--context-share", OPT_FRACTION, O(context_share), 0, 1, "F",
     "the share of the window one tool result may use (default 0.25)"},
    {"--max-result-chars", OPT_SIZE, O(max_result_chars), 1000, 100000000L, "N",
     "hard cap on one tool result's text, in characters (default 48000)"},
};
#undef O

/* Handled before the table; listed after it in --help and the man page. */
static const char *const extra_opts[][2] = {
    {"--help", "show this help"},
    {"--help-man", "print this help as the skill-mcp(1) manual page (roff)"},
    {"--version", "print the version"},
};

static void (*usage_commands)(FILE *f, int man);

void cfg_set_usage_commands(void (*fn)(FILE *f, int man))
{
    usage_commands = fn;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: skill-mcp [options]\n");
    if (usage_commands)
        usage_commands(f, 0);
    fprintf(f, "\nServes a library of Agent Skills over MCP Streamable HTTP.\n\noptions:\n");
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", opts[i].name, *opts[i].arg ? " " : "", opts[i].arg);
        fprintf(f, "  %-26s %s\n", left, opts[i].help);
    }
    for (size_t i = 0; i < sizeof extra_opts / sizeof *extra_opts; i++)
        fprintf(f, "  %-26s %s\n", extra_opts[i][0], extra_opts[i][1]);
}

void cfg_man_text(FILE *f, const char *s)
{
    /* roff: a line must not start with a control character, a backslash
     * is an escape, and '-' is a hyphen unless written \- */
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

/*
 * skill-mcp(1) in roff, from the same tables as --help: the options here
 * and the subcommands in main.c, so the two cannot drift apart.
 */
void cfg_man(FILE *f)
{
    fprintf(f, ".TH SKILL\\-MCP 1 \"\" \"skill\\-mcp %s\" \"User Commands\"\n", SKILL_VERSION);
    fputs(".SH NAME\nskill\\-mcp \\- serve a library of Agent Skills over MCP Streamable HTTP\n"
          ".SH SYNOPSIS\n.B skill\\-mcp\n[\\fIoptions\\fR]\n", f);
    if (usage_commands)
        usage_commands(f, 1);
    fputs(".SH DESCRIPTION\n"
          "Serves the skills found under each skills root (folders holding a SKILL.md, with "
          "scripts/, references/ and hooks/) to MCP clients: list_skills, load_skill, "
          "read_skill_file and run_skill_script.\n"
          ".SH OPTIONS\n", f);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        fputs(".TP\n\\fB", f);
        cfg_man_text(f, opts[i].name);
        fputs("\\fR", f);
        if (*opts[i].arg) {
            fputs(" \\fI", f);
            cfg_man_text(f, opts[i].arg);
            fputs("\\fR", f);
        }
        fputc('\n', f);
        cfg_man_text(f, opts[i].help);
        fputc('\n', f);
    }
    for (size_t i = 0; i < sizeof extra_opts / sizeof *extra_opts; i++) {
        fputs(".TP\n\\fB", f);
        cfg_man_text(f, extra_opts[i][0]);
        fputs("\\fR\n", f);
        cfg_man_text(f, extra_opts[i][1]);
        fputc('\n', f);
    }
    fputs(".SH CONFIGURATION FILE\n"
          "\\fB\\-\\-config\\fR \\fIFILE\\fR reads a YAML mapping whose keys are the long "
          "options without their dashes: \\fBport: 8000\\fR, \\fBskills: [/srv/a, /srv/b]\\fR "
          "for a repeatable option, \\fBno\\-scripts: true\\fR for a switch. "
          "An option given on the command line wins over the file (a repeatable one replaces "
          "the file's list). An unknown key, a wrong type or a bad value stops the start with "
          "FILE:LINE and exit status 2. The file is read at start; SIGHUP does not re\\-read it.\n"
          ".SH SIGNALS\n"
          ".TP\n.B SIGHUP\nrescan the skills; re\\-read the token, redaction and lock files\n"
          ".TP\n.B SIGTERM\\fR, \\fBSIGINT\nstop accepting, let work in flight finish for up "
          "to \\fB\\-\\-shutdown\\-timeout\\fR, exit\n"
          ".SH ENVIRONMENT\n"
          ".TP\n.B NOTIFY_SOCKET\nsystemd's notification socket (Type=notify): READY=1 once the "
          "first snapshot is published and the port is served, STOPPING=1 when a drain "
          "starts\n"
          ".TP\n.B WATCHDOG_USEC\nsend WATCHDOG=1 every half of this period (WatchdogSec=)\n"
          ".TP\n.B SKILL_MCP_TASKS_REDIS\nthe \\fB\\-\\-tasks\\-redis\\fR URL, kept off "
          "the command line\n"
          ".SH FILES\n"
          ".TP\n.I /etc/skill\\-mcp/config.yaml\nthe packaged service's configuration\n"
          ".TP\n.I " CFG_INSTALLED_ROOT_ROFF "\nthe skills root when none is given and "
          "\\fI./skills\\fR does not exist\n"
          ".SH EXIT STATUS\n0 after a clean stop; 1 when serving failed; 2 for a bad option, "
          "value or file.\n"
          ".SH SEE ALSO\n.BR systemd.service (5),\n.BR sd_notify (3)\n", f);
}

void cfg_usage(FILE *f)
{
    usage(f);
}

/* "FILE:LINE: " while a --config file's entries are applied, else "". */
static char where[300];

static int bad(const char *flag, const char *val, const char *why)
{
    fprintf(stderr, "skill-mcp: %sinvalid value '%s' for %s: %s\n", where, val, flag, why);
    fprintf(stderr, "Try 'skill-mcp --help'.\n");
    return -1;
}

static int set_opt(struct cfg *c, const struct opt *o, const char *v)
{
    char *end;
    char *base = (char *)c;
    switch (o->kind) {
    case OPT_ROOT:
        if (!*v)
            return bad(o->name, v, "expected a directory");
        if (c->nroots == CFG_MAX_ROOTS)
            return bad(o->name, v, "too many --skills roots (at most 32)");
        c->roots[c->nroots++] = v;
        return 0;
    case OPT_STR:
    case OPT_CONFIG:
        if (!*v)
            return bad(o->name, v, "must not be empty");
        if (!strcmp(o->name, "--path") && v[0] != '/')
            return bad(o->name, v, "must start with '/'");
        *(const char **)(base + o->off) = v;
        return 0;
    case OPT_INT:
    case OPT_SIZE:
    case OPT_LONG: {
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < o->min || n > o->max) {
            char why[96];
            snprintf(why, sizeof why, "expected a whole number from %ld to %ld", o->min,
                     o->max);
            return bad(o->name, v, why);
        }
        if (o->kind == OPT_INT)
            *(int *)(base + o->off) = (int)n;
        else if (o->kind == OPT_LONG)
            *(long *)(base + o->off) = n;
        else
            *(size_t *)(base + o->off) = (size_t)n;
        return 0;
    }
    case OPT_FRACTION: {
        errno = 0;
        double d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || d <= 0 || d > 1)
            return bad(o->name, v, "expected a fraction above 0 and at most 1, e.g. 0.25");
        *(double *)(base + o->off) = d;
        return 0;
    }
    case OPT_SECONDS: {
        errno = 0;
        double d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || d < o->min || d > o->max) {
            char why[96];
            snprintf(why, sizeof why, "expected seconds from %ld to %ld", o->min, o->max);
            return bad(o->name, v, why);
        }
        *(double *)(base + o->off) = d;
        return 0;
    }
    case OPT_LEVEL: {
        static const char *lv[] = {"debug", "info", "warn", "error"};
        for (int i = 0; i < 4; i++)
            if (!strcasecmp(v, lv[i])) {
                *(int *)(base + o->off) = i;
                return 0;
            }
        return bad(o->name, v, "expected debug, info, warn or error");
    }
    case OPT_FLAG:
        *(int *)(base + o->off) = 1;
        return 0;
    case OPT_INTERP: {
        const char *eq = strchr(v, '=');
        if (v[0] != '.' || !eq || eq == v + 1 || !eq[1] || eq[1] != '/')
            return bad(o->name, v, "expected .EXT=/absolute/path, e.g. .py=/usr/bin/python3");
        if (c->ninterpreters == sizeof c->interpreters / sizeof *c->interpreters)
            return bad(o->name, v, "too many --interpreter entries");
        c->interpreters[c->ninterpreters++] = v;
        return 0;
    }
    case OPT_FORMAT:
        if (!strcmp(v, "json") || !strcmp(v, "text")) {
            *(int *)(base + o->off) = !strcmp(v, "json");
            return 0;
        }
        return bad(o->name, v, "expected text or json");
    }
    return -1;
}

/*
 * The --config file's entries, through set_opt like the command line's;
 * an option the command line also gives is skipped. Every message names
 * FILE:LINE.
 */
static int apply_file(struct cfg *c, const char *path, const struct opt **given, size_t ngiven)
{
    static struct cfgfile cf;      /* its strings are the values c borrows */
    cfgfile_free(&cf);             /* a parse before this one's, now unused */
    if (cfgfile_read(&cf, path) < 0) {
        fprintf(stderr, "skill-mcp: %s\n", cf.err.msg);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < cf.n && !rc; i++) {
        const struct cfgfile_entry *e = &cf.e[i];
        snprintf(where, sizeof where, "%s:%zu: ", path, e->line);
        const struct opt *o = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (!strcmp(opts[k].name + 2, e->key))
                o = &opts[k];
        if (!o || o->kind == OPT_CONFIG) {
            fprintf(stderr, "skill-mcp: %sunknown option '%s'%s\n", where, e->key,
                    o ? " (a config file does not name another)" : "");
            rc = -1;
            break;
        }
        int on_argv = 0;
        for (size_t k = 0; k < ngiven; k++)
            on_argv |= given[k] == o;
        if (on_argv)
            continue;
        int repeatable = o->kind == OPT_ROOT || o->kind == OPT_INTERP;
        if (e->seq && !repeatable) {
            fprintf(stderr, "skill-mcp: %s%s takes one value, not a list\n", where, e->key);
            rc = -1;
        } else if (!e->val) {
            fprintf(stderr, "skill-mcp: %s%s needs a value%s%s\n", where, e->key,
                    *o->arg ? " " : " (true or false)", o->arg);
            rc = -1;
        } else if (o->kind == OPT_FLAG) {
            int t = e->plain && !strcmp(e->val, "true"), f = e->plain && !strcmp(e->val, "false");
            if (!t && !f) {
                fprintf(stderr, "skill-mcp: %s%s is a switch: expected true or false, not '%s'\n",
                        where, e->key, e->val);
                rc = -1;
            } else {
                *(int *)((char *)c + o->off) = t;
            }
        } else {
            rc = set_opt(c, o, e->val);
        }
    }
    where[0] = '\0';
    if (rc)
        cfgfile_free(&cf);
    return rc;
}

const char *cfg_default_root(void)
{
    struct stat st;
    return stat("./skills", &st) == 0 && S_ISDIR(st.st_mode) ? "./skills" : CFG_INSTALLED_ROOT;
}

int cfg_parse(struct cfg *c, int argc, char **argv)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = 8000;
    c->path = "/mcp";
    c->refresh_interval = 5;
    c->threads = cores > 2 ? (int)(cores > 64 ? 64 : cores) : 2;
    c->max_body = 1 << 20;
    c->max_connections = 1024;
    c->max_connections_per_ip = 64;
    c->oauth_rpm = -1;      /* unset: 600 with --oauth-issuer (below) */
    c->connection_timeout = 60;
    c->max_header_bytes = 32768;
    c->log_level = LOG_INFO;
    c->workers = 1;
    c->shutdown_timeout = 30;
    c->max_script_concurrency = 8;
    c->script_timeout = 30;
    c->script_stall_timeout = 20;
    c->max_script_timeout = 600;
    c->script_queue_timeout = 30;
    c->max_output_bytes = 1 << 20;
    c->hook_timeout = 10;
    c->task_ttl = 3600;
    c->max_tasks_per_client = 16;
    c->max_task_records_per_client = 1000;
    c->script_memory_mib = 2048;
    c->script_fsize_mib = 1024;
    c->script_nproc = -1;
    c->max_scripts_per_client = -1;
    c->context_tokens = 128000;
    c->context_share = 0.25;
    c->max_result_chars = 48000;
    c->max_sessions = 1024;
    c->session_idle_timeout = 1800;

    /* The command line is read whole first: its flags win over the file's,
     * and a repeatable flag given there replaces the file's list. */
    const struct opt **given = xcalloc((size_t)argc + 1, sizeof *given);
    const char **vals = xcalloc((size_t)argc + 1, sizeof *vals);
    size_t ngiven = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 1;
            goto out;
        }
        if (!strcmp(a, "--help-man")) {
            cfg_man(stdout);
            rc = 1;
            goto out;
        }
        if (!strcmp(a, "--version")) {
            printf("skill-mcp %s\n", SKILL_VERSION);
            rc = 1;
            goto out;
        }
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const struct opt *o = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (strlen(opts[k].name) == nlen && !strncmp(opts[k].name, a, nlen))
                o = &opts[k];
        if (!o) {
            fprintf(stderr, "skill-mcp: unknown option '%s'\nTry 'skill-mcp --help'.\n", a);
            rc = -1;
            goto out;
        }
        if (o->kind == OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "skill-mcp: option %s takes no value\n", o->name);
                rc = -1;
                goto out;
            }
            val = "";
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            fprintf(stderr, "skill-mcp: option %s needs a value (%s)\n", o->name, o->arg);
            rc = -1;
            goto out;
        }
        given[ngiven] = o;
        vals[ngiven++] = val;
    }
    for (size_t i = 0; i < ngiven; i++)
        if (given[i]->kind == OPT_CONFIG && (rc = set_opt(c, given[i], vals[i])) < 0)
            goto out;
    if (c->config_file && (rc = apply_file(c, c->config_file, given, ngiven)) < 0)
        goto out;
    for (size_t i = 0; i < ngiven; i++) {
        if (given[i]->kind == OPT_CONFIG)
            continue;
        if ((rc = set_opt(c, given[i], vals[i])) < 0)
            goto out;
    }
out:
    free(given);
    free(vals);
    if (rc)
        return rc;
    if (c->nroots == 0)
        c->roots[c->nroots++] = cfg_default_root();
    if (c->max_scripts_per_client < 0)
        c->max_scripts_per_client = c->max_script_concurrency > 1 ? (c->max_script_concurrency + 1) / 2 : 1;
    if (!c->tls_cert != !c->tls_key) {
        fprintf(stderr, "skill-mcp: --tls-cert and --tls-key go together\n");
        return -1;
    }
    if (c->access_log_json && !c->access_log) {
        fprintf(stderr, "skill-mcp: --access-log-format needs --access-log FILE\n");
        return -1;
    }
    if (c->access_log) {
        struct err why;
        if (accesslog_check(c->access_log, &why) < 0)
            return bad("--access-log", c->access_log, why.msg);
    }
    if (c->lock_mode && strcmp(c->lock_mode, "strict") && strcmp(c->lock_mode, "pin"))
        return bad("--lock-mode", c->lock_mode, "expected strict or pin");
    if (c->lock_serve && strcmp(c->lock_serve, "refuse") && strcmp(c->lock_serve, "approved"))
        return bad("--lock-serve", c->lock_serve, "expected refuse or approved");
    if ((c->lock_mode || c->lock_store || c->lock_serve) && !c->lock_file) {
        fprintf(stderr, "skill-mcp: --lock-mode, --lock-store and --lock-serve need --lock FILE\n");
        return -1;
    }
    if (c->lock_serve && !strcmp(c->lock_serve, "approved") && !c->lock_store) {
        fprintf(stderr, "skill-mcp: --lock-serve approved needs --lock-store DIR\n");
        return -1;
    }
    if ((c->oauth_audience || c->oauth_jwks || c->oauth_scopes) && !c->oauth_issuer) {
        fprintf(stderr, "skill-mcp: --oauth-audience, --oauth-jwks and --oauth-scopes need "
                        "--oauth-issuer URL\n");
        return -1;
    }
    if (c->oauth_rpm >= 0 && !c->oauth_issuer) {
        fprintf(stderr, "skill-mcp: --oauth-rpm needs --oauth-issuer URL (a token file's "
                        "clients take their rpm from the file)\n");
        return -1;
    }
    if (c->oauth_rpm < 0)
        c->oauth_rpm = 600;
    if (c->oauth_issuer && cfg_url_refused(c->oauth_issuer))
        return bad("--oauth-issuer", c->oauth_issuer, cfg_url_refused(c->oauth_issuer));
    if (c->oauth_jwks && cfg_url_refused(c->oauth_jwks))
        return bad("--oauth-jwks", c->oauth_jwks, cfg_url_refused(c->oauth_jwks));
    if (c->stateful && c->workers > 1) {
        /* Workers share one listening socket and the kernel picks which one
         * accepts, so no load balancer can route a session back to the
         * worker that holds it. */
        fprintf(stderr, "skill-mcp: --stateful keeps sessions in one process and cannot be "
                        "combined with --workers %d on one port; run one instance per port "
                        "behind a load balancer that hashes Mcp-Session-Id (docs/deploy.md), "
                        "or drop --stateful\n", c->workers);
        return -1;
    }
    if (c->stdio && (c->workers > 1 || c->stateful || c->auth_tokens || c->oauth_issuer ||
                     c->tls_cert)) {
        /* One client that started the server itself: nothing to share, route
         * or authenticate. */
        fprintf(stderr, "skill-mcp: --stdio serves the one client on stdin/stdout and cannot be "
                        "combined with %s (an HTTP option)\n",
                c->workers > 1 ? "--workers" : c->stateful ? "--stateful"
                : c->auth_tokens ? "--auth-tokens" : c->oauth_issuer ? "--oauth-issuer"
                : "--tls-cert");
        return -1;
    }
    if (c->sandbox && strcmp(c->sandbox, "none") && strcmp(c->sandbox, "bwrap")) {
        fprintf(stderr, "skill-mcp: invalid value '%s' for --sandbox: expected none or bwrap\n",
                c->sandbox);
        return -1;
    }
    if (c->sandbox && !strcmp(c->sandbox, "none"))
        c->sandbox = NULL;
    if (c->script_timeout <= 0) {
        fprintf(stderr, "skill-mcp: --script-timeout must be more than 0\n");
        return -1;
    }
    if (c->max_script_timeout < c->script_timeout) {
        fprintf(stderr, "skill-mcp: --max-script-timeout (%g) is below --script-timeout (%g)\n",
                c->max_script_timeout, c->script_timeout);
        return -1;
    }
    return 0;
}

int cfg_is_loopback(const char *h)
{
    char name[256];
    size_t n = strlen(h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, h, n);
    name[n] = '\0';
    if (!strcasecmp(name, "localhost"))
        return 1;
    /* Addresses only: "127.evil.example" is a name, not a loopback address. */
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, name, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) ||
               (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return 0;
}

const char *cfg_url_refused(const char *url)
{
    if (!url || !*url)
        return "it is empty";
    if (!strncasecmp(url, "https://", 8))
        return url[8] ? NULL : "it names no host";
    if (strncasecmp(url, "http://", 7))
        return "it must be an https:// URL";
    const char *h = url + 7, *end = h;
    if (*h == '[')
        end = strchr(h, ']') ? strchr(h, ']') + 1 : h + strlen(h);
    else
        end = h + strcspn(h, ":/?#");
    char host[256];
    size_t n = (size_t)(end - h);
    const char *at = strchr(h, '@');
    if (n == 0 || n >= sizeof host || (at && at < h + strcspn(h, "/?#")))
        return "it must be an https:// URL";
    memcpy(host, h, n);
    host[n] = '\0';
    return cfg_is_loopback(host) ? NULL
                                 : "it must be https:// (plain http is allowed to a loopback "
                                   "address only)";
}
