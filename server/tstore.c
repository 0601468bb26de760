/*
 * tstore.c - what both task stores share (see tstore.h).
 */
#include "tstore.h"

#include <stdlib.h>
#include <string.h>

void trec_cleanup(struct trec *r)
{
    free(r->result);
    r->result = NULL;
}

const char tstore_cancelled_msg[] = "The task was cancelled by request.";

/* Anything else cannot name a record: answered "no such task" unread. */
int tstore_id_ok(const char *id)
{
    return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}
