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
 * two characters, not CJK) at PREFIX_WEIGHT. Scores accumulate one window
 * of 4,096 documents at a time (rank), the best max hits are kept behind a
 * threshold as they come (struct sel), and documents whose
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

/*
 * The hits, chosen as they are offered: in ascending doc order, then the
 * exactly named documents that matched no term. The exactly named, which
 * come first whatever their score, go to ex (nexact at most); the others
 * to buf in doc order, while their key is below thr. Asked for every hit
 * (max >= ndocs), buf is out and thr never moves. Otherwise buf holds
 * twice max: when it fills, select_best keeps its best max, in order, and
 * thr becomes the worst of those, so that later hits are turned away by
 * one compare and the work is linear in the hits (a heap paid a dozen
 * compares for every hit it took, and a heap sort at the end).
 */
struct sel {
    struct search_hit *out;
    size_t max, total;
    struct search_hit *buf;
    size_t n, cap;
    uint64_t thr;
    uint64_t *keys;             /* select_best's: the keys of buf */
    struct search_hit *ex;
    size_t nex;
};

/* A score as a 32-bit key whose unsigned order is the scores' descending
 * order (IEEE 754 bits made monotonic, then inverted). */
static uint32_t score_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u ^= (u >> 31) ? 0xFFFFFFFFu : 0x80000000u;
    return ~u;
}

/* A hit as one integer, smaller for a better hit: score descending, then
 * doc ascending. Distinct for distinct docs; below UINT64_MAX for every
 * score above 0 (the only scores a matched document has). */
static uint64_t hit_key(struct search_hit h)
{
    return (uint64_t)score_key(h.score) << 32 | h.doc;
}

/* The k-th smallest (from 0) of key[0..n): a radix select, a byte a pass
 * from the highest bit where the keys differ (scores near one another
 * share their top bits), each pass over the keys that share the bits
 * chosen so far. At most 8 passes and one more, whatever the scores. */
static uint64_t kth_key(const uint64_t *key, size_t n, size_t k)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = key[i] < lo ? key[i] : lo;
        hi = key[i] > hi ? key[i] : hi;
    }
    if (lo == hi)
        return lo;
    int top = 63 - __builtin_clzll(lo ^ hi);
    uint64_t mask = top == 63 ? 0 : ~((UINT64_C(2) << top) - 1);
    uint64_t prefix = lo & mask;
    for (;;) {
        int shift = top >= 7 ? top - 7 : 0;
        uint64_t digit = (UINT64_C(1) << (top - shift + 1)) - 1;
        size_t count[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            if ((key[i] & mask) == prefix)
                count[(key[i] >> shift) & digit]++;
        unsigned d = 0;
        while (k >= count[d])
            k -= count[d++];
        prefix |= (uint64_t)d << shift;
        mask |= digit << shift;
        if (count[d] == 1)      /* one key left with this prefix: it */
            for (size_t i = 0; i < n; i++)
                if ((key[i] & mask) == prefix)
                    return key[i];
        if (!shift)
            return prefix;
        top = shift - 1;
    }
}

/* Keeps the best max of buf (n > max), in their order; thr becomes the
 * worst of them, which a better hit must beat. */
static void select_best(struct sel *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->keys[i] = hit_key(s->buf[i]);
    uint64_t worst = kth_key(s->keys, s->n, s->max - 1);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->keys[i] <= worst)
            s->buf[m++] = s->buf[i];
    s->n = m;
    s->thr = worst;
}

static void offer_plain(struct sel *s, uint32_t doc, float score)
{
    struct search_hit h = { doc, score };
    s->total++;
    if (hit_key(h) >= s->thr)
        return;
    s->buf[s->n++] = h;
    if (s->n == s->cap && s->n > s->max)
        select_best(s);
}

static void offer_exact(struct sel *s, uint32_t doc, float score)
{
    struct search_hit h = { doc, score };
    s->total++;
    s->ex[s->nex++] = h;
}

/*
 * a[0..k) by score descending, then doc ascending, when equal scores are in
 * ascending doc order already: a stable LSD radix sort by score key, four
 * linear passes (a pass whose byte is the same for all is skipped), tmp
 * holding k hits. Returns the array holding the result (a or tmp).
 */
