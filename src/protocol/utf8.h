/*
 * utf8.h - UTF-8 well-formedness (RFC 3629), for text that becomes a JSON
 * string: what a peer sends (json_reader.c) and what a handler hands the
 * library (content.c).
 *
 * Well-formed means: no overlong forms, no surrogates (U+D800-U+DFFF),
 * nothing above U+10FFFF, no sequence cut short. These are jansson's rules
 * too, so a string that passes here is one json_string() would accept
 * (fuzz/fuzz_utf8.c holds the two to each other).
 *
 * Pure functions: thread-safe, no allocation.
 */
#ifndef MCP_PROTOCOL_UTF8_H
#define MCP_PROTOCOL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The length (2 to 4) of the well-formed sequence that starts at `p`, a
 * byte of 0x80 or above, with `end` one past the last byte available; 0
 * when it is not one.
 */
size_t mcp_utf8_sequence_length(const unsigned char *p, const unsigned char *end);

/*
 * Whether the `len` bytes at `s` are well-formed UTF-8 (NUL bytes are
 * U+0000, well-formed). ASCII runs are checked eight bytes at a time: a
 * megabyte of text costs about a tenth of what jansson's byte-by-byte
 * check costs.
 */
bool mcp_utf8_valid(const char *s, size_t len);

#endif /* MCP_PROTOCOL_UTF8_H */
