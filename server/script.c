/*
 * script.c - the per-call policy of run_skill_script: what one call may run
 * and how (script_prepare, script_hook_job), and the result a model reads.
 * What is decided once for the process (interpreters, the base environment,
 * the script user, the sandbox) is script_env.c's.
 *
 * Interpreter: by file suffix only (a shebang or the executable bit grants
 * nothing).
 *
 * Environment: the server's own environment is never inherited. A script
 * sees the base allowlist, the SKILL_* variables, and the caller's `env`,
 * whose names may not be ones that change how the loader, a shell or an
 * interpreter starts.
 *
 * Timeouts: the skill's execution: entry (or its default, or the server's),
 * clamped to --max-script-timeout; the caller may only lower them.
 *
 * Jail: the script must resolve, symlinks included, to a regular file inside
 * that skill's own scripts/ folder (openat2 RESOLVE_BENEATH from scripts/).
 */
#include "script.h"
#include "script_int.h"

#include <ctype.h>
#include <pwd.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail.h"
#include "util.h"

extern char **environ;

#define MAX_ARGS 256
#define MAX_ARG_BYTES (32u << 10)
#define MAX_STDIN_BYTES (1u << 20)
#define MAX_ENV_VARS 64
#define MAX_ENV_VALUE (32u << 10)
#define MAX_ENV_TOTAL (256u << 10)
#define SHORT_CEILING_S 15.0

/*
 * The job's limits and user, which the runner's child sets on itself before
 * exec, and the argv entries in front of the interpreter: the sandbox
 * (bwrap), when there is one. The child switches to the script user before
 * it execs bwrap, so bubblewrap never holds root: it builds its namespaces
 * as the script user, in an unprivileged user namespace, and the uid inside
 * is that user's. ro lists the folders the sandbox shows read-only (the
 * skill, a hook's folder); cwd is where the script starts.
 */
void script_wrap(const struct scripts *sc, struct run_job *j, const char *const *ro,
                        size_t nro, const char *cwd, int network, char ***v, size_t *n,
                        size_t *cap)
{
    double cpu = sc->cpu_s > 0 ? sc->cpu_s : j->timeout_s + 1;
    j->lim_cpu_s = (int)ceil(cpu);
    j->lim_as_mib = sc->as_mib;
    j->lim_fsize_mib = sc->fsize_mib;
    j->lim_nproc = sc->nproc;
    j->run_uid = sc->uid;
    j->run_gid = sc->gid;
    if (sc->bwrap) {
        static const char *const net_files[] = {
            "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/ssl",
            "/etc/ca-certificates", "/etc/pki", NULL,
        };
        j->sandboxed = 1;
        script_push(v, n, cap, xstrdup(sc->bwrap));
        for (size_t i = 0; i < sc->nsb_base; i++)
            script_push(v, n, cap, xstrdup(sc->sb_base[i]));
        if (network) {
            script_push(v, n, cap, xstrdup("--share-net"));
            for (const char *const *f = net_files; *f; f++) {
                script_push(v, n, cap, xstrdup("--ro-bind-try"));
                script_push(v, n, cap, xstrdup(*f));
                script_push(v, n, cap, xstrdup(*f));
            }
        }
        for (size_t i = 0; i < nro; i++) {
            script_push(v, n, cap, xstrdup("--ro-bind"));
            script_push(v, n, cap, xstrdup(ro[i]));
            script_push(v, n, cap, xstrdup(ro[i]));
        }
        /* The scratch HOME is made when the job starts: its path goes in then. */
        script_push(v, n, cap, xstrdup("--bind"));
        j->scratch_args[j->nscratch_args++] = *n;
        script_push(v, n, cap, xstrdup("SCRATCH"));
        j->scratch_args[j->nscratch_args++] = *n;
        script_push(v, n, cap, xstrdup("SCRATCH"));
        script_push(v, n, cap, xstrdup("--chdir"));
        script_push(v, n, cap, xstrdup(cwd));
        script_push(v, n, cap, xstrdup("--"));
    }
}

/* Names a caller may not set: they change how a loader, shell or interpreter
 * starts (code of the caller's choosing), or they are the server's own. */
static const char *const denied_prefixes[] = {
    "LD_", "DYLD_", "PYTHON", "NODE_", "NPM_CONFIG_", "PERL", "RUBY", "GEM_", "BASH_FUNC_",
    "GIT_", "MALLOC_", "LC_", "SKILL_", "JAVA_", "_JAVA", "OPENSSL_", "SSL_", "TERMINFO",
    NULL,
};
static const char *const denied_names[] = {
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "GLOBIGNORE",
    "PROMPT_COMMAND", "GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "HOSTALIASES",
    "LOCALDOMAIN", "RES_OPTIONS", "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "TZDIR",
    "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "ZDOTDIR", "XDG_CONFIG_HOME", "CURL_HOME",
    "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "EDITOR", "VISUAL", "PAGER", "LESSOPEN",
    "TMPPREFIX", NULL,
};

