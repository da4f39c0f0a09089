/*
 * The exchanges of a transport with one shared stream back; see
 * message_channel.h.
 *
 * No JSON value is shared between the transport's thread and the core's:
 * the response is handed over whole and an exchange keeps its own copy of
 * its id. jansson's reference count is atomic, but the json_decref that
 * frees a value does not acquire, so the thread freeing it would not be
 * ordered after another thread's last reads of it.
 */
#include <stdlib.h>

#include "mcp/jsonrpc.h"
#include "transport/message_channel.h"
#include "clock.h"

struct client_exchange {
    int refs;                       /* guarded by the channel's lock */
    json_t *id;
    int64_t deadline_ms;            /* its call's, from start(); 0: none */
    client_exchange_events_t ev;
    void *user;
    pthread_mutex_t deliver;        /* held while a callback runs */
    bool done;                      /* guarded by deliver */
};

void message_channel_init(message_channel_t *ch, client_transport_t *base,
                          message_channel_send_fn send, void *send_ctx)
{
    ch->base = base;
    ch->send = send;
    ch->send_ctx = send_ctx;
    pthread_mutex_init(&ch->lock, NULL);
    stdio_router_init(&ch->pending);
    ch->accepting = true;
}

void message_channel_destroy(message_channel_t *ch)
{
    stdio_router_clear(&ch->pending);
    pthread_mutex_destroy(&ch->lock);
}

/* ------------------------------------------------------------------------
 * Exchanges
 * ------------------------------------------------------------------------ */

static void exchange_free(client_exchange_t *ex)
{
    if (!ex)
        return;
    json_decref(ex->id);
    pthread_mutex_destroy(&ex->deliver);
    free(ex);
}

static void unref(message_channel_t *ch, client_exchange_t *ex)
{
    pthread_mutex_lock(&ch->lock);
    bool last = --ex->refs == 0;
    pthread_mutex_unlock(&ch->lock);
    if (last)
        exchange_free(ex);
}

/* Runs on_done once. Takes `response` (the callee may take it in turn). */
static void deliver_done(client_exchange_t *ex, json_t *response, int rc, const char *why)
{
    pthread_mutex_lock(&ex->deliver);
    if (!ex->done) {
        ex->done = true;
        client_outcome_t outcome = {.response = response,
                                    .rc = response ? MCP_OK : rc,
                                    .why = why,
                                    .retry_ms = -1};
        ex->ev.on_done(ex->user, &outcome);
        response = outcome.response;
    }
    pthread_mutex_unlock(&ex->deliver);
    json_decref(response);
}

static void deliver_notification(client_exchange_t *ex, const json_t *msg)
{
    pthread_mutex_lock(&ex->deliver);
    if (!ex->done && ex->ev.on_notification)
        ex->ev.on_notification(ex->user, msg);
    pthread_mutex_unlock(&ex->deliver);
}

/* ------------------------------------------------------------------------
 * Start, cancel, release
 * ------------------------------------------------------------------------ */

int message_channel_start(message_channel_t *ch, const json_t *request, int64_t deadline_ms,
                          const client_exchange_events_t *ev, void *user,
                          client_exchange_t **out)
{
    *out = NULL;
    json_t *id = json_object_get(request, "id");
    client_exchange_t *ex = calloc(1, sizeof *ex);
    if (!ex)
        return MCP_ENOMEM;
    pthread_mutex_init(&ex->deliver, NULL);
    ex->refs = 2; /* the core's handle and the routing table */
    ex->id = json_deep_copy(id);
    ex->deadline_ms = deadline_ms;
    ex->ev = *ev;
    ex->user = user;
    if (id && !ex->id) {
        exchange_free(ex);
        return MCP_ENOMEM;
    }

    pthread_mutex_lock(&ch->lock);
    int rc = ch->accepting ? stdio_router_add(&ch->pending, id, ex) : MCP_ECLOSED;
    pthread_mutex_unlock(&ch->lock);
    if (rc != MCP_OK) {
        exchange_free(ex);
        return rc == MCP_EEXIST ? MCP_EINVAL : rc;
    }
    /* Registered before sending: the answer may come at once. */
    rc = ch->send(ch->send_ctx, request, deadline_ms);
    if (rc != MCP_OK) {
        pthread_mutex_lock(&ch->lock);
        bool ours = stdio_router_remove(&ch->pending, id) == ex;
        pthread_mutex_unlock(&ch->lock);
        if (ours) {
            /* Nobody else saw it: fail the start itself. */
            exchange_free(ex);
            return rc;
        }
        /* The server's exit (or the stream's end, or close()) already took
         * it and runs (or ran) on_done. */
    }
    *out = ex;
    return MCP_OK;
}

