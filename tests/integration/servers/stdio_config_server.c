/*
 * A stdio MCP server for integration tests of the transport, configured
 * from the environment:
 *   MCP_TEST_MAX_LINE    mcp_stdio_options_t.max_line (bytes)
 *   MCP_TEST_GRACE_MS    mcp_stdio_options_t.shutdown_grace_ms
 *
 * Tools:
 *   echo {text}          answers the text
 *   sleep {ms}           sleeps (cancellable), answers "slept <ms>"
 *   meet {n}             waits until n calls of meet are running at once,
 *                        then answers "met <n>" (a tool error after 10 s):
 *                        proof that requests are served concurrently
 *   big {bytes, progress} sends `progress` progress notifications (when
 *                        asked for with a token), then answers a text of
 *                        `bytes` 'x'
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mcp/mcp.h>
#include <mcp/server.h>

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

static int sleep_tool(mcp_call_t *call, void *user)
{
    int64_t ms = 0;
    mcp_call_arg_int(call, "ms", &ms);
    if (mcp_call_sleep(call, ms) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_textf(call, "slept %lld", (long long)ms);
}

static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static int meeting;

static int meet(mcp_call_t *call, void *user)
{
    int64_t n = 1;
    mcp_call_arg_int(call, "n", &n);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&meet_lock);
    meeting++;
    pthread_cond_broadcast(&meet_cond);
    int rc = 0;
    while (meeting < n && rc == 0)
        rc = pthread_cond_timedwait(&meet_cond, &meet_lock, &deadline);
    bool met = meeting >= n;
    pthread_mutex_unlock(&meet_lock);
    if (!met)
        return mcp_call_tool_error(call, "only some of the %lld calls met", (long long)n);
    return mcp_call_add_textf(call, "met %lld", (long long)n);
}

static int big(mcp_call_t *call, void *user)
{
    int64_t bytes = 0, progress = 0;
    mcp_call_arg_int(call, "bytes", &bytes);
    mcp_call_arg_int(call, "progress", &progress);
    for (int64_t i = 1; i <= progress; i++)
        mcp_call_progress(call, (double)i, (double)progress, "writing");
    if (bytes < 0 || bytes > 64 * 1024 * 1024)
        return mcp_call_tool_error(call, "bytes out of range");
    char *text = malloc((size_t)bytes + 1);
    if (!text)
        return MCP_ENOMEM;
    memset(text, 'x', (size_t)bytes);
    text[bytes] = '\0';
    int rc = mcp_call_add_text(call, text);
    free(text);
    return rc;
}

static unsigned long long env_number(const char *name)
{
    const char *v = getenv(name);
    return v ? strtoull(v, NULL, 10) : 0;
}

int main(void)
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "stdio-config-server", .version = "1.0.0",
                                .log = mcp_log_stderr},
        &err);
    const mcp_tool_t tools[] = {
        {.name = "echo", .handler = echo},
        {.name = "sleep", .handler = sleep_tool},
        {.name = "meet", .handler = meet},
        {.name = "big", .handler = big},
    };
    for (size_t i = 0; srv && i < sizeof tools / sizeof tools[0]; i++) {
        if (mcp_server_add_tool(srv, &tools[i], &err) != MCP_OK) {
            mcp_server_free(srv);
            srv = NULL;
        }
    }
    if (!srv) {
        fprintf(stderr, "stdio_config_server: %s\n", err.message);
        mcp_error_clear(&err);
        return 2;
    }
    mcp_stdio_options_t opts = {.max_line = (size_t)env_number("MCP_TEST_MAX_LINE"),
                                .shutdown_grace_ms = (int)env_number("MCP_TEST_GRACE_MS")};
    int rc = mcp_server_run_stdio(srv, &opts);
    mcp_server_free(srv);
    return rc == MCP_OK ? 0 : 1;
}