const char *script_env_problem(const char *name)
{
    size_t n = strlen(name);
    if (!n || n > 128)
        return "names must be 1-128 characters";
    if (!(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return "names must start with a letter or '_'";
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
            return "names may use only letters, digits and '_'";
    for (const char *const *p = denied_prefixes; *p; p++)
        if (!strncasecmp(name, *p, strlen(*p)))
            return "it could change how the interpreter or loader starts, or it is set by the "
                   "server";
    for (const char *const *p = denied_names; *p; p++)
        if (!strcasecmp(name, *p))
            return "it could change how the interpreter or loader starts, or it is set by the "
                   "server";
    for (const char *const *p = script_network_vars; *p; p++)
        if (!strcasecmp(name, *p))
            return "proxy and TLS variables come from the server's configuration";
    return NULL;
}

/* ---- jail for scripts ------------------------------------------------------- */

/*
 * Resolves scripts/<rel> of dir to the real path of a regular file inside
 * the skill's scripts/ folder. Returns NULL with *e set. *canon points
 * into the result at the path below scripts/: the script's one identity,
 * whatever the caller's spelling. *fdp keeps the file that was checked open,
 * so that the runner can tell at spawn time whether the path still names it
 * (and its inode number cannot be reused meanwhile).
 */
static char *resolve_script(const char *dir, const char *rel, const char **canon, int *fdp,
                            struct err *e)
{
    char sdir[4096], sreal[4096], link[64], real[4096];
    struct stat st;
    /* Most calls name a file through no link: the path as spelled (its
     * repeated slashes dropped) is then the real one, proven by a single
     * openat2 that refuses every link, and inside scripts/ by its text. */
    size_t dl = strlen(dir);
    if (dl + 9 + strlen(rel) < sizeof real) {
        char *w = real + snprintf(real, sizeof real, "%s/scripts/", dir);
        for (const char *r = rel; *r; r++)
            if (*r != '/' || w[-1] != '/')
                *w++ = *r;
        *w = '\0';
        int fd = jail_open_plain(real, &st);
        if (fd >= 0 && st.st_nlink > 0) {
            char *r = xstrdup(real);
            *canon = r + dl + 9;
            *fdp = fd;
            return r;
        }
        if (fd >= 0)
            close(fd);
    }
    snprintf(sdir, sizeof sdir, "%s/scripts", dir);
    if (!realpath(sdir, sreal)) {
        err_set(e, 0, 0, "this skill has no scripts/ folder");
        return NULL;
    }
    if (strncmp(sreal, dir, dl) || sreal[dl] != '/') {
        err_set(e, 0, 0, "the skill's scripts/ folder leads outside the skill");
        return NULL;
    }
    int dfd = open(sreal, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        err_set(e, 0, 0, "the skill's scripts/ folder cannot be opened");
        return NULL;
    }
    int fd = jail_open_beneath(dfd, rel);
    int en = fd < 0 ? -fd : 0;
    close(dfd);
    if (fd < 0) {
        err_set(e, 0, 0, "%s",
                en == ENOENT || en == ENOTDIR ? "no such script in the skill's scripts/ folder"
                : en == EXDEV || en == ELOOP  ? "the script leads outside the skill's scripts/ folder"
                                              : "the script cannot be opened");
        return NULL;
    }
    ssize_t n = -1;
    const char *bad = "the script cannot be resolved";
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, real, sizeof real - 1);
    } else {
        bad = S_ISDIR(st.st_mode) ? "that is a folder, not a script" : "that is not a regular file";
    }
    if (n < 0) {
        close(fd);
        err_set(e, 0, 0, "%s", bad);
        return NULL;
    }
    real[n] = '\0';
    /* Renamed over or unlinked after the open: the link then reads
     * "... (deleted)", which would be judged by the wrong name. nlink never
     * comes back from 0, so a count read after readlink covers the name. */
    if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
        close(fd);
        err_set(e, 0, 0, "the script disappeared while it was being opened");
        return NULL;
    }
    size_t sl = strlen(sreal);
    if (strncmp(real, sreal, sl) || real[sl] != '/' || !real[sl + 1]) {
        close(fd);
        err_set(e, 0, 0, "the script leads outside the skill's scripts/ folder");
        return NULL;
    }
    char *r = xstrdup(real);
    *canon = r + sl + 1;
    *fdp = fd;
    return r;
}

static const struct interp *interp_for(const struct scripts *sc, const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return NULL;
    for (size_t i = 0; i < sc->n; i++)
        if (!strcmp(sc->in[i].ext, dot))
            return &sc->in[i];
    return NULL;
}

/* ---- timeouts ---------------------------------------------------------------- */

json_t *script_exec_entry(const struct skill *k, const char *path)
{
    json_t *ex = skills_execution(k);
    if (!json_is_object(ex))
        return NULL;
    json_t *e = json_object_get(ex, path);
    if (!e && !strncmp(path, "scripts/", 8))
        e = json_object_get(ex, path + 8);
    return json_is_object(e) ? e : NULL;
}

/* v, or hi when v is above it (or not a number at all). */
static double at_most(double v, double hi)
{
    return v < hi ? v : hi;
}

