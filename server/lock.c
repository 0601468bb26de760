/*
 * lock.c - see lock.h. The lock records approved versions; the snapshot
 * builder asks lock_gate() to judge every entry, so the read path only
 * looks at a flag the snapshot already carries.
 */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "lockstore.h"
#include "reloadable.h"
#include "skills.h"
#include "util.h"

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
        struct lock_table *t = lock_read_st(L->file, 1, &st, err);
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
    if (!force && reloadable_same_file(&st, &L->seen)) {
        pthread_mutex_unlock(&L->mu);
        return 0;
    }
    struct err e = {0};
    struct lock_table *t = lock_read_st(L->file, 1, &st, &e);
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
            lock_entry_copy(&(*upd)[(*n)++], &p->v[i]);
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
            if (lock_store_tree(L->store, e, tree, sizeof tree) == 0)
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

void *lock_gate(struct snapshot *s, void *arg)
{
    struct lock *L = arg;
    if (!lock_active(L))
        return NULL;
    pthread_mutex_lock(&L->mu);
    struct lock_table *t = atomic_load(&L->cur);
    lock_table_ref(t);
    pthread_mutex_unlock(&L->mu);
    s->gate = xcalloc(s->n ? s->n : 1, sizeof *s->gate);
    struct lock_manifest *ms = xcalloc(s->n ? s->n : 1, sizeof *ms);
    char *ok = xcalloc(s->n ? s->n : 1, 1);
    struct pin_arg pin = {xcalloc(s->n ? s->n : 1, sizeof *pin.v), 0};
    char at[LOCK_TIME_LEN + 1];
    lock_iso_now(at);
    for (size_t i = 0; i < s->n; i++) {
 struct err why;
 ok[i] = lock_manifest_of(s->v[i], &ms[i], &why) == 0;
 if (ok[i])
            memcpy(s->gate[i].digest, ms[i].digest, sizeof ms[i].digest);
        if (judge(L, s, i, t, ok[i] ? &ms[i] : NULL, ok[i] ? "" : why.msg)) {
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
                struct err why;
                if (ok[i] && s->gate[i].approved && !s->gate[i].reason &&
                    lock_store_put(L->store, s->v[i], &ms[i], &why) < 0)
                    log_warn("store: %s not stored: %s", s->v[i]->qname, why.msg);
            }
    }
    for (size_t i = 0; i < s->n; i++)
        lock_manifest_cleanup(&ms[i]);
    free(ms);
    free(ok);
    free(pin.v);
    return t;
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
