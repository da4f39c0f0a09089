/*
 * examples/notes_server as a real child process over stdio: a session
 * through every method, concurrent requests answered out of order,
 * cancellation with notifications/cancelled, malformed lines, shutdown on
 * EOF with work in flight, and 10,000 sequential calls (the child runs
 * under the sanitizers of the build, so a leak makes it exit non-zero).
 * Every message the server writes is checked against the schema.
 */
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

#include "modern_request.h"
#include "schema_check.h"
#include "stdio_child.h"

#define PATIENCE_MS 20000

static json_t *tool_call(json_int_t id, const char *name, json_t *arguments_new)
{
    return modern_request(id, "tools/call",
                          json_pack("{s:s, s:o}", "name", name, "arguments",
                                    arguments_new ? arguments_new : json_object()));
}

/* Reads the response to `method`, validating it and everything before it. */
static json_t *expect_response(stdio_child_t *child, const char *method, json_int_t id)
{
    json_t *before = json_array();
    json_t *response = stdio_child_read_response(child, PATIENCE_MS, before);
    size_t i;
    json_t *msg;
    json_array_foreach(before, i, msg)
        MCP_ASSERT_SCHEMA_VALID(msg, method, "2026-07-28");
    json_decref(before);
    MCP_ASSERT_SCHEMA_VALID(response, method, "2026-07-28");
    assert_int_equal(json_integer_value(json_object_get(response, "id")), id);
    return response;
}

static json_t *roundtrip(stdio_child_t *child, json_t *request_new)
{
    char method[64];
    snprintf(method, sizeof method, "%s",
             json_string_value(json_object_get(request_new, "method")));
    json_int_t id = json_integer_value(json_object_get(request_new, "id"));
    stdio_child_send(child, request_new);
    json_decref(request_new);
    return expect_response(child, method, id);
}

static const json_t *result_of(const json_t *response)
{
    const json_t *result = json_object_get(response, "result");
    if (!result)
        fail_msg("expected a result, got %s", json_dumps(response, JSON_COMPACT));
    return result;
}

static const char *first_text(const json_t *response)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result_of(response), "content"), 0), "text"));
}

static void start(stdio_child_t *child)
{
    stdio_child_start(child, NOTES_SERVER, NULL, NULL);
}

static void finish(stdio_child_t *child)
{
    stdio_child_close_stdin(child);
    json_t *extra = stdio_child_read(child, PATIENCE_MS);
    if (extra)
        fail_msg("unexpected output after the last response: %s", json_dumps(extra, JSON_COMPACT));
    assert_int_equal(stdio_child_wait(child, PATIENCE_MS), 0);
}

/* ------------------------------------------------------------------ */

