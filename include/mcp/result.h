/*
 * Modern result shaping and HTTP status of responses (2026-07-28
 * specification: Basic > Overview, "ResultType" and "_meta"; Basic >
 * Patterns > Multi Round-Trip Requests; Basic > Transports > Streamable
 * HTTP; Server > Utilities > Caching).
 *
 * Every 2026-07-28 result gets resultType ("complete" unless the handler
 * said otherwise) and _meta["io.modelcontextprotocol/serverInfo"].
 * Request-scoped keys that a handler may have copied from the request's
 * _meta (protocolVersion, clientCapabilities, clientInfo, logLevel) are
 * removed from the result's _meta; its other keys stay. The results of the
 * cacheable methods, of kind "complete", get ttlMs and cacheScope unless
 * the handler set its own. Results of any other kind ("input_required", which only
 * tools/call, prompts/get and resources/read may return, "task", extension
 * kinds) never carry cache hints.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_RESULT_H
#define MCP_RESULT_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCP_DEFAULT_TTL_MS 60000
#define MCP_CACHE_PRIVATE "private"
#define MCP_CACHE_PUBLIC "public"

typedef struct mcp_result_shape {
    /* Implementation object, or NULL to omit serverInfo. Results take a
     * reference to it rather than a copy: it must not change afterwards. */
    const json_t *server_info;
    int64_t ttl_ms;                  /* default ttlMs for cacheable results (< 0: MCP_DEFAULT_TTL_MS) */
    const char *cache_scope;         /* default cacheScope; NULL means "private" */
} mcp_result_shape_t;

/* True for server/discover, tools/list, prompts/list, resources/list,
 * resources/templates/list and resources/read, and for the Skills
 * extension's skills/list, skills/get and resources/directory/read. */
MCP_API bool mcp_method_is_cacheable(const char *method);

/* True for tools/call, prompts/get and resources/read: the only methods
 * that may answer resultType "input_required". */
MCP_API bool mcp_method_may_require_input(const char *method);

/*
 * Shapes `result` (an object, modified in place) as the result of `method`
 * (which may be NULL: then neither cacheable nor allowed input_required):
 *   - resultType "complete" is added when absent;
 *   - for "complete" results of a cacheable method, ttlMs and cacheScope
 *     are added when absent, from `shape` (MCP_DEFAULT_TTL_MS and
 *     "private" when `shape` is NULL); handler-set values are kept;
 *   - for any other kind, ttlMs and cacheScope are removed;
 *   - the request-scoped keys are removed from _meta,
 *     shape->server_info is stored in it (a reference, not a copy;
 *     replacing a handler's), and a _meta left empty is removed.
 * Everything is validated before anything is changed: on MCP_EINVAL the
 * result is untouched. Errors (MCP_EINVAL, *err filled with -32603, the
 * handler's fault): result not an object; resultType not a string; _meta
 * not an object; "input_required" for a method that may not return it,
 * with neither inputRequests nor requestState, with inputRequests not an
 * object or requestState not a string; a handler-set ttlMs that is not a
 * non-negative integer or cacheScope that is neither "public" nor
 * "private", or such a default cache_scope when one is needed.
 * MCP_ENOMEM (-32603) on allocation failure. `shape` and `err` may be NULL.
 */
MCP_API int mcp_shape_modern_result(const char *method, json_t *result,
                                    const mcp_result_shape_t *shape, mcp_error_t *err);

/*
 * Shapes a JSON-RPC error object (modified in place) for the modern era:
 * -32002 (legacy resource not found) becomes -32602; everything else keeps
 * its shape.
 */
MCP_API void mcp_shape_modern_error(json_t *error_obj);

/*
 * The HTTP status for a JSON-RPC error code on the modern path: -32020,
 * -32021, -32022 -> 400; -32601 -> 404; -32700, -32600 -> 400; any other
 * error -> 400 when it was raised before the method ran
 * (`before_dispatch`), else 200. Code 0 (a result) -> 200.
 */
MCP_API int mcp_http_status_for_code(int code, bool before_dispatch);

/* Same, reading the code from a response message (borrowed): a message
 * without "error" gives 200; an error whose code is missing, not an
 * integer, 0 or outside the int range counts as -32603. */
MCP_API int mcp_http_status_for_response(const json_t *response, bool before_dispatch);

#ifdef __cplusplus
}
#endif
#endif /* MCP_RESULT_H */
