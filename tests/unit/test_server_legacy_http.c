/*
 * Server core, legacy clients over HTTP (through mcp_server_submit with an
 * HTTP context, and the session API a transport calls for GET and DELETE):
 *   sessions mode: initialize mints a random Mcp-Session-Id; later
 *   requests need it (400 without, 404 when unknown, ended or expired);
 *   the session's GET stream carries list changes and subscribed updates
 *   with event ids and resumes after Last-Event-ID from a bounded buffer,
 *   with nothing lost or repeated; a newer stream replaces an older one;
 *   DELETE ends the stream and the requests in flight; idle sessions
 *   expire and are freed, while an open stream or a running request keeps
 *   a session alive; sessions do not see each other's levels and
 *   subscriptions; modern requests on the same server are not disturbed.
 *   stateless mode: no session is minted or needed, and what a session
 *   would remember is not assumed away.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
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
#include "server/server_internal.h"

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

static int logger(mcp_call_t *call, void *user)
{
    mcp_call_log(call, "debug", NULL, json_string("at debug"));
    mcp_call_log(call, "error", NULL, json_string("at error"));
    return mcp_call_add_text(call, "logged");
}

static atomic_int slow_started;

/* Runs until cancelled, or for `ms` milliseconds when given. */
static int slow(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&slow_started, 1);
    int64_t ms = 30000;
    mcp_call_arg_int(call, "ms", &ms);
    if (mcp_call_sleep(call, ms) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_text(call, "slept");
}

static int read_resource(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "contents");
}

typedef struct server_options {
    mcp_legacy_mode_t legacy;
    int64_t idle_ms;
    size_t replay;
} server_options_t;

static mcp_server_t *new_server(server_options_t o)
{
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "legacy-http-test",
                                                               .version = "1",
                                                               .legacy = o.legacy,
                                                               .session_idle_ms = o.idle_ms,
                                                               .session_replay_events =
                                                                   o.replay},
                                       NULL);
    assert_non_null(srv);
    static const struct {
        const char *name;
        mcp_tool_fn fn;
    } tools[] = {{"echo", echo}, {"logger", logger}, {"slow", slow}};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(srv,
                                             &(mcp_tool_t){.name = tools[i].name,
                                                           .handler = tools[i].fn},
                                             NULL),
                         MCP_OK);
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "test://r",
                                                               .name = "r",
                                                               .handler = read_resource},
                                             NULL),
                     MCP_OK);
    return srv;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* initialize (and notifications/initialized) over HTTP; the session id
 * into `id` ("" when none was minted). */
/* initialize at `version` and notifications/initialized; the session's
 * id in `id` ("" when the server minted none). */
static void http_initialize_at(mcp_server_t *srv, const char *version, char id[128])
{
    legacy_http_t http;
    int status = 0;
    json_t *response =
        legacy_serve_http(srv, NULL, legacy_http_init(&http, NULL, NULL),
                          legacy_initialize(0, version, "{}"), &status, id);
    assert_int_equal(status, 200);
    expect_legacy_result(response);
    json_decref(response);
    assert_null(legacy_serve(srv, NULL, legacy_http_init(&http, version, id[0] ? id : NULL),
                             legacy_notification("notifications/initialized", NULL), &status));
    assert_int_equal(status, 202);
}

static void http_initialize(mcp_server_t *srv, char id[128])
{
    http_initialize_at(srv, "2025-11-25", id);
}

/* A legacy POST of `msg_new` in session `id` (NULL: without the header). */
static json_t *post(mcp_server_t *srv, const char *id, json_t *msg_new, int *status)
{
    legacy_http_t http;
    return legacy_serve(srv, NULL, legacy_http_init(&http, "2025-11-25", id), msg_new, status);
}

static json_t *call_tool(json_int_t id, const char *name)
{
    return legacy_request(id, "tools/call", json_pack("{s:s, s:{}}", "name", name, "arguments"));
}

/* Asserts a POST of tools/call echo in session `id` gets `status`. */
static void expect_echo_status(mcp_server_t *srv, const char *id, int expected)
{
    int status = 0;
    json_t *response = post(srv, id, call_tool(9, "echo"), &status);
    assert_int_equal(status, expected);
    if (expected == 200)
        expect_legacy_result(response);
    else
        expect_error(response, MCP_INVALID_REQUEST);
    json_decref(response);
}

