/* Request/response helpers for server core tests; see server_expect.h. */
#include "server_expect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "schema_check.h"

void expect_all_schema_valid(capture_sink_t *cap, const char *method)
{
    for (size_t i = 0; i < capture_count(cap); i++) {
        capture_item_t item = capture_item(cap, i);
        if (item.msg)
            MCP_ASSERT_SCHEMA_VALID(item.msg, method, "2026-07-28");
    }
}

json_t *serve_with(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                   json_t *request_new, int *status)
{
    capture_sink_t cap;
    capture_init(&cap);
    char method[128] = "";
    const char *m = json_string_value(json_object_get(request_new, "method"));
    if (m)
        strncat(method, m, sizeof method - 1);
    capture_roundtrip(srv, conn, request_new, ctx, &cap);
    json_decref(request_new);
    expect_all_schema_valid(&cap, method[0] ? method : NULL);

    int code = 0;
    json_t *response = json_incref((json_t *)capture_response(&cap, &code));
    if (!response && capture_count(&cap) > 0)
        code = capture_item(&cap, capture_count(&cap) - 1).status;
    if (status)
        *status = code;
    capture_cleanup(&cap);
    return response;
}

json_t *serve(mcp_server_t *srv, json_t *request_new, int *status)
{
    return serve_with(srv, NULL, NULL, request_new, status);
}

const json_t *expect_error(const json_t *response, int code)
{
    assert_non_null(response);
    const json_t *error = json_object_get(response, "error");
    if (!error) {
        char *text = json_dumps(response, JSON_COMPACT);
        fail_msg("expected error %d, got %s", code, text);
    }
    assert_int_equal(json_integer_value(json_object_get(error, "code")), code);
    return error;
}

static const json_t *result_of(const json_t *response)
{
    assert_non_null(response);
    const json_t *result = json_object_get(response, "result");
    if (!result) {
        char *text = json_dumps(response, JSON_COMPACT);
        fail_msg("expected a result, got %s", text);
    }
    return result;
}

const json_t *expect_complete(const json_t *response)
{
    const json_t *result = result_of(response);
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    return result;
}

const json_t *expect_input_required(const json_t *response)
{
    const json_t *result = result_of(response);
    assert_string_equal(json_string_value(json_object_get(result, "resultType")),
                        "input_required");
    return result;
}
