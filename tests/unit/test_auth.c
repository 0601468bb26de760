/*
 * test_auth.c - token file, bearer check, reload, rate buckets, script caps
 * and `skill-mcp token add` (server/auth.c).
 */
#include "harness.h"
#include "quiet.h"
#include "auth.h"
#include "cli.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

static char dir[64];
static char path[128];

/* SHA-256 hex of s. */
static const char *hexof(const char *s, char out[65])
{
    unsigned char d[32];
    unsigned int n = 0;
    EVP_Digest(s, strlen(s), d, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    return out;
}

/* Writes text to path through a rename, so the inode changes too. */
static void put(const char *text)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    fputs(text, f);
    fclose(f);
    rename(tmp, path);
}

/* A file of clients "name token rpm" (rpm < 0 = absent) as the server reads it. */
static void put_clients(const char *const *names, const char *const *tokens, const int *rpm,
                        int n)
{
    char text[4096] = "# clients\n\n";
    size_t len = strlen(text);
    for (int i = 0; i < n; i++) {
        char h[65];
        if (rpm[i] >= 0)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s %s %d\n", names[i],
                                    hexof(tokens[i], h), rpm[i]);
        else
            len += (size_t)snprintf(text + len, sizeof text - len, "  %s\t%s   # no limit\n",
                                    names[i], hexof(tokens[i], h));
    }
    put(text);
}

static const char *const names3[] = {"alice", "bob", "ci-bot@team.example"};
static const char *const tokens3[] = {"smcp_alice-token", "smcp_bob-token", "smcp_ci"};
static const int rpm3[] = {60, 120, -1};

static struct auth *load3(void)
{
    put_clients(names3, tokens3, rpm3, 3);
    struct err e;
    memset(&e, 0, sizeof e);
    struct auth *a = auth_load(path, &e);
    if (!a)
        printf("# load failed: %s\n", e.msg);
    return a;
}

static const char *bearer(struct auth *a, const char *token)
{
    char h[600];
    snprintf(h, sizeof h, "Bearer %s", token);
    return auth_check(a, h);
}

TEST(load_three_clients)
{
    struct auth *a = load3();
    CHECK(a);
    CHECK_EQ(auth_count(a), 3);
    auth_free(a);
}

/* Each malformed file fails closed and names its line. */
TEST(malformed_fails_closed)
{
    char h[65];
    hexof("x", h);
    char shorth[64];
    snprintf(shorth, sizeof shorth, "%.63s", h);
    char nonhex[65];
    snprintf(nonhex, sizeof nonhex, "%s", h);
    nonhex[10] = 'g';
    struct {
        const char *what;
        char text[512];
        int line;
        const char *needle;
    } cases[6];
    memset(cases, 0, sizeof cases);
    cases[0].what = "bad hex length";
    snprintf(cases[0].text, 512, "# c\nok %s\nbad %s 10\n", h, shorth);
    cases[0].line = 3;
    cases[0].needle = "64 hex digits";
    cases[1].what = "non-hex";
    snprintf(cases[1].text, 512, "bad %s\n", nonhex);
    cases[1].line = 1;
    cases[1].needle = "not hexadecimal";
    cases[2].what = "duplicate client";
    snprintf(cases[2].text, 512, "dup %s\n\ndup %.62s00\n", h, h);
    cases[2].line = 3;
    cases[2].needle = "duplicate client id \"dup\" (line 1)";
    cases[3].what = "rpm not a number";
    snprintf(cases[3].text, 512, "a %s\nb %.62s00 ten\n", h, h);
    cases[3].line = 2;
    cases[3].needle = "rpm \"ten\"";
    cases[4].what = "missing field";
    snprintf(cases[4].text, 512, "a %s\n\n\nlonely\n", h);
    cases[4].line = 4;
    cases[4].needle = "missing field";
    cases[5].what = "invalid id";
    snprintf(cases[5].text, 512, "b/ad %s\n", h);
    cases[5].line = 1;
    cases[5].needle = "invalid client id";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        put(cases[i].text);
        struct err e;
        memset(&e, 0, sizeof e);
        struct auth *a = auth_load(path, &e);
        if (a) {
            auth_free(a);
            H_FAIL("%s: loaded", cases[i].what);
            return;
        }
        char at[160];
        snprintf(at, sizeof at, "%s:%d:", path, cases[i].line);
        if (e.line != cases[i].line || !strstr(e.msg, at) || !strstr(e.msg, cases[i].needle)) {
            H_FAIL("%s: line %d, message \"%s\"", cases[i].what, e.line, e.msg);
            return;
        }
    }
    /* a missing file fails too */
    struct err e;
    memset(&e, 0, sizeof e);
    char nofile[160];
    snprintf(nofile, sizeof nofile, "%s/none", dir);
    CHECK(!auth_load(nofile, &e));
    CHECK(strstr(e.msg, "cannot open"));
}