/* Live sessions of this server (white box: the list the sweep prunes). */
static size_t live_sessions(mcp_server_t *srv)
{
    size_t n = 0;
    pthread_mutex_lock(&srv->session_lock);
    for (mcp_session_t *s = srv->sessions; s; s = s->next)
        n++;
    pthread_mutex_unlock(&srv->session_lock);
    return n;
}

/* A GET stream of session `id`, resuming after `last` (may be NULL). */
static mcp_exchange_t *open_stream(mcp_server_t *srv, const char *id, const char *last,
                                   capture_sink_t *cap)
{
    capture_init(cap);
    mcp_exchange_t *handle = NULL;
    assert_int_equal(mcp_server_open_session_stream(srv, id, last, &cap->sink, &handle), MCP_OK);
    assert_non_null(handle);
    return handle;
}

/* The events of a stream as "id:method" (or "id:method:uri"), space-
 * separated; each checked against the schema and for its event id. */
static void stream_events(capture_sink_t *cap, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < capture_count(cap); i++) {
        capture_item_t item = capture_item(cap, i);
        assert_int_equal(item.kind, MCP_OUT_NOTIFICATION);
        assert_non_null(item.event_id);
        MCP_ASSERT_SCHEMA_VALID(item.msg, NULL, LEGACY_SCHEMA);
        const char *method = json_string_value(json_object_get(item.msg, "method"));
        const char *uri =
            json_string_value(json_object_get(json_object_get(item.msg, "params"), "uri"));
        char one[160];
        snprintf(one, sizeof one, "%s%s:%s%s%s", out[0] ? " " : "", item.event_id,
                 method + strlen("notifications/"), uri ? ":" : "", uri ? uri : "");
        strncat(out, one, size - strlen(out) - 1);
    }
}

/* Makes a list change all legacy sessions hear (a tool added). */
static void change_tools(mcp_server_t *srv, int n)
{
    char name[32];
    snprintf(name, sizeof name, "added_%d", n);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = echo}, NULL),
                     MCP_OK);
}

/* ------------------------------------------------------------------ */
/* Sessions                                                            */
/* ------------------------------------------------------------------ */

static void test_initialize_mints_a_random_session_id(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char a[128], b[128];
    http_initialize(srv, a);
    http_initialize(srv, b);
    assert_int_equal(strlen(a), 64);
    for (const char *c = a; *c; c++)
        assert_true(isxdigit((unsigned char)*c) && !isupper((unsigned char)*c));
    assert_string_not_equal(a, b);
    expect_echo_status(srv, a, 200);
    expect_echo_status(srv, b, 200);
    mcp_server_free(srv);
}

/* Without the header: 400; with an id the server does not know: 404.
 * Notifications and a client's answers need the session too. */
static void test_session_id_is_required(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    expect_echo_status(srv, NULL, 400);
    expect_echo_status(srv, "", 400);
    expect_echo_status(srv, "0123456789abcdef", 404);

    int status = 0;
    json_t *response = post(srv, NULL, legacy_notification("notifications/initialized", NULL),
                            &status);
    assert_int_equal(status, 400);
    json_decref(response);
    json_t *some_id = json_string("mcp-whatever");
    response = post(srv, "nope", legacy_result(some_id, json_object()), &status);
    assert_int_equal(status, 404);
    json_decref(response);
    json_decref(some_id);

    /* The padded header value a proxy may forward still names the session. */
    char padded[160];
    snprintf(padded, sizeof padded, "  %s ", id);
    expect_echo_status(srv, padded, 200);
    mcp_server_free(srv);
}

static void test_delete_ends_the_session(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128], other[128];
    http_initialize(srv, id);
    http_initialize(srv, other);
    assert_int_equal(mcp_server_end_session(srv, id), MCP_OK);
    expect_echo_status(srv, id, 404);
    expect_echo_status(srv, other, 200);
    assert_int_equal(mcp_server_end_session(srv, id), MCP_ENOTFOUND);
    assert_int_equal(mcp_server_end_session(srv, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_end_session(srv, ""), MCP_EINVAL);
    capture_sink_t cap;
    capture_init(&cap);
    assert_int_equal(mcp_server_open_session_stream(srv, id, NULL, &cap.sink, NULL),
                     MCP_ENOTFOUND);
    capture_cleanup(&cap);
    assert_int_equal(live_sessions(srv), 1);
    mcp_server_free(srv);
}

