/*
 * json_copy.h - a shallow copy of a JSON object, whole or not at all.
 *
 * jansson's json_copy() of an object adds the members to the copy one by
 * one and ignores the additions that fail: out of memory, it returns a
 * copy that silently lacks members, which a request built from it would
 * then go without (its arguments, say) and a digest would be taken of.
 * This one returns NULL instead.
 *
 * Thread-safe as json_copy() is. NULL when out of memory (or `object` is
 * not an object).
 */
#ifndef MCP_JSON_COPY_H
#define MCP_JSON_COPY_H

#include <jansson.h>

static inline json_t *mcp_json_copy_object(const json_t *object)
{
    json_t *copy = json_is_object(object) ? json_copy((json_t *)object) : NULL;
    if (copy && json_object_size(copy) != json_object_size(object)) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

#endif
