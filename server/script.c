/*
 * script.c - the policy side of run_skill_script.
 *
 * Interpreters: by file suffix, resolved to absolute paths once at start-up.
 * A version-manager shim (a "#!" script earlier on PATH, like pyenv's) is
 * passed over for the real binary behind it on PATH, since a shim costs
 * tens of milliseconds per start. --interpreter EXT=PATH overrides.
 *
 * Environment: the server's own environment is never inherited. A script
 * sees a fixed allowlist, proxy/TLS variables (unless --no-network-env), the
 * SKILL_* variables, and the caller's `env`, whose names may not be ones
 * that change how the loader, a shell or an interpreter starts.
 *
 * Jail: the script must resolve, symlinks included, to a regular file inside
 * that skill's own scripts/ folder (openat2 RESOLVE_BENEATH from scripts/).
 */
#include "script.h"

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

static void env_push(char ***v, size_t *n, size_t *cap, char *kv);

/*
 * The job's limits and user, which the runner's child sets on itself before
 * exec, and the argv entries in front of the interpreter: the sandbox
 * (bwrap), when there is one. The child switches to the script user before
 * it execs bwrap, so bubblewrap never holds root: it builds its namespaces
 * as the script user, in an unprivileged user namespace, and the uid inside
 * is that user's. ro lists the folders the sandbox shows read-only (the
 * skill, a hook's folder); cwd is where the script starts.
 */
static void wrap_prefix(const struct scripts *sc, struct run_job *j, const char *const *ro,
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
        env_push(v, n, cap, xstrdup(sc->bwrap));
        for (size_t i = 0; i < sc->nsb_base; i++)
            env_push(v, n, cap, xstrdup(sc->sb_base[i]));
        if (network) {
            env_push(v, n, cap, xstrdup("--share-net"));
            for (const char *const *f = net_files; *f; f++) {
                env_push(v, n, cap, xstrdup("--ro-bind-try"));
                env_push(v, n, cap, xstrdup(*f));
                env_push(v, n, cap, xstrdup(*f));
            }
        }
        for (size_t i = 0; i < nro; i++) {
            env_push(v, n, cap, xstrdup("--ro-bind"));
            env_push(v, n, cap, xstrdup(ro[i]));
            env_push(v, n, cap, xstrdup(ro[i]));
        }
        /* The scratch HOME is made when the job starts: its path goes in then. */
        env_push(v, n, cap, xstrdup("--bind"));
        j->scratch_args[j->nscratch_args++] = *n;
        env_push(v, n, cap, xstrdup("SCRATCH"));
        j->scratch_args[j->nscratch_args++] = *n;
        env_push(v, n, cap, xstrdup("SCRATCH"));
        env_push(v, n, cap, xstrdup("--chdir"));
        env_push(v, n, cap, xstrdup(cwd));
        env_push(v, n, cap, xstrdup("--"));
    }
}

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

static const char *const network_vars[] = {
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
    "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", NULL,
};

static void env_push(char ***v, size_t *n, size_t *cap, char *kv)
{
    if (*n + 1 >= *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *v = xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = kv;
    (*v)[*n] = NULL;
}

static char *kv(const char *k, const char *v)
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
static int reachable(const char *dir, int uid, int gid, char *why, size_t wl)
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
            snprintf(why, wl, "%s (mode %04o, owner uid %d) is closed to it", part,
                     (unsigned)st.st_mode & 07777, (int)st.st_uid);
            return -1;
        }
    }
    return 0;
}

/* Runs argv (a sandbox with /bin/true inside) once as a job like probe
 * runs (its limits and user) and waits; 0 when it exits 0, else -1 with
 * what it printed. */
