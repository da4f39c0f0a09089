/*
 * Era detection: what the outcome of a `server/discover` probe says about
 * the peer (digest sections 4.9, 5.4 and 14.9). The verdict table in
 * include/mcp/probe.h is the specification of this file.
 */
#include <string.h>
#include <strings.h>

#include "mcp/errors.h"
#include "mcp/probe.h"
#include "mcp/version.h"
#include "protocol/sse.h"

/* jansson flags for peer JSON: strict, but \u0000 is valid JSON. */
#define PEER_JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

const char *mcp_verdict_name(mcp_verdict_kind_t kind)
{
    switch (kind) {
    case MCP_VERDICT_MODERN: return "modern";
    case MCP_VERDICT_MODERN_RETRY: return "modern_retry";
    case MCP_VERDICT_LEGACY: return "legacy";
    case MCP_VERDICT_RECONNECT_LEGACY: return "reconnect_legacy";
    case MCP_VERDICT_AUTHORIZE: return "authorize";
    case MCP_VERDICT_RETRY: return "retry";
    case MCP_VERDICT_ERROR: return "error";
    }
    return "unknown";
}

void mcp_probe_verdict_clear(mcp_probe_verdict_t *verdict)
{
    if (!verdict)
        return;
    json_decref(verdict->discover_result);
    memset(verdict, 0, sizeof *verdict);
}

/* ------------------------------------------------------------------------
 * Shapes
 * ------------------------------------------------------------------------ */

/* Length-aware, so a string with an embedded NUL never matches. */
static bool json_string_is(const json_t *j, const char *s)
{
    size_t len = strlen(s);
    return json_is_string(j) && json_string_length(j) == len &&
           memcmp(json_string_value(j), s, len) == 0;
}

static bool is_nonempty_string_array(const json_t *j)
{
    size_t i;
    json_t *entry;
    if (!json_is_array(j) || json_array_size(j) == 0)
        return false;
    json_array_foreach(j, i, entry) {
        if (!json_is_string(entry))
            return false;
    }
    return true;
}

bool mcp_discover_result_valid(const json_t *result)
{
    if (!json_is_object(result))
        return false;
    const json_t *result_type = json_object_get(result, "resultType");
    const json_t *ttl = json_object_get(result, "ttlMs");
    const json_t *scope = json_object_get(result, "cacheScope");
    return (!result_type || json_string_is(result_type, "complete")) &&
           is_nonempty_string_array(json_object_get(result, "supportedVersions")) &&
           json_is_object(json_object_get(result, "capabilities")) &&
           (!ttl || (json_is_integer(ttl) && json_integer_value(ttl) >= 0)) &&
           (!scope || json_string_is(scope, "public") || json_string_is(scope, "private"));
}

/*
 * A result that claims to answer server/discover, valid or not. Legacy
 * results carry neither member (resultType arrived with 2026-07-28), so a
 * result with one of them comes from a modern peer.
 */
static bool is_discover_shaped(const json_t *result)
{
    return json_is_object(result) && (json_object_get(result, "supportedVersions") ||
                                      json_object_get(result, "resultType"));
}

/* A JSON-RPC 2.0 response: exactly one of result and error, the error
 * with an integer code that fits an int. */
static bool is_jsonrpc_response(const json_t *msg)
{
    if (!json_is_object(msg) || !json_string_is(json_object_get(msg, "jsonrpc"), "2.0"))
        return false;
    const json_t *result = json_object_get(msg, "result");
    const json_t *error = json_object_get(msg, "error");
    if (result)
        return !error;
    const json_t *code = json_object_get(error, "code");
    return json_is_object(error) && json_is_integer(code) &&
           json_integer_value(code) >= INT32_MIN && json_integer_value(code) <= INT32_MAX;
}

/* The first modern entry of the client's list that `supported` names. */
static const char *mutual_modern_version(const json_t *supported, const char *const *versions,
                                         size_t n_versions)
{
    if (!versions)
        return NULL;
    for (size_t i = 0; i < n_versions; i++)
        if (mcp_version_era(versions[i]) == MCP_ERA_MODERN &&
            mcp_version_pick_json(supported, &versions[i], 1))
            return versions[i];
    return NULL;
}

/* ------------------------------------------------------------------------
 * Finding the reply in an HTTP body
 * ------------------------------------------------------------------------ */

