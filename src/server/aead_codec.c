/*
 * The default requestState codec: AES-256-GCM with the binding inside the
 * ciphertext (see mcp/request_state.h for the wire format).
 *
 * Sealed plaintext, a compact JSON object with sorted keys:
 *   {"expiresMs":<int>,"method":<str>,"paramsDigest":<base64url of 32 bytes>,
 *    "payload":<any>,"principal":<str or null>,
 *    "replayStore":<base64url of 16 bytes, only with an in-memory store>,
 *    "stateId":<base64url of 16 bytes>}
 * It is serialised by jansson rather than RFC 8785 because it must give the
 * payload back exactly: RFC 8785 reads every number as a double, which would
 * round integers above 2^53 and turn 1.0 into the integer 1. Only libmcp
 * reads it; interoperability lives in the params digest, which is RFC 8785.
 *
 * Opening checks, in this order, each failure with its own message:
 * base64url, format version, framing, key id, GCM tag, plaintext shape,
 * expiry, principal, method, params digest, replay store, single use
 * (which the server core defers, through mcp_codec_open_deferred(), until
 * it has accepted the rest of the request). A rejected state is
 * MCP_EINVAL with JSON-RPC code -32602; a failure of our own (memory, the
 * replay store) keeps its code with -32603.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/errors.h"
#include "protocol/base64.h"
#include "protocol/json_reader.h"
#include "protocol/utf8.h"
#include "server/aead_codec.h"
#include "server/aes_gcm.h"
#include "server/codec_internal.h"
#include "server/keyring.h"
#include "server/replay_store.h"
#include "server/secrets.h"

#define FORMAT_VERSION 0x01
#define DEFAULT_TTL_MS (10 * 60 * 1000)
#define DIGEST_BYTES 32

/* Domain separation: a tag from another protocol or another libmcp object
 * sealed under the same key can never verify as a requestState. */
static const char AAD_DOMAIN[] = "libmcp/requestState/v1";
#define AAD_MAX (sizeof AAD_DOMAIN + 1 + MCP_STATE_KEY_ID_MAX) /* the NUL is the 0x00 */

typedef struct aead_codec {
    mcp_keyring_t *ring; /* read-only once the codec exists */
    int64_t ttl_ms;
    int64_t (*now_ms)(void *user);
    void *clock_user;
    mcp_replay_store_t *replay_store; /* NULL: no single-use enforcement */
    mcp_random_fn random_bytes;
    void *random_user;
} aead_codec_t;

/* What the plaintext binds, as read back from it. */
typedef struct sealed_binding {
    int64_t expires_ms;
    const json_t *principal; /* string or null */
    const json_t *method;
    uint8_t params_digest[DIGEST_BYTES];
    uint8_t state_id[MCP_STATE_ID_BYTES];
    bool has_store; /* bound to the in-memory replay store `store` */
    uint8_t store[MCP_REPLAY_INSTANCE_BYTES];
    json_t *payload; /* borrowed from the parsed plaintext */
} sealed_binding_t;

/* ---- small helpers ------------------------------------------------------- */

