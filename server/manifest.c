/*
 * manifest.c - see manifest.h. SHA-256 comes from OpenSSL's EVP interface.
 *
 * The cache is an open-addressing table keyed by (dev, inode); an entry
 * also holds mtime, ctime and size, and is replaced in place when a lookup
 * finds them changed, so an edited file costs one slot, not one per
 * version. ctime is in the key because no one can set it back (utimensat
 * sets mtime, and moves ctime): a lock judges skills by these digests, so
 * an edit must never hide behind a restored mtime. And a file changed in
 * the last RACY_NS is hashed but not cached: a second write of the same
 * size within one timestamp tick would leave every stat field as it was
 * (git's "racy clean" problem). Entries are never removed one by one: when the table would pass
 * MANIFEST_MAX_ENTRIES it is emptied and refilled on demand.
 */
#include "manifest.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jail.h"
#include "skills.h"
#include "util.h"

#define MANIFEST_MAX_ENTRIES (1u << 18)
#define MANIFEST_CHUNK (64u << 10)
#define RACY_NS 1000000000ll   /* > the coarse clock tick file times come from */

struct centry {
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns;
    int64_t ctime_ns;
    int64_t size;
    unsigned char md[32];
    int used;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct centry *cache;
static size_t cache_cap;            /* power of two, or 0 */
static size_t cache_n;
static atomic_uint_fast64_t n_hits, n_hashed;

static size_t slot_hash(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    return (size_t)h;
}

/* The slot holding (dev, ino), or the empty slot where it would go. Locked. */
static struct centry *slot_of(dev_t dev, ino_t ino)
{
    size_t mask = cache_cap - 1;
    for (size_t i = slot_hash(dev, ino) & mask;; i = (i + 1) & mask) {
        struct centry *e = &cache[i];
        if (!e->used || (e->dev == dev && e->ino == ino))
            return e;
    }
}

static int64_t ns_of(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static int cache_get(const struct stat *st, int64_t mtime_ns, unsigned char md[32])
{
    int hit = 0;
    pthread_mutex_lock(&cache_mu);
    if (cache_cap) {
        struct centry *e = slot_of(st->st_dev, st->st_ino);
        if (e->used && e->mtime_ns == mtime_ns && e->ctime_ns == ns_of(&st->st_ctim) &&
            e->size == (int64_t)st->st_size) {
            memcpy(md, e->md, 32);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

static void cache_put(const struct stat *st, int64_t mtime_ns, const unsigned char md[32])
{
    pthread_mutex_lock(&cache_mu);
    if (cache_n + 1 > MANIFEST_MAX_ENTRIES) {
        memset(cache, 0, cache_cap * sizeof *cache);
        cache_n = 0;
    }
    if ((cache_n + 1) * 10 > cache_cap * 7) {
        size_t ncap = cache_cap ? cache_cap * 2 : 1024;
        struct centry *old = cache;
        size_t ocap = cache_cap;
        cache = xcalloc(ncap, sizeof *cache);
        cache_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].used)
                *slot_of(old[i].dev, old[i].ino) = old[i];
        free(old);
    }
    struct centry *e = slot_of(st->st_dev, st->st_ino);
    if (!e->used)
        cache_n++;
    e->used = 1;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->mtime_ns = mtime_ns;
    e->ctime_ns = ns_of(&st->st_ctim);
    e->size = (int64_t)st->st_size;
    memcpy(e->md, md, 32);
    pthread_mutex_unlock(&cache_mu);
}

void manifest_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    free(cache);
    cache = NULL;
    cache_cap = cache_n = 0;
    pthread_mutex_unlock(&cache_mu);
}

void manifest_counters(uint64_t *hits, uint64_t *hashed)
{
    *hits = atomic_load(&n_hits);
    *hashed = atomic_load(&n_hashed);
}

/* SHA-256 of fd from offset 0 to its end; *len = bytes hashed. */
static int hash_fd(int fd, unsigned char md[32], int64_t *len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    char *buf = xmalloc(MANIFEST_CHUNK);
    unsigned int mdlen = 0;
    int64_t off = 0;
    int rc = -EIO;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    for (;;) {
        ssize_t r = pread(fd, buf, MANIFEST_CHUNK, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        if (EVP_DigestUpdate(ctx, buf, (size_t)r) != 1)
            goto out;
        off += r;
    }
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
        goto out;
    *len = off;
    rc = 0;
out:
    free(buf);
    EVP_MD_CTX_free(ctx);
    return rc;
}

void manifest_format_digest(const unsigned char md[32], char out[MANIFEST_DIGEST_LEN + 1])
{
    memcpy(out, "sha256:", 7);
    hex_encode(md, 32, out + 7);
}

void manifest_sha256(const void *data, size_t n, char out[MANIFEST_DIGEST_LEN + 1])
{
    unsigned char md[32] = {0};
    unsigned int len = 0;
    EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
    manifest_format_digest(md, out);
}

int manifest_digest(int rootfd, const char *rel, char digest[MANIFEST_DIGEST_LEN + 1],
                    int64_t *size, struct err *why)
{
    struct stat st;
    unsigned char md[32];
    int fd = jail_open(rootfd, rel, &st, why);
    if (fd < 0)
        return fd;
    int64_t mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (cache_get(&st, mtime_ns, md)) {
        atomic_fetch_add(&n_hits, 1);
        *size = (int64_t)st.st_size;
    } else {
        int64_t len = 0;
        if (hash_fd(fd, md, &len) < 0) {
            close(fd);
            err_set(why, 0, 0, "the file cannot be read");
            return -EIO;
        }
        atomic_fetch_add(&n_hashed, 1);
        /* Cache only a file that held still while it was read, and whose
         * last change (ctime: the kernel sets it on every write; mtime may
         * be anything) is older than a timestamp tick. */
        struct stat after;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (len == (int64_t)st.st_size && fstat(fd, &after) == 0 &&
            ns_of(&after.st_mtim) == mtime_ns && ns_of(&after.st_ctim) == ns_of(&st.st_ctim) &&
            after.st_size == st.st_size && ns_of(&now) - ns_of(&st.st_ctim) > RACY_NS)
            cache_put(&st, mtime_ns, md);
        *size = len;
    }
    close(fd);
    manifest_format_digest(md, digest);
    return 0;
}

static void add_file(struct manifest *m, size_t *cap, const char *path, int64_t size,
                     const char *digest)
{
    if (m->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        m->v = xrealloc(m->v, *cap * sizeof *m->v);
    }
    struct manifest_file *f = &m->v[m->n++];
    f->path = xstrdup(path);
    f->size = size;
    memcpy(f->digest, digest, MANIFEST_DIGEST_LEN + 1);
    m->total += size;
}

int manifest_build(const struct skill *k, struct manifest *m, struct err *why)
{
    char kdir[SKILL_DIR_MAX];
    char digest[MANIFEST_DIGEST_LEN + 1];
    int64_t size;
    size_t cap = 0;
    memset(m, 0, sizeof *m);
    int root = jail_root(skills_dir(k, kdir));
    if (root < 0) {
        err_set(why, 0, 0, "the skill folder cannot be opened");
        return -EIO;
    }
    int rc = manifest_digest(root, "SKILL.md", digest, &size, why);
    if (rc < 0) {
        close(root);
        return rc;
    }
    add_file(m, &cap, "SKILL.md", size, digest);
    for (size_t i = 0; i < k->nfiles; i++) {
        if (manifest_digest(root, k->files[i].path, digest, &size, NULL) < 0) {
            m->skipped++;
            continue;
        }
        add_file(m, &cap, k->files[i].path, size, digest);
    }
    close(root);
    return 0;
}

void manifest_cleanup(struct manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    memset(m, 0, sizeof *m);
}
