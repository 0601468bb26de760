/*
 * tools.c - the MCP tools of the skill library (see docs/tools.md).
 *
 * One table row per tool: schemas as JSON text (readable, checked at
 * start-up), annotations and the handler. Handlers read only the snapshot
 * they are given; the one that touches the disk (read_skill_file, and
 * load_skill on a body cache miss) goes through jail.c or skills_body().
 * A handler answers with a structured result, or with a message telling the
 * model what to do next (isError).
 */
#include "tools.h"
#include "tools_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "acl.h"
#include "auth.h"
#include "call.h"
#include "envelope.h"
#include "proto.h"
#include "hooks.h"
#include "rcache.h"
#include "jail.h"
#include "json.h"
#include "lock.h"
#include "markdown.h"
#include "redact.h"
#include "script.h"
#include "search.h"
#include "shape.h"
#include "util.h"

#define LIST_MAX_LIMIT 500
#define READ_DEFAULT_MAX 65536
#define READ_MAX_MAX (1 << 20)
#define NAME_MAX_LEN 200

/* A script's output that is JSON is cut as JSON; its own _truncated says
 * how to ask for less (the options the bundled rest-client takes). */
const struct shape_text tools_run_texts[NRUN_TEXTS] = {
    {"stdout", "stdout_format",
     "The output was cut to fit the context; the items kept are whole. Ask the script for "
     "less if it can: a count alone (--count-only), fewer fields per item (--fields a,b), "
     "fewer items (--limit N)."},
    {"stderr", "stderr_format", NULL},
};

static const struct shape_text file_texts[] = {
    {"content", NULL,
     "The file was cut to fit the context; the items kept are whole. Use one of the skill's "
     "scripts to query it, if it has one."},
};


/* An entry's list_skills card, rendered on first use and kept with the
 * entry (which outlives snapshots while its files do not change). */
struct card {
    uint32_t len;           /* compact JSON: data[0 .. len) */
    uint32_t esc_len;       /* the same escaped as a JSON string: data[len .. len + esc_len) */
    uint32_t tokens;        /* shape_tokens of the JSON */
    uint32_t chars;         /* shape_chars of the JSON */
    char data[];
};

struct tool {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;
    const char *output_schema;
    int read_only;
    tool_fn fn;
    int runs_scripts;       /* absent under --no-scripts */
    const char *narrow;     /* how to ask for less, when a result had to be cut */
};

/* ---- helpers ------------------------------------------------------------- */

int tools_fail(struct tool_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(o->msg);      /* "%.64s" of caller input may split a character */
    return -1;
}

