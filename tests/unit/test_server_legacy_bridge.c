/*
 * Server core, MRTR bridged to legacy clients: a handler that asks for
 * input while serving a legacy client has its input requests sent as real
 * elicitation/create, sampling/createMessage and roots/list requests on the
 * request's own stream; the client's answers come back as ordinary
 * messages and the handler runs again with them, exactly as a modern retry
 * would. Covered: each kind of request and their shapes per negotiated
 * version, several in one round, several rounds with handler state, the
 * round limit, refusals (an elicitation refused reads as "cancel", other
 * refusals fail the request), answers that are not valid results, missing
 * capabilities, the timeout, cancellation while waiting and after the
 * answers came, answers from another session, a POST without an event
 * stream to carry the requests, and the stateless HTTP mode.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "legacy_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Tools that ask                                                      */
/* ------------------------------------------------------------------ */

static json_t *confirm_schema(void)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "ok", "type",
                     "boolean", "required", "ok");
}

/* Asks "Proceed?"; answers with the action, ok and the round it saw. */
static int confirm(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        int rc = mcp_call_elicit(call, "confirm", "Proceed?", confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    const json_t *ok = json_object_get(json_object_get(answer, "content"), "ok");
    return mcp_call_add_textf(call, "%s %s round %d",
                              json_string_value(json_object_get(answer, "action")),
                              json_is_true(ok) ? "yes" : "no", mcp_call_round(call));
}

static json_t *sampling_params(void)
{
    return json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user", "content",
                     "type", "text", "text", "Capital of France?", "maxTokens", 20);
}

/* Asks an elicitation, a sampling and the roots in one round. */
static int ask_all(mcp_call_t *call, void *user)
{
    const json_t *e = mcp_call_input(call, "e"), *s = mcp_call_input(call, "s"),
                 *r = mcp_call_input(call, "r");
    if (!e || !s || !r) {
        HANDLER_CHECK(call, mcp_call_round(call) == 0);
        HANDLER_CHECK(call, mcp_call_elicit(call, "e", "Name?", confirm_schema(), 0) == MCP_OK);
        HANDLER_CHECK(call, mcp_call_sample(call, "s", sampling_params(), 0) == MCP_OK);
        HANDLER_CHECK(call, mcp_call_list_roots(call, "r", 0) == MCP_OK);
        return MCP_INPUT_REQUIRED;
    }
    const json_t *roots = json_object_get(r, "roots");
    return mcp_call_add_textf(
        call, "%s|%s|%s", json_string_value(json_object_get(e, "action")),
        json_string_value(json_object_get(json_object_get(s, "content"), "text")),
        json_string_value(json_object_get(json_array_get(roots, 0), "uri")));
}

