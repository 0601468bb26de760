/*
 * cli_token.c - `skill-mcp token add NAME [--rpm N] --file FILE`: a new
 * random client token, its digest appended to the token file (auth.c reads
 * that file; its format is auth.c's), the token printed once.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "util.h"

static void token_usage(FILE *out)
{
    fprintf(out,
            "usage: skill-mcp token add NAME [--rpm N] --file FILE\n"
            "  Makes a random token for client NAME, appends NAME, the token's SHA-256 and\n"
            "  the rate limit (requests per minute; none = unlimited) to FILE (created with\n"
            "  mode 0600), and prints the token once. Keep it: it is not stored anywhere.\n");
}

static void b64url(const unsigned char *in, size_t n, char *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        out[o++] = al[v >> 6 & 63];
        out[o++] = al[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        out[o++] = al[v >> 6 & 63];
    }
    out[o] = '\0';
}

int cli_token(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")
        || !strcmp(argv[0], "help")) {
        token_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "add")) {
        fprintf(stderr, "skill-mcp token: unknown command \"%s\"\n", argv[0]);
        token_usage(stderr);
        return 2;
    }
    const char *name = NULL, *file = NULL;
    long rpm = -1;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--rpm") || !strcmp(argv[i], "--file")) && i + 1 >= argc) {
            fprintf(stderr, "skill-mcp token add: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--rpm")) {
            char *end;
            errno = 0;
            rpm = strtol(argv[++i], &end, 10);
            if (errno || end == argv[i] || *end || rpm < 0 || rpm > AUTH_MAX_RPM
                || !isdigit((unsigned char)argv[i][0])) {
                fprintf(stderr, "skill-mcp token add: --rpm wants a whole number from 0 to %d\n",
                        AUTH_MAX_RPM);
                return 2;
            }
        } else if (!strcmp(argv[i], "--file")) {
            file = argv[++i];
        } else if (!strncmp(argv[i], "--file=", 7)) {
            file = argv[i] + 7;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "skill-mcp token add: unknown option %s\n", argv[i]);
            token_usage(stderr);
            return 2;
        } else if (!name) {
            name = argv[i];
        } else {
            fprintf(stderr, "skill-mcp token add: one NAME only\n");
            return 2;
        }
    }
    if (!name || !file) {
        token_usage(stderr);
        return 2;
    }
    if (!auth_id_valid(name, strlen(name))) {
        fprintf(stderr, "skill-mcp token add: invalid client name \"%.64s\": 1-%d characters "
                "of A-Z a-z 0-9 . _ - @\n", name, AUTH_MAX_ID);
        return 2;
    }
    int fd = open(file, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "skill-mcp token add: cannot open %s: %s\n", file, strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX)) {
        fprintf(stderr, "skill-mcp token add: cannot lock %s: %s\n", file, strerror(errno));
        close(fd);
        return 1;
    }
    int ends_nl = 1;
    if (auth_file_names(fd, name, &ends_nl)) {
        fprintf(stderr, "skill-mcp token add: client \"%s\" is already in %s (remove its line "
                "to revoke it first)\n", name, file);
        close(fd);
        return 1;
    }
    unsigned char raw[32];
    if (x_random(raw, sizeof raw) < 0) {
        fprintf(stderr, "skill-mcp token add: getrandom: %s\n", strerror(errno));
        close(fd);
        return 1;
    }
    char token[8 + 48];
    memcpy(token, "smcp_", 5);
    b64url(raw, sizeof raw, token + 5);
    OPENSSL_cleanse(raw, sizeof raw);
    /* A file whose last line has no newline gets one first. */
    char line[AUTH_MAX_ID + 128];
    int lead = !ends_nl;
    line[0] = '\n';
    int n = auth_token_line(name, token, rpm, line + lead, sizeof line - 1);
    if (n < 0) {
        fprintf(stderr, "skill-mcp token add: SHA-256 failed\n");
        close(fd);
        return 1;
    }
    n += lead;
    if (x_write_all(fd, line, (size_t)n) || fsync(fd)) {
        fprintf(stderr, "skill-mcp token add: cannot write %s: %s\n", file, strerror(errno));
        close(fd);
        return 1;
    }
    close(fd);
    printf("%s\n", token);
    fflush(stdout);
    OPENSSL_cleanse(token, sizeof token);
    fprintf(stderr, "skill-mcp: client \"%s\" added to %s%s; the token above is shown once\n",
            name, file, rpm > 0 ? "" : " (no rate limit)");
    return 0;
}
