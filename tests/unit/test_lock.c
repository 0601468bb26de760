/*
 * test_lock.c - the lock of approved versions (server/lock.c): parsing good
 * and bad lock files (file:line), rendering that parses back to the same
 * bytes, the manifest digest against an independent hash of its lines, and
 * how changes since approval are classified (what widens a skill), and
 * when the server reads the lock file again.
 */
#include "harness.h"
#include "quiet.h"
#include "tmptree.h"
#include "config.h"
#include "lock.h"
#include "lockstore.h"
#include "skills.h"
#include "util.h"

#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* "sha256:<hex>" of a string, by EVP one-shot (the reference). */
static void sha(const char *s, char out[MANIFEST_DIGEST_LEN + 1])
{
    unsigned char md[32];
    unsigned int n;
    EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 8);
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

/* A lock text with one entry over the given file lines (digest computed). */
static void entry_text(char *out, size_t n, const char *qname, const char *attrs,
                       const char *lines)
{
    char d[MANIFEST_DIGEST_LEN + 1];
    char indented[2048] = "";
    sha(lines, d);
    for (const char *p = lines; *p;) {
        const char *nl = strchr(p, '\n');
        snprintf(indented + strlen(indented), sizeof indented - strlen(indented), "  %.*s",
                 (int)(nl - p + 1), p);
        p = nl + 1;
    }
    snprintf(out, n, "%s %s %s\n%s", qname, d, attrs, indented);
}

TEST(parse_good)
{
    char a[4096], b[4096], text[8192];
    entry_text(a, sizeof a, "billing/refunds",
               "execution=none approved-by=alice approved-at=2026-11-29T10:00:00Z",
               D1 " 12 SKILL.md\n" D2 " 40 scripts/my run.py\n");
    entry_text(b, sizeof b, "notes",
               "execution=" D2 " approved-by=bob@x approved-at=2026-11-29T11:00:00Z "
               "revoked-by=carol revoked-at=2026-11-30T00:00:00Z",
               D1 " 3 SKILL.md\n");
    snprintf(text, sizeof text, "# the lock\n\n%s   # note\n%s", b, a);
    struct err e = {0};
    struct lock_table *t = lock_parse(text, strlen(text), "t.lock", &e);
    if (!t)
        H_FAIL("parse: %s", e.msg);
    CHECK(t);
    CHECK_EQ(t->n, 2);
    const struct lock_entry *r = lock_find(t, "billing/refunds");
    CHECK(r);
    CHECK_STR(r->by, "alice");
    CHECK_STR(r->at, "2026-11-29T10:00:00Z");
    CHECK_STR(r->exec, "none");
    CHECK(!r->revoked_by);
    CHECK_EQ(r->nfiles, 2);
    CHECK_STR(r->files[1].path, "scripts/my run.py");
    CHECK_EQ(r->files[1].size, 40);
    const struct lock_entry *nt = lock_find(t, "notes");
    CHECK(nt);
    CHECK_STR(nt->revoked_by, "carol");
    CHECK_STR(nt->revoked_at, "2026-11-30T00:00:00Z");
    CHECK_STR(nt->exec, D2);
    CHECK(!lock_find(t, "nope"));
    CHECK(!lock_find(t, "billing"));

    /* rendering is stable: sorted, and it parses back to the same bytes */
    size_t len, len2;
    char *out = lock_render(t, &len);
    CHECK(strstr(out, "billing/refunds") < strstr(out, "\nnotes "));
    struct lock_table *t2 = lock_parse(out, len, "out.lock", &e);
    CHECK(t2);
    char *out2 = lock_render(t2, &len2);
    CHECK_EQ(len, len2);
    CHECK(!memcmp(out, out2, len));
    free(out);
    free(out2);
    lock_table_unref(t2);
    lock_table_unref(t);

    /* an empty file is an empty lock */
    t = lock_parse("", 0, "e.lock", &e);
    CHECK(t);
    CHECK_EQ(t->n, 0);
    lock_table_unref(t);
}

struct bad {
    const char *text;       /* %E: a valid entry line's digest goes here */
    const char *want;
};

