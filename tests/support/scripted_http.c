/*
 * The scripted peer of scripted_http.h: one thread accepts, one thread per
 * connection reads a request and runs the test's script on it.
 */
#define _GNU_SOURCE /* strcasestr */
#include "scripted_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct connection {
    scripted_http_t *h;
    int fd;
} connection_t;

void scripted_send_text(int fd, const char *text)
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

void scripted_respond_json(int fd, int status, const char *extra, const char *body)
{
    char head[512];
    snprintf(head, sizeof head,
             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n%s\r\n",
             status, strlen(body), extra ? extra : "");
    scripted_send_text(fd, head);
    scripted_send_text(fd, body);
}

void scripted_until_closed(int fd)
{
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

long scripted_request_id(const char *body)
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

static void *serve_connection(void *arg)
{
    connection_t *conn = arg;
    char req[16384];
    const char *body = NULL;
    if (read_request(conn->fd, req, sizeof req, &body))
        conn->h->serve(conn->h->owner, conn->fd, req, body);
    close(conn->fd);
    free(conn);
    return NULL;
}

static void *accept_connections(void *arg)
{
    scripted_http_t *h = arg;
    int fd;
    while ((fd = accept(h->fd, NULL, NULL)) >= 0) {
        connection_t *conn = malloc(sizeof *conn);
        assert_non_null(conn);
        *conn = (connection_t){h, fd};
        assert_true(h->n_conns < SCRIPTED_HTTP_MAX_CONNECTIONS);
        assert_int_equal(pthread_create(&h->conns[h->n_conns++], NULL, serve_connection, conn),
                         0);
    }
    return NULL;
}

void scripted_http_start(scripted_http_t *h, scripted_serve_fn serve, void *owner)
{
    memset(h, 0, sizeof *h);
    h->serve = serve;
    h->owner = owner;
    h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(h->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(h->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(h->fd, 16), 0);
    assert_int_equal(getsockname(h->fd, (struct sockaddr *)&a, &alen), 0);
    h->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&h->acceptor, NULL, accept_connections, h), 0);
}

void scripted_http_stop(scripted_http_t *h)
{
    shutdown(h->fd, SHUT_RDWR);
    close(h->fd);
    pthread_join(h->acceptor, NULL);
    for (int i = 0; i < h->n_conns; i++)
        pthread_join(h->conns[i], NULL);
}
