/*
 * Sealed requestState for multi round-trip requests (2026-07-28
 * specification, Basic > Patterns > Multi Round-Trip Requests).
 *
 * When a handler asks the client for input, the server hands the client an
 * opaque `requestState` that comes back on the retry. It is
 * attacker-controlled input, so libmcp seals it: the default codec encrypts
 * and authenticates it with AES-256-GCM, and binds it to
 *   - the authenticated principal (or "none"),
 *   - an expiry (a TTL from sealing time, read from an injectable clock),
 *   - the method, and
 *   - a SHA-256 digest of the canonical JSON (RFC 8785) of the request's
 *     salient params: params without _meta, inputResponses and requestState.
 * Opening checks all four and, optionally, that the state is used only once
 * (a replay store remembers the states redeemed).
 *
 * Wire format (base64url, no padding) of the default codec:
 *   0x01 (format version) | key id length (1 byte) | key id |
 *   12-byte random nonce | ciphertext | 16-byte GCM tag
 * with AAD = "libmcp/requestState/v1" | 0x00 | format version | key id, so
 * the key id is authenticated and keys can rotate safely. The plaintext is a
 * compact JSON object with sorted keys holding the binding and the server's
 * payload: {"expiresMs", "method", "paramsDigest" (base64url), "payload",
 * "principal" (or null), "replayStore" (base64url of the 16-byte identity
 * of an in-memory replay store; only with one), "stateId" (base64url of 16
 * random bytes)}. It is not RFC 8785, whose double-only numbers would
 * round int64 payload values beyond 2^53 and turn 1.0 into 1; only the
 * params digest must be reproducible by other implementations, and that
 * one is RFC 8785.
 *
 * A keyring holds several 32-byte keys, each with an id: the newest seals,
 * all open. Instances that share a keyring open each other's states.
 *
 * Thread safety: a keyring must be fully loaded before it is given to a
 * codec; codecs are safe to use from several threads at once.
 *
 * Errors of mcp_codec_open: a state that is rejected (garbage, tampered,
 * unknown key, expired, bound to another principal, method, params or
 * replay store, or already used) gives MCP_EINVAL with err->code -32602 (Invalid params) and
 * a message saying which check failed, for logs; the server core answers
 * the client with a generic error of its own. A failure on the server's
 * side (out of memory, a replay store that failed) keeps its own code with
 * -32603 (Internal error), and missing arguments give MCP_EINVAL with
 * -32603.
 */
#ifndef MCP_REQUEST_STATE_H
#define MCP_REQUEST_STATE_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Keyring
 * ------------------------------------------------------------------------ */

typedef struct mcp_keyring mcp_keyring_t;

#define MCP_STATE_KEY_BYTES 32
#define MCP_STATE_KEY_ID_MAX 32

/* An empty keyring, or NULL on allocation failure. Loading and adding are
 * not thread-safe; once loaded, a keyring is only read. */
MCP_API mcp_keyring_t *mcp_keyring_new(void);

/* Frees a keyring and wipes its keys. NULL-safe. */
MCP_API void mcp_keyring_free(mcp_keyring_t *ring);

/*
 * Adds a key. `key_id` is 1..MCP_STATE_KEY_ID_MAX characters of
 * [A-Za-z0-9._-]; the most recently added key seals. The key is copied.
 * MCP_EINVAL for a bad id (or a NULL argument), MCP_EEXIST for a duplicate
 * id, MCP_ENOMEM.
 */
MCP_API int mcp_keyring_add(mcp_keyring_t *ring, const char *key_id,
                            const uint8_t key[MCP_STATE_KEY_BYTES]);

/*
 * Adds keys from text: one key per line, "<key id> <base64 or base64url of
 * 32 bytes>" (padding optional; spaces or tabs between), oldest first;
 * blank lines and lines starting with '#' are skipped. A single line holding
 * only a key (no id) gets the id "0"; such a line is allowed only when it
 * is the text's only key. MCP_EINVAL with *err naming the line on any
 * malformed line or an id already in the ring, and when the text holds no
 * key at all; MCP_EINVAL also for a NULL ring or text; MCP_ENOMEM. Nothing
 * is added on any failure. A key of one byte repeated (all zeros, say) is
 * refused as a placeholder. Messages never quote a key. err->code is 0
 * (these are local configuration errors).
 */
MCP_API int mcp_keyring_load_text(mcp_keyring_t *ring, const char *text, mcp_error_t *err);

/* mcp_keyring_load_text on a file's contents. MCP_EIO when unreadable;
 * MCP_EINVAL for a file over 1 MiB or holding a NUL byte, and (as ssh does
 * for private keys) for a regular file that its group or others may read,
 * write or run (chmod 600 it), or that belongs to another user than the
 * process's effective one or root. */
MCP_API int mcp_keyring_load_file(mcp_keyring_t *ring, const char *path, mcp_error_t *err);

