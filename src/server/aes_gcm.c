/* AES-256-GCM over raw bytes through Nettle's GCM interface. */
#include <stdbool.h>

#include <nettle/gcm.h>

#include "mcp/common.h"
#include "server/aes_gcm.h"
#include "server/secrets.h"

/* GCM authenticates at most 2^39 - 256 bits of plaintext under one nonce
 * (NIST SP 800-38D). A sealed state is far below that, but a size_t from
 * the caller must not silently exceed it. */
#define GCM_MAX_PLAIN_BYTES ((((uint64_t)1 << 39) - 256) / 8)

static bool within_gcm_limits(size_t aad_len, size_t n)
{
    return (uint64_t)n <= GCM_MAX_PLAIN_BYTES && (uint64_t)aad_len <= GCM_MAX_PLAIN_BYTES;
}

/* One context per call keeps the functions thread-safe. Nettle's update
 * takes the whole AAD in one go (only the last piece may be partial). */
static void start(struct gcm_aes256_ctx *ctx, const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                  const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                  size_t aad_len)
{
    gcm_aes256_set_key(ctx, key);
    gcm_aes256_set_iv(ctx, MCP_AES_GCM_NONCE_BYTES, nonce);
    if (aad_len > 0)
        gcm_aes256_update(ctx, aad_len, aad);
}

int mcp_aes256gcm_seal(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *plain, size_t n, uint8_t *cipher,
                       uint8_t tag[MCP_AES_GCM_TAG_BYTES])
{
    if (!within_gcm_limits(aad_len, n))
        return MCP_EINVAL;
    struct gcm_aes256_ctx ctx;
    start(&ctx, key, nonce, aad, aad_len);
    if (n > 0)
        gcm_aes256_encrypt(&ctx, n, cipher, plain);
    gcm_aes256_digest(&ctx, MCP_AES_GCM_TAG_BYTES, tag);
    mcp_secret_wipe(&ctx, sizeof ctx); /* it holds the key schedule */
    return MCP_OK;
}

int mcp_aes256gcm_open(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *cipher, size_t n,
                       const uint8_t tag[MCP_AES_GCM_TAG_BYTES], uint8_t *plain)
{
    if (!within_gcm_limits(aad_len, n))
        return MCP_EINVAL;
    struct gcm_aes256_ctx ctx;
    start(&ctx, key, nonce, aad, aad_len);
    if (n > 0)
        gcm_aes256_decrypt(&ctx, n, plain, cipher);
    uint8_t expected[MCP_AES_GCM_TAG_BYTES];
    gcm_aes256_digest(&ctx, MCP_AES_GCM_TAG_BYTES, expected);
    mcp_secret_wipe(&ctx, sizeof ctx);
    if (mcp_secret_equal(expected, tag, MCP_AES_GCM_TAG_BYTES))
        return MCP_OK;
    /* Never hand back unauthenticated plaintext. */
    if (n > 0)
        mcp_secret_wipe(plain, n);
    return MCP_EINVAL;
}
