/*
 * oauth_parse.h - the pure pieces of the OAuth client (no I/O): the
 * WWW-Authenticate challenge, the discovery URLs, the resource identifier,
 * form and query encoding, PKCE. Everything here takes peer bytes and is
 * fuzzed (fuzz/fuzz_oauth_challenge.c, fuzz/fuzz_oauth_url.c).
 *
 * All functions are thread-safe (no shared state). Strings returned through
 * `char **` are malloc'd and owned by the caller; on failure they are NULL.
 */
#ifndef MCP_OAUTH_PARSE_H
#define MCP_OAUTH_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp/common.h"

/* ---- WWW-Authenticate (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1) ---- */

/* What a Bearer (or DPoP) challenge says; every string NULL when absent. */
typedef struct {
    char *resource_metadata; /* URL of the protected resource metadata */
    char *scope;             /* space-separated scopes */
    char *error;             /* "invalid_token", "insufficient_scope", ... */
    char *error_description;
    bool dpop;               /* the scheme is DPoP (RFC 9449 §7.1), not Bearer */
} oauth_challenge_t;

/*
 * Parses a WWW-Authenticate field value -- one or more challenges,
 * comma-separated, as several header lines joined with ", " -- and fills
 * *out from the first challenge whose scheme is "Bearer" or "DPoP" (RFC
 * 9449 §7.1: the same parameters, for a token bound to a key; the scheme
 * case-insensitive, `dpop` set for it).
 * Parameter names are case-insensitive; values are quoted strings (backslash
 * escapes undone) or bare: tokens, and, leniently, any other visible
 * characters but "," and '"' (servers send `scope=mcp:read` and unquoted
 * URLs, which RFC 9110 would have quoted). A parameter given twice keeps
 * the first.
 * A Bearer or DPoP challenge takes parameters only (RFC 6750 §3): a token68
 * after its scheme is malformed; other schemes may carry either, and are
 * skipped. The whole value must parse, not only the challenge kept.
 * Returns MCP_OK (out filled), MCP_ENOTFOUND (no such challenge, an empty
 * value or a NULL one; *out all NULL), MCP_EPROTO (malformed: nothing
 * filled), MCP_ENOMEM.
 */
int oauth_challenge_parse(const char *value, oauth_challenge_t *out);
void oauth_challenge_free(oauth_challenge_t *c);

/* ---- URLs ----
 *
 * The functions below that take an MCP server URL or an issuer accept an
 * absolute URL: "http" or "https" (any case) "://" host [":" port] [path]
 * ["?" query] ["#" fragment], each part made of the characters RFC 3986
 * allows in it. The host is a name or IPv4 address of ALPHA / DIGIT / "-"
 * / "." / "_" / "~" (an international name in its "xn--" form), or an IPv6
 * address in brackets (hex digits, ":" and "."; no zone). The port, when a
 * ":" is there, is 1 to 5 digits up to 65535. Refused: credentials
 * ("user@"), a malformed %-escape, and a "." or ".." path segment, plain or
 * %2E-encoded (it names another path once resolved). Anything else is
 * MCP_EINVAL (false for oauth_resource_allows). Outputs carry the scheme
 * and host lowercased and no default port (80 for http, 443 for https).
 */

/*
 * The protected resource metadata URLs to try for an MCP server URL, in
 * order (RFC 9728 §3.1, MCP authorization "discovery"): with a path,
 * https://host[:port]/.well-known/oauth-protected-resource/<path> and then
 * https://host[:port]/.well-known/oauth-protected-resource; without a path
 * (or "/"), only the latter. The server URL's query and fragment are
 * dropped. Fills out[0..*n-1]. MCP_OK, MCP_EINVAL (not an absolute
 * http(s) URL), MCP_ENOMEM.
 */
int oauth_prm_urls(const char *server_url, char *out[2], size_t *n);

/*
 * The authorization server metadata URLs to try for an issuer, in order
 * (RFC 8414 §3.1, OpenID Connect Discovery 1.0 §4): for an issuer with a
 * path, e.g. https://as/tenant1:
 *   https://as/.well-known/oauth-authorization-server/tenant1
 *   https://as/.well-known/openid-configuration/tenant1
 *   https://as/tenant1/.well-known/openid-configuration
 * and without one:
 *   https://as/.well-known/oauth-authorization-server
 *   https://as/.well-known/openid-configuration
 * A trailing "/" of the issuer's path is not part of the path. MCP_OK,
 * MCP_EINVAL (not an absolute http(s) URL, or it has a query or fragment),
 * MCP_ENOMEM.
 */
int oauth_as_metadata_urls(const char *issuer, char *out[3], size_t *n);

/*
 * The canonical URI of the MCP server as an OAuth resource (RFC 8707 §2,
 * MCP authorization "canonical server URI"): scheme and host lowercased,
 * the port kept only when it is not the scheme's default, the path kept
 * as given (no trailing "/" added; a lone "/" path dropped), no query, no
 * fragment. MCP_OK, MCP_EINVAL, MCP_ENOMEM.
 */
