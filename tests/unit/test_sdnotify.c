/*
 * test_sdnotify.c - systemd's notification protocol (server/sdnotify.c)
 * against a socket this test binds: the datagrams themselves, abstract
 * names, the worker-to-master pipe, and the server binary end to end
 * (READY=1 only once /readyz answers ready, WATCHDOG=1 at half the period
 * and only from the master, STOPPING=1 on SIGTERM, a hung worker stops the
 * petting).
 */
#include "harness.h"
#include "tmptree.h"
#include "sdnotify.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/skill-mcp-sdnotify.XXXXXX";
static char bin[4096];

/* A datagram socket at path ("@name": abstract), credentials passed. */
static int bind_dgram(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    memcpy(a.sun_path, path, n);
    if (path[0] == '@')
        a.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] != '@'));
    if (bind(fd, (struct sockaddr *)&a, len) < 0) {
        perror("bind");
        close(fd);
        return -1;
    }
    return fd;
}

/* One datagram within ms: its text and its sender's pid; -1 on timeout. */
static int recv_msg(int fd, int ms, char *buf, size_t cap, pid_t *from)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return -1;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {buf, cap - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
                       .msg_controllen = sizeof ctl};
    ssize_t n = recvmsg(fd, &m, 0);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    if (from) {
        *from = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                struct ucred u;
                memcpy(&u, CMSG_DATA(c), sizeof u);
                *from = u.pid;
            }
    }
    return (int)n;
}

TEST(nothing_without_notify_socket)
{
    unsetenv("NOTIFY_SOCKET");
    setenv("WATCHDOG_USEC", "100000", 1);
    sdn_init();
    CHECK_EQ(sdn_enabled(), 0);
    CHECK_EQ(sdn_send("READY=1"), 1);
    /* a watchdog period without a socket to pet is no watchdog */
    CHECK_EQ(sdn_watchdog_usec(), 0);
    CHECK(getenv("WATCHDOG_USEC") == NULL);
}

TEST(path_socket)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/notify", dir);
    int fd = bind_dgram(path);
    CHECK(fd >= 0);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "500000", 1);
    sdn_init();
    /* scripts and hooks must not inherit them */
    CHECK(getenv("NOTIFY_SOCKET") == NULL);
    CHECK(getenv("WATCHDOG_USEC") == NULL);
    CHECK_EQ(sdn_enabled(), 1);
    CHECK_EQ(sdn_watchdog_usec(), 500000);
    sdn_ready("serving");
    pid_t from;
    CHECK(recv_msg(fd, 2000, buf, sizeof buf, &from) > 0);
    CHECK(!strncmp(buf, "READY=1\nSTATUS=serving\n", 23));
    CHECK_EQ(from, getpid());
    sdn_pet();
    CHECK(recv_msg(fd, 2000, buf, sizeof buf, NULL) > 0);
    CHECK_STR(buf, "WATCHDOG=1");
    sdn_stopping();
    CHECK(recv_msg(fd, 2000, buf, sizeof buf, NULL) > 0);
    CHECK(!strncmp(buf, "STOPPING=1", 10));
    close(fd);
    unlink(path);
}

TEST(abstract_socket)
{
    char name[100], buf[512];
    snprintf(name, sizeof name, "@skill-mcp-sdnotify-test-%ld", (long)getpid());
    int fd = bind_dgram(name);
    CHECK(fd >= 0);
    setenv("NOTIFY_SOCKET", name, 1);
    sdn_init();
    CHECK_EQ(sdn_send("STATUS=abstract"), 0);
    CHECK(recv_msg(fd, 2000, buf, sizeof buf, NULL) > 0);
    CHECK_STR(buf, "STATUS=abstract");
    close(fd);
}

TEST(watchdog_for_another_pid_is_ignored)
{
    char path[300], pid[32];
    snprintf(path, sizeof path, "%s/notify-wd", dir);
    int fd = bind_dgram(path);
    CHECK(fd >= 0);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "500000", 1);
    snprintf(pid, sizeof pid, "%ld", (long)getpid() + 1);
    setenv("WATCHDOG_PID", pid, 1);
    sdn_init();
    CHECK_EQ(sdn_watchdog_usec(), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "not-a-number", 1);
    sdn_init();
    CHECK_EQ(sdn_watchdog_usec(), 0);
    close(fd);
    unlink(path);
}

/* A NOTIFY_SOCKET whose owner never reads: its queue fills, and the
 * serving loop that pets the watchdog must not wait on it. */
TEST(unread_socket_never_blocks)
{
    char path[300];
    snprintf(path, sizeof path, "%s/notify-full", dir);
    int fd = bind_dgram(path);
    CHECK(fd >= 0);
    setenv("NOTIFY_SOCKET", path, 1);
    sdn_init();
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 5000; i++)
            sdn_send("WATCHDOG=1");
        _exit(0);
    }
    CHECK(pid > 0);
    int st = -1;
    for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(50 * 1000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        H_FAIL("5000 notifications to an unread socket still blocked after 5 s");
    }
    close(fd);
    unlink(path);
}

