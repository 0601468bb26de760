/*
 * mcpc.c - a tiny HTTP/1.1 client for the scale benchmark and the profile:
 * exact request counts (wrk has only durations), and timings without a
 * process start per request (curl costs milliseconds of its own).
 *
 *   mcpc port                          print a free loopback TCP port
 *   mcpc run PORT N BODY               N POSTs on one keep-alive connection;
 *                                      prints "n= p50_us= p99_us= total_ms= errors= bytes="
 *   mcpc cold BODY -- CMD ARGS...      start CMD (every "{PORT}" argument
 *                                      replaced by a free port), POST BODY
 *                                      until an answer without a JSON-RPC
 *                                      error arrives, print "cold_ms= rss_kb=",
 *                                      SIGTERM CMD and reap it
 *   mcpc poll PORT BODY NEEDLE T0_NS TIMEOUT_MS
 *                                      POST BODY every ms until the reply
 *                                      contains NEEDLE; print "ms=" since
 *                                      T0_NS (CLOCK_REALTIME nanoseconds,
 *                                      `date +%s%N`), or exit 1 on timeout
 *
 * The path is /mcp; requests carry the MCP headers the server asks for.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        perror("mcpc: free port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static char *reqbuf;
static size_t reqlen;

static void make_request(int port, const char *body)
{
    size_t blen = strlen(body);
    reqbuf = malloc(blen + 512);
    reqlen = (size_t)sprintf(reqbuf,
                             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                             "Content-Type: application/json\r\n"
                             "Accept: application/json, text/event-stream\r\n"
                             "MCP-Protocol-Version: 2025-11-25\r\n"
                             "Content-Length: %zu\r\n\r\n%s",
                             port, blen, body);
}

/* The reply body (malloc'd, NUL-terminated) of one request on fd, or NULL
 * when the connection failed. *status gets the HTTP status. */
static char *roundtrip(int fd, int *status, size_t *bodylen)
{
    size_t off = 0;
    while (off < reqlen) {
        ssize_t w = write(fd, reqbuf + off, reqlen - off);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    char *hend = NULL;      /* recomputed after every realloc: a reply may outgrow the buffer */
    size_t hoff = 0;
    long clen = -1;
    int chunked = 0;
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            if (hend)
                hend = buf + hoff;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r <= 0) {
            free(buf);
            return NULL;
        }
        len += (size_t)r;
        buf[len] = '\0';
        if (!hend) {
            hend = strstr(buf, "\r\n\r\n");
            if (!hend)
                continue;
            hoff = (size_t)(hend - buf);
            *status = atoi(buf + 9);
            for (char *p = buf; p < hend; p = strstr(p, "\r\n") + 2) {
                if (!strncasecmp(p, "Content-Length:", 15))
                    clen = atol(p + 15);
                if (!strncasecmp(p, "Transfer-Encoding:", 18) && strstr(p, "chunked") &&
                    strstr(p, "chunked") < strstr(p, "\r\n"))
                    chunked = 1;
            }
        }
        size_t hlen = (size_t)(hend - buf) + 4;
        if (clen >= 0 && len >= hlen + (size_t)clen) {
            memmove(buf, buf + hlen, (size_t)clen);
            buf[clen] = '\0';
            *bodylen = (size_t)clen;
            return buf;
        }
        if (chunked && len >= 5 && !memcmp(buf + len - 5, "0\r\n\r\n", 5)) {
            /* de-chunk in place */
            char *src = buf + hlen, *dst = buf;
            for (;;) {
                long n = strtol(src, &src, 16);
                src = strstr(src, "\r\n") + 2;
                if (n <= 0)
                    break;
                memmove(dst, src, (size_t)n);
                dst += n;
                src += n + 2;
            }
            *dst = '\0';
            *bodylen = (size_t)(dst - buf);
            return buf;
        }
    }
}

