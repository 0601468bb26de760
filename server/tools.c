/*
 * tools.c - the MCP tools of the skill library (see docs/tools.md): the
 * table, tools/call's dispatch, the argument checks every handler shares,
 * rendering a CallToolResult (fitted by shape.c), and the small handlers
 * (stats, reload_skills).
 *
 * One table row per tool: schemas as JSON text (readable, checked at
 * start-up), annotations and the handler. Handlers read only the snapshot
 * they are given; the one that touches the disk (read_skill_file, and
 * load_skill on a body cache miss) goes through jail.c or skills_body().
 * A handler answers with a structured result, or with a message telling the
 * model what to do next (isError). The handlers of the other tools are in
 * tools_list.c, tools_load.c and tools_run.c.
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

#define NAME_MAX_LEN 200

/* A script's output that is JSON is cut as JSON; its own _truncated says
 * how to ask for less (the options the bundled rest-client takes). */
const struct shape_text tools_run_texts[NRUN_TEXTS] = {
    {"stdout", "stdout_format",
     "The output was cut to fit the context; the items kept are whole. Ask the script for "
     "less if it can: a count alone (--count-only), fewer fields per item (--fields a,b), "
     "fewer items (--limit N)."},
    {"stderr", "stderr_format", NULL},
};

struct tool {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;
    const char *output_schema;
    int read_only;
    tool_fn fn;
    int runs_scripts;       /* absent under --no-scripts */
    const char *narrow;     /* how to ask for less, when a result had to be cut */
};

/* ---- helpers ------------------------------------------------------------- */

int tools_fail(struct tool_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(o->msg);      /* "%.64s" of caller input may split a character */
    return -1;
}

/* Checks that args has only the given keys; the first stranger is reported. */
static int only_key(const char *k, struct tool_out *o, const char *const *keys)
{
    for (const char *const *p = keys; *p; p++)
        if (!strcmp(k, *p))
            return 0;
    char list[256] = "";
    for (const char *const *p = keys; *p; p++) {
        strncat(list, *p, sizeof list - strlen(list) - 3);
        if (p[1])
            strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return tools_fail(o, "Unknown argument '%.64s'. This tool takes: %s.", k,
                      *list ? list : "no arguments");
}

int tools_only_keys(json_t *args, struct tool_out *o, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) {
        if (only_key(k, o, keys) < 0)
            return -1;
    }
    return 0;
}

int tools_view_only_keys(const struct rpc_view *v, struct tool_out *o, const char *const *keys)
{
    for (size_t i = 0; i < v->nargs; i++)
        if (only_key(v->key[i], o, keys) < 0)
            return -1;
    return 0;
}

/* An optional string argument; -1 (with o set) when of the wrong type. */
int tools_opt_str(json_t *args, const char *key, const char **out, size_t *len,
                   struct tool_out *o)
{
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (len)
        *len = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tools_fail(o, "Argument '%s' must be a string.", key);
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return 0;
}

