/*
 * The life of a host's servers, with libmcp servers only
 * (servers/host_test_server, examples/notes_server --http):
 *
 *   - a server that cannot start fails with its error and is retried with
 *     a growing backoff, while the others serve;
 *   - two instances of one server: the same tool names kept apart, under
 *     any separator;
 *   - servers added and removed while the host runs; a call in flight
 *     survives the removal of its server;
 *   - an acquired client outlives a reconnect;
 *   - stdio servers run in the application's process group;
 *   - a callback's call that ends after its connection was retired frees
 *     the client elsewhere (not on the callback's thread, which would wait
 *     for itself), and its server process is stopped;
 *   - calls from many threads at once;
 *   - an HTTP server that goes away is noticed when a call fails, and
 *     reconnected once it is back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host_harness.h"
#include "http_child.h"

static mcp_host_t *new_host(recorder_t *rec, const char *separator)
{
    recorder_init(rec);
    mcp_error_t err = {0};
    mcp_host_t *h = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "libmcp-host-test", .version = "1.0", .timeout_ms = 20000},
        .callbacks = {.changed = on_changed, .server_state = on_server_state, .user = rec},
        .separator = separator, .retry_initial_ms = 50, .retry_max_ms = 400}, &err);
    if (!h)
        fail_msg("%s", err.message);
    return h;
}

static void add_test_server(mcp_host_t *h, const char *name)
{
    char *argv[] = {HOST_TEST_SERVER, (char *)name, NULL};
    mcp_error_t err = {0};
    if (mcp_host_add_server(h, &(mcp_server_config_t){.name = (char *)name, .argv = argv},
                            &err) != MCP_OK)
        fail_msg("%s", err.message);
}

static void test_failing_server_retried(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    char *argv[] = {"/nonexistent/libmcp-server", NULL};
    assert_int_equal(mcp_host_add_server(h, &(mcp_server_config_t){.name = "broken", .argv = argv},
                                         NULL), MCP_OK);
    add_test_server(h, "good");
    assert_int_equal(mcp_host_connect(h, -1), 1);
    assert_true(has_state(h, "good", MCP_HOST_READY));

    /* Told, with the reason, and again at each retry. */
    mcp_host_server_state_t st;
    char *why = NULL;
    assert_int_equal(mcp_host_server_state(h, "broken", &st, &why), MCP_OK);
    if (st == MCP_HOST_FAILED) {
        assert_non_null(why);
        assert_non_null(strstr(why, "/nonexistent/libmcp-server"));
    }
    free(why);
    /* The state callback runs on the server's supervisor thread: the
     * first failure may be recorded a moment after connect returned. */
    char last[MCP_ERROR_MESSAGE_MAX];
    WAIT_UNTIL(strstr(last_error(&rec, "broken", last, sizeof last), "/nonexistent/libmcp-server"),
               5000);
    WAIT_UNTIL(state_count(&rec, "broken", MCP_HOST_FAILED) >= 4, 5000);
    assert_true(state_count(&rec, "broken", MCP_HOST_CONNECTING) >= 3);
    assert_int_equal(state_count(&rec, "broken", MCP_HOST_READY), 0);

    /* The backoff grows (50, 100, 200, 400, 400 ms): not a tight loop. */
    int before = state_count(&rec, "broken", MCP_HOST_FAILED);
    sleep_ms(1000);
    int during = state_count(&rec, "broken", MCP_HOST_FAILED) - before;
    assert_true(during >= 1 && during <= 4);

    /* Only the good server is in the views, and it answers. */
    json_t *tools = mcp_host_tools(h);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
        assert_string_equal(json_string_value(json_object_get(json_object_get(t, "_meta"),
                                                              "io.libmcp/server")),
                            "good");
    assert_true(json_array_size(tools) > 0);
    json_decref(tools);
    ASSERT_CALL_TEXT(h, "good__echo", "{\"text\": \"x\"}", "good: x");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_host_call_tool(h, "broken__echo", NULL, NULL, &r, &err), MCP_ESTATE);
    mcp_error_clear(&err);
    mcp_host_free(h);
    recorder_clear(&rec);
}

