/*
 * Fuzzes the embedding entry points of the HTTP endpoint as an HTTP server
 * would drive them: mcp_http_begin() with any method, path and headers,
 * the body through mcp_http_body() in chunks, mcp_http_end(), and
 * sometimes a cancel or a per-request timeout racing the answer.
 *
 * Input: a flags byte, the request line "METHOD PATH\n", header lines
 * ("Name: value\n"), a blank line, then the body.
 *   flags & 0x01  cancel the exchange right after mcp_http_end()
 *   flags & 0x02  a 1 ms per-request timeout
 *   flags >> 2    body chunk size (0: the whole body at once)
 *
 * The responder checks the callback contract; the harness waits for the
 * answer (unless it cancelled) and for the core to release the request.
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

typedef struct answer {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int starts, finishes;
    bool cancelled; /* we cancelled: no callback may come any more */
} answer_t;

static int on_start(void *user, int status, const mcp_header_t *headers, size_t n,
                    int64_t content_length)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->cancelled || a->starts++ || a->finishes || status < 200 || status > 599)
        __builtin_trap();
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static int on_write(void *user, const char *data, size_t len)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->cancelled || a->starts != 1 || a->finishes || len == 0)
        __builtin_trap();
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static void on_finish(void *user, bool complete)
{
    answer_t *a = user;
    pthread_mutex_lock(&a->lock);
    if (a->cancelled || a->finishes++ || (complete && a->starts != 1))
        __builtin_trap();
    pthread_cond_signal(&a->done);
    pthread_mutex_unlock(&a->lock);
}

static int echo(mcp_call_t *call, void *user)
{
    mcp_call_progress(call, 1, -1, NULL);
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

static mcp_http_endpoint_t *endpoint(void)
{
    static mcp_server_t *srv;
    static mcp_http_endpoint_t *ep;
    if (ep)
        return ep;
    srv = mcp_server_new(&(mcp_server_options_t){.name = "fuzz", .version = "1"}, NULL);
    mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "echo", .input_schema = "{\"type\":\"object\"}", .handler = echo}, NULL);
    ep = mcp_http_endpoint_new(srv, &(mcp_http_endpoint_options_t){.max_body_bytes = 8192},
                               NULL);
    if (!ep)
        abort();
    return ep;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    mcp_http_endpoint_t *ep = endpoint();
    unsigned flags = data[0];
    data++;
    size--;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    /* Request line, headers, body. */
    char *line_end = strchr(text, '\n');
    char *head = line_end ? line_end + 1 : text + strlen(text);
    if (line_end)
        *line_end = '\0';
    char *space = strchr(text, ' ');
    const char *method = text, *path = space ? space + 1 : "/mcp";
    if (space)
        *space = '\0';
    char *split = memmem(head, (size_t)(text + size - head), "\n\n", 2);
    const char *body = split ? split + 2 : text + size;
    size_t body_len = (size_t)(text + size - body);
    if (split)
        *split = '\0';
    mcp_header_t items[MAX_HEADERS];
    size_t n = split ? fuzz_split_header_lines(head, items, MAX_HEADERS) : 0;

    mcp_http_request_t req = {method, path, {items, n}, flags & 0x02 ? 1 : 0};
    answer_t a = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
    mcp_http_responder_t responder = {on_start, on_write, on_finish, &a};
    mcp_http_exchange_t *x = NULL;
    if (mcp_http_begin(ep, &req, &responder, &x) != MCP_OK)
        __builtin_trap();
    if (x) {
        size_t chunk = (flags >> 2) ? (flags >> 2) : body_len;
        for (size_t off = 0; off < body_len; off += chunk)
            mcp_http_body(x, body + off, body_len - off < chunk ? body_len - off : chunk);
        mcp_http_end(x);
        if (flags & 0x01) {
            mcp_http_exchange_cancel(x);
            pthread_mutex_lock(&a.lock);
            a.cancelled = a.finishes == 0; /* unless it was over already */
            pthread_mutex_unlock(&a.lock);
        }
    }
    pthread_mutex_lock(&a.lock);
    while (a.finishes == 0 && !a.cancelled)
        pthread_cond_wait(&a.done, &a.lock);
    pthread_mutex_unlock(&a.lock);
    mcp_http_exchange_release(x);
    mcp_http_endpoint_drain(ep, -1);
    free(text);
    return 0;
}
