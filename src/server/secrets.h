/*
 * Secret bytes: drawing them from the kernel, comparing them without leaking
 * where they differ, and wiping them after use.
 *
 * The server's keys, nonces and request and session ids come from here, so
 * the library needs no cryptographic library for randomness: getrandom(2)
 * reads the kernel's CSPRNG, which blocks only until it is seeded at boot.
 */
#ifndef MCP_SERVER_SECRETS_H
#define MCP_SERVER_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Fills `buf` with `n` random bytes fit for keys and nonces. Returns 0, or
 * MCP_EIO when the kernel cannot supply them (no getrandom(2): a kernel older
 * than 3.17, or a seccomp policy that forbids it). Thread-safe.
 */
int mcp_secret_random(void *buf, size_t n);

/* True when the `n` bytes at `a` and `b` are equal. The time taken does not
 * depend on where they differ, so tags and digests can be checked against
 * attacker-chosen input. Thread-safe. */
bool mcp_secret_equal(const void *a, const void *b, size_t n);

/* Overwrites `n` bytes at `p` with zeros in a way the compiler may not drop
 * as a dead store. Thread-safe. */
void mcp_secret_wipe(void *p, size_t n);

#endif /* MCP_SERVER_SECRETS_H */
