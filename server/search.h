/*
 * search.h - the relevance index built with each snapshot for
 * list_skills(query).
 *
 * Built once, off the request path, then read-only: any number of threads may
 * query one index at once without locks. Ranking is BM25F over the card's
 * fields (name weighted highest, then tags, then description), plus the
 * SKILL.md body and the Markdown references, each saturated on its own and
 * scaled down so that words found only there rank below card hits. Light
 * English stemming, prefix matching of the last query term, CJK text split
 * into overlapping bigrams (plus single characters) so Chinese/Japanese
 * queries match without a dictionary, and query-time synonym groups (file
 * formats and products: xlsx/excel/spreadsheet, ...; extended by a file).
 */
#ifndef SKILL_SEARCH_H
#define SKILL_SEARCH_H

#include <stddef.h>
#include <stdint.h>

struct search_doc {
    const char *name;           /* skill name; '-' and '_' split words */
    const char *description;
    const char *const *tags;
    size_t ntags;
    const char *body;           /* Markdown (the SKILL.md body), or NULL */
    size_t body_len;
    const char *refs;           /* Markdown (the references), or NULL */
    size_t refs_len;
};

/* Bytes of a skill's body, and of all its references together, indexed. */
#define SEARCH_BODY_MAX (64u << 10)
#define SEARCH_REFS_MAX (64u << 10)

struct search_hit {
    uint32_t doc;               /* index into the docs array given to search_new */
    float score;
};

struct search_index;
struct err;

/* Builds an index over docs[0..n). Strings are copied; docs may be freed after.
 * NULL name/description/tags entries are allowed. Aborts only on OOM. */
struct search_index *search_new(const struct search_doc *docs, size_t n);
void search_free(struct search_index *idx);

/*
 * One document tokenized on its own (thread-safe, no shared state), to be
 * kept with the document and merged by search_new_terms: an index rebuild
 * then costs a dictionary merge, not a tokenization of the whole library.
 * search_new(docs, n) is search_new_terms over search_terms_new(docs[i]),
 * and ranks identically. terms[i] must describe docs[i]; docs still supply
 * the names (exact-name bonus) and the names and tags (closest cards).
 * xterms (may be NULL, and so may its elements) adds a second set of terms
 * per document, merged with the first: the body and references, tokenized
 * later than the card (see bodies.c).
 */
struct search_terms;
struct search_terms *search_terms_new(const struct search_doc *doc);
void search_terms_free(struct search_terms *t);
size_t search_terms_bytes(const struct search_terms *t);
/* Copies t into dst (search_terms_bytes(t) bytes, 8-aligned) and returns the
 * copy, which search_terms_free leaves alone: dst is the caller's to free. */
struct search_terms *search_terms_place(const struct search_terms *t, void *dst);
struct search_index *search_new_terms(const struct search_doc *docs,
                                      const struct search_terms *const *terms,
                                      const struct search_terms *const *xterms, size_t n);

/*
 * search_new_terms, with a document that has no xterms taking its body and
 * reference terms from the previous index, and one that has no terms (NULL)
 * its name, tags and description terms: prev_doc[d] is document d's number
 * in prev, or SEARCH_NO_DOC (then a NULL terms[d] gives the document no
 * card terms). The index keeps, per posting, the counts this needs, so the
 * lists need not outlive the index that merged them. Ranks exactly as if
 * the lists had been given again. prev (and prev_doc) may be NULL; prev
 * must stay alive during the call.
 */
#define SEARCH_NO_DOC UINT32_MAX
struct search_index *search_new_carry(const struct search_doc *docs,
                                      const struct search_terms *const *terms,
                                      const struct search_terms *const *xterms, size_t n,
                                      const struct search_index *prev,
                                      const uint32_t *prev_doc);
/* Whether document d's body and reference terms are in idx (given as
 * xterms, or carried). */
int search_has_body(const struct search_index *idx, size_t d);

/*
 * Ranks the documents matching query (any term matches; more and rarer terms
 * rank higher; the last term also matches as a prefix, at half weight).
 * Documents whose name equals the whole trimmed query (ASCII case-insensitive)
 * match and come first, their score lifted above every other hit. Writes at
 * most max hits to out (out may be NULL when max is 0), best first (ties
 * broken by doc index, ascending), and returns the total number of matching
 * documents. A query with no searchable term (empty, punctuation, only
 * stopwords) that is not a skill name matches nothing and returns 0. Only the
 * first 4 KB of a query are tokenized.
 * Thread-safe on a built index; allocates only per-query scratch: a
 * window of 4,096 scores, one cursor per term visited, twice max hits and
 * their keys (none when max covers every document). Its work is the
 * postings visited and the hits, not the number of documents.
 */
size_t search_query(const struct search_index *idx, const char *query,
                    struct search_hit *out, size_t max);

/*
 * For a query that matched nothing: up to max documents whose name or tags
 * look most like the query (character trigrams; ties by doc index), best
 * first. Returns how many were written; *similar is 0 when none shares a
 * trigram with the query, and the first max documents are given instead.
 */
size_t search_closest(const struct search_index *idx, const char *query,
                      struct search_hit *out, size_t max, int *similar);

/*
 * Synonym groups. A query that contains one member of a group (a word, or
 * a run of words such as "word document") also looks for the other members,
 * at a lower weight. The built-in table covers common file formats and
 * products (documented in docs/tools.md); an operator's file adds groups:
 * one group per line, members separated by commas, '#' starts a comment
 * line, blank lines are skipped.
 *
 * search_synonyms_init(path) loads the built-in groups plus path (may be
 * NULL). Returns 0, or -1 with "FILE:LINE: what is wrong" in *err. Each
 * index built afterwards takes the table current when it is built: a file
 * changed since (mtime, size) is read again then; a file that no longer
 * parses is logged and the previous table kept. Not called: built-ins only.
 */
int search_synonyms_init(const char *path, struct err *err);
/* Parses text as a synonyms file (named file in messages); 0 or -1 with *err.
 * For tests and validation; does not change the table in use. */
int search_synonyms_check(const char *text, size_t len, const char *file, struct err *err);
/* Frees the table (at exit, so leak checkers stay quiet). */
void search_synonyms_shutdown(void);

#endif
