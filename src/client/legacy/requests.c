/*
 * Requests on the legacy wire (digest section 10): the params as the
 * method defines them, with _meta only for a progress token; on HTTP the
 * MCP-Protocol-Version header (from 2025-06-18 on) and the session, none
 * of the 2026-07-28 headers. Plus the two calls only the legacy protocol
 * has a method for: ping and logging/setLevel.
 */
#include <stdlib.h>
#include <string.h>

#include "client/legacy/legacy.h"
#include "mcp/jsonrpc.h"
#include "mcp/request.h"
#include "mcp/version.h"

json_t *client_legacy_request_build(json_int_t id, const char *method, const json_t *params,
                                    bool progress)
{
    json_t *p = json_is_object(params) ? json_deep_copy(params) : json_object();
    if (!p)
        return NULL;
    json_t *meta = json_object_get(p, "_meta");
    if (json_is_object(meta)) {
        /* The modern envelope keys mean nothing to a legacy server; the
         * caller's own keys (traceparent, ...) stay. */
        const char *key;
        void *tmp;
        json_t *value;
        json_object_foreach_safe(meta, tmp, key, value) {
            if (strncmp(key, "io.modelcontextprotocol/", 24) == 0 || strcmp(key, "progressToken") == 0)
                json_object_del(meta, key);
        }
    }
    if (progress) {
        if (!json_is_object(meta)) {
            meta = json_object();
            if (!meta || json_object_set_new(p, "_meta", meta) != 0) {
                json_decref(p);
                return NULL;
            }
        }
        /* The request's own id is its token, as on the modern path: the
         * stdio router finds the call by it. */
        if (json_object_set_new(meta, "progressToken", json_integer(id)) != 0) {
            json_decref(p);
            return NULL;
        }
    } else if (json_is_object(meta) && json_object_size(meta) == 0) {
        json_object_del(p, "_meta");
    }
    json_t *idv = json_integer(id);
    json_t *req = idv ? mcp_jsonrpc_request(idv, method, p) : (json_decref(p), NULL);
    json_decref(idv);
    return req;
}

const char *client_legacy_header_version(const char *version)
{
    if (!version || strcmp(version, MCP_PROTOCOL_2025_06_18) < 0)
        return NULL;
    return version;
}

bool client_legacy_method_unknown(const char *method)
{
    return strcmp(method, "server/discover") == 0 || strcmp(method, "subscriptions/listen") == 0;
}

/* ------------------------------------------------------------------------
 * ping and logging/setLevel (both eras)
 * ------------------------------------------------------------------------ */

int mcp_client_ping(mcp_client_t *client, const mcp_request_options_t *opts, mcp_error_t *err)
{
    if (!client)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client is required");
    mcp_request_options_t o = opts ? *opts : (mcp_request_options_t){0};
    o.bypass_cache = true;
    json_t *result = NULL;
    int rc = client_call(client, client->legacy ? "ping" : "server/discover", NULL, &o,
                         &result, err);
    json_decref(result);
    return rc;
}

int mcp_client_set_log_level(mcp_client_t *client, const char *level, mcp_error_t *err)
{
    if (!client)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client is required");
    if (level && mcp_log_level_index(level) < 0)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "unknown log level \"%s\"", level);
    pthread_mutex_lock(&client->lock);
    client->log_level = client_log_level_name(level);
    pthread_mutex_unlock(&client->lock);
    if (!client->legacy || !level)
        return MCP_OK;
    json_t *params = json_pack("{s:s}", "level", level);
    json_t *result = NULL;
    int rc = params ? client_call(client, "logging/setLevel", params, NULL, &result, err)
                    : mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    json_decref(params);
    json_decref(result);
    return rc;
}
