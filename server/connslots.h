/*
 * connslots.h - the acceptor's count of the connections it handed to
 * libmicrohttpd that are not closed yet (http.c). It is exact, so at
 * --max-connections a new connection waits in the kernel's backlog and
 * libmicrohttpd never refuses one: libmicrohttpd's own count takes a
 * connection in only when its worker gets to it, and a count that lags lets
 * one too many through.
 *
 * A connection holds its slot from connslots_take (before it is handed
 * over) to connslots_closed (MHD_CONNECTION_NOTIFY_CLOSED). Between the
 * two, libmicrohttpd's worker takes it in (MHD_CONNECTION_NOTIFY_STARTED:
 * connslots_started). If the worker fails there (its memory pool cannot be
 * allocated), libmicrohttpd closes the socket and says nothing, neither
 * STARTED nor CLOSED; the slot of such a connection is found by its
 * descriptor: the acceptor gets the same number again, or connslots_check
 * finds it no longer names the peer it was taken for.
 *
 * Every function is thread-safe (one mutex; each connection takes it three
 * times: taken, started, closed).
 */
#ifndef SKILL_CONNSLOTS_H
#define SKILL_CONNSLOTS_H

#include <sys/socket.h>

struct connslots;

/* max slots (> 0); aborts when out of memory. */
struct connslots *connslots_new(unsigned max);
void connslots_free(struct connslots *s);

/* 1 when every slot is held, and the next connslots_closed returns 1 (the
 * caller waits for it); *unstarted (when not NULL) says whether a slot is
 * held by a connection not started yet (connslots_check may free it). */
int connslots_full(struct connslots *s, int *unstarted);
/* fd, just accepted from peer, is about to be handed over. */
void connslots_take(struct connslots *s, int fd, const struct sockaddr *peer, socklen_t len);
/* The hand-over of fd failed at once (libmicrohttpd closed it). */
void connslots_refused(struct connslots *s, int fd);
/* libmicrohttpd's worker took fd in. */
void connslots_started(struct connslots *s, int fd);
/* A started connection closed: 1 when the caller of connslots_full waits
 * for this slot (wake it). */
int connslots_closed(struct connslots *s);
/* Frees the slots of connections closed before they started (their
 * descriptor closed, or reused for something else); returns how many. */
unsigned connslots_check(struct connslots *s);
/* Slots held. */
unsigned connslots_held(struct connslots *s);

#endif