TEST(parse_bad)
{
    char ok[4096];
    entry_text(ok, sizeof ok, "a", "execution=none approved-by=alice approved-at=2026-11-29T10:00:00Z",
               D1 " 12 SKILL.md\n");
    const char *dig = strchr(ok, ' ') + 1;   /* the entry's own digest */
    char dg[MANIFEST_DIGEST_LEN + 1];
    memcpy(dg, dig, MANIFEST_DIGEST_LEN);
    dg[MANIFEST_DIGEST_LEN] = '\0';
    static const char at[] = " approved-at=2026-11-29T10:00:00Z";
    char c[32][1024];
    int i = 0;
    snprintf(c[i++], 1024, "# x\na sha256:12 execution=none approved-by=x%s\n  " D1 " 12 SKILL.md\n", at);
    snprintf(c[i++], 1024, "a %s approved-by=x%s\n  " D1 " 12 SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none%s\n  " D1 " 12 SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x approved-at=yesterday\n  " D1 " 12 SKILL.md\n", dg);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x y%s\n  " D1 " 12 SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s revoked-by=z\n  " D1 " 12 SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "  " D1 " 12 SKILL.md\n");
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s\n  " D1 " 13 SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s\n  " D1 " 12 ../etc/passwd\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s\n  " D1 " twelve SKILL.md\n", dg, at);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x%s\n  " D1 " 12 b\n  " D1 " 12 a\n", dg, at);
    snprintf(c[i++], 1024, "%s%s", ok, ok);
    snprintf(c[i++], 1024, "a %s execution=none approved-by=x\r%s\n", dg, at);
    snprintf(c[i++], 1024, "/a %s execution=none approved-by=x%s\n  " D1 " 12 SKILL.md\n", dg, at);
    const char *want[] = {
        "b.lock:2: expected the manifest digest",
        "b.lock:1: execution= missing",
        "b.lock:1: approved-by= missing",
        "b.lock:1: unexpected \"approved-at=yesterday\"",
        "b.lock:1: unexpected \"y\"",
        "b.lock:1: revoked-by= and revoked-at= go together",
        "b.lock:1: a file line before any skill line",
        "b.lock:1: a lists no files",
        "b.lock:1: the file lines of a hash to",
        "b.lock:2: \"../etc/passwd\" is not a path inside a skill",
        "b.lock:2: a file line is",
        "b.lock:3: files must be listed once each",
        "b.lock:3: a is listed twice (also line 1)",
        "b.lock:1: NUL or carriage return",
        "b.lock:1: \"/a\" is not a skill name",
    };
    CHECK_EQ(i, (int)(sizeof want / sizeof *want));
    for (int k = 0; k < i; k++) {
        struct err e = {0};
        struct lock_table *t = lock_parse(c[k], strlen(c[k]), "b.lock", &e);
        if (t || !strstr(e.msg, want[k])) {
            H_FAIL("case %d: want \"%s\", got %s \"%s\"", k, want[k], t ? "a table" : "error",
                   e.msg);
            lock_table_unref(t);
            return;
        }
    }
    /* and the valid one of the same shape parses */
    struct err e = {0};
    struct lock_table *t = lock_parse(ok, strlen(ok), "ok.lock", &e);
    CHECK(t);
    lock_table_unref(t);

    /* a line over the limit */
    char *big = xmalloc(LOCK_MAX_LINE + 10);
    memset(big, 'a', LOCK_MAX_LINE + 5);
    big[LOCK_MAX_LINE + 5] = '\0';
    t = lock_parse(big, strlen(big), "big.lock", &e);
    free(big);
    CHECK(!t);
    CHECK(strstr(e.msg, "big.lock:1: line longer than"));

    /* a lock file name longer than the message gives up its head, so the
     * line and the reason stay */
    char name[700], twice[2048];
    memset(name, 'd', 600);
    snprintf(name + 600, sizeof name - 600, "/skills.lock");
    snprintf(twice, sizeof twice, "%s%s", ok, ok);
    t = lock_parse(twice, strlen(twice), name, &e);
    CHECK(!t);
    CHECK_EQ(e.line, 3);
    const char *tail = "dd/skills.lock:3: a is listed twice (also line 1)";
    size_t ml = strlen(e.msg), tl = strlen(tail);
    CHECK(ml > tl && !strcmp(e.msg + ml - tl, tail));
    CHECK(!strncmp(e.msg, "...", 3));
}

