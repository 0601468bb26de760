/*
 * yamlcore.c - the YAML 1.2 core schema's typing of plain scalars, shared by
 * the libyaml event walk (frontmatter.c) and its fast path (fmfast.c), so
 * both type "0x1F", "1e3" or "~" the same way.
 */
#include "yamlcore.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int all_digits(const char *s, size_t n, const char *set)
{
    size_t i;

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return 0;
    return 1;
}

#define DEC "0123456789"
#define OCT "01234567"
#define HEX "0123456789abcdefABCDEF"

static int is_float(const char *s, size_t n)
{
    size_t i = 0, d = 0;

    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, d++;
        if (d == 0)
            return 0;
    } else {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, d++;
        if (d == 0)
            return 0;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        d = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, d++;
        if (d == 0)
            return 0;
    }
    return i == n;
}

int yc_word_in(const char *s, size_t n, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == n && memcmp(s, *words, n) == 0)
            return 1;
    return 0;
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "true", "True", "TRUE", NULL };
static const char *const false_words[] = { "false", "False", "FALSE", NULL };

/* [-+]?(.inf|.Inf|.INF) and .nan|.NaN|.NAN */
int yc_is_inf_nan(const char *s, size_t n)
{
    static const char *const inf[] = { ".inf", ".Inf", ".INF", NULL };
    static const char *const nan[] = { ".nan", ".NaN", ".NAN", NULL };

    if (yc_word_in(s, n, nan) || yc_word_in(s, n, inf))
        return 1;
    return n > 0 && (s[0] == '-' || s[0] == '+') && yc_word_in(s + 1, n - 1, inf);
}

/*
 * YAML 1.2 core schema. s is NUL-terminated at s[n] (libyaml guarantees
 * it). Returns a new JSON value and its kind; YC_STR means "a string".
 * Integers that do not fit json_int_t become reals when finite; hex/octal
 * that do not fit, and floats that overflow, stay strings, as do
 * .inf/.nan (JSON has no such numbers).
 */
json_t *yc_resolve(const char *s, size_t n, enum yc_kind *kind)
{
    char *end;
    double d;

    *kind = YC_STR;
    if (yc_word_in(s, n, null_words)) {
        *kind = YC_NULL;
        return json_null();
    }
    if (yc_word_in(s, n, true_words) || yc_word_in(s, n, false_words)) {
        *kind = YC_BOOL;
        return json_boolean(yc_word_in(s, n, true_words));
    }
    if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        int hex = s[1] == 'x';
        if (all_digits(s + 2, n - 2, hex ? HEX : OCT)) {
            unsigned long long v;
            errno = 0;
            v = strtoull(s + 2, &end, hex ? 16 : 8);
            *kind = YC_INT;
            if (errno == 0 && end == s + n && v <= (unsigned long long)LLONG_MAX)
                return json_integer((json_int_t)v);
            return NULL;
        }
    }
    if (all_digits(s + (n && (s[0] == '-' || s[0] == '+')), n - (n && (s[0] == '-' || s[0] == '+')), DEC)) {
        long long v;
        *kind = YC_INT;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == 0 && end == s + n)
            return json_integer((json_int_t)v);
        errno = 0;
        d = strtod(s, &end);
        if (end == s + n && isfinite(d))
            return json_real(d);
        return NULL;
    }
    if (is_float(s, n)) {
        *kind = YC_FLOAT;
        errno = 0;
        d = strtod(s, &end);
        if (end == s + n && isfinite(d))
            return json_real(d);
        return NULL;
    }
    return NULL;
}
