/*
 * Era detection by a client: classify the outcome of a `server/discover`
 * probe (2026-07-28 specification, Basic > Versioning, "Backward
 * Compatibility with Initialization-Based Versions", and the Backward
 * Compatibility sections of Basic > Transports > stdio and Streamable HTTP).
 *
 * The client sends `server/discover` with its preferred modern version and
 * feeds whatever happened into mcp_classify_probe(), which returns one of
 * seven verdicts. The rules, as a table (both = stdio and HTTP):
 *
 *   both   valid DiscoverResult with a mutual modern version -> MODERN
 *   both   DiscoverResult-shaped but invalid, or no mutual
 *          modern version                                   -> ERROR(PROTOCOL / NO_COMMON_VERSION)
 *   both   a result that is not DiscoverResult-shaped       -> LEGACY
 *   both   -32022 with a mutual modern version in supported -> MODERN_RETRY
 *   both   -32022 without one                               -> ERROR(NO_COMMON_VERSION)
 *   both   -32021 / -32020                                  -> ERROR(PROTOCOL), never a fallback
 *   stdio  any other JSON-RPC error                         -> LEGACY
 *   stdio  timeout                                          -> LEGACY
 *   stdio  the server process exited during the probe
 *          (or the pipe to it broke: NETWORK_ERROR)         -> RECONNECT_LEGACY
 *   stdio  a reply that is not a JSON-RPC response          -> ERROR(PROTOCOL)
 *   HTTP   401 / 403                                        -> AUTHORIZE(status)
 *   HTTP   408 / 429 / 5xx, network error, timeout          -> RETRY(reason), never a downgrade
 *   HTTP   400 / 404 / 405 with a non-modern body (empty,
 *          not JSON, not JSON-RPC, or a non-modern error)   -> LEGACY
 *   HTTP   any status with JSON-RPC -32601                  -> LEGACY
 *   HTTP   2xx with any other JSON-RPC error (as on stdio)  -> LEGACY
 *   HTTP   2xx without a JSON-RPC response                  -> ERROR(PROTOCOL)
 *   HTTP   any other status or error                        -> ERROR(HTTP_STATUS)
 *
 * Precedence over HTTP: 401/403 first (authorization is never era
 * evidence, whatever the body says); then the rows about the JSON-RPC
 * reply (the "both" rows and -32601), at any status; then the status rows.
 * A JSON-RPC response is an object with "jsonrpc":"2.0" and exactly one of
 * "result" and "error" (an object with an integer code). A result is
 * "DiscoverResult-shaped" when it is an object with a supportedVersions or
 * a resultType member: legacy results have neither.
 *
 * A recognised modern error is never legacy evidence, and the fallback is
 * never keyed to one error code. Only the modern entries of the client's
 * version list count when looking for a mutual version.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_PROBE_H
#define MCP_PROBE_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcp_transport_kind {
    MCP_TRANSPORT_STDIO = 0,
    MCP_TRANSPORT_HTTP = 1
} mcp_transport_kind_t;

typedef enum mcp_probe_event {
    MCP_PROBE_RESPONSE = 0, /* a reply arrived (stdio: `message`; HTTP: status + body or message) */
    MCP_PROBE_TIMEOUT,      /* no reply within the probe timeout */
    MCP_PROBE_EXITED,       /* stdio: the server process exited during the probe */
    MCP_PROBE_NETWORK_ERROR /* HTTP: connection refused/reset, DNS, TLS, ... */
} mcp_probe_event_t;

/* What happened to the probe. All pointers are borrowed. */
typedef struct mcp_probe_outcome {
    mcp_probe_event_t event;
    /* HTTP only: the response status (0 when unknown). */
    int http_status;
    /* HTTP only: the Content-Type header (may be NULL). "text/event-stream"
     * bodies are decoded as an SSE stream and the first JSON-RPC response in
     * it is used; anything else is treated as one JSON document. */
    const char *content_type;
    /* Raw body bytes (HTTP), or NULL/0 when `message` is given instead. */
    const char *body;
    size_t body_len;
    /* An already decoded JSON-RPC response (stdio, or HTTP when the caller
     * decoded it). Takes precedence over body. */
    const json_t *message;
} mcp_probe_outcome_t;

typedef enum mcp_verdict_kind {
    MCP_VERDICT_MODERN = 0,       /* version + discover_result */
    MCP_VERDICT_MODERN_RETRY,     /* version: retry the request with it */
    MCP_VERDICT_LEGACY,           /* fall back to initialize on the same connection */
    MCP_VERDICT_RECONNECT_LEGACY, /* stdio: restart the server, then initialize */
    MCP_VERDICT_AUTHORIZE,        /* http_status 401 or 403: authorization problem */
    MCP_VERDICT_RETRY,            /* transient failure: retry later, never downgrade */
    MCP_VERDICT_ERROR             /* error_kind says why */
} mcp_verdict_kind_t;

typedef enum mcp_probe_error_kind {
    MCP_PROBE_ERR_NONE = 0,
    MCP_PROBE_ERR_PROTOCOL,          /* malformed DiscoverResult, -32020/-32021, ... */
    MCP_PROBE_ERR_NO_COMMON_VERSION, /* the peer is modern but shares no version */
    MCP_PROBE_ERR_HTTP_STATUS        /* an HTTP status with no rule */
} mcp_probe_error_kind_t;

typedef struct mcp_probe_verdict {
    mcp_verdict_kind_t kind;
    /* MODERN / MODERN_RETRY: the chosen version, a pointer into the client's
     * `versions` array passed to mcp_classify_probe. */
    const char *version;
    /* MODERN: the DiscoverResult (owned reference; released by
     * mcp_probe_verdict_clear). */
    json_t *discover_result;
    /* AUTHORIZE: 401 or 403. RETRY/ERROR/LEGACY over HTTP: the status seen. */
    int http_status;
    /* ERROR: why. */
    mcp_probe_error_kind_t error_kind;
    /* A static English phrase explaining the verdict ("timeout",
     * "HTTP 503", "JSON-RPC -32601", "no mutual modern version", ...). */
    const char *reason;
    /* When the peer sent a JSON-RPC error: its code (0 otherwise). */
    int rpc_code;
} mcp_probe_verdict_t;

/*
 * Classifies one probe outcome. `versions` is the client's version list in
 * preference order (it may contain legacy versions; only modern entries are
 * considered). Always fills *verdict (a NULL outcome gives
 * ERROR(PROTOCOL)); release it with mcp_probe_verdict_clear().
 */
MCP_API void mcp_classify_probe(mcp_transport_kind_t transport, const mcp_probe_outcome_t *outcome,
                                const char *const *versions, size_t n_versions,
                                mcp_probe_verdict_t *verdict);

/* Releases verdict->discover_result and zeroes *verdict. NULL-safe. */
MCP_API void mcp_probe_verdict_clear(mcp_probe_verdict_t *verdict);

/* "modern", "modern_retry", "legacy", "reconnect_legacy", "authorize",
 * "retry", "error". */
MCP_API const char *mcp_verdict_name(mcp_verdict_kind_t kind);

/*
 * Checks that `result` is a valid DiscoverResult: an object with
 * resultType "complete" (or absent), supportedVersions a non-empty array of
 * strings, capabilities an object; ttlMs, when present, an integer >= 0;
 * cacheScope, when present, "public" or "private". Returns true when valid.
 */
MCP_API bool mcp_discover_result_valid(const json_t *result);

#ifdef __cplusplus
}
#endif
#endif /* MCP_PROBE_H */