static void test_session(void **state)
{
    stdio_child_t child;
    start(&child);
    json_t *response = roundtrip(&child, modern_request(1, "server/discover", NULL));
    const json_t *caps = json_object_get(result_of(response), "capabilities");
    assert_non_null(json_object_get(caps, "tools"));
    assert_non_null(json_object_get(caps, "resources"));
    assert_non_null(json_object_get(caps, "prompts"));
    assert_non_null(json_object_get(caps, "completions"));
    json_decref(response);

    response = roundtrip(&child, modern_request(2, "tools/list", NULL));
    assert_int_equal(json_array_size(json_object_get(result_of(response), "tools")), 6);
    json_decref(response);

    response = roundtrip(&child, tool_call(3, "add_note", json_pack("{s:s, s:s}", "name", "todo",
                                                                   "text", "buy milk")));
    assert_string_equal(first_text(response), "Saved note \"todo\".");
    json_decref(response);

    response = roundtrip(&child, modern_request(4, "resources/read",
                                                json_pack("{s:s}", "uri", "note://todo")));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result_of(response), "contents"), 0),
                            "text")),
                        "buy milk");
    json_decref(response);

    response = roundtrip(&child, tool_call(5, "add", json_pack("{s:i, s:f}", "a", 2, "b", 0.5)));
    assert_true(json_number_value(json_object_get(
                    json_object_get(result_of(response), "structuredContent"), "sum")) == 2.5);
    json_decref(response);

    response = roundtrip(&child, modern_request(6, "resources/templates/list", NULL));
    json_decref(response);
    response = roundtrip(&child, modern_request(7, "prompts/get",
                                                json_pack("{s:s, s:{s:s}}", "name",
                                                          "summarize_notes", "arguments", "style",
                                                          "brief")));
    json_decref(response);
    response = roundtrip(
        &child, modern_request(8, "completion/complete",
                               json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "ref", "type",
                                         "ref/resource", "uri", "note://{name}", "argument",
                                         "name", "name", "value", "to")));
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(json_object_get(result_of(response), "completion"),
                                            "values"),
                            0)),
                        "todo");
    json_decref(response);

    /* MRTR over stdio: delete asks first. */
    json_t *request = tool_call(9, "delete_note", json_pack("{s:s}", "name", "todo"));
    modern_set_capabilities(request, "{\"elicitation\":{}}");
    response = roundtrip(&child, json_incref(request));
    const char *sealed =
        json_string_value(json_object_get(result_of(response), "requestState"));
    assert_non_null(sealed);
    json_t *retry = modern_retry(
        request, 10,
        json_pack("{s:{s:s, s:{s:b}}}", "confirm", "action", "accept", "content", "confirm", 1),
        sealed);
    json_decref(response);
    json_decref(request);
    response = roundtrip(&child, retry);
    assert_string_equal(first_text(response), "Deleted the note \"todo\".");
    json_decref(response);
    finish(&child);
}

/* A slow request does not hold back a quick one sent after it. */
static void test_out_of_order_responses(void **state)
{
    stdio_child_t child;
    start(&child);
    json_t *slow = tool_call(1, "countdown", json_pack("{s:i}", "seconds", 2));
    json_object_set_new(modern_meta(slow), "progressToken", json_string("cd"));
    stdio_child_send(&child, slow);
    json_decref(slow);
    json_t *quick = tool_call(2, "echo", json_pack("{s:s}", "text", "first!"));
    stdio_child_send(&child, quick);
    json_decref(quick);

    json_t *response = expect_response(&child, "tools/call", 2);
    assert_string_equal(first_text(response), "first!");
    json_decref(response);

    json_t *progress = json_array();
    response = stdio_child_read_response(&child, PATIENCE_MS, progress);
    MCP_ASSERT_SCHEMA_VALID(response, "tools/call", "2026-07-28");
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 1);
    assert_string_equal(first_text(response), "Lift-off after 2 seconds!");
    json_decref(response);
    /* Progress for the countdown, with its token, increasing. */
    size_t i;
    json_t *msg;
    double last = -1;
    json_array_foreach(progress, i, msg) {
        MCP_ASSERT_SCHEMA_VALID(msg, NULL, "2026-07-28");
        const json_t *params = json_object_get(msg, "params");
        assert_string_equal(json_string_value(json_object_get(params, "progressToken")), "cd");
        assert_true(json_number_value(json_object_get(params, "progress")) > last);
        last = json_number_value(json_object_get(params, "progress"));
    }
    assert_true(last == 2);
    json_decref(progress);
    finish(&child);
}

/* notifications/cancelled stops a request: nothing more is sent for it. */
static void test_cancellation(void **state)
{
    for (int with_meta = 0; with_meta < 2; with_meta++) {
        stdio_child_t child;
        start(&child);
        json_t *slow = tool_call(3, "countdown", json_pack("{s:i}", "seconds", 30));
        json_object_set_new(modern_meta(slow), "progressToken", json_integer(33));
        stdio_child_send(&child, slow);
        json_decref(slow);
        /* The first progress notification: the countdown is running. */
        json_t *first = stdio_child_read(&child, PATIENCE_MS);
        assert_non_null(first);
        assert_string_equal(json_string_value(json_object_get(first, "method")),
                            "notifications/progress");
        json_decref(first);

        json_t *id = json_integer(3);
        json_t *cancel = modern_cancel_notification(id);
        json_decref(id);
        if (with_meta)
            json_object_set_new(json_object_get(cancel, "params"), "_meta",
                                json_pack("{s:s, s:{}}", MCP_META_PROTOCOL_VERSION, "2026-07-28",
                                          MCP_META_CLIENT_CAPABILITIES));
        stdio_child_send(&child, cancel);
        json_decref(cancel);
        json_t *quick = tool_call(4, "echo", json_pack("{s:s}", "text", "still here"));
        stdio_child_send(&child, quick);
        json_decref(quick);
        json_t *response = expect_response(&child, "tools/call", 4);
        json_decref(response);

        /* Wait past the next tick of the countdown: nothing for id 3. */
        json_t *late = stdio_child_read(&child, 2500);
        if (late)
            fail_msg("sent after the cancellation: %s", json_dumps(late, JSON_COMPACT));
        finish(&child);
    }
}

