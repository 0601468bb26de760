/*
 * test_search.c - the BM25F relevance index (server/search.c).
 */
#include "harness.h"
#include "search.h"
#include "util.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NHITS 64

/* ---- helpers ----------------------------------------------------------- */

struct lib {
    const char *name;
    const char *desc;
    const char *tags[4];
};

static struct search_index *build(const struct lib *l, size_t n)
{
    struct search_doc *d = calloc(n ? n : 1, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        d[i].name = l[i].name;
        d[i].description = l[i].desc;
        d[i].tags = l[i].tags;
        while (d[i].ntags < 4 && l[i].tags[d[i].ntags])
            d[i].ntags++;
    }
    struct search_index *idx = search_new(d, n);
    free(d);
    return idx;
}

/* Position of doc in hits[0..k), or -1. */
static int pos(const struct search_hit *h, size_t k, uint32_t doc)
{
    for (size_t i = 0; i < k; i++)
        if (h[i].doc == doc)
            return (int)i;
    return -1;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}


/* ---- a realistic library ---------------------------------------------- */

enum { XLSX, CSV, PDF, DOCX, TEXTSTATS, REPO, APIFETCH, REST, ASYNC, INTERNAL, NLIB };

static const struct lib library[NLIB] = {
    { "xlsx", "Create, edit and analyze Excel spreadsheets (.xlsx) with formulas and charts",
      { "office", "excel", "finance", NULL } },
    { "csv-profile", "Profile a CSV file: columns, types, null counts",
      { "data", "csv", NULL } },
    { "pdf", "Extract text and tables from PDF documents, fill forms, merge and split files",
      { "office", "documents", NULL } },
    { "docx", "Create and edit Word documents with tracked changes; export them to PDF",
      { "office", "documents", NULL } },
    { "text-stats", "Count words, sentences and reading time of a text",
      { "text", "writing", NULL } },
    { "repo-digest", "Summarize a git repository: layout, languages and recent commits",
      { "git", "code", NULL } },
    { "api-fetch", "Fetch JSON from an HTTP API with retries and timeouts",
      { "http", "api", NULL } },
    { "rest-client", "Call REST endpoints over HTTP: GET, POST, headers and auth",
      { "http", "web", NULL } },
    { "async-job", "Run long jobs in the background and poll their status",
      { "jobs", "background", NULL } },
    { "internal-api", "Query the company's internal API for employee and project records",
      { "api", "internal", NULL } },
};

static struct search_index *lib_idx;

TEST(spreadsheet_finds_xlsx)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "spreadsheet", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, XLSX);
    CHECK(h[0].score > 0);
    n = search_query(lib_idx, "spreadsheets", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, XLSX);
    n = search_query(lib_idx, "SpreadSheets!", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, XLSX);
}

TEST(csv_finds_csv_profile)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "csv", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, CSV);
    n = search_query(lib_idx, "csv-profile", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, CSV);
    n = search_query(lib_idx, "  CSV-Profile ", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, CSV);
    n = search_query(lib_idx, "profiling", h, NHITS);   /* stems to profil */
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, CSV);
}

TEST(multi_term_query)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "excel charts", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, XLSX);
    /* OR semantics: a doc matching more terms ranks higher */
    n = search_query(lib_idx, "documents pdf", h, NHITS);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, PDF);
    CHECK_EQ(h[1].doc, DOCX);
}

TEST(prefix_of_last_term)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "spread", h, NHITS);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, XLSX);
    n = search_query(lib_idx, "excel form", h, NHITS);     /* form -> formula */
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, XLSX);
    n = search_query(lib_idx, "repo", h, NHITS);           /* repo -> repository */
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, REPO);
    /* only the last term is a prefix */
    n = search_query(lib_idx, "spread csv", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(pos(h, min_sz(n, NHITS), XLSX), -1);
    CHECK_EQ(h[0].doc, CSV);
    /* one character is not enough for a prefix */
    CHECK_EQ(search_query(lib_idx, "x", h, NHITS), 0);
    /* the last word of a hyphenated query is the prefix */
    n = search_query(lib_idx, "csv-prof", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, CSV);
    /* past the distinct-term cap, the last term still counts */
    char many[2048] = "";
    for (int i = 0; i < 100; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "zz%d ", i);
    strcat(many, "spread");
    n = search_query(lib_idx, many, h, NHITS);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, XLSX);
}

TEST(prefix_scores_below_exact)
{
    static const struct lib l[] = {
        { "one", "charter documents for a company", { NULL } },
        { "two", "chart tools for plots", { NULL } },
    };
    struct search_index *idx = build(l, 2);
    struct search_hit h[4];
    size_t n = search_query(idx, "chart", h, 4);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 1);
    CHECK_EQ(h[1].doc, 0);
    CHECK(h[0].score > h[1].score);
    CHECK(h[1].score > 0);
    search_free(idx);
}

TEST(http_api_ranks_api_skills)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "http api", h, NHITS);
    CHECK_EQ(n, 3);
    int a = pos(h, n, APIFETCH), r = pos(h, n, REST), i = pos(h, n, INTERNAL);
    CHECK(a >= 0 && r >= 0 && i >= 0);
    CHECK_EQ(h[0].doc, APIFETCH);          /* matches both terms twice */
    CHECK(h[0].score > h[1].score);
}

TEST(no_hits)
{
    struct search_hit h[NHITS];
    CHECK_EQ(search_query(lib_idx, "qwxzv", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "   ", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "the of and", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "a an the to for with", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "!!! ... --- ??? ,;:", h, NHITS), 0);
    CHECK_EQ(search_query(lib_idx, "\xe3\x80\x82\xe2\x80\x94", h, NHITS), 0); /* 。— */
    CHECK_EQ(search_query(lib_idx, NULL, h, NHITS), 0);
    CHECK_EQ(search_query(NULL, "csv", h, NHITS), 0);
}

TEST(tag_only_match)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "finance", h, NHITS);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, XLSX);
}

TEST(name_beats_description)
{
    struct search_hit h[NHITS];
    size_t n = search_query(lib_idx, "pdf", h, NHITS);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, PDF);
    CHECK_EQ(h[1].doc, DOCX);
    CHECK(h[0].score > h[1].score);

    /* name-only vs description-only, no exact-name bonus involved */
    static const struct lib l[] = {
        { "notes", "A ledger of the invoices", { NULL } },
        { "ledger-sync", "Synchronise accounts", { NULL } },
    };
    struct search_index *idx = build(l, 2);
    n = search_query(idx, "ledger", h, NHITS);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 1);
    search_free(idx);
}

/* A build counts a term's occurrences in 16 bits, saturating: a
 * description holding one word 65,536 or 131,073 times (a count that would
 * wrap to 0 or 1) still matches it, as strongly as a count of 300 does
 * once the kept counts saturate at 255, less its length's normalisation. */
TEST(term_counts_past_sixteen_bits)
{
    static const size_t reps[] = {65536, 131073, 300, 65535};
    char *desc[4];
    struct search_doc d[4];
    memset(d, 0, sizeof d);
    static const char *const names[] = {"alpha", "bravo", "charlie", "delta"};
    for (size_t i = 0; i < 4; i++) {
        desc[i] = malloc(reps[i] * 5 + 1);
        for (size_t r = 0; r < reps[i]; r++)
            memcpy(desc[i] + r * 5, "zeta ", 5);
        desc[i][reps[i] * 5] = '\0';
        d[i].name = names[i];
        d[i].description = desc[i];
    }
    struct search_index *idx = search_new(d, 4);
    struct search_hit h[NHITS];
    size_t n = search_query(idx, "zeta", h, NHITS);
    CHECK_EQ(n, 4);
    for (uint32_t i = 0; i < 4; i++)
        CHECK(pos(h, min_sz(n, NHITS), i) >= 0);
    /* the same counts past 255, the shorter description ranks higher */
    CHECK(pos(h, n, 2) < pos(h, n, 3) && pos(h, n, 3) < pos(h, n, 0) && pos(h, n, 0) < pos(h, n, 1));
    search_free(idx);
    for (size_t i = 0; i < 4; i++)
        free(desc[i]);
}

