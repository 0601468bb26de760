/*
 * json_same.h - the comparison the differential tests hold a fast path to:
 * a and b are json_equal, with the same types (an integer is never a real)
 * and the same key order at every level. Header-only, for the unit tests
 * and the fuzz targets (tests/fuzz includes it as "../unit/json_same.h").
 */
#ifndef SKILL_JSON_SAME_H
#define SKILL_JSON_SAME_H

#include <jansson.h>
#include <stdint.h>
#include <string.h>

static inline int json_same(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!json_same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (!json_is_object(a))
        return json_equal(a, b);
    /* jansson's iterators take non-const objects; nothing is changed */
    json_t *ma = (json_t *)(uintptr_t)a, *mb = (json_t *)(uintptr_t)b;
    void *ia = json_object_iter(ma), *ib = json_object_iter(mb);
    for (; ia && ib; ia = json_object_iter_next(ma, ia), ib = json_object_iter_next(mb, ib)) {
        size_t la = json_object_iter_key_len(ia);
        if (la != json_object_iter_key_len(ib) ||
            memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la) != 0 ||
            !json_same(json_object_iter_value(ia), json_object_iter_value(ib)))
            return 0;
    }
    return !ia && !ib;
}

#endif
