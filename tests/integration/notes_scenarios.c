/*
 * The client scenarios against examples/notes_server that do not depend on
 * the transport (see notes_scenarios.h). Each one takes the connected client
 * from *state.
 */
#define _GNU_SOURCE /* clock_gettime, nanosleep with -std=c11 */
#include "notes_scenarios.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/mcp.h"
#include "schema_check.h"

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Checks a result against the schema, as the server's response to `method`. */
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

static void assert_still_serving(mcp_client_t *c)
{
    json_t *args = json_pack("{s:s}", "text", "still here"), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_OK);
    assert_string_equal(first_text(result), "still here");
    json_decref(result);
    json_decref(args);
}

/* ------------------------------------------------------------------------
 * Elicitation answers for delete_note
 * ------------------------------------------------------------------------ */

typedef struct elicit_script {
    const char *action;
    int calls;
    char message[256];
} elicit_script_t;

static elicit_script_t script = {"accept", 0, ""};

static int elicit(void *user, const json_t *params, json_t **result_out)
{
    elicit_script_t *s = user;
    s->calls++;
    snprintf(s->message, sizeof s->message, "%s",
             json_string_value(json_object_get(params, "message")));
    if (strcmp(s->action, "accept") == 0)
        *result_out = json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1);
    else
        *result_out = json_pack("{s:s}", "action", s->action);
    return 0;
}

mcp_client_t *notes_client_new(void)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "integration", .version = "1.0", .log = mcp_log_stderr,
        .elicit = elicit, .elicit_user = &script}, &err);
    if (!c) {
        fprintf(stderr, "cannot make a client: %s\n", err.message);
        mcp_error_clear(&err);
    }
    return c;
}

/* ------------------------------------------------------------------------
 * Every call type
 * ------------------------------------------------------------------------ */

void test_identity_and_discover(void **state)
{
    mcp_client_t *c = *state;
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    assert_string_equal(mcp_client_protocol_version(c), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(c), "name")),
                        "notes-server");
    assert_non_null(json_object_get(mcp_client_server_capabilities(c), "tools"));
    assert_non_null(strstr(mcp_client_instructions(c), "notes"));

    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_discover(c, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "server/discover");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    json_decref(result);
}

