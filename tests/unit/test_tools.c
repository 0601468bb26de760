/*
 * test_tools.c - the MCP tools (server/tools*.c) driven through tools_call()
 * over a temporary skill tree.
 */
#include "harness.h"
#include "shape.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "call.h"
#include "rcache.h"
#include "tools_int.h"
#include "tools.h"
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- fixture: a skill tree and a server over it ------------------------- */

#define FIXTURE_NAME "tools"
#include "srv_fixture.h"

/* ---- calling tools ------------------------------------------------------------ */

static int last_raw;    /* the previous call was answered with borrowed, pre-rendered bytes */

/*
 * Runs tool with args; returns the parsed CallToolResult (new reference), or
 * NULL when no such tool exists or the bytes are not valid JSON.
 */
static json_t *call_j(const char *tool, json_t *args, int modern)
{
    json_t *res = NULL;
    struct call *c = call_new(&S);
    c->modern = modern;
    int rc = tools_call(c, tool, args);
    size_t rawlen;
    int owned = 0;
    const char *raw = rc == 0 ? call_raw_bytes(c, &rawlen, &owned) : NULL;
    last_raw = raw && !owned;
    if (rc == 0) {
        json_error_t e;
        if (!raw)
            printf("# tools_call returned 0 without bytes\n");
        else if (!(res = json_loadb(raw, rawlen, 0, &e)))
            printf("# result does not parse: %s (byte %d)\n", e.text, e.position);
    }
    call_unref(c);
    return res;
}

static json_t *call(const char *tool, const char *args)
{
    json_t *a = NULL;
    if (args) {
        json_error_t e;
        a = json_loads(args, 0, &e);
        if (!a) {
            printf("# bad test args %s: %s\n", args, e.text);
            return NULL;
        }
    }
    json_t *r = call_j(tool, a, 0);
    json_decref(a);
    return r;
}

static int is_error(json_t *r)
{
    return json_is_true(json_object_get(r, "isError"));
}

static json_t *sc(json_t *r)
{
    return json_object_get(r, "structuredContent");
}

static const char *text0(json_t *r)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0),
                                             "text"));
}

static const char *sget(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_int_t iget(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* The CallToolResult is an error whose message contains every needle. */
#define CHECK_TOOL_ERROR(r, ...) do {                                        \
        const char *needles_[] = {__VA_ARGS__, NULL};                        \
        CHECK((r) != NULL);                                                  \
        CHECK(is_error(r));                                                  \
        CHECK(sc(r) == NULL);                                                \
        const char *t_ = text0(r);                                           \
        CHECK(t_ != NULL);                                                   \
        for (const char **n_ = needles_; *n_; n_++)                          \
            if (!strstr(t_, *n_)) {                                          \
                H_FAIL("error text lacks \"%s\": %s", *n_, t_);              \
                return;                                                      \
            }                                                                \
    } while (0)

/* A successful CallToolResult whose text block is its structuredContent. */
#define CHECK_TOOL_OK(r) do {                                                \
        CHECK((r) != NULL);                                                  \
        if (is_error(r)) {                                                   \
            H_FAIL("tool error: %s", text0(r));                              \
            return;                                                          \
        }                                                                    \
        CHECK(json_is_object(sc(r)));                                        \
        json_t *t_ = json_loads(text0(r), 0, NULL);                          \
        int same_ = json_equal(t_, sc(r));                                   \
        json_decref(t_);                                                     \
        CHECK(same_);                                                        \
    } while (0)

/* A card's qualified name: absent when it equals the name. */
static const char *card_qname(json_t *c)
{
    json_t *q = json_object_get(c, "qualified_name");
    if (q && !strcmp(json_string_value(q), sget(c, "name")))
        return "(qualified_name repeats name)";
    return q ? json_string_value(q) : sget(c, "name");
}

/* Qualified names of a list_skills result, comma-joined. */
static void qnames(json_t *r, char *out, size_t cap)
{
    size_t i;
    json_t *c;
    out[0] = '\0';
    json_array_foreach(json_object_get(sc(r), "skills"), i, c) {
        if (i)
            strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, card_qname(c), cap - strlen(out) - 1);
    }
}

#define ALL_QNAMES "acme/billing,acme/reports,beta/reports,csv-profile,pdf,text-stats,x,y"

/* ---- tools_call basics ----------------------------------------------------------- */

static int call_rc(const char *tool)
{
    struct call *c = call_new(&S);
    int rc = tools_call(c, tool, NULL);
    call_unref(c);
    return rc;
}

TEST(unknown_tool)
{
    CHECK_EQ(call_rc("no_such_tool"), -1);
    CHECK_EQ(call_rc("run_skill_script"), -1);
    CHECK_EQ(call_rc(""), -1);
    CHECK_EQ(call_rc("LIST_SKILLS"), -1);
    CHECK_EQ(call_rc("list_skills"), 0);
}

TEST(names_and_list)
{
    size_t n;
    const char *const *names = tools_names(&n);
    CHECK_EQ(n, 6);
    CHECK_STR(names[0], "list_skills");
    CHECK_STR(names[5], "run_skill_script");
    /* --no-scripts: listed for stats, absent from tools/list */
    CHECK_EQ(json_array_size(S.tools_list), 5);
    n = 5;
    for (size_t i = 0; i < n; i++)
        CHECK_STR(sget(json_array_get(S.tools_list, i), "name"), names[i]);
}

/* ---- list_skills --------------------------------------------------------------- */

TEST(list_default_fast_path)
{
    json_t *fast = call("list_skills", NULL);
    CHECK(last_raw);
    CHECK_TOOL_OK(fast);
    json_t *empty = call("list_skills", "{}");
    CHECK(last_raw);
    json_t *slow = call("list_skills", "{\"limit\":500}");
    CHECK(!last_raw);
    CHECK_TOOL_OK(slow);
    CHECK(json_equal(sc(fast), sc(slow)));
    CHECK(json_equal(fast, slow));
    CHECK(json_equal(fast, empty));
    char q[512];
    qnames(fast, q, sizeof q);
    CHECK_STR(q, ALL_QNAMES);
    CHECK_EQ(iget(sc(fast), "total"), 8);
    CHECK(iget(sc(fast), "generation") >= 1);
    CHECK(json_object_get(sc(fast), "next_cursor") == NULL);
    json_decref(fast);
    json_decref(empty);
    json_decref(slow);
}

TEST(list_fast_path_modern)
{
    json_t *fast = call_j("list_skills", NULL, 1);
    CHECK(last_raw);
    CHECK_TOOL_OK(fast);
    CHECK_STR(sget(fast, "resultType"), "complete");
    CHECK(json_is_object(json_object_get(json_object_get(fast, "_meta"),
                                         "io.modelcontextprotocol/serverInfo")));
    /* a tool result is not cacheable */
    CHECK(json_object_get(fast, "ttlMs") == NULL);
    json_t *a = json_pack("{s:i}", "limit", 500);
    json_t *slow = call_j("list_skills", a, 1);
    json_decref(a);
    CHECK(!last_raw);
    CHECK(json_equal(fast, slow));
    json_decref(fast);
    json_decref(slow);
}

/* The bytes of a call; slow hides the snapshot's pre-rendered cards, so the
 * page is built and measured as a JSON tree instead. */
static char *call_bytes(const char *tool, const char *args, int modern, int slow)
{
    json_error_t e;
    json_t *a = args ? json_loads(args, 0, &e) : NULL;
    char *out = NULL;
    struct call *c = call_new(&S);
    c->modern = modern;
    struct snapshot *snap = call_snapshot(c);
    struct snapshot_ext *ext = snap->ext;
    if (slow)
        snap->ext = NULL;
    size_t rawlen;
    const char *raw;
    if (tools_call(c, tool, a) == 0 && (raw = call_raw_bytes(c, &rawlen, NULL)))
        out = strndup(raw, rawlen);
    snap->ext = ext;
    call_unref(c);
    json_decref(a);
    return out;
}

/* list_skills pages made from the pre-rendered cards are byte for byte the
 * pages the JSON-tree path makes, for queries, tags, offsets and limits. */
TEST(list_cards_match_tree_path)
{
    static const char *const args[] = {
        "{\"query\":\"x\"}", "{\"query\":\"profile a csv file\"}", "{\"query\":\"pdf\"}",
        "{\"query\":\"zzzz-no-match\"}", "{\"limit\":3}", "{\"limit\":3,\"cursor\":\"3\"}",
        "{\"limit\":2,\"cursor\":\"7\"}", "{\"cursor\":\"100\"}", "{\"tags\":[\"test\"]}",
        "{\"query\":\"skill\",\"limit\":1}", "{\"query\":\"skill\",\"tags\":[\"test\"]}",
        "{\"limit\":500}",
    };
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
        for (int modern = 0; modern < 2; modern++) {
            char *fast = call_bytes("list_skills", args[i], modern, 0);
            char *slow = call_bytes("list_skills", args[i], modern, 1);
            CHECK(fast != NULL && slow != NULL);
            if (fast && slow && strcmp(fast, slow))
                printf("# %s\n# fast %s\n# slow %s\n", args[i], fast, slow);
            CHECK(fast && slow && !strcmp(fast, slow));
            free(fast);
            free(slow);
        }
}