/* mcp_keyring_load_text on an environment variable's value. MCP_ENOTFOUND
 * when the variable is unset or empty. Uses getenv(): call it at start-up,
 * not while another thread may change the environment. The variable stays
 * set, and every program the process starts inherits it: where handlers
 * run other programs, unset it once the keys are loaded (or prefer a
 * file). */
MCP_API int mcp_keyring_load_env(mcp_keyring_t *ring, const char *var, mcp_error_t *err);

/* Adds a fresh random key with id `key_id` (from the OS CSPRNG). Returns as
 * mcp_keyring_add, or MCP_EIO when the CSPRNG fails. */
MCP_API int mcp_keyring_generate(mcp_keyring_t *ring, const char *key_id);

/* Number of keys in the ring. */
MCP_API size_t mcp_keyring_count(const mcp_keyring_t *ring);

/* ------------------------------------------------------------------------
 * Replay store (single-use enforcement)
 * ------------------------------------------------------------------------ */

typedef struct mcp_replay_store_ops {
    /*
     * Records that the state with this 16-byte id was redeemed. Returns 0 the
     * first time, MCP_EEXIST when the id was already recorded (a replay), or
     * another negative code on failure (the open then fails too). The store
     * may forget ids after `expires_ms` (Unix epoch milliseconds). Only 0
     * admits the state. Called from any thread the codec is used on.
     */
    int (*redeem)(void *ctx, const uint8_t id[16], int64_t expires_ms, int64_t now_ms);
    /* Frees ctx (may be NULL). */
    void (*free)(void *ctx);
} mcp_replay_store_ops_t;

/*
 * A replay store is counted: mcp_replay_store_ref() gives another
 * reference, mcp_replay_store_free() drops one, and the last one frees it.
 * A codec takes the reference it is given, so one store can serve several
 * codecs at once, e.g. the old and the new one of a key rotation (see
 * mcp_server_set_codec): a state redeemed under either stays redeemed
 * under both. Counting is thread-safe.
 *
 * Single use holds only for as long as the store remembers. A store over
 * your own ops is taken to remember what it redeemed for as long as the
 * keys live, across restarts and on every instance that shares the keys
 * (a database, Redis): its states open anywhere those keys do. The
 * in-memory store forgets when its process ends, so it has a random
 * identity, and the codec binds every state it seals to the identity of
 * its store: such a state opens only with that very store, never after a
 * restart or on another instance, nor under a codec with another store or
 * none (the client gets the usual invalid-state error and starts the
 * request over). It is the price of never letting a redeemed state open
 * twice.
 */
typedef struct mcp_replay_store mcp_replay_store_t;

/* A store over your own ops (e.g. backed by Redis; `ops` is copied). ctx is
 * owned by it, even on failure: NULL when ops or ops->redeem is missing or
 * on allocation failure. Your ops never learn who redeems a state: a
 * quota per principal is yours to keep. */
MCP_API mcp_replay_store_t *mcp_replay_store_new(const mcp_replay_store_ops_t *ops, void *ctx);

typedef struct mcp_replay_store_memory_options {
    /* Live ids held at most (0 picks 100000); when full, a redemption fails
     * with MCP_ELIMIT rather than forget a live id. */
    size_t max_entries;
    /* Live ids one principal may hold (0 picks a tenth of max_entries, at
     * least 1; max_entries or more: no quota), so that no single client can
     * fill the store and have everyone else's retries refused. Beyond it,
     * that principal's redemptions fail with MCP_ELIMIT (the retry is
     * refused, and its state is not spent) until some of its ids expire.
     * Clients that are not authenticated cannot be told apart, so no
     * quota applies to them: a share of theirs would only shrink the store
     * for all of them. Only max_entries bounds them. */
    size_t max_per_principal;
} mcp_replay_store_memory_options_t;

/* The in-memory store: a hash set with expiry, holding at most
 * opts->max_entries live ids, at most opts->max_per_principal of them per
 * principal (opts may be NULL: the defaults). An id is remembered until
 * its state expires. Thread-safe. NULL when out of memory or when the
 * CSPRNG, which draws its identity, fails. */
MCP_API mcp_replay_store_t *
mcp_replay_store_memory_new_with(const mcp_replay_store_memory_options_t *opts);

/* mcp_replay_store_memory_new_with() with this max_entries (0 picks 100000)
 * and the default quota per principal. */
MCP_API mcp_replay_store_t *mcp_replay_store_memory_new(size_t max_entries);

/* Another reference to `store` (returned; NULL-safe). */
MCP_API mcp_replay_store_t *mcp_replay_store_ref(mcp_replay_store_t *store);

/* Drops a reference to a store; the last one frees it and its ctx
 * (through ops->free). A codec owns the reference it was given: drop only
 * references of your own, once no thread can still use them. NULL-safe. */
MCP_API void mcp_replay_store_free(mcp_replay_store_t *store);

/* ------------------------------------------------------------------------
 * Codecs
 * ------------------------------------------------------------------------ */

