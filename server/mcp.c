/*
 * mcp.c - the method table. One row per method: which eras serve it and
 * whether its result is cacheable (ttlMs/cacheScope on 2026-07-28). The
 * legacy era is stateless unless --stateful: initialize negotiates a version
 * and nothing is remembered, so any worker can answer any request (with
 * --stateful, rpc.c keeps sessions and their logging level, session.c).
 */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "envelope.h"
#include "hooks.h"
#include "json.h"
#include "proto.h"
#include "resources.h"
#include "runner.h"
#include "script.h"
#include "session.h"
#include "skillsext.h"
#include "tasks.h"
#include "tools.h"
#include "util.h"

#define ERA_LEGACY 1
#define ERA_MODERN 2
/* subscriptions/listen is served (2026-07-28) */
#define MCP_MODERN_LISTEN 1

json_t *mcp_capabilities(int list_changed, int subscribe)
{
    /* listChanged/subscribe only where a stream can carry them (docs/deploy.md):
     * the tools never change while running. */
    return json_pack("{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}, s:{s:{s:b}}}", "tools",
                     "listChanged", 0, "resources", "listChanged", list_changed, "subscribe",
                     subscribe, "prompts", "listChanged", list_changed, "logging", "extensions",
                     "io.modelcontextprotocol/skills", "directoryRead", 1);
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", SERVER_NAME, "title", SERVER_NAME " skill library",
                     "version", SKILL_VERSION);
}

/* ---- methods ------------------------------------------------------------- */

static int m_initialize(struct call *c)
{
    const char *want = json_string_value(json_object_get(c->params, "protocolVersion"));
    if (!want)
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "initialize needs params.protocolVersion (a string)");
    /* an unknown version is answered with the newest this era negotiates */
    const char *v = proto_supports(want, PROTO_NEGOTIATE);
    size_t n;
    const struct proto_version *pv = proto_versions(&n);
    for (size_t i = 0; !v && i < n; i++)
        if (pv[i].use & PROTO_NEGOTIATE)
            v = pv[i].name;
    /* a --stateful session's GET stream carries both, and so does the one
     * stdio session */
    int live = c->S->sessions != NULL || c->S->cfg.stdio;
    json_t *caps = mcp_capabilities(live, live);
    tasks_capabilities(c->S, caps, 0);
    call_result(c, json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", v, "capabilities", caps,
                             "serverInfo", server_info(), "instructions", c->S->instructions));
    return 0;
}

static int m_empty(struct call *c)
{
    call_result(c, json_object());
    return 0;
}

/* Kept per session with --stateful (it decides whether script stderr is
 * sent as notifications/message); without sessions there is nowhere to keep
 * it, so it is accepted and nothing is logged to the client. */
static int m_set_level(struct call *c)
{
    int level = session_level_of(json_string_value(json_object_get(c->params, "level")));
    if (level != SESSION_LEVEL_NONE) {
        if (c->session)
            session_set_level(c->sessions, c->session, c->client, level);
        return m_empty(c);
    }
    return call_error(c, RPC_INVALID_PARAMS, NULL,
                     "params.level must be one of debug, info, notice, warning, error, "
                     "critical, alert, emergency");
}

static int m_discover(struct call *c)
{
    call_cacheable(c, CALL_CACHE_MODERN);
    int live = c->modern ? MCP_MODERN_LISTEN : c->S->sessions != NULL || c->S->cfg.stdio;
    json_t *caps = mcp_capabilities(live, live);
    tasks_capabilities(c->S, caps, 1);
    /* oldest first */
    json_t *versions = json_array();
    size_t n;
    const struct proto_version *pv = proto_versions(&n);
    for (size_t i = n; i-- > 0;)
        if (pv[i].use & (PROTO_MODERN | PROTO_NEGOTIATE))
            json_array_append_new(versions, json_string(pv[i].name));
    call_result(c, json_pack("{s:o, s:o, s:s}", "supportedVersions", versions, "capabilities",
                             caps, "instructions", c->S->instructions));
    return 0;
}

/* A cursor on a list this server answers in one page is always stale. */
static int no_cursor(struct call *c)
{
    json_t *cur = json_object_get(c->params, "cursor");
    if (cur && !json_is_null(cur))
        return call_error(c, RPC_INVALID_PARAMS, NULL,
                         "invalid cursor: this list has a single page");
    return 0;
}

