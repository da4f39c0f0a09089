/*
 * sha256.h - SHA-256 for the client, from Nettle, which the client does
 * not link: it is loaded on the first call (src/lazy_library.h), so a
 * program that never authorizes nor verifies a skill file does not map it.
 * Its users: OAuth (PKCE, ES256 signatures, DPoP's ath) and the Skills
 * extension (the digests of skill files).
 */
#ifndef MCP_CLIENT_SHA256_H
#define MCP_CLIENT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "mcp/common.h"

#define CLIENT_SHA256_SIZE 32

/* SHA-256 of the `len` bytes at `msg` into `digest`. MCP_OK, or
 * MCP_EUNSUPPORTED with *err (may be NULL) when Nettle cannot be loaded.
 * Thread-safe. */
int client_sha256(const void *msg, size_t len, uint8_t digest[CLIENT_SHA256_SIZE],
                  mcp_error_t *err);

#endif /* MCP_CLIENT_SHA256_H */
