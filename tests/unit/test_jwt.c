/*
 * test_jwt.c - the JWT splitter and claims checks (server/jwt.c): leeway on
 * exp and nbf, aud as a string or an array, iss, client id order, scopes,
 * groups, and malformed compact forms.
 */
#include "harness.h"
#include "jwt.h"
#include "util.h"

#include <jose/b64.h>

#define ISS "https://auth.example.com"
#define AUD "https://skills.example.com/mcp"
#define NOW 1800000000

static json_t *claims(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"exp\":%d%s%s}",
             NOW + 300, extra[0] ? "," : "", extra);
    return json_loads(text, 0, NULL);
}

/* 0 when the claims (the base ones overridden by extra) pass at now. */
static int check_at(const char *extra, long long now, char *why, size_t n)
{
    json_t *c = claims("");
    json_t *x = json_loads(extra[0] ? extra : "{}", 0, NULL);
    json_object_update(c, x);
    json_decref(x);
    struct err e = {0};
    int r = jwt_check_claims(c, ISS, AUD, now, JWT_LEEWAY_S, &e);
    snprintf(why, n, "%s", e.msg);
    json_decref(c);
    return r;
}

TEST(exp_leeway)
{
    char why[192];
    CHECK_EQ(check_at("", NOW, why, sizeof why), 0);
    CHECK_EQ(check_at("", NOW + 300 + 60, why, sizeof why), 0);   /* at exp + leeway */
    CHECK_EQ(check_at("", NOW + 300 + 61, why, sizeof why), -1);
    CHECK(strstr(why, "expired"));
    CHECK_EQ(check_at("{\"exp\":1800000000.5}", NOW + 60, why, sizeof why), 0);
    CHECK_EQ(check_at("{\"exp\":\"soon\"}", NOW, why, sizeof why), -1);
    CHECK(strstr(why, "\"exp\" is not a number"));
    CHECK_EQ(check_at("{\"exp\":1e300}", NOW, why, sizeof why), -1);
    json_t *c = json_loads("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\"}", 0, NULL);
    struct err e;
    CHECK_EQ(jwt_check_claims(c, ISS, AUD, NOW, 60, &e), -1);
    CHECK_STR(e.msg, "the token has no expiry (\"exp\")");
    json_decref(c);
}

TEST(nbf_leeway)
{
    char why[192];
    CHECK_EQ(check_at("{\"nbf\":1800000060}", NOW, why, sizeof why), 0);  /* nbf - leeway */
    CHECK_EQ(check_at("{\"nbf\":1800000061}", NOW, why, sizeof why), -1);
    CHECK(strstr(why, "not valid yet"));
    CHECK_EQ(check_at("{\"nbf\":1799999000}", NOW, why, sizeof why), 0);
    CHECK_EQ(check_at("{\"nbf\":null}", NOW, why, sizeof why), -1);
}

TEST(aud_string_or_array)
{
    char why[192];
    CHECK_EQ(check_at("{\"aud\":[\"other\",\"" AUD "\"]}", NOW, why, sizeof why), 0);
    CHECK_EQ(check_at("{\"aud\":[\"other\"]}", NOW, why, sizeof why), -1);
    CHECK(strstr(why, "audience"));
    CHECK_EQ(check_at("{\"aud\":\"" AUD "/\"}", NOW, why, sizeof why), -1);   /* exact only */
    CHECK_EQ(check_at("{\"aud\":\"https://skills.example.com\"}", NOW, why, sizeof why), -1);
    CHECK_EQ(check_at("{\"aud\":[]}", NOW, why, sizeof why), -1);
    CHECK_EQ(check_at("{\"aud\":[1,null,{}]}", NOW, why, sizeof why), -1);
    CHECK_EQ(check_at("{\"aud\":null}", NOW, why, sizeof why), -1);
}

TEST(iss_exact)
{
    char why[192];
    CHECK_EQ(check_at("{\"iss\":\"" ISS "/\"}", NOW, why, sizeof why), -1);
    CHECK(strstr(why, "issued"));
    CHECK_EQ(check_at("{\"iss\":null}", NOW, why, sizeof why), -1);
}

TEST(client_id_order)
{
    json_t *c = json_loads("{\"client_id\":\"a\",\"azp\":\"b\",\"sub\":\"c\"}", 0, NULL);
    CHECK_STR(jwt_client_id(c), "a");
    json_object_del(c, "client_id");
    CHECK_STR(jwt_client_id(c), "b");
    json_object_del(c, "azp");
    CHECK_STR(jwt_client_id(c), "c");
    /* a malformed client_id does not fall through to sub */
    json_object_set_new(c, "client_id", json_string("has space"));
    CHECK(!jwt_client_id(c));
    json_object_set_new(c, "client_id", json_integer(7));
    CHECK(!jwt_client_id(c));
    json_object_set_new(c, "client_id", json_string(""));
    CHECK(!jwt_client_id(c));
    json_object_set_new(c, "client_id", json_stringn("a\0b", 3));
    CHECK(!jwt_client_id(c));
    char longid[80];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    json_object_set_new(c, "client_id", json_string(longid));
    CHECK(!jwt_client_id(c));
    json_decref(c);
}

