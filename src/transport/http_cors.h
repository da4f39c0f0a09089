/*
 * Cross-origin access for browser clients (CORS, as the Fetch standard
 * defines it), for an endpoint whose `cors` option is on: which requests
 * it concerns and the headers their answers carry. Whether an origin may
 * call at all is decided before, by the Origin check (allowed_origins):
 * CORS only lets a page that passed it read the answers.
 *
 * Pure functions of their arguments; thread-safe.
 */
#ifndef MCP_TRANSPORT_HTTP_CORS_H
#define MCP_TRANSPORT_HTTP_CORS_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp/headers.h"

/* The most headers http_cors_answer_headers() and
 * http_cors_preflight_headers() add. */
#define HTTP_CORS_ANSWER_HEADERS 3
#define HTTP_CORS_PREFLIGHT_HEADERS 5

/* The origin to answer for: the request's Origin when `enabled` and it
 * sent exactly one, else NULL. Points into `headers`. */
const char *http_cors_origin(bool enabled, const mcp_headers_t *headers);

/* A preflight: OPTIONS with Access-Control-Request-Method. */
bool http_cors_is_preflight(const char *method, const mcp_headers_t *headers);

/* Appends at headers[*n] what every answer to a page at `origin` carries:
 * the origin allowed, Vary: Origin (the answer depends on it), and the
 * MCP response headers a client reads exposed. The strings are static or
 * `origin` itself. */
void http_cors_answer_headers(const char *origin, mcp_header_t *headers, size_t *n);

/* Fills out[] with a preflight's answer for `origin`: the answer headers,
 * the methods the endpoint takes (POST; GET and DELETE too with legacy
 * sessions), the request headers the page asked for (when they are a
 * plain list of names: MCP's own, Authorization, Mcp-Param-* ...), and how
 * long the browser may remember it. Returns how many. */
size_t http_cors_preflight_headers(const char *origin, const mcp_headers_t *request, bool sessions,
                                   mcp_header_t out[HTTP_CORS_PREFLIGHT_HEADERS]);

#endif /* MCP_TRANSPORT_HTTP_CORS_H */
