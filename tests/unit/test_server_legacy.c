/*
 * Server core, legacy clients on a connection (stdio): the initialize
 * handshake (version negotiation, capabilities derived from the
 * registries), notifications/initialized and roots/list_changed, ping,
 * logging/setLevel per session, resources/subscribe and unsubscribe on the
 * list-changed and update fan-out, the methods shared with the modern era
 * answered in legacy shapes (no resultType, no cache hints, no reserved
 * _meta keys, -32002 for a missing resource), progress, the era pinned by
 * the first request of a connection, and the modern-only mode that refuses
 * legacy traffic. Every message is checked against the 2025-11-25 schema.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "legacy_request.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "(none)");
}

/* Logs one message at each of three levels. */
static int logger(mcp_call_t *call, void *user)
{
    mcp_call_log(call, "info", "test", json_string("at info"));
    mcp_call_log(call, "warning", NULL, json_string("at warning"));
    mcp_call_log(call, "error", NULL, json_string("at error"));
    return mcp_call_add_text(call, "logged");
}

static int progress(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_progress(call, 1, 2, "half") == MCP_OK);
    HANDLER_CHECK(call, mcp_call_progress(call, 2, 2, NULL) == MCP_OK);
    return mcp_call_add_text(call, "done");
}

/* A result a modern client reads with its caching and reserved _meta: the
 * legacy shape drops what legacy clients do not know. */
static int structured_list(mcp_call_t *call, void *user)
{
    mcp_call_set_result_meta(call, "com.example/trace", json_string("t-1"));
    return mcp_call_set_structured(call, json_pack("[i, i]", 1, 2));
}

static int era_of_call(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_era(call) == MCP_ERA_LEGACY);
    const json_t *caps = mcp_call_client_capabilities(call);
    return mcp_call_add_textf(call, "%s %s", mcp_call_protocol_version(call),
                              json_object_get(caps, "sampling") ? "sampling" : "no-sampling");
}

static int read_resource(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "contents");
}

static int read_missing(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_resource_not_found(call);
}

static int prompt(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user", mcp_content_text("hello"));
}

static int complete(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *name,
                    const char *argument, const char *value, const json_t *context, void *user)
{
    mcp_call_add_completion(call, "alpha");
    return mcp_call_add_completion(call, "alpine");
}

static mcp_server_t *new_server_with(mcp_legacy_mode_t legacy)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "legacy-test", .version = "1", .legacy = legacy}, NULL);
    assert_non_null(srv);
    return srv;
}

static void add_tool(mcp_server_t *srv, const char *name, mcp_tool_fn fn)
{
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = fn}, NULL),
                     MCP_OK);
}

/* A server offering one of everything. */
static mcp_server_t *full_server_with(mcp_legacy_mode_t legacy)
{
    mcp_server_t *srv = new_server_with(legacy);
    add_tool(srv, "echo", echo);
    add_tool(srv, "logger", logger);
    add_tool(srv, "progress", progress);
    add_tool(srv, "structured", structured_list);
    add_tool(srv, "era", era_of_call);
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "test://r",
                                                               .name = "r",
                                                               .handler = read_resource},
                                             NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "test://gone",
                                                               .name = "gone",
                                                               .handler = read_missing},
                                             NULL),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_resource_template(
            srv,
            &(mcp_resource_template_t){
                .uri_template = "test://t/{x}", .name = "t", .handler = read_resource},
            NULL),
        MCP_OK);
    assert_int_equal(mcp_server_add_prompt(
                         srv, &(mcp_prompt_t){.name = "greet", .handler = prompt}, NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_set_completion(srv, complete, NULL), MCP_OK);
    return srv;
}

static mcp_server_t *full_server(void)
{
    return full_server_with(MCP_LEGACY_SESSIONS);
}

/* A stdio connection whose outbound messages (those of no request) go to
 * `outbound` (may be NULL). */
static mcp_conn_t *new_conn(mcp_server_t *srv, capture_sink_t *outbound)
{
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    assert_non_null(conn);
    if (outbound) {
        capture_init(outbound);
        mcp_conn_set_outbound(conn, &outbound->sink);
    }
    return conn;
}

/* initialize + notifications/initialized; returns the InitializeResult
 * (new reference). */
static json_t *handshake(mcp_server_t *srv, mcp_conn_t *conn, const char *version,
                         const char *caps)
{
    json_t *response =
        legacy_serve(srv, conn, NULL, legacy_initialize(0, version, caps), NULL);
    json_t *result = json_incref((json_t *)expect_legacy_result(response));
    json_decref(response);
    int status = 0;
    assert_null(legacy_serve(srv, conn, NULL,
                             legacy_notification("notifications/initialized", NULL), &status));
    assert_int_equal(status, 202);
    return result;
}

