/*
 * validate.c - `skill-mcp validate` and `skill-mcp list`: the skill linter
 * and the discovery listing, run from the command line.
 *
 * validate does its own walk (the same shape as skills.c's: root/skill and
 * root/team/skill, the same ignored names) so that it also sees skills that
 * discovery refuses, and reads each SKILL.md whole (up to the 4 MiB limit)
 * to check the frontmatter fields, the execution block and the body size.
 * Frontmatter errors carry fm_parse's line; field findings carry the line
 * of the field, found by scanning the YAML text (a heuristic: the first
 * line that starts with `key:`, or, inside `execution`, the first line of
 * the block that holds `key:`).
 *
 * list builds one snapshot with skills_new, exactly as the server would, and
 * reads its entries and its error list.
 */
#include "validate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontmatter.h"
#include "jail.h"
#include "shape.h"
#include "skills.h"
#include "util.h"

#define SKILL_MD_MAX (4ll << 20)        /* skills.c: larger SKILL.md files are refused */
#define FM_MAX_READ (256u << 10)        /* skills.c: the fence must close within this */
#define EXT_MAX_FILES 512               /* skillsext.c: the Skills extension's limits */
#define EXT_MAX_BYTES (16ll << 20)
#define BODY_MAX_TOKENS 5000            /* Agent Skills: keep the body under ~5,000 tokens */
#define DESC_MAX_CHARS 1024
#define COMPAT_MAX_CHARS 500
#define NAME_MAX_CHARS 64
#define WALK_MAX_DEPTH 8                /* skills.c's walk limits */
#define WALK_MAX_ENTRIES 10000

/* The server's default interpreter map (script.c); --interpreter adds more. */
static const char *const default_exts[] = {".py", ".sh", ".js"};

struct vctx {
    json_t *findings;
    const char *qname;
    const char *const *exts;
    size_t nexts;
    /* the YAML text of the current SKILL.md, for field lines */
    const char *yaml;
    size_t yaml_len;
    int yaml_line;          /* file line of the first YAML line */
};

/*
 * Where each rule is written down: the clause of spec/RFC-SKILL-1.md, or
 * the Agent Skills specification (agentskills.io; ../shared/PROTOCOL.md §6)
 * for the rules that come only from there.
 */
static const struct {
    const char *rule, *clause;
} clauses[] = {
    {"root", "RFC-SKILL-1 §3.1.1"},
    {"skill-md", "RFC-SKILL-1 §2.1.1"},
    {"frontmatter", "RFC-SKILL-1 §2.2.2"},
    {"frontmatter-size", "RFC-SKILL-1 §2.2.2"},
    {"skill-md-size", "RFC-SKILL-1 §2.2.3"},
    {"name-required", "RFC-SKILL-1 §9.12.3; Agent Skills: name"},
    {"name-rules", "RFC-SKILL-1 §2.3.2; Agent Skills: name"},
    {"name-folder", "RFC-SKILL-1 §9.12.3; Agent Skills: name"},
    {"description-required", "RFC-SKILL-1 §2.3, §3.8.1"},
    {"description-length", "RFC-SKILL-1 §2.3; Agent Skills: description"},
    {"compatibility", "Agent Skills: compatibility"},
    {"metadata", "RFC-SKILL-1 §2.3.1; Agent Skills: metadata"},
    {"tags", "RFC-SKILL-1 §2.3"},
    {"version", "RFC-SKILL-1 §2.3"},
    {"execution", "RFC-SKILL-1 §2.4.1, §2.4.2, §2.4.5"},
    {"execution-script", "RFC-SKILL-1 §2.4.1, §6.1.1"},
    {"execution-mode", "RFC-SKILL-1 §2.4.3"},
    {"execution-unknown-key", "RFC-SKILL-1 §2.4.3"},
    {"script-interpreter", "RFC-SKILL-1 §6.1.2"},
    {"symlink-escape", "RFC-SKILL-1 §3.6.2"},
    {"walk-limits", "RFC-SKILL-1 §3.7.1"},
    {"skill-files", "RFC-SKILL-1 §9.12.3"},
    {"skill-size", "RFC-SKILL-1 §9.12.3"},
    {"shadowed", "RFC-SKILL-1 §3.4.1"},
    {"body-tokens", "Agent Skills: progressive disclosure"},
    {"body-utf8", "RFC-SKILL-1 §2.1.2"},
};