static struct search_hit *sort_by_score(struct search_hit *a, struct search_hit *tmp, size_t k)
{
    for (unsigned shift = 0; k > 1 && shift < 32; shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < k; i++)
            count[((score_key(a[i].score) >> shift) & 0xFF) + 1]++;
        if (count[((score_key(a[0].score) >> shift) & 0xFF) + 1] == k)
            continue;                   /* one digit value: the order stands */
        for (size_t i = 0; i < 256; i++)
            count[i + 1] += count[i];
        for (size_t i = 0; i < k; i++)
            tmp[count[(score_key(a[i].score) >> shift) & 0xFF]++] = a[i];
        struct search_hit *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/*
 * Writes the hits to out best first: the exactly named (best first among
 * themselves), lifted above every other hit, then the others, max in all.
 * The best of the others is the best of all of them, since it is kept.
 */
static size_t finish(struct sel *s)
{
    if (s->n > s->max)
        select_best(s);
    size_t n = s->n, nex = s->nex;
    struct search_hit *tmp = xmalloc(((n > nex ? n : nex) + 1) * sizeof *tmp);
    struct search_hit *plain = sort_by_score(s->buf, tmp, n);
    float best_plain = n ? plain[0].score : 0.0f;
    size_t e = nex < s->max ? nex : s->max;
    size_t keep = n < s->max - e ? n : s->max - e;
    if (keep)
        memmove(s->out + e, plain, keep * sizeof *s->out);
    if (e) {
        /* ex in doc order but for the ones that matched no term, offered
         * last at 0: equal scores are in doc order, as sort_by_score needs */
        struct search_hit *x = sort_by_score(s->ex, tmp, nex);
        memcpy(s->out, x, e * sizeof *s->out);
        for (size_t i = 0; i < e; i++)
            s->out[i].score += best_plain + 1.0f;
    }
    free(tmp);
    return e + keep;
}

static float weighted(float score, float w)
{
    return score * w;
}

/* Documents one window of the ranking covers: their scores (16 KB) and
 * the bitmap of those touched stay in the first-level cache. */
#define WIN_DOCS 4096u

/* One term's postings still to visit, and its weight. */
struct cursor {
    const struct posting *at, *end;
    float w;
};

static void add_cursor(const struct search_index *idx, struct cursor *c, size_t *n,
                       size_t r, float w)
{
    size_t a = idx->post_start[r], b = idx->post_start[r + 1];
    if (a == b)
        return;
    c[*n].at = idx->post + a;
    c[*n].end = idx->post + b;
    c[(*n)++].w = w;
}

/*
 * Sums every posting the plan visits, one window of documents at a time:
 * within a window the terms in a fixed order (query terms, then prefix
 * terms), so a document's sum adds the same floats in the same order
 * whatever the windows; then the window's touched documents are offered in
 * ascending order (exactly named or not, told by a walk of the plan's
 * exact list beside them), their scores cleared for the next window. The
 * work is the postings, the hits and a few words per window and term:
 * nothing in proportion to the library (no array of n scores to clear and
 * scan), and no allocation per hit.
 */
static void rank(const struct search_index *idx, const struct plan *p, struct sel *s)
{
    size_t nc = 0, nx = p->nexact, xe = 0, nmissed = 0;
    struct cursor *cur = xmalloc((p->nr + (p->phi - p->plo) + 1) * sizeof *cur);
    for (size_t i = 0; i < p->nr; i++)
        add_cursor(idx, cur, &nc, p->rank[i], p->weight[i]);
    for (size_t r = p->plo; r < p->phi; r++)
        if (!is_query_rank(p, r))
            add_cursor(idx, cur, &nc, r, PREFIX_WEIGHT);
    float *acc = xcalloc(idx->ndocs < WIN_DOCS ? idx->ndocs : WIN_DOCS, sizeof *acc);
    uint64_t bits[WIN_DOCS / 64] = { 0 };
    /* exactly named documents that matched no term: offered last, at 0 */
    uint32_t *missed = nx ? xmalloc(nx * sizeof *missed) : NULL;

    for (size_t base = 0; base < idx->ndocs && nc; base += WIN_DOCS) {
        size_t lim = base + WIN_DOCS;
        bool any = false;
        for (size_t l = 0; l < nc; l++) {
            const struct posting *q = cur[l].at, *end = cur[l].end;
            float w = cur[l].w;
            for (; q < end && q->doc < lim; q++) {
                size_t d = q->doc - base;
                acc[d] += weighted(q->score, w);
                bits[d >> 6] |= (uint64_t)1 << (d & 63);
            }
            any |= q != cur[l].at;
            cur[l].at = q;
        }
        for (size_t wi = 0; any && wi < WIN_DOCS / 64; wi++) {
            uint64_t b = bits[wi];
            if (!b)
                continue;
            bits[wi] = 0;
            do {
                size_t d = wi * 64 + (size_t)__builtin_ctzll(b);
                b &= b - 1;
                float v = acc[d];
                acc[d] = 0.0f;
                uint32_t doc = (uint32_t)(base + d);
                bool ex = false;
                if (xe < nx) {
                    while (xe < nx && p->exact[xe].doc < doc)
                        missed[nmissed++] = p->exact[xe++].doc;
                    if (xe < nx && p->exact[xe].doc == doc) {
                        ex = true;
                        xe++;
                    }
                }
                if (!(v > 0)) {
                    if (ex)
                        missed[nmissed++] = doc;
                } else if (ex) {
                    offer_exact(s, doc, v);
                } else {
                    offer_plain(s, doc, v);
                }
            } while (b);
        }
    }
    while (xe < nx)
        missed[nmissed++] = p->exact[xe++].doc;
    for (size_t i = 0; i < nmissed; i++)
        offer_exact(s, missed[i], 0.0f);
    free(missed);
    free(acc);
    free(cur);
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

    memset(&s, 0, sizeof s);
    s.out = out;
    s.max = out ? max : 0;
    if (s.max >= idx->ndocs) {
        /* every hit fits: collected in out, sorted once */
        s.buf = out;
        s.cap = s.max;
        s.thr = UINT64_MAX;
    } else if (s.max) {
        s.cap = 2 * s.max < idx->ndocs ? 2 * s.max : idx->ndocs;
        s.buf = xmalloc(s.cap * sizeof *s.buf);
        s.keys = xmalloc(s.cap * sizeof *s.keys);
        s.thr = UINT64_MAX;
    }
    if (p.nexact)
        s.ex = xmalloc(p.nexact * sizeof *s.ex);
    rank(idx, &p, &s);
    finish(&s);
    if (s.buf != out)
        free(s.buf);
    free(s.keys);
    free(s.ex);
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
