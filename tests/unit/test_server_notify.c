/*
 * Server core, what happens during a request: progress notifications (only
 * with a progressToken, increasing), log notifications (only with the
 * logLevel _meta key, at or above it), and cancellation (by the transport's
 * handle, by notifications/cancelled on a connection, by a sink whose peer
 * went away, by shutdown): the handler can tell, and nothing more is sent.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <pthread.h>
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
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static mcp_server_t *new_server(void)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "notify-test", .version = "1"}, NULL);
    assert_non_null(srv);
    return srv;
}

static void add(mcp_server_t *srv, const char *name, mcp_tool_fn fn, void *user)
{
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = fn, .user = user}, NULL),
        MCP_OK);
}

static json_t *call_request(json_int_t id, const char *name)
{
    return modern_request(id, "tools/call", json_pack("{s:s}", "name", name));
}

/* Handlers that block report here that they started. */
static pthread_mutex_t started_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
static int started;

static void mark_started(void)
{
    pthread_mutex_lock(&started_lock);
    started++;
    pthread_cond_broadcast(&started_cond);
    pthread_mutex_unlock(&started_lock);
}

static void reset_started(void)
{
    pthread_mutex_lock(&started_lock);
    started = 0;
    pthread_mutex_unlock(&started_lock);
}

/* Waits until `n` handlers started (fails the test after the patience). */
static void wait_started(int n)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += CAPTURE_PATIENCE_MS / 1000;
    pthread_mutex_lock(&started_lock);
    int rc = 0;
    while (started < n && rc == 0)
        rc = pthread_cond_timedwait(&started_cond, &started_lock, &deadline);
    int got = started;
    pthread_mutex_unlock(&started_lock);
    if (got < n)
        fail_msg("only %d of %d handlers started", got, n);
}

/* What a blocking handler saw, read by the test after the release. */
typedef struct observed {
    int sleep_rc;
    bool cancelled;
    int progress_rc;
    int log_rc;
} observed_t;

/* Blocks until cancelled (or 30 s), then tries to send more. */
static int sleeper(mcp_call_t *call, void *user)
{
    observed_t *seen = user;
    mark_started();
    seen->sleep_rc = mcp_call_sleep(call, 30000);
    seen->cancelled = mcp_call_cancelled(call);
    seen->progress_rc = mcp_call_progress(call, 1, -1, "after the cancel");
    seen->log_rc = mcp_call_log(call, "error", NULL, json_string("after the cancel"));
    /* A handler that ignores the cancellation and finishes anyway. */
    return mcp_call_add_text(call, "finished anyway");
}

/* A sleeper request that asks for progress and logs, so anything sent
 * after the cancellation would show. */
static json_t *sleeper_request(json_t *id_new)
{
    json_t *request = modern_request(0, "tools/call", json_pack("{s:s}", "name", "sleep"));
    json_object_set_new(request, "id", id_new);
    json_object_set_new(modern_meta(request), "progressToken", json_integer(1));
    json_object_set_new(modern_meta(request), MCP_META_LOG_LEVEL, json_string("debug"));
    return request;
}

static void expect_cancelled_quietly(capture_sink_t *cap, const observed_t *seen)
{
    if (!capture_wait_released(cap, CAPTURE_PATIENCE_MS))
        fail_msg("the cancelled request was never released");
    capture_assert_done(cap);
    assert_int_equal(capture_count(cap), 0);
    assert_int_equal(seen->sleep_rc, MCP_ECANCELED);
    assert_true(seen->cancelled);
    assert_int_equal(seen->progress_rc, MCP_ECANCELED);
    assert_int_equal(seen->log_rc, MCP_ECANCELED);
}

/* ------------------------------------------------------------------ */
/* Progress                                                            */
/* ------------------------------------------------------------------ */

static int three_steps(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_progress(call, 0.25, 1, "a quarter") == MCP_OK);
    HANDLER_CHECK(call, mcp_call_progress(call, 0.5, -1, NULL) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_progress(call, 3, 3, "done") == MCP_OK);
    return mcp_call_add_text(call, "done");
}

/* Submits `request_new`; returns the capture (after the release) for the
 * caller to inspect and clean up. */