TEST(exact_name_first)
{
    static const struct lib l[] = {
        { "stats-report", "text stats, text stats, text stats: text-stats for any text",
          { "text", "stats", "text-stats", NULL } },
        { "text-stats", "Count words of a document", { NULL } },
        { "it", "Information technology helpdesk", { NULL } },
        { "use-it", "Something else entirely", { NULL } },
    };
    struct search_index *idx = build(l, 4);
    struct search_hit h[8];
    size_t n = search_query(idx, "text-stats", h, 8);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 1);
    CHECK(h[0].score > h[1].score);
    n = search_query(idx, "TEXT-STATS", h, 8);
    CHECK_EQ(h[0].doc, 1);
    /* a stopword name is still found by its exact name */
    n = search_query(idx, "it", h, 8);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, 2);
    n = search_query(idx, "use-it", h, 8);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, 3);
    search_free(idx);
}

TEST(stemming)
{
    static const struct lib l[] = {
        { "one", "Analyzing software libraries quickly", { NULL } },
        { "two", "Created running processes", { NULL } },
    };
    struct search_index *idx = build(l, 2);
    struct search_hit h[4];
    CHECK_EQ(search_query(idx, "analyze", h, 4), 1);
    CHECK_EQ(search_query(idx, "library", h, 4), 1);
    CHECK_EQ(search_query(idx, "quick", h, 4), 1);
    CHECK_EQ(search_query(idx, "create", h, 4), 1);
    CHECK_EQ(h[0].doc, 1);
    CHECK_EQ(search_query(idx, "runs", h, 4), 1);
    CHECK_EQ(search_query(idx, "process", h, 4), 1);
    CHECK_EQ(search_query(idx, "soft", h, 4), 1);      /* prefix */
    search_free(idx);
}

TEST(unicode_words)
{
    static const struct lib l[] = {
        { "cafe", "Caf\xc3\xa9 menu planner", { NULL } },
        { "ru", "\xd0\xa2\xd0\xb0\xd0\xb1\xd0\xbb\xd0\xb8\xd1\x86\xd0\xb0 data", { NULL } },
        { "wide", "Read \xef\xbc\xb0\xef\xbc\xa4\xef\xbc\xa6 files", { NULL } },   /* ＰＤＦ */
        { "city", "\xc5\x81\xc3\xb3" "d\xc5\xba guide", { NULL } },            /* Łódź */
    };
    struct search_index *idx = build(l, 4);
    struct search_hit h[4];
    CHECK_EQ(search_query(idx, "CAF\xc3\x89", h, 4), 1);             /* CAFÉ */
    CHECK_EQ(h[0].doc, 0);
    CHECK_EQ(search_query(idx, "caf", h, 4), 1);                     /* prefix */
    CHECK_EQ(search_query(idx, "\xd1\x82\xd0\xb0\xd0\xb1\xd0\xbb\xd0\xb8\xd1\x86\xd0\xb0", h, 4), 1);
    CHECK_EQ(h[0].doc, 1);
    CHECK_EQ(search_query(idx, "pdf", h, 4), 1);
    CHECK_EQ(h[0].doc, 2);
    CHECK_EQ(search_query(idx, "\xc5\x82\xc3\xb3" "d\xc5\xba", h, 4), 1);   /* łódź: Latin Extended-A */
    CHECK_EQ(h[0].doc, 3);
    CHECK_EQ(search_query(idx, "\xc5\x81\xc3\x93" "D\xc5\xb9", h, 4), 1);   /* ŁÓDŹ */
    CHECK_EQ(h[0].doc, 3);
    search_free(idx);
}

/* ---- every hit at once ---------------------------------------------------- */

/*
 * Asked for every hit (max >= the number of documents), search_query
 * collects them and sorts once; asked for fewer, it keeps a heap. Both must
 * give one order: exactly named first, then score descending, then doc
 * ascending. Many ties (a few distinct descriptions over thousands of
 * documents), exactly named documents with and without a matching term, in
 * both the dense and the sparse ranking.
 */
TEST(all_hits_sorted_like_the_top)
{
    enum { N = 3000 };
    static const char *const descs[] = {
        "export csv reports", "csv csv export of tables", "clean csv files quickly",
        "reports on sales", "plain notes", "csv",
    };
    static char names[N][32];
    static struct lib l[N];
    for (size_t i = 0; i < N; i++) {
        /* named like the query but scoring below most "csv-N" */
        int exact = i % 997 == 5;
        if (exact)
            snprintf(names[i], sizeof names[i], "csv");
        else if (i % 1499 == 7)
            snprintf(names[i], sizeof names[i], "plain notes");
        else
            snprintf(names[i], sizeof names[i], i % 2 ? "skill-%zu" : "csv-%zu", i);
        l[i].name = names[i];
        l[i].desc = exact ? "plain notes" : descs[(i * 7 + i / 13) % (sizeof descs / sizeof descs[0])];
    }
    struct search_index *idx = build(l, N);
    struct search_hit *all = calloc(N, sizeof *all), *top = calloc(N, sizeof *top);
    static const char *const queries[] = { "csv", "reports", "plain notes", "sales", "cs" };
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
        size_t n = search_query(idx, queries[q], all, N);
        CHECK(n > 0);
        size_t m = n > 1 ? n - 1 : 1;
        CHECK_EQ(search_query(idx, queries[q], top, m), n);
        for (size_t i = 0; i < m && i < n; i++) {
            if (all[i].doc != top[i].doc || all[i].score != top[i].score)
                printf("# %s: hit %zu is doc %u (%g), the heap's doc %u (%g)\n", queries[q], i,
                       all[i].doc, all[i].score, top[i].doc, top[i].score);
            CHECK_EQ(all[i].doc, top[i].doc);
            CHECK(all[i].score == top[i].score);
        }
        for (size_t i = 1; i < n; i++)
            CHECK(all[i - 1].score > all[i].score
                  || (all[i - 1].score == all[i].score && all[i - 1].doc < all[i].doc));
    }
    /* the exactly named come first, though most "csv-N" outscore them */
    size_t n = search_query(idx, "csv", all, N);
    CHECK(n > 4);
    CHECK_EQ(all[0].doc, 5);
    CHECK_EQ(all[1].doc, 1002);
    CHECK_EQ(all[2].doc, 1999);
    CHECK_EQ(all[3].doc, 2996);
    CHECK(all[3].score > all[4].score);
    CHECK(strcmp(names[all[4].doc], "csv") != 0);
    free(all);
    free(top);
    search_free(idx);
}

/* ---- windows and the selection ------------------------------------------ */

/*
 * A query's scores are summed one window of documents at a time. With two
 * terms that nothing else extends, a document's score is exactly its score
 * for the one term plus its score for the other, each asked alone, across
 * windows and at their edges, and the hits are those of either term.
 */
