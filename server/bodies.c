/*
 * bodies.c - what an entry knows of its SKILL.md body: the body itself,
 * read on first load_skill and cached in the entry (skills_body), and the
 * search terms of the body and the references, read by the body indexer
 * after start-up and by rebuilds for new and changed skills.
 *
 * Called by: the HTTP threads (skills_body), main (skills_index_bodies),
 * skills.c (the rest, in the scanner role).
 */
#include "skills_int.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "frontmatter.h"
#include "jail.h"
#include "search.h"
#include "util.h"

/* A rebuild reads the bodies of at most this many new or changed skills
 * itself; past that (a library swapped wholesale) the indexer does. */
#define INLINE_BODIES 64

/* The body indexer's thread and its wake-up. */
struct bodies_indexer {
    void (*prep)(struct skill *k);
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want;
    atomic_int stop;
};

char bodies_merged_mark;

/* ---- the body cache -------------------------------------------------------- */

void skills_body_free(struct skill_body *b)
{
    if (!b)
        return;
    free(b->text);
    free(b->sec);
    free(atomic_load(&b->rendered[0]));
    free(atomic_load(&b->rendered[1]));
    if (b->sec_rendered)
        for (size_t i = 0; i < 2 * b->nsec; i++)
            free(atomic_load(&b->sec_rendered[i]));
    free(b->sec_rendered);
    free(b);
}

int skills_body(struct skill *k, struct skill_body **out, struct skill_body **tmp,
                struct err *why)
{
    char kdir[SKILL_DIR_MAX];
    struct skill_body *b = atomic_load(&k->body);
    *tmp = NULL;
    if (b) {
        *out = b;
        return 0;
    }
    struct stat st;
    /* Beneath the skill folder, as every other file of the skill: a
     * SKILL.md replaced by a link out of the folder after the scan must not
     * hand the outside file to load_skill. */
    int root = jail_root(skills_dir(k, kdir));
    int fd = root < 0 ? root : jail_open_regular(root, "SKILL.md", &st);
    if (root >= 0)
        close(root);
    if (fd < 0) {
        err_set(why, 0, 0, "%s",
                fd == -EINVAL || fd == -EISDIR ? "SKILL.md is not a regular file"
                : fd == -EXDEV                 ? "SKILL.md leads outside the skill folder"
                                               : "SKILL.md cannot be opened");
        return fd;
    }
    if (st.st_size > (off_t)SKILL_MD_MAX) {
        close(fd);
        err_set(why, 0, 0, "SKILL.md is over the 4 MiB limit");
        return -EFBIG;
    }
    size_t len = (size_t)st.st_size;
    char *raw = xmalloc(len + 1);
    ssize_t got = scan_read_prefix(fd, raw, len, st.st_size);
    close(fd);
    if (got < 0) {
        free(raw);
        err_set(why, 0, 0, "SKILL.md cannot be read");
        return -EIO;
    }
    len = (size_t)got;
    raw[len] = '\0';

    struct fkey key;
    key_of(&st, &key);
    size_t off = k->body_off;
    int same = key_eq(&key, &k->md_key);
    if (!same) {
        /* Edited since the snapshot: find the body in what is there now. */
        struct fm f = {0};
        struct err e;
        if (fm_parse(raw, len, 1, &f, &e) == 0) {
            off = f.body_off;
            fm_cleanup(&f);
        } else {
            off = 0;
        }
    }
    if (off > len)
        off = len;
    b = xcalloc(1, sizeof *b);
    b->len = len - off;
    b->text = xmalloc(b->len + 1);
    memcpy(b->text, raw + off, b->len);
    b->text[b->len] = '\0';
    free(raw);
    b->key = key;
    b->nsec = md_sections(b->text, b->len, &b->sec);
    if (b->nsec)
        b->sec_rendered = xcalloc(2 * b->nsec, sizeof *b->sec_rendered);
    if (!same) {
        *tmp = b;
        *out = b;
        return 0;
    }
    struct skill_body *expect = NULL;
    if (!atomic_compare_exchange_strong(&k->body, &expect, b)) {
        skills_body_free(b);    /* another thread won the race; use its copy */
        b = expect;
    }
    *out = b;
    return 0;
}

/* ---- body search terms ----------------------------------------------------- */

/*
 * The search terms of k's body (its first SEARCH_BODY_MAX bytes) and of its
 * references/ Markdown files (SEARCH_REFS_MAX bytes in all, in path order),
 * read through the jail like read_skill_file. What cannot be read adds
 * nothing: the entry still gets terms, so it is not read again.
 */
static struct search_terms *body_terms(const struct skill *k)
{
    char kdir[SKILL_DIR_MAX];
    struct jail_file f = {0};
    struct search_doc d = {0};
    struct buf refs;

    const char *dir = skills_dir(k, kdir);
    if (jail_read(dir, "SKILL.md", k->body_off + SEARCH_BODY_MAX, &f, NULL) == 0 &&
        f.len > k->body_off) {
        d.body = f.data + k->body_off;
        d.body_len = f.len - k->body_off;
    }
    buf_init(&refs, 0);
    for (size_t i = 0; i < k->nfiles && refs.len < SEARCH_REFS_MAX; i++) {
        const char *p = k->files[i].path;
        size_t pl = strlen(p);
        if (strncmp(p, "references/", 11) || pl < 14 || strcasecmp(p + pl - 3, ".md"))
            continue;
        struct jail_file r = {0};
        if (jail_read(dir, p, SEARCH_REFS_MAX - refs.len, &r, NULL) == 0) {
            buf_append(&refs, r.data, r.len);
            buf_puts(&refs, "\n");
        }
        jail_file_cleanup(&r);
    }
    if (refs.len) {
        d.refs = refs.p;
        d.refs_len = refs.len;
    }
    struct search_terms *t = search_terms_new(&d);
    jail_file_cleanup(&f);
    buf_cleanup(&refs);
    return t;
}

