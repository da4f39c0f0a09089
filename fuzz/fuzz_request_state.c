/*
 * Fuzzes opening a sealed requestState, the one server input that is
 * attacker-controlled and cryptographic.
 *
 * Most inputs are opened as they are, with a fixed keyring: they must be
 * refused cleanly (no crash, no leak, no payload). An input whose first
 * byte is a multiple of 8 instead drives a seal-then-mutate round:
 *   byte 1: number of bit flips (0..3), then two bytes per flip: its
 *   position; the rest: the payload (JSON if it parses, else a number).
 * The mutated state must open only when the flips cancelled out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/request_state.h"
#include "protocol/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW INT64_C(1700000000000)

static int64_t fixed_clock(void *user)
{
    (void)user;
    return NOW;
}

/* Keys 0x00..0x1f ("k1") and 0x20..0x3f ("k2", the newest). */
static mcp_codec_t *codec_new(void)
{
    uint8_t key[MCP_STATE_KEY_BYTES];
    mcp_keyring_t *ring = mcp_keyring_new();
    for (int i = 0; i < MCP_STATE_KEY_BYTES; i++)
        key[i] = (uint8_t)i;
    mcp_keyring_add(ring, "k1", key);
    for (int i = 0; i < MCP_STATE_KEY_BYTES; i++)
        key[i] = (uint8_t)(i + 32);
    mcp_keyring_add(ring, "k2", key);
    mcp_aead_options_t opts = {0, fixed_clock, NULL, mcp_replay_store_memory_new(16)};
    return mcp_codec_aead_new(ring, &opts, NULL);
}

/* Opens `state`; returns whether it opened, checking the output contract. */
static int try_open(mcp_codec_t *codec, const char *state, const mcp_state_binding_t *binding)
{
    json_t *payload = NULL;
    mcp_error_t err = {0};
    int rc = mcp_codec_open(codec, state, binding, &payload, &err);
    if ((rc == MCP_OK) != (payload != NULL) || (rc != MCP_OK && err.message[0] == '\0'))
        __builtin_trap();
    json_decref(payload);
    mcp_error_clear(&err);
    return rc == MCP_OK;
}

static void seal_then_mutate(mcp_codec_t *codec, const mcp_state_binding_t *binding,
                             const uint8_t *data, size_t size)
{
    size_t flips = size > 0 ? data[0] % 4 : 0;
    if (size < 1 + 2 * flips)
        return;
    const uint8_t *positions = data + 1;
    const uint8_t *rest = positions + 2 * flips;
    size_t rest_len = size - 1 - 2 * flips;

    json_t *payload = json_loadb((const char *)rest, rest_len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
                                 NULL);
    if (!payload)
        payload = json_integer((json_int_t)rest_len);
    char *state = NULL;
    if (mcp_codec_seal(codec, payload, binding, &state, NULL) != MCP_OK)
        __builtin_trap();
    json_decref(payload);

    size_t text_len = strlen(state), raw_len = 0;
    uint8_t *raw = malloc(mcp_base64_decoded_max(text_len) + 1);
    uint8_t *original = malloc(mcp_base64_decoded_max(text_len) + 1);
    if (mcp_base64url_decode(state, text_len, raw, &raw_len) != MCP_OK)
        __builtin_trap();
    memcpy(original, raw, raw_len);
    for (size_t i = 0; i < flips; i++) {
        size_t bit = ((size_t)positions[2 * i] << 8 | positions[2 * i + 1]) % (raw_len * 8);
        raw[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    int changed = memcmp(raw, original, raw_len) != 0;
    mcp_base64url_encode(raw, raw_len, state); /* same length: fits */
    if (try_open(codec, state, binding) == changed)
        __builtin_trap();
    free(original);
    free(raw);
    free(state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcp_codec_t *codec = codec_new();
    json_t *params = json_pack("{s:s}", "name", "t");
    mcp_state_binding_t binding = {"alice", "tools/call", params};
    if (size > 0 && data[0] % 8 == 0) {
        seal_then_mutate(codec, &binding, data + 1, size - 1);
    } else {
        char *state = malloc(size + 1);
        memcpy(state, data, size);
        state[size] = '\0';
        try_open(codec, state, &binding);
        free(state);
    }
    json_decref(params);
    mcp_codec_free(codec);
    return 0;
}
