/* AES-256-GCM over raw bytes through OpenSSL's EVP interface. */
#include <limits.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "mcp/common.h"
#include "server/aes_gcm.h"

/* EVP takes int lengths; a sealed state is far below this in practice, but
 * a size_t from the caller must not wrap silently. */
static int fits_int(size_t n)
{
    return n <= (size_t)INT_MAX;
}

int mcp_aes256gcm_seal(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *plain, size_t n, uint8_t *cipher,
                       uint8_t tag[MCP_AES_GCM_TAG_BYTES])
{
    if (!fits_int(aad_len) || !fits_int(n))
        return MCP_EINVAL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx)
        return MCP_ENOMEM;
    /* GCM's default IV length is 12 bytes, the size we use. */
    /* GCM's final step writes no bytes; `tail` keeps the pointer valid when
     * the plaintext is empty and `cipher` is NULL. */
    uint8_t tail[MCP_AES_GCM_TAG_BYTES];
    int len = 0, ok = EVP_EncryptInit_ex2(ctx, EVP_aes_256_gcm(), key, nonce, NULL) == 1 &&
                      (aad_len == 0 ||
                       EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
                      (n == 0 || EVP_EncryptUpdate(ctx, cipher, &len, plain, (int)n) == 1) &&
                      EVP_EncryptFinal_ex(ctx, tail, &len) == 1 &&
                      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, MCP_AES_GCM_TAG_BYTES,
                                          tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? MCP_OK : MCP_ENOMEM;
}

int mcp_aes256gcm_open(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *cipher, size_t n,
                       const uint8_t tag[MCP_AES_GCM_TAG_BYTES], uint8_t *plain)
{
    if (!fits_int(aad_len) || !fits_int(n))
        return MCP_EINVAL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx)
        return MCP_ENOMEM;
    uint8_t tail[MCP_AES_GCM_TAG_BYTES];
    int len = 0, rc = MCP_ENOMEM;
    /* The expected tag must be set before DecryptFinal, which is where GCM
     * compares it (in constant time); the ctrl only reads it, hence the cast. */
    if (EVP_DecryptInit_ex2(ctx, EVP_aes_256_gcm(), key, nonce, NULL) == 1 &&
        (aad_len == 0 || EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) == 1) &&
        (n == 0 || EVP_DecryptUpdate(ctx, plain, &len, cipher, (int)n) == 1) &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, MCP_AES_GCM_TAG_BYTES,
                            (void *)tag) == 1)
        rc = EVP_DecryptFinal_ex(ctx, tail, &len) == 1 ? MCP_OK : MCP_EINVAL;
    EVP_CIPHER_CTX_free(ctx);
    /* Never hand back unauthenticated plaintext. */
    if (rc != MCP_OK && n > 0)
        OPENSSL_cleanse(plain, n);
    return rc;
}
