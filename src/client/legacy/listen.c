/*
 * mcp_client_listen() on a legacy server (digest section 10.2): there is
 * no listen stream. list_changed notifications come on the session anyway
 * when the server's capabilities say listChanged; resource updates come
 * after resources/subscribe, when resources.subscribe says the server has
 * it. So opening a subscription subscribes to its URIs and acknowledges
 * what the capabilities promise, closing it unsubscribes from the URIs no
 * other subscription wants, and the session's notifications are matched
 * against the acknowledged filters (listen.c delivers them).
 */
#include <string.h>

#include "client/legacy/legacy.h"

/* The filter flags, the capability that makes each one real, and the
 * notification it lets through. */
static const struct {
    const char *flag;
    const char *capability;
    const char *method;
} list_flags[] = {
    {"toolsListChanged", "tools", "notifications/tools/list_changed"},
    {"promptsListChanged", "prompts", "notifications/prompts/list_changed"},
    {"resourcesListChanged", "resources", "notifications/resources/list_changed"},
};

static bool capability_says(const json_t *caps, const char *capability, const char *key)
{
    return json_is_true(json_object_get(json_object_get(caps, capability), key));
}

/* resources/subscribe or resources/unsubscribe for one URI. */
static int subscription_call(mcp_client_t *c, const char *method, const json_t *uri,
                             const mcp_request_options_t *opts, mcp_error_t *err)
{
    json_t *params = json_pack("{s:O}", "uri", uri);
    json_t *result = NULL;
    int rc = params ? client_call(c, method, params, opts, &result, err)
                    : mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    json_decref(params);
    json_decref(result);
    return rc;
}

json_t *client_legacy_listen_honoured(mcp_client_t *c, const json_t *params)
{
    const json_t *filter = json_object_get(params, "notifications");
    const json_t *caps = c->server_caps;
    json_t *honoured = json_object();
    for (size_t i = 0; honoured && i < sizeof list_flags / sizeof list_flags[0]; i++)
        if (json_is_true(json_object_get(filter, list_flags[i].flag)) &&
            capability_says(caps, list_flags[i].capability, "listChanged"))
            json_object_set_new(honoured, list_flags[i].flag, json_true());
    const json_t *uris = json_object_get(filter, "resourceSubscriptions");
    if (honoured && json_array_size(uris) > 0 && capability_says(caps, "resources", "subscribe"))
        json_object_set_new(honoured, "resourceSubscriptions", json_deep_copy(uris));
    return honoured;
}

int client_legacy_listen_subscribe(mcp_client_t *c, const json_t *honoured, mcp_error_t *err)
{
    const json_t *uris = json_object_get(honoured, "resourceSubscriptions");
    size_t i;
    json_t *uri;
    json_array_foreach(uris, i, uri) {
        int rc = subscription_call(c, "resources/subscribe", uri, NULL, err);
        if (rc != MCP_OK) {
            /* Undo the ones that went through: the subscription fails whole. */
            for (size_t j = 0; j < i; j++)
                subscription_call(c, "resources/unsubscribe", json_array_get(uris, j), NULL,
                                  NULL);
            return rc;
        }
    }
    return MCP_OK;
}

/* Does any of `others` subscribe to `uri`? */
static bool wanted_elsewhere(const json_t *others, const char *uri)
{
    size_t i, j;
    json_t *params, *u;
    json_array_foreach(others, i, params) {
        const json_t *list = json_object_get(json_object_get(params, "notifications"),
                                             "resourceSubscriptions");
        json_array_foreach(list, j, u)
            if (json_is_string(u) && strcmp(json_string_value(u), uri) == 0)
                return true;
    }
    return false;
}

void client_legacy_listen_close(mcp_client_t *c, const json_t *params, const json_t *others)
{
    const json_t *uris = json_object_get(json_object_get(params, "notifications"),
                                         "resourceSubscriptions");
    size_t i;
    json_t *uri;
    json_array_foreach(uris, i, uri) {
        if (!json_is_string(uri) || wanted_elsewhere(others, json_string_value(uri)))
            continue;
        mcp_error_t e = {0};
        if (subscription_call(c, "resources/unsubscribe", uri, NULL, &e) != MCP_OK)
            client_log(c, MCP_LOG_INFO, "resources/unsubscribe %s failed: %s",
                       json_string_value(uri), e.message);
        mcp_error_clear(&e);
    }
}

void client_legacy_listen_renew(mcp_client_t *c, const mcp_request_options_t *opts)
{
    /* Each URI once, however many subscriptions want it. */
    json_t *filters = client_listen_filters(c, NULL);
    json_t *uris = json_object();
    size_t i, j;
    json_t *params, *uri;
    json_array_foreach(filters, i, params) {
        json_t *honoured = client_legacy_listen_honoured(c, params);
        json_array_foreach(json_object_get(honoured, "resourceSubscriptions"), j, uri)
            if (uris && json_is_string(uri))
                json_object_set(uris, json_string_value(uri), uri);
        json_decref(honoured);
    }
    const char *key;
    json_object_foreach(uris, key, uri) {
        mcp_error_t e = {0};
        if (subscription_call(c, "resources/subscribe", uri, opts, &e) != MCP_OK)
            client_log(c, MCP_LOG_WARNING, "resources/subscribe %s failed after the restart: %s",
                       key, e.message);
        mcp_error_clear(&e);
    }
    json_decref(uris);
    json_decref(filters);
}

bool client_legacy_filter_matches(const json_t *filter, const char *method,
                                  const json_t *params)
{
    for (size_t i = 0; i < sizeof list_flags / sizeof list_flags[0]; i++)
        if (strcmp(method, list_flags[i].method) == 0)
            return json_is_true(json_object_get(filter, list_flags[i].flag));
    if (strcmp(method, "notifications/resources/updated") != 0)
        return false;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(filter, "resourceSubscriptions"), i, u)
        if (uri && json_is_string(u) && strcmp(json_string_value(u), uri) == 0)
            return true;
    return false;
}
