/*
 * search_build.c - building the index: one document's terms
 * (search_terms_new), the dictionary and postings merged from them with
 * their final BM25F scores, body and reference terms carried from the
 * previous index, the exact-name and closest-card tables; search_free.
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

/* ---- building ---------------------------------------------------------- */

/* One term's counts in one document while building: 16 bytes, the build's
 * largest array (one a posting: ~100 MB at 100,000 skills as 28 bytes). The
 * document is where the posting lies (struct builder's doc ranges); a count
 * saturates at UINT16_MAX, far above what it can reach in the library's
 * merge (at most three lists of counts saturated at UINT8_MAX), and a
 * document's own list saturates its counts at UINT8_MAX anyway. */
struct tmp_post {
    uint32_t tid;
    uint16_t tf[NFIELDS];
};

static void tf_add(uint16_t *tf, unsigned v)
{
    unsigned sum = *tf + v;
    *tf = (uint16_t)(sum > UINT16_MAX ? UINT16_MAX : sum);
}

struct bterm {
    size_t off;                 /* in pool */
    uint32_t len;
    uint32_t last_doc;          /* last doc holding the term, + 1 */
    size_t slot;                /* its tmp_post in that doc */
};

struct hslot {
    uint32_t hash;
    uint32_t tid1;              /* term id + 1, 0 when empty */
};

struct builder {
    char *pool;                 /* term strings by term id, NUL-terminated */
    size_t pool_len, pool_cap;
    struct bterm *term;
    size_t nterms, tcap;
    struct hslot *table;        /* open addressing */
    size_t tmask;
    struct tmp_post *tp;
    size_t ntp, tpcap;
    uint32_t (*len)[NFIELDS];   /* per-doc field lengths in tokens */
    uint32_t doc;
    int field;
};

static void rehash(struct builder *b)
{
    size_t cap = (b->tmask + 1) * 2;
    struct hslot *old = b->table;
    size_t oldcap = b->tmask + 1;

    b->table = xcalloc(cap, sizeof *b->table);
    b->tmask = cap - 1;
    for (size_t j = 0; j < oldcap; j++) {
        if (!old[j].tid1)
            continue;
        size_t i = old[j].hash & b->tmask;
        while (b->table[i].tid1)
            i = (i + 1) & b->tmask;
        b->table[i] = old[j];
    }
    free(old);
}

static uint32_t intern(struct builder *b, const char *tok, size_t len)
{
    uint32_t h = hash_fnv1a32(tok, len);
    size_t i = h & b->tmask;

    for (; b->table[i].tid1; i = (i + 1) & b->tmask) {
        if (b->table[i].hash != h)
            continue;
        uint32_t t = b->table[i].tid1 - 1;
        if (b->term[t].len == len && memcmp(b->pool + b->term[t].off, tok, len) == 0)
            return t;
    }
    if (b->nterms >= UINT32_MAX - 1)
        abort();
    uint32_t t = (uint32_t)b->nterms;
    search_grow((void **)&b->term, &b->tcap, b->nterms + 1, sizeof *b->term);
    search_grow((void **)&b->pool, &b->pool_cap, b->pool_len + len + 1, 1);
    memcpy(b->pool + b->pool_len, tok, len);
    b->pool[b->pool_len + len] = '\0';
    b->term[t].off = b->pool_len;
    b->term[t].len = (uint32_t)len;
    b->term[t].last_doc = 0;
    b->pool_len += len + 1;
    b->table[i].hash = h;
    b->table[i].tid1 = t + 1;
    b->nterms++;
    if (b->nterms * 2 > b->tmask + 1)
        rehash(b);
    return t;
}

/* Term tid's posting for document d: opened (counts zero) on the term's
 * first occurrence in d; b->tp has room for it (the callers grow it). */
