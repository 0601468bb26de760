/*
 * skillsext.c - the MCP Skills extension (SEP-2640, "io.modelcontextprotocol/
 * skills" with directoryRead) and every skill as an MCP prompt.
 *
 *   skills/list               paginated Skill entries {uri, frontmatter, resources}
 *   skills/get                one entry, by its SKILL.md URI
 *   resources/directory/read  direct children of a folder of a skill
 *   prompts/list, prompts/get every skill as a prompt with an optional "task"
 *
 * Entries and folders come from the request's snapshot; file digests and
 * sizes from manifest.c (cached, revalidated with a stat per file), so they
 * describe exactly the bytes resources/read serves. A skill whose folder
 * name is not its frontmatter name, or whose name breaks the Agent Skills
 * naming rules, cannot have a conforming URI: it is left out of skills/list
 * (reported in the result's _meta and in the log) but skills/get, the
 * resources and the tools still serve it. See docs/skills-extension.md.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "call.h"
#include "envelope.h"
#include "jail.h"
#include "json.h"
#include "lock.h"
#include "manifest.h"
#include "proto.h"
#include "rcache.h"
#include "resources.h"
#include "skills.h"
#include "skillsext.h"
#include "util.h"

#define SKILLS_PAGE 50
#define DIR_PAGE 100
#define PROMPTS_PAGE 100
#define EXT_MAX_FILES 512
#define EXT_MAX_BYTES (16ll << 20)
#define RESOURCE_MAX_BYTES (16ll << 20)   /* what resources/read serves */
#define META_WARNINGS "io.modelcontextprotocol.skills/warnings"
#define META_OMITTED "io.modelcontextprotocol.skills/omitted"

/* Generation of the last snapshot whose omissions were logged. */
static atomic_uint_fast64_t logged_gen;

/* Why k cannot appear in skills/list, or NULL. */
static const char *unlisted_reason(const struct skill *k, char *tmp, size_t cap)
{
    const char *n = k->fm_name, *p;
    if (!n) {
        snprintf(tmp, cap, "frontmatter has no 'name'; the extension's URI rule needs it to "
                           "equal the folder name '%s'", k->name);
        return tmp;
    }
    if (strcmp(n, k->name)) {
        snprintf(tmp, cap, "frontmatter name '%.100s' differs from the folder name '%s'; the "
                           "extension's URI rule needs them equal",
                 n, k->name);
        return tmp;
    }
    if ((p = skills_name_problem(k->name))) {
        snprintf(tmp, cap, "skill name '%s' %s (Agent Skills naming rules)", k->name, p);
        return tmp;
    }
    return NULL;
}

/* The skill's own discovery warning about a cut file list, if any. */
static int list_was_cut(const struct skill *k)
{
    size_t i;
    json_t *w;
    json_array_foreach(k->warnings, i, w) {
        const char *m = json_string_value(json_object_get(w, "message"));
        if (m && strstr(m, "the file list is cut"))
            return 1;
    }
    return 0;
}

/* resultType, ttlMs and cacheScope on both eras (Inspector checks them):
 * the protocol layer adds them as it renders the call for its era. */
static void cacheable(struct call *c, json_t *result)
{
    call_cacheable(c, CALL_CACHE_BOTH);
    call_result(c, result);
}

