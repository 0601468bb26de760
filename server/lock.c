/*
 * lock.c - see lock.h. The lock records approved versions; the snapshot
 * builder asks lock_gate() to judge every entry, so the read path only
 * looks at a flag the snapshot already carries. File digests come from
 * manifest.c (one walker, one hasher); this module only sorts them, hashes
 * the list, and compares.
 *
 * The store (--lock-store DIR) keeps approved versions content-addressed:
 * blobs/<sha256 hex> holds file bytes, manifests/<digest hex> the file lines
 * of one approved version, and trees/<digest hex>/ a read-only copy of that
 * version, made on first need, from which a quarantined skill is served.
 */
#include "lock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "jail.h"
#include "skills.h"
#include "util.h"

/* ---- tables ---------------------------------------------------------------- */

static void entry_cleanup(struct lock_entry *e)
{
    free(e->qname);
    free(e->by);
    free(e->revoked_by);
    for (size_t i = 0; i < e->nfiles; i++)
        free(e->files[i].path);
    free(e->files);
    memset(e, 0, sizeof *e);
}

void lock_table_ref(struct lock_table *t)
{
    if (t)
        __atomic_add_fetch(&t->refs, 1, __ATOMIC_SEQ_CST);
}

void lock_table_unref(struct lock_table *t)
{
    if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_SEQ_CST) != 0)
        return;
    for (size_t i = 0; i < t->n; i++)
        entry_cleanup(&t->v[i]);
    free(t->v);
    free(t);
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct lock_entry *)a)->qname, ((const struct lock_entry *)b)->qname);
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct lock_file *)a)->path, ((const struct lock_file *)b)->path);
}

const struct lock_entry *lock_find(const struct lock_table *t, const char *qname)
{
    if (!t || !t->n)
        return NULL;
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(qname, t->v[mid].qname);
        if (!c)
            return &t->v[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ---- digests --------------------------------------------------------------- */

static int file_line(struct buf *b, const struct lock_file *f)
{
    return buf_printf(b, "%s %lld %s\n", f->digest, (long long)f->size, f->path);
}

void lock_digest_files(const struct lock_file *files, size_t n, char out[MANIFEST_DIGEST_LEN + 1])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int len = 0;
    char line[MANIFEST_DIGEST_LEN + 32];
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(line, sizeof line, "%s %lld ", files[i].digest,
                         (long long)files[i].size);
        EVP_DigestUpdate(ctx, line, (size_t)k);
        EVP_DigestUpdate(ctx, files[i].path, strlen(files[i].path));
        EVP_DigestUpdate(ctx, "\n", 1);
    }
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    manifest_format_digest(md, out);
}

static int digest_valid(const char *s, size_t n)
{
    if (n != MANIFEST_DIGEST_LEN || strncmp(s, "sha256:", 7))
        return 0;
    for (size_t i = 7; i < n; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return 0;
    return 1;
}

static void exec_digest(const struct skill *k, char out[MANIFEST_DIGEST_LEN + 1])
{
    json_t *ex = k->execution;
    if (!ex) {
        snprintf(out, MANIFEST_DIGEST_LEN + 1, "none");
        return;
    }
    char *s = json_dumps(ex, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    manifest_sha256(s ? s : "", s ? strlen(s) : 0, out);
    free(s);
}

/*
 * Folders the manifest leaves out (skills.c ignores them) but an interpreter
 * loads code from: Python's __pycache__/ (a .pyc whose header matches its
 * source is run instead of the source) and Node's node_modules/, looked up
 * in the script's folder and every folder above it, up to /. A lock cannot
 * vouch for a skill that has one, so such a skill cannot be approved or
 * run. NULL, or why.
 */
static const char *unhashed_code(const struct skill *k)
{
    char p[4200];
    struct stat st;
    for (size_t i = 0; i < k->ndirs; i++) {
        snprintf(p, sizeof p, "%s/__pycache__", k->dir_paths[i]);
        if (lstat(p, &st) == 0)
            return "it holds a __pycache__/ folder, which the lock does not hash and Python "
                   "may load bytecode from; delete the folder";
        snprintf(p, sizeof p, "%s/node_modules", k->dir_paths[i]);
        if (lstat(p, &st) == 0)
            return "it holds a node_modules/ folder, which the lock does not hash and Node.js "
                   "loads packages from; delete the folder";
    }
    snprintf(p, sizeof p, "%s", k->dir);
    for (char *slash; (slash = strrchr(p, '/'));) {
        snprintf(slash, sizeof p - (size_t)(slash - p), "/node_modules");
        if (lstat(p, &st) == 0)
            return "a folder above it holds a node_modules/ folder, which Node.js loads "
                   "packages from for this skill's scripts and the lock does not hash; remove it";
        *slash = '\0';
    }
    return NULL;
}

int lock_manifest_of(const struct skill *k, struct lock_manifest *m, const char **why)
{
    struct manifest mf;
    memset(m, 0, sizeof *m);
    if ((*why = unhashed_code(k)))
        return -1;
    if (manifest_build(k, &mf, why) < 0)
        return -1;
    if (mf.skipped) {
        manifest_cleanup(&mf);
        *why = "a file of the skill cannot be read now";
        return -1;
    }
    m->files = xcalloc(mf.n ? mf.n : 1, sizeof *m->files);
    for (size_t i = 0; i < mf.n; i++) {
        if (strchr(mf.v[i].path, '\n') || strchr(mf.v[i].path, '\r')) {
            m->n = i;
            manifest_cleanup(&mf);
            lock_manifest_cleanup(m);
            *why = "a file name holds a line break, which the lock cannot record";
            return -1;
        }
        m->files[i].path = mf.v[i].path;
        mf.v[i].path = NULL;
        m->files[i].size = mf.v[i].size;
        memcpy(m->files[i].digest, mf.v[i].digest, sizeof m->files[i].digest);
    }
    m->n = mf.n;
    manifest_cleanup(&mf);
    qsort(m->files, m->n, sizeof *m->files, file_cmp);
    lock_digest_files(m->files, m->n, m->digest);
    exec_digest(k, m->exec);
    return 0;
}

void lock_manifest_cleanup(struct lock_manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->files[i].path);
    free(m->files);
    memset(m, 0, sizeof *m);
}

int lock_file_approved(const struct lock_entry *e, const char *dir, const char *rel)
{
    size_t lo = 0, hi = e->nfiles;
    const struct lock_file *f = NULL;
    while (lo < hi && !f) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(rel, e->files[mid].path);
        if (!c)
            f = &e->files[mid];
        else if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!f)
        return 0;
    char d[MANIFEST_DIGEST_LEN + 1];
    int64_t size;
    const char *why;
    int root = jail_root(dir);
    if (root < 0)
        return 0;
    int rc = manifest_digest(root, rel, d, &size, &why);
    close(root);
    return rc == 0 && !strcmp(d, f->digest);
}

/* ---- parsing and writing ----------------------------------------------------- */

static int name_valid(const char *s, size_t n)
{
    if (n == 0 || n > 200 || s[0] == '/' || s[n - 1] == '/')
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == '#' || s[i] == '=')
            return 0;
    return 1;
}

static int who_valid(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr("._@+-", c))
            return 0;
    }
    return 1;
}