static const char *clause_of(const char *rule)
{
    for (size_t i = 0; i < sizeof clauses / sizeof *clauses; i++)
        if (!strcmp(clauses[i].rule, rule))
            return clauses[i].clause;
    return NULL;
}

static void add(struct vctx *c, const char *sev, const char *rule, const char *file, int line,
                const char *hint, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* s, or its copy in tmp with every byte that is not UTF-8 made '?'. */
static const char *text_of(const char *s, char *tmp, size_t cap)
{
    if (!s || utf8_valid(s, strlen(s)))
        return s;
    snprintf(tmp, cap, "%s", s);
    utf8_sanitize(tmp);
    return tmp;
}

static void add(struct vctx *c, const char *sev, const char *rule, const char *file, int line,
                const char *hint, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_sanitize(msg);
    /* Names and paths are bytes; a finding json_pack cannot encode would be
     * lost, and a library the server refuses would pass. */
    char qname_t[256], file_t[PATH_MAX], hint_t[600];
    const char *qname = text_of(c->qname, qname_t, sizeof qname_t);
    file = text_of(file, file_t, sizeof file_t);
    hint = text_of(hint, hint_t, sizeof hint_t);
    json_t *f = json_pack("{s:s, s:s, s:s?, s:s?, s:s, s:o, s:s, s:s?}", "severity", sev, "rule",
                          rule, "clause", clause_of(rule), "skill", qname, "file", file, "line",
                          line > 0 ? json_integer(line) : json_null(), "message", msg, "hint",
                          hint);
    if (!f) {
        /* only out of memory is left: the aborting allocators' answer */
        log_error("validate: a finding could not be encoded (%s: %s)", rule, msg);
        abort();
    }
    json_array_append_new(c->findings, f);
}

/* ---- small helpers ------------------------------------------------------- */

static int path_within(const char *real, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(real, dir, n) && (real[n] == '/' || real[n] == '\0');
}

/* Characters (code points) of a UTF-8 string. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- field lines ----------------------------------------------------------- */

/* Does line [p, e) hold key (bare or quoted) followed by ':' at p? */
static int key_at(const char *p, const char *e, const char *key)
{
    size_t kl = strlen(key);
    char q = 0;
    if (p < e && (*p == '"' || *p == '\'')) {
        q = *p;
        p++;
    }
    if ((size_t)(e - p) < kl || memcmp(p, key, kl))
        return 0;
    p += kl;
    if (q) {
        if (p >= e || *p != q)
            return 0;
        p++;
    }
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p < e && *p == ':';
}

/*
 * File line of `key:` in the YAML text. top: only at column 0 (a top-level
 * field). Otherwise the first line at or after file line `from` and before
 * the end of the top-level block that starts there which holds key: at the
 * start of its text or after '{' / ','. 0 when not found.
 */
static int field_line(const struct vctx *c, const char *key, int top, int from)
{
    const char *p = c->yaml, *end = c->yaml + c->yaml_len;
    int line = c->yaml_line;
    if (!p)
        return 0;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        if (top) {
            if (key_at(p, e, key))
                return line;
        } else if (line >= from) {
            if (line > from && p < e && *p != ' ' && *p != '\t' && *p != '#' && *p != '\r')
                return 0;   /* the block ended */
            const char *q = p;
            while (q < e && (*q == ' ' || *q == '\t' || *q == '-'))
                q++;
            for (;;) {
                if (key_at(q, e, key))
                    return line;
                while (q < e && *q != '{' && *q != ',')
                    q++;
                if (q >= e)
                    break;
                q++;
                while (q < e && (*q == ' ' || *q == '\t'))
                    q++;
            }
        }
        p = e + 1;
        line++;
    }
    return 0;
}

/* ---- frontmatter fields -------------------------------------------------- */

