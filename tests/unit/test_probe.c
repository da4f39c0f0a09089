/*
 * Era detection (include/mcp/probe.h): one table with a row for every rule
 * of the verdict table, on both transports, including what real legacy and
 * modern servers answered to the probe (notes/wire-ts2.md sections 1-9).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/probe.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------
 * Bodies
 * ------------------------------------------------------------------------ */

/* 1.1: ts2's answer, byte for byte. */
#define TS2_DISCOVER                                                                          \
    "{\"result\":{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{"       \
    "\"listChanged\":true}},\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":"          \
    "\"private\",\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"ts2-echo-"     \
    "server\",\"version\":\"2.4.0\"}}},\"jsonrpc\":\"2.0\",\"id\":1}"

/* A response around a result object given as JSON text. */
#define RESULT(obj) "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":" obj "}"
#define DISCOVER(versions) \
    RESULT("{\"resultType\":\"complete\",\"supportedVersions\":" versions ",\"capabilities\":{}}")
/* A JSON-RPC error response. */
#define ERROR_BODY(code, msg) \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":" #code ",\"message\":\"" msg "\"}}"
#define ERROR_DATA(code, data) \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":" #code ",\"message\":\"m\",\"data\":" data "}}"
/* One SSE message event. */
#define SSE(json) "event: message\ndata: " json "\n\n"

/* 3.9: ts2 refusing a version it does not speak. */
#define TS2_UNSUPPORTED_VERSION                                                               \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32022,\"message\":\"Unsupported protocol "     \
    "version: 2099-01-01\",\"data\":{\"supported\":[\"2026-07-28\"],\"requested\":"           \
    "\"2099-01-01\"}},\"id\":1}"
/* 3.1 and 7.3: the other modern errors. */
#define TS2_HEADER_MISMATCH                                                                   \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32020,\"message\":\"Bad Request: the request " \
    "headers and body disagree\",\"data\":{\"mismatch\":{\"header\":\"prompts/list\"}}},"    \
    "\"id\":1}"
#define TS2_MISSING_CAPABILITY                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32021,\"message\":\"Cannot request "  \
    "input\",\"data\":{\"requiredCapabilities\":{\"elicitation\":{\"form\":{}}}}}}"
/* 6.1 / 8.2: the v1 SDK's stateful example wiring. */
#define TS1_NO_SESSION                                                                        \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: No valid "    \
    "session ID provided\"},\"id\":1}"
#define TS1_NO_SESSION_STRING_ID                                                              \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: No valid "    \
    "session ID provided\"},\"id\":\"server-discover-probe-1\"}"
/* 6.2: server-everything. */
#define EVERYTHING_NOT_INITIALIZED                                                            \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: Server not "  \
    "initialized\"},\"id\":null}"
/* 9.2-9.4: every legacy stdio server. */
#define METHOD_NOT_FOUND \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}"
/* 4.1: ts2's 405 to a GET; 4.x: the bare variant without the envelope. */
#define TS2_METHOD_NOT_ALLOWED \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Method not allowed.\"},\"id\":null}"
#define BARE_METHOD_NOT_ALLOWED "{\"code\":-32000,\"message\":\"Method not allowed.\"}"
/* 3.16, 3.15, 3.18 */
#define TS2_PARSE_ERROR \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error: Invalid JSON\"},\"id\":null}"
#define TS2_UNSUPPORTED_MEDIA_TYPE                                                            \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Unsupported Media Type: "  \
    "Content-Type must be application/json\"},\"id\":null}"
