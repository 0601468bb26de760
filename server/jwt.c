/*
 * jwt.c - see jwt.h.
 */
#include "jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"
#include "util.h"

static int b64url_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Decodes one base64url part into a JSON object, or NULL. */
static json_t *part_json(const char *p, size_t n)
{
    if (n == 0)
        return NULL;
    size_t need = DL(jose_b64_dec_buf)(p, n, NULL, 0);
    if (need == SIZE_MAX || need == 0 || need > JWT_MAX_LEN)
        return NULL;
    char *out = malloc(need);
    if (!out)
        return NULL;
    size_t got = DL(jose_b64_dec_buf)(p, n, out, need);
    json_t *j = NULL;
    /* No duplicate member may shadow another (a claim read twice must read
     * the same), and the whole part must be the one value. */
    if (got == need)
        j = json_loadb(out, got, JSON_REJECT_DUPLICATES, NULL);
    free(out);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

int jwt_parse(const char *token, size_t n, struct jwt *j, struct err *why)
{
    memset(j, 0, sizeof *j);
    char dlerr[320];
    if (dynlib_need(DL_JOSE, dlerr, sizeof dlerr) < 0) {
        err_set(why, 0, 0, "%s", dlerr);
        return -1;
    }
    if (!token || n == 0) {
        err_set(why, 0, 0, "the token is empty");
        return -1;
    }
    if (n > JWT_MAX_LEN) {
        err_set(why, 0, 0, "the token is longer than %d bytes", JWT_MAX_LEN);
        return -1;
    }
    size_t dot[2], nd = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)token[i];
        if (c == '.') {
            if (nd == 2) {
                err_set(why, 0, 0, "the token is not a JWS in compact form (more than 3 parts)");
                return -1;
            }
            dot[nd++] = i;
        } else if (!b64url_char(c)) {
            err_set(why, 0, 0, "the token is not base64url text");
            return -1;
        }
    }
    if (nd != 2) {
        err_set(why, 0, 0, "the token is not a JWT (three dot-separated parts)");
        return -1;
    }
    if (dot[1] + 1 >= n) {
        err_set(why, 0, 0, "the token has no signature");
        return -1;
    }
    j->header = part_json(token, dot[0]);
    if (!j->header) {
        err_set(why, 0, 0, "the token header is not a base64url JSON object");
        goto fail;
    }
    j->claims = part_json(token + dot[0] + 1, dot[1] - dot[0] - 1);
    if (!j->claims) {
        err_set(why, 0, 0, "the token claims are not a base64url JSON object");
        goto fail;
    }
    json_t *alg = json_object_get(j->header, "alg");
    if (!json_is_string(alg) || !json_string_length(alg)) {
        err_set(why, 0, 0, "the token header has no \"alg\"");
        goto fail;
    }
    j->alg = json_string_value(alg);
    json_t *kid = json_object_get(j->header, "kid");
    if (kid && !json_is_string(kid)) {
        err_set(why, 0, 0, "the token header's \"kid\" is not a string");
        goto fail;
    }
    j->kid = kid ? json_string_value(kid) : NULL;
    if (json_object_get(j->header, "crit")) {
        err_set(why, 0, 0, "the token header names critical extensions, none is understood");
        goto fail;
    }
    j->signing_len = dot[1];
    j->sig_off = dot[1] + 1;
    return 0;
fail:
    jwt_free(j);
    return -1;
}

void jwt_free(struct jwt *j)
{
    if (!j)
        return;
    json_decref(j->header);
    json_decref(j->claims);
    memset(j, 0, sizeof *j);
}

/* A NumericDate claim as whole seconds: 0 when absent, -1 when malformed. */
static int numeric_date(const json_t *claims, const char *name, int64_t *out)
{
    json_t *v = json_object_get(claims, name);
    if (!v)
        return 0;
    double d;
    if (json_is_integer(v))
        d = (double)json_integer_value(v);
    else if (json_is_real(v))
        d = json_real_value(v);
    else
        return -1;
    /* Outside +-2^53 a date means nothing and the cast could overflow. */
    if (!(d > -9007199254740992.0 && d < 9007199254740992.0))
        return -1;
    *out = (int64_t)d;
    return 1;
}

