/*
 * JSON-RPC and MCP error codes, and builders for the MCP errors whose `data`
 * has a defined shape (2026-07-28 specification, Basic > Overview, "Error
 * Codes", and the schema's HeaderMismatchError,
 * MissingRequiredClientCapabilityError and UnsupportedProtocolVersionError).
 *
 * All functions here are pure and thread-safe.
 */
#ifndef MCP_ERRORS_H
#define MCP_ERRORS_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* JSON-RPC 2.0 */
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603,
    /* MCP 2026-07-28 */
    MCP_HEADER_MISMATCH = -32020,             /* data.mismatch */
    MCP_MISSING_CLIENT_CAPABILITY = -32021,   /* data.requiredCapabilities (object) */
    MCP_UNSUPPORTED_PROTOCOL_VERSION = -32022,/* data.supported, data.requested */
    /* Retired codes a client still meets from legacy (<= 2025-11-25) servers */
    MCP_LEGACY_RESOURCE_NOT_FOUND = -32002,
    MCP_LEGACY_URL_ELICITATION_REQUIRED = -32042
};

/*
 * A short English name for a code ("Parse error", "Method not found",
 * "Header mismatch", ...). Unknown codes give "Server error" inside
 * -32099..-32000, "Error" elsewhere. Never NULL; static storage.
 */
MCP_API const char *mcp_error_code_name(int code);

/*
 * -32020 HeaderMismatch. `header` is the header's canonical name
 * ("Mcp-Name"), `received` the raw header value (NULL when the header is
 * missing), `expected` the body's value (borrowed; NULL when the body has
 * none). `detail` is a sentence for the message (may be NULL).
 * data = {"mismatch": {"header": ..., "received": string|null,
 *                      "expected": <body value>|null}}.
 * Returns MCP_EINVAL (the rejection) after filling *err.
 */
MCP_API int mcp_error_header_mismatch(mcp_error_t *err, const char *header,
                                      const char *received, const json_t *expected,
                                      const char *detail);

/*
 * -32021 MissingRequiredClientCapability with
 * data.requiredCapabilities = required_new (a ClientCapabilities object,
 * stolen). Returns MCP_EINVAL after filling *err.
 */
MCP_API int mcp_error_missing_capability(mcp_error_t *err, json_t *required_new);

/*
 * -32022 UnsupportedProtocolVersion with data.supported = the `n` versions
 * in `supported` (in that order) and data.requested = requested (an empty
 * string when requested is NULL). Returns MCP_EINVAL after filling *err.
 */
MCP_API int mcp_error_unsupported_version(mcp_error_t *err, const char *requested,
                                          const char *const *supported, size_t n);

/* True for the codes that only a 2026-07-28 (modern) peer sends:
 * -32020, -32021, -32022. Used by era detection. */
MCP_API bool mcp_error_code_is_modern(int code);

#ifdef __cplusplus
}
#endif
#endif /* MCP_ERRORS_H */
