/*
 * The stdio client's line router: arbitrary server output, split into
 * lines, routed against a table with a few requests in flight (integer and
 * string ids). Every line must be classified without crashing or leaking,
 * and a routed line must name an exchange that is really pending.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/stdio_route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int values[4];
    stdio_router_t r;
    stdio_router_init(&r);
    json_t *ids[4] = {json_integer(1), json_integer(2), json_string("1"), json_integer(-3)};
    for (size_t i = 0; i < 4; i++)
        stdio_router_add(&r, ids[i], &values[i]);

    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        stdio_route_t route;
        mcp_error_t why = {0};
        stdio_route_line(&r, p, len, &route, &why);
        if (route.kind == STDIO_ROUTE_RESPONSE || route.kind == STDIO_ROUTE_BROKEN ||
            route.kind == STDIO_ROUTE_NOTIFICATION) {
            if (!route.value || stdio_router_find(&r, route.key) != route.value)
                abort();
            /* A response, even a broken one, ends its exchange, as in the
             * transport; a broken one was refused by the parser. */
            if (route.kind == STDIO_ROUTE_BROKEN && (route.msg.kind != MCP_MSG_INVALID ||
                                                     json_object_get(route.msg.root, "method")))
                abort();
            if (route.kind != STDIO_ROUTE_NOTIFICATION &&
                stdio_router_remove(&r, route.key) != route.value)
                abort();
        }
        stdio_route_clear(&route);
        mcp_error_clear(&why);
        p += len + 1;
    }
    while (stdio_router_pop(&r))
        ;
    stdio_router_clear(&r);
    for (size_t i = 0; i < 4; i++)
        json_decref(ids[i]);
    return 0;
}
