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

#define FZ_WITH_SERVER
#include "fuzz_common.h"
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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char top[64] = "/tmp/skill-fuzz-uri-XXXXXX";
    static char root[128];
    char q[256];
    if (!mkdtemp(top))
        abort();
    fz_put(top, "secret.txt", SECRET "\n");
    snprintf(root, sizeof root, "%s/skills", top);
    fz_mkdir(top, "skills");
    snprintf(alpha, sizeof alpha, "%s/alpha", root);
    fz_mkdir(root, "alpha");
    fz_mkdir(alpha, "references");
    fz_put(alpha, "SKILL.md", "---\nname: alpha\ndescription: First skill\n---\n# Alpha\n## Usage\ntext\n");
    fz_put(alpha, "references/r.md", "# Ref\nreference text\n");
    fz_link(alpha, "../../../secret.txt", "references/up");
    snprintf(q, sizeof q, "%s/secret.txt", top);
    fz_link(alpha, q, "references/abs");
    fz_link(alpha, top, "references/dir");
    fz_mkdir(root, "team");
    fz_mkdir(root, "team/beta");
    fz_put(root, "team/beta/SKILL.md", "---\nname: beta\ndescription: Nested\n---\n# Beta\n");
    fz_link(root, "../../alpha/SKILL.md", "team/beta/peek");
    fz_server_up(&S, root);
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
    struct { const char *body; size_t len; } out;
    out.body = call_body(c, &out.len);
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
    struct err why = {0};
    if (!jail_check(in, size) && !memchr(in, '\0', size)) {
        char *rel = xstrndup(in, size);
        struct jail_file f = {0};
        if (jail_read(alpha, rel, 4096, &f, &why) == 0) {
            if (memmem(f.data, f.len, SECRET, strlen(SECRET)))
                abort();
            jail_file_cleanup(&f);
        } else if (!why.msg[0]) {
            abort();    /* a refusal always says why */
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
