/*
 * subscriptions/listen through the server core (digest section 2.10).
 *
 * What a stream says: the acknowledgement first, tagged with the listen
 * request's id (same JSON type), naming the part of the filter the server
 * honours; malformed filters (-32602); -32601 from a server with nothing
 * to listen for. Who hears what: every registry change reaches exactly the
 * streams whose filter asks for it, once; a resource update reaches the
 * streams subscribed to that resource or to a parent of it. How a stream
 * ends: the client leaves (notifications/cancelled, the transport's
 * cancel, a sink whose peer is gone) and the subscription is dropped
 * without a word; or the server ends it (mcp_server_close_subscriptions,
 * mcp_exchange_end_stream, mcp_server_free) with the listen result. And
 * publishers racing with streams that open and end.
 *
 * Streams are opened over stdio (on a connection) and HTTP (an HTTP
 * context with the headers a client sends) alike: the core must not care.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

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
#include "server/server_internal.h" /* listen_count() */
#include "server_expect.h"

#define REVISION "2026-07-28"
#define LISTEN "subscriptions/listen"
#define ACK "notifications/subscriptions/acknowledged"
#define TOOLS_CHANGED "notifications/tools/list_changed"
#define PROMPTS_CHANGED "notifications/prompts/list_changed"
#define RESOURCES_CHANGED "notifications/resources/list_changed"
#define UPDATED "notifications/resources/updated"

/* ------------------------------------------------------------------ */
/* A server offering some features                                     */
/* ------------------------------------------------------------------ */

enum {
    OFFER_TOOLS = 1,
    OFFER_PROMPTS = 2,
    OFFER_RESOURCES = 4, /* a static resource (and every file:/// URI) */
    OFFER_TEMPLATES = 8, /* a resource template only */
    OFFER_ALL = OFFER_TOOLS | OFFER_PROMPTS | OFFER_RESOURCES
};

static int tool_fn(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "ok");
}

static int resource_fn(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "x");
}

static int prompt_fn(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user", json_pack("{s:s, s:s}", "type", "text", "text", "x"));
}

static void add_tool(mcp_server_t *srv, const char *name)
{
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = tool_fn}, NULL), MCP_OK);
}

static void add_prompt(mcp_server_t *srv, const char *name)
{
    assert_int_equal(
        mcp_server_add_prompt(srv, &(mcp_prompt_t){.name = name, .handler = prompt_fn}, NULL),
        MCP_OK);
}

static void add_resource(mcp_server_t *srv, const char *uri)
{
    assert_int_equal(mcp_server_add_resource(srv, &(mcp_resource_t){
                         .uri = uri, .name = uri, .handler = resource_fn}, NULL),
                     MCP_OK);
}

static void add_template(mcp_server_t *srv, const char *uri_template)
{
    assert_int_equal(mcp_server_add_resource_template(srv, &(mcp_resource_template_t){
                         .uri_template = uri_template, .name = "t", .handler = resource_fn},
                         NULL),
                     MCP_OK);
}

static mcp_server_t *new_server(unsigned offers)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "listen-test", .version = "1"}, NULL);
    assert_non_null(srv);
    if (offers & OFFER_TOOLS)
        add_tool(srv, "echo");
    if (offers & OFFER_PROMPTS)
        add_prompt(srv, "greet");
    if (offers & OFFER_RESOURCES) {
        add_resource(srv, "file:///project/readme");
        /* Subscriptions need URIs that name resources: every file:/// one
         * does here. */
        add_template(srv, "file:///{+path}");
    }
    if (offers & OFFER_TEMPLATES)
        add_template(srv, "file:///notes/{name}");
    return srv;
}

/* ------------------------------------------------------------------ */
/* Streams                                                             */
/* ------------------------------------------------------------------ */

typedef enum via { VIA_STDIO, VIA_HTTP } via_t;

typedef struct stream {
    capture_sink_t cap;
    json_t *id;             /* the listen request's id */
    mcp_exchange_t *handle; /* the transport's handle */
} stream_t;

/* The listen request: params.notifications is the JSON text `filter`
 * (NULL: left out). */