static double num_field(json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* execution: {network: true} asks for the network under the sandbox. */
int script_wants_network(const struct skill *k)
{
    json_t *ex = skills_execution(k);
    return json_is_object(ex) && json_is_true(json_object_get(ex, "network"));
}

/* ---- prepare ----------------------------------------------------------------- */

/* python3 ... -c PY_LAUNCH <real path> args: runs the source on fd 3 as
 * __main__, as `python3 <real path> args` would run the file. */
#define PY_LAUNCH                                                               \
    "def _skill_mcp_run():\n"                                                   \
    "    import os, sys, builtins\n"                                            \
    "    p = sys.argv.pop(1)\n"                                                 \
    "    sys.argv[0] = p\n"                                                     \
    "    sys.path[0] = os.path.dirname(p)\n"                                    \
    "    with os.fdopen(3, 'rb') as f:\n"                                       \
    "        code = compile(f.read(), p, 'exec', dont_inherit=True)\n"          \
    "    g = sys.modules['__main__'].__dict__\n"                                \
    "    g.clear()\n"                                                           \
    "    g.update(__name__='__main__', __file__=p, __doc__=None, __package__=None,\n" \
    "             __spec__=None, __loader__=None, __builtins__=builtins)\n"     \
    "    try:\n"                                                                \
    "        exec(code, g)\n"                                                   \
    "    except SystemExit:\n"                                                  \
    "        raise\n"                                                           \
    "    except BaseException:\n"                                               \
    "        t, v, tb = sys.exc_info()\n"                                       \
    "        sys.excepthook(t, v.with_traceback(tb.tb_next), tb.tb_next)\n"     \
    "        sys.exit(1)\n"                                                     \
    "_skill_mcp_run()\n"


static void request_id(char *out, size_t n)
{
    char hex[17];
    if (x_random_hex(hex, 8) < 0)   /* an id for logs, not a secret: the clock will do */
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)now_ns());
    snprintf(out, n, "r-%s", hex);
}

