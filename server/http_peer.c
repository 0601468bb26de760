/*
 * http_peer.c - who may call: the Host/Origin checks (DNS rebinding) and
 * CORS for --allowed-origins (the headers of every answer, preflights).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "http_int.h"

/* --allowed-origins: the origins that get CORS headers. Set once at start. */
const char *http_cors_origins;

/* "host[:port]" or "[v6]:port" -> host, lowercased, brackets kept for v6. */
void http_host_part(const char *in, char *out, size_t cap)
{
    size_t n;
    if (in[0] == '[') {
        const char *close = strchr(in, ']');
        n = close ? (size_t)(close - in + 1) : strlen(in);
    } else {
        const char *colon = strchr(in, ':');
        n = colon ? (size_t)(colon - in) : strlen(in);
        /* whitespace after a value is not part of it (RFC 9110, 5.5), and
         * libmicrohttpd strips only the leading */
        while (n && (in[n - 1] == ' ' || in[n - 1] == '\t'))
            n--;
    }
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)((in[i] >= 'A' && in[i] <= 'Z') ? in[i] + 32 : in[i]);
    out[n] = '\0';
}

/*
 * Is a exactly host [":" port]? That is all a Host header holds, and all an
 * Origin holds after its "://" (RFC 6454 serializes no userinfo and no
 * path). Anything more ("localhost:80@evil.example", "[::1].evil.example",
 * a path) is not a name the checks below can judge: http_host_part would
 * read the first part alone.
 */
static int authority_ok(const char *a)
{
    const char *p = a;
    if (*p == '[') {
        size_t n = strspn(p + 1, "0123456789abcdefABCDEF:.");
        if (p[1 + n] != ']')
            return 0;
        p += n + 2;
    } else {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~");
        if (!n)
            return 0;
        p += n;
    }
    if (*p == ':') {
        size_t d = strspn(p + 1, "0123456789");
        if (d > 5)
            return 0;
        p += 1 + d;
    }
    p += strspn(p, " \t");
    return *p == '\0';
}

/* An origin's scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986),
 * from o up to sep (its "://"). */
static int scheme_ok(const char *o, const char *sep)
{
    if (sep == o || !((*o | 32) >= 'a' && (*o | 32) <= 'z'))
        return 0;
    for (const char *q = o + 1; q < sep; q++)
        if (!(((*q | 32) >= 'a' && (*q | 32) <= 'z') || (*q >= '0' && *q <= '9') || *q == '+' ||
              *q == '-' || *q == '.'))
            return 0;
    return 1;
}

static int loopback_name(const char *h)
{
    /* the Host of nearly every request, answered without inet_pton */
    if (!strcmp(h, "127.0.0.1") || !strcmp(h, "localhost"))
        return 1;
    return cfg_is_loopback(h);
}

/* Is item in the comma-separated list (or the list "*")? */
static int in_list(const char *list, const char *item)
{
    if (!list)
        return 0;
    if (!strcmp(list, "*"))
        return 1;
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        size_t l2 = len;
        while (l2 && p[l2 - 1] == ' ')
            l2--;
        if (l2 == n && !strncasecmp(p, item, n))
            return 1;
        p += len;
    }
    return 0;
}

/* Calls fn for each entry of the comma-separated list, trimmed. */
static void each_entry(const char *list, void (*fn)(const char *e, size_t n))
{
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ","), n = len;
        while (n && p[n - 1] == ' ')
            n--;
        if (n)
            fn(p, n);
        p += len;
    }
}

/* Entries are compared with the Host's name alone (no port, brackets kept
 * for IPv6). */
static void host_entry(const char *e, size_t n)
{
    const char *why = NULL;
    if (n == 1 && *e == '*')
        return;
    if (e[0] == '[' ? e[n - 1] != ']' : memchr(e, ':', n) != NULL)
        why = e[0] != '[' && memchr(e, ':', n) != memrchr(e, ':', n)
                  ? "an IPv6 address is matched in brackets, e.g. [::1]"
                  : "entries name a host without its port";
    else if (memchr(e, '/', n) || memchr(e, '@', n))
        why = "entries name a host, not a URL";
    if (why)
        log_warn("--allowed-hosts entry '%.*s' can never match a Host header: %s", (int)n, e, why);
}

/* Entries are compared with the whole Origin, as browsers send it:
 * scheme://host[:port], no path. */
static void origin_entry(const char *e, size_t n)
{
    if ((n == 1 && *e == '*') || (n == 4 && !strncasecmp(e, "null", 4)))
        return;
    const char *sep = memmem(e, n, "://", 3);
    const char *why = !sep ? "an origin is scheme://host[:port], e.g. https://chat.example.com"
                      : memchr(sep + 3, '/', n - (size_t)(sep + 3 - e))
                          ? "an origin has no path, not even a trailing '/'"
                          : NULL;
    if (why)
        log_warn("--allowed-origins entry '%.*s' can never match an Origin header: %s", (int)n, e,
                 why);
}

void http_warn_peer_lists(const struct cfg *c)
{
    each_entry(c->allowed_hosts, host_entry);
    each_entry(c->allowed_origins, origin_entry);
}

