/*
 * script_env.c - what run_skill_script decides once for the process, at
 * start-up: the interpreters, the base environment scripts and hooks get,
 * the script user (and whether it can reach the skills), the rlimits'
 * values, and the sandbox (found and tried once). script.c applies them to
 * each call.
 *
 * Interpreters: by file suffix, resolved to absolute paths once at start-up.
 * A version-manager shim (a "#!" script earlier on PATH, like pyenv's) is
 * passed over for the real binary behind it on PATH, since a shim costs
 * tens of milliseconds per start. --interpreter EXT=PATH overrides.
 *
 * Environment: a fixed allowlist (PATH, LANG, TZ, LC_*), proxy/TLS
 * variables (unless --no-network-env), and for hooks only the server's
 * HOOK_* variables. Nothing else of the server's environment.
 */
#include "script.h"
#include "script_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

extern char **environ;

/* ---- interpreters ------------------------------------------------------- */

static int is_shim(const char *path)
{
    char head[2] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, 2);
    close(fd);
    return n == 2 && head[0] == '#' && head[1] == '!';
}

/* The first real binary called name on PATH (shims passed over). */
static char *resolve(const char *name)
{
    const char *path = getenv("PATH");
    char *copy = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *found = NULL, *shim = NULL, *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char cand[4096], real[4096];
        struct stat st;
        snprintf(cand, sizeof cand, "%s/%s", *dir ? dir : ".", name);
        if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode) || access(cand, X_OK) < 0)
            continue;
        if (!realpath(cand, real))
            continue;
        if (is_shim(real)) {
            if (!shim)
                shim = xstrdup(real);
            continue;
        }
        found = xstrdup(real);
    }
    free(copy);
    if (!found && shim) {
        log_warn("interpreter %s: only a launcher script (%s) was found on PATH; using it", name,
                 shim);
        return shim;
    }
    free(shim);
    return found;
}

static void add_interp(struct scripts *sc, const char *ext, const char *name, const char *path)
{
    struct interp *it = NULL;
    for (size_t i = 0; i < sc->n; i++)
        if (!strcmp(sc->in[i].ext, ext))
            it = &sc->in[i];
    if (!it) {
        if (sc->n == sizeof sc->in / sizeof *sc->in)
            return;
        it = &sc->in[sc->n++];
        snprintf(it->ext, sizeof it->ext, "%s", ext);
    }
    free(it->path);
    it->path = NULL;
    it->why[0] = '\0';
    memset(it->args, 0, sizeof it->args);
    if (!strcmp(ext, ".py")) {
        /* -E: ignore PYTHON* variables; -s: no user site; -B: write no
         * __pycache__ into the skill library. Not -I, which would also drop
         * the script's own folder from sys.path (sibling imports).
         * pycache_prefix: look for bytecode beneath /dev/null, where no one
         * can create a file, instead of in the skill's __pycache__/ (which the
         * lock does not hash): a planted .pyc whose header matches the
         * source would otherwise run instead of the approved source. */
        it->args[0] = "-E";
        it->args[1] = "-s";
        it->args[2] = "-B";
        it->args[3] = "-X";
        it->args[4] = "pycache_prefix=/dev/null/skill-mcp";
    }
    if (path) {
        /* Taken as given, not resolved: a virtual environment's python is a
         * symlink to the system one, and resolving it would lose the venv. */
        struct stat st;
        if (path[0] == '/' && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            access(path, X_OK) == 0)
            it->path = xstrdup(path);
        else
            snprintf(it->why, sizeof it->why, "interpreter %s for %s is not executable", path,
                     ext);
    } else {
        it->path = resolve(name);
        if (!it->path)
            snprintf(it->why, sizeof it->why, "no %s interpreter (%s) is installed on this server",
                     ext, name);
    }
    if (it->path)
        log_info("scripts: %s runs with %s%s%s", ext, it->path, it->args[0] ? " " : "",
                 it->args[0] ? "-E -s -B -X pycache_prefix=/dev/null/skill-mcp" : "");
    else
        log_warn("scripts: %s; %s scripts will be refused", it->why, ext);
}

/* ---- environment ----------------------------------------------------------- */

const char *const script_network_vars[] = {
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
    "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", NULL,
};

