/*
 * The engines under the built-in HTTP server (internal).
 *
 * mcp_http_server_start() (http_server.c) checks the options, builds the
 * endpoint that decides everything about a request, and hands the socket
 * work to one of two engines that only move bytes:
 *
 *   http_server_epoll.c  libmcp's own HTTP/1.1 server: event threads on
 *                        epoll, answers written by whichever thread has
 *                        them. The default for plain HTTP.
 *   http_server_mhd.c    libmicrohttpd, for TLS (through GnuTLS).
 *
 * Why two: libmicrohttpd brings TLS, but Debian's build links and
 * initialises the whole GnuTLS stack in every process that loads it
 * (about 2.5 MB resident before the first connection), and its
 * suspend/resume hand-offs cost a wake-up per answer. A server behind a
 * TLS-terminating proxy, or on loopback, needs neither.
 *
 * Stopping runs in this order, the front calling each step:
 *   stop_accepting  no new connections or requests
 *   (the front ends listen streams, drains for the grace period)
 *   stop_waiting    nothing waits for an answer any more (may be NULL)
 *   (the front aborts every exchange still in flight)
 *   close           every connection closed, threads joined, freed
 */
#ifndef MCP_TRANSPORT_HTTP_SERVER_ENGINE_H
#define MCP_TRANSPORT_HTTP_SERVER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mcp/server_http.h"

typedef struct http_engine_config {
    mcp_server_t *srv;       /* for logging */
    mcp_log_fn log;          /* the server's log callback, and its user */
    void *log_user;
    mcp_http_endpoint_t *ep; /* where every request goes */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    bool ipv6;
    const char *bind_text; /* the address as given, for messages */
    uint16_t port;         /* as asked: 0 lets the system pick */
    unsigned threads;
    int spin_us; /* an event thread's active wait before it sleeps (spin.h) */
    unsigned connection_limit;
    unsigned connection_timeout_s;
    size_t max_header_bytes;
    const char *tls_cert; /* PEM text, or NULL for plain HTTP */
    const char *tls_key;
} http_engine_config_t;

typedef struct http_engine_ops {
    /* Starts serving; stores the engine in *engine and the bound port in
     * *port. On failure returns an MCP_E* code with *err filled. */
    int (*start)(const http_engine_config_t *cfg, void **engine, uint16_t *port,
                 mcp_error_t *err);
    void (*stop_accepting)(void *engine);
    void (*stop_waiting)(void *engine);
    void (*close)(void *engine);
} http_engine_ops_t;

extern const http_engine_ops_t http_engine_epoll;
extern const http_engine_ops_t http_engine_mhd;

#endif /* MCP_TRANSPORT_HTTP_SERVER_ENGINE_H */