/* A POST of tools/call echo in session `id` as `principal` (NULL: none):
 * its HTTP status. */
static int echo_status_as(mcp_server_t *srv, const char *id, const char *principal)
{
    legacy_http_t http;
    legacy_http_init(&http, "2025-11-25", id);
    http.ctx.principal = principal;
    int status = 0;
    json_decref(legacy_serve(srv, NULL, &http.ctx, call_tool(9, "echo"), &status));
    return status;
}

/* A session belongs to the principal that initialized it: to anybody
 * else (another principal, or none) its id finds nothing, for a POST, a
 * GET or a DELETE alike -- a leaked id is worth nothing to them. And a
 * session opened without a principal is none of an authenticated one's. */
static void test_sessions_belong_to_their_principal(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    legacy_http_t http;
    legacy_http_init(&http, NULL, NULL);
    http.ctx.principal = "alice";
    char id[128];
    json_decref(legacy_serve_http(srv, NULL, &http.ctx, legacy_initialize(0, "2025-11-25", "{}"),
                                  NULL, id));
    assert_true(id[0] != '\0');
    assert_int_equal(echo_status_as(srv, id, "alice"), 200);
    assert_int_equal(echo_status_as(srv, id, "mallory"), 404);
    assert_int_equal(echo_status_as(srv, id, NULL), 404);

    capture_sink_t cap;
    capture_init(&cap);
    assert_int_equal(mcp_server_open_session_stream_as(srv, id, "mallory", NULL, &cap.sink, NULL),
                     MCP_ENOTFOUND);
    assert_int_equal(mcp_server_open_session_stream(srv, id, NULL, &cap.sink, NULL),
                     MCP_ENOTFOUND);
    assert_int_equal(mcp_server_end_session_as(srv, id, "mallory"), MCP_ENOTFOUND);
    assert_int_equal(mcp_server_end_session(srv, id), MCP_ENOTFOUND);
    capture_cleanup(&cap);
    assert_int_equal(echo_status_as(srv, id, "alice"), 200); /* it goes on */

    mcp_exchange_t *handle = NULL;
    capture_init(&cap);
    assert_int_equal(mcp_server_open_session_stream_as(srv, id, "alice", NULL, &cap.sink, &handle),
                     MCP_OK);
    assert_int_equal(mcp_server_end_session_as(srv, id, "alice"), MCP_OK);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    mcp_exchange_release(handle);
    capture_cleanup(&cap);
    assert_int_equal(echo_status_as(srv, id, "alice"), 404);

    /* Unauthenticated sessions are for unauthenticated requests. */
    http_initialize(srv, id);
    assert_int_equal(echo_status_as(srv, id, NULL), 200);
    assert_int_equal(echo_status_as(srv, id, "alice"), 404);
    mcp_server_free(srv);
}

/* DELETE also closes the session's stream and cancels its requests. */
static void test_delete_closes_stream_and_requests(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    capture_sink_t stream, call;
    mcp_exchange_t *handle = open_stream(srv, id, NULL, &stream);
    capture_init(&call);
    legacy_http_t http;
    atomic_store(&slow_started, 0);
    json_t *request = call_tool(1, "slow");
    assert_int_equal(capture_submit(srv, NULL, request,
                                    legacy_http_init(&http, "2025-11-25", id), &call, NULL),
                     MCP_OK);
    json_decref(request);
    for (int i = 0; i < 2000 && atomic_load(&slow_started) == 0; i++)
        sleep_ms(5);
    assert_int_equal(mcp_server_end_session(srv, id), MCP_OK);
    assert_true(capture_wait_released(&stream, CAPTURE_PATIENCE_MS));
    assert_true(capture_wait_released(&call, CAPTURE_PATIENCE_MS));
    capture_assert_done(&stream);
    capture_assert_done(&call);
    assert_null(capture_response(&call, NULL));
    mcp_exchange_release(handle);
    capture_cleanup(&stream);
    capture_cleanup(&call);
    mcp_server_free(srv);
}

/* A session unused for session_idle_ms expires; use keeps it alive.
 * (Sleeps are lower bounds on a loaded machine: the margins are wide.) */
