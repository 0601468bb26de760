/*
 * auth.c - see auth.h.
 *
 * Two halves:
 *   - the token table, private to each process: an immutable array of
 *     {id, digest, rpm, slot} with a small hash index by id, swapped as a
 *     whole on reload;
 *   - the shared state, one MAP_SHARED mapping made before fork: a fixed
 *     open-addressed table of AUTH_MAX_CLIENTS slots keyed by client id, each
 *     holding the client's token bucket and script counters. Slots are never
 *     removed, so a slot index stays valid for the life of the server, and a
 *     client's bucket survives reloads (editing rpm does not refill it).
 *
 * Locks in the shared mapping are process-shared robust mutexes: a worker
 * that dies holding one does not wedge the others.
 */
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "config.h"
#include "oauth.h"
#include "reloadable.h"
#include "util.h"

#define DIGEST_LEN 32
#define LINE_MAX_LEN 1024

/* ---- shared state -------------------------------------------------------- */

struct auth_slot {
    pthread_mutex_t mu;             /* guards the bucket and script counts */
    atomic_int used;                /* 1 once name is written (release) */
    atomic_int oauth;               /* 1 once an OAuth token named this client */
    char name[AUTH_MAX_ID + 1];
    int bucket_init;
    double tokens;
    uint64_t last_ns;
    int held[AUTH_MAX_WORKERS];     /* scripts running, per worker */
};

struct auth_shared {
    pthread_mutex_t mu;             /* guards slot insertion */
    atomic_int script_cap;
    int nused;
    struct auth_slot slots[AUTH_MAX_CLIENTS];
};

static void robust_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &at);
    pthread_mutexattr_destroy(&at);
}

static void robust_lock(pthread_mutex_t *m)
{
    if (pthread_mutex_lock(m) == EOWNERDEAD)
        pthread_mutex_consistent(m);    /* the state is numbers: still usable */
}

/* The slot of name, inserting it when absent; -1 when the table is full. */
static int slot_get(struct auth_shared *sh, const char *name)
{
    uint32_t i = hash_fnv1a32(name, strlen(name)) % AUTH_MAX_CLIENTS;
    robust_lock(&sh->mu);
    int r = -1;
    for (int n = 0; n < AUTH_MAX_CLIENTS; n++, i = (i + 1) % AUTH_MAX_CLIENTS) {
        struct auth_slot *s = &sh->slots[i];
        if (atomic_load_explicit(&s->used, memory_order_acquire)) {
            if (!strcmp(s->name, name)) {
                r = (int)i;
                break;
            }
            continue;
        }
        if (sh->nused >= AUTH_MAX_CLIENTS - 1)   /* keep one hole: probes end */
            break;
        snprintf(s->name, sizeof s->name, "%s", name);
        atomic_store_explicit(&s->used, 1, memory_order_release);
        sh->nused++;
        r = (int)i;
        break;
    }
    pthread_mutex_unlock(&sh->mu);
    return r;
}

/* ---- the token table ----------------------------------------------------- */

struct auth_entry {
    char *id;
    char *groups;                   /* "groups=" field: comma-separated, or NULL */
    unsigned char digest[DIGEST_LEN];
    int rpm;
    int slot;
    int line;
};

struct auth_table {
    struct auth_entry *e;
    int n;
    int *index;                     /* entry + 1, open addressing; nindex a power of 2 */
    uint32_t nindex;
};

struct auth {
    struct reloadable rl;           /* of struct auth_table; process-local */
    struct auth_shared *sh;
    int worker;
    struct oauth *oauth;            /* --oauth-issuer, or NULL */
    int oauth_rpm;                  /* each OAuth client id's rate (0: none) */
};

static void table_free(struct auth_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        free(t->e[i].id);
        free(t->e[i].groups);
    }
    free(t->e);
    free(t->index);
    free(t);
}

static const struct auth_entry *table_find(const struct auth_table *t, const char *id)
{
    if (!t || !id || !t->nindex)
        return NULL;
    uint32_t m = t->nindex - 1;
    for (uint32_t i = hash_fnv1a32(id, strlen(id)) & m;; i = (i + 1) & m) {
        int k = t->index[i];
        if (!k)
            return NULL;
        if (!strcmp(t->e[k - 1].id, id))
            return &t->e[k - 1];
    }
}

static int id_valid(const char *s, size_t n)
{
    if (n == 0 || n > AUTH_MAX_ID)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-' && c != '@')
            return 0;
    }
    return 1;
}

