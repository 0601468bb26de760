/*
 * runner.h - run a skill script without ever blocking an HTTP thread.
 *
 * A job is prepared on the HTTP thread (argv, environment, limits: nothing
 * is started), then handed to the libuv loop thread with run_submit(). The
 * loop thread owns the child, its pipes and its timers from then on; when
 * the job ends, the done callback runs on the loop thread with the result.
 *
 * The runner enforces: at most max_live children (later jobs wait in order
 * up to a queue timeout, then end as `busy`), a ceiling and a stall timer
 * per job, process-group kill (SIGTERM, then SIGKILL), capped retention of
 * stdout/stderr while draining continues, and a private scratch HOME/TMPDIR
 * removed when the job ends.
 */
#ifndef SKILL_RUNNER_H
#define SKILL_RUNNER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

enum run_status { RUN_OK, RUN_FAILED, RUN_STALLED, RUN_TIMEOUT, RUN_DENIED, RUN_BUSY };

const char *run_status_name(enum run_status s);

struct run_stream {
    char *data;             /* retained bytes (malloc'd) */
    size_t len;             /* retained */
    uint64_t total;         /* bytes the script wrote */
    int truncated;          /* total > len */
};

struct err;
struct run_job;
typedef void (*run_done_fn)(struct run_job *job, void *arg);

struct run_job {
    /* ---- set by the preparer (any thread), read-only afterwards ---- */
    char **argv;            /* argv[0] is the interpreter's absolute path */
    size_t argv_fixed;      /* entries before the caller's args (interpreter, flags, script) */
    char **envp;
    char *cwd;              /* the skill folder */
    char *stdin_data;       /* NULL: the script reads EOF at once */
    size_t stdin_len;
    double timeout_s;       /* ceiling, > 0 */
    double stall_s;         /* 0 disables stall detection */
    char request_id[40];
    char rpc_id[64];        /* the JSON-RPC id of the call, serialised (for cancellation) */
    char client[80];        /* the authenticated client, or "" */
    char *skill;            /* qualified name, for logs and results */
    char *script;           /* scripts/<path>: the canonical identity, relative to the skill */
    char *script_path;      /* the absolute path the interpreter opens, or NULL (hooks) */
    int script_fd;          /* with script_path: the file the jail checked, kept open */
    int script_on_fd3;      /* the interpreter reads the script from script_fd as fd 3 */
    size_t retain_max;      /* per stream */
    int run_uid, run_gid;   /* the user the child becomes before exec (a root server's
                             * --script-user) and the scratch folder's owner, or -1 */
    int hook;               /* a hook, not a script: left out of the scripts counters */
    size_t scratch_args[4]; /* argv entries replaced by the scratch folder's path at start */
    int nscratch_args;
    /* the rlimits the child sets before exec (0 = none; RLIMIT_CORE is always 0), so that
     * the result can name the one that fired. RLIMIT_CPU's hard limit is a second above the
     * soft one: SIGXCPU first, which names the limit, then SIGKILL. */
    int lim_cpu_s, lim_nproc;
    long lim_as_mib, lim_fsize_mib;
    int sandboxed;          /* under bwrap: a signal death comes back as exit code 128 + sig */
    int urgent;             /* queued ahead of ordinary jobs, with no queue timeout: it
                             * finishes a call whose script has already run */
    /* optional: each stderr chunk as it is read (loop thread); lines are
     * made, and redacted, by the caller (redact_stream) */
    void (*on_stderr)(const char *p, size_t len, void *arg);
    void *stderr_arg;

    /* ---- result, valid in the done callback ---- */
    enum run_status status;
    int exit_code;          /* -1 when killed by a signal */
    int term_signal;        /* 0 unless killed by a signal */
    struct run_stream out, err;
    double duration_ms;
    double silent_for_s;    /* since the last byte of output, at the end */
    double queued_ms;       /* time spent waiting for a slot */
    char last_line[200];    /* last non-empty output line, for the stall hint */
    char error[256];        /* why it could not start, when it could not */
    int start_errno;        /* with error: the errno of the child's step that failed
                             * (its execve refused with EAGAIN: RLIMIT_NPROC), or 0 */
    int cancelled;          /* stopped at the client's request */
    int shutdown;           /* stopped because the server shut down */

