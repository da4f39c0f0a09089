/*
 * Server-side classification of an incoming message: its era, and the
 * validation ladder a modern request climbs before it may be dispatched
 * (digest sections 1.2, 1.5, 2.9, 3.2, 4.4-4.6 and 14.7).
 *
 * The ladder's order is the contract: it decides which error a request
 * with several faults gets, and the conformance suite checks that order
 * (a header/body version disagreement is -32020 even when the body names
 * an unknown version; missing _meta keys are -32602 before any version
 * check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/capabilities.h"
#include "mcp/errors.h"
#include "mcp/header_value.h"
#include "mcp/request.h"
#include "mcp/result.h"
#include "mcp/version.h"
#include "mcp/xmcp_header.h"
#include "protocol/envelope.h"
#include "protocol/headers_internal.h"
#include "json_get.h"

static const char *const log_levels[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

int mcp_log_level_index(const char *level)
{
    if (!level)
        return -1;
    for (int i = 0; i < (int)(sizeof log_levels / sizeof log_levels[0]); i++)
        if (strcmp(level, log_levels[i]) == 0)
            return i;
    return -1;
}

const char *mcp_method_name_param(const char *method)
{
    if (!method)
        return NULL;
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return "name";
    if (strcmp(method, "resources/read") == 0)
        return "uri";
    /* The Tasks extension routes by task: the instance holding it answers. */
    if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
        strcmp(method, "tasks/cancel") == 0)
        return "taskId";
    return NULL;
}

static const json_t *request_meta(const mcp_message_t *msg)
{
    return msg ? mcp_json_get(msg->params, "_meta") : NULL;
}

mcp_era_t mcp_request_era(const mcp_message_t *msg)
{
    /* The claim alone decides, whatever its value: a malformed modern
     * envelope must be rejected as modern, not served as legacy. */
    return mcp_json_get(request_meta(msg), MCP_META_PROTOCOL_VERSION) ? MCP_ERA_MODERN
                                                                         : MCP_ERA_LEGACY;
}

/*
 * The HTTP status of a rejection raised before dispatch. -32603 marks a
 * failure of the server itself (allocation, a tool it should never have
 * registered): a 5xx, not the client's fault.
 */
static int rejection_status(const mcp_error_t *e)
{
    return e->code == MCP_INTERNAL_ERROR ? 500 : mcp_http_status_for_code(e->code, true);
}

static int out_of_memory(mcp_error_t *e)
{
    return mcp_error_set(e, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
}

/*
 * -32602 for a fault in the request's _meta envelope, with
 * data = {"envelope": {"key": <"_meta" or the _meta key>, "problem": ...}}.
 */
static int envelope_error(mcp_error_t *err, const char *key, const char *problem)
{
    json_t *data = json_pack("{s:{s:s, s:s}}", "envelope", "key", key, "problem", problem);
    if (strcmp(key, "_meta") == 0)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, data,
                             "Invalid params: _meta is %s", problem);
    return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, data,
                         "Invalid params: _meta key %s is %s", key, problem);
}

/* ------------------------------------------------------------------ */
/* Rung 1: standard headers against the body                           */
/* ------------------------------------------------------------------ */

/*
 * The single raw value of header `name` in *raw (NULL when absent).
 * A header sent twice is rejected: with two values there is no telling
 * which one an intermediary acted on.
 */
static int header_once(const mcp_headers_t *headers, const char *name, const char **raw,
                       const json_t *expected, mcp_error_t *err)
{
    size_t count;
    *raw = mcp_headers_lookup(headers, name, &count);
    if (count > 1)
        return mcp_error_header_mismatch(err, name, *raw, expected,
                                         "the header appears more than once");
    return MCP_OK;
}

static bool trimmed_equals(const char *raw, const char *body, size_t body_len)
{
    const char *start;
    size_t len;
    mcp_header_trim(raw, &start, &len);
    return len == body_len && memcmp(start, body, len) == 0;
}

static int check_version_header(const mcp_message_t *msg, const mcp_envelope_t *env,
                                const mcp_headers_t *headers, mcp_error_t *err)
{
    const json_t *body = env->protocol_version;
    const char *raw;
    int rc = header_once(headers, MCP_HEADER_PROTOCOL_VERSION, &raw, body, err);
    if (rc != MCP_OK)
        return rc;
    if (!raw)
        return msg->kind == MCP_MSG_REQUEST
                   ? mcp_error_header_mismatch(err, MCP_HEADER_PROTOCOL_VERSION, NULL, body, NULL)
                   : MCP_OK;
    /* A body version that is not a string is the envelope's fault: rung 2
     * reports it as -32602. */
    if (json_is_string(body) &&
        !trimmed_equals(raw, json_string_value(body), json_string_length(body)))
        return mcp_error_header_mismatch(err, MCP_HEADER_PROTOCOL_VERSION, raw, body, NULL);
    return MCP_OK;
}