/* Checks that args has only the given keys; the first stranger is reported. */
int tools_only_keys(json_t *args, struct tool_out *o, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) {
        int ok = 0;
        for (const char *const *p = keys; *p; p++)
            if (!strcmp(k, *p))
                ok = 1;
        if (!ok) {
            char list[256] = "";
            for (const char *const *p = keys; *p; p++) {
                strncat(list, *p, sizeof list - strlen(list) - 3);
                if (p[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return tools_fail(o, "Unknown argument '%.64s'. This tool takes: %s.", k,
                        *list ? list : "no arguments");
        }
    }
    return 0;
}

/* An optional string argument; -1 (with o set) when of the wrong type. */
int tools_opt_str(json_t *args, const char *key, const char **out, size_t *len,
                   struct tool_out *o)
{
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (len)
        *len = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tools_fail(o, "Argument '%s' must be a string.", key);
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return 0;
}

int tools_opt_int(json_t *args, const char *key, long lo, long hi, long dflt, long *out,
                   struct tool_out *o)
{
    json_t *v = json_object_get(args, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    /* Range first, conversion second: a double out of long's range is UB. */
    double d = json_is_integer(v) ? (double)json_integer_value(v)
               : json_is_real(v)  ? json_real_value(v)
                                  : NAN;
    if (isnan(d) || d != floor(d))
        return tools_fail(o, "Argument '%s' must be a whole number from %ld to %ld.", key, lo, hi);
    if (d < (double)lo || d > (double)hi)
        return tools_fail(o, "Argument '%s' must be from %ld to %ld (got %.0f).", key, lo, hi, d);
    *out = (long)d;
    return 0;
}

/*
 * Resolves the skill argument. On failure o->msg tells the model what to do:
 * the qualified names to pick from, or the closest matches.
 */
struct skill *tools_need_skill(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    const char *name;
    size_t len;
    int amb;
    if (tools_opt_str(args, "name", &name, &len, o) < 0)
        return NULL;
    if (!name || !len) {
        tools_fail(o, "Argument 'name' is required: a skill name from list_skills.");
        return NULL;
    }
    if (len > NAME_MAX_LEN || memchr(name, '\0', len)) {
        tools_fail(o, "Argument 'name' is not a skill name (at most %d characters, no NUL). "
                "Call list_skills to see the available skills.",
             NAME_MAX_LEN);
        return NULL;
    }
    /* A skill the caller may not see is not there: the same lookup, the
     * same suggestions (drawn from what it sees), the same words. */
    const unsigned char *mask = view_mask(c->view);
    struct skill *k = skills_find_in(c->snap, mask, name, len, &amb, &c->idx);
    if (k)
        return k;
    if (amb) {
        const char *names[8];
        size_t n = skills_sharing_in(c->snap, mask, name, names, 8);
        char list[512] = "";
        for (size_t i = 0; i < n; i++) {
            strncat(list, names[i], sizeof list - strlen(list) - 3);
            if (i + 1 < n)
                strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        tools_fail(o, "'%s' names several skills: %s. Call again with the qualified name.", name,
             list);
        return NULL;
    }
    const char *sug[3];
    size_t n = skills_suggest_in(c->snap, mask, name, sug, 3);
    if (n) {
        char list[400] = "";
        for (size_t i = 0; i < n; i++) {
            strncat(list, sug[i], sizeof list - strlen(list) - 3);
            if (i + 1 < n)
                strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        tools_fail(o, "Unknown skill '%s'. Closest matches: %s. Call list_skills to see all skills.",
             name, list);
    } else {
        tools_fail(o, "Unknown skill '%s'. Call list_skills (optionally with a query) to see the "
                "available skills.",
             name);
    }
    return NULL;
}

/*
 * The entry a call may use: k itself, the approved version the store serves
 * in its place, or NULL (o says why) when the lock quarantines it.
 */
struct skill *tools_gated(struct tool_ctx *c, struct skill *k, struct tool_out *o)
{
    const struct skill_gate *g = k ? skills_gate_of(c->snap, k) : NULL;
    if (!g || !g->reason)
        return k;
    if (g->serve)
        return g->serve;
    tools_fail(o, "Skill '%s' is quarantined: %s. Nothing was read or run; use another skill, or "
            "ask the operator to review this one.", k->qname, g->reason);
    return NULL;
}

/*
 * A list_skills card comes in tiers, richest first: the full card (tier 0),
 * the card without tags and version (1), then name and a description cut
 * to at most tier_cap[t] tokens (2 and up). A page gives each card the
 * richest tier that fits its share of the budget (page_tiers).
 */
static const unsigned short tier_cap[SKILL_CARD_TIERS] = {0, 0, 48, 32, 24, 16, 10};

#define ELLIPSIS "\xe2\x80\xa6"     /* U+2026: the description goes on */

/* A wide character that is written without spaces between words (CJK). */
static int wide_at(const unsigned char *p)
{
    return p[0] >= 0xe3 && p[0] <= 0xed;
}

/* A CJK sentence end (。！？) or clause mark (，；：、) at p, of 3 bytes. */
static int cjk_mark(const unsigned char *p, size_t left, int sentence)
{
    if (left < 3)
        return 0;
    if (sentence)
        return (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x82) ||
               (p[0] == 0xef && p[1] == 0xbc && (p[2] == 0x81 || p[2] == 0x9f));
    return (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x81) ||
           (p[0] == 0xef && p[1] == 0xbc && (p[2] == 0x8c || p[2] == 0x9b || p[2] == 0x9a));
}

/* Trailing spaces and clause punctuation are not worth keeping before the marker. */
static size_t trim_clause_end(const char *d, size_t p)
{
    while (p > 0 && strchr(" ,;:-(", d[p - 1]))
        p--;
    while (p >= 3 && (!memcmp(d + p - 3, "\xe2\x80\x94", 3) || !memcmp(d + p - 3, "\xe2\x80\x93", 3) ||
                      cjk_mark((const unsigned char *)d + p - 3, 3, 0))) {
        p -= 3;
        while (p > 0 && d[p - 1] == ' ')
            p--;
    }
    return p;
}

/* 1 when the "." at d[dot] ends an abbreviation ("e.g.", "U.S.", "Dr."),
 * which a capital may follow without a new sentence starting. */
static int abbrev_at(const char *d, size_t dot)
{
    static const char *const words[] = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "inc",
                                        "ltd", "jr", "sr", "co", "corp", "cf", "approx",
                                        "no", "fig", "eg", "ie", "al"};
    size_t w = dot;
    while (w > 0 && !isspace((unsigned char)d[w - 1]) && d[w - 1] != '(')
        w--;
    if (memchr(d + w, '.', dot - w))
        return 1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == dot - w && !strncasecmp(d + w, words[i], dot - w))
            return 1;
    return 0;
}

/* 1 when the character at p is drawn as part of the one before it: a
 * combining mark (U+0300-U+036F), a zero-width joiner, a variation selector,
 * a skin-tone modifier or the keycap mark. A cut before it would change the
 * character kept last. */
static int joins_prev(const unsigned char *p, size_t left)
{
    if (left >= 2 && ((p[0] == 0xcc && p[1] >= 0x80) || (p[0] == 0xcd && p[1] <= 0xaf)))
        return 1;
    if (left >= 3 && p[0] == 0xe2 && ((p[1] == 0x80 && p[2] == 0x8d) || (p[1] == 0x83 && p[2] == 0xa3)))
        return 1;
    if (left >= 3 && p[0] == 0xef && p[1] == 0xb8 && p[2] >= 0x80 && p[2] <= 0x8f)
        return 1;
    return left >= 4 && p[0] == 0xf0 && p[1] == 0x9f && p[2] == 0x8f && p[3] >= 0xbb && p[3] <= 0xbf;
}

/* A character boundary at or before at that splits no cluster joined by
 * joins_prev or by a zero-width joiner before it; at itself when none. */
static size_t cluster_start(const unsigned char *u, size_t n, size_t at)
{
    size_t p = at;
    while (p > 0 && (joins_prev(u + p, n - p) ||
                     (p >= 3 && u[p - 3] == 0xe2 && u[p - 2] == 0x80 && u[p - 1] == 0x8d))) {
        p--;
        while (p > 0 && (u[p] & 0xc0) == 0x80)
            p--;
    }
    return p ? p : at;
}

/*
 * How much of description d (n bytes) a card with room for cap tokens
 * keeps, and whether it ends with the marker. The longest prefix within
 * cap is cut back to the last sentence end (". " before a capital or a
 * digit and not after an abbreviation, "!", "?", "。"), else the last clause
 * boundary (", " "; " ": " " — " " – " " - " " (" or "，；：、"), else the
 * last white space (or a place
 * between two CJK characters); a later class wins only when the earlier
 * one would keep less than half of that prefix. A sentence end needs no
 * marker; any other cut ends with "…". Text with no boundary at all (one
 * long word) is cut on a character boundary.
 */
size_t tools_desc_cut(const char *d, size_t n, size_t cap, int *marker)
{
    const unsigned char *u = (const unsigned char *)d;
    *marker = 0;
    if (!cap || shape_tokens(d, n) <= cap)
        return n;
    size_t lo = 0, hi = n;      /* prefix lo fits with the marker, hi does not */
    while (hi - lo > 1) {
        size_t mid = utf8_trim(d, lo + (hi - lo) / 2);
        if (mid <= lo) {
            size_t q = utf8_seq(u + lo, n - lo);
            mid = lo + (q ? q : 1);
        }
        if (mid >= hi)
            break;
        if (shape_tokens(d, mid) + 1 <= cap)
            lo = mid;
        else
            hi = mid;
    }
    size_t lim = lo, sent = 0, clause = 0, word = 0;
    for (size_t i = 1; i <= lim && i < n; i++) {
        unsigned char c = u[i - 1];
        if ((c == '.' || c == '!' || c == '?') && isspace(u[i])) {
            size_t j = i;
            while (j < n && isspace(u[j]))
                j++;
            if (c != '.' || j == n || !((u[j] >= 'a' && u[j] <= 'z') || abbrev_at(d, i - 1)))
                sent = i;
        }
        if (i >= 3 && cjk_mark(u + i - 3, 3, 1))
            sent = i;
        if (isspace(u[i]) && !isspace(c))
            word = i;
        if (strchr(",;:", u[i]) && i + 1 < n && u[i + 1] == ' ')
            clause = i;
        if (u[i] == ' ' && i + 2 < n && u[i + 1] == '-' && u[i + 2] == ' ')
            clause = i;
        if (u[i] == ' ' && i + 4 < n && u[i + 1] == 0xe2 && u[i + 2] == 0x80 &&
            (u[i + 3] == 0x94 || u[i + 3] == 0x93))
            clause = i;
        if (u[i] == ' ' && i + 1 < n && u[i + 1] == '(')
            clause = i;
        if (cjk_mark(u + i, n - i, 0))
            clause = i;
        if ((u[i] & 0xc0) != 0x80 && i >= 3 && wide_at(u + i) && wide_at(u + i - 3) &&
            utf8_seq(u + i - 3, 3) == 3)
            word = i;
    }
    size_t half = lim / 2, at;
    if (sent && sent >= half)
        return sent;
    if (clause && clause >= half)
        at = clause;
    else if (word && word >= half)
        at = word;
    else if (sent && sent >= clause && sent >= word)
        return sent;
    else
        at = clause > word ? clause : word;
    if (at)
        at = trim_clause_end(d, at);
    if (!at)            /* one word longer than the room: a character boundary */
        at = cluster_start(u, n, lim);
    *marker = 1;
    return at;
}

static json_t *card_of(const struct snapshot *s, size_t idx, int tier)
{
    const struct skill *k = s->v[idx];
    const struct skill_gate *g = s->gate ? &s->gate[idx] : NULL;
    if (g && g->serve)
        k = g->serve;       /* the card of the version served */
    json_t *c = json_pack("{s:s}", "name", k->name);
    if (strcmp(k->qname, k->name))  /* equal: it would only repeat the name */
        json_object_set_new(c, "qualified_name", json_string(k->qname));
    int marker;
    size_t dlen = strlen(k->description);
    size_t keep = tools_desc_cut(k->description, dlen, tier_cap[tier], &marker);
    if (marker) {
        char *t = xmalloc(keep + sizeof ELLIPSIS);
        memcpy(t, k->description, keep);
        memcpy(t + keep, ELLIPSIS, sizeof ELLIPSIS);
        json_object_set_new(c, "description", json_string(t));
        free(t);
    } else {
        json_object_set_new(c, "description", json_stringn(k->description, keep));
    }
    if (tier == 0 && k->ntags) {
        json_t *t = json_array();
        for (size_t i = 0; i < k->ntags; i++)
            json_array_append_new(t, json_string(k->tags[i]));
        json_object_set_new(c, "tags", t);
    }
    if (tier == 0 && k->version)
        json_object_set_new(c, "version", json_string(k->version));
    if (g && g->reason) {
        json_object_set_new(c, "quarantined", json_true());
        json_object_set_new(c, "quarantine_reason", json_string(g->reason));
    }
    return c;
}

static int has_all_tags(const struct skill *k, json_t *tags)
{
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t) {
        int found = 0;
        for (size_t j = 0; j < k->ntags && !found; j++)
            found = !strcasecmp(k->tags[j], json_string_value(t));
        if (!found)
            return 0;
    }
    return 1;
}

/* ---- list_skills ----------------------------------------------------------- */

const char tools_list_narrow[] =
    "pass a query or tags to list fewer skills, a smaller limit, or the next_cursor";

/*
 * The entries of one list page, in page order: the search hits (or every
 * entry, by qualified name), the tag filter, then the window [offset,
 * offset + limit). Both page builders take their entries from here, so they
 * cannot disagree. Returns the window (free()) and its size in *n; *total is
 * the count before the window.
 */
/* Closest cards shown for a query that matches nothing, and how many
 * candidates are looked at before the tag filter. */
#define CLOSEST_SHOWN 5
#define CLOSEST_CANDIDATES 64

enum { MISS_NONE, MISS_SIMILAR, MISS_FIRST };

static void fill_window(const struct snapshot *s, const struct view *v,
                        const struct search_hit *hits, size_t count, json_t *tags, size_t offset,
                        size_t limit, size_t *win, size_t *n, size_t *total)
{
    *n = *total = 0;
    for (size_t i = 0; i < count; i++) {
        size_t idx = hits ? hits[i].doc : view_at(v, i);
        if (!view_sees(v, idx) || (tags && !has_all_tags(s->v[idx], tags)))
            continue;
        if (*total >= offset && *total < offset + limit)
            win[(*n)++] = idx;
        (*total)++;
    }
}

/*
 * A query that matches nothing (after the tag filter) is not answered with
 * an empty list: the page holds the closest cards by name and tags (or,
 * when none is close, the first ones), *miss says which, and the caller
 * adds a hint saying so. That page is complete (no cursor).
 */
static size_t *page_window(const struct snapshot *s, const struct view *v, const char *query,
                           json_t *tags, size_t offset, size_t limit, size_t *n, size_t *total,
                           int *miss)
{
    struct search_hit *hits = NULL;
    size_t nhits = 0;
    *miss = MISS_NONE;
    if (query) {
        hits = xmalloc((s->n ? s->n : 1) * sizeof *hits);
        nhits = search_query(s->search, query, hits, s->n);
        if (nhits > s->n)
            nhits = s->n;
    }
    size_t count = query ? nhits : view_count(v, s);
    size_t cap = limit > CLOSEST_SHOWN ? limit : CLOSEST_SHOWN;
    size_t *win = xmalloc((cap < s->n ? cap : s->n ? s->n : 1) * sizeof *win);
    fill_window(s, v, query ? hits : NULL, count, tags, offset, limit, win, n, total);
    if (query && !*total && view_count(v, s)) {
        int similar;
        size_t max = limit < CLOSEST_SHOWN ? limit : CLOSEST_SHOWN;
        /* hidden entries are filtered out after the pick, like tags */
        size_t k = search_closest(s->search, query, hits,
                                  tags || v ? CLOSEST_CANDIDATES : max, &similar);
        fill_window(s, v, hits, k, tags, 0, max, win, n, total);
        if (!*n && (tags || v)) {
            similar = 0;
            fill_window(s, v, NULL, view_count(v, s), tags, 0, max, win, n, total);
        }
        *total = *n;
        *miss = similar ? MISS_SIMILAR : MISS_FIRST;
    }
    free(hits);
    return win;
}

static struct card *card_render(json_t *j)
{
    size_t n;
    char *s = jf_dumps(j, &n);
    json_decref(j);
    struct buf esc;
    buf_init(&esc, 0);
    buf_json_escape(&esc, s, n);
    struct card *c = xmalloc(sizeof *c + n + esc.len);
    c->len = (uint32_t)n;
    c->esc_len = (uint32_t)esc.len;
    c->tokens = (uint32_t)shape_tokens(s, n);
    c->chars = (uint32_t)shape_chars(s, n);
    memcpy(c->data, s, n);
    memcpy(c->data + n, esc.p, esc.len);
    free(s);
    buf_cleanup(&esc);
    return c;
}

/*
 * The card of entry idx at a tier. A served entry's card depends only on
 * the entry, so it is rendered by the first request that shows it and kept
 * with the entry (two threads may render it at once; one copy wins). A card
 * the lock changes (quarantined, or served from the store) belongs to this
 * snapshot's verdict, not to the entry: it is rendered each time, *owned set.
 */
static struct card *card_get(const struct snapshot *s, size_t idx, int tier, int *owned)
{
    const struct skill_gate *g = s->gate ? &s->gate[idx] : NULL;
    *owned = g && (g->reason || g->serve);
    if (*owned)
        return card_render(card_of(s, idx, tier));
    struct skill *k = s->v[idx];
    struct card *c = atomic_load_explicit(&k->card[tier], memory_order_acquire);
    if (c)
        return c;
    c = card_render(card_of(s, idx, tier));
    struct card *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&k->card[tier], &none, c, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(c);
        c = none;
    }
    return c;
}

static int fits_budget(const struct shape_budget *b, size_t chars, size_t tokens)
{
    return !b || ((!b->max_tokens || tokens <= b->max_tokens) &&
                  (!b->max_chars || chars <= b->max_chars));
}

/* The cards of one page, each at the tier page_tiers gave it. */
struct page {
    size_t *idx;            /* entries, in page order */
    size_t n, total;        /* cards on the page; matches before the window */
    struct card **card;
    unsigned char *own;     /* card[i] is this page's to free */
    unsigned char *tier;
    int miss;               /* the query matched nothing: closest cards (MISS_*) */
};

static void page_free(struct page *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->own[i])
            free(p->card[i]);
    free(p->idx);
    free(p->card);
    free(p->own);
    free(p->tier);
}

