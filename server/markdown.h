/*
 * markdown.h - the outline of a Markdown body: its ATX headings and the byte
 * range of each section, so load_skill can return one section.
 *
 * Bytes in, offsets out; no I/O. Headings inside fenced code blocks (``` or
 * ~~~) are not headings. Setext headings (underlined with === or ---) are
 * recognised too.
 */
#ifndef SKILL_MARKDOWN_H
#define SKILL_MARKDOWN_H

#include <stddef.h>

struct md_section {
    int level;          /* 1..6 */
    size_t title_off;   /* heading text, trimmed, without the #s */
    size_t title_len;
    size_t start;       /* first byte of the heading line */
    size_t end;         /* one past the last byte of the section: the next
                           heading of the same or a higher level, or EOF */
};

/*
 * Fills *out with a malloc'd array of the body's sections in document order
 * (free() it); returns the count (0 with *out = NULL when there is none).
 */
size_t md_sections(const char *body, size_t len, struct md_section **out);

/*
 * Index of the section whose title equals name, case-insensitively (ASCII and
 * UTF-8 Latin letters folded; surrounding whitespace and a leading run of
 * '#' in name ignored); -1 if none. The first match in document order wins.
 */
long md_find(const char *body, const struct md_section *s, size_t n, const char *name);

#endif
