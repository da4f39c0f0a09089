/*
 * Server-side classification of incoming messages: era, the legacy
 * cross-check and the modern validation ladder.
 *
 * The ladder table replays every capture of wire-ts2.md section 3 and the
 * assertions of the conformance scenarios server-stateless,
 * http-header-validation and http-custom-header-server-validation, plus
 * one row per rule of include/mcp/request.h and one per pair of
 * neighbouring rungs (the earlier rung must answer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "mcp/request.h"
#include "mcp/result.h"
#include "protocol/envelope.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static json_t *parse_json(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return j;
}

static void load_message(const char *text, mcp_message_t *msg)
{
    mcp_error_t err = {0};
    memset(msg, 0, sizeof *msg);
    if (mcp_jsonrpc_parse(text, strlen(text), NULL, msg, &err) != MCP_OK)
        fail_msg("test message does not parse (%s): %s", err.message, text);
    mcp_error_clear(&err);
}

/*
 * Test headers written as "Name: value" lines separated by '\n'. One space
 * after the colon is part of the notation; anything more is part of the
 * raw value (to exercise trimming).
 */
struct test_headers {
    mcp_header_t items[16];
    char *storage;
    mcp_headers_t list;
};

static const mcp_headers_t *load_headers(const char *spec, struct test_headers *th)
{
    memset(th, 0, sizeof *th);
    if (!spec)
        return NULL;
    size_t size = strlen(spec) + 1;
    th->storage = malloc(size);
    assert_non_null(th->storage);
    memcpy(th->storage, spec, size);
    size_t n = 0;
    for (char *line = th->storage; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *colon = strchr(line, ':');
        assert_non_null(colon);
        *colon = '\0';
        char *value = colon + 1;
        if (*value == ' ')
            value++;
        assert_true(n < sizeof th->items / sizeof th->items[0]);
        th->items[n].name = line;
        th->items[n].value = value;
        n++;
        line = next;
    }
    th->list.items = th->items;
    th->list.count = n;
    return &th->list;
}

static void free_headers(struct test_headers *th)
{
    free(th->storage);
}

static void expect_data(const json_t *actual, const char *expected_text, const char *label)
{
    json_t *expected = parse_json(expected_text);
    if (!actual || !json_equal((json_t *)actual, expected)) {
        char *got = actual ? json_dumps(actual, JSON_SORT_KEYS) : NULL;
        print_error("%s: error data\n  got  %s\n  want %s\n", label, got ? got : "NULL",
                    expected_text);
        free(got);
        json_decref(expected);
        fail();
    }
    json_decref(expected);
}

/* ------------------------------------------------------------------ */
/* Small tables                                                        */
/* ------------------------------------------------------------------ */

static void test_log_level_index(void **state)
{
    static const struct {
        const char *level;
        int index;
    } rows[] = {
        {"debug", 0},   {"info", 1},     {"notice", 2}, {"warning", 3},
        {"error", 4},   {"critical", 5}, {"alert", 6},  {"emergency", 7},
        {"warn", -1},   {"Info", -1},    {"DEBUG", -1}, {"", -1},
        {"info ", -1},  {"trace", -1},   {NULL, -1},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (mcp_log_level_index(rows[i].level) != rows[i].index)
            fail_msg("mcp_log_level_index(%s)", rows[i].level ? rows[i].level : "NULL");
}

static void test_method_name_param(void **state)
{
    static const struct {
        const char *method;
        const char *param;
    } rows[] = {
        {"tools/call", "name"},   {"prompts/get", "name"},    {"resources/read", "uri"},
        {"tools/list", NULL},     {"resources/list", NULL},   {"completion/complete", NULL},
        {"server/discover", NULL}, {"Tools/Call", NULL},      {"tools/call ", NULL},
        {"tasks/get", "taskId"},  {"tasks/update", "taskId"}, {"tasks/cancel", "taskId"},
        {"tasks/result", NULL},   {"tasks/list", NULL},       {"tasks/", NULL},
        {"", NULL},               {NULL, NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *got = mcp_method_name_param(rows[i].method);
        bool same = (!got && !rows[i].param) ||
                    (got && rows[i].param && strcmp(got, rows[i].param) == 0);
        if (!same)
            fail_msg("mcp_method_name_param(%s) = %s", rows[i].method ? rows[i].method : "NULL",
                     got ? got : "NULL");
    }
}

static void test_request_era(void **state)
{
    static const struct {
        const char *message;
        mcp_era_t era;
    } rows[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", MCP_ERA_MODERN},
        /* the claim decides whatever its value */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}", MCP_ERA_MODERN},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "{\"io.modelcontextprotocol/protocolVersion\":20260728}}}", MCP_ERA_MODERN},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "{\"io.modelcontextprotocol/protocolVersion\":null}}}", MCP_ERA_MODERN},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1,"
         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
         MCP_ERA_MODERN},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
         "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"},"
         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
         MCP_ERA_MODERN},
        /* no claim */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}",
         MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "{\"protocolVersion\":\"2026-07-28\"}}}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":"
         "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
         "[\"io.modelcontextprotocol/protocolVersion\"]}}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
         "\"2026-07-28\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
         MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", MCP_ERA_LEGACY},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"_meta\":"
         "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", MCP_ERA_LEGACY},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_message_t msg;
        load_message(rows[i].message, &msg);
        if (mcp_request_era(&msg) != rows[i].era)
            fail_msg("era of %s", rows[i].message);
        mcp_message_clear(&msg);
    }
    assert_int_equal(mcp_request_era(NULL), MCP_ERA_LEGACY);
}