static void page_set(const struct snapshot *s, struct page *p, size_t i, int tier)
{
    int own;
    struct card *c = card_get(s, p->idx[i], tier, &own);
    if (p->own[i])
        free(p->card[i]);
    p->card[i] = c;
    p->own[i] = (unsigned char)own;
    p->tier[i] = (unsigned char)tier;
}

/*
 * The tier of each card. The budget, less the page's envelope, is shared
 * equally: each card gets room = tokens / cards on the page, and takes the
 * richest tier that fits it (the last tier when none does; the page is then
 * cut at a card boundary). A ranked page (a query) then spends what is left
 * on its top results, in rank order, while the next one's richer tier fits.
 * Cards are kept with their entries, so this reads sizes and renders only
 * a tier no page has shown yet. Tokens decide the tiers: characters bound
 * what a client accepts, not what a model can read, and are left to the cut.
 */
static void page_tiers(const struct snapshot *s, struct page *p, const struct shape_budget *b,
                       int ranked, size_t env_tokens, size_t env_chars)
{
    size_t n = p->n;
    if (!n)
        return;
    size_t room = SIZE_MAX;
    if (b && b->max_tokens) {
        size_t avail = b->max_tokens > env_tokens ? b->max_tokens - env_tokens : 0;
        room = avail / n;
        room = room ? room - 1 : 0;     /* the comma after it */
    }
    size_t tokens = env_tokens + n - 1, chars = env_chars + n - 1;
    for (size_t i = 0; i < n; i++) {
        for (int t = 0; t < SKILL_CARD_TIERS; t++) {
            page_set(s, p, i, t);
            if (p->card[i]->tokens <= room)
                break;
        }
        tokens += p->card[i]->tokens;
        chars += p->card[i]->chars;
    }
    if (!ranked || !b || !b->max_tokens || tokens >= b->max_tokens ||
        (b->max_chars && chars >= b->max_chars))
        return;
    size_t slack_t = b->max_tokens - tokens;
    size_t slack_c = b->max_chars ? b->max_chars - chars : SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        int from = p->tier[i], to = -1;
        struct card *cur = p->card[i];
        for (int t = 0; t < from && to < 0; t++) {
            int own;
            struct card *c = card_get(s, p->idx[i], t, &own);
            size_t dt = c->tokens > cur->tokens ? c->tokens - cur->tokens : 0;
            size_t dc = c->chars > cur->chars ? c->chars - cur->chars : 0;
            if (dt <= slack_t && dc <= slack_c) {
                to = t;
                slack_t -= dt;
                slack_c -= dc;
            }
            if (own)
                free(c);
        }
        if (from > 0 && to < 0)
            break;
        if (to >= 0)
            page_set(s, p, i, to);
    }
}

/* The end of a whole list page, after its last card. */
static void page_tail(struct buf *t, size_t total, uint64_t generation, size_t offset,
                      size_t n)
{
    buf_reset(t);
    buf_printf(t, "],\"total\":%zu,\"generation\":%" PRIu64, total, generation);
    if (offset + n < total)
        buf_printf(t, ",\"next_cursor\":\"%zu\"", offset + n);
    buf_puts(t, "}");
}

static const char page_head[] = "{\"skills\":[";

/* The entries of a page and their cards, fitted to budget b. */
static void page_build(const struct snapshot *s, const struct view *v, const char *query,
                       json_t *tags, size_t offset, size_t limit, const struct shape_budget *b,
                       struct page *p)
{
    p->idx = page_window(s, v, query, tags, offset, limit, &p->n, &p->total, &p->miss);
    size_t m = p->n ? p->n : 1;
    p->card = xcalloc(m, sizeof *p->card);
    p->own = xcalloc(m, 1);
    p->tier = xcalloc(m, 1);
    struct buf t;
    buf_init(&t, 0);
    page_tail(&t, p->total, s->generation, offset, p->n);
    size_t hc = sizeof page_head - 1;
    page_tiers(s, p, b, query != NULL, shape_tokens(page_head, hc) + shape_tokens(t.p, t.len),
               hc + shape_chars(t.p, t.len));
    buf_cleanup(&t);
}

/* The hint of a page whose query matched nothing. */
static char *miss_hint(const char *query, int miss)
{
    size_t ql = utf8_trim(query, strnlen(query, 80));
    char *h = NULL;
    if (asprintf(&h, "No skill matches '%.*s'%s; %s. Try other words, or list_skills without "
                     "a query.", (int)ql, query, ql < strlen(query) ? "..." : "",
                 miss == MISS_SIMILAR ? "the closest by name and tags are listed"
                                      : "none is close, so the first skills are listed") < 0)
        abort();
    return h;
}

static json_t *list_page(const struct snapshot *s, const struct view *v, const char *query,
                         json_t *tags, size_t offset, size_t limit, const struct shape_budget *b)
{
    json_t *cards = json_array();
    struct page p;
    page_build(s, v, query, tags, offset, limit, b, &p);
    for (size_t i = 0; i < p.n; i++)
        json_array_append_new(cards, card_of(s, p.idx[i], p.tier[i]));
    json_t *r = json_pack("{s:o, s:I, s:I}", "skills", cards, "total", (json_int_t)p.total,
                          "generation", (json_int_t)s->generation);
    if (offset + p.n < p.total) {
        char cur[32];
        snprintf(cur, sizeof cur, "%zu", offset + p.n);
        json_object_set_new(r, "next_cursor", json_string(cur));
    }
    if (p.miss) {
        json_object_del(r, "next_cursor");
        char *h = miss_hint(query, p.miss);
        json_object_set_new(r, "hint", json_string(h));
        free(h);
    }
    page_free(&p);
    return r;
}

/*
 * Cuts a list page to the budget here rather than in render_ex, so that
 * next_cursor can point just past the cards that were kept and none is
 * skipped.
 */
