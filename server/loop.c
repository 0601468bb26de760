/*
 * loop.c - the libuv loop thread.
 *
 * Threading rule: a uv_loop_t is not thread-safe, so every uv_* handle is
 * created, used and closed on this thread. The only call other threads
 * make is uv_async_send() (here: to stop). A libuv handle's memory is freed
 * in its close callback, never before.
 */
#include "loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <uv.h>

#include "acl.h"
#include "auth.h"
#include "lock.h"
#include "notify.h"
#include "runner.h"
#include "sdnotify.h"
#include "skills.h"
#include "util.h"

struct loop {
    struct srv *S;
    uv_loop_t uv;
    uv_timer_t timer;
    uv_async_t stop;
    uv_work_t work;
    uv_timer_t auth_timer;      /* re-reads --auth-tokens when it changes */
    uv_timer_t watchdog;        /* systemd's WATCHDOG=1: a hung loop stops it */
    uint64_t watchdog_ms;
    int scanning;
    int stopping;
    uint64_t interval_ms;
    pthread_t thread;
};

static void scan_work(uv_work_t *w)
{
    struct loop *l = w->data;
    /* A changed lock re-judges every skill: a forced rebuild. */
    skills_rescan(l->S->skills, lock_reload(l->S->lock, 0) > 0, NULL);
}

static void scan_done(uv_work_t *w, int status)
{
    struct loop *l = w->data;
    l->scanning = 0;
}

static void on_tick(uv_timer_t *t)
{
    struct loop *l = t->data;
    if (l->scanning || l->stopping)
        return;
    l->scanning = 1;
    l->work.data = l;
    if (uv_queue_work(&l->uv, &l->work, scan_work, scan_done) < 0)
        l->scanning = 0;
}

static void on_auth_tick(uv_timer_t *t)
{
    struct loop *l = t->data;
    auth_reload(l->S->auth, 0);     /* one stat unless the file changed */
    if (acl_reload(l->S->acl, 0) > 0)
        notify_rules_changed();
}

static void on_watchdog(uv_timer_t *t)
{
    sdn_pet();
}

static void on_stop(uv_async_t *a)
{
    struct loop *l = a->data;
    l->stopping = 1;
    if (l->watchdog_ms)
        uv_close((uv_handle_t *)&l->watchdog, NULL);
    if (l->S->auth || l->S->acl)
        uv_close((uv_handle_t *)&l->auth_timer, NULL);
    if (l->S->runner)
        run_shutdown(l->S->runner);
    if (l->interval_ms)
        uv_close((uv_handle_t *)&l->timer, NULL);
    uv_close((uv_handle_t *)&l->stop, NULL);
}

static void *loop_main(void *arg)
{
    struct loop *l = arg;
    uv_run(&l->uv, UV_RUN_DEFAULT);
    return NULL;
}

struct loop *loop_start(struct srv *S, double interval_s)
{
    struct loop *l = xcalloc(1, sizeof *l);
    l->S = S;
    l->interval_ms = (uint64_t)(interval_s * 1000.0);
    if (interval_s > 0 && l->interval_ms == 0)
        l->interval_ms = 1;
    if (uv_loop_init(&l->uv) < 0) {
        free(l);
        log_error("cannot start the event loop");
        return NULL;
    }
    /* Handles are created here, before the loop thread runs; from then on
     * only that thread touches them. */
    if (!S->cfg.no_scripts)
        S->runner = run_new(&l->uv, S->run_shared, S->worker, S->cfg.max_script_concurrency,
                            S->cfg.script_queue_timeout);
    uv_async_init(&l->uv, &l->stop, on_stop);
    if (S->auth || S->acl) {
        uv_timer_init(&l->uv, &l->auth_timer);
        l->auth_timer.data = l;
        uv_timer_start(&l->auth_timer, on_auth_tick, 2000, 2000);
    }
    l->stop.data = l;
    if (l->interval_ms) {
        uv_timer_init(&l->uv, &l->timer);
        l->timer.data = l;
        uv_timer_start(&l->timer, on_tick, l->interval_ms, l->interval_ms);
    }
    if (sdn_watchdog_usec()) {
        l->watchdog_ms = sdn_watchdog_usec() >= 4000 ? sdn_watchdog_usec() / 2000 : 1;
        uv_timer_init(&l->uv, &l->watchdog);
        uv_timer_start(&l->watchdog, on_watchdog, 0, l->watchdog_ms);
    }
    if (pthread_create(&l->thread, NULL, loop_main, l)) {
        log_error("cannot start the event loop thread");
        uv_loop_close(&l->uv);
        free(l);
        return NULL;
    }
    return l;
}

void loop_stop(struct loop *l)
{
    if (!l)
        return;
    uv_async_send(&l->stop);
    pthread_join(l->thread, NULL);
    uv_loop_close(&l->uv);
    run_free(l->S->runner);
    l->S->runner = NULL;
    free(l);
}
