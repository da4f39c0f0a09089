/*
 * mcp_server_submit(): the one entry point of the server core.
 *
 *   bytes -> JSON-RPC message -> era -> validation ladder -> route
 *
 * Everything that can be decided without user code (parse errors, header
 * and envelope checks, unknown methods, discover and the list methods) is
 * answered on the calling thread. Handler-backed methods (tools/call,
 * resources/read, prompts/get, completion/complete) become an exchange that
 * runs on the worker pool.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/headers_internal.h"
#include "protocol/jsonrpc_internal.h"
#include "server/server_internal.h"
#include "json_get.h"

/* ------------------------------------------------------------------------
 * The request metadata each thread remembers
 * ------------------------------------------------------------------------ */

/*
 * A client sends the same params._meta (protocol version, client info and
 * capabilities) with every request; each thread that submits remembers the
 * last one it read, and a request whose _meta has the same bytes shares it
 * (json_read_memo_t). Requests are never modified once parsed: handlers
 * see them const, and the core only reads them.
 */
static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static bool memo_key_ready;
static _Thread_local json_read_memo_t *thread_memo;

static void memo_free(void *memo)
{
    json_read_memo_clear(memo);
    free(memo);
}

static void memo_key_create(void)
{
    memo_key_ready = pthread_key_create(&memo_key, memo_free) == 0;
}

/* This thread's memo (freed when the thread exits), or NULL when out of
 * memory: the request is then read in full. */
static json_read_memo_t *request_memo(void)
{
    if (thread_memo)
        return thread_memo;
    pthread_once(&memo_once, memo_key_create);
    json_read_memo_t *memo = memo_key_ready ? calloc(1, sizeof *memo) : NULL;
    if (!memo)
        return NULL;
    memo->key = "_meta";
    memo->parent_key = "params";
    if (pthread_setspecific(memo_key, memo) != 0) {
        free(memo);
        return NULL;
    }
    thread_memo = memo;
    return memo;
}

/* ------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------ */

mcp_conn_t *mcp_conn_new(mcp_server_t *srv, mcp_transport_kind_t transport)
{
    if (!srv)
        return NULL;
    mcp_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    atomic_init(&conn->refs, 1);
    conn->srv = srv;
    conn->transport = transport;
    pthread_mutex_init(&conn->lock, NULL);
    return conn;
}

void conn_ref(mcp_conn_t *conn)
{
    atomic_fetch_add(&conn->refs, 1);
}

void conn_unref(mcp_conn_t *conn)
{
    if (!conn || atomic_fetch_sub(&conn->refs, 1) != 1)
        return;
    if (conn->session) {
        listen_hub_remove_session(conn->srv->hub, conn->session);
        session_end(conn->session);
        session_unref(conn->session);
    }
    if (conn->outbound)
        conn->outbound->release(conn->outbound);
    pthread_mutex_destroy(&conn->lock);
    free(conn);
}

void mcp_conn_set_outbound(mcp_conn_t *conn, mcp_sink_t *sink)
{
    if (!conn)
        return;
    pthread_mutex_lock(&conn->lock);
    mcp_sink_t *old = conn->outbound;
    conn->outbound = sink;
    pthread_mutex_unlock(&conn->lock);
    if (old)
        old->release(old);
}

/* Cancels a snapshot of exchanges outside any lock: cancelling a listen
 * stream releases its sink, which unlinks it from the connection. */
static void cancel_snapshot(mcp_exchange_t **items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        exchange_cancel(items[i]);
        exchange_unref(items[i]);
    }
    free(items);
}

/* Cancels the connection's requests; only its listen streams when
 * `streams_only`. */
