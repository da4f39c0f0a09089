/* Where a line from a stdio server goes (src/transport/stdio_route.h): the
 * table of requests in flight, and the routing of responses and
 * notifications to them. One stream carries every request's traffic, so a
 * line routed to the wrong request is another caller's answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/common.h"
#include "transport/stdio_route.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MANY 1500

/* Values stored in the table: addresses of these. */
static char values[2 * MANY];

static void test_table_grows_and_keeps_ids_apart(void **state)
{
    (void)state;
    stdio_router_t r;
    stdio_router_init(&r);
    /* Integers and strings that read alike are different ids. */
    for (int i = 0; i < MANY; i++) {
        json_t *n = json_integer(i);
        json_t *s = json_sprintf("%d", i);
        assert_int_equal(stdio_router_add(&r, n, &values[i]), MCP_OK);
        assert_int_equal(stdio_router_add(&r, s, &values[MANY + i]), MCP_OK);
        json_decref(n);
        json_decref(s);
    }
    assert_int_equal(r.count, 2 * MANY);
    for (int i = 0; i < MANY; i++) {
        json_t *n = json_integer(i);
        json_t *s = json_sprintf("%d", i);
        assert_ptr_equal(stdio_router_find(&r, n), &values[i]);
        assert_ptr_equal(stdio_router_find(&r, s), &values[MANY + i]);
        json_decref(n);
        json_decref(s);
    }

    /* Taken ids and ids of other types are refused; nothing changes. */
    json_t *taken = json_integer(7);
    assert_int_equal(stdio_router_add(&r, taken, &values[0]), MCP_EEXIST);
    assert_ptr_equal(stdio_router_find(&r, taken), &values[7]);
    json_t *bad[] = {json_null(), json_real(1.5), json_true(), json_object(), json_array()};
    for (size_t i = 0; i < COUNT(bad); i++) {
        assert_int_equal(stdio_router_add(&r, bad[i], &values[0]), MCP_EINVAL);
        assert_null(stdio_router_find(&r, bad[i]));
        json_decref(bad[i]);
    }
    assert_int_equal(r.count, 2 * MANY);

    /* Removed once; then gone. */
    assert_ptr_equal(stdio_router_remove(&r, taken), &values[7]);
    assert_null(stdio_router_remove(&r, taken));
    assert_null(stdio_router_find(&r, taken));
    json_decref(taken);

    /* Draining hands out every other value exactly once. */
    static unsigned char drained[2 * MANY];
    memset(drained, 0, sizeof drained);
    size_t n = 0;
    for (void *v; (v = stdio_router_pop(&r)) != NULL; n++) {
        size_t at = (size_t)((char *)v - values);
        assert_true(at < 2 * MANY && at != 7);
        assert_int_equal(drained[at]++, 0);
    }
    assert_int_equal(n, 2 * MANY - 1);
    assert_int_equal(r.count, 0);
    stdio_router_clear(&r);
}

static void test_clear_frees_what_is_left(void **state)
{
    (void)state;
    stdio_router_t r;
    stdio_router_init(&r);
    for (int i = 0; i < 100; i++) {
        json_t *id = json_sprintf("req-%d", i);
        assert_int_equal(stdio_router_add(&r, id, &values[i]), MCP_OK);
        json_decref(id);
    }
    stdio_router_clear(&r); /* the sanitizers check that nothing leaks */
    stdio_router_init(&r);
    assert_null(stdio_router_pop(&r));
    stdio_router_clear(&r);
}

