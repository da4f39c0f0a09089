/* A replay store: a redeem operation over an application's context. */
#include <stdlib.h>

#include "server/replay_store.h"

struct mcp_replay_store {
    mcp_replay_store_ops_t ops;
    void *ctx;
};

mcp_replay_store_t *mcp_replay_store_new(const mcp_replay_store_ops_t *ops, void *ctx)
{
    if (!ops || !ops->redeem) {
        if (ops && ops->free)
            ops->free(ctx);
        return NULL;
    }
    mcp_replay_store_t *store = malloc(sizeof *store);
    if (!store) {
        if (ops->free)
            ops->free(ctx);
        return NULL;
    }
    store->ops = *ops;
    store->ctx = ctx;
    return store;
}

void mcp_replay_store_free(mcp_replay_store_t *store)
{
    if (!store)
        return;
    if (store->ops.free)
        store->ops.free(store->ctx);
    free(store);
}

int mcp_replay_store_redeem(mcp_replay_store_t *store, const uint8_t id[MCP_STATE_ID_BYTES],
                            int64_t expires_ms, int64_t now_ms)
{
    int rc = store->ops.redeem(store->ctx, id, expires_ms, now_ms);
    /* Only 0 means "first use": a store that answers with a positive number
     * must not let a replay through. */
    return rc > 0 ? MCP_EINVAL : rc;
}