void script_push(char ***v, size_t *n, size_t *cap, char *kv)
{
    if (*n + 1 >= *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *v = xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = kv;
    (*v)[*n] = NULL;
}

char *script_kv(const char *k, const char *v)
{
    size_t a = strlen(k), b = strlen(v);
    char *s = xmalloc(a + b + 2);
    memcpy(s, k, a);
    s[a] = '=';
    memcpy(s + a + 1, v, b + 1);
    return s;
}

/* 1 when uid/gid (no supplementary groups: the child drops them) has all of
 * bits (4 read, 1 search) on st. */
static int may(const struct stat *st, int uid, int gid, unsigned bits)
{
    unsigned m = (unsigned)st->st_mode;
    if ((int)st->st_uid == uid)
        return ((m >> 6) & bits) == bits;
    if ((int)st->st_gid == gid)
        return ((m >> 3) & bits) == bits;
    return (m & bits) == bits;
}

/* Walks dir from / as uid/gid would: search on every folder on the way,
 * read and search on dir. 0, or -1 with the folder that shuts it out. */
static int reachable(const char *dir, int uid, int gid, struct err *why)
{
    char real[4096], part[4096];
    if (!realpath(dir, real))
        return 0;           /* a missing root is discovery's to report */
    size_t len = strlen(real);
    for (size_t i = 1; i <= len; i++) {
        if (real[i] != '/' && real[i] != '\0')
            continue;
        memcpy(part, real, i);
        part[i] = '\0';
        struct stat st;
        if (stat(part, &st) < 0)
            return 0;
        unsigned bits = i == len ? 5 : 1;
        if (!may(&st, uid, gid, bits)) {
            err_set(why, 0, 0, "%s (mode %04o, owner uid %d) is closed to it", part,
                    (unsigned)st.st_mode & 07777, (int)st.st_uid);
            return -1;
        }
    }
    return 0;
}

/* Runs argv (a sandbox with /bin/true inside) once as a job like probe
 * runs (its limits and user) and waits; 0 when it exits 0, else -1 with
 * what it printed. */
static int try_run(const struct run_job *probe, char **argv, struct err *why)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        err_set(why, 0, 0, "pipe: %s", strerror(errno));
        return -1;
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    pid_t pid = run_spawn_as(probe, argv, envp, "/", devnull, p[1], p[1], why);
    close(p[1]);
    if (devnull >= 0)
        close(devnull);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    char out[400], sink[4096];
    size_t got = 0;
    ssize_t r;
    /* keep the first bytes, drain the rest so that the child never blocks */
    while ((r = got < sizeof out - 1 ? read(p[0], out + got, sizeof out - 1 - got)
                                     : read(p[0], sink, sizeof sink)) > 0 ||
           (r < 0 && errno == EINTR))
        if (r > 0 && got < sizeof out - 1)
            got += (size_t)r;
    out[got] = '\0';
    close(p[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    /* bwrap says what went wrong in its first line */
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    err_set(why, 0, 0, "%s", out[0] ? out : "it exited with an error and printed nothing");
    return -1;
}

/* The binds every sandbox gets: the system folders interpreters need,
 * read-only, and nothing else. */
static void sandbox_base(struct scripts *sc)
{
    size_t cap = 0;
    char ***v = &sc->sb_base;
    size_t *n = &sc->nsb_base;
    static const char *const tops[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                       NULL};
    static const char *const etc[] = {
        "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
        "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", NULL,
    };
    script_push(v, n, &cap, xstrdup("--die-with-parent"));
    script_push(v, n, &cap, xstrdup("--new-session"));
    script_push(v, n, &cap, xstrdup("--unshare-all"));
    script_push(v, n, &cap, xstrdup("--ro-bind"));
    script_push(v, n, &cap, xstrdup("/usr"));
    script_push(v, n, &cap, xstrdup("/usr"));
    for (const char *const *t = tops; *t; t++) {
        struct stat st;
        char target[4096];
        if (lstat(*t, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t k = readlink(*t, target, sizeof target - 1);
            if (k <= 0)
                continue;
            target[k] = '\0';
            script_push(v, n, &cap, xstrdup("--symlink"));
            script_push(v, n, &cap, xstrdup(target));
        } else if (S_ISDIR(st.st_mode)) {
            script_push(v, n, &cap, xstrdup("--ro-bind"));
            script_push(v, n, &cap, xstrdup(*t));
        } else {
            continue;
        }
        script_push(v, n, &cap, xstrdup(*t));
    }
    for (const char *const *f = etc; *f; f++) {
        script_push(v, n, &cap, xstrdup("--ro-bind-try"));
        script_push(v, n, &cap, xstrdup(*f));
        script_push(v, n, &cap, xstrdup(*f));
    }
    /* An interpreter outside /usr (a pyenv or venv python, /opt/node) needs
     * its installation: the folder above its bin/. */
    for (size_t i = 0; i < sc->n; i++) {
        char copy[4096];
        if (!sc->in[i].path || !strncmp(sc->in[i].path, "/usr/", 5))
            continue;
        snprintf(copy, sizeof copy, "%s", sc->in[i].path);
        char *top = dirname(dirname(copy));
        if (!strcmp(top, "/"))
            continue;
        script_push(v, n, &cap, xstrdup("--ro-bind"));
        script_push(v, n, &cap, xstrdup(top));
        script_push(v, n, &cap, xstrdup(top));
    }
    script_push(v, n, &cap, xstrdup("--proc"));
    script_push(v, n, &cap, xstrdup("/proc"));
    script_push(v, n, &cap, xstrdup("--dev"));
    script_push(v, n, &cap, xstrdup("/dev"));
    script_push(v, n, &cap, xstrdup("--tmpfs"));
    script_push(v, n, &cap, xstrdup("/tmp"));
}

/* --sandbox bwrap: find bwrap and run it once as scripts will run. */
static int sandbox_setup(struct scripts *sc, const struct cfg *c)
{
    if (c->bwrap_path) {
        struct stat st;
        if (c->bwrap_path[0] != '/' || stat(c->bwrap_path, &st) < 0 || !S_ISREG(st.st_mode) ||
            access(c->bwrap_path, X_OK) < 0) {
            log_error("--sandbox bwrap: --bwrap-path %s is not an executable file; install "
                      "bubblewrap (apt-get install bubblewrap) or fix the path", c->bwrap_path);
            return -1;
        }
        sc->bwrap = xstrdup(c->bwrap_path);
    } else if (!(sc->bwrap = resolve("bwrap"))) {
        log_error("--sandbox bwrap: bwrap is not on PATH; install bubblewrap (apt-get install "
                  "bubblewrap) or give --bwrap-path");
        return -1;
    }
    sandbox_base(sc);
    char *tru = resolve("true");
    if (!tru) {
        log_error("--sandbox bwrap: no 'true' binary on PATH to check the sandbox with");
        return -1;
    }
    struct run_job probe = {0};
    probe.timeout_s = 10;
    char **v = NULL;
    size_t n = 0, cap = 0;
    script_wrap(sc, &probe, NULL, 0, "/", 0, &v, &n, &cap);
    for (int i = 0; i < probe.nscratch_args; i++) {
        free(v[probe.scratch_args[i]]);
        v[probe.scratch_args[i]] = xstrdup("/tmp");
    }
    script_push(&v, &n, &cap, tru);
    struct err why;
    int rc = try_run(&probe, v, &why);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    if (rc < 0) {
        log_error("--sandbox bwrap: %s does not work here: %s (bwrap needs unprivileged user "
                  "namespaces: sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu an "
                  "AppArmor profile for bwrap)", sc->bwrap, why.msg);
        return -1;
    }
    log_info("scripts and hooks run sandboxed by %s", sc->bwrap);
    return 0;
}

struct scripts *script_setup(const struct cfg *c)
{
    struct scripts *sc = xcalloc(1, sizeof *sc);
    size_t cap = 0;
    sc->uid = sc->gid = -1;
    /* Scripts never run as root unless the operator says so by name. */
    const char *user = c->script_user;
    if (!user && geteuid() == 0)
        user = "nobody";
    if (user) {
        struct passwd *pw = getpwnam(user);
        if (!pw) {
            log_error("--script-user %s: no such user%s", user,
                      c->script_user ? "" : " (the default for a root server; give "
                                            "--script-user with an unprivileged user)");
            script_free(sc);
            return NULL;
        }
        if (pw->pw_uid == 0) {
            log_warn("--script-user %s: SCRIPTS AND HOOKS RUN AS ROOT, with every privilege; "
                     "RLIMIT_NPROC does not bind them. Use an unprivileged user.", user);
        } else if (geteuid() != 0) {
            log_error("--script-user needs the server to run as root");
            script_free(sc);
            return NULL;
        } else {
            sc->uid = (int)pw->pw_uid;
            sc->gid = (int)pw->pw_gid;
            /* A root the script user cannot read would fail every script
             * with a confusing error. With --script-user given, refuse to
             * start. With the default user, serve anyway (reading skills
             * does not need it) and refuse those scripts with this reason. */
            for (size_t i = 0; i <= c->nroots; i++) {
                const char *dir = i < c->nroots ? c->roots[i] : c->hooks_dir;
                struct err why;
                char msg[4800];
                if (!dir || reachable(dir, sc->uid, sc->gid, &why) == 0)
                    continue;
                snprintf(msg, sizeof msg,
                         "scripts and hooks run as %s (uid %d), who cannot read %s %s: %s. "
                         "Make it readable by that user (e.g. chmod o+rx on each folder on "
                         "the way) or give --script-user", user, sc->uid,
                         i < c->nroots ? "the skills root" : "the hooks folder", dir, why.msg);
                if (c->script_user) {
                    log_error("%s", msg);
                    script_free(sc);
                    return NULL;
                }
                log_error("%s; until then, run_skill_script refuses %s", msg,
                          i < c->nroots ? "the skills under it" : "every script");
                if (i == c->nroots)
                    sc->closed_hooks = xstrdup(msg);
                else if (i < sizeof sc->closed / sizeof *sc->closed)
                    sc->closed[i] = xstrdup(msg);
            }
            log_info("scripts and hooks run as %s (uid %d, gid %d, no supplementary groups, "
                     "no_new_privs)", user, sc->uid, sc->gid);
        }
    }
    sc->cpu_s = c->script_cpu_limit;
    sc->as_mib = c->script_memory_mib;
    sc->fsize_mib = c->script_fsize_mib;
    /* RLIMIT_NPROC counts every process and thread of the user: on the
     * server's own user (a desktop session, say) a default would starve
     * scripts of forks, so it is only a default for a separate user. */
    sc->nproc = c->script_nproc >= 0 ? c->script_nproc : sc->uid >= 0 ? 256 : 0;
    add_interp(sc, ".py", "python3", NULL);
    add_interp(sc, ".sh", "bash", NULL);
    add_interp(sc, ".js", "node", NULL);
    for (size_t i = 0; i < c->ninterpreters; i++) {
        const char *spec = c->interpreters[i], *eq = strchr(spec, '=');
        char ext[16];
        snprintf(ext, sizeof ext, "%.*s", (int)(eq - spec), spec);
        add_interp(sc, ext, NULL, eq + 1);
    }

    script_push(&sc->base_env, &sc->nbase, &cap, xstrdup("PATH=/usr/local/bin:/usr/bin:/bin"));
    const char *lang = getenv("LANG");
    script_push(&sc->base_env, &sc->nbase, &cap, script_kv("LANG", lang && *lang ? lang : "C.UTF-8"));
    const char *tz = getenv("TZ");
    if (tz)
        script_push(&sc->base_env, &sc->nbase, &cap, script_kv("TZ", tz));
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "LC_", 3))
            script_push(&sc->base_env, &sc->nbase, &cap, xstrdup(*e));
    size_t hcap = 0;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "HOOK_", 5))
            script_push(&sc->hook_env, &sc->nhook, &hcap, xstrdup(*e));
    if (!c->no_network_env)
        for (const char *const *n = script_network_vars; *n; n++) {
            const char *v = getenv(*n);
            if (v)
                script_push(&sc->base_env, &sc->nbase, &cap, script_kv(*n, v));
        }
    if (c->sandbox && sandbox_setup(sc, c) < 0) {
        script_free(sc);
        return NULL;
    }
    return sc;
}

void script_free(struct scripts *sc)
{
    if (!sc)
        return;
    for (size_t i = 0; i < sc->n; i++)
        free(sc->in[i].path);
    for (size_t i = 0; i < sc->nbase; i++)
        free(sc->base_env[i]);
    free(sc->base_env);
    for (size_t i = 0; i < sc->nhook; i++)
        free(sc->hook_env[i]);
    free(sc->hook_env);
    free(sc->bwrap);
    for (size_t i = 0; i < sc->nsb_base; i++)
        free(sc->sb_base[i]);
    free(sc->sb_base);
    for (size_t i = 0; i < sizeof sc->closed / sizeof *sc->closed; i++)
        free(sc->closed[i]);
    free(sc->closed_hooks);
    free(sc);
}

void script_set_output_budget(struct scripts *sc, size_t bytes)
{
    sc->budget_bytes = bytes;
}