struct run_job *script_prepare(const struct scripts *sc, const struct cfg *c,
                               const struct skill *k, json_t *args, struct err *why)
{
    char kdir[SKILL_DIR_MAX];
    const char *script = json_string_value(json_object_get(args, "script"));
    json_t *jargs = json_object_get(args, "args"), *jstdin = json_object_get(args, "stdin");
    json_t *jto = json_object_get(args, "timeout"), *jst = json_object_get(args, "stall_timeout");
    json_t *jenv = json_object_get(args, "env");
    const char *jwhy = NULL;
    char rel[1100];

    if (!script || !*script) {
        err_set(why, 0, 0, "Argument 'script' is required: a path from the 'scripts' that load_skill "
                      "lists, such as scripts/run.py.");
        return NULL;
    }
    const char *closed = sc->closed_hooks ? sc->closed_hooks
                         : k->root < sizeof sc->closed / sizeof *sc->closed ? sc->closed[k->root]
                                                                              : NULL;
    if (closed) {
        err_set(why, 0, 0, "Cannot run scripts of '%s' on this server: %s.", k->qname, closed);
        return NULL;
    }
    size_t slen = json_string_length(json_object_get(args, "script"));
    if ((jwhy = jail_check(script, slen))) {
        err_set(why, 0, 0, "Cannot run '%.200s': %s.", script, jwhy);
        return NULL;
    }
    /* A bare file name means scripts/<name>; anything else must be in scripts/. */
    if (!strchr(script, '/'))
        snprintf(rel, sizeof rel, "%s", script);
    else if (!strncmp(script, "scripts/", 8) && script[8 + strspn(script + 8, "/")])
        /* scripts//x.sh is scripts/x.sh, not an absolute path below scripts/ */
        snprintf(rel, sizeof rel, "%s", script + 8 + strspn(script + 8, "/"));
    else {
        err_set(why, 0, 0, "Cannot run '%.200s': only files in the skill's scripts/ folder can be run "
                      "(hooks, references and SKILL.md cannot).", script);
        return NULL;
    }
    const char *canon = NULL;
    struct err rwhy;
    int sfd = -1;
    const char *dir = skills_dir(k, kdir);
    char *real = resolve_script(dir, rel, &canon, &sfd, &rwhy);
    if (!real) {
        err_set(why, 0, 0, "Cannot run '%.200s' of skill '%s': %s.", script, k->qname, rwhy.msg);
        return NULL;
    }
    const struct interp *it = interp_for(sc, real);
    if (!it || !it->path) {
        err_set(why, 0, 0, "Cannot run '%.200s': %s.", script,
             it ? it->why : "its file type has no interpreter on this server (.py, .sh, .js)");
        close(sfd);
        free(real);
        return NULL;
    }

    /* arguments, stdin, env: data, bounded */
    size_t nargs = 0;
    if (jargs && !json_is_null(jargs)) {
        size_t i;
        json_t *a;
        if (!json_is_array(jargs) || json_array_size(jargs) > MAX_ARGS) {
            err_set(why, 0, 0, "Argument 'args' must be a list of at most %d strings.", MAX_ARGS);
            close(sfd);
            free(real);
            return NULL;
        }
        json_array_foreach(jargs, i, a) {
            if (!json_is_string(a) || json_string_length(a) > MAX_ARG_BYTES ||
                memchr(json_string_value(a), '\0', json_string_length(a))) {
                err_set(why, 0, 0, "Argument 'args' item %zu must be a string of at most %u bytes "
                              "without NUL (numbers too: pass \"3\", not 3).", i, MAX_ARG_BYTES);
                close(sfd);
                free(real);
                return NULL;
            }
        }
        nargs = json_array_size(jargs);
    }
    if (jstdin && !json_is_null(jstdin) &&
        (!json_is_string(jstdin) || json_string_length(jstdin) > MAX_STDIN_BYTES)) {
        err_set(why, 0, 0, "Argument 'stdin' must be a string of at most %u bytes.", MAX_STDIN_BYTES);
        close(sfd);
        free(real);
        return NULL;
    }
    if (jenv && !json_is_null(jenv)) {
        const char *name;
        json_t *v;
        size_t total = 0;
        if (!json_is_object(jenv) || json_object_size(jenv) > MAX_ENV_VARS) {
            err_set(why, 0, 0, "Argument 'env' must be an object of at most %d string values.",
                 MAX_ENV_VARS);
            close(sfd);
            free(real);
            return NULL;
        }
        json_object_foreach(jenv, name, v) {
            const char *p = script_env_problem(name);
            if (p) {
                err_set(why, 0, 0, "Argument 'env': '%.64s' is not allowed: %s.", name, p);
                close(sfd);
                free(real);
                return NULL;
            }
            if (!json_is_string(v) || json_string_length(v) > MAX_ENV_VALUE ||
                memchr(json_string_value(v), '\0', json_string_length(v))) {
                err_set(why, 0, 0, "Argument 'env': '%.64s' must be a string of at most %u bytes "
                              "without NUL.", name, MAX_ENV_VALUE);
                close(sfd);
                free(real);
                return NULL;
            }
            total += json_string_length(v) + strlen(name);
        }
        if (total > MAX_ENV_TOTAL) {
            err_set(why, 0, 0, "Argument 'env' is too large (at most %u bytes in all).", MAX_ENV_TOTAL);
            close(sfd);
            free(real);
            return NULL;
        }
    }

    /* timeouts: the skill decides, bounded by the server; the caller may lower.
     * Every value is clamped to the ceiling before anything converts it to an
     * integer: 1e300 seconds has no integer form. */
    char entry_key[1100];
    snprintf(entry_key, sizeof entry_key, "scripts/%s", canon);
    json_t *e = script_exec_entry(k, entry_key);
    json_t *ex = skills_execution(k);
    json_t *d = json_is_object(ex) ? json_object_get(ex, "default") : NULL;
    double ceil_s = c->max_script_timeout;
    double to = num_field(e, "timeout", num_field(d, "timeout", c->script_timeout));
    double st = num_field(e, "stall_timeout", num_field(d, "stall_timeout", c->script_stall_timeout));
    if (!(to > 0))
        to = c->script_timeout;
    to = at_most(to, ceil_s);
    st = st > 0 ? at_most(st, ceil_s) : 0;
    if (jto && !json_is_null(jto)) {
        if (!json_is_number(jto) || !(json_number_value(jto) > 0)) {
            err_set(why, 0, 0, "Argument 'timeout' must be a number of seconds above 0.");
            close(sfd);
            free(real);
            return NULL;
        }
        double v = at_most(json_number_value(jto), ceil_s);
        if (v < to)
            to = v;
    }
    if (jst && !json_is_null(jst)) {
        if (!json_is_number(jst) || !(json_number_value(jst) > 0)) {
            err_set(why, 0, 0, "Argument 'stall_timeout' must be a number of seconds above 0 (stall "
                          "detection cannot be switched off by the caller).");
            close(sfd);
            free(real);
            return NULL;
        }
        double v = at_most(json_number_value(jst), ceil_s);
        if (st == 0 || v < st)
            st = v;
    }

    struct run_job *j = xcalloc(1, sizeof *j);
    size_t na = 0, acap = 0;
    j->timeout_s = to;
    const char *ro[] = {dir};
    script_wrap(sc, j, ro, 1, dir, script_wants_network(k), &j->argv, &na, &acap);
    script_push(&j->argv, &na, &acap, xstrdup(it->path));
    for (size_t i = 0; i < 5 && it->args[i]; i++)
        script_push(&j->argv, &na, &acap, xstrdup(it->args[i]));
    if (!strcmp(it->ext, ".py")) {
        /* Python reads the very file the jail checked, from fd 3, so that
         * swapping the path between the check and the interpreter's open
         * changes nothing; argv[0], __file__ and sys.path[0] are the real
         * path as when Python opens a script itself. */
        script_push(&j->argv, &na, &acap, xstrdup("-c"));
        script_push(&j->argv, &na, &acap, xstrdup(PY_LAUNCH));
        j->script_on_fd3 = 1;
    }
    script_push(&j->argv, &na, &acap, real);
    j->argv_fixed = na;
    j->run_uid = sc->uid;
    j->run_gid = sc->gid;
    for (size_t i = 0; i < nargs; i++)
        script_push(&j->argv, &na, &acap, xstrdup(json_string_value(json_array_get(jargs, i))));

    request_id(j->request_id, sizeof j->request_id);
    size_t n = 0, cap = 0;
    char **env = NULL;
    for (size_t i = 0; i < sc->nbase; i++)
        script_push(&env, &n, &cap, xstrdup(sc->base_env[i]));
    char budget[32];
    /* what the model will see, not what is retained: a script that can
     * print less (a limit, fewer fields) should aim at this */
    snprintf(budget, sizeof budget, "%zu",
             sc->budget_bytes && sc->budget_bytes < c->max_output_bytes ? sc->budget_bytes
                                                                        : c->max_output_bytes);
    script_push(&env, &n, &cap, script_kv("SKILL_NAME", k->qname));
    script_push(&env, &n, &cap, script_kv("SKILL_DIR", dir));
    script_push(&env, &n, &cap, script_kv("SKILL_REQUEST_ID", j->request_id));
    script_push(&env, &n, &cap, script_kv("SKILL_OUTPUT_BUDGET_BYTES", budget));
    if (json_is_object(jenv)) {
        const char *name;
        json_t *v;
        json_object_foreach(jenv, name, v)
            script_push(&env, &n, &cap, script_kv(name, json_string_value(v)));
    }
    j->envp = env;
    j->cwd = xstrdup(dir);
    if (json_is_string(jstdin)) {
        j->stdin_len = json_string_length(jstdin);
        j->stdin_data = xmalloc(j->stdin_len + 1);
        memcpy(j->stdin_data, json_string_value(jstdin), j->stdin_len + 1);
    }
    j->timeout_s = to;
    j->stall_s = st;
    j->skill = xstrdup(k->qname);
    /* One identity per script, from the file the jail resolved, not from the
     * caller's spelling: hooks, execution: entries, logs, stats and the audit
     * line all see scripts/<path below scripts/>. */
    j->script = xstrdup(entry_key);
    j->retain_max = c->max_output_bytes;
    j->script_fd = sfd;
    j->script_path = xstrdup(real);
    return j;
}
/*
 * A skill's hook is skill content, checked and used like a script: opened
 * beneath the skill folder (a link out of it is refused), kept open so the
 * runner can tell at spawn that the path still names it, and run from that
 * file (Python reads it from fd 3). The real path, or NULL with *e set.
 */
