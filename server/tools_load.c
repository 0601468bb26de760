/*
 * tools_load.c - load_skill (the whole body or one section, the reply kept
 * with the body) and read_skill_file (jailed reads, redaction, the reply
 * kept per file while its stat holds).
 */
#include "tools.h"
#include "tools_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "acl.h"
#include "auth.h"
#include "call.h"
#include "envelope.h"
#include "proto.h"
#include "hooks.h"
#include "rcache.h"
#include "jail.h"
#include "json.h"
#include "lock.h"
#include "markdown.h"
#include "redact.h"
#include "script.h"
#include "search.h"
#include "shape.h"
#include "util.h"

#define READ_DEFAULT_MAX 65536
#define READ_MAX_MAX (1 << 20)

static const struct shape_text file_texts[] = {
    {"content", NULL,
     "The file was cut to fit the context; the items kept are whole. Use one of the skill's "
     "scripts to query it, if it has one."},
};

/* ---- load_skill ----------------------------------------------------------- */

static json_t *scripts_and_files(const struct skill *k, json_t **files_out)
{
    json_t *scripts = json_array(), *files = json_array();
    json_t *ex = skills_execution(k);
    json_t *dflt = json_is_object(ex) ? json_object_get(ex, "default") : NULL;
    for (size_t i = 0; i < k->nfiles; i++) {
        const struct skill_file *f = &k->files[i];
        if (strncmp(f->path, "scripts/", 8)) {
            json_array_append_new(files, json_pack("{s:s, s:I}", "path", f->path, "size",
                                                   (json_int_t)f->size));
            continue;
        }
        json_t *s = json_pack("{s:s}", "path", f->path);
        json_t *e = script_exec_entry(k, f->path);
        static const char *const fields[] = {"description", "timeout", "stall_timeout"};
        for (size_t j = 0; j < 3; j++) {
            json_t *v = e ? json_object_get(e, fields[j]) : NULL;
            if (!v && j > 0 && json_is_object(dflt))
                v = json_object_get(dflt, fields[j]);
            /* a copy: the frontmatter is shared by every thread */
            if (v && (j == 0 ? json_is_string(v) : json_is_number(v)))
                json_object_set_new(s, fields[j], json_copy(v));
        }
        json_array_append_new(scripts, s);
    }
    *files_out = files;
    return scripts;
}

static json_t *load_result(const struct skill *k, const struct skill_body *b,
                           const char *section, const char *text, size_t len)
{
    json_t *secs = json_array();
    for (size_t i = 0; i < b->nsec; i++)
        json_array_append_new(secs, json_pack("{s:s%, s:i}", "title",
                                              b->text + b->sec[i].title_off,
                                              b->sec[i].title_len, "level", b->sec[i].level));
    json_t *files;
    json_t *scripts = scripts_and_files(k, &files);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s%, s:o, s:o, s:o}", "name", k->name,
                          "qualified_name", k->qname, "description", k->description, "content",
                          text, len, "sections", secs, "scripts", scripts, "files", files);
    if (section)
        json_object_set_new(r, "section", json_string(section));
    return r;
}

/* jansson takes only UTF-8: a SKILL.md in another encoding cannot be
 * answered, and saying so beats a reply that is not JSON. */
static int not_text(struct tool_out *o, const struct skill *k)
{
    return tools_fail(o, "Skill '%s' cannot be loaded: its SKILL.md is not valid UTF-8 text (saved "
                   "in another encoding?). Tell its author; `skill-mcp validate` shows where.",
                k->qname);
}

/*
 * A load_skill answer from its slot, rendered and published by the first
 * request (set-once CAS: a thread that loses the race frees its copy).
 * NULL when the slot holds another spelling of the section: the caller
 * renders that one per request; NULL with *bad set when the body cannot be
 * put in JSON (not UTF-8).
 */
static struct skill_rendered *cached_render(_Atomic(struct skill_rendered *) *slot,
                                            const char *key, const struct skill *k,
                                            const struct skill_body *b, const char *section,
                                            const char *text, size_t len, struct tool_ctx *c,
                                            struct tool_out *o, int *bad)
{
    size_t klen = strlen(key);
    struct skill_rendered *r = atomic_load(slot);
    *bad = 0;
    if (!r) {
        json_t *res = load_result(k, b, section, text, len);
        if (!res) {
            *bad = 1;       /* never cached: the caller answers with an error */
            return NULL;
        }
        struct tool_out full = {.structured = res, .budget = &c->call->S->budget, .hint = o->hint};
        size_t n;
        char *bytes = tools_render(&full, 0, c->call->modern, &n);
        struct skill_rendered *mine = xmalloc(sizeof *mine + n + 1 + klen + 1);
        mine->len = n;
        mine->key_len = klen;
        memcpy(mine->data, bytes, n + 1);
        memcpy(mine->data + n + 1, key, klen + 1);
        free(bytes);
        struct skill_rendered *expect = NULL;
        if (atomic_compare_exchange_strong(slot, &expect, mine)) {
            r = mine;
        } else {
            free(mine);
            r = expect;
        }
    }
    if (r->key_len != klen || memcmp(r->data + r->len + 1, key, klen))
        return NULL;
    return r;
}

