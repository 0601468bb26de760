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
 * letters; ASCII, fullwidth ASCII, Latin-1, Greek and Cyrillic capitals are
 * lowercased. Words joined by '-' or '_' are also emitted whole ("csv-profile"
 * gives csv, profil, csv-profile), unstemmed. Pure ASCII words longer than
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
#include "search.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define MAXTOK 64               /* bytes kept of one token */
#define MAXQ 64                 /* distinct terms kept of one query */
#define QUERY_MAX_BYTES 4096    /* query bytes tokenized; the rest is ignored */
#define NFIELDS 3

enum { F_NAME, F_TAGS, F_DESC };

static const double field_weight[NFIELDS] = { 3.0, 2.0, 1.0 };
#define BM25_K1 1.2
#define BM25_B 0.75
#define PREFIX_WEIGHT 0.5f

/* ---- memory ---------------------------------------------------------- */

static void *s_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

static void *s_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

static void *s_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

/* Makes room for need elements of elsz bytes in *p (capacity *cap). */
static void grow(void **p, size_t *cap, size_t need, size_t elsz)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            abort();
        c *= 2;
    }
    if (c > SIZE_MAX / elsz)
        abort();
    *p = s_realloc(*p, c * elsz);
    *cap = c;
}

/* ---- characters ------------------------------------------------------ */

#define CP_INVALID 0xFFFFFFFFu

enum cclass { C_SEP, C_WORD, C_JOIN, C_CJK };

/* Decodes the character at s[0..n), n >= 1, into *cp and returns its length.
 * Malformed or truncated sequences come back as one byte of CP_INVALID. */
static size_t decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    uint32_t v, min;
    size_t len;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2; v = c & 0x1F; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; v = c & 0x0F; min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; v = c & 0x07; min = 0x10000;
    } else {
        *cp = CP_INVALID;
        return 1;
    }
    if (n < len) {
        *cp = CP_INVALID;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = CP_INVALID;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = CP_INVALID;
        return 1;
    }
    *cp = v;
    return len;
}

/* Case and width folding: ASCII, fullwidth ASCII letters/digits (to ASCII),
 * Latin-1, basic Greek and Cyrillic capitals. */
static uint32_t fold(uint32_t c)
{
    if (c < 0x80)
        return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xFF10 && c <= 0xFF19)
        return '0' + (c - 0xFF10);
    if (c >= 0xFF21 && c <= 0xFF3A)
        return 'a' + (c - 0xFF21);
    if (c >= 0xFF41 && c <= 0xFF5A)
        return 'a' + (c - 0xFF41);
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
        return c + 32;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
        return c + 32;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    return c;
}

static bool is_cjk(uint32_t c)
{
    return (c >= 0x3040 && c <= 0x30FF)      /* Hiragana, Katakana */
        || (c >= 0x31F0 && c <= 0x31FF)      /* Katakana extensions */
        || (c >= 0x3130 && c <= 0x318F)      /* Hangul compatibility jamo */
        || (c >= 0x3400 && c <= 0x4DBF)      /* Han extension A */
        || (c >= 0x4E00 && c <= 0x9FFF)      /* Han */
        || (c >= 0xAC00 && c <= 0xD7AF)      /* Hangul syllables */
        || (c >= 0xF900 && c <= 0xFAFF)      /* Han compatibility */
        || (c >= 0xFF66 && c <= 0xFF9F)      /* halfwidth Katakana */
        || (c >= 0x20000 && c <= 0x3FFFF);   /* Han extensions B.. */
}

/* Non-ASCII punctuation, symbols, spaces and emoji separate words. */
static bool is_sep(uint32_t c)
{
    return (c >= 0x80 && c <= 0xBF) || c == 0xD7 || c == 0xF7
        || (c >= 0x2000 && c <= 0x2BFF)
        || (c >= 0x2E00 && c <= 0x2E7F)
        || (c >= 0x3000 && c <= 0x303F)
        || (c >= 0xFE30 && c <= 0xFE4F)
        || (c >= 0xFF00 && c <= 0xFF65)      /* rest of the fullwidth forms */
        || (c >= 0xFFF0 && c <= 0xFFFF)
        || (c >= 0x1F000 && c <= 0x1FAFF);
}

