/*
 * One call, from the caller's point of view: the result cache, then as many
 * requests on the wire as it takes (digest sections 1.5, 2.1, 3.3, 4.6, 6):
 *
 *   - a fresh cached result answers at once (unless bypassed);
 *   - -32022 with a mutual modern version in data.supported: retried once
 *     with that version, which the client keeps using -- even when it is the
 *     version just refused: the server says it speaks it, and a refusal
 *     that contradicts the list (one node of a fleet not upgraded yet, a
 *     proxy) may not recur; once bounds the cost when it does;
 *   - -32020 about an Mcp-Param-* header (HTTP tools/call): tools/list is
 *     refetched once and the call retried with the new annotations;
 *   - resultType "input_required": the inputs are gathered through the
 *     callbacks and the request retried with a new id, the original params
 *     plus inputResponses and the verbatim requestState, for at most
 *     max_input_rounds rounds;
 *   - resultType "task" (the Tasks extension): kept, or followed to the
 *     task's end (tasks.c), when the request declared the extension and
 *     may become a task; invalid otherwise;
 *   - a legacy tools/call of a tool listed with execution.taskSupport is
 *     sent as a task of the experimental 2025-11-25 tasks and followed
 *     (legacy/tasks.c);
 *   - a result without resultType is complete; an unknown one is invalid.
 *
 * A timeout applies to each request on the wire: time a person spends
 * answering an elicitation between rounds is not counted.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/client_internal.h"
#include "client/legacy/legacy.h"
#include "mcp/errors.h"
#include "mcp/result.h"
#include "mcp/version.h"
#include "clock.h"

/* A legacy request: no envelope, and of the HTTP headers only
 * MCP-Protocol-Version (the transport adds the session). A server that
 * forgot the session (404) gets a new handshake and the request again; a
 * restarted stdio server is initialized before the request goes out. */
static int send_legacy(mcp_client_t *c, const char *method, const json_t *params,
                       const client_call_opts_t *o, json_t **response_out, mcp_error_t *err)
{
    for (int attempt = 0;; attempt++) {
        int rc = client_legacy_await_session(c, o, err);
        if (rc != MCP_OK)
            return rc;
        pthread_mutex_lock(&c->lock);
        json_int_t id = c->next_id++;
        const char *version = c->version;
        pthread_mutex_unlock(&c->lock);
        uint64_t generation = client_legacy_generation(c);
        client_http_hints_t hints = {.protocol_version = client_legacy_header_version(version)};
        json_t *request = client_legacy_request_build(id, method, params, o->progress != NULL);
        if (!request)
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        client_wire_t wire = {0};
        rc = client_roundtrip_wire(c, request, &hints, o, response_out, &wire, err);
        json_decref(request);
        /* A 404 in a session means the session is gone, whether its body is
         * empty or a JSON-RPC error (the TypeScript server sends -32001
         * "Session not found" with a null id, which reads as the answer). */
        bool gone = wire.http_status == 404 && c->transport->ops->session_active &&
                    c->transport->ops->session_active(c->transport);
        client_wire_clear(&wire);
        if (!gone || attempt > 0)
            return rc;
        if (rc == MCP_OK) {
            json_decref(*response_out);
            *response_out = NULL;
        }
        client_log(c, MCP_LOG_INFO, "the server forgot the session (HTTP 404); initializing "
                                    "a new one");
        rc = client_legacy_reinitialize(c, generation, err);
        if (rc != MCP_OK)
            return rc;
    }
}

/* Builds and sends one request; *response_out is the JSON-RPC response.
 * *version_out tells which version the request claimed. */
