/*
 * search_int.h - what the parts of the search index share, and no other
 * module: search_tok.c (characters, stemming, the tokenizer), search_build.c
 * (the index build: dictionary, postings, carried body terms),
 * search_syn.c (the synonym table) and search.c (queries, ranking, the
 * closest cards). Everything else uses search.h.
 */
#ifndef SKILL_SEARCH_INT_H
#define SKILL_SEARCH_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "search.h"

#define MAXTOK 64               /* bytes kept of one token */
#define MAXQ 64                 /* distinct terms kept of one query */
#define QUERY_MAX_BYTES 4096    /* query bytes tokenized; the rest is ignored */
#define NFIELDS 5

enum { F_NAME, F_TAGS, F_DESC, F_BODY, F_REFS };

/*
 * The card's fields (name, tags, description) are one BM25F sum, saturated
 * once. The body and the references are saturated on their own and scaled
 * down: a skill that says "Excel" 26 times in its body must not outrank one
 * whose description says it once, and a word found only in a reference
 * file ranks below the same word in a body. A saturated part is at most
 * k1 + 1 times the term's idf, so body-only hits stay under
 * BODY_SCALE * 2.2 idf and reference-only hits under REFS_SCALE * 2.2 idf,
 * while a single description hit is worth about one idf.
 */
static const double field_weight[NFIELDS] = { 3.0, 2.0, 1.0, 1.0, 1.0 };
#define BODY_SCALE 0.25
#define REFS_SCALE 0.08
#define BM25_K1 1.2
#define BM25_B 0.75
#define PREFIX_WEIGHT 0.5f
#define SYN_WEIGHT 0.8f         /* a synonym's terms, shared among its words */
#define HEADING_REPEAT 2        /* a heading's words count this many times */

enum tok_kind { TK_WORD, TK_COMPOUND, TK_CJK };

typedef void (*emit_fn)(void *ctx, const char *tok, size_t len, enum tok_kind kind);

/* ---- the index --------------------------------------------------------- */

struct posting {
    uint32_t doc;
    float score;        /* idf * saturated BM25F tf for this doc */
};

struct name_ent {
    const char *s;      /* into names */
    uint32_t doc;
};

struct search_index {
    size_t ndocs;
    size_t nterms;
    char *terms;                /* NUL-terminated terms back to back */
    /* Offsets in 32 bits: 4 Gi postings would be 32 GiB of post[] (a doc
     * number is 32-bit too), far past any library a server holds. */
    uint32_t *term_off;         /* [nterms], in strcmp order of the terms */
    uint32_t *post_start;       /* [nterms + 1] into post */
    struct posting *post;
    /* What the next build needs to take a document's terms from this index
     * instead of from a per-document list kept for every entry (a few
     * bytes per posting against ~14 per term and document): for the
     * postings with a body or reference count (bit j of body_bit) those
     * two counts, and for the postings with a card count (bit j of
     * card_bit) the name, tags and description counts, each in posting
     * order (an index built before the bodies are read has no body counts
     * at all: two bytes a posting for none were 64 bytes a skill); per
     * document, the field lengths and whether its body terms are here.
     * Counts saturate at 255 as in struct search_terms, and a posting's
     * are packed into one byte when they are small (search_build.c,
     * counts_pack), so both lists are read front to back. */
    uint8_t *body_bit;          /* [(npost + 7) / 8] */
    uint8_t *xtf;               /* per posting with a body or reference count */
    uint8_t *card_bit;          /* [(npost + 7) / 8] */
    uint8_t *ctf;               /* per posting with a card count */
    uint32_t (*flen)[NFIELDS];  /* [ndocs] */
    uint8_t *has_body;          /* [ndocs] */
    char *names;                /* trimmed, ASCII-lowercased names */
    struct name_ent *byname;    /* [ndocs], by (name, doc) */
    char *fuzzy;                /* per doc: "name tag tag ", lowercased, NUL-ended */
    uint32_t *fuzzy_off;        /* [ndocs + 1] into fuzzy */
    struct search_synonyms *syn;/* the synonym table when built (a reference) */
};

#define SYN_MAX_WORDS 8         /* words of one member */
#define SYN_MAX_LINE 4096
#define SYN_MAX_FILE (1u << 20)

struct syn_ent {
    uint32_t group;
    uint32_t tok;               /* first of its ntok words in tokoff[] */
    uint32_t ntok;
};

struct search_synonyms {
    atomic_long refs;
    char *pool;                 /* the members' words, NUL-terminated */
    size_t pool_len, pool_cap;
    size_t *tokoff;
    size_t ntok, tcap;
    struct syn_ent *ent;        /* a group's members are consecutive */
    size_t nent, ecap;
    uint32_t *byfirst;          /* entry ids by first word */
    size_t ngroups;
};

struct syn_words {
    char w[SYN_MAX_WORDS][MAXTOK + 1];
    size_t n;
    bool over;
};

/* Makes room for need elements of elsz bytes in *p (capacity *cap). */
void search_grow(void **p, size_t *cap, size_t need, size_t elsz);
/* Calls emit for every token of text[0..n) (not NUL-terminated); stopwords
 * are dropped unless keep_stop. */
void search_tokenize(const char *text, size_t n, bool keep_stop, emit_fn emit, void *ctx);
/* A name trimmed of surrounding blanks, as exact-name matching compares it. */
const char *search_name_trim(const char *s, size_t *len);
/* c as the closest-card trigrams see it: ASCII letters lowercased, other
 * ASCII a space, bytes of UTF-8 sequences kept. */
char search_fuzzy_char(char c);
/* The table in force (a reference; the file reread if it changed), and
 * its release. */
struct search_synonyms *search_syn_current(void);
void search_syn_unref(struct search_synonyms *y);
/* The t-th word of the table's members. */
const char *search_syn_word(const struct search_synonyms *y, size_t t);

#endif