static char base[64];

static void put(const char *rel, const char *data)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir(p, 0755);
    *slash = '/';
    FILE *f = fopen(p, "wb");
    fputs(data, f);
    fclose(f);
}

TEST(manifest_digest_is_stable_and_independent)
{
    char skill[128];
    snprintf(skill, sizeof skill, "%s/s", base);
    mkdir(skill, 0755);
    put("s/SKILL.md", "---\nname: s\ndescription: d\n---\nbody\n");
    put("s/z.md", "zz\n");
    put("s/B.md", "upper\n");
    put("s/scripts/a.sh", "echo a\n");
    struct skill *k = skills_entry_load(skill, "s", 0);
    CHECK(k);
    struct lock_manifest m;
    struct err why = {0};
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    CHECK_EQ(m.n, 4);
    /* byte order: "B.md" < "SKILL.md" < "scripts/a.sh" < "z.md" */
    CHECK_STR(m.files[0].path, "B.md");
    CHECK_STR(m.files[1].path, "SKILL.md");
    CHECK_STR(m.files[2].path, "scripts/a.sh");
    CHECK_STR(m.files[3].path, "z.md");
    char lines[2048] = "", d[MANIFEST_DIGEST_LEN + 1];
    const char *content[] = {"upper\n", "---\nname: s\ndescription: d\n---\nbody\n", "echo a\n",
                             "zz\n"};
    for (int i = 0; i < 4; i++) {
        sha(content[i], d);
        CHECK_STR(m.files[i].digest, d);
        snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "%s %zu %s\n", d,
                 strlen(content[i]), m.files[i].path);
    }
    sha(lines, d);
    CHECK_STR(m.digest, d);
    CHECK_STR(m.exec, "none");
    char again[MANIFEST_DIGEST_LEN + 1];
    lock_digest_files(m.files, m.n, again);
    CHECK_STR(again, d);
    lock_manifest_cleanup(&m);
    skills_entry_release(k);

    /* an execution block: key order does not matter, values do */
    put("s/SKILL.md", "---\nname: s\ndescription: d\nexecution:\n  default: {timeout: 5, stall_timeout: 2}\n---\n");
    k = skills_entry_load(skill, "s", 0);
    CHECK(k);
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    char e1[MANIFEST_DIGEST_LEN + 1];
    memcpy(e1, m.exec, sizeof e1);
    lock_manifest_cleanup(&m);
    skills_entry_release(k);
    put("s/SKILL.md", "---\nname: s\ndescription: d\nexecution:\n  default: {stall_timeout: 2, timeout: 5}\n---\n");
    k = skills_entry_load(skill, "s", 0);
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    CHECK_STR(m.exec, e1);
    CHECK(strcmp(m.exec, "none"));
    lock_manifest_cleanup(&m);
    skills_entry_release(k);
}

/* Folders the manifest does not hash but interpreters load code from: a
 * skill that has one cannot be vouched for, so it has no lock manifest. */
TEST(unhashed_code_folders_refused)
{
    char skill[128], p[256];
    snprintf(skill, sizeof skill, "%s/u", base);
    mkdir(skill, 0755);
    put("u/SKILL.md", "---\nname: u\ndescription: d\n---\nbody\n");
    put("u/scripts/run.py", "import mod\n");
    put("u/scripts/mod.py", "X = 1\n");
    struct skill *k = skills_entry_load(skill, "u", 0);
    CHECK(k);
    struct lock_manifest m;
    struct err why = {0};
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    lock_manifest_cleanup(&m);
    /* a planted .pyc: the snapshot's folder list already knows scripts/ */
    put("u/scripts/__pycache__/mod.cpython-311.pyc", "bytecode");
    CHECK_EQ(lock_manifest_of(k, &m, &why), -1);
    CHECK(strstr(why.msg, "__pycache__"));
    snprintf(p, sizeof p, "%s/u/scripts/__pycache__", base);
    tt_rm_rf(p);
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    lock_manifest_cleanup(&m);
    /* node_modules in the skill, or in a folder above it */
    put("u/node_modules/index.js", "module.exports = 1\n");
    CHECK_EQ(lock_manifest_of(k, &m, &why), -1);
    CHECK(strstr(why.msg, "node_modules"));
    snprintf(p, sizeof p, "%s/u/node_modules", base);
    tt_rm_rf(p);
    put("node_modules/y.js", "1\n");
    CHECK_EQ(lock_manifest_of(k, &m, &why), -1);
    CHECK(strstr(why.msg, "a folder above it"));
    snprintf(p, sizeof p, "%s/node_modules", base);
    tt_rm_rf(p);
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    lock_manifest_cleanup(&m);
    skills_entry_release(k);
}

