/*
 * hooks.c - pre/post hooks around a script.
 *
 * Order: global pre, skill pre, script, skill post, global post. The org
 * policy (global pre) rejects early and cheaply; the org audit (global post)
 * sees what actually goes out, after the skill's own post hook. A denial
 * stops the chain at once.
 *
 * pre:  stdin {skill, script, args, mode, caller, request_id, env_keys}.
 *       exit 0 allows; stdout may be {"env": {...}, "args": [...], "note": "..."}.
 *       non-zero denies; the reason is {"reason": ...} on stdout, or stderr.
 * post: stdin the same plus {"result": {...}}.
 *       exit 0 passes the result on, or changes it with {"result": {...}}
 *       (fields given replace the script's); non-zero fails the call, and
 *       the script's output is withheld (a redaction hook that breaks must
 *       not let the unredacted output through).
 * Anything malformed (not JSON, wrong types, too large) fails the call with
 * a message naming the hook; a hook that hangs is stopped like a script.
 */
#include "hooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "script.h"
#include "lock.h"
#include "redact.h"
#include "util.h"

enum { ST_GLOBAL_PRE, ST_SKILL_PRE, ST_SCRIPT, ST_SKILL_POST, ST_GLOBAL_POST, ST_DONE };

struct hook_plan {
    struct srv *S;
    struct run_job *script;     /* owned until it has run */
    char *path[5];              /* hook per stage (NULL: none); [ST_SCRIPT] unused */
    char *cwd[5];
    json_t *input;              /* what every hook reads */
    json_t *result;             /* the script's result, once it ran */
    int ok;
    char note[1024];
    int stage;
    uint64_t t0;
    char skill[300], skill_dir[4096], request_id[40];
    char client[80];        /* holds one of this client's script slots, when set */
    double timeout_s, stall_s;
    hook_done_fn done;
    void *arg;
    int audit;                  /* write the audit line when the call ends */
    char digest[MANIFEST_DIGEST_LEN + 1], approved_at[LOCK_TIME_LEN + 1];
    struct redact_env *renv;    /* the env values given to the script, redacted from its output */
    struct redact_stream *stream;   /* stderr on its way out while the script runs */
    void (*line_fn)(const char *line, size_t len, void *arg);
    void *line_arg;
    const char *limit;          /* the result's "limit" when a hook failed on one, or NULL */
};

static const char *const stage_name[] = {"global pre", "skill pre", "script", "skill post",
                                         "global post"};

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
}

/* What hooks know of the caller: {"client", "clientInfo"} as far as known. */
static json_t *caller_of(const char *client, json_t *client_info)
{
    if (!client && !client_info)
        return json_null();
    json_t *c = json_object();
    if (client)
        json_object_set_new(c, "client", json_string(client));
    if (client_info)
        json_object_set_new(c, "clientInfo", json_deep_copy(client_info));
    return c;
}

struct hook_plan *hook_plan_new(struct srv *S, const struct snapshot *snap, const struct skill *k,
                                struct run_job *job, json_t *args, const char *client,
                                json_t *client_info)
{
    char kdir[SKILL_DIR_MAX];
    struct hook_plan *p = xcalloc(1, sizeof *p);
    if (client)
        snprintf(p->client, sizeof p->client, "%s", client);
    p->S = S;
    p->script = job;
    snprintf(p->skill, sizeof p->skill, "%s", k->qname);
    const char *dir = skills_dir(k, kdir);
    snprintf(p->skill_dir, sizeof p->skill_dir, "%s", dir);
    snprintf(p->request_id, sizeof p->request_id, "%s", job->request_id);
    p->timeout_s = job->timeout_s;
    p->stall_s = job->stall_s;
    const char *paths[5] = {snap->hook_pre, k->hooks ? k->hooks->pre : NULL, NULL,
                            k->hooks ? k->hooks->post : NULL, snap->hook_post};
    for (int i = 0; i < 5; i++) {
        if (!paths[i])
            continue;
        p->path[i] = xstrdup(paths[i]);
        /* skill hooks run in the skill folder, global ones in theirs */
        p->cwd[i] = (i == ST_SKILL_PRE || i == ST_SKILL_POST) ? xstrdup(dir) : dir_of(paths[i]);
    }
    json_t *env_keys = json_array();
    json_t *env = json_object_get(args, "env");
    const char *name;
    json_t *v;
    if (json_is_object(env))
        json_object_foreach(env, name, v) json_array_append_new(env_keys, json_string(name));
    json_t *a = json_object_get(args, "args");
    p->input = json_pack("{s:s, s:s, s:o, s:s, s:o, s:s, s:o}", "skill", k->qname, "script",
                         job->script, "args", json_is_array(a) ? json_deep_copy(a) : json_array(),
                         "mode", "sync", "caller", caller_of(client, client_info),
                         "request_id", job->request_id, "env_keys", env_keys);
    return p;
}

