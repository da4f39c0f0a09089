/*
 * Modern result shaping (digest sections 1.3, 2.1, 3.1, 3.2 and 6) and the
 * HTTP status of a modern response (section 4.4).
 *
 * mcp_shape_modern_result() validates everything first and only then
 * edits the result, so a handler mistake leaves the result as it was.
 */
#include <string.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/result.h"

static bool method_in(const char *method, const char *const *list, size_t n)
{
    if (!method)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(method, list[i]) == 0)
            return true;
    return false;
}

bool mcp_method_is_cacheable(const char *method)
{
    static const char *const cacheable[] = {
        "server/discover", "tools/list", "prompts/list",
        "resources/list", "resources/templates/list", "resources/read",
        /* The Skills extension (SEP-2640): its results are CacheableResults,
         * and a directory's listing is a list like resources/list. */
        "skills/list", "skills/get", "resources/directory/read",
    };
    return method_in(method, cacheable, sizeof cacheable / sizeof cacheable[0]);
}

bool mcp_method_may_require_input(const char *method)
{
    static const char *const mrtr[] = {"tools/call", "prompts/get", "resources/read"};
    return method_in(method, mrtr, sizeof mrtr / sizeof mrtr[0]);
}

static bool is_cache_scope(const char *scope)
{
    return scope && (strcmp(scope, MCP_CACHE_PUBLIC) == 0 ||
                     strcmp(scope, MCP_CACHE_PRIVATE) == 0);
}

/* The handler's mistakes are the server's fault: -32603, never -32602. */
static int shaping_error(mcp_error_t *err, const char *method, const char *why)
{
    return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                         "Invalid %s result: %s", method ? method : "(unknown method)", why);
}

/* The members of a result that shaping looks at, found in one walk over
 * it (results have a handful of members; a lookup hashes its key). */
typedef struct result_view {
    const json_t *type, *meta, *ttl, *scope, *requests, *state;
} result_view_t;

static void read_result(const json_t *result, result_view_t *v)
{
    memset(v, 0, sizeof *v);
    for (void *it = json_object_iter((json_t *)result); it;
         it = json_object_iter_next((json_t *)result, it)) {
        const char *key = json_object_iter_key(it);
        const json_t *value = json_object_iter_value(it);
        if (strcmp(key, "resultType") == 0)
            v->type = value;
        else if (strcmp(key, "_meta") == 0)
            v->meta = value;
        else if (strcmp(key, "ttlMs") == 0)
            v->ttl = value;
        else if (strcmp(key, "cacheScope") == 0)
            v->scope = value;
        else if (strcmp(key, "inputRequests") == 0)
            v->requests = value;
        else if (strcmp(key, "requestState") == 0)
            v->state = value;
    }
}

/* Checks the handler-set parts of `result` before anything is changed. */
static int validate_result(const char *method, const result_view_t *v, bool cacheable,
                           const mcp_result_shape_t *shape, mcp_error_t *err)
{
    if (v->type && !json_is_string(v->type))
        return shaping_error(err, method, "resultType is not a string");
    const char *kind = v->type ? json_string_value(v->type) : "complete";

    if (v->meta && !json_is_object(v->meta))
        return shaping_error(err, method, "_meta is not an object");

    if (strcmp(kind, "input_required") == 0) {
        if (!mcp_method_may_require_input(method))
            return shaping_error(err, method, "this method may not answer input_required");
        if (!v->requests && !v->state)
            return shaping_error(err, method,
                                 "input_required needs inputRequests or requestState");
        if (v->requests && !json_is_object(v->requests))
            return shaping_error(err, method, "inputRequests is not an object");
        if (v->state && !json_is_string(v->state))
            return shaping_error(err, method, "requestState is not a string");
        return MCP_OK;
    }

    if (strcmp(kind, "complete") != 0 || !cacheable)
        return MCP_OK;

    if (v->ttl && (!json_is_integer(v->ttl) || json_integer_value(v->ttl) < 0))
        return shaping_error(err, method, "ttlMs is not a non-negative integer");
    if (v->scope && !is_cache_scope(json_string_value(v->scope)))
        return shaping_error(err, method, "cacheScope is neither \"public\" nor \"private\"");
    if (!v->scope && shape && shape->cache_scope && !is_cache_scope(shape->cache_scope))
        return shaping_error(err, method, "the default cacheScope is neither public nor private");
    return MCP_OK;
}

/* Keys a handler may have copied from the request's _meta: they describe
 * the request, and echoing them would misstate the response. */