int tools_opt_int(json_t *args, const char *key, long lo, long hi, long dflt, long *out,
                   struct tool_out *o)
{
    json_t *v = json_object_get(args, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    /* Range first, conversion second: a double out of long's range is UB. */
    double d = json_is_integer(v) ? (double)json_integer_value(v)
               : json_is_real(v)  ? json_real_value(v)
                                  : NAN;
    if (isnan(d) || d != floor(d))
        return tools_fail(o, "Argument '%s' must be a whole number from %ld to %ld.", key, lo, hi);
    if (d < (double)lo || d > (double)hi)
        return tools_fail(o, "Argument '%s' must be from %ld to %ld (got %.0f).", key, lo, hi, d);
    *out = (long)d;
    return 0;
}

/*
 * Resolves the skill argument. On failure o->msg tells the model what to do:
 * the qualified names to pick from, or the closest matches.
 */
struct skill *tools_need_skill(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    const char *name;
    size_t len;
    if (tools_opt_str(args, "name", &name, &len, o) < 0)
        return NULL;
    return tools_need_skill_named(c, name, len, o);
}

struct skill *tools_need_skill_named(struct tool_ctx *c, const char *name, size_t len,
                                     struct tool_out *o)
{
    int amb;
    if (!name || !len) {
        tools_fail(o, "Argument 'name' is required: a skill name from list_skills.");
        return NULL;
    }
    if (len > NAME_MAX_LEN || memchr(name, '\0', len)) {
        tools_fail(o, "Argument 'name' is not a skill name (at most %d characters, no NUL). "
                "Call list_skills to see the available skills.",
             NAME_MAX_LEN);
        return NULL;
    }
    /* A skill the caller may not see is not there: the same lookup, the
     * same suggestions (drawn from what it sees), the same words. */
    const unsigned char *mask = view_mask(c->call->view);
    struct skill *k = skills_find_in(c->call->snap, mask, name, len, &amb, &c->idx);
    if (k)
        return k;
    if (amb) {
        const char *names[8];
        size_t n = skills_sharing_in(c->call->snap, mask, name, names, 8);
        char list[512] = "";
        for (size_t i = 0; i < n; i++) {
            strncat(list, names[i], sizeof list - strlen(list) - 3);
            if (i + 1 < n)
                strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        tools_fail(o, "'%s' names several skills: %s. Call again with the qualified name.", name,
             list);
        return NULL;
    }
    const char *sug[3];
    size_t n = skills_suggest_in(c->call->snap, mask, name, sug, 3);
    if (n) {
        char list[400] = "";
        for (size_t i = 0; i < n; i++) {
            strncat(list, sug[i], sizeof list - strlen(list) - 3);
            if (i + 1 < n)
                strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        tools_fail(o, "Unknown skill '%s'. Closest matches: %s. Call list_skills to see all skills.",
             name, list);
    } else {
        tools_fail(o, "Unknown skill '%s'. Call list_skills (optionally with a query) to see the "
                "available skills.",
             name);
    }
    return NULL;
}

/*
 * The entry a call may use: k itself, the approved version the store serves
 * in its place, or NULL (o says why) when the lock quarantines it.
 */
struct skill *tools_gated(struct tool_ctx *c, struct skill *k, struct tool_out *o)
{
    const struct skill_gate *g = k ? skills_gate_of(c->call->snap, k) : NULL;
    if (!g || !g->reason)
        return k;
    if (g->serve)
        return g->serve;
    tools_fail(o, "Skill '%s' is quarantined: %s. Nothing was read or run; use another skill, or "
            "ask the operator to review this one.", k->qname, g->reason);
    return NULL;
}

/* ---- stats and reload ------------------------------------------------------- */

/* The snapshot's problems the caller may know of: with --acl, only those
 * of skills it sees (a problem names its skill's folder). */
static json_t *visible_problems(const struct tool_ctx *c)
{
    if (!c->call->view)
        return json_deep_copy(c->call->snap->errors);
    json_t *a = json_array(), *e;
    size_t i;
    json_array_foreach(c->call->snap->errors, i, e) {
        const char *k = json_string_value(json_object_get(e, "skill"));
        if (k && acl_class_sees(c->call->view->cls, k))
            json_array_append_new(a, json_deep_copy(e));
    }
    return a;
}

/* Names in a (qualified names) the caller may not see are taken out. */
static void visible_names(const struct tool_ctx *c, json_t *a)
{
    for (size_t i = json_array_size(a); c->call->view && i-- > 0;) {
        const char *k = json_string_value(json_array_get(a, i));
        if (!k || !acl_class_sees(c->call->view->cls, k))
            json_array_remove(a, i);
    }
}

static int t_stats(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {NULL};
    size_t nroots;
    char at[32];
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    const char *const *roots = skills_roots(c->call->S->skills, &nroots);
    json_t *r = json_array();
    for (size_t i = 0; i < nroots; i++)
        json_array_append_new(r, json_string(roots[i]));
    size_t errors = 0, i;
    json_t *e, *problems = visible_problems(c);
    json_array_foreach(problems, i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "level")), "error"))
            errors++;
    }
    iso_utc(c->call->snap->built_at, at, sizeof at);
    o->structured = json_pack(
        "{s:{s:s, s:s, s:f}, s:{s:I, s:I, s:I, s:I, s:o, s:s, s:f, s:o}, s:o}", "server",
        "name", SERVER_NAME, "version", SKILL_VERSION, "uptime_s",
        (double)(now_ns() - c->call->S->stats.started_ns) / 1e9, "index", "generation",
        (json_int_t)c->call->snap->generation, "skills", (json_int_t)view_count(c->call->view, c->call->snap),
        "errors", (json_int_t)errors, "warnings", (json_int_t)(json_array_size(problems) - errors),
        "roots", r, "last_refresh_at", at, "last_refresh_ms", c->call->snap->build_ms, "problems",
        problems, "tools", stats_tools_json(&c->call->S->stats));
    json_t *usage = stats_skills_json(&c->call->S->stats);
    if (c->call->view) {
        const char *name;
        void *tmp;
        json_object_foreach_safe(usage, tmp, name, e) if (!acl_class_sees(c->call->view->cls, name))
            json_object_del(usage, name);
    }
    json_object_set_new(o->structured, "skills", usage);
    if (c->call->S->runner) {
        struct run_counters rc;
        run_counters(c->call->S->runner, &rc);
        json_object_set_new(o->structured, "scripts",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}",
                                      "started", (json_int_t)rc.started, "ok", (json_int_t)rc.ok,
                                      "failed", (json_int_t)rc.failed, "stalled",
                                      (json_int_t)rc.stalled, "timeout", (json_int_t)rc.timeout,
                                      "denied", (json_int_t)rc.denied, "busy",
                                      (json_int_t)rc.busy, "live", (json_int_t)rc.live,
                                      "queued", (json_int_t)rc.queued, "max_concurrency",
                                      c->call->S->cfg.max_script_concurrency));
    }
    return 0;
}

