/*
 * cli_export.c - `skill-mcp export DIR [--skills ...]`: the discovery index
 * and its artifacts as static files, byte-identical to what the server
 * serves.
 */
#include "cli.h"

#include <stdio.h>

#include "config.h"
#include "discovery.h"
#include "skills.h"
#include "util.h"

int cli_export(int argc, char **argv)
{
    struct cfg c;
    if (argc < 1 || argv[0][0] == '-') {
        fprintf(stderr, "usage: skill-mcp export DIR [--skills DIR ...]\n");
        return 2;
    }
    const char *dir = argv[0];
    int rc = cfg_parse(&c, argc, argv);     /* the flags after its argv[0], DIR */
    if (rc)
        return rc > 0 ? 0 : 2;
    log_set_level(LOG_WARN);
    struct skills *sk = skills_new(c.roots, c.nroots, NULL, NULL, NULL, NULL);
    if (!sk)
        return 2;
    struct snapshot *snap = skills_acquire(sk);
    rc = discovery_export(snap, dir);
    skills_release(snap);
    skills_free(sk);
    discovery_cache_clear();
    return rc ? 1 : 0;
}