static int check_method_header(const mcp_message_t *msg, const mcp_headers_t *headers,
                               mcp_error_t *err)
{
    size_t count;
    const char *raw = mcp_headers_lookup(headers, MCP_HEADER_METHOD, &count);
    if (count == 1 && trimmed_equals(raw, msg->method, strlen(msg->method)))
        return MCP_OK;
    if (count == 0 && msg->kind != MCP_MSG_REQUEST)
        return MCP_OK;
    /* A refusal: only now is the body's method made a JSON value, for the
     * error's data. */
    json_t *body = json_string(msg->method);
    int rc = header_once(headers, MCP_HEADER_METHOD, &raw, body, err);
    if (rc == MCP_OK)
        rc = mcp_error_header_mismatch(err, MCP_HEADER_METHOD, raw, body, NULL);
    json_decref(body);
    return rc;
}

/*
 * Decodes a header in the Mcp-Name / Mcp-Param-* value encoding into
 * *decoded (malloc'd) and *len. A value with invalid characters or bad
 * Base64 is a -32020 whatever the body says; `body` (NULL when the body
 * has no value) only completes the error's data.
 */
static int decode_header(const char *header, const char *raw, const json_t *body,
                         char **decoded, size_t *len, mcp_error_t *e)
{
    int rc = mcp_header_value_decode(raw, strlen(raw), decoded, len);
    if (rc == MCP_ENOMEM)
        return out_of_memory(e);
    if (rc != MCP_OK)
        return mcp_error_header_mismatch(e, header, raw, body,
                                         "the header value has invalid characters or is "
                                         "not valid Base64");
    return MCP_OK;
}

/* Decodes `raw` and compares it with the body's value (NULL: none). */
static int check_encoded_header(const char *header, const char *raw, const json_t *body,
                                mcp_error_t *e)
{
    char *decoded = NULL;
    size_t len = 0;
    int rc = decode_header(header, raw, body, &decoded, &len, e);
    if (rc != MCP_OK)
        return rc;
    bool same = body && mcp_header_value_matches(decoded, len, body);
    free(decoded);
    return same ? MCP_OK : mcp_error_header_mismatch(e, header, raw, body, NULL);
}

static int check_name_header(const mcp_message_t *msg, const mcp_headers_t *headers,
                             mcp_error_t *err)
{
    const char *param = mcp_method_name_param(msg->method);
    if (!param)
        return MCP_OK;
    const json_t *body = mcp_json_get(msg->params, param);
    const char *raw;
    int rc = header_once(headers, MCP_HEADER_NAME, &raw, body, err);
    if (rc != MCP_OK)
        return rc;
    if (!raw)
        return msg->kind == MCP_MSG_REQUEST
                   ? mcp_error_header_mismatch(err, MCP_HEADER_NAME, NULL, body, NULL)
                   : MCP_OK;
    return check_encoded_header(MCP_HEADER_NAME, raw, body, err);
}

/* ------------------------------------------------------------------ */
/* Rung 2: the required _meta envelope                                 */
/* ------------------------------------------------------------------ */

static int check_envelope(const mcp_envelope_t *env, mcp_error_t *err)
{
    if (!env->meta)
        return envelope_error(err, "_meta", "missing");
    if (!json_is_object(env->meta))
        return envelope_error(err, "_meta", "not an object");

    if (!env->protocol_version)
        return envelope_error(err, MCP_META_PROTOCOL_VERSION, "missing");
    if (!json_is_string(env->protocol_version))
        return envelope_error(err, MCP_META_PROTOCOL_VERSION, "not a string");

    if (!env->client_capabilities)
        return envelope_error(err, MCP_META_CLIENT_CAPABILITIES, "missing");
    if (!json_is_object(env->client_capabilities))
        return envelope_error(err, MCP_META_CLIENT_CAPABILITIES, "not an object");

    if (env->client_info && !json_is_object(env->client_info))
        return envelope_error(err, MCP_META_CLIENT_INFO, "not an object");

    if (env->log_level && mcp_log_level_index(json_string_value(env->log_level)) < 0)
        return envelope_error(err, MCP_META_LOG_LEVEL, "not a logging level");
    return MCP_OK;
}

/* ------------------------------------------------------------------ */
/* Rungs 3 to 5: version, method, client capabilities                  */
/* ------------------------------------------------------------------ */

