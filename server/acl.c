/*
 * acl.c - see acl.h.
 *
 * A class is the bit set of the rules a caller matches, interned in its
 * rule set: classify computes the bits on the stack, hashes them and finds
 * the class in a lock-free table of push-only lists (a new set is pushed
 * with one CAS; two threads that race on one set agree on the first one
 * pushed). So a class pointer names one set of grants under one rule set,
 * and the views of a snapshot are keyed by that pointer.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "acl.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reloadable.h"
#include "util.h"

#define WORDS ((ACL_MAX_RULES + 63) / 64)
#define BUCKETS 64

enum who_kind { WHO_ANY, WHO_CLIENT, WHO_GROUP, WHO_SUB, WHO_SCOPE };

struct rule {
    enum who_kind kind;
    char *name;             /* what the kind names; NULL for '*' */
    int run;                /* run (implies see), else see */
    pcre2_code *re;
    size_t line;
};

struct acl_class {
    struct acl_rules *rules;
    uint64_t bits[WORDS];
    struct acl_class *next;
};

struct acl_rules {
    uint64_t text_hash;     /* of the text parsed (acl's kind->same) */
    struct rule *r;
    size_t n;
    size_t jitted;
    size_t words;           /* words of a class's bits in use */
    _Atomic(struct acl_class *) classes[BUCKETS];
};

/* ---- parsing ----------------------------------------------------------------- */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The characters a client id, group, subject or scope may hold here: any
 * printable ASCII but space, comma and the kind separator's neighbours are
 * fine; a comma could never match a group (groups are comma-separated). */
static int name_ok(const char *s, size_t n)
{
    if (!n || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == ',')
            return 0;
    return 1;
}

void acl_rules_free(struct acl_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->r[i].name);
        pcre2_code_free(r->r[i].re);
    }
    free(r->r);
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct acl_class *k = atomic_load(&r->classes[b]), *kn; k; k = kn) {
            kn = k->next;
            free(k);
        }
    free(r);
}

/* One line: WHO VERB PATTERN. 0, or -1 with err set. */
static int parse_line(const char *s, const char *e, const char *file, size_t line,
                      struct rule *out, size_t *jitted, struct err *err)
{
    const char *w = s;
    while (s < e && !is_space(*s))
        s++;
    size_t wl = (size_t)(s - w);
    while (s < e && is_space(*s))
        s++;
    const char *v = s;
    while (s < e && !is_space(*s))
        s++;
    size_t vl = (size_t)(s - v);
    while (s < e && is_space(*s))
        s++;
    while (e > s && is_space(e[-1]))
        e--;
    static const struct {
        const char *prefix;
        enum who_kind kind;
    } kinds[] = {{"client:", WHO_CLIENT}, {"group:", WHO_GROUP}, {"sub:", WHO_SUB},
                 {"scope:", WHO_SCOPE}};
    memset(out, 0, sizeof *out);
    out->line = line;
    if (wl == 1 && *w == '*') {
        out->kind = WHO_ANY;
    } else {
        size_t k;
        for (k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            size_t pl = strlen(kinds[k].prefix);
            if (wl >= pl && !memcmp(w, kinds[k].prefix, pl))
                break;
        }
        if (k == sizeof kinds / sizeof *kinds) {
            err_fileline(err, file, line,
                 "'%.*s' names nobody: write client:ID, group:NAME, sub:SUBJECT, scope:SCOPE "
                 "or *", (int)(wl > 80 ? 80 : wl), w);
            return -1;
        }
        size_t pl = strlen(kinds[k].prefix);
        if (!name_ok(w + pl, wl - pl)) {
            err_fileline(err, file, line,
                         "'%.*s' needs a name after '%s' (1-255 printable characters, no comma)",
                         (int)(wl > 80 ? 80 : wl), w, kinds[k].prefix);
            return -1;
        }
        out->kind = kinds[k].kind;
        out->name = xstrndup(w + pl, wl - pl);
    }
    if (!vl) {
        err_fileline(err, file, line, "missing 'see' or 'run' after '%.*s'",
                     (int)(wl > 80 ? 80 : wl), w);
        goto fail;
    }
    if (vl == 3 && !memcmp(v, "see", 3))
        out->run = 0;
    else if (vl == 3 && !memcmp(v, "run", 3))
        out->run = 1;
    else {
        err_fileline(err, file, line, "'%.*s' is not 'see' or 'run'",
                     (int)(vl > 40 ? 40 : vl), v);
        goto fail;
    }
    if (s >= e) {
        err_fileline(err, file, line,
             "missing the skills pattern (a PCRE2 pattern on the qualified name; .* for all)");
        goto fail;
    }
    int ec;
    PCRE2_SIZE off;
    out->re = pcre2_compile((PCRE2_SPTR)s, (size_t)(e - s), PCRE2_ANCHORED | PCRE2_UTF, &ec,
                            &off, NULL);
    if (!out->re) {
        PCRE2_UCHAR m[256];
        pcre2_get_error_message(ec, m, sizeof m);
        err_fileline(err, file, line, "the pattern does not compile at offset %zu: %s",
                     (size_t)off, (char *)m);
        goto fail;
    }
    if (pcre2_jit_compile(out->re, PCRE2_JIT_COMPLETE) == 0)
        (*jitted)++;
    return 0;
fail:
    free(out->name);
    out->name = NULL;
    return -1;
}

