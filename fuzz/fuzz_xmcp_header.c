/*
 * x-mcp-header collection over arbitrary JSON: no crash, no leak, and every
 * collected annotation is a valid, unique token whose path leads to a value
 * in an arguments object built along it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

#include "mcp/errors.h"
#include "mcp/xmcp_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* {"path0": {"path1": ... leaf}} for one collected header; returns the
 * arguments and stores the leaf (borrowed) in *leaf. */
static json_t *arguments_for(const mcp_param_header_t *h, json_t **leaf)
{
    json_t *value = json_string(h->name);
    *leaf = value;
    for (size_t i = h->depth; i-- > 0;) {
        json_t *parent = json_object();
        if (!parent || json_object_set_new(parent, h->path[i], value) != 0)
            abort();
        value = parent;
    }
    return value;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *schema = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!schema)
        return 0;
    mcp_param_headers_t headers;
    mcp_error_t err = {0};
    int rc = mcp_xmcp_headers_collect(schema, &headers, &err);
    if (rc != MCP_OK) {
        if (rc != MCP_EINVAL || err.code != MCP_INVALID_PARAMS || headers.count != 0)
            abort();
    }
    for (size_t i = 0; i < headers.count; i++) {
        const mcp_param_header_t *h = &headers.items[i];
        if (!mcp_is_http_token(h->name) || h->depth == 0)
            abort();
        for (size_t k = 0; k < i; k++)
            if (strcasecmp(headers.items[k].name, h->name) == 0)
                abort();
        json_t *leaf;
        json_t *args = arguments_for(h, &leaf);
        if (mcp_param_header_value(h, args) != leaf)
            abort();
        json_decref(args);
    }
    mcp_param_headers_clear(&headers);
    mcp_error_clear(&err);
    json_decref(schema);
    return 0;
}
