/*
 * lockfile.c - see lockfile.h: the lock file's format. File digests come
 * from manifest.c (one walker, one hasher); this module only sorts them,
 * hashes the list, and compares.
 */
#include "lockfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail.h"
#include "skills.h"
#include "util.h"

/* ---- tables ---------------------------------------------------------------- */

void lock_entry_cleanup(struct lock_entry *e)
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
        lock_entry_cleanup(&t->v[i]);
    free(t->v);
    free(t);
}

int lock_entry_cmp(const void *a, const void *b)
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

int lock_file_line(struct buf *b, const struct lock_file *f)
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
    json_t *ex = skills_execution(k);
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
    char kdir[SKILL_DIR_MAX];
    char p[4200];
    struct stat st;
    for (size_t i = 0; i < k->ndirs; i++) {
        char dir[SKILL_DIR_MAX];
        snprintf(p, sizeof p, "%s/__pycache__", skills_dir_path(k, i, dir));
        if (lstat(p, &st) == 0)
            return "it holds a __pycache__/ folder, which the lock does not hash and Python "
                   "may load bytecode from; delete the folder";
        snprintf(p, sizeof p, "%s/node_modules", dir);
        if (lstat(p, &st) == 0)
            return "it holds a node_modules/ folder, which the lock does not hash and Node.js "
                   "loads packages from; delete the folder";
    }
    snprintf(p, sizeof p, "%s", skills_dir(k, kdir));
    for (char *slash; (slash = strrchr(p, '/'));) {
        snprintf(slash, sizeof p - (size_t)(slash - p), "/node_modules");
        if (lstat(p, &st) == 0)
            return "a folder above it holds a node_modules/ folder, which Node.js loads "
                   "packages from for this skill's scripts and the lock does not hash; remove it";
        *slash = '\0';
    }
    return NULL;
}

