/*
 * The HTTP mode of the test servers in this directory: serve on a free
 * port of 127.0.0.1 until SIGTERM or SIGINT.
 */
#ifndef MCP_TEST_SERVE_HTTP_H
#define MCP_TEST_SERVE_HTTP_H

#include <mcp/mcp.h>

/*
 * Serves `srv` over Streamable HTTP and says where on stderr
 * ("<program>: serving http://127.0.0.1:PORT/mcp", which the tests wait
 * for), then waits for SIGTERM or SIGINT and stops. Call it before any
 * thread starts: it blocks those signals so that only it receives them.
 * Returns MCP_OK, or the error of mcp_http_server_start() (reported on
 * stderr).
 */
int serve_http_until_signal(mcp_server_t *srv, const char *program);

#endif /* MCP_TEST_SERVE_HTTP_H */
