/* Base64 and base64url (RFC 4648 sections 4 and 5), strict on input. */
#include "protocol/base64.h"

#include "mcp/common.h"

static const char STANDARD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URLSAFE[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t mcp_base64_encoded_len(size_t n)
{
    return (n / 3 + (n % 3 != 0)) * 4;
}

size_t mcp_base64url_encoded_len(size_t n)
{
    /* A trailing group of 1 or 2 bytes takes 2 or 3 characters. */
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

size_t mcp_base64_decoded_max(size_t len)
{
    return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
}

/* Writes the groups of `in`; pads the last one with '=' when `pad`. */
static size_t encode(const unsigned char *in, size_t n, char *out, const char *alphabet,
                     int pad)
{
    char *o = out;
    size_t i = 0;
    for (; n - i >= 3; i += 3) {
        unsigned long group = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 | in[i + 2];
        *o++ = alphabet[group >> 18 & 63];
        *o++ = alphabet[group >> 12 & 63];
        *o++ = alphabet[group >> 6 & 63];
        *o++ = alphabet[group & 63];
    }
    if (n - i == 1) {
        *o++ = alphabet[in[i] >> 2];
        *o++ = alphabet[(in[i] & 3) << 4];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        *o++ = alphabet[in[i] >> 2];
        *o++ = alphabet[(in[i] & 3) << 4 | in[i + 1] >> 4];
        *o++ = alphabet[(in[i + 1] & 15) << 2];
        if (pad)
            *o++ = '=';
    }
    *o = '\0';
    return (size_t)(o - out);
}

size_t mcp_base64_encode(const void *in, size_t n, char *out)
{
    return encode(in, n, out, STANDARD, 1);
}

size_t mcp_base64url_encode(const void *in, size_t n, char *out)
{
    return encode(in, n, out, URLSAFE, 0);
}

/* The 6-bit value of `c` in the alphabet whose last two characters are
 * c62 and c63, or -1 when `c` is not in it. */
static int sextet(unsigned char c, char c62, char c63)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (unsigned char)c62)
        return 62;
    if (c == (unsigned char)c63)
        return 63;
    return -1;
}

/*
 * Decodes unpadded text: whole groups of 4 characters, then an optional
 * tail of 2 or 3 characters whose unused low bits must be zero.
 */
static int decode(const char *in, size_t len, unsigned char *out, size_t *out_len, char c62,
                  char c63)
{
    if (len % 4 == 1)
        return MCP_EINVAL;
    unsigned char *o = out;
    size_t i = 0;
    while (i < len) {
        size_t chars = len - i < 4 ? len - i : 4;
        unsigned long group = 0;
        for (size_t k = 0; k < chars; k++) {
            int v = sextet((unsigned char)in[i + k], c62, c63);
            if (v < 0)
                return MCP_EINVAL;
            group = group << 6 | (unsigned long)v;
        }
        i += chars;
        if (chars == 4) {
            *o++ = (unsigned char)(group >> 16);
            *o++ = (unsigned char)(group >> 8);
            *o++ = (unsigned char)group;
        } else if (chars == 3) { /* 18 bits: two bytes and 2 unused bits */
            if (group & 3)
                return MCP_EINVAL;
            *o++ = (unsigned char)(group >> 10);
            *o++ = (unsigned char)(group >> 2);
        } else { /* 12 bits: one byte and 4 unused bits */
            if (group & 15)
                return MCP_EINVAL;
            *o++ = (unsigned char)(group >> 4);
        }
    }
    *out_len = (size_t)(o - out);
    return MCP_OK;
}

int mcp_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len)
{
    if (len % 4 != 0)
        return MCP_EINVAL;
    /* Strip the padding of the last group; any other '=' then fails the
     * alphabet check, and a group that keeps 1 character fails in decode(). */
    size_t pad = 0;
    while (pad < 2 && len > pad && in[len - 1 - pad] == '=')
        pad++;
    return decode(in, len - pad, out, out_len, '+', '/');
}

int mcp_base64url_decode(const char *in, size_t len, unsigned char *out, size_t *out_len)
{
    return decode(in, len, out, out_len, '-', '_');
}
