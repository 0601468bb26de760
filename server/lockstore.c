/*
 * lockstore.c - see lockstore.h: reading the lock file, writing it under
 * flock, and the store of approved versions.
 */
#include "lockstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jail.h"
#include "skills.h"
#include "util.h"

/* ---- reading ---------------------------------------------------------------- */

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

struct lock_table *lock_read_st(const char *file, int missing_ok, struct stat *st,
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
        err_fileline(err, file, 0, "cannot read the lock file: %s",
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
    return lock_read_st(file, missing_ok, &st, err);
}

/* ---- writing under flock ---------------------------------------------------- */

void lock_iso_now(char out[LOCK_TIME_LEN + 1])
{
    iso_utc(time(NULL), out, LOCK_TIME_LEN + 1);
}

/* flock on the lock file's folder: the file itself is replaced by rename. */
int lock_dir_flock(const char *file)
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
void lock_entry_copy(struct lock_entry *d, const struct lock_entry *s)
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
            lock_entry_copy(&r->v[r->n++], &t->v[i]);
    }
    for (size_t j = 0; j < n; j++)
        lock_entry_copy(&r->v[r->n++], &upd[j]);
    qsort(r->v, r->n, sizeof *r->v, lock_entry_cmp);
    return r;
}

typedef int (*lock_edit_fn)(const struct lock_table *cur, struct lock_entry **upd, size_t *n,
                            void *arg);

/*
 * The one way the lock file changes: flock, read what is there now, let fn
 * say which entries to put, write it back. *result (may be NULL) gets the
 * table written (or the one read, when fn changed nothing).
 */
int lock_edit(const char *file, lock_edit_fn fn, void *arg, struct lock_table **result,
              struct err *err)
{
    int dfd = lock_dir_flock(file);
    if (dfd < 0) {
        err_fileline(err, file, 0, "cannot lock its folder: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    struct lock_table *cur = lock_read_st(file, 1, &st, err), *next = NULL;
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
            err_fileline(err, file, 0, "cannot write: %s", strerror(errno));
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
        lock_entry_cleanup(&upd[i]);
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
int lock_store_put(const char *store, const struct skill *k, const struct lock_manifest *m,
              struct err *why)
{
    char kdir[SKILL_DIR_MAX];
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/blobs", store);
    if (mkdir_p(path, 0755) < 0) {
        err_set(why, 0, 0, "the store's blobs folder cannot be created");
        return -1;
    }
    snprintf(path, sizeof path, "%s/manifests", store);
    if (mkdir_p(path, 0755) < 0) {
        err_set(why, 0, 0, "the store's manifests folder cannot be created");
        return -1;
    }
    for (size_t i = 0; i < m->n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/blobs/%s", store, m->files[i].digest + 7);
        if (stat(path, &st) == 0)
            continue;
        struct jail_file f;
        if (jail_read(skills_dir(k, kdir), m->files[i].path, (size_t)m->files[i].size + 1, &f,
                      why) < 0)
            return -1;
        char d[MANIFEST_DIGEST_LEN + 1];
        manifest_sha256(f.data, f.len, d);
        int ok = !strcmp(d, m->files[i].digest) &&
                 replace_file(path, f.data, f.len, 0444) == 0;
        jail_file_cleanup(&f);
        if (!ok) {
            err_set(why, 0, 0, "a file changed while it was being stored, or the store "
                               "cannot be written");
            return -1;
        }
    }
    struct buf b;
    buf_init(&b, (size_t)1 << 30);
    for (size_t i = 0; i < m->n; i++)
        lock_file_line(&b, &m->files[i]);
    snprintf(path, sizeof path, "%s/manifests/%s", store, m->digest + 7);
    int rc = replace_file(path, b.p ? b.p : "", b.len, 0444);
    buf_cleanup(&b);
    if (rc < 0)
        err_set(why, 0, 0, "the store's manifest cannot be written");
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
int lock_rm_tree(const char *path)
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
        lock_rm_tree(p);
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
int lock_store_tree(const char *store, const struct lock_entry *e, char *out, size_t outlen)
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
    lock_rm_tree(tmp);
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
        lock_rm_tree(tmp);
 return stat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
    }
    return 0;
fail:
    lock_rm_tree(tmp);
    return -1;
}
