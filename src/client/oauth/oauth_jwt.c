/*
 * ES256 signatures and client assertions (oauth_jwt.h).
 *
 * ECDSA comes from Nettle's public-key half, libhogweed, which libmcp does
 * not link: a client signs only with private_key_jwt, so the library (and
 * GMP under it) is opened the first time a key signs (lazy_library.h).
 * Its SHA-256 (libnettle) and GMP's mpz_clear are found through it: dlsym
 * searches a library's dependencies too.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nettle/bignum.h>
#include <nettle/dsa.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "client/oauth/oauth_jwt.h"
#include "client/oauth/oauth_parse.h"
#include "client/sha256.h"
#include "lazy_library.h"
#include "mcp/jsonrpc.h"
#include "protocol/base64.h"
#include "random.h"

/* The functions called, typed by Nettle's and GMP's own declarations. */
static struct {
    __typeof__(nettle_get_secp_256r1) *p256;
    __typeof__(nettle_ecc_scalar_init) *scalar_init;
    __typeof__(nettle_ecc_scalar_set) *scalar_set;
    __typeof__(nettle_ecc_scalar_clear) *scalar_clear;
    __typeof__(nettle_ecdsa_sign) *ecdsa_sign;
    __typeof__(nettle_dsa_signature_init) *signature_init;
    __typeof__(nettle_dsa_signature_clear) *signature_clear;
    __typeof__(nettle_mpz_init_set_str_256_u) *mpz_from_bytes;
    __typeof__(nettle_mpz_get_str_256) *mpz_to_bytes;
    __typeof__(__gmpz_clear) *mpz_clear;
    __typeof__(nettle_ecc_point_init) *point_init;
    __typeof__(nettle_ecc_point_clear) *point_clear;
    __typeof__(nettle_ecc_point_mul_g) *point_mul_g;
    __typeof__(nettle_ecc_point_get) *point_get;
    __typeof__(__gmpz_init) *mpz_init;
} hogweed;
static mcp_lazy_once_t hogweed_loaded = MCP_LAZY_ONCE_INIT;

static void hogweed_load(void)
{
    const mcp_lazy_symbol_t symbols[] = {
        {"nettle_get_secp_256r1", &hogweed.p256},
        {"nettle_ecc_scalar_init", &hogweed.scalar_init},
        {"nettle_ecc_scalar_set", &hogweed.scalar_set},
        {"nettle_ecc_scalar_clear", &hogweed.scalar_clear},
        {"nettle_ecdsa_sign", &hogweed.ecdsa_sign},
        {"nettle_dsa_signature_init", &hogweed.signature_init},
        {"nettle_dsa_signature_clear", &hogweed.signature_clear},
        {"nettle_mpz_init_set_str_256_u", &hogweed.mpz_from_bytes},
        {"nettle_mpz_get_str_256", &hogweed.mpz_to_bytes},
        {"__gmpz_clear", &hogweed.mpz_clear},
        {"nettle_ecc_point_init", &hogweed.point_init},
        {"nettle_ecc_point_clear", &hogweed.point_clear},
        {"nettle_ecc_point_mul_g", &hogweed.point_mul_g},
        {"nettle_ecc_point_get", &hogweed.point_get},
        {"__gmpz_init", &hogweed.mpz_init},
    };
    hogweed_loaded.rc = mcp_lazy_open(MCP_HOGWEED_SONAME, "OAuth (private_key_jwt, DPoP)", symbols,
                                      sizeof symbols / sizeof symbols[0], &hogweed_loaded.err);
}

/* Nettle draws the ECDSA nonce through a callback that cannot fail, so a
 * failure is noted here and the signature thrown away. The bytes given
 * instead are non-zero because Nettle draws again until the nonce is in
 * [1, n-1]: zeros would loop forever. */
typedef struct {
    bool failed;
} nonce_source_t;

static void kernel_random(void *ctx, size_t length, uint8_t *dst)
{
    nonce_source_t *source = ctx;
    if (mcp_secret_random(dst, length) != MCP_OK) {
        source->failed = true;
        memset(dst, 0x5a, length);
    }
}

/* The private key as Nettle's scalar (initialised: clear it after use),
 * or MCP_EINVAL when it is not a P-256 private key. */
static int load_scalar(const uint8_t key[OAUTH_ES256_KEY_SIZE], struct ecc_scalar *scalar,
                       mcp_error_t *err)
{
    mpz_t d;
    hogweed.mpz_from_bytes(d, OAUTH_ES256_KEY_SIZE, key);
    hogweed.scalar_init(scalar, hogweed.p256());
    bool in_range = hogweed.scalar_set(scalar, d);
    hogweed.mpz_clear(d);
    if (in_range)
        return MCP_OK;
    hogweed.scalar_clear(scalar);
    return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the private key is out of the P-256 range");
}

