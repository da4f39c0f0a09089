/*
 * The era probe and the legacy client against real peers from npm
 * (tests/interop/package.json): through the same public calls, whatever
 * the era.
 *
 *   TypeScript SDK v2 server over stdio              modern
 *   server-everything 2026.8.31 over stdio           legacy (-32601)
 *   server-everything, Streamable HTTP               legacy (400), session
 *   server-everything, its old sse mode              legacy, HTTP+SSE
 *   TypeScript SDK v1 1.32.2, stateful HTTP          legacy (400)
 *   TypeScript SDK v1 1.32.2, stateless HTTP         legacy, no session
 *
 * Against server-everything: list and call tools (echo, get-sum, the
 * long-running one with progress), a sampling and an elicitation request
 * from the server answered by the callbacks, a resource subscription
 * delivering an update, and a tool that requires a task (the experimental
 * tasks of 2025-11-25), asking its question through tasks/result. HTTP peers listen on 127.0.0.1 only
 * (loopback_only.mjs); server-everything's get-env tool is never called.
 *
 * A peer that is not installed FAILS the test, saying what to install:
 * these are the only legacy peers the suite has.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"

#define INTEROP_DIR MCP_SOURCE_DIR "/tests/interop"
#define MODULES INTEROP_DIR "/node_modules"
#define EVERYTHING MODULES "/@modelcontextprotocol/server-everything/dist/index.js"
#define TS1_SERVER INTEROP_DIR "/ts1_http_server.mjs"
#define TS2_SERVER INTEROP_DIR "/ts2_stdio_server.mjs"
#define LOOPBACK "file://" INTEROP_DIR "/loopback_only.mjs"

/* ------------------------------------------------------------------------
 * Callbacks
 * ------------------------------------------------------------------------ */

/* Written on the client's callback threads, read by the test thread. */
static atomic_int samples, elicits, progresses;

static int sample(void *user, const json_t *params, json_t **result_out)
{
    (void)user;
    assert_non_null(json_object_get(params, "messages"));
    samples++;
    *result_out = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s}", "role", "assistant", "content",
                            "type", "text", "text", "a sampled answer", "model", "test-model",
                            "stopReason", "endTurn");
    return 0;
}

static int elicit(void *user, const json_t *params, json_t **result_out)
{
    (void)user;
    /* Form mode, said or implied (2025-11-25 makes "mode" optional). */
    const char *mode = json_string_value(json_object_get(params, "mode"));
    if (mode && strcmp(mode, "form") != 0)
        return -1;
    assert_non_null(json_object_get(params, "requestedSchema"));
    elicits++;
    *result_out = json_pack("{s:s}", "action", "decline");
    return 0;
}

static void on_progress(void *user, double progress, double total, const char *message)
{
    (void)user, (void)progress, (void)total, (void)message;
    progresses++;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int updates;

static void on_event(void *user, const char *method, const json_t *params)
{
    (void)user, (void)params;
    pthread_mutex_lock(&lock);
    if (strcmp(method, "notifications/resources/updated") == 0)
        updates++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static mcp_client_t *new_client(void)
{
    samples = elicits = progresses = updates = 0;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "libmcp-legacy-test", .version = "1.0", .timeout_ms = 30000,
        .sample = sample, .elicit = elicit, .tasks = true}, NULL);
    assert_non_null(c);
    return c;
}

/* ------------------------------------------------------------------------
 * Peers
 * ------------------------------------------------------------------------ */

static void require_peers(void)
{
    if (access(EVERYTHING, R_OK) != 0 ||
        access(MODULES "/@modelcontextprotocol/sdk/package.json", R_OK) != 0 ||
        system("node --version >/dev/null 2>&1") != 0)
        fail_msg("the npm peers are missing: run `npm ci` in tests/interop "
                 "(scripts/install-deps.sh check) with node on PATH");
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* Starts an HTTP peer and waits until its port accepts connections. */
static pid_t start_http_peer(const char *const *argv, int port)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char env[32];
        snprintf(env, sizeof env, "%d", port);
        setenv("PORT", env, 1);
        if (chdir(INTEROP_DIR) != 0)
            _exit(127);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return pid;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("the HTTP peer %s did not start listening", argv[2]);
    return -1;
}