/* The client options are the host's own copies, strings included: a
 * caller's buffer may be reused as soon as mcp_host_new returns. */
static void test_client_options_copied(void **state)
{
    recorder_t rec;
    recorder_init(&rec);
    char *extensions = strdup("{\"example.com/ext\":{}}");
    char *title = strdup("Host test");
    mcp_error_t err = {0};
    mcp_host_t *h = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "libmcp-host-test", .version = "1.0", .title = title,
                   .extensions = extensions, .timeout_ms = 20000},
        .callbacks = {.changed = on_changed, .server_state = on_server_state, .user = &rec}},
        &err);
    if (!h)
        fail_msg("%s", err.message);
    memset(extensions, '{', strlen(extensions));
    memset(title, 0xff, strlen(title));
    free(extensions);
    free(title);
    add_test_server(h, "a");
    assert_int_equal(mcp_host_connect(h, -1), 1);
    ASSERT_CALL_TEXT(h, "a__echo", "{\"text\": \"1\"}", "a: 1");
    mcp_host_free(h);
    recorder_clear(&rec);
}

static void test_two_instances(void **state)
{
    static const char *const separators[] = {NULL, ".", "::"};
    for (size_t k = 0; k < 3; k++) {
        recorder_t rec;
        mcp_host_t *h = new_host(&rec, separators[k]);
        const char *sep = separators[k] ? separators[k] : "__";
        add_test_server(h, "a");
        add_test_server(h, "b");
        assert_int_equal(mcp_host_connect(h, -1), 2);
        char a_echo[16], b_echo[16];
        snprintf(a_echo, sizeof a_echo, "a%secho", sep);
        snprintf(b_echo, sizeof b_echo, "b%secho", sep);
        ASSERT_CALL_TEXT(h, a_echo, "{\"text\": \"1\"}", "a: 1");
        ASSERT_CALL_TEXT(h, b_echo, "{\"text\": \"2\"}", "b: 2");
        char *server, *tool;
        assert_int_equal(mcp_host_resolve_tool(h, b_echo, &server, &tool), MCP_OK);
        assert_string_equal(server, "b");
        assert_string_equal(tool, "echo");
        free(server);
        free(tool);
        /* Prompts are named the same way. */
        char greet[16];
        snprintf(greet, sizeof greet, "b%sgreet", sep);
        json_t *args = json_pack("{s:s}", "who", "x"), *r = NULL;
        assert_int_equal(mcp_host_get_prompt(h, greet, args, NULL, &r, NULL), MCP_OK);
        assert_string_equal(first_text(r), "b greets x");
        json_decref(args);
        json_decref(r);
        mcp_host_free(h);
        recorder_clear(&rec);
    }
}

static void test_tool_names_with_the_separator(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    add_test_server(h, "a");
    add_test_server(h, "b");
    assert_int_equal(mcp_host_connect(h, -1), 2);
    ASSERT_CALL_TEXT(h, "a__add_tool", "{\"name\": \"x__y\"}", "added x__y");
    WAIT_UNTIL(lists_name(mcp_host_tools(h), "name", "a__x__y"), 10000);
    ASSERT_CALL_TEXT(h, "a__x__y", NULL, "x__y of a");
    char *server, *tool;
    assert_int_equal(mcp_host_resolve_tool(h, "a__x__y", &server, &tool), MCP_OK);
    assert_string_equal(server, "a");
    assert_string_equal(tool, "x__y");
    free(server);
    free(tool);
    assert_int_equal(mcp_host_resolve_tool(h, "b__x__y", &server, &tool), MCP_ENOTFOUND);
    mcp_host_free(h);
    recorder_clear(&rec);
}

typedef struct slow_call {
    mcp_host_t *host;
    int rc;
    char text[64];
} slow_call_t;

static void *call_slowly(void *arg)
{
    slow_call_t *c = arg;
    json_t *args = json_pack("{s:i}", "ms", 500), *r = NULL;
    c->rc = mcp_host_call_tool(c->host, "c__sleep", args, NULL, &r, NULL);
    snprintf(c->text, sizeof c->text, "%s", first_text(r));
    json_decref(args);
    json_decref(r);
    return NULL;
}

