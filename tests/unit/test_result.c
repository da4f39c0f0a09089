/* Modern result shaping, error shaping and HTTP status of responses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/result.h"

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return j;
}

static void expect_json(const json_t *actual, const char *expected_text, const char *label)
{
    json_t *expected = parse(expected_text);
    if (!json_equal((json_t *)actual, expected)) {
        char *got = json_dumps(actual, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *want = json_dumps(expected, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        print_error("%s:\n  got  %s\n  want %s\n", label, got, want);
        free(got);
        free(want);
        json_decref(expected);
        fail();
    }
    json_decref(expected);
}

/* ------------------------------------------------------------------ */
/* Which methods are cacheable, which may answer input_required        */
/* ------------------------------------------------------------------ */

static void test_method_tables(void **state)
{
    static const struct {
        const char *method;
        bool cacheable;
        bool may_require_input;
    } rows[] = {
        {"server/discover", true, false},
        {"tools/list", true, false},
        {"prompts/list", true, false},
        {"resources/list", true, false},
        {"resources/templates/list", true, false},
        {"resources/read", true, true},
        {"skills/list", true, false},
        {"skills/get", true, false},
        {"resources/directory/read", true, false},
        {"tools/call", false, true},
        {"prompts/get", false, true},
        {"completion/complete", false, false},
        {"subscriptions/listen", false, false},
        {"Tools/List", false, false},
        {"tools/list ", false, false},
        {"", false, false},
        {NULL, false, false},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *m = rows[i].method ? rows[i].method : "(null)";
        if (mcp_method_is_cacheable(rows[i].method) != rows[i].cacheable)
            fail_msg("mcp_method_is_cacheable(%s)", m);
        if (mcp_method_may_require_input(rows[i].method) != rows[i].may_require_input)
            fail_msg("mcp_method_may_require_input(%s)", m);
    }
}

/* ------------------------------------------------------------------ */
/* mcp_shape_modern_result                                             */
/* ------------------------------------------------------------------ */

#define SI "{\"name\":\"srv\",\"version\":\"1.0\"}"
#define SI_META "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" SI "}"
#define DEFAULT_HINTS "\"ttlMs\":60000,\"cacheScope\":\"private\""

enum shape_kind {
    SHAPE_DEFAULT,   /* serverInfo SI, default ttl and scope */
    SHAPE_NULL,      /* no shape at all */
    SHAPE_CUSTOM,    /* serverInfo SI, ttl 5000, scope public */
    SHAPE_NO_INFO,   /* serverInfo omitted */
    SHAPE_BAD_SCOPE, /* default scope "shared" */
    SHAPE_ZERO_TTL,  /* serverInfo SI, ttl 0 (always stale), default scope */
};

struct shape_row {
    const char *rule;
    const char *method;
    enum shape_kind shape;
    const char *input;
    const char *expected; /* the shaped result, or NULL when shaping fails */
};