/* Needs the client's model: fails when it cannot have it. */
static int sample(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "s");
    if (!answer) {
        int rc = mcp_call_sample(call, "s", sampling_params(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_text(
        call, json_string_value(json_object_get(json_object_get(answer, "content"), "text")));
}

/* Two rounds; the first answer travels in the handler's state. */
static int two_rounds(mcp_call_t *call, void *user)
{
    const json_t *first = mcp_call_input(call, "first");
    const json_t *second = mcp_call_input(call, "second");
    if (mcp_call_round(call) == 0) {
        mcp_call_elicit(call, "first", "First?", confirm_schema(), MCP_INPUT_NEEDED);
        return MCP_INPUT_REQUIRED;
    }
    if (mcp_call_round(call) == 1) {
        HANDLER_CHECK(call, first != NULL);
        mcp_call_set_state(call, json_pack("{s:O}", "first", json_object_get(first, "action")));
        mcp_call_elicit(call, "second", "Second?", confirm_schema(), MCP_INPUT_NEEDED);
        return MCP_INPUT_REQUIRED;
    }
    HANDLER_CHECK(call, first == NULL); /* only the last round's answers */
    HANDLER_CHECK(call, second != NULL);
    return mcp_call_add_textf(
        call, "%s then %s", json_string_value(json_object_get(mcp_call_state(call), "first")),
        json_string_value(json_object_get(second, "action")));
}

/* Never satisfied. */
static int forever(mcp_call_t *call, void *user)
{
    char key[16];
    snprintf(key, sizeof key, "k%d", mcp_call_round(call));
    mcp_call_elicit(call, key, "Again?", confirm_schema(), MCP_INPUT_NEEDED);
    return MCP_INPUT_REQUIRED;
}

static int url(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "u");
    if (!answer) {
        int rc = mcp_call_elicit_url(call, "u", "Sign in", "https://example.com/login",
                                     MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_text(call, json_string_value(json_object_get(answer, "action")));
}

/* What the second run of `slow_second` saw. */
static atomic_bool second_run_cancelled;
static atomic_int second_runs;

/* Asks once; its second run waits until the request is cancelled. */
static int slow_second(mcp_call_t *call, void *user)
{
    if (!mcp_call_input(call, "confirm")) {
        mcp_call_elicit(call, "confirm", "Proceed?", confirm_schema(), MCP_INPUT_NEEDED);
        return MCP_INPUT_REQUIRED;
    }
    atomic_fetch_add(&second_runs, 1);
    mcp_call_sleep(call, 30000);
    atomic_store(&second_run_cancelled, mcp_call_cancelled(call));
    return mcp_call_add_text(call, "too late");
}

static mcp_server_t *new_server(mcp_legacy_mode_t legacy, int64_t timeout_ms, int max_rounds)
{
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "bridge-test",
                                                               .version = "1",
                                                               .legacy = legacy,
                                                               .legacy_input_timeout_ms =
                                                                   timeout_ms,
                                                               .max_input_rounds = max_rounds},
                                       NULL);
    assert_non_null(srv);
    static const struct {
        const char *name;
        mcp_tool_fn fn;
        bool run_inline;
    } tools[] = {{"confirm", confirm, false},       {"ask_all", ask_all, false},
                 {"sample", sample, false},         {"two_rounds", two_rounds, false},
                 {"forever", forever, false},       {"url", url, false},
                 {"slow_second", slow_second, false}, {"confirm_inline", confirm, true}};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(srv,
                                             &(mcp_tool_t){.name = tools[i].name,
                                                           .handler = tools[i].fn,
                                                           .run_inline = tools[i].run_inline},
                                             NULL),
                         MCP_OK);
    return srv;
}

#define ALL_CAPS "{\"elicitation\":{\"form\":{},\"url\":{}},\"sampling\":{},\"roots\":{}}"

/* A stdio connection after the handshake at `version` with `caps`. */
static mcp_conn_t *initialized_conn(mcp_server_t *srv, const char *version, const char *caps)
{
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    assert_non_null(conn);
    json_t *response = legacy_serve(srv, conn, NULL, legacy_initialize(0, version, caps), NULL);
    expect_legacy_result(response);
    json_decref(response);
    assert_null(
        legacy_serve(srv, conn, NULL, legacy_notification("notifications/initialized", NULL), NULL));
    return conn;
}

/* Starts tools/call `name` (id) without waiting for its answer. */
static void start_call(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                       json_int_t id, const char *name, capture_sink_t *cap,
                       mcp_exchange_t **handle)
{
    capture_init(cap);
    json_t *request =
        legacy_request(id, "tools/call", json_pack("{s:s, s:{}}", "name", name, "arguments"));
    assert_int_equal(capture_submit(srv, conn, request, ctx, cap, handle), MCP_OK);
    json_decref(request);
}

/* Waits for the n-th message of `cap` (1-based) and asserts it is a server
 * request of `method`, valid in the 2025-11-25 schema. Returns it
 * (borrowed from cap). */
static const json_t *expect_server_request(capture_sink_t *cap, size_t n, const char *method)
{
    if (!capture_wait_count(cap, n, CAPTURE_PATIENCE_MS))
        fail_msg("no server request %zu within %d ms", n, CAPTURE_PATIENCE_MS);
    capture_item_t item = capture_item(cap, n - 1);
    assert_int_equal(item.kind, MCP_OUT_REQUEST);
    MCP_ASSERT_SCHEMA_VALID(item.msg, NULL, LEGACY_SCHEMA);
    assert_string_equal(json_string_value(json_object_get(item.msg, "method")), method);
    assert_true(json_is_string(json_object_get(item.msg, "id")));
    return item.msg;
}

