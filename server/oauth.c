/*
 * oauth.c - see oauth.h.
 */
#include "oauth.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dynlib.h"
#include "util.h"

#define MAX_KEYS 64
#define FETCH_MAX_BYTES (1 << 20)
#define FETCH_TIMEOUT_MS 4000L
#define WAIT_REFETCH_MS 5000
#define DEMAND_INTERVAL_NS (30ull * 1000000000ull)
#define MAXAGE_MIN_S 30
#define MAXAGE_MAX_S 86400
#define MAXAGE_DEFAULT_S 300
#define RETRY_S 30

/* ---- algorithms ------------------------------------------------------------ */

enum kfam { KF_RSA = 1, KF_P256, KF_P384, KF_P521, KF_ED25519 };

/* The algorithms accepted, each with the one key family it may use. HMAC
 * and "none" are absent on purpose: with a public key they are forgeries. */
static const struct { const char *alg; enum kfam fam; } algs[] = {
    {"RS256", KF_RSA},   {"RS384", KF_RSA},   {"RS512", KF_RSA},  {"PS256", KF_RSA},
    {"PS384", KF_RSA},   {"PS512", KF_RSA},   {"ES256", KF_P256}, {"ES384", KF_P384},
    {"ES512", KF_P521},  {"EdDSA", KF_ED25519},
};

static int alg_family(const char *alg)
{
    for (size_t i = 0; i < sizeof algs / sizeof *algs; i++)
        if (!strcmp(algs[i].alg, alg))
            return (int)algs[i].fam;
    return 0;
}

/* ---- key sets ---------------------------------------------------------------- */

struct key {
    json_t *jwk;                /* the public JWK as published */
    const char *kid;            /* borrowed from jwk, or NULL */
    const char *alg;            /* its "alg" (borrowed), or NULL: any of its family */
    enum kfam fam;
    EVP_PKEY *ed;               /* KF_ED25519: the key for OpenSSL */
};

struct keyset {
    int refs;                   /* guarded by oauth.snap_mu */
    size_t n;
    struct key k[MAX_KEYS];
};

static void keyset_free(struct keyset *ks)
{
    if (!ks)
        return;
    for (size_t i = 0; i < ks->n; i++) {
        json_decref(ks->k[i].jwk);
        EVP_PKEY_free(ks->k[i].ed);
    }
    free(ks);
}

static const char *jstr(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static size_t b64_len(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? DL(jose_b64_dec)(v, NULL, 0) : SIZE_MAX;
}

/* The family of a JWK, or 0 when it is not a usable public signing key. */
static enum kfam jwk_family(const json_t *jwk)
{
    const char *kty = jstr(jwk, "kty"), *crv = jstr(jwk, "crv");
    if (!kty)
        return 0;
    if (json_object_get(jwk, "d") || json_object_get(jwk, "k"))
        return 0;   /* private or symmetric material has no place in a JWKS */
    if (!strcmp(kty, "RSA")) {
        size_t n = b64_len(jwk, "n");
        return n != SIZE_MAX && n >= 256 && b64_len(jwk, "e") != SIZE_MAX ? KF_RSA : 0;
    }
    if (!crv)
        return 0;
    if (!strcmp(kty, "EC") && b64_len(jwk, "x") != SIZE_MAX && b64_len(jwk, "y") != SIZE_MAX)
        return !strcmp(crv, "P-256") ? KF_P256 : !strcmp(crv, "P-384") ? KF_P384
               : !strcmp(crv, "P-521") ? KF_P521 : 0;
    if (!strcmp(kty, "OKP") && !strcmp(crv, "Ed25519") && b64_len(jwk, "x") == 32)
        return KF_ED25519;
    return 0;
}

/* Builds a key set from a JWKS document; keys it cannot use are skipped
 * (a JWKS may carry encryption keys too). NULL with why when none is left. */
static struct keyset *keyset_build(const json_t *doc, struct err *why)
{
    json_t *keys = json_object_get(doc, "keys");
    if (!json_is_array(keys)) {
        err_set(why, 0, 0, "the JWKS has no \"keys\" array");
        return NULL;
    }
    struct keyset *ks = xcalloc(1, sizeof *ks);
    size_t i;
    json_t *jwk;
    json_array_foreach(keys, i, jwk) {
        if (ks->n == MAX_KEYS)
            break;
        if (!json_is_object(jwk))
            continue;
        const char *use = jstr(jwk, "use"), *alg = jstr(jwk, "alg");
        if (use && strcmp(use, "sig"))
            continue;
        json_t *ops = json_object_get(jwk, "key_ops");
        if (ops) {
            int verify = 0;
            size_t j;
            json_t *op;
            json_array_foreach(ops, j, op)
                if (json_is_string(op) && !strcmp(json_string_value(op), "verify"))
                    verify = 1;
            if (!verify)
                continue;
        }
        enum kfam fam = jwk_family(jwk);
        if (!fam || (alg && alg_family(alg) != (int)fam))
            continue;
        struct key *k = &ks->k[ks->n];
        if (fam == KF_ED25519) {
            unsigned char x[32];
            if (DL(jose_b64_dec)(json_object_get(jwk, "x"), x, sizeof x) != sizeof x)
                continue;
            k->ed = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, sizeof x);
            if (!k->ed)
                continue;
        }
        k->jwk = json_deep_copy(jwk);
        k->kid = jstr(k->jwk, "kid");
        k->alg = jstr(k->jwk, "alg");
        k->fam = fam;
        ks->n++;
    }
    if (!ks->n) {
        err_set(why, 0, 0, "the JWKS holds no usable signing key (RSA >= 2048 bits, EC "
                "P-256/384/521 or Ed25519)");
        keyset_free(ks);
        return NULL;
    }
    return ks;
}

