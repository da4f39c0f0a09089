/*
 * Header lookups for libmcp's own request checks (internal), which ask
 * every request for the same few headers and mostly want to know both
 * the value and whether the header was sent more than once.
 *
 * Pure and thread-safe.
 */
#ifndef MCP_PROTOCOL_HEADERS_INTERNAL_H
#define MCP_PROTOCOL_HEADERS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp/headers.h"

/* Do bytes `a` and `b` match, ignoring ASCII case? (Only letters fold:
 * '@' and '`' also differ in bit 0x20 alone, and do not match.) */
static inline bool mcp_ascii_same_nocase(unsigned char a, unsigned char b)
{
    unsigned char lower = (unsigned char)(a | 0x20);
    return a == b || ((a ^ b) == 0x20 && lower >= 'a' && lower <= 'z');
}

/* RFC 9110 tchar, the bytes of a token (methods, header names), as a
 * table: the request reader checks every byte of every header name. */
extern const bool mcp_tchar_table[256];

static inline bool mcp_is_tchar(unsigned char c)
{
    return mcp_tchar_table[c];
}

/* Do two header names match, ignoring ASCII case? Both NUL-terminated. */
bool mcp_header_name_is(const char *name, const char *wanted);

/*
 * mcp_headers_get() and mcp_headers_count() in one pass: returns the raw
 * value of the first header named `name` (NULL when there is none) and
 * stores how many there are in *count. `headers` and `name` may be NULL
 * (no match).
 */
const char *mcp_headers_lookup(const mcp_headers_t *headers, const char *name, size_t *count);

/* Does a MCP-Protocol-Version value (trimmed) name a modern revision, a
 * date on or after 2026-07-28? NULL does not. */
bool mcp_header_names_modern_version(const char *raw);

#endif /* MCP_PROTOCOL_HEADERS_INTERNAL_H */
