/*
 * The client against examples/notes_server over stdio: the scenarios every
 * transport shares (notes_scenarios.h), and the server process: env, cwd,
 * stderr, the server exiting under a call, restart, a server that will not
 * start, a log message before the first request.
 */
#define _GNU_SOURCE /* mkdtemp, kill with -std=c11 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "notes_scenarios.h"

#ifndef MCP_NOTES_SERVER
#error "MCP_NOTES_SERVER must name the notes_server binary"
#endif

/* A client made by notes_client_new() running argv, with the rest of the
 * target from `extra` (may be NULL); NULL, after saying why, if it fails. */
static mcp_client_t *connect_to(const char *const *argv, const mcp_stdio_target_t *extra)
{
    mcp_client_t *c = notes_client_new();
    mcp_stdio_target_t target = extra ? *extra : (mcp_stdio_target_t){0};
    target.argv = argv;
    mcp_error_t err = {0};
    if (!c || mcp_client_connect_stdio(c, &target, &err) != MCP_OK) {
        fprintf(stderr, "cannot run %s: %s\n", argv[0], err.message);
        mcp_error_clear(&err);
        mcp_client_free(c);
        return NULL;
    }
    return c;
}

static const char *const notes_argv[] = {MCP_NOTES_SERVER, NULL};

/* The client owns the server process: freeing it stops the server. */
static int setup(void **state)
{
    *state = connect_to(notes_argv, NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    mcp_client_free(*state);
    return 0;
}

/* ------------------------------------------------------------------------
 * The server process: env, cwd, stderr, exit under a call, restart
 * ------------------------------------------------------------------------ */

typedef struct lines {
    pthread_mutex_t lock;
    char seen[512];
} lines_t;

static void on_stderr(void *user, const char *line)
{
    lines_t *l = user;
    pthread_mutex_lock(&l->lock);
    if (strlen(l->seen) + strlen(line) + 2 < sizeof l->seen) {
        strcat(l->seen, line);
        strcat(l->seen, "|");
    }
    pthread_mutex_unlock(&l->lock);
}

/* A shell wrapper writes its pid to $PIDFILE (relative to the cwd it was
 * given), says hello on stderr, then becomes notes_server. */
static const char *const wrapper_argv[] = {
    "sh", "-c", "echo $$ > \"$PIDFILE\"; echo \"hello from $GREETING\" >&2; exec \"$0\"",
    MCP_NOTES_SERVER, NULL};

static pid_t read_pid(const char *path)
{
    pid_t pid = 0;
    for (int i = 0; i < 200 && pid == 0; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            long v = 0;
            if (fscanf(f, "%ld", &v) == 1)
                pid = (pid_t)v;
            fclose(f);
        }
        if (pid == 0)
            sleep_ms(10);
    }
    return pid;
}

static void *kill_later(void *arg)
{
    sleep_ms(300);
    kill(*(pid_t *)arg, SIGKILL);
    return NULL;
}

static void test_server_process(void **state)
{
    char dir[] = "/tmp/mcp-client-stdio-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char pidfile[600];
    snprintf(pidfile, sizeof pidfile, "%s/server.pid", dir);
    lines_t lines = {PTHREAD_MUTEX_INITIALIZER, ""};
    const char *env[] = {"PIDFILE=server.pid", "GREETING=the test", NULL};
    mcp_client_t *c = connect_to(wrapper_argv, &(mcp_stdio_target_t){
        .env = env, .cwd = dir, .on_stderr = on_stderr, .stderr_user = &lines, .restart = true});
    assert_non_null(c);

    pid_t pid = read_pid(pidfile);
    assert_true(pid > 0);
    for (int i = 0; i < 200 && !strstr(lines.seen, "hello from the test"); i++)
        sleep_ms(10);
    pthread_mutex_lock(&lines.lock);
    assert_non_null(strstr(lines.seen, "hello from the test|"));
    pthread_mutex_unlock(&lines.lock);

    /* A listen stream that must survive the restart. */
    listen_events_t ev = LISTEN_EVENTS_INIT;
    mcp_subscription_t *sub = listen_to_index(c, &ev, NULL);

    /* The server dies under a call: the call fails with MCP_ECLOSED. */
    unlink(pidfile);
    pthread_t th;
    pthread_create(&th, NULL, kill_later, &pid);
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    mcp_error_t err = {0};
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args, NULL, &result, &err), MCP_ECLOSED);
    assert_true(now_ms() - start < 5000);
    pthread_join(th, NULL);
    json_decref(args);

    /* ...and comes back: new calls work, and the listen stream re-opens. */
    pid_t again = read_pid(pidfile);
    assert_true(again > 0 && again != pid);
    int ok = MCP_ECLOSED;
    for (int i = 0; i < 100 && ok != MCP_OK; i++) {
        json_t *a = json_pack("{s:s}", "text", "back"), *r = NULL;
        ok = mcp_client_call_tool(c, "echo", a, NULL, &r, NULL);
        json_decref(a);
        json_decref(r);
        if (ok != MCP_OK)
            sleep_ms(20);
    }
    assert_int_equal(ok, MCP_OK);
    int updated = 0;
    for (int i = 0; i < 15 && updated == 0; i++) {
        add_note(c, "after-restart");
        updated = wait_count(&ev, &ev.updated, 1, 200);
    }
    assert_true(updated >= 1);
    pthread_mutex_lock(&ev.lock);
    assert_int_equal(ev.ended, 0); /* a restart does not end the subscription */
    pthread_mutex_unlock(&ev.lock);
    mcp_subscription_close(sub);
    mcp_error_clear(&err);

    mcp_client_free(c); /* stops the second server */
    unlink(pidfile);
    rmdir(dir);
}

