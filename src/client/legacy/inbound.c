/*
 * What a legacy server sends outside our requests (digest section 10.2).
 *
 * Its requests -- sampling/createMessage, elicitation/create, roots/list,
 * ping -- are answered through the very functions that answer a modern
 * server's input_required rounds (client_answer_inputs), so that a user's
 * callbacks see the same params and their answers mean the same thing in
 * both eras. Each request that needs a callback is answered on a thread
 * of its own: a callback may wait for a person, or make calls on the
 * client, and the thread that read the request must go on reading. At
 * most CLIENT_LEGACY_MAX_ANSWERING such threads run at once; a request
 * beyond them is refused with -32603 on the thread that read it, as are
 * requests no callback answers (ping gets its result there too). Writing
 * there also slows a flooding server down to the pace its answers are
 * taken at.
 *
 * Its notifications: log messages go to on_log; list_changed and
 * resources/updated invalidate the cache and go to the subscriptions that
 * asked for them; notifications/cancelled withdraws one of its requests,
 * which then gets no answer (the spec: the receiver SHOULD not respond),
 * and no callback when it has not started yet. A callback already running
 * cannot be told; its answer is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/legacy/legacy.h"
#include "mcp/errors.h"
#include "mcp/jsonrpc.h"

/* The params a callback sees: the modern shape. A legacy elicitation
 * before 2025-11-25 has no mode; form was the only one. */
static json_t *callback_params(const char *method, const json_t *params)
{
    json_t *p = json_is_object(params) ? json_deep_copy(params) : json_object();
    if (p && strcmp(method, "elicitation/create") == 0 && !json_object_get(p, "mode"))
        json_object_set_new(p, "mode", json_string("form"));
    return p;
}

/* Is the server's request `method` answered by a user's callback? */
static bool needs_callback(const char *method)
{
    return strcmp(method, "elicitation/create") == 0 ||
           strcmp(method, "sampling/createMessage") == 0 || strcmp(method, "roots/list") == 0;
}

