/*
 * runner.c - children, pipes and timers, all on the libuv loop thread.
 *
 * Life of a job: run_submit() (any thread) puts it on the incoming list and
 * wakes the loop; the loop queues it in order and starts it when a slot is
 * free (or ends it as `busy` when it waited too long). Starting = a scratch
 * folder, pipes, a clone whose child sets the rlimits and becomes the script
 * user itself before it execs (new session, so a new process group; default
 * signal dispositions and an empty mask; every other fd closed), a pidfd
 * watched for the exit, and the ceiling and stall timers. Output is read as
 * it comes, retained up to a cap and counted past it, so a chatty script
 * never blocks on a full pipe. A job finishes when the child has exited and
 * both pipes are at EOF (or a short drain grace has passed); its handles are
 * then closed and, once the last close callback has run, the done callback
 * is called and the next queued job starts.
 *
 * Kill = SIGTERM to the process group, then SIGKILL after a grace; the group
 * is SIGKILLed as soon as the leader is reaped, and a process that left the
 * group (setsid) is reparented to this process, a child subreaper, and
 * killed by the orphan sweep: no grandchild survives its run.
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define KILL_GRACE_MS 2000
#define DRAIN_GRACE_MS 500
#define READ_CHUNK 65536
#define SPARES 4               /* scratch folders made ahead of the jobs */

struct run_slot {
    atomic_int owner;           /* worker index + 1; 0 = free */
    atomic_int pgid;            /* the script's process group, once spawned */
};

struct run_shared {
    atomic_uint_fast64_t started, ok, failed, stalled, timeout, denied, busy;
    atomic_int_fast64_t live, queued;
    atomic_int_fast64_t queued_by[RUN_MAX_WORKERS];
    int nslots;
    struct run_slot slots[];    /* nslots = --max-script-concurrency */
};

struct runner {
    uv_loop_t *uv;
    uv_async_t wake;
    pthread_mutex_t mu;
    struct run_job *incoming, **incoming_tail;   /* guarded by mu */
    struct run_job *queue, **queue_tail;         /* loop thread only */
    struct run_job *live_list;                   /* loop thread only */
    struct cancel { char id[64], client[80]; int rpc; } cancels[16];  /* guarded by mu */
    int ncancels;
    int max_live;
    uint64_t queue_timeout_ms;
    int live;
    int closing;
    int closed;                 /* guarded by mu: no loop left to run jobs */
    struct run_shared *sh;      /* the instance's counters (shared memory) */
    int worker;                 /* this process's index among the workers */
    uv_timer_t retry;           /* another worker holds the free slots: look again soon */
    int retry_armed;
    uv_timer_t sweep;           /* looks for orphans reparented to this process */
    int subreaper;              /* PR_SET_CHILD_SUBREAPER is in effect */
    int orphans;                /* the last sweep left some to reap */
    void *stack;                /* the children's stack between clone and exec */
    char *trash;                /* this process's 0700 folder of used scratch folders, or NULL */
    unsigned trash_seq;
    char *spare[SPARES];        /* scratch folders made ahead (loop thread) */
    int nspare, spare_pending;  /* ready; being made on the thread pool */
};

const char *run_status_name(enum run_status s)
{
    static const char *const names[] = {"ok", "failed", "stalled", "timeout", "denied", "busy"};
    return names[s];
}

/* ---- small helpers ------------------------------------------------------ */

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    return remove(p);
}

static void remove_tree(const char *dir)
{
    if (dir)
        nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A used scratch folder leaves the script user's reach before the result is
 * handed on, and is deleted off the loop thread: on ext4 an rmdir, even of
 * an empty folder, can wait for a journal commit (3 ms a run measured here,
 * three times per hooked call), where a rename is a directory entry. The
 * trash folder is this process's own (0700, on the same /tmp), so nothing
 * the script user runs can reach what is renamed into it.
 *
 * The next scratch folders are made on the same thread pool, ahead of the
 * jobs that take them: a mkdir on ext4 costs 0.1-0.2 ms and, at times,
 * milliseconds, on the path of every run and of each hook. A spare is
 * this process's own 0700 folder, out of a script user's reach until the
 * job that takes it gives it to that user; it is named with the pid (and
 * its namespace), so that the next server removes those of a server
 * killed outright.
 */
struct scratch_work {
    uv_work_t req;
    struct runner *r;
    char *del;                  /* a used folder in the trash, or NULL */
    int nmake, nmade;
    char *made[SPARES];
};

/*
 * A pid names a server only inside its pid namespace: servers in containers
 * that share /tmp see each other's pids as gone. The names carry the
 * namespace (its inode number) after the pid, and the start-up sweep judges
 * only folders of its own namespace, so it never removes the scratch folder
 * of a script still running in another one.
 */
static char pidns[24] = "0";

static void pidns_init(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0)
        snprintf(pidns, sizeof pidns, "%llu", (unsigned long long)st.st_ino);
}

static int scratch_make(char *out, size_t n)
{
    snprintf(out, n, "/tmp/skill-mcp-run-%d-%s-XXXXXX", (int)getpid(), pidns);
    return mkdtemp(out) ? 0 : -1;
}

static void scratch_work(uv_work_t *w)
{
    struct scratch_work *t = w->data;
    remove_tree(t->del);
    for (int i = 0; i < t->nmake; i++) {
        char dir[96];
        if (scratch_make(dir, sizeof dir) == 0)
            t->made[t->nmade++] = xstrdup(dir);
    }
}

static void scratch_worked(uv_work_t *w, int status)
{
    struct scratch_work *t = w->data;
    struct runner *r = t->r;
    r->spare_pending -= t->nmake;
    for (int i = 0; i < t->nmade; i++) {
        if (r->closing || r->nspare == SPARES) {
            rmdir(t->made[i]);
            free(t->made[i]);
        } else {
            r->spare[r->nspare++] = t->made[i];
        }
    }
    free(t->del);
    free(t);
}

/* Deletes del (in the trash) and tops the spares up, on the thread pool. */
static void scratch_queue(struct runner *r, char *del)
{
    int make = r->closing ? 0 : SPARES - r->nspare - r->spare_pending;
    if (!del && make <= 0)
        return;
    struct scratch_work *t = xcalloc(1, sizeof *t);
    t->req.data = t;
    t->r = r;
    t->del = del;
    t->nmake = make > 0 ? make : 0;
    if (uv_queue_work(r->uv, &t->req, scratch_work, scratch_worked) == 0) {
        r->spare_pending += t->nmake;
        return;
    }
    remove_tree(del);
    free(del);
    free(t);
}

