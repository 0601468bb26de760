/*
 * search.c - the BM25F relevance index behind list_skills(query).
 *
 * Layout. Every indexed term lives once in a sorted dictionary (one string
 * pool, an array of offsets in strcmp order), so exact lookup and prefix
 * ranges are binary searches. Each term owns a contiguous run of postings
 * (doc id + score) in one array, in ascending doc order. Because BM25F's
 * per-document part (field-weighted, length-normalised tf, saturated by k1)
 * and the term's IDF are both fixed once the snapshot is built, each posting
 * stores its final score: a query only sums floats.
 *
 * Tokens. Text is split into words of ASCII letters/digits and non-ASCII
 * letters, folded by utf8_fold (ASCII, Latin-1, Latin Extended-A, Greek and
 * Cyrillic capitals lowercased; fullwidth ASCII to ASCII). Words joined by
 * '-' or '_' are also emitted whole ("csv-profile" gives csv, profil,
 * csv-profile), unstemmed. Pure ASCII words longer than
 * three letters go through a small suffix stripper. Runs of CJK characters
 * (Han, kana, Hangul) give every single character plus every overlapping
 * pair. English stopwords are dropped from tags, descriptions and queries,
 * never from names. Tokens keep at most MAXTOK bytes.
 *
 * Queries. Distinct query terms are looked up exactly (OR semantics); the
 * last term also matches every dictionary term it is a prefix of (at least
 * two characters, not CJK) at PREFIX_WEIGHT. Scores accumulate in a sparse
 * list (few postings) or a dense array of n floats (many), the hits are
 * selected with a bounded heap in the caller's out array, and documents whose
 * name equals the trimmed query (ASCII case-insensitive) come first, with
 * their score lifted above every other hit (such a query matches even when
 * all its words are stopwords: a skill named "it" is found by "it").
 *
 * No locks and no shared mutable state: a built index is safe to query from
 * any number of threads.
 */
#include "search_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ---- querying ---------------------------------------------------------- */

struct qterms {
    char term[MAXQ][MAXTOK + 1];    /* distinct terms in query order */
    size_t n;
    uint8_t word[MAXQ];             /* the query's words in order, as term indexes */
    size_t nword;
    char last[MAXTOK + 1];          /* the query's last token */
    size_t lastlen;
    enum tok_kind lastkind;
    bool have_last;
};

static size_t add_term(struct qterms *q, const char *s)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->term[i], s) == 0)
            return i;
    /* s is a token, at most MAXTOK bytes, and term[] rows hold MAXTOK + 1 */
    snprintf(q->term[q->n++], MAXTOK + 1, "%s", s);
    return q->n - 1;
}

static void query_emit(void *ctx, const char *tok, size_t len, enum tok_kind kind)
{
    struct qterms *q = ctx;
    char buf[MAXTOK + 1];

    memcpy(buf, tok, len);
    buf[len] = '\0';
    if (kind != TK_COMPOUND) {  /* "csv-prof": prof is the last term */
        memcpy(q->last, buf, len + 1);
        q->lastlen = len;
        q->lastkind = kind;
        q->have_last = true;
    }
    if (q->n < MAXQ - 1) {      /* one slot stays free for the last token */
        size_t t = add_term(q, buf);
        if (kind == TK_WORD && q->nword < MAXQ)
            q->word[q->nword++] = (uint8_t)t;
    }
}

static const char *term_at(const struct search_index *idx, size_t r)
{
    return idx->terms + idx->term_off[r];
}

