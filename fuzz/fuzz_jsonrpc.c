/*
 * Fuzzes mcp_jsonrpc_parse with the default limits and with small ones.
 * Every accepted message must be a well-formed tree within the limits, and
 * must survive mcp_json_dump + mcp_jsonrpc_parse as the same message.
 * Every rejection must carry -32700 or -32600. The response writer that
 * builds no tree (json_write_result) must write what building the response
 * and dumping it writes, for the message's id with its result or params.
 * The server's reading, through a memo that may read a request's envelope
 * without its tree, must give the same outcome and the same message.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "protocol/json_writer.h"
#include "protocol/jsonrpc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Nesting depth of a decoded tree, counted as mcp_json_depth counts text. */
static int tree_depth(const json_t *j)
{
    int deepest = 0;
    if (json_is_object(j)) {
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)j, key, value) {
            int d = tree_depth(value);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    if (json_is_array(j)) {
        size_t i;
        const json_t *value;
        json_array_foreach(j, i, value) {
            int d = tree_depth(value);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    return 0;
}

/* Parses, checks the outcome, and tells whether the message was accepted. */
static bool check(const char *buf, size_t len, const mcp_parse_limits_t *limits, int max_depth)
{
    mcp_message_t msg;
    mcp_error_t err = {0};
    int rc = mcp_jsonrpc_parse(buf, len, limits, &msg, &err);
    if (rc != MCP_OK) {
        if (rc != MCP_EINVAL && rc != MCP_ENOMEM)
            abort();
        if (rc == MCP_EINVAL && err.code != MCP_PARSE_ERROR && err.code != MCP_INVALID_REQUEST)
            abort();
        /* The id is kept only together with its root. */
        if (msg.id && !msg.root)
            abort();
        /* The error must always render as a JSON-RPC error response. */
        json_t *response = mcp_jsonrpc_error_from(msg.id, &err);
        if (!response)
            abort();
        json_decref(response);
        mcp_message_clear(&msg);
        mcp_error_clear(&err);
        return false;
    }

    if (msg.kind == MCP_MSG_INVALID || !json_is_object(msg.root))
        abort();
    if (tree_depth(msg.root) > max_depth)
        abort();
    if ((msg.kind == MCP_MSG_REQUEST || msg.kind == MCP_MSG_NOTIFICATION) &&
        strlen(msg.method) != json_string_length(json_object_get(msg.root, "method")))
        abort();

    size_t out_len;
    char *text = mcp_json_dump(msg.root, &out_len);
    if (!text || memchr(text, '\n', out_len))
        abort();
    /* The dump may be longer than the input (escapes), so re-parse it with
     * the default size limit but the same depth limit. */
    mcp_parse_limits_t again_limits = {.max_depth = max_depth};
    mcp_message_t again;
    if (mcp_jsonrpc_parse(text, out_len, &again_limits, &again, NULL) != MCP_OK)
        abort();
    if (again.kind != msg.kind || !json_equal(again.root, msg.root))
        abort();
    if ((msg.id == NULL) != (again.id == NULL) || (msg.id && !json_equal(msg.id, again.id)))
        abort();

    const json_t *body = msg.kind == MCP_MSG_RESULT ? msg.result : msg.params;
    if (msg.id && body) {
        size_t direct_len, built_len;
        char *direct = json_write_result(msg.id, body, &direct_len);
        json_t *built = mcp_jsonrpc_result(msg.id, json_incref((json_t *)body));
        char *built_text = mcp_json_dump(built, &built_len);
        if (!direct || !built_text || direct_len != built_len ||
            memcmp(direct, built_text, direct_len) != 0)
            abort();
        free(direct);
        free(built_text);
        json_decref(built);
    }

    free(text);
    mcp_message_clear(&again);
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
    return true;
}

/* The memo outlives the inputs, as a server thread's does. */
static json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};

static bool same_value(const json_t *a, const json_t *b)
{
    return (a == NULL) == (b == NULL) && (!a || json_equal(a, b));
}

static void check_memo_reading(const char *buf, size_t len, const mcp_parse_limits_t *limits)
{
    mcp_message_t plain, read;
    mcp_error_t plain_err = {0}, read_err = {0};
    int plain_rc = mcp_jsonrpc_parse(buf, len, limits, &plain, &plain_err);
    int read_rc = jsonrpc_parse_memo(buf, len, limits, &read, &read_err, &memo);
    if (plain_rc != read_rc || plain_err.code != read_err.code || plain.kind != read.kind ||
        strcmp(plain_err.message, read_err.message) != 0)
        abort();
    if (!same_value(plain.id, read.id) || !same_value(plain.params, read.params) ||
        !same_value(plain.result, read.result) || !same_value(plain.error, read.error))
        abort();
    if ((plain.method == NULL) != (read.method == NULL) ||
        (plain.method && strcmp(plain.method, read.method) != 0))
        abort();
    mcp_message_clear(&plain);
    mcp_message_clear(&read);
    mcp_error_clear(&plain_err);
    mcp_error_clear(&read_err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    check_memo_reading(buf, size, NULL);
    check_memo_reading(buf, size, &(mcp_parse_limits_t){.max_bytes = 256, .max_depth = 4});
    check(buf, size, NULL, MCP_DEFAULT_MAX_DEPTH);
    mcp_parse_limits_t small = {.max_bytes = 256, .max_depth = 4};
    bool accepted = check(buf, size, &small, small.max_depth);

    /* The pre-scan never reports more than max + 1, and agrees with itself
     * and with the parser's limit on an accepted text. */
    int depth = mcp_json_depth(buf, size, 4);
    if (depth < 0 || depth > 5)
        abort();
    if (depth <= 4 && mcp_json_depth(buf, size, 1000) != depth)
        abort();
    if (accepted && depth > 4)
        abort();
    return 0;
}
