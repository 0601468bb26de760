/*
 * fuzz_fetch.c - libFuzzer target for what `skill-mcp fetch` reads from the
 * network: the discovery index (fetch_index_parse) and archive members
 * (fetch_extract in check-only mode, dirfd -1). The first byte picks which.
 * Checks the contract as well as memory safety: a parsed index has its
 * entries' fields or a problem, a refusal always says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void index_one(const char *buf, size_t len)
{
    struct fetch_entry *v;
    size_t n;
    struct err why = {0};
    if (fetch_index_parse(buf, len, &v, &n, &why) < 0) {
        if (!why.msg[0] || v || n)
            abort();
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct fetch_entry *f = &v[i];
        if (!f->problem && (!f->name || !f->description || !f->type || !f->url || !f->digest ||
                            strlen(f->digest) != 71))
            abort();
    }
    fetch_index_free(v, n);
}

static void archive_one(const char *buf, size_t len)
{
    /* small limits so that the caps themselves are reached */
    struct fetch_limits lim = {64, 1 << 20, 256 << 10};
    struct err why = {0};
    if (fetch_extract(-1, buf, len, &lim, &why) < 0 && !why.msg[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    /* a private copy so ASan sees reads past the end */
    char *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    if (data[0] & 1)
        archive_one(buf, size - 1);
    else
        index_one(buf, size - 1);
    free(buf);
    return 0;
}