/* First rank whose term is >= s. */
static size_t lower_bound(const struct search_index *idx, const char *s)
{
    size_t lo = 0, hi = idx->nterms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(term_at(idx, mid), s) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First rank >= lo whose term does not start with s[0..len). */
static size_t prefix_end(const struct search_index *idx, size_t lo,
                         const char *s, size_t len)
{
    size_t hi = idx->nterms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strncmp(term_at(idx, mid), s, len) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_name_query(const char *q, size_t qlen, const char *name)
{
    for (size_t i = 0; i < qlen; i++) {
        unsigned char a = (unsigned char)q[i], b = (unsigned char)name[i];
        if (a >= 'A' && a <= 'Z')
            a = (unsigned char)(a + 32);
        if (b == '\0' || a != b)
            return b == '\0' ? 1 : (a < b ? -1 : 1);
    }
    return name[qlen] == '\0' ? 0 : -1;
}

#define MAXPLAN (2 * MAXQ)

struct plan {
    size_t rank[MAXPLAN];       /* dictionary ranks of the query's terms, */
    float weight[MAXPLAN];      /* then of its synonyms' */
    size_t nr;
    size_t plo, phi;            /* ranks the last term is a prefix of */
    const struct name_ent *exact;   /* docs named exactly like the query, */
    size_t nexact;                  /* by doc */
    size_t npost;               /* postings to visit */
};

static bool is_query_rank(const struct plan *p, size_t r)
{
    for (size_t i = 0; i < p->nr; i++)
        if (p->rank[i] == r)
            return true;
    return false;
}

/* Adds term at weight w, unless it is not in the dictionary or already planned. */
static void plan_term(const struct search_index *idx, struct plan *p, const char *term, float w)
{
    size_t r = lower_bound(idx, term);
    if (r >= idx->nterms || strcmp(term_at(idx, r), term) != 0 || is_query_rank(p, r) ||
        p->nr == MAXPLAN)
        return;
    p->rank[p->nr] = r;
    p->weight[p->nr++] = w;
    p->npost += idx->post_start[r + 1] - idx->post_start[r];
}

/* Does entry e's word run start at the query's word i? */
static bool syn_matches_at(const struct search_synonyms *y, const struct syn_ent *e,
                           const struct qterms *q, size_t i)
{
    if (i + e->ntok > q->nword)
        return false;
    for (size_t k = 0; k < e->ntok; k++)
        if (strcmp(q->term[q->word[i + k]], search_syn_word(y, e->tok + k)) != 0)
            return false;
    return true;
}

/*
 * Every group one of whose members the query contains adds its other
 * members' words, at SYN_WEIGHT shared among a member's words ("word
 * document" gives each word half). Lookups are binary searches on the
 * members' first words: a large operator table costs a query little.
 */
static void plan_synonyms(const struct search_index *idx, struct plan *p,
                          const struct qterms *q)
{
    const struct search_synonyms *y = idx->syn;
    uint32_t groups[16];
    size_t ng = 0;

    for (size_t i = 0; i < q->nword; i++) {
        const char *w = q->term[q->word[i]];
        size_t lo = 0, hi = y->nent;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(search_syn_word(y, y->ent[y->byfirst[mid]].tok), w) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < y->nent; lo++) {
            const struct syn_ent *e = &y->ent[y->byfirst[lo]];
            if (strcmp(search_syn_word(y, e->tok), w) != 0)
                break;
            if (!syn_matches_at(y, e, q, i))
                continue;
            size_t g = 0;
            while (g < ng && groups[g] != e->group)
                g++;
            if (g == ng && ng < sizeof groups / sizeof groups[0])
                groups[ng++] = e->group;
        }
    }
    for (size_t g = 0; g < ng; g++) {
        /* Members of a group are consecutive: find the first. */
        size_t lo = 0, hi = y->nent;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (y->ent[mid].group < groups[g])
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t e = lo; e < y->nent && y->ent[e].group == groups[g]; e++)
            for (size_t k = 0; k < y->ent[e].ntok; k++)
                plan_term(idx, p, search_syn_word(y, y->ent[e].tok + k),
                          SYN_WEIGHT / (float)y->ent[e].ntok);
    }
}

static void make_plan(const struct search_index *idx, const char *query,
                      struct plan *p)
{
    struct qterms q;
    size_t qn = strlen(query);

    memset(p, 0, sizeof *p);
    q.n = 0;
    q.nword = 0;
    q.have_last = false;
    search_tokenize(query, qn < QUERY_MAX_BYTES ? qn : QUERY_MAX_BYTES, false,
             query_emit, &q);
    if (q.have_last)
        add_term(&q, q.last);

    for (size_t i = 0; i < q.n; i++)
        plan_term(idx, p, q.term[i], 1.0f);
    if (idx->syn)
        plan_synonyms(idx, p, &q);