static json_t *listen_request(const json_t *id, const char *filter)
{
    json_t *params = json_object();
    if (filter) {
        json_t *parsed = json_loads(filter, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_non_null(parsed);
        json_object_set_new(params, "notifications", parsed);
    }
    json_t *request = modern_request(0, LISTEN, params);
    json_object_set(request, "id", (json_t *)id);
    return request;
}

/* Submits a listen request (id_new stolen) without waiting for anything;
 * the stream's sink fails from send number `fail_from` on (-1: never).
 * Over HTTP, the request comes from `principal` (NULL: unauthenticated). */
static void stream_submit_as(mcp_server_t *srv, mcp_conn_t *conn, via_t via, stream_t *s,
                             json_t *id_new, const char *filter, int fail_from,
                             const char *principal)
{
    capture_init(&s->cap);
    s->cap.fail_from = fail_from;
    s->id = id_new;
    s->handle = NULL;
    json_t *request = listen_request(s->id, filter);
    modern_http_headers_t headers;
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    if (via == VIA_HTTP) {
        modern_http_headers_init(&headers, request);
        ctx = modern_http_context(&headers, principal);
    }
    assert_int_equal(capture_submit(srv, conn, request, &ctx, &s->cap, &s->handle), MCP_OK);
    if (via == VIA_HTTP)
        modern_http_headers_cleanup(&headers);
    json_decref(request);
}

static void stream_submit_failing(mcp_server_t *srv, mcp_conn_t *conn, via_t via, stream_t *s,
                                  json_t *id_new, const char *filter, int fail_from)
{
    stream_submit_as(srv, conn, via, s, id_new, filter, fail_from, NULL);
}

static void stream_submit(mcp_server_t *srv, mcp_conn_t *conn, via_t via, stream_t *s,
                          json_t *id_new, const char *filter)
{
    stream_submit_failing(srv, conn, via, s, id_new, filter, -1);
}

/* The tag of a stream's notification, or NULL. */
static const json_t *tag_of(const json_t *msg)
{
    const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    return json_object_get(meta, MCP_META_SUBSCRIPTION_ID);
}

/* A valid notification `method` of the stream `id`: tagged with the id,
 * same JSON type. */
static void expect_tagged(const json_t *msg, const json_t *id, const char *method)
{
    MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
    assert_string_equal(json_string_value(json_object_get(msg, "method")), method);
    const json_t *tag = tag_of(msg);
    assert_non_null(tag);
    assert_int_equal(json_typeof(tag), json_typeof(id));
    assert_true(json_equal(tag, id));
}

/* Opens a stream and checks its acknowledgement; returns the filter the
 * server honours (borrowed from the stream). */
static const json_t *stream_open(mcp_server_t *srv, mcp_conn_t *conn, via_t via, stream_t *s,
                                 json_t *id_new, const char *filter)
{
    stream_submit(srv, conn, via, s, id_new, filter);
    if (!capture_wait_count(&s->cap, 1, CAPTURE_PATIENCE_MS))
        fail_msg("no acknowledgement");
    capture_item_t ack = capture_item(&s->cap, 0);
    assert_int_equal(ack.kind, MCP_OUT_NOTIFICATION);
    expect_tagged(ack.msg, s->id, ACK);
    assert_false(capture_released(&s->cap)); /* the stream stays open */
    return json_object_get(json_object_get(ack.msg, "params"), "notifications");
}

/* Checks everything a stream sent: the acknowledgement first, then events,
 * each valid and tagged, and nothing after a response. Returns how many
 * notifications `method` it sent. */
static size_t stream_count(stream_t *s, const char *method)
{
    size_t n = 0, total = capture_count(&s->cap);
    for (size_t i = 0; i < total; i++) {
        capture_item_t item = capture_item(&s->cap, i);
        if (item.kind == MCP_OUT_RESPONSE) {
            assert_int_equal(i, total - 1);
            continue;
        }
        assert_int_equal(item.kind, MCP_OUT_NOTIFICATION);
        const char *m = json_string_value(json_object_get(item.msg, "method"));
        assert_non_null(m);
        assert_true((i == 0) == (strcmp(m, ACK) == 0));
        expect_tagged(item.msg, s->id, m);
        n += strcmp(m, method) == 0;
    }
    return n;
}

/* The stream ended gracefully: its last message is the listen result,
 * with resultType complete and the subscription id in _meta. */
static void expect_graceful_end(stream_t *s)
{
    if (!capture_wait_released(&s->cap, CAPTURE_PATIENCE_MS))
        fail_msg("the stream was not ended");
    capture_assert_done(&s->cap);
    stream_count(s, ACK);
    int status = 0;
    const json_t *response = capture_response(&s->cap, &status);
    assert_non_null(response);
    assert_int_equal(status, 200);
    MCP_ASSERT_SCHEMA_VALID(response, LISTEN, REVISION);
    assert_true(json_equal(json_object_get(response, "id"), s->id));
    const json_t *result = expect_complete(response);
    const json_t *tag = json_object_get(json_object_get(result, "_meta"), MCP_META_SUBSCRIPTION_ID);
    assert_non_null(tag);
    assert_int_equal(json_typeof(tag), json_typeof(s->id));
    assert_true(json_equal(tag, s->id));
}

/* The stream ended without a word (the client left). */
static void expect_quiet_end(stream_t *s)
{
    if (!capture_wait_released(&s->cap, CAPTURE_PATIENCE_MS))
        fail_msg("the stream was not ended");
    capture_assert_done(&s->cap);
    stream_count(s, ACK);
    assert_null(capture_response(&s->cap, NULL));
}

/* Drops the transport's handle: an exchange handle must not outlive its
 * server, so tests that free the server first drop it before. */
static void stream_drop_handle(stream_t *s)
{
    mcp_exchange_release(s->handle);
    s->handle = NULL;
}

static void stream_cleanup(stream_t *s)
{
    mcp_exchange_release(s->handle);
    capture_cleanup(&s->cap);
    json_decref(s->id);
}

/* Submits notifications/cancelled naming `id` on `conn`, with or without
 * a _meta a client may add. */
static void send_cancel(mcp_server_t *srv, mcp_conn_t *conn, const json_t *id, bool with_meta)
{
    json_t *note = modern_cancel_notification(id);
    if (with_meta)
        json_object_set_new(json_object_get(note, "params"), "_meta",
                            json_pack("{s:s, s:{}}", MCP_META_PROTOCOL_VERSION, REVISION,
                                      MCP_META_CLIENT_CAPABILITIES));
    json_t *response = serve_with(srv, conn, NULL, note, NULL);
    assert_null(response); /* a notification is never answered */
}

/* ------------------------------------------------------------------ */
/* The acknowledgement                                                 */
/* ------------------------------------------------------------------ */

/* First message, tagged with the id in its own JSON type, on both
 * transports; several streams on one connection each with their own id. */
static void test_ack_first_and_tagged(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    stream_t s[6];
    json_t *ids[6] = {json_integer(1),    json_string("1"), json_integer(0),
                      json_string("sub"), json_integer(-7), json_string("")};
    for (int i = 0; i < 6; i++) {
        via_t via = i % 2 ? VIA_HTTP : VIA_STDIO;
        const json_t *honoured = stream_open(srv, via == VIA_STDIO ? conn : NULL, via, &s[i],
                                             ids[i], "{\"toolsListChanged\":true}");
        assert_int_equal(json_object_size(honoured), 1);
        assert_true(json_is_true(json_object_get(honoured, "toolsListChanged")));
        assert_int_equal(capture_count(&s[i].cap), 1);
    }
    assert_int_equal(listen_count(srv), 6);
    /* Integer 1 and string "1" are two streams on one connection. */
    add_tool(srv, "another");
    for (int i = 0; i < 6; i++)
        assert_int_equal(stream_count(&s[i], TOOLS_CHANGED), 1);
    mcp_server_close_subscriptions(srv);
    for (int i = 0; i < 6; i++) {
        expect_graceful_end(&s[i]);
        stream_cleanup(&s[i]);
    }
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* The acknowledgement names exactly what the server will send. */
static void test_honoured_filter(void **state)
{
    static const struct {
        unsigned offers;
        const char *asked;
        const char *honoured;
    } rows[] = {
        /* Everything asked of a server offering everything. */
        {OFFER_ALL,
         "{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourcesListChanged\":true,"
         "\"resourceSubscriptions\":[\"file:///a\",\"file:///b\"]}",
         "{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourcesListChanged\":true,"
         "\"resourceSubscriptions\":[\"file:///a\",\"file:///b\"]}"},
        /* Only what the server offers. */
        {OFFER_TOOLS,
         "{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourcesListChanged\":true,"
         "\"resourceSubscriptions\":[\"file:///a\"]}",
         "{\"toolsListChanged\":true}"},
        {OFFER_PROMPTS,
         "{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourcesListChanged\":true}",
         "{\"promptsListChanged\":true}"},
        {OFFER_RESOURCES,
         "{\"toolsListChanged\":true,\"resourcesListChanged\":true,"
         "\"resourceSubscriptions\":[\"file:///a\"]}",
         "{\"resourcesListChanged\":true,\"resourceSubscriptions\":[\"file:///a\"]}"},
        /* A template is a resource feature too; a URI it does not match
         * names no resource, and is no subscription. */
        {OFFER_TEMPLATES,
         "{\"resourcesListChanged\":true,\"resourceSubscriptions\":[\"x:y\",\"file:///notes/a\"]}",
         "{\"resourcesListChanged\":true,\"resourceSubscriptions\":[\"file:///notes/a\"]}"},
        /* URIs of no resource are left out: a bare scheme, another scheme. */
        {OFFER_ALL,
         "{\"resourceSubscriptions\":[\"file:\",\"file:///a\",\"test:\",\"x://y/z\"]}",
         "{\"resourceSubscriptions\":[\"file:///a\"]}"},
        /* false and absent mean "not subscribed"; an empty list is nothing. */
        {OFFER_ALL,
         "{\"toolsListChanged\":false,\"promptsListChanged\":true,\"resourceSubscriptions\":[]}",
         "{\"promptsListChanged\":true}"},
        /* Nothing asked (or nothing the server offers): an empty filter. */
        {OFFER_ALL, "{}", "{}"},
        {OFFER_TOOLS, "{\"promptsListChanged\":true}", "{}"},
        /* Unknown members (the Tasks extension's taskIds) are not honoured. */
        {OFFER_ALL, "{\"taskIds\":[\"t1\"],\"toolsListChanged\":true}",
         "{\"toolsListChanged\":true}"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_server_t *srv = new_server(rows[i].offers);
        for (via_t via = VIA_STDIO; via <= VIA_HTTP; via++) {
            stream_t s;
            const json_t *honoured =
                stream_open(srv, NULL, via, &s, json_integer((json_int_t)i), rows[i].asked);
            json_t *want = json_loads(rows[i].honoured, 0, NULL);
            if (!json_equal(honoured, want)) {
                char *got = json_dumps(honoured, JSON_COMPACT);
                fail_msg("row %zu: asked %s, honoured %s, want %s", i, rows[i].asked, got,
                         rows[i].honoured);
            }
            json_decref(want);
            mcp_exchange_end_stream(s.handle);
            expect_graceful_end(&s);
            stream_cleanup(&s);
        }
        mcp_server_free(srv);
    }
}

/* A filter that is not a SubscriptionFilter: -32602, and no stream. */
static void test_malformed_filters(void **state)
{
    static const char *const filters[] = {
        NULL, /* params.notifications is required */
        "null",
        "[]",
        "\"tools\"",
        "true",
        "{\"toolsListChanged\":\"yes\"}",
        "{\"promptsListChanged\":1}",
        "{\"resourcesListChanged\":null}",
        "{\"resourceSubscriptions\":\"file:///a\"}",
        "{\"resourceSubscriptions\":[1]}",
        "{\"resourceSubscriptions\":[\"file:///a\",null]}",
        "{\"resourceSubscriptions\":[\"\"]}",
        "{\"resourceSubscriptions\":[\"file:///a\\u0000b\"]}", /* an embedded NUL */
        "{\"resourceSubscriptions\":{}}",
    };
    mcp_server_t *srv = new_server(OFFER_ALL);
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        for (via_t via = VIA_STDIO; via <= VIA_HTTP; via++) {
            stream_t s;
            stream_submit(srv, NULL, via, &s, json_integer((json_int_t)i), filters[i]);
            if (!capture_wait_released(&s.cap, CAPTURE_PATIENCE_MS))
                fail_msg("filter %s: no answer", filters[i] ? filters[i] : "(absent)");
            capture_assert_done(&s.cap);
            assert_int_equal(capture_count(&s.cap), 1);
            const json_t *response = capture_response(&s.cap, NULL);
            MCP_ASSERT_SCHEMA_VALID(response, LISTEN, REVISION);
            expect_error(response, MCP_INVALID_PARAMS);
            stream_cleanup(&s);
        }
    }
    assert_int_equal(listen_count(srv), 0);
    mcp_server_free(srv);
}

/* A server that offers nothing to listen for has no listen method
 * (digest section 14.20), over both transports. A completion handler
 * alone gives nothing to listen for either. */
static int complete_fn(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *name,
                       const char *argument, const char *value, const json_t *context, void *user)
{
    return mcp_call_add_completion(call, "x");
}

static void test_nothing_to_listen_for(void **state)
{
    for (int with_completion = 0; with_completion <= 1; with_completion++) {
        mcp_server_t *srv = new_server(0);
        if (with_completion)
            assert_int_equal(mcp_server_set_completion(srv, complete_fn, NULL), MCP_OK);
        for (via_t via = VIA_STDIO; via <= VIA_HTTP; via++) {
            stream_t s;
            stream_submit(srv, NULL, via, &s, json_integer(1), "{\"toolsListChanged\":true}");
            assert_true(capture_wait_released(&s.cap, CAPTURE_PATIENCE_MS));
            capture_assert_done(&s.cap);
            assert_int_equal(capture_count(&s.cap), 1);
            int status = 0;
            const json_t *response = capture_response(&s.cap, &status);
            MCP_ASSERT_SCHEMA_VALID(response, LISTEN, REVISION);
            expect_error(response, MCP_METHOD_NOT_FOUND);
            if (via == VIA_HTTP)
                assert_int_equal(status, 404);
            stream_cleanup(&s);
        }
        /* Once there is something, listening works. */
        add_tool(srv, "late");
        stream_t s;
        stream_open(srv, NULL, VIA_STDIO, &s, json_integer(2), "{\"toolsListChanged\":true}");
        stream_drop_handle(&s);
        mcp_server_free(srv);
        expect_graceful_end(&s);
        stream_cleanup(&s);
    }
}

/* ------------------------------------------------------------------ */
/* Delivery                                                            */
/* ------------------------------------------------------------------ */

/* Every registry change reaches each stream whose filter asks for it
 * exactly once, and no other stream. */
static void test_delivery_counts(void **state)
{
    enum { T, P, R, ALL, NONE, URI, N_STREAMS };
    static const char *const filters[N_STREAMS] = {
        [T] = "{\"toolsListChanged\":true}",
        [P] = "{\"promptsListChanged\":true}",
        [R] = "{\"resourcesListChanged\":true}",
        [ALL] = ("{\"toolsListChanged\":true,\"promptsListChanged\":true,"
                 "\"resourcesListChanged\":true,\"resourceSubscriptions\":[\"file:///x\"]}"),
        [NONE] = "{}",
        [URI] = "{\"resourceSubscriptions\":[\"file:///x\"]}",
    };
    /* What each change must produce, per stream. */
    static const struct {
        const char *method;
        size_t want[N_STREAMS];
    } expected[] = {
        {TOOLS_CHANGED, {[T] = 2, [ALL] = 2}},
        {PROMPTS_CHANGED, {[P] = 2, [ALL] = 2}},
        {RESOURCES_CHANGED, {[R] = 4, [ALL] = 4}},
        {UPDATED, {[ALL] = 1, [URI] = 1}},
    };
    for (via_t via = VIA_STDIO; via <= VIA_HTTP; via++) {
        mcp_server_t *srv = new_server(OFFER_ALL);
        mcp_conn_t *conn = via == VIA_STDIO ? mcp_conn_new(srv, MCP_TRANSPORT_STDIO) : NULL;
        stream_t s[N_STREAMS];
        for (int i = 0; i < N_STREAMS; i++)
            stream_open(srv, conn, via, &s[i], json_integer(i), filters[i]);

        add_tool(srv, "t2");                               /* tools +1 */
        assert_int_equal(mcp_server_remove_tool(srv, "t2"), MCP_OK); /* tools +1 */
        add_prompt(srv, "p2");                             /* prompts +1 */
        assert_int_equal(mcp_server_remove_prompt(srv, "p2"), MCP_OK);
        add_resource(srv, "file:///r2");                   /* resources +1 */
        assert_int_equal(mcp_server_remove_resource(srv, "file:///r2"), MCP_OK);
        add_template(srv, "file:///t/{x}");                /* resources +1 */
        assert_int_equal(mcp_server_remove_resource_template(srv, "file:///t/{x}"), MCP_OK);
        assert_int_equal(mcp_server_notify_resource_updated(srv, "file:///x"), MCP_OK);
        assert_int_equal(mcp_server_notify_resource_updated(srv, "file:///y"), MCP_OK);
        /* Failed changes change nothing and say nothing. */
        assert_int_equal(mcp_server_remove_tool(srv, "absent"), MCP_ENOTFOUND);
        assert_int_not_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo",
                                                                    .handler = tool_fn},
                                                 NULL),
                             MCP_OK);

        mcp_server_close_subscriptions(srv);
        for (int i = 0; i < N_STREAMS; i++) {
            expect_graceful_end(&s[i]);
            size_t events = 0;
            for (size_t e = 0; e < sizeof expected / sizeof expected[0]; e++) {
                size_t got = stream_count(&s[i], expected[e].method);
                if (got != expected[e].want[i])
                    fail_msg("stream %s got %zu %s, want %zu", filters[i], got,
                             expected[e].method, expected[e].want[i]);
                events += got;
            }
            /* ack + events + result: nothing else */
            assert_int_equal(capture_count(&s[i].cap), events + 2);
            stream_cleanup(&s[i]);
        }
        mcp_conn_free(conn);
        mcp_server_free(srv);
    }
}