/* ---- fetching ------------------------------------------------------------------ */

struct fetched {
    struct buf body;
    long max_age;               /* -1: no Cache-Control max-age */
    int no_cache;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct fetched *f = ud;
    return buf_append(&f->body, p, sz * n) < 0 ? 0 : sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct fetched *f = ud;
    size_t len = sz * n;
    static const char cc[] = "cache-control:";
    if (len > sizeof cc - 1 && !strncasecmp(p, cc, sizeof cc - 1)) {
        char v[256];
        size_t m = len - (sizeof cc - 1);
        if (m >= sizeof v)
            m = sizeof v - 1;
        memcpy(v, p + sizeof cc - 1, m);
        v[m] = '\0';
        for (char *q = v; *q; q++)
            *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
        char *ma = strstr(v, "max-age=");
        if (ma)
            f->max_age = strtol(ma + 8, NULL, 10);
        if (strstr(v, "no-store") || strstr(v, "no-cache"))
            f->no_cache = 1;
    }
    return len;
}

/* GETs a JSON object. Redirects are not followed: a redirect could lead a
 * key fetch off the https origin the operator named. */
static json_t *get_json(const char *url, struct fetched *f, struct err *why)
{
    memset(f, 0, sizeof *f);
    f->max_age = -1;
    buf_init(&f->body, FETCH_MAX_BYTES);
    CURL *c = DL(curl_easy_init)();
    if (!c) {
        err_set(why, 0, 0, "%s: libcurl did not start", url);
        buf_cleanup(&f->body);
        return NULL;
    }
    struct curl_slist *hdr = DL(curl_slist_append)(NULL, "Accept: application/json");
    DL(curl_easy_setopt)(c, CURLOPT_URL, url);
    DL(curl_easy_setopt)(c, CURLOPT_PROTOCOLS_STR, "http,https");
    DL(curl_easy_setopt)(c, CURLOPT_FOLLOWLOCATION, 0L);
    DL(curl_easy_setopt)(c, CURLOPT_NOSIGNAL, 1L);
    DL(curl_easy_setopt)(c, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS);
    DL(curl_easy_setopt)(c, CURLOPT_CONNECTTIMEOUT_MS, FETCH_TIMEOUT_MS);
    DL(curl_easy_setopt)(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)FETCH_MAX_BYTES);
    DL(curl_easy_setopt)(c, CURLOPT_HTTPHEADER, hdr);
    DL(curl_easy_setopt)(c, CURLOPT_WRITEFUNCTION, on_body);
    DL(curl_easy_setopt)(c, CURLOPT_WRITEDATA, f);
    DL(curl_easy_setopt)(c, CURLOPT_HEADERFUNCTION, on_header);
    DL(curl_easy_setopt)(c, CURLOPT_HEADERDATA, f);
    DL(curl_easy_setopt)(c, CURLOPT_USERAGENT, "skill-mcp/" SKILL_VERSION);
    CURLcode rc = DL(curl_easy_perform)(c);
    long status = 0;
    DL(curl_easy_getinfo)(c, CURLINFO_RESPONSE_CODE, &status);
    DL(curl_easy_cleanup)(c);
    DL(curl_slist_free_all)(hdr);
    json_t *doc = NULL;
    if (rc != CURLE_OK)
        err_set(why, 0, 0, "%s: %s", url, DL(curl_easy_strerror)(rc));
    else if (status != 200)
        err_set(why, 0, 0, "%s: HTTP status %ld", url, status);
    else {
        json_error_t je;
        doc = json_loadb(f->body.p ? f->body.p : "", f->body.len, 0, &je);
        if (!doc || !json_is_object(doc)) {
            err_set(why, 0, 0, "%s: not a JSON object", url);
            json_decref(doc);
            doc = NULL;
        }
    }
    buf_cleanup(&f->body);
    return doc;
}