/* Splits line into at most 4 whitespace-separated fields; '#' starts a comment. */
static int split_fields(char *line, char **f, size_t *flen)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p || *p == '#')
            return n;
        if (n == 4)
            return n + 1;
        f[n] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#')
            p++;
        flen[n] = (size_t)(p - f[n]);
        n++;
    }
}

/* Parses one non-empty line into *e. Returns 0 or -1 with *err set. */
static int parse_line(char *line, int lineno, const char *file, struct auth_entry *e,
                      struct err *err)
{
    char *f[4];
    size_t fl[4];
    int n = split_fields(line, f, fl);
    if (n == 0)
        return 1;   /* blank or comment */
    if (n < 2) {
        err_fileline(err, file, lineno, "missing field: expected \"client_id sha256hex [rpm] "
                     "[groups=LIST]\"");
        return -1;
    }
    /* The last field may be groups=a,b (any position after the hash). */
    const char *groups = NULL;
    size_t glen = 0;
    if (n >= 3 && n <= 4 && fl[n - 1] >= 7 && !strncmp(f[n - 1], "groups=", 7)) {
        groups = f[n - 1] + 7;
        glen = fl[n - 1] - 7;
        n--;
        for (size_t i = 0, start = 0; i <= glen; i++) {
            if (i < glen && groups[i] != ',')
                continue;
            if (i == start || !id_valid(groups + start, i - start)) {
                err_fileline(err, file, lineno, "groups \"%.*s\": a comma-separated list of "
                             "names of 1-%d characters of A-Z a-z 0-9 . _ - @",
                             (int)(glen > 64 ? 64 : glen), groups, AUTH_MAX_ID);
                return -1;
            }
            start = i + 1;
        }
    }
    if (n > 3) {
        err_fileline(err, file, lineno, "too many fields: expected \"client_id sha256hex [rpm] "
                     "[groups=LIST]\"");
        return -1;
    }
    if (!id_valid(f[0], fl[0])) {
        err_fileline(err, file, lineno, "invalid client id \"%.*s\": 1-%d characters of "
                     "A-Z a-z 0-9 . _ - @", (int)(fl[0] > 64 ? 64 : fl[0]), f[0],
                     AUTH_MAX_ID);
        return -1;
    }
    if (fl[1] != 2 * DIGEST_LEN) {
        err_fileline(err, file, lineno, "the token hash must be 64 hex digits (SHA-256), "
                     "got %zu characters", fl[1]);
        return -1;
    }
    if (hex_decode(f[1], 2 * DIGEST_LEN, e->digest) < 0) {
        err_fileline(err, file, lineno, "the token hash is not hexadecimal");
        return -1;
    }
    e->rpm = 0;
    if (n == 3) {
        long v = 0;
        int ok = fl[2] > 0 && fl[2] <= 7;
        for (size_t i = 0; ok && i < fl[2]; i++) {
            if (f[2][i] < '0' || f[2][i] > '9')
                ok = 0;
            else
                v = v * 10 + (f[2][i] - '0');
        }
        if (!ok || v > AUTH_MAX_RPM) {
            err_fileline(err, file, lineno, "rpm \"%.*s\" is not a whole number from 0 to %d",
                         (int)(fl[2] > 32 ? 32 : fl[2]), f[2], AUTH_MAX_RPM);
            return -1;
        }
        e->rpm = (int)v;
    }
    e->id = xstrndup(f[0], fl[0]);
    e->groups = groups ? xstrndup(groups, glen) : NULL;
    e->line = lineno;
    return 0;
}