static void run(mcp_server_t *srv, json_t *request_new, capture_sink_t *cap)
{
    capture_init(cap);
    const char *method = json_string_value(json_object_get(request_new, "method"));
    capture_roundtrip(srv, NULL, request_new, NULL, cap);
    expect_all_schema_valid(cap, method);
    json_decref(request_new);
}

static void test_progress_only_with_a_token(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "steps", three_steps, NULL);

    capture_sink_t cap;
    run(srv, call_request(1, "steps"), &cap);
    assert_int_equal(capture_count(&cap), 1);
    expect_complete(capture_response(&cap, NULL));
    capture_cleanup(&cap);

    json_t *tokens[] = {json_integer(7), json_string("tok-1"), json_integer(0)};
    for (size_t t = 0; t < 3; t++) {
        json_t *request = call_request(2, "steps");
        json_object_set_new(modern_meta(request), "progressToken", json_incref(tokens[t]));
        run(srv, request, &cap);
        assert_int_equal(capture_count(&cap), 4);
        const double want_progress[] = {0.25, 0.5, 3};
        for (size_t i = 0; i < 3; i++) {
            capture_item_t item = capture_item(&cap, i);
            assert_int_equal(item.kind, MCP_OUT_NOTIFICATION);
            assert_string_equal(json_string_value(json_object_get(item.msg, "method")),
                                "notifications/progress");
            const json_t *params = json_object_get(item.msg, "params");
            assert_true(json_equal(json_object_get(params, "progressToken"), tokens[t]));
            assert_true(json_number_value(json_object_get(params, "progress")) ==
                        want_progress[i]);
        }
        const json_t *first = json_object_get(capture_item(&cap, 0).msg, "params");
        assert_true(json_number_value(json_object_get(first, "total")) == 1);
        assert_string_equal(json_string_value(json_object_get(first, "message")), "a quarter");
        const json_t *second = json_object_get(capture_item(&cap, 1).msg, "params");
        assert_null(json_object_get(second, "total"));
        assert_null(json_object_get(second, "message"));
        /* The response comes last. */
        assert_int_equal(capture_item(&cap, 3).kind, MCP_OUT_RESPONSE);
        capture_cleanup(&cap);
        json_decref(tokens[t]);
    }
    mcp_server_free(srv);
}

/* A token of the wrong type is no token. */
static void test_progress_token_of_wrong_type(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "steps", three_steps, NULL);
    capture_sink_t cap;
    json_t *request = call_request(1, "steps");
    json_object_set_new(modern_meta(request), "progressToken", json_real(1.5));
    run(srv, request, &cap);
    assert_int_equal(capture_notification_count(&cap), 0);
    expect_complete(capture_response(&cap, NULL));
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

