/*
 * test_rcache.c - the read paths' render caches (server/rcache.c): a kept
 * file reply is served only while its file is unchanged, the size cap, the
 * bound on renders per slot, pages kept per snapshot and per view, and the
 * page table's bounds, also with several threads.
 */
#include "harness.h"
#include "call.h"
#include "rcache.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "tools_int.h"
#include "util.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl.h"

#define FIXTURE_NAME "rcache"
#include "srv_fixture.h"

static int last_borrowed;   /* the previous call was answered with kept bytes */

/* k: the caller's class (--acl), whose view of the call's snapshot the
 * call takes; NULL: every skill */
static json_t *call_tool(const char *tool, const char *args, const struct acl_class *k)
{
    json_error_t e;
    json_t *a = json_loads(args, 0, &e), *res = NULL;
    struct call *c = call_new(&S);
    call_set_view(c, k);
    int rc = tools_call(c, tool, a);
    size_t rawlen;
    int owned = 0;
    const char *raw = rc == 0 ? call_raw_bytes(c, &rawlen, &owned) : NULL;
    last_borrowed = raw && !owned;
    if (raw)
        res = json_loadb(raw, rawlen, 0, &e);
    call_unref(c);
    json_decref(a);
    return res;
}

static const char *content_of(json_t *r)
{
    return json_string_value(
        json_object_get(json_object_get(r, "structuredContent"), "content"));
}

/* Sets rel's mtime to now - ago seconds (+ ns), as an editor's save long ago. */
static void age(const char *rel, long ago, long ns)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= ago;
    t[0].tv_nsec = ns;
    t[1] = t[0];
    if (utimensat(AT_FDCWD, p, t, 0) < 0)
        perror(p);
}

static const char READ_A[] = "{\"name\":\"x\",\"path\":\"references/a.md\"}";

TEST(file_reply_kept_then_edited)
{
    age("skills/x/references/a.md", 60, 0);
    json_t *r = call_tool("read_skill_file", READ_A, NULL);
    CHECK_STR(content_of(r), "# A\nhello\n");
    CHECK(!last_borrowed);          /* read, rendered, kept */
    json_decref(r);
    r = call_tool("read_skill_file", READ_A, NULL);
    CHECK_STR(content_of(r), "# A\nhello\n");
    CHECK(last_borrowed);           /* the kept reply */
    json_decref(r);

    /* The same size, another mtime: the new bytes, never the kept ones. */
    puts_("skills/x/references/a.md", "# A\nHELLO\n");
    age("skills/x/references/a.md", 30, 0);
    r = call_tool("read_skill_file", READ_A, NULL);
    CHECK_STR(content_of(r), "# A\nHELLO\n");
    CHECK(!last_borrowed);
    json_decref(r);
    r = call_tool("read_skill_file", READ_A, NULL);
    CHECK_STR(content_of(r), "# A\nHELLO\n");
    CHECK(last_borrowed);
    json_decref(r);

    /* Another size, and a write just now (not kept while it is this fresh). */
    puts_("skills/x/references/a.md", "# A\nhello again\n");
    for (int i = 0; i < 2; i++) {
        r = call_tool("read_skill_file", READ_A, NULL);
        CHECK_STR(content_of(r), "# A\nhello again\n");
        CHECK(!last_borrowed);
        json_decref(r);
    }
    puts_("skills/x/references/a.md", "# A\nhello\n");
    age("skills/x/references/a.md", 60, 0);
}

/* Rewrites rel's bytes in place (same size: no new inode, no truncate). */
static void overwrite(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    int fd = open(p, O_WRONLY);
    if (fd < 0 || pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text))
        perror(p);
    close(fd);
}

/* A reply verified once may be served without a stat while no watched
 * folder has changed; an in-place write of the same size is still seen by
 * the very next call, however many hits came before. */