/* Every entry of the current snapshot without its kept cards, and with
 * (sized) or without its counted tiers (tools_card_sizes). */
static void reset_cards(int sized)
{
    struct call *c = call_new(&S);
    struct snapshot *snap = call_snapshot(c);
    for (size_t i = 0; i < snap->n; i++) {
        struct skill *k = snap->v[i];
        for (struct card_link *l = atomic_exchange(&k->cards, NULL), *next; l; l = next) {
            next = l->next;
            free(l);
        }
        atomic_store(&k->card_sized, 0);
        if (sized) {
            tools_card_sizes(k);
            CHECK(atomic_load(&k->card_sized));
        }
    }
    call_unref(c);
}

/* Cards whose strings need escaping (quotes, backslashes, control
 * characters, in the description, a tag and the version), at every tier a
 * page gives them: the kept bytes and their escaped copy for the text block
 * are the JSON-tree path's, byte for byte. */
static void escape_pages(void)
{
    json_t *r = call("reload_skills", "{}");
    CHECK_TOOL_OK(r);
    json_decref(r);
    r = call("list_skills", "{\"query\":\"quoting\",\"limit\":1}");
    /* the text block, decoded, is the JSON: every escape is there once */
    CHECK(r && strstr(text0(r), "Say \\\"hi\\\" to C:\\\\temp\\tthen \\u0001 stop") != NULL);
    json_decref(r);
    static const char *const args[] = {
        "{\"query\":\"quoting\"}", "{\"query\":\"quoting backslash\",\"limit\":1}",
        "{\"query\":\"quot\"}", "{\"limit\":500}", "{\"query\":\"words\"}",
    };
    for (int round = 0; round < 2; round++) {
        reset_cards(round);
        for (size_t i = 0; i < sizeof args / sizeof *args; i++)
            for (int modern = 0; modern < 2; modern++) {
                char *fast = call_bytes("list_skills", args[i], modern, 0);
                char *slow = call_bytes("list_skills", args[i], modern, 1);
                CHECK(fast && slow && strstr(fast, "quoting"));
                if (fast && slow && strcmp(fast, slow))
                    printf("# %s\n# fast %s\n# slow %s\n", args[i], fast, slow);
                CHECK(fast && slow && !strcmp(fast, slow));
                free(fast);
                free(slow);
            }
    }
}

TEST(list_cards_escape_like_tree_path)
{
    skill_md("quoting", "quoting",
             "\"Say \\\"hi\\\" to C:\\\\temp\\tthen \\x01 stop. A long second sentence follows "
             "here, so that the cut tiers have something to cut: words, words and more words "
             "about quoting, escaping and the backslash \\\\ in paths.\"",
             "tags: [\"q\\\"uote\", plain]\nversion: \"1.0\\\\beta\"\n", "# Q\n");
    escape_pages();     /* its checks return early: the skill goes either way */
    char p[256];
    snprintf(p, sizeof p, "%s/quoting", root);
    rm_tree(p);
    json_t *r = call("reload_skills", "{}");
    CHECK_TOOL_OK(r);
    json_decref(r);
}

/* A page of cards whose tiers come from the counts tools_card_sizes kept is
 * byte for byte the page of cards sized by rendering them, on both paths,
 * for token budgets that put cards at every tier and character budgets
 * that cut the page after every card. */
TEST(list_cards_from_counted_tiers)
{
    static const char *const args[] = {"{\"limit\":500}", "{\"query\":\"skill\",\"limit\":500}",
                                       "{\"query\":\"csv file\"}", "{\"limit\":500,\"cursor\":\"2\"}"};
    struct shape_budget saved = S.budget;
    int cut = 0;
    /* Token budgets that give the fixture's cards every room, one token
     * apart (the tier of each card), then character budgets two apart
     * (where the page is cut, from the cards' kept character counts). */
    enum { TOKEN_BUDGETS = 421, CHAR_BUDGETS = 1451 };
    for (size_t i = 0; i < TOKEN_BUDGETS + CHAR_BUDGETS; i++)
        for (size_t a = 0; a < sizeof args / sizeof *args; a++)
            for (int slow = 0; slow < 2; slow++) {
                char *page[2];
                for (int sized = 0; sized < 2; sized++) {
                    reset_cards(sized);
                    /* a page kept from the other round would answer */
                    struct call *c = call_new(&S);
                    struct snapshot *snap = call_snapshot(c);
                    struct rcache_pages *kept = snap->ext ? snap->ext->pages : NULL;
                    if (kept)
                        snap->ext->pages = rcache_pages_new(4, 2, 1 << 20);
                    size_t bt = i < TOKEN_BUDGETS ? 40 + 3 * i : 0;
                    size_t bc = i < TOKEN_BUDGETS ? 0 : 100 + 2 * (i - TOKEN_BUDGETS);
                    S.budget = (struct shape_budget){bt, bc};
                    page[sized] = call_bytes("list_skills", args[a], 0, slow);
                    S.budget = saved;
                    if (kept) {
                        rcache_pages_free(snap->ext->pages);
                        snap->ext->pages = kept;
                    }
                    call_unref(c);
                }
                CHECK(page[0] && page[1]);
                if (page[0] && page[1] && strcmp(page[0], page[1]))
                    printf("# budget %zu %s\n# rendered %s\n# counted  %s\n", i, args[a],
                           page[0], page[1]);
                CHECK(page[0] && page[1] && !strcmp(page[0], page[1]));
                cut += page[1] && strstr(page[1], "\xe2\x80\xa6") != NULL;
                free(page[0]);
                free(page[1]);
            }
    CHECK(cut > 0);     /* some card was at a cut tier */
    reset_cards(0);
}

/* A page over the budget is cut at a card boundary: it fits, keeps a
 * prefix of the full page (about as many cards as the JSON-tree cut),
 * says so in _truncated, and its cursor points just past the last card. */
TEST(list_cards_cut_to_budget)
{
    static const struct shape_budget budgets[] = {
        {0, 700}, {0, 1200}, {0, 2500}, {120, 0}, {300, 0}, {250, 1800},
    };
    static const char *const args[] = {"{\"limit\":500}", "{\"query\":\"skill\",\"limit\":500}",
                                       "{\"limit\":500,\"cursor\":\"2\"}"};
    struct shape_budget saved = S.budget;
    for (size_t a = 0; a < sizeof args / sizeof *args; a++) {
        char *full_s = call_bytes("list_skills", args[a], 0, 0);
        json_t *full = full_s ? json_loads(full_s, 0, NULL) : NULL;
        free(full_s);
        CHECK(full != NULL);
        json_t *all = json_object_get(sc(full), "skills");
        size_t offset = strstr(args[a], "cursor") ? 2 : 0;
        for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
            S.budget = budgets[i];
            char *fs = call_bytes("list_skills", args[a], 0, 0);
            char *ts = call_bytes("list_skills", args[a], 0, 1);
            S.budget = saved;
            json_t *f = fs ? json_loads(fs, 0, NULL) : NULL, *t = ts ? json_loads(ts, 0, NULL) : NULL;
            CHECK(f != NULL && t != NULL);
            if (!f || !t) {
                free(fs);
                free(ts);
                continue;
            }
            json_t *fsc = sc(f);
            char *d = json_dumps(fsc, JSON_COMPACT | JSON_REAL_PRECISION(6));
            size_t n = strlen(d);
            CHECK(!budgets[i].max_chars || shape_chars(d, n) <= budgets[i].max_chars);
            CHECK(!budgets[i].max_tokens || shape_tokens(d, n) <= budgets[i].max_tokens);
            /* the text block is the same JSON */
            json_t *txt = json_loads(text0(f), 0, NULL);
            CHECK(txt && json_equal(txt, fsc));
            json_decref(txt);
            free(d);
            json_t *fk = json_object_get(fsc, "skills"), *tk = json_object_get(sc(t), "skills");
            size_t kept = json_array_size(fk);
            CHECK(kept >= 1);
            /* Token sums are an upper bound (a card boundary may count one
             * token more than the joined text): at most one card fewer. */
            CHECK(kept + 1 >= json_array_size(tk));
            /* the same skills (their cards may be poorer: a smaller budget) */
            for (size_t j = 0; j < kept; j++)
                CHECK_STR(card_qname(json_array_get(fk, j)), card_qname(json_array_get(all, j)));
            /* at the tiers the whole page gives them (the JSON-tree path
             * sizes every card; this one stops once the page is over), up
             * to the tree path's last card, which it may cut inside */
            for (size_t j = 0; j + 1 < kept && j + 1 < json_array_size(tk); j++)
                CHECK(json_equal(json_array_get(fk, j), json_array_get(tk, j)));
            if (kept < json_array_size(all)) {
                json_t *tr = json_object_get(fsc, "_truncated");
                CHECK(json_is_object(tr));
                CHECK_STR(json_string_value(json_array_get(json_object_get(tr, "fields"), 0)),
                          "skills");
                CHECK(iget(tr, "kept_tokens") <= iget(tr, "original_tokens"));
                char cur[32];
                snprintf(cur, sizeof cur, "%zu", offset + kept);
                CHECK_STR(sget(fsc, "next_cursor"), cur);
                CHECK_EQ(iget(fsc, "total"), iget(sc(full), "total"));
            }
            json_decref(f);
            json_decref(t);
            free(fs);
            free(ts);
        }
        json_decref(full);
    }
}