TEST(windows_sum_like_one_term_at_a_time)
{
    enum { N = 10000 };         /* two whole windows of 4,096 and a part */
    static char names[N][16], descs[N][96];
    static struct lib l[N];
    size_t wq = 0, wz = 0;
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%zu", i);
        int q = i % 3 == 0 || i == N - 1, z = i % 7 == 0 || i == 4096 || i == N - 1;
        wq += q;
        wz += z;
        snprintf(descs[i], sizeof descs[i], "%s%s%.*s", q ? "quartz " : "", z ? "zephyr " : "",
                 (int)(6 * (i % 5)), "lorem lorem lorem lorem lorem ");
        l[i].name = names[i];
        l[i].desc = descs[i];
    }
    struct search_index *idx = build(l, N);
    struct search_hit *h = calloc(N, sizeof *h);
    float *sq = calloc(N, sizeof *sq), *sz = calloc(N, sizeof *sz);
    unsigned char *in = calloc(N, 1);
    size_t nq = search_query(idx, "quartz", h, N), bad = 0;
    for (size_t i = 0; i < nq; i++) {
        sq[h[i].doc] = h[i].score;
        in[h[i].doc] = 1;
        bad += h[i].doc % 3 != 0 && h[i].doc != N - 1;
    }
    CHECK_EQ(nq, wq);
    size_t nz = search_query(idx, "zephyr", h, N);
    for (size_t i = 0; i < nz; i++) {
        sz[h[i].doc] = h[i].score;
        in[h[i].doc] = 1;
    }
    CHECK_EQ(nz, wz);
    size_t both = 0;
    for (size_t d = 0; d < N; d++)
        both += in[d];
    size_t n = search_query(idx, "quartz zephyr", h, N);
    CHECK_EQ(n, both);
    for (size_t i = 0; i < n; i++) {
        float want = 0.0f;
        want += sq[h[i].doc];
        want += sz[h[i].doc];
        if (h[i].score != want && bad++ < 3)
            printf("# doc %u: %.9g, the terms alone %.9g\n", h[i].doc, h[i].score, want);
        if (i && !(h[i - 1].score > h[i].score ||
                   (h[i - 1].score == h[i].score && h[i - 1].doc < h[i].doc)))
            bad++;
    }
    CHECK_EQ(bad, 0);
    /* the document at a window's first slot and the last one both count */
    CHECK(in[4096] && in[N - 1]);
    CHECK(sq[N - 1] > 0 && sz[N - 1] > 0 && sz[4096] > 0);
    free(in);
    free(sq);
    free(sz);
    free(h);
    search_free(idx);
}

/*
 * Asked for fewer hits than match, search_query keeps the best max as it
 * goes, turning away what is worse than the worst it keeps. It must keep
 * what a sort of every hit puts first, whatever the order of the scores:
 * rising with the doc (each window beats the last), falling, in long runs
 * of ties cut anywhere, with the exactly named (matched or not) ahead.
 */
TEST(selection_keeps_what_a_full_sort_keeps)
{
    enum { N = 9000 };
    static char names[N][16], descs[N][128];
    static struct lib l[N];
    for (size_t i = 0; i < N; i++) {
        /* shorter descriptions score higher: 500 ties a step, rising over
         * the first half, falling over the second */
        size_t filler = i < N / 2 ? 11 - i / 500 : (i - N / 2) / 500;
        if (i % 1000 == 999)
            snprintf(names[i], sizeof names[i], "alpha");
        else if (i % 1500 == 7)
            snprintf(names[i], sizeof names[i], "it");
        else
            snprintf(names[i], sizeof names[i], "n%zu", i);
        snprintf(descs[i], sizeof descs[i], "%s%.*s", i % 11 == 3 ? "" : "alpha ",
                 (int)(6 * filler), "lorem lorem lorem lorem lorem lorem lorem lorem lorem "
                 "lorem lorem lorem ");
        l[i].name = names[i];
        l[i].desc = descs[i];
    }
    struct search_index *idx = build(l, N);
    struct search_hit *all = calloc(N, sizeof *all), *top = calloc(N, sizeof *top);
    static const char *const queries[] = { "alpha", "lorem", "it", "alpha lorem" };
    static const size_t maxes[] = { 1, 2, 3, 7, 250, 499, 500, 501, 999, 1000, 1001, 4500,
                                    N - 1 };
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        size_t n = search_query(idx, queries[q], all, N), bad = 0;
        CHECK(n > 1000 || !strcmp(queries[q], "it"));
        for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++) {
            memset(top, 0xff, N * sizeof *top);
            CHECK_EQ(search_query(idx, queries[q], top, maxes[m]), n);
            for (size_t i = 0; i < maxes[m] && i < n; i++)
                if ((top[i].doc != all[i].doc || top[i].score != all[i].score) && bad++ < 3)
                    printf("# %s, max %zu: hit %zu is doc %u (%g), the full sort's doc %u (%g)\n",
                           queries[q], maxes[m], i, top[i].doc, top[i].score, all[i].doc,
                           all[i].score);
            /* nothing written past what it returns */
            if (maxes[m] > n && top[n].doc != UINT32_MAX)
                bad++;
        }
        CHECK_EQ(bad, 0);
    }
    /* the exactly named first: matched ("alpha") and not ("it", a stopword) */
    size_t n = search_query(idx, "alpha", all, N);
    for (size_t i = 0; i < N / 1000; i++) {
        CHECK_EQ(all[i].doc % 1000, 999);
        CHECK(i == 0 || all[i - 1].score >= all[i].score);
    }
    CHECK(all[N / 1000 - 1].score > all[N / 1000].score);
    CHECK(n > N / 2);
    n = search_query(idx, "it", top, 3);
    CHECK_EQ(n, N / 1500);
    CHECK_EQ(top[0].doc, 7);
    CHECK_EQ(top[1].doc, 1507);
    CHECK_EQ(top[2].doc, 3007);
    CHECK(top[0].score == top[2].score);
    free(all);
    free(top);
    search_free(idx);
}

/* ---- CJK --------------------------------------------------------------- */

TEST(cjk)
{
    static const struct lib l[] = {
        { "chart-convert", "\xe5\xb0\x86\xe7\x94\xb5\xe5\xad\x90\xe8\xa1\xa8\xe6\xa0\xbc"
          "\xe8\xbd\xac\xe6\x8d\xa2\xe4\xb8\xba\xe5\x9b\xbe\xe8\xa1\xa8", { NULL } },
          /* 将电子表格转换为图表 */
        { "email-gen", "\xe7\x94\x9f\xe6\x88\x90\xe7\x94\xb5\xe5\xad\x90\xe9\x82\xae\xe4\xbb\xb6",
          { NULL } },                                   /* 生成电子邮件 */
        { "translate", "\xe7\xbf\xbb\xe8\xaf\x91\xe6\x96\x87\xe6\x9c\xac", { NULL } },
          /* 翻译文本 */
        { "jp-sheet", "\xe3\x82\xb9\xe3\x83\x97\xe3\x83\xac\xe3\x83\x83\xe3\x83\x89\xe3\x82\xb7"
          "\xe3\x83\xbc\xe3\x83\x88\xe3\x82\x92\xe5\xa4\x89\xe6\x8f\x9b\xe3\x81\x99\xe3\x82\x8b",
          { NULL } },                                   /* スプレッドシートを変換する */
        { "pdf", "Extract tables from PDF files", { NULL } },
        { "ko", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xeb\xac\xb8\xec\x84\x9c \xec\x9a\x94\xec\x95\xbd",
          { NULL } },                                   /* 한국어 문서 요약 */
    };
    struct search_index *idx = build(l, 6);
    struct search_hit h[8];

    /* 电子表格 */
    size_t n = search_query(idx, "\xe7\x94\xb5\xe5\xad\x90\xe8\xa1\xa8\xe6\xa0\xbc", h, 8);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 0);
    CHECK_EQ(h[1].doc, 1);
    CHECK(h[0].score > h[1].score);
    /* 表格 */
    n = search_query(idx, "\xe8\xa1\xa8\xe6\xa0\xbc", h, 8);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, 0);
    /* スプレッドシート */
    n = search_query(idx, "\xe3\x82\xb9\xe3\x83\x97\xe3\x83\xac\xe3\x83\x83\xe3\x83\x89"
                     "\xe3\x82\xb7\xe3\x83\xbc\xe3\x83\x88", h, 8);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, 3);
    /* pdf 表格 */
    n = search_query(idx, "pdf \xe8\xa1\xa8\xe6\xa0\xbc", h, 8);
    CHECK_EQ(n, 2);
    CHECK(pos(h, n, 0) >= 0);
    CHECK(pos(h, n, 4) >= 0);
    /* 문서 */
    n = search_query(idx, "\xeb\xac\xb8\xec\x84\x9c", h, 8);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, 5);
    /* a CJK word glued to ASCII: pdf表格 */
    n = search_query(idx, "pdf\xe8\xa1\xa8\xe6\xa0\xbc", h, 8);
    CHECK_EQ(n, 2);
    search_free(idx);
}

