/*
 * cli_fetch.c - `skill-mcp fetch URL ...`: the command line over fetch.c,
 * which reads the index, downloads, checks and installs.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: skill-mcp fetch URL [--into DIR] [--name NAME]... [--json]\n"
            "                 [--max-bytes N] [--timeout SECONDS] [--max-files N]\n"
            "                 [--max-expanded N] [--cacert FILE]\n"
            "                 [--allow-http] [--allow-address ADDR[:PORT]]...\n"
            "  Installs the skills of URL/.well-known/agent-skills/index.json into DIR\n"
            "  (default: the current folder), each verified against its digest.\n"
            "  Only https, and only public addresses; --allow-http and --allow-address\n"
            "  open exactly what a local test index needs.\n");
}

static int num_arg(const char *flag, const char *v, double min, double max, double *out,
                   FILE *err)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || end == v || *end || d < min || d > max) {
        fprintf(err, "skill-mcp fetch: %s needs a number from %g to %g\n", flag, min, max);
        return -1;
    }
    *out = d;
    return 0;
}

static int parse_opts(int argc, char **argv, struct fetch_opts *o, FILE *out, FILE *err)
{
    fetch_opts_init(o);
    o->names = xcalloc((size_t)argc + 1, sizeof *o->names);
    o->allow = xcalloc((size_t)argc + 1, sizeof *o->allow);
    for (int i = 0; i < argc; i++) {
        char flag[32];
        const char *a = argv[i], *v, *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
        int step = 1;       /* arguments a value flag consumes after a */
        if (eq) {           /* --flag=value */
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - a < 31 ? eq - a : 31), a);
            v = eq + 1;
            step = 0;
        } else {
            snprintf(flag, sizeof flag, "%s", a);
            v = i + 1 < argc ? argv[i + 1] : NULL;
        }
        double d;
        if (!strcmp(flag, "-h") || !strcmp(flag, "--help")) {
            usage(out);
            return 1;
        } else if (!strcmp(flag, "--json") && !eq) {
            o->json = 1;
            step = 0;
        } else if (!strcmp(flag, "--allow-http") && !eq) {
            o->allow_http = 1;
            step = 0;
        } else if (!strcmp(flag, "--allow-address") && v) {
            if (fetch_allow_parse(v, &o->allow[o->nallow]) < 0) {
                fprintf(err, "skill-mcp fetch: --allow-address wants an IP address, "
                             "ADDR:PORT or [V6]:PORT (a host name is not taken): %s\n", v);
                return -1;
            }
            o->nallow++;
        } else if (!strcmp(flag, "--into") && v) {
            o->into = v;
        } else if (!strcmp(flag, "--cacert") && v) {
            o->cacert = v;
        } else if (!strcmp(flag, "--name") && v) {
            o->names[o->nnames++] = v;
        } else if (!strcmp(flag, "--max-bytes")) {
            if (num_arg(flag, v, 1, 1e12, &d, err) < 0)
                return -1;
            o->max_bytes = (int64_t)d;
        } else if (!strcmp(flag, "--timeout")) {
            if (num_arg(flag, v, 0.1, 86400, &d, err) < 0)
                return -1;
            o->timeout = d;
        } else if (!strcmp(flag, "--max-files")) {
            if (num_arg(flag, v, 1, 1e7, &d, err) < 0)
                return -1;
            o->lim.max_entries = (int64_t)d;
        } else if (!strcmp(flag, "--max-expanded")) {
            if (num_arg(flag, v, 1, 1e12, &d, err) < 0)
                return -1;
            o->lim.max_expanded = (int64_t)d;
            if (o->lim.max_file > o->lim.max_expanded)
                o->lim.max_file = o->lim.max_expanded;
        } else if (a[0] == '-' && a[1]) {
            fprintf(err, "skill-mcp fetch: unknown flag or missing value: %s\n", a);
            usage(err);
            return -1;
        } else if (!o->url) {
            o->url = a;
            step = 0;
        } else {
            fprintf(err, "skill-mcp fetch: one URL only (got '%s' too)\n", a);
            return -1;
        }
        i += step;
    }
    if (!o->url) {
        usage(err);
        return -1;
    }
    return 0;
}

int cli_fetch_run(int argc, char **argv, FILE *out, FILE *err)
{
    struct fetch_opts o;
    int rc = parse_opts(argc, argv, &o, out, err);
    if (!rc)
        rc = fetch_install(&o, out, err);
    else
        rc = rc > 0 ? 0 : 2;
    free((void *)o.names);
    free(o.allow);
    return rc;
}

int cli_fetch(int argc, char **argv)
{
    return cli_fetch_run(argc, argv, stdout, stderr);
}