static void check_exec_entry(struct vctx *c, const char *md, const char *key, json_t *v,
                             int entry_line)
{
    const char *k;
    json_t *x;
    int is_default = !strcmp(key, "default");
    json_object_foreach(v, k, x) {
        int line = field_line(c, k, 0, entry_line);
        if (!line)
            line = entry_line;
        if (!strcmp(k, "mode")) {
            add(c, "warning", "execution-mode", md, line,
                "delete the mode: key; a script that starts a long job should print the job id "
                "and return, and a second script should fetch the result by that id",
                "execution entry '%s' has a 'mode' key, which is no longer part of the "
                "execution policy (the server cannot guess a job key from ordinary output)",
                key);
        } else if (!strcmp(k, "timeout") || !strcmp(k, "stall_timeout")) {
            if (!json_is_number(x) || json_number_value(x) <= 0)
                add(c, "error", "execution", md, line,
                    "write a number of seconds above 0, unquoted, e.g. timeout: 60",
                    "execution entry '%s': '%s' must be a positive number of seconds", key, k);
        } else if (!strcmp(k, "description")) {
            if (!json_is_string(x))
                add(c, "error", "execution", md, line,
                    "write one line of text saying what the script does",
                    "execution entry '%s': 'description' must be a string", key);
            else if (is_default)
                add(c, "warning", "execution-unknown-key", md, line,
                    "move the description to the entry of the script it describes",
                    "execution 'default' has a 'description', which is never used (descriptions "
                    "are per script)");
        } else {
            add(c, "warning", "execution-unknown-key", md, line,
                "execution entries know only description, timeout and stall_timeout; check "
                "the spelling",
                "execution entry '%s' has an unknown key '%s', which the server ignores", key, k);
        }
    }
}