int jwt_check_claims(const json_t *claims, const char *issuer, const char *audience,
                     int64_t now, int64_t leeway, struct err *why)
{
    json_t *iss = json_object_get(claims, "iss");
    if (!json_is_string(iss) || strcmp(json_string_value(iss), issuer)) {
        err_set(why, 0, 0, "the token was not issued by this server's authorization server");
        return -1;
    }
    json_t *aud = json_object_get(claims, "aud");
    int aud_ok = 0;
    if (json_is_string(aud)) {
        aud_ok = !strcmp(json_string_value(aud), audience);
    } else if (json_is_array(aud)) {
        size_t i;
        json_t *a;
        json_array_foreach(aud, i, a)
            if (json_is_string(a) && !strcmp(json_string_value(a), audience))
                aud_ok = 1;
    }
    if (!aud_ok) {
        err_set(why, 0, 0, "the token is not for this resource (its audience is not %s)",
                audience);
        return -1;
    }
    int64_t exp = 0, nbf = 0;
    int has_exp = numeric_date(claims, "exp", &exp);
    if (has_exp <= 0) {
        err_set(why, 0, 0, "%s", has_exp < 0 ? "the token's \"exp\" is not a number"
                                              : "the token has no expiry (\"exp\")");
        return -1;
    }
    if (now > exp + leeway) {
        err_set(why, 0, 0, "the token has expired");
        return -1;
    }
    int has_nbf = numeric_date(claims, "nbf", &nbf);
    if (has_nbf < 0) {
        err_set(why, 0, 0, "the token's \"nbf\" is not a number");
        return -1;
    }
    if (has_nbf && now + leeway < nbf) {
        err_set(why, 0, 0, "the token is not valid yet (\"nbf\")");
        return -1;
    }
    return 0;
}

static int id_char(unsigned char c)
{
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
}

static const char *id_claim(const json_t *claims, const char *name)
{
    json_t *v = json_object_get(claims, name);
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > JWT_MAX_ID || strlen(s) != n)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!id_char((unsigned char)s[i]))
            return NULL;
    return s;
}

const char *jwt_client_id(const json_t *claims)
{
    /* Only the first claim present counts: a malformed client_id must not
     * fall through to a sub that names someone else. */
    static const char *const order[] = {"client_id", "azp", "sub"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (json_object_get(claims, order[i]))
            return id_claim(claims, order[i]);
    return NULL;
}

int jwt_has_scope(const json_t *claims, const char *scope)
{
    size_t want = strlen(scope);
    if (!want)
        return 1;
    json_t *s = json_object_get(claims, "scope");
    if (json_is_string(s)) {
        const char *p = json_string_value(s);
        while (*p) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, " ");
            if (n == want && !memcmp(p, scope, n))
                return 1;
            p += n;
        }
    }
    json_t *scp = json_object_get(claims, "scp");
    if (json_is_array(scp)) {
        size_t i;
        json_t *v;
        json_array_foreach(scp, i, v)
            if (json_is_string(v) && !strcmp(json_string_value(v), scope))
                return 1;
    }
    return 0;
}

int jwt_groups(const json_t *claims, char *out, size_t outlen)
{
    if (!outlen)
        return 0;
    out[0] = '\0';
    json_t *g = json_object_get(claims, "groups");
    if (!json_is_array(g))
        return 0;
    size_t used = 0, i;
    int kept = 0;
    json_t *v;
    json_array_foreach(g, i, v) {
        if (!json_is_string(v))
            continue;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), k;
        if (n == 0 || strlen(s) != n)
            continue;
        for (k = 0; k < n; k++)
            if (!id_char((unsigned char)s[k]) || s[k] == ',')
                break;
        if (k < n || used + (used ? 1 : 0) + n + 1 > outlen)
            continue;
        if (used)
            out[used++] = ',';
        memcpy(out + used, s, n);
        used += n;
        out[used] = '\0';
        kept++;
    }
    return kept;
}