static int t_reload(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {NULL};
    struct skills_report r;
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    lock_reload(c->call->S->lock, 0);     /* an edited lock is judged by this rebuild too */
    skills_rescan(c->call->S->skills, 1, &r);
    visible_names(c, r.added);
    visible_names(c, r.removed);
    visible_names(c, r.changed);
    o->structured = json_pack("{s:I, s:I, s:O, s:O, s:O, s:O, s:f}", "generation_before",
                              (json_int_t)r.gen_before, "generation_after",
                              (json_int_t)r.gen_after, "added", r.added, "removed", r.removed,
                              "changed", r.changed, "errors", r.errors, "duration_ms", r.ms);
    skills_report_cleanup(&r);
    return 0;
}

/* ---- the table -------------------------------------------------------------- */

#define CARD_SCHEMA                                                                         \
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"                 \
    "\"qualified_name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"      \
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                       \
    "\"version\":{\"type\":\"string\"},\"quarantined\":{\"type\":\"boolean\"},"           \
    "\"quarantine_reason\":{\"type\":\"string\"}},\"required\":[\"name\",\"description\"]}"

static const struct tool table[] = {
    {"list_skills", "List skills",
     "List the skills available (name and description). Call this first; pass 'query' to "
     "find the skills for a task.",
     "{\"type\":\"object\",\"properties\":{"
     "\"query\":{\"type\":\"string\",\"description\":\"what the task is about\"},"
     "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"only "
     "skills with all these tags\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,\"default\":500},"
     "\"cursor\":{\"type\":\"string\",\"description\":\"next_cursor from the previous "
     "page\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"skills\":{\"type\":\"array\",\"items\":" CARD_SCHEMA
     "},\"total\":{\"type\":\"integer\"},\"generation\":{\"type\":\"integer\"},"
     "\"next_cursor\":{\"type\":\"string\"},\"hint\":{\"type\":\"string\",\"description\":"
     "\"present when the query matched nothing: says so; the skills listed are the closest "
     "by name and tags\"}},\"required\":[\"skills\",\"total\","
     "\"generation\"]}",
     1, tools_list_skills, 0, tools_list_narrow},
    {"load_skill", "Load a skill",
     "Load a skill's instructions (or one section, by heading) before acting on it. Also "
     "lists its scripts and files.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"section\":{\"type\":\"string\",\"description\":\"a heading; returns only that "
     "section\"}},"
     "\"required\":[\"name\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"qualified_name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
     "\"section\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
     "\"sections\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"title\":{\"type\":\"string\"},\"level\":{\"type\":\"integer\"}}}},"
     "\"scripts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
     "\"timeout\":{\"type\":\"number\"},\"stall_timeout\":{\"type\":\"number\"}},"
     "\"required\":[\"path\"]}},"
     "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}},"
     "\"required\":[\"path\",\"size\"]}}},"
     "\"required\":[\"name\",\"qualified_name\",\"content\",\"sections\",\"scripts\","
     "\"files\"]}",
     1, tools_load_skill, 0,
     "load one section at a time: call load_skill with section set to one of 'sections'"},
    {"read_skill_file", "Read a skill file",
     "Read a file of a skill by its path, e.g. references/api.md (load_skill lists them).",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"path inside the skill\"},"
     "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,"
     "\"default\":65536}},\"required\":[\"name\",\"path\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
     "\"content\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
     "\"required\":[\"name\",\"path\",\"size\",\"encoding\",\"content\",\"truncated\"]}",
     1, tools_read_skill_file, 0,
     "read less at once: pass a smaller max_bytes"},
    {"skill_server_stats", "Server statistics",
     "Server health: skill count, index problems, calls and latency per tool.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"object\"},"
     "\"index\":{\"type\":\"object\"},\"tools\":{\"type\":\"object\"}},"
     "\"required\":[\"server\",\"index\",\"tools\"]}",
     1, t_stats, 0, NULL},
    {"reload_skills", "Reload skills",
     "Rescan the skills now and report what changed. The server also does this by itself "
     "every few seconds.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"generation_before\":{\"type\":\"integer\"},"
     "\"generation_after\":{\"type\":\"integer\"},"
     "\"added\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"removed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"changed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"errors\":{\"type\":\"array\"},\"duration_ms\":{\"type\":\"number\"}},"
     "\"required\":[\"generation_before\",\"generation_after\",\"added\",\"removed\","
     "\"changed\",\"errors\"]}",
     0, t_reload, 0, NULL},
    {"run_skill_script", "Run a skill script",
     "Run a skill's script (one of the scripts load_skill lists) and get its output; prefer "
     "it to redoing its work. Secrets go in env, never in args. The result's hint says what "
     "to do next.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"script\":{\"type\":\"string\",\"description\":\"path inside the skill, e.g. "
     "scripts/run.py\"},"
     "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
     "\"arguments (no shell)\"},"
     "\"stdin\":{\"type\":\"string\",\"description\":\"standard input\"},"
     "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"seconds; "
     "can only lower the limit\"},"
     "\"stall_timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":"
     "\"seconds of silence before it is stopped; can only lower it\"},"
     "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
     "\"description\":\"extra environment variables (secrets)\"}},"
     "\"required\":[\"name\",\"script\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{"
     "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"failed\",\"stalled\","
     "\"timeout\",\"denied\",\"busy\"]},"
     "\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":\"string\"},"
     "\"limit\":{\"type\":\"string\",\"enum\":[\"cpu\",\"memory\",\"file_size\","
     "\"processes\"]},"
     "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
     "\"stdout_format\":{\"type\":\"string\",\"enum\":[\"json\",\"jsonl\",\"text\"]},"
     "\"stderr_format\":{\"type\":\"string\",\"enum\":[\"json\",\"jsonl\",\"text\"]},"
     "\"duration_ms\":{\"type\":\"number\"},\"timeout\":{\"type\":\"number\"},"
     "\"stall_timeout\":{\"type\":\"number\"},\"silent_for\":{\"type\":\"number\"},"
     "\"truncated\":{\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},"
     "\"stderr_bytes\":{\"type\":\"integer\"},\"utf8_repaired\":{\"type\":\"boolean\"},"
     "\"queued_ms\":{\"type\":\"number\"},\"hint\":{\"type\":\"string\"},"
     "\"request_id\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"}},"
     "\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\",\"duration_ms\","
     "\"timeout\",\"stall_timeout\",\"truncated\",\"hint\",\"request_id\"]}",
     0, tools_run_skill_script, 1, NULL},
};