static char *resolve_skill_hook(const char *skill_dir, const char *path, int *fdp,
                                struct err *e)
{
    char dreal[4096], link[64], real[4096];
    size_t dl = strlen(skill_dir);
    struct stat st;
    /* as for scripts: a path through no link is its own real path */
    int pfd = jail_open_plain(path, &st);
    if (pfd >= 0 && st.st_nlink > 0) {
        *fdp = pfd;
        return xstrdup(path);
    }
    if (pfd >= 0)
        close(pfd);
    if (!realpath(skill_dir, dreal)) {
        err_set(e, 0, 0, "the skill folder cannot be resolved");
        return NULL;
    }
    int dfd = open(dreal, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        err_set(e, 0, 0, "the skill folder cannot be opened");
        return NULL;
    }
    int fd = jail_open_beneath(dfd, path + dl + 1);
    close(dfd);
    if (fd < 0) {
        err_set(e, 0, 0, "%s",
                fd == -EXDEV || fd == -ELOOP ? "the hook leads outside the skill folder"
                : fd == -ENOENT              ? "the hook file is gone"
                                             : "the hook cannot be opened");
        return NULL;
    }
    ssize_t n = -1;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        err_set(e, 0, 0, "the hook is not a regular file");
    else if ((n = readlink(link, real, sizeof real - 1)) < 0)
        err_set(e, 0, 0, "the hook cannot be resolved");
    if (n >= 0) {
        real[n] = '\0';
        size_t rl = strlen(dreal);
        if (fstat(fd, &st) != 0 || st.st_nlink == 0) { /* as for scripts */
            err_set(e, 0, 0, "the hook disappeared while it was being opened");
            n = -1;
        } else if (strncmp(real, dreal, rl) || real[rl] != '/') {
            err_set(e, 0, 0, "the hook leads outside the skill folder");
            n = -1;
        }
    }
    if (n < 0) {
        close(fd);
        return NULL;
    }
    *fdp = fd;
    return xstrdup(real);
}