    if (q.have_last && q.lastkind != TK_CJK) {
        size_t chars = 0;
        for (size_t i = 0; i < q.lastlen; i++)
            chars += ((unsigned char)q.last[i] & 0xC0) != 0x80;
        if (chars >= 2) {
            p->plo = lower_bound(idx, q.last);
            p->phi = prefix_end(idx, p->plo, q.last, q.lastlen);
            for (size_t r = p->plo; r < p->phi; r++)
                if (!is_query_rank(p, r))
                    p->npost += idx->post_start[r + 1] - idx->post_start[r];
        }
    }

    size_t tlen;
    const char *t = search_name_trim(query, &tlen);
    if (tlen && idx->ndocs) {
        size_t lo = 0, hi = idx->ndocs;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_name_query(t, tlen, idx->byname[mid].s) > 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t e = lo;
        while (e < idx->ndocs && cmp_name_query(t, tlen, idx->byname[e].s) == 0)
            e++;
        p->exact = idx->byname + lo;
        p->nexact = e - lo;
    }
}

static bool is_exact(const struct plan *p, uint32_t doc)
{
    size_t lo = 0, hi = p->nexact;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->exact[mid].doc < doc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nexact && p->exact[lo].doc == doc;
}

/* The top max hits, kept as a heap with the worst hit at out[0]. */
struct sel {
    const struct plan *p;
    struct search_hit *out;
    size_t max, k, total;
    float best_plain;           /* best score of a hit not named exactly */
    bool all;                   /* out holds every hit: collect, sort at the end */
};

static bool better(const struct plan *p, struct search_hit a, struct search_hit b)
{
    if (p->nexact) {
        bool ea = is_exact(p, a.doc), eb = is_exact(p, b.doc);
        if (ea != eb)
            return ea;
    }
    if (a.score != b.score)
        return a.score > b.score;
    return a.doc < b.doc;
}

static void sift_down(const struct plan *p, struct search_hit *h, size_t k, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, w = i;
        if (c < k && better(p, h[w], h[c]))
            w = c;
        if (c + 1 < k && better(p, h[w], h[c + 1]))
            w = c + 1;
        if (w == i)
            return;
        struct search_hit t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void offer(struct sel *s, uint32_t doc, float score)
{
    struct search_hit hit = { doc, score };

    s->total++;
    if (score > s->best_plain && !is_exact(s->p, doc))
        s->best_plain = score;
    if (s->all) {
        s->out[s->k++] = hit;
        return;
    }
    if (s->k < s->max) {
        size_t i = s->k++;
        s->out[i] = hit;
        while (i > 0) {
            size_t parent = (i - 1) / 2;
            if (!better(s->p, s->out[parent], s->out[i]))
                break;
            struct search_hit t = s->out[i];
            s->out[i] = s->out[parent];
            s->out[parent] = t;
            i = parent;
        }
    } else if (s->max && better(s->p, hit, s->out[0])) {
        s->out[0] = hit;
        sift_down(s->p, s->out, s->k, 0);
    }
}

/* A score as a 32-bit key whose unsigned order is the scores' descending
 * order (IEEE 754 bits made monotonic, then inverted). */
static uint32_t score_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u ^= (u >> 31) ? 0xFFFFFFFFu : 0x80000000u;
    return ~u;
}

/*
 * Every hit collected, in ascending doc order apart from the exactly named
 * documents that matched no term (appended, ascending among themselves, at
 * score 0): a stable LSD radix sort by score key gives better()'s order,
 * score descending then doc ascending, in four linear passes where a heap
 * of all the hits would cost O(k log k) comparisons; a stable partition
 * then puts the exactly named first. A broad query at 100,000 skills
 * matches tens of thousands of documents, and a list_skills(query) that
 * filters by tags or an --acl view asks for them all (without a filter it
 * asks for the page's end: the bounded heap).
 */
