/*
 * A legacy (2025-11-25) client driving examples/notes_server as a real
 * child process over stdio: the handshake, the lists and calls in legacy
 * shapes, progress, a resource subscription and its update, the
 * delete_note tool's elicitation sent as a real elicitation/create request
 * (MRTR bridged) and answered, declined or cancelled, ping, the era pinned
 * by the first message of the process, and a clean exit on EOF while the
 * server waits for an answer. Every line the server writes is checked
 * against the 2025-11-25 schema; the child runs under the build's
 * sanitizers, so a leak makes it exit non-zero.
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

#include "legacy_request.h"
#include "modern_request.h"
#include "schema_check.h"
#include "stdio_child.h"

#define PATIENCE_MS 20000

static void start(stdio_child_t *child)
{
    stdio_child_start(child, NOTES_SERVER, NULL, NULL);
}

static void finish(stdio_child_t *child)
{
    stdio_child_close_stdin(child);
    assert_int_equal(stdio_child_wait(child, PATIENCE_MS), 0);
}

/* The next message the server writes (schema-checked as an answer to
 * `method`); fails the test when none comes. */
static json_t *next_message(stdio_child_t *child, const char *method)
{
    json_t *msg = stdio_child_read(child, PATIENCE_MS);
    if (!msg)
        fail_msg("the server wrote nothing within %d ms", PATIENCE_MS);
    MCP_ASSERT_SCHEMA_VALID(msg, method, LEGACY_SCHEMA);
    return msg;
}

/* Sends `request_new` and reads up to its response; the notifications
 * before it go to `before` (may be NULL: then there must be none). */
static json_t *roundtrip(stdio_child_t *child, json_t *request_new, json_t *before)
{
    char method[64];
    snprintf(method, sizeof method, "%s",
             json_string_value(json_object_get(request_new, "method")));
    json_t *id = json_incref(json_object_get(request_new, "id"));
    stdio_child_send(child, request_new);
    json_decref(request_new);
    for (;;) {
        json_t *msg = next_message(child, method);
        if (json_object_get(msg, "result") || json_object_get(msg, "error")) {
            assert_true(json_equal(json_object_get(msg, "id"), id));
            json_decref(id);
            return msg;
        }
        if (!before)
            fail_msg("unexpected message before the response: %s", json_dumps(msg, JSON_COMPACT));
        json_array_append_new(before, msg);
    }
}

static json_t *tool_call(json_int_t id, const char *name, json_t *arguments_new)
{
    return legacy_request(id, "tools/call",
                          json_pack("{s:s, s:o}", "name", name, "arguments",
                                    arguments_new ? arguments_new : json_object()));
}

static const char *first_text(const json_t *response)
{
    const json_t *result = expect_legacy_result(response);
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* initialize with `caps` and notifications/initialized. */
static void handshake(stdio_child_t *child, const char *caps)
{
    json_t *response = roundtrip(child, legacy_initialize(0, "2025-11-25", caps), NULL);
    const json_t *result = expect_legacy_result(response);
    assert_string_equal(json_string_value(json_object_get(result, "protocolVersion")),
                        "2025-11-25");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(result, "serverInfo"), "name")),
        "notes-server");
    const json_t *caps_out = json_object_get(result, "capabilities");
    assert_true(json_is_true(
        json_object_get(json_object_get(caps_out, "resources"), "subscribe")));
    assert_non_null(json_object_get(caps_out, "completions"));
    assert_null(json_object_get(caps_out, "extensions"));
    json_decref(response);
    json_t *initialized = legacy_notification("notifications/initialized", NULL);
    stdio_child_send(child, initialized);
    json_decref(initialized);
}

/* Calls delete_note and returns the elicitation/create request the server
 * sends for it (new reference). */
static json_t *start_delete(stdio_child_t *child, json_int_t id, const char *name)
{
    json_t *request = tool_call(id, "delete_note", json_pack("{s:s}", "name", name));
    stdio_child_send(child, request);
    json_decref(request);
    json_t *ask = next_message(child, NULL);
    assert_string_equal(json_string_value(json_object_get(ask, "method")), "elicitation/create");
    assert_true(json_is_string(json_object_get(ask, "id")));
    const json_t *params = json_object_get(ask, "params");
    assert_non_null(strstr(json_string_value(json_object_get(params, "message")), name));
    assert_string_equal(json_string_value(json_object_get(params, "mode")), "form");
    return ask;
}