    /* ---- private to runner.c ---- */
    struct runner *_r;
    run_done_fn _done;
    void *_arg;
    struct run_job *_next, *_live_next;
    uv_timer_t _ceiling, _stall, _grace, _queue;
    uv_pipe_t _out, _err, _in;
    uv_poll_t _exit;
    uv_write_t _wreq;
    int _pidfd;
    int _pid;
    int _open_handles;
    int _exited, _out_eof, _err_eof, _killed, _finished;
    int _raw_status;
    uint64_t _t_start, _t_last, _t_queued;
    char *_scratch;
    int _slot;              /* index of its live-script slot, -1 when none */
};

struct runner;

/*
 * Counters and the live-children count shared by every worker of an
 * instance (run_shared_new, before forking), so the cap on live scripts
 * holds for the instance, not per worker.
 */
#define RUN_MAX_WORKERS 64

/* Opaque: the counters, the queue places by worker and the live-script
 * slots (runner.c); read through run_counters(). */
struct run_shared;

/* Allocates the shared block (before forking) for max_live slots. */
struct run_shared *run_shared_new(int max_live, size_t *size);

/*
 * Master: worker `index` died. Its scripts are killed (their process groups)
 * and its slots and queue places given back, so the cap does not leak.
 */
void run_shared_reap(struct run_shared *sh, int index);

/*
 * Creates the runner on uv (which the loop thread runs). max_live caps live
 * children across sh's users; queue_timeout_s bounds the wait for a slot.
 */
struct runner *run_new(uv_loop_t *uv, struct run_shared *sh, int worker, int max_live,
                       double queue_timeout_s);
/* Loop thread, at shutdown: kills live children and ends queued jobs as busy. */
void run_shutdown(struct runner *r);
void run_free(struct runner *r);

/* Tests only: called as a job starts, before its clock does (a test holds
 * the loop's tick there, as other jobs' spawns hold it on a busy server). */
extern void (*run_start_hook)(void);

/*
 * Hands job to the loop thread (any thread may call). done(job, arg) runs
 * on the loop thread exactly once; the job is the caller's to free with
 * run_job_free() after that.
 */
void run_submit(struct runner *r, struct run_job *job, run_done_fn done, void *arg);
void run_job_free(struct run_job *job);

/*
 * 0 when job->script_path still names the file the jail checked (the kept
 * script_fd: same device and inode), else -1 with *why saying what
 * changed. The runner calls it at the last moment before spawning; any
 * thread.
 */
int run_job_verify(const struct run_job *job, struct err *why);

/*
 * Starts argv as job j's children start (its rlimits, its user, a new
 * session, default signals, no fd but the three given), in cwd, and returns
 * its pid for the caller to wait for, or -1 with *why naming the step that
 * failed. For probes at start-up; the runner's jobs go through run_submit.
 */
pid_t run_spawn_as(const struct run_job *j, char **argv, char **envp, const char *cwd,
                   int fd_in, int fd_out, int fd_err, struct err *why);

/*
 * Stops the running or queued job whose request_id matches, as soon as the
 * loop thread gets to it (any thread). The job ends as `failed` with a hint
 * saying the client cancelled it. Unknown ids are ignored.
 */
void run_cancel(struct runner *r, const char *request_id);

/*
 * notifications/cancelled: stops the job of the call with this JSON-RPC id
 * (serialised) made by this client ("" when unauthenticated). Any thread.
 */
void run_cancel_rpc(struct runner *r, const char *client, const char *rpc_id);

/* Counters for stats; any thread. */
struct run_counters {
    uint64_t started, ok, failed, stalled, timeout, denied, busy;
    int64_t live, queued;
};
void run_counters(struct runner *r, struct run_counters *c);
void run_count_denied(struct runner *r);

#endif