/* A token file deep enough that its path alone is longer than the message
 * keeps the line and the reason: the path gives up its head. */
TEST(long_path_keeps_line_and_reason)
{
    char deep[700], file[760], h1[65], h2[65];
    int n = snprintf(deep, sizeof deep, "%s", dir);
    for (int i = 0; i < 3; i++) {
        n += snprintf(deep + n, sizeof deep - (size_t)n, "/%0200d", i);
        CHECK(mkdir(deep, 0700) == 0 || errno == EEXIST);
    }
    snprintf(file, sizeof file, "%s/auth-tokens", deep);
    CHECK(strlen(file) > 600);
    FILE *f = fopen(file, "w");
    CHECK(f);
    fprintf(f, "# clients\nok %s\nbad %.63sg\n", hexof("x", h1), hexof("y", h2));
    fclose(f);
    struct err e;
    memset(&e, 0, sizeof e);
    struct auth *a = auth_load(file, &e);
    unlink(file);
    for (int i = 0; i < 3; i++) {
        rmdir(deep);
        *strrchr(deep, '/') = '\0';
    }
    CHECK(!a);
    CHECK_EQ(e.line, 3);
    const char *tail = "/auth-tokens:3: the token hash is not hexadecimal";
    size_t ml = strlen(e.msg), tl = strlen(tail);
    CHECK(ml > tl && !strcmp(e.msg + ml - tl, tail));
    CHECK(!strncmp(e.msg, "...", 3));
}

TEST(check_tokens)
{
    struct auth *a = load3();
    CHECK(a);
    CHECK_STR(bearer(a, "smcp_alice-token"), "alice");
    CHECK_STR(bearer(a, "smcp_bob-token"), "bob");
    CHECK_STR(bearer(a, "smcp_ci"), "ci-bot@team.example");
    CHECK_STR(auth_check(a, "bearer   smcp_bob-token  "), "bob");   /* scheme case, OWS */
    CHECK(!bearer(a, "smcp_alice-tokeN"));          /* wrong */
    CHECK(!bearer(a, "smcp_alice-token2"));
    CHECK(!auth_check(a, "smcp_alice-token"));      /* no "Bearer " */
    CHECK(!auth_check(a, "Basic smcp_alice-token"));
    CHECK(!auth_check(a, "Bearersmcp_alice-token"));
    CHECK(!auth_check(a, "Bearer "));               /* empty token */
    CHECK(!auth_check(a, "Bearer"));
    CHECK(!auth_check(a, ""));
    CHECK(!auth_check(a, NULL));
    CHECK(!auth_check(a, "Bearer smcp_alice-token smcp_bob-token"));
    /* another client's token gives that client, never alice */
    const char *who = bearer(a, "smcp_bob-token");
    CHECK(who && strcmp(who, "alice") != 0);
    auth_free(a);
}