#define NTOOLS (sizeof table / sizeof table[0])

const char *const *tools_names(size_t *n)
{
    static const char *names[NTOOLS];
    for (size_t i = 0; i < NTOOLS; i++)
        names[i] = table[i].name;
    *n = NTOOLS;
    return names;
}

json_t *tools_list_json(int scripts)
{
    json_t *a = json_array();
    for (size_t i = 0; i < NTOOLS; i++) {
        if (table[i].runs_scripts && !scripts)
            continue;
        json_error_t e;
        json_t *in = json_loads(table[i].input_schema, 0, &e);
        json_t *out = json_loads(table[i].output_schema, 0, &e);
        if (!in || !out) {
            log_error("tool %s: schema does not parse: %s", table[i].name, e.text);
            abort();
        }
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
                         table[i].name, "title", table[i].title, "description",
                         table[i].description, "inputSchema", in, "outputSchema", out,
                         "annotations", "title", table[i].title, "readOnlyHint",
                         table[i].read_only, "destructiveHint", table[i].runs_scripts,
                         "idempotentHint", table[i].read_only, "openWorldHint",
                         table[i].runs_scripts));
    }
    return a;
}

void tools_setup(struct srv *S)
{
    /* A result carries its JSON twice (text block and structuredContent),
     * but a model reads one of them (docs/shaping.md): each copy gets the
     * whole budget. */
    S->budget =
        shape_budget_of(S->cfg.context_tokens, S->cfg.context_share, S->cfg.max_result_chars);
    S->tools_list = tools_list_json(!S->cfg.no_scripts);
    if (S->cfg.enable_tasks) {
        /* a client may run it as a task (2025-11-25 execution.taskSupport) */
        size_t i;
        json_t *t;
        json_array_foreach(S->tools_list, i, t)
            if (!strcmp(json_string_value(json_object_get(t, "name")), "run_skill_script"))
                json_object_set_new(t, "execution", json_pack("{s:s}", "taskSupport", "optional"));
    }
    if (S->cfg.max_result_chars > 48000) {
        /* Claude Code moves results over about 50,000 characters to a file
         * unless the tool declares it allows more. */
        size_t i;
        json_t *t;
        json_array_foreach(S->tools_list, i, t)
            json_object_set_new(t, "_meta",
                                json_pack("{s:I}", "anthropic/maxResultSizeChars",
                                          (json_int_t)S->cfg.max_result_chars));
    }
    for (int modern = 0; modern < 2; modern++) {
        json_t *r = json_pack("{s:O}", "tools", S->tools_list);
        if (modern)
            env_decorate_modern(r, S->ttl_ms);
        S->tools_raw[modern] = json_dumps(r, JSON_COMPACT);
        S->tools_raw_len[modern] = strlen(S->tools_raw[modern]);
        json_decref(r);
    }
}

