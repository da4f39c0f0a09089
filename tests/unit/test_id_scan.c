/* The id scan of responses too large to keep (protocol/id_scan.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/id_scan.h"

/* The id `text` tells when fed in one piece, and when fed a byte at a
 * time (a read may end anywhere): the two must agree. NULL: no id. */
static json_t *scan(const char *text)
{
    mcp_id_scan_t whole, bytes;
    mcp_id_scan_init(&whole);
    mcp_id_scan_feed(&whole, text, strlen(text));
    mcp_id_scan_init(&bytes);
    for (const char *p = text; *p; p++)
        mcp_id_scan_feed(&bytes, p, 1);
    json_t *a = mcp_id_scan_response_id(&whole), *b = mcp_id_scan_response_id(&bytes);
    assert_true(a ? b && json_equal(a, b) : !b);
    json_decref(b);
    return a;
}

static void assert_integer_id(const char *text, json_int_t want)
{
    json_t *id = scan(text);
    if (!id)
        fail_msg("no id in %s", text);
    assert_true(json_is_integer(id));
    assert_int_equal(json_integer_value(id), want);
    json_decref(id);
}

static void assert_string_id(const char *text, const char *want)
{
    json_t *id = scan(text);
    if (!id)
        fail_msg("no id in %s", text);
    assert_true(json_is_string(id));
    assert_string_equal(json_string_value(id), want);
    json_decref(id);
}

static void assert_no_id(const char *text)
{
    json_t *id = scan(text);
    if (id)
        fail_msg("an id in %s", text);
}

/* Wherever the id stands: first (libmcp, Python), last (TypeScript). */
static void test_responses(void **state)
{
    (void)state;
    assert_integer_id("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}", 7);
    assert_integer_id("{\"result\":{\"a\":[1,{\"b\":\"}]\\\"\"}]},\"jsonrpc\":\"2.0\",\"id\":42}", 42);
    assert_integer_id(" { \"id\" : -3 , \"error\" : {\"code\":-32603} } \r", -3);
    assert_integer_id("{\"id\":0,\"result\":null}", 0);
    assert_integer_id("{\"id\":9223372036854775807,\"result\":{}}", INT64_MAX);
    assert_string_id("{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"result\":{}}", "req-1");
    /* Members named like the wanted ones, but longer or nested. */
    assert_integer_id("{\"ids\":1,\"x\":{\"id\":3,\"method\":\"m\"},\"id\":4}", 4);
    assert_integer_id("{\"methods\":\"m\",\"id\":5,\"result\":\"{\\\"method\\\":1}\"}", 5);
}

static void test_no_id(void **state)
{
    (void)state;
    /* Requests and notifications are no answer to a call. */
    assert_no_id("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    assert_no_id("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
    /* Ids no request of ours has. */
    assert_no_id("{\"id\":null,\"error\":{}}");
    assert_no_id("{\"id\":1.5,\"result\":{}}");
    assert_no_id("{\"id\":1e3,\"result\":{}}");
    assert_no_id("{\"id\":01,\"result\":{}}");
    assert_no_id("{\"id\":-,\"result\":{}}");
    assert_no_id("{\"id\":9223372036854775808,\"result\":{}}");
    assert_no_id("{\"id\":{\"n\":1},\"result\":{}}");
    assert_no_id("{\"id\":\"a\\\"b\",\"result\":{}}"); /* escapes are not decoded */
    assert_no_id("{\"id\":\"\xff\",\"result\":{}}");    /* not UTF-8 */
    /* Two ids: which one is meant is not for us to guess. */
    assert_no_id("{\"id\":1,\"id\":2,\"result\":{}}");
    /* A name with an escape may spell "id" or "method" (escapes are not
     * decoded): the same doubt. */
    assert_no_id("{\"\\u0069d\":2,\"id\":4,\"result\":{}}");
    assert_no_id("{\"id\":4,\"m\\u0065thod\":\"ping\"}");
    /* Not a whole object. */
    assert_no_id("");
    assert_no_id("[{\"id\":1,\"result\":{}}]");
    assert_no_id("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"padding\":\"xxxx");
    assert_no_id("{\"id\":1,\"result\":{}");
    assert_no_id("{\"id\":1,\"result\":{}}}");
    assert_no_id("{\"id\":1,\"result\":{}} x");
    assert_no_id("{\"id\" 1,\"result\":{}}");
    assert_no_id("{\"id\":1,,\"result\":{}}");
    assert_no_id("{\"id\":1 \"result\":{}}");
    assert_no_id("{,\"id\":1}");
    assert_no_id("{\"id\":}");
    assert_no_id("{}");
}

/* A string id longer than MCP_ID_SCAN_MAX_ID is not kept; one that fits
 * is. */
static void test_long_string_id(void **state)
{
    (void)state;
    char text[512], id[MCP_ID_SCAN_MAX_ID + 2];
    memset(id, 'a', MCP_ID_SCAN_MAX_ID);
    id[MCP_ID_SCAN_MAX_ID] = '\0';
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"result\":{}}", id);
    assert_string_id(text, id);
    strcat(id, "a");
    snprintf(text, sizeof text, "{\"id\":\"%s\",\"result\":{}}", id);
    assert_no_id(text);
}

/* The id of a request (with "method"): what a refusal of it names. A
 * response tells no request id, nor a notification. */
static void test_request_ids(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        json_int_t want; /* -1: none */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"a\":[1]}}", 3},
        {"{\"params\":{\"id\":9},\"method\":\"ping\",\"id\":12}", 12},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}", -1},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", -1},
        {"{\"id\":3,\"method\":\"ping\"", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_id_scan_t s;
        mcp_id_scan_init(&s);
        mcp_id_scan_feed(&s, cases[i].text, strlen(cases[i].text));
        json_t *id = mcp_id_scan_request_id(&s);
        if (cases[i].want < 0) {
            assert_null(id);
        } else {
            assert_non_null(id);
            assert_int_equal(json_integer_value(id), cases[i].want);
            assert_null(mcp_id_scan_response_id(&s));
        }
        json_decref(id);
    }
}

/* Deep nesting costs a counter, not a stack. */
static void test_deep_nesting(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    char *text = malloc(2 * DEPTH + 64);
    assert_non_null(text);
    char *p = text;
    p += sprintf(p, "{\"result\":");
    memset(p, '[', DEPTH);
    p += DEPTH;
    memset(p, ']', DEPTH);
    p += DEPTH;
    strcpy(p, ",\"id\":8}");
    assert_integer_id(text, 8);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_no_id),
        cmocka_unit_test(test_long_string_id),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_request_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
