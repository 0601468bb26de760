/*
 * first-query.c - list_skills(query) the first time a query is asked in a
 * snapshot, inside the process: the server's own skills_new() over a
 * library with the per-snapshot pages (tools_ext_build), the body index
 * and the cards' counts (skills_index_bodies with tools_card_sizes, as
 * main.c starts them) waited for, then one call of tools_list_skills per
 * query read from stdin (one a line), the handler the server's tools/call
 * runs, with the default budget and no view. Queries must be distinct: a
 * page is kept on its query's second ask and answers the asks after it.
 *
 *   python3 bench/first-query.py --queries | build/bench/first-query DIR
 *   -> one line a query: "ms=T bytes=B fnv=H query", then "p50_ms=... n=..."
 *
 * The hash is of the reply's bytes: two builds whose lines carry the same
 * hashes gave the same pages. Under valgrind the index is built without
 * instrumentation (--instr-atstart=no) and the queries with it, so
 *   valgrind --tool=callgrind --instr-atstart=no --toggle-collect=tools_list_skills
 * counts exactly the handler's instructions. Built and linked like tick.c
 * (all of build/obj/ but main.o).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "call.h"
#include "search.h"
#include "skills_int.h"
#include "srv.h"
#include "tools.h"
#include "tools_int.h"
#include "util.h"

#define MAXQUERIES 1024

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: first-query DIR < QUERIES\n");
        return 2;
    }
    log_set_level(LOG_WARN);
    static struct srv srv;
    srv.budget = shape_budget_of(128000, 0.25, 48000);     /* config.c's defaults */
    const char *roots[1] = {argv[1]};
    struct skills *S = skills_new(roots, 1, NULL, tools_ext_build, tools_ext_free, &srv);
    if (!S)
        return 1;
    srv.skills = S;
    skills_index_bodies(S, tools_card_sizes);
    for (;;) {
        size_t indexed, n;
        skills_bodies_indexed(S, &indexed, &n);
        if (indexed == n)
            break;
        usleep(50000);
    }

    static char *qs[MAXQUERIES];
    size_t nq = 0;
    char line[4096];
    while (nq < MAXQUERIES && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (*line)
            qs[nq++] = strdup(line);
    }

    struct snapshot *snap = skills_acquire(S);
    double ms[MAXQUERIES];
    CALLGRIND_START_INSTRUMENTATION;
    for (size_t i = 0; i < nq; i++) {
        struct call call;
        memset(&call, 0, sizeof call);
        call.S = &srv;
        call.snap = snap;
        json_t *args = json_pack("{s:s}", "query", qs[i]);
        struct tool_ctx c = {.call = &call};
        struct tool_out o = {.budget = &srv.budget, .hint = tools_list_narrow};
        double t0 = now_ms();
        if (getenv("FIRST_QUERY_SEARCH")) {
            /* the ranking alone, as the page asks for it */
            static struct search_hit hits[LIST_DEFAULT_LIMIT];
            size_t total = search_query(skills_search(snap), qs[i], hits, LIST_DEFAULT_LIMIT);
            double t1 = now_ms();
            printf("search_ms=%.3f total=%zu ", t1 - t0, total);
            t0 = t1;
        }
        int rc = tools_list_skills(&c, args, &o);
        ms[i] = now_ms() - t0;
        if (rc != 0 || !o.raw) {
            fprintf(stderr, "query %zu failed: %s\n", i, o.msg);
            return 1;
        }
        printf("ms=%.3f bytes=%zu fnv=%016llx %s\n", ms[i], o.rawlen,
               (unsigned long long)hash_fnv1a(o.raw, o.rawlen), qs[i]);
        free(o.raw_owned);
        json_decref(args);
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    qsort(ms, nq, sizeof *ms, cmp_d);
    printf("skills=%zu n=%zu p50_ms=%.3f min_ms=%.3f max_ms=%.3f\n", snap->n, nq,
           nq ? ms[(nq - 1) / 2] : 0.0, nq ? ms[0] : 0.0, nq ? ms[nq - 1] : 0.0);
    skills_release(snap);
    for (size_t i = 0; i < nq; i++)
        free(qs[i]);
    skills_free(S);
    return 0;
}