static int time_valid(const char *s, size_t n)
{
    struct tm tm;
    char t[LOCK_TIME_LEN + 1];
    if (n != LOCK_TIME_LEN)
        return 0;
    memcpy(t, s, n);
    t[n] = '\0';
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return end && !*end;
}

/* Next whitespace-separated field of *p; its length in *n, or NULL at the end. */
static const char *field(const char **p, size_t *n)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s) {
        *p = s;
        return NULL;
    }
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t')
        e++;
    *n = (size_t)(e - s);
    *p = e;
    return s;
}

static int parse_entry(const char *line, int lineno, const char *file, struct lock_entry *e,
                       struct err *err)
{
    const char *p = line, *f;
    size_t n;
    memset(e, 0, sizeof *e);
    e->line = lineno;
    f = field(&p, &n);
    if (!name_valid(f, n)) {
        err_set(err, lineno, 1, "%s:%d: \"%.*s\" is not a skill name", file, lineno,
                (int)(n > 64 ? 64 : n), f);
        return -1;
    }
    e->qname = xstrndup(f, n);
    f = field(&p, &n);
    if (!f || !digest_valid(f, n)) {
        err_set(err, lineno, 0, "%s:%d: expected the manifest digest (sha256:<64 hex>) after "
                "the skill name", file, lineno);
        return -1;
    }
    memcpy(e->digest, f, n);
    while ((f = field(&p, &n))) {
        const char *eq = memchr(f, '=', n);
        size_t kl = eq ? (size_t)(eq - f) : n, vl = eq ? n - kl - 1 : 0;
        const char *v = eq ? eq + 1 : "";
#define KEY(s) (kl == sizeof(s) - 1 && !memcmp(f, s, kl))
        if (KEY("approved-by") && who_valid(v, vl) && !e->by) {
            e->by = xstrndup(v, vl);
        } else if (KEY("revoked-by") && who_valid(v, vl) && !e->revoked_by) {
            e->revoked_by = xstrndup(v, vl);
        } else if (KEY("approved-at") && time_valid(v, vl)) {
            memcpy(e->at, v, vl);
        } else if (KEY("revoked-at") && time_valid(v, vl)) {
            memcpy(e->revoked_at, v, vl);
        } else if (KEY("execution") && (digest_valid(v, vl) || (vl == 4 && !memcmp(v, "none", 4)))) {
            memcpy(e->exec, v, vl);
        } else {
            err_set(err, lineno, 0, "%s:%d: unexpected \"%.*s\": expected execution=, "
                    "approved-by=NAME, approved-at=YYYY-MM-DDTHH:MM:SSZ, revoked-by=, revoked-at=",
                    file, lineno, (int)(n > 64 ? 64 : n), f);
            return -1;
        }
#undef KEY
    }
    if (!e->by || !e->at[0] || !e->exec[0]) {
        err_set(err, lineno, 0, "%s:%d: %s missing", file, lineno,
                !e->exec[0] ? "execution=" : !e->by ? "approved-by=" : "approved-at=");
        return -1;
    }
    if (!e->revoked_by != !e->revoked_at[0]) {
        err_set(err, lineno, 0, "%s:%d: revoked-by= and revoked-at= go together", file, lineno);
        return -1;
    }
    return 0;
}

static int parse_file_line(const char *line, int lineno, const char *file, struct lock_entry *e,
                           size_t *cap, struct err *err)
{
    const char *p = line, *f;
    size_t n;
    f = field(&p, &n);
    if (!digest_valid(f, n)) {
        err_set(err, lineno, 0, "%s:%d: a file line is \"sha256:<64 hex> SIZE PATH\"", file,
                lineno);
        return -1;
    }
    struct lock_file lf = {0};
    memcpy(lf.digest, f, n);
    f = field(&p, &n);
    long long size = 0;
    for (size_t i = 0; f && i < n; i++) {
        if (!isdigit((unsigned char)f[i]) || size > (LLONG_MAX - 9) / 10) {
            f = NULL;
            break;
        }
        size = size * 10 + (f[i] - '0');
    }
    if (!f || n > 18 || *p != ' ' || !p[1]) {
        err_set(err, lineno, 0, "%s:%d: a file line is \"sha256:<64 hex> SIZE PATH\"", file,
                lineno);
        return -1;
    }
    const char *path = p + 1;
    if (jail_check(path, strlen(path))) {
        err_set(err, lineno, 0, "%s:%d: \"%.100s\" is not a path inside a skill", file, lineno,
                path);
        return -1;
    }
    if (e->nfiles && strcmp(e->files[e->nfiles - 1].path, path) >= 0) {
        err_set(err, lineno, 0, "%s:%d: files must be listed once each, in byte order of "
                "their paths", file, lineno);
        return -1;
    }
    if (e->nfiles == LOCK_MAX_FILES) {
        err_set(err, lineno, 0, "%s:%d: more than %d files", file, lineno, LOCK_MAX_FILES);
        return -1;
    }
    if (e->nfiles == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        e->files = xrealloc(e->files, *cap * sizeof *e->files);
    }
    lf.size = size;
    lf.path = xstrdup(path);
    e->files[e->nfiles++] = lf;
    return 0;
}

/* The entry is complete: its file lines must hash to its digest. */
static int entry_close(struct lock_entry *e, const char *file, struct err *err)
{
    char d[MANIFEST_DIGEST_LEN + 1];
    if (!e->nfiles) {
        err_set(err, e->line, 0, "%s:%d: %s lists no files (every skill has SKILL.md)", file,
                e->line, e->qname);
        return -1;
    }
    lock_digest_files(e->files, e->nfiles, d);
    if (strcmp(d, e->digest)) {
        err_set(err, e->line, 0, "%s:%d: the file lines of %s hash to %s, not to the digest "
                "recorded (edited by hand?)", file, e->line, e->qname, d);
        return -1;
    }
    return 0;
}

struct lock_table *lock_parse(const char *text, size_t len, const char *file, struct err *err)
{
    struct lock_table *t = xcalloc(1, sizeof *t);
    size_t cap = 0, fcap = 0;
    int lineno = 0;
    char *line = xmalloc(LOCK_MAX_LINE + 1);
    struct lock_entry *cur = NULL;
    t->refs = 1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        if (n > LOCK_MAX_LINE) {
            err_set(err, lineno, 0, "%s:%d: line longer than %d bytes", file, lineno,
                    LOCK_MAX_LINE);
            goto fail;
        }
        if (memchr(p, '\0', n) || memchr(p, '\r', n)) {
            err_set(err, lineno, 0, "%s:%d: NUL or carriage return in the line", file, lineno);
            goto fail;
        }
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl ? nl + 1 : end;
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            continue;
        if (s != line) {
            if (!cur) {
                err_set(err, lineno, 0, "%s:%d: a file line before any skill line", file,
                        lineno);
                goto fail;
            }
            if (parse_file_line(s, lineno, file, cur, &fcap, err) < 0)
                goto fail;
            continue;
        }
        if (cur && entry_close(cur, file, err) < 0)
            goto fail;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 16;
            t->v = xrealloc(t->v, cap * sizeof *t->v);
        }
        cur = &t->v[t->n++];
        fcap = 0;
        if (parse_entry(line, lineno, file, cur, err) < 0)
            goto fail;
    }
    if (cur && entry_close(cur, file, err) < 0)
        goto fail;
    free(line);
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, entry_cmp);
    for (size_t i = 1; i < t->n; i++)
        if (!strcmp(t->v[i].qname, t->v[i - 1].qname)) {
            err_set(err, t->v[i].line, 0, "%s:%d: %s is listed twice (also line %d)", file,
                    t->v[i].line > t->v[i - 1].line ? t->v[i].line : t->v[i - 1].line,
                    t->v[i].qname,
                    t->v[i].line > t->v[i - 1].line ? t->v[i - 1].line : t->v[i].line);
            lock_table_unref(t);
            return NULL;
        }
    return t;
