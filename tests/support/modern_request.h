/*
 * modern_request: builds 2026-07-28 requests the way a conforming client
 * sends them, for tests of the server core and of transports.
 *
 * Every request gets the required per-request _meta (protocolVersion,
 * clientCapabilities {}) plus clientInfo. Variants are made by editing the
 * result: modern_meta(req) gives the _meta object to change.
 *
 *     json_t *req = modern_request(7, "tools/call",
 *                                  json_pack("{s:s, s:{}}", "name", "echo", "arguments"));
 *     json_object_set_new(modern_meta(req), "progressToken", json_integer(1));
 *     modern_set_capabilities(req, "{\"elicitation\":{}}");
 *
 * For HTTP, modern_http_headers_init() derives the headers rung 1 of the
 * validation ladder requires (MCP-Protocol-Version, Mcp-Method, Mcp-Name).
 */
#ifndef MCP_TEST_MODERN_REQUEST_H
#define MCP_TEST_MODERN_REQUEST_H

#include <jansson.h>

#include "mcp/server_core.h"

#define MODERN_VERSION "2026-07-28"

/*
 * {"jsonrpc":"2.0","id":id,"method":method,"params":params_new + _meta}.
 * params_new (stolen) may be NULL for {}. When it already has "_meta", that
 * one is kept untouched, so a test can send a broken envelope.
 */
json_t *modern_request(json_int_t id, const char *method, json_t *params_new);

/* The same with a string id. */
json_t *modern_request_sid(const char *id, const char *method, json_t *params_new);

/* The request's params._meta (borrowed, to edit in place). */
json_t *modern_meta(json_t *request);

/* Replaces the declared clientCapabilities with the JSON object text `caps`. */
void modern_set_capabilities(json_t *request, const char *caps);

/* A retry of `request` for MRTR: a copy with a new id, the given
 * inputResponses (stolen; NULL: none) and requestState (NULL: none). */
json_t *modern_retry(const json_t *request, json_int_t id, json_t *input_responses_new,
                     const char *request_state);

/* {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}}
 * (id borrowed), without _meta, as the spec's own example sends it. */
json_t *modern_cancel_notification(const json_t *id);

/* HTTP request headers for a request, as a conforming client sends them. */
#define MODERN_HTTP_MAX_HEADERS 16
typedef struct modern_http_headers {
    mcp_header_t items[MODERN_HTTP_MAX_HEADERS];
    char *owned[MODERN_HTTP_MAX_HEADERS * 2];
    size_t n_owned;
    mcp_headers_t list; /* what mcp_request_context_t.headers points to */
} modern_http_headers_t;

/* Fills `h` with MCP-Protocol-Version, Mcp-Method and (for tools/call,
 * prompts/get and resources/read) Mcp-Name, encoded like a client does. */
void modern_http_headers_init(modern_http_headers_t *h, const json_t *request);

/* Adds one more header (both strings copied). */
void modern_http_headers_add(modern_http_headers_t *h, const char *name, const char *value);

/* Removes every header named `name` (case-insensitive). */
void modern_http_headers_remove(modern_http_headers_t *h, const char *name);

void modern_http_headers_cleanup(modern_http_headers_t *h);

/* An HTTP request context over `h` with an optional principal. */
mcp_request_context_t modern_http_context(const modern_http_headers_t *h, const char *principal);

#endif