/* notifications/resources/updated: for the subscribed resource and its
 * sub-resources (a path below it), carrying the updated URI; once per
 * update however many subscribed URIs cover it. */
static void test_resource_updated_matching(void **state)
{
    static const struct {
        const char *subscribed; /* resourceSubscriptions */
        const char *updated;
        bool heard;
    } rows[] = {
        {"[\"file:///project/a.txt\"]", "file:///project/a.txt", true},
        {"[\"file:///project/a.txt\"]", "file:///project/b.txt", false},
        {"[\"file:///project/a.txt\"]", "file:///project/a.txt.bak", false},
        {"[\"file:///project/a.txt\"]", "file:///project/a.tx", false},
        {"[\"file:///project\"]", "file:///project/a.txt", true},
        {"[\"file:///project\"]", "file:///project/sub/deep.txt", true},
        {"[\"file:///project\"]", "file:///projects/a.txt", false},
        {"[\"file:///project/\"]", "file:///project/a.txt", true},
        {"[\"file:///project/\"]", "file:///project", false},
        {"[\"notes://index\"]", "notes://index", true},
        {"[\"notes://index\"]", "note://index", false},
        {"[\"file:///a\",\"file:///b\"]", "file:///b", true},
        {"[\"file:///a\",\"file:///b\"]", "file:///c", false},
        /* Covered twice, heard once. */
        {"[\"file:///dir\",\"file:///dir/f\"]", "file:///dir/f", true},
        /* A scheme, or a scheme's root, is no parent of its resources
         * (even when it is a resource itself): a client must not learn
         * every updated URI by subscribing to "file:". */
        {"[\"file:///\"]", "file:///project/a.txt", false},
        {"[\"test://\"]", "test://host/a", false},
        {"[\"test:\"]", "test://host/a", false},
        {"[\"test:\"]", "test:", true},
        /* An authority is a parent, at a "/" boundary only. */
        {"[\"x://host\"]", "x://host/a", true},
        {"[\"x://host\"]", "x://hostile/a", false},
        {"[\"x://host\"]", "x://host?q", false},
        {"[\"x://host?q\"]", "x://host?q/a", false},
        /* A URI that names no resource subscribes to nothing. */
        {"[\"x://elsewhere\"]", "x://elsewhere", false},
    };
    mcp_server_t *srv = new_server(OFFER_ALL);
    static const char *const named[] = {"notes://index", "file:///", "test://", "test:",
                                        "x://host", "x://host?q"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        add_resource(srv, named[i]);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char filter[256];
        snprintf(filter, sizeof filter, "{\"resourceSubscriptions\":%s}", rows[i].subscribed);
        stream_t s;
        stream_open(srv, NULL, i % 2 ? VIA_HTTP : VIA_STDIO, &s, json_integer((json_int_t)i),
                    filter);
        assert_int_equal(mcp_server_notify_resource_updated(srv, rows[i].updated), MCP_OK);
        mcp_exchange_end_stream(s.handle);
        expect_graceful_end(&s);
        size_t heard = stream_count(&s, UPDATED);
        if (heard != (rows[i].heard ? 1u : 0u))
            fail_msg("subscribed to %s, update of %s heard %zu times", rows[i].subscribed,
                     rows[i].updated, heard);
        if (heard) {
            const json_t *note = capture_item(&s.cap, 1).msg;
            assert_string_equal(
                json_string_value(json_object_get(json_object_get(note, "params"), "uri")),
                rows[i].updated);
        }
        stream_cleanup(&s);
    }
    /* resourcesListChanged alone does not subscribe to any resource. */
    stream_t s;
    stream_open(srv, NULL, VIA_STDIO, &s, json_integer(99), "{\"resourcesListChanged\":true}");
    assert_int_equal(mcp_server_notify_resource_updated(srv, "file:///project/readme"), MCP_OK);
    assert_int_equal(mcp_server_notify_resource_updated(NULL, "file:///x"), MCP_EINVAL);
    assert_int_equal(mcp_server_notify_resource_updated(srv, NULL), MCP_EINVAL);
    mcp_exchange_end_stream(s.handle);
    expect_graceful_end(&s);
    assert_int_equal(stream_count(&s, UPDATED), 0);
    stream_cleanup(&s);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* The client ends a stream                                            */
/* ------------------------------------------------------------------ */

/* stdio: notifications/cancelled naming the listen id ends that stream
 * only, without a word; the subscription is gone. */
static void test_cancel_by_notification(void **state)
{
    for (int with_meta = 0; with_meta <= 1; with_meta++) {
        for (int string_ids = 0; string_ids <= 1; string_ids++) {
            mcp_server_t *srv = new_server(OFFER_ALL);
            mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
            mcp_conn_t *other = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
            stream_t a, b, c;
            json_t *id_a = string_ids ? json_string("a") : json_integer(1);
            json_t *id_b = string_ids ? json_string("b") : json_integer(2);
            stream_open(srv, conn, VIA_STDIO, &a, id_a, "{\"toolsListChanged\":true}");
            stream_open(srv, conn, VIA_STDIO, &b, id_b, "{\"toolsListChanged\":true}");
            /* The same id on another connection is another stream. */
            stream_open(srv, other, VIA_STDIO, &c, json_incref(id_a),
                        "{\"toolsListChanged\":true}");
            assert_int_equal(listen_count(srv), 3);

            /* An id in flight on the connection is not taken twice. */
            stream_t dup;
            stream_submit(srv, conn, VIA_STDIO, &dup, json_incref(id_a), "{}");
            assert_true(capture_wait_released(&dup.cap, CAPTURE_PATIENCE_MS));
            capture_assert_done(&dup.cap);
            const json_t *refusal = capture_response(&dup.cap, NULL);
            MCP_ASSERT_SCHEMA_VALID(refusal, LISTEN, REVISION);
            expect_error(refusal, MCP_INVALID_REQUEST);
            stream_cleanup(&dup);
            assert_int_equal(listen_count(srv), 3);

            /* The id in another JSON type names nothing. */
            json_t *wrong = string_ids ? json_integer(1) : json_string("1");
            send_cancel(srv, conn, wrong, with_meta);
            json_decref(wrong);
            assert_int_equal(listen_count(srv), 3);

            send_cancel(srv, conn, a.id, with_meta);
            expect_quiet_end(&a);
            assert_int_equal(listen_count(srv), 2);

            add_tool(srv, "after");
            assert_int_equal(stream_count(&a, TOOLS_CHANGED), 0);
            assert_int_equal(stream_count(&b, TOOLS_CHANGED), 1);
            assert_int_equal(stream_count(&c, TOOLS_CHANGED), 1);

            /* A second cancellation of the same id is harmless. */
            send_cancel(srv, conn, a.id, with_meta);
            mcp_server_close_subscriptions(srv);
            expect_graceful_end(&b);
            expect_graceful_end(&c);
            stream_cleanup(&a);
            stream_cleanup(&b);
            stream_cleanup(&c);
            mcp_conn_free(conn);
            mcp_conn_free(other);
            mcp_server_free(srv);
        }
    }
}

/* HTTP: the client closing its stream reaches the core as a cancel of the
 * handle; mcp_conn_cancel_all ends a connection's streams the same way. */
/* A listen request of `principal` over HTTP that the server must refuse
 * as over its bounds: -32603, "Server busy", and no stream left open. */
static void expect_busy(mcp_server_t *srv, json_int_t id, const char *principal)
{
    stream_t s;
    stream_submit_as(srv, NULL, VIA_HTTP, &s, json_integer(id), "{\"toolsListChanged\":true}", -1,
                     principal);
    if (!capture_wait_released(&s.cap, CAPTURE_PATIENCE_MS))
        fail_msg("listen %d: no answer", (int)id);
    capture_assert_done(&s.cap);
    assert_int_equal(capture_count(&s.cap), 1);
    const json_t *response = capture_response(&s.cap, NULL);
    MCP_ASSERT_SCHEMA_VALID(response, LISTEN, REVISION);
    expect_error(response, MCP_INTERNAL_ERROR);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(response, "error"),
                                                             "message")),
                           "too many subscriptions"));
    stream_cleanup(&s);
}