static void warn(json_t **w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(json_t **w, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(msg);
    if (!*w)
        *w = json_array();
    json_array_append_new(*w, json_string(msg));
}

/*
 * The Skill entry of k, or NULL with why set when its SKILL.md cannot be
 * read now. extra (may be NULL) is one more warning to carry.
 */
static json_t *entry_of(const struct skill *k, const char *extra, struct err *why)
{
    struct manifest m;
    if (manifest_build(k, &m, why) < 0)
        return NULL;
    json_t *res = json_array(), *warnings = NULL;
    char *uri = skills_uri(k, "SKILL.md");
    for (size_t i = 0; i < m.n; i++) {
        char *u = skills_uri(k, m.v[i].path);
        json_array_append_new(res, json_pack("{s:s, s:s, s:I}", "uri", u, "digest",
                                             m.v[i].digest, "size", (json_int_t)m.v[i].size));
        if (m.v[i].size > RESOURCE_MAX_BYTES)
            warn(&warnings, "%s is over 16 MiB: resources/read does not serve it", m.v[i].path);
        free(u);
    }
    if (extra)
        warn(&warnings, "%s", extra);
    if (m.n > EXT_MAX_FILES)
        warn(&warnings, "%zu files: over the extension's limit of %d files per skill", m.n,
             EXT_MAX_FILES);
    if (m.total > EXT_MAX_BYTES)
        warn(&warnings, "%lld bytes in all: over the extension's limit of 16 MiB per skill",
             (long long)m.total);
    if (m.skipped)
        warn(&warnings, "%zu file(s) found by the last scan cannot be opened now and are left out",
             m.skipped);
    if (list_was_cut(k))
        warn(&warnings, "the skill folder is too large or too deep to list completely; this "
                        "manifest is cut");
    json_t *e = json_pack("{s:s, s:o, s:o}", "uri", uri, "frontmatter", skills_frontmatter(k),
                          "resources", res);
    if (warnings)
        json_object_set_new(e, "_meta", json_pack("{s:o}", META_WARNINGS, warnings));
    free(uri);
    manifest_cleanup(&m);
    return e;
}

/* Logs, once per snapshot generation, the skills the extension cannot list. */
static void log_omissions(const struct snapshot *s)
{
    uint_fast64_t seen = atomic_load(&logged_gen);
    if (s->generation <= seen ||
        !atomic_compare_exchange_strong(&logged_gen, &seen, (uint_fast64_t)s->generation))
        return;
    for (size_t i = 0; i < s->n; i++) {
        const struct skill *k = s->v[i];
        char tmp[300];
        const char *why = unlisted_reason(k, tmp, sizeof tmp);
        if (why) {
            log_warn("skills/list: '%s' is left out: %s (the tools, resources and skills/get "
                     "still serve it)",
                     k->qname, why);
            continue;
        }
        int64_t total = k->md_key.size;
        for (size_t j = 0; j < k->nfiles; j++)
            total += k->files[j].size;
        if (k->nfiles + 1 > EXT_MAX_FILES || total > EXT_MAX_BYTES)
            log_warn("skills/list: '%s' has %zu files, %lld bytes: over the extension's limits "
                     "(%d files, 16 MiB); listed with a warning",
                     k->qname, (size_t)k->nfiles + 1, (long long)total, EXT_MAX_FILES);
    }
}

/* ---- skills/list, skills/get ------------------------------------------------- */

int skillsext_list(struct call *c)
{
    size_t off;
    if (res_offset_cursor(c, &off) < 0)
        return -1;
    struct snapshot *s = call_snapshot(c);
    log_omissions(s);
    json_t *skills = json_array(), *omitted = json_array();
    size_t listed = 0, next = 0;
    for (size_t i = off; i < view_count(c->view, s); i++) {
        const struct skill *k = s->v[view_at(c->view, i)];
        char tmp[300], held[1100];
        const char *why = unlisted_reason(k, tmp, sizeof tmp);
        /* As resources/read and skills/get see it: a quarantined skill has
         * nothing a host could read, and one served from the lock store is
         * listed with the approved version's files and digests. */
        const struct skill_gate *g = skills_gate_of(s, k);
        if (!why && g && g->reason && !g->serve) {
            snprintf(held, sizeof held, "quarantined: %s", g->reason);
            utf8_sanitize(held);    /* a cut may split a character: never lose the entry */
            why = held;
        } else if (g && g->serve) {
            k = g->serve;
        }
        if (!why && listed == SKILLS_PAGE) {
            next = i;
            break;
        }
        struct err unread;
        json_t *e = why ? NULL : entry_of(k, NULL, &unread);
        if (!e) {
            char *uri = skills_uri(k, "SKILL.md");
            json_array_append_new(omitted, json_pack("{s:s, s:s}", "uri", uri, "reason",
                                                     why ? why : unread.msg));
            free(uri);
            continue;
        }
        json_array_append_new(skills, e);
        listed++;
    }
    json_t *r = json_pack("{s:o}", "skills", skills);
    if (next) {
        char cur[32];
        snprintf(cur, sizeof cur, "%zu", next);
        json_object_set_new(r, "nextCursor", json_string(cur));
    }
    if (json_array_size(omitted))
        json_object_set_new(r, "_meta", json_pack("{s:o}", META_OMITTED, omitted));
    else
        json_decref(omitted);
    cacheable(c, r);
    return 0;
}

static int unknown_skill(struct call *c, const char *uri, const char *why)
{
    return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                     "Unknown skill: %.300s (%s)", uri, why);
}

