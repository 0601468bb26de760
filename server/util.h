/*
 * util.h - allocation, error records, capped buffers, logging and the small
 * primitives (UTF-8, hashing, hex, percent-encoding, ISO 8601 time, list
 * pages) shared by every module: each is written here once.
 *
 * Allocation failure aborts (as redis's zmalloc does): every size that comes
 * from outside is capped before it is allocated, so running out of memory is
 * a machine problem, not an input problem.
 */
#ifndef SKILL_UTIL_H
#define SKILL_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- memory (prefix x) ------------------------------------------------ */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Zeroed memory shared with processes forked later (worker counters). */
void *x_shared_alloc(size_t n);
void x_shared_free(void *p, size_t n);
/* A buffer for an answer, from the few this thread was given back (any
 * may still go to free()), and the way to give one back. */
void *x_reply_alloc(size_t n);
void x_reply_free(void *p);
/* Route jansson's allocations through the functions above. Call once. */
void x_install_json_alloc(void);
/* Writes all of data[0..n) (retrying short writes and EINTR): 0, or -1 with errno. */
int x_write_all(int fd, const void *data, size_t n);
/* n bytes from the kernel's CSPRNG (getrandom, retried on EINTR and short
 * reads). 0, or -1 with errno. */
int x_random(void *p, size_t n);
/* n random bytes as 2n lowercase hex characters and a NUL (out holds 2n+1). */
int x_random_hex(char *out, size_t n);
/* Reads up to n bytes from offset 0 (retrying short reads and EINTR); the
 * count read before the end of the file, or an error, stops it. */
size_t x_pread_full(int fd, void *buf, size_t n);
struct stat;
/* Opens path (relative to dfd) for reading without ever blocking in open()
 * or a later read: O_NONBLOCK, then the file must be a regular file (a FIFO
 * or device put in place of a skill file would otherwise hold the thread).
 * Fills *st. The fd, or -errno; -EISDIR for a folder, -EINVAL for any other
 * kind of file. */
int x_open_regular(int dfd, const char *path, struct stat *st);
/* The second half of x_open_regular for a descriptor opened some other way
 * (O_NONBLOCK, so that a FIFO did not block the open): fstats fd into *st
 * and returns it when it is a regular file; else closes it and returns
 * -EISDIR, -EINVAL or the fstat's -errno. */
int x_keep_regular(int fd, struct stat *st);

/* ---- error record (like jansson's json_error_t) ---------------------- */

/*
 * A message for a person (the one error convention besides a negative
 * errno; see docs/internals/conventions.md): what went wrong, in words
 * that name the input, set where the failure is understood and passed up
 * unchanged. The function itself returns -1, NULL or a negative errno.
 */
struct err {
    int line;       /* 1-based, 0 when unknown */
    int col;        /* 1-based, 0 when unknown */
    char msg[512];  /* room for a URL or a path and what was wrong with it */
};

/* Sets *e (NULL: nothing); msg is cut to fit and made valid UTF-8 ('?' for
 * what is not, a cut "%.200s" of input included), so it can go into JSON. */