/* The client answers a server request (on `conn` with `ctx`): 202, no body. */
static void answer(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx,
                   json_t *answer_new)
{
    int status = 0;
    json_t *response = legacy_serve(srv, conn, ctx, answer_new, &status);
    if (response) {
        char *text = json_dumps(response, JSON_COMPACT);
        fail_msg("an answer was answered: %s", text);
    }
    assert_int_equal(status, 202);
}

static json_t *accepted(bool ok)
{
    return json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "ok", ok);
}

/* Asserts that the n-th message of `cap` (1-based) is the server's
 * notifications/cancelled for its request of id `id`. */
static void expect_cancellation(capture_sink_t *cap, size_t n, const json_t *id)
{
    assert_true(capture_count(cap) >= n);
    capture_item_t item = capture_item(cap, n - 1);
    assert_int_equal(item.kind, MCP_OUT_NOTIFICATION);
    MCP_ASSERT_SCHEMA_VALID(item.msg, NULL, LEGACY_SCHEMA);
    assert_string_equal(json_string_value(json_object_get(item.msg, "method")),
                        "notifications/cancelled");
    const json_t *params = json_object_get(item.msg, "params");
    assert_true(json_equal(json_object_get(params, "requestId"), id));
    assert_true(json_is_string(json_object_get(params, "reason")));
}

/* Waits for the call's response; asserts the sink contract and the
 * schema. Returns the response (borrowed from cap). */
static const json_t *finish_call(capture_sink_t *cap)
{
    if (!capture_wait_released(cap, CAPTURE_PATIENCE_MS))
        fail_msg("the call did not finish within %d ms", CAPTURE_PATIENCE_MS);
    capture_assert_done(cap);
    legacy_expect_schema_valid(cap, "tools/call");
    const json_t *response = capture_response(cap, NULL);
    assert_non_null(response);
    return response;
}

