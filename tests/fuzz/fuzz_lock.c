/*
 * fuzz_lock.c - libFuzzer target for the lock file parser (lock.c). A lock
 * arrives through pull requests like the skills it approves, so its parser
 * takes any bytes. Whatever parses must render to text that parses back to
 * the same rendering (the file stays stable in git).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err e;
    memset(&e, 0, sizeof e);
    struct lock_table *t = lock_parse((const char *)data, size, "fuzz.lock", &e);
    if (!t)
        return 0;
    size_t len, len2;
    char *text = lock_render(t, &len);
    struct lock_table *t2 = lock_parse(text, len, "rendered.lock", &e);
    if (!t2)
        abort();    /* what we write must read back */
    char *text2 = lock_render(t2, &len2);
    if (len != len2 || memcmp(text, text2, len))
        abort();
    free(text);
    free(text2);
    lock_table_unref(t2);
    lock_table_unref(t);
    return 0;
}
