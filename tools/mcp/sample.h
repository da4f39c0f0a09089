/*
 * Sampling requests (sampling/createMessage): mcp does not talk to a
 * language model itself. With --sample-command CMD, each request is handed
 * to CMD (run by /bin/sh -c): the request, {"method":
 * "sampling/createMessage", "params": {...}}, as JSON on its stdin; the
 * CreateMessageResult as JSON on its stdout; its stderr passes through.
 * Without it mcp does not declare sampling, and a server that asks anyway
 * is refused with a message that names the option.
 */
#ifndef MCP_CLI_SAMPLE_H
#define MCP_CLI_SAMPLE_H

#include <jansson.h>

/* The mcp_sample_fn (user: the command, a string). A command that cannot
 * run, fails or prints no JSON object fails the call with MCP_EINVAL (a
 * usage error: the option is wrong), Ctrl-C with MCP_ECANCELED. */
int sample_with_command(void *user, const json_t *params, json_t **result_out);

#endif /* MCP_CLI_SAMPLE_H */
