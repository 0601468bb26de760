/*
 * notify.h - live list-change notifications: one broadcaster per process.
 *
 * When the skill index publishes a new generation (skills.c, after a rescan
 * by the refresher, reload_skills or SIGHUP), notify_publish() works out
 * once what changed (the skill:// URIs of skills added, removed, or whose
 * SKILL.md or file set moved) and marks every listener: resources and
 * prompts list_changed (under --acl, only when its caller may see one of
 * the skills that moved), and resources/updated for each URI the listener
 * subscribed to that changed. Marking only sets flags under a short lock
 * and wakes the listener; it never waits for one. A listener that is behind
 * gets one notification of each kind however many generations it missed.
 *
 * Any transport can listen (the HTTP GET stream of a --stateful session,
 * a 2026-07-28 subscriptions/listen stream, a stdio session):
 *
 *   struct notify_listen_opts o = {.key = client_or_peer, .kinds = NOTIFY_ALL,
 *                                  .wake = my_wake, .arg = me};
 *   struct notify_listener *l = notify_listen(&o, &why);
 *   ...                                  // wake(arg) says "call notify_drain"
 *   notify_drain(l, my_sink, me);        // sink gets whole notification JSON
 *   ...
 *   notify_unlisten(l);
 *
 * wake() runs on the publishing thread with the broadcaster's lock held:
 * it must not block and must not call back into notify (resume a
 * connection, signal a condition variable, uv_async_send). The transport's
 * own writer then calls notify_drain(), which renders what is pending
 * outside the lock and hands each notification to sink() as complete
 * JSON-RPC bytes (no newline), then returns. A transport may equally call
 * notify_drain() whenever it is about to write anyway.
 *
 * Bounds: NOTIFY_PER_KEY listeners per key (the authenticated client id,
 * else the peer address) and NOTIFY_MAX in all; notify_listen() refuses
 * the one over either bound, saying why.
 */
#ifndef SKILL_NOTIFY_H
#define SKILL_NOTIFY_H

#include <jansson.h>
#include <stddef.h>

#include "acl.h"

struct err;

#define NOTIFY_PER_KEY 8
#define NOTIFY_MAX 512
/* resources/subscribe URIs one --stateful session may hold */
#define NOTIFY_SUBS_MAX 64

enum {
    NOTIFY_RES_LIST = 1,        /* notifications/resources/list_changed */
    NOTIFY_PROMPT_LIST = 2,     /* notifications/prompts/list_changed */
    NOTIFY_UPDATED = 4,         /* notifications/resources/updated */
    NOTIFY_ALL = 7,
};

struct snapshot;
struct session_table;
struct notify_listener;

typedef void (*notify_wake_fn)(void *arg);
/* One notification's JSON bytes (borrowed for the call). */
typedef void (*notify_sink_fn)(const char *json, size_t len, void *arg);

struct notify_listen_opts {
    const char *key;            /* whose bound it counts against (copied); NULL: "" */
    unsigned kinds;             /* NOTIFY_* this listener asked for */
    /* resources/updated for the subscriptions of a --stateful session: the
     * set lives with the session (session_subscribe), so it outlasts a
     * stream that is closed and opened again */
    struct session_table *sessions;
    const char *session;        /* copied */
    const char *client;         /* the session's client (copied), or NULL */
    int exclusive;              /* refuse when the session already has a listener */
    /* ... or for these URIs (a subscriptions/listen request; copied) */
    const char *const *uris;
    size_t nuris;
    /* 2026-07-28: tag every notification's params._meta with
     * io.modelcontextprotocol/subscriptionId = this (copied), or NULL */
    json_t *subscription_id;
    /* --acl (NULL: none): resources/updated names only what this caller
     * (who, copied) may see under the rules in force when it is sent */
    struct acl *acl;
    struct acl_who who;
    notify_wake_fn wake;
    void *arg;
};

/* A new listener, or NULL with *why set and errno EMFILE (a bound is
 * reached) or EEXIST (exclusive, and the session has one). */
struct notify_listener *notify_listen(const struct notify_listen_opts *o, struct err *why);
/* Removes it: once this returns its wake is never called again. */
void notify_unlisten(struct notify_listener *l);

/*
 * Hands what is pending to sink, in order: resources list_changed, prompts
 * list_changed, then one resources/updated per changed subscribed URI.
 * Returns the number of notifications handed over, or -1 when the listener
 * was ended (notify_end_session, notify_end_all): the transport closes it.
 */
int notify_drain(struct notify_listener *l, notify_sink_fn sink, void *arg);

/*
 * The index published next replacing prev (skills.c calls this once per
 * generation that moved). Cheap when nobody listens. Any thread.
 */
void notify_publish(const struct snapshot *prev, const struct snapshot *next);

/* The --acl rules were reloaded: every listener under rules is told its
 * lists may have changed. Any thread. */
void notify_rules_changed(void);

/* Ends the listeners of a session (DELETE), or all of them (shutdown). */
void notify_end_session(const char *session);
void notify_end_all(void);

/* Does the session have a live (not ended) listener: would an exclusive
 * notify_listen for it be refused? */
int notify_session_listening(const char *session);

/* Listeners now, for /metrics and tests. */
size_t notify_count(void);

/*
 * The skill:// URIs whose content differs between a and b, sorted, each
 * once: "skill://<qname>/SKILL.md" and "skill://<qname>/<path>" of every
 * file added, removed or changed (a skill added or removed: all of its
 * files). Returns how many; *out is an array of malloc'd strings (free
 * with notify_uris_free). Exposed for tests.
 */
size_t notify_diff(const struct snapshot *a, const struct snapshot *b, char ***out);
void notify_uris_free(char **v, size_t n);

/* Does a subscription to sub cover the changed URI uri (itself, or a
 * file below it)? */
int notify_covers(const char *sub, const char *uri);

#endif
