/*
 * test_discovery.c - the Agent Skills discovery index (server/discovery.c):
 * index shape, skill-md vs archive, digests over the served bytes,
 * reproducible archives (same process, another process, another copy of the
 * tree), archive members read back with libarchive, links leaving the
 * skill, unknown paths, edits, and `export`.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "discovery.h"
#include "harness.h"
#include "tmptree.h"
#include "skills.h"
#include "util.h"

#define P DISCOVERY_PREFIX
#define SCHEMA "https://schemas.agentskills.io/discovery/0.2.0/schema.json"

static char base[64];
static char roota[128], rootb[128];

static void writef(const char *root, const char *rel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void writef(const char *root, const char *rel, const char *fmt, ...)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void skill_md(const char *root, const char *folder, const char *name, const char *desc)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/SKILL.md", folder);
    writef(root, rel, "---\nname: %s\ndescription: %s\n---\n# %s\n\nDo the thing.\n", name, desc,
           name);
}

#define LONGDIR "references/a-rather-long-folder-name-that-goes-on-and-on/and-another-one-below-it"
#define LONGFILE LONGDIR "/with-a-file-whose-name-alone-is-quite-long-as-well.md"

/* The same library in root, with fixed contents. */
static void build_tree(const char *root)
{
    mkdir(root, 0755);
    skill_md(root, "solo", "solo", "Only a SKILL.md \"quoted\"");
    skill_md(root, "pack", "pack", "A skill with files");
    writef(root, "pack/references/a.md", "# A\nhello\n");
    writef(root, "pack/scripts/run.py", "print('hi')\n");
    writef(root, "pack/z.txt", "last\n");
    writef(root, "pack/" LONGFILE, "deep\n");
    writef(root, "pack/r\xc3\xa9sum\xc3\xa9.md", "utf-8 name\n");
    writef(root, "pack/.hidden", "not served\n");
    skill_md(root, "acme/billing", "billing", "Team billing");
    writef(root, "acme/billing/references/refunds.md", "refunds\n");
    skill_md(root, "my team/tool", "tool", "Team with a space");
    skill_md(root, "renamed-dir", "other-name", "Folder differs from name");
    skill_md(root, "Bad_Name", "Bad_Name", "Breaks the naming rules");
    /* A link leaving the skill, and one staying inside it. */
    char p[512], out[512];
    snprintf(out, sizeof out, "%s/../outside.txt", root);
    FILE *f = fopen(out, "w");
    fputs("secret outside\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/pack/leak.txt", root);
    if (symlink("../../outside.txt", p) < 0) {
        perror("symlink");
        exit(2);
    }
    snprintf(p, sizeof p, "%s/pack/inner.md", root);
    if (symlink("references/a.md", p) < 0) {
        perror("symlink");
        exit(2);
    }
}

static void rm_rf(const char *p)
{
    tt_rm_rf(p);
}

static struct skills *open_lib(const char *root)
{
    const char *roots[] = {root};
    return skills_new(roots, 1, NULL, NULL, NULL, NULL);
}

static void sha_hex(const void *data, size_t len, char out[72])
{
    unsigned char md[32];
    unsigned int n;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 8);
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static json_t *get_index(const struct snapshot *s)
{
    char *body;
    size_t len;
    const char *ct;
    if (discovery_get(s, P "index.json", &body, &len, &ct) != 0)
        return NULL;
    json_t *j = json_loadb(body, len, 0, NULL);
    free(body);
    return j;
}

static json_t *entry_named(json_t *idx, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(idx, "skills"), i, e)
        if (!strcmp(json_string_value(json_object_get(e, "name")), name))
            return e;
    return NULL;
}

/* discovery_get of the artifact at url (relative to the index). */
static int fetch(const struct snapshot *s, const char *url, char **body, size_t *len,
                 const char **ct)
{
    char path[512];
    snprintf(path, sizeof path, P "%s", url);
    return discovery_get(s, path, body, len, ct);
}

