/* Builders of legacy-era messages and a schema-checked submit; see legacy_request.h. */
#define _GNU_SOURCE

#include "legacy_request.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/headers.h"
#include "mcp/request.h"
#include "schema_check.h"

json_t *legacy_request(json_int_t id, const char *method, json_t *params_new)
{
    json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    assert_non_null(req);
    if (params_new)
        json_object_set_new(req, "params", params_new);
    return req;
}

json_t *legacy_initialize(json_int_t id, const char *version, const char *caps)
{
    json_t *capabilities = json_loads(caps ? caps : "{}", 0, NULL);
    assert_true(json_is_object(capabilities));
    return legacy_request(id, "initialize",
                          json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion", version,
                                    "capabilities", capabilities, "clientInfo", "name",
                                    "legacy-tests", "version", "1.0.0"));
}

json_t *legacy_notification(const char *method, json_t *params_new)
{
    json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    assert_non_null(msg);
    if (params_new)
        json_object_set_new(msg, "params", params_new);
    return msg;
}

json_t *legacy_result(const json_t *id, json_t *result_new)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result_new);
}

json_t *legacy_error(const json_t *id, int code, const char *message)
{
    return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                     code, "message", message);
}

const mcp_request_context_t *legacy_http_init(legacy_http_t *h, const char *version,
                                              const char *session_id)
{
    memset(h, 0, sizeof *h);
    size_t n = 0;
    if (version)
        h->items[n++] = (mcp_header_t){MCP_HEADER_PROTOCOL_VERSION, version};
    if (session_id)
        h->items[n++] = (mcp_header_t){MCP_HEADER_SESSION_ID, session_id};
    h->list = (mcp_headers_t){h->items, n};
    h->ctx = (mcp_request_context_t){.transport = MCP_TRANSPORT_HTTP, .headers = &h->list};
    return &h->ctx;
}

const mcp_request_context_t *legacy_http_accept(legacy_http_t *h, const char *value)
{
    h->items[h->list.count++] = (mcp_header_t){"Accept", value};
    return &h->ctx;
}

void legacy_expect_schema_valid(capture_sink_t *cap, const char *method)
{
    for (size_t i = 0; i < capture_count(cap); i++) {
        capture_item_t item = capture_item(cap, i);
        if (item.msg)
            MCP_ASSERT_SCHEMA_VALID(item.msg, method, LEGACY_SCHEMA);
    }
}

json_t *legacy_serve_http(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                          json_t *msg_new, int *status, char session_out[128])
{
    capture_sink_t cap;
    capture_init(&cap);
    char method[128] = "";
    const char *m = json_string_value(json_object_get(msg_new, "method"));
    if (m)
        snprintf(method, sizeof method, "%s", m);
    capture_roundtrip(srv, conn, msg_new, ctx, &cap);
    json_decref(msg_new);
    legacy_expect_schema_valid(&cap, method[0] ? method : NULL);

    int code = 0;
    json_t *response = json_incref((json_t *)capture_response(&cap, &code));
    if (!response && capture_count(&cap) > 0)
        code = capture_item(&cap, capture_count(&cap) - 1).status;
    if (status)
        *status = code;
    if (session_out && !capture_header(&cap, MCP_HEADER_SESSION_ID, session_out, 128))
        session_out[0] = '\0';
    capture_cleanup(&cap);
    return response;
}

json_t *legacy_serve(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                     json_t *msg_new, int *status)
{
    return legacy_serve_http(srv, conn, ctx, msg_new, status, NULL);
}

const json_t *expect_legacy_result(const json_t *response)
{
    assert_non_null(response);
    const json_t *result = json_object_get(response, "result");
    if (!result) {
        char *text = json_dumps(response, JSON_COMPACT);
        fail_msg("expected a result, got %s", text);
    }
    assert_null(json_object_get(result, "resultType"));
    assert_null(json_object_get(result, "ttlMs"));
    assert_null(json_object_get(result, "cacheScope"));
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(result, "_meta"), key, value) {
        if (strncmp(key, "io.modelcontextprotocol/", 24) == 0)
            fail_msg("a legacy result carries the modern _meta key %s", key);
    }
    return result;
}
