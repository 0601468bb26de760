/*
 * fuzz_markdown.c - libFuzzer target for md_sections and md_find. The first
 * line of the input (up to 64 bytes) is used as the name to find, the rest
 * as the body. Checks that sections are ordered and nest within the body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "markdown.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size < 64 ? size : 64);
    size_t nlen = nl ? (size_t)(nl - (const char *)data) : 0;
    size_t off = nl ? nlen + 1 : 0, len = size - off, n, i;
    char name[65];
    char *body = malloc(len ? len : 1);
    struct md_section *s;
    long k;

    if (!body)
        return 0;
    memcpy(name, data, nlen);
    name[nlen] = '\0';
    if (len)
        memcpy(body, data + off, len);
    n = md_sections(body, len, &s);
    for (i = 0; i < n; i++) {
        if (s[i].level < 1 || s[i].level > 6 || s[i].start >= len || s[i].end > len ||
            s[i].end <= s[i].start || s[i].title_off < s[i].start ||
            s[i].title_off + s[i].title_len > s[i].end ||
            (i > 0 && s[i].start <= s[i - 1].start))
            abort();
    }
    k = md_find(body, s, n, name);
    if (k < -1 || k >= (long)n)
        abort();
    if (n > 0 && md_find(body, s, n, "") < -1)
        abort();
    free(s);
    free(body);
    return 0;
}
