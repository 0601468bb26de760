/*
 * test_jail.c - path checks and confined reads (server/jail.c).
 */
#include "harness.h"
#include "jail.h"
#include "tmptree.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- fixture ------------------------------------------------------------- */

static char base[64];       /* temp folder */
static char skill[128];     /* base/skill: the folder reads are confined to */

static void put(const char *rel, const char *data, size_t len) { tt_put(base, rel, data, len); }
static void mk(const char *rel) { tt_mkdir(base, rel); }
static void link_(const char *target, const char *rel) { tt_link(base, target, rel); }

static void setup(void)
{
    tt_mkdtemp(base, sizeof base, "jail");
    snprintf(skill, sizeof skill, "%s/skill", base);
    mk("skill");
    mk("skill/references");
    mk("skill/sub");
    put("skill/a.txt", "0123456789", 10);
    put("skill/empty.txt", "", 0);
    put("skill/references/a.md", "# A\nhello\n", 10);
    put("skill/a..b.md", "dots", 4);
    put("outside.txt", "secret", 6);
    mk("outdir");
    put("outdir/o.txt", "secret too", 10);
    link_("../outside.txt", "skill/escape");
    link_("/etc/passwd", "skill/passwd");
    link_("a.txt", "skill/sibling");
    link_("../a.txt", "skill/sub/up");
    link_("../outdir", "skill/outlink");
    link_("loop", "skill/loop");
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo", skill);
    if (mkfifo(fifo, 0644) < 0) {
        perror("mkfifo");
        exit(2);
    }
}

static void teardown(void)
{
    tt_rm_rf(base);
}

/* ---- jail_check ------------------------------------------------------------ */

#define REFUSED(s) CHECK(jail_check((s), strlen(s)) != NULL)
#define ACCEPTED(s) CHECK(jail_check((s), strlen(s)) == NULL)

TEST(check_refuses)
{
    CHECK(jail_check("", 0) != NULL);
    REFUSED("/etc/passwd");
    REFUSED("/");
    REFUSED("..");
    REFUSED("../x");
    REFUSED("a/..");
    REFUSED("a/../b");
    REFUSED("./a");
    REFUSED("a/./b");
    REFUSED(".");
    REFUSED(".git/x");
    REFUSED("a/.git/config");
    REFUSED(".env");
    REFUSED("__pycache__/x.pyc");
    REFUSED("scripts/__pycache__/x.pyc");
    REFUSED("node_modules/x.js");
    REFUSED("a\\b");
    REFUSED("..\\x");
    CHECK(jail_check("a\0b", 3) != NULL);
    CHECK(jail_check("a\0", 2) != NULL);
}

TEST(check_reasons)
{
    CHECK(strstr(jail_check("", 0), "empty"));
    CHECK(strstr(jail_check("/x", 2), "absolute"));
    CHECK(strstr(jail_check("a/../b", 6), "'..'"));
    CHECK(strstr(jail_check("a\0b", 3), "NUL"));
    CHECK(strstr(jail_check("a\\b", 3), "backslash"));
}

TEST(check_long_path)
{
    char p[2001];
    memset(p, 'a', 2000);
    p[2000] = '\0';
    const char *why = jail_check(p, 2000);
    CHECK(why != NULL);
    CHECK(strstr(why, "long"));
    /* 1024 bytes is still fine */
    CHECK(jail_check(p, 1024) == NULL);
    CHECK(jail_check(p, 1025) != NULL);
}

TEST(check_accepts)
{
    ACCEPTED("references/a.md");
    ACCEPTED("a..b.md");
    ACCEPTED("SKILL.md");
    ACCEPTED("x");
    ACCEPTED("scripts/run.py");
    ACCEPTED("a.b/c..d/e...f");
    /* a length that stops before the bad part: only len bytes count */
    CHECK(jail_check("ok.md/../x", 5) == NULL);
}

/* ---- jail_read --------------------------------------------------------------- */

