/*
 * The HTTP+SSE transport of 2024-11-05 (the legacy client's last resort
 * over HTTP), against a scripted server (threads of this test, one per
 * connection): POST to the URL answers 405, so the client falls back to
 * GET, whose event stream names the endpoint /msg; POSTs there are
 * answered 202 and their answers come on the event stream.
 *
 *   - calls work over it, and the client reports the fallback;
 *   - a POST the server never answers ends at the call's own timeout
 *     with MCP_ETIMEDOUT, as any call that times out, and the client
 *     goes on working: the POST is the request's way out, so the call's
 *     deadline bounds it (not a fixed limit of the transport).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/mcp.h"
#include "scripted_http.h"
#include "test_clock.h"

/* ------------------------------------------------------------------------
 * The scripted server
 * ------------------------------------------------------------------------ */

typedef struct server {
    scripted_http_t http;
    bool stall_lists;     /* POSTs of tools/list are never answered */

    pthread_mutex_t lock; /* guards what follows, and writes to stream_fd */
    int stream_fd;        /* the event stream's connection (-1: none) */
    int stalled;          /* POSTs left unanswered so far */
} server_t;

/* Sends one message on the event stream. */
static void emit(server_t *s, const char *json)
{
    pthread_mutex_lock(&s->lock);
    if (s->stream_fd >= 0) {
        scripted_send_text(s->stream_fd, "data: ");
        scripted_send_text(s->stream_fd, json);
        scripted_send_text(s->stream_fd, "\n\n");
    }
    pthread_mutex_unlock(&s->lock);
}

static void serve_get(server_t *s, int fd)
{
    pthread_mutex_lock(&s->lock);
    scripted_send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
                  "event: endpoint\ndata: /msg\n\n");
    s->stream_fd = fd;
    pthread_mutex_unlock(&s->lock);
    scripted_until_closed(fd);
    pthread_mutex_lock(&s->lock);
    s->stream_fd = -1;
    pthread_mutex_unlock(&s->lock);
}

static void serve_post(server_t *s, int fd, const char *path, const char *body)
{
    if (strcmp(path, "/msg") != 0) {
        /* Not Streamable HTTP: the client falls back to HTTP+SSE. */
        scripted_send_text(fd, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n"
                      "Connection: close\r\n\r\n");
        return;
    }
    if (s->stall_lists && strstr(body, "\"tools/list\"")) {
        pthread_mutex_lock(&s->lock);
        s->stalled++;
        pthread_mutex_unlock(&s->lock);
        scripted_until_closed(fd);
        return;
    }
    scripted_send_text(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n"
                           "Connection: close\r\n\r\n");
    if (!strstr(body, "\"id\"") || !strstr(body, "\"method\""))
        return; /* a notification, or an answer to a request of ours */
    char answer[512];
    if (strstr(body, "\"initialize\""))
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":"
                 "\"2025-03-26\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
                 "{\"name\":\"sse\",\"version\":\"1\"}}}",
                 scripted_request_id(body));
    else if (strstr(body, "\"tools/list\""))
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"tools\":[]}}",
                 scripted_request_id(body));
    else
        snprintf(answer, sizeof answer, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{}}",
                 scripted_request_id(body));
    emit(s, answer);
}

/* The script: GET opens the event stream, POST carries the messages. */
static void serve(void *owner, int fd, const char *req, const char *body)
{
    server_t *s = owner;
    char path[256] = "";
    sscanf(req, "%*s %255s", path);
    if (strncmp(req, "GET", 3) == 0)
        serve_get(s, fd);
    else if (strncmp(req, "POST", 4) == 0)
        serve_post(s, fd, path, body);
    else
        scripted_send_text(fd, "HTTP/1.1 405 X\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n");
}

static void server_start(server_t *s)
{
    pthread_mutex_init(&s->lock, NULL);
    s->stream_fd = -1;
    scripted_http_start(&s->http, serve, s);
}

/* After the client is freed (which closes its connections). */
static void server_stop(server_t *s)
{
    scripted_http_stop(&s->http);
    pthread_mutex_destroy(&s->lock);
}

static mcp_client_t *connect_client(server_t *s)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "sse-test", .version = "1", .era = MCP_CLIENT_ERA_LEGACY,
        .timeout_ms = 10000}, NULL);
    assert_non_null(c);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", s->http.port);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err), MCP_OK);
    mcp_client_verdict_t v = {0};
    assert_int_equal(mcp_client_verdict(c, &v), MCP_OK);
    assert_true(v.http_sse);
    return c;
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

static void test_calls_over_http_sse(void **state)
{
    (void)state;
    static server_t s; /* static: its threads may outlive a failed assertion */
    s = (server_t){0};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &result, &err), MCP_OK);
    assert_true(json_is_array(json_object_get(result, "tools")));
    json_decref(result);
    assert_int_equal(mcp_client_ping(c, NULL, &err), MCP_OK);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_post_ends_at_the_call_timeout(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.stall_lists = true};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    json_t *result = NULL;
    mcp_error_t err = {0};
    int64_t start = now_ms();
    assert_int_equal(mcp_client_list_tools(c, NULL,
                                           &(mcp_request_options_t){.timeout_ms = 300},
                                           &result, &err),
                     MCP_ETIMEDOUT);
    int64_t took = now_ms() - start;
    assert_null(result);
    assert_true(took >= 290);
    assert_true(took < 3000);
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.stalled, 1);
    pthread_mutex_unlock(&s.lock);
    mcp_error_clear(&err);
    /* The transport is unharmed: the next call goes through. */
    assert_int_equal(mcp_client_ping(c, NULL, &err), MCP_OK);
    mcp_client_free(c);
    server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_over_http_sse),
        cmocka_unit_test(test_post_ends_at_the_call_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
