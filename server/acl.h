/*
 * acl.h - per-caller visibility (--acl FILE): which skills a caller may
 * see, and which it may run scripts of.
 *
 * The file maps who is asking to PCRE2 patterns over qualified names, one
 * rule a line (docs/security.md, "Access rules"):
 *
 *     # who            may   skills (PCRE2, anchored at the start of the qualified name)
 *     client:ci-bot    see   ops/.*
 *     group:platform   run   ops/(deploy|rollback)$
 *     *                see   public/
 *
 * A caller's grants are the union of the rules it matches; run implies see;
 * a caller no rule matches sees nothing. Every pattern is compiled once
 * (JIT when the platform has it) when the file is read.
 *
 * What a request pays: acl_classify() finds which rules the caller matches
 * (string compares, no pattern is run) and returns that set interned in the
 * rule set (struct acl_class: the same set, the same pointer). acl_view()
 * then finds the view of that class in the snapshot (a short lock-free
 * list); only the first request of a class on a snapshot builds it, running
 * the class's patterns over every qualified name once. The view is freed
 * with the snapshot, so a view pointer is a stable key for anything cached
 * per snapshot and per caller class.
 *
 * Reloads: acl_reload() reads the file again (SIGHUP, or when its stat
 * changed) and swaps the rule set in whole; a file that does not parse
 * keeps the rules in force and logs FILE:LINE. Retired rule sets are kept
 * until acl_close(), since classes and views point into them.
 */
#ifndef SKILL_ACL_H
#define SKILL_ACL_H

#include <stdatomic.h>
#include <stddef.h>

#include "skills.h"

#define ACL_MAX_RULES 1024
#define ACL_FILE_MAX (1 << 20)

struct err;
struct acl;             /* the server's instance: the rule set in force */
struct acl_rules;       /* one parsed file, immutable */
struct acl_class;       /* the set of rules one caller matches */

/* Who is asking; any member may be NULL or "" (nothing known). */
struct acl_who {
    const char *client;     /* the authenticated client id */
    const char *groups;     /* comma-separated groups (token file, or the JWT "groups") */
    const char *sub;        /* the OAuth access token's "sub" */
    const char *scopes;     /* its scopes, space-separated */
};

/* A reply rendered once for one view (tools.c), kept with the view. */
struct view_bytes {
    size_t len;
    char data[];
};

/*
 * What one caller class sees of one snapshot. see and run have one byte
 * per entry of the snapshot (s->v); idx lists the visible entries in
 * snapshot order, so a page over visible entries is a slice of it.
 */
struct view {
    struct snapshot_attach at;  /* freed with the snapshot */
    const struct acl_class *cls;
    unsigned char *see;
    unsigned char *run;
    size_t *idx;
    size_t visible;
    /* the default list_skills reply [legacy, modern], rendered on first use
     * (set once; the view is otherwise read-only once published) */
    _Atomic(struct view_bytes *) *list;
};

/* Entry i of the snapshot is visible through v (NULL: every entry). */
static inline int view_sees(const struct view *v, size_t i)
{
    return !v || v->see[i];
}

static inline int view_runs(const struct view *v, size_t i)
{
    return !v || v->run[i];
}

/* How many entries of s the view shows, and the j-th of them. */
static inline size_t view_count(const struct view *v, const struct snapshot *s)
{
    return v ? v->visible : s->n;
}

static inline size_t view_at(const struct view *v, size_t j)
{
    return v ? v->idx[j] : j;
}

/* The per-entry mask to pass to skills_find_in and friends. */
static inline const unsigned char *view_mask(const struct view *v)
{
    return v ? v->see : NULL;
}

/*
 * Parses text[0..n) (file names it in messages). NULL on error with
 * "file:line: what" (and the line) in *err.
 */
struct acl_rules *acl_parse(const char *text, size_t n, const char *file, struct err *err);
void acl_rules_free(struct acl_rules *r);
size_t acl_rules_count(const struct acl_rules *r);
/* Rules whose pattern is JIT compiled (the others are matched interpreted). */
size_t acl_rules_jitted(const struct acl_rules *r);

/* The class of w under r (w NULL: a caller with no identity). Never NULL. */
const struct acl_class *acl_rules_classify(struct acl_rules *r, const struct acl_who *w);
/* 1 when the class may see / run the skill of that qualified name. */
int acl_class_sees(const struct acl_class *k, const char *qname);
int acl_class_runs(const struct acl_class *k, const char *qname);

/* Loads file; NULL with "file:line: what" (or "file: what") in *err. */
struct acl *acl_open(const char *file, struct err *err);
/*
 * Reads the file again when its (mtime, size, inode) changed, or always with
 * force. Returns 1 when new rules are in force, 0 when nothing changed (the
 * text read is the text in force, which stays in force; or the version
 * seen is one that did not load before), -1 when the file did not load
 * (logged with FILE:LINE; the rules in force stay). Any thread.
 */
int acl_reload(struct acl *a, int force);
void acl_close(struct acl *a);

/* The caller's class under the rules in force; NULL when a is NULL. */
const struct acl_class *acl_classify(struct acl *a, const struct acl_who *w);

/* The view of class k on snapshot s, built on first use; NULL when k is NULL. */
const struct view *acl_view(struct snapshot *s, const struct acl_class *k);

#endif
