/*
 * fnv.h - FNV-1a, 64 bits: spreads keys over the buckets of a hash table.
 *
 * Fast on short keys and good enough for ids that are random already or
 * chosen by the local side; not meant to resist keys crafted to collide.
 * For keys a peer chooses, mcp_fnv1a_from() starts from a secret state, so
 * that the peer cannot tell which keys share a bucket. Pure; thread-safe.
 */
#ifndef MCP_FNV_H
#define MCP_FNV_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a from the state `h` instead of the offset basis. */
static inline uint64_t mcp_fnv1a_from(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull; /* the FNV prime */
    return h;
}

static inline uint64_t mcp_fnv1a(const void *data, size_t len)
{
    return mcp_fnv1a_from(14695981039346656037ull /* the offset basis */, data, len);
}

#endif