/* Gives k its body terms unless it has them (another thread may race: one
 * copy wins). Returns 1 when this call read them. */
static int index_body(struct skill *k)
{
    if (atomic_load(&k->xterms))
        return 0;
    struct search_terms *t = body_terms(k), *none = NULL;
    if (!atomic_compare_exchange_strong(&k->xterms, &none, t)) {
        search_terms_free(t);
        return 0;
    }
    return 1;
}

void bodies_inline(struct snapshot *s)
{
    /* After start-up, an edited or new skill is searchable by its body
     * as soon as it is served at all. */
    size_t missing = 0;
    for (size_t i = 0; i < s->n; i++)
        missing += !atomic_load(&s->v[i]->xterms);
    if (missing <= INLINE_BODIES)
        for (size_t i = 0; i < s->n; i++)
            index_body(s->v[i]);
}

void bodies_kick(struct skills *S, const struct snapshot *s)
{
    struct bodies_indexer *ix = S->ix;
    if (!ix)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (!atomic_load(&s->v[i]->xterms)) {
            pthread_mutex_lock(&ix->mu);
            ix->want = 1;
            pthread_cond_signal(&ix->cv);
            pthread_mutex_unlock(&ix->mu);
            return;
        }
    }
}

/* s is current: the body terms its index holds need no list any more (the
 * next build takes them from s's index). Scanner role: no build reads the
 * lists meanwhile, and the indexer only ever sets a NULL one. */
void bodies_release_xterms(struct snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!search_has_body(skills_search(s), i))
            continue;
        struct search_terms *xt = atomic_exchange(&s->v[i]->xterms, XTERMS_MERGED);
        if (xt != XTERMS_MERGED)
            search_terms_free(xt);
    }
}

/* ---- the indexer ----------------------------------------------------------- */

/*
 * The body indexer: reads the bodies the current snapshot's entries lack,
 * then has a rescan publish them (every entry is reused, so the rescan
 * costs a stat pass and an index merge, and keeps the generation). It runs
 * at the lowest CPU priority: serving, and the cold start, come first.
 */
static void *indexer_main(void *arg)
{
    struct skills *S = arg;
    struct bodies_indexer *ix = S->ix;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    int first = 1;      /* its line comes once even with no body to read */
    pthread_mutex_lock(&ix->mu);
    for (;;) {
        while (!ix->want && !ix->stop)
            pthread_cond_wait(&ix->cv, &ix->mu);
        if (ix->stop)
            break;
        ix->want = 0;
        pthread_mutex_unlock(&ix->mu);
        struct snapshot *s = skills_acquire(S);
        /* The first snapshot's index is built from card terms alone: its
         * thread reads no body list this loop is filling. */
        skills_search(s);
        size_t read = 0;
        double t0 = now_ms();
        for (size_t i = 0; i < s->n && !atomic_load(&ix->stop); i++) {
            read += (size_t)index_body(s->v[i]);
            if (ix->prep)
                ix->prep(s->v[i]);
        }
        skills_release(s);
        if ((read || first) && !atomic_load(&ix->stop)) {
            double ms = now_ms() - t0;
            if (read)
                skills_rescan(S, 1, NULL);
            /* Logged once published: from this line on, body words are found
             * and no rescan of the indexer's is pending (tests wait for it). */
            log_info("skills: indexed the bodies of %zu skills (%.1f ms)", read, ms);
            /* The snapshot the rescan retired held the frontmatter-only
             * index, and reading left buffers free in this thread's arena. */
            malloc_trim(0);
        }
        first = 0;
        pthread_mutex_lock(&ix->mu);
    }
    pthread_mutex_unlock(&ix->mu);
    return NULL;
}

void skills_index_bodies(struct skills *S, void (*prep)(struct skill *k))
{
    if (S->ix)
        return;
    struct bodies_indexer *ix = xcalloc(1, sizeof *ix);
    ix->prep = prep;
    pthread_mutex_init(&ix->mu, NULL);
    pthread_cond_init(&ix->cv, NULL);
    /* Set before the thread starts: its rescans read it. */
    S->ix = ix;
    ix->want = 1;       /* the first pass runs whatever the library holds */
    if (pthread_create(&ix->thread, NULL, indexer_main, S) != 0) {
        log_warn("skills: no body indexer thread; only names, tags and descriptions are "
                 "searched");
        S->ix = NULL;
        pthread_mutex_destroy(&ix->mu);
        pthread_cond_destroy(&ix->cv);
        free(ix);
        return;
    }
}

void skills_bodies_indexed(struct skills *S, size_t *indexed, size_t *n)
{
    struct snapshot *s = skills_acquire(S);
    skills_search(s);       /* counted with the index, before it is published */
    *indexed = snap_of(s)->bodies_indexed;
    *n = s->n;
    skills_release(s);
}

void bodies_stop(struct skills *S)
{
    struct bodies_indexer *ix = S->ix;
    if (!ix)
        return;
    pthread_mutex_lock(&ix->mu);
    ix->stop = 1;
    pthread_cond_signal(&ix->cv);
    pthread_mutex_unlock(&ix->mu);
    pthread_join(ix->thread, NULL);
    pthread_mutex_destroy(&ix->mu);
    pthread_cond_destroy(&ix->cv);
    S->ix = NULL;
    free(ix);
}
