/*
 * tools_run.c - run_skill_script's checks before anything runs: the caller
 * may run the skill, the lock approves what is on disk, the script and its
 * arguments (script.c), the client's own cap; then the hook plan whose
 * answer comes later.
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

/* ---- run_skill_script ------------------------------------------------------ */

int tools_run_skill_script(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {"name",    "script",        "args", "stdin",
                                       "timeout", "stall_timeout", "env",  NULL};
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    struct skill *live = tools_need_skill(c, args, o);
    if (live && !view_runs(c->call->view, c->idx))
        return tools_fail(o, "You may not run the scripts of skill '%s': the server's access rules let "
                       "you read it but not run it. Nothing ran; follow its instructions "
                       "without the scripts, or ask the operator for run access.",
                    live->qname);
    struct skill *k = tools_gated(c, live, o);
    if (!k)
        return -1;
    /* What runs is hashed now: the audit line names it, and a lock refuses
     * a tree edited since the snapshot judged it. */
    struct lock_manifest m = {0};
    const char *approved_at = NULL;
    if (c->call->S->lock) {
        struct err mwhy;
        const struct skill_gate *g = skills_gate_of(c->call->snap, live);
        const struct lock_entry *a = g ? g->approved : NULL;
        if (lock_manifest_of(k, &m, &mwhy) < 0 && lock_active(c->call->S->lock))
            return tools_fail(o, "Skill '%s' cannot be run: %s. Nothing ran.", k->qname,
                              mwhy.msg);
        if (lock_active(c->call->S->lock) && (!a || strcmp(a->digest, m.digest))) {
            lock_manifest_cleanup(&m);
            return tools_fail(o, "Skill '%s' changed on disk since it was checked against the lock "
                           "of approved versions; nothing ran. Call reload_skills, then "
                           "list_skills shows whether it is quarantined.",
                        k->qname);
        }
        approved_at = a ? a->at : NULL;
    }
    struct err why;
    struct run_job *job = script_prepare(c->call->S->scripts, &c->call->S->cfg, k, args, &why);
    if (!job) {
        lock_manifest_cleanup(&m);
        err_copy(o->msg, sizeof o->msg, &why);
        return -1;
    }
    /* One client must not take every slot: its own cap comes first. */
    if (c->call->S->auth && c->call->client && !auth_script_take(c->call->S->auth, c->call->client)) {
        o->structured = json_pack(
            "{s:s, s:n, s:s, s:s, s:f, s:f, s:f, s:b, s:i, s:i, s:s, s:s}", "status", "busy",
            "exit_code", "stdout", "", "stderr", "", "duration_ms", 0.0, "timeout",
            job->timeout_s, "stall_timeout", job->stall_s, "truncated", 0, "stdout_bytes", 0,
            "stderr_bytes", 0, "hint",
            "This client already runs as many scripts as it may at once "
            "(--max-scripts-per-client). Wait for one to finish, then call again; nothing ran.",
            "request_id", job->request_id);
        o->is_error = 1;
        o->texts = tools_run_texts;
        o->ntexts = NRUN_TEXTS;
        run_job_free(job);
        lock_manifest_cleanup(&m);
        return 0;
    }
    /* Which hooks exist was found when the snapshot was built. */
    o->plan = hook_plan_new(c->call->S, c->call->snap, k, job, args, c->call->client, c->call->client_info);
    if (c->call->S->lock)
        hook_set_audit(o->plan, m.digest, approved_at);
    lock_manifest_cleanup(&m);
    return 0;
}