static void check_execution(struct vctx *c, const char *dir, const char *md, json_t *ex)
{
    int exline = field_line(c, "execution", 1, 0);
    if (!json_is_object(ex)) {
        add(c, "error", "execution", md, exline,
            "make execution a map: `default:` and one key per script (scripts/run.py:), each "
            "a map of description, timeout and stall_timeout",
            "'execution' must be a map of script paths (and 'default') to settings");
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(ex, key, v) {
        int line = field_line(c, key, 0, exline);
        if (!line)
            line = exline;
        if (!strcmp(key, "mode")) {
            add(c, "warning", "execution-mode", md, line,
                "delete the mode: key; a script that starts a long job should print the job id "
                "and return, and a second script should fetch the result by that id",
                "'execution' has a 'mode' key, which is no longer part of the execution policy "
                "(the server cannot guess a job key from ordinary output)");
            continue;
        }
        if (!strcmp(key, "network")) {
            if (!json_is_boolean(v))
                add(c, "error", "execution", md, line,
                    "write `network: true` (the skill's scripts need the network under "
                    "--sandbox bwrap) or `network: false`",
                    "execution 'network' must be true or false");
            continue;
        }
        if (!json_is_object(v)) {
            add(c, "error", "execution", md, line,
                "write the entry as a map, e.g. `scripts/run.py: {timeout: 60}`",
                "execution entry '%s' must be a map of description, timeout and stall_timeout",
                key);
            continue;
        }
        if (strcmp(key, "default")) {
            char rel[PATH_MAX], abs[PATH_MAX * 2];
            struct stat st;
            int bad = 0;
            if (!strchr(key, '/'))
                snprintf(rel, sizeof rel, "scripts/%s", key);
            else if (!strncmp(key, "scripts/", 8) && key[8])
                snprintf(rel, sizeof rel, "%s", key);
            else
                bad = 1;
            if (!bad && (strstr(rel, "/../") || !strcmp(rel + strlen(rel) - 3, "/..")))
                bad = 1;
            if (bad) {
                add(c, "error", "execution-script", md, line,
                    "use the script's path inside the skill (scripts/run.py) or its name under "
                    "scripts/ (run.py); only scripts/ can be run",
                    "execution key '%s' is not a path under scripts/", key);
            } else if (strstr(rel, "//") || strstr(rel, "/./") || rel[strlen(rel) - 1] == '/' ||
                       !strcmp(rel + strlen(rel) - 2, "/.")) {
                /* The server looks an entry up by the script's resolved path
                 * (scripts/sub/x.sh), never by a spelling of it. */
                add(c, "error", "execution-script", md, line,
                    "write the key as the script's plain path (scripts/sub/run.py): no '//', "
                    "'./' or trailing '/'",
                    "execution key '%s' is not written as a plain path, so it applies to no "
                    "script", key);
            } else {
                snprintf(abs, sizeof abs, "%s/%s", dir, rel);
                if (stat(abs, &st) < 0 || !S_ISREG(st.st_mode))
                    add(c, "error", "execution-script", md, line,
                        "fix the spelling of the key, add the script, or delete the entry",
                        "execution key '%s' names %s, which is not a file in the skill", key,
                        rel);
            }
        }
        check_exec_entry(c, md, key, v, line);
    }
}

static void check_fields(struct vctx *c, const char *dir, const char *folder, const char *md,
                         json_t *fm)
{
    json_t *name = json_object_get(fm, "name");
    int line = field_line(c, "name", 1, 0);
    const char *why;
    if (!utf8_valid(folder, strlen(folder)))
        add(c, "error", "name-rules", dir, 0,
            "rename the folder to UTF-8 text (`convmv -f latin1 -t utf-8 -r --notest DIR` "
            "renames a tree)",
            "folder name is not valid UTF-8; the server does not serve this skill");
    if (!json_is_string(name) || !*json_string_value(name)) {
        char hint[300];
        snprintf(hint, sizeof hint, "add `name: %.200s` (the folder name)", folder);
        add(c, "error", "name-required", md, line, hint, "%s",
            name ? "'name' must be a non-empty string" : "frontmatter has no 'name'");
    } else {
        const char *n = json_string_value(name);
        if ((why = skills_name_problem(n)))
            add(c, "error", "name-rules", md, line,
                "a name is 1-64 characters of a-z, 0-9 and '-', with no leading, trailing or "
                "double '-'; rename the skill (the folder and `name:` together)",
                "name '%s' %s", n, why);
        if (strcmp(n, folder)) {
            char hint[300];
            snprintf(hint, sizeof hint,
                     "set `name: %.100s` or rename the folder to '%.100s'; the server serves "
                     "the skill under its folder name",
                     folder, n);
            add(c, "error", "name-folder", md, line, hint,
                "name '%s' differs from the folder name '%s'", n, folder);
        }
    }
    if ((why = skills_name_problem(folder)) &&
        !(json_is_string(name) && !strcmp(json_string_value(name), folder)))
        add(c, "error", "name-rules", dir, 0,
            "rename the folder: 1-64 characters of a-z, 0-9 and '-', with no leading, "
            "trailing or double '-'",
            "folder name '%s' %s", folder, why);

    json_t *d = json_object_get(fm, "description");
    line = field_line(c, "description", 1, 0);
    if (!json_is_string(d) || !*json_string_value(d))
        add(c, "error", "description-required", md, line,
            "add `description:` saying what the skill does and when to use it (1-1024 "
            "characters); without one the server does not serve the skill",
            d ? "'description' must be a non-empty string" : "frontmatter has no 'description'");
    else if (utf8_chars(json_string_value(d)) > DESC_MAX_CHARS)
        add(c, "error", "description-length", md, line,
            "shorten it to 1024 characters; move details into the body",
            "description is %zu characters, over the limit of %d",
            utf8_chars(json_string_value(d)), DESC_MAX_CHARS);

    json_t *cp = json_object_get(fm, "compatibility");
    if (cp) {
        line = field_line(c, "compatibility", 1, 0);
        if (!json_is_string(cp))
            add(c, "error", "compatibility", md, line,
                "write the environment requirements as one string",
                "'compatibility' must be a string");
        else if (utf8_chars(json_string_value(cp)) > COMPAT_MAX_CHARS)
            add(c, "error", "compatibility", md, line,
                "shorten it to 500 characters; put details in the body or a reference file",
                "compatibility is %zu characters, over the limit of %d",
                utf8_chars(json_string_value(cp)), COMPAT_MAX_CHARS);
    }

    json_t *meta = json_object_get(fm, "metadata");
    if (meta) {
        line = field_line(c, "metadata", 1, 0);
        if (!json_is_object(meta)) {
            add(c, "warning", "metadata", md, line,
                "make metadata a map of string keys to string values, e.g. `author: acme`",
                "'metadata' must be a map of strings");
        } else {
            const char *k;
            json_t *x;
            json_object_foreach(meta, k, x) {
                if (json_is_string(x))
                    continue;
                int l = field_line(c, k, 0, line);
                add(c, "warning", "metadata", md, l ? l : line,
                    "quote the value to make it a string, e.g. version: \"1.0\"",
                    "metadata '%s' is not a string", k);
            }
        }
    }

    json_t *tags = json_object_get(fm, "tags");
    if (tags && !json_is_null(tags)) {
        line = field_line(c, "tags", 1, 0);
        int ok = json_is_string(tags);
        if (json_is_array(tags)) {
            size_t i;
            json_t *x;
            ok = 1;
            json_array_foreach(tags, i, x)
                if (!json_is_string(x) && !json_is_number(x))
                    ok = 0;
        }
        if (!ok)
            add(c, "warning", "tags", md, line,
                "write tags as a list of words ([data, csv]) or one comma-separated string",
                "'tags' must be a list of strings or a string; other items are skipped");
    }

    json_t *ver = json_object_get(fm, "version");
    if (ver && !json_is_string(ver) && !json_is_null(ver))
        add(c, "warning", "version", md, field_line(c, "version", 1, 0),
            "quote it: version: \"1.0\"",
            "'version' is not a string (an unquoted 1.0 is a number), so it is not shown");

    json_t *ex = json_object_get(fm, "execution");
    if (ex && !json_is_null(ex))
        check_execution(c, dir, md, ex);
}

/* ---- SKILL.md ------------------------------------------------------------ */

static int line_of(const char *buf, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        if (buf[i] == '\n')
            line++;
    return line;
}

static void check_skill_md(struct vctx *c, const char *dir, const char *folder, const char *md)
{
    struct stat st;
    /* As the server opens it: beneath the skill folder. */
    int root = jail_root(dir);
    int fd = root < 0 ? root : jail_open_regular(root, "SKILL.md", &st);
    if (root >= 0)
        close(root);
    if (fd < 0) {
        add(c, "error", "skill-md", md, 0,
            fd == -EXDEV ? "make SKILL.md a file inside the skill folder (a link may point only "
                           "within it)"
                         : "make SKILL.md a readable file",
            "cannot read SKILL.md: %s",
            fd == -EINVAL  ? "not a regular file"
            : fd == -EXDEV ? "it leads outside the skill folder; the server does not serve it"
                           : strerror(-fd));
        return;
    }
    int too_big = st.st_size > SKILL_MD_MAX;
    if (too_big)
        add(c, "error", "skill-md-size", md, 0,
            "move long material into references/ files that the body links to",
            "SKILL.md is %lld bytes, over the 4 MiB limit; the server does not serve it",
            (long long)st.st_size);
    size_t want = too_big ? FM_MAX_READ : (size_t)st.st_size;
    char *buf = xmalloc(want + 1);
    size_t len = 0;
    while (len < want) {
        ssize_t r = read(fd, buf + len, want - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    if (!len) {
        add(c, "error", "frontmatter", md, 0,
            "start SKILL.md with a --- line, name: and description:, and a closing --- line",
            "SKILL.md is empty");
        free(buf);
        return;
    }

    struct fm f = {0};
    struct err err = {0};
    size_t plen = len < FM_MAX_READ ? len : FM_MAX_READ;
    int complete = !too_big && plen == len;
    int rc = fm_parse(buf, plen, complete, &f, &err);
    if (rc == -EAGAIN) {
        add(c, "error", "frontmatter-size", md, 0,
            "close the frontmatter with a --- line; keep it short and put long text in the body",
            "frontmatter is not closed within the first 256 KiB of SKILL.md");
    } else if (rc < 0) {
        add(c, "error", "frontmatter", md, err.line,
            "fix the YAML: one mapping between --- fences, spaces not tabs, no duplicate keys, "
            "anchors, aliases or custom tags; quote values that contain ': ' or start with a "
            "special character",
            "%s", err.msg);
    } else {
        c->yaml = buf + f.fm_off;
        c->yaml_len = f.fm_len;
        c->yaml_line = line_of(buf, f.fm_off);
        if (!json_is_object(f.fields))
            add(c, "error", "frontmatter", md, c->yaml_line, "write the frontmatter as key: value lines",
                "the frontmatter is not a mapping");
        else
            check_fields(c, dir, folder, md, f.fields);
        if (!too_big && f.body_off <= len) {
            /* load_skill answers in JSON, which carries UTF-8 only */
            const unsigned char *p = (const unsigned char *)buf + f.body_off;
            size_t n = len - f.body_off, i = 0;
            while (i < n && (p[i] < 0x80 || utf8_seq(p + i, n - i)))
                i += p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i);
            if (i < n)
                add(c, "error", "body-utf8", md, line_of(buf, f.body_off + i),
                    "save SKILL.md as UTF-8 (iconv -f latin1 -t utf-8, or your editor's "
                    "encoding setting)",
                    "the body is not valid UTF-8 (byte 0x%02X); load_skill cannot answer it",
                    p[i]);
            size_t tokens = shape_tokens(buf + f.body_off, len - f.body_off);
            if (tokens > BODY_MAX_TOKENS)
                add(c, "warning", "body-tokens", md, line_of(buf, f.body_off),
                    "keep the body under ~5,000 tokens: move details into references/ files "
                    "and link them from the body",
                    "the body is about %zu tokens, over the recommended %d", tokens,
                    BODY_MAX_TOKENS);
        }
        c->yaml = NULL;
        c->yaml_len = 0;
        fm_cleanup(&f);
    }
    free(buf);
}

/* ---- files --------------------------------------------------------------- */

struct fwalk {
    const char *real;       /* the skill folder, resolved */
    size_t files;           /* SKILL.md included */
    long long bytes;
    size_t entries;
    int cut;
};

static int known_ext(const struct vctx *c, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return 0;
    for (size_t i = 0; i < sizeof default_exts / sizeof *default_exts; i++)
        if (!strcmp(dot, default_exts[i]))
            return 1;
    for (size_t i = 0; i < c->nexts; i++)
        if (!strcmp(dot, c->exts[i]))
            return 1;
    return 0;
}

static void walk(struct vctx *c, struct fwalk *w, const char *abs, const char *rel, int depth)
{
    size_t n;
    char **names = skills_list_dir(abs, &n);
    for (size_t i = 0; i < n; i++) {
        char cabs[PATH_MAX], crel[PATH_MAX];
        struct stat lst, st;
        if (++w->entries > WALK_MAX_ENTRIES) {
            w->cut = 1;
            break;
        }
        if ((size_t)snprintf(cabs, sizeof cabs, "%s/%s", abs, names[i]) >= sizeof cabs ||
            (size_t)snprintf(crel, sizeof crel, "%s%s%s", rel, *rel ? "/" : "", names[i]) >=
                sizeof crel)
            continue;
        if (lstat(cabs, &lst) < 0)
            continue;
        if (S_ISLNK(lst.st_mode)) {
            char real[PATH_MAX], target[PATH_MAX];
            ssize_t tl = readlink(cabs, target, sizeof target - 1);
            target[tl > 0 ? tl : 0] = '\0';
            if (!realpath(cabs, real)) {
                add(c, "error", "symlink-escape", cabs, 0,
                    "point the link at a file inside the skill, or replace it with the file",
                    "symlink %s -> %s does not resolve (%s); the server does not serve it", crel,
                    target, strerror(errno));
                continue;
            }
            if (!path_within(real, w->real)) {
                add(c, "error", "symlink-escape", cabs, 0,
                    "copy the file into the skill instead of linking to it; links leaving the "
                    "skill are never served",
                    "symlink %s -> %s points outside the skill", crel, target);
                continue;
            }
        }
        if (stat(cabs, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (S_ISLNK(lst.st_mode))
                continue;
            if (depth + 1 >= WALK_MAX_DEPTH) {
                w->cut = 1;
                continue;
            }
            walk(c, w, cabs, crel, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            if (!*rel && !strcmp(names[i], "SKILL.md"))
                continue;   /* counted by the caller */
            w->files++;
            w->bytes += (long long)st.st_size;
            if (!strncmp(crel, "scripts/", 8) && !known_ext(c, names[i]))
                add(c, "warning", "script-interpreter", cabs, 0,
                    "name scripts .py, .sh or .js (helper modules imported by a script may "
                    "stay .py); move data files to assets/ or references/",
                    "%s has no known interpreter (.py, .sh, .js), so run_skill_script cannot "
                    "run it",
                    crel);
        }
    }
    skills_free_names(names, n);
}

static void check_files(struct vctx *c, const char *dir, const char *md)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(dir, real)) {
        add(c, "error", "skill-md", dir, 0, NULL, "cannot resolve the skill folder: %s",
            strerror(errno));
        return;
    }
    struct fwalk w = {.real = real, .files = 1};
    if (stat(md, &st) == 0)
        w.bytes = (long long)st.st_size;
    walk(c, &w, dir, "", 0);
    if (w.cut)
        add(c, "warning", "walk-limits", dir, 0,
            "keep a skill under 10,000 entries and 8 folder levels",
            "more than %d entries or deeper than %d folders; the server cuts the file list",
            WALK_MAX_ENTRIES, WALK_MAX_DEPTH);
    if (w.files > EXT_MAX_FILES)
        add(c, "warning", "skill-files", dir, 0,
            "keep a skill to 512 files: drop generated files, or split it into several skills",
            "%zu files, over the Skills extension's limit of %d per skill (listed with a "
            "warning; tools still serve it)",
            w.files, EXT_MAX_FILES);
    if (w.bytes > EXT_MAX_BYTES)
        add(c, "warning", "skill-size", dir, 0,
            "keep a skill under 16 MiB: fetch large data at run time instead of shipping it",
            "%lld bytes in all, over the Skills extension's limit of 16 MiB per skill", w.bytes);
}

/* ---- the walk over roots ------------------------------------------------- */

struct seen {
    char **q;
    size_t n, cap;
};

static int seen_has(struct seen *s, const char *q)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->q[i], q))
            return 1;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->q = xrealloc(s->q, s->cap * sizeof *s->q);
    }
    s->q[s->n++] = xstrdup(q);
    return 0;
}

