/*
 * util.c - the small shared pieces every module leans on: aborting
 * allocators, error records, capped buffers, logging, clocks and ISO 8601
 * time, UTF-8, hashing, hex and percent-encoding, list pages.
 *
 * Nothing here knows about MCP or skills. Logging is the only state, and it
 * is set once at start-up before threads exist.
 */
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- memory ----------------------------------------------------------- */

static void oom(size_t n)
{
    fprintf(stderr, "skill-mcp: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    /* glibc's calloc never takes a block from the per-thread cache that
     * free fills: a small one (a request's context, a call) costs several
     * times malloc and memset. Large ones keep calloc's fresh zero pages. */
    size_t total;
    if (n && size && !__builtin_mul_overflow(n, size, &total) && total <= 1024) {
        void *p = xmalloc(total);
        return memset(p, 0, total);
    }
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void *x_shared_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        oom(n);
    return p;
}

void x_shared_free(void *p, size_t n)
{
    if (p)
        munmap(p, n ? n : 1);
}

/*
 * jansson's allocations. A request's tree (some twenty blocks of under 100
 * bytes) is built and freed on one thread within microseconds, and glibc
 * spends 150 to 200 instructions on each malloc/free pair of them (more
 * than its per-thread cache keeps per size go the long way). In front of
 * malloc, each thread keeps a stack of freed blocks per 16-byte chunk size
 * (glibc's own rounding, so nothing grows) and serves the next request's
 * tree from it in a few instructions.
 *
 * The blocks stay malloc's own: one allocated here may be given to free()
 * (a json_dumps string, which callers free), and ja_free takes what malloc
 * gave (a tree built before the install); malloc_usable_size says which
 * stack a block belongs on. A thread keeps at most JA_KEEP blocks a size
 * (the rest go to free) and gives them all back when it exits. Sanitizer
 * builds use malloc and free directly: they must see every free.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JA_CACHE 0
#elif defined(__has_feature)    /* clang names them so */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define JA_CACHE 0
#endif
#endif
#ifndef JA_CACHE
#define JA_CACHE 1
#endif
#define JA_MAXCHUNK 256 /* the largest chunk kept, in bytes */
#define JA_KEEP 64      /* blocks kept a size, a thread */

#if JA_CACHE
struct ja_cache {
    void *top[JA_MAXCHUNK / 16 + 1];    /* by chunk size / 16 */
    unsigned short n[JA_MAXCHUNK / 16 + 1];
    int state;                          /* 0 new, 1 registered for its exit, -1 exited */
};
static __thread struct ja_cache ja;
static pthread_key_t ja_key;
static pthread_once_t ja_once = PTHREAD_ONCE_INIT;

/* glibc's chunk for a request of n bytes, in 16-byte units (at least 2). */
static inline size_t ja_class(size_t n)
{
    size_t k = (n + 8 + 15) >> 4;
    return k < 2 ? 2 : k;
}

static void ja_exit(void *arg)
{
    (void)arg;
    ja.state = -1;
    for (size_t k = 0; k <= JA_MAXCHUNK / 16; k++)
        while (ja.top[k]) {
            void *p = ja.top[k];
            ja.top[k] = *(void **)p;
            free(p);
        }
}

static void ja_key_make(void)
{
    if (pthread_key_create(&ja_key, ja_exit) != 0)
        abort();
}

static void *ja_malloc(size_t n)
{
    size_t k = ja_class(n);
    if (k <= JA_MAXCHUNK / 16 && ja.top[k]) {
        void *p = ja.top[k];
        ja.top[k] = *(void **)p;
        ja.n[k]--;
        return p;
    }
    return xmalloc(n);
}

static void ja_free(void *p)
{
    if (!p)
        return;
    /* Class 2 is the smallest ja_malloc asks for. Below it a block may not
     * hold the stack's link: glibc never makes one, but an allocator that
     * reports exact sizes (valgrind's, a preloaded one) does. */
    size_t k = (malloc_usable_size(p) + 8) >> 4;
    if (k < 2 || k > JA_MAXCHUNK / 16 || ja.n[k] >= JA_KEEP || ja.state < 0) {
        free(p);
        return;
    }
    if (!ja.state) {
        pthread_once(&ja_once, ja_key_make);
        if (pthread_setspecific(ja_key, &ja) != 0) {
            free(p);
            return;
        }
        ja.state = 1;
    }
    *(void **)p = ja.top[k];
    ja.top[k] = p;
    ja.n[k]++;
}
#endif

/*
 * Reply buffers. Every answer is one malloc'd buffer that libmicrohttpd
 * frees once it is sent; at a few KB it is past glibc's per-thread cache,
 * and the pair costs some 700 instructions of a small request's own. A
 * thread keeps the last RB_KEEP it was given back (each at most RB_MAX
 * bytes) for its next answers. They stay malloc's own: a buffer from
 * x_reply_alloc may be given to free(), and x_reply_free takes any block
 * malloc gave. Sanitizer builds use malloc and free directly.
 */
#define RB_KEEP 4
#define RB_MAX (64 * 1024)

#if JA_CACHE
struct rb_cache {
    void *b[RB_KEEP];
    size_t cap[RB_KEEP];
    unsigned n;
    int state;                          /* 0 new, 1 registered for its exit, -1 exited */
};
static __thread struct rb_cache rb;
static pthread_key_t rb_key;
static pthread_once_t rb_once = PTHREAD_ONCE_INIT;

static void rb_exit(void *arg)
{
    (void)arg;
    rb.state = -1;
    while (rb.n)
        free(rb.b[--rb.n]);
}

static void rb_key_make(void)
{
    if (pthread_key_create(&rb_key, rb_exit) != 0)
        abort();
}
#endif

void *x_reply_alloc(size_t n)
{
#if JA_CACHE
    for (unsigned i = 0; i < rb.n; i++)
        if (rb.cap[i] >= n) {
            void *p = rb.b[i];
            rb.n--;
            rb.b[i] = rb.b[rb.n];
            rb.cap[i] = rb.cap[rb.n];
            return p;
        }
#endif
    return xmalloc(n);
}

void x_reply_free(void *p)
{
#if JA_CACHE
    if (!p)
        return;
    size_t cap = malloc_usable_size(p);
    if (rb.n < RB_KEEP && cap <= RB_MAX && rb.state >= 0) {
        if (!rb.state) {
            pthread_once(&rb_once, rb_key_make);
            if (pthread_setspecific(rb_key, &rb) != 0) {
                free(p);
                return;
            }
            rb.state = 1;
        }
        rb.b[rb.n] = p;
        rb.cap[rb.n++] = cap;
        return;
    }
#endif
    free(p);
}

void x_install_json_alloc(void)
{
#if JA_CACHE
    json_set_alloc_funcs(ja_malloc, ja_free);
#else
    json_set_alloc_funcs(xmalloc, free);
#endif
}

/* ---- errors ------------------------------------------------------------ */

void err_set(struct err *e, int line, int col, const char *fmt, ...)
{
    va_list ap;
    if (!e)
        return;
    e->line = line;
    e->col = col;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(e->msg);
}

void err_vfileline(struct err *e, const char *file, size_t line, const char *fmt, va_list ap)
{
    if (!e)
        return;
    char msg[400], where[32];
    vsnprintf(msg, sizeof msg, fmt, ap);
    int l = line > INT_MAX ? 0 : (int)line;
    if (line)
        snprintf(where, sizeof where, ":%zu: ", line);
    else
        snprintf(where, sizeof where, ": ");
    /* A path near PATH_MAX would fill the message and push the line and the
     * reason out: the path gives up its head instead (its tail names the
     * file), cut where a character starts. */
    size_t room = sizeof e->msg - 1 - strlen(where) - strlen(msg);
    size_t fl = strlen(file);
    const char *lead = "";
    if (fl > room) {
        lead = "...";
        file += fl - (room - 3);
        while (((unsigned char)*file & 0xC0) == 0x80)
            file++;
    }
    err_set(e, l, 0, "%s%s%s%s", lead, file, where, msg);
}

void err_fileline(struct err *e, const char *file, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vfileline(e, file, line, fmt, ap);
    va_end(ap);
}

void err_copy(char *dst, size_t n, const struct err *e)
{
    if (!n)
        return;
    size_t len = utf8_trim(e->msg, strnlen(e->msg, n - 1));
    memcpy(dst, e->msg, len);
    dst[len] = '\0';
}

/* ---- buffers ----------------------------------------------------------- */

void buf_init(struct buf *b, size_t max)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

int buf_reserve(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need < b->len || (b->max && b->len + extra > b->max))
        return -ENOSPC;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -ENOSPC;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    if (buf_reserve(b, (size_t)n) < 0)
        return -ENOSPC;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void buf_cleanup(struct buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *buf_steal(struct buf *b, size_t *len)
{
    char *p = b->p ? b->p : xstrdup("");
    if (len)
        *len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

size_t x_u64_dec(char *out, uint64_t v)
{
    char tmp[20], *e = tmp + sizeof tmp, *q = e;
    do {
        *--q = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t n = (size_t)(e - q);
    memcpy(out, q, n);
    out[n] = '\0';
    return n;
}

size_t x_i64_dec(char *out, int64_t v)
{
    if (v >= 0)
        return x_u64_dec(out, (uint64_t)v);
    out[0] = '-';
    return 1 + x_u64_dec(out + 1, 0 - (uint64_t)v);
}

const char *x_casestr(const char *hay, const char *lower)
{
    /* Naive, but linear for the needles it is given (media types): an
     * attempt can only start at a byte equal to the needle's first, and
     * none of them repeats its first byte more than a few times. */
    unsigned char first = (unsigned char)lower[0];
    if (!first)
        return hay;
    unsigned char up = first >= 'a' && first <= 'z' ? (unsigned char)(first - 32) : first;
    for (const unsigned char *h = (const unsigned char *)hay; *h; h++) {
        if (*h != first && *h != up)
            continue;
        size_t i = 1;
        for (;; i++) {
            unsigned want = (unsigned char)lower[i], got = h[i];
            if (!want)
                return (const char *)h;
            if ((got >= 'A' && got <= 'Z' ? got + 32 : got) != want)
                break;
        }
    }
    return NULL;
}

size_t x_strlcpy(char *out, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap - 1);
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

/* Word-at-a-time tests (the classic bit tricks). */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define HASZERO(x) (((x) - ONES) & ~(x) & HIGHS)

static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* The bytes of w (8 input bytes, first in the low byte) that need a look:
 * below 0x20, '"', '\\', and with `high` also every byte from 0x80 on.
 * Only the lowest flagged byte is sure to be one of them (a borrow can flag
 * a byte above it), and that is all the scan uses. */
static inline uint64_t esc_mask8(uint64_t w, uint64_t high)
{
    uint64_t lt = (w - ONES * 0x20) & ~w & HIGHS;
    return lt | HASZERO(w ^ (ONES * '"')) | HASZERO(w ^ (ONES * '\\')) | (w & high);
}

/* Offset of the first byte of s[0..n) that needs a look (n if none). */
static size_t esc_scan(const unsigned char *s, size_t n, uint64_t high)
{
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t m = esc_mask8(load8((const char *)s + i), high);
        if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + ((size_t)__builtin_ctzll(m) >> 3);
#else
            break;
#endif
        }
    }
    for (; i < n; i++) {
        unsigned c = s[i];
        if (c < 0x20 || c == '"' || c == '\\' || (high && c >= 0x80))
            break;
    }
    return i;
}

/* Output staged in a small array, so that the many short runs and escapes
 * of prose (a newline every line) cost one buf_append per kilobyte rather
 * than two per escape. */
struct esc_out {
    struct buf *b;
    size_t n;
    char tmp[1024];
};

static int esc_flush(struct esc_out *o)
{
    int rc = buf_append(o->b, o->tmp, o->n);
    o->n = 0;
    return rc;
}

static int esc_put(struct esc_out *o, const char *s, size_t n)
{
    if (n > sizeof o->tmp - o->n) {
        if (esc_flush(o) < 0)
            return -ENOSPC;
        if (n > sizeof o->tmp / 2)
            return buf_append(o->b, s, n);
    }
    memcpy(o->tmp + o->n, s, n);
    o->n += n;
    return 0;
}

/* jansson's escapes: '"', '\\', the short forms of \b \f \n \r \t, else
 * \u00XX in uppercase, so bytes rendered here and by json_dumps are the
 * same. */
static int esc_put_esc(struct esc_out *o, unsigned c)
{
    static const char hex[] = "0123456789ABCDEF";
    char e[6] = {'\\', 0, '0', '0', hex[c >> 4 & 15], hex[c & 15]};
    size_t n = 2;
    switch (c) {
    case '"': e[1] = '"'; break;
    case '\\': e[1] = '\\'; break;
    case '\b': e[1] = 'b'; break;
    case '\f': e[1] = 'f'; break;
    case '\n': e[1] = 'n'; break;
    case '\r': e[1] = 'r'; break;
    case '\t': e[1] = 't'; break;
    default: e[1] = 'u'; n = 6;
    }
    return esc_put(o, e, n);
}

static int json_escape(struct buf *b, const char *s, size_t n, int check)
{
    const unsigned char *p = (const unsigned char *)s;
    uint64_t high = check ? HIGHS : 0;
    size_t i = 0, run = 0, start = b->len;
    int rc = 0;
    struct esc_out o;
    o.b = b;
    o.n = 0;
    while ((i += esc_scan(p + i, n - i, high)) < n) {
        unsigned c = p[i];
        if (c >= 0x80) {
            size_t k = utf8_seq(p + i, n - i);
            if (!k) {
                rc = -EILSEQ;
                goto out;
            }
            i += k;
            continue;
        }
        if (esc_put(&o, s + run, i - run) < 0 || esc_put_esc(&o, c) < 0) {
            rc = -ENOSPC;
            goto out;
        }
        run = ++i;
    }
    if (!o.n)
        rc = buf_append(b, s + run, n - run);
    else if (esc_put(&o, s + run, n - run) < 0 || (o.n && esc_flush(&o) < 0))
        rc = -ENOSPC;
out:
    if (rc < 0) {
        b->len = start;
        if (b->p)
            b->p[start] = '\0';
    }
    return rc;
}

int buf_json_escape(struct buf *b, const char *s, size_t n)
{
    return json_escape(b, s, n, 0);
}

int buf_json_escape_utf8(struct buf *b, const char *s, size_t n)
{
    return json_escape(b, s, n, 1);
}

/* Bytes of w equal to c, exactly: 0x80 in each (no borrow between bytes,
 * unlike HASZERO), so they can be counted. */
static inline uint64_t eq_mask8(uint64_t w, unsigned char c)
{
    uint64_t v = w ^ (ONES * c), lows = ~HIGHS;
    return ~(((v & lows) + lows) | v | lows);
}

size_t buf_json_text_escapes(const char *s, size_t n)
{
    size_t c = 0, i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t w = load8(s + i);
        uint64_t m = (eq_mask8(w, '"') | eq_mask8(w, '\\')) >> 7;
        c += (size_t)((m * ONES) >> 56);    /* a bit a byte: their sum in the top byte */
    }
    for (; i < n; i++)
        c += s[i] == '"' || s[i] == '\\';
    return c;
}

int buf_json_escape_text(struct buf *b, const char *s, size_t n, size_t escapes)
{
    size_t start = b->len;
    if (buf_reserve(b, n + escapes) < 0)
        return -ENOSPC;
    char *o = b->p + b->len;
    size_t i = 0, left = escapes;   /* escapes the room still holds */
    while (i < n) {
        size_t j = i;
        for (; n - j >= 8; j += 8) {
            uint64_t m = eq_mask8(load8(s + j), '"') | eq_mask8(load8(s + j), '\\');
            if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* the lowest flagged byte is the first (not so big-endian:
                 * there the bytes below find it) */
                j += (size_t)__builtin_ctzll(m) >> 3;
#endif
                break;
            }
        }
        while (j < n && s[j] != '"' && s[j] != '\\')
            j++;
        memcpy(o, s + i, j - i);
        o += j - i;
        if (j < n) {
            if (!left) {    /* escapes undercounted: room for the worst case */
                b->len = (size_t)(o - b->p);
                if (buf_reserve(b, 2 * (n - j)) < 0) {
                    b->len = start;
                    b->p[start] = '\0';
                    return -ENOSPC;
                }
                o = b->p + b->len;
                left = n - j;
            }
            left--;
            *o++ = '\\';
            *o++ = s[j++];
        }
        i = j;
    }
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
    return 0;
}

/* Characters that change how the rest of a line shows: C1 controls (a
 * terminal may take U+009B as CSI), bidirectional marks and overrides, and
 * the Unicode line and paragraph separators. */
static int text_hidden(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

int buf_text_escape(struct buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t start = b->len, i = 0, run = 0;
    int rc = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c >= 0x20 && c < 0x7F) {
            i++;
            continue;
        }
        uint32_t cp = 0;
        size_t k = c >= 0x80 ? utf8_decode(p + i, n - i, &cp) : 0;
        if (k && !text_hidden(cp)) {
            i += k;
            continue;
        }
        if ((rc = buf_append(b, s + run, i - run)) < 0)
            break;
        if (k)
            rc = buf_printf(b, "\\u{%04X}", cp);
        else if (c == '\n' || c == '\r' || c == '\t')
            rc = buf_printf(b, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        else
            rc = buf_printf(b, "\\x%02X", c);
        if (rc < 0)
            break;
        i += k ? k : 1;
        run = i;
    }
    if (rc == 0)
        rc = buf_append(b, s + run, n - run);
    if (rc < 0) {
        b->len = start;
        if (b->p)
            b->p[start] = '\0';
        return -ENOSPC;
    }
    return 0;
}

void x_fprintf_text(FILE *f, const char *fmt, ...)
{
    char stack[1024], *s = stack;
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof stack) {
        s = xmalloc((size_t)n + 1);
        vsnprintf(s, (size_t)n + 1, fmt, aq);
    }
    va_end(aq);
    if (n < 0) {
        if (s != stack)
            free(s);
        return;
    }
    size_t len = (size_t)n, fl = strlen(fmt);
    /* Only the format's own final newline ends the line. */
    int nl = fl && fmt[fl - 1] == '\n' && len && s[len - 1] == '\n';
    struct buf b;
    buf_init(&b, 0);
    buf_text_escape(&b, s, len - (size_t)nl);
    if (nl)
        buf_append(&b, "\n", 1);
    fwrite(b.p ? b.p : "", 1, b.len, f);
    buf_cleanup(&b);
    if (s != stack)
        free(s);
}