/* Reads and parses the open file fp into a new table (slots not assigned). */
static struct auth_table *table_read(FILE *fp, const char *file, struct err *err)
{
    struct auth_table *t = xcalloc(1, sizeof *t);
    int cap = 0;
    char line[LINE_MAX_LEN + 2];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(fp)) {
            err_fileline(err, file, lineno, "line longer than %d bytes",
                         LINE_MAX_LEN);
            goto fail;
        }
        struct auth_entry e;
        memset(&e, 0, sizeof e);
        int r = parse_line(line, lineno, file, &e, err);
        if (r < 0)
            goto fail;
        if (r > 0)
            continue;
        for (int i = 0; i < t->n; i++) {
            const char *why = !strcmp(t->e[i].id, e.id) ? "duplicate client id"
                              : !CRYPTO_memcmp(t->e[i].digest, e.digest, DIGEST_LEN)
                              ? "same token hash as client" : NULL;
            if (why) {
                err_fileline(err, file, lineno, "%s \"%s\" (line %d)", why,
                             t->e[i].id, t->e[i].line);
                free(e.id);
                free(e.groups);
                goto fail;
            }
        }
        if (t->n == AUTH_MAX_CLIENTS) {
            err_fileline(err, file, lineno, "more than %d clients",
                         AUTH_MAX_CLIENTS);
            free(e.id);
            free(e.groups);
            goto fail;
        }
        if (t->n == cap) {
            cap = cap ? cap * 2 : 16;
            t->e = xrealloc(t->e, (size_t)cap * sizeof *t->e);
        }
        t->e[t->n++] = e;
    }
    if (ferror(fp)) {
        err_fileline(err, file, 0, "read error: %s", strerror(errno));
        goto fail;
    }
    t->nindex = 16;
    while (t->nindex < (uint32_t)t->n * 2)
        t->nindex *= 2;
    t->index = xcalloc(t->nindex, sizeof *t->index);
    for (int k = 0; k < t->n; k++) {
        uint32_t m = t->nindex - 1, i = hash_fnv1a32(t->e[k].id, strlen(t->e[k].id)) & m;
        while (t->index[i])
            i = (i + 1) & m;
        t->index[i] = k + 1;
    }
    return t;
fail:
    table_free(t);
    return NULL;
}

/* Opens, stats and reads file. On success *st holds the identity read. */
static struct auth_table *table_load(const char *file, struct stat *st, struct err *err)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_fileline(err, file, 0, "cannot open the token file: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
        err_fileline(err, file, 0, "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        err_fileline(err, file, 0, "%s", strerror(errno));
        return NULL;
    }
    struct auth_table *t = table_read(fp, file, err);
    fclose(fp);
    if (t && (st->st_mode & S_IWOTH))
        log_warn("%s: the token file is world-writable: anyone can add a client", file);
    return t;
}

static int table_assign_slots(struct auth_table *t, struct auth_shared *sh, const char *file,
                              struct err *err)
{
    for (int i = 0; i < t->n; i++) {
        t->e[i].slot = slot_get(sh, t->e[i].id);
        if (t->e[i].slot < 0) {
            err_fileline(err, file, t->e[i].line, "no room for client \"%s\": at most %d "
                         "distinct client ids over the server's life (restart to reclaim)",
                         t->e[i].id, AUTH_MAX_CLIENTS - 1);
            return -1;
        }
    }
    return 0;
}

static void *reload_load(void *ctx, const char *file, struct stat *st, struct err *err)
{
    struct auth *a = ctx;
    struct auth_table *t = table_load(file, st, err);
    if (t && table_assign_slots(t, a->sh, file, err)) {
        table_free(t);
        t = NULL;
    }
    return t;
}

static void reload_free(void *t)
{
    table_free(t);
}

static size_t reload_count(const void *t)
{
    return (size_t)((const struct auth_table *)t)->n;
}

/* bearer() hands out ids that point into a replaced table */
static const struct reloadable_kind kind = {
    .what = "token file", .kept = "client(s) loaded", .unit = "client(s)",
    .load = reload_load, .free = reload_free, .count = reload_count,
};

struct auth *auth_load(const char *file, struct err *err)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    /* No file: OAuth alone; the table stays empty. */
    struct auth_table *t = file ? table_load(file, &st, err) : xcalloc(1, sizeof *t);
    if (!t)
        return NULL;
    struct auth *a = xcalloc(1, sizeof *a);
    a->sh = x_shared_alloc(sizeof *a->sh);
    robust_init(&a->sh->mu);
    for (int i = 0; i < AUTH_MAX_CLIENTS; i++)
        robust_init(&a->sh->slots[i].mu);
    if (table_assign_slots(t, a->sh, file, err)) {
        table_free(t);
        auth_free(a);
        return NULL;
    }
    reloadable_init(&a->rl, &kind, a, file, t, &st);
    if (file && t->n == 0)
        log_warn("%s: no client in the token file: every request will be refused", file);
    return a;
}

void auth_free(struct auth *a)
{
    if (!a)
        return;
    oauth_free(a->oauth);
    reloadable_fini(&a->rl);
    x_shared_free(a->sh, sizeof *a->sh);
    free(a);
}

