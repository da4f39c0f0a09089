/*
 * oauth_jwt.h - private_key_jwt client authentication (RFC 7523 §2.2,
 * RFC 7521 §4.2) with ES256: the client's EC P-256 private key, read from
 * a PKCS#8 PEM file (oauth_pkcs8.c: pure, fuzzed by
 * fuzz/fuzz_oauth_pkcs8.c), and the signed client assertion
 * (oauth_jwt.c: ECDSA from Nettle's libhogweed, loaded on first use).
 *
 * Only ES256 is offered: it is what the MCP conformance suite signs with,
 * and its keys are small; RS256 would need an RSA key reader too.
 *
 * All functions are thread-safe. Keys are 32-byte big-endian scalars;
 * callers wipe them (explicit_bzero) when done.
 */
#ifndef MCP_OAUTH_JWT_H
#define MCP_OAUTH_JWT_H

#include <stddef.h>
#include <stdint.h>

#include "mcp/common.h"

/* A P-256 private key: the scalar d, big-endian. */
#define OAUTH_ES256_KEY_SIZE 32
/* An ES256 signature as JWS carries it (RFC 7518 §3.4): r || s, each 32
 * bytes big-endian. */
#define OAUTH_ES256_SIG_SIZE 64

/*
 * Reads the private key from the DER of a PKCS#8 PrivateKeyInfo (RFC 5208;
 * the OneAsymmetricKey of RFC 5958, version 1 or 2) holding an EC key
 * (id-ecPublicKey) on P-256 (prime256v1): an ECPrivateKey (RFC 5915,
 * version 1) whose private key is exactly 32 bytes, between 1 and the
 * curve's order less one, with optional parameters (P-256 again) and
 * public key. The DER is read strictly: definite, minimal lengths, no
 * bytes after any element, no element left unread but the optional ones
 * named. MCP_OK, or MCP_EINVAL with *err saying what the bytes are
 * instead (another curve, an RSA key, malformed DER...).
 */
int oauth_es256_key_from_pkcs8(const uint8_t *der, size_t len,
                               uint8_t key[OAUTH_ES256_KEY_SIZE], mcp_error_t *err);

/*
 * Reads the private key from PEM text (RFC 7468): the first
 * "-----BEGIN PRIVATE KEY-----" block, base64 (whitespace between the
 * characters ignored) up to its "-----END PRIVATE KEY-----", holding
 * what oauth_es256_key_from_pkcs8() reads. Text around the block is
 * ignored. An "EC PRIVATE KEY" (SEC1) or "ENCRYPTED PRIVATE KEY" block is
 * refused with a message saying how to convert it. MCP_OK, MCP_EINVAL,
 * MCP_ENOMEM.
 */
int oauth_es256_key_from_pem(const char *pem, uint8_t key[OAUTH_ES256_KEY_SIZE],
                             mcp_error_t *err);

/*
 * Signs `msg` with ES256: ECDSA on P-256 over its SHA-256, with a nonce
 * from the kernel's random source (random.h). MCP_OK, MCP_EINVAL (a key
 * out of range), MCP_EIO (no random bytes), MCP_EUNSUPPORTED (libhogweed
 * cannot be loaded).
 */
int oauth_es256_sign(const uint8_t key[OAUTH_ES256_KEY_SIZE], const void *msg, size_t len,
                     uint8_t sig[OAUTH_ES256_SIG_SIZE], mcp_error_t *err);

/*
 * The public key of a P-256 private key: the point d·G, its affine
 * coordinates big-endian (a JWK's x and y, RFC 7518 §6.2.1). MCP_OK,
 * MCP_EINVAL (a key out of range), MCP_EUNSUPPORTED (no libhogweed).
 */
int oauth_es256_public_key(const uint8_t key[OAUTH_ES256_KEY_SIZE],
                           uint8_t x[OAUTH_ES256_KEY_SIZE], uint8_t y[OAUTH_ES256_KEY_SIZE],
                           mcp_error_t *err);

/* How long a client assertion is valid: long enough for a slow token
 * request, short enough that a stolen one is soon useless. */
#define OAUTH_ASSERTION_LIFETIME_S 300

/* A random jti (JWT ID): 32 characters of 6 bits each, far past any
 * collision. */
#define OAUTH_JTI_LEN 32

/*
 * A compact JWS signed with ES256: base64url(header).base64url(claims).
 * base64url(r || s), header_new and claims_new (both stolen; NULL counts
 * as out of memory) serialised compactly. A malloc'd string in *out.
 * MCP_OK, or oauth_es256_sign()'s errors, MCP_ENOMEM.
 */
int oauth_es256_jws(const uint8_t key[OAUTH_ES256_KEY_SIZE], json_t *header_new,
                    json_t *claims_new, char **out, mcp_error_t *err);

/*
 * A client assertion (RFC 7523 §3) as a compact JWS signed with ES256:
 * header {"alg":"ES256","typ":"JWT"}, claims iss = sub = client_id, aud =
 * the authorization server's issuer identifier, iat = now_s (seconds
 * since the epoch), exp = iat + OAUTH_ASSERTION_LIFETIME_S, and a random
 * jti. A malloc'd string in *out. MCP_OK, or oauth_es256_sign()'s
 * errors, MCP_ENOMEM.
 */
int oauth_client_assertion(const uint8_t key[OAUTH_ES256_KEY_SIZE], const char *client_id,
                           const char *audience, int64_t now_s, char **out, mcp_error_t *err);

#endif /* MCP_OAUTH_JWT_H */