/* A connection that completed the handshake at 2025-11-25. */
static mcp_conn_t *initialized_conn(mcp_server_t *srv, capture_sink_t *outbound,
                                    const char *caps)
{
    mcp_conn_t *conn = new_conn(srv, outbound);
    json_decref(handshake(srv, conn, "2025-11-25", caps));
    return conn;
}

static json_t *call_tool(mcp_server_t *srv, mcp_conn_t *conn, json_int_t id, const char *name,
                         json_t *meta_new)
{
    json_t *params = json_pack("{s:s, s:{}}", "name", name, "arguments");
    if (meta_new)
        json_object_set_new(params, "_meta", meta_new);
    return legacy_serve(srv, conn, NULL, legacy_request(id, "tools/call", params), NULL);
}

/* The text of the first content block of a CallToolResult response. */
static const char *first_text(const json_t *response)
{
    const json_t *result = expect_legacy_result(response);
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* ------------------------------------------------------------------ */
/* The handshake                                                       */
/* ------------------------------------------------------------------ */

/* The server answers the client's version when it speaks it, else its
 * newest legacy one (the client then decides whether it can go on). */
static void test_initialize_negotiates_the_version(void **state)
{
    static const struct {
        const char *requested, *answered;
    } cases[] = {
        {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"},
        {"2025-03-26", "2025-03-26"}, {"2024-11-05", "2025-11-25"},
        {"2026-07-28", "2025-11-25"}, {"1999-01-01", "2025-11-25"},
        {"not a date", "2025-11-25"},
    };
    mcp_server_t *srv = full_server();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_conn_t *conn = new_conn(srv, NULL);
        json_t *result = handshake(srv, conn, cases[i].requested, NULL);
        assert_string_equal(json_string_value(json_object_get(result, "protocolVersion")),
                            cases[i].answered);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(result, "serverInfo"), "name")),
            "legacy-test");
        /* The session speaks the negotiated version. */
        json_t *response = call_tool(srv, conn, 1, "era", NULL);
        char expected[64];
        snprintf(expected, sizeof expected, "%s no-sampling", cases[i].answered);
        assert_string_equal(first_text(response), expected);
        json_decref(response);
        json_decref(result);
        mcp_conn_free(conn);
    }
    mcp_server_free(srv);
}

/* Legacy capabilities are derived from what is registered, like the modern
 * ones, without the modern-only "extensions". */
static void test_initialize_capabilities_follow_the_registries(void **state)
{
    mcp_server_t *srv = new_server_with(MCP_LEGACY_SESSIONS);
    mcp_conn_t *conn = new_conn(srv, NULL);
    json_t *result = handshake(srv, conn, "2025-11-25", NULL);
    json_t *expected = json_pack("{s:{}}", "logging");
    assert_true(json_equal(json_object_get(result, "capabilities"), expected));
    assert_null(json_object_get(result, "instructions"));
    json_decref(expected);
    json_decref(result);
    mcp_conn_free(conn);
    mcp_server_free(srv);

    srv = full_server();
    conn = new_conn(srv, NULL);
    result = handshake(srv, conn, "2025-11-25", NULL);
    expected = json_pack("{s:{}, s:{s:b}, s:{s:b}, s:{s:b, s:b}, s:{}}", "logging", "tools",
                         "listChanged", 1, "prompts", "listChanged", 1, "resources",
                         "listChanged", 1, "subscribe", 1, "completions");
    assert_true(json_equal(json_object_get(result, "capabilities"), expected));
    json_decref(expected);
    json_decref(result);
    mcp_conn_free(conn);
    mcp_server_free(srv);

    srv = mcp_server_new(&(mcp_server_options_t){.name = "legacy-test",
                                                 .version = "1",
                                                 .instructions = "Be kind."},
                         NULL);
    conn = new_conn(srv, NULL);
    result = handshake(srv, conn, "2025-06-18", NULL);
    assert_string_equal(json_string_value(json_object_get(result, "instructions")), "Be kind.");
    json_decref(result);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

static void test_initialize_needs_version_and_capabilities(void **state)
{
    const char *params[] = {
        "{\"capabilities\":{}}",
        "{\"protocolVersion\":\"2025-11-25\"}",
        "{\"protocolVersion\":20251125,\"capabilities\":{}}",
        "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":[]}",
        "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":\"me\"}",
    };
    mcp_server_t *srv = full_server();
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        mcp_conn_t *conn = new_conn(srv, NULL);
        json_t *response = legacy_serve(
            srv, conn, NULL, legacy_request(0, "initialize", json_loads(params[i], 0, NULL)), NULL);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
        /* Nothing was initialized: a valid initialize still works. */
        json_decref(handshake(srv, conn, "2025-11-25", NULL));
        mcp_conn_free(conn);
    }
    mcp_server_free(srv);
}