static void test_add_and_remove_while_running(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    add_test_server(h, "a");
    assert_int_equal(mcp_host_connect(h, -1), 1);

    /* Added to a running host: it connects on its own. */
    int changed = changed_count(&rec);
    add_test_server(h, "c");
    WAIT_UNTIL(has_state(h, "c", MCP_HOST_READY), 10000);
    WAIT_UNTIL(changed_count(&rec) == changed + 1, 2000);
    assert_true(lists_name(mcp_host_tools(h), "name", "c__echo"));
    ASSERT_CALL_TEXT(h, "c__echo", "{\"text\": \"new\"}", "c: new");

    /* Removed with a call in flight: the call still ends well; the views
     * drop the server at once; no `changed` for a removal. */
    slow_call_t slow = {.host = h};
    pthread_t t;
    pthread_create(&t, NULL, call_slowly, &slow);
    sleep_ms(150);
    changed = changed_count(&rec);
    assert_int_equal(mcp_host_remove_server(h, "c"), MCP_OK);
    assert_false(lists_name(mcp_host_tools(h), "name", "c__echo"));
    assert_true(lists_name(mcp_host_tools(h), "name", "a__echo"));
    pthread_join(t, NULL);
    assert_int_equal(slow.rc, MCP_OK);
    assert_string_equal(slow.text, "c slept");
    assert_int_equal(changed_count(&rec), changed);
    mcp_host_server_state_t st;
    assert_int_equal(mcp_host_server_state(h, "c", &st, NULL), MCP_ENOTFOUND);
    ASSERT_CALL_TEXT(h, "a__echo", "{\"text\": \"on\"}", "a: on");
    mcp_host_free(h);
    recorder_clear(&rec);
}

static void test_acquired_client_outlives_reconnect(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    add_test_server(h, "a");
    assert_int_equal(mcp_host_connect(h, -1), 1);
    mcp_client_t *old = mcp_host_client_acquire(h, "a");
    assert_non_null(old);
    char *text = call_text(h, "a__pid", NULL);
    pid_t pid = (pid_t)atol(text);
    free(text);
    assert_true(pid > 1); /* never kill(0) or kill(-1) */
    assert_int_equal(kill(pid, SIGKILL), 0);
    WAIT_UNTIL(state_count(&rec, "a", MCP_HOST_READY) == 2, 10000);

    /* The old client is still valid: its calls fail, they do not crash. */
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(old, "echo", NULL, NULL, &r, &err), MCP_ECLOSED);
    mcp_client_t *fresh = mcp_host_client_acquire(h, "a");
    assert_non_null(fresh);
    assert_ptr_not_equal(fresh, old);
    json_t *args = json_pack("{s:s}", "text", "direct");
    assert_int_equal(mcp_client_call_tool(fresh, "echo", args, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "a: direct");
    json_decref(r);
    json_decref(args);
    mcp_host_client_release(h, old);
    mcp_host_client_release(h, fresh);
    /* One still held when the host goes: freed with it. */
    assert_non_null(mcp_host_client_acquire(h, "a"));
    mcp_error_clear(&err);
    mcp_host_free(h);
    recorder_clear(&rec);
}

/* ------------------------------------------------------------------------
 * A call made from a callback outlives its connection
 * ------------------------------------------------------------------------ */

/* What the sampling callback of the test below did. */
typedef struct reentry {
    mcp_host_t *host;
    pthread_mutex_t lock;
    bool entered;    /* it is about to call the server that asked */
    bool returned;   /* that call returned */
    int rc;
} reentry_t;

static bool reentry_flag(reentry_t *r, const bool *flag)
{
    pthread_mutex_lock(&r->lock);
    bool set = *flag;
    pthread_mutex_unlock(&r->lock);
    return set;
}

/* Calls the server that asks, as a sampling callback may (host.h forbids
 * only remove and free there). The legacy server reads nothing but the
 * sampling answer meanwhile: the call runs to its timeout, long enough for
 * the test to retire the connection under it (the removal waits about a
 * second for the supervisor's ping, and a reconnect). */