static void stop_peer(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------------------
 * The same calls, whatever the era
 * ------------------------------------------------------------------------ */

static const char *first_text(const json_t *result)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0),
                                             "text"));
}

static void call_echo(mcp_client_t *c)
{
    mcp_error_t err = {0};
    json_t *tools = NULL, *r = NULL;
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    bool has_echo = false;
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool)
        has_echo |= strcmp(json_string_value(json_object_get(tool, "name")), "echo") == 0;
    assert_true(has_echo);
    json_decref(tools);
    json_t *args = json_pack("{s:s}", "message", "hello from C");
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &r, &err), MCP_OK);
    assert_non_null(strstr(first_text(r), "hello from C"));
    json_decref(args);
    json_decref(r);
    assert_int_equal(mcp_client_ping(c, NULL, &err), MCP_OK);
}

/* simulate-research-query requires a task; with ambiguous, the task asks
 * for a clarification (elicitation/create) while tasks/result waits, and
 * the declined answer shows in the report. */
static void research(mcp_client_t *c, bool ambiguous)
{
    mcp_error_t err = {0};
    json_t *r = NULL, *args = json_pack("{s:s, s:b}", "topic", "python", "ambiguous", ambiguous);
    int asked = elicits;
    if (mcp_client_call_tool(c, "simulate-research-query", args, NULL, &r, &err) != MCP_OK)
        fail_msg("simulate-research-query: %s", err.message);
    const char *report = first_text(r);
    assert_non_null(report);
    assert_non_null(strstr(report, "# Research Report: python"));
    assert_false(json_is_true(json_object_get(r, "isError")));
    if (ambiguous) {
        assert_int_equal(elicits, asked + 1);
        assert_non_null(strstr(report, "User declined"));
    }
    json_decref(args);
    json_decref(r);
}

static void *cancel_after_1500ms(void *arg)
{
    struct timespec ts = {1, 500 * 1000000L};
    nanosleep(&ts, NULL);
    mcp_cancel_trigger(arg);
    return NULL;
}

/* Giving up on the task cancels it at the server (tasks/list shows it). */
static void research_cancelled(mcp_client_t *c)
{
    mcp_error_t err = {0};
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_after_1500ms, cancel), 0);
    json_t *r = NULL, *args = json_pack("{s:s}", "topic", "cats");
    assert_int_equal(mcp_client_call_tool(c, "simulate-research-query", args,
                                          &(mcp_request_options_t){.cancel = cancel}, &r, &err),
                     MCP_ECANCELED);
    assert_null(r);
    mcp_error_clear(&err);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);
    json_decref(args);
    assert_int_equal(mcp_client_request(c, "tasks/list", NULL, NULL, &r, &err), MCP_OK);
    int cancelled = 0;
    size_t i;
    json_t *task;
    json_array_foreach(json_object_get(r, "tasks"), i, task)
        cancelled += strcmp(json_string_value(json_object_get(task, "status")), "cancelled") == 0;
    assert_int_equal(cancelled, 1);
    json_decref(r);
}

static void exercise_everything(mcp_client_t *c)
{
    mcp_error_t err = {0};
    call_echo(c);
    json_t *r = NULL, *args = json_pack("{s:i, s:i}", "a", 2, "b", 3);
    assert_int_equal(mcp_client_call_tool(c, "get-sum", args, NULL, &r, &err), MCP_OK);
    assert_non_null(strstr(first_text(r), "5"));
    json_decref(args);
    json_decref(r);

    args = json_pack("{s:i, s:i}", "duration", 1, "steps", 2);
    mcp_request_options_t ro = {.progress = on_progress};
    assert_int_equal(mcp_client_call_tool(c, "trigger-long-running-operation", args, &ro, &r,
                                          &err), MCP_OK);
    assert_true(progresses >= 1);
    json_decref(args);
    json_decref(r);

    args = json_pack("{s:s, s:i}", "prompt", "say hi", "maxTokens", 20);
    assert_int_equal(mcp_client_call_tool(c, "trigger-sampling-request", args, NULL, &r, &err),
                     MCP_OK);
    assert_int_equal(samples, 1);
    json_decref(args);
    json_decref(r);

    assert_int_equal(mcp_client_call_tool(c, "trigger-elicitation-request", NULL, NULL, &r, &err),
                     MCP_OK);
    assert_int_equal(elicits, 1);
    json_decref(r);

    assert_int_equal(mcp_client_set_log_level(c, "error", &err), MCP_OK);

    /* A subscription: resources/subscribe, then the server's simulated
     * updates (every 5 s once toggled on). */
    const char *uris[] = {"demo://resource/static/document/architecture.md"};
    mcp_subscription_t *sub = NULL;
    assert_int_equal(mcp_client_listen(c, &(mcp_listen_filter_t){.resource_uris = uris,
                                                                 .n_resource_uris = 1},
                                       on_event, NULL, NULL, &sub, NULL, &err), MCP_OK);
    assert_int_equal(mcp_client_call_tool(c, "toggle-subscriber-updates", NULL, NULL, &r, &err),
                     MCP_OK);
    json_decref(r);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&lock);
    while (updates == 0 && pthread_cond_timedwait(&cond, &lock, &until) == 0)
        ;
    int got = updates;
    pthread_mutex_unlock(&lock);
    assert_true(got >= 1);
    mcp_subscription_close(sub);

    research(c, true);
}

