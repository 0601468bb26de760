/*
 * stdio_mcp.c - the stdio transport: one reader thread turns stdin lines
 * into calls; answers and notifications leave as whole lines on stdout,
 * from whichever thread completes them, one at a time.
 */
#include "stdio_mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call.h"
#include "notify.h"
#include "rpc.h"
#include "session.h"
#include "util.h"

#define READ_CHUNK 65536

struct stdio_mcp {
    struct srv *S;
    pthread_t reader;
    int wake[2];            /* stdio_quiesce: the reader's poll returns */
    atomic_int ended;       /* stdin's end (or a read error) was reached */
    /* list changes (notify.h): the broadcaster's wake writes a byte to
     * nwake (non-blocking: it must never wait), the reader drains */
    struct notify_listener *nl;
    int nwake[2];
    /* The one session, kept as a --stateful session is (session.c), so that
     * resources/subscribe and the listener are the HTTP session's own:
     * its table holds just it and it never expires. */
    struct session_table *sessions;
    char sid[SESSION_ID_LEN + 1];
};

/* The protocol's descriptors (stdio_claim), and what writes to stdout. */
static int in_fd = -1, out_fd = -1;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int out_open;        /* between stdio_start and stdio_stop */
static int out_dead;        /* a write failed: the client stopped reading */
/* Calls read, not yet answered. Not in struct stdio_mcp: a completion that
 * came after stdio_stop must not touch freed memory. */
static atomic_long active;

