/*
 * Asking the client for input: multi round-trip requests (MRTR).
 *
 * Round N of a request: the handler asks for inputs by key and returns
 * MCP_INPUT_REQUIRED. The server answers resultType "input_required" with
 * the requests and a sealed requestState carrying
 *     {"r": N + 1, "k": {key: method, ...}, "s": handler state}
 * bound to the principal, method and salient params (see
 * mcp/request_state.h). The client retries with inputResponses and the
 * state; input_prepare() opens and checks both before the handler runs
 * again, so a handler never sees a state that failed to open.
 */
#include <string.h>

#include "server/aead_codec.h"
#include "server/server_internal.h"
#include "json_get.h"

/* ------------------------------------------------------------------------
 * Validating what the client answered
 * ------------------------------------------------------------------------ */

static bool valid_elicit_result(const json_t *r)
{
    const char *action = json_string_value(json_object_get(r, "action"));
    if (!action || (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0 &&
                    strcmp(action, "cancel") != 0))
        return false;
    const json_t *content = json_object_get(r, "content");
    if (!content)
        return true;
    if (!json_is_object(content))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)content, k, v) {
        if (json_is_array(v)) {
            size_t i;
            json_t *item;
            json_array_foreach(v, i, item) {
                if (!json_is_string(item))
                    return false;
            }
        } else if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v)) {
            return false;
        }
    }
    return true;
}

static bool valid_sampling_result(const json_t *r)
{
    const json_t *content = json_object_get(r, "content");
    return json_is_string(json_object_get(r, "role")) &&
           json_is_string(json_object_get(r, "model")) &&
           (json_is_object(content) || json_is_array(content));
}

static bool valid_roots_result(const json_t *r)
{
    const json_t *roots = json_object_get(r, "roots");
    if (!json_is_array(roots))
        return false;
    size_t i;
    json_t *root;
    json_array_foreach(roots, i, root) {
        if (!json_is_string(json_object_get(root, "uri")))
            return false;
    }
    return true;
}

/* Checks one response against the method of the request it answers
 * (`method` NULL: unknown, so only the common shape is checked). */
bool input_answer_valid(const char *method, const json_t *response)
{
    if (!json_is_object(response))
        return false;
    if (!method) {
        /* Without a state we do not know what was asked: accept any of the
         * three result shapes. */
        return valid_elicit_result(response) || valid_sampling_result(response) ||
               valid_roots_result(response);
    }
    if (strcmp(method, "elicitation/create") == 0)
        return valid_elicit_result(response);
    if (strcmp(method, "sampling/createMessage") == 0)
        return valid_sampling_result(response);
    if (strcmp(method, "roots/list") == 0)
        return valid_roots_result(response);
    return false;
}

/* A requestState that does not open (or cannot be spent): the reason
 * goes to the log, not to the (possibly hostile) client. A failure of the
 * server's own (out of memory, a full or failing replay store: the codec
 * says -32603) is reported as one, so that nobody looks for tampering. */
static int state_rejected(mcp_exchange_t *ex, int failed, mcp_error_t *why, mcp_error_t *err)
{
    if (why->rc == MCP_OK)
        why->rc = failed; /* a codec of the application's that left *why bare */
    bool ours = why->code == MCP_INTERNAL_ERROR || why->rc == MCP_ENOMEM;
    server_log(ex->srv, ours ? MCP_LOG_ERROR : MCP_LOG_WARNING, "%s requestState for %s: %s",
               ours ? "could not check the" : "rejected", ex->msg.method, why->message);
    int rc = ours && why->rc != MCP_OK ? why->rc : MCP_EINVAL;
    mcp_error_clear(why);
    if (ours)
        return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL,
                             "Internal error: the requestState could not be checked");
    return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                         "Invalid requestState: it was altered, has expired, or "
                         "belongs to another request");
}

static int check_responses(mcp_exchange_t *ex, const json_t *responses, const json_t *asked,
                           mcp_error_t *err);

