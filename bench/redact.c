/*
 * bench/redact.c - the cost of redaction (server/redact.c) on script output:
 * 10 MB of mixed text (log lines, prose, JSON rows, base64) with a secret
 * every ~100 KB, redacted with the built-in patterns; the median wall time
 * of RUNS runs on a warm text, then each built-in alone. Prints one line
 *
 *   redact_10mb_ms_p50=N redact_10mb_ms_max=N hits=N mb=10
 *
 * and a table. `bench/redact.sh` builds and runs it; its --smoke runs it on
 * 1 MB once and checks that the secrets were all found.
 *
 *   build/bench/redact [MB] [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redact.h"
#include "util.h"

static const char *const filler[] = {
    "2026-12-01T10:00:00Z INFO served GET /api/v1/items?page=3 status=200 bytes=5123 "
    "user=alice agent=curl/8.5 took=12ms\n",
    "The service reads its configuration at start; a secret is never written to the log, and "
    "the password policy asks for twelve characters at least.\n",
    "{\"id\": 4711, \"customer\": {\"name\": \"Ada\", \"email\": \"ada@example.com\"}, "
    "\"items\": [1, 2, 3], \"total\": 129.5, \"state\": \"shipped\"}\n",
    "    at com.example.orders.Service.handle(Service.java:212) caused by "
    "java.lang.IllegalStateException: authorization header missing\n",
    "dGhpcyBpcyBub3QgYSBzZWNyZXQsIGp1c3QgYmFzZTY0IG9mIGEgc2VudGVuY2UgdGhhdCBpcyBxdWl0ZSBsb25n\n",
    "Durchschnittliche Größe: 12 KB; 日本語のテキストも少し; naïve café résumé ✓\n",
};

static const char *const secrets[] = {
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig\n",
    "aws key AKIAIOSFODNN7EXAMPLE in use\n",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    "token ghp_0123456789abcdefghijABCDEFGHIJ012345 ok\n",
    "slack xoxb-1234567890-abcdefABCDEF\n",
    "db password=hunter2-correct-horse\n",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
};
#define NSECRETS (sizeof secrets / sizeof *secrets)

static char *make_text(size_t n, size_t *len, size_t *planted)
{
    char *t = xmalloc(n + 256);
    size_t at = 0, k = 0, next_secret = 50000;
    unsigned seed = 12345;
    *planted = 0;
    while (at < n) {
        const char *s;
        if (at >= next_secret) {
            s = secrets[(*planted)++ % NSECRETS];
            next_secret += 100000;
        } else {
            seed = seed * 1103515245u + 12345u;
            s = filler[(seed >> 16) % (sizeof filler / sizeof *filler)];
        }
        size_t l = strlen(s);
        if (at + l > n)
            break;
        memcpy(t + at, s, l);
        at += l;
        k++;
    }
    t[at] = '\0';
    *len = at;
    return t;
}

static double ms_since(const struct timespec *a)
{
    struct timespec z;
    clock_gettime(CLOCK_MONOTONIC, &z);
    return (double)(z.tv_sec - a->tv_sec) * 1e3 + (double)(z.tv_nsec - a->tv_nsec) / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of runs redactions of t with set s; *hits from the last. */
static double time_set(const struct redact_set *s, const char *t, size_t n, int runs,
                       long *hits, double *max)
{
    double ms[64];
    if (runs > 64)
        runs = 64;
    for (int r = -1; r < runs; r++) {       /* one warm-up */
        json_t *c = json_object();
        size_t len;
        struct timespec a;
        clock_gettime(CLOCK_MONOTONIC, &a);
        char *out = redact_text(s, NULL, t, n, &len, c);
        double d = ms_since(&a);
        if (r >= 0)
            ms[r] = d;
        const char *k;
        json_t *v;
        *hits = 0;
        json_object_foreach(c, k, v) *hits += (long)json_integer_value(v);
        free(out);
        json_decref(c);
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_d);
    if (max)
        *max = ms[runs - 1];
    return ms[runs / 2];
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 10;
    int runs = argc > 2 ? atoi(argv[2]) : 9;
    if (!mb || runs < 1) {
        fprintf(stderr, "usage: redact [MB] [RUNS]\n");
        return 2;
    }
    log_set_level(LOG_ERROR);
    size_t n, planted;
    char *t = make_text(mb << 20, &n, &planted);
    struct err e = {0};
    const char *err = e.msg;
    struct redact_set *all = redact_set_parse(NULL, 0, NULL, 1, &e);
    if (!all) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    long hits;
    double max;
    double p50 = time_set(all, t, n, runs, &hits, &max);
    printf("redact_%zumb_ms_p50=%.1f redact_%zumb_ms_max=%.1f hits=%ld planted=%zu mb=%zu\n", mb,
           p50, mb, max, hits, planted, mb);
    printf("\n| patterns | ms (median of %d) |\n|---|---:|\n| all built-ins | %.1f |\n", runs,
           p50);
    const char *name, *re, *prev = "";
    for (size_t i = 0; (re = redact_builtin(i, &name)); prev = name, i++) {
        /* each built-in alone, as a file would give it */
        char line[1024];
        snprintf(line, sizeof line, "%s\t%s\n", name, re);
        struct redact_set *one = redact_set_parse(line, strlen(line), "bench", 0, &e);
        if (!one) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        long h;
        double ms = time_set(one, t, n, runs, &h, NULL);
        printf("| %s%s | %.1f |\n", name, strcmp(name, prev) ? "" : " (its second pattern)", ms);
        redact_set_free(one);
    }
    redact_set_free(all);
    free(t);
    return hits == (long)planted ? 0 : 1;
}