static int64_t system_now_ms(void *user)
{
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int os_random_bytes(void *user, uint8_t *buf, size_t n)
{
    (void)user;
    return mcp_secret_random(buf, n);
}

static size_t build_aad(const mcp_state_key_t *key, uint8_t aad[AAD_MAX])
{
    memcpy(aad, AAD_DOMAIN, sizeof AAD_DOMAIN); /* with its NUL: the 0x00 */
    aad[sizeof AAD_DOMAIN] = FORMAT_VERSION;
    memcpy(aad + sizeof AAD_DOMAIN + 1, key->id, key->id_len);
    return sizeof AAD_DOMAIN + 1 + key->id_len;
}

/* The wire bytes before the ciphertext: version, key id length, key id,
 * nonce. */
static size_t header_len(size_t id_len)
{
    return 2 + id_len + MCP_AES_GCM_NONCE_BYTES;
}

static json_t *base64url_json(const uint8_t *bytes, size_t n)
{
    char text[64];
    mcp_base64url_encode(bytes, n, text);
    return json_string(text);
}

/* Decodes a base64url JSON string that must hold exactly `n` bytes. */
static bool decode_exact(const json_t *string, uint8_t *out, size_t n)
{
    uint8_t buf[64];
    size_t len = json_string_length(string), got = 0;
    if (!json_is_string(string) || len != mcp_base64url_encoded_len(n) ||
        mcp_base64_decoded_max(len) > sizeof buf ||
        mcp_base64url_decode(json_string_value(string), len, buf, &got) != MCP_OK || got != n)
        return false;
    memcpy(out, buf, n);
    return true;
}

/* Equality of two byte strings in time that does not depend on where they
 * differ (only on their lengths, which are not secret). */
static bool same_bytes(const char *a, size_t a_len, const char *b, size_t b_len)
{
    return a_len == b_len && mcp_secret_equal(a, b, a_len);
}

static int rejected(mcp_error_t *err, const char *why)
{
    return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL, "requestState %s", why);
}

static int internal_failure(mcp_error_t *err, int rc, const char *what)
{
    return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "%s: %s", what, mcp_strerror(rc));
}

/* ---- sealing ------------------------------------------------------------- */

/* The text json_dump_callback() writes, growing as it comes. jansson
 * (2.14) goes on when writing an object key fails: out of memory,
 * json_dumps() may return a text with a key left out, which would seal a
 * state that never opens. This buffer remembers that a write failed. */
typedef struct dump_buffer {
    char *text;
    size_t len, cap;
    bool failed;
} dump_buffer_t;

static int dump_append(const char *bytes, size_t n, void *user)
{
    dump_buffer_t *b = user;
    if (!b->failed && n >= b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (n >= cap - b->len)
            cap *= 2;
        char *grown = realloc(b->text, cap);
        if (grown) {
            b->text = grown;
            b->cap = cap;
        } else {
            b->failed = true;
        }
    }
    if (b->failed)
        return -1;
    memcpy(b->text + b->len, bytes, n);
    b->len += n;
    b->text[b->len] = '\0';
    return 0;
}

/* The compact text of the plaintext, keys sorted; NULL when out of
 * memory. */
static char *plaintext_text(const json_t *plain)
{
    dump_buffer_t b = {0};
    if (json_dump_callback(plain, dump_append, &b, JSON_COMPACT | JSON_SORT_KEYS) != 0 ||
        b.failed || !b.text) {
        if (b.text)
            mcp_secret_wipe(b.text, b.len);
        free(b.text);
        return NULL;
    }
    return b.text;
}

/* Builds the plaintext object into *plain (a new reference); `store` is
 * the identity of the codec's in-memory replay store, or NULL. */
static int plaintext_new(const json_t *payload, const mcp_state_binding_t *binding,
                         const uint8_t digest[DIGEST_BYTES],
                         const uint8_t state_id[MCP_STATE_ID_BYTES], const uint8_t *store,
                         int64_t expires_ms, json_t **plain, mcp_error_t *err)
{
    json_t *method = json_string(binding->method);
    json_t *principal = binding->principal ? json_string(binding->principal) : json_null();
    if (!method || !principal) {
        json_decref(method);
        json_decref(principal);
        /* json_string() fails for text that is not UTF-8 and when out of
         * memory: only the first is the caller's mistake. */
        if (mcp_utf8_valid(binding->method, strlen(binding->method)) &&
            (!binding->principal ||
             mcp_utf8_valid(binding->principal, strlen(binding->principal))))
            return internal_failure(err, MCP_ENOMEM, "cannot seal requestState");
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "cannot seal requestState: the method or principal is not UTF-8");
    }
    json_t *obj = json_object();
    /* json_object_set_new steals its value even when it fails, so one check
     * at the end covers every member. The payload is borrowed: only its
     * reference count changes. */
    int bad = json_object_set_new(obj, "expiresMs", json_integer(expires_ms)) |
              json_object_set_new(obj, "method", method) |
              json_object_set_new(obj, "paramsDigest", base64url_json(digest, DIGEST_BYTES)) |
              json_object_set(obj, "payload", (json_t *)payload) |
              json_object_set_new(obj, "principal", principal) |
              json_object_set_new(obj, "stateId", base64url_json(state_id, MCP_STATE_ID_BYTES));
    /* A store that forgets on restart cannot vouch for states sealed
     * before its time, or for another's: the state names its store. */
    if (store)
        bad |= json_object_set_new(obj, "replayStore",
                                   base64url_json(store, MCP_REPLAY_INSTANCE_BYTES));
    if (bad || !obj) {
        json_decref(obj);
        return internal_failure(err, MCP_ENOMEM, "cannot seal requestState");
    }
    *plain = obj;
    return MCP_OK;
}