/* ---- determinism --------------------------------------------------------- */

TEST(ties_by_index_and_max)
{
    static const struct lib l[] = {
        { "n0", "alpha beta gamma", { NULL } },
        { "n1", "alpha beta gamma", { NULL } },
        { "n2", "alpha beta gamma", { NULL } },
        { "n3", "alpha beta beta", { NULL } },
        { "n4", "alpha beta gamma", { NULL } },
        { "n5", "alpha beta gamma", { NULL } },
        { "n6", "delta", { NULL } },
    };
    struct search_index *idx = build(l, 7);
    struct search_hit h[8], h2[2];
    size_t n = search_query(idx, "beta", h, 8);
    CHECK_EQ(n, 6);
    CHECK_EQ(h[0].doc, 3);
    CHECK(h[0].score > h[1].score);
    static const uint32_t want[] = { 3, 0, 1, 2, 4, 5 };
    for (size_t i = 0; i < 6; i++)
        CHECK_EQ(h[i].doc, want[i]);
    for (size_t i = 2; i < 6; i++)
        CHECK(h[i].score == h[1].score);
    CHECK_EQ(search_query(idx, "beta", h2, 2), 6);
    CHECK_EQ(h2[0].doc, 3);
    CHECK_EQ(h2[1].doc, 0);
    CHECK(h2[1].score == h[1].score);
    CHECK_EQ(search_query(idx, "beta", NULL, 0), 6);
    CHECK_EQ(search_query(idx, "beta", h2, 0), 6);
    search_free(idx);
}

TEST(max_smaller_than_total)
{
    struct search_hit all[NHITS], top[2];
    size_t n = search_query(lib_idx, "office documents text", all, NHITS);
    CHECK(n >= 4);
    CHECK_EQ(search_query(lib_idx, "office documents text", top, 2), n);
    CHECK_EQ(top[0].doc, all[0].doc);
    CHECK_EQ(top[1].doc, all[1].doc);
    CHECK(top[1].score == all[1].score);
    for (size_t i = 1; i < n; i++)
        CHECK(all[i - 1].score > all[i].score
              || (all[i - 1].score == all[i].score && all[i - 1].doc < all[i].doc));
}

/* ---- a large synthetic index ------------------------------------------- */

#define BIGN 5000
#define VOCAB 2000

static char vocab[VOCAB][16];
static char big_names[BIGN][24];
static char big_descs[BIGN][400];
static char big_tags[20][8];
static const char *big_tagp[BIGN][1];
static struct search_doc big_docs[BIGN];
static struct search_index *big_idx;
static double big_build_ms;

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

static void make_big(void)
{
    static const char *syl[16] = { "ka", "lo", "mi", "nu", "pe", "ra", "si", "to",
                                   "vu", "be", "do", "fi", "gu", "ha", "jo", "ze" };
    for (int k = 0; k < VOCAB; k++)
        snprintf(vocab[k], sizeof vocab[k], "%s%s%s%c", syl[k % 16], syl[(k / 16) % 16],
                 syl[(k / 256) % 16], 'a' + k % 7 + (k / 4096));
    for (int t = 0; t < 20; t++)
        snprintf(big_tags[t], sizeof big_tags[t], "tag%d", t);
    for (int i = 0; i < BIGN; i++) {
        snprintf(big_names[i], sizeof big_names[i], "skill-%d", i);
        char *p = big_descs[i];
        size_t left = sizeof big_descs[i];
        if (i % 100 == 0) {
            snprintf(p, left, "zebra quartz marker");
        } else {
            int words = 20 + (int)(rnd() % 20);
            for (int w = 0; w < words; w++) {
                uint32_t a = rnd() % VOCAB, b = rnd() % VOCAB;
                int len = snprintf(p, left, "%s ", vocab[(a * b) / VOCAB]);
                p += len;
                left -= (size_t)len;
            }
        }
        big_tagp[i][0] = big_tags[i % 20];
        big_docs[i].name = big_names[i];
        big_docs[i].description = big_descs[i];
        big_docs[i].tags = i % 100 ? big_tagp[i] : NULL;
        big_docs[i].ntags = i % 100 ? 1 : 0;
    }
}

TEST(big_build)
{
    make_big();
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_ms();
        struct search_index *idx = search_new(big_docs, BIGN);
        double t = now_ms() - t0;
        if (t < best)
            best = t;
        if (rep < 4)
            search_free(idx);
        else
            big_idx = idx;
    }
    big_build_ms = best;
    printf("# build %d docs: %.2f ms\n", BIGN, best);
    CHECK(big_idx != NULL);
}

/* A rebuild reuses each unchanged document's terms: an index merged from
 * terms made earlier (with other documents around) ranks exactly like one
 * tokenized from scratch over the new set. */
TEST(terms_reused_across_builds)
{
    enum { SKIP = 1000 };
    CHECK(big_idx != NULL);
    struct search_terms **t = calloc(BIGN, sizeof *t);
    for (size_t i = 0; i < BIGN; i++)
        t[i] = search_terms_new(&big_docs[i]);
    CHECK(search_terms_bytes(t[0]) > 0);
    struct search_index *fresh = search_new(big_docs + SKIP, BIGN - SKIP);
    struct search_index *merged =
        search_new_terms(big_docs + SKIP, (const struct search_terms *const *)t + SKIP,
                         NULL, BIGN - SKIP);
    char two[64];
    snprintf(two, sizeof two, "%s %s", vocab[5], vocab[17]);
    const char *const q[] = { vocab[3], two, "zebra quartz", "tag7", "ka", big_names[SKIP + 7] };
    for (size_t k = 0; k < sizeof q / sizeof *q; k++) {
        struct search_hit a[NHITS], b[NHITS];
        size_t na = search_query(fresh, q[k], a, NHITS);
        size_t nb = search_query(merged, q[k], b, NHITS);
        CHECK_EQ(na, nb);
        CHECK(na > 0);
        for (size_t i = 0; i < min_sz(na, NHITS); i++) {
            CHECK_EQ(a[i].doc, b[i].doc);
            CHECK(a[i].score == b[i].score);
        }
    }
    search_free(fresh);
    search_free(merged);
    for (size_t i = 0; i < BIGN; i++)
        search_terms_free(t[i]);
    free(t);
}

TEST(big_sparse_and_dense_ties)
{
    struct search_hit h[NHITS];
    CHECK(big_idx != NULL);
    /* 50 identical docs, few postings: the sparse path */
    size_t n = search_query(big_idx, "zebra", h, NHITS);
    CHECK_EQ(n, BIGN / 100);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(h[i].doc, i * 100);
        CHECK(h[i].score == h[0].score);
    }
    /* every doc's name holds "skill" once, names equally long: the dense path */
    n = search_query(big_idx, "skill", h, 10);
    CHECK_EQ(n, BIGN);
    for (size_t i = 0; i < 10; i++)
        CHECK_EQ(h[i].doc, i);
    /* the exact name goes first among the 5000 */
    n = search_query(big_idx, "skill-4321", h, 10);
    CHECK_EQ(n, BIGN);
    CHECK_EQ(h[0].doc, 4321);
    CHECK(h[0].score > h[1].score);
    /* a tag */
    n = search_query(big_idx, "tag7", h, NHITS);
    CHECK_EQ(n, BIGN / 20);
    CHECK_EQ(h[0].doc % 20, 7);
}

static const char *const big_queries[] = {
    "zebra", "skill", "skill-42", "kalomi", "kaloa", "pe", "ra si to", "tag3 zebra",
    "marker quartz", "nuhaze", "qwxzv", "ka", "jo lo", "skill-4999", "tag19", "fi",
};
#define NBQ (sizeof big_queries / sizeof big_queries[0])

