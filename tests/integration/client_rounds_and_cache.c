/*
 * The client against tests/integration/servers/client_test_server, over
 * stdio and over Streamable HTTP (the same cases, once per transport):
 *   - MRTR with two rounds, the server's state carried in requestState;
 *   - cache hits, counted at the server, bypass_cache, and invalidation of a
 *     cached resource by a listen event;
 *   - tools/list_changed: the cached tool list is dropped.
 * Over HTTP the server runs as a child process and must exit cleanly
 * (status 0) when stopped; over stdio the client owns the process.
 */
#define _GNU_SOURCE /* nanosleep with -std=c11 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "http_child.h"
#include "mcp/client.h"
#include "mcp/mcp.h"
#include "schema_check.h"

#ifndef MCP_CLIENT_TEST_SERVER
#error "MCP_CLIENT_TEST_SERVER must name the client_test_server binary"
#endif

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void assert_result_valid(const json_t *result, const char *method)
{
    json_t *msg = json_pack("{s:s, s:i, s:O}", "jsonrpc", "2.0", "id", 1, "result", result);
    MCP_ASSERT_SCHEMA_VALID(msg, method, "2026-07-28");
    json_decref(msg);
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* ------------------------------------------------------------------------
 * The user: answers the survey's questions
 * ------------------------------------------------------------------------ */

typedef struct elicit_script {
    const char *action; /* for every question */
    int calls;
    char message[256];  /* the last question */
} elicit_script_t;

static elicit_script_t script = {"accept", 0, ""};

/* Accepts with name "Ada" and confirm true, where the form asks for them. */
static int elicit(void *user, const json_t *params, json_t **result_out)
{
    elicit_script_t *s = user;
    s->calls++;
    snprintf(s->message, sizeof s->message, "%s",
             json_string_value(json_object_get(params, "message")));
    if (strcmp(s->action, "accept") != 0) {
        *result_out = json_pack("{s:s}", "action", s->action);
        return 0;
    }
    const json_t *fields =
        json_object_get(json_object_get(params, "requestedSchema"), "properties");
    json_t *content = json_object();
    if (json_object_get(fields, "name"))
        json_object_set_new(content, "name", json_string("Ada"));
    if (json_object_get(fields, "confirm"))
        json_object_set_new(content, "confirm", json_true());
    *result_out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    return 0;
}

/* ------------------------------------------------------------------------
 * The server, over one transport or the other
 * ------------------------------------------------------------------------ */

typedef struct fixture {
    bool http;
    http_child_t server; /* HTTP only */
    mcp_client_t *c;
} fixture_t;

/* A client connected to the fixture's server; `elicit_too` sets the elicit
 * callback. NULL (after printing why) on failure. */
static mcp_client_t *connect_client(fixture_t *f, bool elicit_too)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "integration", .version = "1.0", .log = mcp_log_stderr,
        .elicit = elicit_too ? elicit : NULL, .elicit_user = &script}, &err);
    int rc = !c ? MCP_EINVAL
             : f->http
                 ? mcp_client_connect_http(c, &(mcp_http_target_t){.url = f->server.url}, &err)
                 : mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                       .argv = (const char *const[]){MCP_CLIENT_TEST_SERVER, NULL}}, &err);
    if (rc != MCP_OK) {
        fprintf(stderr, "cannot connect to client_test_server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_client_free(c);
        return NULL;
    }
    return c;
}

static int start(void **state, bool http)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->http = http;
    if (http && http_child_start(&f->server, (const char *const[]){MCP_CLIENT_TEST_SERVER,
                                                                   "--http", NULL},
                                 20000) != 0) {
        free(f);
        return -1;
    }
    if (!(f->c = connect_client(f, true))) {
        if (http)
            http_child_stop(&f->server, 10000);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int start_stdio(void **state)
{
    return start(state, false);
}

static int start_http(void **state)
{
    return start(state, true);
}

static int stop(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    int status = f->http ? http_child_stop(&f->server, 20000) : 0;
    free(f);
    if (status != 0)
        fprintf(stderr, "client_test_server exited with status %d\n", status);
    return status == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------
 * Listening
 * ------------------------------------------------------------------------ */

typedef struct events {
    pthread_mutex_t lock;
    int updated;
    int tools_changed;
} events_t;

static void on_event(void *user, const char *method, const json_t *params)
{
    events_t *e = user;
    pthread_mutex_lock(&e->lock);
    if (strcmp(method, "notifications/resources/updated") == 0 &&
        strcmp(json_string_value(json_object_get(params, "uri")), "counter://value") == 0)
        e->updated++;
    else if (strcmp(method, "notifications/tools/list_changed") == 0)
        e->tools_changed++;
    pthread_mutex_unlock(&e->lock);
}

/* Waits up to 5 s for *counter (guarded by e->lock) to become non-zero. */
static bool heard(events_t *e, const int *counter)
{
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&e->lock);
        int seen = *counter;
        pthread_mutex_unlock(&e->lock);
        if (seen > 0)
            return true;
        sleep_ms(10);
    }
    return false;
}

static mcp_subscription_t *listen_to(mcp_client_t *c, const mcp_listen_filter_t *filter,
                                     events_t *ev, json_t **honoured)
{
    mcp_subscription_t *sub = NULL;
    mcp_error_t err = {0};
    if (mcp_client_listen(c, filter, on_event, ev, NULL, &sub, honoured, &err) != MCP_OK)
        fail_msg("listen: %s", err.message);
    return sub;
}