int auth_reload(struct auth *a, int force)
{
    return a ? reloadable_reload(&a->rl, force) : 0;
}

int auth_count(struct auth *a)
{
    return a ? ((const struct auth_table *)reloadable_cur(&a->rl))->n : 0;
}

/* ---- checking a token ------------------------------------------------------ */

static int sha256(const void *data, size_t n, unsigned char out[DIGEST_LEN])
{
    unsigned int len = 0;
    return EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) == 1 && len == DIGEST_LEN ? 0 : -1;
}

static int token68_char(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

/* The token of "Bearer <token>" (RFC 6750 token68), or NULL. */
static const char *bearer(const char *authorization, size_t max, size_t *len)
{
    const char *p = authorization;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "Bearer", 6) || (p[6] != ' ' && p[6] != '\t'))
        return NULL;
    p += 6;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = 0;
    while (token68_char((unsigned char)p[n]))
        n++;
    while (p[n] == '=')
        n++;
    size_t end = n;
    while (p[end] == ' ' || p[end] == '\t')
        end++;
    if (n == 0 || n > max || p[end] != '\0')
        return NULL;
    *len = n;
    return p;
}

static const struct auth_entry *static_match(struct auth *a, const char *p, size_t n)
{
    if (n > AUTH_MAX_TOKEN)
        return NULL;
    unsigned char d[DIGEST_LEN];
    if (sha256(p, n, d))
        return NULL;
    const struct auth_table *t = reloadable_cur(&a->rl);
    /* Every entry is compared; the match is selected without a branch on it. */
    size_t found = 0;   /* entry + 1 */
    for (int i = 0; i < t->n; i++) {
        size_t eq = (size_t)(CRYPTO_memcmp(t->e[i].digest, d, DIGEST_LEN) == 0);
        size_t mask = (size_t)0 - eq;
        found = (found & ~mask) | (((size_t)i + 1) & mask);
    }
    OPENSSL_cleanse(d, sizeof d);
    return found ? &t->e[found - 1] : NULL;
}

const char *auth_check(struct auth *a, const char *authorization)
{
    size_t n;
    const char *p = a && authorization ? bearer(authorization, AUTH_MAX_TOKEN, &n) : NULL;
    const struct auth_entry *e = p ? static_match(a, p, n) : NULL;
    return e ? e->id : NULL;
}

int auth_oauth_init(struct auth *a, const struct cfg *c, int port, struct err *err)
{
    a->oauth = oauth_new(c, port, err);
    a->oauth_rpm = c->oauth_rpm > 0 ? c->oauth_rpm : 0;
    return a->oauth ? 0 : -1;
}

/* An OAuth client's id, kept for the server's life in its shared slot (the
 * pointer returned stays valid like a token-file id), marked as OAuth so its
 * scripts are counted. NULL when AUTH_MAX_CLIENTS ids are taken. */
static const char *oauth_intern(struct auth *a, const char *id)
{
    int i = slot_get(a->sh, id);
    if (i < 0)
        return NULL;
    atomic_store_explicit(&a->sh->slots[i].oauth, 1, memory_order_release);
    return a->sh->slots[i].name;
}

int auth_verify(struct auth *a, const char *authorization, struct auth_who *w)
{
    memset(w, 0, sizeof *w);
    if (!authorization) {
        snprintf(w->why, sizeof w->why, "Unauthorized: send Authorization: Bearer <token>");
        return AUTH_NO_TOKEN;
    }
    size_t n = 0;
    const char *p = bearer(authorization, a->oauth ? JWT_MAX_LEN : AUTH_MAX_TOKEN, &n);
    const struct auth_entry *e = p ? static_match(a, p, n) : NULL;
    if (e) {
        w->client = e->id;
        if (e->groups)
            snprintf(w->groups, sizeof w->groups, "%s", e->groups);
        return AUTH_OK;
    }
    if (!p || !a->oauth) {
        snprintf(w->why, sizeof w->why, "Unauthorized: the bearer token is not valid");
        return AUTH_INVALID;
    }
    struct oauth_result r;
    enum oauth_verdict v = oauth_verify(a->oauth, p, n, &r);
    if (v == OAUTH_OK || v == OAUTH_SCOPE) {
        w->client = oauth_intern(a, r.client);
        if (!w->client) {
            log_error("oauth: more than %d client ids seen; client \"%s\" refused",
                      AUTH_MAX_CLIENTS, r.client);
            snprintf(w->why, sizeof w->why, "Unauthorized: this server cannot take another "
                     "client id");
            return AUTH_INVALID;
        }
        snprintf(w->groups, sizeof w->groups, "%s", r.groups);
        snprintf(w->sub, sizeof w->sub, "%s", r.sub);
        snprintf(w->scopes, sizeof w->scopes, "%s", r.scopes);
    }
    if (v == OAUTH_OK)
        return AUTH_OK;
    snprintf(w->why, sizeof w->why, "%s: %s", v == OAUTH_SCOPE ? "Forbidden" : "Unauthorized",
             r.why);
    log_debug("oauth: token refused: %s", r.why);
    return v == OAUTH_SCOPE ? AUTH_SCOPE : AUTH_INVALID;
}

