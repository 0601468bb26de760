/*
 * sdnotify.c - see sdnotify.h. The protocol: each message is one AF_UNIX
 * datagram of newline-separated KEY=VALUE lines sent to the path in
 * $NOTIFY_SOCKET; a leading '@' names a socket in the abstract namespace
 * (the '@' becomes a NUL byte and the address is not NUL-terminated).
 */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

static struct sockaddr_un addr;
static socklen_t addr_len;      /* 0: no socket, nothing is sent */
static int sock = -1;
static uint64_t watchdog_usec;
static int worker_fd = -1;      /* in a worker: the pipe to the master */
static int worker_index;
static int warned;

void sdn_init(void)
{
    const char *ns = getenv("NOTIFY_SOCKET");
    const char *wu = getenv("WATCHDOG_USEC");
    const char *wp = getenv("WATCHDOG_PID");
    addr_len = 0;
    watchdog_usec = 0;
    if (ns && (ns[0] == '/' || ns[0] == '@') && strlen(ns) < sizeof addr.sun_path) {
        size_t n = strlen(ns);
        memset(&addr, 0, sizeof addr);
        addr.sun_family = AF_UNIX;
        memcpy(addr.sun_path, ns, n);
        if (ns[0] == '@')
            addr.sun_path[0] = '\0';
        /* A path is sent with its NUL; an abstract name is exactly n bytes. */
        addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (ns[0] == '/'));
        sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (sock < 0)
            addr_len = 0;
    } else if (ns && *ns) {
        log_warn("NOTIFY_SOCKET '%s' is neither a path nor an abstract name: not notifying",
                 ns);
    }
    if (addr_len && wu && *wu) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(wu, &end, 10);
        /* WATCHDOG_PID names the process the watchdog is meant for; a
         * value inherited by some other process is not ours to honour. */
        long pid = wp && *wp ? strtol(wp, NULL, 10) : (long)getpid();
        if (!errno && !*end && v > 0 && pid == (long)getpid())
            watchdog_usec = v;
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int sdn_enabled(void)
{
    return addr_len != 0;
}

uint64_t sdn_watchdog_usec(void)
{
    return watchdog_usec;
}

int sdn_send(const char *msg)
{
    if (!addr_len || sock < 0)
        return 1;
    ssize_t n;
    /* MSG_DONTWAIT: a receiver that stopped reading fills its queue, and
     * the loop that pets the watchdog must drop a datagram, not wait. */
    do
        n = sendto(sock, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&addr,
                   addr_len);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (!warned++)
            log_warn("cannot notify systemd (NOTIFY_SOCKET): %s", strerror(errno));
        return -1;
    }
    return 0;
}

void sdn_worker(int fd, int index)
{
    worker_fd = fd;
    worker_index = index;
    if (sock >= 0)
        close(sock);
    sock = -1;
}

static void to_master(char kind)
{
    /* Two bytes: one write on a pipe is atomic, and the master's reads stay
     * aligned. A full pipe drops a heartbeat rather than block the loop. */
    char m[2] = {kind, (char)worker_index};
    ssize_t n;
    do
        n = write(worker_fd, m, sizeof m);
    while (n < 0 && errno == EINTR);
}

void sdn_ready(const char *status)
{
    if (worker_fd >= 0) {
        to_master(SDN_MSG_READY);
        return;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s\nMAINPID=%ld", status ? status : "serving",
             (long)getpid());
    sdn_send(msg);
}

void sdn_stopping(void)
{
    if (worker_fd < 0)
        sdn_send("STOPPING=1\nSTATUS=draining");
}

void sdn_pet(void)
{
    if (worker_fd >= 0)
        to_master(SDN_MSG_PET);
    else
        sdn_send("WATCHDOG=1");
}