static struct bterm *post_slot(struct builder *b, uint32_t tid, uint32_t d)
{
    struct bterm *bt = &b->term[tid];
    if (bt->last_doc != d + 1) {
        struct tmp_post *tp = &b->tp[b->ntp];
        tp->tid = tid;
        memset(tp->tf, 0, sizeof tp->tf);
        bt->last_doc = d + 1;
        bt->slot = b->ntp++;
    }
    return bt;
}


static void build_emit(void *ctx, const char *tok, size_t len, enum tok_kind kind)
{
    struct builder *b = ctx;
    uint32_t t = intern(b, tok, len);
    (void)kind;

    search_grow((void **)&b->tp, &b->tpcap, b->ntp + 1, sizeof *b->tp);
    struct bterm *bt = post_slot(b, t, b->doc);
    tf_add(&b->tp[bt->slot].tf[b->field], 1);
    if (b->len[b->doc][b->field] < UINT32_MAX)
        b->len[b->doc][b->field]++;
}

static void index_field(struct builder *b, int field, const char *text)
{
    if (!text)
        return;
    b->field = field;
    search_tokenize(text, strlen(text), field == F_NAME, build_emit, b);
}

/* Markdown text: every word, with the words of ATX headings counted
 * HEADING_REPEAT times (a heading names what its section is about). */
static void index_markdown(struct builder *b, int field, const char *text, size_t n)
{
    if (!text)
        return;
    b->field = field;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(text + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - text) : n;
        size_t j = i;
        while (j < end && j - i < 3 && text[j] == ' ')
            j++;
        int reps = (j < end && text[j] == '#') ? HEADING_REPEAT : 1;
        for (int r = 0; r < reps; r++)
            search_tokenize(text + i, end - i, false, build_emit, b);
        i = end + 1;
    }
}

struct term_ref {
    const char *s;
    uint32_t tid;
};

static int cmp_term_ref(const void *a, const void *b)
{
    return strcmp(((const struct term_ref *)a)->s, ((const struct term_ref *)b)->s);
}

const char *search_name_trim(const char *s, size_t *len)
{
    size_t n = strlen(s);
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'
                 || s[n - 1] == '\r'))
        n--;
    *len = n;
    return s;
}

/* Lowercase ASCII letters and digits; other ASCII is a word break; other
 * bytes (UTF-8) are kept. */
char search_fuzzy_char(char c)
{
    unsigned char u = (unsigned char)c;
    if (u >= 'A' && u <= 'Z')
        return (char)(u + 32);
    if (u < 0x80 && !((u >= 'a' && u <= 'z') || (u >= '0' && u <= '9')))
        return ' ';
    return c;
}

static int cmp_name_ent(const void *a, const void *b)
{
    const struct name_ent *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    if (c)
        return c;
    return (x->doc > y->doc) - (x->doc < y->doc);
}

/* ---- one document's terms ----------------------------------------------- */

/*
 * A document tokenized on its own: its distinct terms in order of first
 * appearance, each with its per-field counts, and its field lengths. Built
 * where the document is (a skill's entry, on the threads that parse
 * frontmatter) and kept with it, so a rebuild of the index only merges
 * dictionaries instead of tokenizing the whole library again.
 */
struct search_terms {
    uint32_t n;                 /* distinct terms */
    uint32_t len[NFIELDS];      /* field lengths in tokens */
    uint32_t placed;            /* in the caller's memory (search_terms_place) */
    /* then, in the same block: uint8_t tf[n][NFIELDS] (counts saturate at
     * 255, far past where BM25 saturates: at k1 = 1.2 the saturated tf of
     * 255 is within 0.5 % of the limit; one byte, because a library's body
     * terms run to hundreds of thousands), uint8_t tlen[n] (a term is at
     * most MAXTOK bytes), and the n terms back to back, NUL-terminated.
     * One allocation per document: kept for the life of the entry. */
    unsigned char data[];
};

/* Offsets in data[] of a block of n terms. */
#define TERMS_TLEN_OFF(n) ((size_t)(n) * NFIELDS)
#define TERMS_POOL_OFF(n) (TERMS_TLEN_OFF(n) + (size_t)(n))

