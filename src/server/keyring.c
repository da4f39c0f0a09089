/*
 * The keyring: named 32-byte keys for sealing requestState. The newest key
 * seals, every key opens, so keys rotate by adding a new one and retiring
 * the oldest once its states have expired.
 *
 * Each key lives in its own allocation and is wiped before it is freed, so
 * growing the ring never leaves a stray copy of a key in freed memory.
 */
#include <stdlib.h>
#include <string.h>

#include "server/keyring.h"
#include "server/secrets.h"

struct mcp_keyring {
    mcp_state_key_t **keys; /* oldest first */
    size_t count;
    size_t capacity;
};

mcp_keyring_t *mcp_keyring_new(void)
{
    return calloc(1, sizeof(mcp_keyring_t));
}

static void key_free(mcp_state_key_t *key)
{
    if (key) {
        mcp_secret_wipe(key, sizeof *key);
        free(key);
    }
}

void mcp_keyring_free(mcp_keyring_t *ring)
{
    if (!ring)
        return;
    for (size_t i = 0; i < ring->count; i++)
        key_free(ring->keys[i]);
    free(ring->keys);
    free(ring);
}

bool mcp_keyring_id_is_valid(const char *key_id)
{
    if (!key_id)
        return false;
    size_t n = strlen(key_id);
    if (n == 0 || n > MCP_STATE_KEY_ID_MAX)
        return false;
    /* A whitelist, not isalnum(), so the locale cannot widen it. */
    return strspn(key_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const mcp_state_key_t *mcp_keyring_find(const mcp_keyring_t *ring, const uint8_t *id,
                                        size_t id_len)
{
    if (!ring || !id)
        return NULL;
    for (size_t i = 0; i < ring->count; i++)
        if (ring->keys[i]->id_len == id_len && memcmp(ring->keys[i]->id, id, id_len) == 0)
            return ring->keys[i];
    return NULL;
}

const mcp_state_key_t *mcp_keyring_newest(const mcp_keyring_t *ring)
{
    return ring && ring->count > 0 ? ring->keys[ring->count - 1] : NULL;
}

size_t mcp_keyring_count(const mcp_keyring_t *ring)
{
    return ring ? ring->count : 0;
}

/* Makes room for `extra` more keys; MCP_ENOMEM leaves the ring unchanged. */
static int reserve(mcp_keyring_t *ring, size_t extra)
{
    if (ring->capacity - ring->count >= extra)
        return MCP_OK;
    size_t capacity = ring->capacity ? ring->capacity : 4;
    while (capacity - ring->count < extra)
        capacity *= 2;
    mcp_state_key_t **keys = realloc(ring->keys, capacity * sizeof *keys);
    if (!keys)
        return MCP_ENOMEM;
    ring->keys = keys;
    ring->capacity = capacity;
    return MCP_OK;
}

int mcp_keyring_add(mcp_keyring_t *ring, const char *key_id,
                    const uint8_t key[MCP_STATE_KEY_BYTES])
{
    if (!ring || !key || !mcp_keyring_id_is_valid(key_id))
        return MCP_EINVAL;
    size_t id_len = strlen(key_id);
    if (mcp_keyring_find(ring, (const uint8_t *)key_id, id_len))
        return MCP_EEXIST;
    if (reserve(ring, 1) != MCP_OK)
        return MCP_ENOMEM;
    mcp_state_key_t *entry = calloc(1, sizeof *entry);
    if (!entry)
        return MCP_ENOMEM;
    memcpy(entry->id, key_id, id_len + 1);
    entry->id_len = id_len;
    memcpy(entry->bytes, key, MCP_STATE_KEY_BYTES);
    ring->keys[ring->count++] = entry;
    return MCP_OK;
}

int mcp_keyring_generate(mcp_keyring_t *ring, const char *key_id)
{
    uint8_t key[MCP_STATE_KEY_BYTES];
    if (mcp_secret_random(key, sizeof key) != MCP_OK)
        return MCP_EIO;
    int rc = mcp_keyring_add(ring, key_id, key);
    mcp_secret_wipe(key, sizeof key);
    return rc;
}

int mcp_keyring_move_keys(mcp_keyring_t *dst, mcp_keyring_t *src)
{
    if (src->count == 0)
        return MCP_OK;
    if (reserve(dst, src->count) != MCP_OK)
        return MCP_ENOMEM;
    memcpy(dst->keys + dst->count, src->keys, src->count * sizeof *src->keys);
    dst->count += src->count;
    src->count = 0;
    return MCP_OK;
}