#define TS2_INVALID_HOST \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Invalid Host: evil.example.com\"},\"id\":null}"
/* 6.3: a legacy initialize result behind a priming event. */
#define EVERYTHING_PRIMED_INITIALIZE                                                          \
    "id: 73f29b04-6142-4243-8efc-b45fa0c9ae38\ndata: \n\nevent: message\nid: 39d03743\n"      \
    "data: {\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":" \
    "{\"name\":\"everything\",\"version\":\"2.0.0\"}},\"jsonrpc\":\"2.0\",\"id\":1}\n\n"
/* 7.4: notifications before the response on an SSE answer. */
#define PROGRESS_THEN(json)                                                                   \
    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","       \
    "\"params\":{\"progressToken\":\"p1\",\"progress\":1}}\n\n" SSE(json)

/* ------------------------------------------------------------------------
 * Client version lists
 * ------------------------------------------------------------------------ */

static const char *const v_default[] = {"2026-07-28", "2025-11-25"};
static const char *const v_future_first[] = {"2027-01-01", "2026-07-28", "2025-11-25"};
static const char *const v_legacy_first[] = {"2025-11-25", "2026-07-28"};
static const char *const v_legacy_only[] = {"2025-11-25", "2025-06-18"};
static const char *const v_with_null[] = {NULL, "2026-07-28"};

typedef struct versions {
    const char *const *v;
    size_t n;
} versions_t;

#define V(list) {list, COUNT(list)}

/* ------------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------------ */

enum { STDIO = MCP_TRANSPORT_STDIO, HTTP = MCP_TRANSPORT_HTTP };
enum { RAW = 0, DECODED = 1 }; /* body as bytes, or handed over as a json_t message */

#define JSON "application/json"
#define EVENTS "text/event-stream"

typedef struct probe_row {
    const char *name;
    int transport;
    mcp_probe_event_t event;
    int status;
    const char *content_type;
    const char *body;
    int form;
    versions_t versions; /* {NULL, 0} means v_default */
    /* expected */
    mcp_verdict_kind_t kind;
    mcp_probe_error_kind_t error_kind;
    const char *version; /* MODERN / MODERN_RETRY */
    int rpc_code;
} probe_row_t;

#define OK_ MCP_PROBE_ERR_NONE
#define PROTO MCP_PROBE_ERR_PROTOCOL
#define NOCOMMON MCP_PROBE_ERR_NO_COMMON_VERSION
#define STATUS MCP_PROBE_ERR_HTTP_STATUS
#define MODERN MCP_VERDICT_MODERN
#define RETRY_WITH MCP_VERDICT_MODERN_RETRY
#define LEGACY MCP_VERDICT_LEGACY
#define RECONNECT MCP_VERDICT_RECONNECT_LEGACY
#define AUTHORIZE MCP_VERDICT_AUTHORIZE
#define RETRY MCP_VERDICT_RETRY
#define ERROR MCP_VERDICT_ERROR
#define REPLY MCP_PROBE_RESPONSE
#define NO_V {NULL, 0} /* the default list, v_default */

static const probe_row_t rows[] = {
    /* ---- both: valid DiscoverResult with a mutual modern version -> MODERN ---- */
    {"stdio ts2 discover (9.1)", STDIO, REPLY, 0, NULL, TS2_DISCOVER, DECODED, NO_V, MODERN, OK_,
     "2026-07-28", 0},
    {"stdio discover as raw line", STDIO, REPLY, 0, NULL, TS2_DISCOVER, RAW, NO_V, MODERN, OK_,
     "2026-07-28", 0},
    {"stdio ignores an SSE content type", STDIO, REPLY, 0, EVENTS, TS2_DISCOVER, RAW, NO_V, MODERN,
     OK_, "2026-07-28", 0},
    {"http ts2 discover (1.1)", HTTP, REPLY, 200, JSON, TS2_DISCOVER, RAW, NO_V, MODERN, OK_,
     "2026-07-28", 0},
    {"http discover decoded by the caller", HTTP, REPLY, 200, JSON, TS2_DISCOVER, DECODED, NO_V,
     MODERN, OK_, "2026-07-28", 0},
    {"http discover, JSON with charset", HTTP, REPLY, 200, "application/json; charset=utf-8",
     TS2_DISCOVER, RAW, NO_V, MODERN, OK_, "2026-07-28", 0},
    {"http discover, no content type", HTTP, REPLY, 200, NULL, TS2_DISCOVER, RAW, NO_V, MODERN,
     OK_, "2026-07-28", 0},
    {"http discover over SSE", HTTP, REPLY, 200, EVENTS, SSE(TS2_DISCOVER), RAW, NO_V, MODERN, OK_,
     "2026-07-28", 0},
    {"http discover over SSE after progress (7.4)", HTTP, REPLY, 200, EVENTS,
     PROGRESS_THEN(TS2_DISCOVER), RAW, NO_V, MODERN, OK_, "2026-07-28", 0},
    {"http discover over SSE, CRLF, comment, charset", HTTP, REPLY, 200,
     " Text/Event-Stream ;charset=utf-8",
     ": hi\r\nevent: message\r\ndata: " TS2_DISCOVER "\r\n\r\n", RAW, NO_V, MODERN, OK_,
     "2026-07-28", 0},
    {"http discover over SSE after a priming event", HTTP, REPLY, 200, EVENTS,
     "id: 1\ndata: \n\n" SSE(TS2_DISCOVER), RAW, NO_V, MODERN, OK_, "2026-07-28", 0},
    {"minimal valid DiscoverResult", STDIO, REPLY, 0, NULL,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{}}"), DECODED, NO_V, MODERN,
     OK_, "2026-07-28", 0},
    {"RC-era serverInfo in the body", HTTP, REPLY, 200, JSON,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"serverInfo\":"
            "{\"name\":\"s\",\"version\":\"1\"}}"),
     RAW, NO_V, MODERN, OK_, "2026-07-28", 0},
    {"public cache scope", HTTP, REPLY, 200, JSON,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"ttlMs\":3600000,"
            "\"cacheScope\":\"public\"}"),
     RAW, NO_V, MODERN, OK_, "2026-07-28", 0},
    {"client preference order wins", STDIO, REPLY, 0, NULL,
     DISCOVER("[\"2026-07-28\",\"2027-01-01\"]"), DECODED, V(v_future_first), MODERN, OK_,
     "2027-01-01", 0},
    {"legacy entries of the client list do not count", HTTP, REPLY, 200, JSON,
     DISCOVER("[\"2025-11-25\",\"2026-07-28\"]"), RAW, V(v_legacy_first), MODERN, OK_, "2026-07-28",
     0},
    {"NULL entries of the client list skipped", STDIO, REPLY, 0, NULL, TS2_DISCOVER, DECODED,
     V(v_with_null), MODERN, OK_, "2026-07-28", 0},
    {"DiscoverResult at another status still counts", HTTP, REPLY, 400, JSON, TS2_DISCOVER, RAW,
     NO_V, MODERN, OK_, "2026-07-28", 0},

    /* ---- both: DiscoverResult-shaped but invalid -> ERROR(PROTOCOL) ---- */
    {"empty supportedVersions", STDIO, REPLY, 0, NULL, DISCOVER("[]"), DECODED, NO_V, ERROR, PROTO,
     NULL, 0},
    {"empty supportedVersions over http", HTTP, REPLY, 200, JSON, DISCOVER("[]"), RAW, NO_V, ERROR,
     PROTO, NULL, 0},
    {"supportedVersions not an array", HTTP, REPLY, 200, JSON, DISCOVER("\"2026-07-28\""), RAW,
     NO_V, ERROR, PROTO, NULL, 0},
    {"supportedVersions with a number", STDIO, REPLY, 0, NULL, DISCOVER("[\"2026-07-28\",1]"),
     DECODED, NO_V, ERROR, PROTO, NULL, 0},
    {"capabilities missing", HTTP, REPLY, 200, EVENTS,
     SSE(RESULT("{\"supportedVersions\":[\"2026-07-28\"]}")), RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"capabilities not an object", STDIO, REPLY, 0, NULL,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":[]}"), DECODED, NO_V, ERROR,
     PROTO, NULL, 0},
    {"resultType input_required", HTTP, REPLY, 200, JSON,
     RESULT("{\"resultType\":\"input_required\",\"supportedVersions\":[\"2026-07-28\"],"
            "\"capabilities\":{}}"),
     RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"resultType not a string", STDIO, REPLY, 0, NULL,
     RESULT("{\"resultType\":1,\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{}}"),
     DECODED, NO_V, ERROR, PROTO, NULL, 0},
    {"negative ttlMs", HTTP, REPLY, 200, JSON,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"ttlMs\":-1}"), RAW,
     NO_V, ERROR, PROTO, NULL, 0},
    {"fractional ttlMs", STDIO, REPLY, 0, NULL,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"ttlMs\":1.5}"), RAW,
     NO_V, ERROR, PROTO, NULL, 0},
    {"ttlMs as a string", HTTP, REPLY, 200, JSON,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"ttlMs\":\"0\"}"), RAW,
     NO_V, ERROR, PROTO, NULL, 0},
    {"unknown cacheScope", STDIO, REPLY, 0, NULL,
     RESULT("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},\"cacheScope\":"
            "\"shared\"}"),
     DECODED, NO_V, ERROR, PROTO, NULL, 0},
    {"modern result that is not a DiscoverResult", HTTP, REPLY, 200, JSON,
     RESULT("{\"content\":[],\"resultType\":\"complete\"}"), RAW, NO_V, ERROR, PROTO, NULL, 0},

    /* ---- both: no mutual modern version -> ERROR(NO_COMMON_VERSION) ---- */
    {"only a future version", STDIO, REPLY, 0, NULL, DISCOVER("[\"2099-01-01\"]"), DECODED, NO_V,
     ERROR, NOCOMMON, NULL, 0},
    {"only a future version over http", HTTP, REPLY, 200, JSON, DISCOVER("[\"2099-01-01\"]"), RAW,
     NO_V, ERROR, NOCOMMON, NULL, 0},
    {"only a legacy version in common", HTTP, REPLY, 200, JSON,
     DISCOVER("[\"2099-01-01\",\"2025-11-25\"]"), RAW, NO_V, ERROR, NOCOMMON, NULL, 0},
    {"client lists only legacy versions", STDIO, REPLY, 0, NULL,
     DISCOVER("[\"2026-07-28\",\"2025-11-25\"]"), DECODED, V(v_legacy_only), ERROR, NOCOMMON, NULL,
     0},
    {"client lists nothing", HTTP, REPLY, 200, JSON, TS2_DISCOVER, RAW, {v_default, 0}, ERROR,
     NOCOMMON, NULL, 0},
    {"embedded NUL is not the version", STDIO, REPLY, 0, NULL,
     DISCOVER("[\"2026-07-28\\u0000\"]"), RAW, NO_V, ERROR, NOCOMMON, NULL, 0},

    /* ---- both: a result that is not DiscoverResult-shaped -> LEGACY ---- */
    {"empty result", STDIO, REPLY, 0, NULL, RESULT("{}"), DECODED, NO_V, LEGACY, OK_, NULL, 0},
    {"empty result over http", HTTP, REPLY, 200, JSON, RESULT("{}"), RAW, NO_V, LEGACY, OK_, NULL,
     0},
    {"initialize-shaped result", STDIO, REPLY, 0, NULL,
     RESULT("{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}"), RAW, NO_V, LEGACY, OK_,
     NULL, 0},
    {"non-object result", HTTP, REPLY, 200, JSON, RESULT("5"), RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"null result", STDIO, REPLY, 0, NULL, RESULT("null"), DECODED, NO_V, LEGACY, OK_, NULL, 0},
    {"primed legacy result over SSE (6.3)", HTTP, REPLY, 200, EVENTS, EVERYTHING_PRIMED_INITIALIZE,
     RAW, NO_V, LEGACY, OK_, NULL, 0},

    /* ---- both: -32022 with a mutual modern version -> MODERN_RETRY ---- */
    {"ts2 unsupported version (3.9)", HTTP, REPLY, 400, JSON, TS2_UNSUPPORTED_VERSION, RAW,
     V(v_future_first), RETRY_WITH, OK_, "2026-07-28", -32022},
    {"-32022 on stdio", STDIO, REPLY, 0, NULL, TS2_UNSUPPORTED_VERSION, DECODED, V(v_future_first),
     RETRY_WITH, OK_, "2026-07-28", -32022},
    {"-32022 over SSE", HTTP, REPLY, 200, EVENTS, SSE(TS2_UNSUPPORTED_VERSION), RAW,
     V(v_future_first), RETRY_WITH, OK_, "2026-07-28", -32022},
    {"-32022: client preference order", STDIO, REPLY, 0, NULL,
     ERROR_DATA(-32022, "{\"supported\":[\"2026-07-28\",\"2027-01-01\"],\"requested\":\"x\"}"),
     DECODED, V(v_future_first), RETRY_WITH, OK_, "2027-01-01", -32022},
    {"-32022 wins over a transient status", HTTP, REPLY, 503, JSON, TS2_UNSUPPORTED_VERSION, RAW,
     V(v_future_first), RETRY_WITH, OK_, "2026-07-28", -32022},

    /* ---- both: -32022 without one -> ERROR(NO_COMMON_VERSION) ---- */
    {"-32022 naming only a future version", HTTP, REPLY, 400, JSON,
     ERROR_DATA(-32022, "{\"supported\":[\"2099-01-01\"],\"requested\":\"2026-07-28\"}"), RAW,
     NO_V, ERROR, NOCOMMON, NULL, -32022},
    {"-32022 naming only legacy versions", STDIO, REPLY, 0, NULL,
     ERROR_DATA(-32022, "{\"supported\":[\"2025-11-25\"],\"requested\":\"2026-07-28\"}"), DECODED,
     NO_V, ERROR, NOCOMMON, NULL, -32022},
    {"-32022 without data", HTTP, REPLY, 400, JSON, ERROR_BODY(-32022, "Unsupported"), RAW, NO_V,
     ERROR, NOCOMMON, NULL, -32022},
    {"-32022 with a malformed supported", STDIO, REPLY, 0, NULL,
     ERROR_DATA(-32022, "{\"supported\":\"2026-07-28\"}"), RAW, NO_V, ERROR, NOCOMMON, NULL,
     -32022},
    {"ts2 --legacy reject answer (5.6), client lists only legacy", HTTP, REPLY, 400, JSON,
     TS2_UNSUPPORTED_VERSION, RAW, V(v_legacy_only), ERROR, NOCOMMON, NULL, -32022},

    /* ---- both: -32021 / -32020 -> ERROR(PROTOCOL), never a fallback ---- */
    {"ts2 header mismatch (3.1)", HTTP, REPLY, 400, JSON, TS2_HEADER_MISMATCH, RAW, NO_V, ERROR,
     PROTO, NULL, -32020},
    {"ts2 missing capability (7.3)", HTTP, REPLY, 400, JSON, TS2_MISSING_CAPABILITY, RAW, NO_V,
     ERROR, PROTO, NULL, -32021},
    {"-32020 on stdio", STDIO, REPLY, 0, NULL, TS2_HEADER_MISMATCH, DECODED, NO_V, ERROR, PROTO,
     NULL, -32020},
    {"-32021 on stdio", STDIO, REPLY, 0, NULL, TS2_MISSING_CAPABILITY, RAW, NO_V, ERROR, PROTO,
     NULL, -32021},
    {"-32020 at 404 is not a legacy rejection", HTTP, REPLY, 404, JSON, TS2_HEADER_MISMATCH, RAW,
     NO_V, ERROR, PROTO, NULL, -32020},
    {"-32021 at 200", HTTP, REPLY, 200, EVENTS, SSE(TS2_MISSING_CAPABILITY), RAW, NO_V, ERROR,
     PROTO, NULL, -32021},
    {"-32020 at 500 is not transient", HTTP, REPLY, 500, JSON, TS2_HEADER_MISMATCH, RAW, NO_V,
     ERROR, PROTO, NULL, -32020},

    /* ---- stdio: any other JSON-RPC error -> LEGACY ---- */
    {"stdio v1 method not found (9.3)", STDIO, REPLY, 0, NULL, METHOD_NOT_FOUND, DECODED, NO_V,
     LEGACY, OK_, NULL, -32601},
    {"stdio method not found as raw line", STDIO, REPLY, 0, NULL, METHOD_NOT_FOUND, RAW, NO_V,
     LEGACY, OK_, NULL, -32601},
    {"stdio invalid params", STDIO, REPLY, 0, NULL, ERROR_BODY(-32602, "Invalid params"), DECODED,
     NO_V, LEGACY, OK_, NULL, -32602},
    {"stdio invalid request", STDIO, REPLY, 0, NULL, ERROR_BODY(-32600, "Invalid Request"), RAW,
     NO_V, LEGACY, OK_, NULL, -32600},
    {"stdio server not initialized, id null", STDIO, REPLY, 0, NULL, EVERYTHING_NOT_INITIALIZED,
     DECODED, NO_V, LEGACY, OK_, NULL, -32000},
    {"stdio session overload -32001", STDIO, REPLY, 0, NULL, ERROR_BODY(-32001, "Session"), RAW,
     NO_V, LEGACY, OK_, NULL, -32001},
    {"stdio internal error", STDIO, REPLY, 0, NULL, ERROR_BODY(-32603, "Internal"), DECODED, NO_V,
     LEGACY, OK_, NULL, -32603},
    {"stdio error without message", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":7}}", DECODED, NO_V, LEGACY, OK_, NULL, 7},

    /* ---- stdio: timeout, exit, broken pipe ---- */
    {"stdio timeout", STDIO, MCP_PROBE_TIMEOUT, 0, NULL, NULL, RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"stdio server exited", STDIO, MCP_PROBE_EXITED, 0, NULL, NULL, RAW, NO_V, RECONNECT, OK_, NULL,
     0},
    {"stdio broken pipe", STDIO, MCP_PROBE_NETWORK_ERROR, 0, NULL, NULL, RAW, NO_V, RECONNECT, OK_,
     NULL, 0},

    /* ---- stdio: a reply that is not a JSON-RPC response -> ERROR(PROTOCOL) ---- */
    {"stdio no reply text", STDIO, REPLY, 0, NULL, NULL, RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"stdio not JSON", STDIO, REPLY, 0, NULL, "Starting server...", RAW, NO_V, ERROR, PROTO, NULL,
     0},
    {"stdio a notification", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}", DECODED, NO_V,
     ERROR, PROTO, NULL, 0},
    {"stdio jsonrpc 1.0", STDIO, REPLY, 0, NULL, "{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}",
     DECODED, NO_V, ERROR, PROTO, NULL, 0},
    {"stdio no jsonrpc member", STDIO, REPLY, 0, NULL, "{\"id\":1,\"result\":{}}", RAW, NO_V, ERROR,
     PROTO, NULL, 0},
    {"stdio result and error", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"x\"}}",
     DECODED, NO_V, ERROR, PROTO, NULL, 0},
    {"stdio error code not an integer", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"-32601\",\"message\":\"x\"}}", DECODED,
     NO_V, ERROR, PROTO, NULL, 0},
    {"stdio error code beyond int", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":4294934695,\"message\":\"x\"}}", DECODED,
     NO_V, ERROR, PROTO, NULL, 0},
    {"stdio error not an object", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":-32601}", RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"stdio duplicate keys", STDIO, REPLY, 0, NULL,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"result\":{}}", RAW, NO_V, ERROR, PROTO, NULL,
     0},

    /* ---- HTTP: 401 / 403 -> AUTHORIZE ---- */
    {"http 401, empty body", HTTP, REPLY, 401, NULL, NULL, RAW, NO_V, AUTHORIZE, OK_, NULL, 0},
    {"http 403 host guard (3.18)", HTTP, REPLY, 403, JSON, TS2_INVALID_HOST, RAW, NO_V, AUTHORIZE,
     OK_, NULL, 0},
    {"http 401 wins over a DiscoverResult", HTTP, REPLY, 401, JSON, TS2_DISCOVER, RAW, NO_V,
     AUTHORIZE, OK_, NULL, 0},
    {"http 403 wins over -32601", HTTP, REPLY, 403, JSON, METHOD_NOT_FOUND, RAW, NO_V, AUTHORIZE,
     OK_, NULL, 0},
    {"http 403 wins over -32022", HTTP, REPLY, 403, JSON, TS2_UNSUPPORTED_VERSION, DECODED, NO_V,
     AUTHORIZE, OK_, NULL, 0},

    /* ---- HTTP: 408 / 429 / 5xx, network error, timeout -> RETRY ---- */
    {"http 408", HTTP, REPLY, 408, NULL, NULL, RAW, NO_V, RETRY, OK_, NULL, 0},
    {"http 429", HTTP, REPLY, 429, JSON, "{}", RAW, NO_V, RETRY, OK_, NULL, 0},
    {"http 500", HTTP, REPLY, 500, NULL, NULL, RAW, NO_V, RETRY, OK_, NULL, 0},
    {"http 502 from a proxy", HTTP, REPLY, 502, "text/html", "<html>Bad Gateway</html>", RAW, NO_V,
     RETRY, OK_, NULL, 0},
    {"http 503 with a non-modern error", HTTP, REPLY, 503, JSON, ERROR_BODY(-32603, "busy"), RAW,
     NO_V, RETRY, OK_, NULL, -32603},
    {"http 599", HTTP, REPLY, 599, NULL, NULL, RAW, NO_V, RETRY, OK_, NULL, 0},
    {"http network error", HTTP, MCP_PROBE_NETWORK_ERROR, 0, NULL, NULL, RAW, NO_V, RETRY, OK_,
     NULL, 0},
    {"http timeout", HTTP, MCP_PROBE_TIMEOUT, 0, NULL, NULL, RAW, NO_V, RETRY, OK_, NULL, 0},
    {"http lost connection", HTTP, MCP_PROBE_EXITED, 0, NULL, NULL, RAW, NO_V, RETRY, OK_, NULL, 0},

    /* ---- HTTP: 400 / 404 / 405 with a non-modern body -> LEGACY ---- */
    {"http 400, empty body", HTTP, REPLY, 400, NULL, NULL, RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"http 404, empty body", HTTP, REPLY, 404, JSON, "", RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"http 405, empty body", HTTP, REPLY, 405, NULL, NULL, RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"http 404 wrong path, text (4.4)", HTTP, REPLY, 404, "text/plain", "Not Found", RAW, NO_V,
     LEGACY, OK_, NULL, 0},
    {"http 405 not JSON-RPC (4.x)", HTTP, REPLY, 405, JSON, BARE_METHOD_NOT_ALLOWED, RAW, NO_V,
     LEGACY, OK_, NULL, 0},
    {"http 405 JSON-RPC -32000 (4.1)", HTTP, REPLY, 405, JSON, TS2_METHOD_NOT_ALLOWED, RAW, NO_V,
     LEGACY, OK_, NULL, -32000},
    {"http v1 no session (6.1)", HTTP, REPLY, 400, JSON, TS1_NO_SESSION, RAW, NO_V, LEGACY, OK_,
     NULL, -32000},
    {"http v1 no session, string id (8.2)", HTTP, REPLY, 400, JSON, TS1_NO_SESSION_STRING_ID, RAW,
     NO_V, LEGACY, OK_, NULL, -32000},
    {"http everything not initialized (6.2)", HTTP, REPLY, 400, JSON, EVERYTHING_NOT_INITIALIZED,
     RAW, NO_V, LEGACY, OK_, NULL, -32000},
    {"http 400 bare -32602 is not era evidence", HTTP, REPLY, 400, JSON,
     ERROR_BODY(-32602, "Invalid params"), RAW, NO_V, LEGACY, OK_, NULL, -32602},
    {"http 400 parse error (3.16)", HTTP, REPLY, 400, JSON, TS2_PARSE_ERROR, RAW, NO_V, LEGACY, OK_,
     NULL, -32700},
    {"http 400 session overload -32001", HTTP, REPLY, 400, JSON, ERROR_BODY(-32001, "Session"),
     RAW, NO_V, LEGACY, OK_, NULL, -32001},
    {"http 400 HTML", HTTP, REPLY, 400, "text/html", "<h1>Bad Request</h1>", RAW, NO_V, LEGACY, OK_,
     NULL, 0},
    {"http 400 SSE without events", HTTP, REPLY, 400, EVENTS, ": nothing\n", RAW, NO_V, LEGACY, OK_,
     NULL, 0},
    {"http 400 notification, not a response", HTTP, REPLY, 400, JSON,
     "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", RAW, NO_V, LEGACY, OK_, NULL, 0},
    {"http 400 error decoded by the caller", HTTP, REPLY, 400, JSON, TS1_NO_SESSION, DECODED, NO_V,
     LEGACY, OK_, NULL, -32000},

    /* ---- HTTP: any status with JSON-RPC -32601 -> LEGACY ---- */
    {"http 404 -32601 (2.1)", HTTP, REPLY, 404, JSON, METHOD_NOT_FOUND, RAW, NO_V, LEGACY, OK_,
     NULL, -32601},
    {"http 200 -32601", HTTP, REPLY, 200, JSON, METHOD_NOT_FOUND, RAW, NO_V, LEGACY, OK_, NULL,
     -32601},
    {"http 200 -32601 over SSE", HTTP, REPLY, 200, EVENTS, SSE(METHOD_NOT_FOUND), RAW, NO_V, LEGACY,
     OK_, NULL, -32601},
    {"http 500 -32601", HTTP, REPLY, 500, JSON, METHOD_NOT_FOUND, RAW, NO_V, LEGACY, OK_, NULL,
     -32601},
    {"http 418 -32601", HTTP, REPLY, 418, JSON, METHOD_NOT_FOUND, RAW, NO_V, LEGACY, OK_, NULL,
     -32601},
    {"http first response in the stream counts", HTTP, REPLY, 200, EVENTS,
     SSE(METHOD_NOT_FOUND) SSE(TS2_DISCOVER), RAW, NO_V, LEGACY, OK_, NULL, -32601},

    /* ---- HTTP: 2xx with any other JSON-RPC error -> LEGACY ---- */
    {"http 200 -32602 over SSE (stateless legacy)", HTTP, REPLY, 200, EVENTS,
     SSE(ERROR_BODY(-32602, "Invalid request parameters")), RAW, NO_V, LEGACY, OK_, NULL, -32602},
    {"http 200 -32603", HTTP, REPLY, 200, JSON, ERROR_BODY(-32603, "Internal"), RAW, NO_V, LEGACY,
     OK_, NULL, -32603},

    /* ---- HTTP: 2xx without a JSON-RPC response -> ERROR(PROTOCOL) ---- */
    {"http 200 empty", HTTP, REPLY, 200, JSON, NULL, RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"http 202 empty", HTTP, REPLY, 202, NULL, NULL, RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"http 200 HTML", HTTP, REPLY, 200, "text/html", "<html></html>", RAW, NO_V, ERROR, PROTO, NULL,
     0},
    {"http 200 SSE with only a notification", HTTP, REPLY, 200, EVENTS,
     "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", RAW,
     NO_V, ERROR, PROTO, NULL, 0},
    {"http 200 SSE body labelled JSON", HTTP, REPLY, 200, JSON, SSE(TS2_DISCOVER), RAW, NO_V, ERROR,
     PROTO, NULL, 0},
    {"http 200 lookalike content type", HTTP, REPLY, 200, "text/event-streamx", SSE(TS2_DISCOVER),
     RAW, NO_V, ERROR, PROTO, NULL, 0},
    {"http 200 SSE event never terminated", HTTP, REPLY, 200, EVENTS,
     "event: message\ndata: " TS2_DISCOVER "\n", RAW, NO_V, ERROR, PROTO, NULL, 0},

    /* ---- HTTP: any other status or error -> ERROR(HTTP_STATUS) ---- */
    {"http 302", HTTP, REPLY, 302, NULL, NULL, RAW, NO_V, ERROR, STATUS, NULL, 0},
    {"http 415 (3.15)", HTTP, REPLY, 415, JSON, TS2_UNSUPPORTED_MEDIA_TYPE, RAW, NO_V, ERROR,
     STATUS, NULL, -32000},
    {"http 418 -32602", HTTP, REPLY, 418, JSON, ERROR_BODY(-32602, "teapot"), RAW, NO_V, ERROR,
     STATUS, NULL, -32602},
    {"http 406", HTTP, REPLY, 406, JSON, ERROR_BODY(-32000, "Not Acceptable"), RAW, NO_V, ERROR,
     STATUS, NULL, -32000},
    {"http 410", HTTP, REPLY, 410, NULL, NULL, RAW, NO_V, ERROR, STATUS, NULL, 0},
    {"http 100", HTTP, REPLY, 100, NULL, NULL, RAW, NO_V, ERROR, STATUS, NULL, 0},
    {"http status unknown", HTTP, REPLY, 0, NULL, NULL, RAW, NO_V, ERROR, STATUS, NULL, 0},
    {"http 600", HTTP, REPLY, 600, NULL, NULL, RAW, NO_V, ERROR, STATUS, NULL, 0},

    /* ---- a caller bug: an event outside the enum ---- */
    {"stdio unknown event", STDIO, (mcp_probe_event_t)99, 0, NULL, NULL, RAW, NO_V, ERROR, PROTO,
     NULL, 0},
    {"http unknown event", HTTP, (mcp_probe_event_t)99, 200, JSON, TS2_DISCOVER, RAW, NO_V, ERROR,
     PROTO, NULL, 0},
};