static void check_skill(struct vctx *c, struct seen *seen, const char *team, const char *folder,
                        const char *dir)
{
    char qname[PATH_MAX], md[PATH_MAX + 16];
    snprintf(qname, sizeof qname, "%s%s%s", team ? team : "", team ? "/" : "", folder);
    snprintf(md, sizeof md, "%s/SKILL.md", dir);
    c->qname = qname;
    if (seen_has(seen, qname))
        add(c, "warning", "shadowed", md, 0,
            "rename one of the two, or remove the copy; only the one in the earlier root is "
            "served",
            "shadowed: a skill with the same qualified name '%s' in an earlier root wins",
            qname);
    if (team && !utf8_valid(team, strlen(team)))
        add(c, "error", "name-rules", dir, 0,
            "rename the team folder to UTF-8 text (`convmv -f latin1 -t utf-8 -r --notest DIR` "
            "renames a tree)",
            "team folder name is not valid UTF-8; the server does not serve this skill");
    check_skill_md(c, dir, folder, md);
    check_files(c, dir, md);
    c->qname = NULL;
}

json_t *validate_roots(const char *const *roots, size_t nroots, const char *const *exts,
                       size_t nexts, size_t *nskills)
{
    struct vctx c = {.findings = json_array(), .exts = exts, .nexts = nexts};
    struct seen seen = {0};
    size_t count = 0;
    for (size_t r = 0; r < nroots; r++) {
        size_t n;
        if (!is_dir(roots[r])) {
            add(&c, "error", "root", roots[r], 0, "give a readable directory of skills",
                "not a readable directory");
            continue;
        }
        char **names = skills_list_dir(roots[r], &n);
        for (size_t i = 0; i < n; i++) {
            char dir[PATH_MAX], md[PATH_MAX + 16];
            struct stat st;
            snprintf(dir, sizeof dir, "%s/%s", roots[r], names[i]);
            if (!is_dir(dir))
                continue;
            snprintf(md, sizeof md, "%s/SKILL.md", dir);
            /* As the server decides: an entry named SKILL.md of any kind
             * makes a skill (one it may then refuse), not a team. */
            if (lstat(md, &st) == 0) {
                check_skill(&c, &seen, NULL, names[i], dir);
                count++;
                continue;
            }
            size_t m;
            char **sub = skills_list_dir(dir, &m);
            for (size_t j = 0; j < m; j++) {
                char sdir[PATH_MAX * 2], smd[PATH_MAX * 2 + 16];
                snprintf(sdir, sizeof sdir, "%s/%s", dir, sub[j]);
                if (!is_dir(sdir))
                    continue;
                snprintf(smd, sizeof smd, "%s/SKILL.md", sdir);
                if (lstat(smd, &st) == 0) {
                    check_skill(&c, &seen, names[i], sub[j], sdir);
                    count++;
                }
            }
            skills_free_names(sub, m);
        }
        skills_free_names(names, n);
    }
    skills_free_names(seen.q, seen.n);
    if (nskills)
        *nskills = count;
    return c.findings;
}

