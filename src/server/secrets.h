/*
 * Secret bytes: drawing them from the kernel (mcp_secret_random, in the
 * core's random.h, which the client uses too), comparing them without
 * leaking where they differ, and wiping them after use.
 */
#ifndef MCP_SERVER_SECRETS_H
#define MCP_SERVER_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "random.h"

/* True when the `n` bytes at `a` and `b` are equal. The time taken does not
 * depend on where they differ, so tags and digests can be checked against
 * attacker-chosen input. Thread-safe. */
bool mcp_secret_equal(const void *a, const void *b, size_t n);

/* Overwrites `n` bytes at `p` with zeros in a way the compiler may not drop
 * as a dead store. Thread-safe. */
void mcp_secret_wipe(void *p, size_t n);

#endif /* MCP_SERVER_SECRETS_H */