static void conn_cancel(mcp_conn_t *conn, bool streams_only)
{
    if (!conn)
        return;
    pthread_mutex_lock(&conn->lock);
    size_t n = 0;
    for (mcp_exchange_t *ex = conn->inflight; ex; ex = ex->conn_next)
        n++;
    mcp_exchange_t **items = calloc(n ? n : 1, sizeof *items);
    size_t k = 0;
    for (mcp_exchange_t *ex = conn->inflight; ex && items; ex = ex->conn_next) {
        if (streams_only && !ex->listen)
            continue;
        exchange_ref(ex);
        items[k++] = ex;
    }
    pthread_mutex_unlock(&conn->lock);
    if (items)
        cancel_snapshot(items, k);
}

void mcp_conn_cancel_all(mcp_conn_t *conn)
{
    conn_cancel(conn, false);
}

void conn_end_streams(mcp_conn_t *conn, bool graceful)
{
    if (!graceful) {
        conn_cancel(conn, true);
        return;
    }
    /* Each stream gets its listen result (mcp_exchange_end_stream). */
    pthread_mutex_lock(&conn->lock);
    size_t n = 0;
    for (mcp_exchange_t *ex = conn->inflight; ex; ex = ex->conn_next)
        n++;
    mcp_exchange_t **items = calloc(n ? n : 1, sizeof *items);
    size_t k = 0;
    for (mcp_exchange_t *ex = conn->inflight; ex && items; ex = ex->conn_next) {
        if (ex->listen) {
            exchange_ref(ex);
            items[k++] = ex;
        }
    }
    pthread_mutex_unlock(&conn->lock);
    for (size_t i = 0; i < k; i++) {
        mcp_exchange_end_stream(items[i]);
        exchange_unref(items[i]);
    }
    free(items);
}

void mcp_conn_free(mcp_conn_t *conn)
{
    conn_unref(conn);
}

/* Registers a request on its connection so notifications/cancelled can find
 * it. A request id already in flight on the connection is refused. */
bool conn_track(mcp_conn_t *conn, mcp_exchange_t *ex)
{
    pthread_mutex_lock(&conn->lock);
    for (mcp_exchange_t *other = conn->inflight; other; other = other->conn_next) {
        if (json_equal(other->msg.id, ex->msg.id)) {
            pthread_mutex_unlock(&conn->lock);
            return false;
        }
    }
    ex->conn_next = conn->inflight;
    if (conn->inflight)
        conn->inflight->conn_prev = ex;
    conn->inflight = ex;
    pthread_mutex_unlock(&conn->lock);
    return true;
}

bool exchange_track(mcp_conn_t *conn, mcp_exchange_t *ex)
{
    if (!conn || conn_track(conn, ex))
        return true;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                  "Request id is already in use by a request in flight");
    exchange_fail(ex, &err, true);
    mcp_error_clear(&err);
    exchange_unref(ex);
    return false;
}

void conn_cancel_id(mcp_conn_t *conn, const json_t *id)
{
    if (!conn || !id)
        return;
    mcp_exchange_t *found = NULL;
    pthread_mutex_lock(&conn->lock);
    for (mcp_exchange_t *ex = conn->inflight; ex; ex = ex->conn_next) {
        if (json_equal(ex->msg.id, id)) {
            exchange_ref(ex);
            found = ex;
            break;
        }
    }
    pthread_mutex_unlock(&conn->lock);
    if (found) {
        exchange_cancel(found);
        exchange_unref(found);
    }
}

/* ------------------------------------------------------------------------
 * Routing
 * ------------------------------------------------------------------------ */

method_id_t method_lookup(const char *method)
{
    static const struct {
        const char *name;
        method_id_t id;
    } table[] = {
        {"server/discover", METHOD_DISCOVER},
        {"tools/list", METHOD_TOOLS_LIST},
        {"tools/call", METHOD_TOOLS_CALL},
        {"resources/list", METHOD_RESOURCES_LIST},
        {"resources/templates/list", METHOD_RESOURCES_TEMPLATES_LIST},
        {"resources/read", METHOD_RESOURCES_READ},
        {"prompts/list", METHOD_PROMPTS_LIST},
        {"prompts/get", METHOD_PROMPTS_GET},
        {"completion/complete", METHOD_COMPLETE},
        {"subscriptions/listen", METHOD_LISTEN},
        {"tasks/get", METHOD_TASKS_GET},
        {"tasks/update", METHOD_TASKS_UPDATE},
        {"tasks/cancel", METHOD_TASKS_CANCEL},
        {"skills/list", METHOD_SKILLS_LIST},
        {"skills/get", METHOD_SKILLS_GET},
        {"resources/directory/read", METHOD_RESOURCES_DIRECTORY_READ},
    };
    if (!method)
        return METHOD_UNKNOWN;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, method) == 0)
            return table[i].id;
    return METHOD_UNKNOWN;
}