TEST(index_shape)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    char *body;
    size_t len;
    const char *ct;
    CHECK_EQ(discovery_get(s, P "index.json", &body, &len, &ct), 0);
    CHECK_STR(ct, "application/json");
    CHECK(len > 0 && body[len - 1] == '\n');
    json_error_t e;
    json_t *idx = json_loadb(body, len, 0, &e);
    free(body);
    CHECK(idx);
    CHECK_STR(json_string_value(json_object_get(idx, "$schema")), SCHEMA);
    json_t *sk = json_object_get(idx, "skills");
    CHECK(json_is_array(sk));
    /* qualified-name order; renamed-dir and Bad_Name are left out */
    const char *want[][4] = {
        {"billing", "Team billing", "archive", "acme/billing.tar.gz"},
        {"tool", "Team with a space", "skill-md", "my%20team/tool/SKILL.md"},
        {"pack", "A skill with files", "archive", "pack.tar.gz"},
        {"solo", "Only a SKILL.md \"quoted\"", "skill-md", "solo/SKILL.md"},
    };
    CHECK_EQ(json_array_size(sk), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *x = json_array_get(sk, i);
        CHECK_EQ(json_object_size(x), 5);
        CHECK_STR(json_string_value(json_object_get(x, "name")), want[i][0]);
        CHECK_STR(json_string_value(json_object_get(x, "description")), want[i][1]);
        CHECK_STR(json_string_value(json_object_get(x, "type")), want[i][2]);
        CHECK_STR(json_string_value(json_object_get(x, "url")), want[i][3]);
        const char *d = json_string_value(json_object_get(x, "digest"));
        CHECK(d && strlen(d) == 71 && !strncmp(d, "sha256:", 7));
        CHECK_EQ(strspn(d + 7, "0123456789abcdef"), 64);
    }
    json_decref(idx);
    skills_release(s);
    skills_free(S);
}

TEST(digests_are_of_the_served_bytes)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    json_t *idx = get_index(s);
    CHECK(idx);
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(idx, "skills"), i, x) {
        char *body, hex[72];
        size_t len;
        const char *ct;
        const char *url = json_string_value(json_object_get(x, "url"));
        const char *type = json_string_value(json_object_get(x, "type"));
        CHECK_EQ(fetch(s, url, &body, &len, &ct), 0);
        sha_hex(body, len, hex);
        CHECK_STR(hex, json_string_value(json_object_get(x, "digest")));
        if (!strcmp(type, "archive")) {
            CHECK_STR(ct, "application/gzip");
            CHECK(len > 18 && (unsigned char)body[0] == 0x1f && (unsigned char)body[1] == 0x8b);
            /* no name, no timestamp in the gzip header */
            CHECK_EQ(body[3] & 0x08, 0);
            CHECK(!memcmp(body + 4, "\0\0\0\0", 4));
        } else {
            CHECK(!strncmp(ct, "text/markdown", 13));
            CHECK(len > 4 && !memcmp(body, "---\n", 4));
        }
        free(body);
    }
    /* The skill-md artifact is SKILL.md, byte for byte. */
    char *body;
    size_t len;
    const char *ct;
    CHECK_EQ(fetch(s, "solo/SKILL.md", &body, &len, &ct), 0);
    CHECK_MEM(body, len, "---\nname: solo\ndescription: Only a SKILL.md \"quoted\"\n---\n"
                         "# solo\n\nDo the thing.\n");
    free(body);
    json_decref(idx);
    skills_release(s);
    skills_free(S);
}

static int archive_bytes(const struct snapshot *s, const char *url, char **body, size_t *len)
{
    const char *ct;
    return fetch(s, url, body, len, &ct);
}

TEST(archives_are_reproducible)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    char *a1, *a2, *b1;
    size_t l1, l2, lb;
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a1, &l1), 0);
    discovery_cache_clear();
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a2, &l2), 0);
    CHECK(l1 == l2 && !memcmp(a1, a2, l1));
    free(a2);

    /* Another process (another pid, another clock reading). */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/child.tgz", base);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        sleep(1);
        discovery_cache_clear();
        char *c;
        size_t lc;
        FILE *f = fopen(tmp, "wb");
        if (!f || archive_bytes(s, "pack.tar.gz", &c, &lc) != 0)
            _exit(1);
        fwrite(c, 1, lc, f);
        fclose(f);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    FILE *f = fopen(tmp, "rb");
    CHECK(f);
    char *c = xmalloc(l1 + 16);
    size_t lc = fread(c, 1, l1 + 16, f);
    fclose(f);
    CHECK(lc == l1 && !memcmp(a1, c, l1));
    free(c);

    /* A second copy of the tree: other inodes, other mtimes, same bytes. */
    struct skills *S2 = open_lib(rootb);
    struct snapshot *s2 = skills_acquire(S2);
    CHECK_EQ(archive_bytes(s2, "pack.tar.gz", &b1, &lb), 0);
    CHECK(lb == l1 && !memcmp(a1, b1, l1));
    free(b1);
    char *i1, *i2;
    size_t li1, li2;
    const char *ct;
    CHECK_EQ(discovery_get(s, P "index.json", &i1, &li1, &ct), 0);
    CHECK_EQ(discovery_get(s2, P "index.json", &i2, &li2, &ct), 0);
    CHECK(li1 == li2 && !memcmp(i1, i2, li1));
    free(i1);
    free(i2);
    skills_release(s2);
    skills_free(S2);

    free(a1);
    skills_release(s);
    skills_free(S);
}