static int sample_then_call(void *user, const char *server, const json_t *params,
                            json_t **result_out)
{
    (void)params;
    reentry_t *r = user;
    pthread_mutex_lock(&r->lock);
    r->entered = true;
    pthread_mutex_unlock(&r->lock);
    char name[64];
    snprintf(name, sizeof name, "%s__echo", server);
    json_t *res = NULL;
    int rc = mcp_host_call_tool(r->host, name, NULL,
                                &(mcp_request_options_t){.timeout_ms = 4000}, &res, NULL);
    json_decref(res);
    pthread_mutex_lock(&r->lock);
    r->returned = true;
    r->rc = rc;
    pthread_mutex_unlock(&r->lock);
    *result_out = json_pack("{s:s, s:{s:s, s:s}, s:s}", "role", "assistant", "content", "type",
                            "text", "text", "sampled", "model", "test-model");
    return 0;
}

static bool process_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/*
 * The legacy server asks for a sample during x__ask; the callback calls
 * x__echo. The outer call gives up first, and the server is removed: the
 * callback's call holds the last reference of the retired connection.
 * Dropping it must not free the client on the callback's own thread (the
 * legacy client waits there for its callbacks to end: it would wait for
 * itself, the server process left running). With `free_at_once` the host
 * is freed while the callback is still ending, racing the reaper.
 */
static void callback_call_outlives_connection(bool free_at_once)
{
    reentry_t re = {0};
    pthread_mutex_init(&re.lock, NULL);
    mcp_error_t err = {0};
    /* A short client timeout: the ping that the outer call's timeout
     * prompts fails soon (the server reads nothing else while it waits
     * for the sample), so the connection is also retired as lost. */
    mcp_host_t *h = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "libmcp-host-test", .version = "1.0", .timeout_ms = 1000},
        .callbacks = {.sample = sample_then_call, .user = &re},
        .retry_initial_ms = 50, .retry_max_ms = 400}, &err);
    if (!h)
        fail_msg("%s", err.message);
    re.host = h;
    char *argv[] = {LEGACY_STDIO_SERVER, "error", NULL};
    assert_int_equal(mcp_host_add_server(h, &(mcp_server_config_t){
        .name = "x", .argv = argv, .era = MCP_CLIENT_ERA_LEGACY}, &err), MCP_OK);
    assert_int_equal(mcp_host_connect(h, -1), 1);
    char *state = call_text(h, "x__state", NULL);
    pid_t pid = (pid_t)atol(state);
    free(state);
    assert_true(pid > 1);

    json_t *res = NULL;
    assert_int_equal(mcp_host_call_tool(h, "x__ask", NULL,
                                        &(mcp_request_options_t){.timeout_ms = 200}, &res,
                                        &err),
                     MCP_ETIMEDOUT);
    json_decref(res);
    WAIT_UNTIL(reentry_flag(&re, &re.entered), 5000);
    sleep_ms(100); /* the callback's call is on its way */
    assert_int_equal(mcp_host_remove_server(h, "x"), MCP_OK);
    assert_false(reentry_flag(&re, &re.returned)); /* still waiting for the server */
    assert_true(kill(pid, 0) == 0);                /* kept by that call */

    WAIT_UNTIL(reentry_flag(&re, &re.returned), 10000);
    assert_int_equal(re.rc, MCP_ETIMEDOUT);
    if (!free_at_once)
        WAIT_UNTIL(process_gone(pid), 10000); /* freed without waiting for the host */
    mcp_host_free(h);
    assert_true(process_gone(pid));
    pthread_mutex_destroy(&re.lock);
    mcp_error_clear(&err);
}

static void test_callback_call_outlives_connection(void **state)
{
    callback_call_outlives_connection(false);
}

static void test_callback_call_outlives_connection_host_freed(void **state)
{
    callback_call_outlives_connection(true);
}

/* host.h: stdio servers stay in the application's process group, so that
 * a terminal's Ctrl-C reaches them (and what they started) with the
 * application. A change to that is a change of the documented contract. */
static void test_stdio_server_in_our_process_group(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    add_test_server(h, "a");
    assert_int_equal(mcp_host_connect(h, -1), 1);
    char *text = call_text(h, "a__pid", NULL);
    pid_t pid = (pid_t)atol(text);
    free(text);
    assert_true(pid > 1);
    assert_int_equal(getpgid(pid), getpgrp());
    mcp_host_free(h);
    recorder_clear(&rec);
}