/*
 * Whether the spare d is still the folder this process made, then given to
 * uid (-1: kept). A spare waits in world-writable /tmp, where a cleaner may
 * remove it and anyone may then put a link or a folder of their own at its
 * name: the name is opened without following a link and the folder proven
 * ours, 0700, before it is chowned through that descriptor. Once it is the
 * script user's, no other user may rename it in sticky /tmp.
 */
static int spare_claim(const char *d, int uid, int gid)
{
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
             (st.st_mode & 07777) == 0700 &&
             (uid < 0 || fchown(fd, (uid_t)uid, (gid_t)gid) == 0);
    close(fd);
    return ok;
}

/* A new scratch folder, given to uid (-1: kept): a spare, else one made
 * now. NULL with errno set. */
static char *scratch_take(struct runner *r, int uid, int gid)
{
    while (r->nspare > 0) {
        char *d = r->spare[--r->nspare];
        if (spare_claim(d, uid, gid))
            return d;
        /* not ours any more: whatever is at that name is left alone */
        free(d);
    }
    char dir[96];
    if (scratch_make(dir, sizeof dir) < 0)
        return NULL;
    /* The script runs as --script-user: its HOME must be its own. */
    if (uid >= 0 && chown(dir, (uid_t)uid, (gid_t)gid) < 0)
        log_warn("cannot give the scratch folder to uid %d: %s", uid, strerror(errno));
    return xstrdup(dir);
}

/* Takes dir out of reach; the path in the trash, to be deleted, or NULL
 * when it is gone already. */
static char *scratch_retire(struct runner *r, const char *dir)
{
    char dst[PATH_MAX];
    if (!dir)
        return NULL;
    if (r->trash) {
        snprintf(dst, sizeof dst, "%s/%u", r->trash, r->trash_seq++);
        if (rename(dir, dst) == 0)
            return xstrdup(dst);
    }
    remove_tree(dir);
    return NULL;
}

/*
 * The trash folders and spare scratch folders of servers that ended without
 * removing theirs (killed outright): this user's own 0700 folders whose pid,
 * in this pid namespace, is gone. Only folders this user owns, so nothing
 * another user planted in /tmp is walked.
 */
static void trash_sweep_stale(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        static const char trash[] = "skill-mcp-trash-", spare[] = "skill-mcp-run-";
        size_t skip = !strncmp(e->d_name, trash, sizeof trash - 1)   ? sizeof trash - 1
                      : !strncmp(e->d_name, spare, sizeof spare - 1) ? sizeof spare - 1
                                                                     : 0;
        if (!skip)
            continue;
        char *end;
        long pid = strtol(e->d_name + skip, &end, 10);
        size_t nl = strlen(pidns);
        if (pid <= 0 || *end != '-' || pid == (long)getpid() || strncmp(end + 1, pidns, nl) ||
            end[1 + nl] != '-')
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[300];
        struct stat st;
        snprintf(path, sizeof path, "/tmp/%s", e->d_name);
        if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 0777) != 0700)
            continue;
        remove_tree(path);
    }
    closedir(d);
}

static void kill_group(struct run_job *j, int sig)
{
    if (j->_pid > 0)
        kill(-j->_pid, sig);
}

static void pump(struct runner *r);

/* ---- orphans -------------------------------------------------------------- */

/*
 * The server is a child subreaper, so a process that leaves its run's
 * process group (setsid, a double fork) is reparented here when its parent
 * exits, instead of to init, where it would outlive its run as the script
 * user. A sweep kills every child of this process that is neither a live
 * job's leader nor in a live job's process group (those die with their
 * group), and reaps the ones already dead. Only those pids are waited for:
 * job leaders are reaped through their pidfds, by pid.
 */
static int is_job_pgid(const struct runner *r, int pid, int pgid)
{
    for (const struct run_job *j = r->live_list; j; j = j->_live_next)
        if (j->_pid > 0 && !j->_exited && (j->_pid == pid || j->_pid == pgid))
            return 1;
    return 0;
}

/* Looks at one process: kills it when it is an orphan of a run. 1 when it
 * was killed (to be reaped by a later sweep). */
static int sweep_one(struct runner *r, int self, int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* pid (comm) state ppid pgrp ...; comm may hold spaces and ')' */
    char *rp = strrchr(buf, ')');
    char state;
    int ppid, pgid;
    if (!rp || sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgid) != 3 || ppid != self)
        return 0;
    if (is_job_pgid(r, pid, pgid))
        return 0;
    if (state == 'Z') {
        waitpid(pid, NULL, WNOHANG);
        return 0;
    }
    log_info("runner: killing pid %d, which left its script's process group and outlived "
             "its parent", pid);
    if (pgid == pid)
        kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    return 1;
}

/*
 * The children of this process, from each thread's /proc children list (an
 * orphan is reparented to one of the subreaper's threads): a handful of
 * reads, where walking /proc costs three system calls for every process on
 * the machine, at every script's exit. -1 when the kernel has no such lists
 * (CONFIG_PROC_CHILDREN), or when there are more than max.
 */
static int list_children(int *pids, int max)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n >= 0) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[80], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(path, sizeof path, "/proc/self/task/%s", e->d_name);
            if (access(path, F_OK) < 0)
                continue;   /* the thread ended meanwhile */
            n = -1;         /* no children lists in this kernel */
            break;
        }
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got < 0 || got == (ssize_t)sizeof buf - 1) {
            n = -1;         /* unreadable, or too many to be sure of the rest */
            break;
        }
        buf[got] = '\0';
        for (char *p = buf, *end; *p; p = end) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (n == max) {
                n = -1;
                break;
            }
            pids[n++] = (int)pid;
        }
    }
    closedir(d);
    return n;
}

/*
 * Where an orphan lands at once: the kernel gives it to the subreaper's
 * first live thread, the leader (older kernels: the thread that started its
 * run, this one). Two reads instead of one per thread of the server, for the
 * sweep at every run's exit; -1 as list_children.
 */