/* max_listen_streams bounds the streams open at once, and
 * max_listen_streams_per_principal those of one principal;
 * unauthenticated streams count only against the first. A stream that
 * ends makes room. */
static void test_stream_bounds(void **state)
{
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "listen-test", .version = "1", .max_listen_streams = 3,
        .max_listen_streams_per_principal = 2}, NULL);
    assert_non_null(srv);
    add_tool(srv, "echo");
    static const char filter[] = "{\"toolsListChanged\":true}";
    stream_t alice1, alice2, bob, again;
    stream_submit_as(srv, NULL, VIA_HTTP, &alice1, json_integer(1), filter, -1, "alice");
    stream_submit_as(srv, NULL, VIA_HTTP, &alice2, json_integer(2), filter, -1, "alice");
    assert_true(capture_wait_count(&alice1.cap, 1, CAPTURE_PATIENCE_MS));
    assert_true(capture_wait_count(&alice2.cap, 1, CAPTURE_PATIENCE_MS));
    expect_busy(srv, 3, "alice"); /* her share */
    stream_submit_as(srv, NULL, VIA_HTTP, &bob, json_integer(4), filter, -1, "bob");
    assert_true(capture_wait_count(&bob.cap, 1, CAPTURE_PATIENCE_MS));
    assert_int_equal(listen_count(srv), 3);
    expect_busy(srv, 5, NULL);  /* the server's bound */
    expect_busy(srv, 6, "carol");
    assert_int_equal(listen_count(srv), 3);

    /* One of Alice's ends: room for her again, and for nobody else. */
    mcp_exchange_cancel(alice1.handle);
    expect_quiet_end(&alice1);
    assert_int_equal(listen_count(srv), 2);
    stream_submit_as(srv, NULL, VIA_HTTP, &again, json_integer(7), filter, -1, "alice");
    assert_true(capture_wait_count(&again.cap, 1, CAPTURE_PATIENCE_MS));
    assert_false(capture_released(&again.cap));
    expect_busy(srv, 8, NULL);
    /* Every stream open still hears what it listens for. */
    add_tool(srv, "after");
    assert_true(capture_wait_count(&alice2.cap, 2, CAPTURE_PATIENCE_MS));
    assert_true(capture_wait_count(&bob.cap, 2, CAPTURE_PATIENCE_MS));
    assert_true(capture_wait_count(&again.cap, 2, CAPTURE_PATIENCE_MS));

    stream_drop_handle(&alice1);
    stream_drop_handle(&alice2);
    stream_drop_handle(&bob);
    stream_drop_handle(&again);
    mcp_server_free(srv);
    stream_cleanup(&alice1);
    stream_cleanup(&alice2);
    stream_cleanup(&bob);
    stream_cleanup(&again);
}

