/*
 * ring.c - a fixed-size ring buffer of log lines, used by the runner to keep
 * the last lines a script printed before it stalled.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct ring {
    char **lines;       /* cap slots, NULL when empty */
    size_t cap;
    size_t head;        /* next slot to write */
    size_t count;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

int ring_init(struct ring *r, size_t cap)
{
    if (cap == 0 || cap > 1u << 20)
        return -1;
    r->lines = calloc(cap, sizeof *r->lines);
    if (!r->lines)
        return -1;
    r->cap = cap;
    r->head = 0;
    r->count = 0;
    return 0;
}

void ring_push(struct ring *r, const char *line, size_t len)
{
    char *copy = xmalloc(len + 1);
    memcpy(copy, line, len);
    copy[len] = '\0';
    free(r->lines[r->head]);
    r->lines[r->head] = copy;
    r->head = (r->head + 1) % r->cap;
    if (r->count < r->cap)
        r->count++;
}

/* Calls fn on every kept line, oldest first; stops when fn returns non-zero. */
int ring_each(const struct ring *r, int (*fn)(const char *line, void *arg), void *arg)
{
    size_t start = (r->head + r->cap - r->count) % r->cap;
    for (size_t i = 0; i < r->count; i++) {
        int rc = fn(r->lines[(start + i) % r->cap], arg);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void ring_free(struct ring *r)
{
    for (size_t i = 0; i < r->cap; i++)
        free(r->lines[i]);
    free(r->lines);
    memset(r, 0, sizeof *r);
}

#ifdef RING_MAIN
#include <stdio.h>

static int print_line(const char *line, void *arg)
{
    FILE *out = arg;
    return fprintf(out, "%s\n", line) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct ring r;
    if (ring_init(&r, argc > 1 ? strtoul(argv[1], NULL, 10) : 8) != 0) {
        fprintf(stderr, "usage: ring [CAPACITY] < input\n");
        return 2;
    }
    char buf[4096];
    while (fgets(buf, sizeof buf, stdin)) {
        size_t n = strcspn(buf, "\r\n");
        ring_push(&r, buf, n);
    }
    int rc = ring_each(&r, print_line, stdout);
    ring_free(&r);
    return rc == 0 ? 0 : 1;
}
#endif