void hook_plan_free(struct hook_plan *p)
{
    if (!p)
        return;
    if (p->client[0])
        auth_script_give(p->S->auth, p->client);
    run_job_free(p->script);
    for (int i = 0; i < 5; i++) {
        free(p->path[i]);
        free(p->cwd[i]);
    }
    json_decref(p->input);
    json_decref(p->result);
    redact_stream_free(p->stream);
    redact_env_free(p->renv);
    free(p);
}

/* ---- results the chain makes itself -------------------------------------- */

/* A result for a call whose script did not run or whose output is withheld. */
static json_t *synthetic(struct hook_plan *p, const char *status, const char *hint)
{
    return json_pack("{s:s, s:n, s:s, s:s, s:f, s:f, s:f, s:b, s:i, s:i, s:s, s:s}", "status",
                     status, "exit_code", "stdout", "", "stderr", "", "duration_ms",
                     (double)(now_ns() - p->t0) / 1e6, "timeout", p->timeout_s,
                     "stall_timeout", p->stall_s, "truncated", 0, "stdout_bytes", 0,
                     "stderr_bytes", 0, "hint", hint, "request_id", p->request_id);
}

void hook_set_audit(struct hook_plan *p, const char *digest, const char *approved_at)
{
    p->audit = 1;
    snprintf(p->digest, sizeof p->digest, "%s", digest ? digest : "");
    snprintf(p->approved_at, sizeof p->approved_at, "%s", approved_at ? approved_at : "");
}

static void finish(struct hook_plan *p)
{
    stats_skill(&p->S->stats, p->skill, STATS_USE_SCRIPT, !p->ok);
    if (p->audit) {
        json_t *st = json_object_get(p->result, "status"), *ec = json_object_get(p->result, "exit_code");
        lock_audit(p->S->lock, p->skill, p->digest, p->approved_at, p->client,
                   p->request_id, json_string_value(json_object_get(p->input, "script")),
                   json_is_string(st) ? json_string_value(st) : "failed",
                   json_is_integer(ec) ? (long)json_integer_value(ec) : -1,
                   (double)(now_ns() - p->t0) / 1e6);
    }
    if (p->note[0] && json_is_object(p->result))
        json_object_set_new(p->result, "note", json_string(p->note));
    if (!p->renv && p->script)
        p->renv = redact_env_new(p->script->envp, json_object_get(p->input, "env_keys"));
    redact_run_result(p->S->redact, p->renv, p->result, &p->S->stats);
    if (p->stream)      /* streamed secrets count as those of the result */
        redact_meta_add(p->result, redact_stream_counts(p->stream));
    json_t *r = p->result;
    p->result = NULL;
    hook_done_fn done = p->done;
    void *arg = p->arg;
    int ok = p->ok;
    double ms = (double)(now_ns() - p->t0) / 1e6;
    hook_plan_free(p);
    done(r, ok, ms, arg);
}

static void fail_call(struct hook_plan *p, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_call(struct hook_plan *p, const char *status, const char *fmt, ...)
{
    char hint[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hint, sizeof hint, fmt, ap);
    va_end(ap);
    utf8_sanitize(hint);
    json_decref(p->result);
    p->result = synthetic(p, status, hint);
    if (p->limit)
        json_object_set_new(p->result, "limit", json_string(p->limit));
    p->ok = 0;
    if (!strcmp(status, "denied") && p->S->runner)
        run_count_denied(p->S->runner);
    log_info("run %s: %s", p->request_id, hint);
    finish(p);
}

/* The hook's own reason: {"reason": ...} on stdout, else stderr, trimmed. */
static void reason_of(const struct run_job *h, char *out, size_t n)
{
    json_t *j = h->out.len ? json_loadb(h->out.data, h->out.len, 0, NULL) : NULL;
    const char *r = json_string_value(json_object_get(j, "reason"));
    if (r)
        snprintf(out, n, "%s", r);
    else if (h->err.len)
        snprintf(out, n, "%.*s", (int)h->err.len, h->err.data);
    else
        snprintf(out, n, "exit code %d, no reason given", h->exit_code);
    json_decref(j);
    size_t len = strlen(out);
    while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' '))
        out[--len] = '\0';
}

