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

/* A state opened but not spent yet: with single use on, a request must
 * not lose its state for a fault that a corrected retry would not have
 * (an invalid inputResponse), so the server checks the request first and
 * spends the state only then. */
typedef struct mcp_state_ticket {
    mcp_codec_t *codec;  /* the AES-256-GCM codec to spend it with; NULL:
                            nothing left to do (no replay store, or another
                            codec, whose open spent it already) */
    uint8_t id[16];
    uint8_t principal[16]; /* who redeems it, for the store's quota */
    int64_t expires_ms;
} mcp_state_ticket_t;

/* mcp_codec_open() that leaves the single-use redemption of the
 * AES-256-GCM codec to mcp_codec_redeem(): *ticket says what is left.
 * Other codecs open (and spend) as usual, with nothing left. */
int mcp_codec_open_deferred(mcp_codec_t *codec, const char *state,
                            const mcp_state_binding_t *binding, json_t **payload_out,
                            mcp_state_ticket_t *ticket, mcp_error_t *err);

/* Spends a state opened by mcp_codec_open_deferred(): MCP_OK (also when
 * nothing was left to do), MCP_EINVAL (-32602) when it was spent
 * meanwhile, or the replay store's failure (-32603). The codec must still
 * be alive. */
int mcp_codec_redeem(const mcp_state_ticket_t *ticket, mcp_error_t *err);

#endif /* MCP_SERVER_AEAD_CODEC_H */