/* The params.uri of a skill:// request, or NULL after an error. */
static const char *uri_param(struct call *c, const char *method)
{
    json_t *u = c->pv ? NULL : json_object_get(c->params, "uri");
    const char *uri = c->pv ? c->pv->uri : json_string_value(u);
    if (!uri) {
        call_error(c, RPC_INVALID_PARAMS, NULL, "%s needs params.uri (a string)", method);
        return NULL;
    }
    size_t len = c->pv ? c->pv->urilen : json_string_length(u);
    if (strlen(uri) != len) {
        call_error(c, RPC_INVALID_PARAMS, NULL, "Resource not found: the URI contains a NUL byte");
        return NULL;
    }
    if (strncmp(uri, "skill://", 8) || len > 4096) {
        call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                  "Resource not found: %.300s (this server serves skill:// URIs only)", uri);
        return NULL;
    }
    return uri;
}

int skillsext_get(struct call *c)
{
    const char *uri = uri_param(c, "skills/get"), *path;
    struct err why;
    struct skill *k;
    char *owned;
    if (!uri)
        return -1;
    int found = res_locate(c, uri, &k, &path, &owned);
    if (found == -2)
        return -1;      /* quarantined: res_locate's answer names the approving command */
    if (found < 0)
        return unknown_skill(c, uri, "no such skill");
    /* Only the canonical form names a skill: skill://<qualified-name>/SKILL.md */
    size_t ql = strlen(k->qname);
    int canonical = !strncmp(owned, k->qname, ql) && !strcmp(owned + ql, "/SKILL.md");
    free(owned);
    if (!canonical)
        return unknown_skill(c, uri, "a skill is named by skill://<qualified-name>/SKILL.md");
    /* With no lock in force the entry depends only on the skill's files:
     * kept with the entry while none of them changes (rcache.h). */
    int keep = !call_snapshot(c)->gate;
    struct rcache_stamps *stamps = NULL;
    if (keep) {
        size_t hl;
        const char *hit = rcache_entry_get(k, c->modern ? 1 : 0, &hl, &stamps);
        if (hit) {
            free(stamps);
            call_raw(c, hit, hl, NULL);
            return 0;
        }
    }
    char tmp[300];
    const char *unlisted = unlisted_reason(k, tmp, sizeof tmp);
    char extra[400];
    if (unlisted)
        snprintf(extra, sizeof extra, "not in skills/list: %s", unlisted);
    json_t *e = entry_of(k, unlisted ? extra : NULL, &why);
    if (!e) {
        free(stamps);
        return unknown_skill(c, uri, why.msg);
    }
    json_t *r = json_pack("{s:o}", "skill", e);
    cacheable(c, r);
    if (keep && stamps) {
        size_t n;
        char *bytes = call_render_kept(c, r, &n);
        if (bytes) {
            rcache_entry_put(k, c->modern ? 1 : 0, stamps, bytes, n);
            call_raw(c, bytes, n, bytes);
        }
    }
    free(stamps);
    return 0;
}

/* ---- resources/directory/read ------------------------------------------------ */

struct child {
    const char *rel;        /* path inside the skill */
    const char *name;       /* last segment */
    int dir;
};

static int child_cmp(const void *a, const void *b)
{
    return strcmp(((const struct child *)a)->name, ((const struct child *)b)->name);
}

