/*
 * cfgfile.h - reading --config FILE into entries; config.c checks and
 * applies them exactly as it does the command line's flags.
 */
#ifndef SKILL_CFGFILE_H
#define SKILL_CFGFILE_H

#include <stddef.h>

#include "util.h"

struct cfgfile_entry {
    char *key;          /* the flag's long name without dashes */
    char *val;          /* NULL: the key had no value (YAML null) */
    size_t line;        /* 1-based, for FILE:LINE: messages */
    int seq;            /* one item of a list value */
    int plain;          /* unquoted: true/false are booleans only then */
};

struct cfgfile {
    struct cfgfile_entry *e;
    size_t n, cap;
    struct err err;     /* "FILE:LINE: message" and the line, when cfgfile_read fails */
};

/* 0, or -1 with cf->err set (and nothing to free). */
int cfgfile_read(struct cfgfile *cf, const char *path);
void cfgfile_free(struct cfgfile *cf);

#endif