static void test_idle_sessions_expire(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.idle_ms = 800});
    char id[128];
    http_initialize(srv, id);
    for (int i = 0; i < 5; i++) {
        sleep_ms(200);
        expect_echo_status(srv, id, 200); /* 1 s in all, each within 800 ms */
    }
    sleep_ms(1600);
    expect_echo_status(srv, id, 404);
    mcp_server_free(srv);
}

/* Expired sessions are freed (their subscriptions, buffers and streams
 * with them), not kept until the server goes: a long-running server would
 * otherwise grow with every client that went away without DELETE. */
static void test_expired_sessions_are_freed(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.idle_ms = 500});
    char id[128];
    for (int i = 0; i < 5; i++)
        http_initialize(srv, id);
    assert_int_equal(live_sessions(srv), 5);
    sleep_ms(1200);
    http_initialize(srv, id);
    assert_int_equal(live_sessions(srv), 1);
    mcp_server_free(srv);
}

/* An open GET stream or a request still running keeps its session: the
 * client is there. Idleness counts from when the last of them ended. */
static void test_streams_and_requests_keep_a_session(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.idle_ms = 400});
    char id[128], other[128];
    http_initialize(srv, id);
    capture_sink_t stream;
    mcp_exchange_t *handle = open_stream(srv, id, NULL, &stream);
    sleep_ms(1000);
    http_initialize(srv, other); /* gives the server a chance to sweep */
    expect_echo_status(srv, id, 200);
    change_tools(srv, 1);
    assert_true(capture_wait_count(&stream, 1, CAPTURE_PATIENCE_MS));
    mcp_exchange_cancel(handle); /* the client drops the stream */
    assert_true(capture_wait_released(&stream, CAPTURE_PATIENCE_MS));
    mcp_exchange_release(handle);
    capture_cleanup(&stream);
    expect_echo_status(srv, id, 200);

    /* A request running longer than the idle time. */
    int status = 0;
    json_t *request = legacy_request(
        2, "tools/call", json_pack("{s:s, s:{s:i}}", "name", "slow", "arguments", "ms", 1000));
    json_t *response = post(srv, id, request, &status);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(expect_legacy_result(response),
                                                           "content"),
                                           0),
                            "text")),
                        "slept");
    json_decref(response);
    expect_echo_status(srv, id, 200);
    sleep_ms(1000);
    http_initialize(srv, other);
    expect_echo_status(srv, id, 404);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* The GET stream                                                      */
/* ------------------------------------------------------------------ */