static void fit_list(struct tool_out *o, size_t offset)
{
    json_t *r = o->structured;
    const struct shape_budget *b = o->budget;
    if (!b)
        return;
    size_t n;
    char *s = jf_dumps(r, &n);
    if (!tools_over_budget(b, s, n)) {
        o->dumped = s;      /* fits: render_ex need not dump it again */
        o->dumplen = n;
        return;
    }
    free(s);
    if (!shape_json(r, b, o->hint))
        return;
    size_t kept = json_array_size(json_object_get(r, "skills"));
    size_t total = (size_t)json_integer_value(json_object_get(r, "total"));
    if (offset + kept < total) {
        char cur[32];
        snprintf(cur, sizeof cur, "%zu", offset + kept);
        json_object_set_new(r, "next_cursor", json_string(cur));
    }
}

/* The end of a list page cut to the budget, after its last card. */
static void cut_tail(struct buf *t, size_t total, uint64_t generation, size_t cursor,
                     size_t original_tokens, size_t kept_tokens, const char *hint)
{
    buf_reset(t);
    buf_printf(t,
               "],\"total\":%zu,\"generation\":%" PRIu64 ",\"next_cursor\":\"%zu\","
               "\"_truncated\":{\"fields\":[\"skills\"],\"original_tokens\":%zu,"
               "\"kept_tokens\":%zu,\"hint\":\"",
               total, generation, cursor, original_tokens, kept_tokens);
    buf_json_escape(t, hint ? hint : "", hint ? strlen(hint) : 0);
    buf_puts(t, "\"}}");
}

/*
 * A list page from the entries' cards: the search, then copies of bytes
 * rendered before (the JSON and its escaped form for the text block).
 *
 * Sizes come from the cards' counts. Characters add up exactly; the token
 * estimate of a concatenation is at most the sum of its parts' (the parts
 * meet at punctuation), so a page these sums say fits does fit. A page that
 * does not fit is cut at a card boundary, as shape_json cuts an array
 * (whole elements from the start while they fit, `_truncated` naming the
 * field, next_cursor just past the last card kept), with the token counts
 * in `_truncated` being these upper bounds. Returns -1 when even one card
 * does not fit (or `_truncated` would crowd the page): list_page and
 * fit_list then cut inside the card, as without this path.
 */
static int list_from_cards(const struct snapshot *s, const struct view *v, const char *query,
                           json_t *tags, size_t offset, size_t limit, struct tool_out *o)
{
    static const char head_esc[] = "{\\\"skills\\\":[";
    const char *head = page_head;
    struct buf b, e, tail;
    struct page p;
    page_build(s, v, query, tags, offset, limit, o->budget, &p);
    size_t total = p.total, kept = p.n;
    struct card **win = p.card;
    if (p.miss) {
        /* Rare, and carries a hint: the JSON path renders it. */
        page_free(&p);
        return -1;
    }

    /* Sizes of the head and of every prefix of the window. */
    size_t hc = sizeof page_head - 1, ht = shape_tokens(head, hc);
    size_t chars = hc, tokens = ht;
    for (size_t i = 0; i < kept; i++) {
        chars += win[i]->chars + (i > 0);
        tokens += win[i]->tokens + (i > 0);
    }
    buf_init(&tail, 0);
    page_tail(&tail, total, s->generation, offset, kept);
    size_t cut = kept;
    const struct shape_budget *bu = o->budget;
    size_t full_tokens = tokens + shape_tokens(tail.p, tail.len);
    if (!fits_budget(bu, chars + shape_chars(tail.p, tail.len), full_tokens)) {
        /* The tail of a cut page, sized with the widest numbers it can hold
         * (kept_tokens <= original_tokens, the cursor <= offset + kept). */
        cut_tail(&tail, total, s->generation, offset + kept, full_tokens, full_tokens, o->hint);
        size_t tc = shape_chars(tail.p, tail.len), tt = shape_tokens(tail.p, tail.len);
        if ((bu->max_chars && tc * 3 > bu->max_chars) ||
            (bu->max_tokens && tt * 3 > bu->max_tokens))
            cut = 0;        /* a tiny budget: leave it to shape_json */
        else {
            chars = hc + tc;
            tokens = ht + tt;
            for (cut = 0; cut < kept; cut++) {
                size_t c2 = chars + win[cut]->chars + (cut > 0);
                size_t t2 = tokens + win[cut]->tokens + (cut > 0);
                if (!fits_budget(bu, c2, t2))
                    break;
                chars = c2;
                tokens = t2;
            }
        }
        if (cut == 0) {
            page_free(&p);
            buf_cleanup(&tail);
            return -1;
        }
        cut_tail(&tail, total, s->generation, offset + cut, full_tokens, tokens, o->hint);
    }

    size_t bytes = 0, esc_bytes = 0;
    for (size_t i = 0; i < cut; i++) {
        bytes += win[i]->len + 1;
        esc_bytes += win[i]->esc_len + 1;
    }
    buf_init(&b, 0);
    buf_init(&e, 0);
    buf_reserve(&b, sizeof page_head + bytes + tail.len);
    buf_reserve(&e, sizeof head_esc + esc_bytes + 2 * tail.len);
    buf_puts(&b, head);
    buf_puts(&e, head_esc);
    for (size_t i = 0; i < cut; i++) {
        if (i) {
            buf_puts(&b, ",");
            buf_puts(&e, ",");
        }
        buf_append(&b, win[i]->data, win[i]->len);
        buf_append(&e, win[i]->data + win[i]->len, win[i]->esc_len);
    }
    page_free(&p);
    buf_append(&b, tail.p, tail.len);
    buf_json_escape(&e, tail.p, tail.len);
    buf_cleanup(&tail);
    o->dumped = buf_steal(&b, &o->dumplen);
    o->escaped = buf_steal(&e, &o->esclen);
    return 0;
}

int tools_list_skills(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {"query", "tags", "limit", "cursor", NULL};
    const char *query, *cursor;
    long limit;
    size_t offset = 0;
    if (tools_only_keys(args, o, keys) < 0 || tools_opt_str(args, "query", &query, NULL, o) < 0 ||
        tools_opt_str(args, "cursor", &cursor, NULL, o) < 0 ||
        tools_opt_int(args, "limit", 1, LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT, &limit, o) < 0)
        return -1;
    json_t *tags = json_object_get(args, "tags");
    if (json_is_null(tags))
        tags = NULL;
    if (tags) {
        size_t i;
        json_t *t;
        if (!json_is_array(tags))
            return tools_fail(o, "Argument 'tags' must be a list of strings.");
        json_array_foreach(tags, i, t) if (!json_is_string(t))
            return tools_fail(o, "Argument 'tags' must be a list of strings.");
        if (!json_array_size(tags))
            tags = NULL;
    }
    if (cursor) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cursor, &end, 10);
        if (errno || end == cursor || *end || v > 100000000ull)
            return tools_fail(o, "Argument 'cursor' is not a cursor this server gave out; pass the "
                           "next_cursor of the previous page, or omit it to start over.");
        offset = (size_t)v;
    }
    if (query && !*query)
        query = NULL;
    struct rcache_pages *pages = c->snap->ext ? c->snap->ext->pages : NULL;
    struct buf key;
    buf_init(&key, 0);
    if (pages) {
        /* A page depends on the snapshot (the cache is its own), the view,
         * the era, the budget and these arguments, length-prefixed so no two
         * spellings of them meet. */
        const struct shape_budget *bu = o->budget;
        buf_printf(&key, "%d %zu %zu %zu %ld %zu:", c->modern, bu ? bu->max_tokens : 0,
                   bu ? bu->max_chars : 0, offset, limit, query ? strlen(query) : (size_t)0);
        if (query)
            buf_puts(&key, query);
        size_t i;
        json_t *t;
        json_array_foreach(tags, i, t) {
            buf_printf(&key, "%zu:", json_string_length(t));
            buf_append(&key, json_string_value(t), json_string_length(t));
        }
        if (rcache_pages_get(pages, c->view, key.p, key.len, &o->raw_owned, &o->rawlen)) {
            o->raw = o->raw_owned;
            buf_cleanup(&key);
            return 0;
        }
    }
    if (!c->snap->ext || list_from_cards(c->snap, c->view, query, tags, offset, (size_t)limit, o) < 0) {
        o->structured = list_page(c->snap, c->view, query, tags, offset, (size_t)limit, o->budget);
        fit_list(o, offset);
    }
    if (pages) {
        o->raw_owned = tools_render(o, 0, c->modern, &o->rawlen);
        o->raw = o->raw_owned;
        rcache_pages_put(pages, c->view, key.p, key.len, o->raw, o->rawlen);
    }
    buf_cleanup(&key);
    return 0;
}

/* ---- load_skill ----------------------------------------------------------- */

