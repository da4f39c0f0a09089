/*
 * server_expect: one-call request/response helpers and assertions for tests
 * of the server core, on top of capture_sink and schema_check.
 *
 *     json_t *response = serve(srv, modern_request(1, "tools/list", NULL), NULL);
 *     const json_t *result = expect_complete(response);
 *     ...
 *     json_decref(response);
 *
 * Everything the core sends through these helpers (notifications included)
 * is checked against the official 2026-07-28 schema, and the sink contract
 * (one release, nothing after the response) is asserted.
 */
#ifndef MCP_TEST_SERVER_EXPECT_H
#define MCP_TEST_SERVER_EXPECT_H

#include <jansson.h>

#include "capture_sink.h"

/*
 * For use inside handlers, which run on worker threads where cmocka's
 * assertions must not be used (they longjmp): when `cond` is false the
 * request fails with -32000 naming the condition, which expect_complete()
 * and friends then report on the test thread.
 */
#define HANDLER_CHECK(call, cond)                                                      \
    do {                                                                               \
        if (!(cond))                                                                   \
            return mcp_call_fail((call), -32000, "%s:%d: handler check failed: %s",    \
                                 __FILE__, __LINE__, #cond);                           \
    } while (0)

/*
 * Submits `request_new` (stolen) over stdio without a connection, waits for
 * the release, asserts the sink contract and validates every message sent.
 * Returns the response (new reference) or NULL when none was sent; its HTTP
 * status into *status when not NULL (the ACCEPTED status when only that was
 * sent, 0 when nothing was).
 */
json_t *serve(mcp_server_t *srv, json_t *request_new, int *status);

/* serve() on `conn` (may be NULL) with `ctx` (NULL: stdio). */
json_t *serve_with(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                   json_t *request_new, int *status);

/* Validates every message `cap` holds as part of the answer to `method`. */
void expect_all_schema_valid(capture_sink_t *cap, const char *method);

/* Asserts `response` is a JSON-RPC error with `code`; returns its error
 * object (borrowed). */
const json_t *expect_error(const json_t *response, int code);

/* Asserts `response` is a result with resultType "complete"; returns the
 * result (borrowed). */
const json_t *expect_complete(const json_t *response);

/* Asserts `response` is an input_required result; returns it (borrowed). */
const json_t *expect_input_required(const json_t *response);

#endif
