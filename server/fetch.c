/*
 * fetch.c - see fetch.h. libcurl does the HTTP (and, through its CURLU API,
 * the RFC 3986 resolution of entry URLs); OpenSSL's EVP the SHA-256;
 * libarchive reads archives, and this module writes their members itself,
 * relative to the staging folder's descriptor, so that every member path is
 * checked before anything is created.
 *
 * Links are refused outright, symbolic or hard, whatever their target: the
 * archives skill-mcp serves never hold one (discovery.c archives regular
 * files only), and with no link ever created in the staging folder no later
 * member can be written through one.
 */
#include "fetch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynlib.h"
#include "frontmatter.h"
#include "manifest.h"
#include "skills.h"
#include "util.h"

#define INDEX_MAX ((int64_t)8 << 20)        /* an index is JSON: far smaller */
#define DEFAULT_MAX_BYTES ((int64_t)64 << 20)
#define DEFAULT_TIMEOUT 60.0                /* seconds per download */
#define CONNECT_TIMEOUT 15.0
#define MAX_REDIRS 5
#define DEFAULT_MAX_ENTRIES 10000           /* skills.c's walk limit */
#define DEFAULT_MAX_EXPANDED ((int64_t)256 << 20)
#define MAX_FILE ((int64_t)64 << 20)        /* discovery.c's archive input cap */
#define SKILL_MD_MAX ((int64_t)4 << 20)     /* skills.c refuses larger */
#define PATH_DEPTH_MAX 32
#define MEMBER_PATH_MAX 1024
#define BLOCK ((size_t)64 << 10)          /* archive data read at a time */

/* ---- where a download may connect ------------------------------------------- */

static int in4(uint32_t a, uint32_t net, int bits)
{
    return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits));
}

static const char *v4_refused(uint32_t a)
{
    static const struct {
        uint32_t net;
        int bits;
        const char *what;
    } r[] = {
        {0x00000000u, 8, "a 'this network' address (0.0.0.0/8)"},
        {0x0A000000u, 8, "a private address (10.0.0.0/8)"},
        {0x64400000u, 10, "a shared (carrier NAT) address (100.64.0.0/10)"},
        {0x7F000000u, 8, "a loopback address (127.0.0.0/8)"},
        {0xA9FE0000u, 16, "a link-local address (169.254.0.0/16)"},
        {0xAC100000u, 12, "a private address (172.16.0.0/12)"},
        {0xC0000000u, 24, "a protocol assignment address (192.0.0.0/24)"},
        {0xC0000200u, 24, "a documentation address (192.0.2.0/24)"},
        {0xC0A80000u, 16, "a private address (192.168.0.0/16)"},
        {0xC6120000u, 15, "a benchmarking address (198.18.0.0/15)"},
        {0xC6336400u, 24, "a documentation address (198.51.100.0/24)"},
        {0xCB007100u, 24, "a documentation address (203.0.113.0/24)"},
        {0xE0000000u, 4, "a multicast address (224.0.0.0/4)"},
        {0xF0000000u, 4, "a reserved or broadcast address (240.0.0.0/4)"},
    };
    for (size_t i = 0; i < sizeof r / sizeof *r; i++)
        if (in4(a, r[i].net, r[i].bits))
            return r[i].what;
    return NULL;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* An IPv6 address that carries an IPv4 one is judged by the IPv4 one; the
 * rest by its own range. */
static const char *v6_refused(const unsigned char *a)
{
    static const unsigned char zero[16];
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
    if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12)) {
        const char *w = v4_refused(be32(a + 12));
        return w ? w : NULL;
    }
    if (!memcmp(a, zero, 12)) {
        if (!memcmp(a, zero, 15))
            return a[15] == 1 ? "a loopback address (::1)"
                   : a[15] == 0 ? "the unspecified address (::)"
                                : "an IPv4-compatible address (::/96, deprecated)";
        return "an IPv4-compatible address (::/96, deprecated)";
    }
    if (a[0] == 0x20 && a[1] == 0x02) {    /* 6to4: 2002:AABB:CCDD::/48 */
        const char *w = v4_refused(be32(a + 2));
        return w ? "a 6to4 address of a refused IPv4 address (2002::/16)" : NULL;
    }
    if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1)
        return "a local-use NAT64 address (64:ff9b:1::/48)";
    if (a[0] == 0x01 && !memcmp(a + 1, zero, 7))
        return "a discard-only address (100::/64)";
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0)
        return "a Teredo tunnel address (2001::/32)";
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
        return "a documentation address (2001:db8::/32)";
    if ((a[0] & 0xfe) == 0xfc)
        return "a unique local address (fc00::/7)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return "a link-local address (fe80::/10)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
        return "a site-local address (fec0::/10)";
    if (a[0] == 0xff)
        return "a multicast address (ff00::/8)";
    return NULL;
}

const char *fetch_addr_refused(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return v4_refused(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family == AF_INET6)
        return v6_refused(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
    return "not an IP address";
}

/* The address of sa with an IPv4-mapped IPv6 one as IPv4: *fam, out[], port. */
static void addr_norm(const struct sockaddr *sa, int *fam, unsigned char out[16], unsigned *port)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    *fam = sa->sa_family;
    *port = 0;
    memset(out, 0, 16);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        memcpy(out, &s4->sin_addr, 4);
        *port = ntohs(s4->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        *port = ntohs(s6->sin6_port);
        if (!memcmp(s6->sin6_addr.s6_addr, mapped, 12)) {
            *fam = AF_INET;
            memcpy(out, s6->sin6_addr.s6_addr + 12, 4);
        } else {
            memcpy(out, s6->sin6_addr.s6_addr, 16);
        }
    }
}

int fetch_allow_parse(const char *s, struct fetch_allow *out)
{
    char host[INET6_ADDRSTRLEN + 64];
    const char *port = NULL, *colon = strchr(s, ':');
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || (end[1] && end[1] != ':') || (size_t)(end - s - 1) >= sizeof host)
            return -1;
        snprintf(host, sizeof host, "%.*s", (int)(end - s - 1), s + 1);
        port = end[1] ? end + 2 : NULL;
    } else if (colon && !strchr(colon + 1, ':')) {      /* one colon: ADDR:PORT */
        if ((size_t)(colon - s) >= sizeof host)
            return -1;
        snprintf(host, sizeof host, "%.*s", (int)(colon - s), s);
        port = colon + 1;
    } else {
        if (strlen(s) >= sizeof host)
            return -1;
        snprintf(host, sizeof host, "%s", s);
    }
    unsigned long p = 0;
    if (port) {
        char *e;
        errno = 0;
        p = strtoul(port, &e, 10);
        if (!*port || *e || errno || p < 1 || p > 65535 || *port < '0' || *port > '9')
            return -1;
    }
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM}, *ai;
    if (!*host || getaddrinfo(host, NULL, &hints, &ai) != 0)
        return -1;
    memset(out, 0, sizeof *out);
    unsigned ignored;
    addr_norm(ai->ai_addr, &out->family, out->addr, &ignored);
    freeaddrinfo(ai);
    out->port = (unsigned)p;
    return 0;
}

