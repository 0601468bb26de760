/*
 * discovery.c - see discovery.h. Archives are written by libarchive (pax
 * restricted tar, gzip filter); SHA-256 comes from OpenSSL's EVP interface
 * (manifest.c for SKILL.md, which caches it).
 *
 * Reproducible archives: the members are the skill's SKILL.md and files[]
 * (already filtered by skills.c: no dotfiles, VCS, __pycache__,
 * node_modules) that open beneath the skill folder now, plus the folders
 * leading to them, under one top folder named after the skill, sorted by
 * path. Every member has mtime 0, uid/gid 0, no user/group names, mode 0644
 * (files) or 0755 (folders); the gzip header carries no timestamp or name.
 * The same bytes in the same paths therefore always give the same archive.
 *
 * Cache: one slot per qualified name holding the last archive built, with a
 * fingerprint (SHA-256 over the name and each member's path, device, inode,
 * mtime_ns, ctime_ns and size) as validator. A request re-opens and fstats
 * every member (as manifest.c does) and rebuilds when the fingerprint moved.
 * An archive is cached only when every member held still while it was read
 * and none changed within the last second.
 * The cache is emptied when it would pass CACHE_MAX_BYTES or CACHE_MAX_SLOTS.
 */
#include "discovery.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl.h"
#include "dynlib.h"
#include "jail.h"
#include "manifest.h"
#include "skills.h"
#include "util.h"

#define SCHEMA "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
#define CT_JSON "application/json"
#define CT_MD "text/markdown; charset=utf-8"
#define CT_GZIP "application/gzip"
#define ARCHIVE_MAX_INPUT (64ll << 20)     /* bytes of files in one archive */
#define SKILL_MD_MAX (16ll << 20)          /* a served SKILL.md (skills.c caps it at 4) */
#define CACHE_MAX_BYTES ((size_t)64 << 20)
#define CACHE_MAX_ENTRY ((size_t)16 << 20) /* larger archives are rebuilt each time */
#define CACHE_MAX_SLOTS 8192
#define DIGEST_LEN MANIFEST_DIGEST_LEN     /* "sha256:" + 64 hex */

/* ---- helpers ---------------------------------------------------------------- */

/* Is k in the index? The skills/list rule: its frontmatter name is its
 * folder name and follows the Agent Skills naming rules. */
static int listed(const struct skill *k)
{
    return k->fm_name && !strcmp(k->fm_name, k->name) &&
           !skills_name_problem(k->name) && k->description;
}

/* A skill that is only a SKILL.md is served as is; any other as a tar.gz. */
static int is_archive(const struct skill *k)
{
    return k->nfiles > 0;
}

/* Reads size bytes of fd from offset 0 into a malloc'd buffer. Returns 0,
 * or -EIO; *len may be short when the file shrank meanwhile. */