static void test_cancel_by_transport(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    stream_t a, b;
    stream_open(srv, NULL, VIA_HTTP, &a, json_integer(1), "{\"toolsListChanged\":true}");
    assert_non_null(a.handle);
    mcp_exchange_cancel(a.handle);
    expect_quiet_end(&a);
    assert_int_equal(listen_count(srv), 0);
    /* Ending a cancelled stream gracefully is too late: nothing is sent. */
    mcp_exchange_end_stream(a.handle);
    mcp_exchange_cancel(a.handle);
    expect_quiet_end(&a);

    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    stream_open(srv, conn, VIA_STDIO, &b, json_integer(1), "{\"toolsListChanged\":true}");
    mcp_conn_cancel_all(conn);
    expect_quiet_end(&b);
    assert_int_equal(listen_count(srv), 0);
    add_tool(srv, "after");
    assert_int_equal(capture_count(&a.cap), 1);
    assert_int_equal(capture_count(&b.cap), 1);
    stream_cleanup(&a);
    stream_cleanup(&b);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A sink whose peer is gone (send fails) ends the stream and frees the
 * subscription: at the acknowledgement, or at a later event. */
static void test_peer_gone(void **state)
{
    for (int fail_from = 0; fail_from <= 2; fail_from++) {
        mcp_server_t *srv = new_server(OFFER_ALL);
        stream_t s, other;
        stream_open(srv, NULL, VIA_STDIO, &other, json_integer(2), "{\"toolsListChanged\":true}");
        stream_submit_failing(srv, NULL, fail_from % 2 ? VIA_HTTP : VIA_STDIO, &s,
                              json_integer(1), "{\"toolsListChanged\":true}", fail_from);
        for (int i = 0; i < 3; i++) {
            char name[8];
            snprintf(name, sizeof name, "x%d", i);
            add_tool(srv, name);
        }
        expect_quiet_end(&s);
        /* The failed send is the last one. */
        assert_int_equal(capture_count(&s.cap), (size_t)fail_from + 1);
        assert_int_equal(listen_count(srv), 1);
        assert_int_equal(stream_count(&other, TOOLS_CHANGED), 3);
        stream_cleanup(&s);
        stream_drop_handle(&other);
        mcp_server_free(srv);
        expect_graceful_end(&other);
        stream_cleanup(&other);
    }
}

/* ------------------------------------------------------------------ */
/* The server ends a stream                                            */
/* ------------------------------------------------------------------ */

/* mcp_server_close_subscriptions: every stream gets its result, nothing
 * more; clients may listen again afterwards. */
static void test_close_subscriptions(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    stream_t s[4];
    stream_open(srv, conn, VIA_STDIO, &s[0], json_integer(1), "{\"toolsListChanged\":true}");
    stream_open(srv, conn, VIA_STDIO, &s[1], json_string("two"), "{}");
    stream_open(srv, NULL, VIA_HTTP, &s[2], json_integer(3), "{\"toolsListChanged\":true}");
    stream_open(srv, NULL, VIA_HTTP, &s[3], json_string("four"), "{\"promptsListChanged\":true}");
    assert_int_equal(mcp_server_close_subscriptions(srv), MCP_OK);
    assert_int_equal(listen_count(srv), 0);
    for (int i = 0; i < 4; i++)
        expect_graceful_end(&s[i]);
    add_tool(srv, "after");
    for (int i = 0; i < 4; i++) {
        assert_int_equal(capture_count(&s[i].cap), 2); /* ack, result */
        /* Ending again, or cancelling, sends nothing more. */
        mcp_exchange_end_stream(s[i].handle);
        mcp_exchange_cancel(s[i].handle);
        capture_assert_done(&s[i].cap);
        assert_int_equal(capture_count(&s[i].cap), 2);
    }
    assert_int_equal(mcp_server_close_subscriptions(srv), MCP_OK); /* none open: fine */
    assert_int_equal(mcp_server_close_subscriptions(NULL), MCP_EINVAL);

    /* The connection may listen again, even with the same id. */
    stream_t again;
    stream_open(srv, conn, VIA_STDIO, &again, json_integer(1), "{\"toolsListChanged\":true}");
    add_tool(srv, "after2");
    assert_int_equal(stream_count(&again, TOOLS_CHANGED), 1);
    mcp_exchange_end_stream(again.handle);
    expect_graceful_end(&again);
    stream_cleanup(&again);
    for (int i = 0; i < 4; i++)
        stream_cleanup(&s[i]);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* mcp_exchange_end_stream ends one stream; on another request it does
 * nothing. */
static int slow_tool(mcp_call_t *call, void *user)
{
    mcp_call_sleep(call, 100);
    return mcp_call_add_text(call, "slow");
}

static void test_end_one_stream(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = "slow", .handler = slow_tool}, NULL),
        MCP_OK);
    stream_t a, b;
    stream_open(srv, NULL, VIA_HTTP, &a, json_integer(1), "{\"toolsListChanged\":true}");
    stream_open(srv, NULL, VIA_HTTP, &b, json_integer(2), "{\"toolsListChanged\":true}");
    mcp_exchange_end_stream(a.handle);
    expect_graceful_end(&a);
    assert_int_equal(listen_count(srv), 1);
    add_tool(srv, "after");
    assert_int_equal(stream_count(&a, TOOLS_CHANGED), 0);
    assert_int_equal(stream_count(&b, TOOLS_CHANGED), 1);

    /* A tool call's handle: end_stream is a no-op, the call answers. */
    capture_sink_t call;
    capture_init(&call);
    mcp_exchange_t *handle = NULL;
    json_t *request = modern_request(3, "tools/call", json_pack("{s:s}", "name", "slow"));
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &call, &handle), MCP_OK);
    json_decref(request);
    mcp_exchange_end_stream(handle);
    mcp_exchange_end_stream(NULL);
    assert_true(capture_wait_released(&call, CAPTURE_PATIENCE_MS));
    capture_assert_done(&call);
    expect_complete(capture_response(&call, NULL));
    mcp_exchange_release(handle);
    capture_cleanup(&call);

    stream_drop_handle(&a);
    stream_drop_handle(&b);
    mcp_server_free(srv);
    expect_graceful_end(&b);
    stream_cleanup(&a);
    stream_cleanup(&b);
}

