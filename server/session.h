/*
 * session.h - Mcp-Session-Id sessions of the legacy era (--stateful).
 *
 * A fixed-capacity table (--max-sessions) of sessions minted by initialize:
 * a 128-bit id from getrandom() as 32 hex characters, the authenticated
 * client that made it, when it was last used and its logging/setLevel level.
 * A session idle past --session-idle-timeout is gone (expiry is lazy: it is
 * noticed on lookup and swept when a slot is needed or on session_sweep()).
 * When the table is full, initialize evicts the least recently used session
 * rather than refusing: clients that never send DELETE (most do not) would
 * otherwise lock new clients out until their sessions expire, and an evicted
 * client gets 404 and re-initializes.
 *
 * Thread-safe: one mutex around a small open-addressing table. Every call
 * holds it for a hash probe and a 32-byte compare, so the request path stays
 * cheap; only a full-table initialize walks the whole table.
 */
#ifndef SKILL_SESSION_H
#define SKILL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#define SESSION_ID_LEN 32       /* hex characters, visible ASCII */

/* logging/setLevel levels, in order of severity; SESSION_LEVEL_NONE = never set. */
enum session_level {
    SESSION_LEVEL_NONE = -1,
    SESSION_LEVEL_DEBUG, SESSION_LEVEL_INFO, SESSION_LEVEL_NOTICE, SESSION_LEVEL_WARNING,
    SESSION_LEVEL_ERROR, SESSION_LEVEL_CRITICAL, SESSION_LEVEL_ALERT, SESSION_LEVEL_EMERGENCY
};

struct session_table;

struct session_counts {
    uint64_t created, ended, expired, evicted;
    size_t live;
};

/* cap sessions at most; idle_s seconds without a request ends one. */
struct session_table *session_new(size_t cap, double idle_s);
void session_free(struct session_table *t);

/*
 * A new session for client (the authenticated client id, or NULL); its id
 * goes to out (SESSION_ID_LEN + 1 bytes). Returns 0, or -1 when no random
 * bytes could be had.
 */
int session_create(struct session_table *t, const char *client, char *out);

/*
 * Looks id up for client and marks it used now. Returns 1 and its level in
 * *level (may be NULL) when it is live, 0 when it is unknown, ended, expired
 * or belongs to another client.
 */
int session_touch(struct session_table *t, const char *id, const char *client, int *level);

/* 1 when id is live for client, else 0; unlike session_touch it does not
 * count as a use (HEAD asks without using the session). */
int session_live(struct session_table *t, const char *id, const char *client);

/* Sets the level of a live session; 1 when done, 0 when unknown. */
int session_set_level(struct session_table *t, const char *id, const char *client, int level);

/* Ends a live session (DELETE); 1 when ended, 0 when unknown. */
int session_end(struct session_table *t, const char *id, const char *client);

/*
 * resources/subscribe of a live session: uri as the client wrote it, key
 * the canonical URI it is matched under (notify_covers). Returns 1 when
 * subscribed (again), 0 when the session is unknown, -1 when it already
 * holds max URIs.
 */
int session_subscribe(struct session_table *t, const char *id, const char *client,
                      const char *uri, const char *key, size_t max);
/* resources/unsubscribe: 1 (subscribed or not), 0 when the session is unknown. */
int session_unsubscribe(struct session_table *t, const char *id, const char *client,
                        const char *uri);
/* Calls fn for each URI the live session subscribed to, with the table's
 * lock held: fn must not call back into the table. */
void session_subs_each(struct session_table *t, const char *id, const char *client,
                       void (*fn)(const char *uri, const char *key, void *arg), void *arg);

/* Forgets every expired session now. */
void session_sweep(struct session_table *t);

void session_counts(struct session_table *t, struct session_counts *c);

/* The level named by s ("debug" ... "emergency"), or SESSION_LEVEL_NONE. */
int session_level_of(const char *s);

#endif