TEST(list_cards)
{
    json_t *r = call("list_skills", "{\"query\":\"x\"}");
    CHECK_TOOL_OK(r);
    json_t *c = json_array_get(json_object_get(sc(r), "skills"), 0);
    CHECK_STR(sget(c, "name"), "x");
    /* equal to the name: left out */
    CHECK(json_object_get(c, "qualified_name") == NULL);
    CHECK_STR(sget(c, "description"), "The x skill, for testing");
    CHECK_STR(sget(c, "version"), "1.0.0");
    CHECK_EQ(json_array_size(json_object_get(c, "tags")), 2);
    json_decref(r);

    r = call("list_skills", "{\"limit\":500}");
    CHECK_TOOL_OK(r);
    size_t i;
    json_array_foreach(json_object_get(sc(r), "skills"), i, c) {
        if (!strcmp(card_qname(c), "y")) {
            /* no tags or version in the frontmatter: the keys are absent */
            CHECK(json_object_get(c, "tags") == NULL);
            CHECK(json_object_get(c, "version") == NULL);
        }
        if (!strcmp(sget(c, "name"), "billing"))
            CHECK_STR(sget(c, "qualified_name"), "acme/billing");
    }
    json_decref(r);
}

/* ---- the catalogue on a small window ------------------------------------------- */

/* Each copy of a result (text block, structuredContent) gets the whole
 * budget: a model reads one of them. */
TEST(budget_is_per_copy)
{
    CHECK_EQ(S.budget.max_tokens, 32000);       /* 128000 x 0.25 */
    CHECK_EQ(S.budget.max_chars, 48000);
}

/* The kept text of a cut: d[0..keep) plus the marker. */
static void cut(const char *d, size_t cap, char *out, size_t outcap)
{
    int marker;
    size_t keep = tools_desc_cut(d, strlen(d), cap, &marker);
    snprintf(out, outcap, "%.*s%s", (int)keep, d, marker ? "\xe2\x80\xa6" : "");
}

TEST(desc_cut_boundaries)
{
    char out[512];
    /* fits: whole, no marker */
    cut("Profile a CSV file.", 10, out, sizeof out);
    CHECK_STR(out, "Profile a CSV file.");
    cut("Profile a CSV file.", 0, out, sizeof out);
    CHECK_STR(out, "Profile a CSV file.");
    /* a sentence end: no marker */
    cut("Profile CSV files quickly. It reports column types, null counts and value ranges "
        "for every column in the file, then writes a report.", 16, out, sizeof out);
    CHECK_STR(out, "Profile CSV files quickly.");
    /* "e.g. the" is no sentence end; the clause boundary before it is */
    cut("Convert documents between formats, e.g. the Markdown and HTML files that a wiki "
        "exports, keeping headings intact.", 10, out, sizeof out);
    CHECK_STR(out, "Convert documents between formats\xe2\x80\xa6");
    /* a clause boundary: its punctuation dropped, the marker added */
    cut("Audit Terraform plans before they are applied; report every resource that would "
        "be destroyed and why.", 14, out, sizeof out);
    CHECK_STR(out, "Audit Terraform plans before they are applied\xe2\x80\xa6");
    cut("Render dashboards \xe2\x80\x94 every panel, every query and every alert rule of the "
        "folder you name.", 8, out, sizeof out);
    CHECK_STR(out, "Render dashboards\xe2\x80\xa6");
    /* no punctuation: the last whole word */
    cut("Count words sentences paragraphs and reading time of any text you give it with "
        "nothing else to do", 8, out, sizeof out);
    int marker;
    size_t k = tools_desc_cut("Count words sentences paragraphs and reading time of any text you "
                              "give it with nothing else to do", 97, 8, &marker);
    CHECK(marker);
    CHECK(k > 10);
    CHECK_EQ(out[k], '\xe2');
    CHECK(out[k - 1] != ' ');
    CHECK_EQ(("Count words sentences paragraphs and reading time of any text you give it with "
              "nothing else to do")[k], ' ');
    /* CJK: a sentence end, then a clause mark */
    cut("\xe5\x88\x86\xe6\x9e\x90\xe8\xa1\xa8\xe6\xa0\xbc\xe3\x80\x82"     /* 分析表格。 */
        "\xe5\x86\x99\xe5\x87\xba\xe6\x8a\xa5\xe5\x91\x8a\xef\xbc\x8c"     /* 写出报告， */
        "\xe5\x88\x97\xe5\x87\xba\xe6\xaf\x8f\xe4\xb8\x80\xe5\x88\x97\xe7\x9a\x84\xe7\xb1\xbb"
        "\xe5\x9e\x8b\xe5\x92\x8c\xe7\xa9\xba\xe5\x80\xbc\xe3\x80\x82",     /* 列出每一列的类型和空值。 */
        16, out, sizeof out);
    CHECK_STR(out, "\xe5\x88\x86\xe6\x9e\x90\xe8\xa1\xa8\xe6\xa0\xbc\xe3\x80\x82"
                   "\xe5\x86\x99\xe5\x87\xba\xe6\x8a\xa5\xe5\x91\x8a\xe2\x80\xa6");
    /* a CJK sentence end right before a Latin word */
    cut("\xe5\x88\x86\xe6\x9e\x90\xe8\xa1\xa8\xe6\xa0\xbc\xe3\x80\x82"     /* 分析表格。 */
        "Then it writes the report for every column and table in the workbook you name",
        12, out, sizeof out);
    CHECK_STR(out, "\xe5\x88\x86\xe6\x9e\x90\xe8\xa1\xa8\xe6\xa0\xbc\xe3\x80\x82");
    /* an abbreviation before a capital ends no sentence: the cut shows its marker */
    cut("Converts office files e.g. Word documents and spreadsheets into PDF files that "
        "print well on any printer.", 10, out, sizeof out);
    CHECK_STR(out, "Converts office files e.g.\xe2\x80\xa6");
    cut("Files reports for Dr. Smith and Mr. Jones of the U.S. office by tomorrow morning "
        "at the latest, every week.", 14, out, sizeof out);
    CHECK(!strcmp(out + strlen(out) - 3, "\xe2\x80\xa6"));
    cut("Handles the A.B.C. protocol. Then it handles the other protocols that matter to "
        "people who use them every day.", 12, out, sizeof out);
    CHECK_STR(out, "Handles the A.B.C. protocol.");
    /* a newline or a tab between words is a word boundary too */
    cut("Line one of a block scalar description\nthat\ngoes\non\nacross\nmany\nlines\nwith"
        "\nno\nspaces\nat\nall\nbetween\nthe\nwords", 24, out, sizeof out);
    {
        size_t o = strlen(out) - 3;
        CHECK(!strcmp(out + o, "\xe2\x80\xa6") && out[o - 1] != '\n' && o > 60);
        CHECK(strchr("\n", ("Line one of a block scalar description\nthat\ngoes\non\nacross"
                             "\nmany\nlines\nwith\nno\nspaces\nat\nall\nbetween\nthe\nwords")[o]));
    }
    /* a character boundary that keeps a letter with its combining accent and
     * an emoji sequence joined by U+200D whole */
    {
        char d[512] = "";
        for (int i = 0; i < 40; i++)
            strcat(d, "e\xcc\x81");
        cut(d, 4, out, sizeof out);
        size_t o = strlen(out) - 3;
        CHECK(o > 0 && !strcmp(out + o, "\xe2\x80\xa6") && !strncmp(out + o - 2, "\xcc\x81", 2));
        d[0] = '\0';
        for (int i = 0; i < 12; i++)    /* woman ZWJ woman ZWJ girl: one glyph */
            strcat(d, "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7");
        for (size_t cap = 3; cap < 30; cap++) {
            cut(d, cap, out, sizeof out);
            o = strlen(out) - 3;
            CHECK(o % 18 == 0 || o < 18);  /* a first glyph longer than the room is split */
        }
    }
    /* one word longer than the room: a character boundary, with the marker */
    cut("Supercalifragilisticexpialidociousnessworthinesses", 4, out, sizeof out);
    CHECK(strlen(out) > 3 && !strcmp(out + strlen(out) - 3, "\xe2\x80\xa6"));
    CHECK(!strncmp(out, "Supercal", 8));
}

/* The description of entry qname as load_skill gives it. */
static char *full_description(const char *qname)
{
    char args[256];
    snprintf(args, sizeof args, "{\"name\":\"%s\"}", qname);
    json_t *r = call("load_skill", args);
    char *d = r ? strdup(sget(sc(r), "description")) : NULL;
    json_decref(r);
    return d;
}

/* A card's description is the full one, or a prefix of it ending at a
 * boundary (then the marker, unless it ends a sentence). */
static int at_boundary(const char *full, const char *kept)
{
    size_t n = strlen(kept), f = strlen(full);
    if (!strcmp(full, kept))
        return 1;
    int marker = n >= 3 && !strcmp(kept + n - 3, "\xe2\x80\xa6");
    size_t p = marker ? n - 3 : n;
    if (p == 0 || p >= f || strncmp(full, kept, p))
        return 0;
    if (!marker)
        return strchr(".!?", kept[p - 1]) && full[p] == ' ';
    return kept[p - 1] != ' ' && strchr(" ,;:", full[p]);
}

