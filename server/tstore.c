/*
 * tstore.c - what both task stores share (see tstore.h).
 */
#include "tstore.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void trec_cleanup(struct trec *r)
{
    free(r->result);
    r->result = NULL;
}

int64_t tstore_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Anything else cannot name a record: answered "no such task" unread. */
int tstore_id_ok(const char *id)
{
    return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}
