/*
 * The AES-256-GCM requestState codec, with its source of randomness exposed
 * for tests: a known-answer test needs a fixed nonce and state id. Server
 * code uses mcp_codec_aead_new() (mcp/request_state.h), which draws from
 * the OS CSPRNG.
 */
#ifndef MCP_SERVER_AEAD_CODEC_H
#define MCP_SERVER_AEAD_CODEC_H

#include "mcp/request_state.h"

/* Fills buf[0..n) with random bytes; returns 0, or a negative MCP_E* code.
 * Each seal draws the 16-byte state id first, then the 12-byte nonce. */
typedef int (*mcp_random_fn)(void *user, uint8_t *buf, size_t n);

/* mcp_codec_aead_new() with `random_bytes` (called from any thread the codec is
 * used on) instead of the OS CSPRNG. */
mcp_codec_t *mcp_codec_aead_new_with_random(mcp_keyring_t *ring, const mcp_aead_options_t *opts,
                                            mcp_random_fn random_bytes, void *random_user,
                                            mcp_error_t *err);

#endif /* MCP_SERVER_AEAD_CODEC_H */
