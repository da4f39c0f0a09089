/*
 * The command line:
 *
 *   mcp [OPTIONS] TARGET COMMAND [ARGS...]
 *   mcp [OPTIONS] COMMAND [ARGS...] -- SERVER-COMMAND [SERVER-ARGS...]
 *
 * TARGET is a URL (http:// or https://) or the name of a server in the
 * configuration file; after "--" comes the command line of a stdio server.
 * Options may appear anywhere before "--", long ones as --name VALUE or
 * --name=VALUE, short ones as -x VALUE or -xVALUE.
 */
#ifndef MCP_CLI_ARGS_H
#define MCP_CLI_ARGS_H

#include "cli.h"

/*
 * Reads argv into *opt (which borrows from argv). Returns CLI_EXIT_OK, or
 * CLI_EXIT_USAGE after saying what is wrong on stderr. --help and
 * --version are only recorded (opt->help, opt->version): a command is not
 * required for them.
 */
int args_parse(int argc, char **argv, cli_options_t *opt);

#endif /* MCP_CLI_ARGS_H */