static int list_children_near(int *pids, int max)
{
    char leader[64];
    snprintf(leader, sizeof leader, "/proc/self/task/%d/children", (int)getpid());
    const char *paths[2] = {leader, "/proc/thread-self/children"};
    int n = 0;
    for (int i = 0; i < 2; i++) {
        char buf[4096];
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (got < 0 || got == (ssize_t)sizeof buf - 1)
            return -1;
        buf[got] = '\0';
        for (char *p = buf, *end; *p; p = end) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (n == max)
                return -1;
            pids[n++] = (int)pid;
        }
    }
    return n;
}

/* full: every thread's children (the periodic sweep, shutdown); else the
 * two lists an orphan of the run that just ended is on. */
static void sweep_orphans(struct runner *r, int full)
{
    if (!r->subreaper)
        return;
    int self = (int)getpid(), left = 0;
    int kids[256];
    int nk = full ? -1 : list_children_near(kids, (int)(sizeof kids / sizeof *kids));
    if (nk < 0)
        nk = list_children(kids, (int)(sizeof kids / sizeof *kids));
    if (nk >= 0) {
        for (int i = 0; i < nk; i++)
            left |= sweep_one(r, self, kids[i]);
        r->orphans = left;
        return;
    }
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
            left |= sweep_one(r, self, (int)strtol(e->d_name, NULL, 10));
    closedir(d);
    r->orphans = left;
}

static void on_sweep(uv_timer_t *t)
{
    struct runner *r = t->data;
    if (r->live > 0 || r->orphans)
        sweep_orphans(r, 1);
}

/* Set on the loop thread while a done callback runs: a job it submits (the
 * hook chain's next stage) is queued at once and started by the pump that
 * follows, without a wake-up of the loop through its async handle. */
static _Thread_local struct runner *in_done;

static void maybe_release(struct run_job *j)
{
    if (!j->_finished || j->_open_handles > 0)
        return;
    struct runner *r = j->_r;
    if (j->_pidfd >= 0) {
        close(j->_pidfd);
        j->_pidfd = -1;
    }
    /* The outcome is counted before the slot is given back: a reader that
     * sees live drop also sees how the run ended. */
    switch (j->hook ? -1 : (int)j->status) {
    case RUN_OK: atomic_fetch_add(&r->sh->ok, 1); break;
    case RUN_FAILED: atomic_fetch_add(&r->sh->failed, 1); break;
    case RUN_STALLED: atomic_fetch_add(&r->sh->stalled, 1); break;
    case RUN_TIMEOUT: atomic_fetch_add(&r->sh->timeout, 1); break;
    case RUN_BUSY: atomic_fetch_add(&r->sh->busy, 1); break;
    case RUN_DENIED: atomic_fetch_add(&r->sh->denied, 1); break;
    }
    if (j->_slot >= 0) {
        struct run_slot *sl = &r->sh->slots[j->_slot];
        atomic_store(&sl->pgid, 0);
        atomic_store(&sl->owner, 0);
        j->_slot = -1;
        atomic_fetch_sub(&r->sh->live, 1);
    }
    if (j->_t_start) {
        for (struct run_job **pp = &r->live_list; *pp; pp = &(*pp)->_live_next)
            if (*pp == j) {
                *pp = j->_live_next;
                break;
            }
        r->live--;
    }
    char *used = scratch_retire(r, j->_scratch);
    log_info("run %s %s/%s: %s in %.0f ms (stdout %llu B, stderr %llu B)", j->request_id,
             j->skill, j->script, run_status_name(j->status), j->duration_ms,
             (unsigned long long)j->out.total, (unsigned long long)j->err.total);
    run_done_fn done = j->_done;
    void *arg = j->_arg;
    struct runner *was = in_done;
    in_done = r;
    done(j, arg);
    in_done = was;
    pump(r);
    /* after the answer and the next stage are on their way */
    scratch_queue(r, used);
}

static void on_closed(uv_handle_t *h)
{
    struct run_job *j = h->data;
    j->_open_handles--;
    maybe_release(j);
}

static void close_handle(struct run_job *j, void *h)
{
    uv_handle_t *hh = h;
    if (hh->data && !uv_is_closing(hh))
        uv_close(hh, on_closed);
}

static void init_timer(struct run_job *j, uv_timer_t *t)
{
    uv_timer_init(j->_r->uv, t);
    t->data = j;
    j->_open_handles++;
}

/* ---- finishing -------------------------------------------------------------- */

static void finish(struct run_job *j)
{
    if (j->_finished)
        return;
    j->_finished = 1;
    uint64_t now = uv_hrtime();
    j->duration_ms = (double)(now - j->_t_start) / 1e6;
    j->silent_for_s = (double)(now - (j->_t_last ? j->_t_last : j->_t_start)) / 1e9;
    if (j->status == RUN_OK) {
        int st = j->_raw_status;
        if (WIFEXITED(st)) {
            j->exit_code = WEXITSTATUS(st);
            j->status = j->exit_code ? RUN_FAILED : RUN_OK;
        } else if (WIFSIGNALED(st)) {
            j->exit_code = -1;
            j->term_signal = WTERMSIG(st);
            j->status = RUN_FAILED;
        }
    } else if (j->_exited && j->_pid > 0) {
        int st = j->_raw_status;
        j->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        j->term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    }
    close_handle(j, &j->_ceiling);
    close_handle(j, &j->_stall);
    close_handle(j, &j->_grace);
    close_handle(j, &j->_exit);
    close_handle(j, &j->_out);
    close_handle(j, &j->_err);
    close_handle(j, &j->_in);
    maybe_release(j);
}

static void check_done(struct run_job *j)
{
    if (j->_exited && j->_out_eof && j->_err_eof)
        finish(j);
}

/* ---- output ------------------------------------------------------------------ */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static _Thread_local char chunk[READ_CHUNK];
    buf->base = chunk;
    buf->len = sizeof chunk;
}