static const char *entry_name(struct archive_entry *e)
{
    const char *p = archive_entry_pathname_utf8(e);
    if (!p)
        p = archive_entry_pathname(e);
    return p ? p : "";
}

TEST(archive_members_sorted_with_fixed_metadata)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    char *body;
    size_t len;
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &body, &len), 0);
    struct archive *a = archive_read_new();
    archive_read_support_filter_gzip(a);
    archive_read_support_format_all(a);
    CHECK_EQ(archive_read_open_memory(a, body, len), ARCHIVE_OK);
    const char *want[] = {
        "pack/",
        "pack/SKILL.md",
        "pack/inner.md",
        "pack/references/",
        "pack/references/a-rather-long-folder-name-that-goes-on-and-on/",
        "pack/" LONGDIR "/",
        "pack/" LONGFILE,
        "pack/references/a.md",
        "pack/r\xc3\xa9sum\xc3\xa9.md",
        "pack/scripts/",
        "pack/scripts/run.py",
        "pack/z.txt",
    };
    size_t nwant = sizeof want / sizeof *want, n = 0;
    struct archive_entry *e;
    char prev[1024] = "";
    int r;
    /* ARCHIVE_WARN: this test runs in the "C" locale, where the reader cannot
     * convert the UTF-8 name; archive_entry_pathname_utf8() still has it. */
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        const char *path = entry_name(e);
        CHECK(n < nwant);
        CHECK_STR(path, want[n]);
        CHECK(strcmp(prev, path) < 0);
        snprintf(prev, sizeof prev, "%s", path);
        int dir = archive_entry_filetype(e) == AE_IFDIR;
        CHECK_EQ(dir, path[strlen(path) - 1] == '/');
        CHECK_EQ(archive_entry_perm(e), dir ? 0755 : 0644);
        CHECK_EQ(archive_entry_mtime(e), 0);
        CHECK_EQ(archive_entry_mtime_nsec(e), 0);
        CHECK_EQ(archive_entry_uid(e), 0);
        CHECK_EQ(archive_entry_gid(e), 0);
        const char *un = archive_entry_uname(e), *gn = archive_entry_gname(e);
        CHECK(!un || !*un);
        CHECK(!gn || !*gn);
        CHECK(!strstr(path, "leak") && !strstr(path, ".hidden"));
        if (!dir) {
            char data[256];
            la_ssize_t got = archive_read_data(a, data, sizeof data);
            CHECK(got >= 0 && got == archive_entry_size(e));
            if (!strcmp(path, "pack/inner.md") || !strcmp(path, "pack/references/a.md"))
                CHECK_MEM(data, (size_t)got, "# A\nhello\n");
            if (!strcmp(path, "pack/z.txt"))
                CHECK_MEM(data, (size_t)got, "last\n");
        }
        n++;
    }
    CHECK_EQ(r, ARCHIVE_EOF);
    CHECK_EQ(n, nwant);
    archive_read_free(a);
    /* The link leaving the skill brings nothing in, by any name. */
    CHECK(!memmem(body, len, "secret outside", 14));
    free(body);
    skills_release(s);
    skills_free(S);
}

