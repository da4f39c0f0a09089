/*
 * Values of the Mcp-Name and Mcp-Param-{Name} headers (2026-07-28
 * specification, Basic > Transports > Streamable HTTP, "Request Metadata").
 *
 * A string that is safe as a plain header value is sent as-is. A string with
 * any non-ASCII byte, any control character (TAB, CR and LF included),
 * leading or trailing whitespace, or that itself looks like the sentinel
 * (starts "=?base64?" and ends "?="), is sent as
 * "=?base64?<standard Base64 of the UTF-8 bytes, with padding>?=".
 * Integers are decimal, booleans "true"/"false". The markers are lowercase
 * and case-sensitive: "=?BASE64?...?=" is a literal value.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_HEADER_VALUE_H
#define MCP_HEADER_VALUE_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest integer magnitude a header may carry: 2^53 - 1. */
#define MCP_HEADER_INT_MAX INT64_C(9007199254740991)

/*
 * Encodes `len` bytes of UTF-8 text for a header. Returns a malloc'd
 * NUL-terminated value in *out (free with free()), or MCP_EINVAL when the
 * text is not valid UTF-8 (or contains NUL), MCP_ENOMEM on allocation
 * failure.
 */
MCP_API int mcp_header_value_encode(const char *text, size_t len, char **out);

/*
 * Encodes a JSON scalar (borrowed) for a header: a string as above, an
 * integer in decimal (MCP_EINVAL beyond +-(2^53-1)), a boolean as
 * true/false. A real with an integral value in that range counts as that
 * integer (JSON Schema's "integer" admits 42.0). Other types (NULL, null,
 * non-integral real, object, array) give MCP_EINVAL; MCP_ENOMEM.
 */
MCP_API int mcp_header_value_from_json(const json_t *value, char **out);

/*
 * Decodes a received header value: trims optional whitespace (SP, HTAB),
 * then either Base64-decodes the sentinel form (standard alphabet, padding
 * required, unused bits zero; the result must be valid UTF-8 without NUL)
 * or takes the plain value, which must consist of visible ASCII and
 * interior spaces/tabs only. The markers must not overlap: "=?base64?=" is
 * a plain value. Returns the decoded bytes, malloc'd and NUL-terminated, in
 * *out and their length in *out_len (if not NULL). Errors: MCP_EINVAL for
 * invalid characters, bad Base64 or a NULL value; MCP_ENOMEM.
 */
MCP_API int mcp_header_value_decode(const char *value, size_t len, char **out, size_t *out_len);

/*
 * Does a decoded header value equal a body value (borrowed)?
 *   string  : byte-exact comparison;
 *   integer : exact numeric comparison ("42", "+42", "42.0", "4.2e1" equal
 *             42); the header must be a decimal number: optional sign,
 *             digits with at most one decimal point, optional exponent
 *             (no hex, no Infinity). A real body value with an integral
 *             value within +-(2^53-1) counts as that integer;
 *   boolean : exactly "true" or "false";
 *   anything else (NULL, null, other reals, objects, arrays): false.
 */
MCP_API bool mcp_header_value_matches(const char *decoded, size_t decoded_len,
                                      const json_t *body_value);

#ifdef __cplusplus
}
#endif
#endif /* MCP_HEADER_VALUE_H */
