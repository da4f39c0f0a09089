/*
 * A peer scripted byte by byte, for client tests that need an HTTP server
 * to misbehave exactly so (a stream cut mid-event, a POST never answered,
 * the 2024-11-05 HTTP+SSE dance): a listener on a free port of 127.0.0.1
 * that reads one request per connection, on a thread of its own, and
 * hands it to the test's `serve`, which writes whatever it likes. The
 * connection is closed when `serve` returns, so answers say
 * "Connection: close".
 */
#ifndef MCP_TEST_SCRIPTED_HTTP_H
#define MCP_TEST_SCRIPTED_HTTP_H

#include <pthread.h>
#include <stdbool.h>

#define SCRIPTED_HTTP_MAX_CONNECTIONS 32

/* Serves one request: its head and body as text (NUL-terminated; the body
 * read by Content-Length), on the connection `fd`. Runs on the
 * connection's thread. */
typedef void (*scripted_serve_fn)(void *owner, int fd, const char *request, const char *body);

typedef struct scripted_http {
    int port; /* the listener's, once started */
    /* private */
    int fd;
    pthread_t acceptor;
    pthread_t conns[SCRIPTED_HTTP_MAX_CONNECTIONS];
    int n_conns;
    scripted_serve_fn serve;
    void *owner;
} scripted_http_t;

/* Listens and serves every connection with `serve(owner, ...)`. Fails the
 * test when it cannot. */
void scripted_http_start(scripted_http_t *h, scripted_serve_fn serve, void *owner);

/* Stops listening and waits for every connection's thread: call it once
 * the client is freed (which closes its connections), or threads waiting
 * for the client to leave (scripted_until_closed) never end. */
void scripted_http_stop(scripted_http_t *h);

/* Writes all of `text` (gives up quietly when the client has left). */
void scripted_send_text(int fd, const char *text);

/* An answer with a JSON body and "Connection: close"; `extra` is more
 * header lines, each ending in CRLF (NULL: none). */
void scripted_respond_json(int fd, int status, const char *extra, const char *body);

/* Reads until the client closes the connection. */
void scripted_until_closed(int fd);

/* The integer "id" of a JSON-RPC message's text, 0 when there is none. */
long scripted_request_id(const char *body);

#endif /* MCP_TEST_SCRIPTED_HTTP_H */
