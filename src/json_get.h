/*
 * json_get.h - a member of a small JSON object, found without hashing.
 *
 * json_object_get() hashes its key on every call (~180 instructions), and
 * serving one request looks up some fifteen members of its params, _meta
 * and arguments, objects of a handful of members each. Walking the
 * members and comparing lengths first costs a third of that for the first
 * member and about as much as hashing for the fourth, so objects of more
 * than four members are still asked by hash.
 *
 * Same answers as json_object_get(): the value (borrowed), or NULL when
 * `object` is not an object, `key` is NULL or no member has that name.
 * Thread-safe as json_object_get() is (reading only).
 */
#ifndef MCP_JSON_GET_H
#define MCP_JSON_GET_H

#include <string.h>

#include <jansson.h>

static inline json_t *mcp_json_get(const json_t *object, const char *key)
{
    if (!json_is_object(object) || !key)
        return NULL;
    if (json_object_size(object) > 4)
        return json_object_get(object, key);
    json_t *o = (json_t *)object;
    size_t len = strlen(key);
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
        if (json_object_iter_key_len(it) == len && memcmp(json_object_iter_key(it), key, len) == 0)
            return json_object_iter_value(it);
    return NULL;
}

#endif