/* ---- the module ------------------------------------------------------------------ */

struct oauth {
    char *issuer, *audience, *jwks_url;
    char **scopes;
    size_t nscopes;
    char *prm_url;              /* where the metadata of audience is */
    char *prm_path;             /* OAUTH_PRM_PATH + the audience's path */
    char *mcp_prm_path;         /* OAUTH_PRM_PATH + --path */
    char *metadata;             /* the document, built once */
    char *chal[4];              /* by verdict */

    pthread_mutex_t snap_mu;    /* guards cur and every keyset's refs; no I/O under it */
    struct keyset *cur;

    pthread_mutex_t mu;         /* the refresher's state below; waits release it */
    pthread_cond_t kick;        /* to the refresher: fetch now, or stop */
    pthread_cond_t done;        /* from the refresher: a fetch ended */
    int want, stop;
    long attempts;              /* fetches ended (good or bad) */
    uint64_t next_ns;           /* when the cache runs out */
    uint64_t demand_ns;         /* last on-demand fetch; 0 = none yet */
    _Atomic pid_t thread_pid;   /* the process whose refresher runs, or 0 */
    pthread_t thread;
};

/* The RFC 8414 well-known URL of an issuer: inserted between host and path. */
static char *wellknown_url(const char *issuer, const char *suffix, int insert)
{
    struct buf b;
    buf_init(&b, 0);
    const char *auth = strstr(issuer, "://");
    auth = auth ? auth + 3 : issuer;
    const char *path = auth + strcspn(auth, "/");
    if (insert) {
        buf_append(&b, issuer, (size_t)(path - issuer));
        buf_printf(&b, "/.well-known/%s", suffix);
        if (strcmp(path, "/"))
            buf_puts(&b, path);
    } else {
        buf_puts(&b, issuer);
        if (b.len && b.p[b.len - 1] == '/')
            b.len--, b.p[b.len] = '\0';
        buf_printf(&b, "/.well-known/%s", suffix);
    }
    return buf_steal(&b, NULL);
}