/* Parses a hook's stdout: empty means "no change"; otherwise a JSON object. */
static int parse_out(const struct run_job *h, json_t **obj, struct err *why)
{
    *obj = NULL;
    size_t i = 0;
    while (i < h->out.len && strchr(" \t\r\n", h->out.data[i]))
        i++;
    if (i == h->out.len)
        return 0;
    if (h->out.truncated) {
        err_set(why, 0, 0, "its output is too large");
        return -1;
    }
    json_error_t e;
    *obj = json_loadb(h->out.data, h->out.len, 0, &e);
    if (!json_is_object(*obj)) {
        json_decref(*obj);
        *obj = NULL;
        err_set(why, 0, 0, "its output is not a JSON object");
        return -1;
    }
    return 0;
}

static void advance(struct hook_plan *p);

/* ---- pre -------------------------------------------------------------------- */

static int apply_pre(struct hook_plan *p, json_t *o, struct err *why)
{
    json_t *env = json_object_get(o, "env"), *args = json_object_get(o, "args");
    json_t *note = json_object_get(o, "note");
    const char *name;
    json_t *v;
    if ((env && !json_is_object(env)) || (args && !json_is_array(args)) ||
        (note && !json_is_string(note))) {
        err_set(why, 0, 0, "'env' must be an object, 'args' a list of strings, 'note' a string");
        return -1;
    }
    json_object_foreach(env, name, v) {
        if (!json_is_string(v) || script_env_problem(name)) {
            err_set(why, 0, 0, "its 'env' sets a variable that is not allowed, or a "
                               "non-string value");
            return -1;
        }
    }
    size_t i;
    json_array_foreach(args, i, v) if (!json_is_string(v)) {
        err_set(why, 0, 0, "its 'args' must be a list of strings");
        return -1;
    }
    /* later hooks see the names this one added, as they see its args */
    json_t *keys = json_object_get(p->input, "env_keys");
    json_object_foreach(env, name, v) {
        script_job_setenv(p->script, name, json_string_value(v));
        size_t k;
        json_t *e;
        int have = 0;
        json_array_foreach(keys, k, e) have |= !strcmp(json_string_value(e), name);
        if (!have)
            json_array_append_new(keys, json_string(name));
    }
    if (args) {
        /* argv = interpreter, flags, script, then the args the hook replaces */
        struct run_job *j = p->script;
        for (size_t k = j->argv_fixed; j->argv[k]; k++)
            free(j->argv[k]);
        j->argv = xrealloc(j->argv, (j->argv_fixed + 1 + json_array_size(args)) * sizeof *j->argv);
        size_t w = j->argv_fixed;
        json_array_foreach(args, i, v) j->argv[w++] = xstrdup(json_string_value(v));
        j->argv[w] = NULL;
        json_object_set_new(p->input, "args", json_deep_copy(args));
    }
    if (note) {
        size_t len = strlen(p->note);
        snprintf(p->note + len, sizeof p->note - len, "%s%s", len ? " " : "",
                 json_string_value(note));
    }
    return 0;
}

/* Every other field a post hook may set must keep the type the output schema
 * promises (tools.c, run_skill_script): clients validate it. */
