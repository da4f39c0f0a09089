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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/mcp.h"
#include "test_clock.h"

#define MAX_CONNECTIONS 32

/* ------------------------------------------------------------------------
 * The scripted server
 * ------------------------------------------------------------------------ */

typedef struct server {
    int fd;
    int port;
    pthread_t acceptor;
    pthread_t conns[MAX_CONNECTIONS];
    int n_conns;
    bool stall_lists;     /* POSTs of tools/list are never answered */

    pthread_mutex_t lock; /* guards what follows, and writes to stream_fd */
    int stream_fd;        /* the event stream's connection (-1: none) */
    int stalled;          /* POSTs left unanswered so far */
} server_t;

typedef struct connection {
    server_t *s;
    int fd;
} connection_t;

static void send_text(int fd, const char *text)
{
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n <= 0)
            return;
        text += n;
        len -= (size_t)n;
    }
}

/* Waits until the client closes the connection. */
static void until_closed(int fd)
{
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

static long request_id(const char *body)
{
    const char *id = strstr(body, "\"id\":");
    return id ? strtol(id + 5, NULL, 10) : 0;
}

/* Reads one request: the head and (by Content-Length) the body. */
static bool read_request(int fd, char *req, size_t size, const char **body)
{
    size_t len = 0;
    ssize_t n;
    while (len < size - 1 && (n = read(fd, req + len, size - 1 - len)) > 0) {
        len += (size_t)n;
        req[len] = '\0';
        char *end = strstr(req, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(req, "Content-Length:");
        size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;
        if (len - (size_t)(end + 4 - req) >= want) {
            *body = end + 4;
            return true;
        }
    }
    return false;
}

/* Sends one message on the event stream. */
static void emit(server_t *s, const char *json)
{
    pthread_mutex_lock(&s->lock);
    if (s->stream_fd >= 0) {
        send_text(s->stream_fd, "data: ");
        send_text(s->stream_fd, json);
        send_text(s->stream_fd, "\n\n");
    }
    pthread_mutex_unlock(&s->lock);
}

static void serve_get(server_t *s, int fd)
{
    pthread_mutex_lock(&s->lock);
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
                  "event: endpoint\ndata: /msg\n\n");
    s->stream_fd = fd;
    pthread_mutex_unlock(&s->lock);
    until_closed(fd);
    pthread_mutex_lock(&s->lock);
    s->stream_fd = -1;
    pthread_mutex_unlock(&s->lock);
}

static void serve_post(server_t *s, int fd, const char *path, const char *body)
{
    if (strcmp(path, "/msg") != 0) {
        /* Not Streamable HTTP: the client falls back to HTTP+SSE. */
        send_text(fd, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n"
                      "Connection: close\r\n\r\n");
        return;
    }
    if (s->stall_lists && strstr(body, "\"tools/list\"")) {
        pthread_mutex_lock(&s->lock);
        s->stalled++;
        pthread_mutex_unlock(&s->lock);
        until_closed(fd);
        return;
    }
    send_text(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    if (!strstr(body, "\"id\"") || !strstr(body, "\"method\""))
        return; /* a notification, or an answer to a request of ours */
    char answer[512];
    if (strstr(body, "\"initialize\""))
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":"
                 "\"2025-03-26\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
                 "{\"name\":\"sse\",\"version\":\"1\"}}}",
                 request_id(body));
    else if (strstr(body, "\"tools/list\""))
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"tools\":[]}}",
                 request_id(body));
    else
        snprintf(answer, sizeof answer, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{}}",
                 request_id(body));
    emit(s, answer);
}

static void *serve_connection(void *arg)
{
    connection_t *conn = arg;
    char req[16384], path[256] = "";
    const char *body = NULL;
    if (read_request(conn->fd, req, sizeof req, &body)) {
        sscanf(req, "%*s %255s", path);
        if (strncmp(req, "GET", 3) == 0)
            serve_get(conn->s, conn->fd);
        else if (strncmp(req, "POST", 4) == 0)
            serve_post(conn->s, conn->fd, path, body);
        else
            send_text(conn->fd, "HTTP/1.1 405 X\r\nContent-Length: 0\r\n"
                                "Connection: close\r\n\r\n");
    }
    close(conn->fd);
    free(conn);
    return NULL;
}

static void *accept_connections(void *arg)
{
    server_t *s = arg;
    int fd;
    while ((fd = accept(s->fd, NULL, NULL)) >= 0) {
        connection_t *conn = malloc(sizeof *conn);
        assert_non_null(conn);
        *conn = (connection_t){s, fd};
        assert_true(s->n_conns < MAX_CONNECTIONS);
        assert_int_equal(pthread_create(&s->conns[s->n_conns++], NULL, serve_connection, conn),
                         0);
    }
    return NULL;
}

static void server_start(server_t *s)
{
    pthread_mutex_init(&s->lock, NULL);
    s->stream_fd = -1;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 16), 0);
    getsockname(s->fd, (struct sockaddr *)&a, &alen);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->acceptor, NULL, accept_connections, s), 0);
}

/* After the client is freed (which closes its connections). */
static void server_stop(server_t *s)
{
    shutdown(s->fd, SHUT_RDWR);
    close(s->fd);
    pthread_join(s->acceptor, NULL);
    for (int i = 0; i < s->n_conns; i++)
        pthread_join(s->conns[i], NULL);
    pthread_mutex_destroy(&s->lock);
}

static mcp_client_t *connect_client(server_t *s)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "sse-test", .version = "1", .era = MCP_CLIENT_ERA_LEGACY,
        .timeout_ms = 10000}, NULL);
    assert_non_null(c);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", s->port);
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
