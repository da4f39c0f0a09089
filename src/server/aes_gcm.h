/*
 * AES-256-GCM over raw bytes: the one place libmcp touches a cipher.
 *
 * A thin, checked wrapper over Nettle's GCM with the sizes the requestState
 * format uses (32-byte key, 96-bit nonce, 128-bit tag). Every call keeps its
 * context on the stack and wipes it before returning, so the functions are
 * thread-safe, allocate nothing and keep no state between calls.
 */
#ifndef MCP_SERVER_AES_GCM_H
#define MCP_SERVER_AES_GCM_H

#include <stddef.h>
#include <stdint.h>

#define MCP_AES_GCM_KEY_BYTES 32
#define MCP_AES_GCM_NONCE_BYTES 12
#define MCP_AES_GCM_TAG_BYTES 16

/*
 * Encrypts `n` bytes of `plain` into `cipher` (also `n` bytes; the buffers
 * may be the same) and writes the tag, authenticating `aad` too. The nonce
 * must never repeat under one key. Returns 0, or MCP_EINVAL when a length is
 * beyond what GCM can authenticate (about 64 GiB).
 */
int mcp_aes256gcm_seal(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *plain, size_t n, uint8_t *cipher,
                       uint8_t tag[MCP_AES_GCM_TAG_BYTES]);

/*
 * Checks the tag and decrypts `n` bytes of `cipher` into `plain`. Returns 0,
 * MCP_EINVAL when authentication fails (then `plain` is zeroed: no
 * unauthenticated plaintext escapes) or a length is beyond GCM's limit.
 */
int mcp_aes256gcm_open(const uint8_t key[MCP_AES_GCM_KEY_BYTES],
                       const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES], const uint8_t *aad,
                       size_t aad_len, const uint8_t *cipher, size_t n,
                       const uint8_t tag[MCP_AES_GCM_TAG_BYTES], uint8_t *plain);

#endif /* MCP_SERVER_AES_GCM_H */
