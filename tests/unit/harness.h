/*
 * harness.h - a header-only unit test harness (after libuv's task.h).
 *
 * A test file defines TEST(name) functions and lists them in main() with
 * RUN(name). Each check prints both values and file:line on failure; the
 * program prints TAP ("ok N - name" / "not ok N - name") and exits 1 if any
 * test failed. Checks return from the test on the first failure.
 */
#ifndef SKILL_HARNESS_H
#define SKILL_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int h_failed_checks;
static int h_tests_run, h_tests_failed;

#define TEST(name) static void test_##name(void)

#define RUN(name) do {                                                    \
        int before_ = h_failed_checks;                                    \
        test_##name();                                                    \
        h_tests_run++;                                                    \
        if (h_failed_checks != before_) {                                 \
            h_tests_failed++;                                             \
            printf("not ok %d - %s\n", h_tests_run, #name);              \
        } else {                                                          \
            printf("ok %d - %s\n", h_tests_run, #name);                  \
        }                                                                 \
        fflush(stdout);                                                   \
    } while (0)

#define H_FAIL(...) do {                                                  \
        printf("# %s:%d: ", __FILE__, __LINE__);                          \
        printf(__VA_ARGS__);                                              \
        printf("\n");                                                     \
        h_failed_checks++;                                                \
    } while (0)

#define CHECK(c) do { if (!(c)) { H_FAIL("check failed: %s", #c); return; } } while (0)

#define CHECK_EQ(a, b) do {                                               \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                  \
        if (a_ != b_) { H_FAIL("%s == %s: %jd != %jd", #a, #b, a_, b_); return; } \
    } while (0)

#define CHECK_STR(a, b) do {                                              \
        const char *a_ = (a), *b_ = (b);                                  \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                          \
            H_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b,                  \
                   a_ ? a_ : "(null)", b_ ? b_ : "(null)");               \
            return;                                                       \
        }                                                                 \
    } while (0)

#define CHECK_MEM(a, alen, b) do {                                        \
        size_t al_ = (alen), bl_ = strlen(b);                             \
        if (al_ != bl_ || memcmp((a), (b), al_) != 0) {                   \
            H_FAIL("%s == \"%s\": got \"%.*s\"", #a, (b), (int)al_, (const char *)(a)); \
            return;                                                       \
        }                                                                 \
    } while (0)

#define DONE() do {                                                       \
        printf("1..%d\n", h_tests_run);                                   \
        printf("# %d passed, %d failed\n", h_tests_run - h_tests_failed,  \
               h_tests_failed);                                           \
        return h_tests_failed ? 1 : 0;                                    \
    } while (0)

#endif
