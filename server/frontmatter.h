/*
 * frontmatter.h - split a SKILL.md into YAML frontmatter and body, and parse
 * the frontmatter with libyaml into JSON.
 *
 * Bytes in, JSON out: this module does no file I/O. The caller reads a prefix
 * of the file (16 KiB first, up to 256 KiB if the fence is not closed) and
 * says whether that prefix is the whole file.
 *
 * Plain scalars are typed by the YAML 1.2 core schema (what Skills-extension
 * hosts re-parse with): null/Null/NULL/~/empty -> null; true/True/TRUE/
 * false/False/FALSE -> boolean (yes/no/on/off stay strings, as in 1.2);
 * decimal, 0o octal and 0x hex integers -> integer (a decimal too big for
 * 64 bits becomes a real, hex/octal stay strings); floats -> real, except
 * .inf/.nan and overflowing ones, which stay the original string (JSON has
 * no such numbers). So `version: 1.0` is the real 1.0 and `version: 1.2.0`
 * a string: quote a value to keep it text. Quoted and block (| >) scalars
 * are always strings. Standard tags !!str !!int !!float !!bool !!null !!map
 * !!seq are honoured; anchors, aliases, merge keys (<<), other tags,
 * non-scalar keys, duplicate keys, more than one document and nesting
 * deeper than 64 are refused (alias bombs cannot happen).
 */
#ifndef SKILL_FRONTMATTER_H
#define SKILL_FRONTMATTER_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

struct fm {
    json_t *fields;     /* new reference: a JSON object, the whole frontmatter */
    size_t body_off;    /* offset in the input of the first byte of the body */
    size_t fm_off;      /* offset of the first byte of YAML text (after fence) */
    size_t fm_len;      /* length of the YAML text between the fences */
    int fast;           /* 1 when the fast path read it (tests, profiling) */
};

/*
 * Parse buf[0..len). A leading UTF-8 BOM is skipped; CRLF and LF line ends are
 * both accepted. The opening fence is a first line of exactly "---"
 * (trailing spaces allowed); the closing fence is a later line "---" (or
 * "...").
 *
 * complete: non-zero when buf holds the whole file.
 * Returns 0 and fills *out (release with fm_cleanup), or:
 *   -EAGAIN  no closing fence within buf and !complete (read more)
 *   -EINVAL  anything else wrong; *err says what and where (line/col
 *            relative to the file, 1-based). *out is left empty.
 * Thread-safe; the caller keeps ownership of buf.
 */
int fm_parse(const char *buf, size_t len, int complete, struct fm *out, struct err *err);
void fm_cleanup(struct fm *f);

/*
 * Test hook: fm_set_fast(0) makes every later fm_parse use libyaml alone, so
 * tests can compare the fast path of flat frontmatter with it; on by
 * default. Not for use while other threads parse.
 */
void fm_set_fast(int on);

#endif