/* Is the method served now? Methods of a feature nothing registered are
 * "not found" (the capability is not advertised), as the spec requires. */
bool method_served(mcp_server_t *srv, method_id_t m)
{
    switch (m) {
    case METHOD_DISCOVER:
        return true;
    case METHOD_TOOLS_LIST:
    case METHOD_TOOLS_CALL:
        return registry_has(srv, ENTRY_TOOL);
    case METHOD_RESOURCES_LIST:
    case METHOD_RESOURCES_TEMPLATES_LIST:
    case METHOD_RESOURCES_READ:
        return registry_has(srv, ENTRY_RESOURCE) || registry_has(srv, ENTRY_TEMPLATE);
    case METHOD_PROMPTS_LIST:
    case METHOD_PROMPTS_GET:
        return registry_has(srv, ENTRY_PROMPT);
    case METHOD_COMPLETE: {
        pthread_rwlock_rdlock(&srv->lock);
        bool has = srv->complete != NULL;
        pthread_rwlock_unlock(&srv->lock);
        return has;
    }
    case METHOD_LISTEN:
        /* Only a server that advertises something to listen for (a
         * listChanged or subscribe capability) offers listen (section
         * 14.20 of the digest: -32601 is the honest answer otherwise). */
        return registry_has(srv, ENTRY_TOOL) || registry_has(srv, ENTRY_PROMPT) ||
               registry_has(srv, ENTRY_RESOURCE) || registry_has(srv, ENTRY_TEMPLATE);
    case METHOD_TASKS_GET:
    case METHOD_TASKS_UPDATE:
    case METHOD_TASKS_CANCEL:
        return atomic_load(&srv->tasks_offered);
    case METHOD_SKILLS_LIST:
    case METHOD_SKILLS_GET:
    case METHOD_RESOURCES_DIRECTORY_READ:
        return skills_offered(srv);
    case METHOD_UNKNOWN:
        break;
    }
    return false;
}

static bool is_task_method(method_id_t m)
{
    return m == METHOD_TASKS_GET || m == METHOD_TASKS_UPDATE || m == METHOD_TASKS_CANCEL;
}

/* The error response for a failure detected before any handler ran. */
static json_t *rejection(const json_t *id, mcp_error_t *err, mcp_era_t era)
{
    json_t *response = mcp_jsonrpc_error_from(id, err);
    if (!response)
        return response_out_of_memory(id);
    if (era == MCP_ERA_MODERN)
        mcp_shape_modern_error(json_object_get(response, "error"));
    return response;
}

/*
 * Legacy traffic (no modern claim) while the legacy era is not served: the
 * request is refused with -32022 naming the versions this server speaks,
 * the only diagnostic a legacy client can act on.
 */
static void reject_legacy(mcp_message_t *msg, const mcp_request_context_t *ctx,
                          mcp_sink_t *sink)
{
    size_t n;
    const char *const *modern = mcp_protocol_versions_modern(&n);
    const char *requested = json_string_value(json_object_get(msg->params, "protocolVersion"));
    if (!requested)
        requested = mcp_headers_get(ctx->headers, MCP_HEADER_PROTOCOL_VERSION);
    if (!requested)
        requested = MCP_PROTOCOL_2025_03_26; /* what a header-less legacy client speaks */
    mcp_error_t err = {0};
    mcp_error_unsupported_version(&err, requested, modern, n);
    snprintf(err.message, sizeof err.message,
             "Unsupported protocol version %s: this server speaks %s", requested, modern[0]);
    json_t *id = msg->kind == MCP_MSG_REQUEST ? msg->id : NULL;
    if (msg->kind == MCP_MSG_REQUEST || ctx->transport == MCP_TRANSPORT_HTTP)
        sink_answer(sink, mcp_jsonrpc_error_from(id, &err), 400);
    else
        sink_answer(sink, NULL, 202); /* never answer a notification on stdio */
    mcp_error_clear(&err);
}

