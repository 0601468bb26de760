/*
 * sdnotify.h - systemd's service notification protocol (sd_notify(3)),
 * spoken directly: datagrams to $NOTIFY_SOCKET, no libsystemd.
 *
 * One serving process notifies systemd itself. With --workers N the master
 * alone does: each worker reports "ready" and its watchdog heartbeats to
 * the master over a pipe (sdn_worker), and the master says READY=1 once
 * every worker is ready and pets the watchdog only while every worker's
 * heartbeat is recent.
 */
#ifndef SKILL_SDNOTIFY_H
#define SKILL_SDNOTIFY_H

#include <stdint.h>

/*
 * Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID and removes them from
 * the environment, so scripts and hooks never inherit them. Call once,
 * before any thread starts. Without NOTIFY_SOCKET every other call is a
 * no-op.
 */
void sdn_init(void);
/* 1 when a notification socket was given. */
int sdn_enabled(void);
/*
 * Sends msg ("READY=1\nSTATUS=...") as one datagram. 0 sent, 1 nothing to
 * send to, -1 the send failed (logged once at debug).
 */
int sdn_send(const char *msg);
/* The watchdog period in microseconds, 0 when none is asked for. */
uint64_t sdn_watchdog_usec(void);

/* In worker index: from now on ready and pets go to the master over fd. */
void sdn_worker(int fd, int index);
/* This process serves: READY=1 (or, in a worker, "ready" to the master). */
void sdn_ready(const char *status);
/* A drain starts: STOPPING=1 (nothing from a worker: the master says it). */
void sdn_stopping(void);
/* From the serving loop every sdn_watchdog_usec() / 2: WATCHDOG=1, or a
 * heartbeat to the master. */
void sdn_pet(void);

/* What a worker writes to the master: two bytes, kind and worker index. */
enum { SDN_MSG_READY = 'R', SDN_MSG_PET = 'W' };

#endif