static void sort_all(struct sel *s)
{
    size_t k = s->k;
    struct search_hit *a = s->out, *b = xmalloc((k ? k : 1) * sizeof *b);
    for (unsigned shift = 0; shift < 32; shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < k; i++)
            count[((score_key(a[i].score) >> shift) & 0xFF) + 1]++;
        if (count[((score_key(a[0].score) >> shift) & 0xFF) + 1] == k)
            continue;                   /* one digit value: the order stands */
        for (size_t i = 0; i < 256; i++)
            count[i + 1] += count[i];
        for (size_t i = 0; i < k; i++)
            b[count[(score_key(a[i].score) >> shift) & 0xFF]++] = a[i];
        struct search_hit *t = a;
        a = b;
        b = t;
    }
    if (s->p->nexact) {
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (is_exact(s->p, a[i].doc))
                b[m++] = a[i];
        for (size_t i = 0; i < k; i++)
            if (!is_exact(s->p, a[i].doc))
                b[m++] = a[i];
        struct search_hit *t = a;
        a = b;
        b = t;
    }
    if (a != s->out) {
        memcpy(s->out, a, k * sizeof *a);
        b = a;
    }
    free(b);
}

/* Sorts the heap best first and lifts exactly named hits above the rest. */
static void finish(struct sel *s)
{
    if (s->all && s->k)
        sort_all(s);
    for (size_t end = s->all ? 0 : s->k; end > 1; end--) {
        struct search_hit t = s->out[0];
        s->out[0] = s->out[end - 1];
        s->out[end - 1] = t;
        sift_down(s->p, s->out, end - 1, 0);
    }
    for (size_t i = 0; i < s->k && is_exact(s->p, s->out[i].doc); i++)
        s->out[i].score += s->best_plain + 1.0f;
}

static float weighted(float score, float w)
{
    return score * w;
}

/* Runs BODY with DOC and VAL (its score contribution) bound for every posting
 * the plan visits, in a fixed order (query terms, then prefix terms), so each
 * document's sum is reproducible. */
#define FOR_EACH_CONTRIB(idx, p, DOC, VAL, BODY) do {                        \
        for (size_t i_ = 0; i_ < (p)->nr; i_++) {                            \
            size_t r_ = (p)->rank[i_];                                       \
            for (size_t j_ = (idx)->post_start[r_];                          \
                 j_ < (idx)->post_start[r_ + 1]; j_++) {                     \
                uint32_t DOC = (idx)->post[j_].doc;                          \
                float VAL = weighted((idx)->post[j_].score, (p)->weight[i_]); \
                BODY;                                                        \
            }                                                                \
        }                                                                    \
        for (size_t r_ = (p)->plo; r_ < (p)->phi; r_++) {                    \
            if (is_query_rank((p), r_))                                      \
                continue;                                                    \
            for (size_t j_ = (idx)->post_start[r_];                          \
                 j_ < (idx)->post_start[r_ + 1]; j_++) {                     \
                uint32_t DOC = (idx)->post[j_].doc;                          \
                float VAL = weighted((idx)->post[j_].score, PREFIX_WEIGHT);  \
                BODY;                                                        \
            }                                                                \
        }                                                                    \
    } while (0)

/* Many postings: one float per document. */
static void rank_dense(const struct search_index *idx, const struct plan *p,
                       struct sel *s)
{
    float *acc = xcalloc(idx->ndocs, sizeof *acc);

    FOR_EACH_CONTRIB(idx, p, doc, val, acc[doc] += val);
    for (size_t d = 0; d < idx->ndocs; d++)
        if (acc[d] > 0)
            offer(s, (uint32_t)d, acc[d]);
    for (size_t e = 0; e < p->nexact; e++)
        if (!(acc[p->exact[e].doc] > 0))
            offer(s, p->exact[e].doc, 0.0f);
    free(acc);
}

/* Few postings: gather them, radix-sort by doc (stable, so each document's
 * contributions are summed in the same order as rank_dense), merge. */
static void rank_sparse(const struct search_index *idx, const struct plan *p,
                        struct sel *s)
{
    size_t np = p->npost, m = 0;
    struct posting *buf = xmalloc(2 * np * sizeof *buf), *tmp = buf + np;

    FOR_EACH_CONTRIB(idx, p, doc, val, {
        buf[m].doc = doc;
        buf[m].score = val;
        m++;
    });

