/*
 * test_fetch.c - what `skill-mcp fetch` reads from the network, without a
 * network: the discovery index parser and the archive extraction, over
 * archives built here with libarchive (so each hazard is exactly one
 * member). The downloads and the install are covered end to end by
 * tests/e2e/fetch.test.mjs.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fetch.h"
#include "harness.h"
#include "tmptree.h"
#include "util.h"

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HDR "{\"$schema\":\"" FETCH_SCHEMA "\",\"skills\":"

/* ---- building archives ---------------------------------------------------- */

struct member {
    const char *path;
    mode_t type;            /* AE_IFREG, AE_IFDIR, AE_IFLNK, ... */
    mode_t perm;
    const char *data;       /* file contents */
    int64_t size;           /* a file of this many zeros when data is NULL */
    const char *hardlink;
    const char *symlink;
};

/* A tar (gzip when gz) of the n members; *len its size. Caller frees. */
static char *tar_of(const struct member *m, size_t n, int gz, size_t *len)
{
    size_t cap = 8 << 20, used = 0;
    char *buf = xmalloc(cap);
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (gz)
        archive_write_add_filter_gzip(a);
    archive_write_open_memory(a, buf, cap, &used);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        int64_t size = m[i].type != AE_IFREG || m[i].hardlink ? 0
                       : m[i].data ? (int64_t)strlen(m[i].data) : m[i].size;
        archive_entry_set_pathname(e, m[i].path);
        archive_entry_set_filetype(e, m[i].type);
        archive_entry_set_perm(e, m[i].perm ? m[i].perm : 0644);
        archive_entry_set_size(e, size);
        if (m[i].hardlink)
            archive_entry_set_hardlink(e, m[i].hardlink);
        if (m[i].symlink)
            archive_entry_set_symlink(e, m[i].symlink);
        if (m[i].type == AE_IFCHR)
            archive_entry_set_rdev(e, makedev(1, 3));
        archive_write_header(a, e);
        if (size && m[i].data)
            archive_write_data(a, m[i].data, (size_t)size);
        for (int64_t left = m[i].data ? 0 : size; left > 0;) {
            static const char zeros[4096];
            size_t k = left > (int64_t)sizeof zeros ? sizeof zeros : (size_t)left;
            archive_write_data(a, zeros, k);
            left -= (int64_t)k;
        }
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    *len = used;
    return buf;
}

static const struct fetch_limits LIM = {100, 1 << 20, 512 << 10};

/*
 * Extracts the members into a fresh folder dir and, separately, checks them
 * without writing; both must agree (99 when not). Returns the result; why
 * gets the reason of the writing run. The caller removes dir.
 */