/* version | id length | id | nonce | ciphertext | tag, base64url-encoded. */
static int seal_bytes(const mcp_state_key_t *key, const uint8_t nonce[MCP_AES_GCM_NONCE_BYTES],
                      const char *plain, size_t plain_len, char **out, mcp_error_t *err)
{
    size_t head = header_len(key->id_len);
    size_t raw_len = head + plain_len + MCP_AES_GCM_TAG_BYTES;
    uint8_t *raw = malloc(raw_len);
    char *text = malloc(mcp_base64url_encoded_len(raw_len) + 1);
    if (!raw || !text) {
        free(raw);
        free(text);
        return internal_failure(err, MCP_ENOMEM, "cannot seal requestState");
    }
    raw[0] = FORMAT_VERSION;
    raw[1] = (uint8_t)key->id_len;
    memcpy(raw + 2, key->id, key->id_len);
    memcpy(raw + 2 + key->id_len, nonce, MCP_AES_GCM_NONCE_BYTES);
    uint8_t aad[AAD_MAX];
    size_t aad_len = build_aad(key, aad);
    int rc = mcp_aes256gcm_seal(key->bytes, nonce, aad, aad_len, (const uint8_t *)plain,
                                plain_len, raw + head, raw + head + plain_len);
    if (rc == MCP_OK) {
        mcp_base64url_encode(raw, raw_len, text);
        *out = text;
    } else {
        free(text);
        internal_failure(err, rc, "cannot seal requestState");
    }
    free(raw);
    return rc;
}

static int aead_seal(void *ctx, const json_t *payload, const mcp_state_binding_t *binding,
                     char **out, mcp_error_t *err)
{
    const aead_codec_t *codec = ctx;
    const mcp_state_key_t *key = mcp_keyring_newest(codec->ring);
    int64_t now = codec->now_ms(codec->clock_user);
    if (now < 0 || now > INT64_MAX - codec->ttl_ms)
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "cannot seal requestState: the clock reads %lld",
                             (long long)now);
    uint8_t digest[DIGEST_BYTES], state_id[MCP_STATE_ID_BYTES], nonce[MCP_AES_GCM_NONCE_BYTES];
    int rc = mcp_state_params_digest(binding->params, digest);
    if (rc != MCP_OK)
        return internal_failure(err, rc, "cannot digest the params");
    /* A fresh random nonce per seal: with 96 random bits, a repeat under one
     * key stays negligible for far more states than a key should seal. */
    if ((rc = codec->random_bytes(codec->random_user, state_id, sizeof state_id)) != MCP_OK ||
        (rc = codec->random_bytes(codec->random_user, nonce, sizeof nonce)) != MCP_OK)
        return internal_failure(err, rc < 0 ? rc : MCP_EIO, "no random bytes");

    json_t *plain = NULL;
    rc = plaintext_new(payload, binding, digest, state_id,
                       mcp_replay_store_instance(codec->replay_store), now + codec->ttl_ms,
                       &plain, err);
    if (rc != MCP_OK)
        return rc;
    char *text = plaintext_text(plain);
    json_decref(plain);
    if (!text)
        return internal_failure(err, MCP_ENOMEM, "cannot serialise requestState");
    size_t text_len = strlen(text);
    rc = seal_bytes(key, nonce, text, text_len, out, err);
    mcp_secret_wipe(text, text_len); /* the payload may be confidential */
    free(text);
    return rc;
}