int lock_manifest_of(const struct skill *k, struct lock_manifest *m, struct err *why)
{
    struct manifest mf;
    memset(m, 0, sizeof *m);
    const char *unhashed = unhashed_code(k);
    if (unhashed) {
        err_set(why, 0, 0, "%s", unhashed);
        return -1;
    }
    if (manifest_build(k, &mf, why) < 0)
        return -1;
    if (mf.skipped) {
        manifest_cleanup(&mf);
        err_set(why, 0, 0, "a file of the skill cannot be read now");
        return -1;
    }
    m->files = xcalloc(mf.n ? mf.n : 1, sizeof *m->files);
    for (size_t i = 0; i < mf.n; i++) {
        if (strchr(mf.v[i].path, '\n') || strchr(mf.v[i].path, '\r')) {
            m->n = i;
            manifest_cleanup(&mf);
            lock_manifest_cleanup(m);
            err_set(why, 0, 0, "a file name holds a line break, which the lock cannot record");
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
    int root = jail_root(dir);
    if (root < 0)
        return 0;
    int rc = manifest_digest(root, rel, d, &size, NULL);
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

int lock_who_valid(const char *s, size_t n)
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
        err_fileline(err, file, lineno, "\"%.*s\" is not a skill name",
                     (int)(n > 64 ? 64 : n), f);
        return -1;
    }
    e->qname = xstrndup(f, n);
    f = field(&p, &n);
    if (!f || !digest_valid(f, n)) {
        err_fileline(err, file, lineno, "expected the manifest digest (sha256:<64 hex>) after "
                     "the skill name");
        return -1;
    }
    memcpy(e->digest, f, n);
    while ((f = field(&p, &n))) {
        const char *eq = memchr(f, '=', n);
        size_t kl = eq ? (size_t)(eq - f) : n, vl = eq ? n - kl - 1 : 0;
        const char *v = eq ? eq + 1 : "";
#define KEY(s) (kl == sizeof(s) - 1 && !memcmp(f, s, kl))
        if (KEY("approved-by") && lock_who_valid(v, vl) && !e->by) {
            e->by = xstrndup(v, vl);
        } else if (KEY("revoked-by") && lock_who_valid(v, vl) && !e->revoked_by) {
            e->revoked_by = xstrndup(v, vl);
        } else if (KEY("approved-at") && time_valid(v, vl)) {
            memcpy(e->at, v, vl);
        } else if (KEY("revoked-at") && time_valid(v, vl)) {
            memcpy(e->revoked_at, v, vl);
        } else if (KEY("execution") && (digest_valid(v, vl) || (vl == 4 && !memcmp(v, "none", 4)))) {
            memcpy(e->exec, v, vl);
        } else {
            err_fileline(err, file, lineno, "unexpected \"%.*s\": expected execution=, "
                         "approved-by=NAME, approved-at=YYYY-MM-DDTHH:MM:SSZ, revoked-by=, "
                         "revoked-at=",
                         (int)(n > 64 ? 64 : n), f);
            return -1;
        }
#undef KEY
    }
    if (!e->by || !e->at[0] || !e->exec[0]) {
        err_fileline(err, file, lineno, "%s missing",
                     !e->exec[0] ? "execution=" : !e->by ? "approved-by=" : "approved-at=");
        return -1;
    }
    if (!e->revoked_by != !e->revoked_at[0]) {
        err_fileline(err, file, lineno, "revoked-by= and revoked-at= go together");
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
        err_fileline(err, file, lineno, "a file line is \"sha256:<64 hex> SIZE PATH\"");
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
        err_fileline(err, file, lineno, "a file line is \"sha256:<64 hex> SIZE PATH\"");
        return -1;
    }
    const char *path = p + 1;
    if (jail_check(path, strlen(path))) {
        err_fileline(err, file, lineno, "\"%.100s\" is not a path inside a skill",
                     path);
        return -1;
    }
    if (e->nfiles && strcmp(e->files[e->nfiles - 1].path, path) >= 0) {
        err_fileline(err, file, lineno, "files must be listed once each, in byte order of "
                     "their paths");
        return -1;
    }
    if (e->nfiles == LOCK_MAX_FILES) {
        err_fileline(err, file, lineno, "more than %d files", LOCK_MAX_FILES);
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
        err_fileline(err, file, e->line, "%s lists no files (every skill has SKILL.md)",
                     e->qname);
        return -1;
    }
    lock_digest_files(e->files, e->nfiles, d);
    if (strcmp(d, e->digest)) {
        err_fileline(err, file, e->line, "the file lines of %s hash to %s, not to the digest "
                     "recorded (edited by hand?)", e->qname, d);
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
            err_fileline(err, file, lineno, "line longer than %d bytes",
                         LOCK_MAX_LINE);
            goto fail;
        }
        if (memchr(p, '\0', n) || memchr(p, '\r', n)) {
            err_fileline(err, file, lineno, "NUL or carriage return in the line");
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
                err_fileline(err, file, lineno, "a file line before any skill line");
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
        qsort(t->v, t->n, sizeof *t->v, lock_entry_cmp);
    for (size_t i = 1; i < t->n; i++)
        if (!strcmp(t->v[i].qname, t->v[i - 1].qname)) {
            err_fileline(err, file,
                         t->v[i].line > t->v[i - 1].line ? t->v[i].line : t->v[i - 1].line,
                         "%s is listed twice (also line %d)",
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
            lock_file_line(&b, &e->files[j]);
 }
    }
    return buf_steal(&b, len);
}

/* ---- changes ------------------------------------------------------------------ */

int lock_under(const char *path, const char *dir)
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
                                               lock_under(p, "scripts") || lock_under(p, "hooks")};
     j++;
 } else {
     if (strcmp(a->files[i].digest, now->files[j].digest) ||
         a->files[i].size != now->files[j].size) {
         const char *p = now->files[j].path;
         v[n++] = (struct lock_change_item){LOCK_MODIFIED, p,
                                            lock_under(p, "scripts") || lock_under(p, "hooks")};
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