static void note_last_line(struct run_job *j, const char *p, size_t n)
{
    /* the last non-empty line of what just arrived, if it has one */
    size_t end = n;
    while (end && (p[end - 1] == '\n' || p[end - 1] == '\r'))
        end--;
    if (!end)
        return;
    size_t start = end;
    while (start && p[start - 1] != '\n')
        start--;
    size_t len = end - start;
    if (len >= sizeof j->last_line)
        len = utf8_trim(p + start, sizeof j->last_line - 1);
    memcpy(j->last_line, p + start, len);
    j->last_line[len] = '\0';
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct run_job *j = s->data;
    struct run_stream *rs = s == (uv_stream_t *)&j->_out ? &j->out : &j->err;
    if (n > 0) {
        size_t keep = (size_t)n;
        rs->total += (uint64_t)n;
        if (rs->len + keep > j->retain_max) {
            keep = j->retain_max > rs->len ? j->retain_max - rs->len : 0;
            rs->truncated = 1;
        }
        if (keep) {
            rs->data = xrealloc(rs->data, rs->len + keep + 1);
            memcpy(rs->data + rs->len, buf->base, keep);
            rs->len += keep;
            rs->data[rs->len] = '\0';
        }
        j->_t_last = uv_hrtime();
        note_last_line(j, buf->base, (size_t)n);
        if (j->on_stderr && s == (uv_stream_t *)&j->_err)
            j->on_stderr(buf->base, (size_t)n, j->stderr_arg);
        if (j->stall_s > 0 && !j->_killed)
            uv_timer_again(&j->_stall);
        return;
    }
    if (n < 0) {
        if (s == (uv_stream_t *)&j->_out)
            j->_out_eof = 1;
        else
            j->_err_eof = 1;
        uv_read_stop(s);
        close_handle(j, s);
        check_done(j);
    }
}

/* ---- timers ------------------------------------------------------------------ */

static void on_grace(uv_timer_t *t)
{
    struct run_job *j = t->data;
    if (!j->_exited) {
        kill_group(j, SIGKILL);     /* it ignored SIGTERM */
        return;
    }
    /* Exited, but something outside the group still holds a pipe open. */
    j->_out_eof = j->_err_eof = 1;
    finish(j);
}

static void start_kill(struct run_job *j, enum run_status why)
{
    if (j->_killed || j->_exited)
        return;
    j->_killed = 1;
    j->status = why;
    uv_timer_stop(&j->_ceiling);
    uv_timer_stop(&j->_stall);
    kill_group(j, SIGTERM);
    uv_timer_start(&j->_grace, on_grace, KILL_GRACE_MS, 0);
}

static void on_ceiling(uv_timer_t *t)
{
    start_kill(t->data, RUN_TIMEOUT);
}

static void on_stall(uv_timer_t *t)
{
    start_kill(t->data, RUN_STALLED);
}

static void on_exit_ready(uv_poll_t *p, int status, int events)
{
    struct run_job *j = p->data;
    int st;
    pid_t got = waitpid(j->_pid, &st, WNOHANG);
    if (got != j->_pid)
        return;
    j->_exited = 1;
    j->_raw_status = st;
    uv_poll_stop(p);
    /* Grandchildren left in the group die with the leader, and those that
     * left the group, now reparented here, with the sweep. */
    kill_group(j, SIGKILL);
    sweep_orphans(j->_r, 0);
    uv_timer_stop(&j->_ceiling);
    uv_timer_stop(&j->_stall);
    if (!j->_out_eof || !j->_err_eof)
        uv_timer_start(&j->_grace, on_grace, DRAIN_GRACE_MS, 0);
    check_done(j);
}

static void on_stdin_written(uv_write_t *w, int status)
{
    struct run_job *j = w->data;
    close_handle(j, &j->_in);     /* EOF for the script */
}

/* ---- starting ------------------------------------------------------------------ */

/* argv/envp of the job plus HOME and TMPDIR pointing at the scratch folder. */
static char **env_with_scratch(struct run_job *j, char *home, char *tmp)
{
    size_t n = 0;
    while (j->envp && j->envp[n])
        n++;
    char **e = xcalloc(n + 3, sizeof *e);
    memcpy(e, j->envp, n * sizeof *e);
    e[n] = home;
    e[n + 1] = tmp;
    return e;
}

/*
 * What the child does between clone and exec, all prepared by the parent:
 * the child shares the parent's memory (CLONE_VM) until it execs, so it
 * allocates nothing, takes no lock and touches no stdio; it only makes
 * system calls on these fields and reports a failure in err/step.
 */
struct child {
    char **argv, **envp;
    const char *cwd;
    int fd_in, fd_out, fd_err;
    int fd_script;              /* dup'ed to 3, or -1 */
    int nlim;
    int res[5];
    struct rlimit lim[5];
    int uid, gid;               /* -1: no switch */
    volatile int err;           /* errno of the failed step, 0 when exec happened */
    const char *volatile step;
};

/*
 * Order matters: the rlimits before the user switch (RLIMIT_NPROC is then
 * checked against the script user's processes at exec), the groups before
 * the gid before the uid (each needs the privilege the next one drops), and
 * no_new_privs last, so that a setuid file the script runs gains nothing.
 * The set*id calls are raw system calls: glibc's wrappers would signal
 * every thread of the parent (which shares this memory) to change its
 * credentials too.
 */
/* The child runs on a small stack of its own in the parent's memory, under
 * the script's RLIMIT_AS: AddressSanitizer's bookkeeping before a noreturn
 * call (it maps memory to unpoison that stack) would fail there and turn a
 * refused exec into an ordinary exit 1, so these two are not instrumented. */
#define CHILD_NO_ASAN __attribute__((no_sanitize("address")))

CHILD_NO_ASAN __attribute__((noreturn)) static void child_fail(struct child *c,
                                                               const char *step)
{
    c->err = errno ? errno : EINVAL;
    c->step = step;
    _exit(127);
}

