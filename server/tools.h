/*
 * tools.h - the tool table: name, description, schemas, annotations and
 * handler of every MCP tool, and the tools/call entry point.
 *
 * A handler gets the request's snapshot and its arguments and returns either
 * a structured result or a message for the model (isError). Protocol errors
 * (unknown tool) are the caller's business (mcp.c).
 */
#ifndef SKILL_TOOLS_H
#define SKILL_TOOLS_H

#include <jansson.h>

#include "hooks.h"
#include "runner.h"
#include "skills.h"
#include "srv.h"

struct call;

/* Names of the tools, in table order (for stats); *n gets the count. */
const char *const *tools_names(size_t *n);

/* New reference: the "tools" array of tools/list (run_skill_script only
 * when scripts is non-zero). */
json_t *tools_list_json(int scripts);

/*
 * Fills S->tools_list and the rendered tools/list results (S->ttl_ms must be
 * set). Call once at start-up; tools_cleanup() releases them.
 */
void tools_setup(struct srv *S);
void tools_cleanup(struct srv *S);

/*
 * Runs tool `name` with `args` (an object or NULL) for call c (its era,
 * client, clientInfo and snapshot) and sets c's outcome: the CallToolResult
 * as bytes (rendered now, or ahead: the default list_skills page, a whole
 * load_skill body, borrowed while the snapshot is held), or for
 * run_skill_script a pending run (CALL_RUN), whose answer is rendered by
 * tools_render_run() when it ends. Returns 0, or -1 when no such tool
 * exists.
 */
int tools_call(struct call *c, const char *name, json_t *args);

/* The CallToolResult bytes (malloc'd) of a finished run_skill_script
 * (steals result); records its stats. */
char *tools_render_run(struct srv *S, json_t *result, int ok, double ms, int modern,
                       size_t *len);

/*
 * How many bytes of description d (n bytes) a list_skills card keeps when
 * its description may take cap tokens (0: all of it), cut at a sentence,
 * clause or word boundary; *marker is set when the card adds "…" after
 * them (docs/shaping.md, "The catalogue").
 */
size_t tools_desc_cut(const char *d, size_t n, size_t cap, int *marker);

/*
 * At most the tokens of k's list_skills card at a tier, read without
 * rendering it, or 0: at tiers 0 and 1 (both hold the whole description)
 * the tokens of the description alone when the card holds it as is (UTF-8
 * that JSON does not escape); at the cut tiers those of the card's name,
 * cut description and punctuation added up, where no run of the estimate
 * can cross their quotes.
 */
struct skill;
size_t tools_card_floor(const struct skill *k, int tier);

/*
 * Works out, once, the tokens and characters of k's list_skills card at
 * every tier and the description bytes each cut tier keeps (k->card_tokens,
 * k->card_chars, k->card_keep), so that a page chooses each card's tier from counts and renders only the
 * card it shows, once. The body indexer calls it for every entry; a page
 * whose entries have no counts yet sizes cards by rendering them. Safe
 * while requests read k; a no-op once done, or for a card too large for
 * the 16-bit counts.
 */
void tools_card_sizes(struct skill *k);

/* Snapshot hooks: pre-render the default list_skills result. */
struct snapshot_ext *tools_ext_build(const struct snapshot *s, void *srv);
void tools_ext_free(struct snapshot_ext *e);

#endif
