/*
 * fetch.h - `skill-mcp fetch URL [--into DIR]`: install skills from an Agent
 * Skills discovery index (v0.2.0), verified before anything is parsed.
 *
 *   1. GET URL/.well-known/agent-skills/index.json (URL itself when it ends
 *      in .json); an index whose "$schema" is not the v0.2.0 one is refused.
 *   2. Per entry: its url is resolved against the index URL (RFC 3986, by
 *      libcurl's URL API), the artifact downloaded (http/https only; https
 *      only when the index came over https; redirects capped; size and time
 *      capped), and its sha256 compared with the entry's digest over the
 *      exact bytes received, before anything reads them.
 *   3. The artifact is written into a new 0700 staging folder inside DIR
 *      (same filesystem): a SKILL.md as is, a tar or tar.gz archive entry
 *      by entry through fetch_extract (the skill at the archive root or
 *      under one top folder named after it).
 *   4. SKILL.md must be at the skill root, its frontmatter parse, and its
 *      name equal the entry name. A description different from the index's
 *      is flagged, never acted on.
 *   5. The skill folder is renamed to DIR/<name> with RENAME_NOREPLACE: an
 *      existing installation is never replaced. Any failure removes the
 *      staging folder: DIR is left as it was.
 *
 * Fetch approves nothing: a fetched skill is not in a lock file.
 * See docs/supply-chain.md ("Installing from a discovery index").
 */
#ifndef SKILL_FETCH_H
#define SKILL_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

struct err;

#define FETCH_SCHEMA "https://schemas.agentskills.io/discovery/0.2.0/schema.json"

/* One entry of an index. Strings are NULL when the field is missing or not
 * a string without NUL bytes; problem then says why the entry is unusable. */
struct fetch_entry {
    char *name, *description, *type, *url, *digest;
    const char *problem;    /* static, or NULL */
};

/*
 * Parses an index document. Returns 0 and fills *out (n entries; free with
 * fetch_index_free), or -1 with *why set: not JSON, not an object, no or
 * an unknown "$schema", no "skills" array. A bad entry does not fail the
 * index: it carries a problem.
 */
int fetch_index_parse(const char *data, size_t len, struct fetch_entry **out, size_t *n,
                      struct err *why);
void fetch_index_free(struct fetch_entry *v, size_t n);

/*
 * Why a download may not connect to sa by default: a loopback, private
 * (RFC 1918), shared, link-local, unique local, multicast, reserved,
 * documentation or unspecified address, IPv4 or IPv6, an IPv6 form that
 * carries one of those IPv4 addresses (IPv4-mapped, NAT64, 6to4), or not an
 * IP address at all. NULL: a public address.
 */
const char *fetch_addr_refused(const struct sockaddr *sa);

/* One --allow-address: an address (IPv4-mapped IPv6 stored as IPv4) and a
 * port, 0 for any. */
struct fetch_allow {
    int family;             /* AF_INET or AF_INET6 */
    unsigned char addr[16]; /* 4 or 16 bytes, network order */
    unsigned port;
};

/*
 * Parses ADDR, ADDR:PORT, [V6] or [V6]:PORT. ADDR is read as the resolver
 * reads a numeric host, so every IPv4 spelling inet_aton takes (2130706433,
 * 0x7f.1, 017700000001) is the address it names; a host name is refused.
 * 0, or -1.
 */
int fetch_allow_parse(const char *s, struct fetch_allow *out);

/* fetch_addr_refused(sa), unless (address, port) is one of allow[0..n). */
const char *fetch_dest_refused(const struct sockaddr *sa, const struct fetch_allow *allow,
                               size_t n);

struct fetch_limits {
    int64_t max_entries;    /* archive members, folders included */
    int64_t max_expanded;   /* sum of the members' sizes */
    int64_t max_file;       /* one member's size */
};

/*
 * Extracts a tar archive (gzip-compressed or not) held in memory beneath
 * the folder dirfd, which must be empty and private to the caller. Refused,
 * with *why set: absolute paths, '..' components, symbolic and hard links
 * (whatever their target), devices, fifos and sockets, the same path twice,
 * a path through a file, more members or bytes than lim allows, a tar
 * stream that decompresses past max_expanded + 4 KiB per member allowed +
 * 1 MiB (counted as it is decompressed, skipped data included), a
 * malformed archive. Files get mode 0755 when the archive gave any execute
 * bit, else 0644; folders 0755 (both less the umask); owners, times and
 * setuid/setgid bits are not restored. dirfd < 0 checks without writing
 * (the fuzz target). Returns 0 or -1; on -1 whatever was written stays in
 * dirfd for the caller to remove.
 */
int fetch_extract(int dirfd, const void *data, size_t len, const struct fetch_limits *lim,
                  struct err *why);

/* What to fetch and how (the flags of `skill-mcp fetch`, cli_fetch.c). */
struct fetch_opts {
    const char *url, *into;
    const char *cacert;     /* CA bundle trusted instead of the system's, or NULL */
    const char **names;     /* --name: only these entries (none: all) */
    size_t nnames;
    int json;
    int allow_http;         /* plain http may be fetched (a local test index) */
    struct fetch_allow *allow;  /* --allow-address: otherwise refused destinations */
    size_t nallow;
    int64_t max_bytes;
    double timeout;
    struct fetch_limits lim;
    /* scheme://host:port of the index URL as given: the one origin that
     * gets SKILL_MCP_FETCH_TOKEN, for the index and for every artifact
     * (fetch_install sets it in its own copy) */
    char tok_origin[512];
};

/* The defaults: into ".", the byte, time and archive limits. */
void fetch_opts_init(struct fetch_opts *o);

/*
 * Installs the selected skills of o->url's index into o->into, reporting
 * each on out (lines, or one JSON document with o->json) and failures on
 * err. Exit status: 0 every selected skill installed (or skipped: unknown
 * type), 1 something was refused (the index included), 2 an unusable
 * --into folder.
 */
int fetch_install(struct fetch_opts *o, FILE *out, FILE *err);

#endif