static json_t *scripts_and_files(const struct skill *k, json_t **files_out)
{
    json_t *scripts = json_array(), *files = json_array();
    json_t *ex = skills_execution(k);
    json_t *dflt = json_is_object(ex) ? json_object_get(ex, "default") : NULL;
    for (size_t i = 0; i < k->nfiles; i++) {
        const struct skill_file *f = &k->files[i];
        if (strncmp(f->path, "scripts/", 8)) {
            json_array_append_new(files, json_pack("{s:s, s:I}", "path", f->path, "size",
                                                   (json_int_t)f->size));
            continue;
        }
        json_t *s = json_pack("{s:s}", "path", f->path);
        json_t *e = script_exec_entry(k, f->path);
        static const char *const fields[] = {"description", "timeout", "stall_timeout"};
        for (size_t j = 0; j < 3; j++) {
            json_t *v = e ? json_object_get(e, fields[j]) : NULL;
            if (!v && j > 0 && json_is_object(dflt))
                v = json_object_get(dflt, fields[j]);
            /* a copy: the frontmatter is shared by every thread */
            if (v && (j == 0 ? json_is_string(v) : json_is_number(v)))
                json_object_set_new(s, fields[j], json_copy(v));
        }
        json_array_append_new(scripts, s);
    }
    *files_out = files;
    return scripts;
}

static json_t *load_result(const struct skill *k, const struct skill_body *b,
                           const char *section, const char *text, size_t len)
{
    json_t *secs = json_array();
    for (size_t i = 0; i < b->nsec; i++)
        json_array_append_new(secs, json_pack("{s:s%, s:i}", "title",
                                              b->text + b->sec[i].title_off,
                                              b->sec[i].title_len, "level", b->sec[i].level));
    json_t *files;
    json_t *scripts = scripts_and_files(k, &files);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s%, s:o, s:o, s:o}", "name", k->name,
                          "qualified_name", k->qname, "description", k->description, "content",
                          text, len, "sections", secs, "scripts", scripts, "files", files);
    if (section)
        json_object_set_new(r, "section", json_string(section));
    return r;
}

/* jansson takes only UTF-8: a SKILL.md in another encoding cannot be
 * answered, and saying so beats a reply that is not JSON. */
static int not_text(struct tool_out *o, const struct skill *k)
{
    return tools_fail(o, "Skill '%s' cannot be loaded: its SKILL.md is not valid UTF-8 text (saved "
                   "in another encoding?). Tell its author; `skill-mcp validate` shows where.",
                k->qname);
}

/*
 * A load_skill answer from its slot, rendered and published by the first
 * request (set-once CAS: a thread that loses the race frees its copy).
 * NULL when the slot holds another spelling of the section: the caller
 * renders that one per request; NULL with *bad set when the body cannot be
 * put in JSON (not UTF-8).
 */
static struct skill_rendered *cached_render(_Atomic(struct skill_rendered *) *slot,
                                            const char *key, const struct skill *k,
                                            const struct skill_body *b, const char *section,
                                            const char *text, size_t len, struct tool_ctx *c,
                                            struct tool_out *o, int *bad)
{
    size_t klen = strlen(key);
    struct skill_rendered *r = atomic_load(slot);
    *bad = 0;
    if (!r) {
        json_t *res = load_result(k, b, section, text, len);
        if (!res) {
            *bad = 1;       /* never cached: the caller answers with an error */
            return NULL;
        }
        struct tool_out full = {.structured = res, .budget = &c->S->budget, .hint = o->hint};
        size_t n;
        char *bytes = tools_render(&full, 0, c->modern, &n);
        struct skill_rendered *mine = xmalloc(sizeof *mine + n + 1 + klen + 1);
        mine->len = n;
        mine->key_len = klen;
        memcpy(mine->data, bytes, n + 1);
        memcpy(mine->data + n + 1, key, klen + 1);
        free(bytes);
        struct skill_rendered *expect = NULL;
        if (atomic_compare_exchange_strong(slot, &expect, mine)) {
            r = mine;
        } else {
            free(mine);
            r = expect;
        }
    }
    if (r->key_len != klen || memcmp(r->data + r->len + 1, key, klen))
        return NULL;
    return r;
}

int tools_load_skill(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {"name", "section", NULL};
    const char *section, *why = NULL;
    struct skill_body *b;
    struct skill_body *tmp;
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    struct skill *k = tools_gated(c, tools_need_skill(c, args, o), o);
    if (!k || tools_opt_str(args, "section", &section, NULL, o) < 0)
        return -1;
    o->skill = k->qname;
    if (skills_body(k, &b, &tmp, &why) < 0)
        return tools_fail(o, "Skill '%s' cannot be loaded right now: %s. Try reload_skills, or "
                       "tell the operator.",
                    k->qname, why);
    const struct skill_gate *bg = tmp ? skills_gate_of(c->snap, k) : NULL;
    if (tmp && c->snap->gate &&
        !(bg && bg->approved && lock_file_approved(bg->approved, k->dir, "SKILL.md"))) {
        /* Edited since it was checked against the lock, to something not approved. */
        skills_body_free(tmp);
        return tools_fail(o, "Skill '%s' changed on disk since it was checked against the lock of "
                       "approved versions. Call reload_skills, then load it again.",
                    k->qname);
    }
    int whole = !section || !*section;
    const char *text = b->text;
    size_t len = b->len;
    long at = -1;
    if (!whole) {
        at = md_find(b->text, b->sec, b->nsec, section);
        if (at < 0) {
            struct buf l;
            buf_init(&l, 700);
            for (size_t i = 0; i < b->nsec; i++)
                if (buf_printf(&l, "%s\"%.*s\"", i ? ", " : "", (int)b->sec[i].title_len,
                               b->text + b->sec[i].title_off) < 0)
                    break;
            tools_fail(o, "Skill '%s' has no section '%.100s'. Its sections: %s. Call load_skill "
                    "with one of them, or without 'section' for the whole body.",
                 k->qname, section, l.len ? l.p : "(none: the body has no headings)");
            buf_cleanup(&l);
            skills_body_free(tmp);
            return -1;
        }
        text = b->text + b->sec[at].start;
        len = b->sec[at].end - b->sec[at].start;
    }
    if (!tmp) {
        /* The answer depends only on this entry and the argument: render it
         * once and keep it with the body. */
        _Atomic(struct skill_rendered *) *slot =
            whole ? &b->rendered[c->modern] : &b->sec_rendered[2 * at + c->modern];
        const char *key = whole ? "" : section;
        int bad;
        struct skill_rendered *r = cached_render(slot, key, k, b, whole ? NULL : section, text,
                                                 len, c, o, &bad);
        if (r) {
            o->raw = r->data;
            o->rawlen = r->len;
            return 0;
        }
        if (bad)
            return not_text(o, k);
    }
    o->structured = load_result(k, b, whole ? NULL : section, text, len);
    skills_body_free(tmp);
    if (!o->structured)
        return not_text(o, k);
    return 0;
}

/* ---- read_skill_file -------------------------------------------------------- */

static char *base64(const char *data, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
    return out;
}

int tools_read_skill_file(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {"name", "path", "max_bytes", NULL};
    const char *path, *why;
    size_t plen;
    long max;
    struct jail_file f;
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    struct skill *k = tools_gated(c, tools_need_skill(c, args, o), o);
    if (k)
        o->skill = k->qname;
    if (!k || tools_opt_str(args, "path", &path, &plen, o) < 0 ||
        tools_opt_int(args, "max_bytes", 1, READ_MAX_MAX, READ_DEFAULT_MAX, &max, o) < 0)
        return -1;
    if (!path)
        return tools_fail(o, "Argument 'path' is required: a file path inside the skill, such as "
                       "one of the 'files' that load_skill lists.");
    if ((why = jail_check(path, plen)))
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': %s.", path, k->qname, why);
    /* A listed file read whole, with no lock in force (whose check reads
     * the file) and no --redact file (its patterns change on SIGHUP),
     * answers the same until the file changes: kept per entry. */
    long fi = c->snap->gate || c->S->cfg.redact_file ? -1 : rcache_file_index(k, path);
    enum rcache_kind kind = c->modern ? RCACHE_TOOL_MODERN : RCACHE_TOOL_LEGACY;
    struct stat st = {0};
    if (fi >= 0) {
        size_t hl;
        const char *hit = rcache_file_get(k, (size_t)fi, kind, path, &hl, &st);
        if (hit && st.st_size <= max) {
            o->raw = hit;
            o->rawlen = hl;
            return 0;
        }
    }
    /* read past the cut when redacting: the cut comes after, and never
     * shows the first bytes of a secret too short to be recognised */
    size_t ahead = c->S->redact ? REDACT_FILE_LOOKAHEAD : 0;
    int rc = jail_read(k->dir, path, (size_t)max + ahead, &f, &why);
    if (rc < 0) {
        if (rc == -ENOENT || rc == -EISDIR) {
            struct buf l;
            buf_init(&l, 600);
            for (size_t i = 0; i < k->nfiles && i < 30; i++)
                if (buf_printf(&l, "%s%s", i ? ", " : "", k->files[i].path) < 0)
                    break;
            tools_fail(o, "Cannot read '%.200s' from skill '%s': %s. Its files: %s.", path, k->qname,
                 why, l.len ? l.p : "SKILL.md only (use load_skill)");
            buf_cleanup(&l);
            return -1;
        }
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': %s.", path, k->qname, why);
    }
    const struct skill_gate *g = skills_gate_of(c->snap, k);
    if (g && g->approved && !g->reason && !lock_file_approved(g->approved, k->dir, path)) {
        jail_file_cleanup(&f);
        return tools_fail(o, "Cannot read '%.200s' from skill '%s': it changed on disk since the "
                       "skill was checked against the lock of approved versions. Call "
                       "reload_skills, then read it again.",
                    path, k->qname);
    }
    size_t n, rl;
    json_t *hits;
    char *red = redact_file(c->S->redact, f.data, f.len, &rl, &hits, &c->S->stats);
    const char *data = red ? red : f.data;
    n = red ? rl : f.len;
    int cut = f.truncated || n > (size_t)max;
    if (n > (size_t)max)
        n = (size_t)max;
    size_t whole = n;
    if (cut)
        n = utf8_trim(data, n);
    int64_t f_size = f.size;
    json_t *r;
    if (utf8_valid(data, n)) {
        /* validated just above: jansson need not check it again */
        r = json_pack("{s:s, s:s, s:I, s:s, s:o, s:b}", "name", k->qname, "path", path,
                      "size", (json_int_t)f.size, "encoding", "utf-8", "content",
                      json_stringn_nocheck(data, n), "truncated", cut);
    } else {
        char *b64 = base64(data, whole);
        r = json_pack("{s:s, s:s, s:I, s:s, s:s, s:b}", "name", k->qname, "path", path, "size",
                      (json_int_t)f.size, "encoding", "base64", "content", b64, "truncated",
                      cut);
        free(b64);
    }
    size_t pl = strlen(path);
    if (!strcmp(json_string_value(json_object_get(r, "encoding")), "utf-8") && pl >= 5 &&
        !strcasecmp(path + pl - 5, ".json")) {
        o->texts = file_texts;
        o->ntexts = 1;
    }
    free(red);
    jail_file_cleanup(&f);
    if (hits)
        o->meta = json_pack("{s:o}", REDACT_META, hits);
    o->structured = r;
    /* Only what is the same on every read: the whole file, nothing redacted
     * (each redaction is counted as it happens). */
    if (fi >= 0 && st.st_mode && !o->meta && !cut && (int64_t)st.st_size == f_size) {
        o->raw_owned = tools_render(o, 0, c->modern, &o->rawlen);
        o->raw = o->raw_owned;
        rcache_file_put(k, (size_t)fi, kind, path, &st, o->raw, o->rawlen);
    }
    return 0;
}

