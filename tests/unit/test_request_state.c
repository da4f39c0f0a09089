/*
 * Sealed requestState: the AES-256-GCM codec's wire format (a golden state),
 * round trips, tamper resistance, every binding check and its order, single
 * use, key rotation, the params digest and the pluggable codec wrapper.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request_state.h"
#include "protocol/base64.h"
#include "server/aead_codec.h"
#include "server/aes_gcm.h"

/* The key 0x00..0x1f and another one. */
#define KEY_A "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
#define KEY_B "__79_Pv6-fj39vX08_Lx8O_u7ezr6uno5-bl5OPi4eA"

#define T0 INT64_C(1700000000000)
#define TEN_MINUTES INT64_C(600000)

/* ---- fixtures --------------------------------------------------------------- */

static int64_t fixed_clock(void *user)
{
    return *(const int64_t *)user;
}

/* Random bytes that count up from *user: the state id, then the nonce. */
static int counting_random(void *user, uint8_t *buf, size_t n)
{
    uint8_t *next = user;
    for (size_t i = 0; i < n; i++)
        buf[i] = (*next)++;
    return MCP_OK;
}

static int failing_random(void *user, uint8_t *buf, size_t n)
{
    (void)user, (void)buf, (void)n;
    return MCP_EIO;
}

static mcp_keyring_t *ring_from(const char *text)
{
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_load_text(ring, text, NULL), MCP_OK);
    return ring;
}

/* A codec over the keys in `keyring_text`, reading the time from *now. */
static mcp_codec_t *codec_new(const char *keyring_text, int64_t *now, mcp_replay_store_t *store)
{
    mcp_aead_options_t opts = {0, fixed_clock, now, store};
    mcp_codec_t *codec = mcp_codec_aead_new(ring_from(keyring_text), &opts, NULL);
    assert_non_null(codec);
    return codec;
}

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    return v;
}

static const char *const PARAMS_TEXT =
    "{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"},\"_meta\":{\"x\":1}}";

/* Seals `payload_text` for alice / tools/call / PARAMS_TEXT. */
static char *seal(mcp_codec_t *codec, const char *payload_text)
{
    json_t *payload = parse(payload_text), *params = parse(PARAMS_TEXT);
    mcp_state_binding_t binding = {"alice", "tools/call", params};
    char *state = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_codec_seal(codec, payload, &binding, &state, &err), MCP_OK);
    assert_non_null(state);
    json_decref(payload);
    json_decref(params);
    return state;
}

/* Opens `state` for the given binding. A failure must be MCP_EINVAL with
 * -32602 and no payload; its message is copied into why (if not NULL). */
static int try_open(mcp_codec_t *codec, const char *state, const char *principal,
                    const char *method, const char *params_text, json_t **payload,
                    char why[MCP_ERROR_MESSAGE_MAX])
{
    json_t *params = params_text ? parse(params_text) : NULL;
    mcp_state_binding_t binding = {principal, method, params};
    mcp_error_t err = {0};
    json_t *opened = (json_t *)(uintptr_t)1; /* must be overwritten */
    int rc = mcp_codec_open(codec, state, &binding, &opened, &err);
    json_decref(params);
    if (rc == MCP_OK) {
        assert_non_null(opened);
        assert_int_equal(err.code, 0);
    } else {
        assert_int_equal(rc, MCP_EINVAL);
        assert_int_equal(err.code, MCP_INVALID_PARAMS);
        assert_null(opened);
    }
    if (why)
        strcpy(why, err.message);
    if (payload)
        *payload = opened;
    else
        json_decref(opened);
    mcp_error_clear(&err);
    return rc;
}

static int open_as_sealed(mcp_codec_t *codec, const char *state, char why[MCP_ERROR_MESSAGE_MAX])
{
    return try_open(codec, state, "alice", "tools/call", PARAMS_TEXT, NULL, why);
}

/* The raw bytes of a state, into a malloc'd buffer. */
static uint8_t *decode_state(const char *state, size_t *len)
{
    uint8_t *raw = malloc(mcp_base64_decoded_max(strlen(state)) + 1);
    assert_int_equal(mcp_base64url_decode(state, strlen(state), raw, len), MCP_OK);
    return raw;
}

static char *encode_state(const uint8_t *raw, size_t len)
{
    char *text = malloc(mcp_base64url_encoded_len(len) + 1);
    mcp_base64url_encode(raw, len, text);
    return text;
}

/* ---- the wire format ---------------------------------------------------------- */

/* Computed independently (Python, the `cryptography` package, json.dumps with
 * sorted keys) for key 0x00..0x1f with id "k1", state id 0xa0..0xaf, nonce
 * 0xb0..0xbb, clock T0, the default TTL, payload {"step":1,"note":"hi"},
 * principal alice, tools/call and PARAMS_TEXT. */
static const char GOLDEN[] =
    "AQJrMbCxsrO0tba3uLm6u-J3P9OcpMk6NLXkgPdsv_K0DHniIx6_BW7-rtMx54Z-ai8BAEGqydfJKI8pXdXulwFPZ6Zp"
    "Wi-DCeMLVXfvAsWQnE3nOokenmGN1xr7S6h9H96BxJxPJ--hlCjdHyBj1zWQTTy6sUEnNzR5nbD24vBsz9v4EpfvAAMl"
    "mbZqaw0Ya8XOrC8s4FoHJS8cHWIdOfPPLb6oCjN83dMZ_yitlfeX8O3eTBM0RZVSJ5B3ZoT6dTl_h8-CMc0wfDrg8fH7"
    "FW-i1ofXeihIc7bylW-LicCaJtr9pTs";

static const char GOLDEN_PLAINTEXT[] =
    "{\"expiresMs\":1700000600000,\"method\":\"tools/call\","
    "\"paramsDigest\":\"tsS05xDxQuDeMJLYNHv47R2ToPM4ylhV03gtfw1izcA\","
    "\"payload\":{\"note\":\"hi\",\"step\":1},\"principal\":\"alice\","
    "\"stateId\":\"oKGio6SlpqeoqaqrrK2urw\"}";