static int send_once(mcp_client_t *c, const char *method, const json_t *params,
                     const client_call_opts_t *o, bool with_param_headers,
                     const char **version_out, json_t **response_out, mcp_error_t *err)
{
    if (c->legacy) {
        *version_out = NULL;
        return send_legacy(c, method, params, o, response_out, err);
    }
    client_hints_t hints;
    pthread_mutex_lock(&c->lock);
    json_int_t id = c->next_id++;
    const char *version = c->version;
    const mcp_param_headers_t *annotations = NULL;
    if (with_param_headers)
        annotations = client_tools_find(&c->tools,
                                        json_string_value(json_object_get(params, "name")));
    int rc = client_hints_build(&hints, version, method, params, annotations);
    pthread_mutex_unlock(&c->lock);
    *version_out = version;

    pthread_mutex_lock(&c->lock);
    client_meta_t meta = {version, c->capabilities, c->client_info, c->log_level};
    pthread_mutex_unlock(&c->lock);
    json_t *request = rc == MCP_OK ? client_request_build(id, method, params, &meta,
                                                          o->progress != NULL)
                                   : NULL;
    if (!request) {
        client_hints_clear(&hints);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    rc = client_roundtrip(c, request, &hints.h, o, response_out, err);
    client_hints_clear(&hints);
    json_decref(request);
    return rc;
}

/* -32022: switch to the mutual version the server lists (digest 1.5), if
 * there is one. */
static bool switch_version(mcp_client_t *c, const json_t *error, const char *refused)
{
    const json_t *supported = json_object_get(json_object_get(error, "data"), "supported");
    const char *pick = mcp_version_pick_json(supported, c->versions, c->n_versions);
    if (!pick)
        return false;
    pthread_mutex_lock(&c->lock);
    c->version = pick;
    pthread_mutex_unlock(&c->lock);
    client_log(c, MCP_LOG_INFO, "the server refused version %s; retrying with %s", refused,
               pick);
    return true;
}

/* Is a -32020 error about an Mcp-Param-* header? data.mismatch.header
 * names it; servers that only say so in the message count too. */
static bool about_param_header(const json_t *error)
{
    const json_t *mismatch = json_object_get(json_object_get(error, "data"), "mismatch");
    const char *header = json_string_value(json_object_get(mismatch, "header"));
    if (header)
        return strncasecmp(header, "Mcp-Param-", 10) == 0;
    const char *message = json_string_value(json_object_get(error, "message"));
    return message && strcasestr(message, "Mcp-Param-") != NULL;
}

int client_rpc_error(const json_t *error, mcp_error_t *err)
{
    mcp_error_t local = {0};
    int rc = mcp_error_from_json(&local, error) == MCP_OK ? MCP_ERPC : MCP_EPROTO;
    if (err)
        mcp_error_move(err, &local);
    mcp_error_clear(&local);
    return rc;
}

int client_refresh_tools(mcp_client_t *c, const client_call_opts_t *o, mcp_error_t *err)
{
    client_tools_t old;
    pthread_mutex_lock(&c->lock);
    client_tools_forget(&c->tools, &old);
    uint64_t generation = c->tools.generation;
    pthread_mutex_unlock(&c->lock);
    client_tools_clear(&old);

    mcp_request_options_t ro = {.timeout_ms = o->timeout_ms, .cancel = o->cancel,
                                .bypass_cache = true};
    json_t *tools = NULL;
    int rc = client_list_all(c, "tools/list", "tools", &ro, &tools, err);
    json_decref(tools);
    if (rc == MCP_OK) {
        pthread_mutex_lock(&c->lock);
        if (c->tools.generation == generation)
            c->tools.complete = true;
        pthread_mutex_unlock(&c->lock);
    }
    return rc;
}

/* HTTP tools/call: make sure the tool's annotations are known (fetching
 * tools/list once when the tool is new to the client). */
static void learn_tool(mcp_client_t *c, const json_t *params, const client_call_opts_t *o)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    if (!name)
        return;
    pthread_mutex_lock(&c->lock);
    bool known = client_tools_find(&c->tools, name) || c->tools.complete;
    pthread_mutex_unlock(&c->lock);
    if (known)
        return;
    mcp_error_t e = {0};
    if (client_refresh_tools(c, o, &e) != MCP_OK)
        client_log(c, MCP_LOG_WARNING, "cannot list tools to learn the headers of \"%s\": %s",
                   name, e.message);
    mcp_error_clear(&e);
}