TEST(big_query_speed)
{
    struct search_hit h[20];
    CHECK(big_idx != NULL);
    size_t reps = 200, total = 0;
    double t0 = now_ms();
    for (size_t r = 0; r < reps; r++)
        for (size_t q = 0; q < NBQ; q++)
            total += search_query(big_idx, big_queries[q], h, 20);
    double t = now_ms() - t0;
    printf("# query (%zu docs, mixed): %.1f us avg\n", (size_t)BIGN,
           t * 1000.0 / (double)(reps * NBQ));
    CHECK(total > 0);
}

/* ---- concurrency --------------------------------------------------------- */

struct ref {
    size_t total, k;
    struct search_hit h[20];
};

static struct ref refs[NBQ];

struct worker_arg {
    size_t id, bad;
};

static void *worker(void *arg)
{
    struct worker_arg *w = arg;
    struct search_hit h[20];
    for (size_t i = 0; i < 2000; i++) {
        size_t q = (i * 7 + w->id) % NBQ;
        size_t n = search_query(big_idx, big_queries[q], h, 20);
        if (n != refs[q].total || memcmp(h, refs[q].h, refs[q].k * sizeof h[0]) != 0)
            w->bad++;
    }
    return NULL;
}

TEST(concurrent_queries)
{
    CHECK(big_idx != NULL);
    for (size_t q = 0; q < NBQ; q++) {
        refs[q].total = search_query(big_idx, big_queries[q], refs[q].h, 20);
        refs[q].k = min_sz(refs[q].total, 20);
    }
    pthread_t th[4];
    struct worker_arg wa[4];
    for (size_t i = 0; i < 4; i++) {
        wa[i].id = i;
        wa[i].bad = 0;
        CHECK(pthread_create(&th[i], NULL, worker, &wa[i]) == 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(wa[i].bad, 0);
}

/* ---- edge cases ------------------------------------------------------------ */

TEST(empty_index)
{
    struct search_hit h[4];
    struct search_index *idx = search_new(NULL, 0);
    CHECK(idx != NULL);
    CHECK_EQ(search_query(idx, "csv", h, 4), 0);
    CHECK_EQ(search_query(idx, "", h, 4), 0);
    search_free(idx);
    struct search_doc d = { "x", "y", NULL, 0, NULL, 0, NULL, 0 };
    idx = search_new(&d, 0);
    CHECK_EQ(search_query(idx, "x", h, 4), 0);
    search_free(idx);
    search_free(NULL);
}

TEST(null_fields)
{
    const char *tags[] = { "alpha", NULL, "" };
    struct search_doc d[] = {
        { "no-desc", NULL, NULL, 0, NULL, 0, NULL, 0 },
        { NULL, "orphan description", NULL, 0, NULL, 0, NULL, 0 },
        { "tagged", NULL, tags, 3, NULL, 0, NULL, 0 },
        { "", "", NULL, 0, NULL, 0, NULL, 0 },
    };
    struct search_index *idx = search_new(d, 4);
    struct search_hit h[4];
    /* desc is a prefix of description */
    CHECK_EQ(search_query(idx, "no-desc", h, 4), 2);
    CHECK_EQ(h[0].doc, 0);
    CHECK_EQ(h[1].doc, 1);
    CHECK_EQ(search_query(idx, "orphan", h, 4), 1);
    CHECK_EQ(h[0].doc, 1);
    CHECK_EQ(search_query(idx, "alpha", h, 4), 1);
    CHECK_EQ(h[0].doc, 2);
    search_free(idx);
}

TEST(long_description_and_query)
{
    size_t big = 100 * 1024;
    char *desc = malloc(big + 1);
    CHECK(desc != NULL);
    static const char words[] = "lorem ipsum dolor sit amet spreadsheet ";
    for (size_t i = 0; i < big; i++)
        desc[i] = words[i % (sizeof words - 1)];
    desc[big] = '\0';
    char *word = malloc(big + 1);           /* one 100 KB word */
    memset(word, 'q', big);
    word[big] = '\0';
    struct search_doc d[] = {
        { "long", desc, NULL, 0, NULL, 0, NULL, 0 },
        { "short", "a spreadsheet tool", NULL, 0, NULL, 0, NULL, 0 },
        { "huge-word", word, NULL, 0, NULL, 0, NULL, 0 },
    };
    struct search_index *idx = search_new(d, 3);
    struct search_hit h[4];
    CHECK_EQ(search_query(idx, "spreadsheet", h, 4), 2);
    CHECK_EQ(search_query(idx, "ipsum", h, 4), 1);
    CHECK_EQ(search_query(idx, "qqqq", h, 4), 1);       /* prefix of the truncated word */
    CHECK_EQ(h[0].doc, 2);
    /* 100 KB queries: many words, and one huge word */
    CHECK(search_query(idx, desc, h, 4) >= 2);
    CHECK_EQ(search_query(idx, word, h, 4), 1);
    for (size_t i = 0; i < big; i++)
        word[i] = (char)(0x80 + i % 0x7f);      /* junk bytes */
    CHECK(search_query(idx, word, h, 4) <= 3);
    free(desc);
    free(word);
    search_free(idx);
}

TEST(invalid_utf8)
{
    struct search_doc d[] = {
        { "bad\xff", "\xff\xfe broken \xc3 \xe4\xb8 table \xed\xa0\x80 \xf4\x90\x80\x80 end\xc0\xaf",
          NULL, 0, NULL, 0, NULL, 0 },
        { "ok", "fine \xe7\x94\xb5\xe5", NULL, 0, NULL, 0, NULL, 0 },    /* 电 then a truncated char */
    };
    struct search_index *idx = search_new(d, 2);
    struct search_hit h[4];
    CHECK_EQ(search_query(idx, "table", h, 4), 1);
    CHECK_EQ(search_query(idx, "broken end", h, 4), 1);
    CHECK_EQ(search_query(idx, "\xe7\x94\xb5", h, 4), 1);
    CHECK_EQ(h[0].doc, 1);
    CHECK_EQ(search_query(idx, "\xff\xfe\xc3", h, 4), 0);
    CHECK_EQ(search_query(idx, "bad\xff", h, 4), 1);    /* exact name, raw bytes */
    search_free(idx);
}

/* ---- body, references, synonyms, closest ------------------------------- */

struct xdoc {
    const char *name, *desc, *body, *refs;
};

static struct search_index *build_x(const struct xdoc *x, size_t n)
{
    struct search_doc *d = calloc(n, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        d[i].name = x[i].name;
        d[i].description = x[i].desc;
        d[i].body = x[i].body;
        d[i].body_len = x[i].body ? strlen(x[i].body) : 0;
        d[i].refs = x[i].refs;
        d[i].refs_len = x[i].refs ? strlen(x[i].refs) : 0;
    }
    struct search_index *idx = search_new(d, n);
    free(d);
    return idx;
}

enum { X_SHEET, X_SLIDES, X_DOC, X_PDF, X_NOTES, X_PANDAS_DESC, X_PANDAS_REF, X_PANDAS_BODY, NX };

static const struct xdoc xlib[NX] = {
    { "xlsx", "Create, edit and analyse spreadsheets with formulas and charts.",
      "# Spreadsheets\n\nUse openpyxl to write cells. Open the workbook in Excel to check.\n"
      "## Recalculation\nExcel recalculates formulas on open.\n", NULL },
    { "pptx", "Build slide decks from an outline.",
      "# Decks\nEach slide gets a title and bullets.\n",
      "# python-pptx notes\nSaved files open in PowerPoint.\n" },
    { "docx", "Create and edit Word documents with tracked changes.",
      "# Documents\nRedlining with tracked changes.\n", NULL },
    { "pdf", "Fill PDF forms, merge and split PDF files.", "# Forms\nUse pypdf.\n", NULL },
    { "notes", "Keep meeting notes tidy.", "Bullet points, one per decision.\n", NULL },
    { "frames", "Clean tabular data with pandas before a report.", "Group and pivot.\n", NULL },
    { "charts", "Draw line and bar charts.", "Plot series.\n",
      "# Sources\nLoad the data with pandas first.\n" },
    { "stats", "Summary statistics of a sample.",
      "# Loading\nRead the sample with pandas, then describe it.\n", NULL },
};

TEST(body_only_word_found)
{
    struct search_index *idx = build_x(xlib, NX);
    struct search_hit h[NHITS];
    size_t n = search_query(idx, "openpyxl", h, NHITS);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, X_SHEET);
    /* A heading's words are found too. */
    n = search_query(idx, "recalculation", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, X_SHEET);
    search_free(idx);
}

TEST(reference_only_ranks_below_card_and_body)
{
    struct search_index *idx = build_x(xlib, NX);
    struct search_hit h[NHITS];
    size_t n = search_query(idx, "pandas", h, NHITS);
    CHECK_EQ(n, 3);
    CHECK_EQ(h[0].doc, X_PANDAS_DESC);
    CHECK_EQ(h[1].doc, X_PANDAS_BODY);
    CHECK_EQ(h[2].doc, X_PANDAS_REF);
    /* A body that repeats a word many times still ranks below a
     * description that says it once. */
    struct xdoc two[2] = {
        { "a", "Work with tables.", "excel excel excel excel excel excel excel excel\n"
                                     "excel excel excel excel excel excel excel excel\n", NULL },
        { "b", "Open an excel workbook.", NULL, NULL },
    };
    struct search_index *i2 = build_x(two, 2);
    n = search_query(i2, "excel", h, NHITS);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 1);
    search_free(i2);
    search_free(idx);
}