CHILD_NO_ASAN static int child_main(void *arg)
{
    struct child *c = arg;
    /* The server ignores SIGPIPE, and may have been started with other
     * signals ignored (an ignored signal stays ignored across exec): a
     * script gets every one at its default. The raw call, because glibc's
     * sigaction refuses the two real-time signals it keeps for itself, and
     * a parent that ignored those would pass them on. An all-zero kernel
     * sigaction is SIG_DFL, no flags, an empty mask, whatever the layout. */
    static const unsigned long dfl[8];
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            syscall(SYS_rt_sigaction, sig, dfl, NULL, (size_t)(NSIG - 1) / 8);
    if (setsid() < 0)
        child_fail(c, "setsid");
    /* Lifted above 3 first when one is among the targets: a server started
     * with 0-2 closed gets its pipes there, and a dup2 in place could
     * overwrite a source still to be moved (or, onto itself, keep
     * O_CLOEXEC). Sources all above the targets, the usual case, cannot. */
    int src[4] = {c->fd_in, c->fd_out, c->fd_err, c->fd_script};
    int nsrc = c->fd_script >= 0 ? 4 : 3, low = 0;
    for (int i = 0; i < nsrc; i++)
        low |= src[i] < nsrc;
    for (int i = 0; low && i < nsrc; i++)
        if ((src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 4)) < 0)
            child_fail(c, "dup");
    for (int i = 0; i < nsrc; i++)
        if (dup2(src[i], i) < 0)
            child_fail(c, "dup2");
    unsigned first = c->fd_script >= 0 ? 4 : 3;
    if (syscall(SYS_close_range, first, ~0U, 0) < 0) {
        struct rlimit nofile;
        rlim_t top = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 65536
                         ? nofile.rlim_cur : 65536;
        for (unsigned fd = first; fd < top; fd++)
            close((int)fd);
    }
    if (chdir(c->cwd) < 0)
        child_fail(c, "chdir to the skill folder");
    for (int i = 0; i < c->nlim; i++)
        if (setrlimit(c->res[i], &c->lim[i]) < 0)
            child_fail(c, "setrlimit");
    if (c->uid >= 0) {
        if (syscall(SYS_setgroups, 0, NULL) < 0)
            child_fail(c, "setgroups");
        if (syscall(SYS_setresgid, c->gid, c->gid, c->gid) < 0)
            child_fail(c, "setresgid");
        if (syscall(SYS_setresuid, c->uid, c->uid, c->uid) < 0)
            child_fail(c, "setresuid");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            child_fail(c, "no_new_privs");
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(c->argv[0], c->argv, c->envp);
    child_fail(c, "exec");
}

static void child_limits(const struct run_job *j, struct child *c)
{
    c->nlim = 0;
    /* no core files: cwd is the skill folder */
    c->res[c->nlim] = RLIMIT_CORE;
    c->lim[c->nlim++] = (struct rlimit){0, 0};
    if (j->lim_cpu_s > 0) {
        c->res[c->nlim] = RLIMIT_CPU;
        c->lim[c->nlim++] = (struct rlimit){(rlim_t)j->lim_cpu_s, (rlim_t)j->lim_cpu_s + 1};
    }
    if (j->lim_as_mib > 0) {
        rlim_t b = (rlim_t)j->lim_as_mib << 20;
        c->res[c->nlim] = RLIMIT_AS;
        c->lim[c->nlim++] = (struct rlimit){b, b};
    }
    if (j->lim_fsize_mib > 0) {
        rlim_t b = (rlim_t)j->lim_fsize_mib << 20;
        c->res[c->nlim] = RLIMIT_FSIZE;
        c->lim[c->nlim++] = (struct rlimit){b, b};
    }
    if (j->lim_nproc > 0) {
        c->res[c->nlim] = RLIMIT_NPROC;
        c->lim[c->nlim++] = (struct rlimit){(rlim_t)j->lim_nproc, (rlim_t)j->lim_nproc};
    }
}

#define CHILD_STACK (256u << 10)

static void *stack_new(void)
{
    void *st = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    return st == MAP_FAILED ? NULL : st;
}

/*
 * clone(CLONE_VM | CLONE_VFORK) on a stack of its own, as posix_spawn does:
 * no page tables are copied, and this thread waits only until the child has
 * exec'ed (or failed). Every signal is blocked around it, so that no handler
 * of the server runs in the child on shared memory before it resets them.
 * A pid with c->err set is a child that failed before exec, to be reaped.
 */
static pid_t spawn_child(void *stack, struct child *c)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    c->err = 0;
    c->step = NULL;
    pid_t pid = clone(child_main, (char *)stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

/* The pid, or -1 with *why and errno set to the failed step's (the
 * child's own when it failed before exec; that child is reaped). */
static pid_t spawn_checked(void *stack, struct child *c, struct err *why)
{
    pid_t pid = stack ? spawn_child(stack, c) : -1;
    if (pid < 0) {
        int e = stack ? errno : ENOMEM;
        err_set(why, 0, 0, "cannot start %s: %s", c->argv[0], strerror(e));
        errno = e;
        return -1;
    }
    if (c->err) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        err_set(why, 0, 0, "cannot start %s: %s failed: %s", c->argv[0],
                c->step ? c->step : "?", strerror(c->err));
        errno = c->err;
        return -1;
    }
    return pid;
}

pid_t run_spawn_as(const struct run_job *j, char **argv, char **envp, const char *cwd,
                   int fd_in, int fd_out, int fd_err, struct err *why)
{
    struct child c = {.argv = argv, .envp = envp, .cwd = cwd, .fd_in = fd_in, .fd_out = fd_out,
                      .fd_err = fd_err, .fd_script = -1, .uid = j->run_uid, .gid = j->run_gid};
    child_limits(j, &c);
    void *stack = stack_new();
    pid_t pid = spawn_checked(stack, &c, why);
    if (stack)
        munmap(stack, CHILD_STACK);
    return pid;
}

