/*
 * Replay store internals: how the AES-256-GCM codec asks a store, whatever
 * backs it, to redeem a state id. The public half is in mcp/request_state.h.
 */
#ifndef MCP_SERVER_REPLAY_STORE_H
#define MCP_SERVER_REPLAY_STORE_H

#include "mcp/request_state.h"

#define MCP_STATE_ID_BYTES 16
#define MCP_REPLAY_INSTANCE_BYTES 16
#define MCP_PRINCIPAL_HASH_BYTES 16

/* Who redeems a state, as the in-memory store counts it for its quota: a
 * digest of the principal (NULL, no authentication, is one principal of
 * its own, distinct from every string). Thread-safe. */
void mcp_replay_principal_hash(const char *principal, uint8_t out[MCP_PRINCIPAL_HASH_BYTES]);

/* Records the redemption of state `id` by `principal` (a hash from
 * mcp_replay_principal_hash): 0 the first time, MCP_EEXIST for a replay,
 * another negative code when the store failed or `principal` is over its
 * quota. Stores over application ops never see the principal. Thread-safe
 * when the store's ops are. */
int mcp_replay_store_redeem(mcp_replay_store_t *store, const uint8_t id[MCP_STATE_ID_BYTES],
                            const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES],
                            int64_t expires_ms, int64_t now_ms);

/* The random identity of a store that forgets what it redeemed when its
 * process ends (the in-memory one), which the codec binds its states to;
 * NULL for a store over application ops, taken to remember for as long as
 * the keys live. */
const uint8_t *mcp_replay_store_instance(const mcp_replay_store_t *store);

/* Redeem with the principal, for stores of libmcp's own. */
typedef int (*mcp_replay_redeem_as_fn)(void *ctx, const uint8_t id[MCP_STATE_ID_BYTES],
                                       const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES],
                                       int64_t expires_ms, int64_t now_ms);

/* mcp_replay_store_new() for a store that lives in this process only: it
 * gets a random identity (NULL when the CSPRNG fails), and redeems through
 * `redeem_as`. */
mcp_replay_store_t *mcp_replay_store_new_local(const mcp_replay_store_ops_t *ops,
                                               mcp_replay_redeem_as_fn redeem_as, void *ctx);

#endif /* MCP_SERVER_REPLAY_STORE_H */
