/*
 * metrics.h - the /metrics text (Prometheus exposition format 0.0.4).
 */
#ifndef SKILL_METRICS_H
#define SKILL_METRICS_H

#include "srv.h"

struct buf;

/* Appends the whole /metrics text of S to b. Any thread. */
void metrics_text(struct srv *S, struct buf *b);

#endif
