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
    /* What the next build needs to take a document's body and reference
     * terms from this index instead of from a per-document list kept for
     * every entry (two bytes per posting against ~14 per term and
     * document): per posting, the body and reference counts; per document,
     * the two field lengths and whether its body terms are here. */
    uint8_t (*xtf)[2];          /* [npost] */
    uint32_t (*xlen)[2];        /* [ndocs] */
    uint8_t *has_body;          /* [ndocs] */
    char *names;                /* trimmed, ASCII-lowercased names */
    struct name_ent *byname;    /* [ndocs], by (name, doc) */
    char *fuzzy;                /* per doc: "name tag tag ", lowercased, NUL-ended */
    size_t *fuzzy_off;          /* [ndocs + 1] into fuzzy */
    struct search_synonyms *syn;/* the synonym table when built (a reference) */
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

/* Term tid's posting for document d: opened (counts zero) on the term's
 * first occurrence in d; b->tp has room for it (the callers grow it). */
static struct bterm *post_slot(struct builder *b, uint32_t tid, uint32_t d)
{
    struct bterm *bt = &b->term[tid];
    if (bt->last_doc != d + 1) {
        struct tmp_post *tp = &b->tp[b->ntp];
        tp->tid = tid;
        tp->doc = d;
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

    grow((void **)&b->tp, &b->tpcap, b->ntp + 1, sizeof *b->tp);
    struct bterm *bt = post_slot(b, t, b->doc);
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
            tokenize(text + i, end - i, false, build_emit, b);
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

/* Lowercase ASCII letters and digits; other ASCII is a word break; other
 * bytes (UTF-8) are kept. */
static char fuzzy_char(char c)
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
    b->table = s_calloc(cap, sizeof *b->table);
    if (tp_hint)
        grow((void **)&b->tp, &b->tpcap, tp_hint, sizeof *b->tp);
}

struct search_terms *search_terms_new(const struct search_doc *doc)
{
    struct builder b;
    uint32_t len[1][NFIELDS] = {{0}};
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
    index_markdown(&b, F_BODY, doc->body, doc->body ? doc->body_len : 0);
    index_markdown(&b, F_REFS, doc->refs, doc->refs ? doc->refs_len : 0);

    /* Term ids are given in order of first appearance, and each id gets its
     * one tmp posting at that moment: tp[i].tid == i. */
    size_t n = b.nterms;
    struct search_terms *t =
        s_malloc(sizeof *t + n * (NFIELDS + 1) + b.pool_len);
    t->n = (uint32_t)n;
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
    free(t);
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
    struct search_terms **terms = s_calloc(n, sizeof *terms);
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
    grow((void **)&b->tp, &b->tpcap, b->ntp + t->n, sizeof *b->tp);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t tid = intern(b, p, terms_tlen(t, i));
        struct bterm *bt = post_slot(b, tid, d);
        for (int f = 0; f < NFIELDS; f++)
            b->tp[bt->slot].tf[f] += terms_tf(t, i, f);
        p += terms_tlen(t, i) + 1;
    }
}

static double saturate(double wtf)
{
    return wtf * (BM25_K1 + 1) / (wtf + BM25_K1);
}

static struct search_synonyms *synonyms_current(void);
static void synonyms_unref(struct search_synonyms *y);

/* The body and reference terms of the previous index's documents that are
 * to be carried, grouped by previous document: from[o] .. from[o + 1]. */
struct carried {
    uint32_t rank;              /* the term's rank in the previous index */
    uint8_t tf[2];              /* body, references */
};

struct carry {
    size_t *from;               /* [prev->ndocs + 1], NULL when nothing is carried */
    struct carried *c;
};

