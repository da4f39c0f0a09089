/*
 * A transport-neutral view of HTTP request headers, so that the protocol
 * core and the server core never depend on an HTTP library.
 *
 * All functions are pure and thread-safe.
 */
#ifndef MCP_HEADERS_H
#define MCP_HEADERS_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One header line: its name, and its value as the HTTP server handed it
 * over. libmcp's built-in servers trim the optional whitespace around a
 * value (RFC 9110 section 5.5); one from an embedding server may come
 * untrimmed, and the endpoint's checks trim what they read
 * (mcp_header_trim()). */
typedef struct mcp_header {
    const char *name;
    const char *value;
} mcp_header_t;

/* A borrowed list of headers. Names compare case-insensitively. */
typedef struct mcp_headers {
    const mcp_header_t *items;
    size_t count;
} mcp_headers_t;

/*
 * The raw value of the first header named `name` (case-insensitive), or
 * NULL when absent. `headers` may be NULL (no headers at all).
 */
MCP_API const char *mcp_headers_get(const mcp_headers_t *headers, const char *name);

/* How many headers are named `name` (case-insensitive). */
MCP_API size_t mcp_headers_count(const mcp_headers_t *headers, const char *name);

/*
 * Trims HTTP optional whitespace (SP and HTAB) from both ends of `value`:
 * stores the start in *start and the trimmed length in *len.
 */
MCP_API void mcp_header_trim(const char *value, const char **start, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* MCP_HEADERS_H */