/* Smaller budgets give poorer cards, never a card that is not a boundary cut
 * of the description; tags and version go first; pages fit. */
TEST(list_cards_tiers)
{
    static const size_t budgets[] = {0, 2000, 400, 250, 200, 160, 130, 110};
    size_t prev_len[8] = {0};
    struct shape_budget saved = S.budget;
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        S.budget = (struct shape_budget){budgets[b], 0};
        char *bytes = call_bytes("list_skills", "{\"limit\":500}", 0, 0);
        char *slow = call_bytes("list_skills", "{\"limit\":500}", 0, 1);
        S.budget = saved;
        CHECK(bytes && slow && !strcmp(bytes, slow));
        json_t *r = bytes ? json_loads(bytes, 0, NULL) : NULL;
        free(bytes);
        free(slow);
        CHECK(r != NULL);
        if (!r)
            return;
        char *d = json_dumps(sc(r), JSON_COMPACT);
        if (budgets[b])
            CHECK(shape_tokens(d, strlen(d)) <= budgets[b]);
        free(d);
        json_t *skills = json_object_get(sc(r), "skills");
        if (budgets[b] >= 250) {
            CHECK_EQ(json_array_size(skills), 8);   /* the whole library, cards cut */
            CHECK(json_object_get(sc(r), "next_cursor") == NULL);
        }
        size_t i;
        json_t *c;
        json_array_foreach(skills, i, c) {
            char *full = full_description(card_qname(c));
            const char *kept = sget(c, "description");
            CHECK(full && kept && at_boundary(full, kept));
            if (full && kept && !at_boundary(full, kept))
                printf("# budget %zu: \"%s\" from \"%s\"\n", budgets[b], kept, full);
            if (json_object_get(c, "tags") || json_object_get(c, "version"))
                CHECK(full && kept && !strcmp(full, kept));   /* tags go before words */
            if (b == 0 && !strcmp(card_qname(c), "x"))
                CHECK(json_object_get(c, "tags") && json_object_get(c, "version"));
            if (b > 0 && i < 8)
                CHECK(strlen(kept) <= prev_len[i]);
            if (i < 8)
                prev_len[i] = kept ? strlen(kept) : 0;
            free(full);
        }
        if (budgets[b] == 400) {
            /* the largest card keeps its words and loses its tags */
            json_t *pdf = json_array_get(skills, 4);
            CHECK_STR(sget(pdf, "name"), "pdf");
            CHECK(json_object_get(pdf, "tags") == NULL);
            CHECK(!strstr(sget(pdf, "description"), "\xe2\x80\xa6"));
        }
        if (budgets[b] == 250) {
            /* the longest descriptions are cut */
            int cut_one = 0;
            json_array_foreach(skills, i, c) cut_one |= strstr(sget(c, "description"), "\xe2\x80\xa6") != NULL;
            CHECK(cut_one);
        }
        json_decref(r);
    }
}

/* With a query, what the equal shares leave goes to the top results. At 140
 * tokens for 4 matches an equal share cuts csv-profile's description
 * ("Profile a CSV file: columns…"); the two short reports cards leave
 * enough for the top result to be whole, while pdf stays cut. */
TEST(list_query_top_fuller)
{
    struct shape_budget saved = S.budget;
    S.budget = (struct shape_budget){140, 0};
    json_t *ranked = call("list_skills", "{\"query\":\"pdf reports csv\"}");
    S.budget = saved;
    CHECK_TOOL_OK(ranked);
    json_t *rs = json_object_get(sc(ranked), "skills");
    CHECK_EQ(json_array_size(rs), 4);
    CHECK(json_object_get(sc(ranked), "_truncated") == NULL);
    json_t *top = json_array_get(rs, 0), *second = json_array_get(rs, 1);
    CHECK_STR(sget(top, "name"), "csv-profile");
    CHECK_STR(sget(second, "name"), "pdf");
    char *full = full_description("csv-profile");
    CHECK(full && !strcmp(full, sget(top, "description")));
    free(full);
    CHECK(strstr(sget(second, "description"), "\xe2\x80\xa6") != NULL);
    char *d = json_dumps(sc(ranked), JSON_COMPACT);
    CHECK(shape_tokens(d, strlen(d)) <= 140);
    free(d);
    json_decref(ranked);
}

