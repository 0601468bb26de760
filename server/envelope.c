/*
 * envelope.c - JSON-RPC 2.0 response wrapping, for both eras.
 */
#include "envelope.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "proto.h"
#include "util.h"

json_t *env_server_info(void)
{
    return json_pack("{s:s, s:s}", "name", SERVER_NAME, "version", SKILL_VERSION);
}

json_t *env_notification(const char *method, json_t *params)
{
    return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

void env_decorate_modern(json_t *result, int64_t ttl_ms)
{
    json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", env_server_info());
    if (ttl_ms >= 0) {
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
        json_object_set_new(result, "cacheScope", json_string("public"));
    }
}

#define ENV_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define ENV_RESULT ",\"result\":"

char *env_result_raw(json_t *id, const char *raw, size_t rawlen, size_t *len)
{
    /* One allocation (a kept reply buffer when one is big enough,
     * x_reply_alloc): this wraps every answer. The id is
     * a string or an integer (rpc.c checks), dumped as jf_dump dumps it;
     * anything else, or none, is null. */
    char num[21];
    const char *ids = "null";
    size_t idlen = 4;
    struct buf sid = {0};
    if (json_is_integer(id)) {
        idlen = x_i64_dec(num, json_integer_value(id));
        ids = num;
    } else if (id && jf_dump(&sid, id) == 0) {
        ids = sid.p;
        idlen = sid.len;
    }
    size_t n = sizeof ENV_HEAD - 1 + idlen + sizeof ENV_RESULT - 1 + rawlen + 1;
    char *s = x_reply_alloc(n + 1), *q = s;
    memcpy(q, ENV_HEAD, sizeof ENV_HEAD - 1);
    q += sizeof ENV_HEAD - 1;
    memcpy(q, ids, idlen);
    q += idlen;
    memcpy(q, ENV_RESULT, sizeof ENV_RESULT - 1);
    q += sizeof ENV_RESULT - 1;
    if (rawlen)
        memcpy(q, raw, rawlen);
    q += rawlen;
    *q++ = '}';
    *q = '\0';
    buf_cleanup(&sid);
    if (len)
        *len = n;
    return s;
}

char *env_result(json_t *id, json_t *result, int modern, int64_t ttl_ms, size_t *len)
{
    if (modern && !json_object_get(result, "resultType"))
        env_decorate_modern(result, ttl_ms);
    else if (modern && ttl_ms >= 0)
        env_decorate_modern(result, ttl_ms);
    size_t n;
    char *s = jf_dumps(result, &n);
    if (!s)
        return env_error(id, RPC_INTERNAL_ERROR, "Internal error: the result is not valid JSON", NULL, len);
    char *r = env_result_raw(id, s, n, len);
    free(s);
    return r;
}

char *env_error(json_t *id, int code, const char *msg, json_t *data, size_t *len)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg ? msg : "");
    if (!err) {
        /* msg was not valid UTF-8: never let that become a crash or bad JSON */
        err = json_pack("{s:i, s:s}", "code", code, "message", "error (message not shown)");
    }
    if (data)
        json_object_set_new(err, "data", data);
    json_t *r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "error", err);
    char *s = jf_dumps(r, len);
    json_decref(r);
    if (!s) {
        /* data that does not serialise (not UTF-8): the error without it */
        r = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                      "error", "code", code, "message", "error (message not shown)");
        s = jf_dumps(r, len);
        json_decref(r);
    }
    return s;
}