static int discover(struct oauth *o, struct err *err)
{
    struct err why = {0};
    char first[512] = "";
    struct fetched f;
    const struct { const char *suffix; int insert; } tries[] = {
        {"oauth-authorization-server", 1}, {"openid-configuration", 1},
        {"openid-configuration", 0},
    };
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        char *url = wellknown_url(o->issuer, tries[i].suffix, tries[i].insert);
        json_t *doc = get_json(url, &f, &why);
        free(url);
        if (!doc) {
            if (!first[0])
                snprintf(first, sizeof first, "%s", why.msg);
            continue;
        }
        const char *iss = jstr(doc, "issuer"), *jwks = jstr(doc, "jwks_uri");
        if (!iss || strcmp(iss, o->issuer)) {
            /* RFC 8414 3.3: metadata naming another issuer must not be used. */
            err_set(err, 0, 0, "--oauth-issuer %s: its metadata names the issuer \"%s\"; "
                    "they must be equal", o->issuer, iss ? iss : "");
            json_decref(doc);
            return -1;
        }
        if (!jwks) {
            err_set(err, 0, 0, "--oauth-issuer %s: its metadata has no jwks_uri (give "
                    "--oauth-jwks)", o->issuer);
            json_decref(doc);
            return -1;
        }
        const char *bad = cfg_url_refused(jwks);
        if (bad) {
            err_set(err, 0, 0, "--oauth-issuer %s: its jwks_uri %s is refused: %s",
                    o->issuer, jwks, bad);
            json_decref(doc);
            return -1;
        }
        o->jwks_url = xstrdup(jwks);
        json_decref(doc);
        return 0;
    }
    err_set(err, 0, 0, "--oauth-issuer %s: no authorization server metadata found (%s)",
            o->issuer, first);
    return -1;
}

/* Fetches the JWKS. 0 and *out, or -1 with why. *max_age_s: the cache life. */
static int fetch_keys(struct oauth *o, struct keyset **out, long *max_age_s, struct err *why)
{
    struct fetched f;
    json_t *doc = get_json(o->jwks_url, &f, why);
    if (!doc)
        return -1;
    *out = keyset_build(doc, why);
    json_decref(doc);
    if (!*out)
        return -1;
    long ma = f.no_cache ? MAXAGE_MIN_S : f.max_age < 0 ? MAXAGE_DEFAULT_S : f.max_age;
    *max_age_s = ma < MAXAGE_MIN_S ? MAXAGE_MIN_S : ma > MAXAGE_MAX_S ? MAXAGE_MAX_S : ma;
    return 0;
}

static void publish(struct oauth *o, struct keyset *ks)
{
    ks->refs = 1;
    pthread_mutex_lock(&o->snap_mu);
    struct keyset *old = o->cur;
    o->cur = ks;
    int gone = old && --old->refs == 0;
    pthread_mutex_unlock(&o->snap_mu);
    if (gone)
        keyset_free(old);
}

static struct keyset *acquire(struct oauth *o)
{
    pthread_mutex_lock(&o->snap_mu);
    struct keyset *ks = o->cur;
    if (ks)
        ks->refs++;
    pthread_mutex_unlock(&o->snap_mu);
    return ks;
}

static void release(struct oauth *o, struct keyset *ks)
{
    if (!ks)
        return;
    pthread_mutex_lock(&o->snap_mu);
    int gone = --ks->refs == 0;
    pthread_mutex_unlock(&o->snap_mu);
    if (gone)
        keyset_free(ks);
}

static void abs_deadline(struct timespec *ts, uint64_t mono_ns)
{
    /* The conditions wait on CLOCK_MONOTONIC (set at init). */
    ts->tv_sec = (time_t)(mono_ns / 1000000000ull);
    ts->tv_nsec = (long)(mono_ns % 1000000000ull);
}

static void *refresher(void *arg)
{
    struct oauth *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->stop && !o->want && now_ns() < o->next_ns) {
            struct timespec ts;
            abs_deadline(&ts, o->next_ns);
            pthread_cond_timedwait(&o->kick, &o->mu, &ts);
        }
        if (o->stop)
            break;
        pthread_mutex_unlock(&o->mu);
        struct keyset *ks = NULL;
        long max_age = RETRY_S;
        struct err why;
        int rc = fetch_keys(o, &ks, &max_age, &why);
        if (rc == 0)
            publish(o, ks);
        else
            log_error("oauth: JWKS refetch failed, keeping the keys loaded: %s", why.msg);
        pthread_mutex_lock(&o->mu);
        o->next_ns = now_ns() + (uint64_t)(rc == 0 ? max_age : RETRY_S) * 1000000000ull;
        o->want = 0;
        o->attempts++;
        pthread_cond_broadcast(&o->done);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* Starts this process's refresher once (workers are forked after start-up,
 * and a thread does not survive fork). Call with o->mu held. */
