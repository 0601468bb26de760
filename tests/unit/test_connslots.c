/*
 * test_connslots.c - the acceptor's count of open connections: exact
 * through every way a connection leaves (closed, refused at once, dropped
 * by libmicrohttpd before it started), a close wakes a full acceptor, and
 * a connection taken for dropped that starts after all holds its slot.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <unistd.h>

#include "harness.h"
#include "connslots.h"

static const struct sockaddr_in peer_a = {.sin_family = AF_INET, .sin_port = 1111};

/* A connected TCP socket on loopback, its peer's address in *peer; the
 * other end in *other (both closed by the caller). */
static int connected(struct sockaddr_storage *peer, socklen_t *len, int *other)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        return -1;
    *other = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*other, (struct sockaddr *)&a, sizeof a))
        return -1;
    *len = sizeof *peer;
    int fd = accept(l, (struct sockaddr *)peer, len);
    close(l);
    return fd;
}

TEST(full_at_max_and_a_close_wakes_the_waiter)
{
    struct connslots *s = connslots_new(2);
    int unstarted = -1;
    CHECK_EQ(connslots_full(s, &unstarted), 0);
    CHECK_EQ(unstarted, 0);
    connslots_take(s, 10, (const struct sockaddr *)&peer_a, sizeof peer_a);
    connslots_take(s, 11, (const struct sockaddr *)&peer_a, sizeof peer_a);
    /* handed over, not started yet: the slots are held all the same */
    CHECK_EQ(connslots_full(s, &unstarted), 1);
    CHECK_EQ(unstarted, 1);
    connslots_started(s, 10);
    connslots_started(s, 11);
    CHECK_EQ(connslots_full(s, &unstarted), 1);
    CHECK_EQ(unstarted, 0);
    CHECK_EQ(connslots_closed(s), 1);   /* the acceptor waits: wake it */
    CHECK_EQ(connslots_held(s), 1);
    CHECK_EQ(connslots_closed(s), 0);   /* nobody waits any more */
    CHECK_EQ(connslots_held(s), 0);
    connslots_free(s);
}

TEST(a_refusal_at_once_gives_the_slot_back)
{
    struct connslots *s = connslots_new(1);
    connslots_take(s, 12, (const struct sockaddr *)&peer_a, sizeof peer_a);
    CHECK_EQ(connslots_full(s, NULL), 1);
    connslots_refused(s, 12);
    CHECK_EQ(connslots_held(s), 0);
    CHECK_EQ(connslots_full(s, NULL), 0);
    connslots_free(s);
}

/* libmicrohttpd closed the first one before it started: the kernel can
 * then give the acceptor the same number. */
TEST(the_same_number_again_frees_the_slot_of_the_one_dropped)
{
    struct connslots *s = connslots_new(4);
    connslots_take(s, 13, (const struct sockaddr *)&peer_a, sizeof peer_a);
    connslots_take(s, 13, (const struct sockaddr *)&peer_a, sizeof peer_a);
    CHECK_EQ(connslots_held(s), 1);
    connslots_started(s, 13);
    CHECK_EQ(connslots_closed(s), 0);
    CHECK_EQ(connslots_held(s), 0);
    connslots_free(s);
}

TEST(check_frees_a_connection_closed_unstarted_and_keeps_a_live_one)
{
    struct connslots *s = connslots_new(2);
    struct sockaddr_storage pa, pb;
    socklen_t la, lb;
    int oa = -1, ob = -1;
    int a = connected(&pa, &la, &oa), b = connected(&pb, &lb, &ob);
    CHECK(a >= 0 && b >= 0);
    connslots_take(s, a, (struct sockaddr *)&pa, la);
    connslots_take(s, b, (struct sockaddr *)&pb, lb);
    CHECK_EQ(connslots_check(s), 0);
    CHECK_EQ(connslots_held(s), 2);
    /* a closed; its number taken by something else at once */
    close(a);
    int fresh = socket(AF_INET, SOCK_STREAM, 0);
    int reuse = dup2(fresh, a);
    close(fresh);
    CHECK_EQ(reuse, a);
    CHECK_EQ(connslots_check(s), 1);
    CHECK_EQ(connslots_held(s), 1);
    /* b closed, its number free */
    close(b);
    CHECK_EQ(connslots_full(s, NULL), 0);
    CHECK_EQ(connslots_check(s), 1);
    CHECK_EQ(connslots_held(s), 0);
    close(reuse);
    close(oa);
    close(ob);
    connslots_free(s);
}

/* A connection check took for gone (say its peer reset it before its worker
 * got to it) that starts after all holds a slot until it closes. */
TEST(a_connection_taken_for_gone_that_starts_holds_its_slot)
{
    struct connslots *s = connslots_new(1);
    connslots_take(s, 14, (const struct sockaddr *)&peer_a, sizeof peer_a);
    CHECK_EQ(connslots_check(s), 1);    /* 14 is not a socket here */
    CHECK_EQ(connslots_held(s), 0);
    connslots_started(s, 14);
    CHECK_EQ(connslots_held(s), 1);
    CHECK_EQ(connslots_full(s, NULL), 1);
    CHECK_EQ(connslots_closed(s), 1);
    CHECK_EQ(connslots_held(s), 0);
    connslots_free(s);
}

/* Workers start and close connections while the acceptor takes them. */
static struct connslots *shared;

static void *worker(void *arg)
{
    int base = *(int *)arg;
    for (int i = 0; i < 20000; i++) {
        int fd = base + i % 50;
        connslots_take(shared, fd, (const struct sockaddr *)&peer_a, sizeof peer_a);
        connslots_started(shared, fd);
        connslots_closed(shared);
    }
    return NULL;
}

TEST(threads_end_at_zero)
{
    shared = connslots_new(1000);
    pthread_t th[4];
    int base[4] = {1000, 2000, 3000, 4000};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, worker, &base[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(connslots_held(shared), 0);
    connslots_free(shared);
}

int main(void)
{
    RUN(full_at_max_and_a_close_wakes_the_waiter);
    RUN(a_refusal_at_once_gives_the_slot_back);
    RUN(the_same_number_again_frees_the_slot_of_the_one_dropped);
    RUN(check_frees_a_connection_closed_unstarted_and_keeps_a_live_one);
    RUN(a_connection_taken_for_gone_that_starts_holds_its_slot);
    RUN(threads_end_at_zero);
    DONE();
}