TEST(list_query_ranking)
{
    json_t *r = call("list_skills", "{\"query\":\"profile a csv file\"}");
    CHECK_TOOL_OK(r);
    json_t *first = json_array_get(json_object_get(sc(r), "skills"), 0);
    CHECK_STR(card_qname(first), "csv-profile");
    json_decref(r);

    r = call("list_skills", "{\"query\":\"pdf documents\"}");
    CHECK_TOOL_OK(r);
    first = json_array_get(json_object_get(sc(r), "skills"), 0);
    CHECK_STR(card_qname(first), "pdf");
    json_decref(r);

    r = call("list_skills", "{\"query\":\"invoices\"}");
    CHECK_TOOL_OK(r);
    first = json_array_get(json_object_get(sc(r), "skills"), 0);
    CHECK_STR(card_qname(first), "acme/billing");
    json_decref(r);

    /* nothing matches: not an error, and not a silent empty page either:
     * a hint says so and the closest cards (here: none close, the first
     * ones) are listed, the whole of them on this page */
    r = call("list_skills", "{\"query\":\"zzzqqqxxx\"}");
    CHECK_TOOL_OK(r);
    CHECK(json_array_size(json_object_get(sc(r), "skills")) > 0);
    CHECK_EQ(iget(sc(r), "total"), (long long)json_array_size(json_object_get(sc(r), "skills")));
    CHECK(strstr(sget(sc(r), "hint"), "No skill matches 'zzzqqqxxx'") != NULL);
    CHECK(json_object_get(sc(r), "next_cursor") == NULL);
    json_decref(r);

    /* a near miss lists the skill whose name is closest first */
    r = call("list_skills", "{\"query\":\"bilingg\"}");
    CHECK_TOOL_OK(r);
    first = json_array_get(json_object_get(sc(r), "skills"), 0);
    CHECK_STR(sget(first, "qualified_name"), "acme/billing");
    CHECK(strstr(sget(sc(r), "hint"), "the closest by name and tags") != NULL);
    json_decref(r);

    /* a query that matches, then a tag filter that keeps none: a hint too */
    r = call("list_skills", "{\"query\":\"invoices\",\"tags\":[\"no-such-tag\"]}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 0);
    CHECK(sget(sc(r), "hint") != NULL);
    json_decref(r);

    /* an empty query is no query */
    r = call("list_skills", "{\"query\":\"\"}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 8);
    json_decref(r);
}

TEST(list_tags_filter)
{
    char q[512];
    json_t *r = call("list_skills", "{\"tags\":[\"ALPHA\",\"beta\"]}");
    CHECK_TOOL_OK(r);
    qnames(r, q, sizeof q);
    CHECK_STR(q, "x");
    CHECK_EQ(iget(sc(r), "total"), 1);
    json_decref(r);

    /* every tag must be carried */
    r = call("list_skills", "{\"tags\":[\"alpha\",\"data\"]}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 0);
    json_decref(r);

    r = call("list_skills", "{\"tags\":[\"Office\"]}");
    CHECK_TOOL_OK(r);
    qnames(r, q, sizeof q);
    CHECK_STR(q, "pdf");
    json_decref(r);

    /* tags with a query */
    r = call("list_skills", "{\"tags\":[\"csv\"],\"query\":\"file\"}");
    CHECK_TOOL_OK(r);
    qnames(r, q, sizeof q);
    CHECK_STR(q, "csv-profile");
    json_decref(r);

    /* an empty list filters nothing */
    r = call("list_skills", "{\"tags\":[]}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 8);
    json_decref(r);

    r = call("list_skills", "{\"tags\":\"alpha\"}");
    CHECK_TOOL_ERROR(r, "tags");
    json_decref(r);
    r = call("list_skills", "{\"tags\":[1]}");
    CHECK_TOOL_ERROR(r, "tags");
    json_decref(r);
}

TEST(list_paging)
{
    char all[1024] = "", q[512];
    const char *cursor = NULL;
    char cur[32] = "";
    int pages = 0;
    for (;;) {
        json_t *a = json_pack("{s:i}", "limit", 3);
        if (cursor)
            json_object_set_new(a, "cursor", json_string(cursor));
        json_t *r = call_j("list_skills", a, 0);
        json_decref(a);
        CHECK_TOOL_OK(r);
        CHECK_EQ(iget(sc(r), "total"), 8);
        size_t n = json_array_size(json_object_get(sc(r), "skills"));
        qnames(r, q, sizeof q);
        if (*all)
            strcat(all, ",");
        strcat(all, q);
        pages++;
        const char *next = sget(sc(r), "next_cursor");
        if (pages < 3) {
            CHECK_EQ(n, 3);
            CHECK(next != NULL);
            CHECK_EQ(atoi(next), 3 * pages);
        } else {
            CHECK_EQ(n, 2);
            CHECK(next == NULL);
        }
        if (!next) {
            json_decref(r);
            break;
        }
        snprintf(cur, sizeof cur, "%s", next);
        cursor = cur;
        json_decref(r);
        CHECK(pages < 10);
    }
    CHECK_EQ(pages, 3);
    CHECK_STR(all, ALL_QNAMES);

    /* past the end: an empty last page */
    json_t *r = call("list_skills", "{\"cursor\":\"100\"}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(json_array_size(json_object_get(sc(r), "skills")), 0);
    CHECK_EQ(iget(sc(r), "total"), 8);
    CHECK(json_object_get(sc(r), "next_cursor") == NULL);
    json_decref(r);

    /* exactly one page */
    r = call("list_skills", "{\"limit\":8}");
    CHECK_TOOL_OK(r);
    CHECK(json_object_get(sc(r), "next_cursor") == NULL);
    json_decref(r);

    /* a query pages too */
    r = call("list_skills", "{\"query\":\"reports\",\"limit\":1}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 2);
    CHECK_STR(sget(sc(r), "next_cursor"), "1");
    json_decref(r);
}

/* tools_card_floor never counts more than the card it stands for, at
 * every tier as card_of builds it (name, qualified name, description or its
 * cut, tags, version), for names and descriptions of every kind the
 * estimate tells apart. A larger floor would skip a tier that fits and
 * change the page. */
TEST(card_floor_at_most_the_card)
{
    static const char *const descs[] = {
        "Extract text and tables from PDF documents, fill forms, merge and split files",
        "(beta) starts with a bracket", "ends with punctuation...", "  leading spaces",
        "trailing spaces  ", "a1b2c3d4e5f6g7h8i9 opaque", "HTTPServer ALLCAPS camelCase",
        "\xe5\xb0\x8f\xe5\x9e\x8b\xe8\xaf\xad\xe8\xa8\x80 CJK", "\xed\x95\x9c\xea\xb8\x80",
        "emoji \xf0\x9f\x98\x80!", "say \"quoted\" and back\\slash", "tab\there\nnewline",
        "\x01\x02 control", "invalid \xff byte, in a description that goes on for a good many more words",
        "truncated \xe4\xb8", "-", "@handle", "#1",
        "_under_score_", "1234567890", "e.g. U.S. etc.",
        "Profile CSV files quickly. It reports column types, null counts and value ranges for "
        "every column in the file, then writes a report that a spreadsheet can open (xlsx).",
        "Audit Terraform plans before they are applied; report every resource that would be "
        "destroyed and why, with the module path 3f9a8b7c6d5e4f3a2b1c and the plan's id: 42!",
        "\xe5\x88\x86\xe6\x9e\x90\xe8\xa1\xa8\xe6\xa0\xbc\xe3\x80\x82\xe5\x86\x99\xe5\x87\xba"
        "\xe6\x8a\xa5\xe5\x91\x8a\xef\xbc\x8c\xe5\x88\x97\xe5\x87\xba\xe6\xaf\x8f\xe4\xb8\x80"
        "\xe5\x88\x97\xe7\x9a\x84\xe7\xb1\xbb\xe5\x9e\x8b\xe5\x92\x8c\xe7\xa9\xba\xe5\x80\xbc"
        "\xe3\x80\x82 then English words follow for a while to make it longer than the caps",
        "use this skill when you need to check review find fix build run compare generate convert "
        "summarise validate inspect analyse prepare update create list read write report explain",
        "(parenthesised start) and a long run of words afterwards, -- dashes -- and more words "
        "to pass the caps of every tier, ending in punctuation...",
        "Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word "
        "Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word "
        "Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word Word",
    };
    static const char *const names[] = {"n", "check-csv-01234", "x-", "-x", "9lives", "a_b",
                                        "caf\xc3\xa9", "HTTPServer", "deadbeef0123456789ab"};
    static const char *const tagsets[][3] = {{NULL}, {"data", "csv", NULL}, {"(x)", NULL}};
    for (size_t d = 0; d < sizeof descs / sizeof *descs; d++)
        for (size_t nmi = 0; nmi < sizeof names / sizeof *names; nmi++)
        for (size_t ts = 0; ts < 3; ts++)
            for (int q = 0; q < 2; q++) {
                char *tags[3];
                size_t nt = 0;
                while (tagsets[ts][nt]) {
                    tags[nt] = (char *)(uintptr_t)tagsets[ts][nt];
                    nt++;
                }
                struct skill k = {0};
                char qn[64];
                snprintf(qn, sizeof qn, "team/%s", names[nmi]);
                k.name = (char *)(uintptr_t)names[nmi];
                k.qname = q ? qn : k.name;
                k.description = descs[d];
                k.tags = tags;
                k.ntags = nt;
                k.version = q ? "1.0" : NULL;
                for (int tier = 0; tier < SKILL_CARD_TIERS; tier++) {
                    size_t floor = tools_card_floor(&k, tier);
                    static const unsigned short caps[SKILL_CARD_TIERS] = {0, 0, 48, 32, 24, 16, 10};
                    int marker;
                    size_t keep = tools_desc_cut(k.description, strlen(k.description), caps[tier],
                                                 &marker);
                    char dcut[512];
                    snprintf(dcut, sizeof dcut, "%.*s%s", (int)keep, k.description,
                             marker ? "\xe2\x80\xa6" : "");
                    json_t *c = json_pack("{s:s}", "name", k.name);
                    if (q)
                        json_object_set_new(c, "qualified_name", json_string(k.qname));
                    json_object_set_new(c, "description", json_string(dcut));
                    if (tier == 0 && nt) {
                        json_t *a = json_array();
                        for (size_t i = 0; i < nt; i++)
                            json_array_append_new(a, json_string(tags[i]));
                        json_object_set_new(c, "tags", a);
                    }
                    if (tier == 0 && k.version)
                        json_object_set_new(c, "version", json_string(k.version));
                    char *j = json_dumps(c, JSON_COMPACT);
                    size_t t = shape_tokens(j, strlen(j));
                    if (floor > t)
                        printf("# floor %zu over the card's %zu tokens: %s\n", floor, t, j);
                    CHECK(floor <= t);
                    free(j);
                    json_decref(c);
                }
            }
}

/* An unfiltered query page is the ranking's [cursor, cursor + limit)
 * (only that much of it is selected), with the count of every match. */
TEST(list_query_pages_are_slices)
{
#define SLICE_Q "x y csv pdf text reports billing"
    json_t *full = call("list_skills", "{\"query\":\"" SLICE_Q "\"}");
    CHECK_TOOL_OK(full);
    json_t *all = json_object_get(sc(full), "skills");
    size_t n = json_array_size(all);
    json_int_t total = iget(sc(full), "total");
    CHECK(n >= 4);
    CHECK_EQ((size_t)total, n);
    for (size_t off = 0; off <= n; off++)
        for (size_t lim = 1; lim <= 3; lim++) {
            char a[128];
            snprintf(a, sizeof a, "{\"query\":\"" SLICE_Q "\",\"limit\":%zu,\"cursor\":\"%zu\"}",
                     lim, off);
            json_t *r = call("list_skills", a);
            CHECK_TOOL_OK(r);
            json_t *k = json_object_get(sc(r), "skills");
            CHECK_EQ(iget(sc(r), "total"), total);
            size_t want = off + lim <= n ? lim : n - off;
            CHECK_EQ(json_array_size(k), want);
            for (size_t j = 0; j < want && j < json_array_size(k); j++)
                CHECK_STR(card_qname(json_array_get(k, j)),
                          card_qname(json_array_get(all, off + j)));
            CHECK((sget(sc(r), "next_cursor") != NULL) == (off + lim < n));
            json_decref(r);
        }
    json_decref(full);
}

TEST(list_bad_arguments)
{
    static const char *const bad[] = {
        "{\"cursor\":\"abc\"}",  "{\"cursor\":\"-1\"}",     "{\"cursor\":\"\"}",
        "{\"cursor\":\"1x\"}",   "{\"cursor\":\"999999999999\"}", "{\"cursor\":5}",
        "{\"limit\":0}",         "{\"limit\":501}",         "{\"limit\":-3}",
        "{\"limit\":\"ten\"}",   "{\"limit\":2.5}",         "{\"limit\":true}",
        "{\"query\":7}",         "{\"query\":[\"a\"]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *r = call("list_skills", bad[i]);
        if (!r || !is_error(r) || sc(r)) {
            H_FAIL("list_skills %s: expected isError", bad[i]);
            json_decref(r);
            return;
        }
        json_decref(r);
    }
    json_t *r = call("list_skills", "{\"limit\":0}");
    CHECK_TOOL_ERROR(r, "limit", "500");
    json_decref(r);
    r = call("list_skills", "{\"cursor\":\"abc\"}");
    CHECK_TOOL_ERROR(r, "cursor");
    json_decref(r);
    /* a whole number written as a real is fine */
    r = call("list_skills", "{\"limit\":2.0}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(json_array_size(json_object_get(sc(r), "skills")), 2);
    json_decref(r);
    /* null means "not given" */
    r = call("list_skills", "{\"limit\":null,\"cursor\":null,\"query\":null,\"tags\":null}");
    CHECK_TOOL_OK(r);
    CHECK_EQ(iget(sc(r), "total"), 8);
    json_decref(r);
}

/*
 * A huge real limit: opt_int() casts it to long before range-checking, which
 * is undefined behaviour (UBSan's float-cast-overflow aborts the process).
 * Run in a child so that an abort is a failed test, not a dead run.
 */
static int child_limit_is_error(const char *args)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        json_t *r = call("list_skills", args);
        _exit(r && is_error(r) && text0(r) && strstr(text0(r), "limit") ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        printf("# child died of signal %d\n", WTERMSIG(st));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

TEST(list_huge_real_limit)
{
    CHECK(child_limit_is_error("{\"limit\":1e300}"));
    CHECK(child_limit_is_error("{\"limit\":-1e19}"));
}

TEST(list_unknown_argument)
{
    json_t *r = call("list_skills", "{\"foo\":1}");
    CHECK_TOOL_ERROR(r, "'foo'", "query", "tags", "limit", "cursor");
    json_decref(r);
    r = call("skill_server_stats", "{\"verbose\":true}");
    CHECK_TOOL_ERROR(r, "'verbose'");
    json_decref(r);
    r = call("reload_skills", "{\"force\":true}");
    CHECK_TOOL_ERROR(r, "'force'");
    json_decref(r);
}

TEST(arguments_not_object)
{
    json_t *a = json_pack("[i]", 1);
    json_t *r = call_j("load_skill", a, 0);
    json_decref(a);
    CHECK_TOOL_ERROR(r, "object");
    json_decref(r);
    a = json_string("x");
    r = call_j("read_skill_file", a, 0);
    json_decref(a);
    CHECK_TOOL_ERROR(r, "object");
    json_decref(r);
}

/* ---- load_skill -------------------------------------------------------------- */

TEST(load_whole_body)
{
    json_t *r = call("load_skill", "{\"name\":\"x\"}");
    CHECK_TOOL_OK(r);
    json_t *s = sc(r);
    CHECK_STR(sget(s, "name"), "x");
    CHECK_STR(sget(s, "qualified_name"), "x");
    CHECK_STR(sget(s, "description"), "The x skill, for testing");
    CHECK_STR(sget(s, "content"), X_BODY);
    CHECK(!strstr(sget(s, "content"), "description:"));
    CHECK(json_object_get(s, "section") == NULL);
    json_t *secs = json_object_get(s, "sections");
    CHECK_EQ(json_array_size(secs), 4);
    CHECK_STR(sget(json_array_get(secs, 0), "title"), "X");
    CHECK_EQ(iget(json_array_get(secs, 0), "level"), 1);
    CHECK_STR(sget(json_array_get(secs, 2), "title"), "Details");
    CHECK_EQ(iget(json_array_get(secs, 2), "level"), 3);
    /* scripts/ apart; the rest as files; SKILL.md and the escaping link absent */
    json_t *scripts = json_object_get(s, "scripts");
    CHECK_EQ(json_array_size(scripts), 1);
    CHECK_STR(sget(json_array_get(scripts, 0), "path"), "scripts/run.py");
    json_t *files = json_object_get(s, "files");
    char list[512] = "";
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        if (i)
            strcat(list, ",");
        strcat(list, sget(f, "path"));
        CHECK(json_is_integer(json_object_get(f, "size")));
    }
    CHECK_STR(list, "assets/b.bin,references/a.md,utf8.txt");
    json_decref(r);
}

TEST(load_whole_body_cached)
{
    json_t *a = call("load_skill", "{\"name\":\"csv-profile\"}");
    CHECK_TOOL_OK(a);
    json_t *b = call("load_skill", "{\"name\":\"csv-profile\"}");
    CHECK(last_raw);    /* rendered once, then served from the entry */
    CHECK(json_equal(a, b));
    CHECK(json_object_get(a, "resultType") == NULL);
    /* the modern era has its own rendering */
    json_t *args = json_pack("{s:s}", "name", "csv-profile");
    json_t *m1 = call_j("load_skill", args, 1);
    json_t *m2 = call_j("load_skill", args, 1);
    json_decref(args);
    CHECK_TOOL_OK(m1);
    CHECK(last_raw);
    CHECK(json_equal(m1, m2));
    CHECK_STR(sget(m1, "resultType"), "complete");
    CHECK(json_equal(sc(m1), sc(a)));
    /* and the legacy one is still legacy */
    json_t *c = call("load_skill", "{\"name\":\"csv-profile\"}");
    CHECK(json_object_get(c, "resultType") == NULL);
    /* a section is kept too, per era, for the spelling first asked for */
    json_t *d = call("load_skill", "{\"name\":\"csv-profile\",\"section\":\"usage\"}");
    CHECK_TOOL_OK(d);
    CHECK(last_raw);
    json_t *d2 = call("load_skill", "{\"name\":\"csv-profile\",\"section\":\"usage\"}");
    CHECK(last_raw);
    CHECK(json_equal(d, d2));
    CHECK_STR(sget(sc(d), "section"), "usage");
    CHECK(json_object_get(d, "resultType") == NULL);
    json_t *sargs = json_pack("{s:s, s:s}", "name", "csv-profile", "section", "usage");
    json_t *dm = call_j("load_skill", sargs, 1);
    json_decref(sargs);
    CHECK(last_raw);
    CHECK_STR(sget(dm, "resultType"), "complete");
    CHECK(json_equal(sc(dm), sc(d)));
    /* another spelling of the same section: the same content, its own echo,
     * rendered per call (the kept bytes answer "usage") */
    json_t *d3 = call("load_skill", "{\"name\":\"csv-profile\",\"section\":\"## USAGE\"}");
    CHECK_TOOL_OK(d3);
    CHECK(!last_raw);
    CHECK_STR(sget(sc(d3), "section"), "## USAGE");
    CHECK_STR(sget(sc(d3), "content"), sget(sc(d), "content"));
    CHECK(strcmp(sget(sc(d), "content"), sget(sc(a), "content")) != 0);
    json_decref(d2);
    json_decref(d3);
    json_decref(dm);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(m1);
    json_decref(m2);
}

TEST(load_section)
{
    json_t *r = call("load_skill", "{\"name\":\"x\",\"section\":\"usage\"}");
    CHECK_TOOL_OK(r);
    const char *c = sget(sc(r), "content");
    CHECK_STR(c, "## Usage\n\nUse it like this.\n\n### Details\n\nMore detail.\n\n");
    CHECK_STR(sget(sc(r), "section"), "usage");
    json_decref(r);

    r = call("load_skill", "{\"name\":\"x\",\"section\":\"  ## OTHER \"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "content"), "## Other\n\nThe end.\n");
    json_decref(r);

    r = call("load_skill", "{\"name\":\"x\",\"section\":\"details\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "content"), "### Details\n\nMore detail.\n\n");
    json_decref(r);

    /* an empty section is the whole body */
    r = call("load_skill", "{\"name\":\"x\",\"section\":\"\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "content"), X_BODY);
    json_decref(r);
}

TEST(load_unknown_section)
{
    json_t *r = call("load_skill", "{\"name\":\"x\",\"section\":\"Nope\"}");
    CHECK_TOOL_ERROR(r, "Nope", "\"Usage\"", "\"Other\"", "\"Details\"", "\"X\"");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"x\",\"section\":5}");
    CHECK_TOOL_ERROR(r, "section");
    json_decref(r);
}

TEST(load_ambiguous_and_qualified)
{
    json_t *r = call("load_skill", "{\"name\":\"reports\"}");
    CHECK_TOOL_ERROR(r, "acme/reports", "beta/reports");
    json_decref(r);

    r = call("load_skill", "{\"name\":\"beta/reports\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "qualified_name"), "beta/reports");
    CHECK_STR(sget(sc(r), "name"), "reports");
    CHECK_STR(sget(sc(r), "content"), "# Beta reports\n");
    json_decref(r);

    /* a unique bare name of a team skill works */
    r = call("load_skill", "{\"name\":\"billing\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "qualified_name"), "acme/billing");
    json_decref(r);
}

TEST(load_unknown_skill_suggests)
{
    json_t *r = call("load_skill", "{\"name\":\"csv-profil\"}");
    CHECK_TOOL_ERROR(r, "csv-profil", "csv-profile");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"acme/biling\"}");
    CHECK_TOOL_ERROR(r, "acme/billing");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"completely-unrelated-thing\"}");
    CHECK_TOOL_ERROR(r, "list_skills");
    json_decref(r);
}

TEST(load_bad_names)
{
    size_t n = 100 * 1024;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = '\0';
    json_t *a = json_pack("{s:s}", "name", big);
    free(big);
    json_t *r = call_j("load_skill", a, 0);
    json_decref(a);
    CHECK_TOOL_ERROR(r, "name");
    CHECK(strlen(text0(r)) < 2000);     /* the name is not echoed back in full */
    json_decref(r);

    r = call("load_skill", "{\"name\":42}");
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    r = call("load_skill", "{}");
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"\"}");
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    r = call("load_skill", "{\"name\":null}");
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    a = json_pack("{s:s#}", "name", "x\0y", (int)3);
    r = call_j("load_skill", a, 0);
    json_decref(a);
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"x\",\"extra\":1}");
    CHECK_TOOL_ERROR(r, "'extra'");
    json_decref(r);
}

/* ---- read_skill_file ---------------------------------------------------------- */

TEST(read_text)
{
    json_t *r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"references/a.md\"}");
    CHECK_TOOL_OK(r);
    json_t *s = sc(r);
    CHECK_STR(sget(s, "name"), "x");
    CHECK_STR(sget(s, "path"), "references/a.md");
    CHECK_STR(sget(s, "encoding"), "utf-8");
    CHECK_STR(sget(s, "content"), "# A\nhello\n");
    CHECK_EQ(iget(s, "size"), 10);
    CHECK(json_is_false(json_object_get(s, "truncated")));
    json_decref(r);

    r = call("read_skill_file",
             "{\"name\":\"acme/billing\",\"path\":\"references/a.md\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "name"), "acme/billing");
    CHECK_STR(sget(sc(r), "content"), "billing reference\n");
    json_decref(r);

    /* SKILL.md itself is readable, frontmatter and all */
    r = call("read_skill_file", "{\"name\":\"y\",\"path\":\"SKILL.md\"}");
    CHECK_TOOL_OK(r);
    CHECK(!strncmp(sget(sc(r), "content"), "---\nname: y\n", 12));
    json_decref(r);
}

TEST(read_truncation_utf8)
{
    /* utf8.txt: a b E2 82 AC c d F0 9F 98 80 (11 bytes) */
    static const struct {
        int max;
        const char *want;
        int truncated;
    } cases[] = {
        {1, "a", 1},
        {2, "ab", 1},
        {3, "ab", 1},     /* cut after the lead byte of the euro sign */
        {4, "ab", 1},     /* cut inside it */
        {5, "ab\xe2\x82\xac", 1},
        {7, "ab\xe2\x82\xac" "cd", 1},
        {8, "ab\xe2\x82\xac" "cd", 1},
        {9, "ab\xe2\x82\xac" "cd", 1},
        {10, "ab\xe2\x82\xac" "cd", 1},
        {11, "ab\xe2\x82\xac" "cd\xf0\x9f\x98\x80", 0},
        {65536, "ab\xe2\x82\xac" "cd\xf0\x9f\x98\x80", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *a = json_pack("{s:s, s:s, s:i}", "name", "x", "path", "utf8.txt", "max_bytes",
                              cases[i].max);
        json_t *r = call_j("read_skill_file", a, 0);
        json_decref(a);
        CHECK(r != NULL);
        if (is_error(r)) {
            H_FAIL("max_bytes %d: %s", cases[i].max, text0(r));
            json_decref(r);
            return;
        }
        json_t *s = sc(r);
        const char *c = sget(s, "content");
        if (!c || strcmp(c, cases[i].want) || strcmp(sget(s, "encoding"), "utf-8") ||
            json_is_true(json_object_get(s, "truncated")) != cases[i].truncated ||
            iget(s, "size") != 11) {
            H_FAIL("max_bytes %d: got content \"%s\" encoding %s truncated %d", cases[i].max,
                   c ? c : "(null)", sget(s, "encoding"),
                   json_is_true(json_object_get(s, "truncated")));
            json_decref(r);
            return;
        }
        CHECK(utf8_valid(c, strlen(c)));
        json_decref(r);
    }
}

TEST(read_binary_base64)
{
    json_t *r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"assets/b.bin\"}");
    CHECK_TOOL_OK(r);
    json_t *s = sc(r);
    CHECK_STR(sget(s, "encoding"), "base64");
    CHECK_STR(sget(s, "content"), "AP8=");
    CHECK_EQ(iget(s, "size"), 2);
    CHECK(json_is_false(json_object_get(s, "truncated")));
    unsigned char out[8];
    CHECK_EQ(EVP_DecodeBlock(out, (const unsigned char *)"AP8=", 4), 3);
    CHECK_EQ(out[0], 0x00);
    CHECK_EQ(out[1], 0xff);
    json_decref(r);

    /* truncated binary */
    r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"assets/b.bin\",\"max_bytes\":1}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "encoding"), "base64");
    CHECK_STR(sget(sc(r), "content"), "AA==");
    CHECK(json_is_true(json_object_get(sc(r), "truncated")));
    json_decref(r);
}

TEST(read_traversal_refused)
{
    static const char *const paths[] = {"../x",        "../y/SKILL.md", "/etc/passwd",
                                        ".git/config", "a/../../etc/passwd",
                                        "references/../../y/SKILL.md", "..\\y\\SKILL.md",
                                        "./SKILL.md",  ""};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        json_t *a = json_pack("{s:s, s:s}", "name", "x", "path", paths[i]);
        json_t *r = call_j("read_skill_file", a, 0);
        json_decref(a);
        CHECK(r != NULL);
        const char *t = text0(r);
        if (!is_error(r) || sc(r) || !t || !strstr(t, "Cannot read")) {
            H_FAIL("path \"%s\" was not refused with a reason: %s", paths[i], t ? t : "");
            json_decref(r);
            return;
        }
        json_decref(r);
    }
    json_t *r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"/etc/passwd\"}");
    CHECK_TOOL_ERROR(r, "absolute");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"../y/SKILL.md\"}");
    CHECK_TOOL_ERROR(r, "'..'");
    json_decref(r);
}

TEST(read_nul_in_path)
{
    json_t *a = json_object();
    json_object_set_new(a, "name", json_string("x"));
    json_object_set_new(a, "path", json_stringn("references/a.md\0../../x", 23));
    json_t *r = call_j("read_skill_file", a, 0);
    json_decref(a);
    CHECK_TOOL_ERROR(r, "NUL");
    json_decref(r);
}

TEST(read_symlink_out)
{
    json_t *r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"escape\"}");
    CHECK_TOOL_ERROR(r, "outside");
    CHECK(!strstr(text0(r), "secret"));
    json_decref(r);
}

TEST(read_directory_and_missing)
{
    json_t *r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"references\"}");
    CHECK_TOOL_ERROR(r, "folder");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"references/nope.md\"}");
    /* not found: the files that exist are listed */
    CHECK_TOOL_ERROR(r, "references/a.md", "assets/b.bin");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"y\",\"path\":\"nope.md\"}");
    CHECK_TOOL_ERROR(r, "SKILL.md only");
    json_decref(r);
}