static void carry_init(struct carry *cy, const struct search_index *prev,
                       const uint32_t *prev_doc, const struct search_terms *const *xterms,
                       size_t n)
{
    memset(cy, 0, sizeof *cy);
    if (!prev || !prev_doc)
        return;
    size_t pn = prev->ndocs, want = 0;
    uint8_t *wanted = s_calloc(pn ? pn : 1, 1);
    for (size_t d = 0; d < n; d++) {
        uint32_t o = prev_doc[d];
        if (o != SEARCH_NO_DOC && o < pn && prev->has_body[o] && !(xterms && xterms[d])) {
            wanted[o] = 1;
            want++;
        }
    }
    if (!want) {
        free(wanted);
        return;
    }
    cy->from = s_calloc(pn + 1, sizeof *cy->from);
    for (size_t r = 0; r < prev->nterms; r++)
        for (size_t j = prev->post_start[r]; j < prev->post_start[r + 1]; j++)
            if (wanted[prev->post[j].doc] && (prev->xtf[j][0] || prev->xtf[j][1]))
                cy->from[prev->post[j].doc + 1]++;
    for (size_t o = 0; o < pn; o++)
        cy->from[o + 1] += cy->from[o];
    cy->c = s_malloc((cy->from[pn] ? cy->from[pn] : 1) * sizeof *cy->c);
    size_t *fill = s_malloc((pn ? pn : 1) * sizeof *fill);
    memcpy(fill, cy->from, pn * sizeof *fill);
    for (size_t r = 0; r < prev->nterms; r++) {
        for (size_t j = prev->post_start[r]; j < prev->post_start[r + 1]; j++) {
            uint32_t o = prev->post[j].doc;
            if (!wanted[o] || !(prev->xtf[j][0] || prev->xtf[j][1]))
                continue;
            struct carried *e = &cy->c[fill[o]++];
            e->rank = (uint32_t)r;
            e->tf[0] = prev->xtf[j][0];
            e->tf[1] = prev->xtf[j][1];
        }
    }
    free(fill);
    free(wanted);
}

/* Doc d's body and reference terms, as the previous index held them for
 * its document o: the same counts merge_terms would add from a list. */
static void carry_doc(struct builder *b, const struct carry *cy,
                      const struct search_index *prev, uint32_t o, uint32_t d)
{
    b->len[d][F_BODY] += prev->xlen[o][0];
    b->len[d][F_REFS] += prev->xlen[o][1];
    grow((void **)&b->tp, &b->tpcap, b->ntp + (cy->from[o + 1] - cy->from[o]), sizeof *b->tp);
    for (size_t i = cy->from[o]; i < cy->from[o + 1]; i++) {
        const char *s = prev->terms + prev->term_off[cy->c[i].rank];
        uint32_t tid = intern(b, s, strlen(s));
        struct bterm *bt = post_slot(b, tid, d);
        b->tp[bt->slot].tf[F_BODY] += cy->c[i].tf[0];
        b->tp[bt->slot].tf[F_REFS] += cy->c[i].tf[1];
    }
}

