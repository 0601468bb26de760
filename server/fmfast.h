/*
 * fmfast.h - what frontmatter.c and its fast path (fmfast.c) share; not for
 * other modules (they call fm_parse).
 */
#ifndef SKILL_FMFAST_H
#define SKILL_FMFAST_H

#include <jansson.h>
#include <stddef.h>

/* How a plain scalar was typed; K_NONE means "a string". */
enum fm_kind { K_NONE, K_NULL, K_BOOL, K_INT, K_FLOAT };

/*
 * YAML 1.2 core schema typing of a plain scalar s[0..n), NUL-terminated at
 * s[n]: a new JSON value, or NULL for "a string" (frontmatter.c).
 */
json_t *fm_resolve(const char *s, size_t n, enum fm_kind *kind);

/*
 * The YAML text s[0..len) as a block mapping, or NULL: not handled (the
 * caller runs libyaml), never an error (fmfast.c).
 */
json_t *fm_fast_parse(const char *s, size_t len);

#endif
