/*
 * reloadable.c - see reloadable.h.
 */
#include "reloadable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct reloadable_retired {
    void *set;
    struct reloadable_retired *next;
};

void reloadable_init(struct reloadable *r, const struct reloadable_kind *k, void *ctx,
                     const char *file, void *set, const struct stat *st)
{
    memset(r, 0, sizeof *r);
    r->kind = k;
    r->ctx = ctx;
    r->file = file ? xstrdup(file) : NULL;
    if (st)
        r->seen = *st;
    pthread_mutex_init(&r->mu, NULL);
    atomic_init(&r->cur, set);
}

int reloadable_same_file(const struct stat *x, const struct stat *y)
{
    /* ctime too: an edit whose old mtime is put back (touch -d, rsync -t)
     * keeps inode, size and mtime, and is still another version. */
    return x->st_ino == y->st_ino && x->st_dev == y->st_dev && x->st_size == y->st_size &&
           x->st_mtim.tv_sec == y->st_mtim.tv_sec && x->st_mtim.tv_nsec == y->st_mtim.tv_nsec &&
           x->st_ctim.tv_sec == y->st_ctim.tv_sec && x->st_ctim.tv_nsec == y->st_ctim.tv_nsec;
}

int reloadable_reload(struct reloadable *r, int force)
{
    if (!r || !r->file)
        return 0;
    const struct reloadable_kind *k = r->kind;
    struct stat now;
    pthread_mutex_lock(&r->mu);
    /* A vanished file has the zero identity: reported once, like a bad version. */
    if (stat(r->file, &now) < 0)
        memset(&now, 0, sizeof now);
    if (!force && reloadable_same_file(&now, &r->seen)) {
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    struct err err = {0};
    struct stat st = now;
    void *set = k->load(r->ctx, r->file, &st, &err);
    /* The identity of the bytes read (fstat on their descriptor), not of
     * what stat saw a moment before: if the file was replaced in between,
     * the next check compares against the version actually judged. */
    r->seen = st;
    /* Only this thread stores cur, under mu: a relaxed load suffices. */
    void *old = atomic_load_explicit(&r->cur, memory_order_relaxed);
    int rc;
    if (set && old && k->same && k->same(old, set)) {
        k->free(set);
        log_debug("%s: unchanged, %zu %s kept", r->file, k->count(old), k->unit);
        rc = 0;
    } else if (!set) {
        log_error("%s not reloaded, keeping the %zu %s: %s", k->what, k->count(old), k->kept,
                  err.msg);
        rc = -1;
    } else {
        /* Requests and runs in flight may still hold the old set. */
        struct reloadable_retired *ret = xmalloc(sizeof *ret);
        ret->set = old;
        ret->next = r->retired;
        r->retired = ret;
        atomic_store_explicit(&r->cur, set, memory_order_release);
        log_info("%s: %zu %s loaded", r->file, k->count(set), k->unit);
        rc = 1;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void reloadable_fini(struct reloadable *r)
{
    if (!r || !r->kind)
        return;
    r->kind->free(atomic_load(&r->cur));
    while (r->retired) {
        struct reloadable_retired *ret = r->retired;
        r->retired = ret->next;
        r->kind->free(ret->set);
        free(ret);
    }
    pthread_mutex_destroy(&r->mu);
    free(r->file);
    r->kind = NULL;
}

char *reloadable_read(const char *file, size_t max, const char *noun, struct stat *st,
                      size_t *n, struct err *err)
{
    int fd = x_open_regular(AT_FDCWD, file, st);
    if (fd < 0) {
        if (fd == -EINVAL)
            err_fileline(err, file, 0, "%s is not a regular file", noun);
        else
            err_fileline(err, file, 0, "cannot read %s: %s", noun, strerror(-fd));
        return NULL;
    }
    /* One byte past max tells a file at the cap from one over it. */
    char *text = xmalloc(max + 1);
    size_t got = x_pread_full(fd, text, max + 1);
    close(fd);
    if (got > max) {
        err_fileline(err, file, 0, "%s is over %zu bytes", noun, max);
    } else if (got < (size_t)st->st_size) {
        /* an error, or the file cut short while it was read: the next
         * check sees another identity and reads it again */
        err_fileline(err, file, 0, "cannot read %s: %zu of %lld bytes read", noun, got,
                     (long long)st->st_size);
    } else {
        text[got] = '\0';
        *n = got;
        return text;
    }
    free(text);
    return NULL;
}
