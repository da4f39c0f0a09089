/*
 * mcp --help, mcp COMMAND --help and mcp --version, on stdout.
 */
#ifndef MCP_CLI_HELP_H
#define MCP_CLI_HELP_H

#include "cli.h"

/* The overview: usage, commands, options, exit statuses. */
void help_print(void);

/* The help of one command. */
void help_print_command(const cli_command_t *cmd);

/* "mcp (libmcp) 0.1.0" and the protocol versions spoken. */
void help_print_version(void);

#endif /* MCP_CLI_HELP_H */