static void test_golden_state(void **state)
{
    (void)state;
    int64_t now = T0;
    uint8_t next_random = 0xa0;
    mcp_aead_options_t opts = {0, fixed_clock, &now, NULL};
    mcp_codec_t *codec =
        mcp_codec_aead_new_with_random(ring_from("k1 " KEY_A), &opts, counting_random,
                                       &next_random, NULL);
    assert_non_null(codec);
    char *sealed = seal(codec, "{\"step\":1,\"note\":\"hi\"}");
    assert_string_equal(sealed, GOLDEN);
    json_t *payload = NULL;
    assert_int_equal(try_open(codec, GOLDEN, "alice", "tools/call", PARAMS_TEXT, &payload, NULL),
                     MCP_OK);
    json_t *want = parse("{\"note\":\"hi\",\"step\":1}");
    assert_true(json_equal(payload, want));
    json_decref(want);
    json_decref(payload);
    free(sealed);
    mcp_codec_free(codec);
}

/* The golden state, taken apart by hand: header fields, then the raw AEAD
 * with an AAD built from the documented layout. */
static void test_golden_state_layout(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *raw = decode_state(GOLDEN, &len);
    assert_int_equal(raw[0], 0x01);
    assert_int_equal(raw[1], 2);
    assert_memory_equal(raw + 2, "k1", 2);
    for (int i = 0; i < 12; i++)
        assert_int_equal(raw[4 + i], 0xb0 + i);
    size_t cipher_len = len - 4 - 12 - 16;
    assert_int_equal(cipher_len, strlen(GOLDEN_PLAINTEXT));

    static const uint8_t aad[] = "libmcp/requestState/v1\0\001k1"; /* its NUL is not AAD */
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    char *plain = calloc(1, cipher_len + 1);
    assert_int_equal(mcp_aes256gcm_open(key, raw + 4, aad, sizeof aad - 1, raw + 16, cipher_len,
                                        raw + 16 + cipher_len, (uint8_t *)plain),
                     MCP_OK);
    assert_string_equal(plain, GOLDEN_PLAINTEXT);
    free(plain);
    free(raw);
}

/* The payload comes back exactly: integers beyond 2^53 and reals that
 * happen to be whole keep their value and their type. */
static void test_round_trips(void **state)
{
    (void)state;
    static const char *const payloads[] = {
        "{\"a\":[1,2,{\"b\":null}],\"c\":true}",
        "\"just a string\"",
        "9007199254740993",
        "-9223372036854775808",
        "1.0",
        "-0.5",
        "1e300",
        "null",
        "[]",
        "{}",
        "{\"text\":\"h\\u00e9llo \\u0000 \\u2713 \\ud83d\\ude00 \\\"q\\\" \\\\ /\"}",
    };
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char *sealed = seal(codec, payloads[i]);
        json_t *opened = NULL, *want = parse(payloads[i]);
        assert_int_equal(
            try_open(codec, sealed, "alice", "tools/call", PARAMS_TEXT, &opened, NULL), MCP_OK);
        assert_int_equal(json_typeof(opened), json_typeof(want));
        assert_true(json_equal(opened, want));
        json_decref(opened);
        json_decref(want);
        free(sealed);
    }
    mcp_codec_free(codec);
}

static void test_large_payload_round_trips(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    size_t n = 100000;
    char *big = malloc(n + 3);
    big[0] = '"';
    memset(big + 1, 'x', n);
    strcpy(big + 1 + n, "\"");
    char *sealed = seal(codec, big);
    json_t *opened = NULL;
    assert_int_equal(try_open(codec, sealed, "alice", "tools/call", PARAMS_TEXT, &opened, NULL),
                     MCP_OK);
    assert_int_equal(json_string_length(opened), n);
    json_decref(opened);
    free(sealed);
    free(big);
    mcp_codec_free(codec);
}

static void test_two_seals_differ(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *a = seal(codec, "{}"), *b = seal(codec, "{}");
    assert_string_not_equal(a, b); /* fresh state id and nonce each time */
    size_t la, lb;
    uint8_t *ra = decode_state(a, &la), *rb = decode_state(b, &lb);
    assert_memory_not_equal(ra + 4, rb + 4, 12);
    free(ra), free(rb), free(a), free(b);
    mcp_codec_free(codec);
}

/* ---- tampering -------------------------------------------------------------- */

