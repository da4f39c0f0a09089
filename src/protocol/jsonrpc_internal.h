/*
 * JSON-RPC parsing with a memo, internal to libmcp (see json_reader.h).
 */
#ifndef MCP_PROTOCOL_JSONRPC_INTERNAL_H
#define MCP_PROTOCOL_JSONRPC_INTERNAL_H

#include "mcp/jsonrpc.h"
#include "protocol/json_reader.h"

/*
 * mcp_jsonrpc_parse() reading through `memo` (NULL: none): a value the
 * memo remembers may be shared with earlier and later messages, so the
 * message must only be read, never modified. With a memo, out->root of a
 * well-formed request or notification is not the message but an array
 * that owns its parts (id, method, params); read those fields, never root.
 */
int jsonrpc_parse_memo(const char *buf, size_t len, const mcp_parse_limits_t *limits,
                       mcp_message_t *out, mcp_error_t *err, json_read_memo_t *memo);

#endif /* MCP_PROTOCOL_JSONRPC_INTERNAL_H */