/* Answers a method the server serves itself, on the receiving thread:
 * `result_new` (NULL when it failed, with *err filled) shaped, or the
 * error. */
static void answer_here(mcp_server_t *srv, const mcp_message_t *msg, json_t *result_new,
                        const json_splice_t *splice, mcp_error_t *err, mcp_era_t era,
                        mcp_sink_t *sink)
{
    mcp_result_shape_t shape;
    server_result_shape(srv, &shape);
    if (result_new && mcp_shape_modern_result(msg->method, result_new, &shape, err) != MCP_OK) {
        json_decref(result_new);
        result_new = NULL;
    }
    if (result_new)
        sink_answer_result(sink, msg->id, result_new, splice);
    else
        sink_answer(sink, rejection(msg->id, err, era), mcp_http_status_for_code(err->code, false));
}

/* Modern notifications: only notifications/cancelled means something to a
 * server (stdio); everything else is accepted and ignored. */
static void handle_notification(mcp_conn_t *conn, mcp_message_t *msg, mcp_sink_t *sink)
{
    if (strcmp(msg->method, "notifications/cancelled") == 0)
        conn_cancel_id(conn, json_object_get(msg->params, "requestId"));
    sink->send(sink, MCP_OUT_ACCEPTED, NULL, 202);
    sink->release(sink);
}

int mcp_server_submit(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                      const mcp_request_context_t *ctx, mcp_sink_t *sink,
                      mcp_exchange_t **exchange_out)
{
    if (exchange_out)
        *exchange_out = NULL;
    if (!srv || !ctx || !sink || !sink->send || !sink->release || (!bytes && len))
        return MCP_EINVAL;
    if (bytes && server_looks_like_batch(bytes, len) && legacy_batch_allowed(srv, conn, ctx))
        return server_submit_batch(srv, conn, bytes, len, ctx, sink);
    return server_submit_one(srv, conn, bytes, len, ctx, sink, exchange_out);
}

