/*
 * openssl_check: what the OAuth tests check with OpenSSL, an
 * implementation independent of the Nettle that libmcp signs with: ES256
 * signatures and base64url.
 *
 * Only the tests that link the library mcp_test_openssl (tests/
 * CMakeLists.txt) can use it, so that the other tests do not need
 * libcrypto. A failure of OpenSSL itself fails the test (cmocka); a
 * signature that does not verify is only a false result.
 */
#ifndef MCP_TEST_OPENSSL_CHECK_H
#define MCP_TEST_OPENSSL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* `text` (`len` bytes of base64url, padded or not), decoded: malloc'd and
 * NUL-terminated, its length in *out_len; NULL if it is not base64. */
unsigned char *openssl_unbase64url(const char *text, size_t len, size_t *out_len);

/* Whether `sig` (r || s, 64 bytes) is an ES256 signature of `msg` by the
 * P-256 key `private_key_pem` (PKCS#8 PEM; its public half checks). */
bool openssl_es256_verifies_pem(const char *private_key_pem, const void *msg, size_t len,
                                const uint8_t sig[64]);

/* Whether `sig` (r || s, 64 bytes) is an ES256 signature of `msg` by the
 * P-256 public key the JWK `jwk` names (its "x" and "y", which must be 32
 * bytes each). */
bool openssl_es256_verifies_jwk(const json_t *jwk, const void *msg, size_t len,
                                const uint8_t sig[64]);

#endif
