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
#include <stdint.h>

/*
 * Conservative token estimate of the UTF-8 text s[0..n): meant never to
 * count fewer tokens than a real BPE tokenizer (o200k_base, cl100k_base)
 * does, CJK and other non-ASCII text included, and not far more on English
 * prose and code. Pure function; s need not be NUL-terminated; invalid
 * UTF-8 bytes count one token each.
 */
size_t shape_tokens(const char *s, size_t n);

/*
 * shape_tokens of every prefix of one text, for a caller that measures many
 * of them (cutting a description to a token cap probes a dozen): one pass
 * records where each run of the estimate starts and the count before it;
 * a prefix then costs a binary search and a rescan of the run it ends in.
 * shape_prefix_tokens(sp, m) == shape_tokens(s, m) for every m <= n
 * (tests/unit/test_shape.c). s must outlive sp.
 */
struct shape_run {
    uint32_t at, t, q;      /* where a run starts; whole and quarter tokens before it */
};
struct shape_prefix {
    const char *s;
    size_t n, nrun, total;
    struct shape_run *run;
    struct shape_run local[512];    /* a description's worth (6 KB) */
};
/* Returns shape_tokens(s, n). */
size_t shape_prefix_init(struct shape_prefix *sp, const char *s, size_t n);
size_t shape_prefix_tokens(const struct shape_prefix *sp, size_t m);
void shape_prefix_free(struct shape_prefix *sp);

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

/*
 * Printed output (a script's stdout or stderr, a file's content) and what
 * it is: one JSON value (whitespace around it allowed), JSON Lines (two or
 * more lines holding one JSON value each; blank lines allowed), or text.
 * JSON is RFC 8259 checked to the letter: no duplicate keys (compared
 * decoded), no NaN, no trailing commas, strings of valid UTF-8 without raw
 * control characters, nested at most 256 deep. Numbers are checked against
 * the grammar only: 1e400 and 12345678901234567890 are JSON.
 */
enum shape_format { SHAPE_TEXT, SHAPE_JSON, SHAPE_JSONL };
enum shape_format shape_format_of(const char *s, size_t n);
const char *shape_format_name(enum shape_format f);   /* "text", "json", "jsonl" */

/* A string member of a result that holds printed output. */
struct shape_text {
    const char *field;      /* the member, e.g. "stdout" */
    const char *format;     /* the member that tells its format ("stdout_format"), or NULL */
    const char *hint;       /* for the output's own _truncated (NULL: a generic one) */
};

/* Sets each texts[i].format member of result to the format of its field. */
void shape_set_formats(json_t *result, const struct shape_text *texts, size_t ntexts);

/*
 * shape_json, except that a member named in texts that holds JSON or JSON
 * Lines is cut as JSON: the largest collection first, every scalar and the
 * envelope kept, whole items where they fit, the kept values copied byte
 * for byte (the rest written compact), and an own
 *
 *   "_truncated": {"path": "data", "kept": 3, "total": 500, "hint": hint}
 *
 * as the last member (a top-level object), the last element (an array) or
 * the last line (JSON Lines); so the string still parses as it did. Sets
 * the format members first (shape_set_formats), and sets one to "text"
 * when its JSON could not be cut as JSON (a number longer than the budget).
 * docs/shaping.md, "JSON output".
 */
int shape_json_texts(json_t *result, const struct shape_budget *b, const char *hint,
                     const struct shape_text *texts, size_t ntexts);

/*
 * Bytes of printed output that fit one result of budget b: its characters,
 * or four bytes a token, whichever is smaller; 0 when b is unlimited. What
 * scripts see as SKILL_OUTPUT_BUDGET_BYTES.
 */
size_t shape_budget_bytes(const struct shape_budget *b);

#endif