int server_submit_one(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                      const mcp_request_context_t *ctx, mcp_sink_t *sink,
                      mcp_exchange_t **exchange_out)
{
    if (atomic_load(&srv->shutting_down))
        return MCP_ECLOSED;

    mcp_message_t msg = {0};
    mcp_error_t err = {0};
    int status = 400;

    if (jsonrpc_parse_memo(bytes ? bytes : "", len, NULL, &msg, &err, request_memo()) != MCP_OK) {
        sink_answer(sink, rejection(msg.id, &err, MCP_ERA_UNKNOWN), 400);
        goto done;
    }
    if (msg.kind == MCP_MSG_RESULT || msg.kind == MCP_MSG_ERROR) {
        if (srv->legacy_mode != MCP_LEGACY_REJECT) {
            /* A legacy client answering a request the server sent it. */
            legacy_submit(srv, conn, &msg, ctx, sink, exchange_out);
        } else {
            /* The modern era has no server-to-client requests, so a
             * response from the client answers nothing: refuse it. */
            sink->send(sink, MCP_OUT_ACCEPTED, NULL, 400);
            sink->release(sink);
        }
        goto done;
    }

    mcp_era_t era = mcp_request_era(&msg);
    /* On a connection (stdio) the era is decided by the first modern
     * request, or by initialize, which alone opens the legacy protocol; a
     * request of the other era afterwards is refused. Any other legacy
     * request before that (refused as "not initialized", or a ping)
     * decides nothing, nor does one a modern-only server refuses: the
     * client may still go on in either era. */
    mcp_era_t pinned = MCP_ERA_UNKNOWN;
    bool served = era == MCP_ERA_MODERN || srv->legacy_mode != MCP_LEGACY_REJECT;
    bool decides = era == MCP_ERA_MODERN || strcmp(msg.method, "initialize") == 0;
    if (conn && msg.kind == MCP_MSG_REQUEST && served) {
        pthread_mutex_lock(&conn->lock);
        if (conn->era == MCP_ERA_UNKNOWN && decides)
            conn->era = era;
        pinned = conn->era;
        pthread_mutex_unlock(&conn->lock);
        if (pinned != MCP_ERA_UNKNOWN && pinned != era) {
            mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                          "Invalid Request: this connection speaks the %s protocol; "
                          "start another process for the %s one",
                          pinned == MCP_ERA_MODERN ? "2026-07-28" : "legacy (initialize)",
                          era == MCP_ERA_MODERN ? "2026-07-28" : "legacy");
            sink_answer(sink, rejection(msg.id, &err, MCP_ERA_UNKNOWN), 400);
            goto done;
        }
    }
    if (era != MCP_ERA_MODERN) {
        /* A modern header on a body without the modern claim is a broken
         * modern request, not legacy traffic. */
        if (mcp_check_legacy_request(&msg, ctx->transport == MCP_TRANSPORT_HTTP ? ctx->headers
                                                                                : NULL,
                                     &status, &err) != MCP_OK) {
            json_t *id = msg.kind == MCP_MSG_REQUEST ? msg.id : NULL;
            sink_answer(sink, rejection(id, &err, MCP_ERA_MODERN), status);
            goto done;
        }
        /* Legacy traffic: requests; notifications on a legacy stdio
         * connection; over HTTP, notifications of a legacy session (a
         * notifications/cancelled without session is modern traffic),
         * and with stateless legacy serving, where no legacy client sends
         * a session id, any not marked modern by its header. */
        bool legacy_notification = false;
        if (msg.kind == MCP_MSG_NOTIFICATION) {
            if (ctx->transport == MCP_TRANSPORT_HTTP) {
                legacy_notification =
                    strcmp(msg.method, "notifications/cancelled") != 0 ||
                    mcp_headers_get(ctx->headers, MCP_HEADER_SESSION_ID) != NULL ||
                    (srv->legacy_mode == MCP_LEGACY_STATELESS &&
                     !mcp_header_names_modern_version(
                         mcp_headers_get(ctx->headers, MCP_HEADER_PROTOCOL_VERSION)));
            } else if (conn) {
                pthread_mutex_lock(&conn->lock);
                legacy_notification = conn->era == MCP_ERA_LEGACY;
                pthread_mutex_unlock(&conn->lock);
            }
        }
        if (srv->legacy_mode != MCP_LEGACY_REJECT &&
            (msg.kind == MCP_MSG_REQUEST || legacy_notification)) {
            legacy_submit(srv, conn, &msg, ctx, sink, exchange_out);
            goto done;
        }
        if (msg.kind == MCP_MSG_NOTIFICATION &&
            (ctx->transport != MCP_TRANSPORT_HTTP ||
             strcmp(msg.method, "notifications/cancelled") == 0)) {
            /* A notification carries no version claim of its own (its
             * _meta is optional and has no protocolVersion; the spec's
             * notifications/cancelled example has no _meta at all), so on
             * a connection it belongs to the conversation it arrives in. */
            handle_notification(conn, &msg, sink);
            goto done;
        }
        reject_legacy(&msg, ctx, sink);
        goto done;
    }

    method_id_t method = method_lookup(msg.method);
    entry_t *tool = NULL;
    if (method == METHOD_TOOLS_CALL)
        tool = registry_find(srv, ENTRY_TOOL,
                             json_string_value(mcp_json_get(msg.params, "name")));
    /* The tasks methods are for clients that declared the extension on
     * the request: others get -32021 naming it, whatever the task id (the
     * spec's MUST). */
    json_t *needs_tasks = is_task_method(method) ? task_required_capabilities() : NULL;
    size_t n_versions;
    const char *const *versions = mcp_protocol_versions_modern(&n_versions);
    mcp_request_check_t check = {
        .msg = &msg,
        .headers = ctx->transport == MCP_TRANSPORT_HTTP ? ctx->headers : NULL,
        .versions = versions,
        .n_versions = n_versions,
        .method_known = method_served(srv, method),
        .required_capabilities = tool ? tool->required_caps : needs_tasks,
        .input_schema = tool ? json_object_get(tool->def, "inputSchema") : NULL,
        .param_headers = tool ? &tool->param_headers : NULL,
    };
    int rc = mcp_check_modern_request(&check, &status, &err);
    entry_unref(tool);
    json_decref(needs_tasks);

    if (msg.kind == MCP_MSG_NOTIFICATION) {
        if (rc != MCP_OK) {
            /* HTTP refuses it with a status and an id-less error; stdio
             * never answers a notification. */
            if (ctx->transport == MCP_TRANSPORT_HTTP)
                sink_answer(sink, rejection(NULL, &err, era), status);
            else
                sink_answer(sink, NULL, status);
        } else {
            handle_notification(conn, &msg, sink);
        }
        goto done;
    }
    if (rc != MCP_OK) {
        sink_answer(sink, rejection(msg.id, &err, era), status);
        goto done;
    }

    switch (method) {
    case METHOD_DISCOVER:
    case METHOD_TOOLS_LIST:
    case METHOD_RESOURCES_LIST:
    case METHOD_RESOURCES_TEMPLATES_LIST:
    case METHOD_PROMPTS_LIST: {
        /* Shaping touches only the result's own members: the list's text
         * can be pasted as it was written. */
        list_text_t items;
        json_t *result = method_builtin(srv, method, msg.params, &items, &err);
        answer_here(srv, &msg, result, &items.splice, &err, era, sink);
        list_text_clear(&items);
        goto done;
    }
    case METHOD_TASKS_GET:
    case METHOD_TASKS_UPDATE:
    case METHOD_TASKS_CANCEL:
        /* A few lookups under a lock: answered here, like the lists. */
        answer_here(srv, &msg, task_method(srv, method, msg.params, ctx->principal, &err), NULL,
                    &err, era, sink);
        goto done;
    case METHOD_SKILLS_LIST:
    case METHOD_SKILLS_GET:
    case METHOD_RESOURCES_DIRECTORY_READ:
        /* Lookups in what was loaded: answered here, like the lists. */
        answer_here(srv, &msg, skills_method(srv, method, msg.params, &err), NULL, &err, era,
                    sink);
        goto done;
    case METHOD_TOOLS_CALL:
    case METHOD_RESOURCES_READ:
    case METHOD_PROMPTS_GET:
    case METHOD_COMPLETE:
    case METHOD_LISTEN:
        break;
    case METHOD_UNKNOWN:
        /* The ladder answers unknown methods; not reached. */
        mcp_error_set(&err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, "Method not found");
        sink_answer(sink, rejection(msg.id, &err, era), 404);
        goto done;
    }

    mcp_exchange_t *ex = exchange_new(srv, conn, &msg, ctx, sink);
    if (!ex) {
        mcp_message_clear(&msg);
        return MCP_ENOMEM;
    }
    ex->era = era;
    if (!exchange_track(conn, ex))
        goto done;
    if (method == METHOD_LISTEN) {
        /* No user code: the stream opens here. The transport gets its
         * handle only when submit returns, so it cannot cancel a
         * half-open stream. */
        if (exchange_out) {
            exchange_ref(ex);
            *exchange_out = ex;
        }
        listen_open(srv, ex);
        goto done;
    }
    exchange_hand_out(ex, exchange_out);
    method_start(ex);
done:
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
    return MCP_OK;
}