/* ------------------------------------------------------------------------
 * The cases
 * ------------------------------------------------------------------------ */

static void test_mrtr_two_rounds(void **state)
{
    fixture_t *f = *state;
    json_t *result = NULL;
    mcp_error_t err = {0};

    script = (elicit_script_t){"accept", 0, ""};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 2);
    /* The second question knows the first answer: the state came back. */
    assert_string_equal(script.message, "Save the survey of Ada?");
    assert_result_valid(result, "tools/call");
    assert_string_equal(first_text(result), "Saved the survey of Ada.");
    json_decref(result);

    /* Declined in the first round: the call ends there. */
    script = (elicit_script_t){"decline", 0, ""};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 1);
    assert_string_equal(first_text(result), "No name, no survey.");
    json_decref(result);
    script = (elicit_script_t){"accept", 0, ""};

    /* A client that cannot elicit is told which capability is missing. */
    mcp_client_t *plain = connect_client(f, false);
    assert_non_null(plain);
    assert_int_equal(mcp_client_call_tool(plain, "survey", NULL, NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32021);
    assert_null(result);
    mcp_client_free(plain);
    mcp_error_clear(&err);
}

/* How many reads of counter://value reached the server. */
static json_int_t server_reads(mcp_client_t *c)
{
    json_t *result = NULL;
    assert_int_equal(mcp_client_call_tool(c, "reads", NULL, NULL, &result, NULL), MCP_OK);
    json_int_t n = json_integer_value(
        json_object_get(json_object_get(result, "structuredContent"), "reads"));
    json_decref(result);
    return n;
}

/* The counter's text (a new string), read through the client's cache. */
static char *read_counter(mcp_client_t *c, bool bypass_cache)
{
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_read_resource(c, "counter://value",
                                              &(mcp_request_options_t){.bypass_cache =
                                                                           bypass_cache},
                                              &result, &err),
                     MCP_OK);
    assert_result_valid(result, "resources/read");
    char *text = strdup(json_string_value(
        json_object_get(json_array_get(json_object_get(result, "contents"), 0), "text")));
    json_decref(result);
    return text;
}

/* Calls bump: the counter's new text. */
static char *bump(mcp_client_t *c)
{
    json_t *result = NULL;
    assert_int_equal(mcp_client_call_tool(c, "bump", NULL, NULL, &result, NULL), MCP_OK);
    char *text = strdup(first_text(result));
    json_decref(result);
    return text;
}

static void test_cache_hits_and_invalidation(void **state)
{
    mcp_client_t *c = ((fixture_t *)*state)->c;
    json_int_t base = server_reads(c);

    /* Read twice: the second read is a cache hit (ttlMs 60000). */
    char *first = read_counter(c, false), *again = read_counter(c, false);
    assert_string_equal(again, first);
    assert_int_equal(server_reads(c), base + 1);
    free(again);

    /* bypass_cache asks the server. */
    free(read_counter(c, true));
    assert_int_equal(server_reads(c), base + 2);

    /* A change nobody listens for goes unseen while the entry is fresh. */
    free(bump(c));
    again = read_counter(c, false);
    assert_string_equal(again, first);
    assert_int_equal(server_reads(c), base + 2);
    free(again);

    /* Listening, the next change invalidates the entry. */
    events_t ev = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    const char *uris[] = {"counter://value"};
    mcp_subscription_t *sub = listen_to(
        c, &(mcp_listen_filter_t){.resource_uris = uris, .n_resource_uris = 1}, &ev, NULL);
    char *bumped = bump(c);
    assert_true(heard(&ev, &ev.updated));
    again = read_counter(c, false);
    assert_string_equal(again, bumped);
    assert_int_equal(server_reads(c), base + 3);
    mcp_subscription_close(sub);
    free(again);
    free(bumped);
    free(first);
}

static void test_tools_list_changed(void **state)
{
    mcp_client_t *c = ((fixture_t *)*state)->c;
    json_t *tools = NULL, *result = NULL, *honoured = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    size_t before = json_array_size(tools);
    json_decref(tools);

    events_t ev = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    mcp_subscription_t *sub =
        listen_to(c, &(mcp_listen_filter_t){.tools_list_changed = true}, &ev, &honoured);
    assert_true(json_is_true(json_object_get(honoured, "toolsListChanged")));
    json_decref(honoured);

    assert_int_equal(mcp_client_call_tool(c, "add_tool", NULL, NULL, &result, &err), MCP_OK);
    json_decref(result);
    assert_true(heard(&ev, &ev.tools_changed));
    /* The cached list was dropped: the new tool shows, and answers. */
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    assert_int_equal(json_array_size(tools), before + 1);
    const char *added = NULL;
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool) {
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (strncmp(name, "added_", 6) == 0)
            added = name;
    }
    assert_non_null(added);
    assert_int_equal(mcp_client_call_tool(c, added, NULL, NULL, &result, &err), MCP_OK);
    assert_string_equal(first_text(result), "added");
    json_decref(result);
    json_decref(tools);
    mcp_subscription_close(sub);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(test_mrtr_two_rounds),
        cmocka_unit_test(test_cache_hits_and_invalidation),
        cmocka_unit_test(test_tools_list_changed),
    };
    int failed = cmocka_run_group_tests_name("client_rounds_and_cache_stdio", cases,
                                             start_stdio, stop);
    return failed + cmocka_run_group_tests_name("client_rounds_and_cache_http", cases,
                                                start_http, stop);
}
