/*
 * Tests whose server is their own: a libmcp server run in the test's
 * process over Streamable HTTP, or the test program itself started again
 * (with an argument such as --stdio-server) over stdio; and the counters
 * such a server reports through a tool named "stats" (its
 * structuredContent, an object of integers), which read the same whichever
 * process the server runs in.
 */
#ifndef MCP_TEST_SELF_SERVED_H
#define MCP_TEST_SELF_SERVED_H

#include <stddef.h>

#include "mcp/mcp.h"

/* This program's path, for starting it again as a stdio server. Aborts
 * when /proc/self/exe cannot be read. */
const char *self_served_path(void);

/* Serves `srv` (borrowed) over HTTP on a free port of 127.0.0.1: the
 * server in *http_out, its URL ("http://127.0.0.1:PORT/mcp") in `url`.
 * Fails the test when it cannot. */
void self_served_http_start(mcp_server_t *srv, mcp_http_server_t **http_out, char *url,
                            size_t cap);

/* Stops what self_served_http_start() started and frees `srv`. NULL-safe
 * (a stdio run has neither). */
void self_served_http_stop(mcp_server_t *srv, mcp_http_server_t *http);

/* The counter `what` of the server's "stats" tool; fails the test when the
 * call fails. */
int self_served_stat(mcp_client_t *c, const char *what);

/* Waits up to 5 s for the counter `what` to reach `n`, then asserts that
 * it is `n`. */
void self_served_await_stat(mcp_client_t *c, const char *what, int n);

#endif /* MCP_TEST_SELF_SERVED_H */