typedef struct worker {
    mcp_host_t *host;
    int index;
    int good;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 40; i++) {
        const char *server = (w->index + i) % 2 ? "a" : "b";
        char name[16], text[32], expect[48];
        snprintf(name, sizeof name, "%s__echo", server);
        snprintf(text, sizeof text, "%d-%d", w->index, i);
        snprintf(expect, sizeof expect, "%s: %s", server, text);
        json_t *args = json_pack("{s:s}", "text", text), *r = NULL;
        if (mcp_host_call_tool(w->host, name, args, NULL, &r, NULL) == MCP_OK &&
            strcmp(first_text(r), expect) == 0)
            w->good++;
        json_t *tools = mcp_host_tools(w->host);
        json_decref(tools);
        json_decref(args);
        json_decref(r);
    }
    return NULL;
}

static void test_many_threads(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    add_test_server(h, "a");
    add_test_server(h, "b");
    assert_int_equal(mcp_host_connect(h, -1), 2);
    worker_t workers[6];
    pthread_t threads[6];
    for (int i = 0; i < 6; i++) {
        workers[i] = (worker_t){.host = h, .index = i};
        pthread_create(&threads[i], NULL, work, &workers[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].good, 40);
    }
    mcp_host_free(h);
    recorder_clear(&rec);
}

/* ------------------------------------------------------------------------
 * An HTTP server that goes away and comes back
 * ------------------------------------------------------------------------ */

/* notes_server --http [PORT]; its URL in web->url. */
static void start_web(http_child_t *web, const char *port)
{
    if (http_child_start(web, (const char *const[]){NOTES_SERVER, "--http", port, NULL},
                         10000) != 0)
        fail_msg("notes_server --http did not start");
}

static void test_http_server_away_and_back(void **state)
{
    recorder_t rec;
    mcp_host_t *h = new_host(&rec, NULL);
    http_child_t web;
    start_web(&web, NULL);
    char url[256], port[16];
    snprintf(url, sizeof url, "%s", web.url);
    assert_int_equal(sscanf(url, "http://127.0.0.1:%15[0-9]", port), 1);
    assert_int_equal(mcp_host_add_server(h, &(mcp_server_config_t){.name = "web", .url = url},
                                         NULL), MCP_OK);
    assert_int_equal(mcp_host_connect(h, -1), 1);
    ASSERT_CALL_TEXT(h, "web__echo", "{\"text\": \"up\"}", "up");

    /* Gone: the failed call makes the host check, and it is FAILED. */
    assert_int_equal(http_child_stop(&web, 10000), 0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    json_t *args = json_pack("{s:s}", "text", "down");
    assert_int_not_equal(mcp_host_call_tool(h, "web__echo", args, NULL, &r, &err), MCP_OK);
    WAIT_UNTIL(state_count(&rec, "web", MCP_HOST_FAILED) >= 1, 15000);
    assert_false(lists_name(mcp_host_tools(h), "name", "web__echo"));

    /* Back on the same port: reconnected after the backoff. */
    start_web(&web, port);
    assert_string_equal(web.url, url);
    WAIT_UNTIL(has_state(h, "web", MCP_HOST_READY), 15000);
    ASSERT_CALL_TEXT(h, "web__echo", "{\"text\": \"again\"}", "again");
    json_decref(args);
    mcp_error_clear(&err);
    mcp_host_free(h);
    assert_int_equal(http_child_stop(&web, 10000), 0);
    recorder_clear(&rec);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failing_server_retried),
        cmocka_unit_test(test_client_options_copied),
        cmocka_unit_test(test_two_instances),
        cmocka_unit_test(test_tool_names_with_the_separator),
        cmocka_unit_test(test_add_and_remove_while_running),
        cmocka_unit_test(test_acquired_client_outlives_reconnect),
        cmocka_unit_test(test_callback_call_outlives_connection),
        cmocka_unit_test(test_callback_call_outlives_connection_host_freed),
        cmocka_unit_test(test_stdio_server_in_our_process_group),
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_http_server_away_and_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
