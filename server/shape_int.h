/*
 * shape_int.h - what the files of the shape module share: the fitting
 * context and its cost unit, and the parsed form of printed output that is
 * JSON. Every other module uses shape.h.
 */
#ifndef SKILL_SHAPE_INT_H
#define SKILL_SHAPE_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "shape.h"
#include "util.h"

static inline int is_digit(unsigned c) { return c >= '0' && c <= '9'; }

/*
 * Sizes are in one unit, "cost": max(kc * characters, kt * tokens), scaled
 * so that the budget is B cost units whichever of its two limits binds
 * (kc = 1 and kt = max_chars / max_tokens when both are set). Costs of
 * parts add up to at least the cost of the whole.
 */
struct jdoc;

struct ctx {
    double kc, kt, B;
    json_t *fields;         /* paths that were cut */
    struct buf path;
    json_t *root;           /* the result: its members may be printed output */
    const struct shape_text *texts;
    size_t ntexts;
    struct jdoc **docs;     /* per text: parsed when it is JSON, else NULL */
    int *as_text;           /* per text: JSON that had to be cut as text */
};

#define MIN_CUT 64          /* strings shorter than this (bytes) are never cut */
#define MAX_FIELDS 32
#define HEAD_SHARE 0.6      /* of a cut string's room, for its head */

/*
 * A script's stdout (or a .json file) that is JSON is cut as JSON: the text
 * is parsed into a flat tree of spans over the text itself, so a value kept
 * whole is copied byte for byte (numbers like 1e400, 12345678901234567890 or
 * -0 and every escape stay as printed), and only the structure around the
 * cut is written anew, compact. Nodes are in document order; node i's
 * subtree ends just before v[i].next.
 */
enum { J_OBJ, J_ARR, J_STR, J_NUM, J_LIT, J_LINES };
#define J_MAX_DEPTH 256

struct jnode {
    uint32_t s, e;          /* the value [s, e) */
    uint32_t ks, ke;        /* an object member's key, quotes included */
    uint32_t next;          /* first node after this subtree */
    uint32_t n;             /* containers: children */
    uint8_t type, kesc;     /* kesc: the key holds an escape */
    float cost, min, floor_;    /* floats: a node a dozen bytes of output, 5 MB of it
                                   in 40-byte nodes */
};

struct jdoc {
    const char *src;
    size_t len;
    struct jnode *v;
    size_t nv, cap;
    int format;             /* SHAPE_JSON or SHAPE_JSONL */
    double tokens;          /* estimated, of the text escaped in a string (jmeasure) */
};

/* Costs (shape.c). */
double shape_cost_of(const struct ctx *x, double chars, double tokens);
/* Characters of s[0..n) once escaped into a JSON string (no quotes). */
size_t shape_json_chars(const char *s, size_t n);
/* Cost of s[0..n) as the inside of a JSON string. */
double shape_text_cost(const struct ctx *x, const char *s, size_t n);
/* Cost of fixed punctuation: chars characters, tokens tokens. */
double shape_punct(const struct ctx *x, double chars, double tokens);
/* The marker put in place of the middle of a string, and its cost. */
int shape_marker(char *out, size_t size, size_t omitted, int newlines);
double shape_marker_cost(const struct ctx *x, size_t omitted, int newlines);
/* How many bytes of s[0..n) fit target of total cost (a string's head or tail). */
size_t shape_fit_part(const struct ctx *x, const char *s, size_t n, double target, double total,
                      int tail);
double shape_clamp(double l, double lo, double hi);
int shape_fits(const struct shape_budget *b, size_t chars, size_t tokens);

/* Printed output that is JSON (shape_json.c). */
struct jdoc *shape_jdoc_parse(const char *s, size_t n);
void shape_jdoc_free(struct jdoc *d);
void shape_jmeasure(const struct ctx *x, struct jdoc *d, uint32_t i);
double shape_jws_cost(const struct ctx *x, const struct jdoc *d);
int shape_jdoc_cut(const struct ctx *x, const struct jdoc *d, double target, const char *hint,
                   struct buf *out);

#endif
