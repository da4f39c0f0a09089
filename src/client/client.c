/*
 * The client object: options, connecting, and what the server said about
 * itself when the connection was made.
 *
 * The era: `modern` speaks 2026-07-28 only. `auto` will probe with
 * server/discover and fall back to the legacy protocol (issue 8); until the
 * legacy client exists it behaves as `modern`, and `legacy` is refused with
 * MCP_EUNSUPPORTED.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "mcp/capabilities.h"
#include "mcp/probe.h"
#include "mcp/request.h"

#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MAX_INPUT_ROUNDS 8
#define CACHE_MAX_ENTRIES 256

void client_log(mcp_client_t *c, mcp_log_level_t level, const char *fmt, ...)
{
    if (!c->log)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->log(c->log_user, level, msg);
}

int64_t client_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_int_t client_next_id(mcp_client_t *c)
{
    pthread_mutex_lock(&c->lock);
    json_int_t id = c->next_id++;
    pthread_mutex_unlock(&c->lock);
    return id;
}

void client_deliver_log(mcp_client_t *c, const json_t *msg)
{
    const json_t *params = json_object_get(msg, "params");
    const char *level = json_string_value(json_object_get(params, "level"));
    if (c->on_log && level)
        c->on_log(c->on_log_user, level, json_string_value(json_object_get(params, "logger")),
                  json_object_get(params, "data"));
}

/* The modern versions to offer, the preferred one first. */
static int set_versions(mcp_client_t *c, const char *preferred, mcp_error_t *err)
{
    size_t n;
    const char *const *modern = mcp_protocol_versions_modern(&n);
    if (preferred) {
        const char *found = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(modern[i], preferred) == 0)
                found = modern[i];
        if (!found)
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "protocol_version \"%s\" is not a modern version this SDK speaks",
                                 preferred);
        c->versions[c->n_versions++] = found;
    }
    for (size_t i = 0; i < n && c->n_versions < CLIENT_MAX_VERSIONS; i++)
        if (!preferred || strcmp(modern[i], preferred) != 0)
            c->versions[c->n_versions++] = modern[i];
    c->version = c->versions[0];
    return MCP_OK;
}

mcp_client_t *mcp_client_new(const mcp_client_options_t *opts, mcp_error_t *err)
{
    if (!opts || !opts->name || !opts->version) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "the client needs a name and a version");
        return NULL;
    }
    if (opts->era < MCP_CLIENT_ERA_AUTO || opts->era > MCP_CLIENT_ERA_LEGACY ||
        (opts->log_level && mcp_log_level_index(opts->log_level) < 0) ||
        (opts->elicit_modes & ~(unsigned)(MCP_ELICIT_FORM | MCP_ELICIT_URL))) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "bad client option (era, log_level or elicit_modes)");
        return NULL;
    }
    mcp_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->next_id = 1;
    if (set_versions(c, opts->protocol_version, err) != MCP_OK) {
        mcp_client_free(c);
        return NULL;
    }
    c->era_option = opts->era;
    c->timeout_ms = opts->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : opts->timeout_ms;
    c->max_input_rounds = opts->max_input_rounds > 0 ? opts->max_input_rounds
                                                     : DEFAULT_MAX_INPUT_ROUNDS;
    c->disable_cache = opts->disable_cache;
    c->on_log = opts->on_log;
    c->on_log_user = opts->on_log_user;
    c->log = opts->log;
    c->log_user = opts->log_user;
    c->trace = opts->trace;
    c->trace_user = opts->trace_user;

    unsigned modes = opts->elicit_modes ? opts->elicit_modes : MCP_ELICIT_FORM;
    mcp_client_caps_spec_t spec = {
        .era = MCP_ERA_MODERN,
        .sampling = opts->sample != NULL,
        .sampling_tools = opts->sample_tools,
        .elicitation_form = opts->elicit && (modes & MCP_ELICIT_FORM),
        .elicitation_url = opts->elicit && (modes & MCP_ELICIT_URL),
        .roots = opts->roots != NULL,
    };
    c->input = (client_input_handlers_t){
        .elicit = opts->elicit, .elicit_user = opts->elicit_user,
        .sample = opts->sample, .sample_user = opts->sample_user,
        .roots = opts->roots, .roots_user = opts->roots_user};
    c->capabilities = mcp_client_capabilities_build(&spec);
    c->input.capabilities = c->capabilities;
    c->client_info = json_pack("{s:s, s:s}", "name", opts->name, "version", opts->version);
    if (c->client_info && opts->title &&
        json_object_set_new(c->client_info, "title", json_string(opts->title)) != 0) {
        json_decref(c->client_info);
        c->client_info = NULL;
    }
    c->log_level = opts->log_level ? strdup(opts->log_level) : NULL;
    c->cache = client_cache_new(CACHE_MAX_ENTRIES);
    if (!c->capabilities || !c->client_info || !c->cache || (opts->log_level && !c->log_level)) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "name, version or title not UTF-8 (or out of memory)");
        mcp_client_free(c);
        return NULL;
    }
    return c;
}

void mcp_client_free(mcp_client_t *client)
{
    if (!client)
        return;
    client_close_subscriptions(client);
    if (client->transport) {
        client->transport->ops->close(client->transport);
        client->transport->ops->free(client->transport);
    }
    client_tools_clear(&client->tools);
    client_cache_free(client->cache);
    json_decref(client->client_info);
    json_decref(client->capabilities);
    json_decref(client->server_info);
    json_decref(client->server_caps);
    free(client->instructions);
    free(client->log_level);
    pthread_mutex_destroy(&client->lock);
    free(client);
}

