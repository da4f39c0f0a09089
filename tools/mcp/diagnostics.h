/*
 * What is said besides the answers, all on stderr: the server's log
 * messages (notifications/message), and with --verbose every message on
 * the wire and libmcp's own diagnostics.
 */
#ifndef MCP_CLI_DIAGNOSTICS_H
#define MCP_CLI_DIAGNOSTICS_H

#include <mcp/client.h>

/* mcp_server_log_fn: "server warning [logger]: message". */
void diagnostics_server_log(void *user, const char *level, const char *logger,
                            const json_t *data);

/* mcp_trace_fn (--verbose): "-> {...}" for what was sent, "<- {...}" for
 * what was received. */
void diagnostics_trace(void *user, mcp_trace_direction_t direction, const char *text,
                       size_t len);

/* mcp_log_fn (--verbose): "mcp: libmcp: warning: message". */
void diagnostics_library_log(void *user, mcp_log_level_t level, const char *msg);

#endif /* MCP_CLI_DIAGNOSTICS_H */
