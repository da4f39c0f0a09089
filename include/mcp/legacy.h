/*
 * Serving legacy clients (2025-11-25, 2025-06-18, 2025-03-26) from the same
 * handlers: version negotiation for initialize, and the shapes legacy
 * clients expect (2026-07-28 specification, Basic > Versioning, "Backward
 * Compatibility with Initialization-Based Versions"; the shapes are those
 * of each legacy revision's schema).
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_LEGACY_H
#define MCP_LEGACY_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version an initialize response names: the client's `requested`
 * version when this SDK speaks it and it is a legacy version, otherwise the
 * newest legacy version (the client then decides whether it can go on).
 * Never NULL; static storage.
 */
MCP_API const char *mcp_legacy_negotiate_version(const char *requested);

/*
 * Reshapes a result built for the modern era (borrowed object, modified in
 * place) for a legacy client speaking `version`: removes resultType, ttlMs
 * and cacheScope; removes every "io.modelcontextprotocol/" key from _meta
 * (and _meta when it ends up empty); drops a structuredContent that is not
 * an object (legacy clients require an object; the text content stays).
 */
MCP_API void mcp_shape_legacy_result(const char *method, json_t *result, const char *version);

/*
 * Reshapes an error object (modified in place) for a legacy client: the
 * "resource not found" of resources/read (-32602 with data.uri) becomes
 * -32002, the code legacy clients know; the 2026-07-28 "missing client
 * capability" (-32021) becomes -32602 (Invalid params), its message and
 * data kept.
 */
MCP_API void mcp_shape_legacy_error(const char *method, json_t *error_obj);

/*
 * The server capabilities a legacy initialize result carries, derived from
 * the modern ones (borrowed): a copy of the object without "extensions"
 * (new reference). NULL or a value that is not an object gives {}. Returns
 * NULL only when out of memory.
 */
MCP_API json_t *mcp_legacy_server_capabilities(const json_t *modern_caps);

/*
 * The params of a server-to-client request a legacy client understands,
 * from an MRTR input request's params (borrowed; new reference returned):
 * elicitation/create loses "mode" before 2025-11-25 (form was the only
 * mode), and a url-mode elicitation gains `elicitation_id` (2025-11-25
 * requires one). Other methods (and a NULL method) are copied unchanged.
 * NULL or non-object params give {}. Returns NULL only when out of memory.
 */
MCP_API json_t *mcp_legacy_request_params(const char *method, const json_t *params,
                                          const char *version, const char *elicitation_id);

#ifdef __cplusplus
}
#endif
#endif /* MCP_LEGACY_H */