void tools_cleanup(struct srv *S)
{
    json_decref(S->tools_list);
    free(S->tools_raw[0]);
    free(S->tools_raw[1]);
    S->tools_list = NULL;
    S->tools_raw[0] = S->tools_raw[1] = NULL;
}

/*
 * Renders a CallToolResult as bytes. A success carries the same JSON twice
 * (structuredContent, and serialised as the text block), so it is dumped
 * once and escaped once more by hand instead of dumping a tree that holds
 * it twice.
 */
static char *render_ex(struct tool_out *o, int ok, int modern, size_t *len);

char *tools_render(struct tool_out *o, int rc, int modern, size_t *len)
{
    if (rc == 0)
        return render_ex(o, !o->is_error, modern, len);
    struct buf b;
    buf_init(&b, 0);
    json_decref(o->meta);
    o->meta = NULL;
    if (rc < 0) {
        json_decref(o->structured);
        o->structured = NULL;
        buf_puts(&b, "{\"content\":[{\"type\":\"text\",\"text\":\"");
        buf_json_escape(&b, o->msg, strlen(o->msg));
        buf_puts(&b, "\"}],\"isError\":true");
    }
    if (modern)
        buf_puts(&b, ENV_MODERN_TAIL);
    buf_puts(&b, "}");
    return buf_steal(&b, len);
}

