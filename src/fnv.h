/*
 * fnv.h - FNV-1a, 64 bits: spreads keys over the buckets of a hash table.
 *
 * Fast on short keys and good enough for ids that are random already or
 * chosen by the local side; not meant to resist keys crafted to collide.
 * Pure; thread-safe.
 */
#ifndef MCP_FNV_H
#define MCP_FNV_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t mcp_fnv1a(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull; /* the offset basis */
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull; /* the FNV prime */
    return h;
}

#endif