TEST(file_reply_edit_in_place_after_hits)
{
    age("skills/x/references/a.md", 60, 0);
    json_t *r = call_tool("read_skill_file", READ_A, NULL);
    json_decref(r);
    for (int i = 0; i < 3; i++) {
        r = call_tool("read_skill_file", READ_A, NULL);
        CHECK_STR(content_of(r), "# A\nhello\n");
        CHECK(last_borrowed);
        json_decref(r);
    }
    overwrite("skills/x/references/a.md", "# A\nHELLO\n");
    r = call_tool("read_skill_file", READ_A, NULL);
    CHECK_STR(content_of(r), "# A\nHELLO\n");
    json_decref(r);
    overwrite("skills/x/references/a.md", "# A\nhello\n");
    age("skills/x/references/a.md", 60, 0);
}

/* A kept and verified reply, then served without a stat: what the tests
 * below change under. */
static int kept_and_quiet_as(const char *args, const char *rel, const char *want)
{
    age(rel, 60, 0);
    for (int i = 0; i < 3; i++) {
        json_t *r = call_tool("read_skill_file", args, NULL);
        int ok = r && !strcmp(content_of(r) ? content_of(r) : "", want);
        json_decref(r);
        if (!ok)
            return 0;
    }
    return last_borrowed && rcache_epoch() != 0;
}

/* The epoch once the queue is read (a call that finds events queued reads
 * them and answers 0); 0 if it never settles. */
static uint64_t settled_epoch(void)
{
    for (int i = 0; i < 1000; i++) {
        uint64_t e = rcache_epoch();
        if (e)
            return e;
    }
    return 0;
}

static const char READ_LINKED[] = "{\"name\":\"y\",\"path\":\"references/linked.md\"}";

/* A name added to the file after its reply was kept (a hard link in a
 * folder no watch covers), and a write through it: the link itself moves
 * the epoch, the reply is verified again with two names (the link moved
 * its ctime: rendered once more, then kept), and the write through the
 * other name moves the epoch: the next call has the new bytes. */
TEST(file_reply_hard_link_made_after_keep)
{
    mkpath("elsewhere");    /* first: its creation is an event of base's watch */
    CHECK(kept_and_quiet_as(READ_LINKED, "skills/y/references/linked.md", "# L\nhello\n"));
    uint64_t before = rcache_epoch();
    char a[512], l[512];
    snprintf(a, sizeof a, "%s/skills/y/references/linked.md", base);
    snprintf(l, sizeof l, "%s/elsewhere/linked-too", base);
    CHECK(link(a, l) == 0);
    uint64_t now = settled_epoch();
    CHECK(now && now != before);
    for (int i = 0; i < 3; i++) {
        json_t *k = call_tool("read_skill_file", READ_LINKED, NULL);
        CHECK_STR(content_of(k), "# L\nhello\n");
        json_decref(k);
    }
    CHECK(last_borrowed);
    CHECK_EQ(rcache_epoch(), now);
    overwrite("elsewhere/linked-too", "# L\nHELLO\n");
    json_t *r = call_tool("read_skill_file", READ_LINKED, NULL);
    CHECK_STR(content_of(r), "# L\nHELLO\n");
    json_decref(r);
    CHECK(unlink(l) == 0);
}

/* A descriptor opened through a second name, the name then removed (one
 * link again, so the reply is verified quiet anew), and a write through the
 * descriptor: no folder hears it; the file's own watch does. */
TEST(file_reply_written_through_a_removed_name)
{
    static const char read_u[] = "{\"name\":\"x\",\"path\":\"utf8.txt\"}";
    static const char was[] = "ab\xe2\x82\xac" "cd\xf0\x9f\x98\x80";
    mkpath("elsewhere");
    char f[512], l[512];
    snprintf(f, sizeof f, "%s/skills/x/utf8.txt", base);
    snprintf(l, sizeof l, "%s/elsewhere/u-link", base);
    CHECK(link(f, l) == 0);
    int fd = open(l, O_WRONLY);
    CHECK(fd >= 0);
    CHECK(unlink(l) == 0);
    CHECK(kept_and_quiet_as(read_u, "skills/x/utf8.txt", was));
    CHECK(pwrite(fd, "AB", 2, 0) == 2);
    close(fd);
    json_t *r = call_tool("read_skill_file", read_u, NULL);
    CHECK_STR(content_of(r), "AB\xe2\x82\xac" "cd\xf0\x9f\x98\x80");
    json_decref(r);
    overwrite("skills/x/utf8.txt", "ab");
    age("skills/x/utf8.txt", 60, 0);
}