static uint8_t terms_tf(const struct search_terms *t, size_t i, int f)
{
    return t->data[i * NFIELDS + (size_t)f];
}

static size_t terms_tlen(const struct search_terms *t, size_t i)
{
    return t->data[TERMS_TLEN_OFF(t->n) + i];
}

static void builder_init(struct builder *b, size_t cap, size_t tp_hint)
{
    memset(b, 0, sizeof *b);
    b->tmask = cap - 1;
    b->table = xcalloc(cap, sizeof *b->table);
    if (tp_hint)
        search_grow((void **)&b->tp, &b->tpcap, tp_hint, sizeof *b->tp);
}

struct search_terms *search_terms_new(const struct search_doc *doc)
{
    struct builder b;
    uint32_t len[1][NFIELDS] = {{0}};
    /* Sized for a typical skill card (a few dozen terms), so that most
     * documents never reallocate. */
    builder_init(&b, 128, 64);
    search_grow((void **)&b.term, &b.tcap, 64, sizeof *b.term);
    search_grow((void **)&b.pool, &b.pool_cap, 512, 1);
    b.len = len;
    b.doc = 0;
    index_field(&b, F_NAME, doc->name);
    if (doc->tags)
        for (size_t t = 0; t < doc->ntags; t++)
            index_field(&b, F_TAGS, doc->tags[t]);
    index_field(&b, F_DESC, doc->description);
    index_markdown(&b, F_BODY, doc->body, doc->body ? doc->body_len : 0);
    index_markdown(&b, F_REFS, doc->refs, doc->refs ? doc->refs_len : 0);

    /* Term ids are given in order of first appearance, and each id gets its
     * one tmp posting at that moment: tp[i].tid == i. */
    size_t n = b.nterms;
    struct search_terms *t =
        xmalloc(sizeof *t + n * (NFIELDS + 1) + b.pool_len);
    t->n = (uint32_t)n;
    t->placed = 0;
    memcpy(t->len, len[0], sizeof t->len);
    for (size_t i = 0; i < n; i++) {
        for (int f = 0; f < NFIELDS; f++) {
            t->data[i * NFIELDS + (size_t)f] =
                (uint8_t)(b.tp[i].tf[f] > UINT8_MAX ? UINT8_MAX : b.tp[i].tf[f]);
        }
        t->data[TERMS_TLEN_OFF(n) + i] = (unsigned char)b.term[i].len;
    }
    if (b.pool_len)
        memcpy(t->data + TERMS_POOL_OFF(n), b.pool, b.pool_len);
    free(b.pool);
    free(b.term);
    free(b.table);
    free(b.tp);
    return t;
}

void search_terms_free(struct search_terms *t)
{
    if (t && !t->placed)
        free(t);
}

struct search_terms *search_terms_place(const struct search_terms *t, void *dst)
{
    struct search_terms *c = dst;
    memcpy(c, t, search_terms_bytes(t));
    c->placed = 1;
    return c;
}

size_t search_terms_bytes(const struct search_terms *t)
{
    size_t pool = 0;
    for (uint32_t i = 0; i < t->n; i++)
        pool += terms_tlen(t, i) + 1;
    return sizeof *t + t->n * (NFIELDS + 1) + pool;
}

struct search_index *search_new(const struct search_doc *docs, size_t n)
{
    if (!docs)
        n = 0;
    struct search_terms **terms = xcalloc(n, sizeof *terms);
    for (size_t d = 0; d < n; d++)
        terms[d] = search_terms_new(&docs[d]);
    struct search_index *idx =
        search_new_terms(docs, (const struct search_terms *const *)terms, NULL, n);
    for (size_t d = 0; d < n; d++)
        search_terms_free(terms[d]);
    free(terms);
    return idx;
}

/* Merges one document's terms into the library's dictionary. A term already
 * given for this document (by its other set) adds to the same posting. */