TEST(read_bad_arguments)
{
    json_t *r = call("read_skill_file", "{\"name\":\"x\"}");
    CHECK_TOOL_ERROR(r, "path");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"x\",\"path\":3}");
    CHECK_TOOL_ERROR(r, "path");
    json_decref(r);
    r = call("read_skill_file", "{\"path\":\"SKILL.md\"}");
    CHECK_TOOL_ERROR(r, "name");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"x\",\"path\":\"SKILL.md\",\"max_bytes\":0}");
    CHECK_TOOL_ERROR(r, "max_bytes");
    json_decref(r);
    r = call("read_skill_file",
             "{\"name\":\"x\",\"path\":\"SKILL.md\",\"max_bytes\":1048577}");
    CHECK_TOOL_ERROR(r, "max_bytes");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"nope\",\"path\":\"SKILL.md\"}");
    CHECK_TOOL_ERROR(r, "nope");
    json_decref(r);
    r = call("read_skill_file", "{\"name\":\"reports\",\"path\":\"SKILL.md\"}");
    CHECK_TOOL_ERROR(r, "acme/reports", "beta/reports");
    json_decref(r);
}

/* ---- skill_server_stats ---------------------------------------------------------- */

static json_int_t tool_count(json_t *stats, const char *tool, const char *what)
{
    return iget(json_object_get(json_object_get(sc(stats), "tools"), tool), what);
}

