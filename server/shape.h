/*
 * shape.h - fits tool results into the model's context budget.
 *
 * Small local models (a 30K-token window) are this server's hardest users: a
 * result that does not fit shows up as a timeout, because the model spends
 * its time prefilling tokens it cannot use. Every structured tool result is
 * therefore fitted to a budget of tokens (estimated, see shape_tokens) and
 * characters before it is rendered. The rules and the measured error of the
 * estimate are in docs/shaping.md.
 */
#ifndef SKILL_SHAPE_H
#define SKILL_SHAPE_H

#include <jansson.h>
#include <stddef.h>

/*
 * Conservative token estimate of the UTF-8 text s[0..n): meant never to
 * count fewer tokens than a real BPE tokenizer (o200k_base, cl100k_base)
 * does, CJK and other non-ASCII text included, and not far more on English
 * prose and code. Pure function; s need not be NUL-terminated; invalid
 * UTF-8 bytes count one token each.
 */
size_t shape_tokens(const char *s, size_t n);

/*
 * Characters of s[0..n) as a JavaScript client counts them (UTF-16 code
 * units: one per character, two for characters beyond U+FFFF). Never more
 * than n.
 */
size_t shape_chars(const char *s, size_t n);

/* A result budget. 0 in a field = that dimension is unlimited. */
struct shape_budget {
    size_t max_tokens;      /* by shape_tokens over the compact serialisation */
    size_t max_chars;       /* by shape_chars over the compact serialisation */
};

/*
 * The budget of the cfg values: max_tokens = context_tokens * share (0 when
 * either is <= 0), max_chars = max_chars.
 */
struct shape_budget shape_budget_of(long context_tokens, double share, size_t max_chars);

/*
 * Fits a structured tool result (a JSON object, modified in place; the
 * caller keeps its reference) so that its compact serialisation
 * (JSON_COMPACT | JSON_REAL_PRECISION(6), as tools.c renders it) fits b,
 * the added `_truncated` member included.
 *
 * Returns 0 when it already fitted (result untouched, including when result
 * is not an object or b is unlimited), 1 when it was reduced and now fits,
 * 2 when it was reduced as far as the rules allow and is still over b (the
 * envelope alone is bigger than a tiny budget). Reduction is structural and
 * keeps every member with a value of the same type: the largest members are
 * cut first (arrays lose elements from their end but keep one; strings keep
 * head and tail around a marker line; Markdown keeps every heading); strings
 * under 64 bytes, numbers, booleans and nulls are never changed. A reduced
 * result gains
 *
 *   "_truncated": {"fields": ["stdout", ...], "original_tokens": N,
 *                  "kept_tokens": M, "hint": hint}
 *
 * hint (borrowed; NULL for a generic one) tells the model how to narrow the
 * call. It is left out when it would take more than a third of a tiny
 * budget. Time and memory are linear in the size of result.
 */
int shape_json(json_t *result, const struct shape_budget *b, const char *hint);

#endif
