/*
 * A small blocking HTTP client for the integration tests (libcurl), plus
 * helpers to build MCP requests and read MCP answers (JSON or an event
 * stream). Every function may be called from several threads at once;
 * call http_client_init() once first, before any thread starts.
 */
#ifndef MCP_TEST_HTTP_CLIENT_H
#define MCP_TEST_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "mcp/server_http.h"

typedef struct http_request {
    const char *base;           /* "http://127.0.0.1:PORT" */
    const char *method;         /* NULL: POST */
    const char *path;           /* NULL: "/mcp" */
    const char *target;         /* the request line's target, when not the path (NULL) */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; "Name:" removes
                                   a header curl would send by default */
    const char *body;           /* NULL: no body */
    size_t body_len;            /* 0 with a body: strlen(body) */
    bool chunked;               /* upload with Transfer-Encoding: chunked */
    long timeout_ms;            /* whole transfer; 0 picks 20000 */
    const char *ca_file;        /* https: the certificate to trust */
    /* Every body chunk as it arrives; return false to abort the transfer
     * (the connection is closed at once). */
    bool (*on_body)(void *user, const char *data, size_t len);
    void *user;
} http_request_t;

typedef struct http_response {
    int curl_code;  /* CURLE_OK (0) when the transfer completed */
    long status;    /* 0 when no response arrived */
    char *head;     /* the response's header lines */
    char *body;     /* NUL-terminated */
    size_t body_len;
} http_response_t;

void http_client_init(void);

/* `opts` (NULL: defaults) with the engine the environment asks for:
 * MCP_TEST_HTTP_ENGINE=libmicrohttpd runs a test's servers on
 * libmicrohttpd, so that one test file checks both engines (CMake
 * registers such tests twice). */
mcp_http_options_t http_test_server_options(const mcp_http_options_t *opts);

/* Performs the request; always fills *resp (free with http_response_free). */
void http_call(const http_request_t *req, http_response_t *resp);

/* The trimmed value of header `name` (case-insensitive) in the response, in
 * a malloc'd string, or NULL when absent. */
char *http_header(const http_response_t *resp, const char *name);

/* True when the response has header `name` with exactly `value` (trimmed). */
bool http_header_is(const http_response_t *resp, const char *name, const char *value);

void http_response_free(http_response_t *resp);

/*
 * The text of a 2026-07-28 request: {"jsonrpc":"2.0","id":id,"method":...,
 * "params":{<params_members>, "_meta":{protocolVersion, clientInfo,
 * clientCapabilities <+ meta_members>}}}. `params_members` and
 * `meta_members` are JSON object members without braces ("" or NULL for
 * none). A negative id makes a notification. Returns a malloc'd string.
 */
char *mcp_text(int id, const char *method, const char *params_members, const char *meta_members);

/* The JSON-RPC messages of an answer body: one for application/json, one
 * per event for text/event-stream (every event must be "message"; a
 * malformed stream gives NULL). Returns a new array. */
json_t *mcp_messages(const http_response_t *resp);

#endif