/* Card terms and body terms made apart, as scan.c and bodies.c make them. */
static void split_terms(const struct xdoc *x, struct search_doc *d, struct search_terms **t,
                        struct search_terms **xt)
{
    memset(d, 0, sizeof *d);
    d->name = x->name;
    d->description = x->desc;
    *t = search_terms_new(d);
    struct search_doc b = {0};
    b.body = x->body;
    b.body_len = x->body ? strlen(x->body) : 0;
    b.refs = x->refs;
    b.refs_len = x->refs ? strlen(x->refs) : 0;
    *xt = search_terms_new(&b);
}

/* a and b rank every query of q alike: the same documents, the same scores */
static void same_ranking_for(const struct search_index *a, const struct search_index *b,
                             const char *const *q, size_t nq)
{
    for (size_t k = 0; k < nq; k++) {
        struct search_hit x[NHITS], y[NHITS];
        size_t nx = search_query(a, q[k], x, NHITS);
        size_t ny = search_query(b, q[k], y, NHITS);
        CHECK_EQ(nx, ny);
        for (size_t i = 0; i < min_sz(nx, NHITS); i++) {
            CHECK_EQ(x[i].doc, y[i].doc);
            CHECK(x[i].score == y[i].score);
        }
    }
}

static void same_ranking(const struct search_index *a, const struct search_index *b)
{
    const char *const q[] = { "pandas", "openpyxl", "excel", "powerpoint", "tracked changes",
                              "decision", "zebra", "forms pdf", "recalc", "sample" };
    same_ranking_for(a, b, q, sizeof q / sizeof *q);
}

/* A rebuild takes a reused document's body and reference terms from the
 * index it replaces (the lists are freed once merged): it ranks exactly as
 * if every list were given again, with documents renumbered, counts past
 * the one-byte saturation, a document still without a body, and over two
 * generations. */
TEST(body_terms_carried_from_previous_index)
{
    enum { N = NX + 1 };
    static char zebras[300 * 6 + 1];
    for (size_t i = 0; i < 300; i++)
        memcpy(zebras + i * 6, "zebra ", 6);
    struct xdoc all[N];
    memcpy(all, xlib, sizeof xlib);
    all[NX] = (struct xdoc){ "zoo", "Animals.", zebras, "# Zebra\nStripes.\n" };
    struct search_doc d[N];
    struct search_terms *t[N], *xt[N];
    for (size_t i = 0; i < N; i++)
        split_terms(&all[i], &d[i], &t[i], &xt[i]);

    /* Generation 1: every body but X_NOTES's has been read. */
    const struct search_terms *g1x[N];
    for (size_t i = 0; i < N; i++)
        g1x[i] = i == X_NOTES ? NULL : xt[i];
    struct search_index *g1 =
        search_new_terms(d, (const struct search_terms *const *)t, g1x, N);
    CHECK(search_has_body(g1, X_SHEET));
    CHECK(!search_has_body(g1, X_NOTES));

    /* Generation 2: X_SHEET is gone (every later document moves up one);
     * X_NOTES's body arrives as a list; the rest is carried. */
    const struct search_terms *g2x[N - 1];
    uint32_t prev[N - 1];
    for (size_t i = 0; i + 1 < N; i++) {
        g2x[i] = i + 1 == X_NOTES ? xt[i + 1] : NULL;
        prev[i] = (uint32_t)(i + 1);
    }
    struct search_index *g2 = search_new_carry(d + 1, (const struct search_terms *const *)t + 1,
                                               g2x, N - 1, g1, prev);
    struct search_index *ref2 = search_new_terms(
        d + 1, (const struct search_terms *const *)t + 1,
        (const struct search_terms *const *)xt + 1, N - 1);
    for (size_t i = 0; i + 1 < N; i++)
        CHECK(search_has_body(g2, i));
    same_ranking(g2, ref2);
    struct search_hit h[NHITS];
    CHECK_EQ(search_query(g2, "openpyxl", h, NHITS), 0);
    CHECK_EQ(search_query(g2, "decision", h, NHITS), 1);

    /* Generation 3: everything carried, nothing given as a list; one
     * document is new (no previous number) and has no body yet. */
    struct search_doc d3[N];
    const struct search_terms *t3[N];
    uint32_t prev3[N];
    for (size_t i = 0; i + 1 < N; i++) {
        d3[i] = d[i + 1];
        t3[i] = t[i + 1];
        prev3[i] = (uint32_t)i;
    }
    d3[N - 1] = d[0];
    t3[N - 1] = t[0];
    prev3[N - 1] = SEARCH_NO_DOC;
    const struct search_terms *none[N] = {0};
    struct search_index *g3 = search_new_carry(d3, t3, none, N, g2, prev3);
    search_free(g2);
    const struct search_terms *x3[N];
    for (size_t i = 0; i + 1 < N; i++)
        x3[i] = xt[i + 1];
    x3[N - 1] = NULL;
    struct search_index *ref3 = search_new_terms(d3, t3, x3, N);
    CHECK(!search_has_body(g3, N - 1));
    CHECK(search_has_body(g3, 0));
    same_ranking(g3, ref3);
    CHECK(search_query(g3, "zebra", h, NHITS) == 1);

    search_free(g1);
    search_free(ref2);
    search_free(g3);
    search_free(ref3);
    for (size_t i = 0; i < N; i++) {
        search_terms_free(t[i]);
        search_terms_free(xt[i]);
    }
}

static char *repeat_word(const char *w, size_t n)
{
    size_t len = strlen(w);
    char *s = calloc(1, n * (len + 1) + 1);
    for (size_t i = 0; i < n; i++) {
        memcpy(s + i * (len + 1), w, len);
        s[i * (len + 1) + len] = ' ';
    }
    return s;
}

/* The carried counts are kept packed (one byte for small counts, an escape
 * and the counts as they are for the others): counts at and past every
 * packed field's limit, in every field, carry to the very same scores. */