static void merge_terms(struct builder *b, const struct search_terms *t, uint32_t d)
{
    const char *p = (const char *)t->data + TERMS_POOL_OFF(t->n);
    for (int f = 0; f < NFIELDS; f++)
        b->len[d][f] += t->len[f];
    search_grow((void **)&b->tp, &b->tpcap, b->ntp + t->n, sizeof *b->tp);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t tid = intern(b, p, terms_tlen(t, i));
        struct bterm *bt = post_slot(b, tid, d);
        for (int f = 0; f < NFIELDS; f++)
            tf_add(&b->tp[bt->slot].tf[f], terms_tf(t, i, f));
        p += terms_tlen(t, i) + 1;
    }
}

static double saturate(double wtf)
{
    return wtf * (BM25_K1 + 1) / (wtf + BM25_K1);
}


/* The terms of the previous index's documents that are to be carried,
 * grouped by previous document: from[o] .. from[o + 1]. A posting gives
 * a body entry (its body and reference counts) when the document's body
 * terms are carried, and a card entry (name, tags, description) when its
 * card terms are. */
enum { CARRY_BODY = 1, CARRY_CARD = 2 };

struct carried {
    uint32_t rank;              /* the term's rank in the previous index */
    uint8_t kind;               /* CARRY_BODY or CARRY_CARD */
    uint8_t tf[3];              /* body, references; or name, tags, description */
};

struct carry {
    size_t *from;               /* [prev->ndocs + 1], NULL when nothing is carried */
    struct carried *c;
    uint8_t *wanted;            /* [prev->ndocs]: CARRY_BODY | CARRY_CARD */
};

static int bit_at(const uint8_t *bits, size_t j)
{
    return bits[j >> 3] >> (j & 7) & 1;
}

/*
 * A posting's counts (n of them: a card's name, tags and description, or
 * body and references) in one byte when they fit its fields (2, 2 and 4
 * bits, or 4 and 4), else COUNTS_WIDE and the n bytes as they are. Nearly
 * every posting's counts are small: at 100,000 skills the card counts were
 * three bytes a posting, 103 B a skill. Returns the bytes written.
 */
#define COUNTS_WIDE 0xFFu

static unsigned counts_byte(const uint8_t *c, int n)
{
    if (n == 3 && c[0] < 4 && c[1] < 4 && c[2] < 16)
        return (unsigned)c[0] << 6 | (unsigned)c[1] << 4 | c[2];
    if (n == 2 && c[0] < 16 && c[1] < 16)
        return (unsigned)c[0] << 4 | c[1];
    return COUNTS_WIDE;
}

/* The bytes counts_pack writes for c. */
static size_t counts_len(const uint8_t *c, int n)
{
    /* the byte of the largest small counts is the escape: they go wide */
    return counts_byte(c, n) == COUNTS_WIDE ? 1 + (size_t)n : 1;
}

static size_t counts_pack(uint8_t *out, const uint8_t *c, int n)
{
    unsigned v = counts_byte(c, n);
    out[0] = (uint8_t)v;
    if (v != COUNTS_WIDE)
        return 1;
    memcpy(out + 1, c, (size_t)n);
    return 1 + (size_t)n;
}

/* The n counts at in into c; returns where the next posting's start. */
static const uint8_t *counts_unpack(const uint8_t *in, uint8_t *c, int n)
{
    if (in[0] == COUNTS_WIDE) {
        memcpy(c, in + 1, (size_t)n);
        return in + 1 + n;
    }
    if (n == 3) {
        c[0] = in[0] >> 6;
        c[1] = in[0] >> 4 & 3;
        c[2] = in[0] & 15;
    } else {
        c[0] = in[0] >> 4;
        c[1] = in[0] & 15;
    }
    return in + 1;
}

/* Counts each previous document's carried entries into from[o + 1] (fill
 * NULL), or writes them at fill[o] (xtf and ctf are read in posting order). */
