/*
 * yamlcore.h - YAML 1.2 core schema typing of plain scalars (yamlcore.c).
 */
#ifndef SKILL_YAMLCORE_H
#define SKILL_YAMLCORE_H

#include <jansson.h>
#include <stddef.h>

/* How a plain scalar was typed; YC_STR means "a string". */
enum yc_kind { YC_STR, YC_NULL, YC_BOOL, YC_INT, YC_FLOAT };

/*
 * The plain scalar s[0..n), NUL-terminated at s[n], typed by the core
 * schema: a new JSON value and its kind, or NULL for "a string".
 * Integers that do not fit json_int_t become reals when finite; hex/octal
 * that do not fit, floats that overflow, and .inf/.nan stay strings (JSON
 * has no such numbers).
 */
json_t *yc_resolve(const char *s, size_t n, enum yc_kind *kind);

/* [-+]?.inf (any of YAML's three spellings) or .nan. */
int yc_is_inf_nan(const char *s, size_t n);

/* Is s[0..n) one of the NULL-terminated words? */
int yc_word_in(const char *s, size_t n, const char *const *words);

#endif