struct run_job *script_hook_job(const struct scripts *sc, const struct cfg *c, const char *path,
                                const char *cwd, const char *input, size_t input_len,
                                const char *skill, const char *skill_dir,
                                const char *request_id, const char *kind, struct err *why)
{
    const struct interp *it = interp_for(sc, path);
    if (!it || !it->path) {
        err_set(why, 0, 0, "%s hook %s cannot run: %s", kind, path,
             it ? it->why : "its file type has no interpreter on this server");
        return NULL;
    }
    size_t sdl = skill_dir ? strlen(skill_dir) : 0;
    int hfd = -1;
    char *hreal = NULL;
    if (sdl && !strncmp(path, skill_dir, sdl) && path[sdl] == '/') {
        struct err hwhy;
        if (!(hreal = resolve_skill_hook(skill_dir, path, &hfd, &hwhy))) {
            err_set(why, 0, 0, "%s hook %s cannot run: %s", kind, path, hwhy.msg);
            return NULL;
        }
    }
    struct run_job *j = xcalloc(1, sizeof *j);
    size_t na = 0, acap = 0;
    j->timeout_s = c->hook_timeout > 0 ? c->hook_timeout : 10;
    /* A hook sees its own folder and the skill's, read-only, and never the
     * network (it decides; it does not fetch). */
    char hdir[4096];
    snprintf(hdir, sizeof hdir, "%s", path);
    char *slash = strrchr(hdir, '/');
    if (slash && slash != hdir)
        *slash = '\0';
    const char *ro[] = {hdir, skill_dir, cwd};
    size_t nro = 1 + (skill_dir && *skill_dir) + (cwd && *cwd);
    if (!(skill_dir && *skill_dir))
        ro[1] = cwd;
    script_wrap(sc, j, ro, nro, cwd, 0, &j->argv, &na, &acap);
    script_push(&j->argv, &na, &acap, xstrdup(it->path));
    for (size_t i = 0; i < 5 && it->args[i]; i++)
        script_push(&j->argv, &na, &acap, xstrdup(it->args[i]));
    if (hreal && !strcmp(it->ext, ".py")) {
        script_push(&j->argv, &na, &acap, xstrdup("-c"));
        script_push(&j->argv, &na, &acap, xstrdup(PY_LAUNCH));
        j->script_on_fd3 = 1;
    }
    script_push(&j->argv, &na, &acap, xstrdup(hreal ? hreal : path));
    if (hreal) {
        j->script_fd = hfd;
        j->script_path = hreal;
    }
    j->run_uid = sc->uid;
    j->run_gid = sc->gid;
    size_t n = 0, cap = 0;
    char **env = NULL;
    for (size_t i = 0; i < sc->nbase; i++)
        script_push(&env, &n, &cap, xstrdup(sc->base_env[i]));
    script_push(&env, &n, &cap, script_kv("SKILL_NAME", skill));
    script_push(&env, &n, &cap, script_kv("SKILL_DIR", skill_dir));
    script_push(&env, &n, &cap, script_kv("SKILL_REQUEST_ID", request_id));
    script_push(&env, &n, &cap, script_kv("SKILL_HOOK", kind));
    /* Hooks are the operator's code: they also get the server's HOOK_*
     * variables (an audit log path, a policy file); scripts never do. */
    for (size_t i = 0; i < sc->nhook; i++)
        script_push(&env, &n, &cap, xstrdup(sc->hook_env[i]));
    j->envp = env;
    j->cwd = xstrdup(cwd);
    j->stdin_len = input_len;
    j->stdin_data = xmalloc(input_len + 1);
    memcpy(j->stdin_data, input, input_len);
    j->stdin_data[input_len] = '\0';
    double stall = c->script_stall_timeout > 0 ? c->script_stall_timeout : j->timeout_s;
    j->stall_s = stall < j->timeout_s ? stall : 0;
    snprintf(j->request_id, sizeof j->request_id, "%s", request_id);
    j->skill = xstrdup(skill);
    const char *base = strrchr(path, '/');
    j->script = xstrdup(base ? base + 1 : path);
    j->retain_max = 1u << 20;
    j->hook = 1;
    return j;
}

void script_job_setenv(struct run_job *j, const char *name, const char *value)
{
    size_t nl = strlen(name), n = 0;
    while (j->envp[n])
        n++;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(j->envp[i], name, nl) && j->envp[i][nl] == '=') {
            free(j->envp[i]);
            j->envp[i] = script_kv(name, value);
            return;
        }
    j->envp = xrealloc(j->envp, (n + 2) * sizeof *j->envp);
    j->envp[n] = script_kv(name, value);
    j->envp[n + 1] = NULL;
}

/* ---- result -------------------------------------------------------------------- */

char *script_utf8_repair(const char *s, size_t n, size_t *outlen, int *changed)
{
    struct buf b;
    buf_init(&b, 0);
    *changed = 0;
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch && ch < 0x80) {
            i++;
            continue;
        }
        /* find the length of a valid sequence at i */
        size_t k = 0;
        for (size_t len = 1; len <= 4 && i + len <= n; len++)
            if (utf8_valid(s + i, len)) {
                k = len;
                break;
            }
        if (k) {
            i += k;
            continue;
        }
        buf_append(&b, s + run, i - run);
        buf_append(&b, "\xEF\xBF\xBD", 3);
        *changed = 1;
        i++;
        run = i;
    }
    buf_append(&b, s + run, n - run);
    return buf_steal(&b, outlen);
}

static const char *signame(int sig)
{
    switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "signal";
    }
}

static int err_has(const struct run_job *j, const char *const *needles)
{
    if (!j->err.data)
        return 0;
    for (const char *const *p = needles; *p; p++)
        if (memmem(j->err.data, j->err.len, *p, strlen(*p)))
            return 1;
    return 0;
}