TEST(worker_reports_to_master_only)
{
    char path[300], buf[512], m[8];
    snprintf(path, sizeof path, "%s/notify-w", dir);
    int fd = bind_dgram(path), p[2];
    CHECK(fd >= 0);
    CHECK_EQ(pipe(p), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    sdn_init();
    sdn_worker(p[1], 3);
    sdn_ready("x");
    sdn_pet();
    sdn_stopping();
    CHECK_EQ(read(p[0], m, sizeof m), 4);
    CHECK(m[0] == SDN_MSG_READY && m[1] == 3 && m[2] == SDN_MSG_PET && m[3] == 3);
    /* nothing reached systemd's socket from the worker */
    CHECK_EQ(recv_msg(fd, 200, buf, sizeof buf, NULL), -1);
    sdn_worker(-1, 0);
    close(p[0]);
    close(p[1]);
    close(fd);
    unlink(path);
}

/* ---- the server binary ---------------------------------------------------- */

/* Enough skills that the first snapshot takes a while: a notification sent
 * before it is built cannot pass unnoticed. */
static char library[300];

static int make_library(int n)
{
    snprintf(library, sizeof library, "%s/library", dir);
    if (mkdir(library, 0755) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/s%d", library, i);
        if (mkdir(p, 0755) < 0)
            return -1;
        snprintf(p, sizeof p, "%s/s%d/SKILL.md", library, i);
        FILE *f = fopen(p, "w");
        if (!f)
            return -1;
        fprintf(f, "---\nname: s%d\ndescription: skill %d of a large library\n---\n# s%d\n", i,
                i, i);
        fclose(f);
    }
    return 0;
}

static pid_t child = -1;
static int child_err = -1;
static char errlog[65536];
static size_t errlen;

static void drain_stderr(void)
{
    ssize_t n;
    while (errlen < sizeof errlog - 1 &&
           (n = read(child_err, errlog + errlen, sizeof errlog - 1 - errlen)) > 0)
        errlen += (size_t)n;
    errlog[errlen] = '\0';
}

static int start_server(const char *sock, const char *wd_usec, const char *workers)
{
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0)
        return -1;
    errlen = 0;
    errlog[0] = '\0';
    child = fork();
    if (child == 0) {
        dup2(ep[1], 2);
        setenv("NOTIFY_SOCKET", sock, 1);
        if (wd_usec)
            setenv("WATCHDOG_USEC", wd_usec, 1);
        else
            unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        execl(bin, bin, "--port", "0", "--skills", library, "--refresh-interval", "0",
              "--workers", workers, "--shutdown-timeout", "5", "--log-level", "debug", "--no-scripts",
              (char *)NULL);
        _exit(127);
    }
    close(ep[1]);
    child_err = ep[0];
    fcntl(child_err, F_SETFL, O_NONBLOCK);
    return child > 0 ? 0 : -1;
}

static void stop_server(void)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        /* its workers die with it (PR_SET_PDEATHSIG) */
    }
    child = -1;
    if (child_err >= 0)
        close(child_err);
    child_err = -1;
}

/* The port the server logged, 0 when it has not logged it yet. */
static int logged_port(void)
{
    drain_stderr();
    const char *p = strstr(errlog, "listening on http://127.0.0.1:");
    return p ? atoi(p + strlen("listening on http://127.0.0.1:")) : 0;
}

static int http_status(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    char req[200], resp[256] = "";
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t got = poll(&p, 1, 3000) > 0 ? read(fd, resp, sizeof resp - 1) : -1;
    close(fd);
    return got > 12 ? atoi(resp + 9) : -1;
}

/* Every datagram until READY=1 (within 20 s) came from the main pid. */
static int wait_ready(int fd, char *buf, size_t cap)
{
    for (int i = 0; i < 400; i++) {
        pid_t from;
        if (recv_msg(fd, 50, buf, cap, &from) < 0)
            continue;
        if (from != child) {
            H_FAIL("a notification from pid %ld, not the main pid %ld: %s", (long)from,
                   (long)child, buf);
            return -1;
        }
        if (!strncmp(buf, "READY=1", 7))
            return 0;
    }
    drain_stderr();
    H_FAIL("no READY=1 in 20 s; stderr: %s", errlog);
    return -1;
}

/* WATCHDOG=1 over span_ms: their count and the longest gap between two. */
static int count_pets(int fd, int span_ms, int *max_gap_ms, pid_t main_pid)
{
    uint64_t end = now_ns() + (uint64_t)span_ms * 1000000, last = 0;
    int count = 0;
    *max_gap_ms = 0;
    char buf[512];
    while (now_ns() < end) {
        pid_t from;
        int left = (int)((end - now_ns()) / 1000000) + 1;
        if (recv_msg(fd, left, buf, sizeof buf, &from) < 0)
            continue;
        if (strcmp(buf, "WATCHDOG=1"))
            continue;
        if (from != main_pid)
            return -1;
        uint64_t t = now_ns();
        if (last && (int)((t - last) / 1000000) > *max_gap_ms)
            *max_gap_ms = (int)((t - last) / 1000000);
        last = t;
        count++;
    }
    return count;
}