/* ------------------------------------------------------------------ */
/* The classification table                                            */
/* ------------------------------------------------------------------ */

#define PV "io.modelcontextprotocol/protocolVersion"
#define CC "io.modelcontextprotocol/clientCapabilities"
#define CI "io.modelcontextprotocol/clientInfo"
#define LL "io.modelcontextprotocol/logLevel"

#define INFO "\"" CI "\":{\"name\":\"curl\",\"version\":\"8\"}"
#define META_AT(v) "\"_meta\":{\"" PV "\":\"" v "\"," INFO ",\"" CC "\":{}}"
#define META META_AT("2026-07-28")
#define META_CAPS(caps) "\"_meta\":{\"" PV "\":\"2026-07-28\"," INFO ",\"" CC "\":" caps "}"
#define META_RAW(inner) "\"_meta\":{" inner "}"

#define REQ(method, params) \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" method "\",\"params\":{" params "}}"
#define NOTE(method, params) \
    "{\"jsonrpc\":\"2.0\",\"method\":\"" method "\",\"params\":{" params "}}"

#define H_PV "MCP-Protocol-Version: 2026-07-28"
#define H_M(m) "Mcp-Method: " m
#define H(m) H_PV "\n" H_M(m)
#define H_CALL(name) H("tools/call") "\nMcp-Name: " name

#define ECHO_CALL(args) REQ("tools/call", "\"name\":\"echo\",\"arguments\":" args "," META)

#define MISMATCH(header, received, expected)                                                \
    "{\"mismatch\":{\"header\":\"" header "\",\"received\":" received ",\"expected\":" expected \
    "}}"
#define ENVELOPE(key, problem) "{\"envelope\":{\"key\":\"" key "\",\"problem\":\"" problem "\"}}"

/* A tool with one string, one integer, one boolean and one nested
 * annotated argument. */
#define SCHEMA                                                                       \
    "{\"type\":\"object\",\"properties\":{"                                          \
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"                  \
    "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"                   \
    "\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry\"},"                       \
    "\"outer\":{\"type\":\"object\",\"properties\":{"                                \
    "\"inner\":{\"type\":\"string\",\"x-mcp-header\":\"Inner\"}}},"                  \
    "\"text\":{\"type\":\"string\"}}}"
#define BAD_SCHEMA \
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"x-mcp-header\":\"N\"}}}"

enum { UNKNOWN_METHOD = 1 }; /* row flag: the server does not serve the method */

struct ladder_row {
    const char *name;     /* the capture, check or rule the row replays */
    const char *message;
    const char *headers;  /* NULL: not HTTP */
    mcp_era_t era;        /* expected classification */
    int flags;
    const char *required; /* required ClientCapabilities, or NULL */
    const char *schema;   /* tools/call inputSchema, or NULL */
    int code;             /* 0: accepted */
    int status;           /* HTTP status of the rejection */
    const char *data;     /* expected error data, or NULL for none */
};

#define MODERN MCP_ERA_MODERN
#define LEGACY MCP_ERA_LEGACY