/* The next round's params for an input_required result, or an error. */
static int next_round(mcp_client_t *c, const json_t *params, const json_t *result,
                      json_t **next_out, mcp_error_t *err)
{
    const json_t *requests = json_object_get(result, "inputRequests");
    const json_t *state = json_object_get(result, "requestState");
    if ((!requests && !state) || (state && !json_is_string(state)) ||
        (requests && !json_is_object(requests)))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "malformed input_required result");
    json_t *responses = NULL;
    if (requests) {
        int rc = client_answer_inputs(&c->input, requests, &responses, err);
        if (rc != MCP_OK)
            return rc;
    }
    *next_out = client_retry_params(params, responses, state);
    json_decref(responses);
    return *next_out ? MCP_OK : mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
}

uint64_t client_auth_context(mcp_client_t *c)
{
    client_transport_t *t = c->transport;
    uint64_t generation = t && t->ops->auth_generation ? t->ops->auth_generation(t) : 0;
    pthread_mutex_lock(&c->lock);
    if (generation != c->auth_seen) {
        /* A client-side counter, not the transport's number itself: a
         * transport made anew (a second connect) counts from zero again. */
        c->auth_seen = generation;
        c->auth_context++;
        client_cache_drop_private(c->cache, c->auth_context);
    }
    uint64_t context = c->auth_context;
    pthread_mutex_unlock(&c->lock);
    return context;
}

/* Is `type` a resultType the application declared it takes? */
static bool is_extension_result_type(const mcp_client_t *c, const char *type)
{
    size_t i;
    json_t *t;
    json_array_foreach(c->extension_result_types, i, t) {
        if (strcmp(json_string_value(t), type) == 0)
            return true;
    }
    return false;
}