json_t *validate_summary(const json_t *findings, size_t nroots, size_t nskills)
{
    size_t e = 0, w = 0, i;
    json_t *f;
    json_array_foreach(findings, i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "severity")), "error"))
            e++;
        else
            w++;
    }
    return json_pack("{s:I, s:I, s:I, s:I, s:b}", "roots", (json_int_t)nroots, "skills",
                     (json_int_t)nskills, "errors", (json_int_t)e, "warnings", (json_int_t)w,
                     "ok", e == 0);
}

/* ---- list ---------------------------------------------------------------- */

/* Index of the root that path lies under (the longest prefix, as given or
 * resolved: discovery reports a broken skill by its resolved path), or -1. */
static int root_of(const char *const *roots, size_t n, const char *path)
{
    int best = -1;
    size_t blen = 0;
    for (size_t i = 0; i < n; i++) {
        char real[PATH_MAX];
        const char *cand[2] = {roots[i], realpath(roots[i], real) ? real : NULL};
        for (int k = 0; k < 2; k++) {
            size_t l = cand[k] ? strlen(cand[k]) : 0;
            if (l && !strncmp(path, cand[k], l) && path[l] == '/' && l >= blen) {
                best = (int)i;
                blen = l;
            }
        }
    }
    return best;
}

static int row_cmp(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "qualified_name")),
                   json_string_value(json_object_get(y, "qualified_name")));
    if (c)
        return c;
    return (int)(json_integer_value(json_object_get(x, "root_index")) -
                 json_integer_value(json_object_get(y, "root_index")));
}

