/*
 * --json output: one JSON document per command on stdout (listen: one
 * compact document per line), so that scripts can rely on its shape. The
 * documents are the protocol's own objects wherever there is one (a
 * CallToolResult, a ReadResourceResult, ...); mcp(1) lists them.
 */
#ifndef MCP_CLI_JSON_OUT_H
#define MCP_CLI_JSON_OUT_H

#include <jansson.h>

/* Prints `value` (borrowed) indented, with a final newline, on stdout. */
void json_out_print(const json_t *value);

/* Prints `value` (borrowed) as one compact line on stdout and flushes it. */
void json_out_line(const json_t *value);

#endif /* MCP_CLI_JSON_OUT_H */
