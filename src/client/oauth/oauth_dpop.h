/*
 * oauth_dpop.h - DPoP (RFC 9449): tokens bound to a key the client holds,
 * so that a stolen token is useless without it. The client sends a proof
 * with every request that obtains or uses such a token: a JWT signed with
 * its private key, naming the request (method and URL), when it was made,
 * a unique id, the token's hash when a token goes with it, and the nonce
 * the server asked for, if any.
 *
 * Keys are ES256 (EC P-256), made per token source and signed with
 * libhogweed (oauth_jwt.h). All functions are thread-safe.
 */
#ifndef MCP_OAUTH_DPOP_H
#define MCP_OAUTH_DPOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/oauth/oauth_jwt.h"
#include "mcp/common.h"

/* A DPoP key pair: the private scalar and the public point's coordinates
 * (big-endian, as a JWK carries them). Wipe with explicit_bzero. */
typedef struct {
    uint8_t d[OAUTH_ES256_KEY_SIZE];
    uint8_t x[OAUTH_ES256_KEY_SIZE], y[OAUTH_ES256_KEY_SIZE];
} oauth_dpop_key_t;

/* A new key pair from the kernel's random source. MCP_OK, MCP_EIO (no
 * random bytes), MCP_EUNSUPPORTED (no libhogweed). */
int oauth_dpop_key_new(oauth_dpop_key_t *key, mcp_error_t *err);

/* The key pair of a private scalar (a saved key). MCP_OK, MCP_EINVAL (out
 * of range), MCP_EUNSUPPORTED. */
int oauth_dpop_key_from_private(oauth_dpop_key_t *key, const uint8_t d[OAUTH_ES256_KEY_SIZE],
                                mcp_error_t *err);

/*
 * A DPoP proof (RFC 9449 §4.2) as a compact JWS signed with ES256: header
 * {"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x","y"}}
 * (the public key only); claims jti (random, unique per proof), htm =
 * `method`, htu = `url` without its query and fragment, iat = now_s, ath =
 * base64url(SHA-256(access_token)) when an access token goes with the
 * request (else NULL), and nonce when the server supplied one (else NULL).
 * A malloc'd string in *out. MCP_OK, MCP_EINVAL (a NULL method or URL, a
 * nonce that is not RFC 9449 NQCHARs), oauth_es256_sign()'s errors,
 * MCP_ENOMEM.
 */
int oauth_dpop_proof(const oauth_dpop_key_t *key, const char *method, const char *url,
                     const char *access_token, const char *nonce, int64_t now_s, char **out,
                     mcp_error_t *err);

/*
 * Whether a DPoP-Nonce value from a server is one (RFC 9449 §8.1: nonce =
 * 1*NQCHAR, the visible ASCII characters but '"' and '\'), at most
 * OAUTH_DPOP_MAX_NONCE bytes: a nonce goes back into every proof.
 */
#define OAUTH_DPOP_MAX_NONCE 1024
bool oauth_dpop_nonce_valid(const char *nonce);

#endif /* MCP_OAUTH_DPOP_H */
