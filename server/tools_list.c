/*
 * tools_list.c - list_skills: the cards of the catalogue (tiers, the cut
 * description), the search and tag filter, pages fitted to the budget and
 * built from the cards' kept bytes, and the default page rendered once per
 * snapshot (and per --acl view).
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

/* An entry's list_skills card, rendered on first use and kept with the
 * entry (which outlives snapshots while its files do not change). Its
 * escaped form (the text block's copy) is not kept: escaped as it is
 * copied into a page, it cost half of a card's bytes, and a first query's
 * new cards were most of its page faults (~13 us each on a virtual
 * machine; escaping a page's ~100 KB is ~0.16 M instructions more). */
struct card {
    struct card_link link;  /* first: the entry's list of its cards (skills.h) */
    uint32_t len;           /* compact JSON: data[0 .. len) */
    uint32_t esc_len;       /* its length escaped as a JSON string (sizes a page) */
    uint32_t tokens;        /* shape_tokens of the JSON */
    uint32_t chars;         /* shape_chars of the JSON */
    char data[];
};

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
 * long word) is cut on a character boundary. given is d's prefix counts
 * (shared by the tiers of one card), or NULL.
 */
static size_t desc_cut(const char *d, size_t n, size_t cap, int *marker,
                       const struct shape_prefix *given)
{
    const unsigned char *u = (const unsigned char *)d;
    *marker = 0;
    if (!cap)
        return n;
    struct shape_prefix own;    /* the search below measures a dozen prefixes */
    const struct shape_prefix *sp = given ? given : &own;
    if (!given)
        shape_prefix_init(&own, d, n);
    if (sp->total <= cap) {
        if (!given)
            shape_prefix_free(&own);
        return n;
    }
    size_t lo = 0, hi = n;      /* prefix lo fits with the marker, hi does not */
    while (hi - lo > 1) {
        size_t mid = utf8_trim(d, lo + (hi - lo) / 2);
        if (mid <= lo) {
            size_t q = utf8_seq(u + lo, n - lo);
            mid = lo + (q ? q : 1);
        }
        if (mid >= hi)
            break;
        if (shape_prefix_tokens(sp, mid) + 1 <= cap)
            lo = mid;
        else
            hi = mid;
    }
    if (!given)
        shape_prefix_free(&own);
    size_t lim = lo, sent = 0, clause = 0, word = 0;
    for (size_t i = 1; i <= lim && i < n; i++) {
        unsigned char c = u[i - 1];
        /* Every boundary below is at white space, punctuation or a CJK
         * byte, but for a CJK sentence mark ending at i (its lead byte at
         * i - 3): most bytes are letters and digits, and skip them. */
        if (((u[i] | 0x20) >= 'a' && (u[i] | 0x20) <= 'z') || (u[i] >= '0' && u[i] <= '9'))
            if (i < 3 || (u[i - 3] != 0xe3 && u[i - 3] != 0xef))
                continue;
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
        if ((u[i] == ',' || u[i] == ';' || u[i] == ':') && i + 1 < n && u[i + 1] == ' ')
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

size_t tools_desc_cut(const char *d, size_t n, size_t cap, int *marker)
{
    return desc_cut(d, n, cap, marker, NULL);
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
    size_t nhits = 0, ranked = 0;
    *miss = MISS_NONE;
    if (query) {
        /* Unfiltered, the page is the ranking's [offset, offset + limit)
         * and the total its count: only that many hits need ranking in
         * order (a bounded selection, not a sort of every match). A view
         * or tags filter the ranking first, so they need all of it. */
        ranked = s->n;
        if (!v && !tags && offset < s->n && limit < s->n - offset)
            ranked = offset + limit;
        size_t room = ranked > CLOSEST_CANDIDATES ? ranked : CLOSEST_CANDIDATES;
        hits = xmalloc(room * sizeof *hits);
        nhits = search_query(skills_search(s), query, hits, ranked);
        if (nhits > s->n)
            nhits = s->n;
    }
    size_t count = query ? (nhits < ranked ? nhits : ranked) : view_count(v, s);
    size_t cap = limit > CLOSEST_SHOWN ? limit : CLOSEST_SHOWN;
    size_t *win = xmalloc((cap < s->n ? cap : s->n ? s->n : 1) * sizeof *win);
    fill_window(s, v, query ? hits : NULL, count, tags, offset, limit, win, n, total);
    if (query && !v && !tags)
        *total = nhits;
    if (query && !*total && view_count(v, s)) {
        int similar;
        size_t max = limit < CLOSEST_SHOWN ? limit : CLOSEST_SHOWN;
        /* hidden entries are filtered out after the pick, like tags */
        size_t k = search_closest(skills_search(s), query, hits,
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

/* key (a member's name and colon, or a comma) and a JSON string of
 * s[0..n) appended to b; -1 (b unchanged) when s is not UTF-8, which
 * json_string refuses. Written in place: a card has few members, and
 * appending piece by piece cost more than escaping them. */
static int card_str(struct buf *b, const char *key, const char *s, size_t n)
{
    size_t at = b->len, kl = strlen(key);
    if (buf_reserve(b, kl + 1) < 0)
        return -1;
    memcpy(b->p + b->len, key, kl);
    b->p[b->len + kl] = '"';
    b->len += kl + 1;
    if (buf_json_escape_utf8(b, s, n) < 0 || buf_reserve(b, 1) < 0) {
        b->len = at;
        b->p[at] = '\0';
        return -1;
    }
    b->p[b->len++] = '"';
    b->p[b->len] = '\0';
    return 0;
}

/*
 * card_of's JSON as jf_dumps writes it (keys in insertion order, a member
 * json_string would refuse left out), without building the tree: a first
 * query renders up to a few hundred cards at several tiers.
 * tests/unit/test_tools.c list_cards_match_tree_path compares the two.
 */
/* A description's prefix counts, and the last cut made with them (tier -1:
 * none), which the render of that tier then reuses. */
struct desc_counts {
    struct shape_prefix sp;
    int tier, marker;
    size_t keep;
};

static size_t counts_cut(const struct skill *k, int tier, struct desc_counts *dc, int *marker)
{
    if (dc->tier != tier) {
        dc->keep = desc_cut(k->description, strlen(k->description), tier_cap[tier], &dc->marker,
                            &dc->sp);
        dc->tier = tier;
    }
    *marker = dc->marker;
    return dc->keep;
}

/* The card of entry k at a tier, g being its lock verdict or NULL. */
static void card_write(const struct skill *k, const struct skill_gate *g, int tier,
                       struct desc_counts *dc, struct buf *o)
{
    buf_reserve(o, 512);
    buf_puts(o, "{");
    card_str(o, "\"name\":", k->name, strlen(k->name));
    if (strcmp(k->qname, k->name))
        card_str(o, ",\"qualified_name\":", k->qname, strlen(k->qname));
    int marker;
    size_t dlen = strlen(k->description);
    size_t keep = dc ? counts_cut(k, tier, dc, &marker)
                     : desc_cut(k->description, dlen, tier_cap[tier], &marker, NULL);
    if (card_str(o, ",\"description\":", k->description, keep) == 0 && marker) {
        o->len--;           /* before the closing quote */
        buf_puts(o, ELLIPSIS "\"");
    }
    if (tier == 0 && k->ntags) {
        buf_puts(o, ",\"tags\":[");
        int first = 1;
        for (size_t i = 0; i < k->ntags; i++)
            if (card_str(o, first ? "" : ",", k->tags[i], strlen(k->tags[i])) == 0)
                first = 0;
        buf_puts(o, "]");
    }
    if (tier == 0 && k->version)
        card_str(o, ",\"version\":", k->version, strlen(k->version));
    if (g && g->reason) {
        buf_puts(o, ",\"quarantined\":true");
        card_str(o, ",\"quarantine_reason\":", g->reason, strlen(g->reason));
    }
    buf_puts(o, "}");
}

static char *card_json_of(const struct skill *k, const struct skill_gate *g, int tier,
                          size_t *len, struct desc_counts *dc)
{
    struct buf b;
    buf_init(&b, 0);
    card_write(k, g, tier, dc, &b);
    return buf_steal(&b, len);
}

/* k: the entry, when its card's tokens and characters were counted ahead
 * (tools_card_sizes), else NULL. */
static struct card *card_render(const struct snapshot *snap, size_t idx, int tier,
                                struct desc_counts *dc, const struct skill *k)
{
    const struct skill *e = snap->v[idx];
    const struct skill_gate *g = snap->gate ? &snap->gate[idx] : NULL;
    if (g && g->serve)
        e = g->serve;
    struct buf js;
    buf_init(&js, 0);
    card_write(e, g, tier, dc, &js);
    size_t n = js.len;
    struct card *c = xmalloc(sizeof *c + n);
    c->len = (uint32_t)n;
    c->esc_len = (uint32_t)(n + buf_json_text_escapes(js.p, n));
    c->tokens = (uint32_t)(k ? k->card_tokens[tier] : shape_tokens(js.p, n));
    c->chars = (uint32_t)(k ? k->card_chars[tier] : shape_chars(js.p, n));
    memcpy(c->data, js.p, n);
    buf_cleanup(&js);
    return c;
}

/*
 * The card of entry idx at a tier. A served entry's card depends only on
 * the entry, so it is rendered by the first request that shows it and kept
 * with the entry (two threads may render it at once; one copy wins). A card
 * the lock changes (quarantined, or served from the store) belongs to this
 * snapshot's verdict, not to the entry: it is rendered each time, *owned set.
 */
static struct card *card_get(const struct snapshot *s, size_t idx, int tier, int *owned,
                             struct desc_counts *dc)
{
    const struct skill_gate *g = s->gate ? &s->gate[idx] : NULL;
    *owned = g && (g->reason || g->serve);
    if (*owned)
        return card_render(s, idx, tier, NULL, NULL);
    struct skill *k = s->v[idx];
    struct card *c = skills_card(k, tier);
    if (c)
        return c;
    c = card_render(s, idx, tier, dc,
                    atomic_load_explicit(&k->card_sized, memory_order_acquire) ? k : NULL);
    return skills_card_keep(k, tier, c);
}

/*
 * The card holds the description between two quotes: the estimate's runs
 * inside it are the same, and a run that meets a quote only grows, so the
 * card counts at least as many tokens as the description alone.
 */
static int desc_plain(const struct skill *k)
{
    const unsigned char *d = (const unsigned char *)k->description;
    size_t n = strlen(k->description);
    for (size_t i = 0; i < n; i++)
        if (d[i] < 0x20 || d[i] == '"' || d[i] == '\\')
            return 0;
    /* json_string refuses invalid UTF-8: the card then has no description */
    return utf8_valid(k->description, n);
}

/* A byte a value may start or end with and meet a quote as the start or
 * end of the text would: a letter, a digit, or part of a UTF-8 sequence. */
static int safe_end(unsigned char c)
{
    return c >= 0x80 || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9');
}

/*
 * The floor of k's card at a cut tier (2 and up), sp being the prefix counts
 * of k's plain description: the card less its qualified name and quarantine
 * fields is {"name":"N","description":"D"} with D the cut (and "…"), and
 * where N and D start and end with safe_end bytes and N is ASCII, its
 * tokens are those of the four pieces and of N and D added up (no run
 * crosses a quote; the marker is one token of its own). Leaving members out
 * only removes runs. 0 when that does not hold.
 */
static size_t cut_floor(const struct skill *k, int tier, struct desc_counts *dc)
{
    static const char p0[] = "{\"name\":\"", p1[] = "\",\"description\":\"", p2[] = "\"}";
    const unsigned char *nm = (const unsigned char *)k->name;
    size_t nl = strlen(k->name);
    if (!nl || !safe_end(nm[0]) || !safe_end(nm[nl - 1]))
        return 0;
    for (size_t i = 0; i < nl; i++)
        if (nm[i] >= 0x80 || nm[i] < 0x20 || nm[i] == '"' || nm[i] == '\\')
            return 0;
    int marker;
    size_t keep = counts_cut(k, tier, dc, &marker);
    const unsigned char *d = (const unsigned char *)k->description;
    if (!keep || !safe_end(d[0]) || !safe_end(d[keep - 1]))
        return 0;
    return shape_tokens(p0, sizeof p0 - 1) + shape_tokens(p1, sizeof p1 - 1) +
           shape_tokens(p2, sizeof p2 - 1) + shape_tokens(k->name, nl) +
           shape_prefix_tokens(&dc->sp, keep) + (size_t)marker;
}

size_t tools_card_floor(const struct skill *k, int tier)
{
    if (!desc_plain(k))
        return 0;
    struct desc_counts dc;
    dc.tier = -1;
    size_t f = shape_prefix_init(&dc.sp, k->description, strlen(k->description));
    if (tier >= 2)
        f = cut_floor(k, tier, &dc);
    shape_prefix_free(&dc.sp);
    return f;
}

void tools_card_sizes(struct skill *k)
{
    if (atomic_load_explicit(&k->card_sized, memory_order_acquire))
        return;
    size_t dlen = strlen(k->description);
    if (dlen > UINT16_MAX)
        return;
    struct desc_counts dc;
    dc.tier = -1;
    shape_prefix_init(&dc.sp, k->description, dlen);
    size_t tok[SKILL_CARD_TIERS], chr[SKILL_CARD_TIERS];
    uint16_t keep[SKILL_CARD_TIERS - 2];
    unsigned char marker = 0;
    int ok = 1;
    for (int t = 0; t < SKILL_CARD_TIERS && ok; t++) {
        int m = 0;
        if (t >= 2) {
            keep[t - 2] = (uint16_t)counts_cut(k, t, &dc, &m);
            marker |= (unsigned char)(m << (t - 2));
        }
        if (t >= 2 && !m && keep[t - 2] == dlen) {
            tok[t] = tok[1];        /* the whole description: tier 1's card */
            chr[t] = chr[1];
        } else {
            size_t n;
            char *j = card_json_of(k, NULL, t, &n, &dc);
            tok[t] = shape_tokens(j, n);
            chr[t] = shape_chars(j, n);
            free(j);
        }
        ok = tok[t] <= UINT16_MAX && chr[t] <= UINT16_MAX;
    }
    shape_prefix_free(&dc.sp);
    if (!ok)
        return;
    /* Concurrent callers write the same values: the entry is read-only. */
    for (int t = 0; t < SKILL_CARD_TIERS; t++) {
        k->card_tokens[t] = (uint16_t)tok[t];
        k->card_chars[t] = (uint16_t)chr[t];
    }
    memcpy(k->card_keep, keep, sizeof keep);
    k->card_marker = marker;
    atomic_store_explicit(&k->card_sized, 1, memory_order_release);
}

static int fits_budget(const struct shape_budget *b, size_t chars, size_t tokens)
{
    return !b || ((!b->max_tokens || tokens <= b->max_tokens) &&
                  (!b->max_chars || chars <= b->max_chars));
}

static const char page_head[] = "{\"skills\":[";

/* The cards of one page, each at the tier page_tiers gave it. */
struct page {
    size_t *idx;            /* entries, in page order */
    size_t n, total;        /* cards on the page; matches before the window */
    struct card **card;
    unsigned char *own;     /* card[i] is this page's to free */
    unsigned char *tier;
    size_t sized;           /* cards [0, sized) have their tier: all n, or fewer (below) */
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

static void page_set(const struct snapshot *s, struct page *p, size_t i, int tier,
                     struct desc_counts *dc)
{
    int own;
    struct card *c = card_get(s, p->idx[i], tier, &own, dc);
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
 *
 * With prefix set, the cards stop at the first one that takes the page's
 * head and the cards so far over the budget: the cut keeps fewer than
 * that, nothing is left to spend on the top results, and the cards after it
 * are not shown. A card's tier depends only on its room, so the cards
 * before it have the tiers the whole page would give them. Rendering the
 * rest only to drop them was most of a first query's time (a page of 500
 * cut to ~200 by --max-result-chars). p->sized says how far it went.
 */
static void page_tiers(const struct snapshot *s, struct page *p, const struct shape_budget *b,
                       int ranked, size_t env_tokens, size_t env_chars, int prefix)
{
    size_t n = p->n;
    p->sized = n;
    if (!n)
        return;
    size_t room = SIZE_MAX;
    if (b && b->max_tokens) {
        size_t avail = b->max_tokens > env_tokens ? b->max_tokens - env_tokens : 0;
        room = avail / n;
        room = room ? room - 1 : 0;     /* the comma after it */
    }
    size_t tokens = env_tokens + n - 1, chars = env_chars + n - 1;
    size_t hc = sizeof page_head - 1, head_t = shape_tokens(page_head, hc);
    size_t pre_t = head_t, pre_c = hc;      /* the head and cards [0, i] */
    for (size_t i = 0; i < n; i++) {
        /* A card the lock does not change, with tiers to render: its
         * description's prefix counts serve every tier's cut, and their
         * total is tools_card_floor (a first query's page gives most cards
         * less room than their description: tiers 0 and 1 are skipped
         * without rendering them). */
        struct skill *k = s->v[p->idx[i]];
        struct desc_counts dc;     /* not zeroed: 6 KB */
        dc.tier = -1;
        int t = 0, have = 0;
        int served = !(s->gate && (s->gate[p->idx[i]].reason || s->gate[p->idx[i]].serve));
        if (served && room != SIZE_MAX &&
            atomic_load_explicit(&k->card_sized, memory_order_acquire)) {
            /* Counted ahead (tools_card_sizes): the card's tier without
             * rendering any other, and its cut without measuring it. */
            while (t + 1 < SKILL_CARD_TIERS && k->card_tokens[t] > room)
                t++;
            if (t >= 2) {
                dc.tier = t;
                dc.keep = k->card_keep[t - 2];
                dc.marker = (k->card_marker >> (t - 2)) & 1;
            }
            page_set(s, p, i, t, t >= 2 ? &dc : NULL);
            goto sized;
        }
        int plain = room != SIZE_MAX && served && desc_plain(k);
        if (plain && !(skills_card(k, 0) &&
                       skills_card(k, 1))) {
            shape_prefix_init(&dc.sp, k->description, strlen(k->description));
            have = 1;
            if (dc.sp.total > room)
                t = 2;      /* tiers 0 and 1 hold the whole description */
        }
        for (; t < SKILL_CARD_TIERS; t++) {
            if (plain && !have && t >= 2 &&
                !skills_card(k, t)) {
                shape_prefix_init(&dc.sp, k->description, strlen(k->description));
                have = 1;
            }
            /* a cut tier whose floor is over the room is not rendered
                 * (the last one always is: a card that fits none takes it) */
            if (have && t >= 2 && t + 1 < SKILL_CARD_TIERS &&
                !skills_card(k, t) &&
                cut_floor(k, t, &dc) > room)
                continue;
            page_set(s, p, i, t, have ? &dc : NULL);
            if (p->card[i]->tokens <= room)
                break;
        }
        if (have)
            shape_prefix_free(&dc.sp);
    sized:
        tokens += p->card[i]->tokens;
        chars += p->card[i]->chars;
        pre_t += p->card[i]->tokens + (i > 0);
        pre_c += p->card[i]->chars + (i > 0);
        if (prefix && b && i + 1 < n && !fits_budget(b, pre_c, pre_t)) {
            p->sized = i + 1;
            return;
        }
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
            struct card *c = card_get(s, p->idx[i], t, &own, NULL);
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
            page_set(s, p, i, to, NULL);
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

/* The entries of a page and their cards, fitted to budget b. */
static void page_build(const struct snapshot *s, const struct view *v, const char *query,
                       json_t *tags, size_t offset, size_t limit, const struct shape_budget *b,
                       int prefix, struct page *p)
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
               hc + shape_chars(t.p, t.len), prefix);
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
    page_build(s, v, query, tags, offset, limit, b, 0, &p);
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
    page_build(s, v, query, tags, offset, limit, o->budget, 1, &p);
    size_t total = p.total, kept = p.n, sized = p.sized;
    struct card **win = p.card;
    if (p.miss) {
        /* Rare, and carries a hint: the JSON path renders it. */
        page_free(&p);
        return -1;
    }

    /* Sizes of the head and of every prefix of the window. */
    size_t hc = sizeof page_head - 1, ht = shape_tokens(head, hc);
    size_t chars = hc, tokens = ht;
    for (size_t i = 0; i < sized; i++) {
        chars += win[i]->chars + (i > 0);
        tokens += win[i]->tokens + (i > 0);
    }
    buf_init(&tail, 0);
    page_tail(&tail, total, s->generation, offset, kept);
    size_t cut = kept;
    const struct shape_budget *bu = o->budget;
    size_t full_tokens = tokens + shape_tokens(tail.p, tail.len);
    if (sized < kept) {
        /* Cards [sized, kept) were not sized (page_tiers): counted at the
         * mean of those that were, with their commas. */
        size_t cards = tokens - ht - (sized - 1);
        full_tokens += (cards * (kept - sized) + sized - 1) / sized + (kept - sized);
    }
    if (sized < kept || !fits_budget(bu, chars + shape_chars(tail.p, tail.len), full_tokens)) {
        /* The tail of a cut page, sized with the widest numbers it can hold
         * (kept_tokens <= original_tokens, the cursor <= offset + kept). */
        size_t wide = full_tokens;
        if (sized < kept) {
            /* The cut keeps at most the sized cards: kept_tokens is at most
             * their sum and this tail (+2 should its numbers grow a digit),
             * and at most the budget. */
            cut_tail(&tail, total, s->generation, offset + kept, wide, wide, o->hint);
            size_t up = tokens + shape_tokens(tail.p, tail.len) + 2;
            if (bu->max_tokens && up > bu->max_tokens)
                up = bu->max_tokens;
            wide = up > wide ? up : wide;
        }
        cut_tail(&tail, total, s->generation, offset + kept, wide, wide, o->hint);
        size_t tc = shape_chars(tail.p, tail.len), tt = shape_tokens(tail.p, tail.len);
        if ((bu->max_chars && tc * 3 > bu->max_chars) ||
            (bu->max_tokens && tt * 3 > bu->max_tokens))
            cut = 0;        /* a tiny budget: leave it to shape_json */
        else {
            chars = hc + tc;
            tokens = ht + tt;
            for (cut = 0; cut < sized; cut++) {
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
        cut_tail(&tail, total, s->generation, offset + cut,
                 full_tokens > tokens ? full_tokens : tokens, tokens, o->hint);
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
        buf_json_escape_text(&e, win[i]->data, win[i]->len, win[i]->esc_len - win[i]->len);
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
    struct rcache_pages *pages = c->call->snap->ext ? c->call->snap->ext->pages : NULL;
    struct buf key;
    buf_init(&key, 0);
    if (pages) {
        /* A page depends on the snapshot (the cache is its own), the view,
         * the era, the budget and these arguments, length-prefixed so no two
         * spellings of them meet. */
        const struct shape_budget *bu = o->budget;
        /* The numbers as fixed-width words, not text: the key is only
         * ever compared within this process, and printf cost more than
         * the lookup itself. */
        size_t qlen = query ? strlen(query) : 0;
        const uint64_t nums[6] = {(uint64_t)c->call->modern, bu ? bu->max_tokens : 0,
                                  bu ? bu->max_chars : 0, offset, (uint64_t)limit, qlen};
        buf_reserve(&key, sizeof nums + qlen);
        buf_append(&key, nums, sizeof nums);
        if (query)
            buf_append(&key, query, qlen);
        size_t i;
        json_t *t;
        json_array_foreach(tags, i, t) {
            uint64_t tl = json_string_length(t);
            buf_append(&key, &tl, sizeof tl);
            buf_append(&key, json_string_value(t), json_string_length(t));
        }
        if (rcache_pages_get(pages, c->call->view, key.p, key.len, &o->raw_owned, &o->rawlen)) {
            o->raw = o->raw_owned;
            buf_cleanup(&key);
            return 0;
        }
    }
    if (!c->call->snap->ext || list_from_cards(c->call->snap, c->call->view, query, tags, offset, (size_t)limit, o) < 0) {
        o->structured = list_page(c->call->snap, c->call->view, query, tags, offset, (size_t)limit, o->budget);
        fit_list(o, offset);
    }
    if (pages) {
        o->raw_owned = tools_render(o, 0, c->call->modern, &o->rawlen);
        o->raw = o->raw_owned;
        if (rcache_pages_admit(pages, c->call->view, key.p, key.len))
            rcache_pages_put(pages, c->call->view, key.p, key.len, o->raw, o->rawlen);
    }
    buf_cleanup(&key);
    return 0;
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