/* Does the Content-Type name `type`, ignoring case, blanks and parameters? */
static bool media_type_is(const char *content_type, const char *type)
{
    if (!content_type)
        return false;
    while (*content_type == ' ' || *content_type == '\t')
        content_type++;
    size_t len = strlen(type);
    if (strncasecmp(content_type, type, len) != 0)
        return false;
    char next = content_type[len];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

static int take_first_response(void *user, const mcp_sse_event_t *event)
{
    json_t **response = user;
    json_t *msg = json_loadb(event->data, event->data_len, PEER_JSON_FLAGS, NULL);
    if (is_jsonrpc_response(msg)) {
        *response = msg;
        return 1; /* found it: stop decoding */
    }
    /* Progress notifications, priming events with empty data, ... */
    json_decref(msg);
    return 0;
}

/* The first JSON-RPC response in an event stream (new reference), or NULL. */
static json_t *response_from_event_stream(const char *body, size_t len)
{
    json_t *response = NULL;
    mcp_sse_decoder_t dec;
    /* The body is already in memory, so no event can outgrow it. */
    mcp_sse_decoder_init(&dec, len, take_first_response, &response);
    mcp_sse_decoder_feed(&dec, body, len);
    mcp_sse_decoder_finish(&dec);
    mcp_sse_decoder_free(&dec);
    return response;
}

/*
 * The peer's JSON-RPC response to the probe (borrowed), or NULL when there
 * is none: no body, not JSON, or JSON that is not a response. A document
 * parsed from the body is stored in *parsed for the caller to release.
 */
static const json_t *find_response(mcp_transport_kind_t transport,
                                   const mcp_probe_outcome_t *outcome, json_t **parsed)
{
    *parsed = NULL;
    if (outcome->message)
        return is_jsonrpc_response(outcome->message) ? outcome->message : NULL;
    if (!outcome->body || outcome->body_len == 0)
        return NULL;
    if (transport == MCP_TRANSPORT_HTTP && media_type_is(outcome->content_type, "text/event-stream"))
        *parsed = response_from_event_stream(outcome->body, outcome->body_len);
    else
        *parsed = json_loadb(outcome->body, outcome->body_len, PEER_JSON_FLAGS, NULL);
    return is_jsonrpc_response(*parsed) ? *parsed : NULL;
}

/* ------------------------------------------------------------------------
 * The verdict table
 * ------------------------------------------------------------------------ */

static void decide(mcp_probe_verdict_t *v, mcp_verdict_kind_t kind, const char *reason)
{
    v->kind = kind;
    v->reason = reason;
}

static void fail(mcp_probe_verdict_t *v, mcp_probe_error_kind_t error_kind, const char *reason)
{
    decide(v, MCP_VERDICT_ERROR, reason);
    v->error_kind = error_kind;
}

/* both: the peer answered with a result. */
static void classify_result(json_t *result, const char *const *versions, size_t n_versions,
                            mcp_probe_verdict_t *v)
{
    if (!is_discover_shaped(result)) {
        decide(v, MCP_VERDICT_LEGACY, "result is not a DiscoverResult");
        return;
    }
    if (!mcp_discover_result_valid(result)) {
        fail(v, MCP_PROBE_ERR_PROTOCOL, "malformed DiscoverResult");
        return;
    }
    v->version = mutual_modern_version(json_object_get(result, "supportedVersions"), versions,
                                       n_versions);
    if (!v->version) {
        fail(v, MCP_PROBE_ERR_NO_COMMON_VERSION, "no mutual modern version");
        return;
    }
    decide(v, MCP_VERDICT_MODERN, "server/discover succeeded");
    v->discover_result = json_incref(result);
}

/* both: one of the errors only a modern peer sends (-32020/-32021/-32022). */
static void classify_modern_error(const json_t *error, const char *const *versions,
                                  size_t n_versions, mcp_probe_verdict_t *v)
{
    if (v->rpc_code != MCP_UNSUPPORTED_PROTOCOL_VERSION) {
        /* The peer is modern and rejected our request: neither a retry nor
         * a fallback to initialize would fix that. */
        fail(v, MCP_PROBE_ERR_PROTOCOL, v->rpc_code == MCP_HEADER_MISMATCH
                                            ? "JSON-RPC -32020: header mismatch"
                                            : "JSON-RPC -32021: missing client capability");
        return;
    }
    const json_t *data = json_object_get(error, "data");
    v->version = mutual_modern_version(json_object_get(data, "supported"), versions, n_versions);
    if (v->version)
        decide(v, MCP_VERDICT_MODERN_RETRY, "unsupported protocol version; retry with a mutual one");
    else
        fail(v, MCP_PROBE_ERR_NO_COMMON_VERSION, "no mutual modern version");
}

static bool is_2xx(int status)
{
    return status >= 200 && status <= 299;
}

static bool is_transient(int status)
{
    return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

/* HTTP statuses a legacy endpoint gives a request it does not understand. */
static bool is_legacy_rejection(int status)
{
    return status == 400 || status == 404 || status == 405;
}

static const char *transient_reason(int status)
{
    switch (status) {
    case 408: return "HTTP 408 Request Timeout";
    case 429: return "HTTP 429 Too Many Requests";
    default: return "HTTP 5xx server error";
    }
}

static const char *legacy_rejection_reason(int status)
{
    switch (status) {
    case 400: return "HTTP 400 Bad Request without a modern error";
    case 404: return "HTTP 404 Not Found without a modern error";
    default: return "HTTP 405 Method Not Allowed without a modern error";
    }
}

/* HTTP, once the body held no era evidence: the status decides. */
static void classify_http_status(int status, bool got_error, mcp_probe_verdict_t *v)
{
    if (is_legacy_rejection(status))
        decide(v, MCP_VERDICT_LEGACY, legacy_rejection_reason(status));
    else if (is_transient(status))
        decide(v, MCP_VERDICT_RETRY, transient_reason(status));
    else if (is_2xx(status) && got_error)
        /* A success status leaves the verdict to JSON-RPC, as on stdio. */
        decide(v, MCP_VERDICT_LEGACY, "non-modern JSON-RPC error");
    else if (is_2xx(status))
        fail(v, MCP_PROBE_ERR_PROTOCOL, "HTTP success without a JSON-RPC response");
    else
        fail(v, MCP_PROBE_ERR_HTTP_STATUS, "HTTP status without a rule");
}

static void classify_response(mcp_transport_kind_t transport, const mcp_probe_outcome_t *outcome,
                              const char *const *versions, size_t n_versions,
                              mcp_probe_verdict_t *v)
{
    bool http = transport == MCP_TRANSPORT_HTTP;
    if (http && (outcome->http_status == 401 || outcome->http_status == 403)) {
        /* Authorization is never era evidence, whatever the body says. */
        decide(v, MCP_VERDICT_AUTHORIZE, outcome->http_status == 401
                                             ? "HTTP 401: authorization required"
                                             : "HTTP 403: access forbidden");
        return;
    }

    json_t *parsed;
    const json_t *response = find_response(transport, outcome, &parsed);
    json_t *result = json_object_get(response, "result");
    json_t *error = json_object_get(response, "error");
    if (error)
        v->rpc_code = (int)json_integer_value(json_object_get(error, "code"));

    if (result)
        classify_result(result, versions, n_versions, v);
    else if (error && mcp_error_code_is_modern(v->rpc_code))
        classify_modern_error(error, versions, n_versions, v);
    else if (error && v->rpc_code == MCP_METHOD_NOT_FOUND)
        /* Every modern server implements server/discover. */
        decide(v, MCP_VERDICT_LEGACY, "JSON-RPC -32601: no server/discover");
    else if (!http && error)
        decide(v, MCP_VERDICT_LEGACY, "non-modern JSON-RPC error");
    else if (!http)
        fail(v, MCP_PROBE_ERR_PROTOCOL, "reply is not a JSON-RPC response");
    else
        classify_http_status(outcome->http_status, error != NULL, v);
    json_decref(parsed);
}

void mcp_classify_probe(mcp_transport_kind_t transport, const mcp_probe_outcome_t *outcome,
                        const char *const *versions, size_t n_versions,
                        mcp_probe_verdict_t *verdict)
{
    memset(verdict, 0, sizeof *verdict);
    bool http = transport == MCP_TRANSPORT_HTTP;
    if (!outcome) {
        fail(verdict, MCP_PROBE_ERR_PROTOCOL, "no probe outcome");
        return;
    }
    switch (outcome->event) {
    case MCP_PROBE_RESPONSE:
        if (http)
            verdict->http_status = outcome->http_status;
        classify_response(transport, outcome, versions, n_versions, verdict);
        return;
    case MCP_PROBE_TIMEOUT:
        /* A legacy stdio server may ignore an unknown method before
         * initialize; over HTTP silence says nothing about the era. */
        if (http)
            decide(verdict, MCP_VERDICT_RETRY, "timeout");
        else
            decide(verdict, MCP_VERDICT_LEGACY, "timeout");
        return;
    case MCP_PROBE_EXITED:
    case MCP_PROBE_NETWORK_ERROR:
        /* On stdio the server is gone (it exited or its pipe broke), which
         * legacy servers do on an unknown first request; over HTTP a lost
         * connection is transient. */
        if (http)
            decide(verdict, MCP_VERDICT_RETRY, "network error");
        else if (outcome->event == MCP_PROBE_EXITED)
            decide(verdict, MCP_VERDICT_RECONNECT_LEGACY, "server exited during the probe");
        else
            decide(verdict, MCP_VERDICT_RECONNECT_LEGACY, "pipe to the server broke");
        return;
    }
    fail(verdict, MCP_PROBE_ERR_PROTOCOL, "unknown probe event");
}
