/*
 * loop.h - the libuv thread. It owns every uv_* handle: today the refresh
 * timer; the runner's children, pipes and timers join it later. Other
 * threads reach it only through loop_* calls, which use uv_async_send.
 */
#ifndef SKILL_LOOP_H
#define SKILL_LOOP_H

#include "srv.h"

struct loop;

/*
 * Starts the loop thread. With interval_s > 0, skills_rescan() runs every
 * interval_s seconds on libuv's worker pool, never two at once, so a slow
 * rescan never delays the loop itself. Returns NULL on failure (logged).
 */
struct loop *loop_start(struct srv *S, double interval_s);
/* Stops the timer, waits for a running rescan, joins the thread. */
void loop_stop(struct loop *l);

#endif
