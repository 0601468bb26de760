/*
 * notify.c - the list-change broadcaster (see notify.h).
 *
 * One mutex guards the listener list and every listener's pending state.
 * The publisher computes the changed URIs before taking it, then only ORs
 * flags, adds URIs to small sets and calls wake(); rendering happens in
 * notify_drain() on the listener's own thread, outside the lock, so a slow
 * or stuck reader costs the publisher nothing.
 */
#include "notify.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "envelope.h"
#include "session.h"
#include "skills.h"
#include "util.h"

struct notify_listener {
    struct notify_listener *next;
    char *key;
    unsigned kinds;
    struct session_table *sessions;
    char *session, *client;
    char **uris;
    size_t nuris;
    json_t *sub_id;
    struct acl *acl;            /* --acl: whose view filters resources/updated */
    char *who_client, *who_groups, *who_sub, *who_scopes;
    notify_wake_fn wake;
    void *arg;
    /* pending, guarded by mu */
    unsigned pending;
    char **upd;                 /* subscribed URIs with a change not yet sent */
    size_t nupd, capupd;
    int ended;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct notify_listener *head;
static size_t count;

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

struct notify_listener *notify_listen(const struct notify_listen_opts *o, struct err *why)
{
    const char *key = o->key ? o->key : "";
    pthread_mutex_lock(&mu);
    size_t same = 0;
    for (struct notify_listener *l = head; l; l = l->next) {
        same += !strcmp(l->key, key);
        if (o->exclusive && o->session && l->session && !l->ended &&
            !strcmp(l->session, o->session)) {
            pthread_mutex_unlock(&mu);
            err_set(why, 0, 0, "this session already has its GET stream open (one per "
                               "session)");
            errno = EEXIST;
            return NULL;
        }
    }
    if (count >= NOTIFY_MAX || same >= NOTIFY_PER_KEY) {
        pthread_mutex_unlock(&mu);
        errno = EMFILE;
        if (count >= NOTIFY_MAX)
            err_set(why, 0, 0, "the server has %d notification streams open, its limit; "
                               "retry later", NOTIFY_MAX);
        else
            err_set(why, 0, 0, "this client already has %d notification streams open, its "
                               "limit; close one first", NOTIFY_PER_KEY);
        return NULL;
    }
    struct notify_listener *l = xcalloc(1, sizeof *l);
    l->key = xstrdup(key);
    l->kinds = o->kinds;
    l->sessions = o->sessions;
    l->session = dup_or_null(o->session);
    l->client = dup_or_null(o->client);
    if (o->nuris) {
        l->uris = xcalloc(o->nuris, sizeof *l->uris);
        for (size_t i = 0; i < o->nuris; i++)
            l->uris[l->nuris++] = xstrdup(o->uris[i]);
    }
    l->sub_id = o->subscription_id ? json_deep_copy(o->subscription_id) : NULL;
    l->acl = o->acl;
    l->who_client = dup_or_null(o->who.client);
    l->who_groups = dup_or_null(o->who.groups);
    l->who_sub = dup_or_null(o->who.sub);
    l->who_scopes = dup_or_null(o->who.scopes);
    l->wake = o->wake;
    l->arg = o->arg;
    l->next = head;
    head = l;
    count++;
    pthread_mutex_unlock(&mu);
    return l;
}

static void listener_free(struct notify_listener *l)
{
    for (size_t i = 0; i < l->nuris; i++)
        free(l->uris[i]);
    for (size_t i = 0; i < l->nupd; i++)
        free(l->upd[i]);
    free(l->uris);
    free(l->upd);
    free(l->key);
    free(l->session);
    free(l->client);
    json_decref(l->sub_id);
    free(l->who_client);
    free(l->who_groups);
    free(l->who_sub);
    free(l->who_scopes);
    free(l);
}

void notify_unlisten(struct notify_listener *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&mu);
    for (struct notify_listener **pp = &head; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            count--;
            break;
        }
    pthread_mutex_unlock(&mu);
    listener_free(l);
}