int input_prepare(mcp_exchange_t *ex, mcp_error_t *err)
{
    const json_t *params = ex->msg.params;
    const json_t *state = mcp_json_get(params, "requestState");
    const json_t *responses = mcp_json_get(params, "inputResponses");
    json_t *asked = NULL;
    codec_ref_t *codec = NULL;
    /* With single use on, the state is spent only once the retry is
     * accepted: a retry refused for an invalid inputResponse keeps it, so
     * that the corrected retry the error asks for can still be made. */
    mcp_state_ticket_t ticket = {0};

    if (state) {
        if (!json_is_string(state))
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                                 "requestState must be a string");
        codec = server_codec_get(ex->srv);
        mcp_state_binding_t binding = {
            .principal = ex->principal, .method = ex->msg.method, .params = params};
        json_t *payload = NULL;
        mcp_error_t why = {0};
        int opened = codec ? mcp_codec_open_deferred(codec->codec, json_string_value(state),
                                                     &binding, &payload, &ticket, &why)
                           : mcp_error_set(&why, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                                           "no codec (out of memory)");
        if (opened != MCP_OK) {
            codec_put(codec);
            return state_rejected(ex, opened, &why, err);
        }
        json_t *round = json_object_get(payload, "r");
        ex->round = json_is_integer(round) ? (int)json_integer_value(round) : 0;
        ex->state = json_incref(json_object_get(payload, "s"));
        asked = json_incref(json_object_get(payload, "k"));
        json_decref(payload);
    }

    int rc = MCP_OK;
    mcp_error_t why = {0};
    if (state && ex->round > ex->srv->max_input_rounds) {
        /* Only a state minted under a higher limit can be past it. */
        rc = mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                           "Too many input rounds (%d) for one request", ex->round);
    } else if (responses) {
        rc = check_responses(ex, responses, asked, err);
    }
    int redeemed;
    if (rc == MCP_OK && (redeemed = mcp_codec_redeem(&ticket, &why)) != MCP_OK) {
        /* A concurrent retry spent it first (or the store failed). */
        json_decref(ex->input_responses);
        ex->input_responses = NULL;
        rc = state_rejected(ex, redeemed, &why, err);
    }
    codec_put(codec); /* after the redemption, which uses it */
    json_decref(asked);
    return rc;
}

/* Keeps the answers to what was `asked` (NULL: no state, any of the three
 * shapes) in ex->input_responses; -32602 for one that is not the result
 * its question asks for. */
static int check_responses(mcp_exchange_t *ex, const json_t *responses, const json_t *asked,
                           mcp_error_t *err)
{
    if (!json_is_object(responses))
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "inputResponses must be an object");
    json_t *kept = json_object();
    if (!kept)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                             "Internal error: out of memory");
    const char *key;
    json_t *response;
    json_object_foreach((json_t *)responses, key, response) {
        const char *method = json_string_value(json_object_get(asked, key));
        if (asked && !method)
            continue; /* an answer to a question we never asked: ignored */
        if (!input_answer_valid(method, response)) {
            json_decref(kept);
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                                 json_pack("{s:s}", "key", key),
                                 "inputResponses.%s is not a valid %s result", key,
                                 method ? method : "input");
        }
        /* An answer left out would have the handler ask again. */
        if (json_object_set(kept, key, response) != 0) {
            json_decref(kept);
            return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                                 "Internal error: out of memory");
        }
    }
    ex->input_responses = kept;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Asking
 * ------------------------------------------------------------------------ */

int input_no_event_stream(mcp_error_t *err, const char *method)
{
    /* The client broke the transport's rule that every POST accepts both
     * application/json and text/event-stream; -32600 says the request is
     * at fault, and the message says how, since nothing else will. */
    return mcp_error_set(err, MCP_EUNSUPPORTED, MCP_INVALID_REQUEST, NULL,
                         "Invalid Request: the server must send the client a %s request to "
                         "serve this request, which needs an event stream, but the request's "
                         "Accept header did not list text/event-stream",
                         method);
}

static int ask(mcp_call_t *call, const char *key, const char *method, json_t *params_new,
               unsigned flags)
{
    if (!key || !key[0] || !params_new || !mcp_method_may_require_input(mcp_call_method(call))) {
        json_decref(params_new);
        return MCP_EINVAL;
    }
    if (call->input_requests && json_object_get(call->input_requests, key)) {
        json_decref(params_new);
        return MCP_EINVAL;
    }
    mcp_exchange_t *ex = call->ex;
    /* A task's questions go out on a tasks/result stream, not on the
     * stream of the request that started it. */
    if (ex->no_event_stream && !call->task) {
        json_decref(params_new);
        if (flags & MCP_INPUT_NEEDED)
            input_no_event_stream(&call->error, method);
        return MCP_EUNSUPPORTED;
    }
    json_t *required = NULL;
    if (!mcp_client_caps_allow(call->ex->client_caps, method, params_new, &required)) {
        json_decref(params_new);
        /* Every request asked for here is one some capability allows:
         * without the capabilities it needs, allocation failed. */
        if (!required)
            return MCP_ENOMEM;
        if (flags & MCP_INPUT_NEEDED)
            mcp_error_missing_capability(&call->error, required);
        else
            json_decref(required);
        return MCP_EUNSUPPORTED;
    }
    if (!call->input_requests)
        call->input_requests = json_object();
    json_t *request = json_pack("{s:s, s:o}", "method", method, "params", params_new);
    if (!request || json_object_set_new(call->input_requests, key, request) != 0)
        return MCP_ENOMEM;
    return MCP_OK;
}

