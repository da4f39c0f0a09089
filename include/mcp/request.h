/*
 * Server-side classification of an incoming message (2026-07-28
 * specification: Basic > Overview, "_meta"; Basic > Transports >
 * Streamable HTTP, "Server Validation"; Basic > Versioning).
 *
 * Era: the body decides. A request whose params._meta contains
 * "io.modelcontextprotocol/protocolVersion" (the modern claim) is modern,
 * whatever its value; anything else is legacy. Headers only cross-check.
 *
 * A modern request then climbs the validation ladder, in this order; the
 * first failing rung answers:
 *
 *   1. header/body cross-check (HTTP only)   -32020  HTTP 400
 *      MCP-Protocol-Version present and equal to the _meta version (when
 *      that is a string; any other value is left to rung 2);
 *      Mcp-Method present and equal to the body method (case-sensitive);
 *      Mcp-Name present and equal (after decoding) to params.name for
 *      tools/call and prompts/get, params.uri for resources/read (a body
 *      without that value never matches).
 *      Notifications are exempt from the presence checks (a header that is
 *      present must still match). Values are trimmed; names are
 *      case-insensitive; a header given twice is a mismatch.
 *      data = {"mismatch": {"header", "received", "expected"}} as built by
 *      mcp_error_header_mismatch().
 *   2. required _meta                         -32602  HTTP 400
 *      params is an object with _meta, protocolVersion a string,
 *      clientCapabilities an object; clientInfo, when present, an object;
 *      logLevel, when present, one of the eight RFC 5424 level names.
 *      data = {"envelope": {"key": K, "problem": P}}: K is "_meta" or the
 *      full _meta key at fault, P one of "missing", "not an object",
 *      "not a string", "not a logging level". The first fault, in the
 *      order above, is reported.
 *   3. version supported                      -32022  HTTP 400
 *      data = {"supported": the accepted versions, "requested"}.
 *   4. method exists                          -32601  HTTP 404  (no data)
 *   5. client capability                      -32021  HTTP 400
 *      data.requiredCapabilities = the part of required_capabilities the
 *      request's clientCapabilities do not cover (mcp_client_caps_cover).
 *   6. Mcp-Param-* headers (HTTP, tools/call) -32020  HTTP 400
 *      each annotated argument with a non-null value must arrive in its
 *      header with an equal decoded value; an annotated header that is
 *      present with invalid characters or bad Base64 is rejected (even for
 *      an absent argument); a well-formed header for an absent/null
 *      argument is ignored, and so are headers no annotation names.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_REQUEST_H
#define MCP_REQUEST_H

#include "mcp/common.h"
#include "mcp/headers.h"
#include "mcp/jsonrpc.h"
#include "mcp/version.h"
#include "mcp/xmcp_header.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reserved _meta keys (2026-07-28 specification, Basic > Overview, "_meta"). */
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* The Tasks extension (modelcontextprotocol/ext-tasks, SEP-2663): its key
 * under capabilities.extensions, on both sides. */
#define MCP_EXTENSION_TASKS "io.modelcontextprotocol/tasks"
/* The OAuth client-credentials extension (ext-auth, SEP-1046): a client
 * that authorizes with the client_credentials grant declares it. */
#define MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS "io.modelcontextprotocol/oauth-client-credentials"
/* Enterprise-Managed Authorization (ext-auth, SEP-990): a client that
 * authorizes through its enterprise IdP (MCP_OAUTH_ENTERPRISE) declares it. */
#define MCP_EXTENSION_ENTERPRISE_MANAGED_AUTHORIZATION \
    "io.modelcontextprotocol/enterprise-managed-authorization"
/* The Skills extension (SEP-2640): a server that serves skills declares it
 * (with {"directoryRead": true} when it answers resources/directory/read). */
#define MCP_EXTENSION_SKILLS "io.modelcontextprotocol/skills"

/* HTTP header names (2026-07-28 specification, Basic > Transports >
 * Streamable HTTP, "Request Metadata"), in their canonical spelling. */
#define MCP_HEADER_PROTOCOL_VERSION "MCP-Protocol-Version"
#define MCP_HEADER_METHOD "Mcp-Method"
#define MCP_HEADER_NAME "Mcp-Name"
#define MCP_HEADER_PARAM_PREFIX "Mcp-Param-"
#define MCP_HEADER_SESSION_ID "Mcp-Session-Id"