/* The answer to a request no callback answers: ping, or an unknown method. */
static json_t *answer_at_once(const json_t *request)
{
    const json_t *id = json_object_get(request, "id");
    const char *method = json_string_value(json_object_get(request, "method"));
    if (strcmp(method, "ping") == 0)
        return mcp_jsonrpc_result(id, json_object());
    return mcp_jsonrpc_error(id, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
}

/* The result of the callback for the server's request, or a JSON-RPC
 * error. */
static json_t *answer(mcp_client_t *c, const json_t *request)
{
    const json_t *id = json_object_get(request, "id");
    const char *method = json_string_value(json_object_get(request, "method"));
    json_t *params = callback_params(method, json_object_get(request, "params"));
    json_t *inputs = params ? json_pack("{s:{s:s, s:o}}", "request", "method", method, "params",
                                        params)
                            : NULL;
    if (!inputs)
        return mcp_jsonrpc_error(id, MCP_INTERNAL_ERROR, "out of memory", NULL);
    json_t *responses = NULL;
    mcp_error_t e = {0};
    int rc = client_answer_inputs(&c->input, inputs, &responses, &e);
    json_decref(inputs);
    json_t *reply;
    if (rc == MCP_OK) {
        reply = mcp_jsonrpc_result(id, json_incref(json_object_get(responses, "request")));
    } else if (rc == MCP_EPROTO) {
        /* A capability the client never declared: it has no such method. */
        reply = mcp_jsonrpc_error(id, MCP_METHOD_NOT_FOUND, e.message, NULL);
    } else {
        /* The callback declined to answer (sampling or roots). */
        client_log(c, MCP_LOG_INFO, "%s was not answered: %s", method, e.message);
        reply = mcp_jsonrpc_error(id, MCP_INTERNAL_ERROR, e.message[0] ? e.message
                                                                         : "not answered",
                                  NULL);
    }
    json_decref(responses);
    mcp_error_clear(&e);
    return reply;
}

/* Sends `reply` (borrowed; NULL: it could not be made) to the server's
 * `method` request. */
static void send_reply(mcp_client_t *c, const char *method, const json_t *reply)
{
    pthread_mutex_lock(&c->lock);
    client_http_hints_t hints = {.protocol_version = client_legacy_header_version(c->version)};
    pthread_mutex_unlock(&c->lock);
    int rc = reply ? c->transport->ops->notify(c->transport, reply, &hints) : MCP_ENOMEM;
    if (rc != MCP_OK)
        client_log(c, MCP_LOG_WARNING, "cannot answer the server's %s: %s", method,
                   mcp_strerror(rc));
}

static void *answer_thread(void *arg)
{
    client_inbound_t *in = arg;
    mcp_client_t *c = in->client;
    const char *method = json_string_value(json_object_get(in->request, "method"));
    json_t *reply = client_legacy_inbound_cancelled(c, in) ? NULL : answer(c, in->request);
    if (client_legacy_inbound_cancelled(c, in))
        client_log(c, MCP_LOG_DEBUG, "the server cancelled its %s: no answer", method);
    else
        send_reply(c, method, reply);
    json_decref(reply);
    client_legacy_inbound_leave(c, in);
    json_decref(in->request);
    free(in);
    return NULL;
}

/* Answers the server's request with -32603 and `why`, logged too: a
 * request the client cannot take on is refused, never left unanswered. */
static void refuse(mcp_client_t *c, const json_t *request, const char *why)
{
    const char *method = json_string_value(json_object_get(request, "method"));
    client_log(c, MCP_LOG_WARNING, "refusing the server's %s: %s", method, why);
    json_t *reply =
        mcp_jsonrpc_error(json_object_get(request, "id"), MCP_INTERNAL_ERROR, why, NULL);
    send_reply(c, method, reply);
    json_decref(reply);
}

/* Lists the request before its thread starts, on the thread that read it:
 * a notifications/cancelled read next finds it. */
static void start_answer(mcp_client_t *c, const json_t *request)
{
    client_inbound_t *in = calloc(1, sizeof *in);
    if (in) {
        in->client = c;
        in->request = json_deep_copy(request);
    }
    if (!in || !in->request) {
        if (in)
            json_decref(in->request);
        free(in);
        refuse(c, request, "out of memory");
        return;
    }
    int entered = client_legacy_inbound_enter(c, in);
    if (entered != MCP_OK) {
        json_decref(in->request);
        free(in);
        /* When closing, the server gets no answer, as from any closed
         * client; when full, a refusal. */
        if (entered == MCP_ELIMIT) {
            char why[96];
            snprintf(why, sizeof why,
                     "too many concurrent requests: the client answers at most %d at once",
                     CLIENT_LEGACY_MAX_ANSWERING);
            refuse(c, request, why);
        }
        return;
    }
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, answer_thread, in) != 0) {
        client_legacy_inbound_leave(c, in);
        json_decref(in->request);
        free(in);
        refuse(c, request, "the client cannot start a thread to answer it");
    }
    pthread_attr_destroy(&attr);
}

static bool is_change(const char *method)
{
    return strcmp(method, "notifications/tools/list_changed") == 0 ||
           strcmp(method, "notifications/prompts/list_changed") == 0 ||
           strcmp(method, "notifications/resources/list_changed") == 0 ||
           strcmp(method, "notifications/resources/updated") == 0;
}

void client_legacy_on_message(mcp_client_t *c, const json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    if (method && json_object_get(msg, "id") && needs_callback(method)) {
        start_answer(c, msg);
    } else if (method && json_object_get(msg, "id")) {
        json_t *reply = answer_at_once(msg);
        send_reply(c, method, reply);
        json_decref(reply);
    } else if (!method) {
        client_log(c, MCP_LOG_DEBUG, "dropping a response that answers no request in flight");
    } else if (strcmp(method, "notifications/message") == 0) {
        client_deliver_log(c, msg);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        if (!client_legacy_inbound_cancel(c, json_object_get(params, "requestId")))
            client_log(c, MCP_LOG_DEBUG, "the server cancelled a request it is not waiting "
                                         "for an answer to");
    } else if (is_change(method)) {
        client_invalidate_for(c, method, params);
        client_listen_deliver(c, method, params);
    } else {
        client_log(c, MCP_LOG_DEBUG, "ignoring %s that belongs to no call", method);
    }
}
