/*
 * An exchange is one request in flight: it owns the parsed request, knows
 * where its answers go (the sink), and can be cancelled from any thread.
 *
 * Lifetime: the core holds one reference until the response is sent (or the
 * request is abandoned after a cancellation); a transport that asked for a
 * handle holds another. The sink is released exactly once, after the last
 * send, whichever way the request ends.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"
#include "clock.h"
#include "zalloc.h"
#include "protocol/envelope.h"
#include "protocol/json_writer.h"

static void live_link(mcp_exchange_t *ex)
{
    mcp_server_t *srv = ex->srv;
    pthread_mutex_lock(&srv->live_lock);
    ex->live_next = srv->live;
    if (srv->live)
        srv->live->live_prev = ex;
    srv->live = ex;
    pthread_mutex_unlock(&srv->live_lock);
}

static void live_unlink(mcp_exchange_t *ex)
{
    mcp_server_t *srv = ex->srv;
    pthread_mutex_lock(&srv->live_lock);
    if (ex->live_prev)
        ex->live_prev->live_next = ex->live_next;
    else if (srv->live == ex)
        srv->live = ex->live_next;
    if (ex->live_next)
        ex->live_next->live_prev = ex->live_prev;
    ex->live_prev = ex->live_next = NULL;
    pthread_mutex_unlock(&srv->live_lock);
}

mcp_exchange_t *exchange_new(mcp_server_t *srv, mcp_conn_t *conn, mcp_message_t *msg,
                             const mcp_request_context_t *ctx, mcp_sink_t *sink)
{
    mcp_exchange_t *ex = mcp_zalloc(sizeof *ex);
    if (!ex)
        return NULL;
    if (ctx->principal && !(ex->principal = strdup(ctx->principal))) {
        free(ex);
        return NULL;
    }
    atomic_init(&ex->refs, 1);
    atomic_init(&ex->cancelled, false);
    atomic_init(&ex->released, false);
    ex->srv = srv;
    ex->sink = sink;
    ex->transport = ctx->transport;
    ex->msg = *msg;
    memset(msg, 0, sizeof *msg);
    ex->log_level = -1;
    ex->legacy_task_ttl_ms = -1;
    if (conn) {
        conn_ref(conn);
        ex->conn = conn;
    }
    pthread_mutex_init(&ex->wait_lock, NULL);
    pthread_mutex_init(&ex->send_lock, NULL);
    atomic_init(&ex->cancel_handled, false);
    atomic_init(&ex->task_questions_closed, false);
    /* mcp_call_sleep() computes deadlines on the monotonic clock. */
    mcp_clock_cond_init(&ex->wait_cond);

    /* The per-request envelope (validated by the ladder before we get
     * here): what the handler may ask about the client. */
    mcp_envelope_t env;
    mcp_envelope_read(ex->msg.params, &env);
    ex->protocol_version = json_string_value(env.protocol_version);
    ex->client_caps = json_is_object(env.client_capabilities)
                          ? json_incref((json_t *)env.client_capabilities)
                          : json_object();
    ex->client_info = json_is_object(env.client_info) ? (json_t *)env.client_info : NULL;
    ex->progress_token = json_is_string(env.progress_token) || json_is_integer(env.progress_token)
                             ? (json_t *)env.progress_token
                             : NULL;
    const char *level = json_string_value(env.log_level);
    if (level)
        ex->log_level = mcp_log_level_index(level);

    live_link(ex);
    return ex;
}

void exchange_ref(mcp_exchange_t *ex)
{
    atomic_fetch_add(&ex->refs, 1);
}

void exchange_hand_out(mcp_exchange_t *ex, mcp_exchange_t **out)
{
    if (!out)
        return;
    exchange_ref(ex);
    *out = ex;
    if (ex->sink->started)
        ex->sink->started(ex->sink, ex);
}

bool exchange_try_ref(mcp_exchange_t *ex)
{
    int refs = atomic_load(&ex->refs);
    while (refs > 0)
        if (atomic_compare_exchange_weak(&ex->refs, &refs, refs + 1))
            return true;
    return false;
}

void exchange_unref(mcp_exchange_t *ex)
{
    if (!ex || atomic_fetch_sub(&ex->refs, 1) != 1)
        return;
    live_unlink(ex);
    if (ex->conn)
        conn_unref(ex->conn);
    entry_unref(ex->entry);
    json_decref(ex->uri_vars);
    json_decref(ex->state);
    json_decref(ex->input_responses);
    json_decref(ex->client_caps);
    bridge_round_release(ex->bridge_round);
    session_unref(ex->session);
    mcp_message_clear(&ex->msg);
    pthread_mutex_destroy(&ex->wait_lock);
    pthread_mutex_destroy(&ex->send_lock);
    pthread_cond_destroy(&ex->wait_cond);
    free(ex->principal);
    free(ex);
}