static int not_increasing(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_progress(call, 1, 10, NULL) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_progress(call, 1, 10, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_progress(call, 0.5, 10, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_progress(call, NAN, 10, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_progress(call, INFINITY, 10, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_progress(call, 2, NAN, NULL) == MCP_OK); /* total omitted */
    return mcp_call_add_text(call, "ok");
}

static void test_progress_must_increase(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "bad", not_increasing, NULL);
    capture_sink_t cap;
    json_t *request = call_request(1, "bad");
    json_object_set_new(modern_meta(request), "progressToken", json_integer(1));
    run(srv, request, &cap);
    expect_complete(capture_response(&cap, NULL));
    assert_int_equal(capture_notification_count(&cap), 2);
    assert_null(json_object_get(json_object_get(capture_item(&cap, 1).msg, "params"), "total"));
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Logging                                                             */
/* ------------------------------------------------------------------ */

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

static int log_everything(mcp_call_t *call, void *user)
{
    for (size_t i = 0; i < 8; i++)
        HANDLER_CHECK(call, mcp_call_log(call, levels[i], i % 2 ? "test" : NULL,
                                         json_pack("{s:i}", "n", (int)i)) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_log(call, "verbose", NULL, json_true()) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_log(call, NULL, NULL, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_logf(call, "emergency", "formatted %d", 42) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_log(call, "emergency", NULL, NULL) == MCP_OK);
    return mcp_call_add_text(call, "logged");
}

/* A long formatted log line arrives whole, even where a fixed buffer would
 * have cut a character in two. */
static int log_long_line(mcp_call_t *call, void *user)
{
    char text[3001];
    for (size_t i = 0; i < 3000; i += 2)
        memcpy(text + i, "\xc3\xa9", 2); /* U+00E9, two bytes */
    text[3000] = '\0';
    HANDLER_CHECK(call, mcp_call_logf(call, "info", "%s", text) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_logf(call, "info", "bad %s", "\xff") == MCP_EINVAL);
    return mcp_call_add_text(call, "logged");
}

static void test_logf_keeps_long_lines(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "log", log_long_line, NULL);
    capture_sink_t cap;
    json_t *request = call_request(1, "log");
    json_object_set_new(modern_meta(request), MCP_META_LOG_LEVEL, json_string("debug"));
    run(srv, request, &cap);
    expect_complete(capture_response(&cap, NULL));
    assert_int_equal(capture_notification_count(&cap), 1);
    const json_t *params = json_object_get(capture_item(&cap, 0).msg, "params");
    assert_int_equal(json_string_length(json_object_get(params, "data")), 3000);
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

static void test_logging_threshold(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "log", log_everything, NULL);

    /* Without the logLevel key: nothing, whatever the level. */
    capture_sink_t cap;
    run(srv, call_request(1, "log"), &cap);
    assert_int_equal(capture_notification_count(&cap), 0);
    capture_cleanup(&cap);

    for (size_t threshold = 0; threshold < 8; threshold++) {
        json_t *request = call_request(2, "log");
        json_object_set_new(modern_meta(request), MCP_META_LOG_LEVEL,
                            json_string(levels[threshold]));
        run(srv, request, &cap);
        size_t expected = 8 - threshold;
        assert_int_equal(capture_notification_count(&cap), expected + 2);
        for (size_t i = 0; i < expected; i++) {
            const json_t *msg = capture_item(&cap, i).msg;
            assert_string_equal(json_string_value(json_object_get(msg, "method")),
                                "notifications/message");
            const json_t *params = json_object_get(msg, "params");
            size_t level = threshold + i;
            assert_string_equal(json_string_value(json_object_get(params, "level")),
                                levels[level]);
            assert_int_equal(json_integer_value(json_object_get(json_object_get(params, "data"), "n")),
                             level);
            if (level % 2)
                assert_string_equal(json_string_value(json_object_get(params, "logger")), "test");
            else
                assert_null(json_object_get(params, "logger"));
        }
        const json_t *formatted = json_object_get(capture_item(&cap, expected).msg, "params");
        assert_string_equal(json_string_value(json_object_get(formatted, "data")), "formatted 42");
        const json_t *empty = json_object_get(capture_item(&cap, expected + 1).msg, "params");
        assert_true(json_is_null(json_object_get(empty, "data")));
        expect_complete(capture_response(&cap, NULL));
        capture_cleanup(&cap);
    }
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Cancellation                                                        */
/* ------------------------------------------------------------------ */

static void test_cancel_through_the_exchange_handle(void **state)
{
    mcp_server_t *srv = new_server();
    observed_t seen = {0};
    add(srv, "sleep", sleeper, &seen);
    reset_started();

    capture_sink_t cap;
    capture_init(&cap);
    mcp_exchange_t *ex = NULL;
    json_t *request = sleeper_request(json_integer(1));
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &cap, &ex), MCP_OK);
    json_decref(request);
    assert_non_null(ex);
    wait_started(1);
    assert_false(capture_released(&cap));
    mcp_exchange_cancel(ex);
    expect_cancelled_quietly(&cap, &seen);
    /* Cancelling again, after the end, is harmless. */
    mcp_exchange_cancel(ex);
    mcp_exchange_release(ex);
    mcp_exchange_release(NULL);
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

/* notifications/cancelled on the connection names the request by id; the
 * spec's own example carries no _meta, a client may add it. */
static void test_cancel_notification(void **state)
{
    struct {
        json_t *id;
        bool with_meta;
    } rows[] = {
        {json_integer(5), false},
        {json_integer(5), true},
        {json_string("req-5"), false},
        {json_string("req-5"), true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_server_t *srv = new_server();
        observed_t seen = {0};
        add(srv, "sleep", sleeper, &seen);
        reset_started();
        mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
        assert_non_null(conn);

        capture_sink_t cap;
        capture_init(&cap);
        json_t *request = sleeper_request(json_incref(rows[i].id));
        assert_int_equal(capture_submit(srv, conn, request, NULL, &cap, NULL), MCP_OK);
        json_decref(request);
        wait_started(1);

        /* A cancellation naming another id changes nothing... */
        json_t *other = json_is_integer(rows[i].id) ? json_string("5") : json_integer(5);
        json_t *note = modern_cancel_notification(other);
        json_decref(other);
        json_t *response = serve_with(srv, conn, NULL, note, NULL);
        assert_null(response);
        assert_false(capture_released(&cap));

        /* ... the right one stops the request. */
        note = modern_cancel_notification(rows[i].id);
        if (rows[i].with_meta)
            json_object_set_new(json_object_get(note, "params"), "_meta",
                                json_pack("{s:s, s:{}}", MCP_META_PROTOCOL_VERSION, "2026-07-28",
                                          MCP_META_CLIENT_CAPABILITIES));
        response = serve_with(srv, conn, NULL, note, NULL);
        assert_null(response); /* never answered */
        expect_cancelled_quietly(&cap, &seen);

        capture_cleanup(&cap);
        mcp_conn_free(conn);
        mcp_server_free(srv);
        json_decref(rows[i].id);
    }
}

/* A cancellation that arrives after the response changes nothing. */
static void test_late_cancel_is_ignored(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "steps", three_steps, NULL);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    json_t *response = serve_with(srv, conn, NULL, call_request(3, "steps"), NULL);
    expect_complete(response);
    json_decref(response);
    json_t *id = json_integer(3);
    response = serve_with(srv, conn, NULL, modern_cancel_notification(id), NULL);
    assert_null(response);
    json_decref(id);
    /* The id is free again, and the connection still serves. */
    response = serve_with(srv, conn, NULL, call_request(3, "steps"), NULL);
    expect_complete(response);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* The peer went away: send() fails, the core cancels the request and
 * sends nothing more. */
static int progress_then_wait(mcp_call_t *call, void *user)
{
    observed_t *seen = user;
    seen->progress_rc = mcp_call_progress(call, 1, -1, NULL);
    seen->cancelled = mcp_call_cancelled(call);
    seen->sleep_rc = mcp_call_sleep(call, 30000);
    seen->log_rc = mcp_call_log(call, "error", NULL, json_string("x"));
    return mcp_call_add_text(call, "finished anyway");
}

static void test_failing_sink_cancels(void **state)
{
    mcp_server_t *srv = new_server();
    observed_t seen = {0};
    add(srv, "wait", progress_then_wait, &seen);
    capture_sink_t cap;
    capture_init(&cap);
    cap.fail_from = 0;
    json_t *request = call_request(1, "wait");
    json_object_set_new(modern_meta(request), "progressToken", json_integer(1));
    json_object_set_new(modern_meta(request), MCP_META_LOG_LEVEL, json_string("debug"));
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &cap, NULL), MCP_OK);
    json_decref(request);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_assert_done(&cap);
    /* Only the notification whose send failed. */
    assert_int_equal(capture_count(&cap), 1);
    expect_all_schema_valid(&cap, "tools/call");
    assert_int_equal(seen.progress_rc, MCP_ECLOSED);
    assert_true(seen.cancelled);
    assert_int_equal(seen.sleep_rc, MCP_ECANCELED);
    assert_int_equal(seen.log_rc, MCP_ECANCELED);
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

static void test_cancel_all_on_a_connection(void **state)
{
    mcp_server_t *srv = new_server();
    observed_t seen[3] = {{0}};
    add(srv, "sleep0", sleeper, &seen[0]);
    add(srv, "sleep1", sleeper, &seen[1]);
    add(srv, "sleep2", sleeper, &seen[2]);
    reset_started();
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    mcp_conn_t *other = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    capture_sink_t cap[3];
    for (int i = 0; i < 3; i++) {
        capture_init(&cap[i]);
        char name[16];
        snprintf(name, sizeof name, "sleep%d", i);
        json_t *request = call_request(i, name);
        assert_int_equal(capture_submit(srv, i < 2 ? conn : other, request, NULL, &cap[i], NULL),
                         MCP_OK);
        json_decref(request);
    }
    wait_started(3);
    mcp_conn_cancel_all(conn);
    mcp_conn_cancel_all(NULL);
    for (int i = 0; i < 2; i++) {
        assert_true(capture_wait_released(&cap[i], CAPTURE_PATIENCE_MS));
        assert_null(capture_response(&cap[i], NULL));
    }
    /* The other connection's request is untouched. */
    assert_false(capture_released(&cap[2]));
    mcp_conn_cancel_all(other);
    assert_true(capture_wait_released(&cap[2], CAPTURE_PATIENCE_MS));
    for (int i = 0; i < 3; i++) {
        capture_assert_done(&cap[i]);
        assert_true(seen[i].cancelled);
        capture_cleanup(&cap[i]);
    }
    mcp_conn_free(conn);
    mcp_conn_free(other);
    mcp_server_free(srv);
}

/* An id may not be reused on a connection while its request runs. */
static void test_duplicate_id_in_flight(void **state)
{
    mcp_server_t *srv = new_server();
    observed_t seen = {0};
    add(srv, "sleep", sleeper, &seen);
    add(srv, "steps", three_steps, NULL);
    reset_started();
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = sleeper_request(json_integer(8));
    assert_int_equal(capture_submit(srv, conn, request, NULL, &cap, NULL), MCP_OK);
    json_decref(request);
    wait_started(1);

    int status = 0;
    json_t *response = serve_with(srv, conn, NULL, call_request(8, "steps"), &status);
    expect_error(response, MCP_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 8);
    assert_int_equal(status, 400);
    json_decref(response);
    /* The same id on no connection (or another one) is another request. */
    response = serve_with(srv, NULL, NULL, call_request(8, "steps"), NULL);
    expect_complete(response);
    json_decref(response);

    assert_false(capture_released(&cap));
    mcp_conn_cancel_all(conn);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_cleanup(&cap);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* Freeing the server cancels what runs and waits for it. */
static void test_free_cancels_running_handlers(void **state)
{
    mcp_server_t *srv = new_server();
    observed_t seen = {0};
    add(srv, "sleep", sleeper, &seen);
    reset_started();
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = sleeper_request(json_integer(1));
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &cap, NULL), MCP_OK);
    json_decref(request);
    wait_started(1);
    mcp_server_free(srv);
    /* Freed only after the handler returned and the sink was released. */
    assert_true(capture_released(&cap));
    expect_cancelled_quietly(&cap, &seen);
    capture_cleanup(&cap);
}

static int nap(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_sleep(call, 10) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_sleep(call, 0) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_sleep(call, -5) == MCP_OK);
    HANDLER_CHECK(call, !mcp_call_cancelled(call));
    return mcp_call_add_text(call, "rested");
}

static void test_sleep_without_cancel(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, "nap", nap, NULL);
    json_t *response = serve(srv, call_request(1, "nap"), NULL);
    expect_complete(response);
    json_decref(response);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_only_with_a_token),
        cmocka_unit_test(test_progress_token_of_wrong_type),
        cmocka_unit_test(test_progress_must_increase),
        cmocka_unit_test(test_logf_keeps_long_lines),
        cmocka_unit_test(test_logging_threshold),
        cmocka_unit_test(test_cancel_through_the_exchange_handle),
        cmocka_unit_test(test_cancel_notification),
        cmocka_unit_test(test_late_cancel_is_ignored),
        cmocka_unit_test(test_failing_sink_cancels),
        cmocka_unit_test(test_cancel_all_on_a_connection),
        cmocka_unit_test(test_duplicate_id_in_flight),
        cmocka_unit_test(test_free_cancels_running_handlers),
        cmocka_unit_test(test_sleep_without_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