static int read_all(int fd, int64_t size, char **out, size_t *len)
{
    size_t want = (size_t)size, got = 0;
    char *p = xmalloc(want + 1);
    while (got < want) {
        ssize_t r = pread(fd, p + got, want - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(p);
            return -EIO;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    p[got] = '\0';
    *out = p;
    *len = got;
    return 0;
}

/* ---- the archive cache ---------------------------------------------------- */

struct slot {
    char *qname;            /* NULL: empty */
    unsigned char fp[32];
    char *data;
    size_t len;
    char digest[DIGEST_LEN + 1];
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot *cache;
static size_t cache_cap, cache_n, cache_bytes;

/* The slot of qname, or the empty slot where it would go. Locked; cap > 0. */
static struct slot *slot_of(const char *qname)
{
    size_t mask = cache_cap - 1;
    for (size_t i = hash_fnv1a32(qname, strlen(qname)) & mask;; i = (i + 1) & mask)
        if (!cache[i].qname || !strcmp(cache[i].qname, qname))
            return &cache[i];
}

static void cache_clear_locked(void)
{
    for (size_t i = 0; i < cache_cap; i++) {
        free(cache[i].qname);
        free(cache[i].data);
    }
    free(cache);
    cache = NULL;
    cache_cap = cache_n = cache_bytes = 0;
}

size_t discovery_cache_count(void)
{
    pthread_mutex_lock(&cache_mu);
    size_t n = cache_n;
    pthread_mutex_unlock(&cache_mu);
    return n;
}

void discovery_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    cache_clear_locked();
    pthread_mutex_unlock(&cache_mu);
}

/* On a hit: copies the archive into *data (when data is not NULL) and its
 * digest into digest, and returns 1. */
static int cache_get(const char *qname, const unsigned char fp[32], char **data, size_t *len,
                     char digest[DIGEST_LEN + 1])
{
    int hit = 0;
    pthread_mutex_lock(&cache_mu);
    if (cache_cap) {
        struct slot *e = slot_of(qname);
        if (e->qname && !memcmp(e->fp, fp, 32)) {
            if (data) {
                *data = xmalloc(e->len ? e->len : 1);
                memcpy(*data, e->data, e->len);
                *len = e->len;
            }
            memcpy(digest, e->digest, DIGEST_LEN + 1);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

static void cache_put(const char *qname, const unsigned char fp[32], const char *data,
                      size_t len, const char *digest)
{
    if (len > CACHE_MAX_ENTRY)
        return;
    pthread_mutex_lock(&cache_mu);
    if (cache_bytes + len > CACHE_MAX_BYTES || cache_n + 1 > CACHE_MAX_SLOTS)
        cache_clear_locked();
    if ((cache_n + 1) * 10 > cache_cap * 7) {
        size_t ocap = cache_cap, ncap = cache_cap ? cache_cap * 2 : 64;
        struct slot *old = cache;
        cache = xcalloc(ncap, sizeof *cache);
        cache_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].qname)
                *slot_of(old[i].qname) = old[i];
        free(old);
    }
    struct slot *e = slot_of(qname);
    if (e->qname) {
        cache_bytes -= e->len;
        free(e->data);
    } else {
        e->qname = xstrdup(qname);
        cache_n++;
    }
    memcpy(e->fp, fp, 32);
    e->data = xmalloc(len ? len : 1);
    memcpy(e->data, data, len);
    e->len = len;
    cache_bytes += len;
    memcpy(e->digest, digest, DIGEST_LEN + 1);
    pthread_mutex_unlock(&cache_mu);
}

/* ---- building an archive -------------------------------------------------- */

/* What a member was when it was fingerprinted. */
struct fid {
    int64_t dev, ino, mtime_ns, ctime_ns, size;
};

static void fid_of(const struct stat *st, struct fid *f)
{
    memset(f, 0, sizeof *f);
    f->dev = (int64_t)st->st_dev;
    f->ino = (int64_t)st->st_ino;
    f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    /* ctime too: an edit of the same size with its mtime set back (touch -d,
     * tar, rsync -t) still moves ctime, which no user can set */
    f->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    f->size = (int64_t)st->st_size;
}

/* Changed within the last second: a second same-size write inside one
 * timestamp tick would leave every field above as it was. */
static int fid_recent(const struct fid *f)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    return t - f->mtime_ns < 1000000000 || t - f->ctime_ns < 1000000000;
}

/* One member of the archive: a file (file >= 0: index into the member
 * list, 0 = SKILL.md, i = files[i - 1]) or a folder (file < 0). */
struct member {
    const char *rel;        /* "" for the top folder, "dir/" for folders */
    char *own;              /* rel when allocated here */
    long file;
};

struct plan {
    const char **rel;       /* SKILL.md, then files[] */
    struct fid *id;
    unsigned char *present; /* opened beneath the skill folder at fingerprint time */
    size_t n;
    int64_t total;
    unsigned char fp[32];
};

static void plan_cleanup(struct plan *p)
{
    free(p->rel);
    free(p->id);
    free(p->present);
    memset(p, 0, sizeof *p);
}

/*
 * Opens and fstats every member beneath root and fingerprints the lot.
 * Returns 0, -EIO (SKILL.md or the hash failed) or -EFBIG (over the cap).
 */
static int plan_build(const struct skill *k, int root, struct plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = k->nfiles + 1;
    p->rel = xcalloc(p->n, sizeof *p->rel);
    p->id = xcalloc(p->n, sizeof *p->id);
    p->present = xcalloc(p->n, 1);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int mdlen = 0;
    int rc = -EIO;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, k->name, strlen(k->name) + 1) != 1)
        goto out;
    for (size_t i = 0; i < p->n; i++) {
        struct stat st;
        p->rel[i] = i ? k->files[i - 1].path : "SKILL.md";
        int fd = jail_open(root, p->rel[i], &st, NULL);
        if (fd < 0) {
            if (!i)
                goto out;
            continue;       /* gone since the scan, or a link leaving the skill */
        }
        close(fd);
        p->present[i] = 1;
        fid_of(&st, &p->id[i]);
        p->total += p->id[i].size;
        if (EVP_DigestUpdate(ctx, p->rel[i], strlen(p->rel[i]) + 1) != 1 ||
            EVP_DigestUpdate(ctx, &p->id[i], sizeof p->id[i]) != 1)
            goto out;
    }
    if (EVP_DigestFinal_ex(ctx, p->fp, &mdlen) != 1 || mdlen != 32)
        goto out;
    rc = p->total > ARCHIVE_MAX_INPUT ? -EFBIG : 0;
out:
    EVP_MD_CTX_free(ctx);
    if (rc < 0)
        plan_cleanup(p);
    return rc;
}