struct acl_rules *acl_parse(const char *text, size_t n, const char *file, struct err *err)
{
    if (!file)
        file = "(acl)";
    struct acl_rules *r = xcalloc(1, sizeof *r);
    size_t cap = 0, line = 0;
    const char *s = text ? text : "", *end = s + (text ? n : 0);
    if (memchr(s, '\0', (size_t)(end - s))) {
        const char *z = memchr(s, '\0', (size_t)(end - s));
        size_t zl = 1;
        for (const char *p = s; p < z; p++)
            zl += *p == '\n';
        err_fileline(err, file, zl, "a NUL byte: this is not a text file");
        free(r);
        return NULL;
    }
    while (s < end) {
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        const char *e = eol ? eol : end;
        line++;
        const char *p = s;
        s = eol ? eol + 1 : end;
        while (p < e && is_space(*p))
            p++;
        if (p == e || *p == '#')
            continue;
        if (!utf8_valid(p, (size_t)(e - p))) {
            err_fileline(err, file, line, "the line is not valid UTF-8");
            goto fail;
        }
        if (r->n == ACL_MAX_RULES) {
            err_fileline(err, file, line, "more than %d rules", ACL_MAX_RULES);
            goto fail;
        }
        if (r->n == cap) {
            cap = cap ? cap * 2 : 16;
            r->r = xrealloc(r->r, cap * sizeof *r->r);
        }
        if (parse_line(p, e, file, line, &r->r[r->n], &r->jitted, err) < 0)
            goto fail;
        r->n++;
    }
    r->words = r->n ? (r->n + 63) / 64 : 1;
    return r;
fail:
    acl_rules_free(r);
    return NULL;
}

size_t acl_rules_count(const struct acl_rules *r)
{
    return r ? r->n : 0;
}

size_t acl_rules_jitted(const struct acl_rules *r)
{
    return r ? r->jitted : 0;
}

/* ---- classes ---------------------------------------------------------------- */

/* 1 when name is one of the items of list (separated by sep). */
static int in_list(const char *list, char sep, const char *name)
{
    if (!list)
        return 0;
    size_t want = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == sep)
            p++;
        const char *q = strchr(p, sep);
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == want && !memcmp(p, name, n))
            return 1;
        p += n;
    }
    return 0;
}

static int rule_matches(const struct rule *u, const struct acl_who *w)
{
    switch (u->kind) {
    case WHO_ANY:
        return 1;
    case WHO_CLIENT:
        return w && w->client && !strcmp(w->client, u->name);
    case WHO_SUB:
        return w && w->sub && !strcmp(w->sub, u->name);
    case WHO_GROUP:
        return w && in_list(w->groups, ',', u->name);
    case WHO_SCOPE:
        return w && in_list(w->scopes, ' ', u->name);
    }
    return 0;
}

const struct acl_class *acl_rules_classify(struct acl_rules *r, const struct acl_who *w)
{
    uint64_t bits[WORDS];
    memset(bits, 0, r->words * sizeof *bits);
    for (size_t i = 0; i < r->n; i++)
        if (rule_matches(&r->r[i], w))
            bits[i / 64] |= (uint64_t)1 << (i % 64);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < r->words; i++)
        h = (h ^ bits[i]) * 0x100000001b3ull;
    _Atomic(struct acl_class *) *slot = &r->classes[(h ^ (h >> 29)) % BUCKETS];
    struct acl_class *mine = NULL, *head = atomic_load_explicit(slot, memory_order_acquire);
    for (;;) {
        for (struct acl_class *k = head; k; k = k->next)
            if (!memcmp(k->bits, bits, r->words * sizeof *bits)) {
                free(mine);
                return k;
            }
        if (!mine) {
            mine = xcalloc(1, sizeof *mine);
            mine->rules = r;
            memcpy(mine->bits, bits, r->words * sizeof *bits);
        }
        mine->next = head;
        if (atomic_compare_exchange_weak_explicit(slot, &head, mine, memory_order_acq_rel,
                                                  memory_order_acquire))
            return mine;
        /* head now holds what another thread pushed: look again */
    }
}

