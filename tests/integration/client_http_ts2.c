/*
 * Interop: the C client over Streamable HTTP against a server written with
 * the TypeScript SDK v2 (tests/interop/ts2_http_server.mjs: createMcpHandler
 * behind node:http), pinned to the modern era: the scenarios of
 * ts2_scenarios.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "http_child.h"
#include "mcp/client.h"
#include "mcp/mcp.h"
#include "ts2_scenarios.h"

#define SERVER_SCRIPT TS2_INTEROP_DIR "/ts2_http_server.mjs"

static http_child_t server;
static ts2_peer_t peer = {.server_name = "ts2-interop-http"};

static int setup(void **state)
{
    if (http_child_start(&server, (const char *const[]){"node", SERVER_SCRIPT, NULL}, 30000) != 0)
        return -1;
    mcp_error_t err = {0};
    peer.client = ts2_client_new(MCP_CLIENT_ERA_MODERN);
    if (!peer.client ||
        mcp_client_connect_http(peer.client, &(mcp_http_target_t){.url = server.url}, &err) !=
            MCP_OK) {
        fprintf(stderr, "cannot connect to the TypeScript server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_client_free(peer.client);
        http_child_stop(&server, 10000);
        return -1;
    }
    *state = &peer;
    return 0;
}

/* Frees the client, then requires the server to stop cleanly. */
static int teardown(void **state)
{
    mcp_client_free(peer.client);
    int status = http_child_stop(&server, 10000);
    if (status != 0)
        fprintf(stderr, "the TypeScript server exited with status %d\n", status);
    return status == 0 ? 0 : -1;
}

int main(void)
{
    if (!ts2_peer_installed("client_http_ts2"))
        return 1;
    const struct CMUnitTest tests[] = {TS2_SCENARIOS};
    return cmocka_run_group_tests_name("client_http_ts2", tests, setup, teardown);
}