int notify_session_listening(const char *session)
{
    int found = 0;
    pthread_mutex_lock(&mu);
    for (struct notify_listener *l = head; l && !found; l = l->next)
        found = l->session && !l->ended && !strcmp(l->session, session);
    pthread_mutex_unlock(&mu);
    return found;
}

size_t notify_count(void)
{
    pthread_mutex_lock(&mu);
    size_t n = count;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ---- what changed ----------------------------------------------------------- */

/* A changed URI and the skill it belongs to (borrowed from the snapshots
 * compared, so valid while they are), so that a listener is told only of
 * what its caller may see. */
struct change {
    char *uri;
    const char *qname;
};

static void uri_add(struct change **v, size_t *n, size_t *cap, const struct skill *k,
                    const char *rel)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[*n].qname = k->qname;
    (*v)[(*n)++].uri = skills_uri(k, rel);
}

static void all_files(struct change **v, size_t *n, size_t *cap, const struct skill *k)
{
    uri_add(v, n, cap, k, "SKILL.md");
    for (size_t i = 0; i < k->nfiles; i++)
        uri_add(v, n, cap, k, k->files[i].path);
}

static int fkey_same(const struct fkey *a, const struct fkey *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->mtime_ns == b->mtime_ns &&
           a->size == b->size;
}

/* Two versions of one skill: the files whose presence, size or mtime moved, and
 * SKILL.md when its identity moved (or when nothing else explains why the
 * entry was rebuilt, since its readers will see something new). */
static void skill_diff(struct change **v, size_t *n, size_t *cap, const struct skill *a,
                       const struct skill *b)
{
    size_t before = *n, i = 0, j = 0;
    int md = !fkey_same(&a->md_key, &b->md_key);
    if (md)
        uri_add(v, n, cap, b, "SKILL.md");
    while (i < a->nfiles || j < b->nfiles) {
        int c = i == a->nfiles   ? 1
                : j == b->nfiles ? -1
                                 : strcmp(a->files[i].path, b->files[j].path);
        if (c < 0) {
            uri_add(v, n, cap, a, a->files[i++].path);
        } else if (c > 0) {
            uri_add(v, n, cap, b, b->files[j++].path);
        } else {
            if (a->files[i].size != b->files[j].size ||
                a->files[i].mtime_ns != b->files[j].mtime_ns)
                uri_add(v, n, cap, b, b->files[j].path);
            i++;
            j++;
        }
    }
    if (*n == before)
        uri_add(v, n, cap, b, "SKILL.md");
}

static int cmp_change(const void *x, const void *y)
{
    return strcmp(((const struct change *)x)->uri, ((const struct change *)y)->uri);
}

static size_t diff_changes(const struct snapshot *a, const struct snapshot *b,
                           struct change **out)
{
    struct change *v = NULL;
    size_t n = 0, cap = 0, i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i]->qname, b->v[j]->qname);
        if (c < 0) {
            all_files(&v, &n, &cap, a->v[i++]);
        } else if (c > 0) {
            all_files(&v, &n, &cap, b->v[j++]);
        } else {
            /* an entry whose files did not move is carried over as is */
            if (a->v[i] != b->v[j])
                skill_diff(&v, &n, &cap, a->v[i], b->v[j]);
            i++;
            j++;
        }
    }
    if (n > 1) {
        qsort(v, n, sizeof *v, cmp_change);
        size_t k = 1;
        for (size_t m = 1; m < n; m++) {
            if (strcmp(v[m].uri, v[k - 1].uri))
                v[k++] = v[m];
            else
                free(v[m].uri);
        }
        n = k;
    }
    *out = v;
    return n;
}

size_t notify_diff(const struct snapshot *a, const struct snapshot *b, char ***out)
{
    struct change *c;
    size_t n = diff_changes(a, b, &c);
    char **v = n ? xcalloc(n, sizeof *v) : NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = c[i].uri;
    free(c);
    *out = v;
    return n;
}