/* ---- opening ------------------------------------------------------------- */

/* Reads the plaintext's members; false when it is not the object we seal. */
static bool read_binding(const json_t *plain, sealed_binding_t *out)
{
    const json_t *expires = json_object_get(plain, "expiresMs");
    out->principal = json_object_get(plain, "principal");
    out->method = json_object_get(plain, "method");
    out->payload = json_object_get(plain, "payload");
    const json_t *store = json_object_get(plain, "replayStore");
    out->has_store = store != NULL;
    if (!json_is_integer(expires) || !json_is_string(out->method) || !out->payload ||
        !(json_is_string(out->principal) || json_is_null(out->principal)) ||
        !decode_exact(json_object_get(plain, "paramsDigest"), out->params_digest, DIGEST_BYTES) ||
        !decode_exact(json_object_get(plain, "stateId"), out->state_id, MCP_STATE_ID_BYTES) ||
        (store && !decode_exact(store, out->store, MCP_REPLAY_INSTANCE_BYTES)))
        return false;
    out->expires_ms = json_integer_value(expires);
    return true;
}

/* Decodes, frames, finds the key and decrypts. On success *plain is the
 * parsed plaintext object (a new reference). */
static int decrypt_state(const aead_codec_t *codec, const char *state, json_t **plain,
                         mcp_error_t *err)
{
    size_t state_len = strlen(state);
    uint8_t *raw = malloc(mcp_base64_decoded_max(state_len) + 1);
    if (!raw)
        return internal_failure(err, MCP_ENOMEM, "cannot open requestState");
    size_t raw_len = 0;
    int rc;
    if (mcp_base64url_decode(state, state_len, raw, &raw_len) != MCP_OK) {
        rc = rejected(err, "is not base64url");
    } else if (raw_len < 1 || raw[0] != FORMAT_VERSION) {
        rc = rejected(err, "has an unknown format version");
    } else if (raw_len < 2 || raw[1] == 0 || raw[1] > MCP_STATE_KEY_ID_MAX ||
               raw_len < header_len(raw[1]) + MCP_AES_GCM_TAG_BYTES) {
        rc = rejected(err, "is truncated");
    } else {
        size_t id_len = raw[1], head = header_len(id_len);
        size_t cipher_len = raw_len - head - MCP_AES_GCM_TAG_BYTES;
        const mcp_state_key_t *key = mcp_keyring_find(codec->ring, raw + 2, id_len);
        uint8_t *text = key ? malloc(cipher_len + 1) : NULL;
        uint8_t aad[AAD_MAX];
        if (!key) {
            rc = rejected(err, "was sealed with an unknown key");
        } else if (!text) {
            rc = internal_failure(err, MCP_ENOMEM, "cannot open requestState");
        } else if ((rc = mcp_aes256gcm_open(key->bytes, raw + 2 + id_len, aad,
                                            build_aad(key, aad), raw + head, cipher_len,
                                            raw + head + cipher_len, text)) != MCP_OK) {
            rc = rc == MCP_EINVAL ? rejected(err, "failed authentication")
                                  : internal_failure(err, rc, "cannot open requestState");
        } else {
            /* Payload strings may hold U+0000, which we sealed as \u0000.
             * json_read tells running out of memory from a malformed
             * text, which jansson's loader does not. */
            json_error_t error;
            *plain = json_read((const char *)text, cipher_len, &error);
            bool out_of_memory = !*plain && json_error_code(&error) == json_error_out_of_memory;
            mcp_secret_wipe(text, cipher_len);
            mcp_secret_wipe(&error, sizeof error); /* it may quote the plaintext */
            if (out_of_memory) {
                rc = internal_failure(err, MCP_ENOMEM, "cannot open requestState");
            } else if (!json_is_object(*plain)) {
                json_decref(*plain);
                *plain = NULL;
                rc = rejected(err, "holds a malformed plaintext");
            }
        }
        free(text);
    }
    free(raw);
    return rc;
}