static int check_version(const mcp_request_check_t *check, const mcp_envelope_t *env,
                         mcp_error_t *err)
{
    const json_t *version = env->protocol_version;
    const char *v = json_string_value(version);
    /* A version with an embedded NUL matches nothing. */
    bool plain = strlen(v) == json_string_length(version);
    for (size_t i = 0; plain && check->versions && i < check->n_versions; i++)
        if (check->versions[i] && strcmp(v, check->versions[i]) == 0)
            return MCP_OK;
    return mcp_error_unsupported_version(err, v, check->versions,
                                         check->versions ? check->n_versions : 0);
}

static int check_capabilities(const mcp_request_check_t *check, const mcp_envelope_t *env,
                              mcp_error_t *err)
{
    const json_t *declared = env->client_capabilities;
    json_t *missing = NULL;
    if (mcp_client_caps_cover(declared, check->required_capabilities, &missing))
        return MCP_OK;
    if (!missing)
        return out_of_memory(err);
    return mcp_error_missing_capability(err, missing);
}

/* ------------------------------------------------------------------ */
/* Rung 6: Mcp-Param-* headers of tools/call                           */
/* ------------------------------------------------------------------ */

static int check_param_header(const mcp_headers_t *headers, const mcp_param_header_t *h,
                              const json_t *arguments, mcp_error_t *e)
{
    size_t prefix = strlen(MCP_HEADER_PARAM_PREFIX);
    size_t name_len = strlen(h->name);
    char *header = malloc(prefix + name_len + 1);
    if (!header)
        return out_of_memory(e);
    memcpy(header, MCP_HEADER_PARAM_PREFIX, prefix);
    memcpy(header + prefix, h->name, name_len + 1);

    const json_t *body = mcp_param_header_value(h, arguments);
    const char *raw;
    int rc = header_once(headers, header, &raw, body, e);
    if (rc == MCP_OK && raw && body) {
        rc = check_encoded_header(header, raw, body, e);
    } else if (rc == MCP_OK && raw) {
        /* No value to compare with (absent or null argument), but a
         * recognised header must still be well-formed. */
        char *decoded = NULL;
        rc = decode_header(header, raw, NULL, &decoded, NULL, e);
        free(decoded);
    } else if (rc == MCP_OK && body) {
        rc = mcp_error_header_mismatch(e, header, NULL, body, NULL);
    }
    free(header);
    return rc;
}

static int check_annotated_headers(const mcp_request_check_t *check,
                                   const mcp_param_headers_t *annotated, mcp_error_t *e)
{
    const json_t *arguments = mcp_json_get(check->msg->params, "arguments");
    int rc = MCP_OK;
    for (size_t i = 0; rc == MCP_OK && i < annotated->count; i++)
        rc = check_param_header(check->headers, &annotated->items[i], arguments, e);
    return rc;
}