static int extract(const struct member *m, size_t n, const struct fetch_limits *lim,
                   struct err *why, char dir[64])
{
    size_t len;
    char *tar = tar_of(m, n, 1, &len);
    struct err dry = {0};
    snprintf(dir, 64, "/tmp/skill-test-fetch-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int rc = fetch_extract(fd, tar, len, lim ? lim : &LIM, why);
    int drc = fetch_extract(-1, tar, len, lim ? lim : &LIM, &dry);
    close(fd);
    free(tar);
    /* Without a folder, conflicts between a file and a folder of one name
     * cannot be seen; every other verdict is the same. */
    if (rc != drc && !strstr(why->msg, "in the way"))
        return 99;
    return rc;
}

static void cleanup(const char *dir)
{
    tt_rm_rf(dir);
}

/* ---- the index ------------------------------------------------------------- */

static int parse(const char *doc, struct fetch_entry **v, size_t *n, struct err *why)
{
    return fetch_index_parse(doc, strlen(doc), v, n, why);
}

TEST(index_good)
{
    struct fetch_entry *v;
    size_t n;
    struct err why = {0};
    CHECK_EQ(parse(HDR "[{\"name\":\"a\",\"description\":\"d\",\"type\":\"archive\",\"url\":"
                       "\"a.tar.gz\",\"digest\":\"" DIGEST "\",\"extra\":1},"
                       "{\"name\":\"b\",\"description\":\"\",\"type\":\"wasm\",\"url\":\"b\","
                       "\"digest\":\"" DIGEST "\"}]}",
                   &v, &n, &why),
             0);
    CHECK_EQ(n, 2);
    CHECK_STR(v[0].name, "a");
    CHECK_STR(v[0].url, "a.tar.gz");
    CHECK_STR(v[0].digest, DIGEST);
    CHECK(v[0].problem == NULL);
    CHECK_STR(v[1].type, "wasm");       /* unknown types are the caller's to skip */
    CHECK(v[1].problem == NULL);
    fetch_index_free(v, n);
    CHECK_EQ(parse(HDR "[]}", &v, &n, &why), 0);
    CHECK_EQ(n, 0);
    fetch_index_free(v, n);
}

TEST(index_refused)
{
    static const struct {
        const char *doc, *why;
    } cases[] = {
        {"not json", "not JSON"},
        {"[]", "not a JSON object"},
        {"{\"skills\":[]}", "no \"$schema\": a v0.1.0 index"},
        {"{\"$schema\":\"https://schemas.agentskills.io/discovery/0.1.0/schema.json\","
         "\"skills\":[]}",
         "unknown index \"$schema\" 'https://schemas.agentskills.io/discovery/0.1.0"},
        {"{\"$schema\":2,\"skills\":[]}", "(not a string)"},
        {"{\"$schema\":\"" FETCH_SCHEMA "\"}", "no \"skills\" array"},
        {"{\"$schema\":\"" FETCH_SCHEMA "\",\"skills\":{}}", "no \"skills\" array"},
        {HDR "[],\"skills\":[]}", "not JSON"},      /* duplicate keys */
        {HDR "[{\"name\":\"a\\u0000b\"}]}", "not JSON"},  /* NUL in a string */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct fetch_entry *v = (void *)1;
        size_t n = 7;
        struct err why = {0};
        CHECK_EQ(parse(cases[i].doc, &v, &n, &why), -1);
        CHECK(v == NULL && n == 0);
        if (!strstr(why.msg, cases[i].why)) {
            H_FAIL("case %zu: '%s' lacks '%s'", i, why.msg, cases[i].why);
            return;
        }
    }
}

TEST(index_bad_entries)
{
    static const struct {
        const char *entry, *problem;
    } cases[] = {
        {"3", "not a JSON object"},
        {"{\"description\":\"d\",\"type\":\"archive\",\"url\":\"u\",\"digest\":\"" DIGEST "\"}",
         "no \"name\""},
        {"{\"name\":\"a\",\"description\":\"d\",\"type\":\"archive\",\"url\":\"\","
         "\"digest\":\"" DIGEST "\"}", "no \"url\""},
        {"{\"name\":\"a\",\"description\":\"d\",\"type\":\"archive\",\"url\":\"u\"}",
         "no \"digest\""},
        {"{\"name\":\"a\",\"description\":\"d\",\"type\":\"archive\",\"url\":\"u\","
         "\"digest\":\"sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"}",
         "64 lowercase hex"},
        {"{\"name\":\"a\",\"description\":\"d\",\"type\":\"archive\",\"url\":\"u\","
         "\"digest\":\"sha512:00\"}", "64 lowercase hex"},
        {"{\"name\":\"a\",\"type\":\"archive\",\"url\":\"u\",\"digest\":\"" DIGEST "\"}",
         "no \"description\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char doc[1024];
        struct fetch_entry *v;
        size_t n;
        struct err why = {0};
        snprintf(doc, sizeof doc, HDR "[%s]}", cases[i].entry);
        CHECK_EQ(parse(doc, &v, &n, &why), 0);
        CHECK_EQ(n, 1);
        if (!v[0].problem || !strstr(v[0].problem, cases[i].problem)) {
            H_FAIL("case %zu: problem '%s' lacks '%s'", i, v[0].problem ? v[0].problem : "(none)",
                   cases[i].problem);
            fetch_index_free(v, n);
            return;
        }
        fetch_index_free(v, n);
    }
}

/* ---- extraction -------------------------------------------------------------- */

TEST(extract_paths_and_modes)
{
    const struct member m[] = {
        {.path = "./", .type = AE_IFDIR, .perm = 0755},
        {.path = "./hz//refs/./a.md", .type = AE_IFREG, .data = "alpha\n"},
        {.path = "hz/run.sh", .type = AE_IFREG, .perm = 04755, .data = "#!/bin/sh\n"},
        {.path = "hz/secret", .type = AE_IFREG, .perm = 0600, .data = "s"},
        {.path = "hz/sub/", .type = AE_IFDIR, .perm = 0700},
        {.path = "hz/empty", .type = AE_IFREG, .data = ""},
    };
    struct err why = {0};
    char dir[64], p[128], got[16] = "";
    CHECK_EQ(extract(m, sizeof m / sizeof *m, NULL, &why, dir), 0);
    mode_t um = umask(022);
    umask(um);
    struct stat st;
    snprintf(p, sizeof p, "%s/hz/refs/a.md", dir);
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(read(fd, got, sizeof got), 6);
    close(fd);
    CHECK_STR(got, "alpha\n");
    snprintf(p, sizeof p, "%s/hz/run.sh", dir);
    CHECK_EQ(stat(p, &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0755 & ~um);      /* setuid dropped */
    snprintf(p, sizeof p, "%s/hz/secret", dir);
    CHECK_EQ(stat(p, &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0644 & ~um);
    snprintf(p, sizeof p, "%s/hz/sub", dir);
    CHECK_EQ(stat(p, &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0755 & ~um);
    snprintf(p, sizeof p, "%s/hz/empty", dir);
    CHECK_EQ(stat(p, &st), 0);
    CHECK_EQ(st.st_size, 0);
    cleanup(dir);
}

TEST(extract_hazards)
{
    char deep[200] = "hz", longp[1200] = "hz/";
    for (int i = 0; i < 33; i++)
        memcpy(deep + 2 + 2 * i, "/d", 3);     /* 34 components */
    memset(longp + 3, 'x', 1100);
    longp[1103] = '\0';
    static const char ok_md[] = "---\nname: hz\ndescription: d\n---\n";
    const struct {
        struct member m;
        const char *why;
        struct fetch_limits lim;
    } cases[] = {
        {.m = {.path = "/etc/passwd", .type = AE_IFREG, .data = "x"}, .why = "absolute path"},
        {.m = {.path = "hz/../../x", .type = AE_IFREG, .data = "x"}, .why = "'..' component"},
        {.m = {.path = "..", .type = AE_IFDIR}, .why = "'..' component"},
        {.m = {.path = "hz/l", .type = AE_IFLNK, .symlink = "SKILL.md"}, .why = "symbolic link"},
        {.m = {.path = "hz/l", .type = AE_IFLNK, .symlink = "/etc"}, .why = "symbolic link"},
        {.m = {.path = "hz/h", .type = AE_IFREG, .hardlink = "hz/SKILL.md"}, .why = "hard link"},
        {.m = {.path = "hz/null", .type = AE_IFCHR}, .why = "device file"},
        {.m = {.path = "hz/disk", .type = AE_IFBLK}, .why = "device file"},
        {.m = {.path = "hz/p", .type = AE_IFIFO}, .why = "fifo"},
        {.m = {.path = "hz/SKILL.md", .type = AE_IFREG, .data = "again"}, .why = "appears twice"},
        {.m = {.path = "hz/", .type = AE_IFDIR}, .why = "appears twice"},
        {.m = {.path = "hz/SKILL.md/x", .type = AE_IFREG, .data = "x"},
         .why = "a file is in the way"},
        {.m = {.path = deep, .type = AE_IFREG, .data = "x"}, .why = "nested too deep"},
        {.m = {.path = longp, .type = AE_IFREG, .data = "x"}, .why = "named too long"},
        {.m = {.path = "hz/big", .type = AE_IFREG, .size = (512 << 10) + 1},
         .why = "per-file limit"},
        {.m = {.path = "hz/big", .type = AE_IFREG, .size = 4096}, .why = "expanded size limit",
         .lim = {100, 4096, 4096}},
        {.m = {.path = ".", .type = AE_IFREG, .data = "x"}, .why = "file without a name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct member m[3] = {
            {.path = "hz/", .type = AE_IFDIR, .perm = 0755},
            {.path = "hz/SKILL.md", .type = AE_IFREG, .data = ok_md},
            cases[i].m,
        };
        struct err why = {0};
        char dir[64];
        int rc = extract(m, 3, cases[i].lim.max_entries ? &cases[i].lim : NULL, &why,
                         dir);
        cleanup(dir);
        if (rc != -1 || !strstr(why.msg, cases[i].why)) {
            H_FAIL("case %zu (%.40s): rc %d, '%s' lacks '%s'", i, cases[i].m.path, rc, why.msg,
                   cases[i].why);
            return;
        }
    }
}

TEST(extract_counts_members)
{
    struct member m[102];
    char names[102][16];
    for (int i = 0; i < 102; i++) {
        snprintf(names[i], sizeof names[i], "hz/f%d", i);
        m[i] = (struct member){.path = names[i], .type = AE_IFREG, .data = ""};
    }
    struct err why = {0};
        char dir[64];
    CHECK_EQ(extract(m, 100, NULL, &why, dir), 0);
    cleanup(dir);
    CHECK_EQ(extract(m, 101, NULL, &why, dir), -1);
    cleanup(dir);
    CHECK(strstr(why.msg, "more than 100 members") != NULL);
}

TEST(extract_not_an_archive)
{
    struct err why = {0};
    static const char junk[] = "\x1f\x8b\x08\x00garbage garbage garbage";
    CHECK_EQ(fetch_extract(-1, junk, sizeof junk - 1, &LIM, &why), -1);
    CHECK(why.msg[0] != '\0');
    size_t len;
    char *empty = tar_of(NULL, 0, 0, &len);
    CHECK_EQ(fetch_extract(-1, empty, len, &LIM, &why), -1);
    free(empty);
    CHECK(strstr(why.msg, "empty") != NULL || strstr(why.msg, "tar") != NULL);
}

/* ---- where a download may connect ------------------------------------------ */

/* fetch_addr_refused of host read as the resolver reads a numeric host
 * (every inet_aton spelling); "(not numeric)" when it is not one. */
static const char *judge(const char *host, unsigned port, const struct fetch_allow *allow,
                         size_t n)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0)
        return "(not numeric)";
    struct sockaddr_storage ss;
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
    return fetch_dest_refused((struct sockaddr *)&ss, allow, n);
}

TEST(addresses_refused)
{
    /* each: the address, and a word of the reason (NULL: public, allowed) */
    static const struct {
        const char *host, *why;
    } v[] = {
        /* 127.0.0.1 in every spelling the resolver takes */
        {"127.0.0.1", "loopback"}, {"2130706433", "loopback"}, {"0x7f.1", "loopback"},
        {"017700000001", "loopback"}, {"0x7f000001", "loopback"}, {"0177.0.0.1", "loopback"},
        {"127.1", "loopback"}, {"127.255.255.254", "loopback"},
        /* IPv4 ranges, both edges where it matters */
        {"0.0.0.0", "this network"}, {"0.255.255.255", "this network"},
        {"10.0.0.1", "private"}, {"10.255.255.255", "private"},
        {"100.64.0.1", "shared"}, {"100.127.255.255", "shared"}, {"100.63.255.255", NULL},
        {"100.128.0.0", NULL},
        {"169.254.169.254", "link-local"}, {"169.253.255.255", NULL},
        {"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"172.15.255.255", NULL},
        {"172.32.0.0", NULL},
        {"192.0.0.8", "protocol assignment"}, {"192.0.2.1", "documentation"},
        {"192.168.1.1", "private"}, {"192.169.0.1", NULL},
        {"198.18.0.1", "benchmarking"}, {"198.19.255.255", "benchmarking"},
        {"198.51.100.7", "documentation"}, {"203.0.113.9", "documentation"},
        {"224.0.0.1", "multicast"}, {"239.255.255.250", "multicast"},
        {"240.0.0.1", "reserved"}, {"255.255.255.255", "broadcast"},
        {"8.8.8.8", NULL}, {"1.1.1.1", NULL}, {"93.184.215.14", NULL}, {"126.255.255.255", NULL},
        {"128.0.0.1", NULL}, {"223.255.255.255", NULL},
        /* IPv6 */
        {"::1", "loopback"}, {"::", "unspecified"}, {"::2", "IPv4-compatible"},
        {"::127.0.0.1", "IPv4-compatible"},
        {"::ffff:127.0.0.1", "loopback"}, {"::ffff:7f00:1", "loopback"},
        {"::ffff:10.1.2.3", "private"}, {"::ffff:169.254.169.254", "link-local"},
        {"::ffff:0.0.0.0", "this network"}, {"::ffff:8.8.8.8", NULL},
        {"64:ff9b::7f00:1", "loopback"}, {"64:ff9b::192.168.0.1", "private"},
        {"64:ff9b::8.8.8.8", NULL}, {"64:ff9b:1::1", "NAT64"},
        {"2002:7f00:1::1", "6to4"}, {"2002:c0a8:101::", "6to4"}, {"2002:808:808::1", NULL},
        {"2001:0:4136:e378::1", "Teredo"}, {"2001:db8::1", "documentation"}, {"100::1", "discard"},
        {"fc00::1", "unique local"}, {"fd12:3456::1", "unique local"},
        {"fe80::1", "link-local"}, {"febf::1", "link-local"}, {"fec0::1", "site-local"},
        {"ff02::1", "multicast"}, {"ff05::2", "multicast"},
        {"2606:4700::1111", NULL}, {"2a00:1450:4001::200e", NULL}, {"2001:4860::8888", NULL},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        const char *why = judge(v[i].host, 443, NULL, 0);
        if (!v[i].why ? why != NULL : !why || !strstr(why, v[i].why)) {
            H_FAIL("%s: want %s, got %s", v[i].host, v[i].why ? v[i].why : "allowed",
                   why ? why : "allowed");
            return;
        }
    }
    struct sockaddr_un_like {
        sa_family_t family;
        char path[32];
    } un = {AF_UNIX, "/tmp/x"};
    CHECK(fetch_addr_refused((struct sockaddr *)&un) != NULL);
}

TEST(allow_address)
{
    struct fetch_allow a[4];
    CHECK_EQ(fetch_allow_parse("127.0.0.1:8080", &a[0]), 0);
    CHECK_EQ(a[0].family, AF_INET);
    CHECK_EQ(a[0].port, 8080);
    CHECK_EQ(fetch_allow_parse("[::1]:9", &a[1]), 0);
    CHECK_EQ(a[1].family, AF_INET6);
    CHECK_EQ(a[1].port, 9);
    CHECK_EQ(fetch_allow_parse("10.0.0.5", &a[2]), 0);     /* any port */
    CHECK_EQ(a[2].port, 0);
    /* a v4-mapped spelling is the IPv4 address, and so is 0x7f.2 */
    CHECK_EQ(fetch_allow_parse("[::ffff:127.0.0.2]:7", &a[3]), 0);
    CHECK_EQ(a[3].family, AF_INET);

    /* exactly the named destination: address and port */
    CHECK(judge("127.0.0.1", 8080, a, 4) == NULL);
    CHECK(judge("2130706433", 8080, a, 4) == NULL);
    CHECK(judge("::ffff:127.0.0.1", 8080, a, 4) == NULL);
    CHECK(judge("127.0.0.1", 8081, a, 4) != NULL);
    CHECK(judge("127.0.0.3", 8080, a, 4) != NULL);
    CHECK(judge("::1", 9, a, 4) == NULL);
    CHECK(judge("::1", 8080, a, 4) != NULL);
    CHECK(judge("10.0.0.5", 1, a, 4) == NULL);
    CHECK(judge("10.0.0.5", 65535, a, 4) == NULL);
    CHECK(judge("10.0.0.6", 1, a, 4) != NULL);
    CHECK(judge("0x7f.2", 7, a, 4) == NULL);
    CHECK(judge("127.0.0.2", 8, a, 4) != NULL);
    CHECK(judge("8.8.8.8", 1, a, 4) == NULL);   /* public: never needed */

    static const char *const bad[] = {"", "localhost", "127.0.0.1:", "127.0.0.1:0",
                                      "127.0.0.1:65536", "127.0.0.1:x", "127.0.0.1:+80",
                                      "[::1", "[::1]x", "[::1]:", "[localhost]:80",
                                      "example.com:443", "127.0.0.1 :80", "1.2.3.4.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fetch_allow x;
        if (fetch_allow_parse(bad[i], &x) == 0) {
            H_FAIL("--allow-address '%s' was taken", bad[i]);
            return;
        }
    }
}

/* One ustar header for path (typeflag type) declaring size bytes, into h[512]. */
static void ustar_header(char *h, const char *path, char type, int64_t size)
{
    memset(h, 0, 512);
    snprintf(h, 100, "%s", path);
    memcpy(h + 100, "0000755", 7);
    memcpy(h + 108, "0000000", 7);
    memcpy(h + 116, "0000000", 7);
    snprintf(h + 124, 12, "%011llo", (long long)size);
    memcpy(h + 136, "00000000000", 11);
    h[156] = type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

/* data gzip-compressed (libarchive's raw writer); *len its size. Caller frees. */
static char *gzip_of(const char *data, size_t n, size_t *len)
{
    size_t cap = n / 100 + (1 << 20), used = 0;
    char *buf = xmalloc(cap);
    struct archive *a = archive_write_new();
    archive_write_set_format_raw(a);
    archive_write_add_filter_gzip(a);
    archive_write_open_memory(a, buf, cap, &used);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "x");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_size(e, (int64_t)n);
    archive_write_header(a, e);
    archive_write_data(a, data, n);
    archive_entry_free(e);
    archive_write_close(a);
    archive_write_free(a);
    *len = used;
    return buf;
}

TEST(extract_bounds_decompression)
{
    /* A GNU dumpdir member (a folder that carries data) of 64 MiB of zeros:
     * no file is written, but libarchive skips past it by decompressing all
     * of it. The stream is bounded, not only the files. */
    int64_t big = (int64_t)64 << 20;
    size_t n = 512 + (size_t)big + 1024;
    char *tar = xcalloc(n, 1);
    ustar_header(tar, "hz/", 'D', big);
    size_t glen;
    char *gz = gzip_of(tar, n, &glen);
    free(tar);
    CHECK(glen < (size_t)1 << 20);      /* a ratio over 64:1 */
    struct fetch_limits lim = {100, 1 << 20, 1 << 20};
    struct err why = {0};
    CHECK_EQ(fetch_extract(-1, gz, glen, &lim, &why), -1);
    CHECK(strstr(why.msg, "decompresses to more than") != NULL);
    /* the same with room for it: accepted (the folder has no file data) */
    struct fetch_limits roomy = {100, big + (4 << 20), 1 << 20};
    why.msg[0] = '\0';
    CHECK_EQ(fetch_extract(-1, gz, glen, &roomy, &why), 0);
    free(gz);

    /* a plain tar is bounded the same way */
    n = 512 + (4 << 20) + 1024;
    tar = xcalloc(n, 1);
    ustar_header(tar, "hz/", 'D', 4 << 20);
    struct fetch_limits small = {100, 1 << 20, 1 << 20};
    CHECK_EQ(fetch_extract(-1, tar, n, &small, &why), -1);
    CHECK(strstr(why.msg, "decompresses to more than") != NULL);
    free(tar);
}

int main(void)
{
    x_install_json_alloc();
    RUN(index_good);
    RUN(index_refused);
    RUN(index_bad_entries);
    RUN(extract_paths_and_modes);
    RUN(extract_hazards);
    RUN(extract_counts_members);
    RUN(extract_not_an_archive);
    RUN(extract_bounds_decompression);
    RUN(addresses_refused);
    RUN(allow_address);
    DONE();
}
