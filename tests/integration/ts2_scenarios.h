/*
 * ts2_scenarios: the interop scenarios of the C client against a server
 * written with the TypeScript SDK v2 (tests/interop/ts2_*_server.mjs, which
 * offer the same tools: echo, confirm, add_tool), written once and run by
 * client_stdio_ts2.c and client_http_ts2.c: discover, list, call, an MRTR
 * elicitation and a listen event (tools/list_changed) that refreshes the
 * cached tool list.
 *
 * A transport's program checks the peer is installed (ts2_peer_installed),
 * then runs TS2_SCENARIOS as one cmocka group whose setup starts the peer,
 * connects a client made by ts2_client_new() to it and leaves a ts2_peer_t
 * in *state.
 *
 * The peer comes from npm (tests/interop, installed by
 * scripts/install-deps.sh check): without node or the installed package the
 * test fails and says so -- make check must prove interop, not skip it.
 */
#ifndef MCP_TEST_TS2_SCENARIOS_H
#define MCP_TEST_TS2_SCENARIOS_H

#include <stdbool.h>

#include "mcp/client.h"

#define TS2_INTEROP_DIR MCP_SOURCE_DIR "/tests/interop"

/* What the scenarios find in *state. */
typedef struct ts2_peer {
    mcp_client_t *client;    /* connected to the peer */
    const char *server_name; /* the name its serverInfo must give */
} ts2_peer_t;

/* Whether node and the peer's package are there; if not, says so on stderr
 * in the name of `program`. */
bool ts2_peer_installed(const char *program);

/* A client for the scenarios in `era`, not connected yet: it logs to stderr
 * and answers the confirm tool's elicitation. NULL (after saying why on
 * stderr) if it cannot be made. */
mcp_client_t *ts2_client_new(mcp_client_era_t era);

void test_discover_list_call(void **state);
void test_mrtr_elicitation(void **state);
void test_listen_event(void **state);

#define TS2_SCENARIOS                                                                          \
    cmocka_unit_test(test_discover_list_call), cmocka_unit_test(test_mrtr_elicitation),       \
        cmocka_unit_test(test_listen_event)

#endif /* MCP_TEST_TS2_SCENARIOS_H */