fail:
    free(line);
    lock_table_unref(t);
    return NULL;
}

static char *slurp(const char *file, size_t *len, struct stat *st, int *missing)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    *missing = fd < 0 && errno == ENOENT;
    if (fd < 0)
        return NULL;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size > (64 << 20)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    char *data = xmalloc((size_t)st->st_size + 1);
    size_t got = x_pread_full(fd, data, (size_t)st->st_size);
    close(fd);
    data[got] = '\0';
    *len = got;
    return data;
}

static struct lock_table *read_st(const char *file, int missing_ok, struct stat *st,
                                  struct err *err)
{
    size_t len = 0;
    int missing;
    memset(st, 0, sizeof *st);
    char *text = slurp(file, &len, st, &missing);
    if (!text) {
        if (missing && missing_ok) {
            struct lock_table *t = xcalloc(1, sizeof *t);
            t->refs = 1;
            return t;
        }
        err_set(err, 0, 0, "%s: cannot read the lock file: %s", file,
                missing ? "no such file" : strerror(errno));
        return NULL;
    }
    struct lock_table *t = lock_parse(text, len, file, err);
    free(text);
    return t;
}

struct lock_table *lock_read(const char *file, int missing_ok, struct err *err)
{
    struct stat st;
    return read_st(file, missing_ok, &st, err);
}

char *lock_render(const struct lock_table *t, size_t *len)
{
    struct buf b;
    buf_init(&b, (size_t)1 << 30);
    buf_puts(&b, "# skill-mcp lock: the approved version of each skill. Review changes with\n"
                 "# `skill-mcp lock diff`, record them with `skill-mcp lock approve NAME`.\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct lock_entry *e = &t->v[i];
        buf_printf(&b, "%s %s execution=%s approved-by=%s approved-at=%s", e->qname, e->digest,
                   e->exec, e->by, e->at);
        if (e->revoked_by)
            buf_printf(&b, " revoked-by=%s revoked-at=%s", e->revoked_by, e->revoked_at);
        buf_puts(&b, "\n");
        for (size_t j = 0; j < e->nfiles; j++) {
            buf_puts(&b, "  ");
            file_line(&b, &e->files[j]);
        }
    }
    return buf_steal(&b, len);
}

/* ---- changes ------------------------------------------------------------------ */

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && path[n] == '/';
}

size_t lock_changes(const struct lock_entry *a, const struct lock_manifest *now,
                    struct lock_change_item **out)
{
    size_t na = a ? a->nfiles : 0, i = 0, j = 0, n = 0;
    struct lock_change_item *v = xcalloc(na + now->n + 1, sizeof *v);
    while (i < na || j < now->n) {
        int c = i == na ? 1 : j == now->n ? -1 : strcmp(a->files[i].path, now->files[j].path);
        if (c < 0) {
            v[n++] = (struct lock_change_item){LOCK_REMOVED, a->files[i].path, 0};
            i++;
        } else if (c > 0) {
            const char *p = now->files[j].path;
            v[n++] = (struct lock_change_item){LOCK_ADDED, p,
                                               under(p, "scripts") || under(p, "hooks")};
            j++;
        } else {
            if (strcmp(a->files[i].digest, now->files[j].digest) ||
                a->files[i].size != now->files[j].size) {
                const char *p = now->files[j].path;
                v[n++] = (struct lock_change_item){LOCK_MODIFIED, p,
                                                   under(p, "scripts") || under(p, "hooks")};
            }
            i++;
            j++;
        }
    }
    if (a && strcmp(a->exec, now->exec))
        v[n++] = (struct lock_change_item){LOCK_EXEC_CHANGED, "SKILL.md", 1};
    if (!a && strcmp(now->exec, "none"))
        v[n++] = (struct lock_change_item){LOCK_EXEC_CHANGED, "SKILL.md", 1};
    *out = v;
    return n;
}

/* ---- writing under flock ---------------------------------------------------- */