/* ------------------------------------------------------------------------
 * Messages that belong to no call
 * ------------------------------------------------------------------------ */

static void on_unrouted(void *user, const json_t *msg)
{
    mcp_client_t *c = user;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && json_object_get(msg, "id")) {
        /* Modern servers never send requests; the legacy client will. */
        client_log(c, MCP_LOG_WARNING, "ignoring a request from the server (%s)", method);
    } else if (method && strcmp(method, "notifications/message") == 0) {
        client_deliver_log(c, msg);
    } else if (method) {
        client_log(c, MCP_LOG_DEBUG, "ignoring %s that belongs to no call", method);
    } else {
        const json_t *error = json_object_get(msg, "error");
        client_log(c, MCP_LOG_WARNING, "the server reported an error for no request: %s",
                   json_string_value(json_object_get(error, "message"))
                       ? json_string_value(json_object_get(error, "message"))
                       : "(no message)");
    }
}

static void on_closed(void *user, int rc, const char *why)
{
    client_log(user, MCP_LOG_WARNING, "the connection ended: %s", why ? why : mcp_strerror(rc));
}

/* ------------------------------------------------------------------------
 * Connecting
 * ------------------------------------------------------------------------ */

/* Keeps what a DiscoverResult says about the server. serverInfo lives in
 * _meta since the final 2026-07-28 text; earlier drafts put it in the body
 * (digest 14.3), so both are read. */
static int adopt_discover_result(mcp_client_t *c, const json_t *result, mcp_error_t *err)
{
    if (!mcp_discover_result_valid(result))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "the server's DiscoverResult is malformed");
    const char *version = mcp_version_pick_json(json_object_get(result, "supportedVersions"),
                                                c->versions, c->n_versions);
    if (!version)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the server shares no protocol version with this client");
    const json_t *info = json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO);
    if (!json_is_object(info))
        info = json_object_get(result, "serverInfo");
    const char *instructions = json_string_value(json_object_get(result, "instructions"));
    c->server_info = json_is_object(info) ? json_deep_copy(info) : NULL;
    c->server_caps = json_deep_copy(json_object_get(result, "capabilities"));
    c->instructions = instructions ? strdup(instructions) : NULL;
    pthread_mutex_lock(&c->lock);
    c->version = version;
    c->era = MCP_ERA_MODERN;
    pthread_mutex_unlock(&c->lock);
    return MCP_OK;
}

int client_connect_transport(mcp_client_t *c, client_transport_t *t, mcp_transport_kind_t kind,
                             mcp_error_t *err)
{
    t->on_unrouted = on_unrouted;
    t->on_closed = on_closed;
    t->user = c;
    t->trace = c->trace;
    t->trace_user = c->trace_user;
    c->transport = t;
    c->kind = kind;

    json_t *result = NULL;
    int rc = client_call(c, "server/discover", NULL, NULL, &result, err);
    if (rc == MCP_OK)
        rc = adopt_discover_result(c, result, err);
    json_decref(result);
    if (rc != MCP_OK) {
        c->transport = NULL;
        t->ops->close(t);
        t->ops->free(t);
    }
    return rc;
}

static int check_connectable(mcp_client_t *c, const void *target, mcp_error_t *err)
{
    if (!c || !target)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and target are required");
    if (c->transport)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL, "the client is already connected");
    if (c->era_option == MCP_CLIENT_ERA_LEGACY)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the legacy era is not supported by this build yet");
    return MCP_OK;
}

int mcp_client_connect_stdio(mcp_client_t *client, const mcp_stdio_target_t *target,
                             mcp_error_t *err)
{
    int rc = check_connectable(client, target, err);
    if (rc != MCP_OK)
        return rc;
    if (!target->argv || !target->argv[0])
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the stdio target needs argv[0]");
    client_transport_t *t = client_stdio_new(target, client->log, client->log_user, err);
    if (!t)
        return MCP_EIO;
    return client_connect_transport(client, t, MCP_TRANSPORT_STDIO, err);
}

int mcp_client_connect_http(mcp_client_t *client, const mcp_http_target_t *target,
                            mcp_error_t *err)
{
    int rc = check_connectable(client, target, err);
    if (rc != MCP_OK)
        return rc;
    client_transport_t *t = client_http_new(target, client->log, client->log_user, err);
    if (!t)
        return MCP_EIO;
    return client_connect_transport(client, t, MCP_TRANSPORT_HTTP, err);
}

/* ------------------------------------------------------------------------
 * What the server is
 * ------------------------------------------------------------------------ */

mcp_era_t mcp_client_era(const mcp_client_t *client)
{
    if (!client)
        return MCP_ERA_UNKNOWN;
    pthread_mutex_lock((pthread_mutex_t *)&client->lock);
    mcp_era_t era = client->era;
    pthread_mutex_unlock((pthread_mutex_t *)&client->lock);
    return era;
}

const char *mcp_client_protocol_version(const mcp_client_t *client)
{
    if (!client)
        return NULL;
    pthread_mutex_lock((pthread_mutex_t *)&client->lock);
    const char *v = client->era != MCP_ERA_UNKNOWN ? client->version : NULL;
    pthread_mutex_unlock((pthread_mutex_t *)&client->lock);
    return v;
}

const json_t *mcp_client_server_info(const mcp_client_t *client)
{
    return client ? client->server_info : NULL;
}

const json_t *mcp_client_server_capabilities(const mcp_client_t *client)
{
    return client ? client->server_caps : NULL;
}

const char *mcp_client_instructions(const mcp_client_t *client)
{
    return client ? client->instructions : NULL;
}
