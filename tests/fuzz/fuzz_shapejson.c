/*
 * fuzz_shapejson.c - libFuzzer target for printed output that is JSON
 * (shape.c, shape_json_texts): "JSON in, JSON out, within budget". The
 * input is a script's stdout in a run result; whatever it is:
 *   - the result fits its budget (every budget here holds the envelope);
 *   - stdout_format is what shape_format_of says of the input, or "text"
 *     when the JSON could not be cut as JSON;
 *   - output reported as "json" parses as one JSON value, as "jsonl" as
 *     JSON Lines (one value a line, possibly none);
 *   - output that fitted is returned byte for byte.
 *
 * Input: byte 0 picks the budget, the rest is stdout (made UTF-8 first, as
 * the runner does).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shape.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct shape_text texts[] = {
    {"stdout", "stdout_format", "narrow it: --limit N"},
    {"stderr", "stderr_format", NULL},
};

/* 1 when every line of s[0..n) that is not blank is one JSON value. */
static int lines_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n;
        size_t a = i;
        while (a < e && strchr(" \t\r", s[a]))
            a++;
        if (a < e && shape_format_of(s + a, e - a) != SHAPE_JSON)
            return 0;
        i = e + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t tok[4] = {0, 200, 1500, 8000};
    static const size_t chr[4] = {600, 2000, 8000, 0};
    struct shape_budget b = {tok[data[0] & 3], chr[(data[0] >> 2) & 3]};
    if (!b.max_tokens && !b.max_chars)
        b.max_chars = 1000;
    char *text = xmalloc(size);
    size_t n = size - 1;
    memcpy(text, data + 1, n);
    text[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!text[i])
            text[i] = ' ';
    utf8_sanitize(text);
    enum shape_format in = shape_format_of(text, n);

    json_t *r = json_pack("{s:s, s:i, s:s%, s:s, s:b, s:s}", "status", "ok", "exit_code", 0,
                          "stdout", text, n, "stderr", "", "truncated", 0, "request_id",
                          "r-0123456789abcdef");
    if (!r)
        abort();
    int rc = shape_json_texts(r, &b, "the script printed too much", texts, 2);
    if (rc != 0 && rc != 1)
        abort();
    const char *out = json_string_value(json_object_get(r, "stdout"));
    const char *fmt = json_string_value(json_object_get(r, "stdout_format"));
    if (!out || !fmt)
        abort();
    size_t on = json_string_length(json_object_get(r, "stdout"));
    if (rc == 0 && (on != n || memcmp(out, text, n)))
        abort();
    if (strcmp(fmt, shape_format_name(in)) && strcmp(fmt, "text"))
        abort();
    if (!strcmp(fmt, "json") && shape_format_of(out, on) != SHAPE_JSON)
        abort();
    if (!strcmp(fmt, "jsonl") && !lines_ok(out, on))
        abort();
    char *s = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (!s)
        abort();
    size_t len = strlen(s);
    if (b.max_tokens && shape_tokens(s, len) > b.max_tokens)
        abort();
    if (b.max_chars && shape_chars(s, len) > b.max_chars)
        abort();
    free(s);
    json_decref(r);
    free(text);
    return 0;
}
