/*
 * fuzz_acl.c - libFuzzer target for the --acl file's parser (acl.c).
 *
 * The input is the file. It loads, or fails with a message that names the
 * file and, when a line is at fault, "acl:LINE:" with a line the text has.
 * When it loads, a few callers are classified and their grants checked
 * against the names in the text: run implies see, and a caller is in the
 * same class each time it is classified.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet++)
        log_set_level(LOG_ERROR);
    struct err e = {0};
    const char *err = e.msg;
    const char *t = (const char *)data;
    struct acl_rules *r = acl_parse(t, size, "acl", &e);
    if (!r) {
        if (strncmp(err, "acl:", 4))
            abort();
        unsigned long line = strtoul(err + 4, NULL, 10);
        size_t lines = 1;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        if (line > lines)
            abort();
        return 0;
    }
    static const struct acl_who who[] = {
        {"ci-bot", "platform,dev", "alice@x", "openid skills.all"},
        {"x", "", NULL, NULL},
    };
    /* names: each line's third word, and a few fixed ones */
    char name[64];
    const char *fixed[] = {"ops/deploy", "public/a", "a", ""};
    for (size_t w = 0; w < 3; w++) {
        const struct acl_class *k = acl_rules_classify(r, w < 2 ? &who[w] : NULL);
        if (k != acl_rules_classify(r, w < 2 ? &who[w] : NULL))
            abort();
        for (size_t i = 0; i < 4; i++)
            if (acl_class_runs(k, fixed[i]) && !acl_class_sees(k, fixed[i]))
                abort();
        size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
        memcpy(name, t, n);
        name[n] = '\0';
        if (acl_class_runs(k, name) && !acl_class_sees(k, name))
            abort();
    }
    acl_rules_free(r);
    return 0;
}
