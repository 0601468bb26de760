/*
 * estimate.c - prints shape_tokens() and shape_chars() of each file named on
 * the command line, one "TOKENS CHARS PATH" line each. Built and run by
 * measure-tokens.mjs.
 */
#include "shape.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            perror(argv[a]);
            return 2;
        }
        struct buf b;
        buf_init(&b, 0);
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
            buf_append(&b, chunk, n);
        fclose(f);
        printf("%zu %zu %s\n", shape_tokens(b.p ? b.p : "", b.len), shape_chars(b.p ? b.p : "", b.len),
               argv[a]);
        buf_cleanup(&b);
    }
    return 0;
}