const char *auth_challenge(struct auth *a, int verdict)
{
    if (a && a->oauth)
        return oauth_challenge(a->oauth, (enum oauth_verdict)verdict);
    /* error= only when a token was sent (RFC 6750 3.1) */
    return verdict == AUTH_NO_TOKEN ? "Bearer realm=\"skill-mcp\""
                                    : "Bearer realm=\"skill-mcp\", error=\"invalid_token\"";
}

int auth_metadata(struct auth *a, const char *url, char **body, size_t *len)
{
    return a && a->oauth ? oauth_metadata(a->oauth, url, body, len) : -1;
}

/* ---- rate limits ----------------------------------------------------------- */

static int ceil_s(double s)
{
    if (s <= 0)
        return 0;
    double c = ceil(s - 1e-9);
    return c > INT_MAX ? INT_MAX : (int)c;
}

static struct auth_slot *slot_by_name(struct auth *a, const char *client);

int auth_rate_at(struct auth *a, const char *client, uint64_t now, int *limit,
                 int *remaining, int *reset_s)
{
    int lim = 0, rem = 0, reset = 0, wait = 0, rpm = 0;
    const struct auth_entry *e =
        a ? table_find(reloadable_cur(&a->rl), client) : NULL;
    struct auth_slot *s = NULL;
    if (e && e->rpm > 0) {
        s = &a->sh->slots[e->slot];
        rpm = e->rpm;
    } else if (!e && a && a->oauth_rpm > 0 && client) {
        /* An OAuth client: a bucket of its own id, in the slot that keeps
         * the id (a token file's client of that id has the file's rpm). */
        s = slot_by_name(a, client);
        if (s && atomic_load_explicit(&s->oauth, memory_order_acquire))
            rpm = a->oauth_rpm;
        else
            s = NULL;
    }
    if (s) {
        double cap = rpm, per_s = rpm / 60.0;
        lim = rpm;
        robust_lock(&s->mu);
        if (!s->bucket_init) {
            s->bucket_init = 1;
            s->tokens = cap;
            s->last_ns = now;
        } else if (now > s->last_ns) {
            s->tokens += (double)(now - s->last_ns) / 1e9 * per_s;
            s->last_ns = now;
        }
        if (s->tokens > cap)
            s->tokens = cap;
        if (s->tokens >= 1.0)
            s->tokens -= 1.0;
        else {
            wait = ceil_s((1.0 - s->tokens) / per_s);
            if (wait < 1)
                wait = 1;
        }
        double tk = s->tokens;
        pthread_mutex_unlock(&s->mu);
        rem = (int)floor(tk + 1e-9);
        if (rem < 0)
            rem = 0;
        reset = ceil_s((cap - tk) / per_s);
    }
    if (limit)
        *limit = lim;
    if (remaining)
        *remaining = rem;
    if (reset_s)
        *reset_s = reset;
    return wait;
}

int auth_rate(struct auth *a, const char *client, int *limit, int *remaining, int *reset_s)
{
    return auth_rate_at(a, client, now_ns(), limit, remaining, reset_s);
}

/* ---- script slots ---------------------------------------------------------- */

static struct auth_slot *slot_of(struct auth *a, const char *client)
{
    const struct auth_entry *e =
        a ? table_find(reloadable_cur(&a->rl), client) : NULL;
    if (e)
        return &a->sh->slots[e->slot];
    /* An OAuth client is in no table: its slot is found by name. */
    struct auth_slot *s = a && a->oauth && client ? slot_by_name(a, client) : NULL;
    return s && atomic_load_explicit(&s->oauth, memory_order_acquire) ? s : NULL;
}

