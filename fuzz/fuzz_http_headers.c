/*
 * Fuzzes the header checks of the HTTP endpoint through the embedding API:
 * the endpoint's own rules (Host, Origin, auth, Content-Type, Accept,
 * Content-Length) and the core's header/body cross-checks (MCP-Protocol-
 * Version, Mcp-Method, Mcp-Name, Mcp-Param-*), on a POST to /mcp.
 *
 * Input: HTTP header lines ("Name: value\n"), a blank line, then the body.
 *
 * Every input must be answered exactly once through the responder
 * (start at most once, writes only after it, finish exactly once). The
 * harness waits for the core to release the request before returning, so
 * nothing is left in flight between inputs.
 */
#define _GNU_SOURCE /* memmem */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

#include "support/header_lines.h"

#define MAX_HEADERS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------------
 * A responder that checks the callback contract
 * ------------------------------------------------------------------------ */

typedef struct answer {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int starts, finishes;
} answer_t;

static int on_start(void *user, int status, const mcp_header_t *headers, size_t n,
                    int64_t content_length)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->starts++ || a->finishes || status < 200 || status > 599)
        __builtin_trap();
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static int on_write(void *user, const char *data, size_t len)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->starts != 1 || a->finishes || len == 0)
        __builtin_trap();
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static void on_finish(void *user, bool complete)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->finishes++ || (complete && a->starts != 1))
        __builtin_trap();
    pthread_cond_signal(&a->done);
    pthread_mutex_unlock(&a->lock);
}

/* ------------------------------------------------------------------------
 * The server: tools that answer at once
 * ------------------------------------------------------------------------ */

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

static int chatty(mcp_call_t *call, void *user)
{
    mcp_call_logf(call, "info", "hello");
    mcp_call_progress(call, 1, 2, "half");
    return mcp_call_add_text(call, mcp_call_principal(call) ? mcp_call_principal(call) : "");
}

static int admit(void *user, const mcp_headers_t *headers, char **principal,
                 char **www_authenticate)
{
    const char *token = mcp_headers_get(headers, "Authorization");
    if (token && strcmp(token, "deny") == 0) {
        *www_authenticate = strdup("Bearer");
        return 401;
    }
    if (token)
        *principal = strdup(token);
    return 0;
}

static mcp_http_endpoint_t *endpoint(void)
{
    static mcp_server_t *srv;
    static mcp_http_endpoint_t *ep;
    if (ep)
        return ep;
    srv = mcp_server_new(&(mcp_server_options_t){.name = "fuzz", .version = "1"}, NULL);
    mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "echo",
        .input_schema = "{\"type\":\"object\",\"properties\":{"
                        "\"text\":{\"type\":\"string\",\"x-mcp-header\":\"Text\"},"
                        "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"}}}",
        .handler = echo}, NULL);
    mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "chatty", .input_schema = "{\"type\":\"object\"}", .handler = chatty}, NULL);
    static const char *const origins[] = {"https://app.example", NULL};
    ep = mcp_http_endpoint_new(srv, &(mcp_http_endpoint_options_t){
        .allowed_origins = origins, .max_body_bytes = 65536, .auth = admit}, NULL);
    if (!ep)
        abort();
    return ep;
}

/* ------------------------------------------------------------------------
 * One input
 * ------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcp_http_endpoint_t *ep = endpoint();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *split = memmem(text, size, "\n\n", 2);
    const char *body = split ? split + 2 : text + size;
    size_t body_len = (size_t)(text + size - body);
    if (split)
        *split = '\0';

    mcp_header_t items[MAX_HEADERS];
    size_t n = split ? fuzz_split_header_lines(text, items, MAX_HEADERS) : 0;
    mcp_http_request_t req = {.method = "POST", .path = "/mcp", .headers = {items, n}};
    answer_t a = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
    mcp_http_responder_t responder = {on_start, on_write, on_finish, &a};
    mcp_http_exchange_t *x = NULL;
    if (mcp_http_handle(ep, &req, body, body_len, &responder, &x) != MCP_OK)
        __builtin_trap();

    pthread_mutex_lock(&a.lock);
    while (a.finishes == 0)
        pthread_cond_wait(&a.done, &a.lock);
    pthread_mutex_unlock(&a.lock);
    mcp_http_exchange_release(x);
    mcp_http_endpoint_drain(ep, -1); /* the core has let go of the request too */
    free(text);
    return 0;
}
