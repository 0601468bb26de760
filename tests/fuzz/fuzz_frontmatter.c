/*
 * fuzz_frontmatter.c - libFuzzer target for fm_parse. Every input is parsed
 * twice: as a prefix that may go on (complete=0) and as a whole file.
 * Checks the contract as well as memory safety: results and offsets are in
 * range, errors carry a message, -EAGAIN only for incomplete input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontmatter.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *buf, size_t len, int complete)
{
    struct fm fm;
    struct err err;
    int rc;

    memset(&err, 0, sizeof(err));
    rc = fm_parse(buf, len, complete, &fm, &err);
    if (rc == 0) {
        if (!json_is_object(fm.fields) || fm.body_off > len || fm.fm_off > len ||
            fm.fm_len > len - fm.fm_off || fm.body_off < fm.fm_off + fm.fm_len)
            abort();
        fm_cleanup(&fm);
    } else if (rc == -EINVAL) {
        if (fm.fields || err.msg[0] == '\0' || err.line < 1 ||
            !memchr(err.msg, '\0', sizeof(err.msg)))
            abort();
    } else if (rc != -EAGAIN || complete) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_each_completeness(data, size, one);
    return 0;
}