void test_lists(void **state)
{
    mcp_client_t *c = *state;
    mcp_error_t err = {0};
    json_t *page = NULL, *all = NULL;

    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "tools/list");
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &all, &err), MCP_OK);
    assert_int_equal(json_array_size(all), json_array_size(json_object_get(page, "tools")));
    assert_true(json_array_size(all) >= 5);
    json_decref(page);
    json_decref(all);

    assert_int_equal(mcp_client_list_resources(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "resources/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_resources_all(c, NULL, &all, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "uri")),
                        "notes://index");
    json_decref(all);

    assert_int_equal(mcp_client_list_resource_templates(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "resources/templates/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_resource_templates_all(c, NULL, &all, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "uriTemplate")),
                        "note://{name}");
    json_decref(all);

    assert_int_equal(mcp_client_list_prompts(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "prompts/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_prompts_all(c, NULL, &all, &err), MCP_OK);
    assert_int_equal(json_array_size(all), 1);
    json_decref(all);
}

void test_calls(void **state)
{
    mcp_client_t *c = *state;
    mcp_error_t err = {0};
    json_t *result = NULL;

    json_t *args = json_pack("{s:s}", "text", "héllo\nworld");
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "tools/call");
    assert_string_equal(first_text(result), "héllo\nworld");
    json_decref(result);
    json_decref(args);

    args = json_pack("{s:i, s:i}", "a", 20, "b", 22);
    assert_int_equal(mcp_client_call_tool(c, "add", args, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "tools/call");
    assert_true(json_number_value(json_object_get(json_object_get(result, "structuredContent"),
                                                  "sum")) == 42.0);
    json_decref(result);
    json_decref(args);

    /* A tool failure is a successful call with isError. */
    args = json_pack("{s:s}", "a", "x");
    assert_int_equal(mcp_client_call_tool(c, "add", args, NULL, &result, &err), MCP_OK);
    assert_true(json_is_true(json_object_get(result, "isError")));
    json_decref(result);
    json_decref(args);

    /* An unknown tool is a JSON-RPC error. */
    assert_int_equal(mcp_client_call_tool(c, "nope", NULL, NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    assert_null(result);

    assert_int_equal(mcp_client_read_resource(c, "notes://index", NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "resources/read");
    json_decref(result);
    assert_int_equal(mcp_client_read_resource(c, "note://welcome", NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "resources/read");
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(result, "contents"), 0), "text")),
                           "memory"));
    json_decref(result);
    assert_int_equal(mcp_client_read_resource(c, "note://missing", NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);

    args = json_pack("{s:s}", "style", "brief");
    assert_int_equal(mcp_client_get_prompt(c, "summarize_notes", args, NULL, &result, &err),
                     MCP_OK);
    assert_result_valid(result, "prompts/get");
    json_decref(result);
    json_decref(args);

    json_t *ref = json_pack("{s:s, s:s}", "type", "ref/prompt", "name", "summarize_notes");
    assert_int_equal(mcp_client_complete(c, ref, "style", "b", NULL, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "completion/complete");
    json_t *values = json_object_get(json_object_get(result, "completion"), "values");
    assert_int_equal(json_array_size(values), 2); /* brief, bullet points */
    json_decref(result);
    json_decref(ref);

    /* The generic entry point. */
    assert_int_equal(mcp_client_request(c, "tools/call",
                                        json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments",
                                                  "text", "raw"),
                                        NULL, &result, &err),
                     MCP_OK);
    assert_string_equal(first_text(result), "raw");
    json_decref(result);
    assert_int_equal(mcp_client_request(c, "no/such", NULL, NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Progress, cancellation, timeouts
 * ------------------------------------------------------------------------ */

typedef struct progress_log {
    int count;
    double last, total;
} progress_log_t;

static void on_progress(void *user, double progress, double total, const char *message)
{
    progress_log_t *p = user;
    p->count++;
    p->last = progress;
    p->total = total;
}

void test_progress(void **state)
{
    mcp_client_t *c = *state;
    progress_log_t log = {0};
    json_t *args = json_pack("{s:i}", "seconds", 2), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.progress = on_progress,
                                                                   .progress_user = &log},
                                          &result, &err),
                     MCP_OK);
    /* 0/2, 1/2, 2/2, before the result (over HTTP, on the response's SSE stream). */
    assert_int_equal(log.count, 3);
    assert_true(log.last == 2.0 && log.total == 2.0);
    assert_result_valid(result, "tools/call");
    assert_non_null(strstr(first_text(result), "Lift-off"));
    json_decref(result);
    json_decref(args);
}

static void *trigger_later(void *arg)
{
    sleep_ms(300);
    mcp_cancel_trigger(arg);
    return NULL;
}

void test_cancel_from_another_thread(void **state)
{
    mcp_client_t *c = *state;
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    pthread_create(&th, NULL, trigger_later, cancel);
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    mcp_error_t err = {0};
    int64_t start_ms = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.cancel = cancel}, &result,
                                          &err),
                     MCP_ECANCELED);
    assert_true(now_ms() - start_ms < 2000);
    assert_null(result);
    pthread_join(th, NULL);
    assert_true(mcp_cancel_triggered(cancel));
    /* A triggered cancel fails the next call at once. */
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.cancel = cancel}, &result,
                                          &err),
                     MCP_ECANCELED);
    mcp_cancel_free(cancel);
    json_decref(args);
    assert_still_serving(c);
}

void test_timeout(void **state)
{
    mcp_client_t *c = *state;
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    mcp_error_t err = {0};
    int64_t start_ms = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.timeout_ms = 300}, &result,
                                          &err),
                     MCP_ETIMEDOUT);
    int64_t took = now_ms() - start_ms;
    assert_true(took >= 290 && took < 2000);
    json_decref(args);
    assert_still_serving(c);
}

/* ------------------------------------------------------------------------
 * MRTR, one round: delete_note asks for confirmation
 * ------------------------------------------------------------------------ */

void add_note(mcp_client_t *c, const char *name)
{
    json_t *args = json_pack("{s:s, s:s}", "name", name, "text", "to delete"), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "add_note", args, NULL, &result, &err), MCP_OK);
    json_decref(result);
    json_decref(args);
}

void test_mrtr_accept_and_decline(void **state)
{
    mcp_client_t *c = *state;
    add_note(c, "doomed");
    json_t *args = json_pack("{s:s}", "name", "doomed"), *result = NULL;
    mcp_error_t err = {0};

    script = (elicit_script_t){"decline", 0, ""};
    assert_int_equal(mcp_client_call_tool(c, "delete_note", args, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 1);
    assert_non_null(strstr(script.message, "doomed"));
    assert_non_null(strstr(first_text(result), "Kept"));
    json_decref(result);

    script = (elicit_script_t){"accept", 0, ""};
    assert_int_equal(mcp_client_call_tool(c, "delete_note", args, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 1);
    assert_result_valid(result, "tools/call");
    assert_non_null(strstr(first_text(result), "Deleted"));
    json_decref(result);
    json_decref(args);
}

/* ------------------------------------------------------------------------
 * Several threads at once
 * ------------------------------------------------------------------------ */

typedef struct worker {
    mcp_client_t *c;
    int n;
    int calls;
    int ok;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < w->calls; i++) {
        char text[64];
        snprintf(text, sizeof text, "thread %d call %d", w->n, i);
        json_t *args = json_pack("{s:s}", "text", text), *result = NULL;
        if (mcp_client_call_tool(w->c, "echo", args, NULL, &result, NULL) == MCP_OK &&
            strcmp(first_text(result), text) == 0)
            w->ok++;
        json_decref(result);
        json_decref(args);
    }
    return NULL;
}

void notes_echo_from_threads(mcp_client_t *c, int threads, int calls)
{
    enum { MAX_THREADS = 16 };
    assert_true(threads > 0 && threads <= MAX_THREADS);
    pthread_t th[MAX_THREADS];
    worker_t w[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){c, i, calls, 0};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, calls);
    }
}

