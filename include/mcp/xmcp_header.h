/*
 * `x-mcp-header` annotations in a tool's inputSchema (2026-07-28
 * specification, Basic > Transports > Streamable HTTP, "Custom Headers
 * from Tool Parameters").
 *
 * A property schema may carry "x-mcp-header": "<Name>"; an HTTP client then
 * mirrors the argument's value into the header Mcp-Param-<Name>. A tool
 * whose annotations break the rules is invalid: clients drop it, servers
 * refuse to register it. The rules:
 *   - the value is a non-empty RFC 9110 token (ALPHA DIGIT !#$%&'*+-.^_`|~);
 *   - values are unique, compared case-insensitively;
 *   - the annotated property has "type" "string", "integer" or "boolean",
 *     or an array of those plus "null" with at least one non-null member
 *     (a nullable parameter); a property without "type" is refused;
 *   - the property is reachable from the root only through a chain of
 *     "properties" keywords (not items, prefixItems, anyOf/oneOf/allOf/not,
 *     if/then/else, $ref, $defs, additionalProperties, ...); the root itself
 *     is not a property.
 * Annotations are searched in every subschema JSON Schema defines (2020-12
 * and draft-07 keywords); members of data keywords (const, enum, default,
 * examples) and of unknown keywords are data, not annotations. Schemas
 * nested deeper than 64 subschema levels are refused as a whole.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_XMCP_HEADER_H
#define MCP_XMCP_HEADER_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One annotated property: where its value lives in `arguments`, and the
 * header name suffix (the full header is "Mcp-Param-" + name). */
typedef struct mcp_param_header {
    char *name;   /* as written in the schema */
    char **path;  /* property names from the root, path[0] outermost */
    size_t depth; /* number of entries in path (>= 1) */
} mcp_param_header_t;

typedef struct mcp_param_headers {
    mcp_param_header_t *items;
    size_t count;
} mcp_param_headers_t;

/*
 * Validates the annotations of `input_schema` (borrowed) and collects them
 * in schema order into *out (release with mcp_param_headers_clear). A schema
 * without annotations, a boolean schema or NULL gives count 0. Errors:
 * MCP_EINVAL with err->message naming the offending property (as a JSON
 * Pointer) and rule (err->code is -32602); MCP_ENOMEM. On error *out is
 * empty. `err` may be NULL.
 */
MCP_API int mcp_xmcp_headers_collect(const json_t *input_schema, mcp_param_headers_t *out,
                                     mcp_error_t *err);

/* Frees everything in *headers and zeroes it. NULL-safe. */
MCP_API void mcp_param_headers_clear(mcp_param_headers_t *headers);

/*
 * The value of `h` in a call's `arguments` (borrowed), following h->path
 * through nested objects. Returns the value (borrowed) or NULL when any step
 * is missing, is not an object, or the value is JSON null: then no header
 * is sent or expected.
 */
MCP_API json_t *mcp_param_header_value(const mcp_param_header_t *h, const json_t *arguments);

/* True when `s` is a non-empty RFC 9110 token. */
MCP_API bool mcp_is_http_token(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* MCP_XMCP_HEADER_H */