static void ensure_thread(struct oauth *o)
{
    pid_t me = getpid();
    if (o->thread_pid == me)
        return;
    if (pthread_create(&o->thread, NULL, refresher, o) == 0)
        o->thread_pid = me;
    else
        log_error("oauth: cannot start the JWKS refresher: %s", strerror(errno));
}

/* A token names a key the set lacks: refetch (at most once per 30 s) and
 * wait for it, at most WAIT_REFETCH_MS. 1 when a fetch ended meanwhile. */
static int demand_refetch(struct oauth *o)
{
    int fetched = 0;
    pthread_mutex_lock(&o->mu);
    ensure_thread(o);
    uint64_t now = now_ns();
    if (o->thread_pid == getpid() &&
        (o->want || !o->demand_ns || now - o->demand_ns >= DEMAND_INTERVAL_NS)) {
        if (!o->want) {
            o->demand_ns = now;
            o->want = 1;
            pthread_cond_signal(&o->kick);
        }
        long seen = o->attempts;
        struct timespec ts;
        abs_deadline(&ts, now + (uint64_t)WAIT_REFETCH_MS * 1000000ull);
        while (o->attempts == seen && !o->stop)
            if (pthread_cond_timedwait(&o->done, &o->mu, &ts) == ETIMEDOUT)
                break;
        fetched = o->attempts != seen;
    }
    pthread_mutex_unlock(&o->mu);
    return fetched;
}

static void add_chal_params(struct buf *b, const struct oauth *o, int scope)
{
    buf_printf(b, "resource_metadata=\"%s\"", o->prm_url);
    if (scope && o->nscopes) {
        buf_puts(b, ", scope=\"");
        for (size_t i = 0; i < o->nscopes; i++)
            buf_printf(b, "%s%s", i ? " " : "", o->scopes[i]);
        buf_puts(b, "\"");
    }
}

static void build_docs(struct oauth *o)
{
    struct buf b;
    buf_init(&b, 0);
    buf_puts(&b, "Bearer ");
    add_chal_params(&b, o, 1);
    o->chal[OAUTH_NO_TOKEN] = buf_steal(&b, NULL);
    buf_init(&b, 0);
    buf_puts(&b, "Bearer error=\"invalid_token\", ");
    add_chal_params(&b, o, 1);
    o->chal[OAUTH_INVALID] = buf_steal(&b, NULL);
    buf_init(&b, 0);
    buf_puts(&b, "Bearer error=\"insufficient_scope\", ");
    add_chal_params(&b, o, 1);
    o->chal[OAUTH_SCOPE] = buf_steal(&b, NULL);
    o->chal[OAUTH_OK] = xstrdup("");

    json_t *scopes = json_array();
    for (size_t i = 0; i < o->nscopes; i++)
        json_array_append_new(scopes, json_string(o->scopes[i]));
    json_t *doc = json_pack("{s:s, s:[s], s:o, s:[s], s:s}", "resource", o->audience,
                            "authorization_servers", o->issuer, "scopes_supported", scopes,
                            "bearer_methods_supported", "header", "resource_name", "skill-mcp");
    o->metadata = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
}

static char *default_audience(const struct cfg *c, int port, struct err *err)
{
    const char *h = c->host;
    if (!strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !strcmp(h, "[::]") || !*h) {
        err_set(err, 0, 0, "--oauth-issuer: give --oauth-audience (the public URL of the MCP "
                "endpoint, e.g. https://skills.example.com/mcp): --host %s names no one "
                "address clients use", h);
        return NULL;
    }
    struct buf b;
    buf_init(&b, 0);
    int v6 = strchr(h, ':') && h[0] != '[';
    buf_printf(&b, "http%s://%s%s%s:%d%s", c->tls_cert ? "s" : "", v6 ? "[" : "", h,
               v6 ? "]" : "", port, c->path);
    return buf_steal(&b, NULL);
}