int oauth_es256_sign(const uint8_t key[OAUTH_ES256_KEY_SIZE], const void *msg, size_t len,
                     uint8_t sig[OAUTH_ES256_SIG_SIZE], mcp_error_t *err)
{
    int rc = mcp_lazy_once(&hogweed_loaded, hogweed_load, err);
    if (rc != MCP_OK)
        return rc;
    uint8_t digest[CLIENT_SHA256_SIZE];
    if ((rc = client_sha256(msg, len, digest, err)) != MCP_OK)
        return rc;

    struct ecc_scalar scalar;
    if ((rc = load_scalar(key, &scalar, err)) != MCP_OK)
        return rc;
    struct dsa_signature signature;
    nonce_source_t nonce = {false};
    hogweed.signature_init(&signature);
    hogweed.ecdsa_sign(&scalar, &nonce, kernel_random, sizeof digest, digest, &signature);
    if (nonce.failed) {
        rc = mcp_error_set(err, MCP_EIO, 0, NULL, "no random bytes for the ECDSA nonce");
    } else {
        /* r and s are below the group order: 32 bytes each, zero-padded. */
        hogweed.mpz_to_bytes(OAUTH_ES256_SIG_SIZE / 2, sig, signature.r);
        hogweed.mpz_to_bytes(OAUTH_ES256_SIG_SIZE / 2, sig + OAUTH_ES256_SIG_SIZE / 2,
                             signature.s);
    }
    hogweed.signature_clear(&signature);
    hogweed.scalar_clear(&scalar);
    return rc;
}

/* base64url of `n` bytes, malloc'd. */
static char *base64url(const void *bytes, size_t n)
{
    char *out = malloc(mcp_base64url_encoded_len(n) + 1);
    if (out)
        mcp_base64url_encode(bytes, n, out);
    return out;
}

/* base64url of a JSON value's compact text, malloc'd; `value` is taken. */
static char *base64url_json(json_t *value)
{
    /* mcp_json_dump, not json_dumps: out of memory, jansson may write a
     * text with a key left out rather than fail, and it would be signed. */
    char *text = mcp_json_dump(value, NULL);
    json_decref(value);
    char *out = text ? base64url(text, strlen(text)) : NULL;
    free(text);
    return out;
}

int oauth_es256_jws(const uint8_t key[OAUTH_ES256_KEY_SIZE], json_t *header_new,
                    json_t *claims_new, char **out, mcp_error_t *err)
{
    *out = NULL;
    char *header64 = base64url_json(header_new);
    char *claims64 = base64url_json(claims_new);
    char *signing_input = NULL, *sig64 = NULL;
    uint8_t sig[OAUTH_ES256_SIG_SIZE];
    int rc;
    if (!header64 || !claims64 || asprintf(&signing_input, "%s.%s", header64, claims64) < 0) {
        signing_input = NULL;
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    } else if ((rc = oauth_es256_sign(key, signing_input, strlen(signing_input), sig, err)) ==
               MCP_OK) {
        if (!(sig64 = base64url(sig, sizeof sig)) ||
            asprintf(out, "%s.%s", signing_input, sig64) < 0) {
            *out = NULL;
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        }
    }
    free(header64);
    free(claims64);
    free(signing_input);
    free(sig64);
    return rc;
}

int oauth_client_assertion(const uint8_t key[OAUTH_ES256_KEY_SIZE], const char *client_id,
                           const char *audience, int64_t now_s, char **out, mcp_error_t *err)
{
    *out = NULL;
    char jti[OAUTH_JTI_LEN + 1];
    int rc = oauth_random_string(jti, OAUTH_JTI_LEN);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "no random bytes for the assertion's jti");
    json_t *header = json_pack("{s:s, s:s}", "alg", "ES256", "typ", "JWT");
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}", "iss", client_id, "sub",
                               client_id, "aud", audience, "iat", (json_int_t)now_s, "exp",
                               (json_int_t)(now_s + OAUTH_ASSERTION_LIFETIME_S), "jti", jti);
    return oauth_es256_jws(key, header, claims, out, err);
}

int oauth_es256_public_key(const uint8_t key[OAUTH_ES256_KEY_SIZE],
                           uint8_t x[OAUTH_ES256_KEY_SIZE], uint8_t y[OAUTH_ES256_KEY_SIZE],
                           mcp_error_t *err)
{
    int rc = mcp_lazy_once(&hogweed_loaded, hogweed_load, err);
    if (rc != MCP_OK)
        return rc;
    struct ecc_scalar scalar;
    if ((rc = load_scalar(key, &scalar, err)) != MCP_OK)
        return rc;
    struct ecc_point point;
    mpz_t px, py;
    hogweed.point_init(&point, hogweed.p256());
    hogweed.point_mul_g(&point, &scalar);
    hogweed.mpz_init(px);
    hogweed.mpz_init(py);
    hogweed.point_get(&point, px, py);
    /* Coordinates are below the field prime: 32 bytes each, zero-padded. */
    hogweed.mpz_to_bytes(OAUTH_ES256_KEY_SIZE, x, px);
    hogweed.mpz_to_bytes(OAUTH_ES256_KEY_SIZE, y, py);
    hogweed.mpz_clear(px);
    hogweed.mpz_clear(py);
    hogweed.point_clear(&point);
    hogweed.scalar_clear(&scalar);
    return MCP_OK;
}
