/*
 * hooks.h - the chain around one script: global pre, skill pre, script,
 * skill post, global post. Hooks are ordinary scripts run by the same
 * runner; they speak JSON on stdin/stdout (docs/hooks.md).
 *
 * A plan is built on the HTTP thread from the request's snapshot (which
 * hooks exist was found when the snapshot was built: no stat here), then
 * started; every later step runs on the loop thread, and the done callback
 * runs there once with the final result.
 */
#ifndef SKILL_HOOKS_H
#define SKILL_HOOKS_H

#include <jansson.h>

#include "runner.h"
#include "skills.h"
#include "srv.h"

struct hook_plan;

/* result: new reference, a run_skill_script result object; ok: status ok. */
typedef void (*hook_done_fn)(json_t *result, int ok, double ms, void *arg);

/*
 * Takes ownership of job (a prepared script). args are the call's
 * arguments (borrowed; what hooks see is copied). client (may be NULL) is
 * the authenticated client: the hooks' `caller`, and the owner of the
 * per-client script slot the call took, given back when the chain ends.
 * client_info (borrowed, may be NULL) is the request's clientInfo; hooks see
 * caller = {"client": ..., "clientInfo": ...} with what is known, or null.
 */
struct hook_plan *hook_plan_new(struct srv *S, const struct snapshot *snap, const struct skill *k,
                                struct run_job *job, json_t *args, const char *client,
                                json_t *client_info);
void hook_start(struct hook_plan *p, hook_done_fn done, void *arg);
/* Streams the script's stderr lines to fn (loop thread) while it runs. */
void hook_set_stream(struct hook_plan *p, void (*fn)(const char *line, size_t len, void *arg),
                     void *arg);
/* Marks the script with the call's JSON-RPC id (serialised), so that a
 * notifications/cancelled from the same client can stop it. */
void hook_set_rpc_id(struct hook_plan *p, const char *rpc_id);

/* The hooks' `mode`: "sync" (the default) or "task". */
void hook_set_mode(struct hook_plan *p, const char *mode);

/* The call's request id (for run_cancel); valid until the done callback. */
const char *hook_request_id(const struct hook_plan *p);
/* The qualified name of the skill whose script the plan runs. */
const char *hook_skill(const struct hook_plan *p);

/* Frees a plan that was never started. */
void hook_plan_free(struct hook_plan *p);

/* Writes the provenance line of this run (lock_audit) when it ends; with
 * the manifest digest hashed before it started and its approval time. */
void hook_set_audit(struct hook_plan *p, const char *digest, const char *approved_at);

#endif