static const char *const request_scoped_keys[] = {
    MCP_META_PROTOCOL_VERSION, MCP_META_CLIENT_CAPABILITIES,
    MCP_META_CLIENT_INFO, MCP_META_LOG_LEVEL,
};

static int shape_meta(json_t *result, json_t *meta, const json_t *server_info)
{
    if (meta)
        for (size_t i = 0; i < sizeof request_scoped_keys / sizeof request_scoped_keys[0]; i++)
            json_object_del(meta, request_scoped_keys[i]);

    if (server_info) {
        if (!meta) {
            meta = json_object();
            if (json_object_set_new(result, "_meta", meta) != 0)
                return MCP_ENOMEM;
        }
        /* Shared, not copied: a copy per response measured about 4% of a
         * tools/call on HTTP. The caller keeps server_info immutable (see
         * result.h); results are serialised, never edited, once shaped. */
        if (json_object_set(meta, MCP_META_SERVER_INFO, (json_t *)server_info) != 0)
            return MCP_ENOMEM;
    }
    if (meta && json_object_size(meta) == 0)
        json_object_del(result, "_meta");
    return MCP_OK;
}

static int add_cache_hints(json_t *result, const result_view_t *v,
                           const mcp_result_shape_t *shape)
{
    if (!v->ttl) {
        int64_t ttl = shape && shape->ttl_ms >= 0 ? shape->ttl_ms : MCP_DEFAULT_TTL_MS;
        if (json_object_set_new(result, "ttlMs", json_integer((json_int_t)ttl)) != 0)
            return MCP_ENOMEM;
    }
    if (!v->scope) {
        const char *scope = shape && shape->cache_scope ? shape->cache_scope : MCP_CACHE_PRIVATE;
        if (json_object_set_new(result, "cacheScope", json_string(scope)) != 0)
            return MCP_ENOMEM;
    }
    return MCP_OK;
}

int mcp_shape_modern_result(const char *method, json_t *result, const mcp_result_shape_t *shape,
                            mcp_error_t *err)
{
    if (!json_is_object(result))
        return shaping_error(err, method, "not a JSON object");
    result_view_t v;
    read_result(result, &v);
    bool cacheable = mcp_method_is_cacheable(method);
    int rc = validate_result(method, &v, cacheable, shape, err);
    if (rc != MCP_OK)
        return rc;

    if (!v.type) {
        json_t *type = json_string_nocheck("complete");
        if (!type || json_object_set_new_nocheck(result, "resultType", type) != 0)
            return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, NULL);
        v.type = type;
    }
    const char *kind = json_string_value(v.type);

    if (strcmp(kind, "complete") == 0) {
        if (cacheable)
            rc = add_cache_hints(result, &v, shape);
    } else {
        /* Cache hints describe a final answer; input_required, task and any
         * other kind must not carry them (digest section 6). A task's
         * ttlMs is no hint but the task's lifetime (a field of the Tasks
         * extension's Task), so it stays. */
        if (strcmp(kind, "task") != 0)
            json_object_del(result, "ttlMs");
        json_object_del(result, "cacheScope");
    }
    if (rc == MCP_OK)
        rc = shape_meta(result, (json_t *)v.meta, shape ? shape->server_info : NULL);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, NULL);
    return MCP_OK;
}

void mcp_shape_modern_error(json_t *error_obj)
{
    json_t *code = json_object_get(error_obj, "code");
    if (json_is_integer(code) && json_integer_value(code) == MCP_LEGACY_RESOURCE_NOT_FOUND)
        json_integer_set(code, MCP_INVALID_PARAMS);
}

int mcp_http_status_for_code(int code, bool before_dispatch)
{
    switch (code) {
    case 0:
        return 200;
    case MCP_METHOD_NOT_FOUND:
        return 404;
    case MCP_HEADER_MISMATCH:
    case MCP_MISSING_CLIENT_CAPABILITY:
    case MCP_UNSUPPORTED_PROTOCOL_VERSION:
    case MCP_PARSE_ERROR:
    case MCP_INVALID_REQUEST:
        return 400;
    default:
        return before_dispatch ? 400 : 200;
    }
}

int mcp_http_status_for_response(const json_t *response, bool before_dispatch)
{
    const json_t *error = json_object_get(response, "error");
    if (!error)
        return 200;
    /* An error response always maps to an error status: an unreadable or
     * zero code counts as an internal error, never as a result. */
    const json_t *code = json_object_get(error, "code");
    json_int_t c = json_is_integer(code) ? json_integer_value(code) : 0;
    if (c == 0 || c < INT32_MIN || c > INT32_MAX)
        c = MCP_INTERNAL_ERROR;
    return mcp_http_status_for_code((int)c, before_dispatch);
}