void exchange_cancel(mcp_exchange_t *ex)
{
    /* on_cancel is read under the lock it is set under (listen.c), so a
     * cancellation either finds it or is seen by whoever sets it. */
    pthread_mutex_lock(&ex->wait_lock);
    atomic_store(&ex->cancelled, true);
    pthread_cond_broadcast(&ex->wait_cond);
    void (*on_cancel)(mcp_exchange_t *) = ex->on_cancel;
    pthread_mutex_unlock(&ex->wait_lock);
    /* A listen stream has no handler to notice: end it now. */
    if (on_cancel && !atomic_exchange(&ex->cancel_handled, true))
        on_cancel(ex);
}

/* Marks the exchange released, under the send lock: a send in progress
 * (a publisher delivering to a listen stream, on its own thread) finishes
 * first, and none starts afterwards. True for the one caller that must
 * then release the sink. */
static bool close_sends_locked(mcp_exchange_t *ex)
{
    return !atomic_exchange(&ex->released, true);
}

/* The release proper, once sends are closed. */
static void release_now(mcp_exchange_t *ex)
{
    /* Unlink from the connection first: once released, a later
     * notifications/cancelled must not find this request. */
    mcp_conn_t *conn = ex->conn;
    if (conn) {
        pthread_mutex_lock(&conn->lock);
        if (ex->conn_prev)
            ex->conn_prev->conn_next = ex->conn_next;
        else if (conn->inflight == ex)
            conn->inflight = ex->conn_next;
        if (ex->conn_next)
            ex->conn_next->conn_prev = ex->conn_prev;
        ex->conn_prev = ex->conn_next = NULL;
        pthread_mutex_unlock(&conn->lock);
    }
    /* A legacy session's request or stream ended: idleness counts from
     * now. */
    session_touch(ex->srv, ex->session);
    ex->sink->release(ex->sink);
}

void exchange_release_sink(mcp_exchange_t *ex)
{
    pthread_mutex_lock(&ex->send_lock);
    bool first = close_sends_locked(ex);
    pthread_mutex_unlock(&ex->send_lock);
    if (first)
        release_now(ex);
}

int exchange_notify(mcp_exchange_t *ex, json_t *notification_new)
{
    if (!notification_new)
        return MCP_ENOMEM;
    int rc = MCP_ECANCELED;
    bool gone = false;
    pthread_mutex_lock(&ex->send_lock);
    if (!atomic_load(&ex->cancelled) && !atomic_load(&ex->released)) {
        rc = ex->sink->send(ex->sink, MCP_OUT_NOTIFICATION, notification_new, 0);
        if (rc < 0) {
            gone = true;
            rc = MCP_ECLOSED;
        }
    }
    pthread_mutex_unlock(&ex->send_lock);
    json_decref(notification_new);
    if (gone)
        exchange_cancel(ex); /* the peer went away: treat it as a cancellation */
    return rc;
}

int exchange_request(mcp_exchange_t *ex, json_t *request_new)
{
    if (!request_new)
        return MCP_ENOMEM;
    int rc = MCP_ECANCELED;
    bool gone = false;
    pthread_mutex_lock(&ex->send_lock);
    if (!atomic_load(&ex->cancelled) && !atomic_load(&ex->released)) {
        rc = ex->sink->send(ex->sink, MCP_OUT_REQUEST, request_new, 0);
        if (rc < 0) {
            gone = true;
            rc = MCP_ECLOSED;
        }
    }
    pthread_mutex_unlock(&ex->send_lock);
    json_decref(request_new);
    if (gone)
        exchange_cancel(ex);
    return rc;
}

int exchange_notify_late(mcp_exchange_t *ex, const json_t *msg)
{
    int rc = MCP_ECLOSED;
    pthread_mutex_lock(&ex->send_lock);
    /* Cancelled or not: only a released sink is gone for good. A failed
     * send means the stream is gone, which the request's own path (or its
     * cancellation, already under way) handles. */
    if (!atomic_load(&ex->released) &&
        ex->sink->send(ex->sink, MCP_OUT_NOTIFICATION, msg, 0) == 0)
        rc = MCP_OK;
    pthread_mutex_unlock(&ex->send_lock);
    return rc;
}

int exchange_send_event(mcp_exchange_t *ex, const json_t *msg, const char *event_id)
{
    int rc = MCP_ECANCELED;
    bool gone = false;
    pthread_mutex_lock(&ex->send_lock);
    if (!atomic_load(&ex->cancelled) && !atomic_load(&ex->released) && ex->sink->send_event) {
        rc = ex->sink->send_event(ex->sink, msg, event_id);
        if (rc < 0) {
            gone = true;
            rc = MCP_ECLOSED;
        }
    }
    pthread_mutex_unlock(&ex->send_lock);
    if (gone)
        exchange_cancel(ex);
    return rc;
}

json_t *response_out_of_memory(const json_t *id)
{
    return mcp_jsonrpc_error(id, MCP_INTERNAL_ERROR, "Internal error: out of memory", NULL);
}