TEST(read_normal)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "a.txt", 1 << 20, &f, &why), 0);
    CHECK_EQ(f.len, 10);
    CHECK_EQ(f.size, 10);
    CHECK_EQ(f.truncated, 0);
    CHECK_STR(f.data, "0123456789");
    jail_file_cleanup(&f);
    CHECK(f.data == NULL);
    CHECK_EQ(f.len, 0);

    CHECK_EQ(jail_read(skill, "references/a.md", 1 << 20, &f, &why), 0);
    CHECK_STR(f.data, "# A\nhello\n");
    jail_file_cleanup(&f);

    CHECK_EQ(jail_read(skill, "a..b.md", 100, &f, &why), 0);
    CHECK_STR(f.data, "dots");
    jail_file_cleanup(&f);
}

TEST(read_empty_file)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "empty.txt", 100, &f, &why), 0);
    CHECK_EQ(f.len, 0);
    CHECK_EQ(f.size, 0);
    CHECK_EQ(f.truncated, 0);
    CHECK(f.data != NULL);
    CHECK_EQ(f.data[0], '\0');
    jail_file_cleanup(&f);
}

TEST(read_truncated)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "a.txt", 3, &f, &why), 0);
    CHECK_EQ(f.len, 3);
    CHECK_EQ(f.size, 10);
    CHECK_EQ(f.truncated, 1);
    CHECK_STR(f.data, "012");   /* NUL-terminated at len */
    jail_file_cleanup(&f);

    /* exactly the size: not truncated */
    CHECK_EQ(jail_read(skill, "a.txt", 10, &f, &why), 0);
    CHECK_EQ(f.len, 10);
    CHECK_EQ(f.truncated, 0);
    jail_file_cleanup(&f);

    /* one short */
    CHECK_EQ(jail_read(skill, "a.txt", 9, &f, &why), 0);
    CHECK_EQ(f.len, 9);
    CHECK_EQ(f.truncated, 1);
    jail_file_cleanup(&f);
}

TEST(read_directory)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "references", 100, &f, &why), -EISDIR);
    CHECK_STR(why.msg, "that is a folder, not a file");
    CHECK(f.data == NULL);
    CHECK_EQ(jail_read(skill, "sub", 100, &f, &why), -EISDIR);
}

TEST(read_missing)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "nope.md", 100, &f, &why), -ENOENT);
    CHECK_STR(why.msg, "no such file in this skill");
    /* a caller that does not want the words passes NULL */
    CHECK_EQ(jail_read(skill, "nope.md", 100, &f, NULL), -ENOENT);
    CHECK_EQ(jail_read(skill, "nodir/nope.md", 100, &f, &why), -ENOENT);
    /* a file used as a folder */
    CHECK_EQ(jail_read(skill, "a.txt/x", 100, &f, &why), -ENOENT);
}

TEST(read_symlink_out)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "escape", 100, &f, &why), -EXDEV);
    CHECK_STR(why.msg, "the path leads outside the skill folder");
    CHECK(f.data == NULL);
    /* through a symlinked folder that leaves the skill */
    CHECK_EQ(jail_read(skill, "outlink/o.txt", 100, &f, &why), -EXDEV);
}

TEST(read_symlink_absolute)
{
    struct jail_file f;
    struct err why = {0};
    int r = jail_read(skill, "passwd", 1 << 16, &f, &why);
    CHECK(r < 0);
    CHECK_EQ(r, -EXDEV);
    CHECK(f.data == NULL);
}

TEST(read_symlink_inside)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "sibling", 100, &f, &why), 0);
    CHECK_STR(f.data, "0123456789");
    jail_file_cleanup(&f);
    /* sub/up -> ../a.txt stays inside */
    CHECK_EQ(jail_read(skill, "sub/up", 100, &f, &why), 0);
    CHECK_STR(f.data, "0123456789");
    jail_file_cleanup(&f);
}

TEST(read_symlink_loop)
{
    struct jail_file f;
    struct err why = {0};
    int r = jail_read(skill, "loop", 100, &f, &why);
    CHECK(r < 0);
    CHECK(why.msg[0]);
    CHECK(f.data == NULL);
}