void test_concurrent_calls(void **state)
{
    notes_echo_from_threads(*state, 8, 25);
}

/* ------------------------------------------------------------------------
 * subscriptions/listen
 * ------------------------------------------------------------------------ */

static void on_event(void *user, const char *method, const json_t *params)
{
    listen_events_t *e = user;
    if (e->reader) {
        /* A listen callback may make calls, over every transport. */
        json_t *r = NULL;
        int rc = mcp_client_read_resource(e->reader, "notes://index", NULL, &r, NULL);
        json_decref(r);
        pthread_mutex_lock(&e->lock);
        e->read_rc = rc;
        pthread_mutex_unlock(&e->lock);
    }
    pthread_mutex_lock(&e->lock);
    if (strcmp(method, "notifications/resources/updated") == 0) {
        e->updated++;
        snprintf(e->uri, sizeof e->uri, "%s", json_string_value(json_object_get(params, "uri")));
    }
    pthread_mutex_unlock(&e->lock);
}

static void on_end(void *user, int rc)
{
    listen_events_t *e = user;
    pthread_mutex_lock(&e->lock);
    e->ended++;
    e->end_rc = rc;
    pthread_mutex_unlock(&e->lock);
}

int wait_count(listen_events_t *events, const int *counter, int n, int timeout_ms)
{
    int seen = 0;
    for (int waited = 0;; waited += 10) {
        pthread_mutex_lock(&events->lock);
        seen = *counter;
        pthread_mutex_unlock(&events->lock);
        if (seen >= n || waited >= timeout_ms)
            return seen;
        sleep_ms(10);
    }
}

mcp_subscription_t *listen_to_index(mcp_client_t *c, listen_events_t *events, json_t **honoured)
{
    const char *uris[] = {"notes://index"};
    mcp_subscription_t *sub = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_listen(c, &(mcp_listen_filter_t){.resource_uris = uris, .n_resource_uris = 1},
                               on_event, events, &(mcp_listen_options_t){.on_end = on_end}, &sub,
                               honoured, &err);
    if (rc != MCP_OK)
        fail_msg("listen: %s", err.message);
    return sub;
}

static const char *index_text(mcp_client_t *c, json_t **keep)
{
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_read_resource(c, "notes://index", NULL, keep, &err), MCP_OK);
    return json_string_value(
        json_object_get(json_array_get(json_object_get(*keep, "contents"), 0), "text"));
}

void test_listen_invalidates_cache(void **state)
{
    mcp_client_t *c = *state;
    listen_events_t ev = LISTEN_EVENTS_INIT;
    ev.reader = c;
    json_t *honoured = NULL;
    mcp_subscription_t *sub = listen_to_index(c, &ev, &honoured);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(honoured, "resourceSubscriptions"), 0)),
                        "notes://index");
    json_decref(honoured);

    /* The index is cached (ttlMs 60000)... */
    json_t *before = NULL, *cached = NULL, *after = NULL;
    index_text(c, &before);
    assert_null(strstr(index_text(c, &cached), "listened"));
    json_decref(cached);
    add_note(c, "listened");
    assert_true(wait_count(&ev, &ev.updated, 1, 5000) >= 1);
    pthread_mutex_lock(&ev.lock);
    assert_string_equal(ev.uri, "notes://index");
    assert_int_equal(ev.read_rc, MCP_OK);
    pthread_mutex_unlock(&ev.lock);
    /* ...until the update invalidates it. */
    assert_non_null(strstr(index_text(c, &after), "listened"));
    json_decref(before);
    json_decref(after);
    mcp_subscription_close(sub);
    pthread_mutex_lock(&ev.lock);
    assert_int_equal(ev.ended, 0); /* not called after mcp_subscription_close */
    pthread_mutex_unlock(&ev.lock);
    assert_still_serving(c);
}
