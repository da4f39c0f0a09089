/*
 * legacy_request: builds the messages of a legacy (2025-11-25, 2025-06-18,
 * 2025-03-26) client -- no per-request _meta claim, an initialize first --
 * and serves them through the server core with every answer checked
 * against the official 2025-11-25 schema.
 *
 *     mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
 *     json_t *init = legacy_serve(srv, conn, NULL,
 *                                 legacy_initialize(0, "2025-11-25", "{\"elicitation\":{}}"),
 *                                 NULL);
 *     json_t *tools = legacy_serve(srv, conn, NULL, legacy_request(1, "tools/list", NULL), NULL);
 *
 * Over HTTP, legacy_http_init() gives the context of a legacy POST: the
 * MCP-Protocol-Version and Mcp-Session-Id headers a client sends after
 * initialize (either may be left out).
 */
#ifndef MCP_TEST_LEGACY_REQUEST_H
#define MCP_TEST_LEGACY_REQUEST_H

#include <jansson.h>

#include "capture_sink.h"

/* The revision the schema checks use (the newest legacy schema we have). */
#define LEGACY_SCHEMA "2025-11-25"

/* {"jsonrpc":"2.0","id":id,"method":method,"params":params_new}; params_new
 * (stolen) may be NULL: then the message has no params. */
json_t *legacy_request(json_int_t id, const char *method, json_t *params_new);

/* An initialize request for `version` with the ClientCapabilities JSON
 * text `caps` (NULL: {}) and a clientInfo. */
json_t *legacy_initialize(json_int_t id, const char *version, const char *caps);

/* {"jsonrpc":"2.0","method":method,"params":params_new}; params_new
 * (stolen) may be NULL. */
json_t *legacy_notification(const char *method, json_t *params_new);

/* The client's answer to a server request: a result (stolen) or an error. */
json_t *legacy_result(const json_t *id, json_t *result_new);
json_t *legacy_error(const json_t *id, int code, const char *message);

/* The context of a legacy HTTP POST (or GET) with the given headers (NULL:
 * left out). */
typedef struct legacy_http {
    mcp_header_t items[3];
    mcp_headers_t list;
    mcp_request_context_t ctx;
} legacy_http_t;

/* Fills `h`; the strings are borrowed and must outlive its use. Returns
 * &h->ctx. */
const mcp_request_context_t *legacy_http_init(legacy_http_t *h, const char *version,
                                              const char *session_id);

/* Adds an Accept header of `value` (borrowed) to `h`; returns &h->ctx. */
const mcp_request_context_t *legacy_http_accept(legacy_http_t *h, const char *value);

/* Validates every message `cap` holds against the 2025-11-25 schema, as
 * the answer to `method` (server requests and notifications as such). */
void legacy_expect_schema_valid(capture_sink_t *cap, const char *method);

/*
 * Submits `msg_new` (stolen) on `conn` (may be NULL) with `ctx` (NULL:
 * stdio), waits for the release, asserts the sink contract and validates
 * every message sent with the 2025-11-25 schema. Returns the response (new
 * reference) or NULL; its HTTP status into *status (the ACCEPTED status
 * when only that was sent). When `session_out` is not NULL it receives
 * the Mcp-Session-Id the answer set ("" when none).
 */
json_t *legacy_serve_http(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                          json_t *msg_new, int *status, char session_out[128]);

/* legacy_serve_http without the session id. */
json_t *legacy_serve(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                     json_t *msg_new, int *status);

/* Asserts `response` is a legacy result: no resultType, no cache hints, no
 * io.modelcontextprotocol/ key in _meta. Returns the result (borrowed). */
const json_t *expect_legacy_result(const json_t *response);

#endif
