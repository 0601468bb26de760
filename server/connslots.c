/*
 * connslots.c - the acceptor's exact count of open connections (see
 * connslots.h for what each call means).
 */
#include "connslots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A connection handed over and not started yet: normally for the few
 * microseconds until its worker wakes, so the list is short. */
struct unstarted {
    int fd;
    socklen_t len;
    struct sockaddr_storage peer;
};

struct connslots {
    pthread_mutex_t mu;
    unsigned max, held;
    int waiting;                /* connslots_full said full: wake on a close */
    struct unstarted *u;
    size_t nu, capu;
};

struct connslots *connslots_new(unsigned max)
{
    struct connslots *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->max = max;
    return s;
}

void connslots_free(struct connslots *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->u);
    free(s);
}

static long find_unstarted(const struct connslots *s, int fd)
{
    for (size_t i = 0; i < s->nu; i++)
        if (s->u[i].fd == fd)
            return (long)i;
    return -1;
}

static void drop_unstarted(struct connslots *s, size_t i)
{
    s->u[i] = s->u[--s->nu];
}

/* A slot is given back; the caller holds mu. */
static int give_back(struct connslots *s)
{
    if (s->held)
        s->held--;
    if (s->waiting && s->held < s->max) {
        s->waiting = 0;
        return 1;
    }
    return 0;
}

int connslots_full(struct connslots *s, int *unstarted)
{
    pthread_mutex_lock(&s->mu);
    int full = s->held >= s->max;
    if (full)
        s->waiting = 1;
    if (unstarted)
        *unstarted = s->nu > 0;
    pthread_mutex_unlock(&s->mu);
    return full;
}

void connslots_take(struct connslots *s, int fd, const struct sockaddr *peer, socklen_t len)
{
    pthread_mutex_lock(&s->mu);
    /* The kernel gave this number again: the connection that had it was
     * closed before it started. */
    long old = find_unstarted(s, fd);
    if (old >= 0) {
        drop_unstarted(s, (size_t)old);
        give_back(s);
    }
    if (s->nu == s->capu) {
        s->capu = s->capu ? 2 * s->capu : 8;
        s->u = xrealloc(s->u, s->capu * sizeof *s->u);
    }
    struct unstarted *e = &s->u[s->nu++];
    e->fd = fd;
    e->len = len > sizeof e->peer ? sizeof e->peer : len;
    memset(&e->peer, 0, sizeof e->peer);
    memcpy(&e->peer, peer, e->len);
    s->held++;
    pthread_mutex_unlock(&s->mu);
}

void connslots_refused(struct connslots *s, int fd)
{
    pthread_mutex_lock(&s->mu);
    long i = find_unstarted(s, fd);
    if (i >= 0) {
        drop_unstarted(s, (size_t)i);
        give_back(s);
    }
    pthread_mutex_unlock(&s->mu);
}

void connslots_started(struct connslots *s, int fd)
{
    pthread_mutex_lock(&s->mu);
    long i = find_unstarted(s, fd);
    if (i >= 0)
        drop_unstarted(s, (size_t)i);
    else
        s->held++;  /* connslots_check took it for closed: it holds a slot after all */
    pthread_mutex_unlock(&s->mu);
}

int connslots_closed(struct connslots *s)
{
    pthread_mutex_lock(&s->mu);
    int wake = give_back(s);
    pthread_mutex_unlock(&s->mu);
    return wake;
}

unsigned connslots_check(struct connslots *s)
{
    unsigned freed = 0;
    pthread_mutex_lock(&s->mu);
    /* Under mu no worker can start one of these, so a descriptor that no
     * longer names its peer was closed by libmicrohttpd unstarted. */
    for (size_t i = 0; i < s->nu;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        memset(&ss, 0, sizeof ss);
        if (getpeername(s->u[i].fd, (struct sockaddr *)&ss, &sl) == 0 && sl == s->u[i].len &&
            !memcmp(&ss, &s->u[i].peer, sl)) {
            i++;
            continue;
        }
        drop_unstarted(s, i);
        give_back(s);
        freed++;
    }
    pthread_mutex_unlock(&s->mu);
    return freed;
}

unsigned connslots_held(struct connslots *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = s->held;
    pthread_mutex_unlock(&s->mu);
    return n;
}