static int set_paths(struct oauth *o, const char *mcp_path, struct err *err)
{
    const char *p = strstr(o->audience, "://");
    if (!p || strncasecmp(o->audience, "http", 4)) {
        err_set(err, 0, 0, "--oauth-audience %s: it must be an http(s):// URL", o->audience);
        return -1;
    }
    p += 3;
    const char *path = p + strcspn(p, "/?#");
    if (*path == '?' || *path == '#' || strchr(o->audience, '#')) {
        err_set(err, 0, 0, "--oauth-audience %s: no query or fragment (RFC 8707)", o->audience);
        return -1;
    }
    struct buf b;
    buf_init(&b, 0);
    buf_append(&b, o->audience, (size_t)(path - o->audience));
    buf_puts(&b, OAUTH_PRM_PATH);
    if (strcmp(path, "/"))
        buf_puts(&b, path);
    o->prm_url = buf_steal(&b, NULL);
    buf_init(&b, 0);
    buf_puts(&b, OAUTH_PRM_PATH);
    if (strcmp(path, "/"))
        buf_puts(&b, path);
    o->prm_path = buf_steal(&b, NULL);
    buf_init(&b, 0);
    buf_printf(&b, "%s%s", OAUTH_PRM_PATH, mcp_path);
    o->mcp_prm_path = buf_steal(&b, NULL);
    return 0;
}

struct oauth *oauth_new(const struct cfg *c, int port, struct err *err)
{
    const char *bad = cfg_url_refused(c->oauth_issuer);
    if (bad) {
        err_set(err, 0, 0, "--oauth-issuer %s is refused: %s", c->oauth_issuer, bad);
        return NULL;
    }
    if (c->oauth_jwks && (bad = cfg_url_refused(c->oauth_jwks))) {
        err_set(err, 0, 0, "--oauth-jwks %s is refused: %s", c->oauth_jwks, bad);
        return NULL;
    }
    char dlerr[320];
    if (dynlib_need(DL_CURL, dlerr, sizeof dlerr) < 0 ||
        dynlib_need(DL_JOSE, dlerr, sizeof dlerr) < 0) {
        err_set(err, 0, 0, "--oauth-issuer: %s", dlerr);
        return NULL;
    }
    DL(curl_global_init)(CURL_GLOBAL_DEFAULT);
    struct oauth *o = xcalloc(1, sizeof *o);
    pthread_mutex_init(&o->snap_mu, NULL);
    pthread_mutex_init(&o->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->kick, &ca);
    pthread_cond_init(&o->done, &ca);
    pthread_condattr_destroy(&ca);
    o->issuer = xstrdup(c->oauth_issuer);
    o->audience = c->oauth_audience ? xstrdup(c->oauth_audience)
                                    : default_audience(c, port, err);
    if (!o->audience || set_paths(o, c->path, err))
        goto fail;
    if (c->oauth_scopes) {
        /* comma- or space-separated */
        const char *p = c->oauth_scopes;
        while (*p) {
            p += strspn(p, ", ");
            size_t n = strcspn(p, ", ");
            if (!n)
                break;
            o->scopes = xrealloc(o->scopes, (o->nscopes + 1) * sizeof *o->scopes);
            o->scopes[o->nscopes++] = xstrndup(p, n);
            p += n;
        }
    }
    if (c->oauth_jwks)
        o->jwks_url = xstrdup(c->oauth_jwks);
    else if (discover(o, err))
        goto fail;
    struct keyset *ks = NULL;
    long max_age = 0;
    struct err why;
    if (fetch_keys(o, &ks, &max_age, &why)) {
        err_set(err, 0, 0, "--oauth-issuer %s: cannot load its keys: %s", o->issuer, why.msg);
        goto fail;
    }
    publish(o, ks);
    o->next_ns = now_ns() + (uint64_t)max_age * 1000000000ull;
    build_docs(o);
    log_info("oauth: tokens from %s for %s (%zu key(s) from %s)", o->issuer, o->audience,
             ks->n, o->jwks_url);
    return o;
fail:
    oauth_free(o);
    return NULL;
}