static int try_run(const struct run_job *probe, char **argv, char *why, size_t wl)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(why, wl, "pipe: %s", strerror(errno));
        return -1;
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    pid_t pid = run_spawn_as(probe, argv, envp, "/", devnull, p[1], p[1], why, wl);
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
    snprintf(why, wl, "%s", out[0] ? out : "it exited with an error and printed nothing");
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
    env_push(v, n, &cap, xstrdup("--die-with-parent"));
    env_push(v, n, &cap, xstrdup("--new-session"));
    env_push(v, n, &cap, xstrdup("--unshare-all"));
    env_push(v, n, &cap, xstrdup("--ro-bind"));
    env_push(v, n, &cap, xstrdup("/usr"));
    env_push(v, n, &cap, xstrdup("/usr"));
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
            env_push(v, n, &cap, xstrdup("--symlink"));
            env_push(v, n, &cap, xstrdup(target));
        } else if (S_ISDIR(st.st_mode)) {
            env_push(v, n, &cap, xstrdup("--ro-bind"));
            env_push(v, n, &cap, xstrdup(*t));
        } else {
            continue;
        }
        env_push(v, n, &cap, xstrdup(*t));
    }
    for (const char *const *f = etc; *f; f++) {
        env_push(v, n, &cap, xstrdup("--ro-bind-try"));
        env_push(v, n, &cap, xstrdup(*f));
        env_push(v, n, &cap, xstrdup(*f));
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
        env_push(v, n, &cap, xstrdup("--ro-bind"));
        env_push(v, n, &cap, xstrdup(top));
        env_push(v, n, &cap, xstrdup(top));
    }
    env_push(v, n, &cap, xstrdup("--proc"));
    env_push(v, n, &cap, xstrdup("/proc"));
    env_push(v, n, &cap, xstrdup("--dev"));
    env_push(v, n, &cap, xstrdup("/dev"));
    env_push(v, n, &cap, xstrdup("--tmpfs"));
    env_push(v, n, &cap, xstrdup("/tmp"));
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
    wrap_prefix(sc, &probe, NULL, 0, "/", 0, &v, &n, &cap);
    for (int i = 0; i < probe.nscratch_args; i++) {
        free(v[probe.scratch_args[i]]);
        v[probe.scratch_args[i]] = xstrdup("/tmp");
    }
    env_push(&v, &n, &cap, tru);
    char why[600];
    int rc = try_run(&probe, v, why, sizeof why);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    if (rc < 0) {
        log_error("--sandbox bwrap: %s does not work here: %s (bwrap needs unprivileged user "
                  "namespaces: sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu an "
                  "AppArmor profile for bwrap)", sc->bwrap, why);
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
                char why[4300], msg[4800];
                if (!dir || reachable(dir, sc->uid, sc->gid, why, sizeof why) == 0)
                    continue;
                snprintf(msg, sizeof msg,
                         "scripts and hooks run as %s (uid %d), who cannot read %s %s: %s. "
                         "Make it readable by that user (e.g. chmod o+rx on each folder on "
                         "the way) or give --script-user", user, sc->uid,
                         i < c->nroots ? "the skills root" : "the hooks folder", dir, why);
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

    env_push(&sc->base_env, &sc->nbase, &cap, xstrdup("PATH=/usr/local/bin:/usr/bin:/bin"));
    const char *lang = getenv("LANG");
    env_push(&sc->base_env, &sc->nbase, &cap, kv("LANG", lang && *lang ? lang : "C.UTF-8"));
    const char *tz = getenv("TZ");
    if (tz)
        env_push(&sc->base_env, &sc->nbase, &cap, kv("TZ", tz));
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "LC_", 3))
            env_push(&sc->base_env, &sc->nbase, &cap, xstrdup(*e));
    size_t hcap = 0;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "HOOK_", 5))
            env_push(&sc->hook_env, &sc->nhook, &hcap, xstrdup(*e));
    if (!c->no_network_env)
        for (const char *const *n = network_vars; *n; n++) {
            const char *v = getenv(*n);
            if (v)
                env_push(&sc->base_env, &sc->nbase, &cap, kv(*n, v));
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
    for (const char *const *p = network_vars; *p; p++)
        if (!strcasecmp(name, *p))
            return "proxy and TLS variables come from the server's configuration";
    return NULL;
}

