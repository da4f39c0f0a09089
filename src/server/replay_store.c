/*
 * A replay store: a redeem operation over an application's context,
 * counted so that several codecs can share it (a key rotation hands the
 * store on to the next codec, see mcp_replay_store_ref).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "random.h"
#include "server/replay_store.h"

struct mcp_replay_store {
    mcp_replay_store_ops_t ops;
    void *ctx;
    atomic_int refs;
    /* libmcp's own stores: redeem with the principal, and the identity of
     * a store that forgets on restart. */
    mcp_replay_redeem_as_fn redeem_as;
    bool local;
    uint8_t instance[MCP_REPLAY_INSTANCE_BYTES];
};

mcp_replay_store_t *mcp_replay_store_new(const mcp_replay_store_ops_t *ops, void *ctx)
{
    if (!ops || !ops->redeem) {
        if (ops && ops->free)
            ops->free(ctx);
        return NULL;
    }
    mcp_replay_store_t *store = calloc(1, sizeof *store);
    if (!store) {
        if (ops->free)
            ops->free(ctx);
        return NULL;
    }
    store->ops = *ops;
    store->ctx = ctx;
    atomic_init(&store->refs, 1);
    return store;
}

mcp_replay_store_t *mcp_replay_store_new_local(const mcp_replay_store_ops_t *ops,
                                               mcp_replay_redeem_as_fn redeem_as, void *ctx)
{
    mcp_replay_store_t *store = mcp_replay_store_new(ops, ctx);
    if (!store)
        return NULL;
    /* 128 random bits: a store of another process (or an earlier run of
     * this one) never has the same identity, so its states never pass for
     * ours. */
    if (mcp_secret_random(store->instance, sizeof store->instance) != MCP_OK) {
        mcp_replay_store_free(store);
        return NULL;
    }
    store->redeem_as = redeem_as;
    store->local = true;
    return store;
}

mcp_replay_store_t *mcp_replay_store_ref(mcp_replay_store_t *store)
{
    if (store)
        atomic_fetch_add(&store->refs, 1);
    return store;
}

void mcp_replay_store_free(mcp_replay_store_t *store)
{
    if (!store || atomic_fetch_sub(&store->refs, 1) != 1)
        return;
    if (store->ops.free)
        store->ops.free(store->ctx);
    free(store);
}

const uint8_t *mcp_replay_store_instance(const mcp_replay_store_t *store)
{
    return store && store->local ? store->instance : NULL;
}

void mcp_replay_principal_hash(const char *principal, uint8_t out[MCP_PRINCIPAL_HASH_BYTES])
{
    /* A tag byte keeps "no principal" apart from every string, the empty
     * one included. Truncated SHA-256: nobody can pick a principal whose
     * quota is another's. */
    static const uint8_t none = 0, some = 1;
    struct sha256_ctx sha;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&sha);
    sha256_update(&sha, 1, principal ? &some : &none);
    if (principal)
        sha256_update(&sha, strlen(principal), (const uint8_t *)principal);
    sha256_digest(&sha, sizeof digest, digest);
    memcpy(out, digest, MCP_PRINCIPAL_HASH_BYTES);
}

int mcp_replay_store_redeem(mcp_replay_store_t *store, const uint8_t id[MCP_STATE_ID_BYTES],
                            const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES],
                            int64_t expires_ms, int64_t now_ms)
{
    int rc = store->redeem_as
                 ? store->redeem_as(store->ctx, id, principal, expires_ms, now_ms)
                 : store->ops.redeem(store->ctx, id, expires_ms, now_ms);
    /* Only 0 means "first use": a store that answers with a positive number
     * must not let a replay through. */
    return rc > 0 ? MCP_EINVAL : rc;
}
