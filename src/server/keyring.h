/*
 * Keyring internals shared with the AES-256-GCM codec: looking keys up.
 * The public half is in mcp/request_state.h.
 */
#ifndef MCP_SERVER_KEYRING_H
#define MCP_SERVER_KEYRING_H

#include "mcp/request_state.h"

typedef struct mcp_state_key {
    char id[MCP_STATE_KEY_ID_MAX + 1]; /* NUL-terminated */
    size_t id_len;
    uint8_t bytes[MCP_STATE_KEY_BYTES];
} mcp_state_key_t;

/* The key that seals (the most recently added), or NULL for an empty ring. */
const mcp_state_key_t *mcp_keyring_newest(const mcp_keyring_t *ring);

/* The key whose id is the `id_len` bytes at `id` (not NUL-terminated), or
 * NULL. Key ids are public, so this compares in ordinary time. */
const mcp_state_key_t *mcp_keyring_find(const mcp_keyring_t *ring, const uint8_t *id,
                                        size_t id_len);

/* Key ids: 1..MCP_STATE_KEY_ID_MAX characters of [A-Za-z0-9._-]. */
bool mcp_keyring_id_is_valid(const char *key_id);

/* Moves every key of `src` to the end of `dst`, oldest first, leaving `src`
 * empty. All or nothing: MCP_ENOMEM leaves both rings as they were. The
 * caller has checked that no id is in both. */
int mcp_keyring_move_keys(mcp_keyring_t *dst, mcp_keyring_t *src);

#endif /* MCP_SERVER_KEYRING_H */
