/*
 * resources.c - skill files as MCP resources.
 *
 * Canonical URIs are the Skills extension's: skill://<skill-path>/<file-path>,
 * where <skill-path> is the qualified name (skill://acme/billing/SKILL.md).
 * The Python server's forms are aliases: skill://<name> is that skill's
 * SKILL.md, and skill://<name>/files/<path> is <path> (unless the skill
 * really has a files/ folder holding it). Every path goes through jail.c.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl.h"
#include "call.h"
#include "envelope.h"
#include "jail.h"
#include "json.h"
#include "lock.h"
#include "notify.h"
#include "proto.h"
#include "rcache.h"
#include "redact.h"
#include "resources.h"
#include "session.h"
#include "skills.h"
#include "util.h"

#define RES_PAGE 100
#define RES_MAX_BYTES (16u << 20)

static const struct {
    const char *ext;
    const char *mime;
} mimes[] = {
    {".md", "text/markdown"},       {".txt", "text/plain"},
    {".py", "text/x-python"},       {".sh", "text/x-shellscript"},
    {".js", "text/javascript"},     {".mjs", "text/javascript"},
    {".ts", "text/x-typescript"},   {".json", "application/json"},
    {".yaml", "application/yaml"},  {".yml", "application/yaml"},
    {".csv", "text/csv"},           {".html", "text/html"},
    {".xml", "application/xml"},    {".toml", "application/toml"},
    {".png", "image/png"},          {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},        {".gif", "image/gif"},
    {".svg", "image/svg+xml"},      {".pdf", "application/pdf"},
    {".zip", "application/zip"},    {".gz", "application/gzip"},
};

const char *res_mime_of(const char *path, int text)
{
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof mimes / sizeof *mimes; i++)
            if (!strcasecmp(dot, mimes[i].ext))
                return mimes[i].mime;
    return text < 0 ? NULL : text ? "text/plain" : "application/octet-stream";
}

int res_offset_cursor(struct call *c, size_t *off)
{
    json_t *cur = json_object_get(c->params, "cursor");
    *off = 0;
    if (!cur || json_is_null(cur))
        return 0;
    if (list_cursor_parse(json_string_value(cur), 100000000, off) < 0)
        return call_error(c, RPC_INVALID_PARAMS, NULL, "invalid cursor");
    return 0;
}

int res_list(struct call *c)
{
    size_t off;
    if (res_offset_cursor(c, &off) < 0)
        return -1;
    struct snapshot *s = call_snapshot(c);
    json_t *a = json_array();
    struct list_window w = list_window(view_count(c->view, s), off, RES_PAGE);
    for (size_t j = w.start; j < w.end; j++) {
        const struct skill *k = s->v[view_at(c->view, j)];
        char uri[1024];
        snprintf(uri, sizeof uri, "skill://%s/SKILL.md", k->qname);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:s}", "uri", uri, "name",
                                           k->name, "title", k->qname, "description",
                                           k->description, "mimeType", "text/markdown"));
    }
    json_t *r = json_pack("{s:o}", "resources", a);
    if (w.next)
        json_object_set_new(r, "nextCursor", json_sprintf("%zu", w.next));
    call_result(c, r);
    call_cacheable(c, CALL_CACHE_MODERN);
    return 0;
}

int res_templates(struct call *c)
{
    size_t off;
    if (res_offset_cursor(c, &off) < 0)
        return -1;
    call_result(c, json_pack(
        "{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "resourceTemplates", "uriTemplate",
        "skill://{skill}/SKILL.md", "name", "skill", "description",
        "A skill's SKILL.md (frontmatter and instructions); {skill} is a name from list_skills",
        "mimeType", "text/markdown", "uriTemplate", "skill://{skill}/{+path}", "name",
        "skill-file", "description",
        "A file bundled with a skill, by its path inside the skill folder"));
    call_cacheable(c, CALL_CACHE_MODERN);
    return 0;
}

static int has_file(const struct skill *k, const char *path)
{
    for (size_t i = 0; i < k->nfiles; i++)
        if (!strcmp(k->files[i].path, path))
            return 1;
    return 0;
}

static int not_found(struct call *c, const char *uri, const char *why)
{
    return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                     "Resource not found: %.300s (%s)", uri, why);
}

int res_locate(struct call *c, const char *uri, struct skill **kout, const char **pathout,
               char **owned)
{
    char *rest = xstrdup(uri + 8);
    struct snapshot *s = call_snapshot(c);
    struct skill *k = NULL;
    const char *path = NULL;
    int amb = 0;
    *owned = NULL;
    size_t rl = strlen(rest);
    /* without a '%' there is nothing to decode (and nothing to refuse) */
    if (memchr(rest, '%', rl) && pct_decode(rest, rl, rest, NULL) < 0) {
        free(rest);
        return not_found(c, uri, "bad percent-encoding");
    }
    /* skill-path is one or two segments; prefer the longer one that exists. */
    char *s1 = strchr(rest, '/');
    char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    const unsigned char *mask = view_mask(c->view);
    if (s1 && (k = skills_find_in(s, mask, rest, (size_t)(s2 ? s2 - rest : (ptrdiff_t)strlen(rest)),
                                  &amb, NULL)) &&
        k->team) {
        path = s2 ? s2 + 1 : "";
    } else {
        k = skills_find_in(s, mask, rest, s1 ? (size_t)(s1 - rest) : strlen(rest), &amb, NULL);
        path = s1 ? s1 + 1 : "";
    }
    if (!k) {
        char reason[600] = "no such skill";
        if (amb) {
            const char *names[8];
            char bare[256];
            snprintf(bare, sizeof bare, "%.*s", (int)(s1 ? s1 - rest : (ptrdiff_t)strlen(rest)), rest);
            size_t n = skills_sharing_in(s, mask, bare, names, 8);
            snprintf(reason, sizeof reason, "'%s' names several skills:", bare);
            for (size_t i = 0; i < n; i++)
                snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
                         "%s skill://%s/SKILL.md", i ? "," : "", names[i]);
        }
        free(rest);
        return not_found(c, uri, reason);
    }
    const struct skill_gate *g = skills_gate_of(s, k);
    if (g && g->reason && !g->serve) {
        call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s, s:b}", "uri", uri, "quarantined", 1),
                  "Skill '%s' is quarantined: %s", k->qname, g->reason);
        free(rest);
        return -2;
    }
    if (g && g->serve)
        k = g->serve;       /* the approved version, from the store */
    *kout = k;
    *pathout = path;
    *owned = rest;
    return 0;
}

