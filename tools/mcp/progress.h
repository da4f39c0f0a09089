/*
 * Progress notifications: on a terminal, a bar on the stderr status line
 *
 *   [##########----------]  5/10  counting down
 *
 * elsewhere one line per notification ("progress 5/10: counting down"),
 * so that a log shows them too.
 */
#ifndef MCP_CLI_PROGRESS_H
#define MCP_CLI_PROGRESS_H

#include <mcp/client.h>

/* The mcp_progress_fn every call uses (user: unused). */
void progress_report(void *user, double progress, double total, const char *message);

/* A copy of `base` that asks for progress (reported as above). */
mcp_request_options_t progress_options(const mcp_request_options_t *base);

/* Removes the bar (the call is over). */
void progress_done(void);

#endif /* MCP_CLI_PROGRESS_H */
