/*
 * Interop: the C client over stdio against a server written with the
 * TypeScript SDK v2 (tests/interop/ts2_stdio_server.mjs), in the auto era
 * (the probe must find it modern): the scenarios of ts2_scenarios.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "ts2_scenarios.h"

#define SERVER_SCRIPT TS2_INTEROP_DIR "/ts2_stdio_server.mjs"

static ts2_peer_t peer = {.server_name = "ts2-interop"};

/* The client owns the server process: freeing it stops the server. */
static int setup(void **state)
{
    mcp_error_t err = {0};
    peer.client = ts2_client_new(MCP_CLIENT_ERA_AUTO);
    if (!peer.client ||
        mcp_client_connect_stdio(peer.client, &(mcp_stdio_target_t){
            .argv = (const char *const[]){"node", SERVER_SCRIPT, NULL},
            .cwd = TS2_INTEROP_DIR}, &err) != MCP_OK) {
        fprintf(stderr, "cannot connect to the TypeScript server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_client_free(peer.client);
        return -1;
    }
    *state = &peer;
    return 0;
}

static int teardown(void **state)
{
    mcp_client_free(peer.client);
    return 0;
}

int main(void)
{
    if (!ts2_peer_installed("client_stdio_ts2"))
        return 1;
    const struct CMUnitTest tests[] = {TS2_SCENARIOS};
    return cmocka_run_group_tests_name("client_stdio_ts2", tests, setup, teardown);
}
