/*
 * hex.h - hexadecimal digits: their values, for the readers of
 * percent-encodings, JSON escapes and YAML integers; and bytes written as
 * lowercase hex, for ids, cursors and digests.
 */
#ifndef MCP_PROTOCOL_HEX_H
#define MCP_PROTOCOL_HEX_H

#include <stddef.h>

/* 0-15 for '0'-'9', 'a'-'f' and 'A'-'F'; -1 for anything else. */
static inline int mcp_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Writes the `n` bytes at `in` as 2n lowercase hex digits at `out` (no
 * NUL is added). */
static inline void mcp_hex_encode(const void *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = in;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
}

#endif /* MCP_PROTOCOL_HEX_H */