/* groups=LIST: carried to auth_verify; a bad list fails closed, naming the line. */
TEST(token_file_groups)
{
    char h[65], h2[65], text[512];
    snprintf(text, sizeof text, "ops %s 10 groups=platform,oncall\nsolo %s groups=x\n",
             hexof("smcp_ops", h), hexof("smcp_solo", h2));
    put(text);
    struct err e;
    memset(&e, 0, sizeof e);
    struct auth *a = auth_load(path, &e);
    CHECK(a);
    struct auth_who w;
    CHECK_EQ(auth_verify(a, "Bearer smcp_ops", &w), AUTH_OK);
    CHECK_STR(w.client, "ops");
    CHECK_STR(w.groups, "platform,oncall");
    CHECK_EQ(auth_verify(a, "Bearer smcp_solo", &w), AUTH_OK);
    CHECK_STR(w.groups, "x");
    CHECK_EQ(auth_verify(a, "Bearer smcp_nope", &w), AUTH_INVALID);
    CHECK(!w.client);
    CHECK_EQ(auth_verify(a, NULL, &w), AUTH_NO_TOKEN);
    CHECK_STR(auth_challenge(a, AUTH_NO_TOKEN), "Bearer realm=\"skill-mcp\"");
    CHECK(strstr(auth_challenge(a, AUTH_INVALID), "error=\"invalid_token\""));
    auth_free(a);
    const char *bad[] = {"groups=", "groups=a,,b", "groups=a b", "groups=,a", "groups=a/b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "ok %s %s\n", h, bad[i]);
        put(text);
        memset(&e, 0, sizeof e);
        a = auth_load(path, &e);
        if (a) {
            H_FAIL("\"%s\" was accepted", bad[i]);
            auth_free(a);
            return;
        }
        CHECK_EQ(e.line, 1);
    }
    snprintf(text, sizeof text, "ok %s 5 groups=a extra\n", h);
    put(text);
    memset(&e, 0, sizeof e);
    CHECK(!auth_load(path, &e));
    CHECK(strstr(e.msg, "too many fields"));
}

TEST(reload_revokes)
{
    struct auth *a = load3();
    CHECK(a);
    const char *bob = bearer(a, "smcp_bob-token");
    CHECK_STR(bob, "bob");
    CHECK_EQ(auth_reload(a, 0), 0);                 /* unchanged */
    /* bob revoked, dave added */
    const char *const n2[] = {"alice", "dave"};
    const char *const t2[] = {"smcp_alice-token", "smcp_dave"};
    const int r2[] = {60, 5};
    put_clients(n2, t2, r2, 2);
    CHECK_EQ(auth_reload(a, 0), 1);
    CHECK_EQ(auth_count(a), 2);
    CHECK(!bearer(a, "smcp_bob-token"));
    CHECK_STR(bearer(a, "smcp_dave"), "dave");
    CHECK_STR(bearer(a, "smcp_alice-token"), "alice");
    CHECK_STR(bob, "bob");                          /* old ids stay valid */
    /* a malformed new file: the table in force stays */
    put("alice 1234\n");
    CHECK_EQ(auth_reload(a, 0), -1);
    CHECK_EQ(auth_reload(a, 0), 0);                 /* reported once per version */
    CHECK_STR(bearer(a, "smcp_dave"), "dave");
    CHECK_EQ(auth_count(a), 2);
    /* the file gone: still serving */
    unlink(path);
    CHECK_EQ(auth_reload(a, 1), -1);
    CHECK_STR(bearer(a, "smcp_alice-token"), "alice");
    /* fixed again */
    put_clients(names3, tokens3, rpm3, 3);
    CHECK_EQ(auth_reload(a, 0), 1);
    CHECK_STR(bearer(a, "smcp_bob-token"), "bob");
    CHECK_EQ(auth_reload(a, 1), 1);                 /* SIGHUP: forced */
    auth_free(a);
}

