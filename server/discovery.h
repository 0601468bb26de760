/*
 * discovery.h - the Agent Skills discovery index (v0.2.0) and its
 * artifacts, served under /.well-known/agent-skills/ and written as static
 * files by `skill-mcp export DIR`.
 *
 *   index.json                 {"$schema": ".../discovery/0.2.0/schema.json",
 *                               "skills": [{name, description, type, url, digest}]}
 *   <qualified-name>/SKILL.md  a skill that is only a SKILL.md ("skill-md")
 *   <qualified-name>.tar.gz    any other skill ("archive"), reproducible:
 *                              sorted entries, mtime 0, uid/gid 0, no owner
 *                              names, modes 0644/0755, no gzip timestamp
 *
 * The index lists the skills skills/list lists (frontmatter name equal to
 * the folder name and valid by the Agent Skills rules). Every file is read
 * through jail.c beneath its skill folder, so a link cannot bring an
 * outside file into an artifact. `digest` is the SHA-256 of the exact bytes
 * served. Built archives are cached in this module (one slot per skill,
 * behind one mutex) and revalidated with one open + fstat per file, so an
 * edited file never ships a stale archive. See docs/skills-extension.md.
 *
 * Ownership: this module owns its archive cache; the caller owns the
 * snapshot (held for the duration of the call) and every *body returned.
 * The HTTP route and the `export` command line are wired by http.c/main.c.
 */
#ifndef SKILL_DISCOVERY_H
#define SKILL_DISCOVERY_H

#include <stddef.h>

struct snapshot;

/* Where the index and its artifacts live, on a server and in an export. */
#define DISCOVERY_PREFIX "/.well-known/agent-skills/"

/*
 * GET handler for paths under /.well-known/agent-skills/ (path is the URL
 * path, percent-decoded or not). Returns 0 and fills *body (malloc'd bytes,
 * caller frees), *len and *ctype (static string), or -ENOENT for an unknown
 * path (404). Other negative errnos are server-side failures (500): -EIO (a
 * skill folder cannot be read), -EFBIG (a skill over the archive size cap;
 * it is also left out of the index). Serve the bytes as they are: no
 * Content-Encoding, or the digests no longer match. Any thread; reads only
 * the snapshot s (which the caller holds) and the skill files.
 */
int discovery_get(const struct snapshot *s, const char *path, char **body, size_t *len,
                  const char **ctype);
/* The same as the caller of view v sees it (--acl; NULL: every skill): a
 * skill it may not see is neither in the index nor served. */
struct view;
int discovery_get_view(const struct snapshot *s, const struct view *v, const char *path,
                       char **body, size_t *len, const char **ctype);

/*
 * `skill-mcp export DIR`: writes DIR/.well-known/agent-skills/index.json and
 * every artifact it names, byte-identical to what discovery_get serves for
 * the same files (folders created as needed; files replaced atomically; the
 * index is written last). Files of skills no longer in the library are not
 * removed. Returns 0, or -1 with a message on stderr.
 */
int discovery_export(const struct snapshot *s, const char *dir);

/* Empties the archive cache (tests; frees its memory at exit). */
void discovery_cache_clear(void);
/* Archives in the cache now (for tests). */
size_t discovery_cache_count(void);

#endif
