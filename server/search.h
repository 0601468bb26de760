/*
 * search.h - the relevance index built with each snapshot for
 * list_skills(query).
 *
 * Built once, off the request path, then read-only: any number of threads may
 * query one index at once without locks. Ranking is BM25F over three fields
 * (name weighted highest, then tags, then description) with light English
 * stemming, prefix matching of the last query term, and CJK text split into
 * overlapping bigrams (plus single characters) so Chinese/Japanese queries
 * match without a dictionary.
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
};

struct search_hit {
    uint32_t doc;               /* index into the docs array given to search_new */
    float score;
};

struct search_index;

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
 * the names for the exact-name bonus.
 */
struct search_terms;
struct search_terms *search_terms_new(const struct search_doc *doc);
void search_terms_free(struct search_terms *t);
size_t search_terms_bytes(const struct search_terms *t);
struct search_index *search_new_terms(const struct search_doc *docs,
                                      const struct search_terms *const *terms, size_t n);

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
 * Thread-safe on a built index; allocates only per-query scratch
 * proportional to the postings visited (or n floats for broad queries).
 */
size_t search_query(const struct search_index *idx, const char *query,
                    struct search_hit *out, size_t max);

#endif
