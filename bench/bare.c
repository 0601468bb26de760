/*
 * bare.c - the practical ceiling: a libmicrohttpd server with the same
 * daemon flags and thread count as skill-mcp that answers every POST with a
 * canned body of a given size, doing no JSON work at all.
 *
 *   bench/bare PORT BODY_FILE THREADS
 *
 * Prints "PORT n" once it listens; PORT 0 lets the kernel pick a free one.
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *body;
static size_t body_len;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx)
{
    if (!*ctx) {
        *ctx = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(con, 200, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bare PORT BODY_FILE THREADS\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    body_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    body = malloc(body_len + 1);
    if (fread(body, 1, body_len, f) != body_len)
        return 1;
    fclose(f);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO, (uint16_t)atoi(argv[1]),
        NULL, NULL, on_request, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)atoi(argv[3]),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bare: cannot listen on port %s\n", argv[1]);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("PORT %u\n", di ? (unsigned)di->port : 0u);
    fflush(stdout);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    sigprocmask(SIG_BLOCK, &s, NULL);
    int sig;
    sigwait(&s, &sig);
    MHD_stop_daemon(d);
    free(body);
    return 0;
}