TEST(escaping_link_never_archived)
{
    /* Even when the scan listed it: a link swapped in after the scan is
     * refused by the jail when the archive is built. */
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    char p[512], *body;
    size_t len;
    snprintf(p, sizeof p, "%s/pack/z.txt", roota);
    CHECK_EQ(rename(p, "/tmp/skill-discovery-z.bak"), 0);
    CHECK_EQ(symlink("../../outside.txt", p), 0);
    int rc = archive_bytes(s, "pack.tar.gz", &body, &len);
    unlink(p);
    CHECK_EQ(rename("/tmp/skill-discovery-z.bak", p), 0);
    CHECK_EQ(rc, 0);
    struct archive *a = archive_read_new();
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    CHECK_EQ(archive_read_open_memory(a, body, len), ARCHIVE_OK);
    struct archive_entry *e;
    int found = 0;
    while (archive_read_next_header(a, &e) >= ARCHIVE_WARN)
        if (!strcmp(entry_name(e), "pack/z.txt"))
            found = 1;
    archive_read_free(a);
    CHECK(!found);
    CHECK(!memmem(body, len, "secret", 6));
    free(body);
    skills_release(s);
    skills_free(S);
}

TEST(unknown_paths)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    const char *bad[] = {
        "/.well-known/agent-skills/", P "nope.tar.gz", P "nope/SKILL.md",
        P "solo.tar.gz",            /* skill-md skill as an archive */
        P "pack/SKILL.md",          /* archive skill as skill-md */
        P "billing.tar.gz",         /* team skill by bare name */
        P "renamed-dir/SKILL.md", P "other-name/SKILL.md", P "Bad_Name/SKILL.md",
        P "pack/../solo/SKILL.md", P "solo/../solo/SKILL.md", P "index.json/",
        P "index.jsonx", P "pack.tar", P "%2e%2e/solo/SKILL.md", P "solo%00/SKILL.md",
        P "solo%2/SKILL.md", "/index.json", "/.well-known/agent-skills", "/mcp", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *body = (char *)1;
        size_t len = 1;
        const char *ct = NULL;
        int rc = discovery_get(s, bad[i], &body, &len, &ct);
        if (rc != -ENOENT)
            H_FAIL("%s: %d", bad[i], rc);
        CHECK_EQ(rc, -ENOENT);
        CHECK(body == NULL);
    }
    /* A team with a space answers encoded and decoded. */
    char *body;
    size_t len;
    const char *ct;
    CHECK_EQ(discovery_get(s, P "my%20team/tool/SKILL.md", &body, &len, &ct), 0);
    free(body);
    CHECK_EQ(discovery_get(s, P "my team/tool/SKILL.md", &body, &len, &ct), 0);
    free(body);
    CHECK_EQ(discovery_get(s, P "acme/billing.tar.gz", &body, &len, &ct), 0);
    free(body);
    skills_release(s);
    skills_free(S);
}

static const char *digest_of(json_t *idx, const char *name)
{
    json_t *e = entry_named(idx, name);
    return e ? json_string_value(json_object_get(e, "digest")) : NULL;
}

TEST(edit_changes_digest)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/edit", base);
    build_tree(tmp);
    struct skills *S = open_lib(tmp);
    struct snapshot *s = skills_acquire(S);
    json_t *before = get_index(s);
    CHECK(before);
    /* Same snapshot, edited file: the stat revalidation sees it. */
    writef(tmp, "pack/references/a.md", "# A\nhello, edited\n");
    writef(tmp, "solo/SKILL.md", "---\nname: solo\ndescription: Only a SKILL.md\n---\n# s2\n");
    json_t *after = get_index(s);
    CHECK(after);
    CHECK(strcmp(digest_of(before, "pack"), digest_of(after, "pack")));
    CHECK(strcmp(digest_of(before, "solo"), digest_of(after, "solo")));
    CHECK_STR(digest_of(before, "billing"), digest_of(after, "billing"));
    char *body, hex[72];
    size_t len;
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &body, &len), 0);
    sha_hex(body, len, hex);
    CHECK_STR(hex, digest_of(after, "pack"));
    CHECK(memmem(body, len, "edited", 6) == NULL); /* compressed */
    free(body);
    /* A new file after a rescan; a skill-md that gains a file turns archive. */
    writef(tmp, "solo/notes.md", "notes\n");
    skills_release(s);
    skills_rescan(S, 1, NULL);
    s = skills_acquire(S);
    json_t *third = get_index(s);
    json_t *e = entry_named(third, "solo");
    CHECK(e);
    CHECK_STR(json_string_value(json_object_get(e, "type")), "archive");
    CHECK_STR(json_string_value(json_object_get(e, "url")), "solo.tar.gz");
    json_decref(before);
    json_decref(after);
    json_decref(third);
    skills_release(s);
    skills_free(S);
    rm_rf(tmp);
}