void message_channel_cancel(message_channel_t *ch, client_exchange_t *ex, bool notify_peer)
{
    pthread_mutex_lock(&ch->lock);
    bool was_pending = stdio_router_find(&ch->pending, ex->id) == ex;
    if (was_pending)
        stdio_router_remove(&ch->pending, ex->id);
    pthread_mutex_unlock(&ch->lock);
    if (was_pending && notify_peer) {
        json_t *note = mcp_jsonrpc_notification(
            "notifications/cancelled",
            json_pack("{s:O, s:s}", "requestId", ex->id, "reason", "cancelled by the client"));
        /* A call that timed out gives the notice a short grace, not the
         * transport's whole limit (see MESSAGE_CHANNEL_NOTICE_GRACE_MS). */
        int64_t by = ex->deadline_ms;
        if (by > 0 && by < mcp_clock_ms() + MESSAGE_CHANNEL_NOTICE_GRACE_MS)
            by = mcp_clock_ms() + MESSAGE_CHANNEL_NOTICE_GRACE_MS;
        if (note)
            ch->send(ch->send_ctx, note, by);
        json_decref(note);
    }
    deliver_done(ex, NULL, MCP_ECANCELED, "the request was cancelled");
    if (was_pending)
        unref(ch, ex);
}

void message_channel_release(message_channel_t *ch, client_exchange_t *ex)
{
    if (ex)
        unref(ch, ex);
}

/* ------------------------------------------------------------------------
 * The stream
 * ------------------------------------------------------------------------ */

bool message_channel_receive(message_channel_t *ch, const char *text, size_t len,
                             mcp_error_t *why)
{
    stdio_route_t route;
    stdio_route_parse(text, len, &route, why);
    pthread_mutex_lock(&ch->lock);
    stdio_route_resolve(&ch->pending, &route, why);
    client_exchange_t *ex = route.value;
    if (route.kind == STDIO_ROUTE_RESPONSE || route.kind == STDIO_ROUTE_BROKEN)
        stdio_router_remove(&ch->pending, route.key); /* the table's reference moves to us */
    else if (route.kind == STDIO_ROUTE_NOTIFICATION)
        ex->refs++;
    pthread_mutex_unlock(&ch->lock);
    /* Traced outside the lock: the hooks are fixed before any thread
     * starts. */
    client_trace_text(ch->base, MCP_TRACE_RECEIVED, text, len);

    switch (route.kind) {
    case STDIO_ROUTE_RESPONSE: {
        json_t *response = route.msg.root;
        route.msg.root = NULL; /* handed over whole */
        deliver_done(ex, response, MCP_OK, NULL);
        unref(ch, ex);
        break;
    }
    case STDIO_ROUTE_BROKEN: {
        char message[MCP_ERROR_MESSAGE_MAX + 64];
        snprintf(message, sizeof message, "the server's answer is not valid JSON-RPC: %s",
                 why ? why->message : "malformed");
        deliver_done(ex, NULL, MCP_EPROTO, message);
        unref(ch, ex);
        break;
    }
    case STDIO_ROUTE_NOTIFICATION:
        deliver_notification(ex, route.msg.root);
        unref(ch, ex);
        break;
    case STDIO_ROUTE_UNROUTED:
        if (ch->base->hooks.on_unrouted)
            ch->base->hooks.on_unrouted(ch->base->hooks.user, route.msg.root);
        break;
    case STDIO_ROUTE_DROP:
        break;
    }
    bool routed = route.kind != STDIO_ROUTE_DROP;
    stdio_route_clear(&route);
    return routed;
}

bool message_channel_lost(message_channel_t *ch, const json_t *id, int rc, const char *why)
{
    pthread_mutex_lock(&ch->lock);
    client_exchange_t *ex = stdio_router_remove(&ch->pending, id);
    pthread_mutex_unlock(&ch->lock);
    if (!ex)
        return false;
    deliver_done(ex, NULL, rc, why);
    unref(ch, ex); /* the table's reference, now ours */
    return true;
}

void message_channel_shut(message_channel_t *ch, stdio_router_t *taken)
{
    pthread_mutex_lock(&ch->lock);
    ch->accepting = false;
    *taken = ch->pending;
    stdio_router_init(&ch->pending);
    pthread_mutex_unlock(&ch->lock);
}

void message_channel_fail(message_channel_t *ch, stdio_router_t *taken, int rc,
                          const char *why)
{
    client_exchange_t *ex;
    while ((ex = stdio_router_pop(taken))) {
        deliver_done(ex, NULL, rc, why);
        unref(ch, ex); /* the table's reference */
    }
    stdio_router_clear(taken);
}

void message_channel_reopen(message_channel_t *ch)
{
    pthread_mutex_lock(&ch->lock);
    ch->accepting = true;
    pthread_mutex_unlock(&ch->lock);
}