void notify_uris_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int notify_covers(const char *sub, const char *uri)
{
    size_t n = strlen(sub);
    while (n > 8 && sub[n - 1] == '/')
        n--;
    return !strncmp(sub, uri, n) && (uri[n] == '\0' || uri[n] == '/');
}

/* ---- publishing ------------------------------------------------------------- */

/* Is any changed URI the caller may see covered by sub? (see NULL: all) */
static int any_covered(const char *sub, const struct change *changed, size_t nchanged,
                       const unsigned char *see)
{
    for (size_t i = 0; i < nchanged; i++)
        if ((!see || see[i]) && notify_covers(sub, changed[i].uri))
            return 1;
    return 0;
}

static void pend_uri(struct notify_listener *l, const char *uri)
{
    for (size_t i = 0; i < l->nupd; i++)
        if (!strcmp(l->upd[i], uri))
            return;     /* still unsent from an earlier generation: one is enough */
    if (l->nupd == l->capupd) {
        l->capupd = l->capupd ? l->capupd * 2 : 4;
        l->upd = xrealloc(l->upd, l->capupd * sizeof *l->upd);
    }
    l->upd[l->nupd++] = xstrdup(uri);
}

/*
 * What one caller class (one view under --acl) sees of a generation's
 * changes, worked out once per class however many listeners share it:
 * which changed URIs it may see, and whether anything it lists moved.
 */
struct class_seen {
    const struct acl_class *cls;
    unsigned char *see;     /* per changed URI */
    int any;
};

struct seen_cache {
    struct class_seen *v;
    size_t n, cap;
};

static const struct class_seen *seen_by(struct seen_cache *sc, const struct acl_class *cls,
                                        const struct change *changed, size_t nchanged)
{
    for (size_t i = 0; i < sc->n; i++)
        if (sc->v[i].cls == cls)
            return &sc->v[i];
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 4;
        sc->v = xrealloc(sc->v, sc->cap * sizeof *sc->v);
    }
    struct class_seen *x = &sc->v[sc->n++];
    x->cls = cls;
    x->see = nchanged ? xcalloc(nchanged, 1) : NULL;
    /* a generation that moved for no skill (its problems, a lock's
     * judgement) is still worth a re-list for everyone */
    x->any = !nchanged;
    for (size_t i = 0; i < nchanged; i++) {
        /* a skill's URIs are adjacent (sorted): one rule check per skill */
        if (i && !strcmp(changed[i].qname, changed[i - 1].qname))
            x->see[i] = x->see[i - 1];
        else
            x->see[i] = (unsigned char)acl_class_sees(cls, changed[i].qname);
        x->any |= x->see[i];
    }
    return x;
}

static void seen_free(struct seen_cache *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->v[i].see);
    free(sc->v);
}

struct sess_ctx {
    struct notify_listener *l;
    const struct change *changed;
    size_t nchanged;
    const unsigned char *see;
};

static void sess_sub(const char *uri, const char *key, void *arg)
{
    struct sess_ctx *x = arg;
    if (any_covered(key, x->changed, x->nchanged, x->see))
        pend_uri(x->l, uri);
}