TEST(scopes)
{
    json_t *c = json_loads("{\"scope\":\"  skills:read skills:runner \"}", 0, NULL);
    CHECK(jwt_has_scope(c, "skills:read"));
    CHECK(!jwt_has_scope(c, "skills:run"));      /* whole words only */
    CHECK(!jwt_has_scope(c, "skills"));
    json_decref(c);
    c = json_loads("{\"scp\":[\"skills:run\",3]}", 0, NULL);
    CHECK(jwt_has_scope(c, "skills:run"));
    CHECK(!jwt_has_scope(c, "skills:read"));
    json_decref(c);
}

TEST(groups)
{
    char out[32];
    json_t *c = json_loads("{\"groups\":[\"platform\",\"on,call\",7,\"\",\"ops\",\"a b\"]}", 0, NULL);
    CHECK_EQ(jwt_groups(c, out, sizeof out), 2);
    CHECK_STR(out, "platform,ops");
    CHECK_EQ(jwt_groups(c, out, 9), 1);          /* what does not fit is left out */
    CHECK_STR(out, "platform");
    json_decref(c);
}

static int parse(const char *tok, char *why)
{
    struct jwt j;
    struct err e = {0};
    int r = jwt_parse(tok, strlen(tok), &j, &e);
    snprintf(why, 192, "%s", e.msg);
    jwt_free(&j);
    return r;
}

/* base64url of s, in a static ring of buffers. */
static const char *b64(const char *s)
{
    static char ring[4][256];
    static int k;
    char *out = ring[k++ % 4];
    size_t n = jose_b64_enc_buf(s, strlen(s), out, sizeof ring[0] - 1);
    out[n == SIZE_MAX ? 0 : n] = '\0';
    return out;
}

TEST(parse_compact)
{
    char why[192], tok[512];
    const char *hb = b64("{\"alg\":\"RS256\",\"kid\":\"k1\"}"), *cb = b64("{\"sub\":\"a\"}");
    snprintf(tok, sizeof tok, "%s.%s.c2ln", hb, cb);
    struct jwt j;
    CHECK_EQ(jwt_parse(tok, strlen(tok), &j, NULL), 0);
    CHECK_STR(j.alg, "RS256");
    CHECK_STR(j.kid, "k1");
    CHECK_EQ(j.signing_len, strlen(hb) + 1 + strlen(cb));
    CHECK_STR(tok + j.sig_off, "c2ln");
    CHECK_STR(json_string_value(json_object_get(j.claims, "sub")), "a");
    jwt_free(&j);
    /* n bounds the token: what follows is not read */
    CHECK_EQ(jwt_parse(tok, strlen(tok) - 4, &j, NULL), -1);
    snprintf(tok, sizeof tok, "%s.%s.", hb, cb);
    CHECK_EQ(parse(tok, why), -1);
    CHECK(strstr(why, "no signature"));
    snprintf(tok, sizeof tok, "%s.%s", hb, cb);
    CHECK_EQ(parse(tok, why), -1);
    snprintf(tok, sizeof tok, "%s.%s.a.b", hb, cb);
    CHECK_EQ(parse(tok, why), -1);
    snprintf(tok, sizeof tok, "%s.%s.a=", hb, cb);
    CHECK_EQ(parse(tok, why), -1);
    CHECK_EQ(parse("e30.e30.c2ln", why), -1);       /* {} header: no alg */
    CHECK(strstr(why, "alg"));
    CHECK_EQ(parse("W10.e30.c2ln", why), -1);       /* [] header */
    CHECK_EQ(parse("", why), -1);
    snprintf(tok, sizeof tok, "%s.%s.c2ln", b64("{\"alg\":\"RS256\",\"crit\":[\"x\"]}"), cb);
    CHECK_EQ(parse(tok, why), -1);
    CHECK(strstr(why, "critical"));
    /* two "alg" members: which one a reader takes must never matter */
    snprintf(tok, sizeof tok, "%s.%s.c2ln", b64("{\"alg\":\"none\",\"alg\":\"RS256\"}"), cb);
    CHECK_EQ(parse(tok, why), -1);
    snprintf(tok, sizeof tok, "%s.%s.c2ln", b64("{\"alg\":\"RS256\",\"kid\":5}"), cb);
    CHECK_EQ(parse(tok, why), -1);
    snprintf(tok, sizeof tok, "%s.%s.c2ln", hb, b64("{\"sub\":\"a\"} x"));
    CHECK_EQ(parse(tok, why), -1);                  /* trailing bytes after the claims */
}

int main(void)
{
    RUN(exp_leeway);
    RUN(nbf_leeway);
    RUN(aud_string_or_array);
    RUN(iss_exact);
    RUN(client_id_order);
    RUN(scopes);
    RUN(groups);
    RUN(parse_compact);
    DONE();
}
