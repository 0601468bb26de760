/*
 * fuzz_uri.c - libFuzzer target for the skill:// URI and path resolver:
 * resources/read and read_skill_file (resources.c, tools.c) over the whole
 * request path, and the jail underneath (jail.c: jail_check, jail_read).
 * The skill tree holds symlinks that leave the skill (relative, absolute,
 * into a sibling skill) and a secret file beside the root; no answer may
 * ever carry the secret, and every answer must be valid JSON.
 *
 * Input: the bytes after skill:// (and, as they are, the path given to
 * read_skill_file and to the jail).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail.h"
#include "call.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Starts with a letter that no JSON escape ends with (not a hex digit, not
 * one of b f n r t u): an input holding all of the secret but its first
 * letter, after a control byte, would otherwise come back as
 * "\u000F" + "UZZ-..." and read as a leak. */
#define SECRET "SKILL-FUZZ-SECRET-d41d8cd98f00"

static struct srv S;
static char alpha[128];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char top[64] = "/tmp/skill-fuzz-uri-XXXXXX";
    static char root[128];
    static char *fake[4];
    char p[256], q[256];
    if (!mkdtemp(top))
        abort();
    snprintf(p, sizeof p, "%s/secret.txt", top);
    put(p, SECRET "\n");
    snprintf(root, sizeof root, "%s/skills", top);
    mkdir(root, 0755);
    snprintf(alpha, sizeof alpha, "%s/alpha", root);
    mkdir(alpha, 0755);
    snprintf(p, sizeof p, "%s/references", alpha);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/SKILL.md", alpha);
    put(p, "---\nname: alpha\ndescription: First skill\n---\n# Alpha\n## Usage\ntext\n");
    snprintf(p, sizeof p, "%s/references/r.md", alpha);
    put(p, "# Ref\nreference text\n");
    snprintf(p, sizeof p, "%s/references/up", alpha);
    if (symlink("../../../secret.txt", p) < 0)
        abort();
    snprintf(p, sizeof p, "%s/references/abs", alpha);
    snprintf(q, sizeof q, "%s/secret.txt", top);
    if (symlink(q, p) < 0)
        abort();
    snprintf(p, sizeof p, "%s/references/dir", alpha);
    if (symlink(top, p) < 0)
        abort();
    snprintf(p, sizeof p, "%s/team", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/team/beta", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/team/beta/SKILL.md", root);
    put(p, "---\nname: beta\ndescription: Nested\n---\n# Beta\n");
    snprintf(p, sizeof p, "%s/team/beta/peek", root);
    if (symlink("../../alpha/SKILL.md", p) < 0)
        abort();
    fake[0] = "skill-mcp";
    fake[1] = "--skills";
    fake[2] = root;
    fake[3] = "--no-scripts";
    x_install_json_alloc();
    log_set_level(LOG_ERROR);
    if (cfg_parse(&S.cfg, 4, fake) != 0)
        abort();
    size_t n;
    const char *const *names = tools_names(&n);
    stats_init(&S.stats, names, n);
    S.instructions = "fuzz";
    S.ttl_ms = 1000;
    tools_setup(&S);
    S.skills = skills_new(S.cfg.roots, S.cfg.nroots, NULL, tools_ext_build, tools_ext_free, &S);
    if (!S.skills)
        abort();
    (void)argc;
    (void)argv;
    return 0;
}

/* echo: the input itself holds the secret's text, which an error message
 * may quote back; only a secret the input did not bring counts. */
static void ask(json_t *req, int echo)
{
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body)
        return;
    struct rpc_headers h = {0};
    struct call *c = call_new(&S);
    rpc_handle(c, body, strlen(body), &h);
    struct { char *body; size_t len; } out = {c->body, c->len};
    free(body);
    if (out.body) {
        json_t *j = json_loadb(out.body, out.len, 0, NULL);
        if (!j)
            abort();
        json_decref(j);
        if (!echo && memmem(out.body, out.len, SECRET, strlen(SECRET)))
            abort();
    }
    call_unref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    int echo = memmem(in, size, SECRET, strlen(SECRET)) != NULL;
    /* the jail on its own: text checks, then the kernel's resolution */
    const char *why = NULL;
    if (!jail_check(in, size) && !memchr(in, '\0', size)) {
        char *rel = xstrndup(in, size);
        struct jail_file f = {0};
        if (jail_read(alpha, rel, 4096, &f, &why) == 0) {
            if (memmem(f.data, f.len, SECRET, strlen(SECRET)))
                abort();
            jail_file_cleanup(&f);
        }
        free(rel);
    }
    /* the request path: jansson refuses invalid UTF-8, as the HTTP layer does */
    if (!utf8_valid(in, size))
        return 0;
    char *uri = xmalloc(size + 9);
    memcpy(uri, "skill://", 8);
    memcpy(uri + 8, in, size);
    uri[size + 8] = '\0';
    ask(json_pack("{s:s, s:i, s:s, s:{s:s%}}", "jsonrpc", "2.0", "id", 1, "method",
                  "resources/read", "params", "uri", uri, size + 8), echo);
    ask(json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:s%}}}", "jsonrpc", "2.0", "id", 2, "method",
                  "tools/call", "params", "name", "read_skill_file", "arguments", "name",
                  (data[0] & 1) ? "team/beta" : "alpha", "path", in, size), echo);
    free(uri);
    return 0;
}
