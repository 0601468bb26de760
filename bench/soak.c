/*
 * soak.c - the soak client: N mixed requests on keep-alive connections, with
 * slow clients and scripts in flight at the same time, and every answer
 * checked against what it must be (not just its status).
 *
 *   soak PORT N FAST SLOW SLOW_ADDR LIBDIR SERVER_PID
 *
 * LIBDIR is the library bench/soak.sh writes: skills s00..s19 (SKILL.md with
 * a marker line "marker-sNN", a description with the word "topicNN",
 * references/r.md) and "runner" (scripts/echo.sh, scripts/nap.sh).
 *
 * FAST threads each hold one connection and send the N requests between
 * them, in a fixed rotation: list_skills, list_skills(query), load_skill,
 * read_skill_file, and every 500th a run_skill_script(echo.sh) with a unique
 * argument. Checked: the JSON-RPC id is the request's; list_skills lists
 * exactly the 21 skills; the query finds exactly its skill; load_skill's
 * content carries the skill's marker; read_skill_file returns the file's
 * bytes; the script's stdout is "echo:<its own argument>".
 *
 * Two more threads keep scripts in flight (nap.sh sleeps 0.3 s), and one
 * thread drives SLOW sockets bound to SLOW_ADDR, each sending a whole
 * request one byte every 50 ms and checking the answer, then reconnecting.
 *
 * The server's VmRSS is sampled as requests complete. Prints one line per
 * 10 % and a summary; exits 1 on any wrong answer, transport error or a
 * server that died.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NSKILLS 20
#define SCRIPT_EVERY 500

static int port, nfast, nslow, server_pid;
static long total;
static const char *slow_addr, *libdir;
static char *refs[NSKILLS];     /* references/r.md of each skill */
static atomic_long next_req, done_req, wrong, errors, scripts_done, naps_done, slow_done;
static atomic_int stop_all;
static long rss_first, rss_mid, rss_last, rss_max;
static pthread_mutex_t rss_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static long rss_kb(void)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", server_pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    fclose(f);
    return kb;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n)
        n = 0;
    b[n] = '\0';
    fclose(f);
    return b;
}

static int dial(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0)
        return -1;
    if (src) {
        struct sockaddr_in b = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &b.sin_addr);
        if (bind(fd, (struct sockaddr *)&b, sizeof b) < 0) {
            close(fd);
            return -1;
        }
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* The request for sequence number i: its body, and what kind it is. */
enum kind { K_LIST, K_QUERY, K_LOAD, K_READ, K_SCRIPT, K_NAP };

static char *body_for(long i, enum kind k, int skill)
{
    char *b = NULL;
    switch (k) {
    case K_LIST:
        asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"list_skills\",\"arguments\":{\"limit\":50}}}", i);
        break;
    case K_QUERY:
        asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"list_skills\",\"arguments\":{\"query\":\"topic%02d\"}}}", i,
                 skill);
        break;
    case K_LOAD:
        asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"load_skill\",\"arguments\":{\"name\":\"s%02d\"}}}", i, skill);
        break;
    case K_READ:
        asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"read_skill_file\",\"arguments\":{\"name\":\"s%02d\","
                     "\"path\":\"references/r.md\"}}}", i, skill);
        break;
    case K_SCRIPT:
    case K_NAP:
        asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"run_skill_script\",\"arguments\":{\"name\":\"runner\","
                     "\"script\":\"%s\",\"args\":[\"tok-%ld\"]}}}", i,
                 k == K_NAP ? "nap.sh" : "echo.sh", i);
        break;
    }
    return b;
}

static char *http_request(const char *body, size_t *len)
{
    char *r = NULL;
    int n = asprintf(&r, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Content-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\n"
                         "MCP-Protocol-Version: 2025-11-25\r\n"
                         "Content-Length: %zu\r\n\r\n%s", port, strlen(body), body);
    *len = n < 0 ? 0 : (size_t)n;
    return r;
}