/*
 * Did the kernel refuse the run's start for the script user's process count?
 * EAGAIN is execve's answer to RLIMIT_NPROC alone (the count is judged when
 * the child becomes the script user); under bwrap the same refusal comes
 * back as bwrap's own message, before the script could print anything.
 */
static int start_refused(const struct run_job *j)
{
    static const char *const eagain[] = {"Resource temporarily unavailable", NULL};
    if (j->error[0])
        return j->start_errno == EAGAIN;
    return j->sandboxed && !j->out.total && j->err.data && j->err.len > 7 &&
           !memcmp(j->err.data, "bwrap: ", 7) && err_has(j, eagain);
}

/*
 * Which rlimit ended a failed run, or NULL. CPU and file size are certain
 * (the kernel's SIGXCPU / SIGXFSZ). The kernel reports a refused
 * allocation or fork only as an error code to the script, so memory and
 * processes are read from what the interpreter printed about it. EAGAIN
 * alone is not a fork's: a lock taken with LOCK_NB or a non-blocking read
 * says the same, so a process is named only where the message names a
 * fork, a spawn or a thread too.
 */
static const char *which_limit(const struct run_job *j)
{
    static const char *const mem[] = {
        "MemoryError", "Cannot allocate memory", "cannot allocate memory", "out of memory",
        "Out of memory", "bad_alloc", "memory exhausted", "xmalloc: cannot allocate",
        "xrealloc: cannot allocate", "Failed to reserve virtual memory", NULL,
    };
    static const char *const fsz[] = {"File too large", "File size limit exceeded", NULL};
    static const char *const procs[] = {"fork: retry", "fork: Resource temporarily unavailable",
                                        "can't start new thread", NULL};
    static const char *const again[] = {"BlockingIOError", "Resource temporarily unavailable",
                                        "EAGAIN", NULL};
    static const char *const forking[] = {"fork", "spawn", "clone", "thread", "Thread", NULL};
    if (j->status != RUN_FAILED || j->cancelled || j->shutdown)
        return NULL;
    if (start_refused(j))
        return "processes";
    if (j->error[0])
        return NULL;
    int sig = j->term_signal;
    if (!sig && j->sandboxed && j->exit_code > 128 && j->exit_code < 128 + 65)
        sig = j->exit_code - 128;
    if (sig == SIGXCPU && j->lim_cpu_s)
        return "cpu";
    if (sig == SIGXFSZ && j->lim_fsize_mib)
        return "file_size";
    if (j->lim_as_mib && err_has(j, mem))
        return "memory";
    if (j->lim_fsize_mib && err_has(j, fsz))
        return "file_size";
    if (j->lim_nproc && (err_has(j, procs) || (err_has(j, again) && err_has(j, forking))))
        return "processes";
    return NULL;
}

/*
 * How much of a stream the result keeps. A stream cut by --max-output-bytes
 * ends at its last line break: the cut line may hold the head of a secret
 * that redaction cannot recognise by halves (a token too short for its
 * pattern, the first bytes of an environment value), and JSON Lines stay
 * whole lines, which shaping can still cut as JSON. Output of one line is
 * kept to the cap.
 */
static size_t kept_len(const struct run_stream *rs)
{
    const char *nl = rs->data && rs->truncated ? memrchr(rs->data, '\n', rs->len) : NULL;
    return nl ? (size_t)(nl - rs->data) + 1 : rs->len;
}

