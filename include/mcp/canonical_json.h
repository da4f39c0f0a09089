/*
 * Canonical JSON (RFC 8785, the JSON Canonicalization Scheme).
 *
 * Object members sorted by the UTF-16 code units of their names, no
 * whitespace, strings with the minimal escapes of ECMAScript JSON.stringify,
 * numbers in the ECMAScript Number-to-string form (integers are read as
 * IEEE-754 doubles, as RFC 8785 requires). Used for the digest of the salient
 * params that a sealed requestState is bound to, so that any implementation
 * can reproduce it.
 *
 * Pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_CANONICAL_JSON_H
#define MCP_CANONICAL_JSON_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Serialises `value` (borrowed) canonically. Returns a malloc'd
 * NUL-terminated string (free with free()) and its length in *len (if not
 * NULL), or NULL for a NULL value, for values that have no canonical form
 * (non-finite reals; trees nested deeper than 2048 levels, jansson's own
 * parsing limit) or on allocation failure. Strings and member names may
 * contain \u0000 (it is escaped).
 */
MCP_API char *mcp_json_canonical(const json_t *value, size_t *len);

/*
 * Formats a double as ECMAScript's Number.prototype.toString does: the
 * fewest digits that read back as `v`, plain notation for
 * 1e-6 <= |v| < 1e21 and exponent notation ("1e-7", "1.5e+21") otherwise;
 * "-0" prints "0". Writes a NUL-terminated string to `buf` (32 bytes always
 * suffice). Returns the length written, or -1 for NaN and infinities or when
 * `size` is too small.
 */
MCP_API int mcp_format_es_number(double v, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* MCP_CANONICAL_JSON_H */