/* 1 when the reply body b is the right answer to request i. */
static int check(long i, enum kind k, int skill, int status, const char *b, char *why,
                 size_t wl)
{
    if (status != 200) {
        snprintf(why, wl, "HTTP %d", status);
        return 0;
    }
    json_t *j = json_loads(b, 0, NULL);
    if (!j) {
        snprintf(why, wl, "not JSON");
        return 0;
    }
    int ok = 0;
    json_t *sc = json_object_get(json_object_get(j, "result"), "structuredContent");
    if (json_integer_value(json_object_get(j, "id")) != i) {
        snprintf(why, wl, "id %lld, not %ld", json_integer_value(json_object_get(j, "id")), i);
        goto out;
    }
    if (!sc) {
        snprintf(why, wl, "no structuredContent");
        goto out;
    }
    switch (k) {
    case K_LIST: {
        json_t *sk = json_object_get(sc, "skills");
        char seen[NSKILLS + 1] = {0};
        size_t n = json_array_size(sk);
        for (size_t x = 0; x < n; x++) {
            const char *name = json_string_value(json_object_get(json_array_get(sk, x), "name"));
            if (name && !strcmp(name, "runner"))
                seen[NSKILLS] = 1;
            else if (name && name[0] == 's' && atoi(name + 1) < NSKILLS)
                seen[atoi(name + 1)] = 1;
        }
        ok = n == NSKILLS + 1 && !memchr(seen, 0, sizeof seen);
        if (!ok)
            snprintf(why, wl, "list_skills listed %zu skills", n);
        break;
    }
    case K_QUERY: {
        json_t *sk = json_object_get(sc, "skills");
        char want[8];
        snprintf(want, sizeof want, "s%02d", skill);
        const char *name = json_string_value(json_object_get(json_array_get(sk, 0), "name"));
        ok = json_array_size(sk) == 1 && name && !strcmp(name, want);
        if (!ok)
            snprintf(why, wl, "query topic%02d found %zu skills, first %s", skill,
                     json_array_size(sk), name ? name : "none");
        break;
    }
    case K_LOAD: {
        char marker[32], nm[8];
        snprintf(marker, sizeof marker, "marker-s%02d\n", skill);
        snprintf(nm, sizeof nm, "s%02d", skill);
        const char *c = json_string_value(json_object_get(sc, "content"));
        const char *name = json_string_value(json_object_get(sc, "name"));
        ok = c && strstr(c, marker) && name && !strcmp(name, nm);
        if (!ok)
            snprintf(why, wl, "load_skill s%02d: wrong content or name", skill);
        break;
    }
    case K_READ: {
        const char *c = json_string_value(json_object_get(sc, "content"));
        ok = c && !strcmp(c, refs[skill]);
        if (!ok)
            snprintf(why, wl, "read_skill_file s%02d: not the file's bytes", skill);
        break;
    }
    case K_SCRIPT:
    case K_NAP: {
        char want[64];
        snprintf(want, sizeof want, "%s:tok-%ld\n", k == K_NAP ? "nap" : "echo", i);
        const char *st = json_string_value(json_object_get(sc, "status"));
        const char *out = json_string_value(json_object_get(sc, "stdout"));
        ok = st && !strcmp(st, "ok") && out && !strcmp(out, want);
        if (!ok)
            snprintf(why, wl, "script %ld: status %s stdout %.60s", i, st ? st : "?",
                     out ? out : "?");
        break;
    }
    }
out:
    json_decref(j);
    return ok;
}

/* One request and its reply on a blocking fd: the body (malloc'd) or NULL. */
static char *roundtrip(int fd, const char *req, size_t reqlen, int *status)
{
    size_t off = 0;
    while (off < reqlen) {
        ssize_t w = write(fd, req + off, reqlen - off);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    long clen = -1;
    char *hend = NULL;
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r <= 0) {
            free(buf);
            return NULL;
        }
        len += (size_t)r;
        buf[len] = '\0';
        if (!hend && (hend = strstr(buf, "\r\n\r\n"))) {
            *status = atoi(buf + 9);
            for (char *p = buf; p && p < hend; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL)
                if (!strncasecmp(p, "Content-Length:", 15))
                    clen = atol(p + 15);
            if (clen < 0) {     /* every answer here has a length */
                free(buf);
                return NULL;
            }
        }
        if (hend) {
            size_t hlen = (size_t)(hend - buf) + 4;
            if (len >= hlen + (size_t)clen) {
                memmove(buf, buf + hlen, (size_t)clen);
                buf[clen] = '\0';
                return buf;
            }
        }
    }
}