/*
 * The era of an incoming request or notification: MCP_ERA_MODERN when
 * params._meta carries the protocolVersion key, MCP_ERA_LEGACY otherwise.
 * Never MCP_ERA_UNKNOWN.
 */
MCP_API mcp_era_t mcp_request_era(const mcp_message_t *msg);

/*
 * The checks a legacy-classified message gets from the protocol core, on
 * HTTP. First its MCP-Protocol-Version header, as
 * mcp_check_legacy_version_header() below (initialize excepted: its body
 * names the version). Then a header naming a modern version (a date on
 * or after 2026-07-28, after trimming) on a body without the modern claim
 * is rejected with HTTP 400:
 *   - a request other than initialize could be a modern request that lost
 *     its envelope: -32602 with the rung-2 data above ("_meta" missing or
 *     not an object, else protocolVersion missing) -- the conformance
 *     suite's missing-_meta checks;
 *   - initialize, a notification or a response is legacy traffic with a
 *     wrong header: -32020, data.mismatch.expected null
 *     -- except notifications/cancelled, the one notification of
 *     2026-07-28, which needs no envelope and passes.
 * Returns MCP_OK, or MCP_EINVAL with *err filled and *http_status set.
 * `headers` may be NULL (not HTTP): always MCP_OK. `http_status` and
 * `err` may be NULL; both are left untouched on MCP_OK.
 */
MCP_API int mcp_check_legacy_request(const mcp_message_t *msg, const mcp_headers_t *headers,
                                     int *http_status, mcp_error_t *err);

/*
 * The MCP-Protocol-Version header of a legacy HTTP request after
 * initialize (2025-06-18 transport rules): absent or empty is fine (the
 * client speaks 2025-03-26), and so is a legacy version this SDK speaks
 * (mcp_protocol_versions_legacy()) or a modern one (the modern checks
 * judge those). Any other value, malformed or unsupported, must be
 * answered with HTTP 400: MCP_EINVAL, with *err set to -32022 and
 * data.supported (the legacy versions) and data.requested. `headers` may
 * be NULL (MCP_OK); `err` may be NULL.
 */
MCP_API int mcp_check_legacy_version_header(const mcp_headers_t *headers, mcp_error_t *err);

/* Inputs of the modern validation ladder. All pointers are borrowed. */
typedef struct mcp_request_check {
    const mcp_message_t *msg;       /* a request or notification with the modern claim */
    const mcp_headers_t *headers;   /* HTTP request headers; NULL off HTTP (rungs 1, 6 skipped) */
    const char *const *versions;    /* modern versions the server accepts */
    size_t n_versions;
    bool method_known;              /* the server serves msg->method on the modern path */
    const json_t *required_capabilities; /* ClientCapabilities this request needs, or NULL */
    const json_t *input_schema;     /* tools/call: the tool's inputSchema, or NULL */
    /* tools/call: the x-mcp-header annotations of input_schema, collected
     * once (mcp_xmcp_headers_collect) when the tool was registered. NULL:
     * the ladder collects them from input_schema on every check. */
    const mcp_param_headers_t *param_headers;
} mcp_request_check_t;

/*
 * Runs the ladder. Returns MCP_OK when the request may be dispatched
 * (then *http_status and *err are untouched); otherwise *err holds the
 * JSON-RPC error (code, message, data) and *http_status its HTTP status:
 *   MCP_EINVAL   a rung failed (see above); a message that is neither a
 *                request nor a notification gives -32600 / 400;
 *                an input_schema whose x-mcp-header annotations are
 *                invalid gives -32603 / 500 (the server should have
 *                refused to register the tool);
 *   MCP_ENOMEM   -32603 / 500.
 * Notifications only get rung 1. `http_status` and `err` may be NULL.
 */
MCP_API int mcp_check_modern_request(const mcp_request_check_t *check, int *http_status,
                                     mcp_error_t *err);

/*
 * Where Mcp-Name comes from for `method`: "name" for tools/call and
 * prompts/get, "uri" for resources/read, "taskId" for the Tasks
 * extension's tasks/get, tasks/update and tasks/cancel, NULL for every
 * other method.
 */
MCP_API const char *mcp_method_name_param(const char *method);

/* The eight logging levels, least severe first (RFC 5424 order). Returns
 * the index 0..7 of `level`, or -1 when it is not one of them. */
MCP_API int mcp_log_level_index(const char *level);

#ifdef __cplusplus
}
#endif
#endif /* MCP_REQUEST_H */