TEST(carried_counts_at_the_packing_limits)
{
    enum { NN = 4, NT = 3, ND = 3, NB = 3, N = NN * NT * ND };
    static const size_t names[NN] = { 1, 3, 4, 5 }, tags[NT] = { 2, 3, 4 },
                        descs[ND] = { 14, 15, 16 }, bodies[NB] = { 14, 15, 16 };
    struct search_doc d[N];
    struct search_terms *t[N], *x[N];
    const char *tg[N][4];
    char *own[N * 4];
    size_t nown = 0;
    uint32_t same[N];
    for (size_t i = 0; i < N; i++) {
        size_t nm = names[i / (NT * ND)], nt = tags[i / ND % NT], nd = descs[i % ND];
        memset(&d[i], 0, sizeof d[i]);
        d[i].name = own[nown++] = repeat_word("kiwi", nm);
        d[i].description = own[nown++] = repeat_word("kiwi", nd);
        for (size_t k = 0; k < nt; k++)
            tg[i][k] = "kiwi";
        d[i].tags = tg[i];
        d[i].ntags = nt;
        t[i] = search_terms_new(&d[i]);
        struct search_doc b = { 0 };
        b.body = own[nown++] = repeat_word("kiwi", bodies[i % NB]);
        b.body_len = strlen(b.body);
        b.refs = own[nown++] = repeat_word("kiwi", bodies[(i + 1) % NB]);
        b.refs_len = strlen(b.refs);
        x[i] = search_terms_new(&b);
        same[i] = (uint32_t)i;
    }
    struct search_index *g1 =
        search_new_terms(d, (const struct search_terms *const *)t,
                         (const struct search_terms *const *)x, N);
    const struct search_terms *none[N] = { 0 };
    struct search_index *g2 = search_new_carry(d, none, none, N, g1, same);
    struct search_index *g3 = search_new_carry(d, none, none, N, g2, same);
    const char *const q[] = { "kiwi" };
    same_ranking_for(g2, g1, q, 1);
    same_ranking_for(g3, g1, q, 1);
    search_free(g3);
    search_free(g2);
    search_free(g1);
    for (size_t i = 0; i < N; i++) {
        search_terms_free(t[i]);
        search_terms_free(x[i]);
    }
    for (size_t i = 0; i < nown; i++)
        free(own[i]);
}

/* A rebuild also takes a reused document's name, tags and description
 * terms from the index it replaces when its list is gone (an entry keeps
 * none once they are merged): the same ranking as from the lists, with
 * documents renumbered, a card count past the one-byte saturation, a
 * document whose body is carried and one whose body is not read yet, a
 * document given new card terms in place of its old ones, a new one, and
 * over two generations. */
TEST(card_terms_carried_from_previous_index)
{
    enum { N = 5 };
    static char zebras[300 * 6 + 1];
    for (size_t i = 0; i < 300; i++)
        memcpy(zebras + i * 6, "zebra ", 6);
    static const char *const tg0[] = { "spreadsheet", "excel-files" };
    static const char *const tg2[] = { "animals" };
    static const char *const tg3[] = { "wombat", "burrow" };
    struct search_doc d[N] = {
        { .name = "team/xlsx-tools", .description = "Edit workbooks and charts.",
          .tags = tg0, .ntags = 2 },
        { .name = "pdf", .description = "Fill PDF forms; merge PDF files." },
        { .name = "zoo", .description = zebras, .tags = tg2, .ntags = 1 },
        { .name = "burrows", .description = "Where wombats sleep.", .tags = tg3, .ntags = 2 },
        { .name = "charts", .description = "Bar charts and line charts of a sample." },
    };
    static const char *const bodies[N] = {
        "# Cells\nopenpyxl writes cells.\n", "# Forms\nUse pypdf.\n", NULL,
        "Dig a burrow; a wombat sleeps there.\n", "# Plot\nmatplotlib series.\n",
    };
    struct search_terms *t[N], *xt[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = search_terms_new(&d[i]);
        struct search_doc b = { .body = bodies[i], .body_len = bodies[i] ? strlen(bodies[i]) : 0 };
        xt[i] = search_terms_new(&b);
    }
    const char *const q[] = { "xlsx", "excel", "spreadsheet", "charts", "zebra", "animals",
                              "wombat", "burrow", "pdf forms", "openpyxl", "sample", "tools",
                              "team/xlsx-tools", "zoo", "sleep", "matplotlib", "pypdf" };

    /* Generation 1, from lists; document 2 has no body read. */
    const struct search_terms *g1x[N];
    for (size_t i = 0; i < N; i++)
        g1x[i] = i == 2 ? NULL : xt[i];
    struct search_index *g1 = search_new_terms(d, (const struct search_terms *const *)t, g1x, N);

    /* Generation 2: document 0 is gone (the rest move up one); every card
     * and body is carried except the last document's card, given anew
     * with a different description; the zoo's body arrives as a list. */
    struct search_doc d2[N - 1];
    const struct search_terms *t2[N - 1], *x2[N - 1], *r2t[N - 1], *r2x[N - 1];
    uint32_t prev2[N - 1];
    struct search_doc edited = d[4];
    edited.description = "Pie charts of a census.";
    struct search_terms *te = search_terms_new(&edited);
    for (size_t i = 0; i + 1 < N; i++) {
        d2[i] = d[i + 1];
        t2[i] = NULL;
        x2[i] = i + 1 == 2 ? xt[2] : NULL;
        prev2[i] = (uint32_t)(i + 1);
        r2t[i] = t[i + 1];
        r2x[i] = xt[i + 1];
    }
    d2[3] = edited;
    t2[3] = te;
    r2t[3] = te;
    struct search_index *g2 = search_new_carry(d2, t2, x2, N - 1, g1, prev2);
    struct search_index *ref2 = search_new_terms(d2, r2t, r2x, N - 1);
    same_ranking_for(g2, ref2, q, sizeof q / sizeof *q);
    struct search_hit h[NHITS];
    CHECK_EQ(search_query(g2, "sample", h, NHITS), 0);
    CHECK_EQ(search_query(g2, "census", h, NHITS), 1);
    CHECK_EQ(search_query(g2, "wombat", h, NHITS), 1);
    CHECK_EQ(h[0].doc, 2);

    /* Generation 3: all carried, in reverse order, plus the first
     * document again as new (no previous number). */
    struct search_doc d3[N];
    const struct search_terms *t3[N], *x3[N], *r3t[N], *r3x[N];
    uint32_t prev3[N];
    for (size_t i = 0; i + 1 < N; i++) {
        size_t o = N - 2 - i;
        d3[i] = d2[o];
        t3[i] = NULL;
        x3[i] = NULL;
        prev3[i] = (uint32_t)o;
        r3t[i] = r2t[o];
        r3x[i] = r2x[o];
    }
    d3[N - 1] = d[0];
    t3[N - 1] = t[0];
    x3[N - 1] = NULL;
    prev3[N - 1] = SEARCH_NO_DOC;
    r3t[N - 1] = t[0];
    r3x[N - 1] = NULL;
    struct search_index *g3 = search_new_carry(d3, t3, x3, N, g2, prev3);
    search_free(g2);
    struct search_index *ref3 = search_new_terms(d3, r3t, r3x, N);
    same_ranking_for(g3, ref3, q, sizeof q / sizeof *q);
    CHECK_EQ(search_query(g3, "zebra", h, NHITS), 1);
    CHECK_EQ(h[0].doc, 2);
    CHECK(!search_has_body(g3, N - 1));
    CHECK(search_has_body(g3, 0));

    search_free(g1);
    search_free(ref2);
    search_free(g3);
    search_free(ref3);
    search_terms_free(te);
    for (size_t i = 0; i < N; i++) {
        search_terms_free(t[i]);
        search_terms_free(xt[i]);
    }
}

