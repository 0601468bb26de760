/*
 * script.h - what run_skill_script needs around the runner: interpreters
 * resolved once at start-up, the clean environment, the script path jail,
 * the timeout policy, and the result a model reads.
 *
 * Bytes and policy only: spawning is runner.c's business.
 */
#ifndef SKILL_SCRIPT_H
#define SKILL_SCRIPT_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "runner.h"
#include "skills.h"

struct err;

struct scripts;

/* Resolves interpreters (logging each) and the base environment. */
struct scripts *script_setup(const struct cfg *c);
void script_free(struct scripts *sc);

/*
 * The bytes of output one result can carry (shape_budget_bytes of the
 * per-copy budget), which scripts see as SKILL_OUTPUT_BUDGET_BYTES when it
 * is below --max-output-bytes. 0 (the default): --max-output-bytes.
 */
void script_set_output_budget(struct scripts *sc, size_t bytes);

/*
 * Validates a run_skill_script call against skill k and builds the job
 * (not started). Returns the job, or NULL with *e telling the model what
 * was wrong. Any thread.
 */
struct run_job *script_prepare(const struct scripts *sc, const struct cfg *c,
                               const struct skill *k, json_t *args, struct err *e);

/*
 * A job running hook `path` (absolute) with `input` on stdin, in folder cwd,
 * for a call on skill (its folder skill_dir) with request_id; kind ("skill
 * pre", ...) is in SKILL_HOOK. NULL with *e when the hook's type has no
 * interpreter. Any thread.
 */
struct run_job *script_hook_job(const struct scripts *sc, const struct cfg *c, const char *path,
                                const char *cwd, const char *input, size_t input_len,
                                const char *skill, const char *skill_dir,
                                const char *request_id, const char *kind, struct err *e);

/* Checks a variable name a caller or a pre hook wants to set; NULL if fine. */
const char *script_env_problem(const char *name);

/* Adds or replaces NAME=value in a job's environment (name already checked). */
void script_job_setenv(struct run_job *j, const char *name, const char *value);

/* The structured result of a finished job. New reference. */
json_t *script_result(const struct run_job *j, int max_live, double queue_timeout_s);

/* The execution: entry for a script path, falling back to nothing. Borrowed. */
json_t *script_exec_entry(const struct skill *k, const char *path);

/* 1 when the skill's frontmatter asks for the network (execution.network). */
int script_wants_network(const struct skill *k);

/* UTF-8 with every invalid sequence replaced by U+FFFD; *changed says if any was. */
char *script_utf8_repair(const char *s, size_t n, size_t *outlen, int *changed);

#endif
