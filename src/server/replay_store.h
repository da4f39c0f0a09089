/*
 * Replay store internals: how the AES-256-GCM codec asks a store, whatever
 * backs it, to redeem a state id. The public half is in mcp/request_state.h.
 */
#ifndef MCP_SERVER_REPLAY_STORE_H
#define MCP_SERVER_REPLAY_STORE_H

#include "mcp/request_state.h"

#define MCP_STATE_ID_BYTES 16

/* Records the redemption of state `id`: 0 the first time, MCP_EEXIST for a
 * replay, another negative code when the store failed. Thread-safe when the
 * store's ops are. */
int mcp_replay_store_redeem(mcp_replay_store_t *store, const uint8_t id[MCP_STATE_ID_BYTES],
                            int64_t expires_ms, int64_t now_ms);

#endif /* MCP_SERVER_REPLAY_STORE_H */