static int ok_reply(int status, const char *b)
{
    return status == 200 && strstr(b, "\"result\"") && !strstr(b, "\"isError\":true") &&
           !strstr(b, "\"error\":{");
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmd_run(int port, long n, const char *body)
{
    make_request(port, body);
    uint64_t *lat = calloc((size_t)(n ? n : 1), sizeof *lat);
    int fd = dial(port);
    long errors = 0;
    size_t bytes = 0;
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < n; i++) {
        int status = 0;
        size_t blen = 0;
        uint64_t a = now_ns(CLOCK_MONOTONIC);
        char *b = fd >= 0 ? roundtrip(fd, &status, &blen) : NULL;
        if (!b) {   /* reconnect once per failure */
            if (fd >= 0)
                close(fd);
            fd = dial(port);
            errors++;
            if (fd < 0) {
                fprintf(stderr, "mcpc: cannot connect to port %d\n", port);
                return 1;
            }
            continue;
        }
        lat[i] = now_ns(CLOCK_MONOTONIC) - a;
        errors += !ok_reply(status, b);
        bytes = blen;
        free(b);
    }
    double total_ms = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
    if (fd >= 0)
        close(fd);
    qsort(lat, (size_t)n, sizeof *lat, cmp_u64);
    printf("n=%ld p50_us=%.1f p99_us=%.1f total_ms=%.1f errors=%ld bytes=%zu\n", n,
           n ? (double)lat[(n - 1) / 2] / 1e3 : 0.0,
           n ? (double)lat[(size_t)((double)(n - 1) * 0.99)] / 1e3 : 0.0, total_ms, errors,
           bytes);
    return errors ? 1 : 0;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    fclose(f);
    return kb;
}

static int cmd_cold(const char *body, char **argv)
{
    int port = free_port();
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    for (char **a = argv; *a; a++)
        if (!strcmp(*a, "{PORT}"))
            *a = portstr;
    make_request(port, body);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        perror("mcpc: exec");
        _exit(127);
    }
    if (pid < 0) {
        perror("mcpc: fork");
        return 2;
    }
    int rc = 1;
    double ms = 0;
    long kb = -1;
    uint64_t deadline = t0 + 120ull * 1000000000ull;
    while (now_ns(CLOCK_MONOTONIC) < deadline) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            fprintf(stderr, "mcpc: the server exited before answering\n");
            return 1;
        }
        int fd = dial(port);
        if (fd < 0) {
            usleep(200);
            continue;
        }
        int status = 0;
        size_t blen;
        char *b = roundtrip(fd, &status, &blen);
        close(fd);
        if (b && ok_reply(status, b)) {
            ms = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
            kb = rss_kb(pid);
            rc = 0;
            free(b);
            break;
        }
        free(b);
        usleep(200);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    if (rc)
        fprintf(stderr, "mcpc: no answer within 120 s\n");
    else
        printf("cold_ms=%.1f rss_kb=%ld\n", ms, kb);
    return rc;
}

static int cmd_poll(int port, const char *body, const char *needle, uint64_t t0_ns,
                    long timeout_ms)
{
    make_request(port, body);
    uint64_t deadline = now_ns(CLOCK_REALTIME) + (uint64_t)timeout_ms * 1000000ull;
    int fd = dial(port);
    while (now_ns(CLOCK_REALTIME) < deadline) {
        int status = 0;
        size_t blen;
        char *b = fd >= 0 ? roundtrip(fd, &status, &blen) : NULL;
        if (!b) {
            if (fd >= 0)
                close(fd);
            fd = dial(port);
            usleep(1000);
            continue;
        }
        int hit = status == 200 && strstr(b, needle);
        free(b);
        if (hit) {
            printf("ms=%.1f\n", (double)(now_ns(CLOCK_REALTIME) - t0_ns) / 1e6);
            close(fd);
            return 0;
        }
        usleep(1000);
    }
    fprintf(stderr, "mcpc: '%s' did not show up within %ld ms\n", needle, timeout_ms);
    return 1;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && !strcmp(argv[1], "port")) {
        printf("%d\n", free_port());
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "run"))
        return cmd_run(atoi(argv[2]), atol(argv[3]), argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "cold") && !strcmp(argv[3], "--"))
        return cmd_cold(argv[2], argv + 4);
    if (argc == 7 && !strcmp(argv[1], "poll"))
        return cmd_poll(atoi(argv[2]), argv[3], argv[4], strtoull(argv[5], NULL, 10),
                        atol(argv[6]));
    fprintf(stderr, "usage: mcpc port | run PORT N BODY | cold BODY -- CMD ARGS... |"
                    " poll PORT BODY NEEDLE T0_NS TIMEOUT_MS\n");
    return 2;
}
