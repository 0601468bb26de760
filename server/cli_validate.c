/*
 * cli_validate.c - `skill-mcp validate DIR...` and `skill-mcp list DIR...`:
 * the command lines over validate.c's checks and listing, printed as lines
 * or as JSON (--json).
 */
#include "cli.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "util.h"
#include "validate.h"

/* ---- command lines ------------------------------------------------------- */

static int print_json(FILE *out, json_t *doc)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s)
        return -1;
    fprintf(out, "%s\n", s);
    free(s);
    return 0;
}

static const char validate_usage[] =
    "usage: skill-mcp validate [--json] [--interpreter EXT=PATH]... [DIR...]\n"
    "  Lints every skill under each DIR (DIR/skill/SKILL.md and DIR/team/skill/SKILL.md)\n"
    "  against the skill format and the Agent Skills rules. Without DIR: the server's\n"
    "  default root (./skills if it exists, else " CFG_INSTALLED_ROOT ").\n"
    "  --json         print {\"findings\": [...], \"summary\": {...}} instead of lines\n"
    "  --interpreter  a script suffix the server runs besides .py, .sh and .js\n"
    "  Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage or unreadable DIR.\n";

static const char list_usage[] =
    "usage: skill-mcp list [--json] [DIR...]\n"
    "  Shows what discovery finds under each DIR, as the server would serve it: qualified\n"
    "  name, bare name, root, and flags (shadowed, broken, symlink, name-differs).\n"
    "  Without DIR: the server's default root, as for validate.\n"
    "  Exit status: 0, or 2 on usage errors or when no DIR is readable.\n";

/* Parses [--json] [--interpreter EXT=PATH] DIR...; returns -1 (exit 2), 1 (help), 0. */
static int parse_args(int argc, char **argv, int allow_interp, int *json, const char ***dirs,
                      size_t *ndirs, const char ***exts, size_t *nexts, FILE *err,
                      const char *usage)
{
    int opts_done = 0;
    *dirs = xcalloc((size_t)argc + 1, sizeof **dirs);
    *exts = xcalloc((size_t)argc + 1, sizeof **exts);
    *ndirs = *nexts = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!opts_done && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--")) {
                opts_done = 1;
            } else if (!strcmp(a, "--json")) {
                *json = 1;
            } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                fputs(usage, err);
                return 1;
            } else if (allow_interp && (!strcmp(a, "--interpreter") ||
                                        !strncmp(a, "--interpreter=", 14))) {
                const char *spec = a[13] == '=' ? a + 14 : (i + 1 < argc ? argv[++i] : NULL);
                const char *eq = spec ? strchr(spec, '=') : NULL;
                if (!spec || spec[0] != '.' || !eq || eq == spec + 1) {
                    fprintf(err, "skill-mcp: --interpreter wants EXT=PATH, e.g. .rb=/usr/bin/ruby\n");
                    return -1;
                }
                (*exts)[(*nexts)++] = xstrndup(spec, (size_t)(eq - spec));
            } else {
                fprintf(err, "skill-mcp: unknown option '%s'\n%s", a, usage);
                return -1;
            }
            continue;
        }
        (*dirs)[(*ndirs)++] = a;
    }
    if (!*ndirs)
        (*dirs)[(*ndirs)++] = cfg_default_root();
    for (size_t i = 0; i < *ndirs; i++) {
        struct stat st;
        if (stat((*dirs)[i], &st) < 0 || !S_ISDIR(st.st_mode) ||
            access((*dirs)[i], R_OK | X_OK) < 0) {
            x_fprintf_text(err, "skill-mcp: %s is not a readable directory\n", (*dirs)[i]);
            return -1;
        }
    }
    return 0;
}

static void free_args(const char **dirs, const char **exts, size_t nexts)
{
    for (size_t i = 0; i < nexts; i++)
        free((void *)(uintptr_t)exts[i]);
    free(dirs);
    free(exts);
}

