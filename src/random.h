/*
 * random.h - random bytes fit for keys, nonces and one-time secrets, from
 * the kernel: getrandom(2) reads its CSPRNG, which blocks only until it is
 * seeded at boot, so libmcp needs no cryptographic library for randomness.
 * The server's keys, nonces and ids and the client's PKCE verifiers and
 * OAuth states come from here.
 */
#ifndef MCP_RANDOM_H
#define MCP_RANDOM_H

#include <stddef.h>

/*
 * Fills `buf` with `n` random bytes. Returns 0, or MCP_EIO when the kernel
 * cannot supply them (no getrandom(2): a kernel older than 3.17, or a
 * seccomp policy that forbids it). Thread-safe.
 */
int mcp_secret_random(void *buf, size_t n);

#endif /* MCP_RANDOM_H */