static const char *result_text(const json_t *response)
{
    const json_t *result = expect_legacy_result(response);
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* ------------------------------------------------------------------ */
/* Asking and answering                                                */
/* ------------------------------------------------------------------ */

static void test_elicitation_is_bridged(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", "{\"elicitation\":{}}");
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    const json_t *params = json_object_get(request, "params");
    assert_string_equal(json_string_value(json_object_get(params, "mode")), "form");
    assert_string_equal(json_string_value(json_object_get(params, "message")), "Proceed?");
    json_t *schema = confirm_schema();
    assert_true(json_equal(json_object_get(params, "requestedSchema"), schema));
    json_decref(schema);

    answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    assert_int_equal(capture_count(&cap), 2);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A run_inline handler on a legacy session asks without waiting: its
 * request to the client is out when the submit returns, and the second
 * run, once the client has answered, finishes the call. */
static void test_inline_handler_is_bridged(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", "{\"elicitation\":{}}");
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "confirm_inline", &cap, NULL);
    assert_int_equal(capture_count(&cap), 1);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Request ids the server picks are unguessable strings, fresh per request
 * (a client must not be able to predict the id of another client's). */
static void test_request_ids_are_fresh(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    char ids[2][128];
    for (int i = 0; i < 2; i++) {
        capture_sink_t cap;
        start_call(srv, conn, NULL, i + 1, "confirm", &cap, NULL);
        const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
        const char *id = json_string_value(json_object_get(request, "id"));
        assert_true(strlen(id) >= 32);
        snprintf(ids[i], sizeof ids[i], "%s", id);
        answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
        finish_call(&cap);
        capture_cleanup(&cap);
    }
    assert_string_not_equal(ids[0], ids[1]);
    /* Not a counter: the ids share no long common prefix. */
    size_t common = 0;
    while (ids[0][common] && ids[0][common] == ids[1][common])
        common++;
    assert_true(common < 16);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Before 2025-11-25 a form elicitation has no "mode" (form was the only
 * one); a url elicitation at 2025-11-25 carries an elicitationId. */
static void test_request_shapes_follow_the_version(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-06-18", "{\"elicitation\":{}}");
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    assert_null(json_object_get(json_object_get(request, "params"), "mode"));
    answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(false)));
    assert_string_equal(result_text(finish_call(&cap)), "accept no round 1");
    capture_cleanup(&cap);
    mcp_conn_free(conn);

    conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    start_call(srv, conn, NULL, 1, "url", &cap, NULL);
    request = expect_server_request(&cap, 1, "elicitation/create");
    const json_t *params = json_object_get(request, "params");
    assert_string_equal(json_string_value(json_object_get(params, "mode")), "url");
    assert_string_equal(json_string_value(json_object_get(params, "url")),
                        "https://example.com/login");
    assert_true(json_is_string(json_object_get(params, "elicitationId")));
    answer(srv, conn, NULL,
           legacy_result(json_object_get(request, "id"), json_pack("{s:s}", "action", "accept")));
    assert_string_equal(result_text(finish_call(&cap)), "accept");
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Every input request of a round goes out at once; the answers may come
 * in any order. */
static void test_one_round_of_every_kind(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "ask_all", &cap, NULL);
    assert_true(capture_wait_count(&cap, 3, CAPTURE_PATIENCE_MS));
    json_t *requests = json_object(); /* method -> request */
    for (size_t i = 0; i < 3; i++) {
        capture_item_t item = capture_item(&cap, i);
        assert_int_equal(item.kind, MCP_OUT_REQUEST);
        MCP_ASSERT_SCHEMA_VALID(item.msg, NULL, LEGACY_SCHEMA);
        json_object_set(requests, json_string_value(json_object_get(item.msg, "method")),
                        item.msg);
    }
    const json_t *e = json_object_get(requests, "elicitation/create");
    const json_t *s = json_object_get(requests, "sampling/createMessage");
    const json_t *r = json_object_get(requests, "roots/list");
    assert_non_null(e);
    assert_non_null(s);
    assert_non_null(r);
    json_t *sampling_answer =
        json_pack("{s:s, s:s, s:{s:s, s:s}}", "role", "assistant", "model", "m", "content",
                  "type", "text", "text", "Paris");
    answer(srv, conn, NULL, legacy_result(json_object_get(r, "id"),
                                          json_pack("{s:[{s:s}]}", "roots", "uri", "file:///w")));
    answer(srv, conn, NULL, legacy_result(json_object_get(s, "id"), sampling_answer));
    assert_false(capture_released(&cap)); /* still one answer missing */
    answer(srv, conn, NULL,
           legacy_result(json_object_get(e, "id"), json_pack("{s:s}", "action", "decline")));
    assert_string_equal(result_text(finish_call(&cap)), "decline|Paris|file:///w");
    json_decref(requests);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

static void test_two_rounds(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "two_rounds", &cap, NULL);
    const json_t *first = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, conn, NULL, legacy_result(json_object_get(first, "id"), accepted(true)));
    const json_t *second = expect_server_request(&cap, 2, "elicitation/create");
    assert_false(json_equal(json_object_get(first, "id"), json_object_get(second, "id")));
    answer(srv, conn, NULL,
           legacy_result(json_object_get(second, "id"), json_pack("{s:s}", "action", "cancel")));
    assert_string_equal(result_text(finish_call(&cap)), "accept then cancel");
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* The round limit counts rounds as on the modern era: asking once more
 * than max_input_rounds fails the request with -32602. */
static void test_round_limit(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 2);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "forever", &cap, NULL);
    for (size_t n = 1; n <= 2; n++) {
        const json_t *request = expect_server_request(&cap, n, "elicitation/create");
        answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
    }
    expect_error(finish_call(&cap), MCP_INVALID_PARAMS);
    assert_int_equal(capture_count(&cap), 3);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Answers that are not results                                        */
/* ------------------------------------------------------------------ */

/* A client that refuses an elicitation (an error instead of a result) has
 * declined to answer: the handler sees "cancel", which it handles anyway.
 * A refused sampling or roots request fails the request: the handler could
 * not go on without it. */
static void test_refusals(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, conn, NULL,
           legacy_error(json_object_get(request, "id"), MCP_METHOD_NOT_FOUND, "Method not found"));
    assert_string_equal(result_text(finish_call(&cap)), "cancel no round 1");
    capture_cleanup(&cap);

    start_call(srv, conn, NULL, 2, "sample", &cap, NULL);
    request = expect_server_request(&cap, 1, "sampling/createMessage");
    answer(srv, conn, NULL, legacy_error(json_object_get(request, "id"), -1, "User rejected"));
    const json_t *error = expect_error(finish_call(&cap), MCP_INTERNAL_ERROR);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "User rejected"));
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* An answer that is not the result the request asks for (the handler would
 * read garbage) fails the request, as an invalid inputResponse does on the
 * modern era. */