/* A revoked client's scripts are still given back: find the slot by name. */
static struct auth_slot *slot_by_name(struct auth *a, const char *client)
{
    const struct auth_entry *e =
        a ? table_find(reloadable_cur(&a->rl), client) : NULL;
    if (e)
        return &a->sh->slots[e->slot];
    if (!a || !client)
        return NULL;
    uint32_t i = hash_fnv1a32(client, strlen(client)) % AUTH_MAX_CLIENTS;
    for (int n = 0; n < AUTH_MAX_CLIENTS; n++, i = (i + 1) % AUTH_MAX_CLIENTS) {
        struct auth_slot *t = &a->sh->slots[i];
        if (!atomic_load_explicit(&t->used, memory_order_acquire))
            return NULL;
        if (!strcmp(t->name, client))
            return t;
    }
    return NULL;
}

void auth_set_script_cap(struct auth *a, int per_client)
{
    if (a)
        atomic_store(&a->sh->script_cap, per_client > 0 ? per_client : 0);
}

void auth_set_worker(struct auth *a, int index)
{
    if (a)
        a->worker = index >= 0 && index < AUTH_MAX_WORKERS ? index : 0;
}

static int held_sum(const struct auth_slot *s)
{
    int n = 0;
    for (int i = 0; i < AUTH_MAX_WORKERS; i++)
        n += s->held[i];
    return n;
}

int auth_script_take(struct auth *a, const char *client)
{
    struct auth_slot *s = slot_of(a, client);
    if (!s)
        return a && client ? 0 : 1;     /* unknown client: fail closed; no auth: free */
    int cap = atomic_load(&a->sh->script_cap), ok = 0;
    robust_lock(&s->mu);
    if (cap <= 0 || held_sum(s) < cap) {
        s->held[a->worker]++;
        ok = 1;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void auth_script_give(struct auth *a, const char *client)
{
    struct auth_slot *s = slot_by_name(a, client);
    if (!s)
        return;
    robust_lock(&s->mu);
    if (s->held[a->worker] > 0)
        s->held[a->worker]--;
    pthread_mutex_unlock(&s->mu);
}

int auth_script_count(struct auth *a, const char *client)
{
    struct auth_slot *s = slot_by_name(a, client);
    if (!s)
        return 0;
    robust_lock(&s->mu);
    int n = held_sum(s);
    pthread_mutex_unlock(&s->mu);
    return n;
}

void auth_script_reap(struct auth *a, int index)
{
    if (!a || index < 0 || index >= AUTH_MAX_WORKERS)
        return;
    for (int i = 0; i < AUTH_MAX_CLIENTS; i++) {
        struct auth_slot *s = &a->sh->slots[i];
        if (!atomic_load_explicit(&s->used, memory_order_acquire))
            continue;
        robust_lock(&s->mu);
        s->held[index] = 0;
        pthread_mutex_unlock(&s->mu);
    }
}

/* ---- the token file, for `skill-mcp token add` (cli_token.c) ----------------- */

int auth_id_valid(const char *s, size_t n)
{
    return id_valid(s, n);
}

int auth_file_names(int fd, const char *id, int *ends_nl)
{
    FILE *fp = fdopen(dup(fd), "r");
    *ends_nl = 1;
    if (!fp)
        return 0;
    char line[LINE_MAX_LEN + 2];
    int found = 0, at_start = 1;
    while (fgets(line, sizeof line, fp)) {
        size_t len = strlen(line);
        int whole = len && line[len - 1] == '\n';
        *ends_nl = whole;
        if (at_start) {
            char *f[4];
            size_t fl[4];
            if (split_fields(line, f, fl) > 0 && fl[0] == strlen(id) && !memcmp(f[0], id, fl[0]))
                found = 1;
        }
        at_start = whole;
    }
    fclose(fp);
    return found;
}

int auth_token_line(const char *name, const char *token, long rpm, char *out, size_t cap)
{
    unsigned char d[DIGEST_LEN];
    if (sha256(token, strlen(token), d))
        return -1;
    size_t n = (size_t)snprintf(out, cap, "%s ", name);
    if (n + 2 * DIGEST_LEN >= cap) {
        OPENSSL_cleanse(d, sizeof d);
        return -1;
    }
    hex_encode(d, DIGEST_LEN, out + n);
    n += 2 * DIGEST_LEN;
    if (rpm >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " %ld", rpm);
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, "\n");
    OPENSSL_cleanse(d, sizeof d);
    return n < cap ? (int)n : -1;
}