const char *fetch_dest_refused(const struct sockaddr *sa, const struct fetch_allow *allow,
                               size_t n)
{
    const char *why = fetch_addr_refused(sa);
    if (!why || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
        return why;
    int fam;
    unsigned char a[16];
    unsigned port;
    addr_norm(sa, &fam, a, &port);
    for (size_t i = 0; i < n; i++)
        if (allow[i].family == fam && !memcmp(allow[i].addr, a, fam == AF_INET ? 4 : 16) &&
            (!allow[i].port || allow[i].port == port))
            return NULL;
    return why;
}

/* ---- the index --------------------------------------------------------- */

/* A copy of o[key] when it is a string without NUL bytes, else NULL. */
static char *str_field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return xstrdup(json_string_value(v));
}

static int digest_ok(const char *d)
{
    if (strncmp(d, "sha256:", 7) || strlen(d) != 7 + 64)
        return 0;
    for (const char *p = d + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

int fetch_index_parse(const char *data, size_t len, struct fetch_entry **out, size_t *n,
                      struct err *why)
{
    json_error_t je;
    *out = NULL;
    *n = 0;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        err_set(why, 0, 0, "the index is not JSON: %s (line %d)", je.text, je.line);
        return -1;
    }
    json_t *schema = json_object_get(root, "$schema"), *skills = json_object_get(root, "skills");
    int rc = -1;
    if (!json_is_object(root)) {
        err_set(why, 0, 0, "the index is not a JSON object");
    } else if (!schema) {
        err_set(why, 0, 0, "the index has no \"$schema\": a v0.1.0 index (no digests) "
                            "cannot be verified; only " FETCH_SCHEMA " is read");
    } else if (!json_is_string(schema) || strcmp(json_string_value(schema), FETCH_SCHEMA)) {
        err_set(why, 0, 0, "unknown index \"$schema\" %.200s%s%s; only " FETCH_SCHEMA " is read",
               json_is_string(schema) ? "'" : "(not a string)",
               json_is_string(schema) ? json_string_value(schema) : "",
               json_is_string(schema) ? "'" : "");
    } else if (!json_is_array(skills)) {
        err_set(why, 0, 0, "the index has no \"skills\" array");
    } else {
        size_t count = json_array_size(skills);
        struct fetch_entry *v = xcalloc(count ? count : 1, sizeof *v);
        for (size_t i = 0; i < count; i++) {
            json_t *e = json_array_get(skills, i);
            struct fetch_entry *f = &v[i];
            if (!json_is_object(e)) {
                f->problem = "the entry is not a JSON object";
                continue;
            }
            f->name = str_field(e, "name");
            f->description = str_field(e, "description");
            f->type = str_field(e, "type");
            f->url = str_field(e, "url");
            f->digest = str_field(e, "digest");
            if (!f->name)
                f->problem = "the entry has no \"name\" string";
            else if (!f->type)
                f->problem = "the entry has no \"type\" string";
            else if (!f->description)
                f->problem = "the entry has no \"description\" string";
            else if (!f->url || !*f->url)
                f->problem = "the entry has no \"url\" string";
            else if (!f->digest)
                f->problem = "the entry has no \"digest\" string";
            else if (!digest_ok(f->digest))
                f->problem = "the entry's digest is not \"sha256:\" and 64 lowercase hex digits";
        }
        *out = v;
        *n = count;
        rc = 0;
    }
    json_decref(root);
    return rc;
}

void fetch_index_free(struct fetch_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].name);
        free(v[i].description);
        free(v[i].type);
        free(v[i].url);
        free(v[i].digest);
    }
    free(v);
}

/* ---- a set of member paths (duplicates are refused) --------------------- */

struct pset {
    char **v;
    size_t cap, n;
};

/* Adds s; returns 1 when it was already there. */
static int pset_add(struct pset *p, const char *s)
{
    if ((p->n + 1) * 10 > p->cap * 7) {
        size_t ocap = p->cap, ncap = p->cap ? p->cap * 2 : 64;
        char **old = p->v;
        p->v = xcalloc(ncap, sizeof *p->v);
        p->cap = ncap;
        for (size_t i = 0; i < ocap; i++) {
            if (!old[i])
                continue;
            size_t j = hash_fnv1a32(old[i], strlen(old[i])) & (ncap - 1);
            while (p->v[j])
                j = (j + 1) & (ncap - 1);
            p->v[j] = old[i];
        }
        free(old);
    }
    size_t j = hash_fnv1a32(s, strlen(s)) & (p->cap - 1);
    for (; p->v[j]; j = (j + 1) & (p->cap - 1))
        if (!strcmp(p->v[j], s))
            return 1;
    p->v[j] = xstrdup(s);
    p->n++;
    return 0;
}

static void pset_free(struct pset *p)
{
    for (size_t i = 0; i < p->cap; i++)
        free(p->v[i]);
    free(p->v);
    memset(p, 0, sizeof *p);
}

/* ---- extraction ---------------------------------------------------------- */

/*
 * Normalises a member path into out: empty and "." components dropped (so
 * "./a//b/" is "a/b"). Returns the number of components (0: the archive
 * root itself), or -1 with *why set.
 */
static int member_path(const char *p, char *out, size_t outlen, struct err *why)
{
    size_t o = 0;
    int depth = 0;
    if (p[0] == '/') {
        err_set(why, 0, 0, "member '%.200s' has an absolute path", p);
        return -1;
    }
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            err_set(why, 0, 0, "member '%.200s' has a '..' component", p);
            return -1;
        }
        if (n && !(n == 1 && s[0] == '.')) {
            if (++depth > PATH_DEPTH_MAX || o + n + 2 > outlen) {
                err_set(why, 0, 0, "member '%.200s' is nested too deep or named too long", p);
                return -1;
            }
            if (o)
                out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s += n;
        if (*s == '/')
            s++;
    }
    out[o] = '\0';
    return depth;
}