static void test_stream_refusals(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    capture_sink_t cap;
    capture_init(&cap);
    mcp_exchange_t *handle = (mcp_exchange_t *)&cap; /* must be reset to NULL */
    assert_int_equal(mcp_server_open_session_stream(srv, NULL, NULL, &cap.sink, &handle),
                     MCP_EINVAL);
    assert_null(handle);
    assert_int_equal(mcp_server_open_session_stream(srv, "", NULL, &cap.sink, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_open_session_stream(srv, "unknown", NULL, &cap.sink, NULL),
                     MCP_ENOTFOUND);
    mcp_sink_t plain = cap.sink;
    plain.send_event = NULL; /* a stream needs event ids */
    assert_int_equal(mcp_server_open_session_stream(srv, id, NULL, &plain, NULL), MCP_EINVAL);
    assert_int_equal(capture_count(&cap), 0);
    assert_false(capture_released(&cap));
    capture_cleanup(&cap);
    mcp_server_free(srv);

    mcp_legacy_mode_t others[] = {MCP_LEGACY_STATELESS, MCP_LEGACY_REJECT};
    for (size_t i = 0; i < 2; i++) {
        srv = new_server((server_options_t){.legacy = others[i]});
        capture_init(&cap);
        assert_int_equal(mcp_server_open_session_stream(srv, "abc", NULL, &cap.sink, NULL),
                         MCP_EUNSUPPORTED);
        assert_int_equal(mcp_server_end_session(srv, "abc"), MCP_EUNSUPPORTED);
        capture_cleanup(&cap);
        mcp_server_free(srv);
    }
}

/* The stream carries what belongs to no request: list changes, and the
 * updates of subscribed resources, each with an increasing event id. */
static void test_stream_carries_notifications(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    capture_sink_t stream;
    mcp_exchange_t *handle = open_stream(srv, id, NULL, &stream);
    json_t *response = post(srv, id,
                            legacy_request(1, "resources/subscribe",
                                           json_pack("{s:s}", "uri", "test://r")),
                            NULL);
    expect_legacy_result(response);
    json_decref(response);
    change_tools(srv, 1);
    mcp_server_notify_resource_updated(srv, "test://r");
    mcp_server_notify_resource_updated(srv, "test://not-subscribed");
    assert_true(capture_wait_count(&stream, 2, CAPTURE_PATIENCE_MS));
    char events[512];
    stream_events(&stream, events, sizeof events);
    assert_string_equal(events, "1:tools/list_changed 2:resources/updated:test://r");
    mcp_exchange_cancel(handle);
    mcp_exchange_release(handle);
    capture_cleanup(&stream);
    mcp_server_free(srv);
}

/* The client's stream drops; messages keep coming; it reconnects with
 * Last-Event-ID: it gets exactly what it missed, then live messages --
 * nothing lost, nothing twice. */
static void test_resumption_after_a_drop(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    capture_sink_t first;
    mcp_exchange_t *handle = open_stream(srv, id, NULL, &first);
    change_tools(srv, 1);
    change_tools(srv, 2);
    assert_true(capture_wait_count(&first, 2, CAPTURE_PATIENCE_MS));
    mcp_exchange_cancel(handle); /* dropped */
    assert_true(capture_wait_released(&first, CAPTURE_PATIENCE_MS));
    capture_assert_done(&first);
    mcp_exchange_release(handle);
    char events[512];
    stream_events(&first, events, sizeof events);
    assert_string_equal(events, "1:tools/list_changed 2:tools/list_changed");

    change_tools(srv, 3);
    change_tools(srv, 4);
    change_tools(srv, 5);
    capture_sink_t second;
    handle = open_stream(srv, id, "2", &second);
    assert_true(capture_wait_count(&second, 3, CAPTURE_PATIENCE_MS));
    change_tools(srv, 6);
    assert_true(capture_wait_count(&second, 4, CAPTURE_PATIENCE_MS));
    sleep_ms(50);
    stream_events(&second, events, sizeof events);
    assert_string_equal(events, "3:tools/list_changed 4:tools/list_changed "
                                "5:tools/list_changed 6:tools/list_changed");
    mcp_exchange_cancel(handle);
    mcp_exchange_release(handle);
    capture_cleanup(&first);
    capture_cleanup(&second);
    mcp_server_free(srv);
}

/* Without Last-Event-ID, or with one that is not ours, only new messages
 * follow; the buffer keeps the newest session_replay_events messages. */
static void test_resumption_bounds(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.replay = 2});
    char id[128];
    http_initialize(srv, id);
    for (int i = 1; i <= 4; i++)
        change_tools(srv, i); /* ids 1..4 while nobody listens */
    const char *lasts[] = {NULL, "", "garbage", "0"};
    const char *expected[] = {"", "", "", "3:tools/list_changed 4:tools/list_changed"};
    for (size_t i = 0; i < 4; i++) {
        capture_sink_t cap;
        mcp_exchange_t *handle = open_stream(srv, id, lasts[i], &cap);
        sleep_ms(20);
        char events[512];
        stream_events(&cap, events, sizeof events);
        assert_string_equal(events, expected[i]);
        mcp_exchange_cancel(handle);
        assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
        mcp_exchange_release(handle);
        capture_cleanup(&cap);
    }
    mcp_server_free(srv);
}

/* "from:tools/list_changed ... to:tools/list_changed", as stream_events
 * writes the events from..to. */
static void list_changed_events(char *out, size_t size, int from, int to)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = from; i <= to; i++) {
        int n = snprintf(out + used, size - used, "%s%d:tools/list_changed", i == from ? "" : " ",
                         i);
        assert_true(n > 0 && (size_t)n < size - used);
        used += (size_t)n;
    }
}