/* ---- logging ----------------------------------------------------------- */

/* Atomic: a level set while a thread of the process logs (a test's, or a
 * start-up thread's line) is a race otherwise. Relaxed: a level is no
 * message to other data. */
static _Atomic int log_min = LOG_INFO;
static int log_json;

static int log_below(enum log_level lvl)
{
    return (int)lvl < atomic_load_explicit(&log_min, memory_order_relaxed);
}

void log_set_level(enum log_level lvl)
{
    atomic_store_explicit(&log_min, (int)lvl, memory_order_relaxed);
}
void log_set_json(int on) { log_json = on; }

static char log_tag[16];
void log_set_tag(const char *tag) { snprintf(log_tag, sizeof log_tag, "%s", tag); }

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    char msg[2048], ts[40];
    va_list ap;

    if (log_below(lvl))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    now_utc(ts, sizeof ts);
    if (log_json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s?}", "ts", ts, "level", names[lvl], "msg", msg,
                              "proc", log_tag[0] ? log_tag : NULL);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
        /* One write per line, so lines from several threads never interleave. */
        if (s)
            fprintf(stderr, "%s\n", s);
        free(s);
        json_decref(o);
    } else {
        fprintf(stderr, "%s %-5s %s%s%s\n", ts, names[lvl], log_tag[0] ? log_tag : "",
                log_tag[0] ? " " : "", msg);
    }
}

