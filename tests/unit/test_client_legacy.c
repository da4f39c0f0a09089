/*
 * The legacy client's pure parts and its handshake against a scripted
 * transport: what a legacy request looks like, which header version it
 * carries, which notifications a subscription's filter lets through, the
 * probe -> initialize -> notifications/initialized sequence, a server
 * request the server cancels while the client answers it, and a server
 * that asks more at once than the client answers.
 */
#define _GNU_SOURCE /* clock_gettime, nanosleep */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client/legacy/legacy.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"
#include "test_clock.h"

static void test_request_build(void **state)
{
    (void)state;
    json_t *params = json_pack("{s:s, s:{s:s, s:s, s:i}}", "name", "echo", "_meta",
                               "io.modelcontextprotocol/protocolVersion", "2026-07-28",
                               "traceparent", "00-abc", "progressToken", 99);
    json_t *req = client_legacy_request_build(7, "tools/call", params, true);
    json_t *meta = json_object_get(json_object_get(req, "params"), "_meta");
    /* The envelope is gone, the caller's keys stay, the token is the id. */
    assert_null(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
    assert_string_equal(json_string_value(json_object_get(meta, "traceparent")), "00-abc");
    assert_int_equal(json_integer_value(json_object_get(meta, "progressToken")), 7);
    assert_int_equal(json_integer_value(json_object_get(req, "id")), 7);
    json_decref(req);

    /* Without progress and without other keys, no _meta at all. */
    json_t *bare = json_pack("{s:{s:s}}", "_meta", "io.modelcontextprotocol/logLevel", "info");
    req = client_legacy_request_build(8, "tools/list", bare, false);
    assert_null(json_object_get(json_object_get(req, "params"), "_meta"));
    json_decref(req);
    json_decref(bare);
    json_decref(params);
}

static void test_header_version(void **state)
{
    (void)state;
    assert_string_equal(client_legacy_header_version("2025-11-25"), "2025-11-25");
    assert_string_equal(client_legacy_header_version("2025-06-18"), "2025-06-18");
    assert_null(client_legacy_header_version("2025-03-26")); /* no such header then */
    assert_null(client_legacy_header_version(NULL));
    assert_true(client_legacy_method_unknown("server/discover"));
    assert_true(client_legacy_method_unknown("subscriptions/listen"));
    assert_false(client_legacy_method_unknown("tools/list"));
}

static void test_filter_matches(void **state)
{
    (void)state;
    json_t *filter = json_pack("{s:b, s:[s]}", "toolsListChanged", 1, "resourceSubscriptions",
                               "file:///a");
    json_t *a = json_pack("{s:s}", "uri", "file:///a"), *b = json_pack("{s:s}", "uri", "file:///b");
    static const struct {
        const char *method;
        bool uri_a;
        bool want;
    } rows[] = {
        {"notifications/tools/list_changed", false, true},
        {"notifications/prompts/list_changed", false, false},
        {"notifications/resources/list_changed", false, false},
        {"notifications/resources/updated", true, true},
        {"notifications/resources/updated", false, false},
        {"notifications/message", true, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_int_equal(client_legacy_filter_matches(filter, rows[i].method,
                                                      rows[i].uri_a ? a : b),
                         rows[i].want);
    json_decref(filter);
    json_decref(a);
    json_decref(b);
}

/* A legacy server on a scripted transport: -32601 to the probe, an
 * InitializeResult naming `version`. */
static json_t *legacy_server(void *user, fake_transport_t *ft, const json_t *req)
{
    (void)ft;
    const char *method = fake_method(req);
    if (strcmp(method, "server/discover") == 0)
        return fake_error(req, -32601, "Method not found", NULL);
    if (strcmp(method, "initialize") == 0) {
        json_t *params = fake_params(req);
        /* Legacy shape: no _meta envelope, the legacy capabilities. */
        assert_null(json_object_get(params, "_meta"));
        assert_string_equal(json_string_value(json_object_get(params, "protocolVersion")),
                            "2025-11-25");
        return fake_result(req, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion",
                                          (const char *)user, "capabilities", "tools",
                                          "listChanged", 1, "serverInfo", "name", "old",
                                          "version", "0.1"));
    }
    return fake_result(req, json_pack("{s:[]}", "tools"));
}

static void test_handshake(void **state)
{
    (void)state;
    static const struct {
        const char *answered;
        int rc;
    } rows[] = {
        {"2025-11-25", MCP_OK},
        {"2025-03-26", MCP_OK},            /* an older legacy version we speak */
        {"2024-11-05", MCP_EUNSUPPORTED},  /* one we do not: disconnect */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"},
                                         NULL);
        fake_transport_t *ft = fake_transport_new(c, legacy_server, (void *)rows[i].answered);
        mcp_error_t err = {0};
        assert_int_equal(client_connect_transport(c, fake_transport_base(ft),
                                                  MCP_TRANSPORT_STDIO, &err),
                         rows[i].rc);
        if (rows[i].rc == MCP_OK) {
            assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
            assert_string_equal(mcp_client_protocol_version(c), rows[i].answered);
            json_t *requests = fake_requests(ft);
            assert_string_equal(fake_method(json_array_get(requests, 0)), "server/discover");
            assert_string_equal(fake_method(json_array_get(requests, 1)), "initialize");
            json_decref(requests);
            /* A later request is legacy-shaped. */
            json_t *r = NULL;
            assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &r, &err), MCP_OK);
            json_decref(r);
            requests = fake_requests(ft);
            json_t *hints = fake_hints(ft);
            assert_null(json_object_get(fake_params(json_array_get(requests, 2)), "_meta"));
            /* No Mcp-Method header (the fake records an absent hint as null). */
            assert_true(json_is_null(json_object_get(json_array_get(hints, 2), "method")));
            json_decref(requests);
            json_decref(hints);
        } else {
            assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        }
        mcp_error_clear(&err);
        mcp_client_free(c);
    }
}

