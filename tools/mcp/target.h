/*
 * Connecting: to a URL (Streamable HTTP), to a command after "--" (stdio),
 * or to a server of the configuration file -- with a client whose
 * callbacks do what the options say (answers, sampling, roots, logs, the
 * wire trace).
 */
#ifndef MCP_CLI_TARGET_H
#define MCP_CLI_TARGET_H

#include "cli.h"

/*
 * Fills *s and connects. Returns CLI_EXIT_OK, or the exit status after
 * reporting the failure (a usage error for a target that is neither a URL
 * nor a configured server, a connection error, ...). Call target_close()
 * in both cases.
 */
int target_open(cli_session_t *s, const cli_options_t *opt);

/* Disconnects (a stdio server is stopped) and frees the session. With
 * `show_server_stderr` (after a connection failed or broke), shows what a
 * stdio server last wrote on its stderr, once it has stopped. */
void target_close(cli_session_t *s, bool show_server_stderr);

#endif /* MCP_CLI_TARGET_H */
