/*
 * Tests whose server is their own (self_served.h).
 */
#define _GNU_SOURCE /* readlink, PATH_MAX, clock_gettime */

#include "self_served.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_clock.h"

const char *self_served_path(void)
{
    static char path[PATH_MAX];
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            abort();
        path[n] = '\0';
    }
    return path;
}

void self_served_http_start(mcp_server_t *srv, mcp_http_server_t **http_out, char *url,
                            size_t cap)
{
    mcp_error_t err = {0};
    if (!srv || mcp_http_server_start(srv, &(mcp_http_options_t){0}, http_out, &err) != MCP_OK)
        fail_msg("cannot serve over HTTP: %s", srv ? err.message : "no server");
    snprintf(url, cap, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(*http_out));
}

void self_served_http_stop(mcp_server_t *srv, mcp_http_server_t *http)
{
    if (http)
        mcp_http_server_stop(http);
    mcp_server_free(srv);
}

int self_served_stat(mcp_client_t *c, const char *what)
{
    json_t *r = NULL;
    mcp_error_t err = {0};
    if (mcp_client_call_tool(c, "stats", NULL, NULL, &r, &err) != MCP_OK)
        fail_msg("stats: %s", err.message);
    int n = (int)json_integer_value(json_object_get(json_object_get(r, "structuredContent"),
                                                    what));
    json_decref(r);
    return n;
}

void self_served_await_stat(mcp_client_t *c, const char *what, int n)
{
    for (int i = 0; i < 250 && self_served_stat(c, what) < n; i++)
        sleep_ms(20);
    assert_int_equal(self_served_stat(c, what), n);
}
