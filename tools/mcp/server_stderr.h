/*
 * What a stdio server writes on its stderr. Servers log there freely, so
 * mcp keeps quiet about it: with --verbose each line is shown as it comes;
 * otherwise the last lines are kept, and shown only when the connection
 * breaks -- which is when they explain something ("cannot open database").
 * (When connecting fails, libmcp's error message carries them already.)
 */
#ifndef MCP_CLI_SERVER_STDERR_H
#define MCP_CLI_SERVER_STDERR_H

#include <stdbool.h>

typedef struct server_stderr server_stderr_t;

/* `live`: show each line at once. NULL when out of memory. */
server_stderr_t *server_stderr_new(bool live);

/* The mcp_stderr_fn of the stdio target (user: the server_stderr_t). */
void server_stderr_line(void *user, const char *line);

/* Shows the kept lines on stderr, under a heading, and forgets them. */
void server_stderr_show(server_stderr_t *s);

void server_stderr_free(server_stderr_t *s);

#endif /* MCP_CLI_SERVER_STDERR_H */