static void carry_free(struct carry *cy)
{
    free(cy->from);
    free(cy->c);
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
    struct search_index *idx = s_calloc(1, sizeof *idx);
    struct builder b;

    if (!docs || !terms)
        n = 0;
    if (n > UINT32_MAX - 1)
        abort();
    size_t cap = 4096;
    while (cap < n * 4 && cap < ((size_t)1 << 24))
        cap *= 2;
    struct carry cy;
    carry_init(&cy, prev, prev_doc, xterms, n);
    /* Every term of every list and carried document is at most one tmp
     * posting: sized once, the largest array of the build is not copied
     * through a chain of reallocations that leaves holes in the heap. */
    size_t tp_hint = cy.from ? cy.from[prev->ndocs] : 0;
    for (size_t d = 0; d < n; d++)
        tp_hint += (terms[d] ? terms[d]->n : 0) + (xterms && xterms[d] ? xterms[d]->n : 0);
    builder_init(&b, cap, tp_hint ? tp_hint : 1);
    b.len = s_calloc(n, sizeof *b.len);

    idx->has_body = s_calloc(n ? n : 1, 1);
    /* Merge each document's dictionaries into the library's. */
    for (size_t d = 0; d < n; d++) {
        if (terms[d])
            merge_terms(&b, terms[d], (uint32_t)d);
        if (xterms && xterms[d]) {
            merge_terms(&b, xterms[d], (uint32_t)d);
            idx->has_body[d] = 1;
        } else if (cy.from && prev_doc[d] != SEARCH_NO_DOC && prev->has_body[prev_doc[d]]) {
            carry_doc(&b, &cy, prev, prev_doc[d], (uint32_t)d);
            idx->has_body[d] = 1;
        }
    }
    carry_free(&cy);
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

    double avg[NFIELDS] = { 0 };
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
    idx->post = s_malloc((b.ntp ? b.ntp : 1) * sizeof *idx->post);
    idx->xtf = s_malloc((b.ntp ? b.ntp : 1) * sizeof *idx->xtf);
    idx->xlen = s_malloc((n ? n : 1) * sizeof *idx->xlen);
    for (size_t d = 0; d < n; d++) {
        idx->xlen[d][0] = b.len[d][F_BODY];
        idx->xlen[d][1] = b.len[d][F_REFS];
    }
    for (size_t i = 0; i < b.ntp; i++) {
        const struct tmp_post *p = &b.tp[i];
        uint32_t r = rank[p->tid];
        double wtf[NFIELDS] = { 0 };
        for (int f = 0; f < NFIELDS; f++) {
            if (!p->tf[f] || avg[f] <= 0)
                continue;
            double norm = 1.0 - BM25_B + BM25_B * b.len[p->doc][f] / avg[f];
            wtf[f] = field_weight[f] * p->tf[f] / norm;
        }
        double card = wtf[F_NAME] + wtf[F_TAGS] + wtf[F_DESC];
        double sc = saturate(card) + BODY_SCALE * saturate(wtf[F_BODY])
                  + REFS_SCALE * saturate(wtf[F_REFS]);
        idx->post[fill[r]].doc = p->doc;
        idx->post[fill[r]].score = (float)(idf[r] * sc);
        /* Saturated as in struct search_terms, so that a carried count is
         * the count a list would have given. */
        idx->xtf[fill[r]][0] = (uint8_t)(p->tf[F_BODY] > UINT8_MAX ? UINT8_MAX : p->tf[F_BODY]);
        idx->xtf[fill[r]][1] = (uint8_t)(p->tf[F_REFS] > UINT8_MAX ? UINT8_MAX : p->tf[F_REFS]);
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

    /* Name and tags, lowercased, for the closest cards of a query that
     * matched nothing. */
    total = 0;
    for (size_t d = 0; d < n; d++) {
        total += (docs[d].name ? strlen(docs[d].name) : 0) + 3;  /* spaces, NUL */
        for (size_t t = 0; docs[d].tags && t < docs[d].ntags; t++)
            total += (docs[d].tags[t] ? strlen(docs[d].tags[t]) : 0) + 1;
    }
    idx->fuzzy = s_malloc(total + 1);
    idx->fuzzy_off = s_malloc((n + 1) * sizeof *idx->fuzzy_off);
    off = 0;
    for (size_t d = 0; d < n; d++) {
        idx->fuzzy_off[d] = off;
        idx->fuzzy[off++] = ' ';
        const char *parts[1] = { docs[d].name };
        for (size_t t = 0; t <= (docs[d].tags ? docs[d].ntags : 0); t++) {
            const char *s = t == 0 ? parts[0] : docs[d].tags[t - 1];
            if (!s)
                continue;
            for (; *s; s++)
                idx->fuzzy[off++] = fuzzy_char(*s);
            idx->fuzzy[off++] = ' ';
        }
        idx->fuzzy[off] = '\0';
        off++;
    }
    idx->fuzzy_off[n] = off;
    idx->syn = synonyms_current();
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
    free(idx->xlen);
    free(idx->has_body);
    free(idx->names);
    free(idx->byname);
    free(idx->fuzzy);
    free(idx->fuzzy_off);
    synonyms_unref(idx->syn);
    free(idx);
}

/* ---- synonyms ---------------------------------------------------------- */

/*
 * The built-in groups, in the file format. Kept small on purpose: file
 * formats and products people name in everyday speech in place of the word
 * a skill uses. docs/tools.md lists them.
 */
static const char builtin_synonyms[] =
    "xlsx, excel, spreadsheet, sheets, xls\n"
    "pptx, powerpoint, slides, presentation, deck, slide deck, ppt\n"
    "docx, word document, microsoft word, doc, ms word\n"
    "pdf, acrobat, portable document\n"
    "csv, comma separated, tsv\n"
    "json, jsonl, ndjson\n"
    "yaml, yml\n"
    "md, markdown\n"
    "k8s, kubernetes, kubectl\n"
    "postgres, postgresql, psql\n"
    "js, javascript, node, nodejs\n"
    "ts, typescript\n"
    "py, python\n"
    "gh, github\n"
    "svg, vector graphics\n"
    "png, jpeg, jpg, image\n";

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

static void syn_emit(void *ctx, const char *tok, size_t len, enum tok_kind kind)
{
    struct syn_words *sw = ctx;
    if (kind != TK_WORD)
        return;
    if (sw->n == SYN_MAX_WORDS) {
        sw->over = true;
        return;
    }
    memcpy(sw->w[sw->n], tok, len);
    sw->w[sw->n++][len] = '\0';
}

static const char *syn_word(const struct search_synonyms *y, size_t t)
{
    return y->pool + y->tokoff[t];
}

static const struct search_synonyms *syn_sort_ctx;

static int cmp_byfirst(const void *a, const void *b)
{
    const struct search_synonyms *y = syn_sort_ctx;
    uint32_t x = *(const uint32_t *)a, z = *(const uint32_t *)b;
    int c = strcmp(syn_word(y, y->ent[x].tok), syn_word(y, y->ent[z].tok));
    return c ? c : (x > z) - (x < z);
}

static void syn_free(struct search_synonyms *y)
{
    if (!y)
        return;
    free(y->pool);
    free(y->tokoff);
    free(y->ent);
    free(y->byfirst);
    free(y);
}

static int syn_fail(char *err, size_t errlen, const char *file, size_t line, const char *msg,
                    const char *member, size_t mlen)
{
    if (err && errlen) {
        if (member)
            snprintf(err, errlen, "%s:%zu: %s: '%.*s'", file, line, msg,
                     (int)(mlen > 60 ? 60 : mlen), member);
        else
            snprintf(err, errlen, "%s:%zu: %s", file, line, msg);
    }
    return -1;
}

/* Adds the groups of text (the file format) to y. */
static int syn_parse(struct search_synonyms *y, const char *text, size_t n, const char *file,
                     char *err, size_t errlen)
{
    size_t line = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(text + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - text) : n;
        const char *l = text + i;
        size_t len = end - i;
        line++;
        i = end + 1;
        if (len > SYN_MAX_LINE)
            return syn_fail(err, errlen, file, line, "line longer than 4096 bytes", NULL, 0);
        if (memchr(l, '\0', len))
            return syn_fail(err, errlen, file, line, "NUL byte in the line", NULL, 0);
        size_t a = 0;
        while (a < len && (l[a] == ' ' || l[a] == '\t' || l[a] == '\r'))
            a++;
        if (a == len || l[a] == '#')
            continue;
        size_t first = y->nent, members = 0;
        for (size_t p = 0; p <= len;) {
            const char *c = memchr(l + p, ',', len - p);
            size_t e = c ? (size_t)(c - l) : len;
            size_t ms = p, me = e;
            while (ms < me && (l[ms] == ' ' || l[ms] == '\t'))
                ms++;
            while (me > ms && (l[me - 1] == ' ' || l[me - 1] == '\t' || l[me - 1] == '\r'))
                me--;
            if (ms == me)
                return syn_fail(err, errlen, file, line,
                                "empty member (two commas in a row, or a comma at an end)",
                                NULL, 0);
            struct syn_words sw = { .n = 0, .over = false };
            tokenize(l + ms, me - ms, false, syn_emit, &sw);
            if (sw.over)
                return syn_fail(err, errlen, file, line, "member of more than 8 words",
                                l + ms, me - ms);
            if (!sw.n)
                return syn_fail(err, errlen, file, line,
                                "member with no searchable word (only punctuation or "
                                "stopwords)", l + ms, me - ms);
            grow((void **)&y->ent, &y->ecap, y->nent + 1, sizeof *y->ent);
            struct syn_ent *en = &y->ent[y->nent++];
            en->group = (uint32_t)y->ngroups;
            en->tok = (uint32_t)y->ntok;
            en->ntok = (uint32_t)sw.n;
            for (size_t w = 0; w < sw.n; w++) {
                size_t wl = strlen(sw.w[w]);
                grow((void **)&y->tokoff, &y->tcap, y->ntok + 1, sizeof *y->tokoff);
                grow((void **)&y->pool, &y->pool_cap, y->pool_len + wl + 1, 1);
                y->tokoff[y->ntok++] = y->pool_len;
                memcpy(y->pool + y->pool_len, sw.w[w], wl + 1);
                y->pool_len += wl + 1;
            }
            members++;
            if (!c)
                break;
            p = e + 1;
        }
        if (members < 2) {
            y->nent = first;
            return syn_fail(err, errlen, file, line,
                            "a group needs at least two members, separated by commas", NULL, 0);
        }
        y->ngroups++;
    }
    return 0;
}