int tools_load_skill(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    char kdir[SKILL_DIR_MAX];
    static const char *const keys[] = {"name", "section", NULL};
    const char *section;
    struct err why;
    struct skill_body *b;
    struct skill_body *tmp;
    struct skill *k;
    if (c->pv) {
        /* every argument of a view is a string: the same checks, in order */
        size_t len = 0;
        const char *name = call_view_arg(c->pv, "name", &len);
        if (tools_view_only_keys(c->pv, o, keys) < 0 ||
            !(k = tools_gated(c, tools_need_skill_named(c, name, len, o), o)))
            return -1;
        section = call_view_arg(c->pv, "section", NULL);
    } else {
        if (tools_only_keys(args, o, keys) < 0)
            return -1;
        k = tools_gated(c, tools_need_skill(c, args, o), o);
        if (!k || tools_opt_str(args, "section", &section, NULL, o) < 0)
            return -1;
    }
    o->skill = k->qname;
    if (skills_body(k, &b, &tmp, &why) < 0)
        return tools_fail(o, "Skill '%s' cannot be loaded right now: %s. Try reload_skills, or "
                       "tell the operator.",
                    k->qname, why.msg);
    const struct skill_gate *bg = tmp ? skills_gate_of(c->call->snap, k) : NULL;
    if (tmp && c->call->snap->gate &&
        !(bg && bg->approved &&
          lock_file_approved(bg->approved, skills_dir(k, kdir), "SKILL.md"))) {
        /* Edited since it was checked against the lock, to something not approved. */
        skills_body_free(tmp);
        return tools_fail(o, "Skill '%s' changed on disk since it was checked against the lock of "
                       "approved versions. Call reload_skills, then load it again.",
                    k->qname);
    }
    int whole = !section || !*section;
    const char *text = b->text;
    size_t len = b->len;
    long at = -1;
    if (!whole) {
        at = md_find(b->text, b->sec, b->nsec, section);
        if (at < 0) {
            struct buf l;
            buf_init(&l, 700);
            for (size_t i = 0; i < b->nsec; i++)
                if (buf_printf(&l, "%s\"%.*s\"", i ? ", " : "", (int)b->sec[i].title_len,
                               b->text + b->sec[i].title_off) < 0)
                    break;
            tools_fail(o, "Skill '%s' has no section '%.100s'. Its sections: %s. Call load_skill "
                    "with one of them, or without 'section' for the whole body.",
                 k->qname, section, l.len ? l.p : "(none: the body has no headings)");
            buf_cleanup(&l);
            skills_body_free(tmp);
            return -1;
        }
        text = b->text + b->sec[at].start;
        len = b->sec[at].end - b->sec[at].start;
    }
    if (!tmp) {
        /* The answer depends only on this entry and the argument: render it
         * once and keep it with the body. */
        _Atomic(struct skill_rendered *) *slot =
            whole ? &b->rendered[c->call->modern] : &b->sec_rendered[2 * at + c->call->modern];
        const char *key = whole ? "" : section;
        int bad;
        struct skill_rendered *r = cached_render(slot, key, k, b, whole ? NULL : section, text,
                                                 len, c, o, &bad);
        if (r) {
            o->raw = r->data;
            o->rawlen = r->len;
            return 0;
        }
        if (bad)
            return not_text(o, k);
    }
    o->structured = load_result(k, b, whole ? NULL : section, text, len);
    skills_body_free(tmp);
    if (!o->structured)
        return not_text(o, k);
    return 0;
}

/* ---- read_skill_file -------------------------------------------------------- */

static char *base64(const char *data, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
    return out;
}

