/*
 * auth.h - bearer-token authentication and per-client limits.
 *
 * The token file (--auth-tokens FILE) names one client per line:
 *
 *     # comment
 *     client_id  sha256hex  [rpm]  [groups=LIST]
 *
 * client_id is 1-64 characters of [A-Za-z0-9._@-]; sha256hex is the 64 hex
 * digits of SHA-256 of the whole token as presented ("smcp_..."); rpm is the
 * client's requests per minute (0 or absent = unlimited); LIST is the
 * client's groups, comma-separated names of the same characters. Tokens are
 * never held in clear: only their digests are read and compared.
 *
 * Ownership and threads:
 *   - auth_load() builds a struct auth owned by the caller (auth_free()). It
 *     also makes the shared mapping holding the rate buckets and script
 *     counters, so it must be called in the master BEFORE workers are forked;
 *     every worker then counts into the same buckets.
 *   - The token table is immutable once built. auth_reload() builds a new one
 *     and swaps a pointer (atomic, release/acquire); retired tables are kept
 *     until auth_free() (they are tiny), so a client id returned by
 *     auth_check() stays valid until auth_free(), whatever reloads happen.
 *   - auth_check, auth_rate, auth_script_take/give: any thread, any worker.
 *     auth_reload: any thread (reloads are serialised); each worker process
 *     reloads its own copy of the table (SIGHUP is forwarded to every worker).
 *   - auth_set_script_cap, auth_set_worker: at start-up, before threads.
 *
 * OAuth 2.1 resource-server mode (--oauth-issuer, oauth.h): auth_verify is
 * the one entry point the HTTP layer calls; a token of the file wins, else a
 * JWT access token is checked by oauth.c. Both name a client id and groups;
 * an OAuth client's id is kept in its shared slot (so it stays valid like a
 * file's, and its scripts are counted by --max-scripts-per-client). The ids
 * share one namespace: an OAuth client whose id is a token-file client's IS
 * that client (tasks, caps). An OAuth client's rate is --oauth-rpm, in
 * the bucket of its slot.
 */
#ifndef SKILL_AUTH_H
#define SKILL_AUTH_H

#include <stddef.h>
#include <stdint.h>

struct err;

#define AUTH_MAX_CLIENTS 4096   /* distinct client ids over the server's life */
#define AUTH_MAX_WORKERS 64     /* matches RUN_MAX_WORKERS */
#define AUTH_MAX_ID 64          /* longest client id */
#define AUTH_MAX_TOKEN 512      /* longest bearer token accepted */
#define AUTH_MAX_RPM 1000000

struct auth;
struct cfg;

/*
 * Loads FILE (NULL: no token file, OAuth only). Any malformed line fails closed: returns NULL with a message
 * naming the file and line in *err (err->line set too). A file with no
 * client is valid (every request is then refused). Call before forking.
 */
struct auth *auth_load(const char *file, struct err *err);
void auth_free(struct auth *a);

/*
 * Re-reads the file when its (mtime, size, inode) changed, or always with
 * force (SIGHUP). On any error the old table stays in force and the error is
 * logged (once per version of the file). Returns 1 when a new table was
 * installed, 0 when nothing changed, -1 on error. Any thread.
 */
int auth_reload(struct auth *a, int force);

/*
 * With --oauth-issuer: sets up the OAuth verifier (oauth_new: discovery and
 * the first JWKS fetch, blocking). port is the port listened on. Before
 * forking. Returns 0, or -1 with *err set.
 */
int auth_oauth_init(struct auth *a, const struct cfg *c, int port, struct err *err);

/* What auth_verify decided (the values of enum oauth_verdict). */
enum { AUTH_OK = 0, AUTH_NO_TOKEN, AUTH_INVALID, AUTH_SCOPE };

struct auth_who {
    const char *client;         /* valid until auth_free; NULL when refused for no token */
    char groups[256];           /* comma-separated, or "" */
    char sub[256];              /* OAuth: the token's "sub", or "" */
    char scopes[512];           /* OAuth: its scopes, space-separated, or "" */
    char why[256];              /* the refusal, for the client */
};

/*
 * Checks an Authorization header value (NULL: none was sent). Returns
 * AUTH_OK (w->client set), AUTH_NO_TOKEN / AUTH_INVALID (answer 401) or
 * AUTH_SCOPE (403; w->client set). Any thread; may wait up to 5 s when a
 * token names a signing key not yet fetched (oauth.h).
 */
int auth_verify(struct auth *a, const char *authorization, struct auth_who *w);

/* The WWW-Authenticate value for a refusal (static storage or a's). */
const char *auth_challenge(struct auth *a, int verdict);

/*
 * The RFC 9728 protected-resource metadata served at url: 0 with a malloc'd
 * JSON body, -1 when there is none (no --oauth-issuer, or another path).
 */
int auth_metadata(struct auth *a, const char *url, char **body, size_t *len);

/* Number of clients in the current table. Any thread. */
int auth_count(struct auth *a);

/*
 * Checks an Authorization header value ("Bearer <token>", the scheme
 * case-insensitive). SHA-256 of the token is compared with every entry in
 * constant time (no early exit). Returns the client id (borrowed, valid
 * until auth_free) or NULL. Any thread.
 */
const char *auth_check(struct auth *a, const char *authorization);

/*
 * Per-client request rate: a token bucket of capacity rpm refilled at
 * rpm/60 per second. Returns 0 when the request is allowed (and counted),
 * else the whole seconds to wait (>= 1, for Retry-After). Fills *limit
 * (rpm; 0 = unlimited, send no RateLimit-* headers), *remaining (requests
 * left now) and *reset_s (seconds until the bucket is full again); each
 * pointer may be NULL. A client not in the table is not limited, but for
 * an OAuth client under --oauth-rpm.
 * Any thread, any worker.
 */
int auth_rate(struct auth *a, const char *client, int *limit, int *remaining, int *reset_s);
/* The same at a given CLOCK_MONOTONIC time (tests). */
int auth_rate_at(struct auth *a, const char *client, uint64_t now, int *limit,
                 int *remaining, int *reset_s);

/*
 * Per-client concurrent scripts, shared by all workers. take returns 1 when
 * a slot was taken (give it back with auth_script_give when the script
 * ends), 0 when the client already runs its cap. A cap <= 0 = unlimited
 * (still counted). Any thread.
 */
void auth_set_script_cap(struct auth *a, int per_client);
int auth_script_take(struct auth *a, const char *client);
void auth_script_give(struct auth *a, const char *client);
/* Scripts the client runs now, over all workers. */
int auth_script_count(struct auth *a, const char *client);
/* In a worker right after fork: its index, so its slots can be reaped. */
void auth_set_worker(struct auth *a, int index);
/* In the master when worker index died: frees the slots it held. */
void auth_script_reap(struct auth *a, int index);

/* ---- the token file, for `skill-mcp token add` (cli_token.c) ---- */

/* 1 when s[0..n) may name a client: 1-AUTH_MAX_ID of A-Z a-z 0-9 . _ - @. */
int auth_id_valid(const char *s, size_t n);
/* 1 when the token file open on fd already names client id; *ends_nl says
 * whether it ends in a newline (an empty file does). Reads through a dup. */
int auth_file_names(int fd, const char *id, int *ends_nl);
/* The token file line for client name and token ("NAME sha256hex [rpm]\n";
 * rpm < 0: no limit) in out[0..cap): its length, or -1. */
int auth_token_line(const char *name, const char *token, long rpm, char *out, size_t cap);

#endif