/* A folder above the skills made unreadable ends the reads through it for
 * a server that is not root: its mode change moves the epoch, so the kept
 * reply is checked by a stat again (which then fails). As root the stat
 * passes; the epoch is what is asserted. */
static const char READ_CHMOD[] = "{\"name\":\"y\",\"path\":\"references/chmod.md\"}";
#define KEPT_CHMOD() kept_and_quiet_as(READ_CHMOD, "skills/y/references/chmod.md", "chmod me\n")

TEST(file_reply_ancestor_chmod_moves_epoch)
{
    CHECK(KEPT_CHMOD());
    char root_dir[512];
    snprintf(root_dir, sizeof root_dir, "%s/skills", base);
    struct stat st;
    CHECK(stat(root_dir, &st) == 0);
    uint64_t before = rcache_epoch();
    CHECK(chmod(root_dir, 0700) == 0);
    uint64_t now = settled_epoch();
    CHECK(now && now != before);
    CHECK(chmod(root_dir, st.st_mode & 07777) == 0);
    /* the same for the folder above the root */
    CHECK(KEPT_CHMOD());
    before = rcache_epoch();
    CHECK(stat(base, &st) == 0);
    CHECK(chmod(base, 0711) == 0);
    now = settled_epoch();
    CHECK(now && now != before);
    CHECK(chmod(base, st.st_mode & 07777) == 0);
}

/* With --redact FILE (patterns swapped on SIGHUP) a reply is never kept. */
TEST(file_reply_not_kept_with_redact_file)
{
    puts_("skills/x/utf8.txt", "ab\xe2\x82\xac" "cd\xf0\x9f\x98\x80");
    age("skills/x/utf8.txt", 60, 0);
    const char *saved = S.cfg.redact_file;
    S.cfg.redact_file = "/nonexistent/patterns";
    for (int i = 0; i < 2; i++) {
        json_t *r = call_tool("read_skill_file", "{\"name\":\"x\",\"path\":\"utf8.txt\"}", NULL);
        CHECK(content_of(r));
        CHECK(!last_borrowed);
        json_decref(r);
    }
    S.cfg.redact_file = saved;
    json_decref(call_tool("read_skill_file", "{\"name\":\"x\",\"path\":\"utf8.txt\"}", NULL));
    json_t *r = call_tool("read_skill_file", "{\"name\":\"x\",\"path\":\"utf8.txt\"}", NULL);
    CHECK(last_borrowed);
    json_decref(r);
}

TEST(file_reply_max_bytes)
{
    age("skills/x/references/a.md", 60, 0);
    json_decref(call_tool("read_skill_file", READ_A, NULL));
    /* A smaller max_bytes cuts the file: never the kept whole reply. */
    json_t *r = call_tool("read_skill_file",
                          "{\"name\":\"x\",\"path\":\"references/a.md\",\"max_bytes\":3}", NULL);
    CHECK_STR(content_of(r), "# A");
    CHECK(!last_borrowed);
    json_decref(r);
}

TEST(file_reply_size_cap)
{
    size_t n = RCACHE_FILE_MAX + 1;
    char *big = xmalloc(n);
    memset(big, 'a', n);
    put("skills/y/references/big.md", big, n);
    put("skills/y/references/cap.md", big, n - 1);
    free(big);
    age("skills/y/references/big.md", 60, 0);
    age("skills/y/references/cap.md", 60, 0);
    skills_rescan(S.skills, 1, NULL);    /* the new files are listed */
    /* (both are over the token budget: the reply is cut, the same each time) */
    for (int i = 0; i < 2; i++) {
        json_t *r = call_tool("read_skill_file", "{\"name\":\"y\",\"path\":\"references/big.md\"}",
                              NULL);
        CHECK(r && !json_is_true(json_object_get(r, "isError")));
        CHECK(!last_borrowed);
        json_decref(r);
    }
    json_decref(call_tool("read_skill_file", "{\"name\":\"y\",\"path\":\"references/cap.md\"}",
                          NULL));
    json_t *r = call_tool("read_skill_file", "{\"name\":\"y\",\"path\":\"references/cap.md\"}",
                          NULL);
    CHECK(r && !json_is_true(json_object_get(r, "isError")));
    CHECK(last_borrowed);
    json_decref(r);
}