TEST(bucket_rpm_60)
{
    struct auth *a = load3();
    CHECK(a);
    int lim = -1, rem = -1, reset = -1;
    /* real clock: 60 quick requests pass, the 61st waits */
    for (int i = 0; i < 60; i++) {
        int w = auth_rate(a, "alice", &lim, &rem, &reset);
        if (w) {
            H_FAIL("request %d refused (wait %d)", i + 1, w);
            return;
        }
        if (i == 0) {
            CHECK_EQ(lim, 60);
            CHECK_EQ(rem, 59);
            CHECK_EQ(reset, 1);
        }
    }
    int w = auth_rate(a, "alice", &lim, &rem, &reset);
    CHECK(w >= 1);
    CHECK_EQ(lim, 60);
    CHECK_EQ(rem, 0);
    CHECK(reset >= 59 && reset <= 60);
    /* limits are per client: bob (120) untouched; ci (no rpm) unlimited */
    CHECK_EQ(auth_rate(a, "bob", &lim, &rem, &reset), 0);
    CHECK_EQ(lim, 120);
    CHECK_EQ(rem, 119);
    for (int i = 0; i < 10000; i++)
        if (auth_rate(a, "ci-bot@team.example", &lim, &rem, &reset)) {
            H_FAIL("unlimited client refused at %d", i);
            return;
        }
    CHECK_EQ(lim, 0);
    CHECK_EQ(auth_rate(a, "nobody", &lim, NULL, NULL), 0);
    auth_free(a);
}

/* With an explicit clock: exact refill. */
TEST(bucket_refill)
{
    struct auth *a = load3();
    CHECK(a);
    uint64_t t = 1000000000000ull, s = 1000000000ull;
    int rem = 0, reset = 0;
    for (int i = 0; i < 60; i++)
        CHECK_EQ(auth_rate_at(a, "alice", t, NULL, NULL, NULL), 0);
    CHECK_EQ(auth_rate_at(a, "alice", t, NULL, &rem, &reset), 1);   /* 1/s refill: 1 s */
    CHECK_EQ(reset, 60);
    CHECK_EQ(auth_rate_at(a, "alice", t + s / 2, NULL, NULL, NULL), 1);
    CHECK_EQ(auth_rate_at(a, "alice", t + s, NULL, &rem, NULL), 0);
    CHECK_EQ(rem, 0);
    CHECK_EQ(auth_rate_at(a, "alice", t + s, NULL, NULL, NULL), 1);
    /* ten seconds later: ten more, not more */
    for (int i = 0; i < 10; i++)
        CHECK_EQ(auth_rate_at(a, "alice", t + 11 * s, NULL, NULL, NULL), 0);
    CHECK_EQ(auth_rate_at(a, "alice", t + 11 * s, NULL, NULL, NULL), 1);
    /* an hour later: full, capped at a minute's worth */
    CHECK_EQ(auth_rate_at(a, "alice", t + 3600 * s, NULL, &rem, &reset), 0);
    CHECK_EQ(rem, 59);
    /* bob at 120 rpm: a refused request waits ceil(0.5 s) = 1 */
    for (int i = 0; i < 120; i++)
        CHECK_EQ(auth_rate_at(a, "bob", t, NULL, NULL, NULL), 0);
    CHECK_EQ(auth_rate_at(a, "bob", t, NULL, NULL, NULL), 1);
    auth_free(a);
}

/* The buckets are shared with forked workers. */
TEST(bucket_shared_across_fork)
{
    struct auth *a = load3();
    CHECK(a);
    uint64_t t = 5000000000000ull;
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (int i = 0; i < 40; i++)
            bad += auth_rate_at(a, "alice", t, NULL, NULL, NULL) != 0;
        bad += auth_script_take(a, "bob") != 1;
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int rem = 0;
    CHECK_EQ(auth_rate_at(a, "alice", t, NULL, &rem, NULL), 0);
    CHECK_EQ(rem, 19);
    CHECK_EQ(auth_script_count(a, "bob"), 1);
    auth_free(a);
}