/* mcp_server_free ends the streams gracefully before the server goes. */
static void test_free_ends_gracefully(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    stream_t s[3];
    stream_open(srv, conn, VIA_STDIO, &s[0], json_integer(1), "{\"toolsListChanged\":true}");
    stream_open(srv, NULL, VIA_HTTP, &s[1], json_string("x"), "{\"promptsListChanged\":true}");
    stream_open(srv, conn, VIA_STDIO, &s[2], json_integer(3), "{}");
    for (int i = 0; i < 3; i++)
        stream_drop_handle(&s[i]);
    mcp_server_free(srv);
    for (int i = 0; i < 3; i++) {
        expect_graceful_end(&s[i]);
        stream_cleanup(&s[i]);
    }
    mcp_conn_free(conn);
}

/* ------------------------------------------------------------------ */
/* Publishers racing with streams                                      */
/* ------------------------------------------------------------------ */

/*
 * A sink that lingers in send() for events (not the acknowledgement) and
 * notes a release that overlaps a send: the core promises a sink "never
 * concurrently", and a release may free the sink under a send.
 */
typedef struct lingering_sink {
    mcp_sink_t sink;
    atomic_int in_send;
    atomic_int sends;
    atomic_bool overlap;
    atomic_bool released;
} lingering_sink_t;

static int linger_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    lingering_sink_t *ls = (lingering_sink_t *)sink;
    atomic_fetch_add(&ls->in_send, 1);
    if (atomic_fetch_add(&ls->sends, 1) > 0 && kind == MCP_OUT_NOTIFICATION)
        nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    atomic_fetch_sub(&ls->in_send, 1);
    return 0;
}

static void linger_release(mcp_sink_t *sink)
{
    lingering_sink_t *ls = (lingering_sink_t *)sink;
    if (atomic_load(&ls->in_send) > 0)
        atomic_store(&ls->overlap, true);
    atomic_store(&ls->released, true);
}

static void *add_tool_thread(void *arg)
{
    mcp_server_add_tool(arg, &(mcp_tool_t){.name = "from_thread", .handler = tool_fn}, NULL);
    return NULL;
}

/* A client cancels its stream while an event is being sent to it: the
 * sink is released only after that send returned. */