    for (unsigned shift = 0; shift < 32 && ((idx->ndocs - 1) >> shift); shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < np; i++)
            count[((buf[i].doc >> shift) & 0xFF) + 1]++;
        for (size_t i = 0; i < 256; i++)
            count[i + 1] += count[i];
        for (size_t i = 0; i < np; i++)
            tmp[count[(buf[i].doc >> shift) & 0xFF]++] = buf[i];
        struct posting *t = buf;
        buf = tmp;
        tmp = t;
    }

    m = 0;
    for (size_t i = 0; i < np;) {
        uint32_t doc = buf[i].doc;
        float sum = 0.0f;
        for (; i < np && buf[i].doc == doc; i++)
            sum += buf[i].score;
        buf[m].doc = doc;
        buf[m].score = sum;
        m++;
    }
    for (size_t i = 0; i < m; i++)
        offer(s, buf[i].doc, buf[i].score);
    for (size_t e = 0; e < p->nexact; e++) {
        uint32_t doc = p->exact[e].doc;
        size_t lo = 0, hi = m;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (buf[mid].doc < doc)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == m || buf[lo].doc != doc)
            offer(s, doc, 0.0f);
    }
    free(buf < tmp ? buf : tmp);
}

size_t search_query(const struct search_index *idx, const char *query,
                    struct search_hit *out, size_t max)
{
    struct plan p;
    struct sel s;

    if (!idx || !query || !idx->ndocs)
        return 0;
    make_plan(idx, query, &p);
    if (!p.npost && !p.nexact)
        return 0;

    s.p = &p;
    s.out = out;
    s.max = out ? max : 0;
    s.k = 0;
    s.total = 0;
    s.best_plain = 0.0f;
    /* a document is offered at most once, so ndocs slots hold every hit */
    s.all = s.max >= idx->ndocs;
    if (p.npost * 8 < idx->ndocs)
        rank_sparse(idx, &p, &s);
    else
        rank_dense(idx, &p, &s);
    finish(&s);
    return s.total;
}

/* ---- the closest cards --------------------------------------------------- */

#define CLOSEST_QUERY_BYTES 256

size_t search_closest(const struct search_index *idx, const char *query,
                      struct search_hit *out, size_t max, int *similar)
{
    char q[CLOSEST_QUERY_BYTES + 3];
    char tri[CLOSEST_QUERY_BYTES][3];
    size_t qn = 0, nt = 0, k = 0;

    *similar = 0;
    if (!idx || !idx->ndocs || !max)
        return 0;
    /* " word word ": one space between words, one at each end, so that a
     * word's first and last letters make trigrams of their own. */
    q[qn++] = ' ';
    for (const char *c = query ? query : ""; *c && qn < CLOSEST_QUERY_BYTES; c++) {
        char f = search_fuzzy_char(*c);
        if (f == ' ' && q[qn - 1] == ' ')
            continue;
        q[qn++] = f;
    }
    if (q[qn - 1] != ' ')
        q[qn++] = ' ';
    for (size_t i = 0; i + 3 <= qn; i++) {
        bool dup = q[i + 1] == ' ';     /* " x " spans no letters worth a trigram */
        for (size_t j = 0; j < nt && !dup; j++)
            dup = memcmp(tri[j], q + i, 3) == 0;
        if (!dup)
            memcpy(tri[nt++], q + i, 3);
    }
    for (size_t d = 0; d < idx->ndocs; d++) {
        const char *f = idx->fuzzy + idx->fuzzy_off[d];
        size_t fl = idx->fuzzy_off[d + 1] - idx->fuzzy_off[d] - 1;
        size_t hit = 0;
        for (size_t j = 0; j < nt; j++)
            hit += memmem(f, fl, tri[j], 3) != NULL;
        if (!hit)
            continue;
        /* Dice over trigrams: shared ones against both sides' counts, so a
         * long name sharing three trigrams ranks below a short one. */
        float sc = 2.0f * (float)hit / (float)(nt + (fl > 2 ? fl - 2 : 1));
        struct search_hit h = { (uint32_t)d, sc };
        size_t at = k < max ? k++ : max;
        while (at > 0 && out[at - 1].score < sc) {
            if (at < max)
                out[at] = out[at - 1];
            at--;
        }
        if (at < max)
            out[at] = h;
    }
    if (k) {
        *similar = 1;
        return k;
    }
    for (; k < max && k < idx->ndocs; k++) {
        out[k].doc = (uint32_t)k;
        out[k].score = 0.0f;
    }
    return k;
}