/* If rel is a direct child of dir ("" = root), its last segment; else NULL. */
static const char *child_of(const char *dir, size_t dl, const char *rel)
{
    if (dl) {
        if (strncmp(rel, dir, dl) || rel[dl] != '/')
            return NULL;
        rel += dl + 1;
    }
    return *rel && !strchr(rel, '/') ? rel : NULL;
}

int skillsext_dir_read(struct call *c)
{
    const char *uri = uri_param(c, "resources/directory/read"), *path, *why;
    struct skill *k;
    char *owned;
    size_t off;
    if (!uri || res_offset_cursor(c, &off) < 0)
        return -1;
    if (res_locate(c, uri, &k, &path, &owned) < 0)
        return -1;
    char *dir = xstrdup(path);
    free(owned);
    size_t dl = strlen(dir);
    while (dl && dir[dl - 1] == '/')
        dir[--dl] = '\0';
    int rc = -1;
    if (dl && (why = jail_check(dir, dl))) {
        rc = call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                       "Resource not found: %.300s (%s)", uri, why);
        goto out;
    }
    int found = !dl;
    for (size_t i = 0; !found && i < k->ndirs; i++) {
        found = !strcmp(skills_dir_paths(k)[i], dir);
    }
    if (!found) {
        int file = !strcmp(dir, "SKILL.md");
        for (size_t i = 0; !file && i < k->nfiles; i++)
            file = !strcmp(k->files[i].path, dir);
        rc = call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                       "%s: %.300s", file ? "Not a directory" : "Directory not found", uri);
        goto out;
    }

    struct child *v = xmalloc((k->nfiles + k->ndirs + 1) * sizeof *v);
    size_t n = 0;
    const char *nm;
    if (!dl)
        v[n++] = (struct child){"SKILL.md", "SKILL.md", 0};
    for (size_t i = 0; i < k->ndirs; i++) {
        const char *r = skills_dir_paths(k)[i];
        if ((nm = child_of(dir, dl, r)))
            v[n++] = (struct child){r, nm, 1};
    }
    for (size_t i = 0; i < k->nfiles; i++)
        if ((nm = child_of(dir, dl, k->files[i].path)))
            v[n++] = (struct child){k->files[i].path, nm, 0};
    qsort(v, n, sizeof *v, child_cmp);

    json_t *a = json_array();
    struct list_window w = list_window(n, off, DIR_PAGE);
    for (size_t i = w.start; i < w.end; i++) {
        char *u = skills_uri(k, v[i].rel);
        const char *mime = v[i].dir ? "inode/directory"
                           : !strcmp(v[i].rel, "SKILL.md") ? "text/markdown"
                                                            : res_mime_of(v[i].rel, -1);
        json_t *item = json_pack("{s:s, s:s}", "uri", u, "name", v[i].name);
        if (mime)
            json_object_set_new(item, "mimeType", json_string(mime));
        json_array_append_new(a, item);
        free(u);
    }
    json_t *r = json_pack("{s:o}", "resources", a);
    if (w.next)
        json_object_set_new(r, "nextCursor", json_sprintf("%zu", w.next));
    free(v);
    cacheable(c, r);
    rc = 0;
out:
    free(dir);
    return rc;
}

/* ---- prompts ----------------------------------------------------------------- */

int skillsext_prompts_list(struct call *c)
{
    size_t off;
    if (res_offset_cursor(c, &off) < 0)
        return -1;
    struct snapshot *s = call_snapshot(c);
    json_t *a = json_array();
    struct list_window w = list_window(view_count(c->view, s), off, PROMPTS_PAGE);
    for (size_t j = w.start; j < w.end; j++) {
        const struct skill *k = s->v[view_at(c->view, j)];
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:b}]}", "name", k->qname, "title",
                         k->title ? k->title : k->qname,
                         "description", k->description, "arguments", "name", "task",
                         "description",
                         "What to do with this skill; appended to the instructions", "required",
                         0));
    }
    json_t *r = json_pack("{s:o}", "prompts", a);
    if (w.next)
        json_object_set_new(r, "nextCursor", json_sprintf("%zu", w.next));
    call_cacheable(c, CALL_CACHE_MODERN);
    call_result(c, r);
    return 0;
}

