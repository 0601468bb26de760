/*
 * test_manifest.c - skill file manifests (server/manifest.c): SHA-256
 * digests against independent references (EVP one-shot and sha256sum), the
 * (dev, inode, mtime_ns, size) cache, edits, and links leaving the skill.
 */
#include "harness.h"
#include "jail.h"
#include "manifest.h"
#include "skills.h"
#include "tmptree.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[64];
static char dir[128];

static void put(const char *rel, const char *data, size_t len) { tt_put(dir, rel, data, len); }

/* "sha256:<hex>" of the file's bytes, by EVP one-shot. */
static void reference(const char *rel, char out[MANIFEST_DIGEST_LEN + 1])
{
    char p[256], buf[1 << 16];
    unsigned char md[32];
    unsigned int n;
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "rb");
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL);
    strcpy(out, "sha256:");
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

/* The same by the sha256sum program. */
static int sha256sum(const char *rel, char out[MANIFEST_DIGEST_LEN + 1])
{
    char cmd[300], hex[80] = "";
    snprintf(cmd, sizeof cmd, "sha256sum '%s/%s'", dir, rel);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int ok = fscanf(p, "%64s", hex) == 1;
    pclose(p);
    if (!ok || strlen(hex) != 64)
        return -1;
    snprintf(out, MANIFEST_DIGEST_LEN + 1, "sha256:%s", hex);
    return 0;
}

static struct skill_file files[] = {
    {"assets/b.bin", 0, 0}, {"escape", 0, 0}, {"inner-link.md", 0, 0}, {"references/a.md", 0, 0},
};
static struct skill k;

static const struct manifest_file *find(const struct manifest *m, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->v[i].path, path))
            return &m->v[i];
    return NULL;
}

static void setup(void)
{
    tt_mkdtemp(base, sizeof base, "manifest");
    snprintf(dir, sizeof dir, "%s/x", base);
    tt_mkdir(base, "x");
    tt_mkdir(dir, "references");
    tt_mkdir(dir, "assets");
    put("SKILL.md", "---\nname: x\ndescription: d\n---\n# X\n", 33);
    put("references/a.md", "# A\nhello\n", 10);
    put("assets/b.bin", "\x00\xff\x01", 3);
    tt_put(base, "outside.txt", "secret\n", 7);
    tt_link(dir, "../outside.txt", "escape");
    tt_link(dir, "references/a.md", "inner-link.md");
    k.name = k.qname = "x";
    k.dir_abs = dir;
    k.files = files;
    k.nfiles = sizeof files / sizeof *files;
}

TEST(digests_match_references)
{
    struct manifest m;
    struct err why = {0};
    char want[MANIFEST_DIGEST_LEN + 1], sum[MANIFEST_DIGEST_LEN + 1];
    manifest_cache_clear();
    CHECK_EQ(manifest_build(&k, &m, &why), 0);
    CHECK_STR(m.v[0].path, "SKILL.md");
    CHECK_EQ(m.n, 4);           /* SKILL.md + 3; the escaping link is left out */
    CHECK_EQ(m.skipped, 1);
    CHECK(!find(&m, "escape"));
    const char *rels[] = {"SKILL.md", "references/a.md", "assets/b.bin"};
    int64_t total = 0;
    for (size_t i = 0; i < 3; i++) {
        const struct manifest_file *f = find(&m, rels[i]);
        CHECK(f != NULL);
        reference(rels[i], want);
        CHECK_STR(f->digest, want);
        CHECK_EQ(sha256sum(rels[i], sum), 0);
        CHECK_STR(f->digest, sum);
        struct stat st;
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rels[i]);
        stat(p, &st);
        CHECK_EQ(f->size, st.st_size);
        total += f->size;
    }
    /* a link that stays inside the skill is its target's bytes */
    CHECK_STR(find(&m, "inner-link.md")->digest, find(&m, "references/a.md")->digest);
    total += find(&m, "inner-link.md")->size;
    CHECK_EQ(m.total, total);
    /* digest format: sha256: + 64 lowercase hex */
    for (size_t i = 0; i < m.n; i++) {
        CHECK_EQ(strlen(m.v[i].digest), 71);
        CHECK_EQ(strspn(m.v[i].digest + 7, "0123456789abcdef"), 64);
    }
    manifest_cleanup(&m);
}

TEST(escaping_link_refused)
{
    char d[MANIFEST_DIGEST_LEN + 1];
    int64_t size;
    struct err why = {0};
    int root = jail_root(dir);
    CHECK(root >= 0);
    CHECK_EQ(manifest_digest(root, "escape", d, &size, &why), -EXDEV);
    CHECK_STR(why.msg, "the path leads outside the skill folder");
    CHECK_EQ(manifest_digest(root, "../outside.txt", d, &size, &why), -EINVAL);
    CHECK_EQ(manifest_digest(root, "references", d, &size, &why), -EISDIR);
    CHECK_EQ(manifest_digest(root, "nope.md", d, &size, &why), -ENOENT);
    close(root);
}