/* The lock store and the lock manifest say which step failed, in the words
 * `skill-mcp lock approve` and run_skill_script pass on. */
TEST(store_put_and_manifest_name_what_failed)
{
    char skill[128], p[256], out[256], store[256];
    snprintf(skill, sizeof skill, "%s/st", base);
    mkdir(skill, 0755);
    put("st/SKILL.md", "---\nname: st\ndescription: d\n---\nbody\n");
    put("st/references/a.md", "aaaa\n");
    put("outside.md", "not the skill\n");
    struct skill *k = skills_entry_load(skill, "st", 0);
    CHECK(k);
    struct lock_manifest m;
    struct err why = {0};
    CHECK_EQ(lock_manifest_of(k, &m, &why), 0);
    snprintf(store, sizeof store, "%s/store", base);

    /* same size, other bytes: the blob would not match its digest */
    put("st/references/a.md", "bbbb\n");
    CHECK_EQ(lock_store_put(store, k, &m, &why), -1);
    CHECK_STR(why.msg, "a file changed while it was being stored, or the store cannot be "
                       "written");
    /* now a link that leaves the skill: the jail's reason */
    snprintf(p, sizeof p, "%s/st/references/a.md", base);
    snprintf(out, sizeof out, "%s/outside.md", base);
    unlink(p);
    CHECK_EQ(symlink(out, p), 0);
    CHECK_EQ(lock_store_put(store, k, &m, &why), -1);
    CHECK_STR(why.msg, "the path leads outside the skill folder");
    struct lock_manifest m2;
    CHECK_EQ(lock_manifest_of(k, &m2, &why), -1);
    CHECK_STR(why.msg, "a file of the skill cannot be read now");
    /* a store that cannot be made */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/outside.md/store", base);
    CHECK_EQ(lock_store_put(bad, k, &m, &why), -1);
    CHECK_STR(why.msg, "the store's blobs folder cannot be created");
    /* put back as approved: stored */
    unlink(p);
    put("st/references/a.md", "aaaa\n");
    CHECK_EQ(lock_store_put(store, k, &m, NULL), 0);
    lock_manifest_cleanup(&m);
    skills_entry_release(k);
}

static struct lock_file lf(const char *path, const char *digest, int64_t size)
{
    struct lock_file f = {.path = (char *)(uintptr_t)path, .size = size};
    snprintf(f.digest, sizeof f.digest, "%s", digest);
    return f;
}