/* ---- jail for scripts ------------------------------------------------------- */

/*
 * Resolves scripts/<rel> of dir to the real path of a regular file inside
 * the skill's scripts/ folder. Returns NULL with *why set. *canon points
 * into the result at the path below scripts/: the script's one identity,
 * whatever the caller's spelling. *fdp keeps the file that was checked open,
 * so that the runner can tell at spawn time whether the path still names it
 * (and its inode number cannot be reused meanwhile).
 */
static char *resolve_script(const char *dir, const char *rel, const char **canon, int *fdp,
                            const char **why)
{
    char sdir[4096], sreal[4096], link[64], real[4096];
    snprintf(sdir, sizeof sdir, "%s/scripts", dir);
    if (!realpath(sdir, sreal)) {
        *why = "this skill has no scripts/ folder";
        return NULL;
    }
    size_t dl = strlen(dir);
    if (strncmp(sreal, dir, dl) || sreal[dl] != '/') {
        *why = "the skill's scripts/ folder leads outside the skill";
        return NULL;
    }
    int dfd = open(sreal, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        *why = "the skill's scripts/ folder cannot be opened";
        return NULL;
    }
    int fd = jail_open_beneath(dfd, rel);
    int e = fd < 0 ? -fd : 0;
    close(dfd);
    if (fd < 0) {
        *why = e == ENOENT || e == ENOTDIR ? "no such script in the skill's scripts/ folder"
               : e == EXDEV || e == ELOOP ? "the script leads outside the skill's scripts/ folder"
                                          : "the script cannot be opened";
        return NULL;
    }
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, real, sizeof real - 1);
    } else {
        *why = S_ISDIR(st.st_mode) ? "that is a folder, not a script" : "that is not a regular file";
    }
    if (n < 0) {
        close(fd);
        if (!*why)
            *why = "the script cannot be resolved";
        return NULL;
    }
    real[n] = '\0';
    size_t sl = strlen(sreal);
    if (strncmp(real, sreal, sl) || real[sl] != '/' || !real[sl + 1]) {
        close(fd);
        *why = "the script leads outside the skill's scripts/ folder";
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
    json_t *ex = json_object_get(k->fm, "execution");
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
    json_t *ex = json_object_get(k->fm, "execution");
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

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

static void request_id(char *out, size_t n)
{
    char hex[17];
    if (x_random_hex(hex, 8) < 0)   /* an id for logs, not a secret: the clock will do */
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)now_ns());
    snprintf(out, n, "r-%s", hex);
}

