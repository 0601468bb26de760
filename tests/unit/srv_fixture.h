/*
 * srv_fixture.h - a temporary skill tree and a server state over it, shared
 * by the tests that drive the protocol and tool layers without HTTP
 * (test_rpc.c, test_tools.c). Define FIXTURE_NAME before including it.
 */
#ifndef SKILL_SRV_FIXTURE_H
#define SKILL_SRV_FIXTURE_H

#include <stdint.h>

#include "tmptree.h"

static char base[64];
static char root[128];

static void mkpath(const char *rel)
{
    tt_mkdirs(base, rel);
}

static void put(const char *rel, const char *data, size_t len)
{
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char up[256];
        snprintf(up, sizeof up, "%.*s", (int)(slash - rel), rel);
        mkpath(up);
    }
    tt_put(base, rel, data, len);
}

static void puts_(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static void skill_md(const char *qname, const char *name, const char *desc, const char *extra,
                     const char *body)
{
    char rel[256], text[4096];
    snprintf(rel, sizeof rel, "skills/%s/SKILL.md", qname);
    snprintf(text, sizeof text, "---\nname: %s\ndescription: %s\n%s---\n%s", name, desc,
             extra ? extra : "", body);
    puts_(rel, text);
}

static void rm_tree(const char *p)
{
    tt_rm_rf(p);
}

#define X_BODY                                                                             \
    "# X\n\nIntro text.\n\n## Usage\n\nUse it like this.\n\n### Details\n\nMore detail.\n\n" \
    "## Other\n\nThe end.\n"

static void make_tree(void)
{
    tt_mkdtemp(base, sizeof base, FIXTURE_NAME);
    snprintf(root, sizeof root, "%s/skills", base);
    mkpath("skills");
    skill_md("x", "x", "The x skill, for testing", "tags: [alpha, Beta]\nversion: \"1.0.0\"\n",
             X_BODY);
    puts_("skills/x/references/a.md", "# A\nhello\n");
    put("skills/x/assets/b.bin", "\x00\xff", 2);
    /* "ab" + EURO SIGN (3 bytes) + "cd" + GRINNING FACE (4 bytes) */
    puts_("skills/x/utf8.txt", "ab\xe2\x82\xac" "cd\xf0\x9f\x98\x80");
    puts_("skills/x/scripts/run.py", "print('hi')\n");
    puts_("outside.txt", "secret outside the skills\n");
    tt_link(base, "../../outside.txt", "skills/x/escape");
    skill_md("y", "y", "The y skill", NULL, "# Y\n\nBody of y.\n");
    skill_md("csv-profile", "csv-profile", "\"Profile a CSV file: columns, types, null counts\"",
             "tags: [data, csv]\n", "# CSV profile\n\n## Usage\n\nRun it.\n");
    skill_md("pdf", "pdf",
             "Extract text and tables from PDF documents, fill forms, merge and split files",
             "tags: [office, documents]\n", "# PDF\n");
    skill_md("text-stats", "text-stats", "Count words, sentences and reading time of a text",
             "tags: [text, writing]\n", "# Text stats\n");
    skill_md("acme/billing", "billing", "Create and send invoices for the acme team",
             "tags: [finance]\n", "# Billing\n\n## Invoices\n\nSend them.\n");
    puts_("skills/acme/billing/references/a.md", "billing reference\n");
    skill_md("acme/reports", "reports", "Weekly reports for acme", NULL, "# Acme reports\n");
    skill_md("beta/reports", "reports", "Monthly reports for beta", NULL, "# Beta reports\n");
}

static struct srv S;
static char *fake_argv[8];

/* The server over the tree, with up to 4 more flags (NULL-terminated). */
static void server_up_with(const char *const *extra)
{
    int argc = 0;
    fake_argv[argc++] = "skill-mcp";
    fake_argv[argc++] = "--skills";
    fake_argv[argc++] = root;
    fake_argv[argc++] = "--no-scripts";  /* the read tools alone; scripts have their own tests */
    for (; extra && *extra && argc < 8; extra++)
        fake_argv[argc++] = (char *)(uintptr_t)*extra;
    memset(&S, 0, sizeof S);
    if (cfg_parse(&S.cfg, argc, fake_argv) != 0)
        exit(2);
    size_t n;
    const char *const *names = tools_names(&n);
    stats_init(&S.stats, names, n);
    S.instructions = "Test instructions.";
    S.ttl_ms = 5000;
    tools_setup(&S);
    S.skills = skills_new(S.cfg.roots, S.cfg.nroots, S.cfg.hooks_dir, tools_ext_build, tools_ext_free, &S);
    if (!S.skills)
        exit(2);
}

static void server_up(void)
{
    server_up_with(NULL);
}

static void server_down(void)
{
    skills_free(S.skills);
    tools_cleanup(&S);
    stats_cleanup(&S.stats);
    memset(&S, 0, sizeof S);
}

#endif