static void syn_finish(struct search_synonyms *y)
{
    y->byfirst = s_malloc((y->nent ? y->nent : 1) * sizeof *y->byfirst);
    for (size_t i = 0; i < y->nent; i++)
        y->byfirst[i] = (uint32_t)i;
    syn_sort_ctx = y;           /* callers hold syn_mu, or own y alone */
    qsort(y->byfirst, y->nent, sizeof *y->byfirst, cmp_byfirst);
    syn_sort_ctx = NULL;
    atomic_init(&y->refs, 1);
}

static pthread_mutex_t syn_mu = PTHREAD_MUTEX_INITIALIZER;
static struct search_synonyms *syn_table;  /* guarded by syn_mu */
static char *syn_path;
static struct stat syn_st;
static bool syn_st_ok;

static int read_small_file(const char *path, char **out, size_t *len, struct stat *st)
{
    int fd = x_open_regular(AT_FDCWD, path, st);
    if (fd < 0)
        return fd;
    if (st->st_size > (off_t)SYN_MAX_FILE) {
        close(fd);
        return -EFBIG;
    }
    char *buf = s_malloc((size_t)st->st_size + 1);
    size_t got = 0;
    while (got < (size_t)st->st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st->st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

/* The built-in groups plus path's (NULL: built-ins only), or NULL with err. */
static struct search_synonyms *syn_load(const char *path, struct stat *st, char *err,
                                        size_t errlen)
{
    struct search_synonyms *y = s_calloc(1, sizeof *y);
    if (syn_parse(y, builtin_synonyms, sizeof builtin_synonyms - 1, "built-in", err, errlen))
        abort();
    if (path) {
        char *text = NULL;
        size_t len = 0;
        int rc = read_small_file(path, &text, &len, st);
        if (rc < 0) {
            snprintf(err, errlen, "%s: cannot be read (%s)", path,
                     rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
            syn_free(y);
            return NULL;
        }
        rc = syn_parse(y, text, len, path, err, errlen);
        free(text);
        if (rc) {
            syn_free(y);
            return NULL;
        }
    }
    syn_finish(y);
    return y;
}

int search_synonyms_init(const char *path, char *err, size_t errlen)
{
    struct stat st;
    pthread_mutex_lock(&syn_mu);
    struct search_synonyms *y = syn_load(path, &st, err, errlen);
    if (y) {
        synonyms_unref(syn_table);
        syn_table = y;
        free(syn_path);
        syn_path = path ? strdup(path) : NULL;
        syn_st = st;
        syn_st_ok = path != NULL;
    }
    pthread_mutex_unlock(&syn_mu);
    return y ? 0 : -1;
}

int search_synonyms_check(const char *text, size_t len, const char *file, char *err,
                          size_t errlen)
{
    struct search_synonyms *y = s_calloc(1, sizeof *y);
    int rc = syn_parse(y, text, len, file, err, errlen);
    syn_free(y);
    return rc;
}

void search_synonyms_shutdown(void)
{
    pthread_mutex_lock(&syn_mu);
    synonyms_unref(syn_table);
    syn_table = NULL;
    free(syn_path);
    syn_path = NULL;
    pthread_mutex_unlock(&syn_mu);
}

static void synonyms_unref(struct search_synonyms *y)
{
    if (y && atomic_fetch_sub(&y->refs, 1) == 1)
        syn_free(y);
}

/* The table for an index being built: the operator's file is read again
 * when its (mtime, size, inode) moved since it was last read. */
static struct search_synonyms *synonyms_current(void)
{
    char err[512];
    pthread_mutex_lock(&syn_mu);
    if (!syn_table) {
        syn_table = syn_load(NULL, NULL, err, sizeof err);
    } else if (syn_path) {
        struct stat st;
        int moved = stat(syn_path, &st) != 0 || !syn_st_ok || st.st_mtim.tv_sec != syn_st.st_mtim.tv_sec ||
                    st.st_mtim.tv_nsec != syn_st.st_mtim.tv_nsec || st.st_size != syn_st.st_size ||
                    st.st_ino != syn_st.st_ino;
        if (moved) {
            struct search_synonyms *y = syn_load(syn_path, &st, err, sizeof err);
            if (y) {
                synonyms_unref(syn_table);
                syn_table = y;
                log_info("search: synonyms reloaded from %s (%zu groups)", syn_path,
                         y->ngroups);
            } else {
                log_warn("search: %s; keeping the synonyms loaded before", err);
            }
            /* Judged once per version of the file, not on every build. */
            syn_st_ok = stat(syn_path, &syn_st) == 0;
        }
    }
    struct search_synonyms *y = syn_table;
    atomic_fetch_add(&y->refs, 1);
    pthread_mutex_unlock(&syn_mu);
    return y;
}

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
        if (strcmp(q->term[q->word[i + k]], syn_word(y, e->tok + k)) != 0)
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
            if (strcmp(syn_word(y, y->ent[y->byfirst[mid]].tok), w) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < y->nent; lo++) {
            const struct syn_ent *e = &y->ent[y->byfirst[lo]];
            if (strcmp(syn_word(y, e->tok), w) != 0)
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
                plan_term(idx, p, syn_word(y, y->ent[e].tok + k),
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
    tokenize(query, qn < QUERY_MAX_BYTES ? qn : QUERY_MAX_BYTES, false,
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
        char f = fuzzy_char(*c);
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
