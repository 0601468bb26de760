/*
 * tasks.h - run_skill_script as an MCP task (--enable-tasks): the client
 * gets a task id at once and polls for the result instead of holding the
 * request open (2025-11-25 `tasks` capability; 2026-07-28
 * `io.modelcontextprotocol/tasks` extension). See docs/scripts.md.
 *
 * A task's record lives in a store every worker can reach: process memory
 * with one worker, Redis (--tasks-redis) with several workers or instances.
 * The worker that starts a task owns its process; a cancel that lands on
 * another worker marks the record, and the owner's tasks thread sees the
 * mark within a poll interval and kills the process group.
 *
 * Threads: the HTTP threads read and write the store (Redis through one
 * connection per thread, short timeouts); the loop thread only hands
 * finished results over; a tasks thread per worker writes them, polls the
 * records of its live tasks for cancels, keeps its owner heartbeat alive
 * and answers blocked tasks/result requests.
 */
#ifndef SKILL_TASKS_H
#define SKILL_TASKS_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "srv.h"

struct call;
struct hook_plan;
struct tasks;
struct tasks_wait;

/*
 * Settles the Redis URL before anything else starts: from --tasks-redis,
 * --tasks-redis-file or the SKILL_MCP_TASKS_REDIS environment variable
 * (c->tasks_redis then points to a private copy). A password is scrubbed
 * from argv and the environment in place, so /proc/PID/cmdline and
 * /proc/PID/environ no longer show it, and the variable is not inherited
 * by anything the server starts. 0, or -1 after a message on stderr.
 */
int tasks_take_url(struct cfg *c, int argc, char **argv);

/* Start-up checks of the task flags (before any fork): 0, or -1 after a
 * message on stderr (exit 2). */
int tasks_check_config(const struct cfg *c);

/* Per serving process, after the fork: NULL when tasks are off (or on a
 * start-up failure, logged). tasks_quiesce() comes before the loop stops
 * (scripts killed from then on end their tasks as failed; no new task
 * starts); tasks_stop() after it, before the HTTP side stops: it writes
 * what is pending and answers every blocked tasks/result. tasks_free()
 * after the HTTP side has stopped. */
struct tasks *tasks_start(struct srv *S);
void tasks_quiesce(struct tasks *t);
void tasks_stop(struct tasks *t);
void tasks_free(struct tasks *t);

/* Adds the task capability to a capabilities object (nothing when tasks
 * are off): `tasks` (2025-11-25) for initialize, the
 * io.modelcontextprotocol/tasks extension for server/discover. */
void tasks_capabilities(const struct srv *S, json_t *caps, int discover);

/*
 * tools/call: does this request ask for a task? (legacy: params.task;
 * 2026-07-28: the extension in the request's clientCapabilities.) -1 after
 * an error set on c (a task asked for a tool that cannot run as one).
 */
int tasks_wanted(struct call *c, const char *tool);

/*
 * Runs c's pending run (taken) as a task, or, when the call already has its
 * answer (rendered bytes: an argument error, a busy client), records a task
 * that is already finished with it. Sets c's outcome to the
 * CreateTaskResult, or to an error (store unreachable, too many live tasks).
 */
int tasks_create(struct call *c);

/* Methods: tasks/get, tasks/result (legacy), tasks/list (legacy),
 * tasks/cancel, tasks/update (2026-07-28). */
int tasks_m_get(struct call *c);
int tasks_m_result(struct call *c);
int tasks_m_list(struct call *c);
int tasks_m_cancel(struct call *c);
int tasks_m_update(struct call *c);

/*
 * A tasks/result whose task is still working (c's outcome is CALL_WAIT):
 * mcp_start() hands the wait to the tasks thread, which sets c's answer and
 * completes it (call_finish) once the task ends; the wait holds a reference
 * to c until then.
 */
void tasks_wait_start(struct tasks_wait *w, struct call *c);

#endif