void oauth_free(struct oauth *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stop = 1;
    pthread_cond_broadcast(&o->kick);
    pthread_cond_broadcast(&o->done);
    int join = o->thread_pid == getpid();
    pthread_mutex_unlock(&o->mu);
    if (join)
        pthread_join(o->thread, NULL);
    keyset_free(o->cur);
    for (size_t i = 0; i < o->nscopes; i++)
        free(o->scopes[i]);
    free(o->scopes);
    for (size_t i = 0; i < sizeof o->chal / sizeof *o->chal; i++)
        free(o->chal[i]);
    free(o->issuer);
    free(o->audience);
    free(o->jwks_url);
    free(o->prm_url);
    free(o->prm_path);
    free(o->mcp_prm_path);
    free(o->metadata);
    pthread_mutex_destroy(&o->snap_mu);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->kick);
    pthread_cond_destroy(&o->done);
    free(o);
}

const char *oauth_audience(const struct oauth *o)
{
    return o ? o->audience : NULL;
}

const char *oauth_challenge(const struct oauth *o, enum oauth_verdict v)
{
    return o && (int)v >= 0 && (size_t)v < sizeof o->chal / sizeof *o->chal ? o->chal[v] : "";
}

int oauth_metadata(const struct oauth *o, const char *url, char **body, size_t *len)
{
    if (!o || (strcmp(url, OAUTH_PRM_PATH) && strcmp(url, o->prm_path) &&
               strcmp(url, o->mcp_prm_path)))
        return -1;
    *body = xstrdup(o->metadata);
    *len = strlen(*body);
    return 0;
}

/* ---- signatures ---------------------------------------------------------------- */

static int key_takes(const struct key *k, const char *alg)
{
    return alg_family(alg) == (int)k->fam && (!k->alg || !strcmp(k->alg, alg));
}

static int sig_ok(const struct key *k, const char *token, const struct jwt *j, size_t n)
{
    if (k->fam == KF_ED25519) {
        unsigned char sig[64];
        if (DL(jose_b64_dec_buf)(token + j->sig_off, n - j->sig_off, NULL, 0) != sizeof sig ||
            DL(jose_b64_dec_buf)(token + j->sig_off, n - j->sig_off, sig, sizeof sig) != sizeof sig)
            return 0;
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->ed) == 1 &&
                 EVP_DigestVerify(ctx, sig, sizeof sig, (const unsigned char *)token,
                                  j->signing_len) == 1;
        EVP_MD_CTX_free(ctx);
        return ok;
    }
    /* libjose verifies with the header's alg and does not hold it to the
     * JWK's: key_takes has done that (the key's alg, else its family). */
    size_t hl = (size_t)(strchr(token, '.') - token);
    json_t *jws = json_pack("{s:s%, s:s%, s:s%}", "protected", token, hl, "payload",
                            token + hl + 1, j->signing_len - hl - 1, "signature",
                            token + j->sig_off, n - j->sig_off);
    if (!jws)
        return 0;
    json_t *jwk = json_deep_copy(k->jwk);
    if (!k->alg)
        json_object_set_new(jwk, "alg", json_string(json_string_value(
                                             json_object_get(j->header, "alg"))));
    int ok = DL(jose_jws_ver)(NULL, jws, NULL, jwk, false);
    json_decref(jwk);
    json_decref(jws);
    return ok;
}

/* 1 verified, 0 bad signature, -2 the key named does not take the token's
 * algorithm, -1 no key of the set is named (by kid, or by family when the
 * token names none): only then may a refetch find it. */
static int verify_with(const struct keyset *ks, const char *token, size_t n,
                       const struct jwt *j)
{
    int tried = 0, named = 0;
    for (size_t i = 0; ks && i < ks->n; i++) {
        const struct key *k = &ks->k[i];
        if (j->kid && (!k->kid || strcmp(k->kid, j->kid)))
            continue;
        named = 1;
        if (!key_takes(k, j->alg))
            continue;
        tried = 1;
        if (sig_ok(k, token, j, n))
            return 1;
    }
    return tried ? 0 : named && j->kid ? -2 : -1;
}

