/*
 * Base64 (RFC 4648), internal to libmcp.
 *
 * Two alphabets are used by the protocol:
 *   - standard Base64 with '=' padding (section 4): the "=?base64?...?="
 *     sentinel of HTTP header values;
 *   - base64url without padding (section 5): opaque tokens such as the
 *     sealed requestState, which travel inside JSON strings and URLs.
 *
 * Decoding is strict, so that every byte string has exactly one accepted
 * text form: characters outside the alphabet (whitespace and line breaks
 * included) are rejected, standard text must be a whole number of 4-character
 * groups with '=' only as the last one or two characters, base64url text
 * must not carry '=' or a dangling single character, and the unused low bits
 * of the last character must be zero (RFC 4648 section 3.5 allows a decoder
 * to reject them; accepting them would give one value several encodings).
 *
 * Buffers belong to the caller. All functions are pure and thread-safe.
 */
#ifndef MCP_PROTOCOL_BASE64_H
#define MCP_PROTOCOL_BASE64_H

#include <stddef.h>

/* Length of the standard, padded encoding of `n` bytes (no NUL counted).
 * `n` must be at most SIZE_MAX / 4 * 3. */
size_t mcp_base64_encoded_len(size_t n);

/* Length of the unpadded base64url encoding of `n` bytes (no NUL counted).
 * `n` must be at most SIZE_MAX / 4 * 3. */
size_t mcp_base64url_encoded_len(size_t n);

/* An upper bound of the bytes that `len` characters of either alphabet can
 * decode to: size a decode buffer with it. */
size_t mcp_base64_decoded_max(size_t len);

/*
 * Encodes `n` bytes of `in` into `out`, which must hold
 * mcp_base64_encoded_len(n) + 1 bytes (resp. mcp_base64url_encoded_len),
 * and NUL-terminates it. Returns the length written, without the NUL.
 */
size_t mcp_base64_encode(const void *in, size_t n, char *out);
size_t mcp_base64url_encode(const void *in, size_t n, char *out);

/*
 * Decodes `len` characters of `in` into `out`, which must hold
 * mcp_base64_decoded_max(len) bytes, and stores the decoded length in
 * *out_len. Returns 0, or MCP_EINVAL when the text is not in the strict
 * form described above (then *out_len is untouched and `out` may hold
 * scratch bytes).
 */
int mcp_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len);
int mcp_base64url_decode(const char *in, size_t len, unsigned char *out, size_t *out_len);

#endif /* MCP_PROTOCOL_BASE64_H */