TEST(stats_counts)
{
    json_t *before = call("skill_server_stats", NULL);
    CHECK_TOOL_OK(before);
    json_t *r;
    r = call("load_skill", "{\"name\":\"x\"}");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"nope\"}");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"y\"}");
    json_decref(r);
    r = call("list_skills", NULL);     /* the fast path counts too */
    json_decref(r);
    json_t *after = call("skill_server_stats", "{}");
    CHECK_TOOL_OK(after);
    CHECK_EQ(tool_count(after, "load_skill", "calls") - tool_count(before, "load_skill", "calls"),
             3);
    CHECK_EQ(tool_count(after, "load_skill", "errors") -
                 tool_count(before, "load_skill", "errors"),
             1);
    CHECK_EQ(tool_count(after, "list_skills", "calls") -
                 tool_count(before, "list_skills", "calls"),
             1);
    /* the first stats call is counted by the time of the second */
    CHECK_EQ(tool_count(after, "skill_server_stats", "calls") -
                 tool_count(before, "skill_server_stats", "calls"),
             1);
    json_t *tools = json_object_get(sc(after), "tools");
    CHECK_EQ(json_object_size(tools), 6);
    json_t *ls = json_object_get(tools, "load_skill");
    CHECK(json_is_number(json_object_get(ls, "p50_ms")));
    CHECK(json_number_value(json_object_get(ls, "p99_ms")) >=
          json_number_value(json_object_get(ls, "p50_ms")));

    json_t *idx = json_object_get(sc(after), "index");
    CHECK_EQ(iget(idx, "skills"), 8);
    CHECK(iget(idx, "generation") >= 1);
    CHECK_EQ(iget(idx, "errors"), 0);
    CHECK(iget(idx, "warnings") >= 1);     /* x/escape points outside */
    CHECK_EQ(json_array_size(json_object_get(idx, "roots")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(idx, "roots"), 0)), root);
    const char *at = sget(idx, "last_refresh_at");
    CHECK(at && strlen(at) == 20 && at[10] == 'T' && at[19] == 'Z');
    CHECK(json_is_array(json_object_get(idx, "problems")));
    json_t *srvinfo = json_object_get(sc(after), "server");
    CHECK_STR(sget(srvinfo, "name"), "skill-mcp");
    CHECK_STR(sget(srvinfo, "version"), SKILL_VERSION);
    CHECK(json_number_value(json_object_get(srvinfo, "uptime_s")) >= 0);
    json_decref(before);
    json_decref(after);
}