static int spawn_job(struct run_job *j)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
    int rc = -1;
    char home[96], tmpv[96];

    char *tmpl = scratch_take(j->_r, j->run_uid, j->run_gid);
    if (!tmpl) {
        snprintf(j->error, sizeof j->error, "cannot create a scratch folder: %s", strerror(errno));
        return -1;
    }
    j->_scratch = tmpl;
    for (int i = 0; i < j->nscratch_args && i < 4; i++) {
        free(j->argv[j->scratch_args[i]]);
        j->argv[j->scratch_args[i]] = xstrdup(tmpl);
    }
    snprintf(home, sizeof home, "HOME=%s", tmpl);
    snprintf(tmpv, sizeof tmpv, "TMPDIR=%s", tmpl);
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        (j->stdin_data ? pipe2(in, O_CLOEXEC) : ((in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)))) < 0) {
        snprintf(j->error, sizeof j->error, "cannot create pipes: %s", strerror(errno));
        goto out;
    }
    /* The input goes into the pipe before the child starts, as far as the
     * pipe holds it (64 KiB as a rule): a hook's few hundred bytes are there
     * when it reads them, with the pipe closed behind them, and the loop is
     * not woken in the middle of the run to feed it. The rest, if any, is
     * written as the script reads. */
    size_t fed = 0;
    if (j->stdin_data && fcntl(in[1], F_SETFL, O_NONBLOCK) == 0) {
        while (fed < j->stdin_len) {
            ssize_t w = write(in[1], j->stdin_data + fed, j->stdin_len - fed);
            if (w <= 0)
                break;
            fed += (size_t)w;
        }
        if (fed == j->stdin_len) {
            close(in[1]);
            in[1] = -1;
        }
    }
    struct child c = {.argv = j->argv, .cwd = j->cwd, .fd_in = in[0], .fd_out = out[1],
                      .fd_err = err[1], .fd_script = -1, .uid = j->run_uid, .gid = j->run_gid};
    if (j->script_path && j->script_on_fd3) {
        /* dup2 onto itself would keep O_CLOEXEC: move it off 3 first */
        if (j->script_fd == 3) {
            int moved = fcntl(3, F_DUPFD_CLOEXEC, 4);
            if (moved >= 0) {
                close(3);
                j->script_fd = moved;
            }
        }
        c.fd_script = j->script_fd;
    }
    child_limits(j, &c);
    char **envp = env_with_scratch(j, home, tmpv);
    c.envp = envp;
    if (!j->_r->stack)
        j->_r->stack = stack_new();
    struct err why;
    pid_t pid = spawn_checked(j->_r->stack, &c, &why);
    free(envp);
    if (pid < 0) {
        err_copy(j->error, sizeof j->error, &why);
        /* the child's own step only: a clone the server could not make is
         * the server's trouble, not the script user's process count */
        j->start_errno = c.err;
        goto out;
    }
    j->_pid = pid;
    if (j->_slot >= 0)
        atomic_store(&j->_r->sh->slots[j->_slot].pgid, pid);
    j->_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (j->_pidfd < 0) {
        /* Cannot watch it: do not leave it running unwatched. */
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        snprintf(j->error, sizeof j->error, "pidfd_open failed: %s", strerror(errno));
        j->_pid = 0;
        goto out;
    }
    rc = 0;
out:
    if (out[1] >= 0) close(out[1]);
    if (err[1] >= 0) close(err[1]);
    if (in[0] >= 0) close(in[0]);
    if (rc < 0) {
        if (out[0] >= 0) close(out[0]);
        if (err[0] >= 0) close(err[0]);
        if (in[1] >= 0) close(in[1]);
        return -1;
    }
    uv_loop_t *uv = j->_r->uv;
    uv_pipe_init(uv, &j->_out, 0);
    uv_pipe_init(uv, &j->_err, 0);
    j->_out.data = j->_err.data = j;
    j->_open_handles += 2;
    uv_pipe_open(&j->_out, out[0]);
    uv_pipe_open(&j->_err, err[0]);
    uv_read_start((uv_stream_t *)&j->_out, on_alloc, on_read);
    uv_read_start((uv_stream_t *)&j->_err, on_alloc, on_read);
    if (in[1] >= 0) {
        uv_pipe_init(uv, &j->_in, 0);
        j->_in.data = j;
        j->_open_handles++;
        uv_pipe_open(&j->_in, in[1]);
        uv_buf_t b = uv_buf_init(j->stdin_data + fed, (unsigned)(j->stdin_len - fed));
        j->_wreq.data = j;
        if (uv_write(&j->_wreq, (uv_stream_t *)&j->_in, &b, 1, on_stdin_written) < 0)
            close_handle(j, &j->_in);
    }
    uv_poll_init(uv, &j->_exit, j->_pidfd);
    j->_exit.data = j;
    j->_open_handles++;
    uv_poll_start(&j->_exit, UV_READABLE, on_exit_ready);
    return 0;
}

static uint64_t ms_of(double s)
{
    /* script.c clamps every duration; this keeps the conversion defined anyway */
    return s > 0 ? s < 1e9 ? (uint64_t)(s * 1000.0) : (uint64_t)1e12 : 0;
}

int run_job_verify(const struct run_job *j, struct err *why)
{
    struct stat kept, now;
    if (!j->script_path)
        return 0;
    if (fstat(j->script_fd, &kept) < 0) {
        err_set(why, 0, 0, "the checked script cannot be examined again: %s", strerror(errno));
        return -1;
    }
    /* stat follows links at every step, as the interpreter's open will */
    if (stat(j->script_path, &now) < 0) {
        err_set(why, 0, 0, "the script disappeared after it was checked (%s)", strerror(errno));
        return -1;
    }
    if (now.st_dev != kept.st_dev || now.st_ino != kept.st_ino) {
        err_set(why, 0, 0, "the script was replaced after it was checked; its path no longer "
                           "names the file the scripts/ jail approved");
        return -1;
    }
    return 0;
}

void (*run_start_hook)(void);

static void start_job(struct run_job *j)
{
    struct runner *r = j->_r;
    if (run_start_hook)
        run_start_hook();
    j->_t_start = uv_hrtime();
    j->queued_ms = (double)(j->_t_start - j->_t_queued) / 1e6;
    r->live++;
    j->_live_next = r->live_list;
    r->live_list = j;
    if (!j->hook)
        atomic_fetch_add(&r->sh->started, 1);
    init_timer(j, &j->_ceiling);
    init_timer(j, &j->_stall);
    init_timer(j, &j->_grace);
    /* After the queue, as late as possible: what runs is what was checked. */
    struct err why;
    if (run_job_verify(j, &why) < 0) {
        err_copy(j->error, sizeof j->error, &why);
        log_warn("run %s %s/%s: refused: %s", j->request_id, j->skill, j->script, j->error);
        j->status = RUN_DENIED;
        j->exit_code = -1;
        j->_exited = j->_out_eof = j->_err_eof = 1;
        finish(j);
        return;
    }
    if (spawn_job(j) < 0) {
        log_error("run %s %s/%s: %s", j->request_id, j->skill, j->script, j->error);
        j->status = RUN_FAILED;
        j->exit_code = -1;
        j->_exited = j->_out_eof = j->_err_eof = 1;
        finish(j);
        return;
    }
    /* The loop's clock is the tick's start, and the check and the spawn
     * took time since: timers set from it would fire early by that much,
     * measured against _t_start (a 16 s ceiling cut a script at 15.8 s
     * on a loaded machine). */
    uv_update_time(r->uv);
    uv_timer_start(&j->_ceiling, on_ceiling, ms_of(j->timeout_s), 0);
    if (j->stall_s > 0) {
        uint64_t ms = ms_of(j->stall_s);
        uv_timer_start(&j->_stall, on_stall, ms, ms);
    }
}