static size_t carry_walk(struct carry *cy, const struct search_index *prev, size_t *fill)
{
    size_t total = 0;
    const uint8_t *cp = prev->ctf, *xp = prev->xtf;
    for (size_t r = 0; r < prev->nterms; r++) {
        for (size_t j = prev->post_start[r]; j < prev->post_start[r + 1]; j++) {
            uint32_t o = prev->post[j].doc;
            int card = bit_at(prev->card_bit, j);
            uint8_t ctv[3], xtv[2];
            const uint8_t *ct = NULL, *xt = NULL;
            if (card) {
                cp = counts_unpack(cp, ctv, 3);
                ct = ctv;
            }
            if (bit_at(prev->body_bit, j)) {
                xp = counts_unpack(xp, xtv, 2);
                xt = xtv;
            }
            if ((cy->wanted[o] & CARRY_BODY) && xt) {
                if (fill) {
                    struct carried *e = &cy->c[fill[o]++];
                    e->rank = (uint32_t)r;
                    e->kind = CARRY_BODY;
                    e->tf[0] = xt[0];
                    e->tf[1] = xt[1];
                    e->tf[2] = 0;
                } else {
                    cy->from[o + 1]++;
                }
                total++;
            }
            if ((cy->wanted[o] & CARRY_CARD) && card) {
                if (fill) {
                    struct carried *e = &cy->c[fill[o]++];
                    e->rank = (uint32_t)r;
                    e->kind = CARRY_CARD;
                    memcpy(e->tf, ct, 3);
                } else {
                    cy->from[o + 1]++;
                }
                total++;
            }
        }
    }
    return total;
}

static void carry_init(struct carry *cy, const struct search_index *prev,
                       const uint32_t *prev_doc, const struct search_terms *const *terms,
                       const struct search_terms *const *xterms, size_t n)
{
    memset(cy, 0, sizeof *cy);
    if (!prev || !prev_doc)
        return;
    size_t pn = prev->ndocs, want = 0;
    cy->wanted = xcalloc(pn ? pn : 1, 1);
    for (size_t d = 0; d < n; d++) {
        uint32_t o = prev_doc[d];
        if (o == SEARCH_NO_DOC || o >= pn)
            continue;
        if (prev->has_body[o] && !(xterms && xterms[d]))
            cy->wanted[o] |= CARRY_BODY;
        if (!terms[d])
            cy->wanted[o] |= CARRY_CARD;
        want += cy->wanted[o] != 0;
    }
    if (!want) {
        free(cy->wanted);
        cy->wanted = NULL;
        return;
    }
    cy->from = xcalloc(pn + 1, sizeof *cy->from);
    carry_walk(cy, prev, NULL);
    for (size_t o = 0; o < pn; o++)
        cy->from[o + 1] += cy->from[o];
    cy->c = xmalloc((cy->from[pn] ? cy->from[pn] : 1) * sizeof *cy->c);
    size_t *fill = xmalloc((pn ? pn : 1) * sizeof *fill);
    memcpy(fill, cy->from, pn * sizeof *fill);
    carry_walk(cy, prev, fill);
    free(fill);
}

/* Doc d's carried terms, as the previous index held them for its document
 * o: the same counts merge_terms would add from the lists. */
static void carry_doc(struct builder *b, const struct carry *cy,
                      const struct search_index *prev, uint32_t o, uint32_t d)
{
    if (cy->wanted[o] & CARRY_BODY) {
        b->len[d][F_BODY] += prev->flen[o][F_BODY];
        b->len[d][F_REFS] += prev->flen[o][F_REFS];
    }
    if (cy->wanted[o] & CARRY_CARD)
        for (int f = F_NAME; f <= F_DESC; f++)
            b->len[d][f] += prev->flen[o][f];
    search_grow((void **)&b->tp, &b->tpcap, b->ntp + (cy->from[o + 1] - cy->from[o]), sizeof *b->tp);
    for (size_t i = cy->from[o]; i < cy->from[o + 1]; i++) {
        const struct carried *e = &cy->c[i];
        const char *s = prev->terms + prev->term_off[e->rank];
        uint32_t tid = intern(b, s, strlen(s));
        struct bterm *bt = post_slot(b, tid, d);
        if (e->kind == CARRY_BODY) {
            tf_add(&b->tp[bt->slot].tf[F_BODY], e->tf[0]);
            tf_add(&b->tp[bt->slot].tf[F_REFS], e->tf[1]);
        } else {
            for (int f = F_NAME; f <= F_DESC; f++)
                tf_add(&b->tp[bt->slot].tf[f], e->tf[f - F_NAME]);
        }
    }
}