/* What a state is bound to. All pointers are borrowed. */
typedef struct mcp_state_binding {
    const char *principal; /* authenticated principal, or NULL for none */
    const char *method;    /* e.g. "tools/call" */
    const json_t *params;  /* the request's params; the digest covers them
                              minus _meta, inputResponses and requestState */
} mcp_state_binding_t;

/* A pluggable codec, so an application can bring its own (for example an
 * HMAC-only one, or one that stores state server-side and hands out ids). */
typedef struct mcp_codec_ops {
    /* Seals `payload` (borrowed) for `binding`; *out is malloc'd. On
     * failure leave *out NULL: whatever is left there is freed. */
    int (*seal)(void *ctx, const json_t *payload, const mcp_state_binding_t *binding, char **out,
                mcp_error_t *err);
    /* Opens `state`; on success *payload_out is a new reference. Any failure
     * (tampering, wrong binding, expiry, replay, garbage) returns a negative
     * code; the message in *err says why, for logs. On failure leave
     * *payload_out NULL: whatever is left there is released, so a codec can
     * never hand a payload out of a failed open. */
    int (*open)(void *ctx, const char *state, const mcp_state_binding_t *binding,
                json_t **payload_out, mcp_error_t *err);
    void (*free)(void *ctx);
} mcp_codec_ops_t;

typedef struct mcp_codec mcp_codec_t;

/* A codec over your own ops (`ops` is copied). ctx is owned by it, even on
 * failure: NULL when ops, ops->seal or ops->open is missing or on
 * allocation failure. */
MCP_API mcp_codec_t *mcp_codec_new(const mcp_codec_ops_t *ops, void *ctx);

typedef struct mcp_aead_options {
    /* Lifetime of a sealed state; 0 picks 10 minutes. A state opens while
     * the clock reads less than its sealing time plus ttl_ms. */
    int64_t ttl_ms;
    /* Clock in Unix epoch milliseconds; NULL uses the system clock. Called
     * from any thread the codec is used on. */
    int64_t (*now_ms)(void *user);
    void *clock_user;
    /* When set, every state opens at most once for as long as the store
     * remembers (see "Replay store" above). The codec takes this
     * reference; give it one of mcp_replay_store_ref() to share a store.
     * NULL: states may be replayed until they expire. */
    mcp_replay_store_t *replay_store;
} mcp_aead_options_t;

/*
 * The default AES-256-GCM codec. Takes ownership of `ring` (which must hold
 * at least one key) and of the reference opts->replay_store, even on
 * failure. `opts` may
 * be NULL. NULL with *err filled on failure (an empty ring or a negative
 * ttl_ms, or out of memory).
 */
MCP_API mcp_codec_t *mcp_codec_aead_new(mcp_keyring_t *ring, const mcp_aead_options_t *opts,
                                        mcp_error_t *err);

/* Seals a payload (borrowed; any JSON value) for `binding`, whose method
 * is required. MCP_OK with *out malloc'd (free with free()); otherwise a
 * negative code with *out NULL: MCP_EINVAL for a missing argument or a
 * method/principal that is not UTF-8, MCP_EIO when the CSPRNG fails,
 * MCP_ENOMEM. Thread-safe. */
MCP_API int mcp_codec_seal(mcp_codec_t *codec, const json_t *payload,
                           const mcp_state_binding_t *binding, char **out, mcp_error_t *err);

/* Opens a state. MCP_OK with *payload_out a new reference; otherwise a
 * negative code, *payload_out NULL and *err explaining (see "Errors of
 * mcp_codec_open" above). With a replay store, only a state that passed
 * every other check is spent. Thread-safe. */
MCP_API int mcp_codec_open(mcp_codec_t *codec, const char *state,
                           const mcp_state_binding_t *binding, json_t **payload_out,
                           mcp_error_t *err);

/* Frees a codec and its ctx (through ops->free; the AES-256-GCM codec
 * frees its keyring and drops its reference to its replay store). Must not race with mcp_codec_seal()
 * or mcp_codec_open(): free it only once no thread can still use it. A
 * codec given to mcp_server_set_codec() belongs to the server: do not free
 * it. NULL-safe. */
MCP_API void mcp_codec_free(mcp_codec_t *codec);

/*
 * The digest a state is bound to: SHA-256 of the RFC 8785 canonical JSON of
 * `params` without _meta, inputResponses and requestState (NULL params
 * digest as {}; params that are not an object are digested as they are).
 * Params that hold an integer beyond +-2^53, which RFC 8785 would round
 * (so that two amounts digest alike), digest a newline and jansson's
 * compact, key-sorted text of the same params after the canonical JSON.
 * Exposed so other implementations can check interoperability. Returns
 * MCP_OK and fills out[32]; MCP_EINVAL when out is NULL, MCP_ENOMEM.
 * Thread-safe.
 */
MCP_API int mcp_state_params_digest(const json_t *params, uint8_t out[32]);

#ifdef __cplusplus
}
#endif
#endif /* MCP_REQUEST_STATE_H */
