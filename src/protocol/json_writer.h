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

/* Compact JSON text: `len` bytes at `text`. */
typedef struct json_text {
    const char *text;
    size_t len;
} json_text_t;

/*
 * Text already written for the elements of one array of a tree: `n`
 * texts, what json_write() in compact mode gives for each element of
 * `node`, in order; `len` is the sum of their lengths. The server keeps
 * the text of each tool, resource and prompt it lists, and writes a list
 * page by pasting them rather than walking a thousand trees for every
 * tools/list.
 */
typedef struct json_splice {
    const json_t *node; /* NULL: nothing to paste */
    const json_text_t *items;
    size_t n, len;
} json_splice_t;

/*
 * json_write_result(), writing splice's texts, in brackets and separated
 * by commas, where it meets splice->node (`splice` NULL: nothing is
 * pasted). The caller vouches that the texts are the node's elements':
 * they are pasted as they are.
 */
char *json_write_result_spliced(const json_t *id, const json_t *result,
                                const json_splice_t *splice, size_t *len);

/*
 * One member of a result written by json_write_result_members(): `value`
 * written as json_write() would, or, when `value` is NULL, a value written
 * from text in three parts: the `raw_len` bytes at `raw` verbatim, then,
 * when `string` is not NULL, its `string_len` bytes (valid UTF-8) as a
 * JSON string, then the `raw_after_len` bytes at `raw_after` verbatim.
 * Together they must make one compact JSON value: [{"text": + "hi" + }],
 * say.
 */
typedef struct json_member {
    const char *key; /* NUL-terminated */
    const json_t *value;
    const char *raw;
    size_t raw_len;
    const char *string;
    size_t string_len;
    const char *raw_after;
    size_t raw_after_len;
} json_member_t;

/*
 * {"jsonrpc":"2.0","id":id,"result":{members...}}, compact, the members in
 * the order given: the text json_write_result() gives for a result object
 * holding those members, without building that object (a server writes
 * its commonest answers this way). NULL when `id` is not a string or
 * integer, when `n` members are given with `members` NULL, and on the
 * failures of json_write().
 */
char *json_write_result_members(const json_t *id, const json_member_t *members, size_t n,
                                size_t *len);

#endif /* MCP_PROTOCOL_JSON_WRITER_H */