/* ---- queue --------------------------------------------------------------------- */

static void unqueue(struct runner *r, struct run_job *j)
{
    for (struct run_job **pp = &r->queue; *pp; pp = &(*pp)->_next) {
        if (*pp == j) {
            *pp = j->_next;
            if (r->queue_tail == &j->_next)
                r->queue_tail = pp;
            j->_next = NULL;
            atomic_fetch_sub(&r->sh->queued, 1);
            atomic_fetch_sub(&r->sh->queued_by[r->worker], 1);
            return;
        }
    }
}

static void end_busy(struct run_job *j)
{
    j->status = RUN_BUSY;
    j->exit_code = -1;
    j->_finished = 1;
    j->queued_ms = (double)(uv_hrtime() - j->_t_queued) / 1e6;
    close_handle(j, &j->_queue);
}

static void on_queue_timeout(uv_timer_t *t)
{
    struct run_job *j = t->data;
    unqueue(j->_r, j);
    end_busy(j);
}

/*
 * Takes one of the instance's script slots, shared by its workers. The slot
 * records its owner and (once spawned) the process group, so the master can
 * clean up after a worker that dies with scripts running.
 */
static int reserve_slot(struct runner *r, struct run_job *j)
{
    int_fast64_t n = atomic_load(&r->sh->live);
    for (;;) {
        if (n >= r->max_live)
            return 0;
        if (atomic_compare_exchange_weak(&r->sh->live, &n, n + 1))
            break;
    }
    for (int i = 0; i < r->sh->nslots; i++) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(&r->sh->slots[i].owner, &free_, r->worker + 1)) {
            j->_slot = i;
            return 1;
        }
    }
    /* live said there was room, but every slot is owned: a reap is due */
    atomic_fetch_sub(&r->sh->live, 1);
    return 0;
}

static void on_retry(uv_timer_t *t)
{
    struct runner *r = t->data;
    r->retry_armed = 0;
    pump(r);
}

static void pump(struct runner *r)
{
    while (!r->closing && r->queue) {
        if (!reserve_slot(r, r->queue)) {
            /* Slots held by other workers free up without waking this loop. */
            if (!r->retry_armed && !r->closing) {
                r->retry_armed = 1;
                uv_timer_start(&r->retry, on_retry, 10, 0);
            }
            break;
        }
        struct run_job *j = r->queue;
        unqueue(r, j);
        uv_timer_stop(&j->_queue);
        close_handle(j, &j->_queue);
        start_job(j);
    }
}

static int cancel_match(const struct run_job *j, const struct cancel *c)
{
    if (!c->rpc)
        return !strcmp(j->request_id, c->id);
    return j->rpc_id[0] && !strcmp(j->rpc_id, c->id) && !strcmp(j->client, c->client);
}

static void cancel_one(struct runner *r, const struct cancel *c)
{
    for (struct run_job *j = r->live_list; j; j = j->_live_next)
        if (cancel_match(j, c) && !j->_killed) {
            j->cancelled = 1;
            snprintf(j->error, sizeof j->error, "cancelled by the client");
            start_kill(j, RUN_FAILED);
        }
    for (struct run_job *j = r->queue; j; j = j->_next)
        if (cancel_match(j, c)) {
            j->cancelled = 1;
            snprintf(j->error, sizeof j->error, "cancelled by the client");
            unqueue(r, j);
            uv_timer_stop(&j->_queue);
            end_busy(j);
            return;
        }
}

/* Loop thread: a submitted job joins the queue (or ends busy at shutdown). */
static void enqueue(struct runner *r, struct run_job *j)
{
    j->_next = NULL;
    init_timer(j, &j->_queue);
    if (r->closing) {
        end_busy(j);
        return;
    }
    if (j->urgent) {
        /* ahead of every ordinary job, behind earlier urgent ones */
        struct run_job **pp = &r->queue;
        while (*pp && (*pp)->urgent)
            pp = &(*pp)->_next;
        j->_next = *pp;
        *pp = j;
        if (r->queue_tail == pp)
            r->queue_tail = &j->_next;
        atomic_fetch_add(&r->sh->queued, 1);
        atomic_fetch_add(&r->sh->queued_by[r->worker], 1);
        return;
    }
    *r->queue_tail = j;
    r->queue_tail = &j->_next;
    atomic_fetch_add(&r->sh->queued, 1);
    atomic_fetch_add(&r->sh->queued_by[r->worker], 1);
    /* A done callback queues late in a tick (after that job's scratch
     * delete and done work, other jobs' spawns): from the tick's clock the
     * timeout would cut the wait, measured from _t_queued, by that much. */
    uv_update_time(r->uv);
    uv_timer_start(&j->_queue, on_queue_timeout, r->queue_timeout_ms, 0);
}

static void on_wake(uv_async_t *a)
{
    struct runner *r = a->data;
    struct cancel cancels[16];
    pthread_mutex_lock(&r->mu);
    struct run_job *list = r->incoming;
    r->incoming = NULL;
    r->incoming_tail = &r->incoming;
    int nc = r->ncancels;
    memcpy(cancels, r->cancels, sizeof cancels);
    r->ncancels = 0;
    pthread_mutex_unlock(&r->mu);
    while (list) {
        struct run_job *j = list;
        list = j->_next;
        enqueue(r, j);
    }
    for (int i = 0; i < nc; i++)
        cancel_one(r, &cancels[i]);
    pump(r);
}

static void push_cancel(struct runner *r, const char *id, const char *client, int rpc)
{
    pthread_mutex_lock(&r->mu);
    if (r->closed || r->ncancels == (int)(sizeof r->cancels / sizeof r->cancels[0])) {
        pthread_mutex_unlock(&r->mu);
        return;
    }
    struct cancel *c = &r->cancels[r->ncancels++];
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->client, sizeof c->client, "%s", client ? client : "");
    c->rpc = rpc;
    pthread_mutex_unlock(&r->mu);
    uv_async_send(&r->wake);
}