/* ---- stats and reload ------------------------------------------------------- */

/* The snapshot's problems the caller may know of: with --acl, only those
 * of skills it sees (a problem names its skill's folder). */
static json_t *visible_problems(const struct tool_ctx *c)
{
    if (!c->view)
        return json_deep_copy(c->snap->errors);
    json_t *a = json_array(), *e;
    size_t i;
    json_array_foreach(c->snap->errors, i, e) {
        const char *k = json_string_value(json_object_get(e, "skill"));
        if (k && acl_class_sees(c->view->cls, k))
            json_array_append_new(a, json_deep_copy(e));
    }
    return a;
}

/* Names in a (qualified names) the caller may not see are taken out. */
static void visible_names(const struct tool_ctx *c, json_t *a)
{
    for (size_t i = json_array_size(a); c->view && i-- > 0;) {
        const char *k = json_string_value(json_array_get(a, i));
        if (!k || !acl_class_sees(c->view->cls, k))
            json_array_remove(a, i);
    }
}

static int t_stats(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {NULL};
    size_t nroots;
    char at[32];
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    const char *const *roots = skills_roots(c->S->skills, &nroots);
    json_t *r = json_array();
    for (size_t i = 0; i < nroots; i++)
        json_array_append_new(r, json_string(roots[i]));
    size_t errors = 0, i;
    json_t *e, *problems = visible_problems(c);
    json_array_foreach(problems, i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "level")), "error"))
            errors++;
    }
    iso_utc(c->snap->built_at, at, sizeof at);
    o->structured = json_pack(
        "{s:{s:s, s:s, s:f}, s:{s:I, s:I, s:I, s:I, s:o, s:s, s:f, s:o}, s:o}", "server",
        "name", SERVER_NAME, "version", SKILL_VERSION, "uptime_s",
        (double)(now_ns() - c->S->stats.started_ns) / 1e9, "index", "generation",
        (json_int_t)c->snap->generation, "skills", (json_int_t)view_count(c->view, c->snap),
        "errors", (json_int_t)errors, "warnings", (json_int_t)(json_array_size(problems) - errors),
        "roots", r, "last_refresh_at", at, "last_refresh_ms", c->snap->build_ms, "problems",
        problems, "tools", stats_tools_json(&c->S->stats));
    json_t *usage = stats_skills_json(&c->S->stats);
    if (c->view) {
        const char *name;
        void *tmp;
        json_object_foreach_safe(usage, tmp, name, e) if (!acl_class_sees(c->view->cls, name))
            json_object_del(usage, name);
    }
    json_object_set_new(o->structured, "skills", usage);
    if (c->S->runner) {
        struct run_counters rc;
        run_counters(c->S->runner, &rc);
        json_object_set_new(o->structured, "scripts",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}",
                                      "started", (json_int_t)rc.started, "ok", (json_int_t)rc.ok,
                                      "failed", (json_int_t)rc.failed, "stalled",
                                      (json_int_t)rc.stalled, "timeout", (json_int_t)rc.timeout,
                                      "denied", (json_int_t)rc.denied, "busy",
                                      (json_int_t)rc.busy, "live", (json_int_t)rc.live,
                                      "queued", (json_int_t)rc.queued, "max_concurrency",
                                      c->S->cfg.max_script_concurrency));
    }
    return 0;
}

static int t_reload(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {NULL};
    struct skills_report r;
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    lock_reload(c->S->lock, 0);     /* an edited lock is judged by this rebuild too */
    skills_rescan(c->S->skills, 1, &r);
    visible_names(c, r.added);
    visible_names(c, r.removed);
    visible_names(c, r.changed);
    o->structured = json_pack("{s:I, s:I, s:O, s:O, s:O, s:O, s:f}", "generation_before",
                              (json_int_t)r.gen_before, "generation_after",
                              (json_int_t)r.gen_after, "added", r.added, "removed", r.removed,
                              "changed", r.changed, "errors", r.errors, "duration_ms", r.ms);
    skills_report_cleanup(&r);
    return 0;
}

/* ---- run_skill_script ------------------------------------------------------ */

int tools_run_skill_script(struct tool_ctx *c, json_t *args, struct tool_out *o)
{
    static const char *const keys[] = {"name",    "script",        "args", "stdin",
                                       "timeout", "stall_timeout", "env",  NULL};
    if (tools_only_keys(args, o, keys) < 0)
        return -1;
    struct skill *live = tools_need_skill(c, args, o);
    if (live && !view_runs(c->view, c->idx))
        return tools_fail(o, "You may not run the scripts of skill '%s': the server's access rules let "
                       "you read it but not run it. Nothing ran; follow its instructions "
                       "without the scripts, or ask the operator for run access.",
                    live->qname);
    struct skill *k = tools_gated(c, live, o);
    if (!k)
        return -1;
    /* What runs is hashed now: the audit line names it, and a lock refuses
     * a tree edited since the snapshot judged it. */
    struct lock_manifest m = {0};
    const char *approved_at = NULL;
    if (c->S->lock) {
        const char *why = "";
        const struct skill_gate *g = skills_gate_of(c->snap, live);
        const struct lock_entry *a = g ? g->approved : NULL;
        if (lock_manifest_of(k, &m, &why) < 0 && lock_active(c->S->lock))
            return tools_fail(o, "Skill '%s' cannot be run: %s. Nothing ran.", k->qname, why);
        if (lock_active(c->S->lock) && (!a || strcmp(a->digest, m.digest))) {
            lock_manifest_cleanup(&m);
            return tools_fail(o, "Skill '%s' changed on disk since it was checked against the lock "
                           "of approved versions; nothing ran. Call reload_skills, then "
                           "list_skills shows whether it is quarantined.",
                        k->qname);
        }
        approved_at = a ? a->at : NULL;
    }
    struct run_job *job = script_prepare(c->S->scripts, &c->S->cfg, k, args, o->msg, sizeof o->msg);
    if (!job) {
        lock_manifest_cleanup(&m);
        utf8_sanitize(o->msg);
        return -1;
    }
    /* One client must not take every slot: its own cap comes first. */
    if (c->S->auth && c->client && !auth_script_take(c->S->auth, c->client)) {
        o->structured = json_pack(
            "{s:s, s:n, s:s, s:s, s:f, s:f, s:f, s:b, s:i, s:i, s:s, s:s}", "status", "busy",
            "exit_code", "stdout", "", "stderr", "", "duration_ms", 0.0, "timeout",
            job->timeout_s, "stall_timeout", job->stall_s, "truncated", 0, "stdout_bytes", 0,
            "stderr_bytes", 0, "hint",
            "This client already runs as many scripts as it may at once "
            "(--max-scripts-per-client). Wait for one to finish, then call again; nothing ran.",
            "request_id", job->request_id);
        o->is_error = 1;
        o->texts = tools_run_texts;
        o->ntexts = NRUN_TEXTS;
        run_job_free(job);
        lock_manifest_cleanup(&m);
        return 0;
    }
    /* Which hooks exist was found when the snapshot was built. */
    o->plan = hook_plan_new(c->S, c->snap, k, job, args, c->client, c->client_info);
    if (c->S->lock)
        hook_set_audit(o->plan, m.digest, approved_at);
    lock_manifest_cleanup(&m);
    return 0;
}