static const struct ladder_row ladder_rows[] = {
    /* ---- wire-ts2.md section 1 and 2: accepted and removed methods ---- */
    {"1.2 tools/list", REQ("tools/list", META), H("tools/list"), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"1.3 tools/call", ECHO_CALL("{\"text\":\"hi\"}"), H_CALL("echo"), MODERN, 0, NULL, NULL, 0, 0,
     NULL},
    {"1.5 Mcp-Name in the Base64 sentinel form", ECHO_CALL("{\"text\":\"hi\"}"),
     H_CALL("=?base64?ZWNobw==?="), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"1.6 _meta without clientInfo",
     REQ("tools/call", "\"name\":\"echo\"," META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{}")),
     H_CALL("echo"), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"1.10 notification POST with the envelope",
     NOTE("notifications/cancelled", "\"requestId\":99," META), H("notifications/cancelled"),
     MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"2.1 ping with a modern envelope", REQ("ping", META), H("ping"), MODERN, UNKNOWN_METHOD,
     NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"2.2 initialize with a modern envelope",
     REQ("initialize", "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"curl\",\"version\":\"8\"}," META),
     H("initialize"), MODERN, UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"2.3 logging/setLevel with a modern envelope",
     REQ("logging/setLevel", "\"level\":\"info\"," META), H("logging/setLevel"), MODERN,
     UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"2.4 resources/list on a server without resources", REQ("resources/list", META),
     H("resources/list"), MODERN, UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},

    /* ---- wire-ts2.md section 3: the validation ladder ---- */
    {"3.1 Mcp-Method disagrees with the body", REQ("tools/list", META), H("prompts/list"), MODERN,
     0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Method", "\"prompts/list\"", "\"tools/list\"")},
    {"3.2 Mcp-Method missing", REQ("tools/list", META), H_PV, MODERN, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, MISMATCH("Mcp-Method", "null", "\"tools/list\"")},
    {"3.3 MCP-Protocol-Version missing", REQ("tools/list", META), H_M("tools/list"), MODERN, 0,
     NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("MCP-Protocol-Version", "null", "\"2026-07-28\"")},
    {"3.4 MCP-Protocol-Version disagrees with _meta", REQ("tools/list", META),
     "MCP-Protocol-Version: 2025-11-25\n" H_M("tools/list"), MODERN, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400,
     MISMATCH("MCP-Protocol-Version", "\"2025-11-25\"", "\"2026-07-28\"")},
    {"3.5 Mcp-Name missing on tools/call", ECHO_CALL("{\"text\":\"hi\"}"), H("tools/call"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, MISMATCH("Mcp-Name", "null", "\"echo\"")},
    {"3.6 Mcp-Name disagrees with params.name", ECHO_CALL("{\"text\":\"hi\"}"), H_CALL("other"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Name", "\"other\"", "\"echo\"")},
    {"3.7 Mcp-Name with a broken Base64 sentinel", ECHO_CALL("{\"text\":\"hi\"}"),
     H_CALL("=?base64?%%%?="), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Name", "\"=?base64?%%%?=\"", "\"echo\"")},
    {"3.8 header names in odd case, values padded", REQ("tools/list", META),
     "mcp-protocol-version:   2026-07-28  \nMCP-METHOD:  tools/list ", MODERN, 0, NULL, NULL, 0,
     0, NULL},
    {"3.9 unsupported version in header and envelope",
     REQ("tools/list", META_RAW("\"" PV "\":\"2099-01-01\",\"" CC "\":{}")),
     "MCP-Protocol-Version: 2099-01-01\n" H_M("tools/list"), MODERN, 0, NULL, NULL,
     MCP_UNSUPPORTED_PROTOCOL_VERSION, 400,
     "{\"supported\":[\"2026-07-28\"],\"requested\":\"2099-01-01\"}"},
    {"3.10 envelope names a 2025 version",
     REQ("tools/list", META_RAW("\"" PV "\":\"2025-11-25\",\"" CC "\":{}")),
     "MCP-Protocol-Version: 2025-11-25\n" H_M("tools/list"), MODERN, 0, NULL, NULL,
     MCP_UNSUPPORTED_PROTOCOL_VERSION, 400,
     "{\"supported\":[\"2026-07-28\"],\"requested\":\"2025-11-25\"}"},
    {"3.11 modern header, no _meta", REQ("tools/list", ""), H("tools/list"), LEGACY, 0, NULL,
     NULL, MCP_INVALID_PARAMS, 400, ENVELOPE("_meta", "missing")},
    {"3.12 _meta without clientCapabilities",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\"")), H("tools/list"), MODERN, 0, NULL,
     NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(CC, "missing")},
    {"3.13 _meta with a non-string protocolVersion",
     REQ("tools/list", META_RAW("\"" PV "\":20260728,\"" CC "\":{}")), H("tools/list"), MODERN,
     0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(PV, "not a string")},
    {"3.14 no MCP headers and no _meta", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
     "Content-Type: application/json", LEGACY, 0, NULL, NULL, 0, 0, NULL},
    /* 3.15 (Content-Type), 3.18 (Host) and 3.19 (Origin) are decided by the
     * HTTP adapter before any body is read; 3.16 and 3.17 by the parser
     * (test_parse_failures below). */
    {"5.5 legacy initialize with a 2026-07-28 header",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
     "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"8\"}}}",
     H_PV, LEGACY, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("MCP-Protocol-Version", "\"2026-07-28\"", "null")},
    {"5.3 legacy tools/call with a legacy header",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
     "MCP-Protocol-Version: 2025-11-25", LEGACY, 0, NULL, NULL, 0, 0, NULL},
    {"7.3 tool needs elicitation the client did not declare",
     REQ("tools/call", "\"name\":\"confirm_echo\",\"arguments\":{\"text\":\"hi\"}," META),
     H_CALL("confirm_echo"), MODERN, 0, "{\"elicitation\":{\"form\":{}}}", NULL,
     MCP_MISSING_CLIENT_CAPABILITY, 400,
     "{\"requiredCapabilities\":{\"elicitation\":{\"form\":{}}}}"},

    /* ---- conformance: server-stateless ---- */
    {"stateless: missing _meta", REQ("server/discover", ""), H("server/discover"), LEGACY, 0,
     NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE("_meta", "missing")},
    {"stateless: _meta without protocolVersion",
     REQ("server/discover", META_RAW(INFO ",\"" CC "\":{}")), H("server/discover"), LEGACY, 0,
     NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(PV, "missing")},
    {"stateless: _meta without clientCapabilities",
     REQ("server/discover", META_RAW("\"" PV "\":\"2026-07-28\"," INFO)), H("server/discover"),
     MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(CC, "missing")},
    {"stateless: clientInfo is optional",
     REQ("server/discover", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{}")),
     H("server/discover"), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"stateless: unsupported version", REQ("server/discover", META_AT("v999.0.0")),
     "MCP-Protocol-Version: v999.0.0\n" H_M("server/discover"), MODERN, 0, NULL, NULL,
     MCP_UNSUPPORTED_PROTOCOL_VERSION, 400,
     "{\"supported\":[\"2026-07-28\"],\"requested\":\"v999.0.0\"}"},
    {"stateless: header 2026-07-28, _meta an unknown version",
     REQ("server/discover", META_AT("v999.0.0")), H("server/discover"), MODERN, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, MISMATCH("MCP-Protocol-Version", "\"2026-07-28\"", "\"v999.0.0\"")},
    {"stateless: undeclared sampling capability",
     REQ("tools/call", "\"name\":\"test_missing_capability\",\"arguments\":{}," META),
     H_CALL("test_missing_capability"), MODERN, 0, "{\"sampling\":{}}", NULL,
     MCP_MISSING_CLIENT_CAPABILITY, 400, "{\"requiredCapabilities\":{\"sampling\":{}}}"},
    {"stateless: removed initialize", REQ("initialize", META), H("initialize"), MODERN,
     UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"stateless: removed resources/subscribe", REQ("resources/subscribe", META),
     H("resources/subscribe"), MODERN, UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404,
     NULL},
    {"stateless: removed resources/unsubscribe", REQ("resources/unsubscribe", META),
     H("resources/unsubscribe"), MODERN, UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404,
     NULL},
    {"stateless: unknown method", REQ("unknown/method", META), H("unknown/method"), MODERN,
     UNKNOWN_METHOD, NULL, NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"stateless: elicitation {} declared",
     REQ("tools/call", "\"name\":\"test_streaming_elicitation\",\"arguments\":{},"
                       META_CAPS("{\"elicitation\":{}}")),
     H_CALL("test_streaming_elicitation"), MODERN, 0, "{\"elicitation\":{\"form\":{}}}", NULL, 0,
     0, NULL},

    /* ---- conformance: http-header-validation ---- */
    {"headers: lowercase header name", REQ("tools/list", META), H_PV "\nmcp-method: tools/list",
     MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"headers: uppercase header name", REQ("tools/list", META), H_PV "\nMCP-METHOD: tools/list",
     MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"headers: method values are case-sensitive", REQ("tools/list", META), H("TOOLS/LIST"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Method", "\"TOOLS/LIST\"", "\"tools/list\"")},
    {"headers: Mcp-Name with surrounding whitespace", ECHO_CALL("{}"), H_CALL("  echo  "), MODERN,
     0, NULL, NULL, 0, 0, NULL},
    {"headers: Mcp-Name values are case-sensitive", ECHO_CALL("{}"), H_CALL("Echo"), MODERN, 0,
     NULL, NULL, MCP_HEADER_MISMATCH, 400, MISMATCH("Mcp-Name", "\"Echo\"", "\"echo\"")},

    /* ---- conformance: http-custom-header-server-validation ---- */
    {"custom: valid Base64", ECHO_CALL("{\"region\":\"Hello\"}"),
     H_CALL("echo") "\nMcp-Param-Region: =?base64?SGVsbG8=?=", MODERN, 0, NULL, SCHEMA, 0, 0,
     NULL},
    {"custom: Base64 without padding", ECHO_CALL("{\"region\":\"Hello\"}"),
     H_CALL("echo") "\nMcp-Param-Region: =?base64?SGVsbG8?=", MODERN, 0, NULL, SCHEMA,
     MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Region", "\"=?base64?SGVsbG8?=\"", "\"Hello\"")},
    {"custom: Base64 with foreign characters", ECHO_CALL("{\"region\":\"Hello\"}"),
     H_CALL("echo") "\nMcp-Param-Region: =?base64?SGVs!!!bG8=?=", MODERN, 0, NULL, SCHEMA,
     MCP_HEADER_MISMATCH, 400, NULL},
    {"custom: no prefix is a literal", ECHO_CALL("{\"region\":\"SGVsbG8=\"}"),
     H_CALL("echo") "\nMcp-Param-Region: SGVsbG8=", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"custom: no suffix is a literal", ECHO_CALL("{\"region\":\"=?base64?SGVsbG8=\"}"),
     H_CALL("echo") "\nMcp-Param-Region: =?base64?SGVsbG8=", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"custom: header omitted, value in the body", ECHO_CALL("{\"region\":\"test-value\"}"),
     H_CALL("echo"), MODERN, 0, NULL, SCHEMA, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Region", "null", "\"test-value\"")},

    /* ---- rung 1 rules ---- */
    {"r1: Mcp-Method given twice", REQ("tools/list", META), H("tools/list") "\n" H_M("tools/list"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: MCP-Protocol-Version given twice", REQ("tools/list", META), H("tools/list") "\n" H_PV,
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: Mcp-Name given twice", ECHO_CALL("{}"), H_CALL("echo") "\nmcp-name: echo", MODERN, 0,
     NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: version header compared exactly", REQ("tools/list", META),
     "MCP-Protocol-Version: 2026-07-28x\n" H_M("tools/list"), MODERN, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: empty version header", REQ("tools/list", META),
     "MCP-Protocol-Version: \n" H_M("tools/list"), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH,
     400, NULL},
    {"r1: method header compared exactly", REQ("tools/list", META), H("tools/lis"), MODERN, 0,
     NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: resources/read names its uri",
     REQ("resources/read", "\"uri\":\"file:///a\"," META),
     H("resources/read") "\nMcp-Name: file:///a", MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: resources/read is not matched on name",
     REQ("resources/read", "\"uri\":\"file:///a\",\"name\":\"a\"," META),
     H("resources/read") "\nMcp-Name: a", MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Name", "\"a\"", "\"file:///a\"")},
    {"r1: resources/read needs Mcp-Name", REQ("resources/read", "\"uri\":\"file:///a\"," META),
     H("resources/read"), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Name", "null", "\"file:///a\"")},
    {"r1: non-ASCII uri in the sentinel form",
     REQ("resources/read", "\"uri\":\"file:///\\u00fc\"," META),
     H("resources/read") "\nMcp-Name: =?base64?ZmlsZTovLy/DvA==?=", MODERN, 0, NULL, NULL, 0, 0,
     NULL},
    {"r1: raw non-ASCII Mcp-Name is rejected",
     REQ("resources/read", "\"uri\":\"file:///\\u00fc\"," META),
     H("resources/read") "\nMcp-Name: file:///\xc3\xbc", MODERN, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: prompts/get names its name", REQ("prompts/get", "\"name\":\"greet\"," META),
     H("prompts/get") "\nMcp-Name: greet", MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: prompts/get needs Mcp-Name", REQ("prompts/get", "\"name\":\"greet\"," META),
     H("prompts/get"), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: Mcp-Name against a body without a name", REQ("tools/call", META), H_CALL("echo"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, MISMATCH("Mcp-Name", "\"echo\"", "null")},
    {"r1: Mcp-Name is ignored on other methods", REQ("tools/list", META),
     H("tools/list") "\nMcp-Name: whatever", MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: unrelated headers are ignored", REQ("tools/list", META),
     H("tools/list") "\nMcp-Session-Id: abc\nAccept: */*", MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: notification without MCP headers",
     NOTE("notifications/cancelled", "\"requestId\":1," META),
     "Content-Type: application/json", MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: notification Mcp-Method must still match",
     NOTE("notifications/cancelled", "\"requestId\":1," META), H("notifications/progress"),
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: notification version header must still match",
     NOTE("notifications/cancelled", "\"requestId\":1," META), "MCP-Protocol-Version: 2025-11-25",
     MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: notifications need no Mcp-Name", NOTE("tools/call", "\"name\":\"echo\"," META),
     H("tools/call"), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r1: a notification's Mcp-Name must still match",
     NOTE("tools/call", "\"name\":\"echo\"," META),
     H_CALL("other"), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"r1: off HTTP no header is needed", ECHO_CALL("{}"), NULL, MODERN, 0, NULL, NULL, 0, 0, NULL},

    /* ---- rung 2 rules ---- */
    {"r2: protocolVersion null", REQ("tools/list", META_RAW("\"" PV "\":null,\"" CC "\":{}")),
     H("tools/list"), MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(PV, "not a string")},
    {"r2: clientCapabilities not an object",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":[]")), H("tools/list"),
     MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(CC, "not an object")},
    {"r2: clientCapabilities null",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":null")), NULL, MODERN, 0,
     NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(CC, "not an object")},
    {"r2: clientInfo not an object",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{},\"" CI "\":\"curl\"")),
     H("tools/list"), MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400,
     ENVELOPE(CI, "not an object")},
    {"r2: a known logLevel",
     REQ("tools/list",
         META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{},\"" LL "\":\"emergency\"")),
     H("tools/list"), MODERN, 0, NULL, NULL, 0, 0, NULL},
    {"r2: an unknown logLevel",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{},\"" LL "\":\"warn\"")),
     H("tools/list"), MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400,
     ENVELOPE(LL, "not a logging level")},
    {"r2: a non-string logLevel",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{},\"" LL "\":3")), NULL,
     MODERN, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE(LL, "not a logging level")},
    {"r2: notifications skip the envelope check",
     NOTE("notifications/cancelled", "\"requestId\":1," META_RAW("\"" PV "\":\"2026-07-28\"")),
     H("notifications/cancelled"), MODERN, UNKNOWN_METHOD, "{\"roots\":{}}", NULL, 0, 0, NULL},

    /* ---- rungs 3 to 5 off HTTP ---- */
    {"r3: unsupported version on stdio", REQ("tools/list", META_AT("2026-07-29")), NULL, MODERN, 0,
     NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION, 400,
     "{\"supported\":[\"2026-07-28\"],\"requested\":\"2026-07-29\"}"},
    {"r3: version with an embedded NUL", REQ("tools/list", META_AT("2026-07-28\\u0000")), NULL,
     MODERN, 0, NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION, 400, NULL},
    {"r4: unknown method on stdio", REQ("tools/list", META), NULL, MODERN, UNKNOWN_METHOD, NULL,
     NULL, MCP_METHOD_NOT_FOUND, 404, NULL},
    {"r5: declared capability",
     REQ("tools/call", "\"name\":\"echo\"," META_CAPS("{\"sampling\":{\"tools\":{}}}")),
     NULL, MODERN, 0, "{\"sampling\":{\"tools\":{}}}", NULL, 0, 0, NULL},
    {"r5: only the undeclared part is reported",
     REQ("tools/call", "\"name\":\"echo\"," META_CAPS("{\"roots\":{},\"sampling\":{}}")), NULL,
     MODERN, 0, "{\"roots\":{},\"sampling\":{\"tools\":{}}}", NULL, MCP_MISSING_CLIENT_CAPABILITY,
     400, "{\"requiredCapabilities\":{\"sampling\":{\"tools\":{}}}}"},
    {"r5: elicitation {} does not cover url",
     REQ("tools/call", "\"name\":\"echo\"," META_CAPS("{\"elicitation\":{}}")), NULL, MODERN, 0,
     "{\"elicitation\":{\"url\":{}}}", NULL, MCP_MISSING_CLIENT_CAPABILITY, 400,
     "{\"requiredCapabilities\":{\"elicitation\":{\"url\":{}}}}"},

    /* ---- rung 6 rules ---- */
    {"r6: all annotated values mirrored",
     ECHO_CALL("{\"region\":\"us\",\"count\":42,\"dry\":true,\"outer\":{\"inner\":\"v\"}}"),
     H_CALL("echo") "\nMcp-Param-Region: us\nMcp-Param-Count: 42\nMcp-Param-Dry: true\n"
                    "Mcp-Param-Inner: v",
     MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: header names are case-insensitive", ECHO_CALL("{\"region\":\"us\"}"),
     H_CALL("echo") "\nmcp-param-region:  us ", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: integers compare numerically", ECHO_CALL("{\"count\":42}"),
     H_CALL("echo") "\nMcp-Param-Count: 42.0", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: integer mismatch", ECHO_CALL("{\"count\":42}"), H_CALL("echo") "\nMcp-Param-Count: 43",
     MODERN, 0, NULL, SCHEMA, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Count", "\"43\"", "42")},
    {"r6: booleans are exact", ECHO_CALL("{\"dry\":true}"), H_CALL("echo") "\nMcp-Param-Dry: True",
     MODERN, 0, NULL, SCHEMA, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Dry", "\"True\"", "true")},
    {"r6: nested value missing its header", ECHO_CALL("{\"outer\":{\"inner\":\"v\"}}"),
     H_CALL("echo"), MODERN, 0, NULL, SCHEMA, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Inner", "null", "\"v\"")},
    {"r6: string mismatch", ECHO_CALL("{\"region\":\"us\"}"),
     H_CALL("echo") "\nMcp-Param-Region: eu",
     MODERN, 0, NULL, SCHEMA, MCP_HEADER_MISMATCH, 400,
     MISMATCH("Mcp-Param-Region", "\"eu\"", "\"us\"")},
    {"r6: header given twice", ECHO_CALL("{\"region\":\"us\"}"),
     H_CALL("echo") "\nMcp-Param-Region: us\nMcp-Param-Region: us", MODERN, 0, NULL, SCHEMA,
     MCP_HEADER_MISMATCH, 400, NULL},
    {"r6: absent and null arguments expect no header",
     ECHO_CALL("{\"region\":null,\"text\":\"t\"}"),
     H_CALL("echo"), MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: no arguments at all", REQ("tools/call", "\"name\":\"echo\"," META), H_CALL("echo"),
     MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: a header for an absent argument is ignored", ECHO_CALL("{}"),
     H_CALL("echo") "\nMcp-Param-Region: anything", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: ... unless it is malformed", ECHO_CALL("{}"),
     H_CALL("echo") "\nMcp-Param-Region: =?base64?%%?=", MODERN, 0, NULL, SCHEMA,
     MCP_HEADER_MISMATCH, 400, MISMATCH("Mcp-Param-Region", "\"=?base64?%%?=\"", "null")},
    {"r6: unannotated arguments need no header", ECHO_CALL("{\"text\":\"t\"}"), H_CALL("echo"),
     MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: unknown Mcp-Param headers are ignored", ECHO_CALL("{}"),
     H_CALL("echo") "\nMcp-Param-Other: =?base64?%%?=", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: not checked off HTTP", ECHO_CALL("{\"region\":\"us\"}"), NULL, MODERN, 0, NULL, SCHEMA,
     0, 0, NULL},
    {"r6: only tools/call", REQ("prompts/get", "\"name\":\"p\",\"arguments\":{\"region\":\"us\"},"
                                               META),
     H("prompts/get") "\nMcp-Name: p", MODERN, 0, NULL, SCHEMA, 0, 0, NULL},
    {"r6: invalid annotations are the server's fault", ECHO_CALL("{\"n\":1}"), H_CALL("echo"),
     MODERN, 0, NULL, BAD_SCHEMA, MCP_INTERNAL_ERROR, 500, NULL},

    /* ---- the order of the rungs ---- */
    {"order 1<2: missing version header beats a bad envelope",
     REQ("tools/list", META_RAW("\"" PV "\":\"2026-07-28\"")), H_M("tools/list"), MODERN, 0, NULL,
     NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"order 1<2: Mcp-Name beats a bad logLevel",
     REQ("tools/call", "\"name\":\"echo\","
                       META_RAW("\"" PV "\":\"2026-07-28\",\"" CC "\":{},\"" LL "\":\"x\"")),
     H("tools/call"), MODERN, 0, NULL, NULL, MCP_HEADER_MISMATCH, 400, NULL},
    {"order 2<3: bad envelope beats an unsupported version",
     REQ("tools/list", META_RAW("\"" PV "\":\"2099-01-01\"")),
     "MCP-Protocol-Version: 2099-01-01\n" H_M("tools/list"), MODERN, 0, NULL, NULL,
     MCP_INVALID_PARAMS, 400, NULL},
    {"order 3<4: unsupported version beats an unknown method", REQ("ping", META_AT("2099-01-01")),
     "MCP-Protocol-Version: 2099-01-01\n" H_M("ping"), MODERN, UNKNOWN_METHOD, NULL, NULL,
     MCP_UNSUPPORTED_PROTOCOL_VERSION, 400, NULL},
    {"order 4<5: unknown method beats a missing capability", REQ("tools/list", META),
     H("tools/list"), MODERN, UNKNOWN_METHOD, "{\"roots\":{}}", NULL, MCP_METHOD_NOT_FOUND, 404,
     NULL},
    {"order 5<6: missing capability beats Mcp-Param", ECHO_CALL("{\"region\":\"us\"}"),
     H_CALL("echo"), MODERN, 0, "{\"roots\":{}}", SCHEMA, MCP_MISSING_CLIENT_CAPABILITY, 400,
     NULL},
    {"order 4<6: unknown method beats Mcp-Param", ECHO_CALL("{\"region\":\"us\"}"),
     H_CALL("echo"), MODERN, UNKNOWN_METHOD, NULL, SCHEMA, MCP_METHOD_NOT_FOUND, 404, NULL},

    /* ---- legacy-classified traffic ---- */
    {"legacy: stdio", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", NULL, LEGACY, 0,
     NULL, NULL, 0, 0, NULL},
    {"legacy: no version header", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
     H_M("tools/list"), LEGACY, 0, NULL, NULL, 0, 0, NULL},
    /* 2025-06-18 transport: an invalid or unsupported header is 400. */
    {"legacy: header that is no version",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "MCP-Protocol-Version: latest",
     LEGACY, 0, NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION, 400, NULL},
    {"legacy: a version this server does not speak",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
     "MCP-Protocol-Version: 2024-11-05", LEGACY, 0, NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION,
     400, NULL},
    {"legacy: a date that is no date", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
     "MCP-Protocol-Version: 2025-13-40", LEGACY, 0, NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION,
     400, NULL},
    {"legacy: an unsupported version on a notification",
     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
     "MCP-Protocol-Version: 1999-01-01", LEGACY, 0, NULL, NULL, MCP_UNSUPPORTED_PROTOCOL_VERSION,
     400, NULL},
    {"legacy: initialize names its version in the body",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
     "MCP-Protocol-Version: latest", LEGACY, 0, NULL, NULL, 0, 0, NULL},
    {"legacy: a version this server speaks, trimmed",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
     "MCP-Protocol-Version:  2025-06-18 ", LEGACY, 0, NULL, NULL, 0, 0, NULL},
    {"legacy: an empty header counts as none",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "MCP-Protocol-Version: ",
     LEGACY, 0, NULL, NULL, 0, 0, NULL},
    {"legacy: a later modern date in the header",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "MCP-Protocol-Version: 2099-01-01",
     LEGACY, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE("_meta", "missing")},
    {"legacy: modern header value is trimmed",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}",
     "MCP-Protocol-Version:   2026-07-28 ", LEGACY, 0, NULL, NULL, MCP_INVALID_PARAMS, 400,
     ENVELOPE(PV, "missing")},
    {"legacy: _meta that is not an object",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":7}}", H_PV,
     LEGACY, 0, NULL, NULL, MCP_INVALID_PARAMS, 400, ENVELOPE("_meta", "not an object")},
    {"legacy: notifications/initialized with a modern header",
     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", H_PV, LEGACY, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, MISMATCH("MCP-Protocol-Version", "\"2026-07-28\"", "null")},
    {"legacy: a POSTed response with a modern header",
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", H_PV, LEGACY, 0, NULL, NULL,
     MCP_HEADER_MISMATCH, 400, NULL},
};