/* Sends the final response, as a tree or as its text, unless cancelled,
 * then releases the sink. The response and the closing of sends in one
 * hold of the lock: an event for a listen stream must not slip in after
 * its result. With neither (the response could not be built), the
 * request still gets an answer: the out-of-memory error. */
static void finish_with(mcp_exchange_t *ex, const json_t *response, const char *text,
                        size_t len, int http_status)
{
    pthread_mutex_lock(&ex->send_lock);
    bool first = close_sends_locked(ex);
    if (first && !atomic_load(&ex->cancelled)) {
        if (text) {
            ex->sink->send_text(ex->sink, MCP_OUT_RESPONSE, text, len, http_status);
        } else if (response) {
            ex->sink->send(ex->sink, MCP_OUT_RESPONSE, response, http_status);
        } else {
            json_t *oom = response_out_of_memory(ex->msg.id);
            if (oom)
                ex->sink->send(ex->sink, MCP_OUT_RESPONSE, oom, 500);
            json_decref(oom);
        }
    }
    pthread_mutex_unlock(&ex->send_lock);
    if (first)
        release_now(ex);
}

void exchange_finish(mcp_exchange_t *ex, json_t *response_new, int http_status)
{
    finish_with(ex, response_new, NULL, 0, http_status);
    json_decref(response_new);
}

void exchange_finish_text(mcp_exchange_t *ex, const char *text, size_t len)
{
    finish_with(ex, NULL, text, len, 200);
}

/* The text of the response carrying `result_new` (taken), for a sink that
 * takes text; NULL, with *err filled, when it cannot be written. */
static char *result_text(const json_t *id, json_t *result_new, const json_splice_t *splice,
                         size_t *len, mcp_error_t *err)
{
    char *text = json_write_result_spliced(id, result_new, splice, len);
    json_decref(result_new);
    if (!text)
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                      "Internal error: the result could not be serialised");
    return text;
}

void exchange_finish_result(mcp_exchange_t *ex, json_t *result_new)
{
    if (!ex->sink->send_text) {
        exchange_finish(ex, mcp_jsonrpc_result(ex->msg.id, result_new), 200);
        return;
    }
    size_t len = 0;
    mcp_error_t err = {0};
    char *text = result_text(ex->msg.id, result_new, NULL, &len, &err);
    if (!text) {
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        return;
    }
    finish_with(ex, NULL, text, len, 200);
    free(text);
}

void exchange_fail(mcp_exchange_t *ex, const mcp_error_t *err, bool before_dispatch)
{
    json_t *response = mcp_jsonrpc_error_from(ex->msg.id, err);
    json_t *error = json_object_get(response, "error");
    if (error && ex->era == MCP_ERA_MODERN)
        mcp_shape_modern_error(error);
    else if (error && ex->era == MCP_ERA_LEGACY)
        mcp_shape_legacy_error(ex->msg.method, error);
    int code = (int)json_integer_value(json_object_get(error, "code"));
    /* Legacy clients read JSON-RPC errors from 200 responses (the status
     * codes are a 2026-07-28 rule). */
    int status = ex->era == MCP_ERA_LEGACY ? 200 : mcp_http_status_for_code(code, before_dispatch);
    exchange_finish(ex, response, status);
}

void sink_answer_result(mcp_sink_t *sink, const json_t *id, json_t *result_new,
                        const json_splice_t *splice)
{
    if (!sink->send_text) {
        json_t *response = mcp_jsonrpc_result(id, result_new);
        if (response)
            sink_answer(sink, response, 200);
        else
            sink_answer(sink, response_out_of_memory(id), 500);
        return;
    }
    size_t len = 0;
    mcp_error_t err = {0};
    char *text = result_text(id, result_new, splice, &len, &err);
    if (text) {
        sink->send_text(sink, MCP_OUT_RESPONSE, text, len, 200);
        free(text);
        sink->release(sink);
    } else {
        json_t *response = mcp_jsonrpc_error_from(id, &err);
        sink_answer(sink, response ? response : response_out_of_memory(id), 500);
        mcp_error_clear(&err);
    }
}

void sink_answer(mcp_sink_t *sink, json_t *response_new, int http_status)
{
    if (response_new)
        sink->send(sink, MCP_OUT_RESPONSE, response_new, http_status);
    json_decref(response_new);
    sink->release(sink);
}

void mcp_exchange_cancel(mcp_exchange_t *ex)
{
    /* A transport cancels what it still waits for. After the answer, its
     * cancellation (the HTTP layer sends one when a request ends while it
     * is being submitted) would otherwise reach the task a tools/call
     * became, which outlives its request. */
    if (ex && !atomic_load(&ex->released))
        exchange_cancel(ex);
}

void mcp_exchange_release(mcp_exchange_t *ex)
{
    exchange_unref(ex);
}
