/*
 * fmfast.h - the fast path of the frontmatter parser; for frontmatter.c
 * only (other modules call fm_parse).
 */
#ifndef SKILL_FMFAST_H
#define SKILL_FMFAST_H

#include <jansson.h>
#include <stddef.h>

/*
 * The YAML text s[0..len) as a block mapping, or NULL: not handled (the
 * caller runs libyaml), never an error (fmfast.c).
 */
json_t *fm_fast_parse(const char *s, size_t len);

#endif