/* What --acl rules may name (sub:, scope:). A value that does not fit is
 * left out whole: a cut one could match a rule it does not name. */
static void claims_for_acl(const json_t *claims, struct oauth_result *r)
{
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    if (sub && strlen(sub) < sizeof r->sub)
        snprintf(r->sub, sizeof r->sub, "%s", sub);
    struct buf b;
    buf_init(&b, 0);
    const char *scope = json_string_value(json_object_get(claims, "scope"));
    if (scope)
        buf_puts(&b, scope);
    size_t i;
    json_t *v;
    json_t *scp = json_object_get(claims, "scp");
    if (json_is_array(scp))
        json_array_foreach(scp, i, v) if (json_is_string(v) && !strchr(json_string_value(v), ' ')) {
            buf_puts(&b, " ");
            buf_puts(&b, json_string_value(v));
        }
    if (b.len && b.len < sizeof r->scopes) {
        memcpy(r->scopes, b.p, b.len);
        r->scopes[b.len] = '\0';
    }
    buf_cleanup(&b);
}

enum oauth_verdict oauth_verify(struct oauth *o, const char *token, size_t n,
                                struct oauth_result *r)
{
    memset(r, 0, sizeof *r);
    struct jwt j;
    struct err why;
    if (jwt_parse(token, n, &j, &why)) {
        err_copy(r->why, sizeof r->why, &why);
        return OAUTH_INVALID;
    }
    enum oauth_verdict v = OAUTH_INVALID;
    /* The token is a separate C string for libjose: token may not end at n. */
    char *tok = xstrndup(token, n);
    if (!alg_family(j.alg)) {
        snprintf(r->why, sizeof r->why, "the signature algorithm \"%.32s\" is not accepted",
                 j.alg);
        goto out;
    }
    struct keyset *ks = acquire(o);
    int ok = verify_with(ks, tok, n, &j);
    release(o, ks);
    if (ok == -1 && demand_refetch(o)) {
        ks = acquire(o);
        ok = verify_with(ks, tok, n, &j);
        release(o, ks);
    } else {
        /* The cache's life ran out: the refresher fetches in the background
         * while this request goes on with the keys it has. */
        if (atomic_load(&o->thread_pid) != getpid()) {
            pthread_mutex_lock(&o->mu);
            ensure_thread(o);
            pthread_mutex_unlock(&o->mu);
        }
    }
    if (ok == -2) {
        snprintf(r->why, sizeof r->why, "the token's algorithm \"%.32s\" is not its key's",
                 j.alg);
        goto out;
    }
    if (ok < 0) {
        snprintf(r->why, sizeof r->why, "the token is signed with a key the authorization "
                 "server does not publish");
        goto out;
    }
    if (!ok) {
        snprintf(r->why, sizeof r->why, "the token's signature is not valid");
        goto out;
    }
    if (jwt_check_claims(j.claims, o->issuer, o->audience, (int64_t)time(NULL), JWT_LEEWAY_S,
                         &why)) {
        err_copy(r->why, sizeof r->why, &why);
        goto out;
    }
    const char *id = jwt_client_id(j.claims);
    if (!id) {
        snprintf(r->why, sizeof r->why, "the token names no usable client (client_id, azp or "
                 "sub: 1-%d printable characters)", JWT_MAX_ID);
        goto out;
    }
    snprintf(r->client, sizeof r->client, "%s", id);
    jwt_groups(j.claims, r->groups, sizeof r->groups);
    claims_for_acl(j.claims, r);
    for (size_t i = 0; i < o->nscopes; i++) {
        if (!jwt_has_scope(j.claims, o->scopes[i])) {
            v = OAUTH_SCOPE;
            size_t used = (size_t)snprintf(r->why, sizeof r->why, "the token lacks a scope "
                                           "this server requires; it needs all of:");
            for (size_t k = 0; k < o->nscopes && used < sizeof r->why; k++)
                used += (size_t)snprintf(r->why + used, sizeof r->why - used, " %s",
                                         o->scopes[k]);
            goto out;
        }
    }
    v = OAUTH_OK;
out:
    free(tok);
    jwt_free(&j);
    return v;
}