static int result_types_ok(json_t *r)
{
    static const char *const num[] = {"duration_ms", "timeout", "stall_timeout", "silent_for",
                                      "queued_ms", NULL};
    static const char *const integer[] = {"stdout_bytes", "stderr_bytes", NULL};
    static const char *const boolean[] = {"truncated", "utf8_repaired", NULL};
    static const char *const str[] = {"signal", "request_id", "note", NULL};
    json_t *v;
    for (const char *const *k = num; *k; k++)
        if ((v = json_object_get(r, *k)) && !json_is_number(v))
            return 0;
    for (const char *const *k = integer; *k; k++)
        if ((v = json_object_get(r, *k)) && !json_is_integer(v))
            return 0;
    for (const char *const *k = boolean; *k; k++)
        if ((v = json_object_get(r, *k)) && !json_is_boolean(v))
            return 0;
    for (const char *const *k = str; *k; k++)
        if ((v = json_object_get(r, *k)) && !json_is_string(v))
            return 0;
    if ((v = json_object_get(r, "limit"))) {
        static const char *const limits[] = {"cpu", "memory", "file_size", "processes", NULL};
        const char *const *l = limits;
        while (*l && !(json_is_string(v) && !strcmp(json_string_value(v), *l)))
            l++;
        if (!*l)
            return 0;
    }
    v = json_object_get(r, "exit_code");
    return !v || json_is_integer(v) || json_is_null(v);
}

static void on_hook_done(struct run_job *h, void *arg)
{
    struct hook_plan *p = arg;
    const char *stage = stage_name[p->stage];
    const char *path = p->path[p->stage];
    int pre = p->stage < ST_SCRIPT;
    char reason[600];

    if (h->status != RUN_OK) {
        int denied = h->status == RUN_FAILED && h->exit_code > 0;
        reason_of(h, reason, sizeof reason);
        /* execve's EAGAIN is RLIMIT_NPROC's alone (runner.c, start_errno) */
        int nproc = h->error[0] && h->start_errno == EAGAIN;
        if (nproc)
            p->limit = "processes";     /* as a script's refused start reports it */
        if (pre && denied)
            fail_call(p, "denied", "Denied by the %s hook (%s): %s", stage, path, reason);
        else if (denied)
            fail_call(p, "failed", "The %s hook (%s) failed the call: %s. The script's output "
                                   "is withheld.", stage, path, reason);
        else
            fail_call(p, "failed", "The %s hook (%s) did not finish (%s%s%s%s); the call is "
                                   "failed.%s%s", stage, path, run_status_name(h->status),
                      h->term_signal ? ", killed by a signal" : "",
                      h->error[0] ? ", " : "", h->error, pre ? "" : " The script's output is withheld.",
                      nproc
                          ? " Its user already had more processes (threads count too) than "
                            "RLIMIT_NPROC allows (--script-max-processes): retry when fewer "
                            "scripts run."
                          : "");
        run_job_free(h);
        return;
    }
    json_t *o;
    struct err why;
    if (parse_out(h, &o, &why) < 0) {
        fail_call(p, "failed", "The %s hook (%s) returned malformed output: %s.", stage, path,
                  why.msg);
        run_job_free(h);
        return;
    }
    run_job_free(h);
    if (o && pre && apply_pre(p, o, &why) < 0) {
        fail_call(p, "failed", "The %s hook (%s) returned malformed output: %s.", stage, path,
                  why.msg);
        json_decref(o);
        return;
    }
    if (o && !pre) {
        json_t *r = json_object_get(o, "result");
        if (r && !json_is_object(r)) {
            fail_call(p, "failed", "The %s hook (%s) returned malformed output: 'result' must "
                                   "be an object.", stage, path);
            json_decref(o);
            return;
        }
        if (r) {
            json_object_update(p->result, r);
            /* the replaced result must still be a result the client can read */
            const char *st = json_string_value(json_object_get(p->result, "status"));
            static const char *const ok_status[] = {"ok", "failed", "stalled", "timeout",
                                                    "denied", "busy", NULL};
            int valid = st && json_is_string(json_object_get(p->result, "stdout")) &&
                        json_is_string(json_object_get(p->result, "stderr")) &&
                        json_is_string(json_object_get(p->result, "hint")) &&
                        result_types_ok(p->result);
            int known = 0;
            for (const char *const *s = ok_status; st && *s; s++)
                known |= !strcmp(st, *s);
            if (!valid || !known) {
                fail_call(p, "failed", "The %s hook (%s) returned a result with missing or "
                                       "wrong-typed fields (status, stdout, stderr, hint).",
                          stage, path);
                json_decref(o);
                return;
            }
            p->ok = !strcmp(st, "ok");
        }
    }
    json_decref(o);
    p->stage++;
    advance(p);
}

/* ---- script ------------------------------------------------------------------ */