static void test_lines_go_where_they_belong(void **state)
{
    (void)state;
    stdio_router_t r;
    stdio_router_init(&r);
    void *call7 = &values[1], *listen = &values[2], *call9 = &values[3];
    json_t *id7 = json_integer(7), *id_listen = json_string("sub-1"), *id9 = json_integer(9);
    assert_int_equal(stdio_router_add(&r, id7, call7), MCP_OK);
    assert_int_equal(stdio_router_add(&r, id_listen, listen), MCP_OK);
    assert_int_equal(stdio_router_add(&r, id9, call9), MCP_OK);

    static const struct {
        const char *line;
        stdio_route_kind_t kind;
        int value; /* index into values, 0: none */
    } cases[] = {
        /* Responses, by the id they echo. */
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", STDIO_ROUTE_RESPONSE, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"error\":{\"code\":-32600,\"message\":\"x\"}}",
         STDIO_ROUTE_RESPONSE, 2},
        /* An answer nobody waits for (a late answer to a cancelled call),
         * and one whose id has the other type. */
        {"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", STDIO_ROUTE_DROP, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}", STDIO_ROUTE_DROP, 0},
        /* An error the server could not tie to a request. */
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}",
         STDIO_ROUTE_UNROUTED, 0},
        /* Progress, by its token (the call's own id). */
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
         "\"params\":{\"progressToken\":9,\"progress\":1}}",
         STDIO_ROUTE_NOTIFICATION, 3},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
         "\"params\":{\"progressToken\":\"9\",\"progress\":1}}",
         STDIO_ROUTE_UNROUTED, 0},
        /* A listen stream's notifications, by their subscription id. */
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\","
         "\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"sub-1\"}}}",
         STDIO_ROUTE_NOTIFICATION, 2},
        /* The server ending a request: notifications/cancelled names it. */
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
         "\"params\":{\"requestId\":\"sub-1\",\"reason\":\"shutting down\"}}",
         STDIO_ROUTE_NOTIFICATION, 2},
        /* requestId counts for notifications/cancelled only. */
        {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
         "\"params\":{\"requestId\":7,\"level\":\"info\",\"data\":\"x\"}}",
         STDIO_ROUTE_UNROUTED, 0},
        /* A request of the server is never an answer, whatever its id. */
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", STDIO_ROUTE_UNROUTED, 0},
        /* Not JSON-RPC at all. */
        {"not json", STDIO_ROUTE_DROP, 0},
        {"[1,2]", STDIO_ROUTE_DROP, 0},
        {"{\"jsonrpc\":\"1.0\",\"id\":8,\"result\":{}}", STDIO_ROUTE_DROP, 0},
        {"", STDIO_ROUTE_DROP, 0},
        /* A malformed answer to a request in flight fails that request
         * instead of leaving it to its timeout; to no request, dropped. */
        {"{\"jsonrpc\":\"1.0\",\"id\":7,\"result\":{}}", STDIO_ROUTE_BROKEN, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"text\"}", STDIO_ROUTE_BROKEN, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{},\"error\":{}}", STDIO_ROUTE_BROKEN, 3},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"error\":{\"code\":\"x\"}}", STDIO_ROUTE_BROKEN,
         2},
        {"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":[]}", STDIO_ROUTE_DROP, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":5}", STDIO_ROUTE_DROP, 0},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        stdio_route_t route;
        mcp_error_t why = {0};
        stdio_route_line(&r, cases[i].line, strlen(cases[i].line), &route, &why);
        if (route.kind != cases[i].kind)
            fail_msg("case %zu (%s): kind %d, want %d", i, cases[i].line, (int)route.kind,
                     (int)cases[i].kind);
        if (cases[i].value) {
            assert_ptr_equal(route.value, &values[cases[i].value]);
            assert_non_null(route.key);
        } else {
            assert_null(route.value);
            assert_null(route.key);
        }
        /* A dropped line or a broken answer says why. */
        if (cases[i].kind == STDIO_ROUTE_DROP || cases[i].kind == STDIO_ROUTE_BROKEN)
            assert_non_null(why.message);
        mcp_error_clear(&why);
        stdio_route_clear(&route);
    }
    /* Routing looks only: every request is still in flight. */
    assert_int_equal(r.count, 3);
    json_decref(id7);
    json_decref(id_listen);
    json_decref(id9);
    stdio_router_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_grows_and_keeps_ids_apart),
        cmocka_unit_test(test_clear_frees_what_is_left),
        cmocka_unit_test(test_lines_go_where_they_belong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