TEST(file_renders_bounded)
{
    struct snapshot *s = skills_acquire(S.skills);
    int amb;
    struct skill *k = skills_find(s, "csv-profile", 11, &amb);
    CHECK(k);
    /* Not a file of the entry: the tools never ask for it. */
    CHECK_EQ(rcache_file_index(k, "references/none.md"), -1);
    size_t before = rcache_files_bytes();
    struct stat st = {0};
    st.st_mode = S_IFREG | 0644;
    st.st_ino = 42;
    st.st_mtim.tv_sec = time(NULL) - 100;
    /* csv-profile has no files: a fake entry of one file stands in. */
    struct skill_file f = {.path = "references/z.md", .size = 10};
    struct skill fake = {.dir_abs = "/nonexistent", .files = &f, .nfiles = 1};
    CHECK_EQ(rcache_file_index(&fake, "references/z.md"), 0);
    int kept = 0;
    for (int i = 0; i < RCACHE_FILE_VERSIONS + 3; i++) {
        st.st_size = 10 + i;        /* each one another version of the file */
        kept += rcache_file_put(&fake, 0, RCACHE_TOOL_LEGACY, "references/z.md", &st, "reply", 5);
    }
    CHECK_EQ(kept, RCACHE_FILE_VERSIONS);
    /* A fresh write is not kept; nor is a file over the cap. */
    st.st_ino = 43;
    CHECK_EQ(rcache_file_put(&fake, 0, RCACHE_TOOL_MODERN, "references/z.md", &st, "r", 1), 1);
    st.st_mtim.tv_sec = time(NULL);
    CHECK_EQ(rcache_file_put(&fake, 0, RCACHE_RES_LEGACY, "u", &st, "r", 1), 0);
    st.st_mtim.tv_sec = time(NULL) - 100;
    st.st_size = RCACHE_FILE_MAX + 1;
    CHECK_EQ(rcache_file_put(&fake, 0, RCACHE_RES_LEGACY, "u", &st, "r", 1), 0);
    CHECK(rcache_files_bytes() > before);
    rcache_files_free(atomic_load(&fake.rfiles), fake.nfiles);
    CHECK_EQ(rcache_files_bytes(), before);
    skills_release(s);
}

/* A whole-skill reply (skills/get) holds while none of the skill's files
 * changes, and is dropped by an edit to any one of them. */
