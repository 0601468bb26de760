/*
 * accesslog.h - the access log (--access-log FILE|-, --access-log-format
 * text|json): one line per HTTP request, written when its answer has been
 * delivered (or the client went away).
 *
 * One log per process. Request threads format their line and append it to
 * a bounded in-memory buffer (a mutex held for a copy); a writer thread
 * empties the buffer with write(2), so a slow disk or a full pipe never
 * holds up a request thread. A line that does not fit the buffer is dropped
 * and counted (a warning on the server log says how many).
 */
#ifndef SKILL_ACCESSLOG_H
#define SKILL_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>

struct err;
struct sockaddr;

/* What one line says. Every string may be NULL (written as "-" in text,
 * left out in JSON). */
struct accesslog_rec {
    const struct sockaddr *peer;    /* client address */
    const char *client;             /* authenticated client id */
    const char *http_method, *path; /* the HTTP request line */
    const char *rpc;                /* JSON-RPC method */
    const char *tool;               /* tools/call: the tool's name */
    const char *skill;              /* the skill argument, when the call has one */
    unsigned status;                /* HTTP status, 0 if none was sent */
    uint64_t us;                    /* from the first byte read to the end of the answer */
    int client_gone;                /* the connection ended before the answer was sent */
};

/*
 * Opens path for appending ("-": standard output) and starts the writer.
 * json: JSON lines, else text. 0, or -1 with the reason in *why.
 */
int accesslog_start(const char *path, int json, struct err *why);
/* Checks that path can be opened for appending (creating it), at start-up;
 * 0, or -1 with the reason in *why. */
int accesslog_check(const char *path, struct err *why);
int accesslog_on(void);
/* Formats the line on the calling thread and queues it; never blocks on I/O. */
void accesslog_write(const struct accesslog_rec *r);
/* The line a drain ends with: requests answered while draining, and those
 * still in flight when it ended (their connections were cut). */
void accesslog_drained(long answered, long cut, double seconds);
/* SIGHUP: the writer reopens the file by name (logrotate); "-" stays. */
void accesslog_reopen(void);
/* Writes what is queued, stops the writer and closes the file. */
void accesslog_stop(void);

#endif