/*
 * The folder holding rel (normalised, depth components) beneath dirfd,
 * created as needed; *leaf points at the last component. Returns an fd (to
 * close; dirfd itself is dup'ed) or -1 with errno set.
 */
static int parent_of(int dirfd, char *rel, const char **leaf)
{
    int fd = dup(dirfd);
    char *s = rel;
    for (char *slash; fd >= 0 && (slash = strchr(s, '/'));) {
        *slash = '\0';
        if (mkdirat(fd, s, 0755) < 0 && errno != EEXIST) {
            *slash = '/';
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        int next = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        *slash = '/';
        close(fd);
        errno = e;
        fd = next;
        s = slash + 1;
    }
    *leaf = s;
    return fd;
}

/* Writes one regular member's data (dirfd < 0: reads and counts it only). */
static int extract_file(struct archive *a, int dirfd, char *rel, int exec, int64_t declared,
                        int64_t *total, const struct fetch_limits *lim, struct err *why)
{
    int fd = -1, rc = -1;
    char shown[MEMBER_PATH_MAX];
    snprintf(shown, sizeof shown, "%s", rel);
    if (dirfd >= 0) {
        const char *leaf;
        int pfd = parent_of(dirfd, rel, &leaf);
        if (pfd < 0) {
            err_set(why, 0, 0, "member '%.200s': cannot create its folder: %s", shown,
                   errno == ENOTDIR ? "a file is in the way" : strerror(errno));
            return -1;
        }
        fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    exec ? 0755 : 0644);
        int e = errno;
        close(pfd);
        if (fd < 0) {
            err_set(why, 0, 0, "member '%.200s': %s", shown,
                   e == EEXIST ? "a folder is in the way" : strerror(e));
            return -1;
        }
    }
    char *block = xmalloc(BLOCK);
    int64_t got = 0;
    for (;;) {
        la_ssize_t r = DL(archive_read_data)(a, block, BLOCK);
        if (r < 0) {
            err_set(why, 0, 0, "member '%.200s': %s", shown,
                   DL(archive_error_string)(a) ? DL(archive_error_string)(a) : "unreadable data");
            goto out;
        }
        if (r == 0)
            break;
        got += r;
        *total += r;
        if (got > declared || got > lim->max_file || *total > lim->max_expanded) {
            err_set(why, 0, 0, "member '%.200s' expands past the limit", shown);
            goto out;
        }
        if (fd >= 0 && x_write_all(fd, block, (size_t)r) < 0) {
            err_set(why, 0, 0, "member '%.200s': cannot write: %s", shown, strerror(errno));
            goto out;
        }
    }
    rc = 0;
out:
    free(block);
    if (fd >= 0 && close(fd) < 0 && !rc) {
        err_set(why, 0, 0, "member '%.200s': cannot write: %s", shown, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* Checks and writes the member e; returns 0 or -1 with *why set. */
static int extract_member(struct archive *a, struct archive_entry *e, int dirfd,
                          struct pset *seen, int64_t *total, const struct fetch_limits *lim,
                          struct err *why)
{
    const char *raw = DL(archive_entry_pathname)(e);
    if (!raw)
        raw = DL(archive_entry_pathname_utf8)(e);
    if (!raw || !*raw) {
        err_set(why, 0, 0, "a member has no usable path");
        return -1;
    }
    char rel[MEMBER_PATH_MAX];
    int depth = member_path(raw, rel, sizeof rel, why);
    if (depth < 0)
        return -1;
    mode_t type = DL(archive_entry_filetype)(e);
    if (DL(archive_entry_hardlink)(e)) {
        err_set(why, 0, 0, "member '%.200s' is a hard link (links are not accepted)", raw);
        return -1;
    }
    if (type == AE_IFLNK) {
        err_set(why, 0, 0, "member '%.200s' is a symbolic link (links are not accepted)", raw);
        return -1;
    }
    if (type != AE_IFREG && type != AE_IFDIR) {
        err_set(why, 0, 0, "member '%.200s' is a %s (only files and folders are accepted)",
               raw, type == AE_IFCHR || type == AE_IFBLK ? "device file"
                    : type == AE_IFIFO ? "fifo" : type == AE_IFSOCK ? "socket"
                    : "special file");
        return -1;
    }
    if (depth == 0) {
        if (type != AE_IFDIR) {
            err_set(why, 0, 0, "member '%.200s' is a file without a name", raw);
            return -1;
        }
        return 0;   /* "./": the folder being extracted into */
    }
    if (pset_add(seen, rel)) {
        err_set(why, 0, 0, "member '%.200s' appears twice in the archive", raw);
        return -1;
    }
    if (type == AE_IFDIR) {
        if (dirfd < 0)
            return 0;
        const char *leaf;
        int pfd = parent_of(dirfd, rel, &leaf);
        if (pfd < 0 || (mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST)) {
            int err = errno;
            if (pfd >= 0)
                close(pfd);
            err_set(why, 0, 0, "member '%.200s': cannot create the folder: %s", raw,
                   err == ENOTDIR ? "a file is in the way" : strerror(err));
            return -1;
        }
        struct stat st;
        int bad = fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode);
        close(pfd);
        if (bad) {
            err_set(why, 0, 0, "member '%.200s': a file is in the way", raw);
            return -1;
        }
        return 0;
    }
    if (!DL(archive_entry_size_is_set)(e)) {
        err_set(why, 0, 0, "member '%.200s' has no size", raw);
        return -1;
    }
    int64_t size = DL(archive_entry_size)(e);
    if (size < 0 || size > lim->max_file || size > lim->max_expanded - *total) {
        err_set(why, 0, 0, "member '%.200s' (%lld bytes) is over the %s limit", raw,
               (long long)size, size > lim->max_file ? "per-file" : "expanded size");
        return -1;
    }
    return extract_file(a, dirfd, rel, (DL(archive_entry_perm)(e) & 0111) != 0, size, total, lim,
                        why);
}

/*
 * The tar stream, decompressed by a reader of its own and handed to the tar
 * reader through this callback, which counts it: libarchive skips the data
 * of a member it is not asked for (a folder's, say) by decompressing it, so
 * only a count of the whole stream bounds the work a small download can
 * ask for, not the sizes of the files written.
 */
struct unz {
    struct archive *in;     /* gzip (or none) + raw: the tar stream */
    int64_t total, cap;
    int over;
    char *block;
};

static la_ssize_t unz_read(struct archive *a, void *ud, const void **out)
{
    struct unz *u = ud;
    la_ssize_t r = DL(archive_read_data)(u->in, u->block, BLOCK);
    if (r < 0) {
        DL(archive_set_error)(a, EIO, "%s",
                          DL(archive_error_string)(u->in) ? DL(archive_error_string)(u->in)
                                                      : "unreadable data");
        return -1;
    }
    u->total += r;
    if (u->total > u->cap) {
        u->over = 1;
        DL(archive_set_error)(a, EIO, "decompresses past the limit");
        return -1;
    }
    *out = u->block;
    return r;
}

int fetch_extract(int dirfd, const void *data, size_t len, const struct fetch_limits *lim,
                  struct err *why)
{
    char dlerr[320];
    if (dynlib_need(DL_ARCHIVE, dlerr, sizeof dlerr) < 0) {
        err_set(why, 0, 0, "%s", dlerr);
        return -1;
    }
    struct archive *a = DL(archive_read_new)(), *in = DL(archive_read_new)();
    struct archive_entry *raw;
    struct pset seen = {0};
    int64_t entries = 0, total = 0;
    /* The files, plus what tar itself needs around them: a header and
     * padding per member (with a long name, a few blocks more) and the end. */
    struct unz u = {.in = in, .cap = lim->max_expanded + lim->max_entries * 4096 + (1 << 20),
                    .block = xmalloc(BLOCK)};
    int rc = -1;
    if (!a || !in || DL(archive_read_support_format_raw)(in) != ARCHIVE_OK ||
        DL(archive_read_support_filter_gzip)(in) != ARCHIVE_OK ||
        DL(archive_read_open_memory)(in, data, len) != ARCHIVE_OK ||
        DL(archive_read_next_header)(in, &raw) != ARCHIVE_OK ||
        DL(archive_read_support_format_tar)(a) != ARCHIVE_OK ||
        DL(archive_read_open)(a, &u, NULL, unz_read, NULL) != ARCHIVE_OK) {
        err_set(why, 0, 0, "not a tar or tar.gz archive: %s",
               u.over ? "decompresses past the limit"
               : in && DL(archive_error_string)(in) ? DL(archive_error_string)(in)
               : a && DL(archive_error_string)(a) ? DL(archive_error_string)(a) : "unreadable");
        goto out;
    }
    for (;;) {
        struct archive_entry *e;
        int r = DL(archive_read_next_header)(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            err_set(why, 0, 0, "malformed archive: %s",
                   DL(archive_error_string)(a) ? DL(archive_error_string)(a) : "unreadable");
            goto out;
        }
        if (++entries > lim->max_entries) {
            err_set(why, 0, 0, "the archive has more than %lld members",
                   (long long)lim->max_entries);
            goto out;
        }
        if (extract_member(a, e, dirfd, &seen, &total, lim, why) < 0)
            goto out;
    }
    if (!entries) {
        err_set(why, 0, 0, "the archive is empty");
        goto out;
    }
    rc = 0;
out:
    if (u.over)
        err_set(why, 0, 0, "the archive decompresses to more than %lld bytes (--max-expanded, "
                            "plus 4 KiB of headers per member --max-files allows, plus 1 MiB)",
               (long long)u.cap);
    if (a)
        DL(archive_read_free)(a);
    if (in)
        DL(archive_read_free)(in);
    free(u.block);
    pset_free(&seen);
    return rc;
}

/* ---- downloads ------------------------------------------------------------ */

struct dl {
    CURL *c;
    const struct fetch_opts *o;
    struct buf b;
    int too_big;
    char refused[320];      /* the first connection the address check refused */
};

static size_t dl_write(char *p, size_t sz, size_t n, void *ud)
{
    struct dl *d = ud;
    long status = 0;
    /* A redirect's own body is not the artifact. */
    DL(curl_easy_getinfo)(d->c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400)
        return sz * n;
    if (buf_append(&d->b, p, sz * n) < 0) {
        d->too_big = 1;
        return 0;
    }
    return sz * n;
}

/*
 * Every connection libcurl makes is opened here, after DNS and for every
 * redirect, so the address checked is the address connected to: a name
 * that resolves to a private address, or a redirect to one, is refused
 * like the address itself.
 */
static curl_socket_t dl_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct dl *d = ud;
    const char *why = purpose == CURLSOCKTYPE_IPCXN
                          ? fetch_dest_refused(&a->addr, d->o->allow, d->o->nallow)
                          : "not a connection fetch makes";
    if (why) {
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        int v6 = a->family == AF_INET6;
        if (a->family == AF_INET) {
            const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->addr;
            inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
            port = ntohs(s4->sin_port);
        } else if (v6) {
            const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->addr;
            inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
            port = ntohs(s6->sin6_port);
        }
        if (!d->refused[0])
            snprintf(d->refused, sizeof d->refused,
                     "refused to connect to %s port %u, %s: only public addresses are "
                     "fetched from (--allow-address %s%s%s:%u allows this one, for a "
                     "local test index)",
                     host, port, why, v6 ? "[" : "", host, v6 ? "]" : "", port);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* shown: url with any credentials taken out (malloc'd). */
static char *url_shown(CURLU *u, const char *url)
{
    char *full = NULL, *res;
    DL(curl_url_set)(u, CURLUPART_USER, NULL, 0);
    DL(curl_url_set)(u, CURLUPART_PASSWORD, NULL, 0);
    res = DL(curl_url_get)(u, CURLUPART_URL, &full, 0) == CURLUE_OK ? xstrdup(full) : xstrdup(url);
    DL(curl_free)(full);
    return res;
}

/*
 * May url be requested at all: a scheme fetch follows (https; http only
 * with --allow-http and never once the index came over https) and no
 * credentials. The destination's address is checked when connecting.
 * 0, or -1 with *why set; shown (the URL the message names) is set either way.
 */
/* scheme://host:port of url, lower-cased by libcurl; -1 when it does not parse. */
static int url_origin(const char *url, char *out, size_t outlen)
{
    CURLU *u = DL(curl_url)();
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = -1;
    if (u && DL(curl_url_set)(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        snprintf(out, outlen, "%s://%s:%s", scheme, host, port);
        rc = 0;
    }
    DL(curl_free)(scheme);
    DL(curl_free)(host);
    DL(curl_free)(port);
    DL(curl_url_cleanup)(u);
    return rc;
}

static int url_ok(const char *url, const struct fetch_opts *o, int https_only, char **shown,
                  struct err *why)
{
    CURLU *u = DL(curl_url)();
    char *scheme = NULL, *user = NULL, *pass = NULL;
    int rc = -1;
    *shown = NULL;
    if (!u || DL(curl_url_set)(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        DL(curl_url_get)(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        err_set(why, 0, 0, "'%.300s' is not a URL", url);
        goto out;
    }
    DL(curl_url_get)(u, CURLUPART_USER, &user, 0);
    DL(curl_url_get)(u, CURLUPART_PASSWORD, &pass, 0);
    *shown = url_shown(u, url);
    int https = !strcasecmp(scheme, "https"), http = !strcasecmp(scheme, "http");
    if (user || pass)
        err_set(why, 0, 0, "%s: a URL with credentials (user:password@) is refused; "
                            "an index and its artifacts are public", *shown);
    else if (!https && !(http && o->allow_http && !https_only))
        err_set(why, 0, 0, "%s: only %s URLs are followed%s", *shown,
               https_only || !o->allow_http ? "https" : "http and https",
               https_only ? " (the index came over https)"
               : !o->allow_http && http ? " (plain http needs --allow-http)" : "");
    else
        rc = 0;
out:
    DL(curl_free)(scheme);
    DL(curl_free)(user);
    DL(curl_free)(pass);
    DL(curl_url_cleanup)(u);
    if (!*shown)
        *shown = xstrdup(url);
    return rc;
}

/*
 * GETs url into out (at most max bytes), following at most MAX_REDIRS
 * redirects itself so that every URL on the way passes url_ok, all within
 * --timeout. *ctype (may be NULL) and *eff (the URL after redirects) are
 * malloc'd copies. Returns 0 or -1 with *why set.
 */
static int download(const char *url, const struct fetch_opts *o, int https_only, int64_t max,
                    struct buf *out, char **ctype, char **eff, struct err *why)
{
    struct dl d = {.o = o};
    char errbuf[CURL_ERROR_SIZE] = "";
    const char *protos = https_only || !o->allow_http ? "https" : "http,https";
    *ctype = *eff = NULL;
    CURL *c = DL(curl_easy_init)();
    if (!c) {
        err_set(why, 0, 0, "libcurl cannot start");
        return -1;
    }
    d.c = c;
    buf_init(&d.b, (size_t)max);
    DL(curl_easy_setopt)(c, CURLOPT_PROTOCOLS_STR, protos);
    DL(curl_easy_setopt)(c, CURLOPT_FOLLOWLOCATION, 0L);
    DL(curl_easy_setopt)(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
    /* A proxy would make the connection the check sees the proxy's, not
     * the destination's: none is used, whatever the environment says. */
    DL(curl_easy_setopt)(c, CURLOPT_PROXY, "");
    DL(curl_easy_setopt)(c, CURLOPT_OPENSOCKETFUNCTION, dl_open);
    DL(curl_easy_setopt)(c, CURLOPT_OPENSOCKETDATA, &d);
    DL(curl_easy_setopt)(c, CURLOPT_NOSIGNAL, 1L);
    /* The digest covers the bytes as served: never decode them. */
    DL(curl_easy_setopt)(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    DL(curl_easy_setopt)(c, CURLOPT_USERAGENT, "skill-mcp/" SKILL_VERSION);
    DL(curl_easy_setopt)(c, CURLOPT_WRITEFUNCTION, dl_write);
    DL(curl_easy_setopt)(c, CURLOPT_WRITEDATA, &d);
    DL(curl_easy_setopt)(c, CURLOPT_ERRORBUFFER, errbuf);
    if (o->cacert)
        DL(curl_easy_setopt)(c, CURLOPT_CAINFO, o->cacert);
    /* A token for an index served under --auth-tokens comes from the
     * environment, never a flag (every local user can read a command line).
     * It goes to the index URL's origin only, not to the first URL of each
     * download: an artifact elsewhere (an absolute entry URL, or a relative
     * one under an index that was redirected) is another party's. Redirects
     * are followed here, so each hop decides again. */
    const char *tok = getenv("SKILL_MCP_FETCH_TOKEN");
    const char *origin = tok && *tok ? o->tok_origin : "";
    char hop_origin[512];
    double deadline = now_ms() + o->timeout * 1000;
    char *cur = xstrdup(url), *shown = NULL, *ct = NULL;
    int rc = -1;
    for (int hops = 0;; hops++) {
        free(shown);
        if (url_ok(cur, o, https_only, &shown, why) < 0)
            break;
        int send_tok = origin[0] && url_origin(cur, hop_origin, sizeof hop_origin) == 0 &&
                       !strcmp(origin, hop_origin);
        DL(curl_easy_setopt)(c, CURLOPT_HTTPAUTH, send_tok ? (long)CURLAUTH_BEARER : (long)CURLAUTH_NONE);
        DL(curl_easy_setopt)(c, CURLOPT_XOAUTH2_BEARER, send_tok ? tok : NULL);
        double left = deadline - now_ms();
        long ms = left < 1 ? 1 : (long)left;
        DL(curl_easy_setopt)(c, CURLOPT_URL, cur);
        DL(curl_easy_setopt)(c, CURLOPT_TIMEOUT_MS, ms);
        DL(curl_easy_setopt)(c, CURLOPT_CONNECTTIMEOUT_MS,
                         ms < (long)(CONNECT_TIMEOUT * 1000) ? ms : (long)(CONNECT_TIMEOUT * 1000));
        buf_reset(&d.b);
        d.too_big = 0;
        errbuf[0] = '\0';
        CURLcode r = DL(curl_easy_perform)(c);
        long status = 0;
        char *loc = NULL;
        DL(curl_easy_getinfo)(c, CURLINFO_RESPONSE_CODE, &status);
        DL(curl_easy_getinfo)(c, CURLINFO_CONTENT_TYPE, &ct);
        DL(curl_easy_getinfo)(c, CURLINFO_REDIRECT_URL, &loc);
        if (r == CURLE_OK && status >= 300 && status < 400 && loc) {
            if (hops == MAX_REDIRS) {
                err_set(why, 0, 0, "%s: more than %d redirects", url, MAX_REDIRS);
                break;
            }
            free(cur);
            cur = xstrdup(loc);
            continue;
        }
        if (d.too_big || r == CURLE_FILESIZE_EXCEEDED)
            err_set(why, 0, 0, "%s: larger than %lld bytes (--max-bytes)", shown, (long long)max);
        else if (r == CURLE_OPERATION_TIMEDOUT)
            err_set(why, 0, 0, "%s: timed out after %gs (--timeout)", url, o->timeout);
        else if (r != CURLE_OK && d.refused[0])
            err_set(why, 0, 0, "%s: %s", shown, d.refused);
        else if (r == CURLE_UNSUPPORTED_PROTOCOL)
            err_set(why, 0, 0, "%s: only %s URLs are followed", shown, protos);
        else if (r != CURLE_OK)
            err_set(why, 0, 0, "%s: %s", shown, errbuf[0] ? errbuf : DL(curl_easy_strerror)(r));
        else if (status == 401)
            err_set(why, 0, 0, "%s: HTTP status 401: the server wants a token (%s)", shown,
                   send_tok ? "SKILL_MCP_FETCH_TOKEN was refused"
                            : "set SKILL_MCP_FETCH_TOKEN to a bearer token of its --auth-tokens "
                              "file");
        else if (status != 200)
            err_set(why, 0, 0, "%s: HTTP status %ld", shown, status);
        else
            rc = 0;
        break;
    }
    if (rc == 0) {
        *ctype = ct ? xstrdup(ct) : NULL;
        *eff = cur;
        cur = NULL;
        *out = d.b;
    } else {
        buf_cleanup(&d.b);
    }
    free(cur);
    free(shown);
    DL(curl_easy_cleanup)(c);
    return rc;
}

/* The index URL: base itself when its path ends in ".json", else
 * base/.well-known/agent-skills/index.json (base's path kept, so an export
 * published under a path works too). NULL with *why set. */
static char *index_url(const char *base, struct err *why)
{
    CURLU *u = DL(curl_url)();
    char *path = NULL, *full = NULL, *res = NULL;
    if (!u || DL(curl_url_set)(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
        DL(curl_url_get)(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        err_set(why, 0, 0, "'%.300s' is not a URL (give https://host or http://host:port)",
               base);
        goto out;
    }
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".json")) {
        DL(curl_url_get)(u, CURLUPART_URL, &full, 0);
    } else {
        if (!n || path[n - 1] != '/') {
            /* a trailing slash makes the last segment a folder for §5.2 */
            struct buf b;
            buf_init(&b, 0);
            buf_printf(&b, "%s/", path);
            DL(curl_url_set)(u, CURLUPART_PATH, b.p, 0);
            buf_cleanup(&b);
        }
        if (DL(curl_url_set)(u, CURLUPART_URL, ".well-known/agent-skills/index.json", 0) ==
                CURLUE_OK)
            DL(curl_url_get)(u, CURLUPART_URL, &full, 0);
    }
    if (!full)
        err_set(why, 0, 0, "cannot build the index URL from '%.300s'", base);
    else
        res = xstrdup(full);
out:
    DL(curl_free)(path);
    DL(curl_free)(full);
    DL(curl_url_cleanup)(u);
    return res;
}

/* ref resolved against base (RFC 3986 §5.2, by libcurl); *scheme and *path
 * of the result are set too. NULL with *why set. */
static char *resolve_url(const char *base, const char *ref, char **scheme, char **path,
                         struct err *why)
{
    CURLU *u = DL(curl_url)();
    char *full = NULL, *s = NULL, *p = NULL, *res = NULL;
    *scheme = *path = NULL;
    if (u && DL(curl_url_set)(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
        DL(curl_url_set)(u, CURLUPART_URL, ref, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_URL, &full, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_SCHEME, &s, 0) == CURLUE_OK &&
        DL(curl_url_get)(u, CURLUPART_PATH, &p, 0) == CURLUE_OK) {
        res = xstrdup(full);
        *scheme = xstrdup(s);
        *path = xstrdup(p);
    } else {
        err_set(why, 0, 0, "url '%.300s' does not resolve against the index URL", ref);
    }
    DL(curl_free)(full);
    DL(curl_free)(s);
    DL(curl_free)(p);
    DL(curl_url_cleanup)(u);
    return res;
}

/* ---- installing one entry -------------------------------------------------- */

/* "/" between dir and a name, unless dir already ends in one. */
static const char *sep(const char *dir)
{
    size_t n = strlen(dir);
    return n && dir[n - 1] == '/' ? "" : "/";
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    return remove(p) < 0 ? -1 : 0;
}

static void rm_tree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Is the archive format one this reads: by Content-Type, else by the URL
 * path's extension (PROTOCOL: the Content-Type decides when it is given). */
static int archive_kind_ok(const char *ctype, const char *path)
{
    if (ctype) {
        size_t n = strcspn(ctype, "; \t");
        static const char *const known[] = {"application/gzip", "application/x-gzip",
                                            "application/x-tar", "application/x-gtar",
                                            "application/x-compressed-tar"};
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            if (strlen(known[i]) == n && !strncasecmp(ctype, known[i], n))
                return 1;
        if (!(n == 24 && !strncasecmp(ctype, "application/octet-stream", n)))
            return 0;
    }
    size_t n = strlen(path);
    return (n > 7 && !strcmp(path + n - 7, ".tar.gz")) ||
           (n > 4 && (!strcmp(path + n - 4, ".tgz") || !strcmp(path + n - 4, ".tar")));
}

struct result {
    const char *status;     /* "installed", "skipped", "refused" */
    struct err reason;
    int mismatch;           /* the index description differs from SKILL.md's */
    char skill_desc[256];
};

/* Which folder of the staging area is the skill: "" (SKILL.md at the
 * root) or name (one top folder named after the skill). NULL: neither. */
static const char *skill_folder(int stagefd, const char *name)
{
    struct stat st;
    if (fstatat(stagefd, "SKILL.md", &st, AT_SYMLINK_NOFOLLOW) == 0)
        return S_ISREG(st.st_mode) ? "" : NULL;
    int fd = dup(stagefd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    int others = 0, top = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (!strcmp(de->d_name, name))
            top = 1;
        else
            others++;
    }
    closedir(d);
    if (!top || others)
        return NULL;
    char md[NAME_MAX + 16];
    snprintf(md, sizeof md, "%s/SKILL.md", name);
    if (fstatat(stagefd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
        fstatat(stagefd, md, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return NULL;
    return name;
}

/* Reads and checks dirfd/rel's SKILL.md against entry f. */
static int check_skill_md(int stagefd, const char *folder, const struct fetch_entry *f,
                          struct result *res)
{
    char rel[NAME_MAX + 16];
    snprintf(rel, sizeof rel, "%s%sSKILL.md", folder, *folder ? "/" : "");
    int fd = openat(stagefd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SKILL_MD_MAX) {
        err_set(&res->reason, 0, 0, "SKILL.md is missing or over %lld bytes",
                 (long long)SKILL_MD_MAX);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char *data = xmalloc((size_t)st.st_size + 1);
    size_t got = x_pread_full(fd, data, (size_t)st.st_size);
    close(fd);
    struct fm fm;
    struct err e = {0};
    int rc = -1;
    if (fm_parse(data, got, 1, &fm, &e) < 0) {
        err_set(&res->reason, 0, 0, "SKILL.md frontmatter: %s (line %d)", e.msg,
                 e.line);
        free(data);
        return -1;
    }
    json_t *n = json_object_get(fm.fields, "name"), *d = json_object_get(fm.fields, "description");
    if (!json_is_string(n) || strcmp(json_string_value(n), f->name)) {
        err_set(&res->reason, 0, 0,
               "SKILL.md names the skill '%.100s', the index entry '%s'",
               json_is_string(n) ? json_string_value(n) : "(no name)", f->name);
    } else if (!json_is_string(d) || !json_string_length(d)) {
        err_set(&res->reason, 0, 0, "SKILL.md has no description");
    } else {
        rc = 0;
        if (strcmp(json_string_value(d), f->description)) {
            res->mismatch = 1;
            snprintf(res->skill_desc, sizeof res->skill_desc, "%s", json_string_value(d));
            utf8_sanitize(res->skill_desc);
        }
    }
    fm_cleanup(&fm);
    free(data);
    return rc;
}

/*
 * Downloads, verifies, stages and installs entry f. The staging folder is
 * removed on every failure; DIR/<name> is created only by the final rename.
 */
static void install_one(const struct fetch_opts *o, int intofd, const char *index_eff, int https_only,
                        const struct fetch_entry *f, struct result *res)
{
    char *url = NULL, *scheme = NULL, *path = NULL, *ctype = NULL, *eff = NULL;
    char stage[PATH_MAX] = "", got[7 + 64 + 1];
    struct buf body;
    int stagefd = -1, staged = 0;
    struct stat st;
    buf_init(&body, 0);
    res->status = "refused";
    const char *np = skills_name_problem(f->name);
    if (np) {
        err_set(&res->reason, 0, 0, "the name %s (Agent Skills naming rules)", np);
        goto out;
    }
    if (fstatat(intofd, f->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        err_set(&res->reason, 0, 0,
               "%s%s%s already exists; fetch never replaces an installation", o->into,
               sep(o->into), f->name);
        goto out;
    }
    if (!(url = resolve_url(index_eff, f->url, &scheme, &path, &res->reason)))
        goto out;
    if (https_only && strcmp(scheme, "https")) {
        err_set(&res->reason, 0, 0,
               "%s: not https, and the index came over https", url);
        goto out;
    }
    if (download(url, o, https_only, o->max_bytes, &body, &ctype, &eff, &res->reason) < 0)
        goto out;
    /* The bytes are trusted only once they are the bytes the index names. */
    manifest_sha256(body.p ? body.p : "", body.len, got);
    if (strcmp(got, f->digest)) {
        err_set(&res->reason, 0, 0, "digest mismatch: the index says %s, %s has %s",
               f->digest, url, got);
        goto out;
    }
    int archive = !strcmp(f->type, "archive");
    if (archive && !archive_kind_ok(ctype, path)) {
        err_set(&res->reason, 0, 0,
               "%s: not a tar or tar.gz archive (Content-Type %.100s)", url,
               ctype ? ctype : "none");
        goto out;
    }
    if ((size_t)snprintf(stage, sizeof stage, "%s%s.skill-fetch-XXXXXX", o->into,
                         sep(o->into)) >= sizeof stage ||
        !mkdtemp(stage)) {
        err_set(&res->reason, 0, 0, "cannot create a staging folder in %s: %s",
               o->into, strerror(errno));
        stage[0] = '\0';
        goto out;
    }
    staged = 1;
    stagefd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (stagefd < 0) {
        err_set(&res->reason, 0, 0, "cannot open %s: %s", stage, strerror(errno));
        goto out;
    }
    if (archive) {
        if (fetch_extract(stagefd, body.p ? body.p : "", body.len, &o->lim, &res->reason) < 0)
            goto out;
    } else {
        int fd = openat(stagefd, "SKILL.md", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0644);
        int bad = fd < 0 || x_write_all(fd, body.p ? body.p : "", body.len) < 0;
        if ((fd >= 0 && close(fd) < 0) || bad) {
            err_set(&res->reason, 0, 0, "cannot write SKILL.md: %s", strerror(errno));
            goto out;
        }
    }
    const char *folder = skill_folder(stagefd, f->name);
    if (!folder) {
        err_set(&res->reason, 0, 0,
               "no SKILL.md at the archive root or in one top folder named '%s'", f->name);
        goto out;
    }
    if (check_skill_md(stagefd, folder, f, res) < 0)
        goto out;
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s%s%s", stage, *folder ? "/" : "", folder);
    mode_t um = umask(022);
    umask(um);
    /* mkdtemp made the staging folder 0700; an installed skill is 0755. */
    if (chmod(src, 0755 & ~um) < 0 ||
        renameat2(AT_FDCWD, src, intofd, f->name, RENAME_NOREPLACE) < 0) {
        err_set(&res->reason, 0, 0, "cannot install %s%s%s: %s", o->into,
               sep(o->into), f->name,
               errno == EEXIST ? "it appeared meanwhile; fetch never replaces an installation"
                               : strerror(errno));
        goto out;
    }
    if (!*folder)
        staged = 0;     /* the staging folder itself was the skill */
    res->status = "installed";
    err_set(&res->reason, 0, 0, "%s%s%s (%s, %s)", o->into, sep(o->into), f->name,
           f->type, f->digest);
out:
    if (stagefd >= 0)
        close(stagefd);
    if (staged)
        rm_tree(stage);
    buf_cleanup(&body);
    free(url);
    free(scheme);
    free(path);
    free(ctype);
    free(eff);
}

/* ---- installing an index ------------------------------------------------------ */

static void report(const struct fetch_opts *o, json_t *arr, FILE *out, const char *label,
                   const struct fetch_entry *f, const struct result *r)
{
    if (o->json) {
        json_t *j = json_pack("{s:s, s:s}", "name", label, "status", r->status);
        if (r->status[0] == 'i') {
            struct buf p;
            buf_init(&p, 0);
            buf_printf(&p, "%s%s%s", o->into, sep(o->into), label);
            json_object_set_new(j, "path", json_stringn(p.p, p.len));
            buf_cleanup(&p);
        } else {
            json_object_set_new(j, "reason", json_string(r->reason.msg));
        }
        if (f && f->type)
            json_object_set_new(j, "type", json_string(f->type));
        if (f && f->digest)
            json_object_set_new(j, "digest", json_string(f->digest));
        if (f && f->description)
            json_object_set_new(j, "description_mismatch", json_boolean(r->mismatch));
        if (r->mismatch)
            json_object_set_new(j, "skill_description", json_string(r->skill_desc));
        json_array_append_new(arr, j);
        return;
    }
    x_fprintf_text(out, "%-9s %s: %s\n", r->status, label, r->reason.msg);
    if (r->mismatch)
        x_fprintf_text(out, "warning   %s: the index description differs from SKILL.md's "
                            "(\"%.80s\"); review what the skill says it does\n", label, r->skill_desc);
}

void fetch_opts_init(struct fetch_opts *o)
{
    memset(o, 0, sizeof *o);
    o->into = ".";
    o->max_bytes = DEFAULT_MAX_BYTES;
    o->timeout = DEFAULT_TIMEOUT;
    o->lim = (struct fetch_limits){DEFAULT_MAX_ENTRIES, DEFAULT_MAX_EXPANDED, MAX_FILE};
}

int fetch_install(struct fetch_opts *op, FILE *out, FILE *err)
{
    struct fetch_opts o = *op;
    char dlerr[320];
    if (dynlib_need(DL_CURL, dlerr, sizeof dlerr) < 0 ||
        dynlib_need(DL_ARCHIVE, dlerr, sizeof dlerr) < 0) {
        x_fprintf_text(err, "skill-mcp fetch: %s\n", dlerr);
        return 2;
    }
    /* A missing --into folder (its parent existing) is created, and removed
     * again if nothing ends up installed in it. */
    int created = 0;
    int intofd = open(o.into, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (intofd < 0 && errno == ENOENT && mkdir(o.into, 0755) == 0) {
        created = 1;
        intofd = open(o.into, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (intofd < 0) {
        x_fprintf_text(err, "skill-mcp fetch: --into %s: %s\n", o.into, strerror(errno));
        return 2;
    }
    DL(curl_global_init)(CURL_GLOBAL_DEFAULT);
    struct err why = {0};
    char *iurl = NULL, *ctype = NULL, *eff = NULL;
    struct buf body;
    struct fetch_entry *v = NULL;
    size_t n = 0, installed = 0, skipped = 0, refused = 0;
    int https_only = 0, index_ok = 0;
    json_t *arr = json_array();
    buf_init(&body, 0);
    if ((iurl = index_url(o.url, &why))) {
        if (url_origin(iurl, o.tok_origin, sizeof o.tok_origin) < 0)
            o.tok_origin[0] = '\0';
        https_only = !strncasecmp(iurl, "https:", 6);
        int64_t cap = o.max_bytes < INDEX_MAX ? o.max_bytes : INDEX_MAX;
        if (download(iurl, &o, https_only, cap, &body, &ctype, &eff, &why) == 0 &&
            fetch_index_parse(body.p ? body.p : "", body.len, &v, &n, &why) == 0)
            index_ok = 1;
    }
    unsigned char *found = xcalloc(o.nnames + 1, 1);
    for (size_t i = 0; index_ok && i < n; i++) {
        const struct fetch_entry *f = &v[i];
        char label[128];
        struct result r = {.status = "refused"};
        snprintf(label, sizeof label, "%s", f->name ? f->name : "");
        if (!f->name)
            snprintf(label, sizeof label, "entry #%zu", i + 1);
        utf8_sanitize(label);
        if (o.nnames) {
            int picked = 0;
            for (size_t k = 0; k < o.nnames; k++)
                if (f->name && !strcmp(o.names[k], f->name))
                    picked = found[k] = 1;
            if (!picked)
                continue;
        }
        if (f->problem) {
            err_set(&r.reason, 0, 0, "%s", f->problem);
        } else if (strcmp(f->type, "skill-md") && strcmp(f->type, "archive")) {
            r.status = "skipped";
            err_set(&r.reason, 0, 0, "unknown type '%.100s' (not skill-md or archive)",
                   f->type);
        } else {
            install_one(&o, intofd, eff, https_only, f, &r);
        }
        if (r.status[0] == 'i')
            installed++;
        else if (r.status[0] == 's')
            skipped++;
        else
            refused++;
        report(&o, arr, out, label, f, &r);
    }
    for (size_t k = 0; index_ok && k < o.nnames; k++) {
        if (found[k])
            continue;
        struct result r = {.status = "refused"};
        err_set(&r.reason, 0, 0, "not in the index");
        refused++;
        report(&o, arr, out, o.names[k], NULL, &r);
    }
    if (!index_ok)
        refused++;
    if (o.json) {
        json_t *j = json_pack("{s:s?, s:s, s:o, s:I, s:I, s:I}", "index", iurl ? iurl : o.url,
                              "into", o.into, "skills", arr, "installed", (json_int_t)installed,
                              "skipped", (json_int_t)skipped, "refused", (json_int_t)refused);
        if (!index_ok)
            json_object_set_new(j, "error", json_string(why.msg));
        char *s = json_dumps(j, JSON_INDENT(2));
        fprintf(out, "%s\n", s);
        free(s);
        json_decref(j);
    } else {
        json_decref(arr);
        if (!index_ok)
            x_fprintf_text(err, "skill-mcp fetch: %s\n", why.msg);
        else
            fprintf(out, "%zu installed, %zu skipped, %zu refused\n", installed, skipped,
                    refused);
    }
    free(found);
    fetch_index_free(v, n);
    buf_cleanup(&body);
    free(iurl);
    free(ctype);
    free(eff);
    close(intofd);
    if (created && !installed)
        rmdir(o.into);
    DL(curl_global_cleanup)();
    return refused ? 1 : 0;
}