static void test_malformed_lines(void **state)
{
    struct {
        const char *line;
        int code;
    } rows[] = {
        {"garbage\n", MCP_PARSE_ERROR},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n", MCP_PARSE_ERROR},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}\n", MCP_INVALID_REQUEST},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]\n", MCP_INVALID_REQUEST},
        {"\"\\ud800\"\n", MCP_PARSE_ERROR},
        {"\xff\xfe{}\n", MCP_PARSE_ERROR},
    };
    stdio_child_t child;
    start(&child);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        stdio_child_send_raw(&child, rows[i].line, strlen(rows[i].line));
        json_t *response = stdio_child_read_response(&child, PATIENCE_MS, NULL);
        MCP_ASSERT_SCHEMA_VALID(response, NULL, "2026-07-28");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(response, "error"),
                                                            "code")),
                         rows[i].code);
        json_decref(response);
    }
    /* Blank lines and notifications get no answer at all. */
    stdio_child_send_raw(&child, "\n  \n\r\n", 6);
    stdio_child_send_raw(&child, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
                         55);
    json_t *response =
        roundtrip(&child, tool_call(5, "echo", json_pack("{s:s}", "text", "alive")));
    assert_string_equal(first_text(response), "alive");
    json_decref(response);
    finish(&child);
}

/* EOF on stdin: work in flight is finished and answered, then a clean exit. */
static void test_eof_finishes_work_in_flight(void **state)
{
    stdio_child_t child;
    start(&child);
    json_t *slow = tool_call(6, "countdown", json_pack("{s:i}", "seconds", 1));
    stdio_child_send(&child, slow);
    json_decref(slow);
    json_t *quick = tool_call(7, "echo", json_pack("{s:s}", "text", "bye"));
    stdio_child_send(&child, quick);
    json_decref(quick);
    stdio_child_close_stdin(&child);

    bool seen[2] = {false, false};
    json_t *msg;
    while ((msg = stdio_child_read(&child, PATIENCE_MS)) != NULL) {
        MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", "2026-07-28");
        json_int_t id = json_integer_value(json_object_get(msg, "id"));
        if (id == 6 || id == 7) {
            result_of(msg);
            seen[id - 6] = true;
        }
        json_decref(msg);
    }
    assert_true(child.eof);
    assert_true(seen[0]);
    assert_true(seen[1]);
    assert_int_equal(stdio_child_wait(&child, PATIENCE_MS), 0);
}

/* Many calls, one after the other: all answered, and the child -- built
 * with LeakSanitizer -- exits 0, so nothing leaked. */
static void test_many_sequential_calls(void **state)
{
    stdio_child_t child;
    start(&child);
    for (int i = 1; i <= 10000; i++) {
        char text[32];
        snprintf(text, sizeof text, "call %d", i);
        json_t *response = roundtrip(&child, tool_call(i, "echo", json_pack("{s:s}", "text", text)));
        assert_string_equal(first_text(response), text);
        json_decref(response);
    }
    finish(&child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session),
        cmocka_unit_test(test_out_of_order_responses),
        cmocka_unit_test(test_cancellation),
        cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_eof_finishes_work_in_flight),
        cmocka_unit_test(test_many_sequential_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