/* ---- the table -------------------------------------------------------------- */

#define CARD_SCHEMA                                                                         \
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"                 \
    "\"qualified_name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"      \
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                       \
    "\"version\":{\"type\":\"string\"},\"quarantined\":{\"type\":\"boolean\"},"           \
    "\"quarantine_reason\":{\"type\":\"string\"}},\"required\":[\"name\",\"description\"]}"

static const struct tool table[] = {
    {"list_skills", "List skills",
     "List the skills available (name and description). Call this first; pass 'query' to "
     "find the skills for a task.",
     "{\"type\":\"object\",\"properties\":{"
     "\"query\":{\"type\":\"string\",\"description\":\"what the task is about\"},"
     "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"only "
     "skills with all these tags\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,\"default\":500},"
     "\"cursor\":{\"type\":\"string\",\"description\":\"next_cursor from the previous "
     "page\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"skills\":{\"type\":\"array\",\"items\":" CARD_SCHEMA
     "},\"total\":{\"type\":\"integer\"},\"generation\":{\"type\":\"integer\"},"
     "\"next_cursor\":{\"type\":\"string\"},\"hint\":{\"type\":\"string\",\"description\":"
     "\"present when the query matched nothing: says so; the skills listed are the closest "
     "by name and tags\"}},\"required\":[\"skills\",\"total\","
     "\"generation\"]}",
     1, tools_list_skills, 0, tools_list_narrow},
    {"load_skill", "Load a skill",
     "Load a skill's instructions (or one section, by heading) before acting on it. Also "
     "lists its scripts and files.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"section\":{\"type\":\"string\",\"description\":\"a heading; returns only that "
     "section\"}},"
     "\"required\":[\"name\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"qualified_name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
     "\"section\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
     "\"sections\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"title\":{\"type\":\"string\"},\"level\":{\"type\":\"integer\"}}}},"
     "\"scripts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
     "\"timeout\":{\"type\":\"number\"},\"stall_timeout\":{\"type\":\"number\"}},"
     "\"required\":[\"path\"]}},"
     "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}},"
     "\"required\":[\"path\",\"size\"]}}},"
     "\"required\":[\"name\",\"qualified_name\",\"content\",\"sections\",\"scripts\","
     "\"files\"]}",
     1, tools_load_skill, 0,
     "load one section at a time: call load_skill with section set to one of 'sections'"},
    {"read_skill_file", "Read a skill file",
     "Read a file of a skill by its path, e.g. references/api.md (load_skill lists them).",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"path inside the skill\"},"
     "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,"
     "\"default\":65536}},\"required\":[\"name\",\"path\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
     "\"content\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
     "\"required\":[\"name\",\"path\",\"size\",\"encoding\",\"content\",\"truncated\"]}",
     1, tools_read_skill_file, 0,
     "read less at once: pass a smaller max_bytes"},
    {"skill_server_stats", "Server statistics",
     "Server health: skill count, index problems, calls and latency per tool.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"object\"},"
     "\"index\":{\"type\":\"object\"},\"tools\":{\"type\":\"object\"}},"
     "\"required\":[\"server\",\"index\",\"tools\"]}",
     1, t_stats, 0, NULL},
    {"reload_skills", "Reload skills",
     "Rescan the skills now and report what changed. The server also does this by itself "
     "every few seconds.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"generation_before\":{\"type\":\"integer\"},"
     "\"generation_after\":{\"type\":\"integer\"},"
     "\"added\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"removed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"changed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"errors\":{\"type\":\"array\"},\"duration_ms\":{\"type\":\"number\"}},"
     "\"required\":[\"generation_before\",\"generation_after\",\"added\",\"removed\","
     "\"changed\",\"errors\"]}",
     0, t_reload, 0, NULL},
    {"run_skill_script", "Run a skill script",
     "Run a skill's script (one of the scripts load_skill lists) and get its output; prefer "
     "it to redoing its work. Secrets go in env, never in args. The result's hint says what "
     "to do next.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"description\":\"skill name (or team/skill)\"},"
     "\"script\":{\"type\":\"string\",\"description\":\"path inside the skill, e.g. "
     "scripts/run.py\"},"
     "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
     "\"arguments (no shell)\"},"
     "\"stdin\":{\"type\":\"string\",\"description\":\"standard input\"},"
     "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"seconds; "
     "can only lower the limit\"},"
     "\"stall_timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":"
     "\"seconds of silence before it is stopped; can only lower it\"},"
     "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
     "\"description\":\"extra environment variables (secrets)\"}},"
     "\"required\":[\"name\",\"script\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{"
     "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"failed\",\"stalled\","
     "\"timeout\",\"denied\",\"busy\"]},"
     "\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":\"string\"},"
     "\"limit\":{\"type\":\"string\",\"enum\":[\"cpu\",\"memory\",\"file_size\","
     "\"processes\"]},"
     "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
     "\"stdout_format\":{\"type\":\"string\",\"enum\":[\"json\",\"jsonl\",\"text\"]},"
     "\"stderr_format\":{\"type\":\"string\",\"enum\":[\"json\",\"jsonl\",\"text\"]},"
     "\"duration_ms\":{\"type\":\"number\"},\"timeout\":{\"type\":\"number\"},"
     "\"stall_timeout\":{\"type\":\"number\"},\"silent_for\":{\"type\":\"number\"},"
     "\"truncated\":{\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},"
     "\"stderr_bytes\":{\"type\":\"integer\"},\"utf8_repaired\":{\"type\":\"boolean\"},"
     "\"queued_ms\":{\"type\":\"number\"},\"hint\":{\"type\":\"string\"},"
     "\"request_id\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"}},"
     "\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\",\"duration_ms\","
     "\"timeout\",\"stall_timeout\",\"truncated\",\"hint\",\"request_id\"]}",
     0, tools_run_skill_script, 1, NULL},
};

#define NTOOLS (sizeof table / sizeof table[0])

const char *const *tools_names(size_t *n)
{
    static const char *names[NTOOLS];
    for (size_t i = 0; i < NTOOLS; i++)
        names[i] = table[i].name;
    *n = NTOOLS;
    return names;
}

json_t *tools_list_json(int scripts)
{
    json_t *a = json_array();
    for (size_t i = 0; i < NTOOLS; i++) {
        if (table[i].runs_scripts && !scripts)
            continue;
        json_error_t e;
        json_t *in = json_loads(table[i].input_schema, 0, &e);
        json_t *out = json_loads(table[i].output_schema, 0, &e);
        if (!in || !out) {
            log_error("tool %s: schema does not parse: %s", table[i].name, e.text);
            abort();
        }
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
                         table[i].name, "title", table[i].title, "description",
                         table[i].description, "inputSchema", in, "outputSchema", out,
                         "annotations", "title", table[i].title, "readOnlyHint",
                         table[i].read_only, "destructiveHint", table[i].runs_scripts,
                         "idempotentHint", table[i].read_only, "openWorldHint",
                         table[i].runs_scripts));
    }
    return a;
}

void tools_setup(struct srv *S)
{
    /* A result carries its JSON twice (text block and structuredContent),
     * but a model reads one of them (docs/shaping.md): each copy gets the
     * whole budget. */
    S->budget =
        shape_budget_of(S->cfg.context_tokens, S->cfg.context_share, S->cfg.max_result_chars);
    S->tools_list = tools_list_json(!S->cfg.no_scripts);
    if (S->cfg.enable_tasks) {
        /* a client may run it as a task (2025-11-25 execution.taskSupport) */
        size_t i;
        json_t *t;
        json_array_foreach(S->tools_list, i, t)
            if (!strcmp(json_string_value(json_object_get(t, "name")), "run_skill_script"))
                json_object_set_new(t, "execution", json_pack("{s:s}", "taskSupport", "optional"));
    }
    if (S->cfg.max_result_chars > 48000) {
        /* Claude Code moves results over about 50,000 characters to a file
         * unless the tool declares it allows more. */
        size_t i;
        json_t *t;
        json_array_foreach(S->tools_list, i, t)
            json_object_set_new(t, "_meta",
                                json_pack("{s:I}", "anthropic/maxResultSizeChars",
                                          (json_int_t)S->cfg.max_result_chars));
    }
    for (int modern = 0; modern < 2; modern++) {
        json_t *r = json_pack("{s:O}", "tools", S->tools_list);
        if (modern)
            env_decorate_modern(r, S->ttl_ms);
        S->tools_raw[modern] = json_dumps(r, JSON_COMPACT);
        S->tools_raw_len[modern] = strlen(S->tools_raw[modern]);
        json_decref(r);
    }
}

void tools_cleanup(struct srv *S)
{
    json_decref(S->tools_list);
    free(S->tools_raw[0]);
    free(S->tools_raw[1]);
    S->tools_list = NULL;
    S->tools_raw[0] = S->tools_raw[1] = NULL;
}

