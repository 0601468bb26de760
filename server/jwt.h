/*
 * jwt.h - the parts of a JWT access token that need no key: splitting the
 * compact form, decoding header and claims, and checking the claims
 * (RFC 7519, RFC 9068). Signatures are checked in oauth.c with libjose.
 *
 * Pure functions, any thread; no I/O, no global state. Fuzzed by
 * tests/fuzz/fuzz_jwt.c, unit-tested by tests/unit/test_jwt.c.
 */
#ifndef SKILL_JWT_H
#define SKILL_JWT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct err;

#define JWT_MAX_LEN 8192        /* longest compact token accepted */
#define JWT_LEEWAY_S 60         /* clock skew allowed on exp and nbf */
#define JWT_MAX_ID 64           /* longest client id taken from a token */

struct jwt {
    json_t *header;             /* the decoded protected header (an object) */
    json_t *claims;             /* the decoded payload (an object) */
    const char *alg;            /* header "alg" (borrowed from header) */
    const char *kid;            /* header "kid", or NULL */
    size_t signing_len;         /* "header.payload": the first signing_len bytes */
    size_t sig_off;             /* the base64url signature starts here */
};

/*
 * Splits and decodes token (n bytes, not NUL-terminated necessarily).
 * Returns 0 and fills *j (free with jwt_free), or -1 with *why set: not
 * three base64url parts, header or claims not a JSON object, no "alg",
 * a "crit" header (no extension is understood, RFC 7515 4.1.11).
 */
int jwt_parse(const char *token, size_t n, struct jwt *j, struct err *why);
void jwt_free(struct jwt *j);

/*
 * Checks iss (equal to issuer), aud (a string or an array holding audience,
 * RFC 8707), exp (required; now <= exp + leeway), nbf (when present;
 * now + leeway >= nbf). now is Unix seconds. Returns 0 or -1 with *why
 * set to a sentence a client may read.
 */
int jwt_check_claims(const json_t *claims, const char *issuer, const char *audience,
                     int64_t now, int64_t leeway, struct err *why);

/*
 * The client the token names: "client_id", else "azp", else "sub", when it
 * is 1-JWT_MAX_ID printable characters without space, quote or backslash.
 * Returns the borrowed string or NULL.
 */
const char *jwt_client_id(const json_t *claims);

/*
 * 1 when the token grants scope: the space-separated "scope" string
 * (RFC 9068) or the "scp" array holds it.
 */
int jwt_has_scope(const json_t *claims, const char *scope);

/*
 * The "groups" claim (an array of strings) joined with commas into out;
 * groups that are not printable text without comma are left out. Returns
 * the number kept.
 */
int jwt_groups(const json_t *claims, char *out, size_t outlen);

#endif
