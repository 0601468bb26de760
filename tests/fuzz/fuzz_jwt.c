/*
 * fuzz_jwt.c - libFuzzer target for the JWT header/claims parser and the
 * claims checks (server/jwt.c): every input is a compact token; a parse
 * that succeeds must leave offsets inside the input, a header object with
 * a string alg, and claims every check can read. The first input byte
 * also picks the clock, so the exp/nbf edges get reached.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jwt.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int64_t now = 1800000000 + ((int64_t)data[0] - 128) * 10;
    const char *tok = (const char *)data + 1;
    size_t n = size - 1;
    struct jwt j;
    struct err why = {0};
    if (jwt_parse(tok, n, &j, &why) != 0) {
        if (!memchr(why.msg, '\0', sizeof why.msg) || !utf8_valid(why.msg, strlen(why.msg)))
            abort();
        return 0;
    }
    if (!json_is_object(j.header) || !json_is_object(j.claims) || !j.alg ||
        j.signing_len >= n || j.sig_off != j.signing_len + 1 || j.sig_off >= n ||
        tok[j.signing_len] != '.')
        abort();
    (void)jwt_check_claims(j.claims, "https://auth.example.com", "https://skills.example.com/mcp",
                           now, JWT_LEEWAY_S, &why);
    const char *id = jwt_client_id(j.claims);
    if (id && (strlen(id) == 0 || strlen(id) > JWT_MAX_ID))
        abort();
    (void)jwt_has_scope(j.claims, "skills:read");
    char groups[64];
    int g = jwt_groups(j.claims, groups, sizeof groups);
    if (g < 0 || strlen(groups) >= sizeof groups)
        abort();
    jwt_free(&j);
    return 0;
}