static void test_server_that_will_not_start(void **state)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"/nonexistent/server", NULL}}, &err),
                     MCP_EIO);
    assert_non_null(strstr(err.message, "nonexistent"));
    /* A server that exits at once: connecting fails cleanly. */
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"true", NULL}}, &err),
                     MCP_ECLOSED);
    mcp_error_clear(&err);
    mcp_client_free(c);
}

/* A log message the server writes as it starts, before the client sent
 * anything, reaches on_log: the transport's reader thread may read it
 * before connect has even begun. */
typedef struct early_logs {
    pthread_mutex_t lock;
    int count;
    char data[64];
} early_logs_t;

static void on_early_log(void *user, const char *level, const char *logger, const json_t *data)
{
    (void)level, (void)logger;
    early_logs_t *l = user;
    pthread_mutex_lock(&l->lock);
    l->count++;
    snprintf(l->data, sizeof l->data, "%s", json_string_value(data));
    pthread_mutex_unlock(&l->lock);
}

static int early_count(early_logs_t *l)
{
    pthread_mutex_lock(&l->lock);
    int n = l->count;
    pthread_mutex_unlock(&l->lock);
    return n;
}

static void test_log_before_any_request(void **state)
{
    (void)state;
    early_logs_t logs = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .on_log = on_early_log, .on_log_user = &logs}, &err);
    assert_non_null(c);
    const char *const argv[] = {
        "sh", "-c",
        "echo '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
        "\"params\":{\"level\":\"info\",\"data\":\"starting\"}}'; exec \"$0\"",
        MCP_NOTES_SERVER, NULL};
    if (mcp_client_connect_stdio(c, &(mcp_stdio_target_t){.argv = argv}, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
    for (int i = 0; i < 500 && early_count(&logs) == 0; i++)
        sleep_ms(10);
    mcp_client_free(c);
    assert_int_equal(early_count(&logs), 1);
    assert_string_equal(logs.data, "starting");
}

/* A call waiting actively reads the server's stdout itself, and may route
 * other calls' answers as well as its own. With six callers at once, never
 * waiting actively (-1) or for as long as allowed (10 ms, so that callers
 * read most answers), every answer reaches its own call, and the client
 * closes cleanly. */
static void test_calls_that_read_the_answers(void **state)
{
    (void)state;
    static const int SPINS[] = {-1, 10000};
    for (size_t s = 0; s < sizeof SPINS / sizeof SPINS[0]; s++) {
        mcp_client_t *c = mcp_client_new(
            &(mcp_client_options_t){.name = "readers", .version = "1", .spin_us = SPINS[s]}, NULL);
        assert_non_null(c);
        mcp_error_t err = {0};
        assert_int_equal(
            mcp_client_connect_stdio(c, &(mcp_stdio_target_t){.argv = notes_argv}, &err), MCP_OK);
        notes_echo_from_threads(c, 6, 60);
        mcp_client_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest shared[] = {NOTES_SCENARIOS};
    const struct CMUnitTest own[] = {
        cmocka_unit_test(test_server_process),
        cmocka_unit_test(test_server_that_will_not_start),
        cmocka_unit_test(test_log_before_any_request),
        cmocka_unit_test(test_calls_that_read_the_answers),
    };
    int failed = cmocka_run_group_tests_name("client_stdio_shared", shared, setup, teardown);
    return failed + cmocka_run_group_tests_name("client_stdio_own", own, NULL, NULL);
}