/*
 * Renders a CallToolResult as bytes. A success carries the same JSON twice
 * (structuredContent, and serialised as the text block), so it is dumped
 * once and escaped once more by hand instead of dumping a tree that holds
 * it twice.
 */
static char *render_ex(struct tool_out *o, int ok, int modern, size_t *len);

char *tools_render(struct tool_out *o, int rc, int modern, size_t *len)
{
    if (rc == 0)
        return render_ex(o, !o->is_error, modern, len);
    struct buf b;
    buf_init(&b, 0);
    json_decref(o->meta);
    o->meta = NULL;
    if (rc < 0) {
        json_decref(o->structured);
        o->structured = NULL;
        buf_puts(&b, "{\"content\":[{\"type\":\"text\",\"text\":\"");
        buf_json_escape(&b, o->msg, strlen(o->msg));
        buf_puts(&b, "\"}],\"isError\":true");
    }
    if (modern)
        buf_puts(&b, ENV_MODERN_TAIL);
    buf_puts(&b, "}");
    return buf_steal(&b, len);
}

int tools_over_budget(const struct shape_budget *b, const char *s, size_t n)
{
    /* chars never exceed bytes, so a short result needs no counting */
    if (b->max_chars && n > b->max_chars && shape_chars(s, n) > b->max_chars)
        return 1;
    return b->max_tokens && n > b->max_tokens && shape_tokens(s, n) > b->max_tokens;
}

/* A structured result, fitted to o->budget (shaping is the last step before
 * the wire, after the hooks); !ok marks it isError. */
static char *render_ex(struct tool_out *o, int ok, int modern, size_t *len)
{
    struct buf b;
    buf_init(&b, 0);
    char *s1 = o->dumped;
    size_t n1 = o->dumplen;
    o->dumped = NULL;
    if (!s1) {
        if (o->texts) {
            /* printed output: its format is set and, over the budget, it is
             * cut, in one parse of it */
            if (o->budget)
                shape_json_texts(o->structured, o->budget, o->hint, o->texts, o->ntexts);
            else
                shape_set_formats(o->structured, o->texts, o->ntexts);
            s1 = jf_dumps(o->structured, &n1);
        } else {
            s1 = jf_dumps(o->structured, &n1);
            if (s1 && o->budget && tools_over_budget(o->budget, s1, n1) &&
                shape_json(o->structured, o->budget, o->hint)) {
                free(s1);
                s1 = jf_dumps(o->structured, &n1);
            }
        }
    }
    if (!s1) {
        /* nothing to serialise, or a string that is not UTF-8: an error,
         * never a reply that is not JSON */
        free(o->escaped);
        o->escaped = NULL;
        snprintf(o->msg, sizeof o->msg, "The result could not be serialised as JSON (text "
                                        "that is not valid UTF-8).");
        return tools_render(o, -1, modern, len);
    }
    json_decref(o->structured);
    o->structured = NULL;
    /* The text block is the escaped JSON: at least as long, usually not much more. */
    buf_reserve(&b, (o->escaped ? o->esclen : n1 + n1 / 8) + n1 + 128);
    buf_puts(&b, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    if (o->escaped)
        buf_append(&b, o->escaped, o->esclen);
    else
        buf_json_escape(&b, s1, n1);
    free(o->escaped);
    o->escaped = NULL;
    buf_puts(&b, "\"}],\"structuredContent\":");
    buf_append(&b, s1, n1);
    free(s1);
    if (!ok)
        buf_puts(&b, ",\"isError\":true");
    if (o->meta) {
        /* its members join the modern tail's _meta object */
        size_t ml;
        char *m = jf_dumps(o->meta, &ml);
        json_decref(o->meta);
        o->meta = NULL;
        if (modern)
            buf_append(&b, ENV_MODERN_TAIL, sizeof ENV_MODERN_TAIL - 2);
        buf_puts(&b, modern ? "," : ",\"_meta\":{");
        buf_append(&b, m + 1, ml - 1);
        free(m);
    } else if (modern)
        buf_puts(&b, ENV_MODERN_TAIL);
    buf_puts(&b, "}");
    return buf_steal(&b, len);
}

char *tools_render_run(struct srv *S, json_t *result, int ok, double ms, int modern, size_t *len)
{
    size_t t;
    for (t = 0; t < NTOOLS; t++)
        if (table[t].runs_scripts)
            break;
    struct tool_out o = {.structured = result, .budget = &S->budget,
                         .hint = "the script printed more than fits: call it with arguments "
                                 "that make it print less (a filter, a limit, a smaller input)",
                         .texts = tools_run_texts, .ntexts = NRUN_TEXTS};
    if ((o.meta = json_object_get(result, "_meta"))) {    /* redact_run_result's */
        json_incref(o.meta);
        json_object_del(result, "_meta");
    }
    char *bytes = render_ex(&o, ok, modern, len);
    stats_record(&S->stats, t, (uint64_t)(ms * 1e6), !ok);
    return bytes;
}

/* ---- pre-rendered default list ------------------------------------------- */


struct snapshot_ext *tools_ext_build(const struct snapshot *s, void *arg)
{
    struct srv *S = arg;
    struct snapshot_ext *e = xcalloc(1, sizeof *e);
    for (int modern = 0; modern < 2; modern++) {
        struct tool_out o = {.structured = list_page(s, NULL, NULL, NULL, 0, LIST_DEFAULT_LIMIT,
                                                     &S->budget),
                             .budget = &S->budget, .hint = tools_list_narrow};
        fit_list(&o, 0);
        e->list[modern] = tools_render(&o, 0, modern, &e->len[modern]);
    }
    e->pages = rcache_pages_new(RCACHE_PAGE_SETS, RCACHE_PAGE_WAYS, RCACHE_PAGES_BYTES);
    return e;
}

/*
 * The default list_skills reply as the caller of view v sees it: rendered
 * by the first such request on this snapshot and kept with the view (two
 * threads may render it at once; one copy wins), so later ones copy bytes
 * as they do without --acl.
 */
const struct view_bytes *tools_view_list(struct srv *S, const struct snapshot *s,
                                          const struct view *v, int modern)
{
    struct view_bytes *b = atomic_load_explicit(&v->list[modern], memory_order_acquire);
    if (b)
        return b;
    struct tool_out o = {.structured = list_page(s, v, NULL, NULL, 0, LIST_DEFAULT_LIMIT,
                                                 &S->budget),
                         .budget = &S->budget, .hint = tools_list_narrow};
    fit_list(&o, 0);
    size_t len;
    char *bytes = tools_render(&o, 0, modern, &len);
    b = xmalloc(sizeof *b + len + 1);
    b->len = len;
    memcpy(b->data, bytes, len + 1);
    free(bytes);
    struct view_bytes *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&v->list[modern], &none, b,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        free(b);
        b = none;
    }
    return b;
}

void tools_ext_free(struct snapshot_ext *e)
{
    if (!e)
        return;
    free(e->list[0]);
    free(e->list[1]);
    rcache_pages_free(e->pages);
    free(e);
}

int tools_call(struct call *call, const char *name, json_t *args)
{
    struct srv *S = call->S;
    int modern = call->modern;
    size_t t;
    uint64_t t0 = now_ns();
    for (t = 0; t < NTOOLS; t++)
        if (!strcmp(table[t].name, name))
            break;
    if (t == NTOOLS || (table[t].runs_scripts && S->cfg.no_scripts))
        return -1;
    struct snapshot *snap = call_snapshot(call);
    if (t == 0 && snap->ext && (!args || (json_is_object(args) && !json_object_size(args)))) {
        const struct view_bytes *vb = call->view ? tools_view_list(S, snap, call->view, modern) : NULL;
        if (vb)
            call_raw(call, vb->data, vb->len, NULL);
        else
            call_raw(call, snap->ext->list[modern ? 1 : 0], snap->ext->len[modern ? 1 : 0], NULL);
        stats_record(&S->stats, t, now_ns() - t0, 0);
        return 0;
    }
    struct tool_ctx c = {.S = S, .snap = snap, .view = call->view, .modern = modern,
                         .client = call->client,
                         .client_info = call->client_info};
    struct tool_out o = {.budget = &S->budget, .hint = table[t].narrow};
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    int rc;
    if (!json_is_object(args))
        rc = tools_fail(&o, "Tool arguments must be a JSON object.");
    else
        rc = table[t].fn(&c, args, &o);
    json_decref(empty);
    if (o.skill)
        stats_skill(&S->stats, o.skill, STATS_USE_CALL, rc < 0);
    if (rc == 0 && o.plan) {
        call_clear(call);
        call->out.kind = CALL_RUN;  /* stats are recorded when it ends */
        call->out.u.run = o.plan;
        return 0;
    }
    if (rc == 0 && o.raw) {
        call_raw(call, o.raw, o.rawlen, o.raw_owned);
    } else {
        size_t len;
        char *owned = tools_render(&o, rc, modern, &len);
        call_raw(call, owned, len, owned);
    }
    stats_record(&S->stats, t, now_ns() - t0, rc < 0);
    return 0;
}