/* Sends the client's answer and reads the response to tools/call `id`. */
static json_t *answer_and_finish(stdio_child_t *child, json_t *answer_new, json_int_t id)
{
    stdio_child_send(child, answer_new);
    json_decref(answer_new);
    json_t *response = next_message(child, "tools/call");
    assert_int_equal(json_integer_value(json_object_get(response, "id")), id);
    return response;
}

/* ------------------------------------------------------------------ */

static void test_legacy_session(void **state)
{
    stdio_child_t child;
    start(&child);
    /* A ping before initialize is answered. */
    json_t *response = roundtrip(&child, legacy_request(100, "ping", NULL), NULL);
    assert_int_equal(json_object_size(expect_legacy_result(response)), 0);
    json_decref(response);
    handshake(&child, "{\"elicitation\":{},\"roots\":{\"listChanged\":true}}");

    response = roundtrip(&child, legacy_request(1, "tools/list", NULL), NULL);
    assert_int_equal(json_array_size(json_object_get(expect_legacy_result(response), "tools")), 6);
    json_decref(response);

    response = roundtrip(&child, tool_call(2, "echo", json_pack("{s:s}", "text", "hi")), NULL);
    assert_string_equal(first_text(response), "hi");
    json_decref(response);

    /* Progress the legacy way: params._meta.progressToken. */
    json_t *request = tool_call(3, "countdown", json_pack("{s:i}", "seconds", 1));
    json_object_set_new(json_object_get(request, "params"), "_meta",
                        json_pack("{s:s}", "progressToken", "tok"));
    json_t *before = json_array();
    response = roundtrip(&child, request, before);
    assert_string_equal(first_text(response), "Lift-off after 1 seconds!");
    assert_int_equal(json_array_size(before), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(before, 0), "params"),
                                          "progressToken")),
        "tok");
    json_decref(before);
    json_decref(response);

    /* Subscribe, change the resource, hear about it. */
    response = roundtrip(&child,
                         legacy_request(4, "resources/subscribe",
                                        json_pack("{s:s}", "uri", "note://groceries")),
                         NULL);
    expect_legacy_result(response);
    json_decref(response);
    before = json_array();
    response = roundtrip(
        &child, tool_call(5, "add_note", json_pack("{s:s, s:s}", "name", "groceries", "text", "milk")),
        before);
    assert_string_equal(first_text(response), "Saved note \"groceries\".");
    json_decref(response);
    /* The update may come before or after the response. */
    json_t *update = json_array_size(before) ? json_incref(json_array_get(before, 0))
                                             : next_message(&child, NULL);
    assert_string_equal(json_string_value(json_object_get(update, "method")),
                        "notifications/resources/updated");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(update, "params"), "uri")),
        "note://groceries");
    json_decref(update);
    json_decref(before);

    response = roundtrip(&child,
                         legacy_request(6, "resources/read",
                                        json_pack("{s:s}", "uri", "note://groceries")),
                         NULL);
    expect_legacy_result(response);
    json_decref(response);
    response = roundtrip(&child,
                         legacy_request(7, "resources/read", json_pack("{s:s}", "uri", "nope://x")),
                         NULL);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(response, "error"), "code")),
        MCP_LEGACY_RESOURCE_NOT_FOUND);
    json_decref(response);

    /* The elicitation of delete_note, bridged: accepted, then declined. */
    json_t *ask = start_delete(&child, 8, "groceries");
    response = answer_and_finish(
        &child,
        legacy_result(json_object_get(ask, "id"),
                      json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1)),
        8);
    assert_string_equal(first_text(response), "Deleted the note \"groceries\".");
    json_decref(response);
    json_decref(ask);
    ask = start_delete(&child, 9, "welcome");
    response = answer_and_finish(
        &child, legacy_result(json_object_get(ask, "id"), json_pack("{s:s}", "action", "decline")),
        9);
    assert_string_equal(first_text(response), "Kept the note \"welcome\".");
    json_decref(response);
    json_decref(ask);

    json_t *roots_changed = legacy_notification("notifications/roots/list_changed", NULL);
    stdio_child_send(&child, roots_changed);
    json_decref(roots_changed);
    response = roundtrip(&child, legacy_request(10, "ping", NULL), NULL);
    expect_legacy_result(response);
    json_decref(response);
    finish(&child);
}

