/* Legacy negotiation and shapes (src/protocol/legacy.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "mcp/legacy.h"
#include "mcp/version.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    assert_non_null(v);
    return v;
}

static void assert_json(json_t *actual, const char *expected)
{
    json_t *want = parse(expected);
    if (!json_equal(actual, want)) {
        char *got = json_dumps(actual, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("got %s, want %s", got, expected);
    }
    json_decref(want);
}

static void test_negotiation(void **state)
{
    static const struct { const char *requested, *answer; } rows[] = {
        {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"},
        {"2025-03-26", "2025-03-26"},
        {"2024-11-05", MCP_PROTOCOL_LATEST_LEGACY}, /* not spoken: newest legacy */
        {"2026-07-28", MCP_PROTOCOL_LATEST_LEGACY}, /* modern: no initialize there */
        {"1999-01-01", MCP_PROTOCOL_LATEST_LEGACY}, {"", MCP_PROTOCOL_LATEST_LEGACY},
        {NULL, MCP_PROTOCOL_LATEST_LEGACY},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_string_equal(mcp_legacy_negotiate_version(rows[i].requested), rows[i].answer);
}

static void test_result_shape(void **state)
{
    json_t *r = parse("{\"resultType\":\"complete\",\"ttlMs\":5,\"cacheScope\":\"private\","
                      "\"tools\":[],\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{},"
                      "\"com.example/x\":1}}");
    mcp_shape_legacy_result("tools/list", r, "2025-11-25");
    assert_json(r, "{\"tools\":[],\"_meta\":{\"com.example/x\":1}}");
    json_decref(r);

    r = parse("{\"resultType\":\"complete\",\"content\":[],\"structuredContent\":[1,2],"
              "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{}}}");
    mcp_shape_legacy_result("tools/call", r, "2025-06-18");
    assert_json(r, "{\"content\":[]}");
    json_decref(r);

    r = parse("{\"content\":[],\"structuredContent\":{\"a\":1}}");
    mcp_shape_legacy_result("tools/call", r, "2025-11-25");
    assert_json(r, "{\"content\":[],\"structuredContent\":{\"a\":1}}");
    json_decref(r);
}

static void test_error_shape(void **state)
{
    json_t *e = parse("{\"code\":-32602,\"message\":\"Resource not found\",\"data\":{\"uri\":\"x://y\"}}");
    mcp_shape_legacy_error("resources/read", e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32002);
    json_decref(e);
    /* Only resources/read, and only with data.uri. */
    e = parse("{\"code\":-32602,\"message\":\"Unknown tool\",\"data\":{\"name\":\"t\"}}");
    mcp_shape_legacy_error("tools/call", e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    json_decref(e);
    e = parse("{\"code\":-32602,\"message\":\"bad\"}");
    mcp_shape_legacy_error("resources/read", e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
    json_decref(e);
    /* -32021 is a 2026-07-28 code: a legacy client gets -32602, with the
     * message and the required capabilities kept, whatever the method. */
    static const char *const methods[] = {"tools/call", "resources/read", "prompts/get", NULL};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        e = parse("{\"code\":-32021,\"message\":\"needs elicitation\","
                  "\"data\":{\"requiredCapabilities\":{\"elicitation\":{}}}}");
        mcp_shape_legacy_error(methods[i], e);
        assert_json(e, "{\"code\":-32602,\"message\":\"needs elicitation\","
                       "\"data\":{\"requiredCapabilities\":{\"elicitation\":{}}}}");
        json_decref(e);
    }
}

static void test_capabilities(void **state)
{
    json_t *m = parse("{\"tools\":{\"listChanged\":true},\"extensions\":{\"a/b\":{}}}");
    json_t *l = mcp_legacy_server_capabilities(m);
    assert_json(l, "{\"tools\":{\"listChanged\":true}}");
    json_decref(l);
    json_decref(m);
}

static void test_request_params(void **state)
{
    json_t *form = parse("{\"mode\":\"form\",\"message\":\"m\",\"requestedSchema\":{}}");
    json_t *p = mcp_legacy_request_params("elicitation/create", form, "2025-06-18", NULL);
    assert_json(p, "{\"message\":\"m\",\"requestedSchema\":{}}");
    json_decref(p);
    p = mcp_legacy_request_params("elicitation/create", form, "2025-11-25", NULL);
    assert_json(p, "{\"mode\":\"form\",\"message\":\"m\",\"requestedSchema\":{}}");
    json_decref(p);
    json_decref(form);

    json_t *url = parse("{\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://x\"}");
    p = mcp_legacy_request_params("elicitation/create", url, "2025-11-25", "e1");
    assert_json(p, "{\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://x\",\"elicitationId\":\"e1\"}");
    json_decref(p);
    json_decref(url);

    json_t *s = parse("{\"messages\":[],\"maxTokens\":5}");
    p = mcp_legacy_request_params("sampling/createMessage", s, "2025-03-26", "ignored");
    assert_json(p, "{\"messages\":[],\"maxTokens\":5}");
    json_decref(p);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_negotiation),   cmocka_unit_test(test_result_shape),
        cmocka_unit_test(test_error_shape),   cmocka_unit_test(test_capabilities),
        cmocka_unit_test(test_request_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