void notify_publish(const struct snapshot *prev, const struct snapshot *next)
{
    pthread_mutex_lock(&mu);
    int none = !head;
    pthread_mutex_unlock(&mu);
    if (none)
        return;
    struct change *changed;
    size_t nchanged = diff_changes(prev, next, &changed);
    struct seen_cache sc = {0};
    pthread_mutex_lock(&mu);
    for (struct notify_listener *l = head; l; l = l->next) {
        unsigned was = l->pending;
        size_t had = l->nupd;
        /* Under the rules in force now, not those of when it listened: a
         * skill hidden since then is gone for this caller, and a change
         * to a skill it cannot see changes none of its lists. */
        const unsigned char *mask = NULL;
        int lists_moved = 1;
        if (l->acl) {
            const struct class_seen *x = seen_by(
                &sc,
                acl_classify(l->acl, &(struct acl_who){l->who_client, l->who_groups, l->who_sub,
                                                       l->who_scopes}),
                changed, nchanged);
            mask = x->see;
            lists_moved = x->any;
        }
        if (lists_moved)
            l->pending |= l->kinds & (NOTIFY_RES_LIST | NOTIFY_PROMPT_LIST);
        if ((l->kinds & NOTIFY_UPDATED) && nchanged) {
            for (size_t i = 0; i < l->nuris; i++)
                if (any_covered(l->uris[i], changed, nchanged, mask))
                    pend_uri(l, l->uris[i]);
            if (l->sessions && l->session) {
                struct sess_ctx x = {l, changed, nchanged, mask};
                session_subs_each(l->sessions, l->session, l->client, sess_sub, &x);
            }
        }
        if ((l->pending != was || l->nupd != had) && l->wake)
            l->wake(l->arg);
    }
    pthread_mutex_unlock(&mu);
    seen_free(&sc);
    for (size_t i = 0; i < nchanged; i++)
        free(changed[i].uri);
    free(changed);
}

void notify_rules_changed(void)
{
    /* A reloaded rule set may widen or narrow any caller's view, and telling
     * each listener what moved would mean judging every view twice: every
     * listener under rules re-lists instead (its lists may have changed). */
    pthread_mutex_lock(&mu);
    for (struct notify_listener *l = head; l; l = l->next) {
        unsigned was = l->pending;
        if (l->acl)
            l->pending |= l->kinds & (NOTIFY_RES_LIST | NOTIFY_PROMPT_LIST);
        if (l->pending != was && l->wake)
            l->wake(l->arg);
    }
    pthread_mutex_unlock(&mu);
}

static void end_where(const char *session)
{
    pthread_mutex_lock(&mu);
    for (struct notify_listener *l = head; l; l = l->next)
        if (!session || (l->session && !strcmp(l->session, session))) {
            l->ended = 1;
            if (l->wake)
                l->wake(l->arg);
        }
    pthread_mutex_unlock(&mu);
}

void notify_end_session(const char *session)
{
    if (session)
        end_where(session);
}

void notify_end_all(void)
{
    end_where(NULL);
}

/* ---- delivery --------------------------------------------------------------- */

static void emit(struct notify_listener *l, const char *method, json_t *params,
                 notify_sink_fn sink, void *arg)
{
    if (!params)
        params = json_object();
    if (l->sub_id)
        json_object_set_new(params, "_meta",
                            json_pack("{s:O}", "io.modelcontextprotocol/subscriptionId",
                                      l->sub_id));
    json_t *note = env_notification(method, params);
    char *s = json_dumps(note, JSON_COMPACT);
    json_decref(note);
    if (s)
        sink(s, strlen(s), arg);
    free(s);
}

int notify_drain(struct notify_listener *l, notify_sink_fn sink, void *arg)
{
    pthread_mutex_lock(&mu);
    if (l->ended) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    unsigned pending = l->pending;
    char **upd = l->upd;
    size_t nupd = l->nupd;
    l->pending = 0;
    l->upd = NULL;
    l->nupd = l->capupd = 0;
    pthread_mutex_unlock(&mu);

    int sent = 0;
    if (pending & NOTIFY_RES_LIST) {
        emit(l, "notifications/resources/list_changed", NULL, sink, arg);
        sent++;
    }
    if (pending & NOTIFY_PROMPT_LIST) {
        emit(l, "notifications/prompts/list_changed", NULL, sink, arg);
        sent++;
    }
    for (size_t i = 0; i < nupd; i++) {
        emit(l, "notifications/resources/updated", json_pack("{s:s}", "uri", upd[i]), sink, arg);
        sent++;
    }
    notify_uris_free(upd, nupd);
    return sent;
}