/* What a stream opened with Last-Event-ID `last` replays at once. */
static void assert_replays(mcp_server_t *srv, const char *id, const char *last, int from, int to)
{
    char expected[2048], events[2048];
    list_changed_events(expected, sizeof expected, from, to);
    capture_sink_t cap;
    mcp_exchange_t *handle = open_stream(srv, id, last, &cap);
    sleep_ms(20);
    stream_events(&cap, events, sizeof events);
    assert_string_equal(events, expected);
    mcp_exchange_cancel(handle);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    mcp_exchange_release(handle);
    capture_cleanup(&cap);
}

/* The buffer starts small and grows as messages come (a session that is
 * never sent anything holds none): across its growth and past its limit
 * it still hands back exactly the newest messages after the client's id,
 * in order. */
static void test_resumption_across_growth(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.replay = 20});
    char id[128];
    http_initialize(srv, id);
    for (int i = 1; i <= 13; i++)
        change_tools(srv, i); /* past the first allocation and one doubling */
    assert_replays(srv, id, "0", 1, 13);
    assert_replays(srv, id, "10", 11, 13);
    for (int i = 14; i <= 40; i++)
        change_tools(srv, i); /* to the limit of 20, then past it */
    assert_replays(srv, id, "0", 21, 40);
    assert_replays(srv, id, "35", 36, 40);
    mcp_server_free(srv);
}

/* A batch POSTed in a 2025-03-26 session is answered 200 with one array;
 * in a 2025-11-25 session it is refused whole (400). */
static void test_batch_in_a_2025_03_26_session(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    static const struct {
        const char *version;
        int status;
    } cases[] = {{"2025-03-26", 200}, {"2025-11-25", 400}};
    for (size_t i = 0; i < 2; i++) {
        char id[128];
        http_initialize_at(srv, cases[i].version, id);
        legacy_http_t http;
        json_t *batch = json_pack("[o, o, o]", call_tool(1, "echo"),
                                  legacy_notification("notifications/initialized", NULL),
                                  legacy_request(2, "ping", NULL));
        capture_sink_t cap;
        capture_init(&cap);
        const json_t *answer = capture_roundtrip(
            srv, NULL, batch, legacy_http_init(&http, cases[i].version, id), &cap);
        json_decref(batch);
        int status = 0;
        capture_response(&cap, &status);
        assert_int_equal(status, cases[i].status);
        if (cases[i].status == 200) {
            assert_true(json_is_array(answer));
            assert_int_equal(json_array_size(answer), 2);
            for (size_t k = 0; k < 2; k++)
                expect_legacy_result(json_array_get(answer, k));
        } else {
            assert_int_equal(json_integer_value(json_object_get(json_object_get(answer, "error"),
                                                                "code")),
                             MCP_INVALID_REQUEST);
        }
        capture_cleanup(&cap);
    }
    mcp_server_free(srv);
}