/* A request with two Host headers is malformed (RFC 9112 section 3.2: 400),
 * and with two of either the check would judge one while a proxy or an
 * application behind it may read the other. */
static const char two_hosts[] = "Bad Request: more than one Host header";
static const char two_origins[] = "Bad Request: more than one Origin header";

unsigned http_peer_status(const char *why)
{
    return why == two_hosts || why == two_origins ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_FORBIDDEN;
}

/* DNS-rebinding defence: Host must name this server, Origin must be ours. */
const char *http_check_peer(struct http *h, struct MHD_Connection *con)
{
    struct req_headers hd = {0};
    MHD_get_connection_values_n(con, MHD_HEADER_KIND, http_pick_header, &hd);
    return http_check_peer_of(h, &hd);
}

const char *http_check_peer_of(struct http *h, const struct req_headers *hd)
{
    const struct cfg *c = &h->S->cfg;
    const char *host = hd->host, *origin = hd->origin;
    char name[256];
    if (hd->hosts > 1)
        return two_hosts;
    if (hd->origins > 1)
        return two_origins;
    if (h->loopback && !in_list(c->allowed_hosts, "*")) {
        if (!host)
            return "Forbidden: missing Host header";
        http_host_part(host, name, sizeof name);
        if (!authority_ok(host) || (!loopback_name(name) && !in_list(c->allowed_hosts, name)))
            return "Forbidden: Host is not allowed (DNS rebinding protection; see "
                   "--allowed-hosts)";
    } else if (c->allowed_hosts && host && !in_list(c->allowed_hosts, "*")) {
        http_host_part(host, name, sizeof name);
        if (!authority_ok(host) || !in_list(c->allowed_hosts, name))
            return "Forbidden: Host is not allowed (see --allowed-hosts)";
    }
    if (origin && !in_list(c->allowed_origins, origin)) {
        const char *p = strstr(origin, "://");
        if (!p || !scheme_ok(origin, p) || !authority_ok(p + 3))
            return "Forbidden: Origin is not allowed (see --allowed-origins)";
        http_host_part(p + 3, name, sizeof name);
        if (!loopback_name(name))
            return "Forbidden: Origin is not allowed (see --allowed-origins)";
    }
    return NULL;
}

/* ---- CORS ----------------------------------------------------------------
 *
 * A page on another origin may read our answers only when its origin is
 * listed in --allowed-origins (or the list is "*"). Loopback origins pass
 * the Origin check without being listed, but get no CORS headers: any local
 * web page would otherwise read the library. The origin is echoed, never
 * "*", and no Access-Control-Allow-Credentials is sent: the browser sends
 * Authorization only because the page set it, not a cookie it holds.
 */
#define CORS_ALLOW_HEADERS                                                                   \
    "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, " \
    "Mcp-Name, Last-Event-ID"
#define CORS_EXPOSE_HEADERS                                                                  \
    "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, RateLimit-Limit, "              \
    "RateLimit-Remaining, RateLimit-Reset, Retry-After"
/* Chromium caps a cached preflight at 2 hours. */
#define CORS_MAX_AGE "7200"

/* The request's Origin when it may read the answer, else NULL. */
static const char *cors_origin(struct MHD_Connection *con)
{
    if (!http_cors_origins)
        return NULL;
    const char *o = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Origin");
    if (!o || !*o)
        return NULL;
    /* "null" (a file: page, a sandboxed frame) is no one in particular:
     * only a list that names it lets it in. */
    if (!strcmp(o, "null") && !strcmp(http_cors_origins, "*"))
        return NULL;
    return in_list(http_cors_origins, o) ? o : NULL;
}

void http_cors_headers(struct MHD_Response *r, struct MHD_Connection *con)
{
    /* Every answer varies with Origin once some origins get CORS headers: a
     * cache must not hand one origin's answer (or an answer without them)
     * to another. */
    if (http_cors_origins)
        MHD_add_response_header(r, "Vary", "Origin");
    const char *o = cors_origin(con);
    if (!o)
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
}

/* The answer to OPTIONS on a path that serves methods: 204 with Allow, and
 * for an allowed origin the preflight's permissions. No auth: a browser
 * never sends credentials with a preflight. */
enum MHD_Result http_cors_preflight(struct MHD_Connection *con, const char *methods)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    char allow[96];
    snprintf(allow, sizeof allow, "%s, OPTIONS", methods);
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (atomic_load(&http_closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    http_cors_headers(r, con);
    if (cors_origin(con)) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", methods);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
        MHD_add_response_header(r, "Access-Control-Max-Age", CORS_MAX_AGE);
        /* Private Network Access: a public page calling a server on loopback
         * or a private address asks first. */
        const char *pna = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
                                                      "Access-Control-Request-Private-Network");
        if (pna && !strcasecmp(pna, "true"))
            MHD_add_response_header(r, "Access-Control-Allow-Private-Network", "true");
    }
    enum MHD_Result ret = MHD_queue_response(con, MHD_HTTP_NO_CONTENT, r);
    MHD_destroy_response(r);
    return ret;
}