/* The response object a MODERN row's body carries (new reference). */
static json_t *expected_response(const char *body)
{
    const char *p = strstr(body, "{\"result\"");
    if (!p)
        p = strstr(body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\"");
    return p ? json_loads(p, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

static void check_row(const probe_row_t *row)
{
    versions_t versions = row->versions;
    if (!versions.v)
        versions = (versions_t)V(v_default);

    json_t *message = NULL;
    mcp_probe_outcome_t outcome = {.event = row->event, .http_status = row->status,
                                   .content_type = row->content_type};
    if (row->body && row->form == DECODED) {
        json_error_t err;
        message = json_loads(row->body, JSON_DECODE_ANY, &err);
        if (!message)
            fail_msg("%s: bad test JSON: %s", row->name, err.text);
        outcome.message = message;
        /* A message takes precedence over body bytes: give some garbage. */
        outcome.body = "garbage";
        outcome.body_len = 7;
    } else if (row->body) {
        outcome.body = row->body;
        outcome.body_len = strlen(row->body);
    }

    mcp_probe_verdict_t v;
    memset(&v, 0xA5, sizeof v); /* every field must be written */
    mcp_classify_probe((mcp_transport_kind_t)row->transport, &outcome, versions.v, versions.n, &v);

    if (v.kind != row->kind || v.error_kind != row->error_kind)
        fail_msg("%s: got %s (error %d, %s), want %s (error %d)", row->name, mcp_verdict_name(v.kind),
                 v.error_kind, v.reason, mcp_verdict_name(row->kind), row->error_kind);
    if (v.rpc_code != row->rpc_code)
        fail_msg("%s: rpc_code %d, want %d", row->name, v.rpc_code, row->rpc_code);
    if (!v.reason || !v.reason[0])
        fail_msg("%s: no reason", row->name);

    /* The version is a pointer into the client's list. */
    if (row->version) {
        bool in_list = false;
        for (size_t i = 0; i < versions.n; i++)
            in_list = in_list || v.version == versions.v[i];
        if (!in_list || strcmp(v.version, row->version) != 0)
            fail_msg("%s: version %s, want %s", row->name, v.version ? v.version : "(null)",
                     row->version);
    } else if (v.version) {
        fail_msg("%s: unexpected version %s", row->name, v.version);
    }

    /* MODERN carries the DiscoverResult, nothing else does. */
    if (row->kind == MCP_VERDICT_MODERN) {
        json_t *doc = expected_response(row->body);
        if (!doc || !json_equal(v.discover_result, json_object_get(doc, "result")))
            fail_msg("%s: discover_result is not the peer's result", row->name);
        json_decref(doc);
    } else if (v.discover_result) {
        fail_msg("%s: unexpected discover_result", row->name);
    }

    int want_status = row->transport == HTTP && row->event == MCP_PROBE_RESPONSE ? row->status : 0;
    if (v.http_status != want_status)
        fail_msg("%s: http_status %d, want %d", row->name, v.http_status, want_status);

    /* The verdict owns its DiscoverResult: it outlives the message. */
    json_decref(message);
    if (v.discover_result)
        assert_true(mcp_discover_result_valid(v.discover_result));
    mcp_probe_verdict_clear(&v);
    assert_null(v.discover_result);
    assert_null(v.reason);
}

static void test_verdict_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(rows); i++)
        check_row(&rows[i]);
}