/* Records the single use of state `id` by `principal` (a hash; the store
 * may hold each principal to a quota). A no-op without a replay store. */
static int redeem(const aead_codec_t *codec, const uint8_t id[MCP_STATE_ID_BYTES],
                  const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES], int64_t expires_ms,
                  mcp_error_t *err)
{
    if (!codec->replay_store)
        return MCP_OK;
    int rc = mcp_replay_store_redeem(codec->replay_store, id, principal, expires_ms,
                                     codec->now_ms(codec->clock_user));
    if (rc == MCP_EEXIST)
        return rejected(err, "was already used");
    if (rc != MCP_OK)
        return internal_failure(err, rc, "the replay store failed");
    return MCP_OK;
}

/* The binding checks, in the documented order; the last, single use, is
 * left to the caller when `ticket` is not NULL. */
static int check_binding(const aead_codec_t *codec, const sealed_binding_t *sealed,
                         const mcp_state_binding_t *binding, mcp_state_ticket_t *ticket,
                         mcp_error_t *err)
{
    int64_t now = codec->now_ms(codec->clock_user);
    if (now >= sealed->expires_ms)
        return rejected(err, "has expired");

    const char *principal = binding->principal;
    bool same_principal =
        json_is_null(sealed->principal)
            ? principal == NULL
            : principal != NULL &&
                  same_bytes(json_string_value(sealed->principal),
                             json_string_length(sealed->principal), principal, strlen(principal));
    if (!same_principal)
        return rejected(err, "belongs to a different principal");

    if (!same_bytes(json_string_value(sealed->method), json_string_length(sealed->method),
                    binding->method, strlen(binding->method)))
        return rejected(err, "was issued for a different method");

    uint8_t digest[DIGEST_BYTES];
    int rc = mcp_state_params_digest(binding->params, digest);
    if (rc != MCP_OK)
        return internal_failure(err, rc, "cannot digest the params");
    if (!mcp_secret_equal(digest, sealed->params_digest, DIGEST_BYTES))
        return rejected(err, "was issued for different params");

    /* A state of an in-memory store opens only with that store: any other
     * (another process's, this one's before a restart, a shared one that
     * never saw it redeemed) could let it through a second time. */
    const uint8_t *store = mcp_replay_store_instance(codec->replay_store);
    if (store ? !sealed->has_store ||
                    !mcp_secret_equal(store, sealed->store, MCP_REPLAY_INSTANCE_BYTES)
              : sealed->has_store)
        return rejected(err, "was sealed for another replay store");

    uint8_t who[MCP_PRINCIPAL_HASH_BYTES] = {0};
    if (codec->replay_store)
        mcp_replay_principal_hash(principal, who);
    if (ticket) {
        memcpy(ticket->id, sealed->state_id, MCP_STATE_ID_BYTES);
        memcpy(ticket->principal, who, MCP_PRINCIPAL_HASH_BYTES);
        ticket->expires_ms = sealed->expires_ms;
        return MCP_OK;
    }
    return redeem(codec, sealed->state_id, who, sealed->expires_ms, err);
}

static int open_state(const aead_codec_t *codec, const char *state,
                      const mcp_state_binding_t *binding, json_t **payload_out,
                      mcp_state_ticket_t *ticket, mcp_error_t *err)
{
    json_t *plain = NULL;
    int rc = decrypt_state(codec, state, &plain, err);
    if (rc != MCP_OK)
        return rc;
    sealed_binding_t sealed;
    if (!read_binding(plain, &sealed))
        rc = rejected(err, "holds a malformed plaintext");
    else if ((rc = check_binding(codec, &sealed, binding, ticket, err)) == MCP_OK)
        *payload_out = json_incref(sealed.payload);
    json_decref(plain);
    return rc;
}