TEST(entry_reply_until_any_file_changes)
{
    static const char *const files[] = {"SKILL.md", "references/a.md", "assets/b.bin",
                                        "utf8.txt", "scripts/run.py"};
    char rel[128];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(rel, sizeof rel, "skills/x/%s", files[i]);
        age(rel, 60, 0);
    }
    usleep(1100 * 1000);    /* ctime, which no one can set back, settles too */
    struct snapshot *s = skills_acquire(S.skills);
    int amb;
    struct skill *k = skills_find(s, "x", 1, &amb);
    CHECK(k && k->nfiles == 4);
    struct rcache_stamps *st;
    size_t len;
    CHECK(!rcache_entry_get(k, 0, &len, &st));
    CHECK_EQ(rcache_entry_put(k, 0, st, "whole reply", 11), 1);
    free(st);
    const char *hit = rcache_entry_get(k, 0, &len, &st);
    free(st);
    CHECK(hit);
    CHECK_MEM(hit, len, "whole reply");
    CHECK(!rcache_entry_get(k, 1, &len, &st));     /* the other era is its own */
    free(st);
    /* One listed file touched (content and size as they were), then left
     * to settle: its stamp differs. */
    age("skills/x/assets/b.bin", 20, 0);
    usleep(1100 * 1000);
    CHECK(!rcache_entry_get(k, 0, &len, &st));
    CHECK_EQ(rcache_entry_put(k, 0, st, "again", 5), 1);
    free(st);
    hit = rcache_entry_get(k, 0, &len, &st);
    free(st);
    CHECK(hit);
    CHECK_MEM(hit, len, "again");
    for (int i = 0; i < 3; i++) {      /* verified, then maybe without stats */
        hit = rcache_entry_get(k, 0, &len, &st);
        free(st);
        CHECK(hit);
    }
    /* A listed file rewritten in place, same size, no time set back. */
    overwrite("skills/x/references/a.md", "# A\nHELLO\n");
    CHECK(!rcache_entry_get(k, 0, &len, &st));
    free(st);
    overwrite("skills/x/references/a.md", "# A\nhello\n");
    age("skills/x/references/a.md", 60, 0);
    /* Touched just now (ctime moved): neither served nor kept. */
    age("skills/x/assets/b.bin", 10, 0);
    CHECK(!rcache_entry_get(k, 0, &len, &st));
    CHECK_EQ(rcache_entry_put(k, 0, st, "fresh", 5), 0);
    free(st);
    skills_release(s);
}

TEST(pages_never_cross_views)
{
    struct rcache_pages *p = rcache_pages_new(4, 2, 1 << 20);
    static int va, vb;
    char *out;
    size_t len;
    CHECK_EQ(rcache_pages_put(p, &va, "q", 1, "page for a", 10), 1);
    CHECK_EQ(rcache_pages_get(p, &vb, "q", 1, &out, &len), 0);
    CHECK_EQ(rcache_pages_get(p, NULL, "q", 1, &out, &len), 0);
    CHECK_EQ(rcache_pages_get(p, &va, "q", 1, &out, &len), 1);
    CHECK_MEM(out, len, "page for a");
    free(out);
    CHECK_EQ(rcache_pages_put(p, &vb, "q", 1, "page for b", 10), 1);
    CHECK_EQ(rcache_pages_get(p, &vb, "q", 1, &out, &len), 1);
    CHECK_MEM(out, len, "page for b");
    free(out);
    CHECK_EQ(rcache_pages_get(p, &va, "q", 1, &out, &len), 1);
    CHECK_MEM(out, len, "page for a");
    free(out);
    rcache_pages_free(p);
}

/* A key is admitted on its second ask, per view, and a key asked once is
 * forgotten after enough others: the record is bounded. */
TEST(pages_kept_on_second_ask)
{
    struct rcache_pages *p = rcache_pages_new(4, 2, 1 << 20);
    /* views are only hashed and compared here: fixed addresses keep the
     * slots each key takes the same in every run */
    const void *va = (const void *)(uintptr_t)0x1000, *vb = (const void *)(uintptr_t)0x2000;
    CHECK_EQ(rcache_pages_admit(p, va, "q", 1), 0);
    CHECK_EQ(rcache_pages_admit(p, vb, "q", 1), 0);
    CHECK_EQ(rcache_pages_admit(p, va, "r", 1), 0);
    CHECK_EQ(rcache_pages_admit(p, va, "q", 1), 1);
    CHECK_EQ(rcache_pages_admit(p, vb, "q", 1), 1);
    CHECK_EQ(rcache_pages_admit(p, va, "q", 1), 1);
    CHECK_EQ(rcache_pages_admit(p, va, "r", 1), 1);
    char key[32];
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(key, sizeof key, "key %d", i);
        rcache_pages_admit(p, NULL, key, (size_t)n);
    }
    CHECK_EQ(rcache_pages_admit(p, va, "q", 1), 0);
    rcache_pages_free(p);
}

/* Through the tool: a query's page is not kept on its first ask (most are
 * asked once), is kept on its second, and answers the third with the same
 * bytes. */