TEST(script_cap)
{
    struct auth *a = load3();
    CHECK(a);
    auth_set_script_cap(a, 2);
    CHECK_EQ(auth_script_take(a, "alice"), 1);
    CHECK_EQ(auth_script_take(a, "alice"), 1);
    CHECK_EQ(auth_script_take(a, "alice"), 0);     /* at cap */
    CHECK_EQ(auth_script_count(a, "alice"), 2);
    CHECK_EQ(auth_script_take(a, "bob"), 1);       /* per client */
    CHECK_EQ(auth_script_take(a, "nobody"), 0);    /* unknown: refused */
    auth_script_give(a, "alice");
    CHECK_EQ(auth_script_take(a, "alice"), 1);
    CHECK_EQ(auth_script_take(a, "alice"), 0);
    /* a worker dies holding slots: the master reaps them */
    auth_set_worker(a, 3);
    CHECK_EQ(auth_script_take(a, "bob"), 1);
    CHECK_EQ(auth_script_count(a, "bob"), 2);
    auth_script_reap(a, 3);
    CHECK_EQ(auth_script_count(a, "bob"), 1);
    auth_set_worker(a, 0);
    auth_script_give(a, "bob");
    auth_script_give(a, "bob");                    /* extra give: no underflow */
    CHECK_EQ(auth_script_count(a, "bob"), 0);
    /* cap 0: unlimited */
    auth_set_script_cap(a, 0);
    for (int i = 0; i < 50; i++)
        CHECK_EQ(auth_script_take(a, "ci-bot@team.example"), 1);
    CHECK_EQ(auth_script_count(a, "ci-bot@team.example"), 50);
    /* no auth configured: always free */
    CHECK_EQ(auth_script_take(NULL, NULL), 1);
    auth_free(a);
}

/* ---- concurrency ----------------------------------------------------------- */

static struct auth *g_auth;
static atomic_int g_allowed, g_wrong, g_stop;

#define HAMMER 4000

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < HAMMER; i++) {
        const char *who = bearer(g_auth, (i & 1) ? "smcp_bob-token" : "smcp_ci");
        if (!who || strcmp(who, (i & 1) ? "bob" : "ci-bot@team.example"))
            atomic_fetch_add(&g_wrong, 1);
        if (bearer(g_auth, "smcp_nope"))
            atomic_fetch_add(&g_wrong, 1);
        if (auth_rate_at(g_auth, "hammer", 42000000000ull, NULL, NULL, NULL) == 0)
            atomic_fetch_add(&g_allowed, 1);
        if (auth_script_take(g_auth, "bob")) {
            if (auth_script_count(g_auth, "bob") > 3)
                atomic_fetch_add(&g_wrong, 1);
            auth_script_give(g_auth, "bob");
        }
    }
    return NULL;
}

static void *reloader(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop))
        auth_reload(g_auth, 1);
    return NULL;
}