TEST(read_fifo_does_not_block)
{
    struct jail_file f;
    struct err why = {0};
    alarm(10);  /* a blocking open would kill the test instead of hanging it */
    int r = jail_read(skill, "fifo", 100, &f, &why);
    alarm(0);
    CHECK(r < 0);
    CHECK(r != -ENOENT);
    CHECK_STR(why.msg, "that is not a regular file");
    CHECK(f.data == NULL);
}

TEST(read_bad_text)
{
    struct jail_file f;
    struct err why = {0};
    CHECK_EQ(jail_read(skill, "../outside.txt", 100, &f, &why), -EINVAL);
    CHECK_STR(why.msg, "'..' is not allowed: paths stay inside the skill folder");
    CHECK_EQ(jail_read(skill, "../outside.txt", 100, &f, NULL), -EINVAL);
    CHECK_EQ(jail_read(skill, "/etc/passwd", 100, &f, &why), -EINVAL);
    CHECK_EQ(jail_read(skill, "", 100, &f, &why), -EINVAL);
    CHECK_EQ(jail_read(skill, ".git/config", 100, &f, &why), -EINVAL);
}

TEST(read_missing_dir)
{
    struct jail_file f;
    struct err why = {0};
    char d[200];
    snprintf(d, sizeof d, "%s/no-such-skill", base);
    int r = jail_read(d, "a.txt", 100, &f, &why);
    CHECK(r < 0);
    CHECK_STR(why.msg, "the skill folder cannot be opened");
    CHECK(f.data == NULL);
}

/* The fast path of the script and hook resolutions: the path as written is
 * the real path only when no link is on the way and its text is plain. */
TEST(open_plain)
{
    char p[300];
    struct stat st;
    snprintf(p, sizeof p, "%s/a.txt", skill);
    int fd = jail_open_plain(p, &st);
    CHECK(fd >= 0);
    CHECK(S_ISREG(st.st_mode) && st.st_size == 10);
    if (fd >= 0)
        close(fd);
    /* a link anywhere on the way, inside the folder or out of it */
    static const char *const linked[] = {"sibling", "sub/up", "outlink/o.txt", "escape",
                                         "passwd", "loop", NULL};
    for (const char *const *l = linked; *l; l++) {
        snprintf(p, sizeof p, "%s/%s", skill, *l);
        CHECK_EQ(jail_open_plain(p, &st), -ELOOP);
    }
    /* text that is not its own real path, even where it names a file */
    static const char *const unplain[] = {"//a.txt", "/./a.txt", "/sub/../a.txt", "/a.txt/",
                                          "/a.txt/.", NULL};
    for (const char *const *u = unplain; *u; u++) {
        snprintf(p, sizeof p, "%s%s", skill, *u);
        CHECK_EQ(jail_open_plain(p, &st), -EINVAL);
    }
    CHECK_EQ(jail_open_plain("a.txt", &st), -EINVAL);
    CHECK_EQ(jail_open_plain("", &st), -EINVAL);
    /* not a regular file, or not there */
    snprintf(p, sizeof p, "%s/references", skill);
    CHECK_EQ(jail_open_plain(p, &st), -EISDIR);
    snprintf(p, sizeof p, "%s/fifo", skill);
    alarm(10);
    CHECK_EQ(jail_open_plain(p, &st), -EINVAL);
    alarm(0);
    snprintf(p, sizeof p, "%s/nope.txt", skill);
    CHECK_EQ(jail_open_plain(p, &st), -ENOENT);
}

int main(void)
{
    setup();
    RUN(check_refuses);
    RUN(check_reasons);
    RUN(check_long_path);
    RUN(check_accepts);
    RUN(read_normal);
    RUN(read_empty_file);
    RUN(read_truncated);
    RUN(read_directory);
    RUN(read_missing);
    RUN(read_symlink_out);
    RUN(read_symlink_absolute);
    RUN(read_symlink_inside);
    RUN(read_symlink_loop);
    RUN(read_fifo_does_not_block);
    RUN(read_bad_text);
    RUN(read_missing_dir);
    RUN(open_plain);
    teardown();
    DONE();
}