/* Cancelled while the server waits for the answer: the server cancels its
 * own request in turn, nothing more comes for the call, a late answer is
 * ignored, the session goes on. */
static void test_cancel_a_bridged_request(void **state)
{
    stdio_child_t child;
    start(&child);
    handshake(&child, "{\"elicitation\":{}}");
    json_t *ask = start_delete(&child, 1, "welcome");
    json_t *cancel = legacy_notification("notifications/cancelled",
                                         json_pack("{s:i, s:s}", "requestId", 1, "reason", "no"));
    stdio_child_send(&child, cancel);
    json_decref(cancel);
    json_t *late = legacy_result(json_object_get(ask, "id"), json_pack("{s:s}", "action", "accept"));
    stdio_child_send(&child, late);
    json_decref(late);
    /* The server cancels its own request in turn; the next response it
     * writes answers the ping, not tools/call 1. */
    json_t *before = json_array();
    json_t *response = roundtrip(&child, legacy_request(2, "ping", NULL), before);
    expect_legacy_result(response);
    json_decref(response);
    assert_int_equal(json_array_size(before), 1);
    const json_t *note = json_array_get(before, 0);
    assert_string_equal(json_string_value(json_object_get(note, "method")),
                        "notifications/cancelled");
    assert_true(json_equal(json_object_get(json_object_get(note, "params"), "requestId"),
                           json_object_get(ask, "id")));
    json_decref(before);
    json_decref(ask);
    response = roundtrip(&child, legacy_request(3, "resources/read",
                                                json_pack("{s:s}", "uri", "note://welcome")),
                         NULL);
    expect_legacy_result(response); /* not deleted */
    json_decref(response);
    finish(&child);
}

/* A client that declared no elicitation cannot be asked: the tool that
 * needs it fails with -32602 (-32021 is a 2026-07-28 code) and nothing is
 * sent to the client. */
static void test_undeclared_capability(void **state)
{
    stdio_child_t child;
    start(&child);
    handshake(&child, "{}");
    json_t *response =
        roundtrip(&child, tool_call(1, "delete_note", json_pack("{s:s}", "name", "welcome")), NULL);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(response, "error"), "code")),
        MCP_INVALID_PARAMS);
    json_decref(response);
    finish(&child);
}

/* The first message decides the era of the process; the other era's
 * requests are refused and the process carries on in its own. */
static void test_era_of_the_process(void **state)
{
    stdio_child_t child;
    start(&child);
    handshake(&child, "{}");
    json_t *request = modern_request(1, "tools/list", NULL);
    stdio_child_send(&child, request);
    json_decref(request);
    json_t *response = next_message(&child, NULL);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(response, "error"), "code")),
        MCP_INVALID_REQUEST);
    json_decref(response);
    response = roundtrip(&child, legacy_request(2, "tools/list", NULL), NULL);
    expect_legacy_result(response);
    json_decref(response);
    finish(&child);
}

/* EOF while the server waits for an answer: it exits cleanly (the wait is
 * cancelled after the shutdown grace period). */
static void test_eof_while_waiting_for_an_answer(void **state)
{
    stdio_child_t child;
    start(&child);
    handshake(&child, "{\"elicitation\":{}}");
    json_t *ask = start_delete(&child, 1, "welcome");
    json_decref(ask);
    finish(&child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_session),
        cmocka_unit_test(test_cancel_a_bridged_request),
        cmocka_unit_test(test_undeclared_capability),
        cmocka_unit_test(test_era_of_the_process),
        cmocka_unit_test(test_eof_while_waiting_for_an_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