static const char *const supported[] = {"2026-07-28"};

/* With `precollected`, the tool's x-mcp-header annotations are handed to
 * the ladder collected (as the server does at registration) instead of
 * the schema, whenever they are valid: the verdict must be the same. */
static void run_ladder_row(const struct ladder_row *row, bool with_outputs, bool precollected)
{
    mcp_message_t msg;
    struct test_headers th;
    load_message(row->message, &msg);
    const mcp_headers_t *headers = load_headers(row->headers, &th);
    json_t *required = row->required ? parse_json(row->required) : NULL;
    json_t *schema = row->schema ? parse_json(row->schema) : NULL;

    mcp_era_t era = mcp_request_era(&msg);
    if (era != row->era)
        fail_msg("%s: classified %s", row->name, era == MCP_ERA_MODERN ? "modern" : "legacy");

    mcp_param_headers_t collected = {0};
    bool use_collected = precollected && schema &&
                         mcp_xmcp_headers_collect(schema, &collected, NULL) == MCP_OK;

    mcp_error_t err = {0};
    int status = -1;
    int rc;
    if (era == MCP_ERA_MODERN) {
        mcp_request_check_t check = {
            .msg = &msg,
            .headers = headers,
            .versions = supported,
            .n_versions = 1,
            .method_known = !(row->flags & UNKNOWN_METHOD),
            .required_capabilities = required,
            .input_schema = use_collected ? NULL : schema,
            .param_headers = use_collected ? &collected : NULL,
        };
        rc = with_outputs ? mcp_check_modern_request(&check, &status, &err)
                          : mcp_check_modern_request(&check, NULL, NULL);
    } else {
        rc = with_outputs ? mcp_check_legacy_request(&msg, headers, &status, &err)
                          : mcp_check_legacy_request(&msg, headers, NULL, NULL);
    }

    if (row->code == 0) {
        if (rc != MCP_OK)
            fail_msg("%s: rejected with %d: %s", row->name, err.code, err.message);
        if (with_outputs && (status != -1 || err.code != 0))
            fail_msg("%s: accepted but outputs were touched", row->name);
    } else if (!with_outputs) {
        if (rc != MCP_EINVAL)
            fail_msg("%s: rc %d without outputs", row->name, rc);
    } else {
        if (rc != MCP_EINVAL || err.code != row->code)
            fail_msg("%s: rc %d code %d (%s), want code %d", row->name, rc, err.code, err.message,
                     row->code);
        if (status != row->status)
            fail_msg("%s: HTTP %d, want %d", row->name, status, row->status);
        if (row->data)
            expect_data(err.data, row->data, row->name);
        else if (row->code == MCP_METHOD_NOT_FOUND && err.data)
            fail_msg("%s: -32601 carries no data", row->name);
        /* Every rejection must be sendable as a JSON-RPC error object. */
        json_t *wire = mcp_error_to_json(&err);
        if (!wire || !err.message[0])
            fail_msg("%s: error is not renderable", row->name);
        json_decref(wire);
    }

    mcp_error_clear(&err);
    mcp_param_headers_clear(&collected);
    json_decref(required);
    json_decref(schema);
    free_headers(&th);
    mcp_message_clear(&msg);
}