static int m_tools_list(struct call *c)
{
    if (no_cursor(c) < 0)
        return -1;
    /* Rendered once at start-up: the list never changes while running. */
    call_raw(c, c->S->tools_raw[c->modern ? 1 : 0], c->S->tools_raw_len[c->modern ? 1 : 0],
             NULL);
    return 0;
}

/* tools/call read as a view: a known tool's name and string arguments, no
 * task and no _meta (rpc.c), so only what m_tools_call does with those. */
static int m_tools_call_view(struct call *c, const struct rpc_view *v)
{
    x_strlcpy(c->tool, v->name, sizeof c->tool);
    utf8_sanitize(c->tool);
    const char *sk = call_view_arg(v, "name", NULL);
    x_strlcpy(c->skill, sk ? sk : "", sizeof c->skill);
    utf8_sanitize(c->skill);
    int task = tasks_wanted(c, v->name);
    if (task < 0)
        return -1;
    if (tools_call(c, v->name, NULL) < 0)
        return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:s}", "name", v->name),
                         "Unknown tool: %.128s", v->name);
    if (task)
        return tasks_create(c);
    return 0;
}

static int m_tools_call(struct call *c)
{
    if (c->pv)
        return m_tools_call_view(c, c->pv);
    json_t *name = json_object_get(c->params, "name");
    json_t *args = json_object_get(c->params, "arguments");
    /* For the request log, the metrics and the access log, whatever comes
     * of the call (nothing reads them before it ends). */
    const char *tn = json_string_value(name);
    x_strlcpy(c->tool, tn ? tn : "", sizeof c->tool);
    utf8_sanitize(c->tool);
    const char *sk = json_string_value(json_object_get(args, "name"));
    x_strlcpy(c->skill, sk ? sk : "", sizeof c->skill);
    utf8_sanitize(c->skill);
    if (!json_is_string(name))
        return call_error(c, RPC_INVALID_PARAMS, NULL, "tools/call needs params.name (a string)");
    if (strlen(json_string_value(name)) != json_string_length(name))
        return call_error(c, RPC_INVALID_PARAMS, NULL, "Unknown tool: the name contains a NUL byte");
    if (args && !json_is_null(args) && !json_is_object(args))
        return call_error(c, RPC_INVALID_PARAMS, NULL, "params.arguments must be an object");
    if (json_is_null(args))
        args = NULL;
    /* The client's clientInfo, when the request carries it (2026-07-28 _meta;
     * a legacy client sends it only with initialize): hooks see it as caller. */
    json_t *info = json_object_get(json_object_get(c->params, "_meta"),
                                   "io.modelcontextprotocol/clientInfo");
    int task = tasks_wanted(c, json_string_value(name));
    if (task < 0)
        return -1;
    c->client_info = json_is_object(info) ? info : NULL;
    if (tools_call(c, json_string_value(name), args) < 0)
        return call_error(c, RPC_INVALID_PARAMS, json_pack("{s:O}", "name", name),
                         "Unknown tool: %.128s", json_string_value(name));
    if (task)
        return tasks_create(c);
    return 0;
}

static int m_res_list(struct call *c) { return res_list(c); }
static int m_res_templates(struct call *c) { return res_templates(c); }
static int m_res_read(struct call *c) { return res_read(c); }
static int m_res_subscribe(struct call *c) { return res_subscribe(c, 1); }
static int m_res_unsubscribe(struct call *c) { return res_subscribe(c, 0); }
static int m_listen(struct call *c) { return res_listen(c); }

struct method {
    const char *name;
    int (*fn)(struct call *c);
    int eras;
};

static const struct method methods[] = {
    {"initialize", m_initialize, ERA_LEGACY},
    {"ping", m_empty, ERA_LEGACY},
    {"logging/setLevel", m_set_level, ERA_LEGACY},
    {"server/discover", m_discover, ERA_LEGACY | ERA_MODERN},
    {"tools/list", m_tools_list, ERA_LEGACY | ERA_MODERN},
    {"tools/call", m_tools_call, ERA_LEGACY | ERA_MODERN},
    {"resources/list", m_res_list, ERA_LEGACY | ERA_MODERN},
    {"resources/templates/list", m_res_templates, ERA_LEGACY | ERA_MODERN},
    {"resources/read", m_res_read, ERA_LEGACY | ERA_MODERN},
    {"resources/subscribe", m_res_subscribe, ERA_LEGACY},
    {"resources/unsubscribe", m_res_unsubscribe, ERA_LEGACY},
    {"subscriptions/listen", m_listen, ERA_MODERN},
    {"prompts/list", skillsext_prompts_list, ERA_LEGACY | ERA_MODERN},
    {"prompts/get", skillsext_prompts_get, ERA_LEGACY | ERA_MODERN},
    {"skills/list", skillsext_list, ERA_LEGACY | ERA_MODERN},
    {"skills/get", skillsext_get, ERA_LEGACY | ERA_MODERN},
    {"resources/directory/read", skillsext_dir_read, ERA_LEGACY | ERA_MODERN},
    {"tasks/get", tasks_m_get, ERA_LEGACY | ERA_MODERN},
    {"tasks/result", tasks_m_result, ERA_LEGACY},
    {"tasks/list", tasks_m_list, ERA_LEGACY},
    {"tasks/cancel", tasks_m_cancel, ERA_LEGACY | ERA_MODERN},
    {"tasks/update", tasks_m_update, ERA_MODERN},
};