static void test_every_bit_flip_fails(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{\"step\":1}");
    size_t len = 0;
    uint8_t *raw = decode_state(sealed, &len);
    for (size_t bit = 0; bit < len * 8; bit++) {
        raw[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        char *mutated = encode_state(raw, len);
        assert_int_not_equal(open_as_sealed(codec, mutated, NULL), MCP_OK);
        free(mutated);
        raw[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* The untouched bytes still open, so the loop tested real mutations. */
    char *same = encode_state(raw, len);
    assert_int_equal(open_as_sealed(codec, same, NULL), MCP_OK);
    free(same);
    free(raw);
    free(sealed);
    mcp_codec_free(codec);
}

static void test_every_truncation_and_extension_fails(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{\"step\":1}");
    size_t len = 0;
    uint8_t *raw = decode_state(sealed, &len);
    for (size_t n = 0; n < len; n++) {
        char *cut = encode_state(raw, n);
        assert_int_not_equal(open_as_sealed(codec, cut, NULL), MCP_OK);
        free(cut);
    }
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, raw, len);
    longer[len] = 0;
    char *extended = encode_state(longer, len + 1);
    assert_int_not_equal(open_as_sealed(codec, extended, NULL), MCP_OK);
    free(extended);
    free(longer);

    char *text = strdup(sealed);
    for (size_t n = strlen(sealed); n-- > 0;) {
        text[n] = '\0';
        assert_int_not_equal(open_as_sealed(codec, text, NULL), MCP_OK);
    }
    free(text);
    free(raw);
    free(sealed);
    mcp_codec_free(codec);
}

static void test_wrong_key_and_unknown_key_id(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *sealer = codec_new("k1 " KEY_A, &now, NULL);
    mcp_codec_t *same_id_other_key = codec_new("k1 " KEY_B, &now, NULL);
    mcp_codec_t *other_id = codec_new("k2 " KEY_A, &now, NULL);
    char *sealed = seal(sealer, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    assert_int_equal(open_as_sealed(same_id_other_key, sealed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState failed authentication");
    assert_int_equal(open_as_sealed(other_id, sealed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was sealed with an unknown key");
    free(sealed);
    mcp_codec_free(sealer);
    mcp_codec_free(same_id_other_key);
    mcp_codec_free(other_id);
}

/* The key id is in the AAD: relabelling a state with the id of another key
 * that has the same bytes must still fail. */
static void test_key_id_is_authenticated(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A "\nk2 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{}");
    size_t len = 0;
    uint8_t *raw = decode_state(sealed, &len);
    assert_memory_equal(raw + 2, "k2", 2);
    raw[3] = '1';
    char *relabelled = encode_state(raw, len);
    char why[MCP_ERROR_MESSAGE_MAX];
    assert_int_equal(open_as_sealed(codec, relabelled, why), MCP_EINVAL);
    assert_string_equal(why, "requestState failed authentication");
    free(relabelled);
    free(raw);
    free(sealed);
    mcp_codec_free(codec);
}

/* ---- the binding ------------------------------------------------------------- */

static void test_expiry(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    now = T0 - 3600000; /* a clock that went back still opens */
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    now = T0 + TEN_MINUTES - 1;
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    now = T0 + TEN_MINUTES;
    assert_int_equal(open_as_sealed(codec, sealed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState has expired");
    free(sealed);
    mcp_codec_free(codec);

    now = T0;
    mcp_aead_options_t opts = {5000, fixed_clock, &now, NULL};
    codec = mcp_codec_aead_new(ring_from("k1 " KEY_A), &opts, NULL);
    sealed = seal(codec, "{}");
    now = T0 + 4999;
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    now = T0 + 5000;
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_EINVAL);
    free(sealed);
    mcp_codec_free(codec);
}

static void test_system_clock_is_the_default(void **state)
{
    (void)state;
    mcp_codec_t *codec = mcp_codec_aead_new(ring_from("k1 " KEY_A), NULL, NULL);
    char *sealed = seal(codec, "{}");
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    free(sealed);
    mcp_codec_free(codec);
}

static void test_principal_binding(void **state)
{
    (void)state;
    static const struct {
        const char *sealed_for, *opened_by;
        int opens;
    } cases[] = {
        {"alice", "alice", 1}, {NULL, NULL, 1},      {"", "", 1},
        {"alice", "bob", 0},   {"alice", NULL, 0},   {NULL, "alice", 0},
        {"", NULL, 0},         {NULL, "", 0},        {"alice", "alicE", 0},
        {"alice", "alice2", 0}, {"alice2", "alice", 0},
    };
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    json_t *payload = parse("{}");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_state_binding_t binding = {cases[i].sealed_for, "tools/call", NULL};
        char *sealed = NULL, why[MCP_ERROR_MESSAGE_MAX];
        assert_int_equal(mcp_codec_seal(codec, payload, &binding, &sealed, NULL), MCP_OK);
        int rc = try_open(codec, sealed, cases[i].opened_by, "tools/call", NULL, NULL, why);
        print_message("case %zu\n", i);
        assert_int_equal(rc, cases[i].opens ? MCP_OK : MCP_EINVAL);
        if (!cases[i].opens)
            assert_string_equal(why, "requestState belongs to a different principal");
        free(sealed);
    }
    json_decref(payload);
    mcp_codec_free(codec);
}

static void test_method_binding(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    static const char *const others[] = {"prompts/get", "tools/cal", "tools/calls", ""};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(try_open(codec, sealed, "alice", others[i], PARAMS_TEXT, NULL, why),
                         MCP_EINVAL);
        assert_string_equal(why, "requestState was issued for a different method");
    }
    free(sealed);
    mcp_codec_free(codec);
}

/* Only the salient params count: _meta, inputResponses and requestState may
 * change between rounds, and member order never matters. */
static void test_params_binding(void **state)
{
    (void)state;
    static const struct {
        const char *params;
        int opens;
    } cases[] = {
        {"{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"},\"_meta\":{\"x\":1}}", 1},
        {"{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"}}", 1},
        {"{\"arguments\":{\"env\":\"prod\"},\"name\":\"deploy\"}", 1},
        {"{\"_meta\":{\"progressToken\":7},\"arguments\":{\"env\":\"prod\"},\"name\":\"deploy\","
         "\"inputResponses\":{\"confirm\":{\"action\":\"accept\"}},\"requestState\":\"abc\"}",
         1},
        {"{\"name\":\"deploy\",\"arguments\":{\"env\":\"dev\"}}", 0},
        {"{\"name\":\"Deploy\",\"arguments\":{\"env\":\"prod\"}}", 0},
        {"{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\",\"_meta\":{}}}", 0},
        {"{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"},\"task\":{}}", 0},
        {"{\"name\":\"deploy\"}", 0},
        {"{}", 0},
        {NULL, 0},
    };
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    char *sealed = seal(codec, "{}");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[MCP_ERROR_MESSAGE_MAX];
        print_message("case %zu\n", i);
        int rc = try_open(codec, sealed, "alice", "tools/call", cases[i].params, NULL, why);
        assert_int_equal(rc, cases[i].opens ? MCP_OK : MCP_EINVAL);
        if (!cases[i].opens)
            assert_string_equal(why, "requestState was issued for different params");
    }
    free(sealed);

    /* NULL params are the same as {} (and as {} plus only non-salient members). */
    json_t *payload = parse("{}");
    mcp_state_binding_t none = {"alice", "tools/call", NULL};
    assert_int_equal(mcp_codec_seal(codec, payload, &none, &sealed, NULL), MCP_OK);
    assert_int_equal(try_open(codec, sealed, "alice", "tools/call", "{}", NULL, NULL), MCP_OK);
    assert_int_equal(
        try_open(codec, sealed, "alice", "tools/call", "{\"_meta\":{\"a\":1}}", NULL, NULL),
        MCP_OK);
    assert_int_equal(try_open(codec, sealed, "alice", "tools/call", "{\"a\":1}", NULL, NULL),
                     MCP_EINVAL);
    free(sealed);
    json_decref(payload);
    mcp_codec_free(codec);
}

static void test_single_use(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, mcp_replay_store_memory_new(0));
    char *sealed = seal(codec, "{}"), *other = seal(codec, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    /* A state rejected for its binding is not spent... */
    assert_int_equal(try_open(codec, sealed, "mallory", "tools/call", PARAMS_TEXT, NULL, why),
                     MCP_EINVAL);
    assert_string_equal(why, "requestState belongs to a different principal");
    /* ...so its owner can still use it, once. */
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(codec, sealed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was already used");
    assert_int_equal(open_as_sealed(codec, other, NULL), MCP_OK);
    free(sealed);
    free(other);
    mcp_codec_free(codec);

    /* Without a store a state opens until it expires. */
    codec = codec_new("k1 " KEY_A, &now, NULL);
    sealed = seal(codec, "{}");
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(codec, sealed, NULL), MCP_OK);
    free(sealed);
    mcp_codec_free(codec);
}

static int broken_redeem(void *ctx, const uint8_t id[16], int64_t expires_ms, int64_t now_ms)
{
    (void)ctx, (void)id, (void)expires_ms, (void)now_ms;
    return MCP_EIO;
}

/* A store that fails is a server fault, not a verdict on the state. */
static void test_replay_store_failure_is_internal(void **state)
{
    (void)state;
    int64_t now = T0;
    static const mcp_replay_store_ops_t broken = {broken_redeem, NULL};
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, mcp_replay_store_new(&broken, NULL));
    char *sealed = seal(codec, "{}");
    json_t *params = parse(PARAMS_TEXT), *payload = NULL;
    mcp_state_binding_t binding = {"alice", "tools/call", params};
    mcp_error_t err = {0};
    assert_int_equal(mcp_codec_open(codec, sealed, &binding, &payload, &err), MCP_EIO);
    assert_int_equal(err.code, MCP_INTERNAL_ERROR);
    assert_null(payload);
    mcp_error_clear(&err);
    json_decref(params);
    free(sealed);
    mcp_codec_free(codec);
}