struct run_job *script_prepare(const struct scripts *sc, const struct cfg *c,
                               const struct skill *k, json_t *args, char *why, size_t wl)
{
    const char *script = json_string_value(json_object_get(args, "script"));
    json_t *jargs = json_object_get(args, "args"), *jstdin = json_object_get(args, "stdin");
    json_t *jto = json_object_get(args, "timeout"), *jst = json_object_get(args, "stall_timeout");
    json_t *jenv = json_object_get(args, "env");
    const char *jwhy = NULL;
    char rel[1100];

    if (!script || !*script) {
        fail(why, wl, "Argument 'script' is required: a path from the 'scripts' that load_skill "
                      "lists, such as scripts/run.py.");
        return NULL;
    }
    const char *closed = sc->closed_hooks ? sc->closed_hooks
                         : k->root < sizeof sc->closed / sizeof *sc->closed ? sc->closed[k->root]
                                                                              : NULL;
    if (closed) {
        fail(why, wl, "Cannot run scripts of '%s' on this server: %s.", k->qname, closed);
        return NULL;
    }
    size_t slen = json_string_length(json_object_get(args, "script"));
    if ((jwhy = jail_check(script, slen))) {
        fail(why, wl, "Cannot run '%.200s': %s.", script, jwhy);
        return NULL;
    }
    /* A bare file name means scripts/<name>; anything else must be in scripts/. */
    if (!strchr(script, '/'))
        snprintf(rel, sizeof rel, "%s", script);
    else if (!strncmp(script, "scripts/", 8) && script[8 + strspn(script + 8, "/")])
        /* scripts//x.sh is scripts/x.sh, not an absolute path below scripts/ */
        snprintf(rel, sizeof rel, "%s", script + 8 + strspn(script + 8, "/"));
    else {
        fail(why, wl, "Cannot run '%.200s': only files in the skill's scripts/ folder can be run "
                      "(hooks, references and SKILL.md cannot).", script);
        return NULL;
    }
    const char *rwhy = NULL, *canon = NULL;
    int sfd = -1;
    char *real = resolve_script(k->dir, rel, &canon, &sfd, &rwhy);
    if (!real) {
        fail(why, wl, "Cannot run '%.200s' of skill '%s': %s.", script, k->qname, rwhy);
        return NULL;
    }
    const struct interp *it = interp_for(sc, real);
    if (!it || !it->path) {
        fail(why, wl, "Cannot run '%.200s': %s.", script,
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
            fail(why, wl, "Argument 'args' must be a list of at most %d strings.", MAX_ARGS);
            close(sfd);
            free(real);
            return NULL;
        }
        json_array_foreach(jargs, i, a) {
            if (!json_is_string(a) || json_string_length(a) > MAX_ARG_BYTES ||
                memchr(json_string_value(a), '\0', json_string_length(a))) {
                fail(why, wl, "Argument 'args' item %zu must be a string of at most %u bytes "
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
        fail(why, wl, "Argument 'stdin' must be a string of at most %u bytes.", MAX_STDIN_BYTES);
        close(sfd);
        free(real);
        return NULL;
    }
    if (jenv && !json_is_null(jenv)) {
        const char *name;
        json_t *v;
        size_t total = 0;
        if (!json_is_object(jenv) || json_object_size(jenv) > MAX_ENV_VARS) {
            fail(why, wl, "Argument 'env' must be an object of at most %d string values.",
                 MAX_ENV_VARS);
            close(sfd);
            free(real);
            return NULL;
        }
        json_object_foreach(jenv, name, v) {
            const char *p = script_env_problem(name);
            if (p) {
                fail(why, wl, "Argument 'env': '%.64s' is not allowed: %s.", name, p);
                close(sfd);
                free(real);
                return NULL;
            }
            if (!json_is_string(v) || json_string_length(v) > MAX_ENV_VALUE ||
                memchr(json_string_value(v), '\0', json_string_length(v))) {
                fail(why, wl, "Argument 'env': '%.64s' must be a string of at most %u bytes "
                              "without NUL.", name, MAX_ENV_VALUE);
                close(sfd);
                free(real);
                return NULL;
            }
            total += json_string_length(v) + strlen(name);
        }
        if (total > MAX_ENV_TOTAL) {
            fail(why, wl, "Argument 'env' is too large (at most %u bytes in all).", MAX_ENV_TOTAL);
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
    json_t *ex = json_object_get(k->fm, "execution");
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
            fail(why, wl, "Argument 'timeout' must be a number of seconds above 0.");
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
            fail(why, wl, "Argument 'stall_timeout' must be a number of seconds above 0 (stall "
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
    const char *ro[] = {k->dir};
    wrap_prefix(sc, j, ro, 1, k->dir, script_wants_network(k), &j->argv, &na, &acap);
    env_push(&j->argv, &na, &acap, xstrdup(it->path));
    for (size_t i = 0; i < 5 && it->args[i]; i++)
        env_push(&j->argv, &na, &acap, xstrdup(it->args[i]));
    if (!strcmp(it->ext, ".py")) {
        /* Python reads the very file the jail checked, from fd 3, so that
         * swapping the path between the check and the interpreter's open
         * changes nothing; argv[0], __file__ and sys.path[0] are the real
         * path as when Python opens a script itself. */
        env_push(&j->argv, &na, &acap, xstrdup("-c"));
        env_push(&j->argv, &na, &acap, xstrdup(PY_LAUNCH));
        j->script_on_fd3 = 1;
    }
    env_push(&j->argv, &na, &acap, real);
    j->argv_fixed = na;
    j->run_uid = sc->uid;
    j->run_gid = sc->gid;
    for (size_t i = 0; i < nargs; i++)
        env_push(&j->argv, &na, &acap, xstrdup(json_string_value(json_array_get(jargs, i))));

    request_id(j->request_id, sizeof j->request_id);
    size_t n = 0, cap = 0;
    char **env = NULL;
    for (size_t i = 0; i < sc->nbase; i++)
        env_push(&env, &n, &cap, xstrdup(sc->base_env[i]));
    char budget[32];
    /* what the model will see, not what is retained: a script that can
     * print less (a limit, fewer fields) should aim at this */
    snprintf(budget, sizeof budget, "%zu",
             sc->budget_bytes && sc->budget_bytes < c->max_output_bytes ? sc->budget_bytes
                                                                        : c->max_output_bytes);
    env_push(&env, &n, &cap, kv("SKILL_NAME", k->qname));
    env_push(&env, &n, &cap, kv("SKILL_DIR", k->dir));
    env_push(&env, &n, &cap, kv("SKILL_REQUEST_ID", j->request_id));
    env_push(&env, &n, &cap, kv("SKILL_OUTPUT_BUDGET_BYTES", budget));
    if (json_is_object(jenv)) {
        const char *name;
        json_t *v;
        json_object_foreach(jenv, name, v)
            env_push(&env, &n, &cap, kv(name, json_string_value(v)));
    }
    j->envp = env;
    j->cwd = xstrdup(k->dir);
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

void script_set_output_budget(struct scripts *sc, size_t bytes)
{
    sc->budget_bytes = bytes;
}

/*
 * A skill's hook is skill content, checked and used like a script: opened
 * beneath the skill folder (a link out of it is refused), kept open so the
 * runner can tell at spawn that the path still names it, and run from that
 * file (Python reads it from fd 3). The real path, or NULL with *why set.
 */
static char *resolve_skill_hook(const char *skill_dir, const char *path, int *fdp,
                                const char **why)
{
    char dreal[4096], link[64], real[4096];
    size_t dl = strlen(skill_dir);
    *why = NULL;
    if (!realpath(skill_dir, dreal)) {
        *why = "the skill folder cannot be resolved";
        return NULL;
    }
    int dfd = open(dreal, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        *why = "the skill folder cannot be opened";
        return NULL;
    }
    int fd = jail_open_beneath(dfd, path + dl + 1);
    close(dfd);
    if (fd < 0) {
        *why = fd == -EXDEV || fd == -ELOOP ? "the hook leads outside the skill folder"
               : fd == -ENOENT              ? "the hook file is gone"
                                            : "the hook cannot be opened";
        return NULL;
    }
    struct stat st;
    ssize_t n = -1;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        *why = "the hook is not a regular file";
    else if ((n = readlink(link, real, sizeof real - 1)) < 0)
        *why = "the hook cannot be resolved";
    if (n >= 0) {
        real[n] = '\0';
        size_t rl = strlen(dreal);
        if (strncmp(real, dreal, rl) || real[rl] != '/') {
            *why = "the hook leads outside the skill folder";
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
                                const char *request_id, const char *kind, char *why, size_t wl)
{
    const struct interp *it = interp_for(sc, path);
    if (!it || !it->path) {
        fail(why, wl, "%s hook %s cannot run: %s", kind, path,
             it ? it->why : "its file type has no interpreter on this server");
        return NULL;
    }
    size_t sdl = skill_dir ? strlen(skill_dir) : 0;
    int hfd = -1;
    char *hreal = NULL;
    if (sdl && !strncmp(path, skill_dir, sdl) && path[sdl] == '/') {
        const char *hwhy = NULL;
        if (!(hreal = resolve_skill_hook(skill_dir, path, &hfd, &hwhy))) {
            fail(why, wl, "%s hook %s cannot run: %s", kind, path, hwhy);
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
    wrap_prefix(sc, j, ro, nro, cwd, 0, &j->argv, &na, &acap);
    env_push(&j->argv, &na, &acap, xstrdup(it->path));
    for (size_t i = 0; i < 5 && it->args[i]; i++)
        env_push(&j->argv, &na, &acap, xstrdup(it->args[i]));
    if (hreal && !strcmp(it->ext, ".py")) {
        env_push(&j->argv, &na, &acap, xstrdup("-c"));
        env_push(&j->argv, &na, &acap, xstrdup(PY_LAUNCH));
        j->script_on_fd3 = 1;
    }
    env_push(&j->argv, &na, &acap, xstrdup(hreal ? hreal : path));
    if (hreal) {
        j->script_fd = hfd;
        j->script_path = hreal;
    }
    j->run_uid = sc->uid;
    j->run_gid = sc->gid;
    size_t n = 0, cap = 0;
    char **env = NULL;
    for (size_t i = 0; i < sc->nbase; i++)
        env_push(&env, &n, &cap, xstrdup(sc->base_env[i]));
    env_push(&env, &n, &cap, kv("SKILL_NAME", skill));
    env_push(&env, &n, &cap, kv("SKILL_DIR", skill_dir));
    env_push(&env, &n, &cap, kv("SKILL_REQUEST_ID", request_id));
    env_push(&env, &n, &cap, kv("SKILL_HOOK", kind));
    /* Hooks are the operator's code: they also get the server's HOOK_*
     * variables (an audit log path, a policy file); scripts never do. */
    for (size_t i = 0; i < sc->nhook; i++)
        env_push(&env, &n, &cap, xstrdup(sc->hook_env[i]));
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
            j->envp[i] = kv(name, value);
            return;
        }
    j->envp = xrealloc(j->envp, (n + 2) * sizeof *j->envp);
    j->envp[n] = kv(name, value);
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
 * Which rlimit ended a failed run, or NULL. CPU and file size are certain
 * (the kernel's SIGXCPU / SIGXFSZ). The kernel reports a refused
 * allocation or fork only as an error code to the script, so memory and
 * processes are read from what the interpreter printed about it.
 */
static const char *which_limit(const struct run_job *j)
{
    static const char *const mem[] = {
        "MemoryError", "Cannot allocate memory", "cannot allocate memory", "out of memory",
        "Out of memory", "bad_alloc", "memory exhausted", "xmalloc: cannot allocate",
        "xrealloc: cannot allocate", "Failed to reserve virtual memory", NULL,
    };
    static const char *const fsz[] = {"File too large", "File size limit exceeded", NULL};
    static const char *const procs[] = {
        "fork: retry", "fork: Resource temporarily unavailable", "BlockingIOError",
        "Resource temporarily unavailable", NULL,
    };
    if (j->status != RUN_FAILED || j->cancelled || j->shutdown || j->error[0])
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
    if (j->lim_nproc && err_has(j, procs))
        return "processes";
    return NULL;
}

json_t *script_result(const struct run_job *j, int max_live, double queue_timeout_s)
{
    char hint[700];
    size_t ol, el;
    int oc = 0, ec = 0;
    char *out = script_utf8_repair(j->out.data ? j->out.data : "", j->out.len, &ol, &oc);
    char *err = script_utf8_repair(j->err.data ? j->err.data : "", j->err.len, &el, &ec);
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
