/*
 * search_tok.c - text into search terms: characters (decoded and folded by
 * util.c's UTF-8 primitives) classified, stopwords, the light English
 * stemmer and the tokenizer (words, joined compounds, CJK bigrams) that the
 * index build, the synonym table and queries all use; the array growth
 * they share.
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

/* ---- memory ---------------------------------------------------------- */

/* Makes room for need elements of elsz bytes in *p (capacity *cap). */
void search_grow(void **p, size_t *cap, size_t need, size_t elsz)
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
    *p = xrealloc(*p, c * elsz);
    *cap = c;
}

/* ---- characters ------------------------------------------------------ */

#define CP_INVALID 0xFFFFFFFFu

enum cclass { C_SEP, C_WORD, C_JOIN, C_CJK };

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
    size_t len = utf8_decode(s + i, n - i, cp);
    if (!len) {                 /* a stray byte separates words, one at a time */
        *cp = CP_INVALID;
        len = 1;
    }
    *cp = utf8_fold(*cp);
    *cl = classify(*cp);
    return len;
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
                size_t k = utf8_encode(cp, tmp);
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
        size_t k = utf8_encode(cp, cur);
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
void search_tokenize(const char *text, size_t n, bool keep_stop,
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