int cli_validate_run(int argc, char **argv, FILE *out, FILE *err)
{
    int json = 0;
    const char **dirs, **exts;
    size_t ndirs, nexts, nskills = 0;
    int rc = parse_args(argc, argv, 1, &json, &dirs, &ndirs, &exts, &nexts, err, validate_usage);
    if (rc) {
        free_args(dirs, exts, nexts);
        return rc > 0 ? 0 : 2;
    }
    json_t *findings = validate_roots(dirs, ndirs, exts, nexts, &nskills);
    json_t *sum = validate_summary(findings, ndirs, nskills);
    if (json) {
        json_t *doc = json_pack("{s:O, s:O}", "findings", findings, "summary", sum);
        print_json(out, doc);
        json_decref(doc);
    } else {
        size_t i;
        json_t *f;
        json_array_foreach(findings, i, f) {
            json_t *line = json_object_get(f, "line");
            const char *hint = json_string_value(json_object_get(f, "hint"));
            char where[32] = "";
            if (json_is_integer(line))
                snprintf(where, sizeof where, ":%lld", (long long)json_integer_value(line));
            const char *clause = json_string_value(json_object_get(f, "clause"));
            x_fprintf_text(out, "%s%s: %s: %s [%s%s%s]", json_string_value(json_object_get(f, "file")),
                           where, json_string_value(json_object_get(f, "severity")),
                           json_string_value(json_object_get(f, "message")),
                           json_string_value(json_object_get(f, "rule")), clause ? ", " : "",
                           clause ? clause : "");
            if (hint)
                x_fprintf_text(out, " (hint: %s)", hint);
            fputc('\n', out);
        }
        long long e = json_integer_value(json_object_get(sum, "errors"));
        long long w = json_integer_value(json_object_get(sum, "warnings"));
        fprintf(out, "%zu skill%s checked in %zu director%s: %lld error%s, %lld warning%s\n",
                nskills, nskills == 1 ? "" : "s", ndirs, ndirs == 1 ? "y" : "ies", e,
                e == 1 ? "" : "s", w, w == 1 ? "" : "s");
    }
    fflush(out);
    rc = json_is_true(json_object_get(sum, "ok")) ? 0 : 1;
    json_decref(findings);
    json_decref(sum);
    free_args(dirs, exts, nexts);
    return rc;
}

/* ---- list ---------------------------------------------------------------- */

int cli_list_run(int argc, char **argv, FILE *out, FILE *err)
{
    int json = 0;
    const char **dirs, **exts;
    size_t ndirs, nexts;
    int rc = parse_args(argc, argv, 0, &json, &dirs, &ndirs, &exts, &nexts, err, list_usage);
    if (rc) {
        free_args(dirs, exts, nexts);
        return rc > 0 ? 0 : 2;
    }
    json_t *doc = validate_list(dirs, ndirs);
    if (!doc) {
        fprintf(err, "skill-mcp: no DIR is a readable directory\n");
        free_args(dirs, exts, nexts);
        return 2;
    }
    if (json) {
        print_json(out, doc);
    } else {
        json_t *rows = json_object_get(doc, "skills"), *r;
        size_t i, wq = 14, wn = 4, wr = 4;
        json_array_foreach(rows, i, r) {
            size_t a = strlen(json_string_value(json_object_get(r, "qualified_name")));
            size_t b = strlen(json_string_value(json_object_get(r, "name")));
            const char *root = json_string_value(json_object_get(r, "root"));
            size_t c = root ? strlen(root) : 1;
            wq = a > wq ? a : wq;
            wn = b > wn ? b : wn;
            wr = c > wr ? c : wr;
        }
        fprintf(out, "%-*s  %-*s  %-*s  %s\n", (int)wq, "QUALIFIED NAME", (int)wn, "NAME",
                (int)wr, "ROOT", "FLAGS");
        json_array_foreach(rows, i, r) {
            char flags[1024] = "";
            size_t fl = 0, j;
            json_t *f;
            json_array_foreach(json_object_get(r, "flags"), j, f)
                fl += (size_t)snprintf(flags + fl, fl < sizeof flags ? sizeof flags - fl : 0,
                                       "%s%s", fl ? "," : "", json_string_value(f));
            const char *reason = json_string_value(json_object_get(r, "reason"));
            const char *root = json_string_value(json_object_get(r, "root"));
            x_fprintf_text(out, "%-*s  %-*s  %-*s  %s%s%s%s\n", (int)wq,
                           json_string_value(json_object_get(r, "qualified_name")), (int)wn,
                           json_string_value(json_object_get(r, "name")), (int)wr, root ? root : "-",
                           fl ? flags : "-", reason ? " (" : "", reason ? reason : "",
                           reason ? ")" : "");
        }
        json_t *sum = json_object_get(doc, "summary");
        fprintf(out, "%lld served, %lld shadowed, %lld broken\n",
                (long long)json_integer_value(json_object_get(sum, "served")),
                (long long)json_integer_value(json_object_get(sum, "shadowed")),
                (long long)json_integer_value(json_object_get(sum, "broken")));
    }
    fflush(out);
    json_decref(doc);
    free_args(dirs, exts, nexts);
    return 0;
}

int cli_validate(int argc, char **argv)
{
    return cli_validate_run(argc, argv, stdout, stderr);
}

int cli_list(int argc, char **argv)
{
    return cli_list_run(argc, argv, stdout, stderr);
}