/* An elicitation callback that waits until the test lets it answer. */
static pthread_mutex_t elicit_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t elicit_cond = PTHREAD_COND_INITIALIZER;
static int elicit_calls;
static bool elicit_go;

static int held_elicit(void *user, const json_t *params, json_t **result_out)
{
    (void)user, (void)params;
    pthread_mutex_lock(&elicit_lock);
    elicit_calls++;
    pthread_cond_broadcast(&elicit_cond);
    while (!elicit_go)
        pthread_cond_wait(&elicit_cond, &elicit_lock);
    pthread_mutex_unlock(&elicit_lock);
    *result_out = json_pack("{s:s}", "action", "decline");
    return 0;
}

/* The answers the client sent for the server's request `id`. */
static size_t answers_to(const json_t *notes, const char *id)
{
    size_t n = 0, i;
    json_t *note;
    json_array_foreach(notes, i, note) {
        const char *answered = json_string_value(json_object_get(note, "id"));
        if (!json_object_get(note, "method") && answered && strcmp(answered, id) == 0)
            n++;
    }
    return n;
}

static void test_server_cancels_its_request(void **state)
{
    (void)state;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .elicit = held_elicit}, NULL);
    fake_transport_t *ft = fake_transport_new(c, legacy_server, (void *)"2025-11-25");
    mcp_error_t err = {0};
    assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                              &err),
                     MCP_OK);

    /* The server asks, and cancels while the callback runs. */
    json_t *ask = json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", "e-1",
                            "method", "elicitation/create", "params", "message", "name?",
                            "requestedSchema", "type", "object");
    fake_unrouted(ft, ask);
    pthread_mutex_lock(&elicit_lock);
    while (elicit_calls == 0)
        pthread_cond_wait(&elicit_cond, &elicit_lock);
    pthread_mutex_unlock(&elicit_lock);
    json_t *cancel = json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method",
                               "notifications/cancelled", "params", "requestId", "e-1",
                               "reason", "no longer needed");
    fake_unrouted(ft, cancel);
    pthread_mutex_lock(&elicit_lock);
    elicit_go = true;
    pthread_cond_broadcast(&elicit_cond);
    pthread_mutex_unlock(&elicit_lock);

    /* A request it does not cancel is answered. */
    json_t *ping = json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", "p-1", "method", "ping");
    fake_unrouted(ft, ping);

    client_legacy_drain_inbound(c); /* every answer that will be sent, was */
    json_t *notes = fake_notes(ft);
    assert_int_equal(answers_to(notes, "e-1"), 0);
    assert_int_equal(answers_to(notes, "p-1"), 1);
    json_decref(notes);
    json_decref(ask);
    json_decref(cancel);
    json_decref(ping);
    mcp_client_free(c);
}