static void test_rotation(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *old = codec_new("k1 " KEY_A, &now, NULL);
    mcp_codec_t *rotated = codec_new("k1 " KEY_A "\nk2 " KEY_B, &now, NULL);
    char *from_old = seal(old, "{\"v\":1}"), *from_rotated = seal(rotated, "{\"v\":2}");
    size_t len = 0;
    uint8_t *raw = decode_state(from_rotated, &len);
    assert_int_equal(raw[1], 2);
    assert_memory_equal(raw + 2, "k2", 2); /* the newest key seals */
    free(raw);
    raw = decode_state(from_old, &len);
    assert_memory_equal(raw + 2, "k1", 2);
    free(raw);
    assert_int_equal(open_as_sealed(rotated, from_old, NULL), MCP_OK); /* old keys open */
    assert_int_equal(open_as_sealed(rotated, from_rotated, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(old, from_rotated, NULL), MCP_EINVAL);
    free(from_old);
    free(from_rotated);
    mcp_codec_free(old);
    mcp_codec_free(rotated);
}

/* A restart (a new in-memory store under the same keys) must not let a
 * redeemed state open again: with no memory of it, the new store refuses
 * every state bound to the old one, redeemed or not. */
static void test_single_use_survives_a_restart(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *before = codec_new("k1 " KEY_A, &now, mcp_replay_store_memory_new(0));
    char *redeemed = seal(before, "{}"), *in_flight = seal(before, "{}");
    assert_int_equal(open_as_sealed(before, redeemed, NULL), MCP_OK);
    mcp_codec_free(before);

    mcp_codec_t *after = codec_new("k1 " KEY_A, &now, mcp_replay_store_memory_new(0));
    char why[MCP_ERROR_MESSAGE_MAX];
    assert_int_equal(open_as_sealed(after, redeemed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was sealed for another replay store");
    assert_int_equal(open_as_sealed(after, in_flight, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was sealed for another replay store");
    /* Its own states are single-use as ever. */
    char *fresh = seal(after, "{}");
    assert_int_equal(open_as_sealed(after, fresh, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(after, fresh, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was already used");
    free(redeemed), free(in_flight), free(fresh);
    mcp_codec_free(after);
}

/* A key rotation that hands the store on: what either codec redeemed
 * stays redeemed under both, and states in flight still open, once. */
static void test_rotation_shares_the_store(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_replay_store_t *store = mcp_replay_store_memory_new(0);
    mcp_codec_t *old = codec_new("k1 " KEY_A, &now, mcp_replay_store_ref(store));
    mcp_codec_t *rotated = codec_new("k1 " KEY_A "\nk2 " KEY_B, &now, store);
    char *redeemed = seal(old, "{}"), *in_flight = seal(old, "{}"), *fresh = seal(rotated, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    assert_int_equal(open_as_sealed(old, redeemed, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(rotated, redeemed, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was already used");
    assert_int_equal(open_as_sealed(rotated, in_flight, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(old, in_flight, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was already used");
    mcp_codec_free(old); /* the store lives on in the new codec */
    assert_int_equal(open_as_sealed(rotated, fresh, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(rotated, fresh, NULL), MCP_EINVAL);
    free(redeemed), free(in_flight), free(fresh);
    mcp_codec_free(rotated);
}

static int shared_redeem(void *ctx, const uint8_t id[16], int64_t expires_ms, int64_t now_ms)
{
    (void)expires_ms, (void)now_ms;
    uint8_t(*seen)[16] = ctx; /* seen[0] counts, ids from seen[1] */
    for (int i = 1; i <= seen[0][0]; i++)
        if (memcmp(seen[i], id, 16) == 0)
            return MCP_EEXIST;
    memcpy(seen[++seen[0][0]], id, 16);
    return MCP_OK;
}

/* The binding to a store: states of an in-memory store open with that
 * store only; a store of your own (shared, persistent) binds nothing, so
 * its states open on every instance that uses it. */
static void test_store_binding(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *memory = codec_new("k1 " KEY_A, &now, mcp_replay_store_memory_new(0));
    mcp_codec_t *none = codec_new("k1 " KEY_A, &now, NULL);
    static uint8_t seen[8][16];
    static const mcp_replay_store_ops_t shared_ops = {shared_redeem, NULL};
    mcp_codec_t *one = codec_new("k1 " KEY_A, &now, mcp_replay_store_new(&shared_ops, seen));
    mcp_codec_t *two = codec_new("k1 " KEY_A, &now, mcp_replay_store_new(&shared_ops, seen));
    char *bound = seal(memory, "{}"), *unbound = seal(none, "{}"), *shared = seal(one, "{}");
    char why[MCP_ERROR_MESSAGE_MAX];
    const struct {
        mcp_codec_t *codec;
        const char *state;
    } refused[] = {{none, bound}, {one, bound}, {memory, unbound}, {memory, shared}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        print_message("case %zu\n", i);
        assert_int_equal(open_as_sealed(refused[i].codec, refused[i].state, why), MCP_EINVAL);
        assert_string_equal(why, "requestState was sealed for another replay store");
    }
    assert_int_equal(open_as_sealed(two, shared, NULL), MCP_OK); /* another instance */
    assert_int_equal(open_as_sealed(one, shared, why), MCP_EINVAL);
    assert_string_equal(why, "requestState was already used");
    assert_int_equal(open_as_sealed(one, unbound, NULL), MCP_OK);
    assert_int_equal(open_as_sealed(memory, bound, NULL), MCP_OK);
    free(bound), free(unbound), free(shared);
    mcp_codec_free(memory), mcp_codec_free(none), mcp_codec_free(one), mcp_codec_free(two);
}

/* Opens a fresh state of `principal`, deferred or not. */
static int open_fresh(mcp_codec_t *codec, const char *principal, bool deferred,
                      mcp_error_t *err)
{
    json_t *payload = parse("{}"), *params = parse(PARAMS_TEXT), *opened = NULL;
    mcp_state_binding_t binding = {principal, "tools/call", params};
    char *sealed = NULL;
    assert_int_equal(mcp_codec_seal(codec, payload, &binding, &sealed, NULL), MCP_OK);
    int rc;
    if (deferred) {
        mcp_state_ticket_t ticket;
        rc = mcp_codec_open_deferred(codec, sealed, &binding, &opened, &ticket, err);
        assert_int_equal(rc, MCP_OK);
        rc = mcp_codec_redeem(&ticket, err);
    } else {
        rc = mcp_codec_open(codec, sealed, &binding, &opened, err);
    }
    json_decref(opened);
    json_decref(payload);
    json_decref(params);
    free(sealed);
    return rc;
}

/* The store learns who redeems, on both ways of opening: one principal
 * cannot take the others' room. Its refusal is a server fault (-32603). */
static void test_store_quota_per_principal(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new(
        "k1 " KEY_A, &now,
        mcp_replay_store_memory_new_with(
            &(mcp_replay_store_memory_options_t){.max_entries = 8, .max_per_principal = 2}));
    mcp_error_t err = {0};
    for (int deferred = 0; deferred < 2; deferred++) {
        const char *who = deferred ? "mallory" : "trudy";
        print_message("deferred %d\n", deferred);
        assert_int_equal(open_fresh(codec, who, deferred, NULL), MCP_OK);
        assert_int_equal(open_fresh(codec, who, deferred, NULL), MCP_OK);
        assert_int_equal(open_fresh(codec, who, deferred, &err), MCP_ELIMIT);
        assert_int_equal(err.code, MCP_INTERNAL_ERROR);
        mcp_error_clear(&err);
    }
    assert_int_equal(open_fresh(codec, "alice", true, NULL), MCP_OK);
    assert_int_equal(open_fresh(codec, "alice", false, NULL), MCP_OK);
    /* No principal: nobody to hold to a share, only the store's size. */
    assert_int_equal(open_fresh(codec, NULL, false, NULL), MCP_OK);
    assert_int_equal(open_fresh(codec, NULL, true, NULL), MCP_OK);
    assert_int_equal(open_fresh(codec, NULL, false, NULL), MCP_ELIMIT); /* 8 held */
    mcp_codec_free(codec);
}

/* ---- the order of the checks -------------------------------------------------- */

/* Seals `plain` as if by the codec (key A, id "k1"), for plaintexts the codec
 * itself would never write. */
static char *forge(const char *plain)
{
    static const uint8_t aad[] = "libmcp/requestState/v1\0\001k1";
    uint8_t key[32], nonce[12] = {9};
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    size_t n = strlen(plain), len = 4 + 12 + n + 16;
    uint8_t *raw = malloc(len);
    memcpy(raw, "\001\002k1", 4);
    memcpy(raw + 4, nonce, 12);
    assert_int_equal(mcp_aes256gcm_seal(key, nonce, aad, sizeof aad - 1, (const uint8_t *)plain,
                                        n, raw + 16, raw + 16 + n),
                     MCP_OK);
    char *text = encode_state(raw, len);
    free(raw);
    return text;
}

static char *encode_bytes(const char *bytes, size_t n)
{
    return encode_state((const uint8_t *)bytes, n);
}

static void test_each_check_has_its_message_in_order(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, mcp_replay_store_memory_new(0));
    char *good = seal(codec, "{}");
    char *v2 = encode_bytes("\002\002k1", 4);
    char *bare_version = encode_bytes("\001", 1);
    char *empty_id = encode_bytes("\001\000aaaaaaaaaaaaaaaaaaaaaaaaaaaa", 30);
    uint8_t long_raw[2 + 33 + 12 + 16] = {1, 33};
    char *long_id = encode_state(long_raw, sizeof long_raw);
    uint8_t unknown_raw[2 + 2 + 12 + 16] = {1, 2, 'k', '9'};
    char *unknown = encode_state(unknown_raw, sizeof unknown_raw);
    uint8_t empty_cipher[2 + 2 + 12 + 16] = {1, 2, 'k', '1'};
    char *forged_tag = encode_state(empty_cipher, sizeof empty_cipher);
    char *not_json = forge("not json");

    const struct {
        const char *state, *principal, *method, *params;
        int64_t now;
        const char *message;
    } cases[] = {
        {"!!!!", "alice", "tools/call", PARAMS_TEXT, T0, "requestState is not base64url"},
        {"AQ=", "alice", "tools/call", PARAMS_TEXT, T0, "requestState is not base64url"},
        {"", "alice", "tools/call", PARAMS_TEXT, T0, "requestState has an unknown format version"},
        {v2, "alice", "tools/call", PARAMS_TEXT, T0, "requestState has an unknown format version"},
        {bare_version, "alice", "tools/call", PARAMS_TEXT, T0, "requestState is truncated"},
        {empty_id, "alice", "tools/call", PARAMS_TEXT, T0, "requestState is truncated"},
        {long_id, "alice", "tools/call", PARAMS_TEXT, T0, "requestState is truncated"},
        {unknown, "alice", "tools/call", PARAMS_TEXT, T0,
         "requestState was sealed with an unknown key"},
        {forged_tag, "alice", "tools/call", PARAMS_TEXT, T0, "requestState failed authentication"},
        {not_json, "alice", "tools/call", PARAMS_TEXT, T0,
         "requestState holds a malformed plaintext"},
        /* From here on a good state; each row fixes the earliest problem of the
         * previous one, and the later problems stay. */
        {good, "bob", "prompts/get", "{}", T0 + TEN_MINUTES, "requestState has expired"},
        {good, "bob", "prompts/get", "{}", T0, "requestState belongs to a different principal"},
        {good, "alice", "prompts/get", "{}", T0, "requestState was issued for a different method"},
        {good, "alice", "tools/call", "{}", T0, "requestState was issued for different params"},
        {good, "alice", "tools/call", PARAMS_TEXT, T0, NULL},
        {good, "alice", "tools/call", PARAMS_TEXT, T0, "requestState was already used"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[MCP_ERROR_MESSAGE_MAX];
        now = cases[i].now;
        print_message("case %zu\n", i);
        int rc = try_open(codec, cases[i].state, cases[i].principal, cases[i].method,
                          cases[i].params, NULL, why);
        if (!cases[i].message) {
            assert_int_equal(rc, MCP_OK);
            continue;
        }
        assert_int_equal(rc, MCP_EINVAL);
        assert_string_equal(why, cases[i].message);
    }
    free(good), free(v2), free(bare_version), free(empty_id), free(long_id), free(unknown);
    free(forged_tag), free(not_json);
    mcp_codec_free(codec);
}

/* Authentic plaintexts that are not what the codec writes are refused. */
static void test_malformed_plaintexts_are_refused(void **state)
{
    (void)state;
#define DIGEST "\"paramsDigest\":\"tsS05xDxQuDeMJLYNHv47R2ToPM4ylhV03gtfw1izcA\""
#define SID "\"stateId\":\"oKGio6SlpqeoqaqrrK2urw\""
#define REST "\"method\":\"tools/call\",\"payload\":{},\"principal\":\"alice\""
    static const char *const plains[] = {
        "",
        "[]",
        "{\"expiresMs\":1700000600000," REST "," DIGEST "," SID "} trailing",
        "{\"expiresMs\":1700000600000," REST "," DIGEST "}",
        "{\"expiresMs\":1700000600000," REST "," SID "}",
        "{\"expiresMs\":1700000600000.5," REST "," DIGEST "," SID "}",
        "{\"expiresMs\":\"1700000600000\"," REST "," DIGEST "," SID "}",
        "{\"expiresMs\":1700000600000,\"method\":7,\"payload\":{},\"principal\":\"alice\"," DIGEST
        "," SID "}",
        "{\"expiresMs\":1700000600000,\"method\":\"tools/call\",\"principal\":\"alice\"," DIGEST
        "," SID "}",
        "{\"expiresMs\":1700000600000,\"method\":\"tools/call\",\"payload\":{},\"principal\":1,"
        DIGEST "," SID "}",
        "{\"expiresMs\":1700000600000," REST "," DIGEST ",\"stateId\":\"oKGio6SlpqeoqaqrrK2u\"}",
        "{\"expiresMs\":1700000600000," REST "," DIGEST ",\"stateId\":\"oKGio6SlpqeoqaqrrK2urw==\"}",
        "{\"expiresMs\":1700000600000," REST ",\"paramsDigest\":\"tsS05xDxQuDeMJLYNHv4\"," SID
        "}",
        "{\"expiresMs\":1700000600000," REST "," DIGEST "," SID ",\"method\":\"tools/call\"}",
    };
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    for (size_t i = 0; i < sizeof plains / sizeof plains[0]; i++) {
        char *forged = forge(plains[i]), why[MCP_ERROR_MESSAGE_MAX];
        print_message("case %zu\n", i);
        assert_int_equal(open_as_sealed(codec, forged, why), MCP_EINVAL);
        assert_string_equal(why, "requestState holds a malformed plaintext");
        free(forged);
    }
    /* The well-formed sibling of those plaintexts opens: the forge is sound. */
    char *forged = forge("{\"expiresMs\":1700000600000," REST "," DIGEST "," SID "}");
    assert_int_equal(open_as_sealed(codec, forged, NULL), MCP_OK);
    free(forged);
    mcp_codec_free(codec);
#undef DIGEST
#undef SID
#undef REST
}

/* ---- construction and arguments -------------------------------------------------- */

static void test_aead_new_refuses_bad_configuration(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    assert_null(mcp_codec_aead_new(NULL, NULL, &err));
    assert_int_equal(mcp_codec_aead_new(NULL, NULL, &err) == NULL, 1);
    /* The ring and the store are owned even on failure (LeakSanitizer checks). */
    mcp_aead_options_t opts = {0, NULL, NULL, mcp_replay_store_memory_new(0)};
    assert_null(mcp_codec_aead_new(mcp_keyring_new(), &opts, &err));
    assert_non_null(strstr(err.message, "no key"));
    opts = (mcp_aead_options_t){-1, NULL, NULL, mcp_replay_store_memory_new(0)};
    assert_null(mcp_codec_aead_new(ring_from("k1 " KEY_A), &opts, &err));
    assert_non_null(strstr(err.message, "ttl_ms"));
    mcp_error_clear(&err);
    mcp_codec_free(NULL);
}

static void test_seal_and_open_refuse_bad_arguments(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_codec_t *codec = codec_new("k1 " KEY_A, &now, NULL);
    json_t *payload = json_object(), *opened = NULL;
    mcp_state_binding_t good = {NULL, "tools/call", NULL}, no_method = {NULL, NULL, NULL};
    mcp_state_binding_t bad_utf8 = {"\xff", "tools/call", NULL};
    char *out = (char *)"garbage";
    mcp_error_t err = {0};
    assert_int_equal(mcp_codec_seal(NULL, payload, &good, &out, &err), MCP_EINVAL);
    assert_null(out);
    assert_int_equal(mcp_codec_seal(codec, NULL, &good, &out, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_seal(codec, payload, NULL, &out, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_seal(codec, payload, &no_method, &out, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_seal(codec, payload, &good, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_seal(codec, payload, &bad_utf8, &out, &err), MCP_EINVAL);
    assert_null(out);
    assert_int_equal(mcp_codec_open(codec, NULL, &good, &opened, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_INVALID_PARAMS);
    assert_int_equal(mcp_codec_open(codec, "AQ", NULL, &opened, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_open(codec, "AQ", &no_method, &opened, &err), MCP_EINVAL);
    assert_int_equal(mcp_codec_open(codec, "AQ", &good, NULL, &err), MCP_EINVAL);
    assert_null(opened);
    mcp_error_clear(&err);
    json_decref(payload);
    mcp_codec_free(codec);
}

static void test_random_failure_fails_the_seal(void **state)
{
    (void)state;
    int64_t now = T0;
    mcp_aead_options_t opts = {0, fixed_clock, &now, NULL};
    mcp_codec_t *codec = mcp_codec_aead_new_with_random(ring_from("k1 " KEY_A), &opts,
                                                        failing_random, NULL, NULL);
    json_t *payload = json_object();
    mcp_state_binding_t binding = {NULL, "tools/call", NULL};
    char *out = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_codec_seal(codec, payload, &binding, &out, &err), MCP_EIO);
    assert_int_equal(err.code, MCP_INTERNAL_ERROR);
    assert_null(out);
    mcp_error_clear(&err);
    json_decref(payload);
    mcp_codec_free(codec);
}

/* ---- the params digest ------------------------------------------------------------ */

static void digest_of(const char *params_text, uint8_t out[32])
{
    json_t *params = params_text ? parse(params_text) : NULL;
    assert_int_equal(mcp_state_params_digest(params, out), MCP_OK);
    json_decref(params);
}

static void assert_hex(const uint8_t digest[32], const char *hex)
{
    char text[65];
    for (int i = 0; i < 32; i++)
        snprintf(text + 2 * i, 3, "%02x", digest[i]);
    assert_string_equal(text, hex);
}

static void test_params_digest(void **state)
{
    (void)state;
    /* SHA-256("{}") and SHA-256("{\"arguments\":{\"env\":\"prod\"},\"name\":\"deploy\"}"). */
    static const char EMPTY[] = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    static const char DEPLOY[] =
        "b6c4b4e710f142e0de3092d8347bf8ed1d93a0f338ca5855d3782d7f0d62cdc0";
    uint8_t d[32];
    digest_of(NULL, d);
    assert_hex(d, EMPTY);
    digest_of("{}", d);
    assert_hex(d, EMPTY);
    digest_of("{\"_meta\":{},\"inputResponses\":{},\"requestState\":\"x\"}", d);
    assert_hex(d, EMPTY);
    digest_of(PARAMS_TEXT, d);
    assert_hex(d, DEPLOY);
    digest_of("{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"}}", d);
    assert_hex(d, DEPLOY);
    digest_of("{\"arguments\":{\"env\":\"prod\"},\"requestState\":\"y\",\"name\":\"deploy\"}", d);
    assert_hex(d, DEPLOY);
    /* RFC 8785 proper: numbers in ECMAScript form, members in UTF-16 order
     * (U+1F600 sorts before U+FF5E there, after it in UTF-8). The digest of
     * {"a":1e+21,"b":1,"\U0001F600":0,"\uFF5E":0}, computed independently. */
    digest_of("{\"\\uff5e\":0,\"b\":1.0,\"\\ud83d\\ude00\":0,\"a\":1e21,\"_meta\":{}}", d);
    assert_hex(d, "c994fb939bc962d6a9e85eee5f09f5da13600d2e7a8ce7f5376b6e73a165aaee");
    assert_int_equal(mcp_state_params_digest(NULL, NULL), MCP_EINVAL);

    /* Integers that one double stands for digest apart; within +-2^53
     * nothing changes. */
    uint8_t a[32], b[32];
    digest_of("{\"amount\":9007199254740992}", a);
    digest_of("{\"amount\":9007199254740993}", b);
    assert_memory_not_equal(a, b, 32);
    digest_of("{\"x\":[-9007199254740993]}", a);
    digest_of("{\"x\":[-9007199254740992]}", b);
    assert_memory_not_equal(a, b, 32);
    digest_of("{\"amount\":9007199254740992}", b);
    digest_of("{\"amount\":9007199254740992.0}", a);
    assert_memory_equal(a, b, 32);
}

/* ---- the pluggable wrapper ---------------------------------------------------------- */

/* A codec that breaks every rule, to show the wrapper holds them. */
static int rude_seal(void *ctx, const json_t *payload, const mcp_state_binding_t *binding,
                     char **out, mcp_error_t *err)
{
    (void)payload, (void)binding, (void)err;
    if (*(int *)ctx == 1) {
        *out = strdup("half-written");
        return MCP_EIO;
    }
    return MCP_OK; /* success with nothing sealed */
}

static int rude_open(void *ctx, const char *state, const mcp_state_binding_t *binding,
                     json_t **payload_out, mcp_error_t *err)
{
    (void)state, (void)binding, (void)err;
    *payload_out = json_string("secret");
    return *(int *)ctx == 1 ? MCP_EINVAL : 1;
}

static int frees;
static void count_free(void *ctx)
{
    (void)ctx;
    frees++;
}

static void test_wrapper_enforces_the_contract(void **state)
{
    (void)state;
    static int mode;
    static const mcp_codec_ops_t rude = {rude_seal, rude_open, count_free};
    frees = 0;
    mcp_codec_t *codec = mcp_codec_new(&rude, &mode);
    assert_non_null(codec);
    json_t *payload = json_object(), *opened = NULL;
    mcp_state_binding_t binding = {NULL, "tools/call", NULL};
    char *out = NULL;
    mcp_error_t err = {0};

    mode = 1; /* fail, but leave output behind */
    assert_int_equal(mcp_codec_seal(codec, payload, &binding, &out, &err), MCP_EIO);
    assert_null(out);
    assert_int_equal(mcp_codec_open(codec, "x", &binding, &opened, &err), MCP_EINVAL);
    assert_null(opened);

    mode = 0; /* "succeed" without output, or with a positive code */
    assert_int_equal(mcp_codec_seal(codec, payload, &binding, &out, &err), MCP_EINVAL);
    assert_null(out);
    assert_true(mcp_codec_open(codec, "x", &binding, &opened, &err) < 0);
    assert_null(opened);

    mcp_codec_free(codec);
    assert_int_equal(frees, 1);

    static const mcp_codec_ops_t no_open = {rude_seal, NULL, count_free};
    assert_null(mcp_codec_new(&no_open, &mode));
    assert_int_equal(frees, 2); /* ctx owned even on failure */
    assert_null(mcp_codec_new(NULL, NULL));
    mcp_error_clear(&err);
    json_decref(payload);
}

/* ---- threads ------------------------------------------------------------------------ */

typedef struct worker {
    mcp_codec_t *codec;
    int opened, replays_refused;
} worker_t;

static void *seal_open_loop(void *arg)
{
    worker_t *w = arg;
    json_t *payload = json_pack("{s:i}", "n", 1), *params = json_pack("{s:s}", "name", "t");
    mcp_state_binding_t binding = {"alice", "tools/call", params};
    for (int i = 0; i < 200; i++) {
        char *state = NULL;
        json_t *opened = NULL;
        if (mcp_codec_seal(w->codec, payload, &binding, &state, NULL) != MCP_OK)
            break;
        if (mcp_codec_open(w->codec, state, &binding, &opened, NULL) == MCP_OK &&
            json_equal(opened, payload))
            w->opened++;
        json_decref(opened);
        opened = NULL;
        if (mcp_codec_open(w->codec, state, &binding, &opened, NULL) == MCP_EINVAL)
            w->replays_refused++;
        json_decref(opened);
        free(state);
    }
    json_decref(payload);
    json_decref(params);
    return NULL;
}

static void test_one_codec_many_threads(void **state)
{
    (void)state;
    enum { THREADS = 4 };
    mcp_aead_options_t opts = {0, NULL, NULL, mcp_replay_store_memory_new(0)};
    mcp_codec_t *codec = mcp_codec_aead_new(ring_from("k1 " KEY_A), &opts, NULL);
    worker_t workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){codec, 0, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, seal_open_loop, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(workers[t].opened, 200);
        assert_int_equal(workers[t].replays_refused, 200);
    }
    mcp_codec_free(codec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_state),
        cmocka_unit_test(test_golden_state_layout),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_large_payload_round_trips),
        cmocka_unit_test(test_two_seals_differ),
        cmocka_unit_test(test_every_bit_flip_fails),
        cmocka_unit_test(test_every_truncation_and_extension_fails),
        cmocka_unit_test(test_wrong_key_and_unknown_key_id),
        cmocka_unit_test(test_key_id_is_authenticated),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_system_clock_is_the_default),
        cmocka_unit_test(test_principal_binding),
        cmocka_unit_test(test_method_binding),
        cmocka_unit_test(test_params_binding),
        cmocka_unit_test(test_single_use),
        cmocka_unit_test(test_replay_store_failure_is_internal),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_single_use_survives_a_restart),
        cmocka_unit_test(test_rotation_shares_the_store),
        cmocka_unit_test(test_store_binding),
        cmocka_unit_test(test_store_quota_per_principal),
        cmocka_unit_test(test_each_check_has_its_message_in_order),
        cmocka_unit_test(test_malformed_plaintexts_are_refused),
        cmocka_unit_test(test_aead_new_refuses_bad_configuration),
        cmocka_unit_test(test_seal_and_open_refuse_bad_arguments),
        cmocka_unit_test(test_random_failure_fails_the_seal),
        cmocka_unit_test(test_params_digest),
        cmocka_unit_test(test_wrapper_enforces_the_contract),
        cmocka_unit_test(test_one_codec_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