static int aead_open(void *ctx, const char *state, const mcp_state_binding_t *binding,
                     json_t **payload_out, mcp_error_t *err)
{
    return open_state(ctx, state, binding, payload_out, NULL, err);
}

int mcp_codec_open_deferred(mcp_codec_t *codec, const char *state,
                            const mcp_state_binding_t *binding, json_t **payload_out,
                            mcp_state_ticket_t *ticket, mcp_error_t *err)
{
    memset(ticket, 0, sizeof *ticket);
    if (!codec || codec->ops.open != aead_open || !state || !binding || !binding->method ||
        !payload_out)
        return mcp_codec_open(codec, state, binding, payload_out, err); /* spends it */
    *payload_out = NULL;
    int rc = open_state(codec->ctx, state, binding, payload_out, ticket, err);
    if (rc != MCP_OK) {
        json_decref(*payload_out); /* never a payload out of a failed open */
        *payload_out = NULL;
        memset(ticket, 0, sizeof *ticket);
        return rc;
    }
    if (((const aead_codec_t *)codec->ctx)->replay_store)
        ticket->codec = codec;
    return MCP_OK;
}

int mcp_codec_redeem(const mcp_state_ticket_t *ticket, mcp_error_t *err)
{
    if (!ticket || !ticket->codec)
        return MCP_OK;
    return redeem(ticket->codec->ctx, ticket->id, ticket->principal, ticket->expires_ms, err);
}

/* ---- lifetime ------------------------------------------------------------ */

static void aead_free(void *ctx)
{
    aead_codec_t *codec = ctx;
    if (!codec)
        return;
    mcp_keyring_free(codec->ring);
    mcp_replay_store_free(codec->replay_store);
    free(codec);
}

static const mcp_codec_ops_t AEAD_OPS = {aead_seal, aead_open, aead_free};

mcp_codec_t *mcp_codec_aead_new_with_random(mcp_keyring_t *ring, const mcp_aead_options_t *opts,
                                            mcp_random_fn random_bytes, void *random_user,
                                            mcp_error_t *err)
{
    mcp_replay_store_t *store = opts ? opts->replay_store : NULL;
    const char *problem = NULL;
    if (!ring || mcp_keyring_count(ring) == 0)
        problem = "the keyring holds no key";
    else if (opts && opts->ttl_ms < 0)
        problem = "ttl_ms is negative";
    else if (!random_bytes)
        problem = "no source of random bytes";
    aead_codec_t *codec = problem ? NULL : calloc(1, sizeof *codec);
    if (!codec) {
        mcp_keyring_free(ring);
        mcp_replay_store_free(store);
        if (problem)
            mcp_error_set(err, MCP_EINVAL, 0, NULL, "mcp_codec_aead_new: %s", problem);
        else
            mcp_error_set(err, MCP_ENOMEM, 0, NULL, "mcp_codec_aead_new: out of memory");
        return NULL;
    }
    codec->ring = ring;
    codec->ttl_ms = opts && opts->ttl_ms > 0 ? opts->ttl_ms : DEFAULT_TTL_MS;
    codec->now_ms = opts && opts->now_ms ? opts->now_ms : system_now_ms;
    codec->clock_user = opts ? opts->clock_user : NULL;
    codec->replay_store = store;
    codec->random_bytes = random_bytes;
    codec->random_user = random_user;
    mcp_codec_t *wrapped = mcp_codec_new(&AEAD_OPS, codec); /* frees codec on failure */
    if (!wrapped)
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "mcp_codec_aead_new: out of memory");
    return wrapped;
}

mcp_codec_t *mcp_codec_aead_new(mcp_keyring_t *ring, const mcp_aead_options_t *opts,
                                mcp_error_t *err)
{
    return mcp_codec_aead_new_with_random(ring, opts, os_random_bytes, NULL, err);
}