int res_read(struct call *c)
{
    char kdir[SKILL_DIR_MAX];
    json_t *u = c->pv ? NULL : json_object_get(c->params, "uri");
    const char *uri = c->pv ? c->pv->uri : json_string_value(u), *bad;
    struct err why;
    if (!uri)
        return call_error(c, RPC_INVALID_PARAMS, NULL, "resources/read needs params.uri (a string)");
    size_t ulen = c->pv ? c->pv->urilen : json_string_length(u);
    if (strlen(uri) != ulen)
        return call_error(c, RPC_INVALID_PARAMS, NULL, "Resource not found: the URI contains a NUL byte");
    if (strncmp(uri, "skill://", 8) || ulen > 4096)
        return not_found(c, uri, "this server serves skill:// URIs only");

    char *rest;
    struct skill *k;
    const char *path;
    int rc = -1;
    if (res_locate(c, uri, &k, &path, &rest) < 0)
        return -1;
    if (!*path)
        path = "SKILL.md";
    else if (!strncmp(path, "files/", 6) && !has_file(k, path))
        path += 6;
    if ((bad = jail_check(path, strlen(path)))) {
        rc = not_found(c, uri, bad);
        goto out;
    }
    /* A listed file, with no lock in force and no --redact file (whose
     * patterns change on SIGHUP), reads the same until it changes: its
     * reply is kept with the entry (rcache.h). */
    long fi = call_snapshot(c)->gate || c->S->cfg.redact_file ? -1 : rcache_file_index(k, path);
    enum rcache_kind kind = c->modern ? RCACHE_RES_MODERN : RCACHE_RES_LEGACY;
    struct stat st = {0};
    if (fi >= 0) {
        size_t hl;
        const char *hit = rcache_file_get(k, (size_t)fi, kind, uri, &hl, &st);
        if (hit) {
            call_raw(c, hit, hl, NULL);
            rc = 0;
            goto out;
        }
    }
    struct jail_file f;
    const char *dir = skills_dir(k, kdir);
    int r = jail_read(dir, path, RES_MAX_BYTES, &f, &why);
    if (r < 0) {
        rc = not_found(c, uri, why.msg);
        goto out;
    }
    const struct skill_gate *g = skills_gate_of(call_snapshot(c), k);
    if (g && g->approved && !g->reason && !lock_file_approved(g->approved, dir, path)) {
        /* edited since the lock judged it: not reviewed */
        jail_file_cleanup(&f);
        rc = call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                       "Resource changed on disk since skill '%s' was checked against the lock "
                       "of approved versions: %.300s; call reload_skills, then read it again",
                       k->qname, uri);
        goto out;
    }
    if (f.truncated) {
        jail_file_cleanup(&f);
        rc = call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                       "Resource too large: %.300s is over 16 MiB", uri);
        goto out;
    }
    size_t len;
    json_t *hits;
    char *red = redact_file(c->S->redact, f.data, f.len, &len, &hits, &c->S->stats);
    const char *data = red ? red : f.data;
    if (!red)
        len = f.len;
    int text = utf8_valid(data, len);
    const char *mime = !strcmp(path, "SKILL.md") ? "text/markdown" : res_mime_of(path, text);
    json_t *item;
    if (text) {
        item = json_pack("{s:s, s:s, s:s%}", "uri", uri, "mimeType", mime, "text", data, len);
    } else {
        char *b64 = xmalloc(4 * ((len + 2) / 3) + 1);
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)data, (int)len);
        item = json_pack("{s:s, s:s, s:s}", "uri", uri, "mimeType", mime, "blob", b64);
        free(b64);
    }
    free(red);
    int64_t size = f.size;
    jail_file_cleanup(&f);
    json_t *result = json_pack("{s:[o]}", "contents", item);
    if (hits) {
        /* a redacted reply is not kept: each redaction is counted as it happens */
        json_object_set_new(result, "_meta", json_pack("{s:o}", REDACT_META, hits));
    } else if (fi >= 0 && st.st_mode && (int64_t)st.st_size == size) {
        size_t n;
        char *bytes = call_render_kept(c, result, &n);
        json_decref(result);
        if (!bytes) {
            rc = call_error(c, RPC_INTERNAL_ERROR, NULL,
                            "Internal error: the result is not valid JSON");
            goto out;
        }
        rcache_file_put(k, (size_t)fi, kind, uri, &st, bytes, n);
        call_raw(c, bytes, n, bytes);
        rc = 0;
        goto out;
    }
    call_result(c, result);
    call_cacheable(c, CALL_CACHE_MODERN);
    rc = 0;