static void on_script_done(struct run_job *j, void *arg)
{
    struct hook_plan *p = arg;
    p->result = script_result(j, p->S->cfg.max_script_concurrency, p->S->cfg.script_queue_timeout);
    p->ok = j->status == RUN_OK;
    if (!p->renv)
        p->renv = redact_env_new(j->envp, json_object_get(p->input, "env_keys"));
    if (p->stream)
        redact_stream_flush(p->stream);
    run_job_free(j);
    p->script = NULL;
    p->stage++;
    advance(p);
}

static void advance(struct hook_plan *p)
{
    while (p->stage < ST_DONE) {
        if (p->stage == ST_SCRIPT) {
            struct run_job *j = p->script;
            run_submit(p->S->runner, j, on_script_done, p);
            return;
        }
        if (!p->path[p->stage] || (p->stage > ST_SCRIPT && !p->result)) {
            p->stage++;
            continue;
        }
        json_t *in = p->input;
        if (p->stage > ST_SCRIPT) {
            in = json_deep_copy(p->input);
            json_object_set(in, "result", p->result);
        }
        char *text = json_dumps(in, JSON_COMPACT);
        if (in != p->input)
            json_decref(in);
        struct err why;
        struct run_job *h = script_hook_job(p->S->scripts, &p->S->cfg, p->path[p->stage],
                                            p->cwd[p->stage], text, strlen(text), p->skill,
                                            p->skill_dir, p->request_id, stage_name[p->stage],
                                            &why);
        free(text);
        if (!h) {
            fail_call(p, "failed", "The %s hook cannot run: %s.", stage_name[p->stage], why.msg);
            return;
        }
        /* A post hook finishes a call whose script already ran (and may
         * have done its work): it must not wait behind newer calls, nor
         * end "busy" and withhold that work's output. */
        h->urgent = p->stage > ST_SCRIPT;
        run_submit(p->S->runner, h, on_hook_done, p);
        return;
    }
    finish(p);
}

/* A redacted chunk of whole lines: one call of line_fn a line, an over-long
 * one in pieces of at most STREAM_PIECE bytes (cut after redaction, so a
 * piece never holds half a secret). */
#define STREAM_PIECE 512

static void stream_lines(const char *t, size_t n, void *arg)
{
    struct hook_plan *p = arg;
    while (n) {
        const char *nl = memchr(t, '\n', n);
        size_t len = nl ? (size_t)(nl - t) : n, next = nl ? len + 1 : n;
        while (len && t[len - 1] == '\r')
            len--;
        for (size_t at = 0; at < len;) {
            size_t k = len - at;
            if (k > STREAM_PIECE) {
                k = utf8_trim(t + at, STREAM_PIECE);
                if (!k)
                    k = STREAM_PIECE;
            }
            p->line_fn(t + at, k, p->line_arg);
            at += k;
        }
        t += next;
        n -= next;
    }
}

static void stream_chunk(const char *data, size_t n, void *arg)
{
    struct hook_plan *p = arg;
    if (!p->stream) {
        /* the script runs: the pre hooks have added their env values */
        if (!p->renv)
            p->renv = redact_env_new(p->script->envp, json_object_get(p->input, "env_keys"));
        p->stream = redact_stream_new(p->S->redact, p->renv, &p->S->stats, stream_lines, p);
    }
    redact_stream_feed(p->stream, data, n);
}

void hook_set_stream(struct hook_plan *p, void (*fn)(const char *line, size_t len, void *arg),
                     void *arg)
{
    p->line_fn = fn;
    p->line_arg = arg;
    p->script->on_stderr = stream_chunk;
    p->script->stderr_arg = p;
}

void hook_set_rpc_id(struct hook_plan *p, const char *rpc_id)
{
    snprintf(p->script->rpc_id, sizeof p->script->rpc_id, "%s", rpc_id);
    snprintf(p->script->client, sizeof p->script->client, "%s", p->client);
}

void hook_set_mode(struct hook_plan *p, const char *mode)
{
    json_object_set_new(p->input, "mode", json_string(mode));
}

const char *hook_request_id(const struct hook_plan *p)
{
    return p->request_id;
}

const char *hook_skill(const struct hook_plan *p)
{
    return p->skill;
}

void hook_start(struct hook_plan *p, hook_done_fn done, void *arg)
{
    p->done = done;
    p->arg = arg;
    p->t0 = now_ns();
    p->stage = ST_GLOBAL_PRE;
    advance(p);
}
