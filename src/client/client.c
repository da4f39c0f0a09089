/*
 * The client object: options, connecting, and what the server said about
 * itself when the connection was made. Which era the server speaks is
 * decided in era.c; the legacy client lives in legacy/.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "client/client_internal.h"
#include "client/legacy/legacy.h"
#include "mcp/capabilities.h"
#include "mcp/probe.h"
#include "mcp/request.h"
#include "clock.h"
#include "spin.h"

#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MAX_INPUT_ROUNDS 8
#define CACHE_MAX_ENTRIES 256

void client_log(mcp_client_t *c, mcp_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_vlogf(c->log, c->log_user, level, fmt, ap);
    va_end(ap);
}


const char *client_log_level_name(const char *level)
{
    static const char *const names[] = {"debug", "info",     "notice", "warning",
                                        "error", "critical", "alert",  "emergency"};
    int i = level ? mcp_log_level_index(level) : -1;
    return i >= 0 && (size_t)i < sizeof names / sizeof names[0] ? names[i] : NULL;
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

/*
 * The extensions the client declares (new object in *out, NULL for none):
 * the options' JSON text, plus the Tasks extension when `tasks` is set.
 * MCP_EINVAL with *err for text that is not an object of objects.
 */
static int client_extensions(const mcp_client_options_t *opts, json_t **out, mcp_error_t *err)
{
    *out = NULL;
    json_t *ext = NULL;
    if (opts->extensions) {
        ext = json_loads(opts->extensions, JSON_REJECT_DUPLICATES, NULL);
        const char *key;
        json_t *settings;
        bool ok = json_is_object(ext);
        json_object_foreach(ext, key, settings) {
            ok = ok && key[0] && json_is_object(settings);
        }
        if (!ok) {
            json_decref(ext);
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "extensions must be a JSON object of objects, "
                                 "{\"<extension id>\": {...}}");
        }
    }
    if (opts->tasks) {
        if (!ext)
            ext = json_object();
        if (!ext || json_object_set_new(ext, MCP_EXTENSION_TASKS, json_object()) != 0) {
            json_decref(ext);
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        }
    }
    *out = ext;
    return MCP_OK;
}

/* The options' extension_result_types as a new array (*out; an empty one
 * for none). MCP_EINVAL for an empty string or a core value. */