void err_set(struct err *e, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* err_set with the text "file:line: msg" ("file: msg" when line is 0) and
 * e->line = line: the message of a bad line in a file read, which a person
 * reads whole and a caller may still ask for the line. A file name too long
 * to leave room for the rest keeps its tail after "...". */
void err_fileline(struct err *e, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void err_vfileline(struct err *e, const char *file, size_t line, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* e->msg into dst[0..n), cut where a character starts: for a record that
 * keeps the words in a field of its own size. */
void err_copy(char *dst, size_t n, const struct err *e);

/* ---- capped growable buffer (curl dynbuf) ---------------------------- */

struct buf {
    char *p;        /* NUL-terminated while len < cap */
    size_t len;
    size_t cap;
    size_t max;     /* hard ceiling; 0 = unlimited */
};

void buf_init(struct buf *b, size_t max);
/* Returns 0, or -ENOSPC when the append would pass max (buffer unchanged). */
/* Room for extra more bytes (and the NUL): one allocation up front where the
 * final size is known, instead of a chain of doublings that copy. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);
void buf_cleanup(struct buf *b);
/* Hands the storage to the caller (free()), leaving b empty. */
char *buf_steal(struct buf *b, size_t *len);

/*
 * Appends s[0..n) as the inside of a JSON string (no quotes), in the bytes
 * jansson writes: '"', '\\' and control bytes escaped (uppercase \u00XX),
 * everything else (UTF-8 included) copied as is. 0, or -ENOSPC with b
 * unchanged.
 */
int buf_json_escape(struct buf *b, const char *s, size_t n);
/* The same, failing with -EILSEQ (b unchanged) on bytes that are not UTF-8,
 * as json_dumps fails; NUL is fine (it becomes \u0000). */
int buf_json_escape_utf8(struct buf *b, const char *s, size_t n);
/* JSON text (compact JSON, which holds no control byte) as the contents of
 * a JSON string: only quotes and backslashes are escaped, the same bytes
 * buf_json_escape gives it, at a fraction of the cost. escapes is
 * buf_json_text_escapes(s, n) (the room it takes beyond n). */
int buf_json_escape_text(struct buf *b, const char *s, size_t n, size_t escapes);
/* The escapes buf_json_escape_text adds to s[0..n). */
size_t buf_json_text_escapes(const char *s, size_t n);

/*
 * Appends s[0..n) for a person reading a terminal: C0 controls (\n, \r and
 * \t as such, the rest as \xNN), DEL, bytes that are not UTF-8 (\xNN), and
 * the C1 controls, bidirectional overrides and line separators (\u{XXXX})
 * are written as escapes; everything else is copied. Text from skill
 * content or the network so can neither move the cursor, recolour the
 * screen nor start a line of its own. 0, or -ENOSPC with b unchanged.
 */
int buf_text_escape(struct buf *b, const char *s, size_t n);
/* printf to f with the whole formatted text through buf_text_escape, but
 * for the newline fmt itself ends with: every human-readable report line
 * that shows names, paths, reasons or messages it did not write itself. */
void x_fprintf_text(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- logging (stderr, one line per event) ---------------------------- */

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
void log_set_json(int on);
/* A short tag ("master", "w0") on every line of this process. */
void log_set_tag(const char *tag);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line per answered request: structured fields in JSON mode. */
void log_request(const char *method, const char *tool, const char *client, unsigned status,
                 double ms, int client_gone);
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* ---- peers ----------------------------------------------------------- */

struct sockaddr;
/*
 * The key an unauthenticated peer's limits are counted under, as
 * "addr:<address>": an IPv4 address (an IPv4-mapped IPv6 one included) as
 * itself, an IPv6 address by its /64, the block a single host or router is
 * handed and can spend one address at a time; "addr:unknown" otherwise.
 */
void x_peer_key(const struct sockaddr *sa, char *out, size_t n);

/* ---- time ------------------------------------------------------------ */

uint64_t now_ns(void);      /* CLOCK_MONOTONIC */
double now_ms(void);
/* The wall clock (CLOCK_REALTIME) in milliseconds since the epoch. */
int64_t now_wall_ms(void);
/* The wall clock ms from now, as pthread_cond_timedwait wants a deadline. */
struct timespec now_after_ms(long ms);
/* The wall clock as "2026-11-30T01:02:03.456Z" (logs, audit lines). */
void now_utc(char *out, size_t n);

/* ISO 8601 UTC of a time since the epoch: iso_utc "2026-11-30T01:02:03Z"
 * (ISO_UTC_LEN characters), iso_utc_ms "2026-11-30T01:02:03.456Z"
 * (ISO_UTC_MS_LEN). A time before the epoch counts back (-1 ms is
 * 1969-12-31T23:59:59.999Z); a time gmtime cannot place (past year 9999 on
 * the way out of the format's four digits, or beyond time_t) writes "". */
#define ISO_UTC_LEN 20
#define ISO_UTC_MS_LEN 24
void iso_utc(int64_t sec, char *out, size_t n);
void iso_utc_ms(int64_t ms, char *out, size_t n);

/* ---- UTF-8 ----------------------------------------------------------- */

/*
 * The one UTF-8 decoder. The character at s[0..n) into *cp and its length
 * (1 to 4), or 0 when s does not start one: a continuation byte, a sequence
 * cut short by n (n == 0 included), an overlong form, a surrogate, anything
 * above U+10FFFF (jansson's rules, RFC 3629). NUL is U+0000 of length 1.
 * *cp is left alone on 0.
 */
size_t utf8_decode(const void *s, size_t n, uint32_t *cp);
/* cp (a scalar value: at most U+10FFFF, not a surrogate) as UTF-8 into
 * out, which holds 4; the length written. */
static inline size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
/* Appends cp as UTF-8 (see utf8_encode): 0, or -ENOSPC with b unchanged. */
int buf_put_utf8(struct buf *b, uint32_t cp);
/* 1 when [s, s+n) is valid UTF-8 with no NUL byte. */
int utf8_valid(const char *s, size_t n);
/* Offset of the first byte of [s, s+n) that is NUL or does not start a
 * valid sequence (utf8_decode), n when there is none. */
size_t utf8_valid_len(const char *s, size_t n);
/* Length of the UTF-8 sequence at s[0..n), 0 when it is not one (or is NUL):
 * utf8_decode without the code point. */
size_t utf8_seq(const unsigned char *s, size_t n);
/* Replaces, in place, every byte that is not part of valid UTF-8 (and NUL
 * bytes before the terminator cannot exist) with '?'. For messages built
 * with "%.*s" cuts that may split a character. */
void utf8_sanitize(char *s);
/* cp folded for case- and width-insensitive comparison: ASCII, Latin-1,
 * Latin Extended-A, basic Greek and Cyrillic capitals to their small
 * letters, fullwidth ASCII letters and digits to ASCII ones. Simple one to
 * one mappings only (no sharp s to "ss"); anything else, including a value that is
 * not a code point, comes back unchanged. Inline: the tokenizer folds every
 * non-ASCII character it reads. */
static inline uint32_t utf8_fold(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z' ? c + 32 : c;
    if (c < 0xC0)
        return c;
    if (c <= 0xDE)
        return c == 0xD7 ? c : c + 32;          /* Latin-1, not the sign x */
    if (c >= 0x100 && c <= 0x17F) {            /* Latin Extended-A: pairs */
        if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F)
            return c;                           /* no simple pair (dotted I, kra, ...) */
        if (c == 0x178)
            return 0xFF;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
            return (c & 1) ? c + 1 : c;         /* these runs pair odd capitals */
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0xFF10 && c <= 0xFF19)
        return '0' + (c - 0xFF10);
    if (c >= 0xFF21 && c <= 0xFF3A)
        return 'a' + (c - 0xFF21);
    if (c >= 0xFF41 && c <= 0xFF5A)
        return 'a' + (c - 0xFF41);
    return c;
}
/* Largest n' <= n such that [s, s+n') does not end inside a sequence. */
size_t utf8_trim(const char *s, size_t n);

/* ---- hashing ---------------------------------------------------------- */

/* FNV-1a (64-bit) of p[0..n): hash-table and cache slots inside one run of
 * the server (the values are never stored or compared across versions). */
uint64_t hash_fnv1a(const void *p, size_t n);
/* The same folded to 32 bits, the high half into the low: FNV's low bits
 * are its weakest, and a power-of-two table or a modulus reads only them. */
static inline uint32_t hash_fnv1a32(const void *p, size_t n)
{
    uint64_t h = hash_fnv1a(p, n);
    return (uint32_t)(h ^ h >> 32);
}

/* ---- numbers and short strings without printf ------------------------ */

/* v in decimal into out (room for 21: 20 digits and a NUL), NUL-terminated;
 * returns its length. What "%" PRIu64 writes, for the request path, where
 * vsnprintf costs a few hundred instructions a number. */
size_t x_u64_dec(char *out, uint64_t v);
/* The same for a signed value ("%" PRId64; room for 21). */
size_t x_i64_dec(char *out, int64_t v);
/* What snprintf(out, cap, "%s", s) leaves in out (cap > 0): s cut to
 * cap - 1 bytes, NUL-terminated. Returns the bytes copied. */
size_t x_strlcpy(char *out, const char *s, size_t cap);
/* strcasestr(hay, lower) for an ASCII needle written in lowercase, as the C
 * locale (the server's) compares: the first place it occurs in hay, any
 * case, or NULL. For header values: glibc's two-way search spends some 800
 * instructions setting up before it reads a byte of a 40-byte Accept. */
const char *x_casestr(const char *hay, const char *lower);

/* ---- hex and percent-encoding ---------------------------------------- */

/* The value of hex digit c (either case), or -1. */
int hex_digit(int c);
/* n bytes as 2n lowercase hex digits and a NUL (out holds 2n+1). */
void hex_encode(const void *p, size_t n, char *out);
/* The n hex digits s[0..n) (either case) as n/2 bytes into out: 0, or
 * -EINVAL when n is odd or a character is not a hex digit (out partly
 * written). */
int hex_decode(const char *s, size_t n, void *out);

/* Appends s[0..n) percent-encoded (uppercase %XX): the unreserved
 * characters of RFC 3986 (A-Z a-z 0-9 - . _ ~) and those in keep stay as
 * they are, every other byte is escaped. 0, or -ENOSPC with b unchanged. */
int buf_pct_encode(struct buf *b, const char *s, size_t n, const char *keep);
/* Percent-decodes in[0..n) into out (room for n+1; out may be in), NUL-
 * terminated, its length in *outlen. 0, or -EINVAL when a '%' is not
 * followed by two hex digits or encodes NUL (%00): a decoded NUL would cut
 * the text short wherever it is used as a C string. */
int pct_decode(const char *in, size_t n, char *out, size_t *outlen);

/* ---- list pages --------------------------------------------------------- */

/* One page of a list of total items from offset off, at most per items:
 * items [start, end), and next, the offset the following page starts at
 * (0 when this page is the last). An offset past the end is an empty last
 * page. */
struct list_window {
    size_t start, end, next;
};
struct list_window list_window(size_t total, size_t off, size_t per);
/* A cursor (the decimal offset a nextCursor carried) into *off: 0, or
 * -EINVAL when s is NULL, empty, not all digits or above max. */
int list_cursor_parse(const char *s, size_t max, size_t *off);

/* ---- per-thread slots --------------------------------------------------- */

/*
 * A fixed set of slots, one claimed by each thread that asks (a hazard
 * pointer's home): claimed on the thread's first tslot_mine(), kept for the
 * thread's life, given back when it exits unless keep(slot) says the slot
 * still guards something (then it stays taken for good). The owner keeps
 * the thread's index in a _Thread_local int of its own, so a claimed slot
 * costs one thread-local read.
 *
 *   static struct tslot my_slots[256];
 *   static struct tslots my = TSLOTS_INIT(my_slots, NULL);
 *   static _Thread_local int my_slot = -1;
 *   ...  int i = tslot_mine(&my, &my_slot);   (-1: all taken)
 */
struct tslots;
struct tslot {
    atomic_bool taken;
    struct tslots *set;     /* for the thread-exit hook */
};
struct tslots {
    struct tslot *s;
    int n;
    int (*keep)(int slot);  /* at thread exit: nonzero keeps the slot taken; NULL: never */
    pthread_mutex_t mu;     /* creating key, once */
    atomic_int ready;
    pthread_key_t key;
};
#define TSLOTS_INIT(slots, keep_)                                                  \
    { (slots), (int)(sizeof(slots) / sizeof((slots)[0])), (keep_), PTHREAD_MUTEX_INITIALIZER, 0, 0 }

/* Claims a free slot for this thread: its index, or -1 when all are taken. */
int tslot_claim(struct tslots *t);
/* This thread's slot (*mine, its _Thread_local index, -1 until claimed). */
static inline int tslot_mine(struct tslots *t, int *mine)
{
    if (__builtin_expect(*mine >= 0, 1))
        return *mine;
    return *mine = tslot_claim(t);
}

#endif