void run_cancel(struct runner *r, const char *request_id)
{
    push_cancel(r, request_id, NULL, 0);
}

void run_cancel_rpc(struct runner *r, const char *client, const char *rpc_id)
{
    push_cancel(r, rpc_id, client, 1);
}

/* ---- public -------------------------------------------------------------------- */

struct run_shared *run_shared_new(int max_live, size_t *size)
{
    *size = sizeof(struct run_shared) + (size_t)max_live * sizeof(struct run_slot);
    struct run_shared *sh = x_shared_alloc(*size);
    sh->nslots = max_live;
    return sh;
}

void run_shared_reap(struct run_shared *sh, int index)
{
    for (int i = 0; i < sh->nslots; i++) {
        struct run_slot *sl = &sh->slots[i];
        if (atomic_load(&sl->owner) != index + 1)
            continue;
        int pgid = atomic_load(&sl->pgid);
        if (pgid > 0)
            kill(-pgid, SIGKILL);
        atomic_store(&sl->pgid, 0);
        atomic_store(&sl->owner, 0);
        atomic_fetch_sub(&sh->live, 1);
    }
    if (index >= 0 && index < RUN_MAX_WORKERS)
        atomic_fetch_sub(&sh->queued, atomic_exchange(&sh->queued_by[index], 0));
}

struct runner *run_new(uv_loop_t *uv, struct run_shared *sh, int worker, int max_live,
                       double queue_timeout_s)
{
    struct runner *r = xcalloc(1, sizeof *r);
    r->uv = uv;
    r->sh = sh;
    r->worker = worker >= 0 && worker < RUN_MAX_WORKERS ? worker : 0;
    uv_timer_init(uv, &r->retry);
    r->retry.data = r;
    /* Per process: every worker is the subreaper of its own scripts. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
        r->subreaper = 1;
    else
        log_warn("runner: cannot become a child subreaper (%s): a script's process that "
                 "leaves its process group may outlive the run", strerror(errno));
    uv_timer_init(uv, &r->sweep);
    r->sweep.data = r;
    uv_timer_start(&r->sweep, on_sweep, 250, 250);
    uv_unref((uv_handle_t *)&r->sweep);
    pidns_init();
    trash_sweep_stale();
    char trash[80];
    snprintf(trash, sizeof trash, "/tmp/skill-mcp-trash-%d-%s-XXXXXX", (int)getpid(), pidns);
    if (mkdtemp(trash))
        r->trash = xstrdup(trash);
    else
        log_warn("runner: cannot create %s (%s): each scratch folder is deleted before its "
                 "result is handed on", trash, strerror(errno));
    r->max_live = max_live > 0 ? max_live : 1;
    scratch_queue(r, NULL);
    r->queue_timeout_ms = (uint64_t)(queue_timeout_s * 1000.0);
    pthread_mutex_init(&r->mu, NULL);
    r->incoming_tail = &r->incoming;
    r->queue_tail = &r->queue;
    uv_async_init(uv, &r->wake, on_wake);
    r->wake.data = r;
    return r;
}

void run_submit(struct runner *r, struct run_job *j, run_done_fn done, void *arg)
{
    j->_r = r;
    j->_done = done;
    j->_arg = arg;
    j->_pidfd = -1;
    j->_slot = -1;
    j->_t_queued = uv_hrtime();
    j->status = RUN_OK;
    if (in_done == r && !r->closing) {
        enqueue(r, j);
        return;
    }
    pthread_mutex_lock(&r->mu);
    if (r->closed) {
        pthread_mutex_unlock(&r->mu);
        /* Shutting down: answer now, on the caller's thread. */
        j->status = RUN_BUSY;
        j->exit_code = -1;
        snprintf(j->error, sizeof j->error, "the server is shutting down");
        atomic_fetch_add(&r->sh->busy, 1);
        done(j, arg);
        return;
    }
    *r->incoming_tail = j;
    r->incoming_tail = &j->_next;
    pthread_mutex_unlock(&r->mu);
    uv_async_send(&r->wake);
}

void run_shutdown(struct runner *r)
{
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_mutex_unlock(&r->mu);
    r->closing = 1;
    on_wake(&r->wake);      /* anything that arrived ends as busy */
    for (struct run_job *j = r->live_list; j; j = j->_live_next) {
        j->shutdown = 1;
        start_kill(j, RUN_FAILED);
    }
    while (r->queue) {
        struct run_job *j = r->queue;
        unqueue(r, j);
        uv_timer_stop(&j->_queue);
        end_busy(j);
    }
    sweep_orphans(r, 1);
    uv_close((uv_handle_t *)&r->wake, NULL);
    uv_close((uv_handle_t *)&r->retry, NULL);
    uv_close((uv_handle_t *)&r->sweep, NULL);
}

void run_free(struct runner *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    /* the loop has run every deletion to its end; this catches a failed one */
    remove_tree(r->trash);
    free(r->trash);
    for (int i = 0; i < r->nspare; i++) {
        rmdir(r->spare[i]);
        free(r->spare[i]);
    }
    if (r->stack)
        munmap(r->stack, CHILD_STACK);
    free(r);
}

void run_job_free(struct run_job *j)
{
    if (!j)
        return;
    for (char **p = j->argv; p && *p; p++)
        free(*p);
    free(j->argv);
    for (char **p = j->envp; p && *p; p++)
        free(*p);
    free(j->envp);
    free(j->cwd);
    free(j->stdin_data);
    free(j->skill);
    free(j->script);
    if (j->script_path) {
        close(j->script_fd);
        free(j->script_path);
    }
    free(j->out.data);
    free(j->err.data);
    free(j->_scratch);
    free(j);
}

void run_counters(struct runner *r, struct run_counters *c)
{
    c->started = atomic_load(&r->sh->started);
    c->ok = atomic_load(&r->sh->ok);
    c->failed = atomic_load(&r->sh->failed);
    c->stalled = atomic_load(&r->sh->stalled);
    c->timeout = atomic_load(&r->sh->timeout);
    c->denied = atomic_load(&r->sh->denied);
    c->busy = atomic_load(&r->sh->busy);
    c->live = atomic_load(&r->sh->live);
    c->queued = atomic_load(&r->sh->queued);
}

void run_count_denied(struct runner *r)
{
    atomic_fetch_add(&r->sh->denied, 1);
}