/* Every rule of the table has rows on each transport it applies to. */
static void test_table_covers_every_verdict(void **state)
{
    (void)state;
    int seen[2][MCP_VERDICT_ERROR + 1] = {{0}};
    for (size_t i = 0; i < COUNT(rows); i++)
        seen[rows[i].transport][rows[i].kind]++;
    for (int k = MCP_VERDICT_MODERN; k <= MCP_VERDICT_ERROR; k++) {
        bool stdio_only = k == MCP_VERDICT_RECONNECT_LEGACY;
        bool http_only = k == MCP_VERDICT_AUTHORIZE || k == MCP_VERDICT_RETRY;
        if (!http_only && !seen[STDIO][k])
            fail_msg("no stdio row gives %s", mcp_verdict_name(k));
        if (!stdio_only && !seen[HTTP][k])
            fail_msg("no HTTP row gives %s", mcp_verdict_name(k));
    }
}

static void test_null_arguments(void **state)
{
    (void)state;
    mcp_probe_verdict_t v;
    mcp_classify_probe(MCP_TRANSPORT_HTTP, NULL, v_default, COUNT(v_default), &v);
    assert_int_equal(v.kind, MCP_VERDICT_ERROR);
    assert_int_equal(v.error_kind, MCP_PROBE_ERR_PROTOCOL);
    mcp_probe_verdict_clear(&v);
    mcp_probe_verdict_clear(NULL);

    /* No client version list: nothing can be mutual. */
    json_t *message = json_loads(TS2_DISCOVER, 0, NULL);
    mcp_probe_outcome_t outcome = {.event = MCP_PROBE_RESPONSE, .message = message};
    mcp_classify_probe(MCP_TRANSPORT_STDIO, &outcome, NULL, 3, &v);
    assert_int_equal(v.kind, MCP_VERDICT_ERROR);
    assert_int_equal(v.error_kind, MCP_PROBE_ERR_NO_COMMON_VERSION);
    mcp_probe_verdict_clear(&v);
    json_decref(message);
}

