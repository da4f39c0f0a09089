/*
 * zalloc.h - zeroed allocation for structures made once per request.
 *
 * glibc's calloc() never takes a chunk from the thread's cache of recently
 * freed chunks (tcache): it always goes to the arena. For a structure that
 * is made and freed on every request, that is ~900 instructions instead of
 * ~50, and the free of such a chunk, found next to the top of the heap,
 * makes glibc consolidate all its small free chunks (another ~700). malloc()
 * followed by memset() takes the cached chunk, as long as the compiler does
 * not fold the pair back into calloc(), which GCC does at -O2: the empty asm
 * hides where the pointer came from.
 *
 * Thread-safe as malloc() is. NULL when out of memory (or n is 0).
 */
#ifndef MCP_ZALLOC_H
#define MCP_ZALLOC_H

#include <stdlib.h>
#include <string.h>

static inline void *mcp_zalloc(size_t n)
{
    void *p = n ? malloc(n) : NULL;
    __asm__("" : "+r"(p));
    if (p)
        memset(p, 0, n);
    return p;
}

#endif