void log_request(const char *method, const char *tool, const char *client, unsigned status,
                 double ms, int client_gone)
{
    if (log_below(LOG_INFO))
        return;
    if (!log_json) {
        log_msg(LOG_INFO, "%s %s%s%s%s %u %.3f ms%s", method ? method : "-",
                tool && *tool ? "tool=" : "", tool && *tool ? tool : "",
                client ? " client=" : "", client ? client : "", status, ms,
                client_gone ? " (client gone)" : "");
        return;
    }
    char ts[40];
    now_utc(ts, sizeof ts);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:i, s:f, s:b}", "ts", ts, "level",
                          "info", "event", "request", "method", method, "tool",
                          tool && *tool ? tool : NULL, "client", client, "status", (int)status,
                          "duration_ms", ms, "client_gone", client_gone);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    if (s)
        fprintf(stderr, "%s\n", s);
    free(s);
    json_decref(o);
}

/* ---- time -------------------------------------------------------------- */

uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double now_ms(void)
{
    return (double)now_ns() / 1e6;
}

int64_t now_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct timespec now_after_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

void now_utc(char *out, size_t n)
{
    iso_utc_ms(now_wall_ms(), out, n);
}

/* sec as ISO 8601 UTC, with ".mmm" when ms >= 0. */
static void iso_fmt(int64_t sec, int ms, char *out, size_t n)
{
    struct tm tm;
    time_t t = (time_t)sec;
    if (!n)
        return;
    out[0] = '\0';
    if ((int64_t)t != sec || !gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 ||
        tm.tm_year + 1900 < 0)
        return;
    char frac[8] = "";
    if (ms >= 0)
        snprintf(frac, sizeof frac, ".%03d", ms);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

void iso_utc(int64_t sec, char *out, size_t n)
{
    iso_fmt(sec, -1, out, n);
}

void iso_utc_ms(int64_t ms, char *out, size_t n)
{
    /* floor division: the millisecond part of a time before the epoch
     * counts forward from the second before it */
    int64_t sec = ms / 1000, rem = ms % 1000;
    if (rem < 0) {
        sec--;
        rem += 1000;
    }
    iso_fmt(sec, (int)rem, out, n);
}

/* ---- UTF-8 ------------------------------------------------------------- */

size_t utf8_decode(const void *s, size_t n, uint32_t *cp)
{
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    const unsigned char *p = s;
    if (!n)
        return 0;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t k;
    uint32_t v;
    if (c < 0xC2)
        return 0;       /* a continuation byte, or the lead of an overlong pair */
    else if (c < 0xE0)
        k = 2, v = c & 0x1F;
    else if (c < 0xF0)
        k = 3, v = c & 0x0F;
    else if (c < 0xF5)
        k = 4, v = c & 0x07;
    else
        return 0;
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3Fu);
    }
    if (v < least[k] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return k;
}