static void assert_verdict(mcp_client_t *c, mcp_verdict_kind_t kind, bool http_sse)
{
    mcp_client_verdict_t v;
    assert_int_equal(mcp_client_verdict(c, &v), MCP_OK);
    assert_int_equal(v.kind, kind);
    assert_true(v.probed);
    assert_int_equal(v.http_sse, http_sse);
}

/* ------------------------------------------------------------------------
 * The peers, one test each
 * ------------------------------------------------------------------------ */

static void test_ts2_stdio_is_modern(void **state)
{
    (void)state;
    require_peers();
    mcp_client_t *c = new_client();
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
        .argv = (const char *const[]){"node", TS2_SERVER, NULL}, .cwd = INTEROP_DIR}, &err),
        MCP_OK);
    assert_verdict(c, MCP_VERDICT_MODERN, false);
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    mcp_client_free(c);
}

static void test_everything_stdio(void **state)
{
    (void)state;
    require_peers();
    mcp_client_t *c = new_client();
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
        .argv = (const char *const[]){"node", EVERYTHING, "stdio", NULL}}, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, false);
    assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
    assert_string_equal(mcp_client_protocol_version(c), "2025-11-25");
    exercise_everything(c);
    research(c, false); /* polled until completed, then tasks/result */
    research_cancelled(c);
    mcp_client_free(c);
}

/* server-everything started in `mode` (its HTTP transports), reached at
 * `path`: the probe must find it legacy, over HTTP+SSE when `sse`. */
static void everything_over_http(const char *mode, const char *path, bool sse)
{
    require_peers();
    int port = free_port();
    pid_t pid = start_http_peer((const char *const[]){"node", "--import", LOOPBACK, EVERYTHING,
                                                       mode, NULL}, port);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    mcp_client_t *c = new_client();
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, sse);
    exercise_everything(c);
    mcp_client_free(c);
    stop_peer(pid);
}

static void test_everything_streamable_http(void **state)
{
    (void)state;
    everything_over_http("streamableHttp", "/mcp", false);
}

static void test_everything_sse(void **state)
{
    (void)state;
    everything_over_http("sse", "/sse", true);
}

static void ts1(const char *mode)
{
    require_peers();
    int port = free_port();
    char port_arg[16];
    snprintf(port_arg, sizeof port_arg, "%d", port);
    pid_t pid = start_http_peer((const char *const[]){"node", TS1_SERVER, mode, port_arg, NULL},
                                port);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
    mcp_client_t *c = new_client();
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, false);
    call_echo(c);
    json_t *r = NULL, *args = json_pack("{s:i, s:i}", "a", 40, "b", 2);
    assert_int_equal(mcp_client_call_tool(c, "add", args, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "42");
    json_decref(args);
    json_decref(r);
    mcp_client_free(c);
    stop_peer(pid);
}

static void test_ts1_stateful(void **state)
{
    (void)state;
    ts1("stateful");
}

static void test_ts1_stateless(void **state)
{
    (void)state;
    ts1("stateless");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ts2_stdio_is_modern),
        cmocka_unit_test(test_everything_stdio),
        cmocka_unit_test(test_everything_streamable_http),
        cmocka_unit_test(test_everything_sse),
        cmocka_unit_test(test_ts1_stateful),
        cmocka_unit_test(test_ts1_stateless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