TEST(concurrency)
{
    char h1[65], h2[65], h3[65], text[512];
    snprintf(text, sizeof text, "bob %s 120\nci-bot@team.example %s\nhammer %s 1000\n",
             hexof("smcp_bob-token", h1), hexof("smcp_ci", h2), hexof("smcp_hammer", h3));
    put(text);
    struct err e;
    g_auth = auth_load(path, &e);
    CHECK(g_auth);
    auth_set_script_cap(g_auth, 3);
    atomic_store(&g_allowed, 0);
    atomic_store(&g_wrong, 0);
    atomic_store(&g_stop, 0);
    pthread_t th[4], rl;
    CHECK_EQ(pthread_create(&rl, NULL, reloader, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    atomic_store(&g_stop, 1);
    pthread_join(rl, NULL);
    CHECK_EQ(atomic_load(&g_wrong), 0);
    CHECK_EQ(atomic_load(&g_allowed), 1000);        /* exactly the bucket, no more */
    CHECK_EQ(auth_script_count(g_auth, "bob"), 0);
    auth_free(g_auth);
}

/* ---- skill-mcp token add ------------------------------------------------------ */

/* Runs cli_token with stdout to out (may be NULL) and stderr silenced. */
static int token_cli(char **argv, int argc, char *out, size_t outsz)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/stdout", dir);
    struct quiet q = quiet_begin(tmp, NULL);
    int rc = cli_token(argc, argv);
    quiet_end(q);
    if (out) {
        FILE *f = fopen(tmp, "r");
        out[0] = '\0';
        if (f) {
            if (!fgets(out, (int)outsz, f))
                out[0] = '\0';
            fclose(f);
        }
        out[strcspn(out, "\n")] = '\0';
    }
    return rc;
}

TEST(token_cli)
{
    char file[160];
    snprintf(file, sizeof file, "%s/tokens", dir);
    unlink(file);
    char tok[256], tok2[256];
    char *add1[] = {"add", "laptop", "--rpm", "30", "--file", file};
    CHECK_EQ(token_cli(add1, 6, tok, sizeof tok), 0);
    CHECK(!strncmp(tok, "smcp_", 5));
    CHECK_EQ(strlen(tok), 5 + 43);
    struct stat st;
    CHECK_EQ(stat(file, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    char *add2[] = {"add", "server-2", "--file", file};
    CHECK_EQ(token_cli(add2, 4, tok2, sizeof tok2), 0);
    CHECK(strcmp(tok, tok2) != 0);
    /* the same name again, an invalid name, bad usage */
    char again[256] = "unchanged";
    CHECK_EQ(token_cli(add1, 6, again, sizeof again), 1);
    CHECK_STR(again, "");                           /* nothing printed */
    char *bad[] = {"add", "no spaces", "--file", file};
    CHECK_EQ(token_cli(bad, 4, NULL, 0), 2);
    char *badrpm[] = {"add", "x", "--rpm", "-3", "--file", file};
    CHECK_EQ(token_cli(badrpm, 6, NULL, 0), 2);
    char *nofile[] = {"add", "x"};
    CHECK_EQ(token_cli(nofile, 2, NULL, 0), 2);
    char *what[] = {"remove", "x"};
    CHECK_EQ(token_cli(what, 2, NULL, 0), 2);
    /* the file loads; the printed tokens verify; the clear token is not in it */
    struct err e;
    memset(&e, 0, sizeof e);
    struct auth *a = auth_load(file, &e);
    CHECK(a);
    CHECK_EQ(auth_count(a), 2);
    CHECK_STR(bearer(a, tok), "laptop");
    CHECK_STR(bearer(a, tok2), "server-2");
    int lim = 0;
    CHECK_EQ(auth_rate(a, "laptop", &lim, NULL, NULL), 0);
    CHECK_EQ(lim, 30);
    CHECK_EQ(auth_rate(a, "server-2", &lim, NULL, NULL), 0);
    CHECK_EQ(lim, 0);
    auth_free(a);
    FILE *f = fopen(file, "r");
    CHECK(f);
    char all[2048];
    size_t n = fread(all, 1, sizeof all - 1, f);
    fclose(f);
    all[n] = '\0';
    CHECK(!strstr(all, tok + 5));
    /* a file without a final newline still gets a line of its own */
    f = fopen(file, "a");
    fputs("# trailing comment", f);
    fclose(f);
    char *add3[] = {"add", "third", "--file", file};
    CHECK_EQ(token_cli(add3, 4, tok2, sizeof tok2), 0);
    a = auth_load(file, &e);
    CHECK(a);
    CHECK_STR(bearer(a, tok2), "third");
    auth_free(a);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_auth.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/auth-tokens", dir);
    log_set_level((enum log_level)(LOG_ERROR + 1));   /* expected errors stay quiet */
    RUN(load_three_clients);
    RUN(malformed_fails_closed);
    RUN(long_path_keeps_line_and_reason);
    RUN(check_tokens);
    RUN(token_file_groups);
    RUN(reload_revokes);
    RUN(bucket_rpm_60);
    RUN(bucket_refill);
    RUN(bucket_shared_across_fork);
    RUN(script_cap);
    RUN(concurrency);
    RUN(token_cli);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s/stdout", dir);
    unlink(cmd);
    snprintf(cmd, sizeof cmd, "%s/tokens", dir);
    unlink(cmd);
    unlink(path);
    rmdir(dir);
    DONE();
}
