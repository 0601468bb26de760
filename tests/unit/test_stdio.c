/*
 * test_stdio.c - the stdio transport (server/stdio_mcp.c) on pipes: every
 * line it writes is one whole JSON text while answers and unsolicited
 * notifications are written from several threads at once.
 */
#include "harness.h"
#include "call.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "stdio_mcp.h"
#include "tools.h"
#include "util.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE_NAME "stdio"
#include "srv_fixture.h"

#define NREQ 300
#define NTHREADS 4
#define NNOTE 300

/* Notifications well over PIPE_BUF, so that two unserialised writers
 * would interleave inside a line. */
static char note[3 * 4096];

static void *notifier(void *arg)
{
    (void)arg;
    for (int i = 0; i < NNOTE; i++)
        stdio_notify(note, strlen(note));
    return NULL;
}

struct collect {
    int fd;
    struct buf out;
    size_t want_lines, lines;
};

static void *collector(void *arg)
{
    struct collect *co = arg;
    char chunk[65536];
    while (co->lines < co->want_lines) {
        ssize_t n = read(co->fd, chunk, sizeof chunk);
        if (n <= 0)
            break;
        buf_append(&co->out, chunk, (size_t)n);
        for (ssize_t i = 0; i < n; i++)
            co->lines += chunk[i] == '\n';
    }
    return NULL;
}

TEST(notify_without_a_session)
{
    CHECK_EQ(stdio_notify("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", 31), -1);
}

TEST(whole_lines_from_many_threads)
{
    /* the note: a valid notification padded with a long string */
    size_t off = (size_t)snprintf(note, sizeof note,
                                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                                  "\"params\":{\"level\":\"info\",\"data\":\"");
    memset(note + off, 'n', sizeof note - off - 8);
    memcpy(note + sizeof note - 8, "\"}}", 4);

    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    int saved0 = dup(0), saved1 = dup(1);
    CHECK(dup2(in[0], 0) == 0 && dup2(out[1], 1) == 1);
    int rc = stdio_claim();
    /* the harness reports on stdout: give it back */
    dup2(saved0, 0);
    dup2(saved1, 1);
    close(saved0);
    close(saved1);
    close(in[0]);
    close(out[1]);
    CHECK_EQ(rc, 0);

    struct stdio_mcp *io = stdio_start(&S);
    CHECK(io != NULL);
    struct collect co = {.fd = out[0], .want_lines = NREQ + NTHREADS * NNOTE + 1};
    buf_init(&co.out, 0);
    pthread_t col, th[NTHREADS];
    pthread_create(&col, NULL, collector, &co);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, notifier, NULL);
    /* tools/list answers are large too, written from the reader thread */
    for (int i = 1; i <= NREQ; i++) {
        char req[128];
        int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"}\n", i,
                         i % 2 ? "tools/list" : "ping");
        CHECK(x_write_all(in[1], req, (size_t)n) == 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    /* a line break inside a message (outside its strings) stays inside its line */
    const char *split = "{\"jsonrpc\":\"2.0\",\r\n\"method\":\"notifications/split\"}";
    CHECK_EQ(stdio_notify(split, strlen(split)), 0);
    close(in[1]);
    for (int i = 0; i < 500 && !stdio_ended(io); i++)
        usleep(10000);
    CHECK(stdio_ended(io));
    pthread_join(col, NULL);
    stdio_stop(io);
    CHECK_EQ(stdio_notify(split, strlen(split)), -1);
    close(out[0]);

    CHECK_EQ(co.lines, co.want_lines);
    int seen[NREQ + 1] = {0};
    size_t notes = 0, splits = 0, bad = 0;
    char *p = co.out.p, *end = co.out.p + co.out.len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        json_error_t e;
        json_t *m = json_loadb(p, (size_t)(nl - p), 0, &e);
        if (!m) {
            if (!bad++)
                printf("# line does not parse: %s: %.80s\n", e.text, p);
        } else if (json_is_integer(json_object_get(m, "id"))) {
            json_int_t id = json_integer_value(json_object_get(m, "id"));
            if (id >= 1 && id <= NREQ && json_object_get(m, "result"))
                seen[id]++;
        } else {
            const char *meth = json_string_value(json_object_get(m, "method"));
            notes += meth && !strcmp(meth, "notifications/message");
            splits += meth && !strcmp(meth, "notifications/split");
        }
        json_decref(m);
        p = nl + 1;
    }
    buf_cleanup(&co.out);
    CHECK_EQ(bad, 0);
    CHECK_EQ(notes, (size_t)NTHREADS * NNOTE);
    CHECK_EQ(splits, 1);
    for (int i = 1; i <= NREQ; i++)
        CHECK_EQ(seen[i], 1);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_WARN);
    make_tree();
    server_up();

    RUN(notify_without_a_session);
    RUN(whole_lines_from_many_threads);

    server_down();
    rm_tree(base);
    DONE();
}
