/*
 * oauth.h - OAuth 2.1 resource server (MCP authorization): JWT access
 * tokens checked against the authorization server's JWKS, and the RFC 9728
 * protected-resource metadata that tells clients where to get a token.
 *
 * Start-up (oauth_new, in the master before workers fork): the issuer's
 * metadata is found (RFC 8414 /.well-known/oauth-authorization-server, then
 * OpenID /.well-known/openid-configuration; --oauth-jwks skips this) and the
 * JWKS fetched once; any failure stops the start with a clear message.
 *
 * Keys: the verified key set is an immutable snapshot behind a pointer,
 * taken by reference count under a mutex that guards nothing but that
 * count (no I/O under it). Fetches run on one refresher thread per
 * process (started by the first request a process verifies), never on a
 * request thread: it refetches when the JWKS's Cache-Control max-age runs
 * out (clamped to 30 s..1 day; 5 minutes without one), and on demand when
 * a token names a key the set lacks (rotation). Demands are rate-limited to
 * one per 30 s; the request that made one waits for it at most 5 s, alone
 * (a condition variable, no lock held).
 *
 * Tokens: the signature algorithm must be one this module accepts (RS*,
 * PS*, ES256/384/512, EdDSA; never "none" nor HMAC) AND the key's: its
 * "alg" when the JWK has one, else one its kty/crv allows. RSA keys under
 * 2048 bits are ignored. Then iss, aud (RFC 8707: must hold this resource),
 * exp and nbf with 60 s leeway (jwt.c), the required scopes (a token
 * without one is answered 403 insufficient_scope naming all of them), and
 * a client id (client_id, azp, then sub).
 *
 * Threads: oauth_verify, oauth_challenge, oauth_metadata: any thread.
 */
#ifndef SKILL_OAUTH_H
#define SKILL_OAUTH_H

#include <stddef.h>

#include "jwt.h"

struct cfg;
struct err;
struct oauth;

#define OAUTH_PRM_PATH "/.well-known/oauth-protected-resource"

enum oauth_verdict { OAUTH_OK = 0, OAUTH_NO_TOKEN, OAUTH_INVALID, OAUTH_SCOPE };

struct oauth_result {
    char client[JWT_MAX_ID + 1];
    char groups[256];           /* comma-separated, or "" */
    char sub[256];              /* "sub", or "" (too long or not a string: "") */
    char scopes[512];           /* "scope" and "scp", space-separated ("" when too long) */
    char why[192];              /* for the client, when refused */
};


/*
 * Sets up from --oauth-* flags. port is the port listened on (the default
 * audience is http[s]://HOST:PORT/PATH). Blocks on the network (discovery,
 * the first JWKS). Returns NULL with *err set on any failure.
 */
struct oauth *oauth_new(const struct cfg *c, int port, struct err *err);
void oauth_free(struct oauth *o);

/* This resource's URI (the audience tokens must carry). */
const char *oauth_audience(const struct oauth *o);

/* Checks a bearer token (n bytes). Any thread. */
enum oauth_verdict oauth_verify(struct oauth *o, const char *token, size_t n,
                                struct oauth_result *r);

/* The WWW-Authenticate value for a refusal (RFC 6750 / RFC 9728). */
const char *oauth_challenge(const struct oauth *o, enum oauth_verdict v);

/*
 * The protected-resource metadata served at url (OAUTH_PRM_PATH, bare or
 * followed by the MCP path): 0 with a malloc'd JSON body, or -1 when url
 * names no such document.
 */
int oauth_metadata(const struct oauth *o, const char *url, char **body, size_t *len);

#endif