static void test_initialize_once_per_connection(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    json_t *response =
        legacy_serve(srv, conn, NULL, legacy_initialize(5, "2025-11-25", NULL), NULL);
    expect_error(response, MCP_INVALID_REQUEST);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Before initialize only ping is served (the lifecycle allows a client to
 * ping first); anything else is refused. */
static void test_requests_before_initialize(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = new_conn(srv, NULL);
    json_t *response = legacy_serve(srv, conn, NULL, legacy_request(1, "ping", NULL), NULL);
    assert_int_equal(json_object_size(expect_legacy_result(response)), 0);
    json_decref(response);
    response = legacy_serve(srv, conn, NULL, legacy_request(2, "tools/list", NULL), NULL);
    expect_error(response, MCP_INVALID_REQUEST);
    json_decref(response);
    json_decref(handshake(srv, conn, "2025-11-25", NULL));
    response = legacy_serve(srv, conn, NULL, legacy_request(3, "tools/list", NULL), NULL);
    expect_legacy_result(response);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Client notifications are accepted and nothing is written back. */
static void test_client_notifications_are_accepted(void **state)
{
    mcp_server_t *srv = full_server();
    capture_sink_t outbound;
    mcp_conn_t *conn = initialized_conn(srv, &outbound, "{\"roots\":{\"listChanged\":true}}");
    const char *methods[] = {"notifications/roots/list_changed", "notifications/initialized",
                             "notifications/cancelled", "notifications/unknown"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        int status = 0;
        assert_null(legacy_serve(srv, conn, NULL, legacy_notification(methods[i], NULL), &status));
        assert_int_equal(status, 202);
    }
    assert_int_equal(capture_count(&outbound), 0);
    mcp_conn_free(conn);
    capture_assert_done(&outbound);
    capture_cleanup(&outbound);
    mcp_server_free(srv);
}

static void test_ping(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    json_t *response = legacy_serve(srv, conn, NULL, legacy_request(7, "ping", NULL), NULL);
    assert_int_equal(json_object_size(expect_legacy_result(response)), 0);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 7);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* The shared methods, in legacy shapes                                */
/* ------------------------------------------------------------------ */

static void test_lists_have_legacy_shapes(void **state)
{
    static const struct {
        const char *method, *member;
        size_t count;
    } lists[] = {
        {"tools/list", "tools", 5},
        {"resources/list", "resources", 2},
        {"resources/templates/list", "resourceTemplates", 1},
        {"prompts/list", "prompts", 1},
    };
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        json_t *response =
            legacy_serve(srv, conn, NULL, legacy_request((json_int_t)i, lists[i].method, NULL), NULL);
        const json_t *result = expect_legacy_result(response);
        assert_int_equal(json_array_size(json_object_get(result, lists[i].member)),
                         lists[i].count);
        assert_null(json_object_get(result, "_meta"));
        json_decref(response);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

static void test_handler_results_have_legacy_shapes(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);

    /* The handler's own _meta key stays; structuredContent that is not an
     * object is dropped (legacy clients require an object), its text stays. */
    json_t *response = call_tool(srv, conn, 1, "structured", NULL);
    const json_t *result = expect_legacy_result(response);
    assert_null(json_object_get(result, "structuredContent"));
    assert_string_equal(first_text(response), "[1,2]");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(result, "_meta"), "com.example/trace")),
        "t-1");
    json_decref(response);

    response = legacy_serve(srv, conn, NULL,
                            legacy_request(2, "resources/read", json_pack("{s:s}", "uri", "test://t/7")),
                            NULL);
    result = expect_legacy_result(response);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result, "contents"), 0), "uri")),
                        "test://t/7");
    json_decref(response);

    response = legacy_serve(srv, conn, NULL,
                            legacy_request(3, "prompts/get", json_pack("{s:s}", "name", "greet")),
                            NULL);
    assert_int_equal(json_array_size(json_object_get(expect_legacy_result(response), "messages")),
                     1);
    json_decref(response);

    response = legacy_serve(
        srv, conn, NULL,
        legacy_request(4, "completion/complete",
                       json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "ref", "type", "ref/prompt",
                                 "name", "greet", "argument", "name", "who", "value", "al")),
        NULL);
    result = expect_legacy_result(response);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(result, "completion"), "values")), 2);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A missing resource is -32002 with data.uri for legacy clients, whether
 * the server finds nothing or the handler says so. */
