/*
 * A legacy stdio server killed during a session, with
 * mcp_stdio_target_t.restart: the transport starts a new process, and the
 * client initializes it again (its calls work), tells it the log level the
 * old one had, and subscribes again to what the open subscriptions want
 * (their updates keep coming). The server is
 * tests/integration/servers/legacy_stdio_server, whose hidden tool
 * "state" answers "<pid> <log level>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"

/* How long the test waits for the restart and the renewed subscription. */
#define RESTART_WAIT_S 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static int updates;

static void on_event(void *user, const char *method, const json_t *params)
{
    (void)user;
    pthread_mutex_lock(&lock);
    if (strcmp(method, "notifications/resources/updated") == 0 &&
        strcmp(json_string_value(json_object_get(params, "uri")), "note://a") == 0)
        updates++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

/* Waits until `n` updates arrived; false on timeout. */
static bool await_updates(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += RESTART_WAIT_S;
    pthread_mutex_lock(&lock);
    int rc = 0;
    while (updates < n && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cond, &lock, &until);
    bool reached = updates >= n;
    pthread_mutex_unlock(&lock);
    return reached;
}

/* The server's process id and the log level it was told. */
static long server_state(mcp_client_t *c, char *level, size_t size)
{
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "state", NULL, NULL, &result, &err), MCP_OK);
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    assert_non_null(text);
    char *end;
    long pid = strtol(text, &end, 10);
    snprintf(level, size, "%s", *end == ' ' ? end + 1 : "");
    json_decref(result);
    return pid;
}

static void test_restarted_server_is_initialized_again(void **state)
{
    (void)state;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "restart-test", .version = "1", .era = MCP_CLIENT_ERA_LEGACY,
        .timeout_ms = 10000, .log_level = "info"}, NULL);
    assert_non_null(c);
    mcp_error_t err = {0};
    /* "error": before initialize it answers every request -32601, so a
     * restarted process that was not initialized fails the calls. */
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
        .argv = (const char *const[]){LEGACY_STDIO_SERVER, "error", NULL},
        .restart = true}, &err), MCP_OK);

    const char *uris[] = {"note://a"};
    mcp_subscription_t *sub = NULL;
    assert_int_equal(mcp_client_listen(c, &(mcp_listen_filter_t){.resource_uris = uris,
                                                                 .n_resource_uris = 1},
                                       on_event, NULL, NULL, &sub, NULL, &err), MCP_OK);
    assert_true(await_updates(1)); /* the server sends one on subscribe */

    char level[16];
    long old_pid = server_state(c, level, sizeof level);
    assert_string_equal(level, "info");
    assert_int_equal(kill((pid_t)old_pid, SIGKILL), 0);

    /* The new process is subscribed again: its update arrives. */
    assert_true(await_updates(2));
    long new_pid = server_state(c, level, sizeof level);
    assert_true(new_pid != old_pid);
    assert_string_equal(level, "info");
    json_t *args = json_pack("{s:s}", "message", "after the restart"), *result = NULL;
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result, "content"), 0), "text")),
                        "after the restart");
    json_decref(result);
    json_decref(args);

    mcp_subscription_close(sub);
    mcp_client_free(c);
}

int main(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cond, &attr);
    pthread_condattr_destroy(&attr);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restarted_server_is_initialized_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