int tools_over_budget(const struct shape_budget *b, const char *s, size_t n)
{
    /* chars never exceed bytes, so a short result needs no counting */
    if (b->max_chars && n > b->max_chars && shape_chars(s, n) > b->max_chars)
        return 1;
    return b->max_tokens && n > b->max_tokens && shape_tokens(s, n) > b->max_tokens;
}

/* A structured result, fitted to o->budget (shaping is the last step before
 * the wire, after the hooks); !ok marks it isError. */
static char *render_ex(struct tool_out *o, int ok, int modern, size_t *len)
{
    struct buf b;
    buf_init(&b, 0);
    char *s1 = o->dumped;
    size_t n1 = o->dumplen;
    o->dumped = NULL;
    if (!s1) {
        if (o->texts) {
            /* printed output: its format is set and, over the budget, it is
             * cut, in one parse of it */
            if (o->budget)
                shape_json_texts(o->structured, o->budget, o->hint, o->texts, o->ntexts);
            else
                shape_set_formats(o->structured, o->texts, o->ntexts);
            s1 = jf_dumps(o->structured, &n1);
        } else {
            s1 = jf_dumps(o->structured, &n1);
            if (s1 && o->budget && tools_over_budget(o->budget, s1, n1) &&
                shape_json(o->structured, o->budget, o->hint)) {
                free(s1);
                s1 = jf_dumps(o->structured, &n1);
            }
        }
    }
    if (!s1) {
        /* nothing to serialise, or a string that is not UTF-8: an error,
         * never a reply that is not JSON */
        free(o->escaped);
        o->escaped = NULL;
        snprintf(o->msg, sizeof o->msg, "The result could not be serialised as JSON (text "
                                        "that is not valid UTF-8).");
        return tools_render(o, -1, modern, len);
    }
    json_decref(o->structured);
    o->structured = NULL;
    /* The text block is the escaped JSON: at least as long, usually not much more. */
    buf_reserve(&b, (o->escaped ? o->esclen : n1 + n1 / 8) + n1 + 128);
    buf_puts(&b, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    if (o->escaped)
        buf_append(&b, o->escaped, o->esclen);
    else
        buf_json_escape(&b, s1, n1);
    free(o->escaped);
    o->escaped = NULL;
    buf_puts(&b, "\"}],\"structuredContent\":");
    buf_append(&b, s1, n1);
    free(s1);
    if (!ok)
        buf_puts(&b, ",\"isError\":true");
    if (o->meta) {
        /* its members join the modern tail's _meta object */
        size_t ml;
        char *m = jf_dumps(o->meta, &ml);
        json_decref(o->meta);
        o->meta = NULL;
        if (modern)
            buf_append(&b, ENV_MODERN_TAIL, sizeof ENV_MODERN_TAIL - 2);
        buf_puts(&b, modern ? "," : ",\"_meta\":{");
        buf_append(&b, m + 1, ml - 1);
        free(m);
    } else if (modern)
        buf_puts(&b, ENV_MODERN_TAIL);
    buf_puts(&b, "}");
    return buf_steal(&b, len);
}

char *tools_render_run(struct srv *S, json_t *result, int ok, double ms, int modern, size_t *len)
{
    size_t t;
    for (t = 0; t < NTOOLS; t++)
        if (table[t].runs_scripts)
            break;
    struct tool_out o = {.structured = result, .budget = &S->budget,
                         .hint = "the script printed more than fits: call it with arguments "
                                 "that make it print less (a filter, a limit, a smaller input)",
                         .texts = tools_run_texts, .ntexts = NRUN_TEXTS};
    if ((o.meta = json_object_get(result, "_meta"))) {    /* redact_run_result's */
        json_incref(o.meta);
        json_object_del(result, "_meta");
    }
    char *bytes = render_ex(&o, ok, modern, len);
    stats_record(&S->stats, t, (uint64_t)(ms * 1e6), !ok);
    return bytes;
}

/* A view's arguments as the object a tree would hold: the same members in
 * the same order. */
static json_t *view_args(const struct rpc_view *v)
{
    json_t *a = json_object();
    for (size_t i = 0; a && i < v->nargs; i++)
        if (json_object_set_new_nocheck(a, v->key[i], json_stringn_nocheck(v->val[i], v->vlen[i])) < 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

int tools_call(struct call *call, const char *name, json_t *args)
{
    struct srv *S = call->S;
    int modern = call->modern;
    size_t t;
    uint64_t t0 = now_ns();
    for (t = 0; t < NTOOLS; t++)
        if (!strcmp(table[t].name, name))
            break;
    if (t == NTOOLS || (table[t].runs_scripts && S->cfg.no_scripts))
        return -1;
    /* A view's arguments: read as they are by load_skill, an object for the
     * others (all of them strings: the tree a parser would have built). */
    const struct rpc_view *pv = table[t].fn == tools_load_skill ? call->pv : NULL;
    json_t *own = NULL;
    if (call->pv && !pv && call->pv->nargs && !(args = own = view_args(call->pv)))
        return -1;
    struct snapshot *snap = call_snapshot(call);
    if (t == 0 && snap->ext && (!args || (json_is_object(args) && !json_object_size(args)))) {
        const struct view_bytes *vb = call->view ? tools_view_list(S, snap, call->view, modern) : NULL;
        if (vb)
            call_raw(call, vb->data, vb->len, NULL);
        else
            call_raw(call, snap->ext->list[modern ? 1 : 0], snap->ext->len[modern ? 1 : 0], NULL);
        json_decref(own);
        stats_record(&S->stats, t, now_ns() - t0, 0);
        return 0;
    }
    struct tool_ctx c = {.call = call, .pv = pv};
    struct tool_out o = {.budget = &S->budget, .hint = table[t].narrow};
    if (!args && !pv)
        args = own = json_object();
    int rc;
    if (!pv && !json_is_object(args))
        rc = tools_fail(&o, "Tool arguments must be a JSON object.");
    else
        rc = table[t].fn(&c, args, &o);
    json_decref(own);
    if (o.skill)
        stats_skill(&S->stats, o.skill, STATS_USE_CALL, rc < 0);
    if (rc == 0 && o.plan) {
        call_run(call, o.plan);     /* stats are recorded when it ends */
        return 0;
    }
    if (rc == 0 && o.raw) {
        call_raw(call, o.raw, o.rawlen, o.raw_owned);
    } else {
        size_t len;
        char *owned = tools_render(&o, rc, modern, &len);
        call_raw(call, owned, len, owned);
    }
    stats_record(&S->stats, t, now_ns() - t0, rc < 0);
    return 0;
}