int skillsext_prompts_get(struct call *c)
{
    char kdir[SKILL_DIR_MAX];
    json_t *name = json_object_get(c->params, "name");
    json_t *args = json_object_get(c->params, "arguments");
    json_t *task = NULL;
    const char *nm = json_string_value(name);
    if (!nm)
        return call_error(c, RPC_INVALID_PARAMS, name ? json_pack("{s:O}", "name", name) : NULL,
                         "prompts/get needs params.name (a string)");
    if (strlen(nm) != json_string_length(name))
        return call_error(c, RPC_INVALID_PARAMS, NULL, "Unknown prompt: the name contains a NUL byte");
    if (args && !json_is_null(args)) {
        if (!json_is_object(args))
            return call_error(c, RPC_INVALID_PARAMS, NULL, "params.arguments must be an object");
        task = json_object_get(args, "task");
        if (json_is_null(task))
            task = NULL;
        if (task && !json_is_string(task))
            return call_error(c, RPC_INVALID_PARAMS, NULL, "arguments.task must be a string");
    }
    struct snapshot *s = call_snapshot(c);
    int amb = 0;
    struct skill *k = skills_find_in(s, view_mask(c->view), nm, strlen(nm), &amb, NULL);
    if (!k) {
        if (amb) {
            const char *names[8];
            char list[600] = "";
            size_t n = skills_sharing_in(s, view_mask(c->view), nm, names, 8);
            for (size_t i = 0; i < n; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         names[i]);
            return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:O}", "name", name),
                             "Ambiguous prompt: '%.128s' names several skills: %s", nm, list);
        }
        return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:O}", "name", name),
                         "Unknown prompt: %.128s", nm);
    }
    const struct skill_gate *g = skills_gate_of(s, k);
    if (g && g->reason && !g->serve)
        return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:O, s:b}", "name", name,
                                                          "quarantined", 1),
                         "Skill '%s' is quarantined: %s", k->qname, g->reason);
    if (g && g->serve)
        k = g->serve;
    struct skill_body *b, *tmp = NULL;
    struct err why;
    if (skills_body(k, &b, &tmp, &why) < 0)
        return call_error(c, RPC_INTERNAL_ERROR, NULL, "the skill '%s' cannot be read: %s",
                         k->qname, why.msg);
    const struct skill_gate *bg = tmp ? skills_gate_of(s, k) : NULL;
    if (tmp && s->gate &&
        !(bg && bg->approved &&
          lock_file_approved(bg->approved, skills_dir(k, kdir), "SKILL.md"))) {
        /* Edited since the lock judged it, to something not approved. */
        skills_body_free(tmp);
        return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:O}", "name", name),
                         "Skill '%s' changed on disk since it was checked against the lock of "
                         "approved versions; call reload_skills, then ask again", k->qname);
    }
    struct buf t;
    buf_init(&t, 0);
    size_t lead = 0;   /* the blank line(s) between frontmatter and body */
    while (lead < b->len && (b->text[lead] == '\n' || b->text[lead] == '\r'))
        lead++;
    buf_append(&t, b->text + lead, b->len - lead);
    if (task && json_string_length(task)) {
        buf_puts(&t, "\n\nTask: ");
        buf_append(&t, json_string_value(task), json_string_length(task));
    }
    size_t len;
    char *text = buf_steal(&t, &len);
    if (tmp)
        skills_body_free(tmp);
    json_t *r = json_pack("{s:s, s:[{s:s, s:{s:s, s:s%}}]}", "description", k->description,
                          "messages", "role", "user", "content", "type", "text", "text", text,
                          len);
    free(text);
    if (!r)
        return call_error(c, RPC_INTERNAL_ERROR, NULL, "the skill '%s' is not valid UTF-8",
                         k->qname);
    call_result(c, r);
    return 0;
}
