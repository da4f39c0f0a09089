/*
 * Fuzzes the server-side classification of a request (era, legacy check,
 * validation ladder) together with the capability checks and the result
 * shaping that run on the same peer-controlled JSON.
 *
 * Input: a flags byte, then HTTP header lines ("Name: value\n"), a blank
 * line, and the JSON-RPC body. Flag bits: 1 = not HTTP (headers ignored),
 * 2 = method unknown to the server, 4 = pass a tool inputSchema with
 * x-mcp-header annotations, 8 = require {"sampling":{"tools":{}}}, 16 = hand
 * those annotations over collected, as the server does.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/capabilities.h"
#include "mcp/jsonrpc.h"
#include "mcp/request.h"
#include "mcp/result.h"

#include "support/header_lines.h"

#define MAX_HEADERS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
    "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
    "\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry\"},"
    "\"outer\":{\"type\":\"object\",\"properties\":{"
    "\"inner\":{\"type\":\"string\",\"x-mcp-header\":\"Inner\"}}}}}";

static void exercise_shaping(const mcp_message_t *msg)
{
    const json_t *meta = json_object_get(msg->params, "_meta");
    const json_t *caps = json_object_get(meta, MCP_META_CLIENT_CAPABILITIES);
    json_t *needed = NULL;
    json_t *missing = NULL;

    mcp_client_caps_allow(caps, msg->method, msg->params, &needed);
    mcp_client_caps_cover(caps, json_object_get(msg->params, "required"), &missing);
    json_decref(needed);
    json_decref(missing);

    /* The params object stands in for a handler's result. */
    json_t *result = json_deep_copy(msg->params);
    json_t *info = json_pack("{s:s, s:s}", "name", "fuzz", "version", "1");
    mcp_result_shape_t shape = {info, -1, NULL};
    mcp_error_t err = {0};
    if (result)
        mcp_shape_modern_result(msg->method, result, &shape, &err);
    mcp_error_clear(&err);
    json_decref(result);
    json_decref(info);

    json_t *error = json_deep_copy(msg->error);
    mcp_shape_modern_error(error);
    mcp_http_status_for_response(msg->root, true);
    json_decref(error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    /* Header block: up to the first blank line, without NUL bytes. */
    const char *blank = NULL;
    for (size_t i = 0; i + 1 < len; i++)
        if (text[i] == '\n' && text[i + 1] == '\n') {
            blank = text + i;
            break;
        }
    size_t head_len = blank ? (size_t)(blank - text) : 0;
    if (memchr(text, '\0', head_len))
        return 0;
    const char *body = blank ? blank + 2 : text;
    size_t body_len = len - (size_t)(body - text);

    char *block = malloc(head_len + 1);
    if (!block)
        return 0;
    memcpy(block, text, head_len);
    block[head_len] = '\0';
    mcp_header_t items[MAX_HEADERS];
    mcp_headers_t list = {items, fuzz_split_header_lines(block, items, MAX_HEADERS)};
    const mcp_headers_t *headers = (flags & 1) ? NULL : &list;

    mcp_message_t msg;
    mcp_error_t err = {0};
    memset(&msg, 0, sizeof msg);
    if (mcp_jsonrpc_parse(body, body_len, NULL, &msg, &err) == MCP_OK) {
        int status = 0;
        mcp_error_clear(&err);
        if (mcp_request_era(&msg) == MCP_ERA_LEGACY) {
            mcp_check_legacy_request(&msg, headers, &status, &err);
        } else {
            static const char *const versions[] = {"2026-07-28"};
            json_t *schema = (flags & 4) ? json_loads(schema_text, 0, NULL) : NULL;
            json_t *required = (flags & 8) ? json_pack("{s:{s:{}}}", "sampling", "tools") : NULL;
            /* flags & 16: the annotations collected beforehand, as the
             * server hands them over. */
            mcp_param_headers_t collected = {0};
            bool precollected = (flags & 16) && schema &&
                                mcp_xmcp_headers_collect(schema, &collected, NULL) == MCP_OK;
            mcp_request_check_t check = {.msg = &msg,
                                         .headers = headers,
                                         .versions = versions,
                                         .n_versions = 1,
                                         .method_known = !(flags & 2),
                                         .required_capabilities = required,
                                         .input_schema = precollected ? NULL : schema,
                                         .param_headers = precollected ? &collected : NULL};
            mcp_check_modern_request(&check, &status, &err);
            mcp_param_headers_clear(&collected);
            json_decref(schema);
            json_decref(required);
        }
        exercise_shaping(&msg);
    }
    mcp_error_clear(&err);
    mcp_message_clear(&msg);
    free(block);
    return 0;
}