int mcp_call_elicit(mcp_call_t *call, const char *key, const char *message,
                    json_t *requested_schema_new, unsigned flags)
{
    if (!message || !json_is_object(requested_schema_new)) {
        json_decref(requested_schema_new);
        return MCP_EINVAL;
    }
    json_t *params = json_pack("{s:s, s:s, s:o}", "mode", "form", "message", message,
                               "requestedSchema", requested_schema_new);
    return ask(call, key, "elicitation/create", params, flags);
}

int mcp_call_elicit_url(mcp_call_t *call, const char *key, const char *message,
                        const char *url, unsigned flags)
{
    if (!message || !url)
        return MCP_EINVAL;
    json_t *params = json_pack("{s:s, s:s, s:s}", "mode", "url", "message", message, "url", url);
    return ask(call, key, "elicitation/create", params, flags);
}

int mcp_call_sample(mcp_call_t *call, const char *key, json_t *params_new, unsigned flags)
{
    if (!json_is_array(json_object_get(params_new, "messages")) ||
        !json_is_integer(json_object_get(params_new, "maxTokens"))) {
        json_decref(params_new);
        return MCP_EINVAL;
    }
    return ask(call, key, "sampling/createMessage", params_new, flags);
}

int mcp_call_list_roots(mcp_call_t *call, const char *key, unsigned flags)
{
    return ask(call, key, "roots/list", json_object(), flags);
}

bool mcp_call_can_ask(const mcp_call_t *call, const char *method, const json_t *params)
{
    if (call->ex->no_event_stream && !call->task)
        return false;
    json_t *empty = params ? NULL : json_object();
    bool ok = mcp_client_caps_allow(call->ex->client_caps, method, params ? params : empty, NULL);
    json_decref(empty);
    return ok;
}

const json_t *mcp_call_input(const mcp_call_t *call, const char *key)
{
    return key ? json_object_get(call->ex->input_responses, key) : NULL;
}

int mcp_call_round(const mcp_call_t *call)
{
    return call->ex->round;
}

int mcp_call_set_state(mcp_call_t *call, json_t *state_new)
{
    if (!state_new)
        return MCP_EINVAL;
    json_decref(call->next_state);
    call->next_state = state_new;
    return MCP_OK;
}

const json_t *mcp_call_state(const mcp_call_t *call)
{
    return call->ex->state;
}

/* ------------------------------------------------------------------------
 * The input_required result
 * ------------------------------------------------------------------------ */

json_t *input_required_result(mcp_call_t *call, mcp_error_t *err)
{
    mcp_exchange_t *ex = call->ex;
    /* The limit counts input_required results: the answers to the last
     * one allowed are still used, asking once more fails. */
    if (ex->round >= ex->srv->max_input_rounds) {
        mcp_error_set(err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                      "Too many input rounds (%d) for one request", ex->round + 1);
        return NULL;
    }
    if (!call->input_requests || json_object_size(call->input_requests) == 0) {
        mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                      "Internal error: the handler needs input but asked for none");
        return NULL;
    }
    /* A state without one of the keys asked, or without the handler's
     * state, would lose answers on the retry: every failure is the
     * whole result's. */
    json_t *asked = json_object();
    int bad = !asked;
    const char *key;
    json_t *request;
    json_object_foreach(call->input_requests, key, request)
        bad |= json_object_set(asked, key, json_object_get(request, "method"));
    json_t *payload = bad ? NULL : json_pack("{s:i, s:o}", "r", ex->round + 1, "k", asked);
    if (bad)
        json_decref(asked);
    if (!payload || (call->next_state && json_object_set(payload, "s", call->next_state) != 0)) {
        json_decref(payload);
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
        return NULL;
    }

    codec_ref_t *codec = server_codec_get(ex->srv);
    mcp_state_binding_t binding = {
        .principal = ex->principal, .method = ex->msg.method, .params = ex->msg.params};
    char *sealed = NULL;
    int rc = codec ? mcp_codec_seal(codec->codec, payload, &binding, &sealed, err) : MCP_ENOMEM;
    codec_put(codec);
    json_decref(payload);
    if (rc != MCP_OK) {
        mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "Internal error: cannot seal state");
        return NULL;
    }
    json_t *result = json_pack("{s:s, s:O, s:s}", "resultType", "input_required",
                               "inputRequests", call->input_requests, "requestState", sealed);
    free(sealed);
    return result;
}
