/*
 * redact.h - secrets taken out of what reaches the model.
 *
 * Script stdout and stderr, what hooks put in a result, and the text of
 * read_skill_file pass through here before they are shaped: every match of
 * a pattern (built-in credentials, and those of --redact FILE) and every
 * value the server itself put in the script's environment is replaced by
 * [REDACTED:<name>]. The rules are in docs/security.md, "Redaction".
 *
 * A set of patterns is compiled once (JIT) and a text is scanned once, left
 * to right, all patterns together: the leftmost match is replaced first.
 * Sets are immutable; redact_reload swaps in a new one (readers never lock).
 */
#ifndef SKILL_REDACT_H
#define SKILL_REDACT_H

#include <jansson.h>
#include <stddef.h>

#define REDACT_NAME_MAX 64          /* a pattern name: [A-Za-z0-9_.-]{1,64} */
#define REDACT_MAX_PATTERNS 200
#define REDACT_ENV_MIN 8            /* shorter environment values are not redacted */
#define REDACT_META "skill-mcp/redacted"    /* result _meta key: {name: count} */

struct err;
struct redact_set;
struct redact;
struct redact_env;
struct stats;

/*
 * Parses a redaction file's text (name, then tabs or spaces, then a PCRE2
 * pattern, per line; blank lines and '#' comments skipped) and compiles it,
 * after the built-in patterns when builtins is set. file names the text in
 * messages. NULL on error, with "file:line: what" in *err. text may be NULL
 * (no file).
 */
struct redact_set *redact_set_parse(const char *text, size_t n, const char *file, int builtins,
                                    struct err *err);
void redact_set_free(struct redact_set *s);
/* The i-th built-in pattern's source and name, or NULL past the last. */
const char *redact_builtin(size_t i, const char **name);
size_t redact_set_count(const struct redact_set *s);
const char *redact_set_name(const struct redact_set *s, size_t i);

/*
 * The environment values a run was given on purpose: those of names (an
 * array of strings: the caller's env argument and what pre hooks added),
 * looked up in envp ("NAME=value" strings, NULL-terminated). Values shorter
 * than REDACT_ENV_MIN are left out. NULL when none is left.
 */
struct redact_env *redact_env_new(char *const *envp, json_t *names);
void redact_env_free(struct redact_env *e);

/*
 * Redacts s[0..n): returns a new buffer (NUL-terminated, *outlen set) when
 * anything was replaced, NULL when the text is unchanged. Each replacement
 * adds 1 to counts[name] (counts may be NULL). Text that is JSON or JSON
 * Lines (shape_format_of) stays JSON: a replacement is kept inside the
 * string it starts in, never splits an escape, and a key gets a number
 * (`[REDACTED:name#1]`) so that two keys do not become one; a match that
 * starts outside a string is left alone. s or e may be NULL.
 */
char *redact_text(const struct redact_set *s, const struct redact_env *e, const char *text,
                  size_t n, size_t *outlen, json_t *counts);

/* ---- streaming ------------------------------------------------------------- */

/*
 * Script stderr sent while the script runs (progress and log
 * notifications): bytes are fed as they are read, and only whole lines go
 * out, redacted. A line that could be the start of a match that is not
 * complete yet (a private key block whose END has not come, an environment
 * value with a line break) is held back with what follows it, until the
 * match completes or fails; held text that reaches REDACT_STREAM_HOLD bytes
 * (or a line that long) is redacted and sent as it is.
 */
#define REDACT_STREAM_HOLD (64u << 10)

typedef void (*redact_emit_fn)(const char *text, size_t len, void *arg);
struct redact_stream;

/* r NULL: lines pass unredacted. e may be NULL; it must outlive the stream. */
struct redact_stream *redact_stream_new(struct redact *r, const struct redact_env *e,
                                        struct stats *st, redact_emit_fn emit, void *arg);
/* Emits zero or more chunks of whole lines (each ends in '\n'), redacted. */
void redact_stream_feed(struct redact_stream *rs, const char *p, size_t n);
/* The end of the stream: what is held goes out, redacted. */
void redact_stream_flush(struct redact_stream *rs);
/* The counts of what was replaced so far ({name: count}, borrowed). */
json_t *redact_stream_counts(const struct redact_stream *rs);
void redact_stream_free(struct redact_stream *rs);

/* Adds counts ({name: count}) to those in result's _meta, creating them. */
void redact_meta_add(json_t *result, json_t *counts);

/* ---- the server's instance ------------------------------------------------- */

/* Loads file (NULL: built-ins only); NULL with "file:line: what" in *err. */
struct redact *redact_open(const char *file, int builtins, struct err *err);
/* SIGHUP: reads the file again; 1 swapped in, -1 kept the loaded set (logged). */
int redact_reload(struct redact *r);
void redact_close(struct redact *r);

/*
 * Redacts the string members of obj named in fields (NULL-terminated),
 * records the counts in st (may be NULL) and returns them, a new reference
 * ({name: count}), or NULL when nothing was replaced. r NULL: nothing done.
 */
json_t *redact_members(struct redact *r, const struct redact_env *e, json_t *obj,
                       const char *const *fields, struct stats *st);

/*
 * A skill file's bytes on their way to the model (read_skill_file,
 * resources/read): redacted like script output, before they are encoded,
 * text and binary alike (a binary file where a pattern matched is served
 * altered). Returns a new buffer (NUL-terminated, *outlen set) or NULL when
 * nothing changed; *counts gets the counts (a new reference) or NULL, and
 * st records them (may be NULL). r NULL: nothing done.
 */
char *redact_file(struct redact *r, const char *data, size_t n, size_t *outlen, json_t **counts,
                  struct stats *st);
/* Bytes past a caller's cut that a file read takes in as well, so that the
 * cut, made after redaction, never shows the start of a secret. */
#define REDACT_FILE_LOOKAHEAD (64u << 10)

/*
 * A run_skill_script result (stdout, stderr, hint, note): redacted, and the
 * counts put in its "_meta" member as {REDACT_META: counts}, which the
 * renderer moves to the CallToolResult's _meta. Any other "_meta" is
 * dropped.
 */
void redact_run_result(struct redact *r, const struct redact_env *e, json_t *result,
                       struct stats *st);

#endif