static void iso_now(char out[LOCK_TIME_LEN + 1])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, LOCK_TIME_LEN + 1, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* flock on the lock file's folder: the file itself is replaced by rename. */
static int lock_dir(const char *file)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Writes data to path through a temporary file and rename (never half a file). */
static int replace_file(const char *path, const char *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    if (x_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Copies of entries, so a table can be rebuilt with one entry replaced. */
static void entry_copy(struct lock_entry *d, const struct lock_entry *s)
{
    *d = *s;
    d->qname = xstrdup(s->qname);
    d->by = xstrdup(s->by);
    d->revoked_by = s->revoked_by ? xstrdup(s->revoked_by) : NULL;
    d->files = xcalloc(s->nfiles ? s->nfiles : 1, sizeof *d->files);
    for (size_t i = 0; i < s->nfiles; i++) {
        d->files[i] = s->files[i];
        d->files[i].path = xstrdup(s->files[i].path);
    }
}

/* A new table: t with upd[0..n) put in place of (or beside) entries of the same name. */
static struct lock_table *table_with(const struct lock_table *t, const struct lock_entry *upd,
                                     size_t n)
{
    struct lock_table *r = xcalloc(1, sizeof *r);
    r->refs = 1;
    r->v = xcalloc(t->n + n + 1, sizeof *r->v);
    for (size_t i = 0; i < t->n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < n && !replaced; j++)
            replaced = !strcmp(upd[j].qname, t->v[i].qname);
        if (!replaced)
            entry_copy(&r->v[r->n++], &t->v[i]);
    }
    for (size_t j = 0; j < n; j++)
        entry_copy(&r->v[r->n++], &upd[j]);
    qsort(r->v, r->n, sizeof *r->v, entry_cmp);
    return r;
}

typedef int (*lock_edit_fn)(const struct lock_table *cur, struct lock_entry **upd, size_t *n,
                            void *arg);

/*
 * The one way the lock file changes: flock, read what is there now, let fn
 * say which entries to put, write it back. *result (may be NULL) gets the
 * table written (or the one read, when fn changed nothing).
 */
static int lock_edit(const char *file, lock_edit_fn fn, void *arg, struct lock_table **result,
                     struct err *err)
{
    int dfd = lock_dir(file);
    if (dfd < 0) {
        err_set(err, 0, 0, "%s: cannot lock its folder: %s", file, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    struct lock_table *cur = read_st(file, 1, &st, err), *next = NULL;
    struct lock_entry *upd = NULL;
    size_t n = 0;
    if (!cur)
        goto out;
    if (fn(cur, &upd, &n, arg) < 0) {
        err_set(err, 0, 0, "%s", "nothing to change");
        goto out;
    }
    if (n) {
        next = table_with(cur, upd, n);
        size_t len;
        char *text = lock_render(next, &len);
        mode_t mode = st.st_mode ? (st.st_mode & 0777) : 0644;
        if (replace_file(file, text, len, mode) < 0) {
            err_set(err, 0, 0, "%s: cannot write: %s", file, strerror(errno));
            free(text);
            goto out;
        }
        free(text);
    }
    rc = 0;
    if (result) {
        *result = next ? next : cur;
        lock_table_ref(*result);
    }
out:
    for (size_t i = 0; i < n; i++)
        entry_cleanup(&upd[i]);
    free(upd);
    lock_table_unref(next);
    lock_table_unref(cur);
    flock(dfd, LOCK_UN);
    close(dfd);
    return rc;
}

/* ---- the store ------------------------------------------------------------------ */

static int mkdir_p(const char *path, mode_t mode)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/* Copies the approved files of k into the store; each blob is checked against its digest. */
static int store_put(const char *store, const struct skill *k, const struct lock_manifest *m,
                     const char **why)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/blobs", store);
    if (mkdir_p(path, 0755) < 0) {
        *why = "the store's blobs folder cannot be created";
        return -1;
    }
    snprintf(path, sizeof path, "%s/manifests", store);
    if (mkdir_p(path, 0755) < 0) {
        *why = "the store's manifests folder cannot be created";
        return -1;
    }
    for (size_t i = 0; i < m->n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/blobs/%s", store, m->files[i].digest + 7);
        if (stat(path, &st) == 0)
            continue;
        struct jail_file f;
        if (jail_read(k->dir, m->files[i].path, (size_t)m->files[i].size + 1, &f, why) < 0)
            return -1;
        char d[MANIFEST_DIGEST_LEN + 1];
        manifest_sha256(f.data, f.len, d);
        int ok = !strcmp(d, m->files[i].digest) &&
                 replace_file(path, f.data, f.len, 0444) == 0;
        jail_file_cleanup(&f);
        if (!ok) {
            *why = "a file changed while it was being stored, or the store cannot be written";
            return -1;
        }
    }
    struct buf b;
    buf_init(&b, (size_t)1 << 30);
    for (size_t i = 0; i < m->n; i++)
        file_line(&b, &m->files[i]);
    snprintf(path, sizeof path, "%s/manifests/%s", store, m->digest + 7);
    int rc = replace_file(path, b.p ? b.p : "", b.len, 0444);
    buf_cleanup(&b);
    if (rc < 0)
        *why = "the store's manifest cannot be written";
    return rc;
}

static int copy_blob(const char *store, const struct lock_file *f, const char *dst)
{
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s/blobs/%s", store, f->digest + 7);
    size_t len;
    struct stat st;
    int missing;
    char *data = slurp(src, &len, &st, &missing);
    if (!data)
        return -1;
    char d[MANIFEST_DIGEST_LEN + 1];
    manifest_sha256(data, len, d);
    int rc = strcmp(d, f->digest) ? -1 : 0;   /* a damaged blob is never served */
    if (!rc) {
        int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        rc = fd < 0 || x_write_all(fd, data, len) < 0 ? -1 : 0;
        if (fd >= 0)
            close(fd);
    }
    free(data);
    return rc;
}

/* Removes path and, when it is a folder (never followed through a link),
 * everything beneath it; read-only folders are opened up first. 0 when
 * path is gone. */
static int rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return rmdir(path);
    }
    fchmod(fd, 0755);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        rm_tree(p);
    }
    closedir(d);
    return rmdir(path);
}

static int chmod_dirs_ro(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            chmod_dirs_ro(p);
    }
    closedir(d);
    return chmod(path, 0555);
}

/*
 * The read-only copy of an approved version, trees/<hex>/, made from the
 * blobs on first need (several workers may race: one rename wins, the
 * others drop their copy). Returns 0 with out set, or -1.
 */
static int store_tree(const char *store, const struct lock_entry *e, char *out, size_t outlen)
{
    struct stat st;
    char tmp[PATH_MAX], p[PATH_MAX];
    snprintf(out, outlen, "%s/trees/%s", store, e->digest + 7);
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    snprintf(p, sizeof p, "%s/trees", store);
    if (mkdir_p(p, 0755) < 0)
        return -1;
    snprintf(tmp, sizeof tmp, "%s/trees/.tmp-%.16s-%d-%lx", store, e->digest + 7, (int)getpid(),
             (unsigned long)pthread_self());
    rm_tree(tmp);
    if (mkdir(tmp, 0755) < 0)
        return -1;
    for (size_t i = 0; i < e->nfiles; i++) {
        snprintf(p, sizeof p, "%s/%s", tmp, e->files[i].path);
        char *slash = strrchr(p, '/');
        *slash = '\0';
        if (mkdir_p(p, 0755) < 0)
            goto fail;
        *slash = '/';
        if (copy_blob(store, &e->files[i], p) < 0)
            goto fail;
    }
    chmod_dirs_ro(tmp);
    if (rename(tmp, out) < 0) {
        rm_tree(tmp);
        return stat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
    }
    return 0;
fail:
    rm_tree(tmp);
    return -1;
}

/* ---- the server -------------------------------------------------------------------- */

enum { MODE_STRICT, MODE_PIN };

struct lock {
    const char *file;           /* NULL: audit only */
    int mode;
    const char *store;
    int serve_approved;
    int audit_fd;               /* -1: audit lines go to stderr */
    _Atomic(struct lock_table *) cur;
    pthread_mutex_t mu;         /* one reload / pin at a time; guards the retire swap */
    struct stat seen;           /* identity of the version last read (good or bad) */
};