static void test_resource_not_found_is_32002(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    const char *uris[] = {"test://nothing-here", "test://gone"};
    for (size_t i = 0; i < 2; i++) {
        json_t *response = legacy_serve(
            srv, conn, NULL,
            legacy_request((json_int_t)i, "resources/read", json_pack("{s:s}", "uri", uris[i])),
            NULL);
        const json_t *error = expect_error(response, MCP_LEGACY_RESOURCE_NOT_FOUND);
        assert_string_equal(json_string_value(json_object_get(json_object_get(error, "data"), "uri")),
                            uris[i]);
        json_decref(response);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* server/discover and subscriptions/listen are modern methods: without the
 * modern claim they do not exist. */
static void test_modern_methods_are_not_found(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    const char *methods[] = {"server/discover", "subscriptions/listen", "tasks/list",
                             "no/such/method"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        json_t *response =
            legacy_serve(srv, conn, NULL, legacy_request((json_int_t)i, methods[i], NULL), NULL);
        expect_error(response, MCP_METHOD_NOT_FOUND);
        json_decref(response);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Methods of a feature nothing registered are not found, as on the modern
 * era; so are subscribe and unsubscribe without resources. */
static void test_unregistered_features_are_not_found(void **state)
{
    mcp_server_t *srv = new_server_with(MCP_LEGACY_SESSIONS);
    add_tool(srv, "echo", echo);
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    const char *methods[] = {"resources/list", "resources/read", "prompts/list",
                             "prompts/get", "completion/complete", "resources/subscribe",
                             "resources/unsubscribe"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        json_t *response = legacy_serve(
            srv, conn, NULL,
            legacy_request((json_int_t)i, methods[i],
                           json_pack("{s:s, s:s}", "uri", "test://x", "name", "x")),
            NULL);
        expect_error(response, MCP_METHOD_NOT_FOUND);
        json_decref(response);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Logging, progress, subscriptions                                    */
/* ------------------------------------------------------------------ */

/* Calls `logger` on `conn` and returns the levels of the log messages it
 * sent, space-separated, in `out`. */
static void logged_levels(mcp_server_t *srv, mcp_conn_t *conn, json_int_t id, char *out,
                          size_t size)
{
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = legacy_request(
        id, "tools/call", json_pack("{s:s, s:{}}", "name", "logger", "arguments"));
    capture_roundtrip(srv, conn, request, NULL, &cap);
    json_decref(request);
    legacy_expect_schema_valid(&cap, "tools/call");
    out[0] = '\0';
    for (size_t i = 0; i < capture_count(&cap); i++) {
        capture_item_t item = capture_item(&cap, i);
        if (item.kind != MCP_OUT_NOTIFICATION)
            continue;
        assert_string_equal(json_string_value(json_object_get(item.msg, "method")),
                            "notifications/message");
        const char *level =
            json_string_value(json_object_get(json_object_get(item.msg, "params"), "level"));
        if (out[0])
            strncat(out, " ", size - strlen(out) - 1);
        strncat(out, level, size - strlen(out) - 1);
    }
    expect_legacy_result(capture_response(&cap, NULL));
    capture_cleanup(&cap);
}

static void set_level(mcp_server_t *srv, mcp_conn_t *conn, json_int_t id, const char *level,
                      int expected_error)
{
    json_t *response = legacy_serve(
        srv, conn, NULL, legacy_request(id, "logging/setLevel", json_pack("{s:s}", "level", level)),
        NULL);
    if (expected_error)
        expect_error(response, expected_error);
    else
        assert_int_equal(json_object_size(expect_legacy_result(response)), 0);
    json_decref(response);
}

/* A legacy client opts into log messages with logging/setLevel; the level
 * filters them and belongs to its session only. */
static void test_set_level_filters_logs_per_session(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *a = initialized_conn(srv, NULL, NULL);
    mcp_conn_t *b = initialized_conn(srv, NULL, NULL);
    char levels[128];

    logged_levels(srv, a, 1, levels, sizeof levels);
    assert_string_equal(levels, ""); /* no level set: no logs */

    set_level(srv, a, 2, "warning", 0);
    logged_levels(srv, a, 3, levels, sizeof levels);
    assert_string_equal(levels, "warning error");
    logged_levels(srv, b, 3, levels, sizeof levels);
    assert_string_equal(levels, "");

    set_level(srv, a, 4, "debug", 0);
    logged_levels(srv, a, 5, levels, sizeof levels);
    assert_string_equal(levels, "info warning error");
    set_level(srv, b, 4, "emergency", 0);
    logged_levels(srv, b, 5, levels, sizeof levels);
    assert_string_equal(levels, "");

    set_level(srv, a, 6, "loud", MCP_INVALID_PARAMS);
    logged_levels(srv, a, 7, levels, sizeof levels); /* unchanged */
    assert_string_equal(levels, "info warning error");
    json_t *response =
        legacy_serve(srv, a, NULL, legacy_request(8, "logging/setLevel", json_object()), NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);

    mcp_conn_free(a);
    mcp_conn_free(b);
    mcp_server_free(srv);
}

static void test_progress_the_legacy_way(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = legacy_request(
        1, "tools/call",
        json_pack("{s:s, s:{}, s:{s:s}}", "name", "progress", "arguments", "_meta",
                  "progressToken", "p-1"));
    capture_roundtrip(srv, conn, request, NULL, &cap);
    json_decref(request);
    legacy_expect_schema_valid(&cap, "tools/call");
    assert_int_equal(capture_notification_count(&cap), 2);
    capture_item_t first = capture_item(&cap, 0);
    const json_t *params = json_object_get(first.msg, "params");
    assert_string_equal(json_string_value(json_object_get(first.msg, "method")),
                        "notifications/progress");
    assert_string_equal(json_string_value(json_object_get(params, "progressToken")), "p-1");
    assert_true(json_number_value(json_object_get(params, "progress")) == 1.0);
    assert_string_equal(json_string_value(json_object_get(params, "message")), "half");
    expect_legacy_result(capture_response(&cap, NULL));
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Batches (2025-03-26 only)                                           */
/* ------------------------------------------------------------------ */

/* The member of a batch's answer with this id (a JSON text; "null": an
 * error without id); fails when there is none or more than one. */
static const json_t *answer_with_id(const json_t *answers, const char *id_text)
{
    json_t *id = json_loads(id_text, JSON_DECODE_ANY, NULL);
    const json_t *found = NULL;
    size_t i;
    json_t *answer;
    json_array_foreach(answers, i, answer) {
        const json_t *its = json_object_get(answer, "id");
        if (json_equal(its ? its : json_null(), id)) {
            assert_null(found);
            found = answer;
        }
    }
    json_decref(id);
    assert_non_null(found);
    return found;
}

/* A 2025-03-26 client's batch: every request answered in one array (any
 * order), notifications and responses not, progress sent as it comes;
 * initialize, a nested batch and a modern request are refused member by
 * member, the others still served. */
static void test_batch_in_2025_03_26(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = new_conn(srv, NULL);
    json_decref(handshake(srv, conn, "2025-03-26", NULL));
    json_t *batch = json_pack(
        "[o, o, o, o, o, [i], o, o]",
        legacy_request(1, "tools/call",
                       json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments", "text", "one")),
        legacy_notification("notifications/roots/list_changed", NULL),
        legacy_request(2, "tools/list", NULL), legacy_request(3, "ping", NULL),
        legacy_initialize(4, "2025-03-26", NULL), 1,
        legacy_request(5, "tools/call",
                       json_pack("{s:s, s:{}, s:{s:s}}", "name", "progress", "arguments", "_meta",
                                 "progressToken", "p-1")),
        modern_request(6, "tools/list", NULL));
    capture_sink_t cap;
    capture_init(&cap);
    const json_t *answers = capture_roundtrip(srv, conn, batch, NULL, &cap);
    json_decref(batch);
    assert_true(json_is_array(answers));
    assert_int_equal(json_array_size(answers), 7); /* 1, 2, 3, 4, the nested one, 5, 6 */
    assert_string_equal(first_text(answer_with_id(answers, "1")), "one");
    assert_true(json_is_array(
        json_object_get(expect_legacy_result(answer_with_id(answers, "2")), "tools")));
    assert_int_equal(json_object_size(expect_legacy_result(answer_with_id(answers, "3"))), 0);
    expect_error(answer_with_id(answers, "4"), MCP_INVALID_REQUEST);
    expect_error(answer_with_id(answers, "null"), MCP_INVALID_REQUEST);
    assert_string_equal(first_text(answer_with_id(answers, "5")), "done");
    expect_error(answer_with_id(answers, "6"), MCP_INVALID_REQUEST);
    assert_int_equal(capture_notification_count(&cap), 2); /* the progress */
    capture_cleanup(&cap);

    /* Only notifications: nothing to answer. */
    capture_init(&cap);
    batch = json_pack("[o]", legacy_notification("notifications/roots/list_changed", NULL));
    assert_null(capture_roundtrip(srv, conn, batch, NULL, &cap));
    json_decref(batch);
    assert_int_equal(capture_count(&cap), 1);
    assert_int_equal(capture_item(&cap, 0).kind, MCP_OUT_ACCEPTED);
    capture_cleanup(&cap);

    /* Empty: one error, without id. */
    capture_init(&cap);
    batch = json_array();
    const json_t *answer = capture_roundtrip(srv, conn, batch, NULL, &cap);
    json_decref(batch);
    expect_error(answer, MCP_INVALID_REQUEST);
    assert_null(json_object_get(answer, "id")); /* it could not be read */
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Later revisions have no batches: refused whole, as before. */
static void test_no_batch_after_2025_03_26(void **state)
{
    mcp_server_t *srv = full_server();
    static const char *const versions[] = {"2025-06-18", "2025-11-25"};
    for (size_t v = 0; v < 2; v++) {
        mcp_conn_t *conn = new_conn(srv, NULL);
        json_decref(handshake(srv, conn, versions[v], NULL));
        json_t *batch = json_pack("[o]", legacy_request(1, "ping", NULL));
        capture_sink_t cap;
        capture_init(&cap);
        const json_t *answer = capture_roundtrip(srv, conn, batch, NULL, &cap);
        json_decref(batch);
        expect_error(answer, MCP_INVALID_REQUEST);
        assert_null(json_object_get(answer, "id"));
        capture_cleanup(&cap);
        mcp_conn_free(conn);
    }
    mcp_server_free(srv);
}

/* Methods of the connection's outbound messages so far, space-separated. */
static void outbound_methods(capture_sink_t *outbound, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < capture_count(outbound); i++) {
        capture_item_t item = capture_item(outbound, i);
        MCP_ASSERT_SCHEMA_VALID(item.msg, NULL, LEGACY_SCHEMA);
        assert_int_equal(item.kind, MCP_OUT_NOTIFICATION);
        assert_null(json_object_get(json_object_get(item.msg, "params"), "_meta"));
        const char *method = json_string_value(json_object_get(item.msg, "method"));
        const char *uri =
            json_string_value(json_object_get(json_object_get(item.msg, "params"), "uri"));
        if (out[0])
            strncat(out, " ", size - strlen(out) - 1);
        strncat(out, method + strlen("notifications/"), size - strlen(out) - 1);
        if (uri) {
            strncat(out, ":", size - strlen(out) - 1);
            strncat(out, uri, size - strlen(out) - 1);
        }
    }
}

static void subscribe(mcp_server_t *srv, mcp_conn_t *conn, json_int_t id, const char *method,
                      const char *uri)
{
    json_t *response = legacy_serve(
        srv, conn, NULL, legacy_request(id, method, json_pack("{s:s}", "uri", uri)), NULL);
    assert_int_equal(json_object_size(expect_legacy_result(response)), 0);
    json_decref(response);
}

/* resources/subscribe puts the session on the update fan-out for that URI;
 * list changes reach every legacy session (the server declares
 * listChanged), untagged, on the connection's own output. */
static void test_subscriptions_and_list_changes(void **state)
{
    mcp_server_t *srv = full_server();
    capture_sink_t out_a, out_b;
    mcp_conn_t *a = initialized_conn(srv, &out_a, NULL);
    mcp_conn_t *b = initialized_conn(srv, &out_b, NULL);
    char seen[256];

    subscribe(srv, a, 1, "resources/subscribe", "test://r");
    subscribe(srv, a, 2, "resources/subscribe", "test://r"); /* twice: still one */
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://r"), MCP_OK);
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://other"), MCP_OK);
    assert_true(capture_wait_count(&out_a, 1, CAPTURE_PATIENCE_MS));
    outbound_methods(&out_a, seen, sizeof seen);
    assert_string_equal(seen, "resources/updated:test://r");

    subscribe(srv, a, 3, "resources/unsubscribe", "test://r");
    subscribe(srv, a, 4, "resources/unsubscribe", "test://never-subscribed");
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://r"), MCP_OK);
    add_tool(srv, "late", echo);
    assert_true(capture_wait_count(&out_a, 2, CAPTURE_PATIENCE_MS));
    assert_true(capture_wait_count(&out_b, 1, CAPTURE_PATIENCE_MS));
    outbound_methods(&out_a, seen, sizeof seen);
    assert_string_equal(seen, "resources/updated:test://r tools/list_changed");
    outbound_methods(&out_b, seen, sizeof seen);
    assert_string_equal(seen, "tools/list_changed");

    json_t *response = legacy_serve(
        srv, a, NULL, legacy_request(5, "resources/subscribe", json_pack("{s:i}", "uri", 5)), NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);

    mcp_conn_free(a);
    mcp_conn_free(b);
    capture_assert_done(&out_a);
    capture_assert_done(&out_b);
    capture_cleanup(&out_a);
    capture_cleanup(&out_b);
    mcp_server_free(srv);
}

/* Only a URI that names a resource (registered, or matched by a template)
 * can be subscribed to: a bare scheme is refused with -32002, and so is a
 * URI of no resource; a scheme's root is no parent of the scheme's
 * resources. Otherwise subscribing to "test:" would tell a session the
 * URIs of every resource updated for anybody. */
static void test_subscriptions_name_resources(void **state)
{
    mcp_server_t *srv = full_server();
    capture_sink_t out;
    mcp_conn_t *a = initialized_conn(srv, &out, NULL);
    static const char *const refused[] = {"test:", "test://", "test://t", "file:", "test://nope"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        json_t *response = legacy_serve(
            srv, a, NULL,
            legacy_request((json_int_t)i + 1, "resources/subscribe",
                           json_pack("{s:s}", "uri", refused[i])),
            NULL);
        const json_t *error = expect_error(response, MCP_LEGACY_RESOURCE_NOT_FOUND);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(error, "data"), "uri")),
            refused[i]);
        json_decref(response);
    }
    subscribe(srv, a, 10, "resources/subscribe", "test://t/1"); /* the template's */
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://t/2"), MCP_OK);
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://r"), MCP_OK);
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://t/1/part"), MCP_OK);
    assert_int_equal(mcp_server_notify_resource_updated(srv, "test://t/1"), MCP_OK);
    assert_true(capture_wait_count(&out, 2, CAPTURE_PATIENCE_MS));
    char seen[256];
    outbound_methods(&out, seen, sizeof seen);
    assert_string_equal(seen, "resources/updated:test://t/1/part resources/updated:test://t/1");
    mcp_conn_free(a);
    capture_assert_done(&out);
    capture_cleanup(&out);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Eras                                                                */
/* ------------------------------------------------------------------ */

/* On a connection the first request decides the era; a request of the
 * other era afterwards is refused and changes nothing. */
static void test_connection_era_is_pinned(void **state)
{
    mcp_server_t *srv = full_server();
    mcp_conn_t *conn = initialized_conn(srv, NULL, NULL);
    json_t *response = serve_with(srv, conn, NULL, modern_request(1, "tools/list", NULL), NULL);
    expect_error(response, MCP_INVALID_REQUEST);
    json_decref(response);
    response = call_tool(srv, conn, 2, "echo", NULL);
    assert_string_equal(first_text(response), "(none)");
    json_decref(response);
    mcp_conn_free(conn);

    conn = new_conn(srv, NULL);
    response = serve_with(srv, conn, NULL, modern_request(1, "tools/list", NULL), NULL);
    expect_complete(response);
    json_decref(response);
    response = legacy_serve(srv, conn, NULL, legacy_initialize(2, "2025-11-25", NULL), NULL);
    expect_error(response, MCP_INVALID_REQUEST);
    json_decref(response);
    mcp_conn_free(conn);

    /* A legacy request refused before initialize, or a ping, decides
     * nothing: only initialize opens the legacy protocol. */
    conn = new_conn(srv, NULL);
    response = call_tool(srv, conn, 1, "echo", NULL);
    expect_error(response, MCP_INVALID_REQUEST); /* not initialized */
    json_decref(response);
    response = legacy_serve(srv, conn, NULL, legacy_request(2, "ping", NULL), NULL);
    expect_legacy_result(response);
    json_decref(response);
    response = serve_with(srv, conn, NULL, modern_request(3, "tools/list", NULL), NULL);
    expect_complete(response);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Without a connection (an embedder serving one-off messages) every legacy
 * request stands alone, as in the stateless mode. */
static void test_without_a_connection(void **state)
{
    mcp_server_t *srv = full_server();
    json_t *response = legacy_serve(srv, NULL, NULL, legacy_initialize(0, "2025-06-18", NULL), NULL);
    assert_string_equal(
        json_string_value(json_object_get(expect_legacy_result(response), "protocolVersion")),
        "2025-06-18");
    json_decref(response);
    response = call_tool(srv, NULL, 1, "echo", NULL);
    assert_string_equal(first_text(response), "(none)");
    json_decref(response);
    mcp_server_free(srv);
}

/* MCP_LEGACY_REJECT: a modern-only server refuses legacy requests with
 * -32022 naming the versions it speaks (digest 4.9, 10.4), with HTTP 400,
 * as the reference server does; modern traffic is unaffected. */
static void test_reject_mode(void **state)
{
    mcp_server_t *srv = full_server_with(MCP_LEGACY_REJECT);
    static const struct {
        const char *version_header; /* HTTP MCP-Protocol-Version, or NULL */
        const char *method;
        const char *requested;      /* data.requested */
    } cases[] = {
        {NULL, "initialize", "2025-06-18"},
        {"2025-06-18", "tools/list", "2025-06-18"},
        {NULL, "tools/list", "2025-03-26"}, /* no header: the oldest HTTP revision */
        {NULL, "ping", "2025-03-26"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        legacy_http_t http;
        json_t *request = strcmp(cases[i].method, "initialize") == 0
                              ? legacy_initialize(1, "2025-06-18", NULL)
                              : legacy_request(1, cases[i].method, NULL);
        int status = 0;
        json_t *response = legacy_serve(
            srv, NULL, legacy_http_init(&http, cases[i].version_header, NULL), request, &status);
        assert_int_equal(status, 400);
        const json_t *error = expect_error(response, MCP_UNSUPPORTED_PROTOCOL_VERSION);
        MCP_ASSERT_SCHEMA_VALID(response, NULL, "2026-07-28");
        const json_t *data = json_object_get(error, "data");
        json_t *supported = json_pack("[s]", "2026-07-28");
        assert_true(json_equal(json_object_get(data, "supported"), supported));
        json_decref(supported);
        assert_string_equal(json_string_value(json_object_get(data, "requested")),
                            cases[i].requested);
        json_decref(response);
    }

    /* stdio: refused the same way; a notification is never answered; and
     * the refused request does not pin the connection to the legacy era,
     * so a dual-era client can go on in the modern one. */
    mcp_conn_t *conn = new_conn(srv, NULL);
    json_t *response = legacy_serve(srv, conn, NULL, legacy_initialize(1, "2025-11-25", NULL), NULL);
    expect_error(response, MCP_UNSUPPORTED_PROTOCOL_VERSION);
    json_decref(response);
    assert_null(
        legacy_serve(srv, conn, NULL, legacy_notification("notifications/initialized", NULL), NULL));
    response = serve_with(srv, conn, NULL, modern_request(2, "tools/list", NULL), NULL);
    expect_complete(response);
    json_decref(response);
    mcp_conn_free(conn);

    /* The modern era is served as ever. */
    response = serve(srv, modern_request(2, "tools/list", NULL), NULL);
    expect_complete(response);
    json_decref(response);
    /* And the legacy session API says sessions are not in use. */
    assert_int_equal(mcp_server_end_session(srv, "abc"), MCP_EUNSUPPORTED);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initialize_negotiates_the_version),
        cmocka_unit_test(test_initialize_capabilities_follow_the_registries),
        cmocka_unit_test(test_initialize_needs_version_and_capabilities),
        cmocka_unit_test(test_initialize_once_per_connection),
        cmocka_unit_test(test_requests_before_initialize),
        cmocka_unit_test(test_client_notifications_are_accepted),
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_lists_have_legacy_shapes),
        cmocka_unit_test(test_handler_results_have_legacy_shapes),
        cmocka_unit_test(test_resource_not_found_is_32002),
        cmocka_unit_test(test_modern_methods_are_not_found),
        cmocka_unit_test(test_unregistered_features_are_not_found),
        cmocka_unit_test(test_set_level_filters_logs_per_session),
        cmocka_unit_test(test_progress_the_legacy_way),
        cmocka_unit_test(test_subscriptions_and_list_changes),
        cmocka_unit_test(test_subscriptions_name_resources),
        cmocka_unit_test(test_connection_era_is_pinned),
        cmocka_unit_test(test_without_a_connection),
        cmocka_unit_test(test_reject_mode),
        cmocka_unit_test(test_batch_in_2025_03_26),
        cmocka_unit_test(test_no_batch_after_2025_03_26),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
