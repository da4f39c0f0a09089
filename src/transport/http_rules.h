/*
 * The HTTP-level rules of the Streamable HTTP endpoint (internal): which
 * requests reach the server core at all. Pure functions over header
 * values; no I/O, no state, thread-safe.
 */
#ifndef MCP_TRANSPORT_HTTP_RULES_H
#define MCP_TRANSPORT_HTTP_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "mcp/headers.h"

/* What the Accept header(s) admit for the answer to a POST. */
typedef struct http_accept {
    bool json; /* application/json, application/(any), (any)/(any) with q > 0 */
    bool sse;  /* text/event-stream, text/(any), (any)/(any) with q > 0 */
} http_accept_t;

/*
 * Reads every Accept header (repeats form one list, as RFC 9110 says).
 * No Accept header, or only empty ones, admits both. Media ranges that do
 * not parse are skipped; a q of 0 excludes a range. Parameters other than
 * q are ignored.
 */
void http_accept_read(const mcp_headers_t *headers, http_accept_t *out);

/* True when there is exactly one Content-Type header and its media type is
 * application/json (case-insensitive, parameters such as charset allowed). */
bool http_content_type_is_json(const mcp_headers_t *headers);

/* True when `target` (a request target, possibly with "?query") names
 * exactly `path`. */
bool http_path_matches(const char *target, const char *path);

/*
 * The Content-Length header as a number. Returns false when there is none
 * or it is not a plain decimal number (the HTTP server frames the body;
 * this only serves an early 413).
 */
bool http_content_length(const mcp_headers_t *headers, uint64_t *out);

/* True for a Host value naming the loopback interface: localhost,
 * 127.0.0.1 or [::1], with an optional port. */
bool http_host_is_loopback(const char *host);

/*
 * The DNS-rebinding guard on Host. A missing Host passes (no browser sends
 * a request without one); more than one fails. Loopback names always pass;
 * otherwise the value must match an entry of `allowed` (NULL-terminated,
 * may be NULL): "*", a name accepting any port, or name:port exactly,
 * compared case-insensitively.
 */
bool http_host_allowed(const mcp_headers_t *headers, const char *const *allowed);

/*
 * The Origin check: a missing Origin passes; more than one fails; a
 * loopback origin (http:// or https:// then a loopback Host value) passes;
 * otherwise the value must equal an entry of `allowed` case-insensitively
 * (or an entry be "*").
 */
bool http_origin_allowed(const mcp_headers_t *headers, const char *const *allowed);

#endif /* MCP_TRANSPORT_HTTP_RULES_H */