int oauth_canonical_resource(const char *server_url, char **out);

/*
 * The origin of an absolute http(s) URL: "scheme://host[:port]", scheme
 * and host lowercased, the default port left out. The 2025-03-26
 * authorization took the MCP server's origin for its authorization
 * server. MCP_OK, MCP_EINVAL, MCP_ENOMEM.
 */
int oauth_origin(const char *url, char **out);

/*
 * Whether the `resource` a protected resource metadata document names may
 * stand for the MCP server at `server_url` (RFC 9728 §3.3; as the
 * reference SDK does): same scheme, host and port (case-insensitive,
 * default ports equal to none), and the server URL's path equal to the
 * resource's path or below it (on a "/" boundary; a trailing "/" of the
 * resource path ignored). Queries and fragments are not compared. False
 * for anything that does not parse.
 */
bool oauth_resource_allows(const char *resource, const char *server_url);

/*
 * Whether credentials may be sent to `url` (an authorization server
 * endpoint, an IdP's token endpoint): it must parse as above, and be
 * https, or http to this machine -- a host of "localhost", "127.0.0.1" or
 * "[::1]" (OAuth 2.1 §1.5 asks for TLS; loopback never leaves the host).
 * `insecure` lifts the https rule (for tests against a plain-HTTP server
 * elsewhere), not the parsing. Strict parsing is what makes the host
 * checked the host connected to: with "http://127.0.0.1:80@evil/", a
 * lenient reading sees loopback, libcurl connects to "evil". False for
 * NULL.
 */
bool oauth_url_is_safe(const char *url, bool insecure);

/*
 * Appends name=value to an application/x-www-form-urlencoded string
 * (WHATWG URL "application/x-www-form-urlencoded serializer": bytes other
 * than ALPHA / DIGIT / "*-._" percent-encoded with upper-case hex, space as
 * "+"), with "&" before it unless *form is empty. *form is a malloc'd
 * string or NULL (then started). A NULL value appends nothing. MCP_OK or
 * MCP_ENOMEM (*form left as it was).
 */
int oauth_form_add(char **form, const char *name, const char *value);

/* One string form-encoded as oauth_form_add() encodes names and values
 * (malloc'd), or NULL when out of memory. RFC 6749 §2.3.1 encodes a
 * client id and secret so before Basic authentication. */
char *oauth_form_encode(const char *text);

/*
 * Appends form-encoded parameters to a URL: "?" before the first when the
 * URL has no query, "&" otherwise, none after an empty query ("...?") or
 * a trailing "&"; before any "#fragment", which is dropped. `form` as
 * built by oauth_form_add; NULL or "" appends nothing. MCP_OK, MCP_ENOMEM.
 */
int oauth_url_with_query(const char *url, const char *form, char **out);

/*
 * The value of parameter `name` in the query of `url` (form-decoded: "+"
 * is a space, %XX a byte; a malformed %-escape makes the query malformed).
 * The query is what follows the first "?" up to any "#": `url` may be any
 * URI reference, a request target such as "/callback?code=x" included.
 * Names are compared decoded; a parameter without "=" has the value "".
 * The first occurrence counts. MCP_OK, MCP_ENOTFOUND, MCP_EPROTO
 * (malformed, or a decoded value containing NUL), MCP_ENOMEM.
 */
int oauth_query_get(const char *url, const char *name, char **value_out);

/* ---- token endpoint errors (RFC 6749 §5.2) ---- */

/*
 * What a token endpoint's error answer says, for a message: its "error"
 * code, followed by its "error_description" in parentheses when there is
 * one (at most 300 characters of it), malloc'd in *out. `body` (len bytes,
 * any bytes; NULL when len is 0) must be a JSON object whose "error" is a
 * non-empty string. Characters RFC 6749 does not allow in these members
 * (outside %x20-21 / %x23-5B / %x5D-7E) are shown as '?'. MCP_OK,
 * MCP_ENOTFOUND (not such an answer; *out NULL), MCP_ENOMEM.
 */
int oauth_token_error(const char *body, size_t len, char **out);

/* ---- PKCE (RFC 7636) and random strings ---- */

/*
 * Fills out[0..len-1] with random characters from the RFC 7636 "unreserved"
 * set (ALPHA / DIGIT / "-" / "." / "_" / "~") drawn from getrandom(2),
 * unbiased, and NUL-terminates it (out has len + 1 bytes). MCP_OK or
 * MCP_EIO.
 */
int oauth_random_string(char *out, size_t len);

/*
 * The S256 code challenge of a verifier: BASE64URL(SHA-256(verifier)),
 * no padding: 43 characters and a NUL. SHA-256 comes from Nettle, loaded
 * on the first call (client/sha256.h). MCP_OK, or
 * MCP_EUNSUPPORTED when Nettle cannot be loaded (then out is "").
 */
int oauth_pkce_s256(const char *verifier, char out[44]);

#endif /* MCP_OAUTH_PARSE_H */
