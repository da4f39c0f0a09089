/* Legacy-era negotiation and shapes (mcp/legacy.h). */
#include <string.h>

#include "mcp/errors.h"
#include "mcp/legacy.h"
#include "mcp/version.h"

const char *mcp_legacy_negotiate_version(const char *requested)
{
    size_t n;
    const char *const *legacy = mcp_protocol_versions_legacy(&n);
    for (size_t i = 0; requested && i < n; i++)
        if (strcmp(legacy[i], requested) == 0)
            return legacy[i];
    return MCP_PROTOCOL_LATEST_LEGACY;
}

static void strip_reserved_meta(json_t *obj)
{
    json_t *meta = json_object_get(obj, "_meta");
    if (!json_is_object(meta))
        return;
    const char *key;
    void *tmp;
    json_t *value;
    json_object_foreach_safe(meta, tmp, key, value) {
        if (strncmp(key, "io.modelcontextprotocol/", 24) == 0)
            json_object_del(meta, key);
    }
    if (json_object_size(meta) == 0)
        json_object_del(obj, "_meta");
}

void mcp_shape_legacy_result(const char *method, json_t *result, const char *version)
{
    (void)method;
    (void)version;
    if (!json_is_object(result))
        return;
    json_object_del(result, "resultType");
    json_object_del(result, "ttlMs");
    json_object_del(result, "cacheScope");
    strip_reserved_meta(result);
    const json_t *structured = json_object_get(result, "structuredContent");
    if (structured && !json_is_object(structured))
        json_object_del(result, "structuredContent");
}

void mcp_shape_legacy_error(const char *method, json_t *error_obj)
{
    json_t *code = json_object_get(error_obj, "code");
    if (json_integer_value(code) == MCP_MISSING_CLIENT_CAPABILITY) {
        /* -32021 is a 2026-07-28 code that 2025 clients do not know: to
         * them a request the server cannot serve with what they declared
         * is invalid params. The message and data.requiredCapabilities
         * still say what is missing. */
        json_object_set_new(error_obj, "code", json_integer(MCP_INVALID_PARAMS));
        return;
    }
    if (!method || strcmp(method, "resources/read") != 0)
        return;
    json_t *data = json_object_get(error_obj, "data");
    if (json_integer_value(code) == MCP_INVALID_PARAMS && json_is_string(json_object_get(data, "uri")))
        json_object_set_new(error_obj, "code", json_integer(MCP_LEGACY_RESOURCE_NOT_FOUND));
}

json_t *mcp_legacy_server_capabilities(const json_t *modern_caps)
{
    json_t *caps = json_is_object(modern_caps) ? json_deep_copy(modern_caps) : json_object();
    if (caps)
        json_object_del(caps, "extensions");
    return caps;
}

json_t *mcp_legacy_request_params(const char *method, const json_t *params, const char *version,
                                  const char *elicitation_id)
{
    json_t *out = json_is_object(params) ? json_deep_copy(params) : json_object();
    if (!out || !method || strcmp(method, "elicitation/create") != 0)
        return out;
    const char *mode = json_string_value(json_object_get(out, "mode"));
    bool url = mode && strcmp(mode, "url") == 0;
    /* Modes arrived with 2025-11-25; before it, form was implicit. */
    if (!url && version && strcmp(version, MCP_PROTOCOL_2025_11_25) < 0)
        json_object_del(out, "mode");
    if (url && elicitation_id)
        json_object_set_new(out, "elicitationId", json_string(elicitation_id));
    return out;
}