static void test_ladder_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ladder_rows / sizeof ladder_rows[0]; i++) {
        run_ladder_row(&ladder_rows[i], true, false);
        run_ladder_row(&ladder_rows[i], false, false);
        run_ladder_row(&ladder_rows[i], true, true);
    }
}

/* ------------------------------------------------------------------ */
/* Edges of the API                                                    */
/* ------------------------------------------------------------------ */

static void test_unsupported_version_lists_every_version(void **state)
{
    static const char *const versions[] = {"2026-07-28", "2027-01-01"};
    mcp_message_t msg;
    mcp_error_t err = {0};
    int status = 0;
    (void)state;
    load_message(REQ("tools/list", META_AT("2026-07-29")), &msg);
    mcp_request_check_t check = {.msg = &msg, .versions = versions, .n_versions = 2,
                                 .method_known = true};
    assert_int_equal(mcp_check_modern_request(&check, &status, &err), MCP_EINVAL);
    expect_data(err.data, "{\"supported\":[\"2026-07-28\",\"2027-01-01\"],"
                          "\"requested\":\"2026-07-29\"}", "two versions");
    /* The second entry is accepted too. */
    mcp_message_clear(&msg);
    load_message(REQ("tools/list", META_AT("2027-01-01")), &msg);
    assert_int_equal(mcp_check_modern_request(&check, &status, &err), MCP_OK);
    /* A server that accepts nothing rejects everything. */
    check.n_versions = 0;
    assert_int_equal(mcp_check_modern_request(&check, &status, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_UNSUPPORTED_PROTOCOL_VERSION);
    expect_data(err.data, "{\"supported\":[],\"requested\":\"2027-01-01\"}", "no versions");
    mcp_error_clear(&err);
    mcp_message_clear(&msg);
}

static void test_not_a_request(void **state)
{
    mcp_message_t msg;
    mcp_error_t err = {0};
    int status = 0;
    (void)state;
    load_message("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", &msg);
    mcp_request_check_t check = {.msg = &msg, .versions = supported, .n_versions = 1,
                                 .method_known = true};
    assert_int_equal(mcp_check_modern_request(&check, &status, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_INVALID_REQUEST);
    assert_int_equal(status, 400);
    check.msg = NULL;
    assert_int_equal(mcp_check_modern_request(&check, &status, &err), MCP_EINVAL);
    assert_int_equal(mcp_check_modern_request(NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_check_legacy_request(NULL, NULL, NULL, NULL), MCP_OK);
    mcp_error_clear(&err);
    mcp_message_clear(&msg);
}

/* wire-ts2.md 3.16 and 3.17: refused by the parser before the ladder, with
 * the status the result module gives those codes. */
static void test_parse_failures(void **state)
{
    static const struct {
        const char *body;
        int code;
    } rows[] = {
        {"{\"jsonrpc\":", MCP_PARSE_ERROR},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}]",
         MCP_INVALID_REQUEST},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_message_t msg;
        mcp_error_t err = {0};
        memset(&msg, 0, sizeof msg);
        assert_int_not_equal(mcp_jsonrpc_parse(rows[i].body, strlen(rows[i].body), NULL, &msg,
                                               &err), MCP_OK);
        assert_int_equal(err.code, rows[i].code);
        assert_int_equal(mcp_http_status_for_code(err.code, true), 400);
        mcp_error_clear(&err);
        mcp_message_clear(&msg);
    }
}

