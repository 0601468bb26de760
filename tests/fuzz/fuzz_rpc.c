/*
 * fuzz_rpc.c - libFuzzer target for everything a POST body reaches without
 * running a script: the JSON-RPC envelope and both protocol eras (rpc.c),
 * the MCP methods (mcp.c), tool arguments (tools.c), skill:// URIs
 * (resources.c) and the Skills extension methods (skillsext.c). The server
 * state is built once over a small skill tree; scripts are off.
 *
 * Each input goes through twice: as rpc_handle takes it (the view of the
 * common shapes when it reads the body), and with every body left to a
 * tree (rpc_view_off). Both must answer the same bytes and keep the same
 * fields for the logs.
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
#include "call.h"
#include "rpc.h"
#include "skills.h"
#include "srv.h"
#include "stats.h"
#include "tools.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct srv S;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char root[64] = "/tmp/skill-fuzz-rpc-XXXXXX";
    if (!mkdtemp(root))
        abort();
    fz_mkdir(root, "alpha");
    fz_mkdir(root, "alpha/references");
    fz_put(root, "alpha/SKILL.md",
           "---\nname: alpha\ndescription: First skill for fuzzing\ntags: [a, b]\n---\n"
           "# Alpha\n## Usage\ntext\n### Deep\nmore\n");
    fz_put(root, "alpha/references/r.md", "# Ref\nreference text\n");
    fz_mkdir(root, "team");
    fz_mkdir(root, "team/beta");
    fz_put(root, "team/beta/SKILL.md", "---\nname: beta\ndescription: Nested\n---\n# Beta\n");
    fz_server_up(&S, root);
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Half the inputs also carry modern headers, so the 2026-07-28 path is
     * reached with matching and mismatching values alike. Chosen by length:
     * every JSON body starts with the same byte, so a choice by the first
     * byte sent every request down the mismatch path. */
    struct rpc_headers h = {0};
    if (size & 1) {
        h.protocol_version = "2026-07-28";
        h.method = "tools/call";
        h.name = "load_skill";
    }
    struct call *c = call_new(&S);
    rpc_handle(c, (const char *)data, size, &h);
    struct { const char *body; size_t len; } out;
    out.body = call_body(c, &out.len);
    if (out.body) {
        /* every answer must be valid JSON; "\u0000" is (an id may carry
         * one, and the answer echoes the id) */
        json_t *j = json_loadb(out.body, out.len, JSON_ALLOW_NUL, NULL);
        if (!j)
            abort();
        json_decref(j);
    }
    if (rpc_view_takes((const char *)data, size)) {
        rpc_view_off = 1;
        struct call *t = call_new(&S);
        rpc_handle(t, (const char *)data, size, &h);
        rpc_view_off = 0;
        size_t tlen;
        const char *tb = call_body(t, &tlen);
        if (call_kind(t) != call_kind(c) || t->method != c->method || strcmp(t->tool, c->tool) ||
            strcmp(t->skill, c->skill) || !tb != !out.body ||
            (tb && (tlen != out.len || memcmp(tb, out.body, tlen))))
            abort();
        call_unref(t);
    }
    call_unref(c);
    return 0;
}