static void remember(struct lock *L, const struct stat *st)
{
    L->seen = *st;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

struct lock *lock_open(const struct cfg *c, struct err *err)
{
    if (!c->lock_file && !c->audit_log)
        return NULL;
    struct lock *L = xcalloc(1, sizeof *L);
    L->file = c->lock_file;
    L->mode = c->lock_mode && !strcmp(c->lock_mode, "pin") ? MODE_PIN : MODE_STRICT;
    L->store = c->lock_store;
    L->serve_approved = c->lock_serve && !strcmp(c->lock_serve, "approved");
    L->audit_fd = -1;
    pthread_mutex_init(&L->mu, NULL);
    if (L->file) {
        struct stat st;
        struct lock_table *t = read_st(L->file, 1, &st, err);
        if (!t) {
            lock_free(L);
            return NULL;
        }
        remember(L, &st);
        atomic_init(&L->cur, t);
        if (!st.st_ino)
            log_warn("%s: no lock file yet: %s", L->file,
                     L->mode == MODE_PIN ? "the first version of each skill will be pinned"
                                         : "every skill is quarantined until approved");
    }
    if (c->audit_log) {
        L->audit_fd = open(c->audit_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (L->audit_fd < 0) {
            err_set(err, 0, 0, "%s: cannot open the audit log: %s", c->audit_log,
                    strerror(errno));
            lock_free(L);
            return NULL;
        }
    }
    return L;
}

void lock_free(struct lock *L)
{
    if (!L)
        return;
    lock_table_unref(atomic_load(&L->cur));
    if (L->audit_fd >= 0)
        close(L->audit_fd);
    pthread_mutex_destroy(&L->mu);
    free(L);
}

int lock_active(const struct lock *L)
{
    return L && L->file;
}

/* Installs t (steals the reference); the old table lives on in the snapshots using it. */
static void install(struct lock *L, struct lock_table *t)
{
    struct lock_table *old = atomic_exchange(&L->cur, t);
    lock_table_unref(old);
}

int lock_reload(struct lock *L, int force)
{
    if (!lock_active(L))
        return 0;
    struct stat st;
    int r = 0;
    pthread_mutex_lock(&L->mu);
    if (stat(L->file, &st) < 0)
        memset(&st, 0, sizeof st);
    if (!force && same_file(&st, &L->seen)) {
        pthread_mutex_unlock(&L->mu);
        return 0;
    }
    struct err e = {0};
    struct lock_table *t = read_st(L->file, 1, &st, &e);
    remember(L, &st);       /* a bad version is reported once, until it changes */
    if (!t) {
        log_error("lock not reloaded, keeping the %zu entries loaded: %s",
                  atomic_load(&L->cur)->n, e.msg);
        r = -1;
    } else {
        install(L, t);
        log_info("%s: %zu approved version(s) loaded", L->file, t->n);
        r = 1;
    }
    pthread_mutex_unlock(&L->mu);
    return r;
}

struct pin_arg {
    struct lock_entry *v;
    size_t n;
};

static int pin_edit(const struct lock_table *cur, struct lock_entry **upd, size_t *n, void *arg)
{
    struct pin_arg *p = arg;
    /* Another worker (or an operator) may have recorded it first: theirs stands. */
    *upd = xcalloc(p->n + 1, sizeof **upd);
    for (size_t i = 0; i < p->n; i++)
        if (!lock_find(cur, p->v[i].qname))
            entry_copy(&(*upd)[(*n)++], &p->v[i]);
    return 0;
}

static char *reasonf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *reasonf(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(msg);     /* cut at 1 KiB, perhaps inside a character of a path */
    return xstrdup(msg);
}

/* Judges entry i of s against t; returns 1 when it is not in t (a pin candidate). */
static int judge(struct lock *L, struct snapshot *s, size_t i, const struct lock_table *t,
                 const struct lock_manifest *m, const char *mwhy)
{
    struct skill *k = s->v[i];
    struct skill_gate *g = &s->gate[i];
    const struct lock_entry *e = lock_find(t, k->qname);
    g->approved = e;
    free(g->reason);
    g->reason = NULL;
    if (!m) {
        g->reason = reasonf("its files cannot be checked against the lock (%s); fix them, "
                            "then approve with `skill-mcp lock approve %s --lock %s`",
                            mwhy, k->qname, L->file);
        return 0;
    }
    if (!e) {
        if (L->mode == MODE_PIN)
            return 1;
        g->reason = reasonf("not approved: review it with `skill-mcp lock diff %s --lock %s`, "
                            "then approve it with `skill-mcp lock approve %s --lock %s`",
                            k->qname, L->file, k->qname, L->file);
        return 0;
    }
    if (e->revoked_by) {
        g->reason = reasonf("revoked by %s at %s; after review, approve it again with "
                            "`skill-mcp lock approve %s --lock %s`",
                            e->revoked_by, e->revoked_at, k->qname, L->file);
        return 0;
    }
    if (strcmp(e->digest, m->digest)) {
        char tree[PATH_MAX];
        if (L->serve_approved && L->store) {
            if (store_tree(L->store, e, tree, sizeof tree) == 0)
                g->serve = skills_entry_load(tree, k->qname, k->root);
            if (!g->serve)
                log_warn("store: the approved version of %s (%s) is not in %s; it is refused "
                         "instead (approve with --lock-store to keep versions)",
                         k->qname, e->digest, L->store);
        }
        g->reason = reasonf("changed since approved by %s at %s%s; review with `skill-mcp "
                            "lock diff %s --lock %s`, then approve with `skill-mcp lock "
                            "approve %s --lock %s`",
                            e->by, e->at, g->serve ? " (the approved version is served)" : "",
                            k->qname, L->file, k->qname, L->file);
    }
    return 0;
}

void lock_gate(struct snapshot *s, void *arg)
{
    struct lock *L = arg;
    if (!lock_active(L))
        return;
    pthread_mutex_lock(&L->mu);
    struct lock_table *t = atomic_load(&L->cur);
    lock_table_ref(t);
    pthread_mutex_unlock(&L->mu);
    s->gate = xcalloc(s->n ? s->n : 1, sizeof *s->gate);
    struct lock_manifest *ms = xcalloc(s->n ? s->n : 1, sizeof *ms);
    char *ok = xcalloc(s->n ? s->n : 1, 1);
    struct pin_arg pin = {xcalloc(s->n ? s->n : 1, sizeof *pin.v), 0};
    char at[LOCK_TIME_LEN + 1];
    iso_now(at);
    for (size_t i = 0; i < s->n; i++) {
        const char *why = "";
        ok[i] = lock_manifest_of(s->v[i], &ms[i], &why) == 0;
        if (ok[i])
            memcpy(s->gate[i].digest, ms[i].digest, sizeof ms[i].digest);
        if (judge(L, s, i, t, ok[i] ? &ms[i] : NULL, why)) {
            struct lock_entry *e = &pin.v[pin.n++];
            e->qname = s->v[i]->qname;
            memcpy(e->digest, ms[i].digest, sizeof e->digest);
            memcpy(e->exec, ms[i].exec, sizeof e->exec);
            e->by = "first-use";
            memcpy(e->at, at, sizeof at);
            e->files = ms[i].files;
            e->nfiles = ms[i].n;
        }
    }
    if (pin.n) {
        /* Pin on first use: written under flock; the file decides for every worker. */
        struct err e = {0};
        struct lock_table *now = NULL;
        if (lock_edit(L->file, pin_edit, &pin, &now, &e) < 0) {
            log_error("pin: cannot record first versions: %s", e.msg);
        } else {
            pthread_mutex_lock(&L->mu);
            struct stat st;
            if (stat(L->file, &st) == 0)
                remember(L, &st);
            lock_table_ref(now);
            install(L, now);
            pthread_mutex_unlock(&L->mu);
            lock_table_unref(t);
            t = now;
            log_info("%s: pinned the first version of %zu skill(s)", L->file, pin.n);
        }
        for (size_t i = 0; i < s->n; i++)
            if (ok[i] && !s->gate[i].approved)
                judge(L, s, i, t, &ms[i], "");
        for (size_t i = 0; i < s->n; i++)
            if (!s->gate[i].approved && !s->gate[i].reason)
                s->gate[i].reason = reasonf("not pinned: the lock could not be written; "
                                            "approve with `skill-mcp lock approve %s --lock %s`",
                                            s->v[i]->qname, L->file);
        if (L->store)
            for (size_t i = 0; i < s->n; i++) {
                const char *why;
                if (ok[i] && s->gate[i].approved && !s->gate[i].reason &&
                    store_put(L->store, s->v[i], &ms[i], &why) < 0)
                    log_warn("store: %s not stored: %s", s->v[i]->qname, why);
            }
    }
    for (size_t i = 0; i < s->n; i++)
        lock_manifest_cleanup(&ms[i]);
    free(ms);
    free(ok);
    free(pin.v);
    s->gate_ref = t;
}

void lock_gate_release(void *ref)
{
    lock_table_unref(ref);
}

void lock_audit(struct lock *L, const char *skill, const char *manifest_digest,
                const char *approved_at, const char *client, const char *request_id,
                const char *script, const char *status, long exit_code, double duration_ms)
{
    char ts[40];
    now_utc(ts, sizeof ts);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s, s:s, s:o, s:f}", "ts",
                          ts, "event", "script_run", "skill", skill, "manifest_digest",
                          manifest_digest && *manifest_digest ? manifest_digest : NULL,
                          "approved_at", approved_at && *approved_at ? approved_at : NULL,
                          "client", client && *client ? client : NULL, "request_id",
                          request_id, "script", script, "status", status, "exit_code",
                          exit_code >= 0 ? json_integer(exit_code) : json_null(),
                          "duration_ms", duration_ms);
    if (!o)
        return;
    /* approved_at and manifest_digest are always present, null when unknown */
    if (!json_object_get(o, "approved_at"))
        json_object_set_new(o, "approved_at", json_null());
    if (!json_object_get(o, "manifest_digest"))
        json_object_set_new(o, "manifest_digest", json_null());
    if (!json_object_get(o, "client"))
        json_object_set_new(o, "client", json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!s)
        return;
    size_t n = strlen(s);
    s[n++] = '\n';      /* json_dumps leaves room: the terminator is replaced */
    if (L && L->audit_fd >= 0) {
        if (write(L->audit_fd, s, n) != (ssize_t)n)
            log_error("audit log: short write: %s", strerror(errno));
    } else {
        fwrite(s, 1, n, stderr);
    }
    free(s);
}

