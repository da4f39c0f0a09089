/*
 * hex.h - the value of one hexadecimal digit, for the readers of
 * percent-encodings, JSON escapes and YAML integers.
 */
#ifndef MCP_PROTOCOL_HEX_H
#define MCP_PROTOCOL_HEX_H

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

#endif /* MCP_PROTOCOL_HEX_H */
