/*
 * test_markdown.c - md_sections and md_find.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "markdown.h"

static struct md_section *S;
static size_t N;

static size_t outline(const char *body)
{
    free(S);
    S = NULL;
    N = md_sections(body, strlen(body), &S);
    return N;
}

#define TITLE(body, i, want) CHECK_MEM((body) + S[i].title_off, S[i].title_len, want)

TEST(nested_sections)
{
    const char *b =
        "Intro text.\n"
        "\n"
        "# Title\n"
        "## Usage\n"
        "Run it.\n"
        "### Options\n"
        "-v verbose\n"
        "#### Deep\n"
        "x\n"
        "## Examples\n"
        "e.g.\n"
        "# Appendix\n"
        "end\n";

    CHECK_EQ(outline(b), 6);
    TITLE(b, 0, "Title");
    TITLE(b, 1, "Usage");
    TITLE(b, 2, "Options");
    TITLE(b, 3, "Deep");
    TITLE(b, 4, "Examples");
    TITLE(b, 5, "Appendix");
    CHECK_EQ(S[0].level, 1);
    CHECK_EQ(S[1].level, 2);
    CHECK_EQ(S[2].level, 3);
    CHECK_EQ(S[3].level, 4);
    /* the level 2 section holds its level 3 and 4 children, stops at the next ## */
    CHECK_MEM(b + S[1].start, S[1].end - S[1].start,
              "## Usage\nRun it.\n### Options\n-v verbose\n#### Deep\nx\n");
    CHECK_MEM(b + S[2].start, S[2].end - S[2].start, "### Options\n-v verbose\n#### Deep\nx\n");
    CHECK_MEM(b + S[4].start, S[4].end - S[4].start, "## Examples\ne.g.\n");
    /* the level 1 section runs to the next # */
    CHECK_EQ(S[0].start, strlen("Intro text.\n\n"));
    CHECK_EQ(S[0].end, S[5].start);
    CHECK_EQ(S[5].end, strlen(b));
}

TEST(atx_details)
{
    const char *b =
        "   ### Indented three  ###   \n"
        "#\tTab title\n"
        "## Closing # not stripped#\n"
        "##   \n"
        "####### seven is text\n"
        "#hashtag is text\n"
        "    # indented four is code\n"
        "###### Six\n"
        "# C# and F#\n";

    CHECK_EQ(outline(b), 6);
    TITLE(b, 0, "Indented three");
    CHECK_EQ(S[0].level, 3);
    CHECK_EQ(S[0].start, 0);
    TITLE(b, 1, "Tab title");
    TITLE(b, 2, "Closing # not stripped#");
    TITLE(b, 3, "");
    TITLE(b, 4, "Six");
    CHECK_EQ(S[4].level, 6);
    TITLE(b, 5, "C# and F#");
}

TEST(code_fences_ignored)
{
    const char *b =
        "# Real\n"
        "```bash\n"
        "# not a heading\n"
        "```not a close\n"
        "## still code\n"
        "```\n"
        "~~~~\n"
        "# code\n"
        "~~~\n"
        "# code too (closing fence too short)\n"
        "~~~~~\n"
        "  ```\n"
        "Heading\n"
        "=======\n"
        "  ```\n"
        "## After\n";

    CHECK_EQ(outline(b), 2);
    TITLE(b, 0, "Real");
    TITLE(b, 1, "After");
    CHECK_EQ(S[1].start, strlen(b) - strlen("## After\n"));
    CHECK_EQ(S[0].end, strlen(b));
}

TEST(unclosed_fence_runs_to_end)
{
    const char *b = "# A\n```\n# B\n";

    CHECK_EQ(outline(b), 1);
    CHECK_EQ(S[0].end, strlen(b));
}

TEST(setext)
{
    const char *b =
        "Top Title\n"
        "=========\n"
        "text\n"
        "\n"
        "Sub Title  \n"
        "---\n"
        "body\n"
        "\n"
        "---\n"
        "after a thematic break\n"
        "Short\n"
        "-\n"
        "- list item\n"
        "---\n"
        "* * *\n"
        "===\n";

    CHECK_EQ(outline(b), 3);
    TITLE(b, 0, "Top Title");
    CHECK_EQ(S[0].level, 1);
    CHECK_EQ(S[0].start, 0);
    TITLE(b, 1, "Sub Title");
    CHECK_EQ(S[1].level, 2);
    CHECK_EQ(S[1].start, strlen("Top Title\n=========\ntext\n\n"));
    CHECK_EQ(S[1].end, S[2].start);
    TITLE(b, 2, "Short");
    CHECK_EQ(S[2].level, 2);
    CHECK_EQ(S[2].start, strlen("Top Title\n=========\ntext\n\nSub Title  \n---\nbody\n\n---\n"
                                "after a thematic break\n"));
    CHECK_EQ(S[0].end, strlen(b));
}

TEST(crlf)
{
    const char *b = "# One\r\ntext\r\n## Two ##\r\nSetext\r\n===\r\nz\r\n";

    CHECK_EQ(outline(b), 3);
    TITLE(b, 0, "One");
    TITLE(b, 1, "Two");
    TITLE(b, 2, "Setext");
    CHECK_EQ(S[1].start, strlen("# One\r\ntext\r\n"));
    CHECK_EQ(S[1].end, S[2].start);
    CHECK_EQ(S[2].start, strlen("# One\r\ntext\r\n## Two ##\r\n"));
}

