/*
 * JSON-RPC 2.0 messages: parse one message from bytes, build messages.
 *
 * MCP sends exactly one JSON-RPC message per stdio line or HTTP body; batches
 * (JSON arrays) are rejected. The parser checks the size before parsing and
 * the nesting depth while parsing, before anything too deep is built (the
 * parser recurses, and dumping deep documents needs a deep stack), is as
 * strict as jansson's loader, rejects
 * duplicate object keys (a smuggling risk between headers and body), and
 * accepts \u0000 inside strings.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_JSONRPC_H
#define MCP_JSONRPC_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcp_msg_kind {
    MCP_MSG_INVALID = 0,
    MCP_MSG_REQUEST,      /* has id and method */
    MCP_MSG_NOTIFICATION, /* has method, no id */
    MCP_MSG_RESULT,       /* has id and result */
    MCP_MSG_ERROR         /* has error (id may be absent or null) */
} mcp_msg_kind_t;

/* Limits on a message: its size is checked before parsing, its depth while
 * parsing (a syntax error earlier in the text is reported first). Zero (or
 * negative) fields take the defaults below. */
typedef struct mcp_parse_limits {
    size_t max_bytes; /* default MCP_DEFAULT_MAX_MESSAGE_BYTES */
    int max_depth;    /* default MCP_DEFAULT_MAX_DEPTH (arrays + objects) */
} mcp_parse_limits_t;

#define MCP_DEFAULT_MAX_MESSAGE_BYTES ((size_t)16 * 1024 * 1024)
#define MCP_DEFAULT_MAX_DEPTH 64

/*
 * One parsed message. `root` owns everything; the other pointers borrow from
 * it and live as long as `root` does. Release with mcp_message_clear().
 */
typedef struct mcp_message {
    mcp_msg_kind_t kind;
    json_t *root;       /* the whole message (owned) */
    json_t *id;         /* string or integer; NULL for notifications (and
                           for errors whose id is absent or null). A string
                           id may contain NUL: compare ids with json_equal() */
    const char *method; /* requests and notifications */
    json_t *params;     /* object, or NULL when absent */
    json_t *result;     /* MCP_MSG_RESULT */
    json_t *error;      /* MCP_MSG_ERROR: the error object */
} mcp_message_t;

/*
 * Parses exactly one JSON-RPC 2.0 message from buf[0..len).
 *
 * Success: returns MCP_OK and fills *out.
 * Failure: returns MCP_EINVAL (or MCP_ENOMEM) and fills *err with
 *   -32700 Parse error  for bytes that are not one JSON value (invalid JSON,
 *                       bad UTF-8, trailing garbage, integer overflow,
 *                       duplicate keys); err->data = {"line","column",
 *                       "position"} of the problem;
 *   -32600 Invalid Request  for a batch (array), over-size input, too deep
 *                       nesting, a non-object, "jsonrpc" not exactly "2.0",
 *                       an id that is not a string or integer, a method
 *                       that is not a string (or contains NUL), params that
 *                       are not an object (positional params are not used
 *                       by MCP), or a shape that is none of the four kinds
 *                       (method with result/error, result with error, a
 *                       result that is not an object or lacks an id, an
 *                       error without integer code and string message).
 *   When a request's id could be read, out->id (and out->root) are kept so
 *   the error response can carry the id; otherwise out->id and out->root
 *   are NULL.
 * In every case the caller must call mcp_message_clear(out).
 *
 * `limits` may be NULL for the defaults. `out` must not be NULL; `err` may.
 * `buf` may be NULL only when len is 0 (otherwise MCP_EINVAL, err->code 0).
 * Object keys containing \u0000 cannot be represented and count as -32700.
 */
MCP_API int mcp_jsonrpc_parse(const char *buf, size_t len, const mcp_parse_limits_t *limits,
                              mcp_message_t *out, mcp_error_t *err);

/*
 * Classifies an already decoded JSON value as a message, with the same rules
 * and errors as mcp_jsonrpc_parse (except the byte checks). `root` is
 * borrowed; out->root takes a new reference to it.
 */
MCP_API int mcp_jsonrpc_from_json(json_t *root, mcp_message_t *out, mcp_error_t *err);

/* Releases out->root and zeroes *out. NULL-safe. */
MCP_API void mcp_message_clear(mcp_message_t *msg);

/*
 * Scans raw JSON text and returns the maximum nesting depth of arrays and
 * objects (strings and escapes are skipped correctly), stopping early with
 * max_depth + 1 once the limit is exceeded (max_depth is clamped to
 * 0..INT_MAX-1). Does not validate the JSON; a NULL buf gives 0.
 */
MCP_API int mcp_json_depth(const char *buf, size_t len, int max_depth);

/* Builders. Each returns a new message object, or NULL on allocation failure,
 * invalid UTF-8 in a string argument, or an argument that would make a
 * message mcp_jsonrpc_parse() rejects (an id that is not a string or integer,
 * a NULL method, params or result that are not objects). `id` is borrowed
 * (the message takes its own reference); `*_new` arguments are stolen, even
 * on failure. */

/* {"jsonrpc":"2.0","id":id,"method":method,"params":params_new?} */
MCP_API json_t *mcp_jsonrpc_request(const json_t *id, const char *method, json_t *params_new);

/* {"jsonrpc":"2.0","method":method,"params":params_new?} */
MCP_API json_t *mcp_jsonrpc_notification(const char *method, json_t *params_new);

/* {"jsonrpc":"2.0","id":id,"result":result_new} */
MCP_API json_t *mcp_jsonrpc_result(const json_t *id, json_t *result_new);

/*
 * {"jsonrpc":"2.0","id":id,"error":{"code","message","data"?}}. A NULL id
 * (or a JSON null) omits the member (the request's id could not be read; the
 * 2026-07-28 schema makes it optional rather than null). A NULL message uses
 * mcp_error_code_name(code).
 */
MCP_API json_t *mcp_jsonrpc_error(const json_t *id, int code, const char *message,
                                  json_t *data_new);

/* The error response for err (code 0 becomes -32603; a NULL err gives
 * -32603 "Internal error"). `id` as for mcp_jsonrpc_error(). */
MCP_API json_t *mcp_jsonrpc_error_from(const json_t *id, const mcp_error_t *err);

/*
 * Serialises a message (or any JSON value) compactly: no newlines, so it is a
 * valid stdio line, and UTF-8 is written as is, not as \u escapes. Returns a
 * malloc'd NUL-terminated string (free with free()) and its length in *len
 * (if len is not NULL; 0 on failure), or NULL when msg is NULL or on failure.
 */
MCP_API char *mcp_json_dump(const json_t *msg, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* MCP_JSONRPC_H */
