/*
 * bench_server: the libmcp side of the benchmarks, a server with the same
 * offer as the TypeScript peer (bench/peers/ts_server.mjs):
 *
 *   echo          returns its text                         (tools/call)
 *   echo_inline   the same, registered run_inline: the handler runs on the
 *                 HTTP event thread instead of the worker pool
 *   confirm       asks for a confirmation first (MRTR: two rounds)
 *   tool_1..N     --tools N extra tools, for a long tools/list
 *   bench://big   a 1 MB text resource                     (resources/read)
 *
 *   bench_server stdio [--tools N] [--spin-us U] [--workers W]
 *   bench_server http [PORT] [--tools N] [--threads T] [--spin-us U] [--workers W]
 *                     [--engine builtin|libmicrohttpd]
 *
 * Over HTTP it prints its URL as the first line of stdout, then serves
 * until SIGINT or SIGTERM. tools/list answers all tools in one page, as
 * the TypeScript server does. --spin-us sets the server option spin_us
 * (default 0: libmcp's default active wait; -1: none), --workers the
 * option worker_threads (default 0: one per CPU but the first), --engine
 * the HTTP engine (default: libmcp's own for plain HTTP).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

#define BIG_RESOURCE_BYTES (1024 * 1024)
#define ECHO_SCHEMA                                                                          \
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"                   \
    "\"required\":[\"text\"]}"

/* BIG_RESOURCE_BYTES of printable ASCII, made on first read so that the
 * memory benchmark sees the server, not this text. */
static char *big_text;
static pthread_once_t big_once = PTHREAD_ONCE_INIT;

static void make_big_text(void)
{
    big_text = malloc(BIG_RESOURCE_BYTES + 1);
    if (!big_text)
        return;
    for (size_t i = 0; i < BIG_RESOURCE_BYTES; i++)
        big_text[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
    big_text[BIG_RESOURCE_BYTES] = '\0';
}

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    if (!text)
        return mcp_call_fail(call, MCP_INVALID_PARAMS, "text must be a string");
    return mcp_call_add_text(call, text);
}

/* Round one asks; round two answers. */
static int confirm(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties",
                                   "confirm", "type", "boolean", "required", "confirm");
        int rc = mcp_call_elicit(call, "confirm", "Confirm?", schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    bool yes = json_is_true(json_object_get(json_object_get(answer, "content"), "confirm"));
    return mcp_call_add_text(call, yes ? "confirmed" : "refused");
}

static int read_big(mcp_call_t *call, const char *uri, void *user)
{
    pthread_once(&big_once, make_big_text);
    if (!big_text)
        return MCP_ENOMEM;
    return mcp_call_add_resource_text(call, uri, "text/plain", big_text);
}

static int build(mcp_server_t *srv, int extra_tools, mcp_error_t *err)
{
    int rc = mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "echo", .description = "Echo the text back", .input_schema = ECHO_SCHEMA,
        .handler = echo}, err);
    if (rc == MCP_OK)
        rc = mcp_server_add_tool(srv, &(mcp_tool_t){
            .name = "echo_inline", .description = "Echo the text back, on the event thread",
            .input_schema = ECHO_SCHEMA, .handler = echo, .run_inline = true}, err);
    if (rc == MCP_OK)
        rc = mcp_server_add_tool(srv, &(mcp_tool_t){
            .name = "confirm", .description = "Ask for a confirmation, then answer",
            .handler = confirm}, err);
    for (int i = 1; rc == MCP_OK && i <= extra_tools; i++) {
        char name[32], description[64];
        snprintf(name, sizeof name, "tool_%d", i);
        snprintf(description, sizeof description, "Extra tool number %d (echoes)", i);
        rc = mcp_server_add_tool(srv, &(mcp_tool_t){
            .name = name, .description = description, .input_schema = ECHO_SCHEMA,
            .handler = echo}, err);
    }
    if (rc == MCP_OK)
        rc = mcp_server_add_resource(srv, &(mcp_resource_t){
            .uri = "bench://big", .name = "big", .mime_type = "text/plain",
            .handler = read_big}, err);
    return rc;
}

static int serve_http(mcp_server_t *srv, uint16_t port, unsigned threads,
                      mcp_http_engine_t engine)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    mcp_error_t err = {0};
    mcp_http_server_t *http;
    int rc = mcp_http_server_start(srv, &(mcp_http_options_t){
        .port = port, .threads = threads, .shutdown_grace_ms = -1,
        .connection_limit = 4096, .engine = engine}, &http, &err);
    if (rc != MCP_OK) {
        fprintf(stderr, "bench_server: %s\n", err.message);
        mcp_error_clear(&err);
        return rc;
    }
    printf("http://127.0.0.1:%u/mcp\n", (unsigned)mcp_http_server_port(http));
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    mcp_http_server_stop(http);
    return MCP_OK;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "stdio";
    uint16_t port = 0;
    int extra_tools = 0;
    unsigned threads = 0;
    int spin_us = 0, workers = 0;
    mcp_http_engine_t engine = MCP_HTTP_ENGINE_DEFAULT;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--tools") == 0 && i + 1 < argc)
            extra_tools = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--spin-us") == 0 && i + 1 < argc)
            spin_us = atoi(argv[++i]);
        else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
            workers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
            engine = strcmp(argv[++i], "libmicrohttpd") == 0 ? MCP_HTTP_ENGINE_LIBMICROHTTPD
                                                              : MCP_HTTP_ENGINE_BUILTIN;
        else
            port = (uint16_t)atoi(argv[i]);
    }
    if (strcmp(mode, "stdio") != 0 && strcmp(mode, "http") != 0) {
        fprintf(stderr, "usage: bench_server stdio|http [PORT] [--tools N] [--threads T] "
                        "[--spin-us U] [--workers W] [--engine builtin|libmicrohttpd]\n");
        return 2;
    }

    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "libmcp-bench", .version = MCP_LIB_VERSION,
        .page_size = (size_t)extra_tools + 2, .spin_us = spin_us,
        .worker_threads = workers,
        /* The memory benchmark opens 1,000 listen streams, unauthenticated,
         * within the HTTP server's 4096 connections. */
        .max_listen_streams = 2048}, &err);
    int rc = srv ? build(srv, extra_tools, &err) : MCP_EINVAL;
    if (rc != MCP_OK) {
        fprintf(stderr, "bench_server: %s\n", err.message);
        mcp_error_clear(&err);
    } else if (strcmp(mode, "http") == 0) {
        rc = serve_http(srv, port, threads, engine);
    } else {
        rc = mcp_server_run_stdio(srv, NULL);
    }
    mcp_server_free(srv);
    free(big_text);
    return rc == MCP_OK ? 0 : 1;
}
