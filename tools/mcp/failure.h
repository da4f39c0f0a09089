/*
 * Turning failures into a message on stderr and an exit status (and, with
 * --json, an {"error": ...} object on stdout, so that scripts reading
 * stdout always get a document).
 */
#ifndef MCP_CLI_FAILURE_H
#define MCP_CLI_FAILURE_H

#include "cli.h"

/* The exit status for a libmcp return code (MCP_E*). */
int cli_status_for(int rc);

/*
 * Reports a failure with exit status `status` and returns it:
 * "mcp: error: MESSAGE" on stderr and, when `opt` asks for JSON,
 * {"error": {"status", "kind", "message", "code"?, "data"?}} on stdout,
 * where code and data come from `rpc` (a JSON-RPC error, or NULL).
 */
int cli_fail(const cli_options_t *opt, int status, const mcp_error_t *rpc, const char *fmt, ...)
    MCP_PRINTF(4, 5);

/*
 * Reports the failure of a library call: `what` names it ("tools/call
 * add"), rc and err say what happened. Returns the exit status.
 */
int cli_fail_call(const cli_options_t *opt, const char *what, int rc, const mcp_error_t *err);

/* A mistake on the command line: "mcp: MESSAGE" and a pointer to --help
 * on stderr (and the {"error": ...} document on stdout once
 * cli_usage_json(true) was called). Returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) MCP_PRINTF(1, 2);

/* Whether usage errors also print the --json error document. */
void cli_usage_json(bool on);

#endif /* MCP_CLI_FAILURE_H */