TEST(cache_and_edits)
{
    struct manifest m1, m2, m3, m4;
    struct err why;
    uint64_t h0, x0, h1, x1;
    char want[MANIFEST_DIGEST_LEN + 1], p[256];
    /* files changed within a timestamp tick are never cached: age them */
    usleep(1100000);
    manifest_cache_clear();
    manifest_counters(&h0, &x0);
    CHECK_EQ(manifest_build(&k, &m1, &why), 0);
    manifest_counters(&h1, &x1);
    /* every file hashed once; inner-link.md is references/a.md's inode */
    CHECK_EQ(x1 - x0, m1.n - 1);
    CHECK_EQ(manifest_build(&k, &m2, &why), 0);
    manifest_counters(&h0, &x0);
    CHECK_EQ(x0, x1);           /* nothing rehashed */
    CHECK_EQ(h0 - h1, m2.n);
    for (size_t i = 0; i < m1.n; i++)
        CHECK_STR(m1.v[i].digest, m2.v[i].digest);

    /* an edit that changes the size is rehashed at once */
    put("references/a.md", "# A\nhello, edited\n", 18);
    CHECK_EQ(manifest_build(&k, &m3, &why), 0);
    reference("references/a.md", want);
    CHECK_STR(find(&m3, "references/a.md")->digest, want);
    CHECK(strcmp(find(&m3, "references/a.md")->digest, find(&m1, "references/a.md")->digest));
    CHECK_EQ(find(&m3, "references/a.md")->size, 18);

    /* same size, new mtime: rehashed too */
    struct stat st;
    snprintf(p, sizeof p, "%s/assets/b.bin", dir);
    stat(p, &st);
    put("assets/b.bin", "\x01\x02\x03", 3);
    struct timespec ts[2] = {st.st_atim, st.st_mtim};
    ts[1].tv_sec += 7;
    utimensat(AT_FDCWD, p, ts, 0);
    CHECK_EQ(manifest_build(&k, &m4, &why), 0);
    reference("assets/b.bin", want);
    CHECK_STR(find(&m4, "assets/b.bin")->digest, want);

    /* An edit behind a restored mtime (same size) is still seen: ctime moved.
     * Until the file is older than a timestamp tick it is hashed on every
     * build (never cached), then cached again. */
    put("assets/b.bin", "\x07\x07\x07", 3);
    utimensat(AT_FDCWD, p, ts, 0);
    manifest_counters(&h0, &x0);
    struct manifest m5;
    CHECK_EQ(manifest_build(&k, &m5, &why), 0);
    manifest_counters(&h1, &x1);
    CHECK(x1 - x0 >= 1);
    reference("assets/b.bin", want);
    CHECK_STR(find(&m5, "assets/b.bin")->digest, want);
    CHECK(strcmp(find(&m5, "assets/b.bin")->digest, find(&m4, "assets/b.bin")->digest));
    struct manifest m6;
    CHECK_EQ(manifest_build(&k, &m6, &why), 0);
    manifest_counters(&h0, &x0);
    CHECK(x0 - x1 >= 1);        /* changed just now: not cached yet */
    manifest_cleanup(&m6);
    usleep(1100000);
    CHECK_EQ(manifest_build(&k, &m6, &why), 0);
    manifest_counters(&h1, &x1);
    CHECK(x1 - x0 >= 1);        /* old enough now: hashed once more, and kept */
    manifest_cleanup(&m6);
    CHECK_EQ(manifest_build(&k, &m6, &why), 0);
    manifest_counters(&h0, &x0);
    CHECK_EQ(x0, x1);
    manifest_cleanup(&m6);
    put("assets/b.bin", "\x01\x02\x03", 3);
    utimensat(AT_FDCWD, p, ts, 0);

    manifest_cleanup(&m1);
    manifest_cleanup(&m2);
    manifest_cleanup(&m3);
    manifest_cleanup(&m4);
    manifest_cleanup(&m5);
}

TEST(missing_skill_md)
{
    struct skill g = k;
    struct manifest m;
    struct err why = {0};
    char p[256];
    snprintf(p, sizeof p, "%s/references", dir);
    g.dir_abs = p;
    CHECK_EQ(manifest_build(&g, &m, &why), -ENOENT);
    CHECK_STR(why.msg, "no such file in this skill");
    g.dir_abs = "/nonexistent/skill";
    CHECK(manifest_build(&g, &m, &why) < 0);
    CHECK_STR(why.msg, "the skill folder cannot be opened");
}

static void *worker(void *arg)
{
    int *bad = arg;
    for (int i = 0; i < 200; i++) {
        struct manifest m;
        if (manifest_build(&k, &m, NULL) < 0 || m.n != 4)
            (*bad)++;
        else
            manifest_cleanup(&m);
        if (i % 50 == 0)
            manifest_cache_clear();
    }
    return NULL;
}

TEST(threads)
{
    pthread_t t[4];
    int bad[4] = {0};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, &bad[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(bad[i], 0);
}

int main(void)
{
    setup();
    RUN(digests_match_references);
    RUN(escaping_link_refused);
    RUN(cache_and_edits);
    RUN(missing_skill_md);
    RUN(threads);
    tt_rm_rf(base);
    DONE();
}
