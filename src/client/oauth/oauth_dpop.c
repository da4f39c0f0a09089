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
#include "client/sha256.h"
#include "protocol/base64.h"
#include "random.h"

/* Out-of-range scalars (zero, or at least the group order) are about one
 * draw in 2^32: a few draws always suffice unless the source is broken. */
#define KEY_DRAWS 8

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
    if (!method || !url) /* a proof names its request; none to name is a bug upstream */
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "a DPoP proof needs a method and a URL");
    if (nonce && !oauth_dpop_nonce_valid(nonce))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the server's DPoP nonce is malformed");
    char jti[OAUTH_JTI_LEN + 1];
    int rc = oauth_random_string(jti, OAUTH_JTI_LEN);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "no random bytes for the DPoP proof's jti");
    char ath[64] = "";
    if (access_token) {
        uint8_t digest[CLIENT_SHA256_SIZE];
        if ((rc = client_sha256(access_token, strlen(access_token), digest, err)) != MCP_OK)
            return rc;
        mcp_base64url_encode(digest, sizeof digest, ath);
    }
    return oauth_es256_jws(key->d, proof_header(key),
                           proof_claims(method, url, access_token ? ath : NULL, nonce, now_s, jti),
                           out, err);
}