/* ---- skill-mcp lock ----------------------------------------------------------------- */

struct cli {
    const char *file;
    const char *roots[CFG_MAX_ROOTS];
    size_t nroots;
    const char *store;
    const char *by;
    int all;
    int dry_run;                /* gc: report only */
    long grace;                 /* gc: seconds an unreferenced item is kept */
    const char *names[256];
    size_t nnames;
};

static void cli_usage(FILE *f)
{
    fprintf(f,
            "usage: skill-mcp lock approve NAME... | --all [--by WHO] [--lock-store DIR]\n"
            "       skill-mcp lock revoke NAME... [--by WHO]\n"
            "       skill-mcp lock diff [NAME...]\n"
            "       skill-mcp lock status [NAME...]\n"
            "       skill-mcp lock gc --lock-store DIR [--grace SECONDS] [--dry-run]\n"
            "common: --lock FILE (default skills.lock), --skills DIR (repeatable, default ./skills)\n"
            "diff and status exit 1 when a skill is not approved as it is now.\n"
            "gc removes from the store what the lock no longer names, once it and the lock\n"
            "are older than the grace (default 3600 s).\n");
}

static const char *who_default(void)
{
    const char *v = getenv("SUDO_USER");
    if (!v || !*v)
        v = getenv("USER");
    if (!v || !*v)
        v = getlogin();
    if (!v || !*v) {
        struct passwd *pw = getpwuid(getuid());
        v = pw ? pw->pw_name : NULL;
    }
    return v && *v ? v : "unknown";
}

static int cli_parse(struct cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->file = "skills.lock";
    c->grace = 3600;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--lock")       ? &c->file
                            : !strcmp(a, "--lock-store") ? &c->store
                            : !strcmp(a, "--by")         ? &c->by
                                                         : NULL;
        if (slot || !strcmp(a, "--skills")) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                x_fprintf_text(stderr, "skill-mcp lock: %s needs a value\n", a);
                return -1;
            }
            if (slot)
                *slot = argv[++i];
            else if (c->nroots < CFG_MAX_ROOTS)
                c->roots[c->nroots++] = argv[++i];
        } else if (!strcmp(a, "--all")) {
            c->all = 1;
        } else if (!strcmp(a, "--dry-run")) {
            c->dry_run = 1;
        } else if (!strcmp(a, "--grace")) {
            char *end;
            errno = 0;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (i + 1 >= argc || errno || end == argv[i + 1] || *end || v < 0) {
                x_fprintf_text(stderr, "skill-mcp lock: --grace needs a number of seconds (0 or more)\n");
                return -1;
            }
            c->grace = v;
            i++;
        } else if (a[0] == '-') {
            x_fprintf_text(stderr, "skill-mcp lock: unknown option '%s'\n", a);
            return -1;
        } else if (c->nnames < sizeof c->names / sizeof *c->names) {
            c->names[c->nnames++] = a;
        }
    }
    if (!c->nroots)
        c->roots[c->nroots++] = "./skills";
    if (!c->by)
        c->by = who_default();
    if (!who_valid(c->by, strlen(c->by))) {
        x_fprintf_text(stderr, "skill-mcp lock: --by '%s': 1-64 characters of A-Z a-z 0-9 . _ @ + -\n",
                       c->by);
        return -1;
    }
    return 0;
}

/* Resolves the named skills (all when none are named); prints unknown names. */
static int cli_pick(const struct snapshot *s, const struct cli *c, struct skill ***out,
                    size_t *n)
{
    *out = xcalloc(s->n + c->nnames + 1, sizeof **out);
    *n = 0;
    if (!c->nnames) {
        for (size_t i = 0; i < s->n; i++)
            (*out)[(*n)++] = s->v[i];
        return 0;
    }
    int bad = 0;
    for (size_t i = 0; i < c->nnames; i++) {
        int amb;
        struct skill *k = skills_find(s, c->names[i], strlen(c->names[i]), &amb);
        if (!k) {
            x_fprintf_text(stderr, "skill-mcp lock: %s: %s\n", c->names[i],
                           amb ? "names skills of several teams; give the qualified name"
                               : "no such skill (or it does not load: see `skill-mcp validate`)");
            bad = 1;
            continue;
        }
        (*out)[(*n)++] = k;
    }
    return bad ? -1 : 0;
}

struct approve_arg {
    struct lock_entry *v;
    size_t n;
    int revoke;
    const char *by;
    char at[LOCK_TIME_LEN + 1];
    int missing;
};

static int approve_edit(const struct lock_table *cur, struct lock_entry **upd, size_t *n,
                        void *arg)
{
    struct approve_arg *a = arg;
    *upd = xcalloc(a->n + 1, sizeof **upd);
    for (size_t i = 0; i < a->n; i++) {
        if (!a->revoke) {
            entry_copy(&(*upd)[(*n)++], &a->v[i]);
            continue;
        }
        const struct lock_entry *e = lock_find(cur, a->v[i].qname);
        if (!e) {
            x_fprintf_text(stderr, "skill-mcp lock: %s is not in the lock; nothing to revoke\n",
                           a->v[i].qname);
            a->missing = 1;
            continue;
        }
        struct lock_entry *d = &(*upd)[(*n)++];
        entry_copy(d, e);
        free(d->revoked_by);
        d->revoked_by = xstrdup(a->by);
        memcpy(d->revoked_at, a->at, sizeof a->at);
    }
    return 0;
}

