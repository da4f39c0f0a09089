/*
 * DPoP proofs and keys (oauth_dpop.h).
 *
 * A proof is made for one request and never reused: its jti is random, its
 * iat is the time of the request, and its htm and htu name the request, so
 * a server can refuse one replayed elsewhere or later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/oauth/oauth_dpop.h"
#include "client/oauth/oauth_parse.h"
#include "protocol/base64.h"
#include "random.h"

/* Out-of-range scalars (zero, or at least the group order) are about one
 * draw in 2^32: a few draws always suffice unless the source is broken. */
#define KEY_DRAWS 8
/* Random jti characters: 32 of 6 bits each, far past any collision. */
#define JTI_LEN 32

int oauth_dpop_key_from_private(oauth_dpop_key_t *key, const uint8_t d[OAUTH_ES256_KEY_SIZE],
                                mcp_error_t *err)
{
    int rc = oauth_es256_public_key(d, key->x, key->y, err);
    if (rc == MCP_OK)
        memcpy(key->d, d, sizeof key->d);
    return rc;
}

int oauth_dpop_key_new(oauth_dpop_key_t *key, mcp_error_t *err)
{
    uint8_t d[OAUTH_ES256_KEY_SIZE];
    int rc = MCP_EINVAL;
    for (int draw = 0; draw < KEY_DRAWS && rc == MCP_EINVAL; draw++) {
        if (mcp_secret_random(d, sizeof d) != MCP_OK) {
            rc = mcp_error_set(err, MCP_EIO, 0, NULL, "no random bytes for the DPoP key");
            break;
        }
        rc = oauth_dpop_key_from_private(key, d, err);
    }
    explicit_bzero(d, sizeof d);
    return rc;
}

bool oauth_dpop_nonce_valid(const char *nonce)
{
    size_t len = nonce ? strlen(nonce) : 0;
    if (len == 0 || len > OAUTH_DPOP_MAX_NONCE)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)nonce[i];
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
            return false;
    }
    return true;
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
    char *text = value ? json_dumps(value, JSON_COMPACT) : NULL;
    json_decref(value);
    char *out = text ? base64url(text, strlen(text)) : NULL;
    free(text);
    return out;
}

/* The header: the type, the algorithm, and the public key to check the
 * signature with (RFC 7518 §6.2.1). */
static json_t *proof_header(const oauth_dpop_key_t *key)
{
    char x[64], y[64];
    mcp_base64url_encode(key->x, sizeof key->x, x);
    mcp_base64url_encode(key->y, sizeof key->y, y);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "typ", "dpop+jwt", "alg", "ES256",
                     "jwk", "kty", "EC", "crv", "P-256", "x", x, "y", y);
}

/* The claims; `ath` may be NULL. */
static json_t *proof_claims(const char *method, const char *url, const char *ath,
                            const char *nonce, int64_t now_s, const char *jti)
{
    /* RFC 9449 §4.2: the target URI without query and fragment. */
    size_t htu_len = strcspn(url, "?#");
    json_t *claims = json_pack("{s:s, s:s, s:s%, s:I}", "jti", jti, "htm", method, "htu", url,
                               htu_len, "iat", (json_int_t)now_s);
    if (claims && ath && json_object_set_new(claims, "ath", json_string(ath)) != 0)
        goto fail;
    if (claims && nonce && json_object_set_new(claims, "nonce", json_string(nonce)) != 0)
        goto fail;
    return claims;
fail:
    json_decref(claims);
    return NULL;
}

int oauth_dpop_proof(const oauth_dpop_key_t *key, const char *method, const char *url,
                     const char *access_token, const char *nonce, int64_t now_s, char **out,
                     mcp_error_t *err)
{
    *out = NULL;
    if (nonce && !oauth_dpop_nonce_valid(nonce))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the server's DPoP nonce is malformed");
    char jti[JTI_LEN + 1];
    int rc = oauth_random_string(jti, JTI_LEN);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "no random bytes for the DPoP proof's jti");
    char ath[64] = "";
    if (access_token) {
        uint8_t digest[OAUTH_SHA256_SIZE];
        if ((rc = oauth_sha256(access_token, strlen(access_token), digest, err)) != MCP_OK)
            return rc;
        mcp_base64url_encode(digest, sizeof digest, ath);
    }
    char *header64 = base64url_json(proof_header(key));
    char *claims64 =
        base64url_json(proof_claims(method, url, access_token ? ath : NULL, nonce, now_s, jti));
    char *signing_input = NULL, *sig64 = NULL;
    uint8_t sig[OAUTH_ES256_SIG_SIZE];
    if (!header64 || !claims64 || asprintf(&signing_input, "%s.%s", header64, claims64) < 0) {
        signing_input = NULL;
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    } else if ((rc = oauth_es256_sign(key->d, signing_input, strlen(signing_input), sig, err)) ==
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
