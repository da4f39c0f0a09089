/*
 * Building a modern request: the _meta every request carries (digest
 * section 1.2) and the HTTP hints the transport turns into headers
 * (section 4.2, 4.6). Pure functions.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "json_copy.h"
#include "mcp/header_value.h"
#include "mcp/jsonrpc.h"
#include "mcp/request.h"

json_t *client_request_build(json_int_t id, const char *method, const json_t *params,
                             const client_meta_t *meta, bool progress)
{
    json_t *p = json_is_object(params) ? mcp_json_copy_object(params) : json_object();
    if (!p)
        return NULL;
    json_t *given = json_object_get(p, "_meta");
    json_t *m = json_is_object(given) ? mcp_json_copy_object(given) : json_object();
    bool ok = m != NULL;
    ok = ok && json_object_set_new(m, MCP_META_PROTOCOL_VERSION,
                                   json_string(meta->protocol_version)) == 0;
    ok = ok && json_object_set_new(m, MCP_META_CLIENT_CAPABILITIES,
                                   meta->capabilities ? json_deep_copy(meta->capabilities)
                                                      : json_object()) == 0;
    if (ok && meta->client_info)
        ok = json_object_set_new(m, MCP_META_CLIENT_INFO, json_deep_copy(meta->client_info)) == 0;
    else if (ok)
        json_object_del(m, MCP_META_CLIENT_INFO);
    if (ok && meta->log_level)
        ok = json_object_set_new(m, MCP_META_LOG_LEVEL, json_string(meta->log_level)) == 0;
    else if (ok)
        json_object_del(m, MCP_META_LOG_LEVEL);
    /* The request's own id is its progress token: unique among the
     * requests in flight, and the key the stdio router already uses. */
    if (ok && progress)
        ok = json_object_set_new(m, "progressToken", json_integer(id)) == 0;
    else if (ok)
        json_object_del(m, "progressToken");
    if (!ok || json_object_set_new(p, "_meta", m) != 0) {
        if (!ok)
            json_decref(m);
        json_decref(p);
        return NULL;
    }
    json_t *idv = json_integer(id);
    json_t *req = idv ? mcp_jsonrpc_request(idv, method, p) : (json_decref(p), NULL);
    json_decref(idv);
    return req;
}

void client_hints_clear(client_hints_t *hints)
{
    for (size_t i = 0; i < hints->n_params; i++) {
        free((char *)hints->params[i].name);
        free((char *)hints->params[i].value);
    }
    free(hints->params);
    free(hints->name);
    memset(hints, 0, sizeof *hints);
}

int client_hints_build(client_hints_t *out, const char *protocol_version, const char *method,
                       const json_t *params, const mcp_param_headers_t *tool_headers)
{
    memset(out, 0, sizeof *out);
    out->h.protocol_version = protocol_version;
    out->h.method = method;
    out->h.long_lived = strcmp(method, "subscriptions/listen") == 0;

    const char *name_param = mcp_method_name_param(method);
    const char *name = name_param ? json_string_value(json_object_get(params, name_param)) : NULL;
    if (name) {
        if (!(out->name = strdup(name)))
            return MCP_ENOMEM;
        out->h.name = out->name;
    }

    if (!tool_headers || tool_headers->count == 0 || strcmp(method, "tools/call") != 0)
        return MCP_OK;
    const json_t *arguments = json_object_get(params, "arguments");
    out->params = calloc(tool_headers->count, sizeof *out->params);
    if (!out->params)
        return MCP_ENOMEM;
    for (size_t i = 0; i < tool_headers->count; i++) {
        const mcp_param_header_t *ph = &tool_headers->items[i];
        const json_t *value = mcp_param_header_value(ph, arguments);
        char *encoded = NULL;
        if (!value)
            continue;
        int rc = mcp_header_value_from_json(value, &encoded);
        if (rc == MCP_ENOMEM)
            return rc;
        if (rc != MCP_OK)
            continue;
        /* The names are copied: the tool table may change while the
         * request is in flight. */
        char *header_name = strdup(ph->name);
        if (!header_name) {
            free(encoded);
            return MCP_ENOMEM;
        }
        out->params[out->n_params].name = header_name;
        out->params[out->n_params].value = encoded;
        out->n_params++;
    }
    out->h.params = out->params;
    out->h.n_params = out->n_params;
    return MCP_OK;
}