TEST(list_page_kept_on_second_ask)
{
    static const char q[] = "{\"query\":\"invoices asked twice\"}";
    struct call *c = call_new(&S);
    struct snapshot *snap = call_snapshot(c);
    CHECK(snap && snap->ext && snap->ext->pages);
    if (!snap || !snap->ext || !snap->ext->pages) {
        call_unref(c);
        return;
    }
    size_t pages[4], bytes;
    rcache_pages_usage(snap->ext->pages, &pages[0], &bytes);
    char *text[3];
    for (int i = 0; i < 3; i++) {
        json_t *r = call_tool("list_skills", q, NULL);
        CHECK(r != NULL);
        text[i] = r ? json_dumps(r, JSON_SORT_KEYS) : NULL;
        json_decref(r);
        rcache_pages_usage(snap->ext->pages, &pages[i + 1], &bytes);
    }
    CHECK_EQ(pages[1], pages[0]);
    CHECK_EQ(pages[2], pages[0] + 1);
    CHECK_EQ(pages[3], pages[0] + 1);
    CHECK(text[0] && text[1] && text[2] && !strcmp(text[0], text[1]) &&
          !strcmp(text[1], text[2]));
    for (int i = 0; i < 3; i++)
        free(text[i]);
    call_unref(c);
}

/* Through the tool: the page of one view is not answered to another, and a
 * new snapshot ranks again. */
TEST(list_pages_per_view_and_snapshot)
{
    static const char q[] = "{\"query\":\"invoices\"}";
    /* two callers who see the same skills, through different rules */
    static const char rules[] = "* see .\ngroup:g see .\n";
    struct acl_rules *ar = acl_parse(rules, sizeof rules - 1, "rules", NULL);
    CHECK(ar != NULL);
    struct acl_who who = {.client = "b", .groups = "g"};
    const struct acl_class *va = acl_rules_classify(ar, NULL), *vb = acl_rules_classify(ar, &who);
    CHECK(va && vb && va != vb);
    json_t *r = call_tool("list_skills", q, va);
    json_t *total = json_object_get(json_object_get(r, "structuredContent"), "total");
    CHECK(json_is_integer(total));
    json_int_t before = json_integer_value(total);
    CHECK(before >= 1);
    json_decref(r);
    skill_md("invoicer", "invoicer", "Draft invoices from time sheets", NULL, "# Invoicer\n");
    skills_rescan(S.skills, 1, NULL);
    r = call_tool("list_skills", q, va);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(r, "structuredContent"),
                                                "total")), before + 1);
    json_decref(r);
    r = call_tool("list_skills", q, vb);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(r, "structuredContent"),
                                                "total")), before + 1);
    json_decref(r);
    char rel[512];
    snprintf(rel, sizeof rel, "%s/skills/invoicer", base);
    rm_tree(rel);
    skills_rescan(S.skills, 1, NULL);
    acl_rules_free(ar);
}

TEST(pages_bounded)
{
    struct rcache_pages *p = rcache_pages_new(2, 2, 1000);
    char key[32], page[400];
    memset(page, 'p', sizeof page);
    for (int i = 0; i < 50; i++) {
        int n = snprintf(key, sizeof key, "key %d", i);
        rcache_pages_put(p, NULL, key, (size_t)n, page, 100);
        size_t pages, bytes;
        rcache_pages_usage(p, &pages, &bytes);
        CHECK(pages <= 4);
        CHECK(bytes <= 1000);
    }
    rcache_pages_free(p);
    /* The byte budget holds before the entries do. */
    p = rcache_pages_new(8, 4, 1000);
    int kept = 0;
    for (int i = 0; i < 10; i++) {
        int n = snprintf(key, sizeof key, "big %d", i);
        kept += rcache_pages_put(p, NULL, key, (size_t)n, page, sizeof page);
    }
    CHECK_EQ(kept, 2);
    CHECK_EQ(rcache_pages_put(p, NULL, "huge", 4, page, RCACHE_PAGE_MAX + 1), 0);
    rcache_pages_free(p);
}

/* Several threads: every hit is the page of its own key. */
static struct rcache_pages *shared;
static atomic_int wrong;

