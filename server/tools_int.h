/*
 * tools_int.h - what the files of the tools module share: a handler's
 * context and output, the argument checks every handler uses, rendering a
 * CallToolResult, and the handlers the table names. Every other module
 * uses tools.h.
 */
#ifndef SKILL_TOOLS_INT_H
#define SKILL_TOOLS_INT_H

#include <jansson.h>
#include <stddef.h>

#include "shape.h"
#include "skills.h"
#include "call.h"
#include "srv.h"

#define LIST_DEFAULT_LIMIT 500  /* the whole library, as far as the budget goes */

/* What a handler produced: a structured result or a message (isError). */
struct tool_out {
    json_t *structured;
    const struct shape_budget *budget;  /* fit the result to this (NULL: as is) */
    const char *hint;       /* how to narrow the call, when it had to be cut */
    const struct shape_text *texts; /* members holding printed output, cut as JSON when
                                       they are JSON (shape_json_texts) */
    size_t ntexts;
    const char *raw;        /* or a result rendered ahead (borrowed, or raw_owned) */
    size_t rawlen;
    char *raw_owned;        /* raw when it is this call's to free, else NULL */
    char *dumped;           /* or the structured result already serialised, known to
                               fit the budget (owned; render_ex wraps it as is) */
    size_t dumplen;
    char *escaped;          /* with dumped: dumped escaped for the text block, or NULL */
    size_t esclen;
    struct hook_plan *plan; /* or a script to run: the answer comes later */
    int is_error;           /* a structured result that is still an error (busy) */
    const char *skill;      /* the skill a load/read call resolved to, for per-skill stats */
    json_t *meta;           /* the result's _meta (owned), or NULL */
    char msg[1024];
};

/* A handler's context: the call (its server, snapshot, view, era, client
 * and clientInfo, read where they are kept) and what the handler found. */
struct tool_ctx {
    const struct call *call;    /* its snapshot taken (call_snapshot) */
    size_t idx;             /* need_skill: the entry's index in the snapshot */
    const struct rpc_view *pv;  /* load_skill: the arguments read as a view (no args
                                   object is built), or NULL: args holds them */
};

typedef int (*tool_fn)(struct tool_ctx *c, json_t *args, struct tool_out *o);

/* A script's output that is JSON is cut as JSON; its own _truncated says
 * how to ask for less (the options the bundled rest-client takes). */
#define NRUN_TEXTS 2
extern const struct shape_text tools_run_texts[NRUN_TEXTS];

/* Rendered once per snapshot (tools_ext_build), read by every request. */
struct snapshot_ext {
    char *list[2];          /* [legacy, modern] default list_skills CallToolResult bytes */
    size_t len[2];
    struct rcache_pages *pages; /* other list_skills pages, kept from their second ask */
};

/* How to ask list_skills for less, when a page had to be cut. */
extern const char tools_list_narrow[];

/* o->msg gets the message for the model (isError); returns -1. */
int tools_fail(struct tool_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks that args has only the given keys; the first stranger is reported. */
int tools_only_keys(json_t *args, struct tool_out *o, const char *const *keys);
/* The same for the arguments of a view. */
int tools_view_only_keys(const struct rpc_view *v, struct tool_out *o, const char *const *keys);
/* Optional arguments; -1 (with o set) when of the wrong type or range. */
int tools_opt_str(json_t *args, const char *key, const char **out, size_t *len,
                  struct tool_out *o);
int tools_opt_int(json_t *args, const char *key, long lo, long hi, long dflt, long *out,
                  struct tool_out *o);
/* The skill the name argument names (c->idx its index), or NULL with o set. */
struct skill *tools_need_skill(struct tool_ctx *c, json_t *args, struct tool_out *o);
/* The same for a name already read (NULL: none given). */
struct skill *tools_need_skill_named(struct tool_ctx *c, const char *name, size_t len,
                                     struct tool_out *o);
/* The entry a call may use under the lock, or NULL with o set. */
struct skill *tools_gated(struct tool_ctx *c, struct skill *k, struct tool_out *o);

/* A CallToolResult as bytes (rc < 0: o->msg as isError). */
char *tools_render(struct tool_out *o, int rc, int modern, size_t *len);
/* Is s[0..n) over budget b? */
int tools_over_budget(const struct shape_budget *b, const char *s, size_t n);

/* The default list_skills reply as the caller of view v sees it. */
const struct view_bytes *tools_view_list(struct srv *S, const struct snapshot *s,
                                         const struct view *v, int modern);

/* The handlers of the table. */
int tools_list_skills(struct tool_ctx *c, json_t *args, struct tool_out *o);
int tools_load_skill(struct tool_ctx *c, json_t *args, struct tool_out *o);
int tools_read_skill_file(struct tool_ctx *c, json_t *args, struct tool_out *o);
int tools_run_skill_script(struct tool_ctx *c, json_t *args, struct tool_out *o);

#endif
