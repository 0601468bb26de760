/*
 * cfgfile.c - the --config FILE reader. The file is a YAML mapping whose
 * keys are the long flags without their dashes; it is turned into
 * (key, value, line) entries and config.c applies them through the same
 * checks as the command line, so a value means the same in both places.
 *
 * libyaml's event API is used rather than its document loader: every
 * event carries its line, which each message names.
 */
#include "cfgfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "util.h"

__attribute__((format(printf, 4, 5)))
static int fail(struct cfgfile *cf, const char *path, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vfileline(&cf->err, path, line, fmt, ap);
    va_end(ap);
    return -1;
}

static void push(struct cfgfile *cf, const char *key, const char *val, size_t line, int seq,
                 int plain)
{
    if (cf->n == cf->cap) {
        cf->cap = cf->cap ? cf->cap * 2 : 16;
        cf->e = xrealloc(cf->e, cf->cap * sizeof *cf->e);
    }
    struct cfgfile_entry *e = &cf->e[cf->n++];
    e->key = xstrdup(key);
    e->val = val ? xstrdup(val) : NULL;
    e->line = line;
    e->seq = seq;
    e->plain = plain;
}

static const char *ev_name(yaml_event_type_t t)
{
    switch (t) {
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_ALIAS_EVENT: return "an alias";
    default: return "this";
    }
}

int cfgfile_read(struct cfgfile *cf, const char *path)
{
    cf->e = NULL;
    cf->n = cf->cap = 0;
    memset(&cf->err, 0, sizeof cf->err);
    FILE *f = fopen(path, "rb");
    struct stat st;
    /* a directory opens, and libyaml would only say "input error" */
    if (f && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        f = NULL;
        errno = EISDIR;
    }
    if (!f) {
        char why[300];
        snprintf(why, sizeof why, "cannot read the config file: %s", strerror(errno));
        return fail(cf, path, 0, "%s", why);
    }
    yaml_parser_t p;
    yaml_event_t ev;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    /* state: 0 before the top mapping, 1 expecting a key, 2 expecting its
     * value, 3 inside a list value, 4 after the top mapping */
    int state = 0, rc = 0, docs = 0;
    char key[128] = "";
    size_t key_line = 0;
    for (;;) {
        if (!yaml_parser_parse(&p, &ev)) {
            rc = fail(cf, path, p.problem_mark.line + 1, "not valid YAML: %s",
                      p.problem ? p.problem : "parse error");
            break;
        }
        yaml_event_type_t t = ev.type;
        size_t line = ev.start_mark.line + 1;
        const char *sv = t == YAML_SCALAR_EVENT ? (const char *)ev.data.scalar.value : NULL;
        int plain = t == YAML_SCALAR_EVENT && ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            if (++docs > 1) {
                rc = fail(cf, path, line, "one YAML document expected, found a second");
                yaml_event_delete(&ev);
                break;
            }
            yaml_event_delete(&ev);
            continue;
        }
        if (state == 0) {
            if (t == YAML_SCALAR_EVENT && !*sv && plain) {
                state = 4;      /* an empty document: nothing set */
            } else if (t != YAML_MAPPING_START_EVENT) {
                rc = fail(cf, path, line,
                          "expected a mapping of option names to values (port: 8000)");
            } else {
                state = 1;
            }
        } else if (state == 1) {
            if (t == YAML_MAPPING_END_EVENT) {
                state = 4;
            } else if (t != YAML_SCALAR_EVENT || !*sv) {
                rc = fail(cf, path, line, "expected an option name as the key");
            } else if (strlen(sv) >= sizeof key) {
                rc = fail(cf, path, line, "unknown option '%.60s'", sv);
            } else {
                snprintf(key, sizeof key, "%s", sv);
                key_line = line;
                for (size_t i = 0; i < cf->n; i++)
                    if (!strcmp(cf->e[i].key, key)) {
                        char why[200];
                        snprintf(why, sizeof why, "%s is given twice (first on line %zu)", key,
                                 cf->e[i].line);
                        rc = fail(cf, path, line, "%s", why);
                        break;
                    }
                state = 2;
            }
        } else if (state == 2) {
            if (t == YAML_SCALAR_EVENT) {
                /* A bare `key:` is YAML's null: the option has no value. */
                push(cf, key, *sv || !plain ? sv : NULL, key_line, 0, plain);
                state = 1;
            } else if (t == YAML_SEQUENCE_START_EVENT) {
                state = 3;
            } else {
                char why[200];
                snprintf(why, sizeof why, "%s: expected a value or a list, not %s", key,
                         ev_name(t));
                rc = fail(cf, path, line, "%s", why);
            }
        } else if (state == 3) {
            if (t == YAML_SEQUENCE_END_EVENT) {
                state = 1;
            } else if (t == YAML_SCALAR_EVENT) {
                push(cf, key, *sv || !plain ? sv : NULL, line, 1, plain);
            } else {
                char why[200];
                snprintf(why, sizeof why, "%s: a list of plain values expected, not %s", key,
                         ev_name(t));
                rc = fail(cf, path, line, "%s", why);
            }
        } else {
            rc = fail(cf, path, line, "unexpected content after the mapping");
        }
        yaml_event_delete(&ev);
        if (rc)
            break;
    }
    yaml_parser_delete(&p);
    fclose(f);
    if (rc)
        cfgfile_free(cf);
    return rc;
}

void cfgfile_free(struct cfgfile *cf)
{
    for (size_t i = 0; i < cf->n; i++) {
        free(cf->e[i].key);
        free(cf->e[i].val);
    }
    free(cf->e);
    cf->e = NULL;
    cf->n = cf->cap = 0;
}
