/*
 * mcp.c - the method table. One row per method: which eras serve it and
 * whether its result is cacheable (ttlMs/cacheScope on 2026-07-28). The
 * legacy era is stateless unless --stateful: initialize negotiates a version
 * and nothing is remembered, so any worker can answer any request (with
 * --stateful, rpc.c keeps sessions and their logging level, session.c).
 */
#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hooks.h"
#include "rpc.h"
#include "tasks.h"
#include "session.h"
#include "tools.h"
#include "util.h"

#define ERA_LEGACY 1
#define ERA_MODERN 2

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18"};

struct snapshot *mcp_snapshot(struct mcp_call *c)
{
    if (!c->snap)
        c->snap = skills_acquire(c->S->skills);
    return c->snap;
}

int mcp_error(struct mcp_call *c, int code, json_t *data, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    utf8_sanitize(c->errmsg);   /* "%.128s" of caller input may split a character */
    c->err = code;
    json_decref(c->errdata);
    c->errdata = data;
    return -1;
}

void mcp_call_done(struct mcp_call *c)
{
    skills_release(c->snap);
    c->snap = NULL;
    json_decref(c->result);
    json_decref(c->errdata);
    free(c->raw_owned);
    free(c->raw_response);
    c->raw_response = NULL;
    hook_plan_free(c->plan);
    c->plan = NULL;
    c->result = c->errdata = NULL;
    c->raw_owned = NULL;
}

json_t *mcp_capabilities(void)
{
    return json_pack("{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}, s:{s:{s:b}}}", "tools",
                     "listChanged", 0, "resources", "listChanged", 0, "subscribe", 0, "prompts",
                     "listChanged", 0, "logging", "extensions", "io.modelcontextprotocol/skills",
                     "directoryRead", 1);
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "skill-mcp", "title", "skill-mcp skill library",
                     "version", SKILL_VERSION);
}

/* ---- methods ------------------------------------------------------------- */

static int m_initialize(struct mcp_call *c)
{
    const char *want = json_string_value(json_object_get(c->params, "protocolVersion"));
    const char *v = legacy_versions[0];
    if (!want)
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "initialize needs params.protocolVersion (a string)");
    for (size_t i = 0; i < sizeof legacy_versions / sizeof *legacy_versions; i++)
        if (!strcmp(want, legacy_versions[i]))
            v = legacy_versions[i];
    json_t *caps = mcp_capabilities();
    tasks_capabilities(c->S, caps, 0);
    c->result = json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", v, "capabilities", caps,
                          "serverInfo", server_info(), "instructions", c->S->instructions);
    return 0;
}

static int m_empty(struct mcp_call *c)
{
    c->result = json_object();
    return 0;
}

/* Kept per session with --stateful (it decides whether script stderr is
 * sent as notifications/message); without sessions there is nowhere to keep
 * it, so it is accepted and nothing is logged to the client. */
static int m_set_level(struct mcp_call *c)
{
    int level = session_level_of(json_string_value(json_object_get(c->params, "level")));
    if (level != SESSION_LEVEL_NONE) {
        if (c->session)
            session_set_level(c->S->sessions, c->session, c->client, level);
        return m_empty(c);
    }
    return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                     "params.level must be one of debug, info, notice, warning, error, "
                     "critical, alert, emergency");
}

static int m_discover(struct mcp_call *c)
{
    c->cacheable = 1;
    json_t *caps = mcp_capabilities();
    tasks_capabilities(c->S, caps, 1);
    c->result = json_pack("{s:[s,s,s], s:o, s:s}", "supportedVersions", legacy_versions[1],
                          legacy_versions[0], MCP_MODERN_VERSION, "capabilities", caps,
                          "instructions", c->S->instructions);
    return 0;
}

/* A cursor on a list this server answers in one page is always stale. */
static int no_cursor(struct mcp_call *c)
{
    json_t *cur = json_object_get(c->params, "cursor");
    if (cur && !json_is_null(cur))
        return mcp_error(c, RPC_INVALID_PARAMS, NULL,
                         "invalid cursor: this list has a single page");
    return 0;
}

static int m_tools_list(struct mcp_call *c)
{
    if (no_cursor(c) < 0)
        return -1;
    /* Rendered once at start-up: the list never changes while running. */
    c->raw = c->S->tools_raw[c->modern ? 1 : 0];
    c->rawlen = c->S->tools_raw_len[c->modern ? 1 : 0];
    return 0;
}

static int m_tools_call(struct mcp_call *c)
{
    json_t *name = json_object_get(c->params, "name");
    json_t *args = json_object_get(c->params, "arguments");
    if (!json_is_string(name))
        return mcp_error(c, RPC_INVALID_PARAMS, NULL, "tools/call needs params.name (a string)");
    if (strlen(json_string_value(name)) != json_string_length(name))
        return mcp_error(c, RPC_INVALID_PARAMS, NULL, "Unknown tool: the name contains a NUL byte");
    if (args && !json_is_null(args) && !json_is_object(args))
        return mcp_error(c, RPC_INVALID_PARAMS, NULL, "params.arguments must be an object");
    if (json_is_null(args))
        args = NULL;
    /* The client's clientInfo, when the request carries it (2026-07-28 _meta;
     * a legacy client sends it only with initialize): hooks see it as caller. */
    json_t *info = json_object_get(json_object_get(c->params, "_meta"),
                                   "io.modelcontextprotocol/clientInfo");
    int task = tasks_wanted(c, json_string_value(name));
    if (task < 0)
        return -1;
    if (tools_call(c->S, mcp_snapshot(c), json_string_value(name), args, c->modern, c->client,
                   json_is_object(info) ? info : NULL, &c->raw_owned, &c->raw, &c->rawlen,
                   &c->plan) < 0)
        return mcp_error(c, RPC_INVALID_PARAMS, json_pack("{s:O}", "name", name),
                         "Unknown tool: %.128s", json_string_value(name));
    if (task)
        return tasks_create(c);
    return 0;
}

static int m_res_list(struct mcp_call *c) { return res_list(c); }
static int m_res_templates(struct mcp_call *c) { return res_templates(c); }
static int m_res_read(struct mcp_call *c) { return res_read(c); }

struct method {
    const char *name;
    int (*fn)(struct mcp_call *c);
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

int mcp_dispatch(struct mcp_call *c, const char *method)
{
    int era = c->modern ? ERA_MODERN : ERA_LEGACY;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        if (strcmp(methods[i].name, method))
            continue;
        if (!(methods[i].eras & era))
            return -1;
        c->method = methods[i].name;
        if (c->params && !json_is_object(c->params)) {
            mcp_error(c, RPC_INVALID_PARAMS, NULL, "params must be an object");
            return 0;
        }
        methods[i].fn(c);
        return 0;
    }
    return -1;
}