static int member_cmp(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->rel, ((const struct member *)b)->rel);
}

/* The members of plan p sorted by path as written: its present files and
 * every folder above them ("dir/", with the slash), the top folder ("")
 * first; a folder always precedes what it holds. */
static struct member *members_of(const struct plan *p, size_t *count)
{
    size_t cap = 16, n = 0;
    struct member *m = xmalloc(cap * sizeof *m);
    m[n++] = (struct member){.rel = "", .file = -1};
    for (size_t i = 0; i < p->n; i++) {
        if (!p->present[i])
            continue;
        const char *rel = p->rel[i];
        for (const char *s = strchr(rel, '/');; s = strchr(s + 1, '/')) {
            if (n + 1 >= cap) {
                cap *= 2;
                m = xrealloc(m, cap * sizeof *m);
            }
            if (!s) {
                m[n++] = (struct member){.rel = rel, .file = (long)i};
                break;
            }
            char *d = xstrndup(rel, (size_t)(s - rel) + 1);    /* "dir/" */
            m[n++] = (struct member){.rel = d, .own = d, .file = -1};
        }
    }
    qsort(m, n, sizeof *m, member_cmp);
    /* Folders shared by several files appear once. */
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && m[i].file < 0 && m[w - 1].file < 0 && !strcmp(m[i].rel, m[w - 1].rel)) {
            free(m[i].own);
            continue;
        }
        m[w++] = m[i];
    }
    *count = w;
    return m;
}

static void members_free(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(m[i].own);
    free(m);
}

/*
 * A UTF-8 LC_CTYPE for the thread building an archive, so libarchive writes
 * names as standard pax UTF-8 "path" records whatever the process locale
 * (the server never calls setlocale: "C", where libarchive cannot convert
 * non-ASCII names and marks them hdrcharset=BINARY instead). (locale_t)0
 * when the C library has no C.UTF-8; names are then stored as raw bytes.
 */
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static locale_t utf8_loc;

static void utf8_init(void)
{
    utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (!utf8_loc)
        log_warn("discovery: no C.UTF-8 locale; non-ASCII file names are archived as raw "
                 "bytes");
}

static la_ssize_t write_cb(struct archive *a, void *ctx, const void *data, size_t n)
{
    if (buf_append(ctx, data, n) < 0) {
        DL(archive_set_error)(a, EFBIG, "the archive is too large");
        return -1;
    }
    return (la_ssize_t)n;
}

static int write_member(struct archive *a, const char *top, const struct member *m,
                        const char *data, size_t len)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", top, m->rel) >= sizeof path)
        return -1;
    struct archive_entry *e = DL(archive_entry_new)();
    DL(archive_entry_copy_pathname)(e, path);   /* UTF-8 under utf8_locale() */
    DL(archive_entry_set_filetype)(e, m->file < 0 ? AE_IFDIR : AE_IFREG);
    DL(archive_entry_set_perm)(e, m->file < 0 ? 0755 : 0644);
    DL(archive_entry_set_size)(e, m->file < 0 ? 0 : (la_int64_t)len);
    DL(archive_entry_set_mtime)(e, 0, 0);
    DL(archive_entry_set_uid)(e, 0);
    DL(archive_entry_set_gid)(e, 0);
    /* ARCHIVE_WARN: a name not valid in the locale's charset, stored as
     * raw bytes (pax hdrcharset=BINARY); the archive is still good. */
    int rc = DL(archive_write_header)(a, e) >= ARCHIVE_WARN ? 0 : -1;
    DL(archive_entry_free)(e);
    if (!rc && len && DL(archive_write_data)(a, data, len) != (la_ssize_t)len)
        rc = -1;
    return rc;
}