static void *hammer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    char key[32], page[64], *out;
    size_t len;
    for (int i = 0; i < 20000; i++) {
        int k = (int)(rand_r(&seed) % 40);
        int kl = snprintf(key, sizeof key, "k%d", k);
        int pl = snprintf(page, sizeof page, "page of k%d", k);
        if (rcache_pages_get(shared, NULL, key, (size_t)kl, &out, &len)) {
            if (len != (size_t)pl || memcmp(out, page, len))
                atomic_fetch_add(&wrong, 1);
            free(out);
        } else {
            rcache_pages_put(shared, NULL, key, (size_t)kl, page, (size_t)pl);
        }
    }
    return NULL;
}

TEST(pages_threads)
{
    shared = rcache_pages_new(4, 2, 1 << 20);
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&wrong), 0);
    size_t pages, bytes;
    rcache_pages_usage(shared, &pages, &bytes);
    CHECK(pages <= 8);
    rcache_pages_free(shared);
}

/* Pages taken out of their way while readers copy them: a reader copies
 * a whole page of its own key, never one freed (and reused) under it. */
#define BIG (16 * 1024)
static atomic_int replacing;

static void *big_reader(void *arg)
{
    char key = *(const char *)arg, *out;
    size_t len;
    while (atomic_load(&replacing)) {
        if (!rcache_pages_get(shared, NULL, &key, 1, &out, &len))
            continue;
        if (len != BIG)
            atomic_fetch_add(&wrong, 1);
        for (size_t i = 0; i < len; i++)
            if (out[i] != key) {
                atomic_fetch_add(&wrong, 1);
                break;
            }
        free(out);
    }
    return NULL;
}

TEST(pages_replaced_under_readers)
{
    /* one way: every put of another key takes the page out; three keys,
     * so a freed page's memory is reused for another key's */
    shared = rcache_pages_new(1, 1, 1 << 20);
    atomic_store(&wrong, 0);
    atomic_store(&replacing, 1);
    static char keys[3] = {'a', 'b', 'c'};
    static char page[3][BIG];
    for (int i = 0; i < 3; i++)
        memset(page[i], keys[i], BIG);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, big_reader, &keys[i]);
    int kept = 0;
    for (int i = 0; i < 20000; i++) {
        kept += rcache_pages_put(shared, NULL, &keys[i % 3], 1, page[i % 3], BIG);
        char *out;
        size_t len;
        /* the clock gives a used way another turn: clear it by a miss */
        if (rcache_pages_get(shared, NULL, &keys[i % 3], 1, &out, &len))
            free(out);
    }
    atomic_store(&replacing, 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&wrong), 0);
    CHECK(kept > 1000);
    size_t pages, bytes;
    rcache_pages_usage(shared, &pages, &bytes);
    CHECK_EQ(pages, 1);
    rcache_pages_free(shared);
}

int main(void)
{
    make_tree();
    age("skills/x/references/a.md", 60, 0);
    /* a file each for the tests of a change no folder hears */
    puts_("skills/y/references/linked.md", "# L\nhello\n");
    puts_("skills/y/references/chmod.md", "chmod me\n");
    server_up();
    RUN(file_reply_kept_then_edited);
    RUN(file_reply_edit_in_place_after_hits);
    RUN(file_reply_hard_link_made_after_keep);
    RUN(file_reply_written_through_a_removed_name);
    RUN(file_reply_ancestor_chmod_moves_epoch);
    RUN(file_reply_not_kept_with_redact_file);
    RUN(file_reply_max_bytes);
    RUN(file_reply_size_cap);
    RUN(file_renders_bounded);
    RUN(entry_reply_until_any_file_changes);
    RUN(pages_never_cross_views);
    RUN(pages_kept_on_second_ask);
    RUN(list_page_kept_on_second_ask);
    RUN(list_pages_per_view_and_snapshot);
    RUN(pages_bounded);
    RUN(pages_threads);
    RUN(pages_replaced_under_readers);
    server_down();
    rm_tree(base);
    DONE();
}