/* An edit of the same size with its mtime put back (touch -d, tar, rsync -t)
 * keeps device, inode, size and mtime: the cached archive must still go. */
TEST(same_size_edit_with_mtime_restored)
{
    char tmp[128], path[256];
    snprintf(tmp, sizeof tmp, "%s/restored", base);
    build_tree(tmp);
    snprintf(path, sizeof path, "%s/pack/references/a.md", tmp);
    struct stat st0;
    CHECK_EQ(stat(path, &st0), 0);
    /* old enough to be cached: nothing changed within the last second */
    struct timespec nap = {1, 200000000};
    nanosleep(&nap, NULL);
    struct skills *S = open_lib(tmp);
    struct snapshot *s = skills_acquire(S);
    discovery_cache_clear();
    char *a1, *a2, *a3;
    size_t l1, l2, l3;
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a1, &l1), 0);
    CHECK_EQ(discovery_cache_count(), 1);  /* held still and old enough: cached */
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a2, &l2), 0);
    CHECK(l1 == l2 && !memcmp(a1, a2, l1));
    /* rewrite in place, same length, then restore the old mtime */
    FILE *f = fopen(path, "r+");
    CHECK(f);
    char old[256];
    size_t n = fread(old, 1, sizeof old, f);
    CHECK(n > 2);
    old[0] = old[0] == 'Z' ? 'Y' : 'Z';
    rewind(f);
    CHECK_EQ(fwrite(old, 1, n, f), n);
    fclose(f);
    struct timespec times[2] = {st0.st_atim, st0.st_mtim};
    CHECK_EQ(utimensat(AT_FDCWD, path, times, 0), 0);
    struct stat st1;
    CHECK_EQ(stat(path, &st1), 0);
    CHECK(st1.st_ino == st0.st_ino && st1.st_size == st0.st_size &&
          st1.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
          st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec);
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a3, &l3), 0);
    CHECK(l3 != l1 || memcmp(a3, a1, l1) != 0);
    /* just changed (ctime is now): rebuilt, and not cached */
    discovery_cache_clear();
    free(a3);
    CHECK_EQ(archive_bytes(s, "pack.tar.gz", &a3, &l3), 0);
    CHECK_EQ(discovery_cache_count(), 0);
    free(a1);
    free(a2);
    free(a3);
    skills_release(s);
    skills_free(S);
    rm_rf(tmp);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct buf b;
    buf_init(&b, 0);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    char *p = buf_steal(&b, len);
    return p ? p : xcalloc(1, 1);
}

/* Every regular file under a, by relative path, equals the one under b,
 * and both hold the same set. Returns the number of files, or -1. */
static int count_cb_n;
static char cmp_other[256], cmp_base[256];
static int cmp_bad;
static int cmp_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag != FTW_F)
        return 0;
    char other[1024];
    size_t la, lb;
    snprintf(other, sizeof other, "%s%s", cmp_other, p + strlen(cmp_base));
    char *a = slurp(p, &la), *b = slurp(other, &lb);
    if (!a || !b || la != lb || memcmp(a, b, la)) {
        printf("# differs: %s vs %s\n", p, other);
        cmp_bad = 1;
    }
    free(a);
    free(b);
    count_cb_n++;
    return 0;
}

static int tree_compare(const char *a, const char *b)
{
    snprintf(cmp_base, sizeof cmp_base, "%s", a);
    snprintf(cmp_other, sizeof cmp_other, "%s", b);
    count_cb_n = 0;
    cmp_bad = 0;
    nftw(a, cmp_cb, 16, FTW_PHYS);
    return cmp_bad ? -1 : count_cb_n;
}