TEST(synonyms_bridge_everyday_names)
{
    struct search_index *idx = build_x(xlib, NX);
    struct search_hit h[NHITS];
    size_t n = search_query(idx, "powerpoint", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, X_SLIDES);
    n = search_query(idx, "make a presentation", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, X_SLIDES);
    n = search_query(idx, "excel", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, X_SHEET);
    n = search_query(idx, "edit a word document", h, NHITS);
    CHECK(n >= 1);
    CHECK_EQ(h[0].doc, X_DOC);
    /* "word" alone is not a member: it does not pull in docx by synonym. */
    struct xdoc one[2] = { { "docx", "Office files.", NULL, NULL },
                           { "count", "Word counts.", NULL, NULL } };
    struct search_index *i2 = build_x(one, 2);
    n = search_query(i2, "word", h, NHITS);
    CHECK_EQ(n, 1);
    CHECK_EQ(h[0].doc, 1);
    search_free(i2);
    search_free(idx);
}

TEST(exact_name_beats_body_repeats)
{
    struct xdoc x[2] = {
        { "converter", "Converts documents.", "# PDF\npdf pdf pdf pdf pdf pdf pdf pdf pdf\n", NULL },
        { "pdf", "Fill forms.", NULL, NULL },
    };
    struct search_index *idx = build_x(x, 2);
    struct search_hit h[NHITS];
    size_t n = search_query(idx, "PDF", h, NHITS);
    CHECK_EQ(n, 2);
    CHECK_EQ(h[0].doc, 1);
    search_free(idx);
}

static const char *tmp_write(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_search_syn.%d", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

TEST(synonyms_file_errors_name_file_and_line)
{
    struct err err;
    static const struct { const char *text; const char *want; } bad[] = {
        { "x, y\n\nsolo\n", "f.txt:3: a group needs at least two members" },
        { "# comment\nx, , y\n", "f.txt:2: empty member" },
        { "x, y,\n", "f.txt:1: empty member" },
        { "ok, fine\n%%, y\n", "f.txt:2: member with no searchable word" },
        { "x, b c d e f g h k j\n", "f.txt:1: member of more than 8 words" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        CHECK_EQ(search_synonyms_check(bad[i].text, strlen(bad[i].text), "f.txt", &err), -1);
        if (strncmp(err.msg, bad[i].want, strlen(bad[i].want)) != 0)
            H_FAIL("got '%s', want '%s...'", err.msg, bad[i].want);
    }
    CHECK_EQ(search_synonyms_check("# x\n\n  x, y\r\nc d, e\n", 19, "f", &err), 0);
    CHECK_EQ(search_synonyms_init("/nonexistent/syn.txt", &err), -1);
    CHECK(strstr(err.msg, "/nonexistent/syn.txt: cannot be read") == err.msg);
    const char *path = tmp_write("k8s, kubernetes\nx, y\nlonely\n");
    CHECK_EQ(search_synonyms_init(path, &err), -1);
    CHECK(strstr(err.msg, ":3: a group needs at least two members") != NULL);
    CHECK_EQ(err.line, 3);
    unlink(path);
}

TEST(synonyms_file_extends_and_reloads)
{
    struct err err;
    struct xdoc x[2] = { { "ledger", "Bookkeeping entries.", NULL, NULL },
                         { "notes", "Meeting notes.", NULL, NULL } };
    const char *path = tmp_write("accounts, bookkeeping\n");
    CHECK_EQ(search_synonyms_init(path, &err), 0);
    struct search_index *idx = build_x(x, 2);
    struct search_hit h[NHITS];
    CHECK_EQ(search_query(idx, "accounts", h, NHITS), 1);
    CHECK_EQ(h[0].doc, 0);
    CHECK(search_query(idx, "powerpoint", h, NHITS) == 0);  /* built-ins still in */
    search_free(idx);

    /* Changed: read again by the next build. */
    tmp_write("minutes, meeting notes\n");
    idx = build_x(x, 2);
    CHECK_EQ(search_query(idx, "accounts", h, NHITS), 0);
    CHECK_EQ(search_query(idx, "minutes", h, NHITS), 1);
    CHECK_EQ(h[0].doc, 1);
    search_free(idx);

    /* Broken: the previous table stays. */
    tmp_write("minutes\n");
    idx = build_x(x, 2);
    CHECK_EQ(search_query(idx, "minutes", h, NHITS), 1);
    search_free(idx);
    unlink(path);
    CHECK_EQ(search_synonyms_init(NULL, &err), 0);
}

/* A FIFO named by --synonyms (or put in place of the file later) is
 * refused at once: an open() that waited for a writer would hold the start
 * or the index thread, with the synonyms lock taken. SIGALRM fails a hang. */
TEST(synonyms_fifo_never_blocks)
{
    struct err err;
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/test_search_fifo.%d", (int)getpid());
    unlink(fifo);
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    alarm(10);
    CHECK_EQ(search_synonyms_init(fifo, &err), -1);
    CHECK(strstr(err.msg, "cannot be read") != NULL);
    unlink(fifo);

    struct xdoc x[1] = { { "ledger", "Bookkeeping entries.", NULL, NULL } };
    const char *path = tmp_write("accounts, bookkeeping\n");
    CHECK_EQ(search_synonyms_init(path, &err), 0);
    unlink(path);
    CHECK_EQ(mkfifo(path, 0600), 0);
    struct search_index *idx = build_x(x, 1);
    struct search_hit h[NHITS];
    CHECK_EQ(search_query(idx, "accounts", h, NHITS), 1);   /* the table loaded before */
    search_free(idx);
    alarm(0);
    unlink(path);
    CHECK_EQ(search_synonyms_init(NULL, &err), 0);
}

TEST(closest_when_nothing_matches)
{
    struct search_index *idx = build_x(xlib, NX);
    struct search_hit h[4];
    int similar = -1;
    CHECK_EQ(search_query(idx, "statz", h, 4), 0);
    size_t n = search_closest(idx, "statz", h, 4, &similar);
    CHECK(n >= 1);
    CHECK_EQ(similar, 1);
    CHECK_EQ(h[0].doc, X_PANDAS_BODY);  /* "stats" */
    n = search_closest(idx, "qqqq", h, 3, &similar);
    CHECK_EQ(similar, 0);
    CHECK_EQ(n, 3);
    CHECK_EQ(h[0].doc, 0);
    CHECK_EQ(h[2].doc, 2);
    CHECK_EQ(search_closest(idx, "", h, 0, &similar), 0);
    search_free(idx);
}

int main(void)
{
    lib_idx = build(library, NLIB);
    RUN(spreadsheet_finds_xlsx);
    RUN(csv_finds_csv_profile);
    RUN(multi_term_query);
    RUN(prefix_of_last_term);
    RUN(prefix_scores_below_exact);
    RUN(http_api_ranks_api_skills);
    RUN(no_hits);
    RUN(tag_only_match);
    RUN(name_beats_description);
    RUN(exact_name_first);
    RUN(stemming);
    RUN(unicode_words);
    RUN(cjk);
    RUN(ties_by_index_and_max);
    RUN(max_smaller_than_total);
    RUN(big_build);
    RUN(terms_reused_across_builds);
    RUN(big_sparse_and_dense_ties);
    RUN(big_query_speed);
    RUN(concurrent_queries);
    RUN(empty_index);
    RUN(null_fields);
    RUN(long_description_and_query);
    RUN(invalid_utf8);
    RUN(body_only_word_found);
    RUN(reference_only_ranks_below_card_and_body);
    RUN(body_terms_carried_from_previous_index);
    RUN(card_terms_carried_from_previous_index);
    RUN(carried_counts_at_the_packing_limits);
    RUN(synonyms_bridge_everyday_names);
    RUN(exact_name_beats_body_repeats);
    RUN(synonyms_file_errors_name_file_and_line);
    RUN(synonyms_file_extends_and_reloads);
    RUN(synonyms_fifo_never_blocks);
    RUN(closest_when_nothing_matches);
    RUN(all_hits_sorted_like_the_top);
    RUN(windows_sum_like_one_term_at_a_time);
    RUN(selection_keeps_what_a_full_sort_keeps);
    RUN(term_counts_past_sixteen_bits);
    search_free(lib_idx);
    search_free(big_idx);
    DONE();
}