/*
 * Builds the archive of k from plan p into out. *stable is cleared when a
 * member changed between the fingerprint and the read (the bytes are still
 * a valid archive of what was read, but must not be cached under p->fp).
 */
static int archive_build(const struct skill *k, int root, const struct plan *p,
                         struct buf *out, int *stable)
{
    size_t nm;
    struct member *m = members_of(p, &nm);
    pthread_once(&utf8_once, utf8_init);
    locale_t prev = utf8_loc ? uselocale(utf8_loc) : (locale_t)0;
    struct archive *a = DL(archive_write_new)();
    int rc = -EIO;
    *stable = 1;
    if (!a || DL(archive_write_set_format_pax_restricted)(a) != ARCHIVE_OK ||
        DL(archive_write_add_filter_gzip)(a) != ARCHIVE_OK ||
        DL(archive_write_set_filter_option)(a, "gzip", "timestamp", NULL) != ARCHIVE_OK ||
        DL(archive_write_set_filter_option)(a, "gzip", "compression-level", "9") != ARCHIVE_OK ||
        DL(archive_write_set_bytes_in_last_block)(a, 1) != ARCHIVE_OK ||
        DL(archive_write_open)(a, out, NULL, write_cb, NULL) != ARCHIVE_OK) {
        log_error("discovery: libarchive: %s", a ? DL(archive_error_string)(a) : "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nm; i++) {
        char *data = NULL;
        size_t len = 0;
        if (m[i].file >= 0) {
            struct stat st;
            struct fid now;
            int fd = jail_open(root, m[i].rel, &st, NULL);
            if (fd < 0) {
                *stable = 0;    /* removed since the fingerprint: leave it out */
                continue;
            }
            fid_of(&st, &now);
            if (memcmp(&now, &p->id[m[i].file], sizeof now) || fid_recent(&now))
                *stable = 0;
            if (now.size > ARCHIVE_MAX_INPUT || read_all(fd, now.size, &data, &len) < 0) {
                close(fd);
                goto out;
            }
            struct stat after;
            if (fstat(fd, &after) < 0 || (int64_t)len != now.size ||
                after.st_size != st.st_size || after.st_mtim.tv_sec != st.st_mtim.tv_sec ||
                after.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
                *stable = 0;
            close(fd);
        }
        int w = write_member(a, k->name, &m[i], data, len);
        free(data);
        if (w < 0) {
            log_warn("discovery: %s: cannot archive %s: %s", k->qname, m[i].rel,
                     DL(archive_error_string)(a) ? DL(archive_error_string)(a) : "path too long");
            rc = DL(archive_errno)(a) == EFBIG ? -EFBIG : -EIO;
            goto out;
        }
    }
    if (DL(archive_write_close)(a) != ARCHIVE_OK) {
        rc = DL(archive_errno)(a) == EFBIG ? -EFBIG : -EIO;
        goto out;
    }
    rc = 0;
out:
    if (a)
        DL(archive_write_free)(a);
    if (prev)
        uselocale(prev);
    members_free(m, nm);
    return rc;
}

/* Set while libarchive cannot be loaded and that was logged: an index asks
 * for every archive's digest, and a line each would flood the log. */
static atomic_int dl_logged;

/*
 * The archive of k: bytes (when data is not NULL; caller frees) and digest.
 * From the cache when every member still fstats as it did. Returns 0, or a
 * negative errno (-EIO, -EFBIG, -ELIBACC: libarchive cannot be loaded).
 */
static int archive_get(const struct skill *k, char **data, size_t *len,
                       char digest[DIGEST_LEN + 1])
{
    char kdir[SKILL_DIR_MAX], dlerr[320];
    struct plan p;
    if (dynlib_need(DL_ARCHIVE, dlerr, sizeof dlerr) < 0) {
        if (!atomic_exchange(&dl_logged, 1))
            log_error("discovery: %s", dlerr);
        return -ELIBACC;
    }
    if (atomic_load_explicit(&dl_logged, memory_order_relaxed) && atomic_exchange(&dl_logged, 0))
        log_info("discovery: %s loaded", dynlib_soname(DL_ARCHIVE));
    int root = jail_root(skills_dir(k, kdir));
    if (root < 0)
        return -EIO;
    int rc = plan_build(k, root, &p);
    if (rc < 0) {
        close(root);
        return rc;
    }
    if (cache_get(k->qname, p.fp, data, len, digest)) {
        plan_cleanup(&p);
        close(root);
        return 0;
    }
    struct buf b;
    int stable;
    buf_init(&b, (size_t)ARCHIVE_MAX_INPUT + (4u << 20));
    rc = archive_build(k, root, &p, &b, &stable);
    close(root);
    if (rc == 0)
        manifest_sha256(b.p ? b.p : "", b.len, digest);
    if (rc == 0 && stable)
        cache_put(k->qname, p.fp, b.p ? b.p : "", b.len, digest);
    if (rc == 0 && data) {
        size_t n = 0;
        *data = buf_steal(&b, &n);
        if (!*data)
            *data = xcalloc(1, 1);
        *len = n;
    }
    buf_cleanup(&b);
    plan_cleanup(&p);
    return rc;
}

/* SKILL.md of k as it is now, read beneath the skill folder. */
static int skill_md_get(const struct skill *k, char **data, size_t *len)
{
    char kdir[SKILL_DIR_MAX];
    struct stat st;
    int root = jail_root(skills_dir(k, kdir));
    if (root < 0)
        return -EIO;
    int fd = jail_open(root, "SKILL.md", &st, NULL);
    close(root);
    if (fd < 0)
        return -EIO;
    int rc = st.st_size > SKILL_MD_MAX ? -EFBIG : read_all(fd, (int64_t)st.st_size, data, len);
    close(fd);
    return rc;
}

/* Digest of k's artifact (SKILL.md digests come from manifest.c's cache). */
static int artifact_digest(const struct skill *k, char digest[DIGEST_LEN + 1])
{
    char kdir[SKILL_DIR_MAX];
    if (is_archive(k))
        return archive_get(k, NULL, NULL, digest);
    int64_t size;
    int root = jail_root(skills_dir(k, kdir));
    if (root < 0)
        return -EIO;
    int rc = manifest_digest(root, "SKILL.md", digest, &size, NULL);
    close(root);
    return rc < 0 ? -EIO : size > SKILL_MD_MAX ? -EFBIG : 0;
}

/* ---- the index ----------------------------------------------------------- */

/* Generation of the last snapshot whose unservable skills were logged. */
static atomic_uint_fast64_t logged_gen;

/* Entry i of s is in the index (listed, the first of its qname, and not
 * quarantined by --lock: an archive would hand out the unreviewed tree). */
static int indexed(const struct snapshot *s, const struct view *v, size_t i)
{
    if (!view_sees(v, i) || (s->gate && s->gate[i].reason))
        return 0;
    return listed(s->v[i]) && !(i && !strcmp(s->v[i - 1]->qname, s->v[i]->qname));
}

static void url_of(struct buf *b, const struct skill *k)
{
    /* ':' is encoded so a first segment can never read as a scheme (RFC
     * 3986 §4.2) */
    buf_pct_encode(b, k->qname, strlen(k->qname), "!$&'()*+,;=@/");
    buf_puts(b, is_archive(k) ? ".tar.gz" : "/SKILL.md");
}

/* Renders the index; digests[i] is entry i's digest, "" for none. */
static char *index_render(const struct snapshot *s, char (*digests)[DIGEST_LEN + 1],
                          size_t *len)
{
    struct buf b;
    int first = 1;
    buf_init(&b, 0);
    buf_puts(&b, "{\n  \"$schema\": \"" SCHEMA "\",\n  \"skills\": [");
    for (size_t i = 0; i < s->n; i++) {
        const struct skill *k = s->v[i];
        if (!digests[i][0])
            continue;
        buf_puts(&b, first ? "\n    {\n      \"name\": \"" : ",\n    {\n      \"name\": \"");
        first = 0;
        buf_json_escape(&b, k->name, strlen(k->name));
        buf_puts(&b, "\",\n      \"description\": \"");
        buf_json_escape(&b, k->description, strlen(k->description));
        buf_printf(&b, "\",\n      \"type\": \"%s\",\n      \"url\": \"",
                   is_archive(k) ? "archive" : "skill-md");
        struct buf u;
        buf_init(&u, 0);
        url_of(&u, k);
        buf_json_escape(&b, u.p, u.len);
        buf_cleanup(&u);
        buf_printf(&b, "\",\n      \"digest\": \"%s\"\n    }", digests[i]);
    }
    buf_puts(&b, first ? "]\n}\n" : "\n  ]\n}\n");
    return buf_steal(&b, len);
}

/* Why an artifact_digest or archive_get error leaves a skill out. */
static const char *left_out_why(int rc)
{
    return rc == -EFBIG     ? "over the 64 MiB archive limit"
           : rc == -ELIBACC ? "libarchive cannot be loaded (the log says why)"
                            : "its files cannot be read";
}

static int index_get(const struct snapshot *s, const struct view *v, char **body, size_t *len)
{
    char (*digests)[DIGEST_LEN + 1] = xcalloc(s->n ? s->n : 1, sizeof *digests);
    int log_now = atomic_exchange(&logged_gen, s->generation) != s->generation;
    for (size_t i = 0; i < s->n; i++) {
        if (!indexed(s, v, i))
            continue;
        int rc = artifact_digest(s->v[i], digests[i]);
        if (rc < 0) {
            digests[i][0] = '\0';
            if (log_now)
                log_warn("discovery: '%s' is left out of the index: %s", s->v[i]->qname,
                         left_out_why(rc));
        }
    }
    *body = index_render(s, digests, len);
    free(digests);
    return 0;
}

/* The indexed skill rest names ("<qname>/SKILL.md" or "<qname>.tar.gz"). */
static const struct skill *resolve(const struct snapshot *s, const struct view *v,
                                   const char *rest)
{
    size_t n = strlen(rest), qlen;
    int archive;
    if (n > 9 && !strcmp(rest + n - 9, "/SKILL.md")) {
        qlen = n - 9;
        archive = 0;
    } else if (n > 7 && !strcmp(rest + n - 7, ".tar.gz")) {
        qlen = n - 7;
        archive = 1;
    } else {
        return NULL;
    }
    int amb;
    const struct skill *k = skills_find(s, rest, qlen, &amb);
    if (!k || strlen(k->qname) != qlen || memcmp(k->qname, rest, qlen))
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == k)
            return indexed(s, v, i) && is_archive(k) == archive ? k : NULL;
    return NULL;
}

int discovery_get(const struct snapshot *s, const char *path, char **body, size_t *len,
                  const char **ctype)
{
    return discovery_get_view(s, NULL, path, body, len, ctype);
}

int discovery_get_view(const struct snapshot *s, const struct view *v, const char *path,
                       char **body, size_t *len, const char **ctype)
{
    size_t plen = strlen(DISCOVERY_PREFIX);
    *body = NULL;
    *len = 0;
    if (strncmp(path, DISCOVERY_PREFIX, plen))
        return -ENOENT;
    const char *rest = path + plen;
    if (!strcmp(rest, "index.json")) {
        *ctype = CT_JSON;
        return index_get(s, v, body, len);
    }
    const struct skill *k = resolve(s, v, rest);
    if (!k && strchr(rest, '%')) {
        char *dec = xstrdup(rest);
        if (pct_decode(dec, strlen(dec), dec, NULL) == 0)
            k = resolve(s, v, dec);
        free(dec);
    }
    if (!k)
        return -ENOENT;
    if (is_archive(k)) {
        char digest[DIGEST_LEN + 1];
        *ctype = CT_GZIP;
        return archive_get(k, body, len, digest);
    }
    *ctype = CT_MD;
    return skill_md_get(k, body, len);
}

/* ---- export ---------------------------------------------------------------- */

static int mkdir_one(const char *p)
{
    struct stat st;
    if (mkdir(p, 0755) == 0 || (errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode)))
        return 0;
    if (errno == EEXIST)
        errno = ENOTDIR;
    fprintf(stderr, "skill-mcp export: cannot create folder %s: %s\n", p, strerror(errno));
    return -1;
}