out:
    free(rest);
    return rc;
}

int res_subscribe(struct call *c, int on)
{
    const char *m = on ? "resources/subscribe" : "resources/unsubscribe";
    json_t *u = json_object_get(c->params, "uri");
    const char *uri = json_string_value(u);
    if (!uri || json_string_length(u) > 4096 || strlen(uri) != json_string_length(u))
        return call_error(c, RPC_INVALID_PARAMS, NULL, "%s needs params.uri (a skill:// URI)", m);
    if (!c->session)
        return call_error(c, RPC_METHOD_NOT_FOUND, NULL,
                         "%s needs a session: start the server with --stateful, whose GET "
                         "stream carries notifications/resources/updated, or use --stdio",
                         m);
    if (!on) {
        session_unsubscribe(c->sessions, c->session, c->client, uri);
        call_result(c, json_object());
        return 0;
    }
    if (strncmp(uri, "skill://", 8))
        return not_found(c, uri, "this server serves skill:// URIs only");
    struct skill *k;
    const char *path;
    char *owned;
    if (res_locate(c, uri, &k, &path, &owned) < 0)
        return -1;
    if (*path && strcmp(path, "SKILL.md") && !has_file(k, path)) {
        free(owned);
        return not_found(c, uri, "no such file in the skill");
    }
    /* Matched under the canonical spelling, whatever alias the client used;
     * no path (skill://name) is the skill's folder, covering every file. */
    char *ks = skills_uri(k, path);
    free(owned);
    int rc = session_subscribe(c->sessions, c->session, c->client, uri, ks, NOTIFY_SUBS_MAX);
    free(ks);
    if (rc < 0)
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "this session already holds %d subscriptions, the limit; "
                         "unsubscribe from one first",
                         NOTIFY_SUBS_MAX);
    if (rc == 0)
        return call_error(c, RPC_SESSION_NOT_FOUND, NULL, "Session not found: it ended or expired");
    call_result(c, json_object());
    return 0;
}

int res_listen(struct call *c)
{
    json_t *want = json_object_get(c->params, "notifications");
    if (!json_is_object(want))
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "subscriptions/listen needs params.notifications (an object)");
    json_t *subs = json_object_get(want, "resourceSubscriptions");
    if (subs && !json_is_array(subs))
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "params.notifications.resourceSubscriptions must be an array of URIs");
    if (json_array_size(subs) > NOTIFY_SUBS_MAX)
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "at most %d resourceSubscriptions on one stream", NOTIFY_SUBS_MAX);
    /* What is honored is acknowledged; tools never change, so
     * toolsListChanged is never part of it. */
    json_t *ok = json_object();
    if (json_is_true(json_object_get(want, "resourcesListChanged")))
        json_object_set_new(ok, "resourcesListChanged", json_true());
    if (json_is_true(json_object_get(want, "promptsListChanged")))
        json_object_set_new(ok, "promptsListChanged", json_true());
    json_t *uris = json_array();
    size_t i;
    json_t *u;
    json_array_foreach(subs, i, u) {
        const char *uri = json_string_value(u);
        struct skill *k;
        const char *path;
        char *owned;
        if (!uri || strncmp(uri, "skill://", 8) || strlen(uri) != json_string_length(u))
            continue;
        if (res_locate(c, uri, &k, &path, &owned) < 0) {
            call_clear(c);  /* not served: left out of the acknowledged subset */
            continue;
        }
        /* acknowledged as what is watched: the folder stays the folder */
        if (!*path || !strcmp(path, "SKILL.md") || has_file(k, path)) {
            char *ks = skills_uri(k, path);
            json_array_append_new(uris, json_string(ks));
            free(ks);
        }
        free(owned);
    }
    if (json_array_size(uris))
        json_object_set_new(ok, "resourceSubscriptions", uris);
    else
        json_decref(uris);
    c->listen = ok;
    /* The response ends the stream; http.c sends it last. */
    call_result(c, json_pack("{s:{s:O}}", "_meta", "io.modelcontextprotocol/subscriptionId",
                             c->id));
    return 0;
}