TEST(export_matches_served_bytes)
{
    struct skills *S = open_lib(roota);
    struct snapshot *s = skills_acquire(S);
    char d1[128], d2[128], p[512];
    snprintf(d1, sizeof d1, "%s/out1", base);
    snprintf(d2, sizeof d2, "%s/out2/nested", base);
    CHECK_EQ(discovery_export(s, d1), 0);
    discovery_cache_clear();
    snprintf(p, sizeof p, "%s/out2", base);
    mkdir(p, 0755);
    CHECK_EQ(discovery_export(s, d2), 0);

    /* index.json equals what is served, and every artifact too */
    char *served, *file;
    size_t ls, lf;
    const char *ct;
    CHECK_EQ(discovery_get(s, P "index.json", &served, &ls, &ct), 0);
    snprintf(p, sizeof p, "%s/.well-known/agent-skills/index.json", d1);
    file = slurp(p, &lf);
    CHECK(file && lf == ls && !memcmp(file, served, ls));
    json_t *idx = json_loadb(file, lf, 0, NULL);
    free(served);
    free(file);
    CHECK(idx);
    const char *paths[] = {"pack.tar.gz", "acme/billing.tar.gz", "solo/SKILL.md",
                           "my team/tool/SKILL.md"};
    for (size_t i = 0; i < 4; i++) {
        char hex[72];
        CHECK_EQ(fetch(s, paths[i], &served, &ls, &ct), 0);
        snprintf(p, sizeof p, "%s/.well-known/agent-skills/%s", d1, paths[i]);
        file = slurp(p, &lf);
        CHECK(file && lf == ls && !memcmp(file, served, ls));
        sha_hex(file, lf, hex);
        free(served);
        free(file);
        int found = 0;
        size_t j;
        json_t *x;
        json_array_foreach(json_object_get(idx, "skills"), j, x)
            found |= !strcmp(json_string_value(json_object_get(x, "digest")), hex);
        CHECK(found);
    }
    json_decref(idx);
    /* Nothing for skills left out of the index. */
    snprintf(p, sizeof p, "%s/.well-known/agent-skills/renamed-dir", d1);
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof p, "%s/.well-known/agent-skills/Bad_Name", d1);
    CHECK(access(p, F_OK) != 0);

    /* Two exports of the same tree are byte-identical, file for file. */
    CHECK_EQ(tree_compare(d1, d2), 5);
    CHECK_EQ(tree_compare(d2, d1), 5);
    /* Re-exporting over an export gives the same files. */
    CHECK_EQ(discovery_export(s, d1), 0);
    CHECK_EQ(tree_compare(d1, d2), 5);

    /* An export where a file stands in the way fails with -1. */
    snprintf(p, sizeof p, "%s/blocker", base);
    FILE *f = fopen(p, "w");
    fclose(f);
    fprintf(stderr, "# (the next message is expected)\n");
    CHECK_EQ(discovery_export(s, p), -1);

    skills_release(s);
    skills_free(S);
}

static struct snapshot *shared_snap;
static atomic_int race_bad;

static void *racer(void *arg)
{
    for (int i = 0; i < 20; i++) {
        char *body;
        size_t len;
        const char *ct;
        if (discovery_get(shared_snap, i % 2 ? P "pack.tar.gz" : P "index.json", &body, &len,
                          &ct) != 0)
            atomic_fetch_add(&race_bad, 1);
        else
            free(body);
        if (i % 7 == (int)(intptr_t)arg)
            discovery_cache_clear();
    }
    return NULL;
}

TEST(concurrent_readers)
{
    struct skills *S = open_lib(roota);
    shared_snap = skills_acquire(S);
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, racer, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&race_bad), 0);
    skills_release(shared_snap);
    skills_free(S);
}

TEST(empty_library)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/empty", base);
    mkdir(tmp, 0755);
    struct skills *S = open_lib(tmp);
    struct snapshot *s = skills_acquire(S);
    char *body;
    size_t len;
    const char *ct;
    CHECK_EQ(discovery_get(s, P "index.json", &body, &len, &ct), 0);
    CHECK_MEM(body, len, "{\n  \"$schema\": \"" SCHEMA "\",\n  \"skills\": []\n}\n");
    free(body);
    skills_release(s);
    skills_free(S);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_ERROR);
    snprintf(base, sizeof base, "/tmp/skill-discovery-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(roota, sizeof roota, "%s/a", base);
    snprintf(rootb, sizeof rootb, "%s/b", base);
    mkdir(roota, 0755);
    build_tree(roota);
    sleep(1);   /* other mtimes for the copy */
    mkdir(rootb, 0755);
    build_tree(rootb);
    RUN(index_shape);
    RUN(digests_are_of_the_served_bytes);
    RUN(archives_are_reproducible);
    RUN(archive_members_sorted_with_fixed_metadata);
    RUN(escaping_link_never_archived);
    RUN(unknown_paths);
    RUN(edit_changes_digest);
    RUN(same_size_edit_with_mtime_restored);
    RUN(export_matches_served_bytes);
    RUN(concurrent_readers);
    RUN(empty_library);
    discovery_cache_clear();
    rm_rf(base);
    DONE();
}