static void test_release_waits_for_send(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    lingering_sink_t ls = {.sink = {linger_send, linger_release}};
    json_t *id = json_integer(1);
    json_t *request = listen_request(id, "{\"toolsListChanged\":true}");
    char *text = json_dumps(request, JSON_COMPACT);
    assert_int_equal(mcp_server_submit(srv, conn, text, strlen(text),
                                       &(mcp_request_context_t){.transport = MCP_TRANSPORT_STDIO},
                                       &ls.sink, NULL),
                     MCP_OK);
    free(text);
    json_decref(request);
    assert_int_equal(atomic_load(&ls.sends), 1); /* the acknowledgement */

    pthread_t publisher;
    assert_int_equal(pthread_create(&publisher, NULL, add_tool_thread, srv), 0);
    while (atomic_load(&ls.in_send) == 0) /* the event is in send() */
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    send_cancel(srv, conn, id, false);
    pthread_join(publisher, NULL);
    assert_true(atomic_load(&ls.released));
    assert_false(atomic_load(&ls.overlap));
    assert_int_equal(listen_count(srv), 0);
    json_decref(id);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/*
 * Publishers change the registries and update resources without pause
 * while other threads open streams and end them every way there is, and
 * the server finally closes the rest. Every stream must keep the rules:
 * acknowledgement first, every message tagged with its id and asked for by
 * its filter, nothing after the result or the release, one release.
 */
#define PUBLISHERS 3
#define OPENERS 2
#define STREAMS_PER_OPENER 60

typedef enum stream_end {
    END_CANCEL_NOTE,   /* notifications/cancelled on the connection */
    END_CANCEL_HANDLE, /* the transport's cancel */
    END_GRACEFULLY,    /* mcp_exchange_end_stream */
    END_LEFT_OPEN,     /* mcp_server_close_subscriptions at the end */
    END_KINDS
} stream_end_t;

typedef struct race {
    mcp_server_t *srv;
    atomic_bool stop;
    stream_t streams[OPENERS][STREAMS_PER_OPENER];
    const char *filters[OPENERS][STREAMS_PER_OPENER];
    atomic_int failures; /* things a thread could not do (cmocka is for the main thread) */
} race_t;

typedef struct race_arg {
    race_t *race;
    int index;
} race_arg_t;

static const char *const race_filters[] = {
    "{\"toolsListChanged\":true}",
    "{\"promptsListChanged\":true,\"resourceSubscriptions\":[\"file:///race\"]}",
    ("{\"toolsListChanged\":true,\"promptsListChanged\":true,\"resourcesListChanged\":true,"
     "\"resourceSubscriptions\":[\"file:///race/\"]}"),
};

static void *race_publisher(void *arg)
{
    race_arg_t *ra = arg;
    mcp_server_t *srv = ra->race->srv;
    char name[32];
    for (unsigned n = 0; !atomic_load(&ra->race->stop); n++) {
        snprintf(name, sizeof name, "race_%d_%u", ra->index, (n / 6) % 3);
        switch (n % 6) {
        case 0:
            mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = tool_fn}, NULL);
            break;
        case 1:
            mcp_server_remove_tool(srv, name);
            break;
        case 2:
            mcp_server_add_prompt(srv, &(mcp_prompt_t){.name = name, .handler = prompt_fn},
                                  NULL);
            break;
        case 3:
            mcp_server_remove_prompt(srv, name);
            break;
        case 4:
            mcp_server_notify_resource_updated(srv, "file:///race");
            break;
        case 5:
            mcp_server_notify_resource_updated(srv, "file:///race/child");
            break;
        }
        nanosleep(&(struct timespec){0, 200000L}, NULL);
    }
    return NULL;
}

/* Submits one message on `conn` from a worker thread (no cmocka). */
static bool race_submit(mcp_server_t *srv, mcp_conn_t *conn, via_t via, json_t *msg,
                        capture_sink_t *cap, mcp_exchange_t **handle)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    /* The two headers the ladder needs of a listen request on HTTP. */
    mcp_header_t items[] = {{"MCP-Protocol-Version", REVISION}, {"Mcp-Method", LISTEN}};
    mcp_headers_t headers = {items, 2};
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    if (via == VIA_HTTP)
        ctx = (mcp_request_context_t){.transport = MCP_TRANSPORT_HTTP, .headers = &headers};
    bool ok = text && mcp_server_submit(srv, conn, text, strlen(text), &ctx, &cap->sink,
                                        handle) == MCP_OK;
    free(text);
    return ok;
}

static void *race_opener(void *arg)
{
    race_arg_t *ra = arg;
    race_t *race = ra->race;
    mcp_conn_t *conn = mcp_conn_new(race->srv, MCP_TRANSPORT_STDIO);
    for (int i = 0; i < STREAMS_PER_OPENER; i++) {
        stream_t *s = &race->streams[ra->index][i];
        const char *filter = race_filters[i % 3];
        race->filters[ra->index][i] = filter;
        /* Every way to end, on both transports. */
        via_t via = (i / END_KINDS) % 2 ? VIA_HTTP : VIA_STDIO;
        json_t *request = json_pack("{s:s, s:o, s:s, s:{s:o, s:{s:s, s:{}}}}", "jsonrpc", "2.0",
                                    "id", json_incref(s->id), "method", LISTEN, "params",
                                    "notifications", json_loads(filter, 0, NULL), "_meta",
                                    MCP_META_PROTOCOL_VERSION, REVISION,
                                    MCP_META_CLIENT_CAPABILITIES);
        if (!race_submit(race->srv, via == VIA_STDIO ? conn : NULL, via, request, &s->cap,
                         &s->handle) ||
            !capture_wait_count(&s->cap, 1, CAPTURE_PATIENCE_MS)) {
            atomic_fetch_add(&race->failures, 1);
            continue;
        }
        stream_end_t end = (stream_end_t)(i % END_KINDS);
        if (end == END_CANCEL_NOTE && via == VIA_HTTP)
            end = END_CANCEL_HANDLE; /* an HTTP client closes the stream instead */
        if (end == END_CANCEL_NOTE) {
            capture_sink_t note;
            capture_init(&note);
            json_t *cancel = json_pack("{s:s, s:s, s:{s:O}}", "jsonrpc", "2.0", "method",
                                       "notifications/cancelled", "params", "requestId", s->id);
            if (!race_submit(race->srv, conn, VIA_STDIO, cancel, &note, NULL) ||
                !capture_wait_released(&note, CAPTURE_PATIENCE_MS))
                atomic_fetch_add(&race->failures, 1);
            capture_cleanup(&note);
        } else if (end == END_CANCEL_HANDLE) {
            mcp_exchange_cancel(s->handle);
        } else if (end == END_GRACEFULLY) {
            mcp_exchange_end_stream(s->handle);
        }
    }
    mcp_conn_free(conn);
    return NULL;
}