/* Is root/qname (or its team folder) a symlink? */
static int linked(const char *root, const char *qname)
{
    char p[PATH_MAX * 2];
    struct stat st;
    const char *slash = strchr(qname, '/');
    snprintf(p, sizeof p, "%s/%s", root, qname);
    if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
        return 1;
    if (slash) {
        snprintf(p, sizeof p, "%s/%.*s", root, (int)(slash - qname), qname);
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
            return 1;
    }
    return 0;
}

static json_t *row(const char *const *roots, int ri, const char *qname, const char *path)
{
    const char *slash = strrchr(qname, '/');
    json_t *r = json_pack("{s:s, s:s, s:s?, s:i, s:s?, s:[]}", "qualified_name", qname, "name",
                          slash ? slash + 1 : qname, "root", ri >= 0 ? roots[ri] : NULL,
                          "root_index", ri, "path", path, "flags");
    if (ri >= 0 && linked(roots[ri], qname))
        json_array_append_new(json_object_get(r, "flags"), json_string("symlink"));
    return r;
}

json_t *validate_list(const char *const *roots, size_t n)
{
    log_set_level((enum log_level)(LOG_ERROR + 1));
    struct skills *S = skills_new(roots, n, NULL, NULL, NULL, NULL);
    if (S) {
        /* its index's thread logs when done: quiet until then too */
        struct snapshot *s0 = skills_acquire(S);
        skills_search(s0);
        skills_release(s0);
    }
    log_set_level(LOG_INFO);
    if (!S)
        return NULL;
    struct snapshot *s = skills_acquire(S);
    json_t *rows = json_array();
    size_t served = 0, shadowed = 0, broken = 0;
    for (size_t i = 0; i < s->n; i++) {
        struct skill *k = s->v[i];
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", roots[k->root], k->qname);
        json_t *r = row(roots, (int)k->root, k->qname, path);
        if (k->fm_name)
            json_object_set_new(r, "frontmatter_name", json_string(k->fm_name));
        if (!k->fm_name || strcmp(k->fm_name, k->name))
            json_array_append_new(json_object_get(r, "flags"), json_string("name-differs"));
        json_array_append_new(rows, r);
        served++;
    }
    size_t i;
    json_t *e;
    json_array_foreach(s->errors, i, e) {
        const char *q = json_string_value(json_object_get(e, "skill"));
        const char *p = json_string_value(json_object_get(e, "path"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *lvl = json_string_value(json_object_get(e, "level"));
        if (!q || !p || !msg || !lvl)
            continue;
        int is_shadow = !strncmp(msg, "shadowed:", 9);
        if (!is_shadow && strcmp(lvl, "error"))
            continue;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", p);
        size_t dl = strlen(dir);
        if (dl > 9 && !strcmp(dir + dl - 9, "/SKILL.md"))
            dir[dl - 9] = '\0';
        int ri = root_of(roots, n, p);
        if (ri >= 0)
            snprintf(dir, sizeof dir, "%s/%s", roots[ri], q);
        json_t *r = row(roots, ri, q, dir);
        json_array_append_new(json_object_get(r, "flags"),
                              json_string(is_shadow ? "shadowed" : "broken"));
        if (!is_shadow)
            json_object_set_new(r, "reason", json_string(msg));
        json_array_append_new(rows, r);
        if (is_shadow)
            shadowed++;
        else
            broken++;
    }
    size_t nr = json_array_size(rows);
    json_t **v = xcalloc(nr ? nr : 1, sizeof *v);
    for (i = 0; i < nr; i++)
        v[i] = json_incref(json_array_get(rows, i));
    qsort(v, nr, sizeof *v, row_cmp);
    json_array_clear(rows);
    for (i = 0; i < nr; i++)
        json_array_append_new(rows, v[i]);
    free(v);
    skills_release(s);
    skills_free(S);
    return json_pack("{s:o, s:{s:I, s:I, s:I, s:I}}", "skills", rows, "summary", "roots",
                     (json_int_t)n, "served", (json_int_t)served, "shadowed",
                     (json_int_t)shadowed, "broken", (json_int_t)broken);
}
