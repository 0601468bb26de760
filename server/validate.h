/*
 * validate.h - `skill-mcp validate DIR...` (lint skills against the spec and
 * the Agent Skills rules) and `skill-mcp list DIR...` (what discovery finds),
 * both without starting the server.
 *
 * validate walks each DIR as discovery does (DIR/skill/SKILL.md and one team
 * level, DIR/team/skill/SKILL.md; dotfiles, __pycache__ and node_modules
 * skipped) and reports findings, each
 *
 *   {"severity": "error"|"warning", "rule": "name-rules", "skill": "team/x",
 *    "file": "DIR/team/x/SKILL.md", "line": 2 or null, "message": "...",
 *    "hint": "..."}
 *
 * The rule ids are listed in docs/writing-skills.md ("Checking skills").
 * Script suffixes with an interpreter are the server's default map (.py,
 * .sh, .js), hard-coded here; --interpreter EXT=PATH adds one, as it does
 * for the server.
 *
 * Ownership: every json_t returned is a new reference.
 */
#ifndef SKILL_VALIDATE_H
#define SKILL_VALIDATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Lints every skill under roots[0..n). exts (may be NULL) are extra script
 * suffixes (".rb"). *nskills (may be NULL) gets the number of skills
 * checked. Returns the array of findings, in walk order.
 */
json_t *validate_roots(const char *const *roots, size_t n, const char *const *exts,
                       size_t nexts, size_t *nskills);

/* {"roots": R, "skills": N, "errors": E, "warnings": W, "ok": E == 0} */
json_t *validate_summary(const json_t *findings, size_t nroots, size_t nskills);

/*
 * The discovery view of roots[0..n): {"skills": [{qualified_name, name,
 * root, path, flags: [...], reason?, frontmatter_name?}], "summary": {...}}.
 * Flags: "shadowed", "broken", "symlink", "name-differs". NULL (after a
 * message on err) when no root is a readable directory.
 */
json_t *validate_list(const char *const *roots, size_t n);

#endif