static void carry_free(struct carry *cy)
{
    free(cy->from);
    free(cy->c);
    free(cy->wanted);
}

struct search_index *search_new_terms(const struct search_doc *docs,
                                      const struct search_terms *const *terms,
                                      const struct search_terms *const *xterms, size_t n)
{
    return search_new_carry(docs, terms, xterms, n, NULL, NULL);
}

int search_has_body(const struct search_index *idx, size_t d)
{
    return idx && d < idx->ndocs && idx->has_body[d];
}

struct search_index *search_new_carry(const struct search_doc *docs,
                                      const struct search_terms *const *terms,
                                      const struct search_terms *const *xterms, size_t n,
                                      const struct search_index *prev,
                                      const uint32_t *prev_doc)
{
    struct search_index *idx = xcalloc(1, sizeof *idx);
    struct builder b;

    if (!docs || !terms)
        n = 0;
    if (n > UINT32_MAX - 1)
        abort();
    size_t cap = 4096;
    while (cap < n * 4 && cap < ((size_t)1 << 24))
        cap *= 2;
    struct carry cy;
    carry_init(&cy, prev, prev_doc, terms, xterms, n);
    /* Every term of every list and carried document is at most one tmp
     * posting: sized once, the largest array of the build is not copied
     * through a chain of reallocations that leaves holes in the heap. */
    size_t tp_hint = cy.from ? cy.from[prev->ndocs] : 0;
    for (size_t d = 0; d < n; d++)
        tp_hint += (terms[d] ? terms[d]->n : 0) + (xterms && xterms[d] ? xterms[d]->n : 0);
    builder_init(&b, cap, tp_hint ? tp_hint : 1);
    b.len = xcalloc(n, sizeof *b.len);

    idx->has_body = xcalloc(n ? n : 1, 1);
    /* document d's tmp postings: [dstart[d], dstart[d + 1]) */
    size_t *dstart = xmalloc((n + 1) * sizeof *dstart);
    /* Merge each document's dictionaries into the library's. */
    for (size_t d = 0; d < n; d++) {
        dstart[d] = b.ntp;
        uint32_t o = cy.from && prev_doc[d] < prev->ndocs ? prev_doc[d] : SEARCH_NO_DOC;
        if (terms[d])
            merge_terms(&b, terms[d], (uint32_t)d);
        if (xterms && xterms[d]) {
            merge_terms(&b, xterms[d], (uint32_t)d);
            idx->has_body[d] = 1;
        } else if (o != SEARCH_NO_DOC && (cy.wanted[o] & CARRY_BODY)) {
            idx->has_body[d] = 1;
        }
        if (o != SEARCH_NO_DOC && cy.wanted[o])
            carry_doc(&b, &cy, prev, o, (uint32_t)d);
    }
    dstart[n] = b.ntp;
    carry_free(&cy);
    /* The sorted dictionary: rank[tid] is the term's position. */
    size_t T = b.nterms;
    struct term_ref *order = xmalloc(T * sizeof *order);
    for (size_t t = 0; t < T; t++) {
        order[t].s = b.pool + b.term[t].off;
        order[t].tid = (uint32_t)t;
    }
    qsort(order, T, sizeof *order, cmp_term_ref);
    uint32_t *rank = xmalloc(T * sizeof *rank);
    idx->term_off = xmalloc(T * sizeof *idx->term_off);
    for (size_t r = 0; r < T; r++) {
        rank[order[r].tid] = (uint32_t)r;
        idx->term_off[r] = (uint32_t)b.term[order[r].tid].off;
    }
    free(order);

    /* Postings grouped by rank; tmp postings are in doc order already. */
    idx->post_start = xcalloc(T + 1, sizeof *idx->post_start);
    for (size_t i = 0; i < b.ntp; i++)
        idx->post_start[rank[b.tp[i].tid] + 1]++;
    for (size_t r = 0; r < T; r++)
        idx->post_start[r + 1] += idx->post_start[r];

    double avg[NFIELDS] = { 0 };
    for (size_t d = 0; d < n; d++)
        for (int f = 0; f < NFIELDS; f++)
            avg[f] += b.len[d][f];
    for (int f = 0; f < NFIELDS; f++)
        avg[f] = n ? avg[f] / (double)n : 0;

    size_t *fill = xmalloc((T ? T : 1) * sizeof *fill);
    double *idf = xmalloc((T ? T : 1) * sizeof *idf);
    for (size_t r = 0; r < T; r++) {
        double df = (double)(idx->post_start[r + 1] - idx->post_start[r]);
        fill[r] = idx->post_start[r];
        idf[r] = log(1.0 + ((double)n - df + 0.5) / (df + 0.5));
    }
    idx->post = xmalloc((b.ntp ? b.ntp : 1) * sizeof *idx->post);
    uint8_t (*xtf)[2] = xmalloc((b.ntp ? b.ntp : 1) * sizeof *xtf);
    idx->body_bit = xcalloc((b.ntp + 7) / 8 + 1, 1);
    idx->card_bit = xcalloc((b.ntp + 7) / 8 + 1, 1);
    uint8_t (*ctf)[3] = xmalloc((b.ntp ? b.ntp : 1) * sizeof *ctf);
    size_t nc = 0, nb = 0;      /* the bytes of the packed counts */
    idx->flen = xmalloc((n ? n : 1) * sizeof *idx->flen);
    if (n)
        memcpy(idx->flen, b.len, n * sizeof *idx->flen);
    for (size_t i = 0, d = 0; i < b.ntp; i++) {
        while (i >= dstart[d + 1])
            d++;
        const struct tmp_post *p = &b.tp[i];
        uint32_t r = rank[p->tid];
        double wtf[NFIELDS] = { 0 };
        for (int f = 0; f < NFIELDS; f++) {
            if (!p->tf[f] || avg[f] <= 0)
                continue;
            double norm = 1.0 - BM25_B + BM25_B * b.len[d][f] / avg[f];
            wtf[f] = field_weight[f] * p->tf[f] / norm;
        }
        double card = wtf[F_NAME] + wtf[F_TAGS] + wtf[F_DESC];
        double sc = saturate(card) + BODY_SCALE * saturate(wtf[F_BODY])
                  + REFS_SCALE * saturate(wtf[F_REFS]);
        idx->post[fill[r]].doc = (uint32_t)d;
        idx->post[fill[r]].score = (float)(idf[r] * sc);
        /* Saturated as in struct search_terms, so that a carried count is
         * the count a list would have given. */
        if (p->tf[F_BODY] || p->tf[F_REFS]) {
            idx->body_bit[fill[r] >> 3] |= (uint8_t)(1u << (fill[r] & 7));
            xtf[fill[r]][0] = (uint8_t)(p->tf[F_BODY] > UINT8_MAX ? UINT8_MAX : p->tf[F_BODY]);
            xtf[fill[r]][1] = (uint8_t)(p->tf[F_REFS] > UINT8_MAX ? UINT8_MAX : p->tf[F_REFS]);
            nb += counts_len(xtf[fill[r]], 2);
        }
        if (p->tf[F_NAME] || p->tf[F_TAGS] || p->tf[F_DESC]) {
            idx->card_bit[fill[r] >> 3] |= (uint8_t)(1u << (fill[r] & 7));
            for (int f = F_NAME; f <= F_DESC; f++)
                ctf[fill[r]][f - F_NAME] = (uint8_t)(p->tf[f] > UINT8_MAX ? UINT8_MAX : p->tf[f]);
            nc += counts_len(ctf[fill[r]], 3);
        }
        fill[r]++;
    }
    /* The counts kept only for the postings that have them, packed, in
     * posting order (sized above). */
    idx->ctf = xmalloc(nc ? nc : 1);
    idx->xtf = xmalloc(nb ? nb : 1);
    nc = nb = 0;
    for (size_t j = 0; j < b.ntp; j++) {
        if (bit_at(idx->card_bit, j))
            nc += counts_pack(idx->ctf + nc, ctf[j], 3);
        if (bit_at(idx->body_bit, j))
            nb += counts_pack(idx->xtf + nb, xtf[j], 2);
    }
    free(ctf);
    free(xtf);
    free(fill);
    free(idf);
    free(rank);

    idx->ndocs = n;
    idx->nterms = T;
    idx->terms = xrealloc(b.pool, b.pool_len);
    free(b.term);
    free(b.table);
    free(b.tp);
    free(b.len);
    free(dstart);

    /* Names for the exact-name bonus. */
    size_t total = 0;
    for (size_t d = 0; d < n; d++) {
        size_t len = 0;
        if (docs[d].name)
            search_name_trim(docs[d].name, &len);
        total += len + 1;
    }
    idx->names = xmalloc(total);
    idx->byname = xmalloc(n * sizeof *idx->byname);
    size_t off = 0;
    for (size_t d = 0; d < n; d++) {
        size_t len = 0;
        const char *s = docs[d].name ? search_name_trim(docs[d].name, &len) : "";
        for (size_t i = 0; i < len; i++) {
            char c = s[i];
            idx->names[off + i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        idx->names[off + len] = '\0';
        idx->byname[d].s = idx->names + off;
        idx->byname[d].doc = (uint32_t)d;
        off += len + 1;
    }
    qsort(idx->byname, n, sizeof *idx->byname, cmp_name_ent);

    /* Name and tags, lowercased, for the closest cards of a query that
     * matched nothing. */
    total = 0;
    for (size_t d = 0; d < n; d++) {
        total += (docs[d].name ? strlen(docs[d].name) : 0) + 3;  /* spaces, NUL */
        for (size_t t = 0; docs[d].tags && t < docs[d].ntags; t++)
            total += (docs[d].tags[t] ? strlen(docs[d].tags[t]) : 0) + 1;
    }
    idx->fuzzy = xmalloc(total + 1);
    idx->fuzzy_off = xmalloc((n + 1) * sizeof *idx->fuzzy_off);
    off = 0;
    for (size_t d = 0; d < n; d++) {
        idx->fuzzy_off[d] = (uint32_t)off;
        idx->fuzzy[off++] = ' ';
        const char *parts[1] = { docs[d].name };
        for (size_t t = 0; t <= (docs[d].tags ? docs[d].ntags : 0); t++) {
            const char *s = t == 0 ? parts[0] : docs[d].tags[t - 1];
            if (!s)
                continue;
            for (; *s; s++)
                idx->fuzzy[off++] = search_fuzzy_char(*s);
            idx->fuzzy[off++] = ' ';
        }
        idx->fuzzy[off] = '\0';
        off++;
    }
    idx->fuzzy_off[n] = (uint32_t)off;
    idx->syn = search_syn_current();
    return idx;
}

void search_free(struct search_index *idx)
{
    if (!idx)
        return;
    free(idx->terms);
    free(idx->term_off);
    free(idx->post_start);
    free(idx->post);
    free(idx->xtf);
    free(idx->card_bit);
    free(idx->ctf);
    free(idx->body_bit);
    free(idx->flen);
    free(idx->has_body);
    free(idx->names);
    free(idx->byname);
    free(idx->fuzzy);
    free(idx->fuzzy_off);
    search_syn_unref(idx->syn);
    free(idx);
}