TEST(changes_classified)
{
    struct lock_file a[] = {lf("SKILL.md", D1, 1), lf("references/r.md", D1, 1),
                            lf("scripts/keep.py", D1, 1), lf("scripts/old.py", D1, 1),
                            lf("scripts/run.py", D1, 1)};
    struct lock_file b[] = {lf("SKILL.md", D1, 1), lf("hooks/pre.sh", D1, 1),
                            lf("references/new.md", D1, 1), lf("references/r.md", D2, 1),
                            lf("scripts/keep.py", D1, 1), lf("scripts/new.py", D1, 1),
                            lf("scripts/run.py", D1, 2)};
    struct lock_entry e = {.files = a, .nfiles = 5};
    snprintf(e.exec, sizeof e.exec, "none");
    struct lock_manifest m = {.files = b, .n = 7};
    snprintf(m.exec, sizeof m.exec, "%s", D2);
    struct lock_change_item *ch;
    size_t n = lock_changes(&e, &m, &ch);
    struct { enum lock_change kind; const char *path; int widens; } want[] = {
        {LOCK_ADDED, "hooks/pre.sh", 1},       {LOCK_ADDED, "references/new.md", 0},
        {LOCK_MODIFIED, "references/r.md", 0}, {LOCK_ADDED, "scripts/new.py", 1},
        {LOCK_REMOVED, "scripts/old.py", 0},   {LOCK_MODIFIED, "scripts/run.py", 1},
        {LOCK_EXEC_CHANGED, "SKILL.md", 1},
    };
    CHECK_EQ(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(ch[i].kind, want[i].kind);
        CHECK_STR(ch[i].path, want[i].path);
        CHECK_EQ(ch[i].widens, want[i].widens);
    }
    free(ch);

    /* nothing changed: nothing listed */
    struct lock_manifest same = {.files = a, .n = 5};
    snprintf(same.exec, sizeof same.exec, "none");
    CHECK_EQ(lock_changes(&e, &same, &ch), 0);
    free(ch);

    /* a new skill: every file added, its scripts widen */
    CHECK_EQ(lock_changes(NULL, &same, &ch), 5);
    CHECK_EQ(ch[0].kind, LOCK_ADDED);
    CHECK_EQ(ch[1].widens, 0);
    CHECK_EQ(ch[2].widens, 1);
    free(ch);
}

/* lock_reload(L, 0) with the log at info level; the log in *out. */
static int reload_logged(struct lock *L, char *out, size_t n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/reload.log", base);
    log_set_level(LOG_INFO);
    struct quiet q = quiet_begin(NULL, path);
    int r = lock_reload(L, 0);
    quiet_end(q);
    log_set_level(LOG_ERROR);
    int fd = open(path, O_RDONLY);
    size_t got = fd >= 0 ? x_pread_full(fd, out, n - 1) : 0;
    if (fd >= 0)
        close(fd);
    out[got] = '\0';
    return r;
}

TEST(hand_edit_with_its_old_mtime_put_back_is_reloaded)
{
    char a[4096], b[4096], one[8192], two[8192];
    entry_text(a, sizeof a, "notes", "execution=none approved-by=alice approved-at=2026-11-29T10:00:00Z",
               D1 " 3 SKILL.md\n");
    entry_text(b, sizeof b, "billing/refunds",
               "execution=none approved-by=bob approved-at=2026-11-29T11:00:00Z",
               D2 " 12 SKILL.md\n");
    /* the same size: one entry and a comment as long as the second entry */
    snprintf(one, sizeof one, "%s#%.*s\n", a, (int)strlen(b) - 2,
             "..............................................................................."
             "..............................................................................."
             "...............................................................................");
    snprintf(two, sizeof two, "%s%s", a, b);
    CHECK_EQ(strlen(one), strlen(two));
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/same-size.lock", base);
    tt_put_at(file, one, 1000);
    struct cfg c = {.lock_file = file};
    struct err e = {0};
    struct lock *L = lock_open(&c, &e);
    if (!L)
        H_FAIL("lock_open: %s", e.msg);
    char log[4096];
    CHECK_EQ(reload_logged(L, log, sizeof log), 0);     /* unchanged: not read again */
    /* past a timestamp tick, so that the edit's change time differs */
    usleep(20000);
    /* same inode, same size, the old mtime put back (touch -d, rsync -t) */
    tt_put_at(file, two, 1000);
    struct stat st;
    CHECK_EQ(stat(file, &st), 0);
    CHECK_EQ(st.st_mtim.tv_sec, 1000);
    CHECK_EQ(reload_logged(L, log, sizeof log), 1);
    CHECK(strstr(log, "2 approved version(s) loaded"));
    CHECK_EQ(reload_logged(L, log, sizeof log), 0);
    lock_free(L);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_ERROR);
    snprintf(base, sizeof base, "/tmp/skill-mcp-lock-XXXXXX");
    if (!mkdtemp(base))
        return 2;
    RUN(parse_good);
    RUN(parse_bad);
    RUN(manifest_digest_is_stable_and_independent);
    RUN(changes_classified);
    RUN(unhashed_code_folders_refused);
    RUN(store_put_and_manifest_name_what_failed);
    RUN(hand_edit_with_its_old_mtime_put_back_is_reloaded);
    tt_rm_rf(base);
    DONE();
}