/* The threads of this process. */
static size_t thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static json_t *elicitation(const char *id)
{
    return json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", id, "method",
                     "elicitation/create", "params", "message", "name?", "requestedSchema",
                     "type", "object");
}

/* The answers sent so far whose error code is `code` (0: results). */
static size_t answers_with(fake_transport_t *ft, int code)
{
    json_t *notes = fake_notes(ft), *note;
    size_t n = 0, i;
    json_array_foreach(notes, i, note) {
        json_t *error = json_object_get(note, "error");
        if (json_object_get(note, "method"))
            continue;
        if (code == 0 ? json_object_get(note, "result") != NULL
                      : json_integer_value(json_object_get(error, "code")) == code)
            n++;
    }
    json_decref(notes);
    return n;
}

/* Waits (up to 10 s) until `n` callbacks have started. */
static void await_elicit_calls(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&elicit_lock);
    while (elicit_calls < n &&
           pthread_cond_timedwait(&elicit_cond, &elicit_lock, &until) == 0)
        ;
    int calls = elicit_calls;
    pthread_mutex_unlock(&elicit_lock);
    assert_int_equal(calls, n);
}

/*
 * A server that asks more than CLIENT_LEGACY_MAX_ANSWERING questions at
 * once while the callback holds every one: the excess is refused with
 * -32603 at once, no thread is started for it, a ping is still answered,
 * and once the callbacks return a new question is taken again.
 */
static void test_server_request_flood(void **state)
{
    (void)state;
    elicit_calls = 0;
    elicit_go = false;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .elicit = held_elicit}, NULL);
    fake_transport_t *ft = fake_transport_new(c, legacy_server, (void *)"2025-11-25");
    mcp_error_t err = {0};
    assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                              &err),
                     MCP_OK);
    size_t threads_before = thread_count();
    const int extra = 8, cap = CLIENT_LEGACY_MAX_ANSWERING;
    for (int i = 0; i < cap + extra; i++) {
        char id[16];
        snprintf(id, sizeof id, "f-%d", i);
        json_t *ask = elicitation(id);
        fake_unrouted(ft, ask);
        json_decref(ask);
    }
    await_elicit_calls(cap);
    /* The refusals went out as the requests were read. */
    assert_int_equal(answers_with(ft, MCP_INTERNAL_ERROR), extra);
    assert_true(thread_count() <= threads_before + (size_t)cap);
    sleep_ms(50); /* no late callback either */
    pthread_mutex_lock(&elicit_lock);
    assert_int_equal(elicit_calls, cap);
    pthread_mutex_unlock(&elicit_lock);

    /* A ping needs no callback: answered even now. */
    json_t *ping = json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", "p-1", "method", "ping");
    fake_unrouted(ft, ping);
    json_decref(ping);
    assert_int_equal(answers_with(ft, 0), 1);

    pthread_mutex_lock(&elicit_lock);
    elicit_go = true;
    pthread_cond_broadcast(&elicit_cond);
    pthread_mutex_unlock(&elicit_lock);
    for (int64_t until = now_ms() + 10000; answers_with(ft, 0) < 1 + (size_t)cap;) {
        assert_true(now_ms() < until);
        sleep_ms(5);
    }
    /* Room again: the next question reaches the callback. */
    json_t *ask = elicitation("f-late");
    fake_unrouted(ft, ask);
    json_decref(ask);
    client_legacy_drain_inbound(c);
    assert_int_equal(elicit_calls, cap + 1);
    assert_int_equal(answers_with(ft, 0), 2 + (size_t)cap);
    assert_int_equal(answers_with(ft, MCP_INTERNAL_ERROR), extra);
    mcp_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_build),
        cmocka_unit_test(test_header_version),
        cmocka_unit_test(test_filter_matches),
        cmocka_unit_test(test_handshake),
        cmocka_unit_test(test_server_cancels_its_request),
        cmocka_unit_test(test_server_request_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