json_t *script_result(const struct run_job *j, int max_live, double queue_timeout_s)
{
    char hint[700];
    size_t ol, el;
    int oc = 0, ec = 0;
    char *out = script_utf8_repair(j->out.data ? j->out.data : "", kept_len(&j->out), &ol, &oc);
    char *err = script_utf8_repair(j->err.data ? j->err.data : "", kept_len(&j->err), &el, &ec);
    const char *limit = which_limit(j);

    switch (j->status) {
    case RUN_OK:
        snprintf(hint, sizeof hint, "The script succeeded; stdout is its answer.");
        break;
    case RUN_FAILED:
        if (j->shutdown)
            snprintf(hint, sizeof hint, "The server shut down while the script ran, and it was "
                                        "stopped. Call again: another instance or the restarted "
                                        "server will answer.");
        else if (j->cancelled)
            snprintf(hint, sizeof hint, "The client cancelled the call; the script was stopped. "
                                        "Whatever it printed before is above.");
        else if (limit && start_refused(j) && j->lim_nproc)
            snprintf(hint, sizeof hint, "The script could not be started: its user already had "
                                        "more processes (threads count too) than the %d it may "
                                        "have at once (RLIMIT_NPROC, --script-max-processes). "
                                        "Retry when fewer scripts run.",
                     j->lim_nproc);
        else if (limit && start_refused(j))
            snprintf(hint, sizeof hint, "The script could not be started: its user already had "
                                        "more processes (threads count too) than the RLIMIT_NPROC "
                                        "the server was started with allows (ulimit -u, "
                                        "systemd's LimitNPROC=). Retry when fewer scripts run.");
        else if (j->error[0])
            snprintf(hint, sizeof hint, "The script could not be started (%s). Tell the operator; "
                                        "retrying will not help.", j->error);
        else if (limit && !strcmp(limit, "cpu"))
            snprintf(hint, sizeof hint, "The script used its %d s of CPU time (RLIMIT_CPU, "
                                        "--script-cpu-limit) and was stopped. Give it less work "
                                        "per call (a smaller input, fewer items).", j->lim_cpu_s);
        else if (limit && !strcmp(limit, "memory"))
            snprintf(hint, sizeof hint, "The script ran out of its %ld MiB memory limit "
                                        "(RLIMIT_AS, --script-memory-limit): an allocation was "
                                        "refused. Give it a smaller input or ask the operator to "
                                        "raise the limit; retrying unchanged will fail the same "
                                        "way.", j->lim_as_mib);
        else if (limit && !strcmp(limit, "file_size"))
            snprintf(hint, sizeof hint, "The script tried to write a file larger than its %ld MiB "
                                        "limit (RLIMIT_FSIZE, --script-file-size-limit) and was "
                                        "stopped. Ask for less output.", j->lim_fsize_mib);
        else if (limit && !strcmp(limit, "processes"))
            snprintf(hint, sizeof hint, "The script could not start another process: its user may "
                                        "have %d at once (RLIMIT_NPROC, --script-max-processes). "
                                        "Retry when fewer scripts run; a script that forks in a "
                                        "loop must be fixed.", j->lim_nproc);
        else if (j->term_signal)
            snprintf(hint, sizeof hint, "The script was killed by %s. It crashed or was stopped "
                                        "from outside; stderr may say why.",
                     signame(j->term_signal));
        else
            snprintf(hint, sizeof hint, "The script exited with code %d. stderr says why: fix the "
                                        "arguments or inputs it complains about; retrying "
                                        "unchanged will fail the same way.", j->exit_code);
        break;
    case RUN_TIMEOUT:
        if (j->timeout_s <= SHORT_CEILING_S)
            snprintf(hint, sizeof hint,
                     "This script should answer at once, but it was still running at its %gs "
                     "ceiling. Do not retry with a longer timeout: the service is probably doing "
                     "the whole job before replying (submit the work and poll for it instead), "
                     "or a host or argument is wrong.", j->timeout_s);
        else
            snprintf(hint, sizeof hint,
                     "The script was still working when it reached its %gs ceiling: it is slow, "
                     "not stuck. Narrow the work (a smaller input, fewer pages) and call again, "
                     "or ask the skill's author to raise its execution timeout.", j->timeout_s);
        break;
    case RUN_STALLED:
        snprintf(hint, sizeof hint,
                 "The script printed nothing for %.0fs and was stopped: it was blocked (waiting "
                 "on the network, a lock or input), not slow.%s%s%s Check the host, URL and "
                 "credentials; a script doing long work should print progress to stderr.",
                 j->silent_for_s, j->last_line[0] ? " Its last output: \"" : "", j->last_line,
                 j->last_line[0] ? "\"." : "");
        break;
    case RUN_BUSY:
        if (j->cancelled) {
            snprintf(hint, sizeof hint, "The client cancelled the call before the script "
                                        "started; nothing ran.");
            break;
        }
        snprintf(hint, sizeof hint,
                 "All %d script slots stayed busy for %gs, so the script did not run. Retry in a "
                 "few seconds.", max_live, queue_timeout_s);
        if (j->error[0])
            snprintf(hint, sizeof hint, "The script did not run: %s. Retry shortly.", j->error);
        break;
    case RUN_DENIED:
        snprintf(hint, sizeof hint, "The script was not allowed to run: %s", j->error);
        break;
    }

    json_t *r = json_pack("{s:s, s:s%, s:s%, s:f, s:f, s:f, s:b, s:I, s:I, s:s, s:s}",
                          "status", run_status_name(j->status), "stdout", out, ol, "stderr", err,
                          el, "duration_ms", j->duration_ms, "timeout", j->timeout_s,
                          "stall_timeout", j->stall_s, "truncated",
                          j->out.truncated || j->err.truncated, "stdout_bytes",
                          (json_int_t)j->out.total, "stderr_bytes", (json_int_t)j->err.total,
                          "hint", hint, "request_id", j->request_id);
    json_object_set_new(r, "exit_code", j->exit_code >= 0 && j->status != RUN_BUSY
                                            ? json_integer(j->exit_code)
                                            : json_null());
    if (j->term_signal)
        json_object_set_new(r, "signal", json_string(signame(j->term_signal)));
    if (j->status == RUN_STALLED)
        json_object_set_new(r, "silent_for", json_real(j->silent_for_s));
    if (limit)
        json_object_set_new(r, "limit", json_string(limit));
    if (oc || ec)
        json_object_set_new(r, "utf8_repaired", json_true());
    if (j->queued_ms >= 1)
        json_object_set_new(r, "queued_ms", json_real(j->queued_ms));
    free(out);
    free(err);
    return r;
}