static void report_wrong(long i, const char *why)
{
    long w = atomic_fetch_add(&wrong, 1);
    if (w < 20)
        fprintf(stderr, "soak: WRONG answer to request %ld: %s\n", i, why);
}

static void sample_rss(long d)
{
    long kb = rss_kb();
    pthread_mutex_lock(&rss_mu);
    if (kb > rss_max)
        rss_max = kb;
    if (d >= total / 100 && !rss_first)
        rss_first = kb;     /* after a 1 % warm-up */
    if (d >= total / 2 && !rss_mid)
        rss_mid = kb;
    rss_last = kb;
    pthread_mutex_unlock(&rss_mu);
}

static void *fast(void *arg)
{
    (void)arg;
    int fd = dial(NULL);
    for (;;) {
        long i = atomic_fetch_add(&next_req, 1);
        if (i >= total)
            break;
        enum kind k = i % SCRIPT_EVERY == 7 ? K_SCRIPT : (enum kind)(i % 4);
        int skill = (int)((i / 4) % NSKILLS);
        char *body = body_for(i, k, skill);
        size_t rl;
        char *req = http_request(body, &rl);
        int status = 0;
        char *b = NULL;
        for (int attempt = 0; attempt < 2 && !b; attempt++) {
            if (fd < 0 || !(b = roundtrip(fd, req, rl, &status))) {
                /* a closed keep-alive connection: counted, then retried once */
                if (fd >= 0)
                    close(fd);
                atomic_fetch_add(&errors, 1);
                fd = dial(NULL);
            }
        }
        char why[200];
        if (!b)
            report_wrong(i, "no answer");
        else if (!check(i, k, skill, status, b, why, sizeof why))
            report_wrong(i, why);
        if (k == K_SCRIPT)
            atomic_fetch_add(&scripts_done, 1);
        free(b);
        free(req);
        free(body);
        long d = atomic_fetch_add(&done_req, 1) + 1;
        if (d % (total / 100 ? total / 100 : 1) == 0) {
            sample_rss(d);
            if (d % (total / 10 ? total / 10 : 1) == 0)
                fprintf(stderr, "soak: %ld/%ld done, wrong=%ld errors=%ld scripts=%ld naps=%ld "
                                "slow=%ld rss_kb=%ld\n", d, total, atomic_load(&wrong),
                        atomic_load(&errors), atomic_load(&scripts_done),
                        atomic_load(&naps_done), atomic_load(&slow_done), rss_kb());
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Keeps scripts in flight while the rest goes on. */
static void *napper(void *arg)
{
    long base = 1000000000L + (long)(intptr_t)arg * 100000000L;
    int fd = dial(NULL);
    for (long n = 0; !atomic_load(&stop_all); n++) {
        long i = base + n;
        char *body = body_for(i, K_NAP, 0);
        size_t rl;
        char *req = http_request(body, &rl);
        int status = 0;
        char *b = fd >= 0 ? roundtrip(fd, req, rl, &status) : NULL;
        char why[200];
        if (!b) {
            if (fd >= 0)
                close(fd);
            atomic_fetch_add(&errors, 1);
            fd = dial(NULL);
        } else if (!check(i, K_NAP, 0, status, b, why, sizeof why)) {
            report_wrong(i, why);
        } else {
            atomic_fetch_add(&naps_done, 1);
        }
        free(b);
        free(req);
        free(body);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

struct slow {
    int fd;
    long id;
    int skill;
    char *req;
    size_t len, sent;
    char buf[8192];
    size_t got;
};

static void slow_start(struct slow *s, long id)
{
    s->id = id;
    s->skill = (int)(id % NSKILLS);
    char *body = body_for(id, K_QUERY, s->skill);
    free(s->req);
    s->req = http_request(body, &s->len);
    free(body);
    s->sent = s->got = 0;
    s->fd = dial(slow_addr);
    if (s->fd >= 0)
        fcntl(s->fd, F_SETFL, O_NONBLOCK);
}

/* Slow clients: a whole request a byte at a time, then its answer checked. */
static void *slow_driver(void *arg)
{
    (void)arg;
    struct slow *s = calloc((size_t)nslow, sizeof *s);
    long id = 2000000000L;
    for (int x = 0; x < nslow; x++)
        slow_start(&s[x], id++);
    while (!atomic_load(&stop_all)) {
        for (int x = 0; x < nslow; x++) {
            struct slow *c = &s[x];
            if (c->fd < 0) {
                slow_start(c, id++);
                continue;
            }
            if (c->sent < c->len) {
                ssize_t w = write(c->fd, c->req + c->sent, 1);
                if (w == 1)
                    c->sent++;
                else if (w < 0 && errno != EAGAIN) {
                    close(c->fd);
                    c->fd = -1;
                }
                continue;
            }
            ssize_t r = read(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got);
            if (r > 0) {
                c->got += (size_t)r;
                c->buf[c->got] = '\0';
                char *h = strstr(c->buf, "\r\n\r\n");
                char *cl = strcasestr(c->buf, "Content-Length:");
                if (h && cl && c->got >= (size_t)(h + 4 - c->buf) + (size_t)atol(cl + 15)) {
                    char why[200];
                    if (!check(c->id, K_QUERY, c->skill, atoi(c->buf + 9), h + 4, why,
                               sizeof why))
                        report_wrong(c->id, why);
                    else
                        atomic_fetch_add(&slow_done, 1);
                    close(c->fd);
                    c->fd = -1;
                }
            } else if (r == 0 || (r < 0 && errno != EAGAIN)) {
                /* closed before answering: the server's timeout, not a wrong answer */
                close(c->fd);
                c->fd = -1;
            }
        }
        usleep(50000);
    }
    for (int x = 0; x < nslow; x++) {
        if (s[x].fd >= 0)
            close(s[x].fd);
        free(s[x].req);
    }
    free(s);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: soak PORT N FAST SLOW SLOW_ADDR LIBDIR SERVER_PID\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    port = atoi(argv[1]);
    total = atol(argv[2]);
    nfast = atoi(argv[3]);
    nslow = atoi(argv[4]);
    slow_addr = argv[5];
    libdir = argv[6];
    server_pid = atoi(argv[7]);
    for (int x = 0; x < NSKILLS; x++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/s%02d/references/r.md", libdir, x);
        if (!(refs[x] = slurp(p))) {
            fprintf(stderr, "soak: cannot read %s\n", p);
            return 2;
        }
    }
    uint64_t t0 = now_ms();
    pthread_t ft[256], nt[2], st;
    if (nfast > 256)
        nfast = 256;
    for (int x = 0; x < 2; x++)
        pthread_create(&nt[x], NULL, napper, (void *)(intptr_t)x);
    if (nslow > 0)
        pthread_create(&st, NULL, slow_driver, NULL);
    for (int x = 0; x < nfast; x++)
        pthread_create(&ft[x], NULL, fast, NULL);
    for (int x = 0; x < nfast; x++)
        pthread_join(ft[x], NULL);
    atomic_store(&stop_all, 1);
    for (int x = 0; x < 2; x++)
        pthread_join(nt[x], NULL);
    if (nslow > 0)
        pthread_join(st, NULL);
    double secs = (double)(now_ms() - t0) / 1000.0;
    int alive = kill(server_pid, 0) == 0;
    sample_rss(total);
    printf("requests=%ld wrong=%ld transport_errors=%ld scripts=%ld naps=%ld slow_answers=%ld "
           "server_alive=%d rss_kb_start=%ld rss_kb_mid=%ld rss_kb_end=%ld rss_kb_max=%ld "
           "seconds=%.1f rps=%.0f\n", atomic_load(&done_req), atomic_load(&wrong),
           atomic_load(&errors), atomic_load(&scripts_done), atomic_load(&naps_done),
           atomic_load(&slow_done), alive, rss_first, rss_mid, rss_last, rss_max, secs,
           (double)atomic_load(&done_req) / secs);
    for (int x = 0; x < NSKILLS; x++)
        free(refs[x]);
    return atomic_load(&wrong) || atomic_load(&errors) || !alive ? 1 : 0;
}