/* The verdict shares the caller's result object (a new reference), so the
 * caller may drop its message first. */
static void test_discover_result_reference(void **state)
{
    (void)state;
    json_t *message = json_loads(TS2_DISCOVER, 0, NULL);
    json_t *result = json_object_get(message, "result");
    mcp_probe_outcome_t outcome = {.event = MCP_PROBE_RESPONSE, .message = message};
    mcp_probe_verdict_t v;
    mcp_classify_probe(MCP_TRANSPORT_STDIO, &outcome, v_default, COUNT(v_default), &v);
    assert_int_equal(v.kind, MCP_VERDICT_MODERN);
    assert_ptr_equal(v.discover_result, result);
    assert_int_equal(result->refcount, 2);
    json_decref(message);
    assert_int_equal(v.discover_result->refcount, 1);
    assert_string_equal(json_string_value(json_object_get(v.discover_result, "cacheScope")),
                        "private");
    mcp_probe_verdict_clear(&v);
}

static void test_discover_result_valid(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        bool valid;
    } rows_valid[] = {
        {"{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{}}", true},
        {"{\"resultType\":\"complete\",\"supportedVersions\":[\"x\"],\"capabilities\":{},"
         "\"ttlMs\":0,\"cacheScope\":\"private\"}",
         true},
        {"{\"supportedVersions\":[\"a\",\"b\"],\"capabilities\":{\"tools\":{}},\"ttlMs\":5,"
         "\"cacheScope\":\"public\",\"instructions\":\"hi\",\"unknown\":1}",
         true},
        {"{\"resultType\":\"complete\\u0000\",\"supportedVersions\":[\"x\"],\"capabilities\":{}}",
         false},
        {"{\"resultType\":\"task\",\"supportedVersions\":[\"x\"],\"capabilities\":{}}", false},
        {"{\"resultType\":null,\"supportedVersions\":[\"x\"],\"capabilities\":{}}", false},
        {"{\"supportedVersions\":[],\"capabilities\":{}}", false},
        {"{\"supportedVersions\":[null],\"capabilities\":{}}", false},
        {"{\"supportedVersions\":{},\"capabilities\":{}}", false},
        {"{\"capabilities\":{}}", false},
        {"{\"supportedVersions\":[\"x\"]}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":null}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":{},\"ttlMs\":-1}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":{},\"ttlMs\":0.0}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":{},\"ttlMs\":null}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":{},\"cacheScope\":\"Public\"}", false},
        {"{\"supportedVersions\":[\"x\"],\"capabilities\":{},\"cacheScope\":1}", false},
        {"[]", false},
        {"\"complete\"", false},
    };
    for (size_t i = 0; i < COUNT(rows_valid); i++) {
        json_t *j = json_loads(rows_valid[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_non_null(j);
        if (mcp_discover_result_valid(j) != rows_valid[i].valid)
            fail_msg("valid(%s) should be %d", rows_valid[i].json, rows_valid[i].valid);
        json_decref(j);
    }
    assert_false(mcp_discover_result_valid(NULL));
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_MODERN), "modern");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_MODERN_RETRY), "modern_retry");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_LEGACY), "legacy");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_RECONNECT_LEGACY), "reconnect_legacy");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_AUTHORIZE), "authorize");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_RETRY), "retry");
    assert_string_equal(mcp_verdict_name(MCP_VERDICT_ERROR), "error");
    assert_string_equal(mcp_verdict_name((mcp_verdict_kind_t)42), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_table),
        cmocka_unit_test(test_table_covers_every_verdict),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_discover_result_reference),
        cmocka_unit_test(test_discover_result_valid),
        cmocka_unit_test(test_verdict_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
