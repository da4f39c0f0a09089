/*
 * Serialising jansson values into one compact line, two ways:
 *
 *   JSON_WRITE_COMPACT    members in insertion order, integers in full
 *                         (int64), reals in their shortest round-trip form
 *                         with a ".0" when integral (so they read back as
 *                         reals): the wire format of every message;
 *   JSON_WRITE_CANONICAL  RFC 8785: members sorted by UTF-16 code units,
 *                         every number as an ECMAScript double.
 *
 * Both escape strings as ECMAScript's JSON.stringify does (\b \t \n \f \r
 * \" \\, other control characters as \u00xx, everything else verbatim
 * UTF-8), so the output never contains a newline and is one stdio line.
 * Hand-written rather than jansson's json_dumps, which costs several times
 * more per message on the hot path of every response.
 *
 * Internal to the protocol layer; pure and thread-safe.
 */
#ifndef MCP_PROTOCOL_JSON_WRITER_H
#define MCP_PROTOCOL_JSON_WRITER_H

#include <stddef.h>

#include <jansson.h>

typedef enum json_write_mode {
    JSON_WRITE_COMPACT = 0,
    JSON_WRITE_CANONICAL
} json_write_mode_t;

/*
 * Serialises `value`: a malloc'd NUL-terminated string (free with free())
 * and its length in *len (if not NULL). NULL on allocation failure, for
 * trees nested deeper than 2048 levels, and (canonical mode) for numbers
 * without a canonical form.
 */
char *json_write(const json_t *value, json_write_mode_t mode, size_t *len);

/*
 * {"jsonrpc":"2.0","id":id,"result":result}, compact: the text json_write()
 * gives for mcp_jsonrpc_result(id, result), without building that object
 * (the hot path of every answer). NULL, as mcp_jsonrpc_result() would be,
 * when `id` is not a string or integer or `result` not an object, and on
 * the failures of json_write().
 */
char *json_write_result(const json_t *id, const json_t *result, size_t *len);

#endif /* MCP_PROTOCOL_JSON_WRITER_H */