/* One stream per session: a newer GET replaces the older, which ends. */
static void test_newer_stream_replaces_older(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    capture_sink_t old, fresh;
    mcp_exchange_t *old_handle = open_stream(srv, id, NULL, &old);
    mcp_exchange_t *fresh_handle = open_stream(srv, id, NULL, &fresh);
    assert_true(capture_wait_released(&old, CAPTURE_PATIENCE_MS));
    capture_assert_done(&old);
    change_tools(srv, 1);
    assert_true(capture_wait_count(&fresh, 1, CAPTURE_PATIENCE_MS));
    assert_int_equal(capture_count(&old), 0);
    mcp_exchange_cancel(old_handle); /* late, harmless */
    mcp_exchange_release(old_handle);
    mcp_exchange_cancel(fresh_handle);
    mcp_exchange_release(fresh_handle);
    capture_cleanup(&old);
    capture_cleanup(&fresh);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Isolation                                                           */
/* ------------------------------------------------------------------ */

static size_t logs_of_call(mcp_server_t *srv, const char *id)
{
    capture_sink_t cap;
    capture_init(&cap);
    legacy_http_t http;
    json_t *request = call_tool(3, "logger");
    capture_roundtrip(srv, NULL, request, legacy_http_init(&http, "2025-11-25", id), &cap);
    json_decref(request);
    legacy_expect_schema_valid(&cap, "tools/call");
    size_t n = capture_notification_count(&cap);
    capture_cleanup(&cap);
    return n;
}

/* Each session has its own log level and subscriptions. */
static void test_sessions_are_isolated(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char a[128], b[128];
    http_initialize(srv, a);
    http_initialize(srv, b);
    json_t *response =
        post(srv, a, legacy_request(1, "logging/setLevel", json_pack("{s:s}", "level", "debug")),
             NULL);
    expect_legacy_result(response);
    json_decref(response);
    response = post(srv, a,
                    legacy_request(2, "resources/subscribe", json_pack("{s:s}", "uri", "test://r")),
                    NULL);
    expect_legacy_result(response);
    json_decref(response);
    assert_int_equal(logs_of_call(srv, a), 2);
    assert_int_equal(logs_of_call(srv, b), 0);

    capture_sink_t sa, sb;
    mcp_exchange_t *ha = open_stream(srv, a, NULL, &sa);
    mcp_exchange_t *hb = open_stream(srv, b, NULL, &sb);
    mcp_server_notify_resource_updated(srv, "test://r");
    assert_true(capture_wait_count(&sa, 1, CAPTURE_PATIENCE_MS));
    sleep_ms(50);
    assert_int_equal(capture_count(&sb), 0);
    mcp_exchange_cancel(ha);
    mcp_exchange_cancel(hb);
    mcp_exchange_release(ha);
    mcp_exchange_release(hb);
    capture_cleanup(&sa);
    capture_cleanup(&sb);
    mcp_server_free(srv);
}

/* Modern requests on the same endpoint need no session and keep their
 * shapes, whatever legacy sessions are doing. */
static void test_modern_requests_alongside(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){0});
    char id[128];
    http_initialize(srv, id);
    json_t *request = modern_request(1, "tools/call",
                                     json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments",
                                               "text", "modern"));
    modern_http_headers_t h;
    modern_http_headers_init(&h, request);
    mcp_request_context_t ctx = modern_http_context(&h, NULL);
    int status = 0;
    json_t *response = serve_with(srv, NULL, &ctx, request, &status);
    assert_int_equal(status, 200);
    expect_complete(response);
    json_decref(response);
    modern_http_headers_cleanup(&h);
    expect_echo_status(srv, id, 200);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Stateless mode                                                      */
/* ------------------------------------------------------------------ */

/* No session is minted or needed. What a session would remember cannot
 * be: setLevel and subscribe are answered, and since no level can be
 * remembered every log message goes out. */
static void test_stateless_mode(void **state)
{
    mcp_server_t *srv = new_server((server_options_t){.legacy = MCP_LEGACY_STATELESS});
    char id[128];
    http_initialize(srv, id);
    assert_string_equal(id, "");
    expect_echo_status(srv, NULL, 200);
    /* A session id from elsewhere is not looked at. */
    expect_echo_status(srv, "0123456789abcdef", 200);
    json_t *response =
        post(srv, NULL,
             legacy_request(1, "logging/setLevel", json_pack("{s:s}", "level", "emergency")), NULL);
    expect_legacy_result(response);
    json_decref(response);
    response = post(srv, NULL,
                    legacy_request(2, "resources/subscribe", json_pack("{s:s}", "uri", "test://r")),
                    NULL);
    expect_legacy_result(response);
    json_decref(response);
    assert_int_equal(logs_of_call(srv, NULL), 2);
    assert_int_equal(live_sessions(srv), 0);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initialize_mints_a_random_session_id),
        cmocka_unit_test(test_session_id_is_required),
        cmocka_unit_test(test_delete_ends_the_session),
        cmocka_unit_test(test_delete_closes_stream_and_requests),
        cmocka_unit_test(test_sessions_belong_to_their_principal),
        cmocka_unit_test(test_idle_sessions_expire),
        cmocka_unit_test(test_expired_sessions_are_freed),
        cmocka_unit_test(test_streams_and_requests_keep_a_session),
        cmocka_unit_test(test_stream_refusals),
        cmocka_unit_test(test_stream_carries_notifications),
        cmocka_unit_test(test_resumption_after_a_drop),
        cmocka_unit_test(test_resumption_bounds),
        cmocka_unit_test(test_resumption_across_growth),
        cmocka_unit_test(test_batch_in_a_2025_03_26_session),
        cmocka_unit_test(test_newer_stream_replaces_older),
        cmocka_unit_test(test_sessions_are_isolated),
        cmocka_unit_test(test_modern_requests_alongside),
        cmocka_unit_test(test_stateless_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