static void test_invalid_answers(void **state)
{
    static const struct {
        const char *tool, *method, *result;
    } cases[] = {
        {"confirm", "elicitation/create", "{\"action\":\"maybe\"}"},
        {"confirm", "elicitation/create", "{\"action\":\"accept\",\"content\":[1]}"},
        {"sample", "sampling/createMessage", "{\"role\":\"assistant\"}"},
        {"sample", "sampling/createMessage", "{}"},
    };
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        capture_sink_t cap;
        start_call(srv, conn, NULL, (json_int_t)i + 1, cases[i].tool, &cap, NULL);
        const json_t *request = expect_server_request(&cap, 1, cases[i].method);
        answer(srv, conn, NULL,
               legacy_result(json_object_get(request, "id"), json_loads(cases[i].result, 0, NULL)));
        const json_t *error = expect_error(finish_call(&cap), MCP_INVALID_PARAMS);
        assert_non_null(strstr(json_string_value(json_object_get(error, "message")),
                               cases[i].method));
        capture_cleanup(&cap);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A response to an id the server never used is accepted and ignored. */
static void test_unknown_answers_are_ignored(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    json_t *id = json_string("not-ours");
    answer(srv, conn, NULL, legacy_result(id, accepted(true)));
    answer(srv, conn, NULL, legacy_error(id, -32601, "nope"));
    json_decref(id);
    id = json_integer(5);
    answer(srv, conn, NULL, legacy_result(id, accepted(true)));
    json_decref(id);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Capability checks use what initialize declared: without it a handler
 * that needs the input fails and nothing is sent -- with -32602, not the
 * 2026-07-28 -32021 a legacy client does not know, the missing capability
 * still named in data.requiredCapabilities. */
static void test_capabilities_of_initialize(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", "{\"elicitation\":{}}");
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "sample", &cap, NULL);
    const json_t *error = expect_error(finish_call(&cap), MCP_INVALID_PARAMS);
    assert_non_null(json_object_get(json_object_get(error, "data"), "requiredCapabilities"));
    assert_int_equal(capture_count(&cap), 1);
    capture_cleanup(&cap);

    /* A bare "elicitation": {} is form only: url mode needs declaring. */
    start_call(srv, conn, NULL, 2, "url", &cap, NULL);
    expect_error(finish_call(&cap), MCP_INVALID_PARAMS);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Time and cancellation                                               */
/* ------------------------------------------------------------------ */

/* A client that never answers: the request fails after
 * legacy_input_timeout_ms, and the client is told first that its answer is
 * no longer awaited (notifications/cancelled); an answer after that
 * changes nothing. */
static void test_timeout(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 100, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    json_t *id = json_incref(json_object_get(request, "id"));
    const json_t *error = expect_error(finish_call(&cap), MCP_INTERNAL_ERROR);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "in time"));
    expect_cancellation(&cap, 2, id);
    answer(srv, conn, NULL, legacy_result(id, accepted(true)));
    assert_int_equal(capture_count(&cap), 3);
    json_decref(id);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A timeout shorter than it takes to send the requests: the round may
 * end while it is being set up. Many times, for the sanitizers to see. */
static void test_timeout_during_setup(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 1, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    for (int i = 0; i < 200; i++) {
        capture_sink_t cap;
        start_call(srv, conn, NULL, i + 1, "ask_all", &cap, NULL);
        expect_error(finish_call(&cap), MCP_INTERNAL_ERROR);
        capture_cleanup(&cap);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The client cancels the request while the server waits for its answer:
 * the server cancels its own request in turn (notifications/cancelled on
 * the stream, while there is one), sends nothing else, and ignores a late
 * answer. Both ways: by notifications/cancelled and by the transport (its
 * client went away). */
static void test_cancel_while_waiting(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    for (int by_transport = 0; by_transport < 2; by_transport++) {
        capture_sink_t cap;
        mcp_exchange_t *handle = NULL;
        start_call(srv, conn, NULL, 1, "confirm", &cap, &handle);
        const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
        json_t *id = json_incref(json_object_get(request, "id"));
        if (by_transport) {
            mcp_exchange_cancel(handle);
        } else {
            assert_null(legacy_serve(
                srv, conn, NULL,
                legacy_notification("notifications/cancelled",
                                    json_pack("{s:i, s:s}", "requestId", 1, "reason", "bored")),
                NULL));
        }
        assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
        capture_assert_done(&cap);
        expect_cancellation(&cap, 2, id);
        answer(srv, conn, NULL, legacy_result(id, accepted(true)));
        sleep_ms(50);
        assert_int_equal(capture_count(&cap), 2); /* the request and its cancellation */
        json_decref(id);
        mcp_exchange_release(handle);
        capture_cleanup(&cap);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Cancelled after the answers came back: the handler's second run sees
 * the cancellation; a cancellation after the request finished is
 * harmless. */
static void test_cancel_after_the_answers(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    atomic_store(&second_runs, 0);
    atomic_store(&second_run_cancelled, false);
    capture_sink_t cap;
    mcp_exchange_t *handle = NULL;
    start_call(srv, conn, NULL, 1, "slow_second", &cap, &handle);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
    for (int i = 0; i < 2000 && atomic_load(&second_runs) == 0; i++)
        sleep_ms(5);
    assert_int_equal(atomic_load(&second_runs), 1);
    mcp_exchange_cancel(handle);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_assert_done(&cap);
    assert_int_equal(capture_count(&cap), 1);
    assert_true(atomic_load(&second_run_cancelled));
    mcp_exchange_release(handle);
    capture_cleanup(&cap);

    /* Finished, then cancelled by a transport that still holds its handle. */
    start_call(srv, conn, NULL, 2, "confirm", &cap, &handle);
    request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, conn, NULL, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    mcp_exchange_cancel(handle);
    mcp_exchange_release(handle);
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A server freed while a round waits: the request ends without an answer,
 * each of the server's requests cancelled. */
static void test_free_while_waiting(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    mcp_conn_t *conn = initialized_conn(srv, "2025-11-25", ALL_CAPS);
    capture_sink_t cap;
    start_call(srv, conn, NULL, 1, "ask_all", &cap, NULL);
    assert_true(capture_wait_count(&cap, 3, CAPTURE_PATIENCE_MS));
    mcp_conn_free(conn);
    mcp_server_free(srv);
    assert_true(capture_released(&cap));
    capture_assert_done(&cap);
    assert_int_equal(capture_count(&cap), 6);
    for (size_t i = 0; i < 3; i++)
        expect_cancellation(&cap, 4 + i, json_object_get(capture_item(&cap, i).msg, "id"));
    capture_cleanup(&cap);
}

/* ------------------------------------------------------------------ */
/* HTTP                                                                */
/* ------------------------------------------------------------------ */

/* initialize over HTTP; returns the session id minted (in `id`). */
static void http_initialize(mcp_server_t *srv, const char *caps, char id[128])
{
    legacy_http_t http;
    json_t *response = legacy_serve_http(srv, NULL, legacy_http_init(&http, NULL, NULL),
                                         legacy_initialize(0, "2025-11-25", caps), NULL, id);
    expect_legacy_result(response);
    json_decref(response);
}

/* A call asks `asked` for confirmation; `other` answers first and is
 * ignored (the call goes on waiting), then `asked` answers and the call
 * ends with that answer. */
static void only_the_asked_answers(mcp_server_t *srv, const mcp_request_context_t *asked,
                                   const mcp_request_context_t *other)
{
    capture_sink_t cap;
    start_call(srv, NULL, asked, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, NULL, other, legacy_result(json_object_get(request, "id"), accepted(false)));
    sleep_ms(50);
    assert_false(capture_released(&cap));
    answer(srv, NULL, asked, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    capture_cleanup(&cap);
}

/* Over HTTP the request goes out on the POST's own stream and the answer
 * comes back as a POST of the same session. An answer POSTed in another
 * session does not count: only the session that was asked may answer. */
static void test_answers_belong_to_their_session(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    char a[128], b[128];
    http_initialize(srv, ALL_CAPS, a);
    http_initialize(srv, ALL_CAPS, b);
    assert_true(a[0] && b[0]);
    legacy_http_t in_a, in_b;
    legacy_http_init(&in_a, "2025-11-25", a);
    legacy_http_init(&in_b, "2025-11-25", b);
    only_the_asked_answers(srv, &in_a.ctx, &in_b.ctx);
    mcp_server_free(srv);
}

/* A bridged request is answered only as the principal that was asked:
 * in its session (another principal finds no session there: 404), and in
 * stateless mode too, where no session tells clients apart. */
static void test_answers_belong_to_their_principal(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    legacy_http_t alice, mallory;
    legacy_http_init(&alice, NULL, NULL);
    alice.ctx.principal = "alice";
    char id[128];
    json_t *response = legacy_serve_http(srv, NULL, &alice.ctx,
                                         legacy_initialize(0, "2025-11-25", ALL_CAPS), NULL, id);
    expect_legacy_result(response);
    json_decref(response);
    legacy_http_init(&alice, "2025-11-25", id);
    alice.ctx.principal = "alice";
    legacy_http_init(&mallory, "2025-11-25", id);
    mallory.ctx.principal = "mallory";

    capture_sink_t cap;
    start_call(srv, NULL, &alice.ctx, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    int status = 0;
    response = legacy_serve(srv, NULL, &mallory.ctx,
                            legacy_result(json_object_get(request, "id"), accepted(false)),
                            &status);
    assert_int_equal(status, 404);
    json_decref(response);
    sleep_ms(50);
    assert_false(capture_released(&cap));
    answer(srv, NULL, &alice.ctx, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    capture_cleanup(&cap);
    mcp_server_free(srv);

    srv = new_server(MCP_LEGACY_STATELESS, 0, 0);
    legacy_http_init(&alice, "2025-11-25", NULL);
    alice.ctx.principal = "alice";
    legacy_http_init(&mallory, "2025-11-25", NULL);
    mallory.ctx.principal = "mallory";
    only_the_asked_answers(srv, &alice.ctx, &mallory.ctx);
    mcp_server_free(srv);
}

/* A POST whose Accept admits JSON alone has no event stream to carry a
 * server request: the handler's ask fails at once, and the call ends with
 * -32600 naming text/event-stream -- not a request that is never seen
 * and a wait of legacy_input_timeout_ms (ten minutes here). */
static void test_json_only_post_is_not_asked(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_SESSIONS, 0, 0);
    char id[128];
    http_initialize(srv, ALL_CAPS, id);
    static const char *const json_only[] = {"application/json", "application/json, text/*;q=0"};
    for (size_t i = 0; i < sizeof json_only / sizeof json_only[0]; i++) {
        legacy_http_t http;
        legacy_http_init(&http, "2025-11-25", id);
        capture_sink_t cap;
        start_call(srv, NULL, legacy_http_accept(&http, json_only[i]), 1, "confirm", &cap, NULL);
        const json_t *error = expect_error(finish_call(&cap), MCP_INVALID_REQUEST);
        const char *message = json_string_value(json_object_get(error, "message"));
        assert_non_null(strstr(message, "text/event-stream"));
        assert_non_null(strstr(message, "elicitation/create"));
        assert_int_equal(capture_count(&cap), 1); /* the answer only: nothing was sent */
        capture_cleanup(&cap);
    }

    /* An Accept that admits an event stream is asked as usual. */
    legacy_http_t http;
    legacy_http_init(&http, "2025-11-25", id);
    capture_sink_t cap;
    start_call(srv, NULL, legacy_http_accept(&http, "text/event-stream;q=0.5, application/json"), 2,
               "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, NULL, &http.ctx, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

/* Stateless: what initialize declared is gone, so the server asks
 * anyway; the version comes from the request's MCP-Protocol-Version. A
 * client that cannot answer refuses, and the handler sees "cancel". */
static void test_stateless_asks_optimistically(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_STATELESS, 0, 0);
    legacy_http_t http;
    const mcp_request_context_t *ctx = legacy_http_init(&http, "2025-06-18", NULL);
    capture_sink_t cap;
    start_call(srv, NULL, ctx, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    assert_null(json_object_get(json_object_get(request, "params"), "mode"));
    answer(srv, NULL, ctx, legacy_result(json_object_get(request, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&cap)), "accept yes round 1");
    capture_cleanup(&cap);

    start_call(srv, NULL, ctx, 2, "confirm", &cap, NULL);
    request = expect_server_request(&cap, 1, "elicitation/create");
    answer(srv, NULL, ctx,
           legacy_error(json_object_get(request, "id"), MCP_METHOD_NOT_FOUND, "Method not found"));
    assert_string_equal(result_text(finish_call(&cap)), "cancel no round 1");
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

/* Sends notifications/cancelled for request `id` with `ctx`: 202. */
static void cancel_request(mcp_server_t *srv, const mcp_request_context_t *ctx, json_int_t id)
{
    int status = 0;
    assert_null(legacy_serve(srv, NULL, ctx,
                             legacy_notification("notifications/cancelled",
                                                 json_pack("{s:I, s:s}", "requestId", id,
                                                           "reason", "changed my mind")),
                             &status));
    assert_int_equal(status, 202);
}

/* Stateless: notifications/cancelled ends the request of that id of the
 * same principal (nothing more is sent, a late answer is ignored), not one
 * of another principal's; unauthenticated clients cannot be told apart, so
 * an id that two of their requests share cancels neither. */
static void test_stateless_cancel(void **state)
{
    mcp_server_t *srv = new_server(MCP_LEGACY_STATELESS, 0, 0);
    legacy_http_t alice, mallory, anon;
    legacy_http_init(&alice, "2025-11-25", NULL);
    alice.ctx.principal = "alice";
    legacy_http_init(&mallory, "2025-11-25", NULL);
    mallory.ctx.principal = "mallory";
    legacy_http_init(&anon, "2025-11-25", NULL);

    capture_sink_t cap;
    start_call(srv, NULL, &alice.ctx, 1, "confirm", &cap, NULL);
    const json_t *request = expect_server_request(&cap, 1, "elicitation/create");
    json_t *asked = json_incref(json_object_get(request, "id"));
    cancel_request(srv, &mallory.ctx, 1);
    sleep_ms(50);
    assert_false(capture_released(&cap));
    cancel_request(srv, &alice.ctx, 1);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_assert_done(&cap);
    expect_cancellation(&cap, 2, asked);
    answer(srv, NULL, &alice.ctx, legacy_result(asked, accepted(true)));
    assert_int_equal(capture_count(&cap), 2); /* the request and its cancellation */
    json_decref(asked);
    capture_cleanup(&cap);

    /* Two unauthenticated requests of id 7: which one? Neither. */
    capture_sink_t one, two;
    start_call(srv, NULL, &anon.ctx, 7, "confirm", &one, NULL);
    start_call(srv, NULL, &anon.ctx, 7, "confirm", &two, NULL);
    const json_t *first = expect_server_request(&one, 1, "elicitation/create");
    const json_t *second = expect_server_request(&two, 1, "elicitation/create");
    cancel_request(srv, &anon.ctx, 7);
    sleep_ms(50);
    assert_false(capture_released(&one));
    assert_false(capture_released(&two));
    answer(srv, NULL, &anon.ctx, legacy_result(json_object_get(first, "id"), accepted(true)));
    assert_string_equal(result_text(finish_call(&one)), "accept yes round 1");
    /* Alone now: the cancellation finds it. */
    cancel_request(srv, &anon.ctx, 7);
    assert_true(capture_wait_released(&two, CAPTURE_PATIENCE_MS));
    capture_assert_done(&two);
    assert_null(capture_response(&two, NULL));
    (void)second;
    capture_cleanup(&one);
    capture_cleanup(&two);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elicitation_is_bridged),
        cmocka_unit_test(test_inline_handler_is_bridged),
        cmocka_unit_test(test_request_ids_are_fresh),
        cmocka_unit_test(test_request_shapes_follow_the_version),
        cmocka_unit_test(test_one_round_of_every_kind),
        cmocka_unit_test(test_two_rounds),
        cmocka_unit_test(test_round_limit),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_invalid_answers),
        cmocka_unit_test(test_unknown_answers_are_ignored),
        cmocka_unit_test(test_capabilities_of_initialize),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_timeout_during_setup),
        cmocka_unit_test(test_cancel_while_waiting),
        cmocka_unit_test(test_cancel_after_the_answers),
        cmocka_unit_test(test_free_while_waiting),
        cmocka_unit_test(test_answers_belong_to_their_session),
        cmocka_unit_test(test_answers_belong_to_their_principal),
        cmocka_unit_test(test_json_only_post_is_not_asked),
        cmocka_unit_test(test_stateless_cancel),
        cmocka_unit_test(test_stateless_asks_optimistically),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
