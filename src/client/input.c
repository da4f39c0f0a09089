/*
 * Answering the input requests of an InputRequiredResult (digest sections
 * 3.3, 3.4 and 14.13) through the user's callbacks.
 */
#include <string.h>

#include "client/client_internal.h"
#include "json_copy.h"
#include "mcp/capabilities.h"

/* One answer. Returns MCP_OK with *answer_out, or the code that abandons
 * the call. */
static int answer_one(const client_input_handlers_t *h, const char *key, const char *method,
                      const json_t *params, json_t **answer_out, mcp_error_t *err)
{
    bool elicitation = strcmp(method, "elicitation/create") == 0;
    bool sampling = strcmp(method, "sampling/createMessage") == 0;
    bool roots = strcmp(method, "roots/list") == 0;
    if (!elicitation && !sampling && !roots)
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "input request \"%s\" has unknown method \"%s\"", key, method);

    /* The server may only ask for what this request's capabilities declared
     * (the same check servers run). */
    json_t *required = NULL;
    if (!mcp_client_caps_allow(h->capabilities, method, params, &required)) {
        /* Only an elicitation of an unknown mode needs no capability:
         * for anything else, none told means allocation failed, and
         * declining for the user would answer in their name. */
        const json_t *mode = json_object_get(params, "mode");
        const char *m = mode ? json_string_value(mode) : "form";
        bool known = !elicitation || (m && (strcmp(m, "form") == 0 || strcmp(m, "url") == 0));
        bool out_of_memory = !required && known;
        json_decref(required);
        if (out_of_memory)
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        if (elicitation) {
            *answer_out = json_pack("{s:s}", "action", "decline");
            return *answer_out ? MCP_OK : mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        }
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "the server asked for %s (input \"%s\"), which this client did not "
                             "declare",
                             method, key);
    }

    json_t *answer = NULL;
    int rc;
    if (elicitation) {
        rc = h->elicit(h->elicit_user, params, &answer);
        if (rc < 0) {
            json_decref(answer);
            *answer_out = json_pack("{s:s}", "action", "cancel");
            return *answer_out ? MCP_OK : mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        }
    } else if (sampling) {
        rc = h->sample(h->sample_user, params, &answer);
    } else {
        rc = h->roots(h->roots_user, &answer);
    }
    if (rc < 0) {
        json_decref(answer);
        return mcp_error_set(err, rc, 0, NULL, "the %s callback declined input \"%s\" (%s)",
                             sampling ? "sample" : "roots", key, mcp_strerror(rc));
    }
    if (!json_is_object(answer)) {
        json_decref(answer);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "the callback for %s returned no result object", method);
    }
    *answer_out = answer;
    return MCP_OK;
}

int client_answer_inputs(const client_input_handlers_t *h, const json_t *input_requests,
                         json_t **responses_out, mcp_error_t *err)
{
    *responses_out = NULL;
    if (!json_is_object(input_requests))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "inputRequests is not an object");
    json_t *responses = json_object();
    if (!responses)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    const char *key;
    json_t *request;
    json_object_foreach((json_t *)input_requests, key, request) {
        const char *method = json_string_value(json_object_get(request, "method"));
        json_t *params = json_object_get(request, "params");
        if (!json_is_object(request) || !method || (params && !json_is_object(params))) {
            json_decref(responses);
            return mcp_error_set(err, MCP_EPROTO, 0, NULL, "input request \"%s\" is malformed",
                                 key);
        }
        json_t *answer = NULL;
        int rc = answer_one(h, key, method, params, &answer, err);
        if (rc == MCP_OK && json_object_set_new(responses, key, answer) != 0)
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        if (rc != MCP_OK) {
            json_decref(responses);
            return rc;
        }
    }
    *responses_out = responses;
    return MCP_OK;
}

json_t *client_retry_params(const json_t *base, const json_t *responses,
                            const json_t *request_state)
{
    json_t *p = json_is_object(base) ? mcp_json_copy_object(base) : json_object();
    if (!p)
        return NULL;
    /* A retry answers the latest round only. */
    json_object_del(p, "inputResponses");
    json_object_del(p, "requestState");
    if ((responses && json_object_set(p, "inputResponses", (json_t *)responses) != 0) ||
        (request_state && json_object_set(p, "requestState", (json_t *)request_state) != 0)) {
        json_decref(p);
        return NULL;
    }
    return p;
}