size_t utf8_seq(const unsigned char *s, size_t n)
{
    uint32_t cp;
    return n && s[0] ? utf8_decode(s, n, &cp) : 0;
}

int buf_put_utf8(struct buf *b, uint32_t cp)
{
    char u[4];
    return buf_append(b, u, utf8_encode(cp, u));
}

size_t utf8_valid_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII without NUL, eight bytes at a time */
        while (n - i >= 8) {
            uint64_t w = load8(s + i);
            if ((w & HIGHS) || HASZERO(w))
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (p[i] && p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
}

int utf8_valid(const char *s, size_t n)
{
    return utf8_valid_len(s, n) == n;
}

void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq(p + i, n - i);
        if (!k) {
            p[i++] = '?';
            continue;
        }
        i += k;
    }
}

size_t utf8_trim(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = n, back = 0;
    /* Walk back over at most 3 continuation bytes to the lead byte. */
    while (i > 0 && back < 4 && (p[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return n;
    unsigned c = p[i - 1];
    size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (c < 0x80)
        return n;
    return back + 1 >= want ? n : i - 1;
}

/* ---- hashing ------------------------------------------------------------ */

uint64_t hash_fnv1a(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;     /* the offset basis and prime of FNV-1a 64 */
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

/* ---- hex and percent-encoding ------------------------------------------- */

int hex_digit(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void hex_encode(const void *p, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = p;
    /* forwards: step i writes out[2i], out[2i+1], which p may share once
     * they are read, when p is the upper half of out (x_random_hex) */
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        out[2 * i] = hex[c >> 4];
        out[2 * i + 1] = hex[c & 15];
    }
    out[2 * n] = '\0';
}

int hex_decode(const char *s, size_t n, void *out)
{
    unsigned char *o = out;
    if (n % 2)
        return -EINVAL;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit((unsigned char)s[i]), lo = hex_digit((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        o[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int buf_pct_encode(struct buf *b, const char *s, size_t n, const char *keep)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t start = b->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        int rc;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            (ch && strchr("-._~", ch)) || (ch && keep && strchr(keep, ch))) {
            rc = buf_append(b, s + i, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            rc = buf_append(b, e, 3);
        }
        if (rc < 0) {
            b->len = start;
            if (b->p)
                b->p[start] = '\0';
            return rc;
        }
    }
    return 0;
}

int pct_decode(const char *in, size_t n, char *out, size_t *outlen)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] != '%') {
            out[j++] = in[i];
            continue;
        }
        int hi = n - i > 2 ? hex_digit((unsigned char)in[i + 1]) : -1;
        int lo = hi < 0 ? -1 : hex_digit((unsigned char)in[i + 2]);
        if (lo < 0 || (hi | lo) == 0)
            return -EINVAL;
        out[j++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[j] = '\0';
    if (outlen)
        *outlen = j;
    return 0;
}

/* ---- list pages ------------------------------------------------------------ */

struct list_window list_window(size_t total, size_t off, size_t per)
{
    struct list_window w;
    w.start = off < total ? off : total;
    w.end = total - w.start > per ? w.start + per : total;
    w.next = w.end < total ? w.end : 0;
    return w;
}

int list_cursor_parse(const char *s, size_t max, size_t *off)
{
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    size_t v = 0;
    for (; *s; s++) {
        size_t d = (size_t)(*s - '0');
        /* v * 10 + d <= max, without overflow */
        if (*s < '0' || *s > '9' || d > max || v > (max - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    *off = v;
    return 0;
}

int x_random(void *p, size_t n)
{
    unsigned char *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(b + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

int x_random_hex(char *out, size_t n)
{
    /* The bytes go in the upper half of out, which hex_encode (working
     * backwards) may read from. */
    unsigned char *r = (unsigned char *)out + n;
    if (x_random(r, n) < 0)
        return -1;
    hex_encode(r, n, out);
    return 0;
}

int x_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

size_t x_pread_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

int x_open_regular(int dfd, const char *path, struct stat *st)
{
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    return fd < 0 ? -errno : x_keep_regular(fd, st);
}

int x_keep_regular(int fd, struct stat *st)
{
    if (fstat(fd, st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    }
    return fd;
}

/* ---- peers ------------------------------------------------------------------ */

void x_peer_key(const struct sockaddr *sa, char *out, size_t n)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char ip[INET6_ADDRSTRLEN] = "unknown";
    const char *len = "";
    if (sa && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
    } else if (sa && sa->sa_family == AF_INET6) {
        unsigned char a[16];
        memcpy(a, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, 16);
        if (!memcmp(a, mapped, 12)) {
            inet_ntop(AF_INET, a + 12, ip, sizeof ip);
        } else {
            memset(a + 8, 0, 8);
            inet_ntop(AF_INET6, a, ip, sizeof ip);
            len = "/64";
        }
    }
    snprintf(out, n, "addr:%s%s", ip, len);
}

/* ---- per-thread slots ------------------------------------------------------- */

static void tslot_exit(void *arg)
{
    struct tslot *sl = arg;
    struct tslots *t = sl->set;
    int i = (int)(sl - t->s);
    if (!t->keep || !t->keep(i))
        atomic_store(&sl->taken, 0);
}

int tslot_claim(struct tslots *t)
{
    if (!atomic_load(&t->ready)) {
        pthread_mutex_lock(&t->mu);
        if (!atomic_load(&t->ready)) {
            for (int i = 0; i < t->n; i++)
                t->s[i].set = t;
            if (pthread_key_create(&t->key, tslot_exit) != 0) {
                pthread_mutex_unlock(&t->mu);
                return -1;
            }
            atomic_store(&t->ready, 1);
        }
        pthread_mutex_unlock(&t->mu);
    }
    for (int i = 0; i < t->n; i++) {
        _Bool expect = 0;
        if (atomic_compare_exchange_strong(&t->s[i].taken, &expect, 1)) {
            pthread_setspecific(t->key, &t->s[i]);
            return i;
        }
    }
    return -1;
}
