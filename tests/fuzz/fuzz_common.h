/*
 * fuzz_common.h - what several libFuzzer targets share: the input as a
 * private heap copy, a small skill tree made once, and a server state over
 * it with scripts off. A fixture failure aborts: no input can be blamed.
 */
#ifndef SKILL_FUZZ_COMMON_H
#define SKILL_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fn(copy, size, complete) for complete 0 then 1, over one heap copy of
 * the input: ASan then sees a read past its end, which the fuzzer's own
 * buffer might hide. */
static inline void fz_each_completeness(const uint8_t *data, size_t size,
                                        void (*fn)(const char *, size_t, int))
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return;
    if (size)
        memcpy(buf, data, size);
    fn(buf, size, 0);
    fn(buf, size, 1);
    free(buf);
}

#ifdef FZ_WITH_SERVER
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

static inline void fz_put(const char *dir, const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static inline void fz_mkdir(const char *dir, const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    if (mkdir(p, 0755) < 0)
        abort();
}

static inline void fz_link(const char *dir, const char *target, const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    if (symlink(target, p) < 0)
        abort();
}

/* S serving root (it must outlive S) with scripts off, errors-only logs. */
static inline void fz_server_up(struct srv *S, char *root)
{
    static char *fake[4];
    fake[0] = "skill-mcp";
    fake[1] = "--skills";
    fake[2] = root;
    fake[3] = "--no-scripts";
    x_install_json_alloc();
    log_set_level(LOG_ERROR);
    if (cfg_parse(&S->cfg, 4, fake) != 0)
        abort();
    size_t n;
    const char *const *names = tools_names(&n);
    stats_init(&S->stats, names, n);
    S->instructions = "fuzz";
    S->ttl_ms = 1000;
    tools_setup(S);
    S->skills = skills_new(S->cfg.roots, S->cfg.nroots, NULL, tools_ext_build, tools_ext_free, S);
    if (!S->skills)
        abort();
}
#endif

#endif