static void test_publishers_race_streams(void **state)
{
    race_t *race = calloc(1, sizeof *race);
    assert_non_null(race);
    race->srv = new_server(OFFER_ALL);
    for (int o = 0; o < OPENERS; o++) {
        for (int i = 0; i < STREAMS_PER_OPENER; i++) {
            stream_t *s = &race->streams[o][i];
            capture_init(&s->cap);
            /* Ids repeat across openers' connections, in both JSON types. */
            s->id = i % 4 < 2 ? json_integer(i) : json_sprintf("s%d", i);
        }
    }
    pthread_t publishers[PUBLISHERS], openers[OPENERS];
    race_arg_t pub_args[PUBLISHERS], open_args[OPENERS];
    for (int p = 0; p < PUBLISHERS; p++) {
        pub_args[p] = (race_arg_t){race, p};
        assert_int_equal(pthread_create(&publishers[p], NULL, race_publisher, &pub_args[p]), 0);
    }
    for (int o = 0; o < OPENERS; o++) {
        open_args[o] = (race_arg_t){race, o};
        assert_int_equal(pthread_create(&openers[o], NULL, race_opener, &open_args[o]), 0);
    }
    for (int o = 0; o < OPENERS; o++)
        pthread_join(openers[o], NULL);
    /* The rest end gracefully while events still fly. */
    assert_int_equal(mcp_server_close_subscriptions(race->srv), MCP_OK);
    atomic_store(&race->stop, true);
    for (int p = 0; p < PUBLISHERS; p++)
        pthread_join(publishers[p], NULL);
    assert_int_equal(atomic_load(&race->failures), 0);
    assert_int_equal(listen_count(race->srv), 0);

    for (int o = 0; o < OPENERS; o++) {
        for (int i = 0; i < STREAMS_PER_OPENER; i++) {
            stream_t *s = &race->streams[o][i];
            stream_end_t end = (stream_end_t)(i % END_KINDS);
            if (end == END_CANCEL_NOTE || end == END_CANCEL_HANDLE)
                expect_quiet_end(s);
            else
                expect_graceful_end(s);
            /* Only what the filter asked for. */
            json_t *filter = json_loads(race->filters[o][i], 0, NULL);
            if (!json_is_true(json_object_get(filter, "toolsListChanged")))
                assert_int_equal(stream_count(s, TOOLS_CHANGED), 0);
            if (!json_is_true(json_object_get(filter, "promptsListChanged")))
                assert_int_equal(stream_count(s, PROMPTS_CHANGED), 0);
            if (!json_is_true(json_object_get(filter, "resourcesListChanged")))
                assert_int_equal(stream_count(s, RESOURCES_CHANGED), 0);
            json_decref(filter);
            stream_cleanup(s);
        }
    }
    mcp_server_free(race->srv);
    free(race);
}

/*
 * mcp_server_close_subscriptions racing with clients that leave: batches
 * of streams are opened, then cancelled one after the other while another
 * thread closes subscriptions without pause. Every stream ends once,
 * either way (its result, or silence), and its record is freed once.
 */
#define CLOSE_ROUNDS 150
#define CLOSE_BATCH 32

typedef struct closer {
    mcp_server_t *srv;
    atomic_bool stop;
} closer_t;

static void *closer_main(void *arg)
{
    closer_t *c = arg;
    while (!atomic_load(&c->stop))
        mcp_server_close_subscriptions(c->srv);
    return NULL;
}

static void test_close_races_cancel(void **state)
{
    closer_t c = {.srv = new_server(OFFER_ALL)};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, closer_main, &c), 0);
    size_t graceful = 0;
    stream_t s[CLOSE_BATCH];
    for (int round = 0; round < CLOSE_ROUNDS; round++) {
        for (int i = 0; i < CLOSE_BATCH; i++)
            stream_submit(c.srv, NULL, VIA_HTTP, &s[i], json_integer(i),
                          "{\"toolsListChanged\":true}");
        for (int i = 0; i < CLOSE_BATCH; i++)
            mcp_exchange_cancel(s[i].handle);
        for (int i = 0; i < CLOSE_BATCH; i++) {
            if (!capture_wait_released(&s[i].cap, CAPTURE_PATIENCE_MS))
                fail_msg("a stream never ended");
            capture_assert_done(&s[i].cap);
            assert_int_equal(stream_count(&s[i], ACK), 1);
            if (capture_response(&s[i].cap, NULL)) {
                expect_graceful_end(&s[i]);
                graceful++;
            }
            stream_cleanup(&s[i]);
        }
    }
    atomic_store(&c.stop, true);
    pthread_join(thread, NULL);
    print_message("%zu of %d streams were closed by the server first\n", graceful,
                  CLOSE_ROUNDS * CLOSE_BATCH);
    assert_int_equal(listen_count(c.srv), 0);
    mcp_server_free(c.srv);
}

/*
 * A connection cancelled (mcp_conn_cancel_all, from another thread) while
 * a listen request on it is being opened: the stream ends, or it stays
 * fully alive -- never open but deaf, with a sink nobody releases.
 */
#define OPEN_ROUNDS 2000

typedef struct conn_canceller {
    mcp_conn_t *conn;
    atomic_bool stop;
} conn_canceller_t;

static void *conn_canceller_main(void *arg)
{
    conn_canceller_t *cc = arg;
    while (!atomic_load(&cc->stop))
        mcp_conn_cancel_all(cc->conn);
    return NULL;
}

static void test_cancel_while_opening(void **state)
{
    mcp_server_t *srv = new_server(OFFER_ALL);
    conn_canceller_t cc = {.conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO)};
    stream_t *s = calloc(OPEN_ROUNDS, sizeof *s);
    assert_non_null(s);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, conn_canceller_main, &cc), 0);
    for (int i = 0; i < OPEN_ROUNDS; i++)
        stream_submit(srv, cc.conn, VIA_STDIO, &s[i], json_integer(i),
                      "{\"toolsListChanged\":true}");
    atomic_store(&cc.stop, true);
    pthread_join(thread, NULL);

    /* Every stream still open hears an event. */
    add_tool(srv, "probe");
    size_t open = 0;
    for (int i = 0; i < OPEN_ROUNDS; i++) {
        if (capture_released(&s[i].cap))
            continue;
        open++;
        if (stream_count(&s[i], TOOLS_CHANGED) != 1)
            fail_msg("stream %d is open but deaf", i);
    }
    print_message("%zu of %d streams outlived the cancellations\n", open, OPEN_ROUNDS);
    assert_int_equal(listen_count(srv), open);
    mcp_conn_cancel_all(cc.conn);
    for (int i = 0; i < OPEN_ROUNDS; i++) {
        expect_quiet_end(&s[i]);
        stream_cleanup(&s[i]);
    }
    assert_int_equal(listen_count(srv), 0);
    free(s);
    mcp_conn_free(cc.conn);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ack_first_and_tagged),
        cmocka_unit_test(test_honoured_filter),
        cmocka_unit_test(test_malformed_filters),
        cmocka_unit_test(test_nothing_to_listen_for),
        cmocka_unit_test(test_delivery_counts),
        cmocka_unit_test(test_resource_updated_matching),
        cmocka_unit_test(test_cancel_by_notification),
        cmocka_unit_test(test_cancel_by_transport),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_close_subscriptions),
        cmocka_unit_test(test_end_one_stream),
        cmocka_unit_test(test_free_ends_gracefully),
        cmocka_unit_test(test_release_waits_for_send),
        cmocka_unit_test(test_publishers_race_streams),
        cmocka_unit_test(test_close_races_cancel),
        cmocka_unit_test(test_cancel_while_opening),
        cmocka_unit_test(test_stream_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