/* mkdir -p of path's components from offset from on (earlier ones exist). */
static int mkdirs(char *path, size_t from)
{
    for (char *p = path + from; *p; p++) {
        if (*p != '/' || p == path)
            continue;
        *p = '\0';
        int rc = mkdir_one(path);
        *p = '/';
        if (rc < 0)
            return -1;
    }
    return mkdir_one(path);
}

/* Writes base/rel (rel checked by jail_check) through a temporary file. */
static int write_file(const char *base, const char *rel, const char *data, size_t len)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    size_t blen = strlen(base);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", base, rel) >= sizeof path) {
        fprintf(stderr, "skill-mcp export: path too long: %s/%s\n", base, rel);
        return -1;
    }
    char *slash = strrchr(path, '/');
    if (slash > path + blen) {
        *slash = '\0';
        int rc = mkdirs(path, blen + 1);
        *slash = '/';
        if (rc < 0)
            return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "skill-mcp export: cannot write %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    int err = off < len ? (errno ? errno : EIO) : 0;
    if (close(fd) < 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) < 0)
        err = errno;
    if (err) {
        fprintf(stderr, "skill-mcp export: cannot write %s: %s\n", path, strerror(err));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int discovery_export(const struct snapshot *s, const char *dir)
{
    char base[PATH_MAX];
    if (!dir || !*dir) {
        fprintf(stderr, "skill-mcp export: no output folder given\n");
        return -1;
    }
    if ((size_t)snprintf(base, sizeof base, "%s/.well-known/agent-skills", dir) >= sizeof base) {
        fprintf(stderr, "skill-mcp export: output folder path too long\n");
        return -1;
    }
    /* Every archive would be left out, each "cannot be read", and the
     * export would still succeed: a site without its archives. */
    for (size_t i = 0; i < s->n; i++) {
        char dlerr[320];
        if (indexed(s, NULL, i) && is_archive(s->v[i])) {
            if (dynlib_need(DL_ARCHIVE, dlerr, sizeof dlerr) < 0) {
                fprintf(stderr, "skill-mcp export: %s\n", dlerr);
                return -1;
            }
            break;
        }
    }
    size_t dlen = strlen(dir);
    if (mkdir_one(dir) < 0 || mkdirs(base, dlen + 1) < 0)
        return -1;
    char (*digests)[DIGEST_LEN + 1] = xcalloc(s->n ? s->n : 1, sizeof *digests);
    size_t written = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        const struct skill *k = s->v[i];
        if (!indexed(s, NULL, i))
            continue;
        char *data = NULL;
        size_t len = 0;
        int r = is_archive(k) ? archive_get(k, &data, &len, digests[i])
                              : skill_md_get(k, &data, &len);
        if (r == 0)
            manifest_sha256(data, len, digests[i]);
        if (r < 0) {
            fprintf(stderr, "skill-mcp export: '%s' left out: %s\n", k->qname, left_out_why(r));
            digests[i][0] = '\0';
            free(data);
            continue;
        }
        struct buf rel;
        buf_init(&rel, 0);
        buf_printf(&rel, "%s%s", k->qname, is_archive(k) ? ".tar.gz" : "/SKILL.md");
        if (jail_check(rel.p, rel.len)) {
            fprintf(stderr, "skill-mcp export: '%s' left out: its name cannot be a file path\n",
                    k->qname);
            digests[i][0] = '\0';
        } else if (write_file(base, rel.p, data, len) < 0) {
            rc = -1;
        } else {
            written++;
        }
        buf_cleanup(&rel);
        free(data);
    }
    if (rc == 0) {
        size_t len;
        char *index = index_render(s, digests, &len);
        rc = write_file(base, "index.json", index, len);
        free(index);
    }
    free(digests);
    if (rc == 0)
        fprintf(stderr, "skill-mcp export: %zu skill(s) written to %s/index.json\n", written,
                base);
    return rc;
}