/* ---- reload_skills (on its own tree) ---------------------------------------- */

static int has_str(json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!strcmp(json_string_value(v), s)) return 1;
    return 0;
}

TEST(reload_reports_changes)
{
    json_t *r = call("reload_skills", NULL);
    CHECK_TOOL_OK(r);
    json_t *s = sc(r);
    json_int_t g0 = iget(s, "generation_after");
    /* nothing changed: the generation stays (RFC-SKILL-1 §3.9.1) */
    CHECK_EQ(iget(s, "generation_after"), iget(s, "generation_before"));
    CHECK_EQ(json_array_size(json_object_get(s, "added")), 0);
    CHECK_EQ(json_array_size(json_object_get(s, "removed")), 0);
    CHECK_EQ(json_array_size(json_object_get(s, "changed")), 0);
    CHECK(json_is_array(json_object_get(s, "errors")));
    CHECK(json_is_number(json_object_get(s, "duration_ms")));
    json_decref(r);

    /* add one, change one, remove one */
    skill_md("newbie", "newbie", "A brand new skill", NULL, "# New\n");
    skill_md("y", "y", "The y skill, now rewritten at a different length", NULL,
             "# Y\n\nA different body.\n");
    char p[256];
    snprintf(p, sizeof p, "%s/text-stats", root);
    rm_tree(p);

    r = call("reload_skills", "{}");
    CHECK_TOOL_OK(r);
    s = sc(r);
    CHECK_EQ(iget(s, "generation_before"), g0);
    CHECK_EQ(iget(s, "generation_after"), g0 + 1);
    CHECK_EQ(json_array_size(json_object_get(s, "added")), 1);
    CHECK(has_str(json_object_get(s, "added"), "newbie"));
    CHECK_EQ(json_array_size(json_object_get(s, "removed")), 1);
    CHECK(has_str(json_object_get(s, "removed"), "text-stats"));
    CHECK(has_str(json_object_get(s, "changed"), "y"));
    CHECK(!has_str(json_object_get(s, "changed"), "x"));
    json_decref(r);

    /* the new snapshot serves the changes */
    r = call("list_skills", NULL);
    CHECK(last_raw);
    char q[512];
    qnames(r, q, sizeof q);
    CHECK_STR(q, "acme/billing,acme/reports,beta/reports,csv-profile,newbie,pdf,x,y");
    CHECK_EQ(iget(sc(r), "generation"), g0 + 1);
    json_decref(r);
    r = call("load_skill", "{\"name\":\"y\"}");
    CHECK_TOOL_OK(r);
    CHECK_STR(sget(sc(r), "content"), "# Y\n\nA different body.\n");
    json_decref(r);
    r = call("load_skill", "{\"name\":\"text-stats\"}");
    CHECK_TOOL_ERROR(r, "text-stats");
    json_decref(r);

    /* a broken SKILL.md is reported, and the old version kept */
    skill_md("x", "x", "", NULL, "# broken\n");
    r = call("reload_skills", NULL);
    CHECK_TOOL_OK(r);
    s = sc(r);
    CHECK(json_array_size(json_object_get(s, "errors")) >= 1);
    json_decref(r);
    r = call("load_skill", "{\"name\":\"x\"}");
    CHECK_TOOL_OK(r);
    json_decref(r);
}

/*
 * Error messages quote what the caller sent with a byte cap (%.64s, %.100s,
 * %.200s). A cap that falls inside a multibyte character leaves half of it
 * in the message, and render() copies the bytes as they are: the result is
 * not valid UTF-8, so it is not valid JSON (call_j cannot parse it).
 */
static json_t *with_long_utf8(const char *key, size_t ascii, size_t n_e_acute)
{
    char v[1024];
    size_t i = 0;
    for (; i < ascii; i++)
        v[i] = 'a';
    for (size_t k = 0; k < n_e_acute; k++) {
        v[i++] = (char)0xc3;
        v[i++] = (char)0xa9;
    }
    v[i] = '\0';
    json_t *o = json_object();
    json_object_set_new(o, key, json_string(v));
    return o;
}

TEST(error_text_stays_utf8_unknown_argument)
{
    /* the key is cut at 64 bytes: 'a' + 31.5 x U+00E9 */
    char key[128];
    size_t i = 0;
    key[i++] = 'a';
    for (int k = 0; k < 40; k++) {
        key[i++] = (char)0xc3;
        key[i++] = (char)0xa9;
    }
    key[i] = '\0';
    json_t *a = json_object();
    json_object_set_new(a, key, json_integer(1));
    json_t *r = call_j("list_skills", a, 0);
    json_decref(a);
    CHECK(r != NULL);
    CHECK(is_error(r));
    json_decref(r);
}

TEST(error_text_stays_utf8_section)
{
    json_t *a = with_long_utf8("section", 1, 80);    /* cut at 100 bytes */
    json_object_set_new(a, "name", json_string("x"));
    json_t *r = call_j("load_skill", a, 0);
    json_decref(a);
    CHECK(r != NULL);
    CHECK(is_error(r));
    json_decref(r);
}

TEST(error_text_stays_utf8_path)
{
    json_t *a = with_long_utf8("path", 1, 150);      /* cut at 200 bytes */
    json_object_set_new(a, "name", json_string("x"));
    json_t *r = call_j("read_skill_file", a, 0);
    json_decref(a);
    CHECK(r != NULL);
    CHECK(is_error(r));
    json_decref(r);
}

/* A body saved in another encoding: a tool error naming the cause, never
 * bytes that are not JSON, and nothing cached. */
TEST(load_body_not_utf8)
{
    skill_md("latin", "latin", "A body saved as Latin-1", NULL,
             "# Caf\xe9\n\n## Men\xfc\n\nCr\xe8" "me br\xfb" "l\xe9" "e.\n");
    json_t *r = call("reload_skills", "{}");
    CHECK_TOOL_OK(r);
    json_decref(r);
    for (int era = 0; era < 2; era++)
        for (int round = 0; round < 2; round++) {
            json_t *a = json_pack("{s:s}", "name", "latin");
            json_t *w = call_j("load_skill", a, era);
            json_decref(a);
            CHECK(w != NULL);   /* the reply parsed as JSON */
            CHECK_TOOL_ERROR(w, "latin", "not valid UTF-8", "skill-mcp validate");
            json_decref(w);
        }
    r = call("load_skill", "{\"name\":\"latin\",\"section\":\"Caf\"}");
    CHECK(r != NULL);
    CHECK_TOOL_ERROR(r, "no section");     /* md_find: the heading is not "Caf" */
    json_decref(r);
    /* the other skills are unaffected */
    r = call("load_skill", "{\"name\":\"csv-profile\"}");
    CHECK_TOOL_OK(r);
    json_decref(r);
    char p[256];
    snprintf(p, sizeof p, "%s/latin", root);
    rm_tree(p);
    r = call("reload_skills", "{}");
    CHECK_TOOL_OK(r);
    json_decref(r);
}

int main(void)
{
    x_install_json_alloc();
    log_set_level(LOG_WARN);
    make_tree();
    server_up();

    RUN(unknown_tool);
    RUN(names_and_list);
    RUN(list_default_fast_path);
    RUN(list_fast_path_modern);
    RUN(list_cards_match_tree_path);
    RUN(list_cards_escape_like_tree_path);
    RUN(list_cards_from_counted_tiers);
    RUN(list_cards_cut_to_budget);
    RUN(list_cards);
    RUN(budget_is_per_copy);
    RUN(desc_cut_boundaries);
    RUN(list_cards_tiers);
    RUN(list_query_pages_are_slices);
    RUN(card_floor_at_most_the_card);
    RUN(list_query_top_fuller);
    RUN(list_query_ranking);
    RUN(list_tags_filter);
    RUN(list_paging);
    RUN(list_bad_arguments);
    RUN(list_huge_real_limit);
    RUN(list_unknown_argument);
    RUN(arguments_not_object);
    RUN(load_whole_body);
    RUN(load_whole_body_cached);
    RUN(load_section);
    RUN(load_unknown_section);
    RUN(load_ambiguous_and_qualified);
    RUN(load_unknown_skill_suggests);
    RUN(load_bad_names);
    RUN(read_text);
    RUN(read_truncation_utf8);
    RUN(read_binary_base64);
    RUN(read_traversal_refused);
    RUN(read_nul_in_path);
    RUN(read_symlink_out);
    RUN(read_directory_and_missing);
    RUN(read_bad_arguments);
    RUN(error_text_stays_utf8_unknown_argument);
    RUN(error_text_stays_utf8_section);
    RUN(error_text_stays_utf8_path);
    RUN(stats_counts);
    RUN(reload_reports_changes);    /* last: it edits the tree */
    RUN(load_body_not_utf8);

    server_down();
    rm_tree(base);
    DONE();
}
