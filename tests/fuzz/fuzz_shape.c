/*
 * fuzz_shape.c - libFuzzer target for the result shaper (shape.c): the
 * token and character counts over any bytes, and shape_json over any JSON
 * a tool could return, against budgets from tiny to unlimited. Besides
 * memory errors it checks the contract: a result reported as fitting (0 or
 * 1) fits its budget when serialised as tools.c serialises it, and the
 * character count never exceeds the byte count.
 *
 * Input: byte 0 and 1 pick the token and character budgets, the rest is the
 * result (JSON; anything else becomes the stdout of a script result).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shape.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const size_t tok[8] = {0, 1, 8, 40, 200, 1000, 5000, 32000};
    static const size_t chr[8] = {0, 3, 30, 150, 800, 4000, 20000, 48000};
    struct shape_budget b = {tok[data[0] & 7], chr[data[1] & 7]};
    const char *text = (const char *)data + 2;
    size_t n = size - 2;

    if (shape_chars(text, n) > n)
        abort();
    (void)shape_tokens(text, n);

    json_t *r = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!r) {
        if (!utf8_valid(text, n))
            return 0;
        r = json_pack("{s:s%, s:s, s:i, s:b}", "stdout", text, n, "stderr", "", "exit_code", 0,
                      "truncated", 0);
        if (!r)
            return 0;
    }
    int rc = shape_json(r, &b, (data[0] & 8) ? "narrow the call" : NULL);
    if (rc < 0 || rc > 2)
        abort();
    if (json_is_object(r) && rc != 2) {
        char *out = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (out) {
            size_t len = strlen(out);
            if (b.max_tokens && shape_tokens(out, len) > b.max_tokens)
                abort();
            if (b.max_chars && shape_chars(out, len) > b.max_chars)
                abort();
            free(out);
        }
    }
    json_decref(r);
    return 0;
}