int client_call(mcp_client_t *c, const char *method, const json_t *params,
                const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    *result_out = NULL;
    if (!c->transport)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL, "the client is not connected");
    if (c->legacy && client_legacy_method_unknown(method))
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "%s does not exist on the legacy protocol this server speaks",
                             method);
    if (c->legacy && strcmp(method, "tools/call") == 0 &&
        client_legacy_task_wanted(c, params, opts))
        return client_legacy_task_call(c, params, opts, result_out, err);
    client_call_opts_t o;
    client_resolve_opts(c, opts, &o);

    char *key = NULL;
    uint64_t auth_context = 0; /* with a key: the context the request is sent in */
    uint64_t cache_epoch = 0;  /* with a key: the cache's epoch when it was sent */
    if (mcp_method_is_cacheable(method) && !c->disable_cache) {
        if (!(key = client_cache_key(method, params)))
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        auth_context = client_auth_context(c);
        pthread_mutex_lock(&c->lock);
        json_t *hit = o.bypass_cache
                          ? NULL
                          : client_cache_get(c->cache, key, auth_context, mcp_clock_ms());
        cache_epoch = client_cache_epoch(c->cache);
        pthread_mutex_unlock(&c->lock);
        if (hit) {
            free(key);
            *result_out = hit;
            return MCP_OK;
        }
    }
    /* A tools/list page is merged into the known tools only if no
     * list_changed cleared them while it was on the wire. */
    uint64_t tools_generation = 0;
    if (strcmp(method, "tools/list") == 0) {
        pthread_mutex_lock(&c->lock);
        tools_generation = c->tools.generation;
        pthread_mutex_unlock(&c->lock);
    }

    bool param_headers = c->kind == MCP_TRANSPORT_HTTP && !c->legacy &&
                         strcmp(method, "tools/call") == 0;
    if (param_headers)
        learn_tool(c, params, &o);

    json_t *round_params = params ? json_incref((json_t *)params) : NULL;
    bool version_retried = false, headers_retried = false;
    int rounds = 0;
    bool storable = true; /* a core result: may be cached, tools/list merged */
    int rc;
    for (;;) {
        json_t *response = NULL;
        const char *version;
        rc = send_once(c, method, round_params, &o, param_headers, &version, &response, err);
        if (rc != MCP_OK)
            break;

        const json_t *error = json_object_get(response, "error");
        if (error) {
            json_int_t code = json_integer_value(json_object_get(error, "code"));
            if (code == MCP_UNSUPPORTED_PROTOCOL_VERSION && !version_retried && version &&
                switch_version(c, error, version)) {
                version_retried = true;
            } else if (code == MCP_HEADER_MISMATCH && param_headers && !headers_retried &&
                       about_param_header(error)) {
                headers_retried = true;
                client_log(c, MCP_LOG_INFO, "Mcp-Param header refused; refetching tools/list");
                mcp_error_t e = {0};
                client_refresh_tools(c, &o, &e);
                mcp_error_clear(&e);
            } else {
                rc = client_rpc_error(error, err);
                json_decref(response);
                break;
            }
            json_decref(response);
            continue;
        }

        json_t *result = json_object_get(response, "result");
        const json_t *type = json_object_get(result, "resultType");
        if (!json_is_object(result) || (type && !json_is_string(type))) {
            rc = mcp_error_set(err, MCP_EPROTO, 0, NULL, "the response has no valid result");
        } else if (!type || strcmp(json_string_value(type), "complete") == 0) {
            /* A result without resultType (a legacy peer's) is complete. */
            if (!type)
                json_object_set_new(result, "resultType", json_string("complete"));
            *result_out = json_incref(result);
        } else if (strcmp(json_string_value(type), "input_required") == 0) {
            json_t *next = NULL;
            if (!mcp_method_may_require_input(method))
                rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                                   "%s may not answer input_required", method);
            else if (++rounds > c->max_input_rounds)
                rc = mcp_error_set(err, MCP_ELIMIT, 0, NULL,
                                   "the server still needs input after %d rounds",
                                   c->max_input_rounds);
            else if (mcp_cancel_triggered(o.cancel))
                rc = mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the call was cancelled");
            else
                rc = next_round(c, params, result, &next, err);
            json_decref(response);
            if (rc != MCP_OK)
                break;
            json_decref(round_params);
            round_params = next;
            continue;
        } else if (strcmp(json_string_value(type), "task") == 0) {
            rc = client_task_answered(c, method, result, opts, result_out, err);
        } else if (is_extension_result_type(c, json_string_value(type))) {
            *result_out = json_incref(result);
            storable = false;
        } else {
            rc = mcp_error_set(err, MCP_EPROTO, 0, NULL, "unknown resultType \"%s\"",
                               json_string_value(type));
        }
        json_decref(response);
        break;
    }
    json_decref(round_params);

    if (rc == MCP_OK && storable && strcmp(method, "tools/list") == 0) {
        /* Checked outside the lock (the log callback may run, and the
         * page may be large), then merged in time linear in the page. */
        client_tools_t page = {0};
        rc = client_tools_accept_page(&page, *result_out, c->log, c->log_user);
        pthread_mutex_lock(&c->lock);
        if (c->tools.generation == tools_generation)
            client_tools_merge(&c->tools, &page);
        pthread_mutex_unlock(&c->lock);
        client_tools_clear(&page);
        if (rc != MCP_OK)
            mcp_error_set(err, rc, 0, NULL, "out of memory");
    }
    /* Results reached through input rounds are never stored; nor is one
     * whose credentials changed while it was on the wire (a 401 answered
     * with a new token, or another thread's): which of them fetched it is
     * not known. Nor one that a notification invalidated while it was on
     * the wire: the server may have computed it before the change. */
    if (rc == MCP_OK && key && storable && rounds == 0 &&
        client_auth_context(c) == auth_context) {
        const char *uri = strcmp(method, "resources/read") == 0
                              ? json_string_value(json_object_get(params, "uri"))
                              : NULL;
        pthread_mutex_lock(&c->lock);
        if (client_cache_epoch(c->cache) == cache_epoch)
            client_cache_put(c->cache, key, method, uri, auth_context, *result_out,
                             mcp_clock_ms());
        pthread_mutex_unlock(&c->lock);
    }
    if (rc != MCP_OK) {
        json_decref(*result_out);
        *result_out = NULL;
    }
    free(key);
    return rc;
}