static int check_param_headers(const mcp_request_check_t *check, mcp_error_t *e)
{
    if (check->param_headers)
        return check_annotated_headers(check, check->param_headers, e);
    mcp_param_headers_t annotated = {0};
    int rc = mcp_xmcp_headers_collect(check->input_schema, &annotated, e);
    if (rc == MCP_ENOMEM)
        return out_of_memory(e);
    if (rc != MCP_OK) {
        /* Registration should have refused this tool: the server's fault. */
        char why[MCP_ERROR_MESSAGE_MAX];
        memcpy(why, e->message, sizeof why);
        return mcp_error_set(e, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "Internal error: invalid x-mcp-header annotations: %s", why);
    }
    rc = check_annotated_headers(check, &annotated, e);
    mcp_param_headers_clear(&annotated);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The ladder                                                          */
/* ------------------------------------------------------------------ */

static int climb_ladder(const mcp_request_check_t *check, mcp_error_t *e)
{
    const mcp_message_t *msg = check->msg;
    const mcp_headers_t *headers = check->headers;
    mcp_envelope_t env;
    mcp_envelope_read(msg->params, &env);
    int rc;

    if (headers) {
        if ((rc = check_version_header(msg, &env, headers, e)) != MCP_OK ||
            (rc = check_method_header(msg, headers, e)) != MCP_OK ||
            (rc = check_name_header(msg, headers, e)) != MCP_OK)
            return rc;
    }
    if (msg->kind == MCP_MSG_NOTIFICATION)
        return MCP_OK;

    if ((rc = check_envelope(&env, e)) != MCP_OK || (rc = check_version(check, &env, e)) != MCP_OK)
        return rc;
    if (!check->method_known)
        return mcp_error_set(e, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, "Method not found: %s",
                             msg->method);
    if (check->required_capabilities && (rc = check_capabilities(check, &env, e)) != MCP_OK)
        return rc;
    if (headers && (check->input_schema || check->param_headers) &&
        strcmp(msg->method, "tools/call") == 0)
        return check_param_headers(check, e);
    return MCP_OK;
}

int mcp_check_modern_request(const mcp_request_check_t *check, int *http_status,
                             mcp_error_t *err)
{
    mcp_error_t local = {0};
    mcp_error_t *e = err ? err : &local;
    const mcp_message_t *msg = check ? check->msg : NULL;
    int rc;

    if (!msg || !msg->method ||
        (msg->kind != MCP_MSG_REQUEST && msg->kind != MCP_MSG_NOTIFICATION))
        rc = mcp_error_set(e, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                           "Invalid Request: not a request or notification");
    else
        rc = climb_ladder(check, e);
    if (rc != MCP_OK && http_status)
        *http_status = rejection_status(e);
    mcp_error_clear(&local);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Legacy-classified messages                                          */
/* ------------------------------------------------------------------ */

bool mcp_header_names_modern_version(const char *raw)
{
    const char *start;
    size_t len;
    char version[16];

    if (!raw)
        return false;
    mcp_header_trim(raw, &start, &len);
    if (len >= sizeof version)
        return false; /* longer than any YYYY-MM-DD */
    memcpy(version, start, len);
    version[len] = '\0';
    return mcp_version_era(version) == MCP_ERA_MODERN;
}

/*
 * The header promises the modern revision but the body lacks the claim.
 * For a request that could be modern, the envelope is what is missing
 * (-32602, as the conformance suite demands for a request without _meta;
 * check_envelope names the first absent piece). An initialize, a
 * notification or a response is unmistakably legacy traffic: there the
 * header is what is wrong (-32020, wire-ts2.md 5.5).
 */
static int modern_header_on_legacy_body(const mcp_message_t *msg, const char *raw,
                                        mcp_error_t *e)
{
    /* notifications/cancelled is the one notification of 2026-07-28, and
     * a notification needs no envelope: it is modern traffic, not a
     * mismatch. */
    if (msg->kind == MCP_MSG_NOTIFICATION && msg->method &&
        strcmp(msg->method, "notifications/cancelled") == 0)
        return MCP_OK;
    if (msg->kind != MCP_MSG_REQUEST || !msg->method || strcmp(msg->method, "initialize") == 0)
        return mcp_error_header_mismatch(e, MCP_HEADER_PROTOCOL_VERSION, raw, NULL,
                                         "MCP-Protocol-Version names a modern revision but "
                                         "the message has no " MCP_META_PROTOCOL_VERSION
                                         " in _meta");
    mcp_envelope_t env;
    mcp_envelope_read(msg->params, &env);
    return check_envelope(&env, e);
}

int mcp_check_legacy_version_header(const mcp_headers_t *headers, mcp_error_t *err)
{
    const char *raw = mcp_headers_get(headers, MCP_HEADER_PROTOCOL_VERSION);
    const char *start;
    size_t len;
    mcp_header_trim(raw, &start, &len);
    if (!raw || len == 0)
        return MCP_OK; /* 2025-03-26, which had no such header */
    if (mcp_header_names_modern_version(raw))
        return MCP_OK; /* the modern checks judge it */
    size_t n;
    const char *const *legacy = mcp_protocol_versions_legacy(&n);
    for (size_t i = 0; i < n; i++)
        if (strlen(legacy[i]) == len && memcmp(legacy[i], start, len) == 0)
            return MCP_OK;
    if (!err)
        return MCP_EINVAL;
    /* A value too long for any version is named by its start. */
    char shown[40];
    snprintf(shown, sizeof shown, "%.*s", len < 32 ? (int)len : 32, start);
    mcp_error_unsupported_version(err, shown, legacy, n);
    snprintf(err->message, sizeof err->message,
             "Bad Request: unsupported " MCP_HEADER_PROTOCOL_VERSION " \"%s\"", shown);
    return MCP_EINVAL;
}

int mcp_check_legacy_request(const mcp_message_t *msg, const mcp_headers_t *headers,
                             int *http_status, mcp_error_t *err)
{
    if (!msg || !headers)
        return MCP_OK;
    bool initialize = msg->kind == MCP_MSG_REQUEST && msg->method &&
                      strcmp(msg->method, "initialize") == 0;
    if (!initialize && mcp_check_legacy_version_header(headers, err) != MCP_OK) {
        if (http_status)
            *http_status = 400;
        return MCP_EINVAL;
    }
    const char *raw = mcp_headers_get(headers, MCP_HEADER_PROTOCOL_VERSION);
    if (!mcp_header_names_modern_version(raw))
        return MCP_OK;

    mcp_error_t local = {0};
    mcp_error_t *e = err ? err : &local;
    int rc = modern_header_on_legacy_body(msg, raw, e);
    if (http_status)
        *http_status = rejection_status(e);
    mcp_error_clear(&local);
    return rc;
}