/* The socket DIR/NAME, bound, and a server started to notify it
 * (WATCHDOG_USEC=400000): the socket, or -1. */
static int server_on(const char *name, const char *workers, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    int fd = bind_dgram(path);
    if (fd < 0)
        return -1;
    if (start_server(path, "400000", workers) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void server_off(int fd, const char *path)
{
    stop_server();
    close(fd);
    unlink(path);
}

static void server_checks(int fd, const char *workers)
{
    char buf[512];
    if (wait_ready(fd, buf, sizeof buf) < 0)
        return;
    /* At READY=1 the port is logged (after the first snapshot and the
     * listener) and /readyz answers 200 at once. */
    int port = logged_port();
    if (!port) {
        H_FAIL("READY=1 came before the server logged its port: %s", errlog);
        return;
    }
    CHECK_EQ(http_status(port, "/readyz"), 200);
    /* With workers, each one has said it serves before the master's READY=1. */
    for (int i = 0; strcmp(workers, "1") && i < atoi(workers); i++) {
        char want[64];
        snprintf(want, sizeof want, " w%d worker serving", i);
        if (!strstr(errlog, want))
            H_FAIL("READY=1 before worker %d was serving: %s", i, errlog);
    }
    int gap, n = count_pets(fd, 1500, &gap, child);
    /* WATCHDOG_USEC=400000: a pet every 200 ms, never a gap of a period */
    if (n < 5 || n > 10 || gap >= 400)
        H_FAIL("%d WATCHDOG=1 in 1.5 s, longest gap %d ms (want 5..10, < 400 ms)", n, gap);
    kill(child, SIGTERM);
    int stopping = 0;
    for (int i = 0; i < 40 && !stopping; i++)
        if (recv_msg(fd, 50, buf, sizeof buf, NULL) > 0 && !strncmp(buf, "STOPPING=1", 10))
            stopping = 1;
    CHECK(stopping);
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    child = -1;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(server_single_process)
{
    char path[300];
    int fd = server_on("srv1", "1", path, sizeof path);
    CHECK(fd >= 0);
    server_checks(fd, "1");
    server_off(fd, path);
}

TEST(server_workers_master_speaks)
{
    char path[300];
    int fd = server_on("srv2", "2", path, sizeof path);
    CHECK(fd >= 0);
    server_checks(fd, "2");
    server_off(fd, path);
}

/* A worker whose serving loop is stuck (stopped here) stops the master's
 * petting; it resumes once the worker beats again. */
TEST(server_hung_worker_stops_the_watchdog)
{
    char sock[300], path[300], buf[512], kids[256] = "";
    int fd = server_on("srv3", "2", sock, sizeof sock);
    CHECK(fd >= 0);
    if (wait_ready(fd, buf, sizeof buf) < 0)
        goto out;
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)child, (long)child);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(kids, sizeof kids, f)) {
        H_FAIL("cannot read the workers from %s", path);
        if (f)
            fclose(f);
        goto out;
    }
    fclose(f);
    pid_t worker = (pid_t)atol(kids);
    int gap, n = count_pets(fd, 600, &gap, child);
    if (n < 2)
        H_FAIL("only %d WATCHDOG=1 in 0.6 s before the hang", n);
    kill(worker, SIGSTOP);
    /* allow the period for the last beat to age, then nothing */
    count_pets(fd, 500, &gap, child);
    n = count_pets(fd, 800, &gap, child);
    kill(worker, SIGCONT);
    if (n != 0)
        H_FAIL("%d WATCHDOG=1 while worker %ld was stopped", n, (long)worker);
    n = count_pets(fd, 800, &gap, child);
    if (n < 2)
        H_FAIL("%d WATCHDOG=1 after the worker resumed (want it back)", n);
out:
    server_off(fd, sock);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* The binary beside the tests' folder: BUILD/tests/.. */
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(bin, sizeof bin, "%s/../skill-mcp", dirname(self));
    if (access(bin, X_OK) < 0) {
        printf("# %s is missing: build it first (make all)\n", bin);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (make_library(1000) < 0) {
        perror("make_library");
        return 1;
    }
    RUN(nothing_without_notify_socket);
    RUN(path_socket);
    RUN(abstract_socket);
    RUN(watchdog_for_another_pid_is_ignored);
    RUN(unread_socket_never_blocks);
    RUN(worker_reports_to_master_only);
    RUN(server_single_process);
    RUN(server_workers_master_speaks);
    RUN(server_hung_worker_stops_the_watchdog);
    tt_rm_rf(dir);
    DONE();
}