static int client_result_types(const mcp_client_options_t *opts, json_t **out,
                               mcp_error_t *err)
{
    static const char *const core[] = {"complete", "input_required", "task"};
    json_t *types = *out = json_array();
    if (!types)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    for (const char *const *t = opts->extension_result_types; t && *t; t++) {
        bool is_core = false;
        for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
            is_core = is_core || strcmp(*t, core[i]) == 0;
        if (!**t || is_core)
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "extension_result_types: \"%s\" is %s", *t,
                                 **t ? "a core resultType" : "empty");
        if (json_array_append_new(types, json_string(*t)) != 0)
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "extension_result_types: not UTF-8 (or out of memory)");
    }
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
    client_task_watch_init(&c->task_watch);
    c->next_id = 1;
    if (set_versions(c, opts->protocol_version, err) != MCP_OK) {
        mcp_client_free(c);
        return NULL;
    }
    c->era_option = opts->era;
    c->legacy_version = MCP_PROTOCOL_LATEST_LEGACY;
    if (opts->legacy_protocol_version) {
        size_t n;
        const char *const *legacy = mcp_protocol_versions_legacy(&n);
        c->legacy_version = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(legacy[i], opts->legacy_protocol_version) == 0)
                c->legacy_version = legacy[i];
        if (!c->legacy_version) {
            mcp_error_set(err, MCP_EINVAL, 0, NULL,
                          "legacy_protocol_version \"%s\" is not a legacy version this SDK "
                          "speaks", opts->legacy_protocol_version);
            mcp_client_free(c);
            return NULL;
        }
    }
    if (opts->previous_verdict) {
        mcp_verdict_kind_t k = opts->previous_verdict->kind;
        if (k != MCP_VERDICT_MODERN && k != MCP_VERDICT_LEGACY &&
            k != MCP_VERDICT_RECONNECT_LEGACY) {
            mcp_error_set(err, MCP_EINVAL, 0, NULL,
                          "a previous verdict is modern, legacy or reconnect_legacy");
            mcp_client_free(c);
            return NULL;
        }
        c->has_previous_verdict = true;
        c->previous_verdict = *opts->previous_verdict;
        c->previous_verdict.probed = false;
        c->previous_verdict.reason = "previous verdict";
    }
    c->timeout_ms = opts->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : opts->timeout_ms;
    c->max_input_rounds = opts->max_input_rounds > 0 ? opts->max_input_rounds
                                                     : DEFAULT_MAX_INPUT_ROUNDS;
    c->spin_us = mcp_spin_budget_us(opts->spin_us);
    c->disable_cache = opts->disable_cache;
    c->tasks = opts->tasks;
    if (client_result_types(opts, &c->extension_result_types, err) != MCP_OK) {
        mcp_client_free(c);
        return NULL;
    }
    c->on_log = opts->on_log;
    c->on_log_user = opts->on_log_user;
    c->on_closed = opts->on_closed;
    c->on_closed_user = opts->on_closed_user;
    c->log = opts->log;
    c->log_user = opts->log_user;
    c->trace = opts->trace;
    c->trace_user = opts->trace_user;

    unsigned modes = opts->elicit_modes ? opts->elicit_modes : MCP_ELICIT_FORM;
    /* The builder leaves extensions out of the legacy capabilities. */
    json_t *extensions = NULL;
    if (client_extensions(opts, &extensions, err) != MCP_OK) {
        mcp_client_free(c);
        return NULL;
    }
    mcp_client_caps_spec_t spec = {
        .era = MCP_ERA_MODERN,
        .sampling = opts->sample != NULL,
        .sampling_tools = opts->sample_tools,
        .elicitation_form = opts->elicit && (modes & MCP_ELICIT_FORM),
        .elicitation_url = opts->elicit && (modes & MCP_ELICIT_URL),
        .roots = opts->roots != NULL,
        .extensions = extensions,
    };
    c->input = (client_input_handlers_t){
        .elicit = opts->elicit, .elicit_user = opts->elicit_user,
        .sample = opts->sample, .sample_user = opts->sample_user,
        .roots = opts->roots, .roots_user = opts->roots_user};
    c->capabilities = mcp_client_capabilities_build(&spec);
    c->input.capabilities = c->capabilities;
    spec.era = MCP_ERA_LEGACY;
    c->legacy_capabilities = mcp_client_capabilities_build(&spec);
    json_decref(extensions);
    c->client_info = json_pack("{s:s, s:s}", "name", opts->name, "version", opts->version);
    if (c->client_info && opts->title &&
        json_object_set_new(c->client_info, "title", json_string(opts->title)) != 0) {
        json_decref(c->client_info);
        c->client_info = NULL;
    }
    c->log_level = client_log_level_name(opts->log_level);
    c->cache = client_cache_new(CACHE_MAX_ENTRIES);
    if (!c->capabilities || !c->legacy_capabilities || !c->client_info || !c->cache) {
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
    client_task_watch_close(&client->task_watch);
    client_close_subscriptions(client);
    client_legacy_close(client);
    if (client->transport) {
        client->transport->ops->close(client->transport);
        client->transport->ops->free(client->transport);
    }
    client_legacy_free(client);
    client_tools_clear(&client->tools);
    client_cache_free(client->cache);
    json_decref(client->client_info);
    json_decref(client->capabilities);
    json_decref(client->legacy_capabilities);
    json_decref(client->extension_result_types);
    json_decref(client->server_info);
    json_decref(client->server_caps);
    free(client->instructions);
    pthread_mutex_destroy(&client->lock);
    free(client);
}