static int class_grants(const struct acl_class *k, const char *qname, int run,
                        pcre2_match_data *md)
{
    const struct acl_rules *r = k->rules;
    int hit = 0;
    for (size_t i = 0; i < r->n && !hit; i++) {
        if (!(k->bits[i / 64] >> (i % 64) & 1) || (run && !r->r[i].run))
            continue;
        hit = pcre2_match(r->r[i].re, (PCRE2_SPTR)qname, strlen(qname), 0, 0, md, NULL) >= 0;
    }
    return hit;
}

static int class_check(const struct acl_class *k, const char *qname, int run)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int hit = class_grants(k, qname, run, md);
    pcre2_match_data_free(md);
    return hit;
}

int acl_class_sees(const struct acl_class *k, const char *qname)
{
    return !k || class_check(k, qname, 0);
}

int acl_class_runs(const struct acl_class *k, const char *qname)
{
    return !k || class_check(k, qname, 1);
}

/* ---- views ------------------------------------------------------------------ */

static void view_free(struct snapshot_attach *a)
{
    struct view *v = (struct view *)a;
    free(v->see);
    free(v->run);
    free(v->idx);
    free(atomic_load(&v->list[0]));
    free(atomic_load(&v->list[1]));
    free(v->list);
    free(v);
}

static struct view *view_build(const struct snapshot *s, const struct acl_class *k)
{
    struct view *v = xcalloc(1, sizeof *v);
    v->at.free = view_free;
    v->cls = k;
    size_t m = s->n ? s->n : 1;
    v->see = xcalloc(m, 1);
    v->run = xcalloc(m, 1);
    v->idx = xcalloc(m, sizeof *v->idx);
    v->list = xcalloc(2, sizeof *v->list);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    for (size_t i = 0; i < s->n; i++) {
        const char *q = s->v[i]->qname;
        v->run[i] = (unsigned char)class_grants(k, q, 1, md);
        v->see[i] = (unsigned char)(v->run[i] || class_grants(k, q, 0, md));
        if (v->see[i])
            v->idx[v->visible++] = i;
    }
    pcre2_match_data_free(md);
    return v;
}

const struct view *acl_view(struct snapshot *s, const struct acl_class *k)
{
    if (!k)
        return NULL;
    struct snapshot_attach *head = atomic_load_explicit(&s->attached, memory_order_acquire);
    struct view *mine = NULL;
    for (;;) {
        for (struct snapshot_attach *a = head; a; a = a->next)
            if (a->free == view_free && ((struct view *)a)->cls == k) {
                if (mine)
                    view_free(&mine->at);
                return (struct view *)a;
            }
        if (!mine)
            mine = view_build(s, k);
        mine->at.next = head;
        if (atomic_compare_exchange_weak_explicit(&s->attached, &head, &mine->at,
                                                  memory_order_acq_rel, memory_order_acquire))
            return mine;
    }
}

/* ---- the server's instance -------------------------------------------------- */

struct acl {
    struct reloadable rl;   /* of struct acl_rules */
};

static void *load(void *ctx, const char *file, struct stat *st, struct err *err)
{
    size_t n;
    char *text = reloadable_read(file, ACL_FILE_MAX, "the access rules file", st, &n, err);
    if (!text)
        return NULL;
    struct acl_rules *r = acl_parse(text, n, file, err);
    if (r)
        r->text_hash = hash_fnv1a(text, n);
    free(text);
    return r;
}

/* The same text parses to the same rules. Rules files are the operator's,
 * so a 64-bit hash stands for the text: a collision would only keep the
 * set in force one reload longer. */
static int rules_same(const void *a, const void *b)
{
    const struct acl_rules *x = a, *y = b;
    return x->text_hash == y->text_hash && x->n == y->n;
}

static void rules_free(void *r)
{
    acl_rules_free(r);
}

static size_t rules_count(const void *r)
{
    return acl_rules_count(r);
}

/* classes and views of requests in flight point into a replaced set */
static const struct reloadable_kind kind = {
    .what = "access rules", .kept = "in force", .unit = "access rules",
    .load = load, .free = rules_free, .count = rules_count, .same = rules_same,
};

struct acl *acl_open(const char *file, struct err *err)
{
    struct stat st;
    struct acl_rules *r = load(NULL, file, &st, err);
    if (!r)
        return NULL;
    struct acl *a = xcalloc(1, sizeof *a);
    reloadable_init(&a->rl, &kind, NULL, file, r, &st);
    return a;
}

int acl_reload(struct acl *a, int force)
{
    return a ? reloadable_reload(&a->rl, force) : 0;
}

void acl_close(struct acl *a)
{
    if (!a)
        return;
    reloadable_fini(&a->rl);
    free(a);
}

const struct acl_class *acl_classify(struct acl *a, const struct acl_who *w)
{
    if (!a)
        return NULL;
    return acl_rules_classify(reloadable_cur(&a->rl), w);
}
