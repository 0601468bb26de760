/*
 * search_syn.c - the synonym groups: the built-in table, an operator's
 * file parsed and checked, and the table in force, reread when the file
 * changes and taken by each index build.
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

const char *search_syn_word(const struct search_synonyms *y, size_t t)
{
    return y->pool + y->tokoff[t];
}

static const struct search_synonyms *syn_sort_ctx;

static int cmp_byfirst(const void *a, const void *b)
{
    const struct search_synonyms *y = syn_sort_ctx;
    uint32_t x = *(const uint32_t *)a, z = *(const uint32_t *)b;
    int c = strcmp(search_syn_word(y, y->ent[x].tok), search_syn_word(y, y->ent[z].tok));
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

static int syn_fail(struct err *err, const char *file, size_t line, const char *msg,
                    const char *member, size_t mlen)
{
    if (member)
        err_fileline(err, file, line, "%s: '%.*s'", msg, (int)(mlen > 60 ? 60 : mlen), member);
    else
        err_fileline(err, file, line, "%s", msg);
    return -1;
}

/* Adds the groups of text (the file format) to y. */
static int syn_parse(struct search_synonyms *y, const char *text, size_t n, const char *file,
                     struct err *err)
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
            return syn_fail(err, file, line, "line longer than 4096 bytes", NULL, 0);
        if (memchr(l, '\0', len))
            return syn_fail(err, file, line, "NUL byte in the line", NULL, 0);
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
                return syn_fail(err, file, line,
                                "empty member (two commas in a row, or a comma at an end)",
                                NULL, 0);
            struct syn_words sw = { .n = 0, .over = false };
            search_tokenize(l + ms, me - ms, false, syn_emit, &sw);
            if (sw.over)
                return syn_fail(err, file, line, "member of more than 8 words",
                                l + ms, me - ms);
            if (!sw.n)
                return syn_fail(err, file, line,
                                "member with no searchable word (only punctuation or "
                                "stopwords)", l + ms, me - ms);
            search_grow((void **)&y->ent, &y->ecap, y->nent + 1, sizeof *y->ent);
            struct syn_ent *en = &y->ent[y->nent++];
            en->group = (uint32_t)y->ngroups;
            en->tok = (uint32_t)y->ntok;
            en->ntok = (uint32_t)sw.n;
            for (size_t w = 0; w < sw.n; w++) {
                size_t wl = strlen(sw.w[w]);
                search_grow((void **)&y->tokoff, &y->tcap, y->ntok + 1, sizeof *y->tokoff);
                search_grow((void **)&y->pool, &y->pool_cap, y->pool_len + wl + 1, 1);
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
            return syn_fail(err, file, line,
                            "a group needs at least two members, separated by commas", NULL, 0);
        }
        y->ngroups++;
    }
    return 0;
}

static void syn_finish(struct search_synonyms *y)
{
    y->byfirst = xmalloc((y->nent ? y->nent : 1) * sizeof *y->byfirst);
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
    char *buf = xmalloc((size_t)st->st_size + 1);
    size_t got = x_pread_full(fd, buf, (size_t)st->st_size);
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

/* The built-in groups plus path's (NULL: built-ins only), or NULL with err. */
static struct search_synonyms *syn_load(const char *path, struct stat *st, struct err *err)
{
    struct search_synonyms *y = xcalloc(1, sizeof *y);
    if (syn_parse(y, builtin_synonyms, sizeof builtin_synonyms - 1, "built-in", err))
        abort();
    if (path) {
        char *text = NULL;
        size_t len = 0;
        int rc = read_small_file(path, &text, &len, st);
        if (rc < 0) {
            err_fileline(err, path, 0, "cannot be read (%s)",
                         rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
            syn_free(y);
            return NULL;
        }
        rc = syn_parse(y, text, len, path, err);
        free(text);
        if (rc) {
            syn_free(y);
            return NULL;
        }
    }
    syn_finish(y);
    return y;
}

int search_synonyms_init(const char *path, struct err *err)
{
    struct stat st;
    pthread_mutex_lock(&syn_mu);
    struct search_synonyms *y = syn_load(path, &st, err);
    if (y) {
        search_syn_unref(syn_table);
        syn_table = y;
        free(syn_path);
        syn_path = path ? strdup(path) : NULL;
        syn_st = st;
        syn_st_ok = path != NULL;
    }
    pthread_mutex_unlock(&syn_mu);
    return y ? 0 : -1;
}

int search_synonyms_check(const char *text, size_t len, const char *file, struct err *err)
{
    struct search_synonyms *y = xcalloc(1, sizeof *y);
    int rc = syn_parse(y, text, len, file, err);
    syn_free(y);
    return rc;
}

void search_synonyms_shutdown(void)
{
    pthread_mutex_lock(&syn_mu);
    search_syn_unref(syn_table);
    syn_table = NULL;
    free(syn_path);
    syn_path = NULL;
    pthread_mutex_unlock(&syn_mu);
}

void search_syn_unref(struct search_synonyms *y)
{
    if (y && atomic_fetch_sub(&y->refs, 1) == 1)
        syn_free(y);
}

/* The table for an index being built: the operator's file is read again
 * when its (mtime, size, inode) moved since it was last read. */
struct search_synonyms *search_syn_current(void)
{
    struct err err;
    pthread_mutex_lock(&syn_mu);
    if (!syn_table) {
        syn_table = syn_load(NULL, NULL, &err);
    } else if (syn_path) {
        struct stat st;
        int moved = stat(syn_path, &st) != 0 || !syn_st_ok || st.st_mtim.tv_sec != syn_st.st_mtim.tv_sec ||
                    st.st_mtim.tv_nsec != syn_st.st_mtim.tv_nsec || st.st_size != syn_st.st_size ||
                    st.st_ino != syn_st.st_ino;
        if (moved) {
            struct search_synonyms *y = syn_load(syn_path, &st, &err);
            if (y) {
                search_syn_unref(syn_table);
                syn_table = y;
                log_info("search: synonyms reloaded from %s (%zu groups)", syn_path,
                         y->ngroups);
            } else {
                log_warn("search: %s; keeping the synonyms loaded before", err.msg);
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