/* Classifies a folded code point. */
static enum cclass classify(uint32_t c)
{
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            return C_WORD;
        return (c == '-' || c == '_') ? C_JOIN : C_SEP;
    }
    if (c == CP_INVALID)
        return C_SEP;
    if (is_cjk(c))
        return C_CJK;
    return is_sep(c) ? C_SEP : C_WORD;
}

/* Decodes, folds and classifies the character at s[i..n). */
static size_t next_char(const unsigned char *s, size_t n, size_t i,
                        uint32_t *cp, enum cclass *cl)
{
    size_t len = decode(s + i, n - i, cp);
    *cp = fold(*cp);
    *cl = classify(*cp);
    return len;
}

static size_t encode(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ---- stopwords and stemming ------------------------------------------ */

static const char *const stopwords[] = {   /* sorted for bsearch */
    "a", "about", "an", "and", "are", "as", "at", "be", "been", "but", "by",
    "can", "do", "does", "for", "from", "has", "have", "how", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "use", "used", "uses", "using", "via", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "will", "with",
    "you", "your",
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool is_stopword(const char *w)
{
    return bsearch(&w, stopwords, sizeof stopwords / sizeof stopwords[0],
                   sizeof stopwords[0], cmp_str) != NULL;
}

static bool ends(const char *w, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(w + n - k, suf, k) == 0;
}

static bool is_vowel(const char *w, size_t i)
{
    switch (w[i]) {
    case 'a': case 'e': case 'i': case 'o': case 'u':
        return true;
    case 'y':
        return i > 0;
    default:
        return false;
    }
}

static bool has_vowel(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (is_vowel(w, i))
            return true;
    return false;
}

/* Drops one of a doubled final consonant (runn -> run), keeping >= 3 chars. */
static size_t undouble(const char *w, size_t n)
{
    if (n >= 4 && w[n - 1] == w[n - 2] && !is_vowel(w, n - 1)
        && w[n - 1] != 'l' && w[n - 1] != 's' && w[n - 1] != 'z')
        return n - 1;
    return n;
}

/*
 * A light suffix stripper for lowercase ASCII words of more than three
 * letters (a trimmed Porter step 1 plus -ly and a final -e): spreadsheets ->
 * spreadsheet, libraries -> library, creating/created/creates/create -> creat,
 * running -> run. It may rewrite the last letter (ies -> y); returns the new
 * length, never below three.
 */
static size_t stem(char *w, size_t n)
{
    if (ends(w, n, "sses")) {
        n -= 2;
    } else if (ends(w, n, "ies") && n > 4) {
        n -= 2;
        w[n - 1] = 'y';
    } else if (ends(w, n, "ss") || ends(w, n, "us") || ends(w, n, "is")) {
        /* class, status, analysis */
    } else if (w[n - 1] == 's') {
        n -= 1;
    }

    if (ends(w, n, "ied") && n > 4) {
        n -= 2;
        w[n - 1] = 'y';
    } else if (ends(w, n, "ing") && n >= 6 && has_vowel(w, n - 3)) {
        n = undouble(w, n - 3);
    } else if (ends(w, n, "ed") && n >= 5 && has_vowel(w, n - 2)) {
        n = undouble(w, n - 2);
    } else if (ends(w, n, "ly") && n >= 6) {
        n -= 2;
    }

    if (n > 3 && w[n - 1] == 'e')
        n--;
    return n;
}

/* ---- tokenizer --------------------------------------------------------- */

enum tok_kind { TK_WORD, TK_COMPOUND, TK_CJK };

typedef void (*emit_fn)(void *ctx, const char *tok, size_t len, enum tok_kind kind);

/* A token being built: at most MAXTOK bytes of whole characters; once a
 * character does not fit, the rest of the token is dropped. */
struct tokbuf {
    char s[MAXTOK + 1];
    size_t len;
    bool full;
};

static void tb_put(struct tokbuf *t, const char *p, size_t k)
{
    if (t->full || t->len + k > MAXTOK) {
        t->full = true;
        return;
    }
    memcpy(t->s + t->len, p, k);
    t->len += k;
}

/* A run of ASCII letters and digits, lowercased; bytes past MAXTOK are dropped. */
static void tb_put_lower(struct tokbuf *t, const unsigned char *p, size_t k)
{
    if (t->full)
        return;
    size_t room = MAXTOK - t->len;
    if (k > room) {
        k = room;
        t->full = true;
    }
    for (size_t i = 0; i < k; i++) {
        unsigned char c = p[i];
        t->s[t->len + i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    t->len += k;
}

static void emit_word(struct tokbuf *w, bool keep_stop, emit_fn emit, void *ctx)
{
    size_t len = w->len;
    bool alpha = true;

    w->s[len] = '\0';
    for (size_t i = 0; i < len && alpha; i++)
        alpha = w->s[i] >= 'a' && w->s[i] <= 'z';
    if (alpha && !keep_stop && len <= 5 && is_stopword(w->s))
        return;
    if (alpha && len > 3) {
        len = stem(w->s, len);
        w->s[len] = '\0';
    }
    emit(ctx, w->s, len, TK_WORD);
}

static bool ascii_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Tokenizes the word group starting at s[i] (a word character): each word,
 * then, when the group joins several words with '-' or '_', the whole group.
 * Returns the index just past the group's last word. */
static size_t word_group(const unsigned char *s, size_t n, size_t i,
                         bool keep_stop, emit_fn emit, void *ctx)
{
    struct tokbuf word, comp;
    size_t parts = 0;

    comp.len = 0;
    comp.full = false;
    for (;;) {
        word.len = 0;
        word.full = false;
        while (i < n) {
            if (s[i] < 0x80) {
                size_t j = i;
                while (j < n && ascii_word(s[j]))
                    j++;
                if (j == i)
                    break;
                tb_put_lower(&word, s + i, j - i);
                tb_put_lower(&comp, s + i, j - i);
                i = j;
            } else {
                uint32_t cp;
                enum cclass cl;
                char tmp[4];
                size_t l = next_char(s, n, i, &cp, &cl);
                if (cl != C_WORD)
                    break;
                size_t k = encode(cp, tmp);
                tb_put(&word, tmp, k);
                tb_put(&comp, tmp, k);
                i += l;
            }
        }
        parts++;
        emit_word(&word, keep_stop, emit, ctx);

        size_t k = i;
        while (k < n && (s[k] == '-' || s[k] == '_'))
            k++;
        if (k == i || k >= n)
            break;
        uint32_t cp;
        enum cclass cl;
        next_char(s, n, k, &cp, &cl);
        if (cl != C_WORD)
            break;
        tb_put(&comp, (const char *)s + i, k - i);
        i = k;
    }
    if (parts > 1)
        emit(ctx, comp.s, comp.len, TK_COMPOUND);
    return i;
}

/* Emits each character of the CJK run at s[i] and each adjacent pair. */
static size_t cjk_run(const unsigned char *s, size_t n, size_t i,
                      emit_fn emit, void *ctx)
{
    char prev[4], pair[8];
    size_t prevlen = 0;

    while (i < n) {
        uint32_t cp;
        enum cclass cl;
        size_t l = next_char(s, n, i, &cp, &cl);
        if (cl != C_CJK)
            break;
        char cur[4];
        size_t k = encode(cp, cur);
        emit(ctx, cur, k, TK_CJK);
        if (prevlen) {
            memcpy(pair, prev, prevlen);
            memcpy(pair + prevlen, cur, k);
            emit(ctx, pair, prevlen + k, TK_CJK);
        }
        memcpy(prev, cur, k);
        prevlen = k;
        i += l;
    }
    return i;
}

/* Calls emit for every token of text[0..n). Tokens are not NUL-terminated. */
static void tokenize(const char *text, size_t n, bool keep_stop,
                     emit_fn emit, void *ctx)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;

    while (i < n) {
        if (s[i] < 0x80) {
            if (ascii_word(s[i]))
                i = word_group(s, n, i, keep_stop, emit, ctx);
            else
                i++;
            continue;
        }
        uint32_t cp;
        enum cclass cl;
        size_t l = next_char(s, n, i, &cp, &cl);
        if (cl == C_WORD)
            i = word_group(s, n, i, keep_stop, emit, ctx);
        else if (cl == C_CJK)
            i = cjk_run(s, n, i, emit, ctx);
        else
            i += l;
    }
}

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
    size_t *term_off;           /* [nterms], in strcmp order of the terms */
    size_t *post_start;         /* [nterms + 1] into post */
    struct posting *post;
    char *names;                /* trimmed, ASCII-lowercased names */
    struct name_ent *byname;    /* [ndocs], by (name, doc) */
};

/* ---- building ---------------------------------------------------------- */

struct tmp_post {
    uint32_t tid, doc;
    uint32_t tf[NFIELDS];
};

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

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static void rehash(struct builder *b)
{
    size_t cap = (b->tmask + 1) * 2;
    struct hslot *old = b->table;
    size_t oldcap = b->tmask + 1;

    b->table = s_calloc(cap, sizeof *b->table);
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
    uint32_t h = hash_bytes(tok, len);
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
    grow((void **)&b->term, &b->tcap, b->nterms + 1, sizeof *b->term);
    grow((void **)&b->pool, &b->pool_cap, b->pool_len + len + 1, 1);
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

static void build_emit(void *ctx, const char *tok, size_t len, enum tok_kind kind)
{
    struct builder *b = ctx;
    uint32_t t = intern(b, tok, len);
    struct bterm *bt = &b->term[t];
    (void)kind;

    if (bt->last_doc != b->doc + 1) {
        grow((void **)&b->tp, &b->tpcap, b->ntp + 1, sizeof *b->tp);
        struct tmp_post *p = &b->tp[b->ntp];
        p->tid = t;
        p->doc = b->doc;
        memset(p->tf, 0, sizeof p->tf);
        bt->last_doc = b->doc + 1;
        bt->slot = b->ntp++;
    }
    if (b->tp[bt->slot].tf[b->field] < UINT32_MAX)
        b->tp[bt->slot].tf[b->field]++;
    if (b->len[b->doc][b->field] < UINT32_MAX)
        b->len[b->doc][b->field]++;
}

static void index_field(struct builder *b, int field, const char *text)
{
    if (!text)
        return;
    b->field = field;
    tokenize(text, strlen(text), field == F_NAME, build_emit, b);
}

struct term_ref {
    const char *s;
    uint32_t tid;
};

static int cmp_term_ref(const void *a, const void *b)
{
    return strcmp(((const struct term_ref *)a)->s, ((const struct term_ref *)b)->s);
}

static const char *name_trim(const char *s, size_t *len)
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
    /* then, in the same block: uint16_t tf[n][NFIELDS] (counts saturate at
     * 65535, far past where BM25 saturates), uint8_t tlen[n] (a term is at
     * most MAXTOK bytes), and the n terms back to back, NUL-terminated.
     * One allocation per document: kept for the life of the entry. */
    unsigned char data[];
};

/* Offsets in data[] of a block of n terms. tf is read with memcpy: data[]
 * carries no alignment promise for uint16_t beyond malloc's. */
#define TERMS_TLEN_OFF(n) ((size_t)(n) * NFIELDS * sizeof(uint16_t))
#define TERMS_POOL_OFF(n) (TERMS_TLEN_OFF(n) + (size_t)(n))

static uint16_t terms_tf(const struct search_terms *t, size_t i, int f)
{
    uint16_t v;
    memcpy(&v, t->data + (i * NFIELDS + (size_t)f) * sizeof v, sizeof v);
    return v;
}

static size_t terms_tlen(const struct search_terms *t, size_t i)
{
    return t->data[TERMS_TLEN_OFF(t->n) + i];
}

static void builder_init(struct builder *b, size_t cap, size_t tp_hint)
{
    memset(b, 0, sizeof *b);
    b->tmask = cap - 1;
    b->table = s_calloc(cap, sizeof *b->table);
    if (tp_hint)
        grow((void **)&b->tp, &b->tpcap, tp_hint, sizeof *b->tp);
}

struct search_terms *search_terms_new(const struct search_doc *doc)
{
    struct builder b;
    uint32_t len[1][NFIELDS] = {{0, 0, 0}};
    /* Sized for a typical skill card (a few dozen terms), so that most
     * documents never reallocate. */
    builder_init(&b, 128, 64);
    grow((void **)&b.term, &b.tcap, 64, sizeof *b.term);
    grow((void **)&b.pool, &b.pool_cap, 512, 1);
    b.len = len;
    b.doc = 0;
    index_field(&b, F_NAME, doc->name);
    if (doc->tags)
        for (size_t t = 0; t < doc->ntags; t++)
            index_field(&b, F_TAGS, doc->tags[t]);
    index_field(&b, F_DESC, doc->description);

    /* Term ids are given in order of first appearance, and each id gets its
     * one tmp posting at that moment: tp[i].tid == i. */
    size_t n = b.nterms;
    struct search_terms *t =
        s_malloc(sizeof *t + n * (NFIELDS * sizeof(uint16_t) + 1) + b.pool_len);
    t->n = (uint32_t)n;
    memcpy(t->len, len[0], sizeof t->len);
    for (size_t i = 0; i < n; i++) {
        for (int f = 0; f < NFIELDS; f++) {
            uint16_t v = (uint16_t)(b.tp[i].tf[f] > UINT16_MAX ? UINT16_MAX : b.tp[i].tf[f]);
            memcpy(t->data + (i * NFIELDS + (size_t)f) * sizeof v, &v, sizeof v);
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
    free(t);
}

size_t search_terms_bytes(const struct search_terms *t)
{
    size_t pool = 0;
    for (uint32_t i = 0; i < t->n; i++)
        pool += terms_tlen(t, i) + 1;
    return sizeof *t + t->n * (NFIELDS * sizeof(uint16_t) + 1) + pool;
}

struct search_index *search_new(const struct search_doc *docs, size_t n)
{
    if (!docs)
        n = 0;
    struct search_terms **terms = s_calloc(n, sizeof *terms);
    for (size_t d = 0; d < n; d++)
        terms[d] = search_terms_new(&docs[d]);
    struct search_index *idx = search_new_terms(docs, (const struct search_terms *const *)terms, n);
    for (size_t d = 0; d < n; d++)
        search_terms_free(terms[d]);
    free(terms);
    return idx;
}

struct search_index *search_new_terms(const struct search_doc *docs,
                                      const struct search_terms *const *terms, size_t n)
{
    struct search_index *idx = s_calloc(1, sizeof *idx);
    struct builder b;

    if (!docs || !terms)
        n = 0;
    if (n > UINT32_MAX - 1)
        abort();
    size_t cap = 4096;
    while (cap < n * 4 && cap < ((size_t)1 << 24))
        cap *= 2;
    builder_init(&b, cap, n * 16);
    b.len = s_calloc(n, sizeof *b.len);

    /* Merge each document's dictionary into the library's. */
    for (size_t d = 0; d < n; d++) {
        const struct search_terms *t = terms[d];
        const char *p = (const char *)t->data + TERMS_POOL_OFF(t->n);
        memcpy(b.len[d], t->len, sizeof b.len[d]);
        grow((void **)&b.tp, &b.tpcap, b.ntp + t->n, sizeof *b.tp);
        for (uint32_t i = 0; i < t->n; i++) {
            struct tmp_post *tp = &b.tp[b.ntp++];
            tp->tid = intern(&b, p, terms_tlen(t, i));
            tp->doc = (uint32_t)d;
            for (int f = 0; f < NFIELDS; f++)
                tp->tf[f] = terms_tf(t, i, f);
            p += terms_tlen(t, i) + 1;
        }
    }
    /* The sorted dictionary: rank[tid] is the term's position. */
    size_t T = b.nterms;
    struct term_ref *order = s_malloc(T * sizeof *order);
    for (size_t t = 0; t < T; t++) {
        order[t].s = b.pool + b.term[t].off;
        order[t].tid = (uint32_t)t;
    }
    qsort(order, T, sizeof *order, cmp_term_ref);
    uint32_t *rank = s_malloc(T * sizeof *rank);
    idx->term_off = s_malloc(T * sizeof *idx->term_off);
    for (size_t r = 0; r < T; r++) {
        rank[order[r].tid] = (uint32_t)r;
        idx->term_off[r] = b.term[order[r].tid].off;
    }
    free(order);

    /* Postings grouped by rank; tmp postings are in doc order already. */
    idx->post_start = s_calloc(T + 1, sizeof *idx->post_start);
    for (size_t i = 0; i < b.ntp; i++)
        idx->post_start[rank[b.tp[i].tid] + 1]++;
    for (size_t r = 0; r < T; r++)
        idx->post_start[r + 1] += idx->post_start[r];

    double avg[NFIELDS] = { 0, 0, 0 };
    for (size_t d = 0; d < n; d++)
        for (int f = 0; f < NFIELDS; f++)
            avg[f] += b.len[d][f];
    for (int f = 0; f < NFIELDS; f++)
        avg[f] = n ? avg[f] / (double)n : 0;

    size_t *fill = s_malloc((T ? T : 1) * sizeof *fill);
    double *idf = s_malloc((T ? T : 1) * sizeof *idf);
    for (size_t r = 0; r < T; r++) {
        double df = (double)(idx->post_start[r + 1] - idx->post_start[r]);
        fill[r] = idx->post_start[r];
        idf[r] = log(1.0 + ((double)n - df + 0.5) / (df + 0.5));
    }
    idx->post = s_malloc(b.ntp * sizeof *idx->post);
    for (size_t i = 0; i < b.ntp; i++) {
        const struct tmp_post *p = &b.tp[i];
        uint32_t r = rank[p->tid];
        double wtf = 0;
        for (int f = 0; f < NFIELDS; f++) {
            if (!p->tf[f] || avg[f] <= 0)
                continue;
            double norm = 1.0 - BM25_B + BM25_B * b.len[p->doc][f] / avg[f];
            wtf += field_weight[f] * p->tf[f] / norm;
        }
        idx->post[fill[r]].doc = p->doc;
        idx->post[fill[r]].score = (float)(idf[r] * wtf * (BM25_K1 + 1) / (wtf + BM25_K1));
        fill[r]++;
    }
    free(fill);
    free(idf);
    free(rank);

    idx->ndocs = n;
    idx->nterms = T;
    idx->terms = s_realloc(b.pool, b.pool_len);
    free(b.term);
    free(b.table);
    free(b.tp);
    free(b.len);

    /* Names for the exact-name bonus. */
    size_t total = 0;
    for (size_t d = 0; d < n; d++) {
        size_t len = 0;
        if (docs[d].name)
            name_trim(docs[d].name, &len);
        total += len + 1;
    }
    idx->names = s_malloc(total);
    idx->byname = s_malloc(n * sizeof *idx->byname);
    size_t off = 0;
    for (size_t d = 0; d < n; d++) {
        size_t len = 0;
        const char *s = docs[d].name ? name_trim(docs[d].name, &len) : "";
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
    free(idx->names);
    free(idx->byname);
    free(idx);
}

/* ---- querying ---------------------------------------------------------- */

struct qterms {
    char term[MAXQ][MAXTOK + 1];    /* distinct terms in query order */
    size_t n;
    char last[MAXTOK + 1];          /* the query's last token */
    size_t lastlen;
    enum tok_kind lastkind;
    bool have_last;
};

static void add_term(struct qterms *q, const char *s)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->term[i], s) == 0)
            return;
    /* s is a token, at most MAXTOK bytes, and term[] rows hold MAXTOK + 1 */
    snprintf(q->term[q->n++], MAXTOK + 1, "%s", s);
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
    if (q->n < MAXQ - 1)        /* one slot stays free for the last token */
        add_term(q, buf);
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

struct plan {
    size_t rank[MAXQ];          /* dictionary ranks of the query's terms */
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

static void make_plan(const struct search_index *idx, const char *query,
                      struct plan *p)
{
    struct qterms q;
    size_t qn = strlen(query);

    memset(p, 0, sizeof *p);
    q.n = 0;
    q.have_last = false;
    tokenize(query, qn < QUERY_MAX_BYTES ? qn : QUERY_MAX_BYTES, false,
             query_emit, &q);
    if (q.have_last)
        add_term(&q, q.last);

    for (size_t i = 0; i < q.n; i++) {
        size_t r = lower_bound(idx, q.term[i]);
        if (r < idx->nterms && strcmp(term_at(idx, r), q.term[i]) == 0) {
            p->rank[p->nr++] = r;
            p->npost += idx->post_start[r + 1] - idx->post_start[r];
        }
    }

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
    const char *t = name_trim(query, &tlen);
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

/* Sorts the heap best first and lifts exactly named hits above the rest. */
static void finish(struct sel *s)
{
    for (size_t end = s->k; end > 1; end--) {
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
                float VAL = (idx)->post[j_].score;                           \
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
    float *acc = s_calloc(idx->ndocs, sizeof *acc);

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
    struct posting *buf = s_malloc(2 * np * sizeof *buf), *tmp = buf + np;

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
    if (p.npost * 8 < idx->ndocs)
        rank_sparse(idx, &p, &s);
    else
        rank_dense(idx, &p, &s);
    finish(&s);
    return s.total;
}
