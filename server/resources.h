/*
 * resources.h - resources/list, resources/templates/list and
 * resources/read of skill:// URIs and their aliases.
 */
#ifndef SKILL_RESOURCES_H
#define SKILL_RESOURCES_H

#include <stddef.h>

struct call;
struct skill;

int res_list(struct call *c);
int res_templates(struct call *c);
int res_read(struct call *c);
/* resources/subscribe (on) and resources/unsubscribe of a --stateful
 * session: the URI must name a served skill or one of its files. */
int res_subscribe(struct call *c, int on);
/* subscriptions/listen (2026-07-28): sets c->listen to the honored subset
 * of params.notifications (the transport opens the stream) and the result
 * that ends it. */
int res_listen(struct call *c);
/* Offset cursor of a paginated list (params.cursor); -1 after an error. */
int res_offset_cursor(struct call *c, size_t *off);
/* MIME type by file extension; for an unknown one text/plain (text > 0),
 * application/octet-stream (text == 0) or NULL (text < 0). */
const char *res_mime_of(const char *path, int text);
/*
 * Resolves uri (which starts with "skill://") to its skill and the
 * percent-decoded path inside it ("" for the skill itself; not yet
 * jail-checked). *owned backs *path: free it. Returns 0, -1 after a
 * -32602 "Resource not found" error on c, or -2 after a -32602 error that
 * the skill exists but is quarantined (the message names the approving
 * command).
 */
int res_locate(struct call *c, const char *uri, struct skill **k, const char **path,
               char **owned);

#endif