int tools_read_skill_file(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    char kdir[SKILL_DIR_MAX];
    static const char *const keys[] = {"name", "path", "max_bytes", NULL};
    const char *path, *bad;
    struct err why;
    size_t plen;
    long max;
    struct jail_file f;
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    struct skill *k = tools_gated(c, tools_need_skill(c, args, o), o);
    if (k)
        o->skill = k->qname;
    if (!k || tools_opt_str(args, "path", &path, &plen, o) < 0 ||
        tools_opt_int(args, "max_bytes", 1, READ_MAX_MAX, READ_DEFAULT_MAX, &max, o) < 0)
        return -1;
    if (!path)
        return tools_fail(o, "Argument 'path' is required: a file path inside the skill, such as "
                       "one of the 'files' that load_skill lists.");
    if ((bad = jail_check(path, plen)))
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': %s.", path, k->qname, bad);
    /* A listed file read whole, with no lock in force (whose check reads
     * the file) and no --redact file (its patterns change on SIGHUP),
     * answers the same until the file changes: kept per entry. */
    long fi = c->call->snap->gate || c->call->S->cfg.redact_file ? -1 : rcache_file_index(k, path);
    enum rcache_kind kind = c->call->modern ? RCACHE_TOOL_MODERN : RCACHE_TOOL_LEGACY;
    struct stat st = {0};
    if (fi >= 0) {
        size_t hl;
        const char *hit = rcache_file_get(k, (size_t)fi, kind, path, &hl, &st);
        if (hit && st.st_size <= max) {
            o->raw = hit;
            o->rawlen = hl;
            return 0;
        }
    }
    /* read past the cut when redacting: the cut comes after, and never
     * shows the first bytes of a secret too short to be recognised */
    size_t ahead = c->call->S->redact ? REDACT_FILE_LOOKAHEAD : 0;
    int rc = jail_read(skills_dir(k, kdir), path, (size_t)max + ahead, &f, &why);
    if (rc < 0) {
        if (rc == -ENOENT || rc == -EISDIR) {
            struct buf l;
            buf_init(&l, 600);
            /* names a client can send back: not those that are not UTF-8 */
            for (size_t i = 0, shown = 0; i < k->nfiles && shown < 30; i++) {
                const char *fp = k->files[i].path;
                if (!utf8_valid(fp, strlen(fp)))
                    continue;
                if (buf_printf(&l, "%s%s", shown++ ? ", " : "", fp) < 0)
                    break;
            }
            tools_fail(o, "Cannot read '%.200s' from skill '%s': %s. Its files: %s.", path, k->qname,
                 why.msg, l.len ? l.p : "SKILL.md only (use load_skill)");
            buf_cleanup(&l);
            return -1;
        }
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': %s.", path, k->qname,
                          why.msg);
    }
    const struct skill_gate *g = skills_gate_of(c->call->snap, k);
    if (g && g->approved && !g->reason &&
        !lock_file_approved(g->approved, skills_dir(k, kdir), path)) {
        jail_file_cleanup(&f);
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': it changed on disk since the "
                       "skill was checked against the lock of approved versions. Call "
                       "reload_skills, then read it again.",
                    path, k->qname);
    }
    size_t n, rl;
    json_t *hits;
    char *red = redact_file(c->call->S->redact, f.data, f.len, &rl, &hits, &c->call->S->stats);
    const char *data = red ? red : f.data;
    n = red ? rl : f.len;
    int cut = f.truncated || n > (size_t)max;
    if (n > (size_t)max)
        n = (size_t)max;
    size_t whole = n;
    if (cut)
        n = utf8_trim(data, n);
    int64_t f_size = f.size;
    json_t *r;
    if (utf8_valid(data, n)) {
        /* validated just above: jansson need not check it again */
        r = json_pack("{s:s, s:s, s:I, s:s, s:o, s:b}", "name", k->qname, "path", path,
                      "size", (json_int_t)f.size, "encoding", "utf-8", "content",
                      json_stringn_nocheck(data, n), "truncated", cut);
    } else {
        char *b64 = base64(data, whole);
        r = json_pack("{s:s, s:s, s:I, s:s, s:s, s:b}", "name", k->qname, "path", path, "size",
                      (json_int_t)f.size, "encoding", "base64", "content", b64, "truncated",
                      cut);
        free(b64);
    }
    size_t pl = strlen(path);
    if (!strcmp(json_string_value(json_object_get(r, "encoding")), "utf-8") && pl >= 5 &&
        !strcasecmp(path + pl - 5, ".json")) {
        o->texts = file_texts;
        o->ntexts = 1;
    }
    free(red);
    jail_file_cleanup(&f);
    if (hits)
        o->meta = json_pack("{s:o}", REDACT_META, hits);
    o->structured = r;
    /* Only what is the same on every read: the whole file, nothing redacted
     * (each redaction is counted as it happens). */
    if (fi >= 0 && st.st_mode && !o->meta && !cut && (int64_t)st.st_size == f_size) {
        o->raw_owned = tools_render(o, 0, c->call->modern, &o->rawlen);
        o->raw = o->raw_owned;
        rcache_file_put(k, (size_t)fi, kind, path, &st, o->raw, o->rawlen);
    }
    return 0;
}