/* ------------------------------------------------------------------------
 * Messages that belong to no call
 * ------------------------------------------------------------------------ */

void client_on_unrouted(void *user, const json_t *msg)
{
    mcp_client_t *c = user;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (c->legacy) {
        client_legacy_on_message(c, msg);
    } else if (method && json_object_get(msg, "id")) {
        /* Modern servers never send requests. */
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

void client_on_closed(void *user, int rc, const char *why)
{
    mcp_client_t *c = user;
    client_log(c, MCP_LOG_WARNING, "the connection ended: %s", why ? why : mcp_strerror(rc));
    /* While connecting it is connect's business (a server that exits on
     * the probe is started again; one that exits later fails the connect,
     * or is reported when connect ends). */
    pthread_mutex_lock(&c->lock);
    bool report = c->connected && !c->closed;
    c->closed = true;
    pthread_mutex_unlock(&c->lock);
    if (report && c->on_closed)
        c->on_closed(c->on_closed_user, rc, why ? why : mcp_strerror(rc));
}

/* A modern server needs nothing (its listen streams re-open by
 * themselves); a legacy one is initialized again. */
void client_on_restarted(void *user)
{
    mcp_client_t *c = user;
    pthread_mutex_lock(&c->lock);
    bool legacy = c->era == MCP_ERA_LEGACY && c->legacy;
    bool renewing = legacy && client_legacy_restarted(c);
    pthread_mutex_unlock(&c->lock);
    if (legacy && !renewing)
        client_log(c, MCP_LOG_ERROR, "the server was restarted but cannot be initialized");
}

client_transport_hooks_t client_transport_hooks(mcp_client_t *c)
{
    return (client_transport_hooks_t){
        .on_unrouted = client_on_unrouted,
        .on_closed = client_on_closed,
        .on_restarted = client_on_restarted,
        .user = c,
        .trace = c->trace,
        .trace_user = c->trace_user,
        .log = c->log,
        .log_user = c->log_user,
    };
}

/* ------------------------------------------------------------------------
 * Connecting
 * ------------------------------------------------------------------------ */

/* Replaces *slot with a copy of `v` (an object, or NULL) unless it says the
 * same: a server initialized again usually does, and then the pointers
 * handed out before stay valid. False, with *slot as it was, when out of
 * memory. */
static bool adopt_object(json_t **slot, const json_t *v)
{
    if (!json_is_object(v))
        v = NULL;
    if ((!v && !*slot) || (v && *slot && json_equal(*slot, v)))
        return true;
    json_t *copy = v ? json_deep_copy(v) : NULL;
    if (v && !copy)
        return false;
    json_decref(*slot);
    *slot = copy;
    return true;
}

int client_adopt_server(mcp_client_t *c, const json_t *info, const json_t *caps,
                        const char *instructions)
{
    if (!adopt_object(&c->server_info, info) || !adopt_object(&c->server_caps, caps))
        return MCP_ENOMEM;
    if (instructions && c->instructions && strcmp(instructions, c->instructions) == 0)
        return MCP_OK;
    char *copy = instructions ? strdup(instructions) : NULL;
    if (instructions && !copy)
        return MCP_ENOMEM;
    free(c->instructions);
    c->instructions = copy;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * The stdio server's stderr while connecting
 * ------------------------------------------------------------------------ */

static void stderr_tap(void *user, const char *line)
{
    mcp_client_t *c = user;
    pthread_mutex_lock(&c->lock);
    if (c->capturing_stderr) {
        /* Keep the last lines: the end of a crash report says the most. */
        size_t cap = sizeof c->stderr_tail - 1, len = strlen(line);
        const char *kept = line; /* its end; the application gets it whole */
        if (len + 1 > cap) {
            kept += len + 1 - cap;
            len = cap - 1;
        }
        if (c->stderr_len + len + 1 > cap) {
            size_t drop = c->stderr_len + len + 1 - cap;
            memmove(c->stderr_tail, c->stderr_tail + drop, c->stderr_len - drop);
            c->stderr_len -= drop;
        }
        if (c->stderr_len > 0)
            c->stderr_tail[c->stderr_len++] = '\n';
        memcpy(c->stderr_tail + c->stderr_len, kept, len);
        c->stderr_len += len;
        c->stderr_tail[c->stderr_len] = '\0';
    }
    pthread_mutex_unlock(&c->lock);
    if (c->user_stderr)
        c->user_stderr(c->user_stderr_user, line);
}

void client_stderr_tail(mcp_client_t *c, char *buf, size_t size)
{
    pthread_mutex_lock(&c->lock);
    snprintf(buf, size, "%.*s", (int)c->stderr_len, c->stderr_tail);
    pthread_mutex_unlock(&c->lock);
}

static int check_connectable(mcp_client_t *c, const void *target, mcp_error_t *err)
{
    if (!c || !target)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and target are required");
    if (c->transport)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL, "the client is already connected");
    return MCP_OK;
}

/* What a stdio connection needs to start its server again. */
typedef struct stdio_ctx {
    mcp_client_t *client;
    const mcp_stdio_target_t *target; /* the caller's, with our stderr tap */
} stdio_ctx_t;

static int restart_stdio(void *user, client_transport_t **out, mcp_error_t *err)
{
    stdio_ctx_t *ctx = user;
    client_transport_hooks_t hooks = client_transport_hooks(ctx->client);
    return client_stdio_new(ctx->target, &hooks, out, err);
}

int mcp_client_connect_stdio(mcp_client_t *client, const mcp_stdio_target_t *target,
                             mcp_error_t *err)
{
    int rc = check_connectable(client, target, err);
    if (rc != MCP_OK)
        return rc;
    if (!target->argv || !target->argv[0])
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the stdio target needs argv[0]");
    client->user_stderr = target->on_stderr;
    client->user_stderr_user = target->stderr_user;
    mcp_stdio_target_t tapped = *target;
    tapped.on_stderr = stderr_tap;
    tapped.stderr_user = client;
    stdio_ctx_t ctx = {client, &tapped};
    client_connector_t how = {.restart = restart_stdio, .ctx = &ctx,
                              .probe_timeout_ms = target->probe_timeout_ms > 0
                                                      ? target->probe_timeout_ms
                                                      : CLIENT_DEFAULT_PROBE_TIMEOUT_MS};
    client_transport_hooks_t hooks = client_transport_hooks(client);
    client_transport_t *t = NULL;
    if ((rc = client_stdio_new(&tapped, &hooks, &t, err)) != MCP_OK)
        return rc;
    return client_connect_with(client, t, MCP_TRANSPORT_STDIO, &how, err);
}

typedef struct http_ctx {
    mcp_client_t *client;
    const mcp_http_target_t *target;
} http_ctx_t;

static int open_http_sse(void *user, client_transport_t **out, mcp_error_t *err)
{
    http_ctx_t *ctx = user;
    client_transport_hooks_t hooks = client_transport_hooks(ctx->client);
    return client_http_sse_new(ctx->target, &hooks, out, err);
}

int mcp_client_connect_http(mcp_client_t *client, const mcp_http_target_t *target,
                            mcp_error_t *err)
{
    int rc = check_connectable(client, target, err);
    if (rc != MCP_OK)
        return rc;
    http_ctx_t ctx = {client, target};
    client_connector_t how = {.open_sse = open_http_sse, .ctx = &ctx};
    client->reauthorizes = target->token != NULL;
    client_transport_hooks_t hooks = client_transport_hooks(client);
    client_transport_t *t = NULL;
    if ((rc = client_http_new(target, &hooks, &t, err)) != MCP_OK)
        return rc;
    return client_connect_with(client, t, MCP_TRANSPORT_HTTP, &how, err);
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