static int cli_revoke(const struct cli *c)
{
    if (!c->nnames) {
        x_fprintf_text(stderr, "skill-mcp lock revoke: name the skill(s) to revoke\n");
        return 2;
    }
    struct approve_arg a = {.revoke = 1, .by = c->by};
    iso_now(a.at);
    a.v = xcalloc(c->nnames, sizeof *a.v);
    for (size_t i = 0; i < c->nnames; i++)
        a.v[a.n++].qname = xstrdup(c->names[i]);
    struct err e = {0};
    int rc = lock_edit(c->file, approve_edit, &a, NULL, &e);
    for (size_t i = 0; i < a.n; i++)
        free(a.v[i].qname);
    free(a.v);
    if (rc < 0) {
        x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < c->nnames && !a.missing; i++)
        x_fprintf_text(stdout, "revoked %s (by %s at %s): quarantined at the next refresh, or now on SIGHUP\n",
                       c->names[i], c->by, a.at);
    return a.missing ? 1 : 0;
}

static int cli_approve(const struct cli *c, const struct snapshot *s)
{
    if (!c->nnames && !c->all) {
        x_fprintf_text(stderr, "skill-mcp lock approve: name the skill(s) to approve, or --all\n");
        return 2;
    }
    struct skill **ks;
    size_t nk;
    if (cli_pick(s, c, &ks, &nk) < 0) {
        free(ks);
        return 1;
    }
    struct approve_arg a = {.by = c->by};
    char *by = xstrdup(c->by);
    iso_now(a.at);
    a.v = xcalloc(nk + 1, sizeof *a.v);
    struct lock_manifest *ms = xcalloc(nk + 1, sizeof *ms);
    int rc = 0;
    for (size_t i = 0; i < nk; i++) {
        const char *why = "";
        if (lock_manifest_of(ks[i], &ms[i], &why) < 0) {
            x_fprintf_text(stderr, "skill-mcp lock: %s: %s\n", ks[i]->qname, why);
            rc = 1;
            continue;
        }
        if (c->store && store_put(c->store, ks[i], &ms[i], &why) < 0) {
            x_fprintf_text(stderr, "skill-mcp lock: %s: not stored in %s: %s\n", ks[i]->qname,
                           c->store, why);
            rc = 1;
            continue;
        }
        struct lock_entry *e = &a.v[a.n++];
        e->qname = ks[i]->qname;
        memcpy(e->digest, ms[i].digest, sizeof e->digest);
        memcpy(e->exec, ms[i].exec, sizeof e->exec);
        e->by = by;
        memcpy(e->at, a.at, sizeof a.at);
        e->files = ms[i].files;
        e->nfiles = ms[i].n;
    }
    struct err e = {0};
    if (!rc && lock_edit(c->file, approve_edit, &a, NULL, &e) < 0) {
        x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
        rc = 1;
    }
    /* Once more now that the lock names them: a `lock gc` that ran between
     * the first store and the lock edit may have taken a blob that was
     * unreferenced then (present blobs cost a stat). */
    for (size_t i = 0; !rc && c->store && i < nk; i++) {
        const char *why = "";
        if (store_put(c->store, ks[i], &ms[i], &why) < 0) {
            x_fprintf_text(stderr, "skill-mcp lock: %s: not stored in %s: %s\n", ks[i]->qname,
                           c->store, why);
            rc = 1;
        }
    }
    if (!rc)
        for (size_t i = 0; i < a.n; i++)
            x_fprintf_text(stdout, "approved %s %s (%zu files) by %s at %s\n", a.v[i].qname, a.v[i].digest,
                           a.v[i].nfiles, c->by, a.at);
    for (size_t i = 0; i < nk; i++)
        lock_manifest_cleanup(&ms[i]);
    free(ms);
    free(a.v);
    free(ks);
    free(by);
    return rc;
}

static const char *change_word(const struct lock_change_item *x)
{
    int script = under(x->path, "scripts"), hook = under(x->path, "hooks");
    switch (x->kind) {
    case LOCK_ADDED:
        return script ? "new script" : hook ? "new hook" : NULL;
    case LOCK_MODIFIED:
        return script ? "changed script" : hook ? "changed hook" : NULL;
    default:
        return NULL;
    }
}

/* diff (verbose) and status: one verdict per skill; 1 when any is not approved as it is. */
static int cli_report(const struct cli *c, const struct snapshot *s, int verbose)
{
    struct err e = {0};
    struct lock_table *t = lock_read(c->file, 1, &e);
    if (!t) {
        x_fprintf_text(stderr, "skill-mcp lock: %s\n", e.msg);
        return 2;
    }
    struct skill **ks;
    size_t nk;
    if (cli_pick(s, c, &ks, &nk) < 0) {
        free(ks);
        lock_table_unref(t);
        return 2;
    }
    int unapproved = 0, widens = 0;
    for (size_t i = 0; i < nk; i++) {
        struct lock_manifest m;
        const char *why = "";
        const struct lock_entry *a = lock_find(t, ks[i]->qname);
        if (lock_manifest_of(ks[i], &m, &why) < 0) {
            x_fprintf_text(stdout, "%s: cannot be checked: %s\n", ks[i]->qname, why);
            unapproved = 1;
            continue;
        }
        struct lock_change_item *ch;
        size_t n = lock_changes(a, &m, &ch);
        int w = 0;
        for (size_t j = 0; j < n; j++)
            w |= ch[j].widens;
        if (a && !a->revoked_by && !strcmp(a->digest, m.digest))
            x_fprintf_text(stdout, "%s: approved (by %s at %s)\n", ks[i]->qname, a->by, a->at);
        else if (a && a->revoked_by && !strcmp(a->digest, m.digest))
            x_fprintf_text(stdout, "%s: REVOKED by %s at %s (unchanged since approved by %s at %s)\n",
                           ks[i]->qname, a->revoked_by, a->revoked_at, a->by, a->at);
        else if (a)
            x_fprintf_text(stdout, "%s: %sCHANGED since approved by %s at %s%s\n", ks[i]->qname,
                           a->revoked_by ? "REVOKED and " : "", a->by, a->at,
                           w ? "  ! WIDENS what it can do" : "");
        else
            x_fprintf_text(stdout, "%s: NOT APPROVED (new to the lock)%s\n", ks[i]->qname,
                           w ? "  ! WIDENS what it can do" : "");
        if (!a || a->revoked_by || strcmp(a->digest, m.digest))
            unapproved = 1;
        widens |= w;
        for (size_t j = 0; verbose && j < n; j++) {
            static const char mark[] = {'A', 'R', 'M', 'X'};
            const char *word = change_word(&ch[j]);
            if (ch[j].kind == LOCK_EXEC_CHANGED)
                x_fprintf_text(stdout, "  ! X %s: the execution: block %s  WIDENS\n", ch[j].path,
                               a ? "changed" : "is new");
            else if (ch[j].widens)
                x_fprintf_text(stdout, "  ! %c %s  WIDENS: %s\n", mark[ch[j].kind], ch[j].path, word);
            else
                x_fprintf_text(stdout, "    %c %s\n", mark[ch[j].kind], ch[j].path);
        }
        free(ch);
        lock_manifest_cleanup(&m);
    }
    /* Approved skills that are gone from the tree: worth knowing, not a failure. */
    for (size_t i = 0; !c->nnames && i < t->n; i++) {
        int amb;
        if (!skills_find(s, t->v[i].qname, strlen(t->v[i].qname), &amb))
            x_fprintf_text(stdout, "%s: in the lock but not in the skills folders\n", t->v[i].qname);
    }
    if (verbose && widens)
        x_fprintf_text(stdout, "! marks changes that widen what a skill can do: review them first.\n");
    free(ks);
    lock_table_unref(t);
    return unapproved;
}

