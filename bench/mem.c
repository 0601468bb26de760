/*
 * mem.c - where a built index's heap goes, in-process: the server's own
 * skills_new() over a library, malloc_trim, then the heap in use
 * (mallinfo2) and the bytes of each class of data, read from the entries
 * with malloc_usable_size (the allocator's real cost, slack included), and
 * the process's VmRSS (what of the freed heap was not handed back).
 *
 *   build/bench/mem DIR
 *
 * Built and linked like tick.c (all of build/obj/ but main.o). The search
 * index is measured last by freeing it; the process exits without freeing
 * the rest.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "skills_int.h"
#include "util.h"

static size_t heap(void)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* The process's resident set (kB), as the OS sees it: freed heap that is
 * not handed back still counts. */
static long vmrss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static size_t slen(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static void row(const char *what, size_t bytes, size_t n)
{
    printf("%-58s %9.2f MB %7.0f B/skill\n", what, (double)bytes / 1e6,
           n ? (double)bytes / (double)n : 0.0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mem DIR\n");
        return 2;
    }
    log_set_level(LOG_ERROR);
    size_t h0 = heap();
    const char *roots[1] = {argv[1]};
    struct skills *S = skills_new(roots, 1, NULL, NULL, NULL, NULL);
    if (!S)
        return 1;
    struct snapshot *s = skills_acquire(S);
    /* the first index is built by a thread of its own: measured with it */
    skills_search(s);
    size_t h1 = heap();
    size_t n = s->n;
    size_t blk = 0, st = 0, names = 0, paths = 0, desc = 0, rest = 0, tags = 0, small = 0;
    size_t files = 0, dirpaths = 0, terms = 0, warn = 0, hooks = 0, rest_none = 0;
    for (size_t i = 0; i < n; i++) {
        const struct skill *k = s->v[i];
        blk += malloc_usable_size((void *)(uintptr_t)k);
        st += sizeof *k;
        names += slen(k->qname) + slen(k->team);
        if (k->name < k->qname || k->name >= k->qname + strlen(k->qname))
            names += slen(k->name);
        paths += slen(k->dir_abs);
        desc += slen(k->description);
        rest += slen(k->fm_rest);
        rest_none += k->fm_slots && !k->fm_rest;
        small += slen(k->version) + slen(k->title) + (k->fm_name == k->name ? 0 : slen(k->fm_name));
        tags += k->ntags * sizeof(char *);
        for (size_t t = 0; t < k->ntags; t++)
            tags += slen(k->tags[t]);
        if (k->files)
            files += malloc_usable_size(k->files);
        for (size_t d = 1; d < k->ndirs; d++)
            dirpaths += slen(skills_dir_paths(k)[d]);
        terms += k->terms ? search_terms_bytes(k->terms) : 0;
        if (k->warnings)
            warn++;
        if (k->hooks) {
            hooks += malloc_usable_size(k->hooks);
            hooks += k->hooks->pre ? malloc_usable_size(k->hooks->pre) : 0;
            hooks += k->hooks->post ? malloc_usable_size(k->hooks->post) : 0;
        }
    }
    size_t wl = snap_of(s)->nw * sizeof *snap_of(s)->w, wown = 0;
    for (size_t i = 0; i < snap_of(s)->nw; i++)
        wown += malloc_usable_size(snap_of(s)->w[i].path);
    size_t tables = snap_of(s)->tcap * 2 * sizeof(uint32_t) + s->n + s->n * sizeof *s->v;
    printf("skills=%zu watched=%zu listed=%zu sizeof(struct skill)=%zu "
           "entries_with_warnings=%zu\n",
           n, snap_watched(s), snap_of(s)->nw, sizeof(struct skill), warn);
    row("heap in use after the build (mallinfo2, after malloc_trim)", h1 - h0, n);
    row("VmRSS after the build (whole process)", (size_t)vmrss_kb() * 1024, n);
    row("entry blocks (struct + strings, usable size)", blk, n);
    row("  struct skill", st, n);
    row("  names (name, qname, team)", names, n);
    row("  paths (dir_abs when not composed; SKILL.md derived)", paths, n);
    row("  description", desc, n);
    row("  frontmatter text (fm_rest)", rest, n);
    printf("    texts that were only placeholders (none kept)            %9zu\n", rest_none);
    row("  tags (pointers + strings)", tags, n);
    row("  version, fm_name, title", small, n);
    row("file/folder blocks (usable size)", files, n);
    row("  of which folder paths (relative; the first is qname's end)", dirpaths, n);
    row("card search terms (search_terms_bytes)", terms, n);
    row("watch list (array + paths; entries are keyed)", wl + wown, n);
    row("lookup tables and entry array", tables, n);
    row("hook paths", hooks, n);
    size_t before = heap();
    search_free(skills_search(s));
    atomic_store(&s->search_ix, NULL);
    size_t idx = before - heap();
    row("search index (freed to measure)", idx, n);
    return 0;
}
