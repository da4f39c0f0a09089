/*
 * The client's trace option (mcp_client_options_t.trace): every message on
 * the wire is reported, in each direction, over stdio (notes_server) and
 * over Streamable HTTP (libmcp's HTTP server, in process) -- requests,
 * responses, progress notifications and an HTTP answer that carried no
 * message.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"

/* What the trace saw: [{"sent": bool, "text": "..."}]. */
typedef struct trace_log {
    pthread_mutex_t lock;
    json_t *entries;
} trace_log_t;

static void record(void *user, mcp_trace_direction_t direction, const char *text, size_t len)
{
    trace_log_t *log = user;
    assert_int_equal(strlen(text), len); /* NUL-terminated at len */
    pthread_mutex_lock(&log->lock);
    json_array_append_new(log->entries,
                          json_pack("{s:b, s:s%}", "sent", direction == MCP_TRACE_SENT, "text",
                                    text, len));
    pthread_mutex_unlock(&log->lock);
}

static void log_init(trace_log_t *log)
{
    pthread_mutex_init(&log->lock, NULL);
    log->entries = json_array();
}

static void log_clear(trace_log_t *log)
{
    json_decref(log->entries);
    pthread_mutex_destroy(&log->lock);
}

/* The traced messages in one direction, parsed (a new array). Every one
 * must be JSON unless `allow_text`. */
static json_t *messages(trace_log_t *log, bool sent, bool allow_text)
{
    json_t *out = json_array();
    pthread_mutex_lock(&log->lock);
    size_t i;
    json_t *e;
    json_array_foreach(log->entries, i, e) {
        if (json_is_true(json_object_get(e, "sent")) != sent)
            continue;
        const char *text = json_string_value(json_object_get(e, "text"));
        json_t *msg = json_loads(text, 0, NULL);
        if (!msg && !allow_text)
            fail_msg("traced text is not a message: %s", text);
        json_array_append_new(out, msg ? msg : json_string(text));
    }
    pthread_mutex_unlock(&log->lock);
    return out;
}

/* The index of the first message with `method` (or, with method NULL, the
 * response with `id`), or -1. */
static int find(const json_t *list, const char *method, json_int_t id)
{
    size_t i;
    json_t *m;
    json_array_foreach(list, i, m) {
        const char *has = json_string_value(json_object_get(m, "method"));
        if (method && has && strcmp(has, method) == 0)
            return (int)i;
        if (!method && !has && json_integer_value(json_object_get(m, "id")) == id &&
            json_object_get(m, "result"))
            return (int)i;
    }
    return -1;
}

static mcp_client_t *traced_client(trace_log_t *log)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "trace-test", .version = "1.0", .trace = record, .trace_user = log}, &err);
    assert_non_null(c);
    return c;
}

/* Over stdio: the lines as written and read. */
static void test_stdio(void **state)
{
    trace_log_t log;
    log_init(&log);
    mcp_client_t *c = traced_client(&log);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){MCP_NOTES_SERVER, NULL}}, &err),
                     MCP_OK);
    json_t *args = json_pack("{s:i}", "seconds", 1), *result = NULL;
    assert_int_equal(mcp_client_call_tool(c, "countdown", args, NULL, &result, &err), MCP_OK);
    json_decref(args);
    json_decref(result);
    mcp_client_free(c);

    json_t *sent = messages(&log, true, false), *received = messages(&log, false, false);
    int discover = find(sent, "server/discover", 0);
    int call = find(sent, "tools/call", 0);
    assert_int_equal(discover, 0); /* the first thing on the wire */
    assert_true(call > discover);
    json_int_t call_id = json_integer_value(json_object_get(json_array_get(sent, (size_t)call), "id"));
    assert_true(find(received, NULL, 1) >= 0);       /* the DiscoverResult */
    assert_true(find(received, NULL, call_id) >= 0); /* the CallToolResult */
    json_decref(sent);
    json_decref(received);
    log_clear(&log);
}

/* ------------------------------------------------------------------------
 * Over HTTP
 * ------------------------------------------------------------------------ */

static int steps(mcp_call_t *call, void *user)
{
    for (int i = 1; i <= 2; i++)
        mcp_call_progress(call, i, 2, "step");
    return mcp_call_add_text(call, "done");
}

static void progress_seen(void *user, double progress, double total, const char *message)
{
    ++*(int *)user;
}

static void test_http(void **state)
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "t", .version = "1"}, &err);
    assert_non_null(srv);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "steps", .handler = steps},
                                         &err),
                     MCP_OK);
    mcp_http_server_t *http = NULL;
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){0}, &http, &err), MCP_OK);
    char url[64], wrong[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(http));
    snprintf(wrong, sizeof wrong, "http://127.0.0.1:%u/nothing-here",
             (unsigned)mcp_http_server_port(http));

    trace_log_t log;
    log_init(&log);
    mcp_client_t *c = traced_client(&log);
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err), MCP_OK);
    int progressed = 0;
    json_t *result = NULL;
    assert_int_equal(mcp_client_call_tool(c, "steps", NULL, &(mcp_request_options_t){
                         .progress = progress_seen, .progress_user = &progressed}, &result, &err),
                     MCP_OK);
    json_decref(result);
    mcp_client_free(c);
    assert_int_equal(progressed, 2);

    json_t *sent = messages(&log, true, false), *received = messages(&log, false, false);
    assert_int_equal(find(sent, "server/discover", 0), 0);
    int call = find(sent, "tools/call", 0);
    assert_true(call > 0);
    json_int_t call_id = json_integer_value(json_object_get(json_array_get(sent, (size_t)call), "id"));
    int first_progress = find(received, "notifications/progress", 0);
    int answer = find(received, NULL, call_id);
    assert_true(first_progress >= 0);
    assert_true(answer > first_progress); /* in the order of the stream */
    json_decref(sent);
    json_decref(received);
    log_clear(&log);

    /* A path with no endpoint: the answer is an HTTP status, described. */
    log_init(&log);
    c = traced_client(&log);
    assert_int_not_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = wrong}, &err),
                         MCP_OK);
    mcp_error_clear(&err);
    mcp_client_free(c);
    received = messages(&log, false, true);
    assert_true(json_array_size(received) >= 1);
    const char *described = json_string_value(json_array_get(received, 0));
    assert_non_null(described);
    assert_memory_equal(described, "HTTP 404", 8);
    json_decref(received);
    log_clear(&log);

    mcp_http_server_stop(http);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stdio),
        cmocka_unit_test(test_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