/* ---- gc ------------------------------------------------------------------------ */

static int hex_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int named(const char **v, size_t n, const char *hex)
{
    return bsearch(&hex, v, n, sizeof *v, hex_cmp) != NULL;
}

/*
 * Removes from the store what the lock no longer names: blobs no entry's
 * files use, manifests and trees of versions no entry holds (revoked
 * entries still hold theirs). The store belongs to this one lock.
 *
 * Servers judge by the lock they last read, and a server serving an old
 * approved version keeps doing so until it sees the new lock (at once on a
 * change, at most one refresh later). So nothing goes while the lock
 * changed within the grace, and nothing younger than the grace goes either
 * (an `approve` writes its blobs before the lock; a server builds a tree
 * before serving it).
 */
static int cli_gc(const struct cli *c)
{
    if (!c->store) {
        x_fprintf_text(stderr, "skill-mcp lock gc: --lock-store DIR is required\n");
        return 2;
    }
    /* Under the lock's flock for the whole run: an approve or a pin cannot
     * name a version between the read below and the removals. */
    int dfd = lock_dir(c->file);
    if (dfd < 0) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s: cannot lock its folder: %s\n", c->file,
                       strerror(errno));
        return 2;
    }
    struct stat lst;
    if (stat(c->file, &lst) < 0) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s: %s; without the lock, everything in the store "
                               "stays\n", c->file, strerror(errno));
        close(dfd);
        return 2;
    }
    struct err e = {0};
    struct lock_table *t = lock_read(c->file, 0, &e);
    if (!t) {
        x_fprintf_text(stderr, "skill-mcp lock gc: %s\n", e.msg);
        close(dfd);
        return 2;
    }
    time_t now = time(NULL);
    if (now - lst.st_mtime < c->grace) {
        x_fprintf_text(stdout, "%s changed %lld s ago, within the grace of %ld s: servers may still serve "
                       "versions it no longer names. Nothing removed; run gc again later.\n",
                       c->file, (long long)(now - lst.st_mtime), c->grace);
        lock_table_unref(t);
        close(dfd);
        return 0;
    }
    size_t nf = 0;
    for (size_t i = 0; i < t->n; i++)
        nf += t->v[i].nfiles;
    const char **vers = xcalloc(t->n + 1, sizeof *vers), **blobs = xcalloc(nf + 1, sizeof *blobs);
    size_t nv = 0, nb = 0;
    for (size_t i = 0; i < t->n; i++) {
        vers[nv++] = t->v[i].digest + 7;
        for (size_t j = 0; j < t->v[i].nfiles; j++)
            blobs[nb++] = t->v[i].files[j].digest + 7;
    }
    qsort(vers, nv, sizeof *vers, hex_cmp);
    qsort(blobs, nb, sizeof *blobs, hex_cmp);

    static const char *const kinds[] = {"blobs", "manifests", "trees"};
    size_t gone[3] = {0}, kept[3] = {0}, young = 0;
    long long bytes = 0;
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", c->store, kinds[k]);
        DIR *d = opendir(dir);
        if (!d) {
            if (errno != ENOENT) {
                x_fprintf_text(stderr, "skill-mcp lock gc: %s: %s\n", dir, strerror(errno));
                rc = 1;
            }
            continue;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *nm = de->d_name;
            if (!strcmp(nm, ".") || !strcmp(nm, ".."))
                continue;
            /* a tree being built (".tmp-"), or one a crash left behind */
            int partial = k == 2 && !strncmp(nm, ".tmp-", 5);
            if (!partial && named(k == 0 ? blobs : vers, k == 0 ? nb : nv, nm)) {
                kept[k]++;
                continue;
            }
            char p[PATH_MAX];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, nm);
            if (lstat(p, &st) < 0)
                continue;
            if (now - st.st_mtime < c->grace) {
                young++;
                continue;
            }
            if (c->dry_run) {
                x_fprintf_text(stdout, "would remove %s/%s\n", kinds[k], nm);
            } else if (k == 2 && S_ISDIR(st.st_mode)) {
                /* out of the way first, so a server never sees half a tree */
                char away[PATH_MAX];
                snprintf(away, sizeof away, "%s/.gc-%.16s-%d", dir, nm, (int)getpid());
                if (partial || rename(p, away) < 0)
                    snprintf(away, sizeof away, "%s", p);
                if (rm_tree(away) < 0) {
                    x_fprintf_text(stderr, "skill-mcp lock gc: cannot remove %s: %s\n", p,
                                   strerror(errno));
                    rc = 1;
                    continue;
                }
            } else if (unlink(p) < 0) {     /* a file, or a link (never followed) */
                x_fprintf_text(stderr, "skill-mcp lock gc: cannot remove %s: %s\n", p, strerror(errno));
                rc = 1;
                continue;
            }
            gone[k]++;
            if (k == 0)
                bytes += st.st_size;
        }
        closedir(d);
    }
    x_fprintf_text(stdout, "%s %zu blob(s) (%lld bytes), %zu manifest(s), %zu tree(s); kept %zu blob(s), "
                   "%zu manifest(s), %zu tree(s) the lock names, and %zu item(s) younger than %ld s\n",
                   c->dry_run ? "would remove" : "removed", gone[0], bytes, gone[1], gone[2], kept[0],
                   kept[1], kept[2], young, c->grace);
    free(vers);
    free(blobs);
    lock_table_unref(t);
    flock(dfd, LOCK_UN);
    close(dfd);
    return rc;
}

int lock_cli(int argc, char **argv)
{
    struct cli c;
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        cli_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    const char *cmd = argv[0];
    int kind = !strcmp(cmd, "approve") ? 1 : !strcmp(cmd, "revoke") ? 2
               : !strcmp(cmd, "diff")  ? 3 : !strcmp(cmd, "status") ? 4
               : !strcmp(cmd, "gc")    ? 5 : 0;
    if (!kind) {
        x_fprintf_text(stderr, "skill-mcp lock: unknown command '%s'\n", cmd);
        cli_usage(stderr);
        return 2;
    }
    if (cli_parse(&c, argc, argv) < 0)
        return 2;
    if (kind == 2)
        return cli_revoke(&c);
    if (kind == 5)
        return cli_gc(&c);
    log_set_level(LOG_ERROR);
    struct skills *sk = skills_new(c.roots, c.nroots, NULL, NULL, NULL, NULL);
    if (!sk) {
        x_fprintf_text(stderr, "skill-mcp lock: no usable --skills directory\n");
        return 2;
    }
    struct snapshot *snap = skills_acquire(sk);
    int rc = kind == 1 ? cli_approve(&c, snap) : cli_report(&c, snap, kind == 3);
    skills_release(snap);
    skills_free(sk);
    return rc;
}