/* mcp_envelope_read finds what lookups would, whatever the members' types
 * and order, among members it does not know. */
static void test_envelope_read(void **state)
{
    (void)state;
    json_t *params = json_loads(
        "{\"name\":\"t\",\"_meta\":{\"x\":1,"
        "\"io.modelcontextprotocol/logLevel\":\"info\",\"progressToken\":7,"
        "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\"},"
        "\"io.modelcontextprotocol/clientCapabilities\":{},"
        "\"io.modelcontextprotocol/protocolVersionX\":\"no\","
        "\"io.modelcontextprotocol/protocolVersion\":3}}",
        0, NULL);
    assert_non_null(params);
    json_t *meta = json_object_get(params, "_meta");
    mcp_envelope_t env;
    mcp_envelope_read(params, &env);
    assert_ptr_equal(env.meta, meta);
    assert_ptr_equal(env.protocol_version, json_object_get(meta, MCP_META_PROTOCOL_VERSION));
    assert_ptr_equal(env.client_capabilities,
                     json_object_get(meta, MCP_META_CLIENT_CAPABILITIES));
    assert_ptr_equal(env.client_info, json_object_get(meta, MCP_META_CLIENT_INFO));
    assert_ptr_equal(env.log_level, json_object_get(meta, MCP_META_LOG_LEVEL));
    assert_ptr_equal(env.progress_token, json_object_get(meta, "progressToken"));
    assert_true(json_is_integer(env.protocol_version));

    /* A _meta that is not an object has no members; no params, no _meta. */
    json_object_set_new(params, "_meta", json_string("m"));
    mcp_envelope_read(params, &env);
    assert_true(json_is_string(env.meta));
    assert_null(env.protocol_version);
    assert_null(env.client_capabilities);
    mcp_envelope_read(NULL, &env);
    assert_null(env.meta);
    assert_null(env.progress_token);
    json_decref(params);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_level_index),
        cmocka_unit_test(test_method_name_param),
        cmocka_unit_test(test_request_era),
        cmocka_unit_test(test_envelope_read),
        cmocka_unit_test(test_ladder_table),
        cmocka_unit_test(test_unsupported_version_lists_every_version),
        cmocka_unit_test(test_not_a_request),
        cmocka_unit_test(test_parse_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