int mcp_dispatch(struct call *c, const char *method)
{
    int era = c->modern ? ERA_MODERN : ERA_LEGACY;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        /* the first byte first: a call of strcmp per row was most of this */
        if (methods[i].name[0] != method[0] || strcmp(methods[i].name, method))
            continue;
        if (!(methods[i].eras & era))
            return -1;
        c->method = methods[i].name;
        if (c->params && !json_is_object(c->params)) {
            call_error(c, RPC_INVALID_PARAMS, NULL, "params must be an object");
            return 0;
        }
        methods[i].fn(c);
        return 0;
    }
    return -1;
}

void mcp_notify(struct call *c, const char *method)
{
    /* Requests are matched by id and authenticated client: anonymous
     * clients can only cancel calls made without a token (docs/scripts.md). */
    if (strcmp(method, "notifications/cancelled") || !c->S->runner)
        return;
    json_t *rid = json_object_get(c->params, "requestId");
    if (json_is_string(rid) || json_is_integer(rid)) {
        char *ids = jf_dumps(rid, NULL);
        run_cancel_rpc(c->S->runner, c->client, ids);
        free(ids);
    }
}

/* ---- pending calls ----------------------------------------------------------- */

static void push_note(struct call *c, json_t *note)
{
    char *j = json_dumps(note, JSON_COMPACT);
    json_decref(note);
    if (j)
        call_event(c, j, strlen(j));
    free(j);
}

/* Loop thread: one stderr line of the running script, as the notifications
 * the request asked for. */
static void run_line(const char *line, size_t len, void *arg)
{
    struct call *c = arg;
    size_t n;
    int changed;
    char *text = script_utf8_repair(line, len, &n, &changed);
    c->progress += 1;
    if (c->progress_token)
        push_note(c, env_notification("notifications/progress",
                                      json_pack("{s:O, s:f, s:s%}", "progressToken",
                                                c->progress_token, "progress", c->progress,
                                                "message", text, n)));
    if (c->log_stream)
        push_note(c, env_notification("notifications/message",
                                      json_pack("{s:s, s:s, s:s%}", "level", "info", "logger",
                                                "run_skill_script", "data", text, n)));
    free(text);
}

/* Loop thread (or the caller's when shutting down): the script and its
 * hooks ended; the answer is rendered for the call's era and sent. */
static void run_done(json_t *result, int ok, double ms, void *arg)
{
    struct call *c = arg;
    size_t len;
    char *bytes = tools_render_run(c->S, result, ok, ms, c->modern, &len);
    call_raw(c, bytes, len, bytes);
    call_finish(c);
    call_unref(c);
}

void mcp_start(struct call *c)
{
    struct hook_plan *p;
    struct tasks_wait *w;
    if ((p = call_take_run(c))) {
        /* the chain owns it now */
        char *ids = jf_dumps(c->id, NULL);
        hook_set_rpc_id(p, ids);
        free(ids);
        snprintf(c->run_id, sizeof c->run_id, "%s", hook_request_id(p));
        if (call_has_events(c))
            hook_set_stream(p, run_line, c);
        call_ref(c);
        hook_start(p, run_done, c);
    } else if ((w = call_take_wait(c))) {
        call_ref(c);
        tasks_wait_start(w, c);
    }
}

void mcp_abandon(struct call *c)
{
    /* a closed stream cancels the script it was waiting for */
    if (!call_detach(c) && c->run_id[0] && c->S->runner)
        run_cancel(c->S->runner, c->run_id);
}

void mcp_hangup(struct call *c)
{
    if (c->run_id[0] && c->S->runner)
        run_cancel(c->S->runner, c->run_id);
}