/* fd as a descriptor above 2 that no child inherits (fd itself stays). */
static int move_up(int fd)
{
    return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

int stdio_claim(void)
{
    in_fd = move_up(0);
    out_fd = move_up(1);
    if (in_fd < 0 || out_fd < 0) {
        fprintf(stderr, "skill-mcp: --stdio needs stdin and stdout open: %s\n", strerror(errno));
        return -1;
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 ||
        (dup2(2, 1) < 0 && dup2(null, 1) < 0)) {
        fprintf(stderr, "skill-mcp: --stdio: cannot set stdin/stdout aside: %s\n",
                strerror(errno));
        return -1;
    }
    if (null > 2)
        close(null);
    return 0;
}

/* Set by stdio_stop: a writer still waiting on a full stdout gives up. */
static atomic_int out_giveup;

/*
 * Writes all of p[0..n). A client that stops reading fills the pipe, and a
 * plain write would then wait for ever, holding out_mu and, through it, the
 * reader and the drain. So each piece waits for room in short polls that
 * watch out_giveup, and is at most PIPE_BUF: a pipe that polls writable
 * takes that much without blocking. The descriptor's own flags are left
 * alone (it may be a terminal or a pipe the client shares).
 */
static int write_full(const char *p, size_t n)
{
    while (n) {
        struct pollfd pf = {.fd = out_fd, .events = POLLOUT};
        int r = poll(&pf, 1, 100);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0) {
            if (atomic_load(&out_giveup)) {
                errno = ETIMEDOUT;
                return -1;
            }
            continue;
        }
        ssize_t w = write(out_fd, p, n < PIPE_BUF ? n : PIPE_BUF);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/*
 * One message as one line. Compact JSON has no raw newline (inside a string
 * it is always escaped), but an answer rendered elsewhere could be
 * indented: a line break outside a string is whitespace, so it becomes a
 * space, and the line stays the one JSON text.
 */
static int write_line(const char *bytes, size_t len)
{
    pthread_mutex_lock(&out_mu);
    if (!out_open || out_dead) {
        pthread_mutex_unlock(&out_mu);
        return -1;
    }
    int rc = 0;
    const char *p = bytes, *end = bytes + len;
    while (rc == 0 && p < end) {
        const char *nl = p;
        while (nl < end && *nl != '\n' && *nl != '\r')
            nl++;
        rc = write_full(p, (size_t)(nl - p));
        if (rc == 0 && nl < end)
            rc = write_full(" ", 1);
        p = nl < end ? nl + 1 : end;
    }
    if (rc == 0)
        rc = write_full("\n", 1);
    if (rc < 0) {
        out_dead = 1;
        log_warn("stdio: stdout is closed (%s): the client stopped reading; answers are dropped",
                 strerror(errno));
    }
    pthread_mutex_unlock(&out_mu);
    return rc;
}

int stdio_notify(const char *json, size_t len)
{
    return json && len ? write_line(json, len) : -1;
}

/* Any thread, under the call's lock: the answer (NULL for a notification). */
static void on_complete(char *bytes, size_t len, void *arg)
{
    (void)arg;
    if (bytes)
        write_line(bytes, len);
    free(bytes);
    atomic_fetch_sub(&active, 1);
}

/* A progress or log notification before a script's answer. */
static void on_event(const char *bytes, size_t len, void *arg)
{
    (void)arg;
    write_line(bytes, len);
}

static void handle_line(struct stdio_mcp *io, const char *p, size_t len)
{
    while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    size_t lead = 0;
    while (lead < len && (p[lead] == ' ' || p[lead] == '\t'))
        lead++;
    if (lead == len)
        return;     /* a blank line between messages is not a message */
    struct call *c = call_new(io->S);
    /* every answer can be preceded by its notifications on the one stream */
    c->can_stream = 1;
    if (io->sid[0]) {
        c->session = io->sid;
        c->sessions = io->sessions;
    }
    call_on_event(c, on_event, NULL);
    call_on_complete(c, on_complete, NULL);
    atomic_fetch_add(&active, 1);
    struct rpc_headers hd = {.headerless = 1};
    rpc_handle(c, p + lead, len - lead, &hd);
    if (call_pending(c))
        rpc_start(c);
    call_unref(c);
}

/* A line over --max-body: refused at once, and the rest of it skipped
 * unread into memory; its id was never seen, so the error has none. */
static void refuse_long(struct stdio_mcp *io)
{
    char msg[160];
    snprintf(msg, sizeof msg,
             "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
             "\"Invalid Request: the message is over --max-body (%zu bytes)\"}}",
             io->S->cfg.max_body);
    write_line(msg, strlen(msg));
}

/* Under notify's lock: only say "drain" to the reader. */
static void on_list_change(void *arg)
{
    struct stdio_mcp *io = arg;
    if (write(io->nwake[1], "n", 1) < 0 && errno != EAGAIN)
        log_debug("stdio: cannot wake the reader for a list change: %s", strerror(errno));
}

static void send_notification(const char *json, size_t len, void *arg)
{
    (void)arg;
    write_line(json, len);
}

/* Sends what the broadcaster has pending; -1 once it ended the listener. */
static int drain_changes(struct stdio_mcp *io)
{
    char junk[64];
    while (read(io->nwake[0], junk, sizeof junk) > 0)
        ;
    return notify_drain(io->nl, send_notification, io);
}

static void *reader_main(void *arg)
{
    struct stdio_mcp *io = arg;
    size_t max = io->S->cfg.max_body;
    char *chunk = xmalloc(READ_CHUNK);
    struct buf line;
    buf_init(&line, 0);
    int skipping = 0, quiesced = 0;
    for (;;) {
        struct pollfd pf[3] = {{.fd = in_fd, .events = POLLIN},
                               {.fd = io->wake[0], .events = POLLIN},
                               {.fd = io->nl ? io->nwake[0] : -1, .events = POLLIN}};
        if (poll(pf, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_error("stdio: poll: %s", strerror(errno));
            break;
        }
        if (pf[1].revents) {
            quiesced = 1;
            break;
        }
        if (pf[2].revents && drain_changes(io) < 0) {
            notify_unlisten(io->nl);
            io->nl = NULL;
        }
        if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t n = read(in_fd, chunk, READ_CHUNK);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            log_error("stdio: reading stdin: %s", strerror(errno));
            break;
        }
        if (n == 0)
            break;
        const char *p = chunk, *end = chunk + n;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t seg = (size_t)((nl ? nl : end) - p);
            if (!skipping) {
                if (line.len + seg > max) {
                    refuse_long(io);
                    skipping = 1;
                    buf_cleanup(&line);
                    buf_init(&line, 0);
                } else {
                    buf_append(&line, p, seg);
                }
            }
            if (!nl)
                break;
            if (!skipping)
                handle_line(io, line.p ? line.p : "", line.len);
            skipping = 0;
            /* one large message does not keep its buffer for the session */
            if (line.cap > (1u << 20)) {
                buf_cleanup(&line);
                buf_init(&line, 0);
            } else {
                buf_reset(&line);
            }
            p = nl + 1;
        }
    }
    /* A last message without its newline is still a message. */
    if (!quiesced && !skipping && line.len)
        handle_line(io, line.p, line.len);
    buf_cleanup(&line);
    free(chunk);
    atomic_store(&io->ended, 1);
    return NULL;
}

struct stdio_mcp *stdio_start(struct srv *S)
{
    if (in_fd < 0 || out_fd < 0) {
        log_error("stdio: stdio_claim() was not called");
        return NULL;
    }
    struct stdio_mcp *io = xcalloc(1, sizeof *io);
    io->S = S;
    if (pipe2(io->wake, O_CLOEXEC) < 0) {
        log_error("stdio: pipe: %s", strerror(errno));
        free(io);
        return NULL;
    }
    pthread_mutex_lock(&out_mu);
    out_open = 1;
    pthread_mutex_unlock(&out_mu);
    /* One session that can always be written to: it hears of every new
     * generation (resources and prompts list_changed) and, for what it
     * subscribed to, of resources/updated. */
    io->sessions = session_new(1, 1e9);
    if (session_create(io->sessions, NULL, io->sid) < 0) {
        io->sid[0] = '\0';
        log_warn("stdio: no session could be started: resources/subscribe is refused");
    }
    if (pipe2(io->nwake, O_CLOEXEC | O_NONBLOCK) == 0) {
        struct err why;
        struct notify_listen_opts o = {.key = "stdio",
                                       .kinds = NOTIFY_ALL,
                                       .sessions = io->sid[0] ? io->sessions : NULL,
                                       .session = io->sid[0] ? io->sid : NULL,
                                       .wake = on_list_change,
                                       .arg = io};
        io->nl = notify_listen(&o, &why);
        if (!io->nl)
            log_warn("stdio: list changes will not be sent: %s", why.msg);
    } else {
        io->nwake[0] = io->nwake[1] = -1;
        log_warn("stdio: list changes will not be sent: pipe: %s", strerror(errno));
    }
    if (pthread_create(&io->reader, NULL, reader_main, io)) {
        log_error("stdio: cannot start the reader thread");
        pthread_mutex_lock(&out_mu);
        out_open = 0;
        pthread_mutex_unlock(&out_mu);
        notify_unlisten(io->nl);
        session_free(io->sessions);
        close(io->wake[0]);
        close(io->wake[1]);
        if (io->nwake[0] >= 0) {
            close(io->nwake[0]);
            close(io->nwake[1]);
        }
        free(io);
        return NULL;
    }
    return io;
}

int stdio_ended(struct stdio_mcp *io)
{
    return atomic_load(&io->ended);
}

long stdio_active(struct stdio_mcp *io)
{
    (void)io;
    return atomic_load(&active);
}

void stdio_quiesce(struct stdio_mcp *io)
{
    if (write(io->wake[1], "q", 1) < 0)
        log_warn("stdio: cannot wake the reader: %s", strerror(errno));
}

void stdio_stop(struct stdio_mcp *io)
{
    if (!io)
        return;
    /* The drain is over: an answer still waiting on a full stdout is dropped. */
    atomic_store(&out_giveup, 1);
    stdio_quiesce(io);
    pthread_join(io->reader, NULL);
    notify_unlisten(io->nl);    /* its wake is never called again */
    session_free(io->sessions);
    if (io->nwake[0] >= 0) {
        close(io->nwake[0]);
        close(io->nwake[1]);
    }
    pthread_mutex_lock(&out_mu);
    out_open = 0;
    pthread_mutex_unlock(&out_mu);
    close(io->wake[0]);
    close(io->wake[1]);
    free(io);
}
