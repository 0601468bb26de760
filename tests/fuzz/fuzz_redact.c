/*
 * fuzz_redact.c - libFuzzer target for redaction (redact.c): the pattern
 * file's parser and the engine.
 *
 * Input: byte 0 picks the mode, the rest is the text.
 *   even: the text is a --redact file. It loads or fails with a message
 *         naming the file; when it loads, its own text is redacted with it.
 *   odd:  the text is output (made UTF-8 first, as the runner does),
 *         redacted with the built-ins, a few file patterns and, as an
 *         environment value, its first line. Then:
 *           - the result is valid UTF-8 (the server stores it unchecked);
 *           - output that was JSON or JSON Lines still is;
 *           - as text, an environment value of letters and digits is gone.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "script.h"
#include "shape.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct redact_set *fixed;

static int alnum(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

static void file_mode(const char *t, size_t n)
{
    struct err e = {0};
    const char *err = e.msg;
    struct redact_set *s = redact_set_parse(t, n, "fuzz.txt", (n & 1) != 0, &e);
    if (!s) {
        if (strncmp(err, "fuzz.txt", 8) && strncmp(err, "built-in", 8))
            abort();        /* every message names the file */
        return;
    }
    size_t len;
    free(redact_text(s, NULL, t, n, &len, NULL));
    redact_set_free(s);
}

static void output_mode(const char *in, size_t n)
{
    int changed;
    size_t len;
    char *t = script_utf8_repair(in, n, &len, &changed);
    if (!fixed) {
        struct err e = {0};
        const char *f = "ticket\t(?i)TICKET-[0-9]{2,}\nkv\t(?m)^key:\\s*\\K\\S+\ndig\t[0-9]{6,}\n";
        fixed = redact_set_parse(f, strlen(f), "fixed", 1, &e);
        if (!fixed)
            abort();
    }
    const char *nl = memchr(t, '\n', len);
    size_t vl = nl ? (size_t)(nl - t) : len;
    /* a value the server passes is a whole JSON string: cut on a character */
    char *val = xstrndup(t, utf8_trim(t, vl > 200 ? 200 : vl));
    char *kv = xmalloc(strlen(val) + 8);
    sprintf(kv, "SECRET=%s", val);
    char *envp[] = {kv, NULL};
    json_t *names = json_pack("[s]", "SECRET");
    struct redact_env *e = redact_env_new(envp, names);
    json_t *counts = json_object();
    size_t olen;
    char *out = redact_text(fixed, e, t, len, &olen, counts);
    if (out) {
        if (!utf8_valid(out, olen) && utf8_valid(t, len))
            abort();
        enum shape_format a = shape_format_of(t, len), b = shape_format_of(out, olen);
        if (a != SHAPE_TEXT && a != b)
            abort();
        if (a == SHAPE_TEXT && e && alnum(val) && memmem(out, olen, val, strlen(val)) &&
            !json_object_get(counts, "error"))
            abort();
        if (!json_object_size(counts))
            abort();        /* a change is always counted */
    } else if (e && alnum(val) && shape_format_of(t, len) == SHAPE_TEXT) {
        abort();            /* the value is on the first line: it must go */
    }
    free(out);
    json_decref(counts);
    json_decref(names);
    redact_env_free(e);
    free(kv);
    free(val);
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int init;
    if (!init) {
        log_set_level(LOG_ERROR);
        init = 1;
    }
    if (data[0] & 1)
        output_mode((const char *)data + 1, size - 1);
    else
        file_mode((const char *)data + 1, size - 1);
    return 0;
}