TEST(empty_and_no_headings)
{
    struct md_section *s = (struct md_section *)&s;

    CHECK_EQ(md_sections("", 0, &s), 0);
    CHECK(s == NULL);
    CHECK_EQ(md_sections(NULL, 0, &s), 0);
    CHECK(s == NULL);
    CHECK_EQ(outline("just text\n\nmore text\n#tag\n"), 0);
    CHECK(S == NULL);
    CHECK_EQ(md_find("", NULL, 0, "x"), -1);
}

TEST(last_line_without_newline)
{
    const char *b = "text\n## Last";

    CHECK_EQ(outline(b), 1);
    TITLE(b, 0, "Last");
    CHECK_EQ(S[0].start, 5);
    CHECK_EQ(S[0].end, strlen(b));

    CHECK_EQ(outline("#"), 1);
    CHECK_EQ(S[0].title_len, 0);
    CHECK_EQ(S[0].end, 1);
}

TEST(length_bounds)
{
    /* only [0, len) is looked at: the heading after len is not seen */
    const char *b = "# A\nxx\n# B\n";
    struct md_section *s = NULL;
    size_t n = md_sections(b, 7, &s);

    CHECK_EQ(n, 1);
    CHECK_EQ(s[0].end, 7);
    free(s);
}

TEST(find)
{
    const char *b =
        "# Overview\n"
        "## Usage\n"
        "## Café Menu\n"
        "## ÉTÉ\n"
        "## usage\n"
        "## Ωmega Дом\n";

    CHECK_EQ(outline(b), 6);
    CHECK_EQ(md_find(b, S, N, "Usage"), 1);
    CHECK_EQ(md_find(b, S, N, "usage"), 1);
    CHECK_EQ(md_find(b, S, N, "USAGE"), 1);
    CHECK_EQ(md_find(b, S, N, "## Usage"), 1);
    CHECK_EQ(md_find(b, S, N, "  ##   usage \t"), 1);
    CHECK_EQ(md_find(b, S, N, "overview"), 0);
    CHECK_EQ(md_find(b, S, N, "# OVERVIEW"), 0);
    CHECK_EQ(md_find(b, S, N, "CAFÉ menu"), 2);
    CHECK_EQ(md_find(b, S, N, "été"), 3);
    CHECK_EQ(md_find(b, S, N, "ωMEGA дОМ"), 5);
    CHECK_EQ(md_find(b, S, N, "Use"), -1);
    CHECK_EQ(md_find(b, S, N, "Usages"), -1);
    CHECK_EQ(md_find(b, S, N, ""), -1);
    CHECK_EQ(md_find(b, S, N, "##"), -1);
    CHECK_EQ(md_find(b, S, N, NULL), -1);
    CHECK_EQ(md_find(b, S, 0, "Usage"), -1);
}

TEST(find_invalid_utf8)
{
    const char *b = "# a\xFF" "b\n# \xC3\n";

    CHECK_EQ(outline(b), 2);
    CHECK_EQ(md_find(b, S, N, "A\xFF" "B"), 0);
    CHECK_EQ(md_find(b, S, N, "\xC3"), 1);
    CHECK_EQ(md_find(b, S, N, "\xC3\xA9"), -1);
}

/* An overlong form or a surrogate is bytes, never the character it would
 * spell: "a\xC0\xAFb" and "a\xE0\x80\xAFb" do not find "a/b". */
TEST(find_overlong_and_surrogates_are_not_characters)
{
    const char *b = "# a/b\n# x\xED\xA0\x80y\n";

    CHECK_EQ(outline(b), 2);
    CHECK_EQ(md_find(b, S, N, "a/b"), 0);
    CHECK_EQ(md_find(b, S, N, "a\xC0\xAF" "b"), -1);
    CHECK_EQ(md_find(b, S, N, "a\xE0\x80\xAF" "b"), -1);
    CHECK_EQ(md_find(b, S, N, "a\xF0\x80\x80\xAF" "b"), -1);
    CHECK_EQ(md_find(b, S, N, "x\xED\xA0\x80y"), 1);     /* the same bytes still match */
    CHECK_EQ(md_find(b, S, N, "X\xED\xA0\x80Y"), 1);
}

TEST(many_headings)
{
    size_t n = 5000, i, len = 0;
    char *b = malloc(n * 8 + 1);

    CHECK(b != NULL);
    for (i = 0; i < n; i++) {
        memcpy(b + len, i % 3 ? "### x\n" : "# y\n", i % 3 ? 6 : 4);
        len += i % 3 ? 6 : 4;
    }
    b[len] = '\0';
    CHECK_EQ(outline(b), n);
    for (i = 0; i < n; i++)
        CHECK(S[i].end <= len && S[i].end > S[i].start);
    CHECK_EQ(S[0].end, S[3].start);
    free(b);
}

int main(void)
{
    RUN(nested_sections);
    RUN(atx_details);
    RUN(code_fences_ignored);
    RUN(unclosed_fence_runs_to_end);
    RUN(setext);
    RUN(crlf);
    RUN(empty_and_no_headings);
    RUN(last_line_without_newline);
    RUN(length_bounds);
    RUN(find);
    RUN(find_invalid_utf8);
    RUN(find_overlong_and_surrogates_are_not_characters);
    RUN(many_headings);
    free(S);
    DONE();
}