static const struct shape_row shape_rows[] = {
    /* resultType */
    {"resultType defaults to complete", "tools/call", SHAPE_DEFAULT,
     "{\"content\":[]}", "{\"content\":[],\"resultType\":\"complete\"," SI_META "}"},
    {"explicit complete is kept", "completion/complete", SHAPE_DEFAULT,
     "{\"resultType\":\"complete\",\"completion\":{\"values\":[]}}",
     "{\"resultType\":\"complete\",\"completion\":{\"values\":[]}," SI_META "}"},
    {"empty result of an unknown method", NULL, SHAPE_DEFAULT, "{}",
     "{\"resultType\":\"complete\"," SI_META "}"},

    /* _meta */
    {"request-scoped _meta keys are stripped, others kept", "tools/call", SHAPE_DEFAULT,
     "{\"content\":[],\"_meta\":{"
     "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
     "\"io.modelcontextprotocol/clientCapabilities\":{},"
     "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\",\"version\":\"1\"},"
     "\"io.modelcontextprotocol/logLevel\":\"info\","
     "\"com.example/trace\":7,\"progressToken\":\"p\"}}",
     "{\"content\":[],\"resultType\":\"complete\",\"_meta\":{"
     "\"io.modelcontextprotocol/serverInfo\":" SI ",\"com.example/trace\":7,"
     "\"progressToken\":\"p\"}}"},
    {"subscriptionId is not request-scoped", "subscriptions/listen", SHAPE_DEFAULT,
     "{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1}}",
     "{\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1,"
     "\"io.modelcontextprotocol/serverInfo\":" SI "}}"},
    {"configured serverInfo replaces a handler's", "tools/call", SHAPE_DEFAULT,
     "{\"content\":[],\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
     "{\"name\":\"x\",\"version\":\"0\"}}}",
     "{\"content\":[],\"resultType\":\"complete\"," SI_META "}"},
    {"no serverInfo configured: no _meta added", "tools/call", SHAPE_NO_INFO,
     "{\"content\":[]}", "{\"content\":[],\"resultType\":\"complete\"}"},
    {"no shape: no _meta, default hints", "tools/list", SHAPE_NULL,
     "{\"tools\":[]}", "{\"tools\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "}"},
    {"a _meta emptied by stripping is dropped", "tools/call", SHAPE_NO_INFO,
     "{\"content\":[],\"_meta\":{\"io.modelcontextprotocol/logLevel\":\"debug\"}}",
     "{\"content\":[],\"resultType\":\"complete\"}"},
    {"handler _meta kept without serverInfo", "tools/call", SHAPE_NO_INFO,
     "{\"content\":[],\"_meta\":{\"k\":1}}",
     "{\"content\":[],\"resultType\":\"complete\",\"_meta\":{\"k\":1}}"},

    /* cache hints on the six cacheable methods */
    {"server/discover gets hints", "server/discover", SHAPE_DEFAULT,
     "{\"supportedVersions\":[]}",
     "{\"supportedVersions\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"tools/list gets hints", "tools/list", SHAPE_DEFAULT, "{\"tools\":[]}",
     "{\"tools\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"prompts/list gets hints", "prompts/list", SHAPE_DEFAULT, "{\"prompts\":[]}",
     "{\"prompts\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"resources/list gets hints", "resources/list", SHAPE_DEFAULT, "{\"resources\":[]}",
     "{\"resources\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"resources/templates/list gets hints", "resources/templates/list", SHAPE_DEFAULT,
     "{\"resourceTemplates\":[]}",
     "{\"resourceTemplates\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"resources/read gets hints", "resources/read", SHAPE_DEFAULT, "{\"contents\":[]}",
     "{\"contents\":[],\"resultType\":\"complete\"," DEFAULT_HINTS "," SI_META "}"},
    {"configured defaults are used", "tools/list", SHAPE_CUSTOM, "{\"tools\":[]}",
     "{\"tools\":[],\"resultType\":\"complete\",\"ttlMs\":5000,\"cacheScope\":\"public\","
     SI_META "}"},
    {"a configured default ttl of 0 is used", "prompts/list", SHAPE_ZERO_TTL, "{\"prompts\":[]}",
     "{\"prompts\":[],\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\","
     SI_META "}"},
    {"handler-set ttlMs 0 and cacheScope public are kept", "tools/list", SHAPE_DEFAULT,
     "{\"tools\":[],\"ttlMs\":0,\"cacheScope\":\"public\"}",
     "{\"tools\":[],\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"public\","
     SI_META "}"},
    {"handler-set ttlMs kept, scope defaulted", "resources/read", SHAPE_CUSTOM,
     "{\"contents\":[],\"ttlMs\":12}",
     "{\"contents\":[],\"resultType\":\"complete\",\"ttlMs\":12,\"cacheScope\":\"public\","
     SI_META "}"},
    {"handler-set private scope kept over a public default", "tools/list", SHAPE_CUSTOM,
     "{\"tools\":[],\"cacheScope\":\"private\"}",
     "{\"tools\":[],\"resultType\":\"complete\",\"ttlMs\":5000,\"cacheScope\":\"private\","
     SI_META "}"},
    {"tools/call is not cacheable", "tools/call", SHAPE_CUSTOM, "{\"content\":[]}",
     "{\"content\":[],\"resultType\":\"complete\"," SI_META "}"},
    {"prompts/get is not cacheable", "prompts/get", SHAPE_DEFAULT, "{\"messages\":[]}",
     "{\"messages\":[],\"resultType\":\"complete\"," SI_META "}"},

    /* input_required */
    {"input_required with inputRequests", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"inputRequests\":{\"a\":{\"method\":\"roots/list\"}}}",
     "{\"resultType\":\"input_required\",\"inputRequests\":{\"a\":{\"method\":\"roots/list\"}},"
     SI_META "}"},
    {"input_required with requestState only", "prompts/get", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}",
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"," SI_META "}"},
    {"input_required on resources/read gets no hints", "resources/read", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}",
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"," SI_META "}"},
    {"hints a handler put on input_required are removed", "resources/read", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\",\"ttlMs\":5,"
     "\"cacheScope\":\"public\"}",
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"," SI_META "}"},

    /* task and extension kinds */
    {"task results get no hints", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"task\",\"taskId\":\"t\"}",
     "{\"resultType\":\"task\",\"taskId\":\"t\"," SI_META "}"},
    /* A CreateTaskResult's ttlMs is the task's lifetime (a Task field of
     * the Tasks extension), not a cache hint: it stays. */
    {"task keeps its ttlMs, loses cacheScope", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"task\",\"taskId\":\"t\",\"ttlMs\":60000,\"cacheScope\":\"private\"}",
     "{\"resultType\":\"task\",\"taskId\":\"t\",\"ttlMs\":60000," SI_META "}"},
    {"task with ttlMs null keeps it", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"task\",\"taskId\":\"t\",\"ttlMs\":null}",
     "{\"resultType\":\"task\",\"taskId\":\"t\",\"ttlMs\":null," SI_META "}"},
    {"other kinds lose both hints", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"x-later\",\"ttlMs\":1,\"cacheScope\":\"private\"}",
     "{\"resultType\":\"x-later\"," SI_META "}"},

    /* rejected results (-32603) */
    {"result is not an object", "tools/call", SHAPE_DEFAULT, "[]", NULL},
    {"resultType is not a string", "tools/call", SHAPE_DEFAULT, "{\"resultType\":1}", NULL},
    {"resultType null", "tools/call", SHAPE_DEFAULT, "{\"resultType\":null}", NULL},
    {"_meta is not an object", "tools/call", SHAPE_DEFAULT, "{\"_meta\":[]}", NULL},
    {"input_required on tools/list", "tools/list", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}", NULL},
    {"input_required on server/discover", "server/discover", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}", NULL},
    {"input_required on completion/complete", "completion/complete", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}", NULL},
    {"input_required without a method", NULL, SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":\"s\"}", NULL},
    {"input_required without inputRequests and requestState", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\"}", NULL},
    {"inputRequests is not an object", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"inputRequests\":[]}", NULL},
    {"requestState is not a string", "tools/call", SHAPE_DEFAULT,
     "{\"resultType\":\"input_required\",\"requestState\":{}}", NULL},
    {"negative ttlMs", "tools/list", SHAPE_DEFAULT, "{\"tools\":[],\"ttlMs\":-1}", NULL},
    {"fractional ttlMs", "tools/list", SHAPE_DEFAULT, "{\"tools\":[],\"ttlMs\":1.5}", NULL},
    {"string ttlMs", "tools/list", SHAPE_DEFAULT, "{\"tools\":[],\"ttlMs\":\"60\"}", NULL},
    {"unknown cacheScope", "tools/list", SHAPE_DEFAULT,
     "{\"tools\":[],\"cacheScope\":\"shared\"}", NULL},
    {"cacheScope is case-sensitive", "tools/list", SHAPE_DEFAULT,
     "{\"tools\":[],\"cacheScope\":\"Public\"}", NULL},
    {"non-string cacheScope", "tools/list", SHAPE_DEFAULT,
     "{\"tools\":[],\"cacheScope\":true}", NULL},
    {"configured default scope is invalid", "tools/list", SHAPE_BAD_SCOPE,
     "{\"tools\":[]}", NULL},
};

static void test_shape_result_table(void **state)
{
    (void)state;
    json_t *info = parse(SI);
    for (size_t i = 0; i < sizeof shape_rows / sizeof shape_rows[0]; i++) {
        const struct shape_row *row = &shape_rows[i];
        mcp_result_shape_t shape = {info, -1, NULL};
        const mcp_result_shape_t *sp = &shape;
        switch (row->shape) {
        case SHAPE_DEFAULT: break;
        case SHAPE_NULL: sp = NULL; break;
        case SHAPE_CUSTOM: shape.ttl_ms = 5000; shape.cache_scope = MCP_CACHE_PUBLIC; break;
        case SHAPE_NO_INFO: shape.server_info = NULL; break;
        case SHAPE_BAD_SCOPE: shape.cache_scope = "shared"; break;
        case SHAPE_ZERO_TTL: shape.ttl_ms = 0; break;
        }

        json_t *result = parse(row->input);
        mcp_error_t err = {0};
        int rc = mcp_shape_modern_result(row->method, result, sp, &err);
        if (row->expected) {
            if (rc != MCP_OK)
                fail_msg("%s: rc %d (%s)", row->rule, rc, err.message);
            expect_json(result, row->expected, row->rule);
        } else {
            if (rc != MCP_EINVAL || err.code != MCP_INTERNAL_ERROR || !err.message[0])
                fail_msg("%s: expected a -32603 rejection, got rc %d code %d", row->rule, rc,
                         err.code);
            /* Validation happens before any edit: the result is untouched. */
            expect_json(result, row->input, row->rule);
        }
        mcp_error_clear(&err);
        json_decref(result);
    }
    /* The configured serverInfo is referenced, not copied (result.h): the
     * result holds a reference while it lives, and gives it back. */
    json_t *result = parse("{}");
    mcp_result_shape_t shape = {info, -1, NULL};
    assert_int_equal(mcp_shape_modern_result("tools/call", result, &shape, NULL), MCP_OK);
    json_t *shared = json_object_get(json_object_get(result, "_meta"),
                                     "io.modelcontextprotocol/serverInfo");
    assert_ptr_equal(shared, info);
    assert_int_equal(info->refcount, 2);
    json_decref(result);
    assert_int_equal(info->refcount, 1);
    json_decref(info);
}

static void test_shape_result_null_err(void **state)
{
    (void)state;
    /* err is optional: a rejection without it still returns MCP_EINVAL. */
    json_t *result = parse("{\"resultType\":7}");
    assert_int_equal(mcp_shape_modern_result("tools/call", result, NULL, NULL), MCP_EINVAL);
    json_decref(result);
    assert_int_equal(mcp_shape_modern_result("tools/call", NULL, NULL, NULL), MCP_EINVAL);
}

/* ------------------------------------------------------------------ */
/* mcp_shape_modern_error                                              */
/* ------------------------------------------------------------------ */

static void test_shape_error_table(void **state)
{
    static const struct {
        const char *input;
        const char *expected;
    } rows[] = {
        {"{\"code\":-32002,\"message\":\"Resource not found\",\"data\":{\"uri\":\"file:///x\"}}",
         "{\"code\":-32602,\"message\":\"Resource not found\",\"data\":{\"uri\":\"file:///x\"}}"},
        {"{\"code\":-32002,\"message\":\"m\"}", "{\"code\":-32602,\"message\":\"m\"}"},
        {"{\"code\":-32602,\"message\":\"m\"}", "{\"code\":-32602,\"message\":\"m\"}"},
        {"{\"code\":-32601,\"message\":\"m\"}", "{\"code\":-32601,\"message\":\"m\"}"},
        {"{\"code\":-32042,\"message\":\"m\"}", "{\"code\":-32042,\"message\":\"m\"}"},
        {"{\"code\":-32001,\"message\":\"m\"}", "{\"code\":-32001,\"message\":\"m\"}"},
        {"{\"code\":\"-32002\",\"message\":\"m\"}", "{\"code\":\"-32002\",\"message\":\"m\"}"},
        {"{\"code\":-32002.0,\"message\":\"m\"}", "{\"code\":-32002.0,\"message\":\"m\"}"},
        {"[-32002]", "[-32002]"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *e = parse(rows[i].input);
        mcp_shape_modern_error(e);
        expect_json(e, rows[i].expected, rows[i].input);
        json_decref(e);
    }
    mcp_shape_modern_error(NULL);
}

/* ------------------------------------------------------------------ */
/* HTTP status                                                         */
/* ------------------------------------------------------------------ */

static void test_http_status_for_code(void **state)
{
    static const struct {
        int code;
        int before;  /* status raised before dispatch */
        int after;   /* status raised by the method */
    } rows[] = {
        {0, 200, 200},
        {MCP_HEADER_MISMATCH, 400, 400},
        {MCP_MISSING_CLIENT_CAPABILITY, 400, 400},
        {MCP_UNSUPPORTED_PROTOCOL_VERSION, 400, 400},
        {MCP_METHOD_NOT_FOUND, 404, 404},
        {MCP_PARSE_ERROR, 400, 400},
        {MCP_INVALID_REQUEST, 400, 400},
        {MCP_INVALID_PARAMS, 400, 200},
        {MCP_INTERNAL_ERROR, 400, 200},
        {MCP_LEGACY_RESOURCE_NOT_FOUND, 400, 200},
        {-32000, 400, 200},
        {1, 400, 200},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (mcp_http_status_for_code(rows[i].code, true) != rows[i].before)
            fail_msg("code %d before dispatch", rows[i].code);
        if (mcp_http_status_for_code(rows[i].code, false) != rows[i].after)
            fail_msg("code %d after dispatch", rows[i].code);
    }
}

static void test_http_status_for_response(void **state)
{
    static const struct {
        const char *response;
        int before;
        int after;
    } rows[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}", 200, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"input_required\","
         "\"requestState\":\"s\"}}", 200, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"m\"}}", 404, 404},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32020,\"message\":\"m\"}}", 400, 400},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32021,\"message\":\"m\"}}", 400, 400},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"message\":\"m\"}}", 400, 400},
        {"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"m\"}}", 400, 400},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"m\"}}", 400, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":0,\"message\":\"m\"}}", 400, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}", 400, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601.0,\"message\":\"m\"}}",
         400, 200},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":4294934695,\"message\":\"m\"}}",
         400, 200},
    };
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *r = parse(rows[i].response);
        if (mcp_http_status_for_response(r, true) != rows[i].before)
            fail_msg("%s before dispatch", rows[i].response);
        if (mcp_http_status_for_response(r, false) != rows[i].after)
            fail_msg("%s after dispatch", rows[i].response);
        json_decref(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_method_tables),
        cmocka_unit_test(test_shape_result_table),
        cmocka_unit_test(test_shape_result_null_err),
        cmocka_unit_test(test_shape_error_table),
        cmocka_unit_test(test_http_status_for_code),
        cmocka_unit_test(test_http_status_for_response),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
