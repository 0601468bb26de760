/*
 * accesslog.c - the access log. See accesslog.h for the threading: request
 * threads only format and copy; the writer thread does every write(2) and
 * the reopen that SIGHUP asks for.
 */
#include "accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Lines waiting for the writer at most: a stalled disk or reader costs this
 * much memory, then lines are dropped rather than requests held up. */
#define QUEUE_MAX (4u << 20)

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct buf q;               /* formatted lines not yet written (mu) */
    unsigned long dropped;      /* lines that did not fit q (mu) */
    int reopen, stop;           /* requests to the writer (mu) */
    int on, json;
    int fd;                     /* writer thread only, after start */
    int whole_lines;            /* a pipe or terminal: keep writes to PIPE_BUF */
    char *path;                 /* NULL for standard output */
    pthread_t writer;
} L = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0, 0, 0, -1, 0, NULL, 0};

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

int accesslog_check(const char *path, struct err *why)
{
    if (!strcmp(path, "-"))
        return 0;
    int fd = open_append(path);
    if (fd < 0) {
        err_set(why, 0, 0, "cannot open %s for appending: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

static void note_kind(void)
{
    struct stat st;
    L.whole_lines = fstat(L.fd, &st) == 0 && !S_ISREG(st.st_mode);
}

/* Writes [p, p+n) in full. Several worker processes append to one file or
 * pipe: each write holds whole lines, and on a pipe no more than PIPE_BUF,
 * which the kernel never interleaves with another writer's. */
static int write_lines(const char *p, size_t n)
{
    while (n) {
        size_t chunk = n;
        if (L.whole_lines && chunk > PIPE_BUF) {
            const char *nl = memrchr(p, '\n', PIPE_BUF);
            chunk = nl ? (size_t)(nl - p) + 1 : PIPE_BUF;
        }
        ssize_t w = write(L.fd, p, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            /* a standard output someone made non-blocking: wait, briefly */
            struct pollfd pf = {.fd = L.fd, .events = POLLOUT};
            if (poll(&pf, 1, 1000) <= 0)
                return -1;
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void reopen_file(void)
{
    if (!L.path)
        return;
    int fd = open_append(L.path);
    if (fd < 0) {
        log_warn("access log: cannot reopen %s: %s; still writing to the old file", L.path,
                 strerror(errno));
        return;
    }
    close(L.fd);
    L.fd = fd;
    note_kind();
    log_info("access log: reopened %s", L.path);
}

static void *writer_main(void *arg)
{
    (void)arg;
    int failing = 0;
    pthread_mutex_lock(&L.mu);
    for (;;) {
        while (!L.q.len && !L.reopen && !L.stop)
            pthread_cond_wait(&L.cv, &L.mu);
        struct buf out = L.q;
        buf_init(&L.q, QUEUE_MAX);
        unsigned long dropped = L.dropped;
        int reopen = L.reopen, stop = L.stop;
        L.dropped = 0;
        L.reopen = 0;
        pthread_mutex_unlock(&L.mu);

        if (out.len && write_lines(out.p, out.len) < 0) {
            if (!failing)
                log_warn("access log: write failed: %s; lines are lost until it works again",
                         strerror(errno));
            failing = 1;
        } else if (out.len) {
            failing = 0;
        }
        buf_cleanup(&out);
        if (dropped)
            log_warn("access log: %lu line(s) dropped: the log could not keep up", dropped);
        if (reopen)
            reopen_file();

        pthread_mutex_lock(&L.mu);
        if (stop && !L.q.len)
            break;
    }
    pthread_mutex_unlock(&L.mu);
    return NULL;
}

int accesslog_start(const char *path, int json, struct err *why)
{
    if (L.on)
        return 0;
    int fd = strcmp(path, "-") ? open_append(path) : fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        err_set(why, 0, 0, "cannot open %s for appending: %s",
                strcmp(path, "-") ? path : "standard output", strerror(errno));
        return -1;
    }
    L.fd = fd;
    note_kind();
    L.json = json;
    L.path = strcmp(path, "-") ? xstrdup(path) : NULL;
    L.stop = L.reopen = 0;
    L.dropped = 0;
    buf_init(&L.q, QUEUE_MAX);
    int e = pthread_create(&L.writer, NULL, writer_main, NULL);
    if (e) {
        err_set(why, 0, 0, "cannot start the access log writer: %s", strerror(e));
        close(fd);
        L.fd = -1;
        free(L.path);
        L.path = NULL;
        return -1;
    }
    L.on = 1;
    return 0;
}

int accesslog_on(void)
{
    return L.on;
}

/* Text values: bare when they hold only these bytes, else quoted as a JSON
 * string, so a space, quote or control byte in a path or skill argument can
 * neither split a field nor start a line. */
static int bare_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr("._~:/@+%,-[]", ch)))
            return 0;
    }
    return 1;
}

/* s as the inside of a JSON string; bytes that are not UTF-8 become \xNN
 * text first (buf_text_escape), so the line stays valid JSON. */
static void put_json_inner(struct buf *b, const char *s)
{
    size_t n = strlen(s);
    if (buf_json_escape_utf8(b, s, n) == 0)
        return;
    struct buf t;
    buf_init(&t, 0);
    buf_text_escape(&t, s, n);
    buf_json_escape(b, t.p ? t.p : "", t.len);
    buf_cleanup(&t);
}

static void put_text(struct buf *b, const char *key, const char *v)
{
    buf_printf(b, " %s=", key);
    if (!v) {
        buf_puts(b, "-");
    } else if (bare_ok(v)) {
        buf_puts(b, v);
    } else {
        buf_puts(b, "\"");
        put_json_inner(b, v);
        buf_puts(b, "\"");
    }
}

static void put_json(struct buf *b, const char *key, const char *v)
{
    if (!v)
        return;
    buf_printf(b, ",\"%s\":\"", key);
    put_json_inner(b, v);
    buf_puts(b, "\"");
}

static void peer_text(const struct sockaddr *sa, char *out, size_t n)
{
    snprintf(out, n, "-");
    if (!sa)
        return;
    socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                  : sa->sa_family == AF_INET  ? sizeof(struct sockaddr_in)
                                              : 0;
    if (!len || getnameinfo(sa, len, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST))
        snprintf(out, n, "-");
}

static void enqueue(struct buf *line)
{
    pthread_mutex_lock(&L.mu);
    if (buf_append(&L.q, line->p, line->len) < 0)
        L.dropped++;
    else
        pthread_cond_signal(&L.cv);
    pthread_mutex_unlock(&L.mu);
}

void accesslog_write(const struct accesslog_rec *r)
{
    if (!L.on)
        return;
    char ts[40], peer[INET6_ADDRSTRLEN + 8], status[16];
    now_utc(ts, sizeof ts);
    peer_text(r->peer, peer, sizeof peer);
    snprintf(status, sizeof status, "%u", r->status);
    double ms = (double)r->us / 1000.0;
    struct buf b;
    buf_init(&b, 0);
    if (L.json) {
        buf_printf(&b, "{\"ts\":\"%s\"", ts);
        put_json(&b, "peer", strcmp(peer, "-") ? peer : NULL);
        put_json(&b, "client", r->client);
        put_json(&b, "http_method", r->http_method);
        put_json(&b, "path", r->path);
        buf_printf(&b, ",\"status\":%u,\"duration_ms\":%.3f", r->status, ms);
        put_json(&b, "rpc", r->rpc);
        put_json(&b, "tool", r->tool);
        put_json(&b, "skill", r->skill);
        buf_printf(&b, ",\"client_gone\":%s}\n", r->client_gone ? "true" : "false");
    } else {
        buf_printf(&b, "%s", ts);
        put_text(&b, "peer", peer);
        put_text(&b, "client", r->client);
        put_text(&b, "method", r->http_method);
        put_text(&b, "path", r->path);
        put_text(&b, "status", status);
        buf_printf(&b, " ms=%.3f", ms);
        put_text(&b, "rpc", r->rpc);
        put_text(&b, "tool", r->tool);
        put_text(&b, "skill", r->skill);
        if (r->client_gone)
            buf_puts(&b, " client_gone=1");
        buf_puts(&b, "\n");
    }
    enqueue(&b);
    buf_cleanup(&b);
}

void accesslog_drained(long answered, long cut, double seconds)
{
    if (!L.on)
        return;
    char ts[40];
    now_utc(ts, sizeof ts);
    struct buf b;
    buf_init(&b, 0);
    if (L.json)
        buf_printf(&b,
                   "{\"ts\":\"%s\",\"event\":\"drained\",\"requests\":%ld,\"cut_off\":%ld,"
                   "\"seconds\":%.3f}\n",
                   ts, answered, cut, seconds);
    else
        buf_printf(&b, "%s drained: %ld requests answered during the drain, %ld cut off, in %.3f s\n",
                   ts, answered, cut, seconds);
    enqueue(&b);
    buf_cleanup(&b);
}

void accesslog_reopen(void)
{
    if (!L.on)
        return;
    pthread_mutex_lock(&L.mu);
    L.reopen = 1;
    pthread_cond_signal(&L.cv);
    pthread_mutex_unlock(&L.mu);
}

void accesslog_stop(void)
{
    if (!L.on)
        return;
    pthread_mutex_lock(&L.mu);
    L.stop = 1;
    pthread_cond_signal(&L.cv);
    pthread_mutex_unlock(&L.mu);
    pthread_join(L.writer, NULL);
    buf_cleanup(&L.q);
    close(L.fd);
    L.fd = -1;
    free(L.path);
    L.path = NULL;
    L.on = 0;
}
