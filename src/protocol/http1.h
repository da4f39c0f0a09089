/*
 * HTTP/1.1 request framing (internal): the request head and the chunked
 * body coding, as the built-in HTTP server reads them from a socket
 * (RFC 9112).
 *
 * The server meets untrusted bytes here first, so the reader is strict
 * where leniency has bitten HTTP servers before (request smuggling,
 * header injection): every ambiguity is refused, never guessed.
 *
 *   - Lines end in CRLF; a bare LF is also accepted as a line end (RFC
 *     9112 section 2.2 allows it), a bare CR anywhere is refused.
 *   - The request line is exactly "METHOD SP request-target SP
 *     HTTP/1.x"; the method is a token; the target is origin-form (starts
 *     with '/'), absolute-form ("http://" or "https://", any case, then a
 *     non-empty authority: RFC 9112 section 3.2.2 has a server accept it)
 *     or, for OPTIONS only, "*"; it is visible ASCII (no whitespace,
 *     control characters or bytes >= 0x80: a URI carries those
 *     percent-encoded). An absolute-form target is given back in origin
 *     form, and its authority replaces the Host header's value (a Host
 *     header is added to an HTTP/1.0 request that has none).
 *   - Header names are tokens, with no whitespace before the colon;
 *     values hold no control characters but HTAB (obs-text, bytes >= 0x80,
 *     passes through); optional whitespace around a value is trimmed;
 *     obsolete line folding (a line starting with SP or HTAB) is refused,
 *     and so is whitespace between the request line and the first header.
 *   - Content-Length is 1 to 18 decimal digits; several, even equal, are
 *     refused, as is a list "5, 5".
 *   - Transfer-Encoding is a list of codings (several headers make one
 *     list, RFC 9110 section 5.3). Only "chunked" alone (case-insensitive,
 *     surrounding whitespace ignored) is served; chunked last after other
 *     codings is 501 (not implemented); a list that does not end in
 *     chunked, or names it twice, leaves the body's length unknown: 400
 *     (RFC 9112 section 6.3). Both Transfer-Encoding and Content-Length
 *     is refused (400), and so is Transfer-Encoding on HTTP/1.0 (RFC 9112
 *     section 6.1: its framing is faulty).
 *   - HTTP/1.1 needs exactly one Host header; HTTP/1.0 may omit it, but
 *     not repeat it. Its value is uri-host [":" port] (RFC 9110 section
 *     7.2; an IP literal in brackets or a reg-name, possibly empty; no
 *     userinfo).
 *   - Header names are matched case-insensitively.
 *
 * After any refusal the length of the body is unknown: the caller answers
 * with the status and closes the connection.
 *
 * Pure code: no I/O, no allocation, no globals; thread-safe.
 */
#ifndef MCP_PROTOCOL_HTTP1_H
#define MCP_PROTOCOL_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/headers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed request head. Every string points into the caller's buffer,
 * NUL-terminated in place (see mcp_http1_parse_head()). */
typedef struct mcp_http1_head {
    const char *method;
    const char *target; /* origin-form ("/path?query") or "*" */
    /* The host an absolute-form target named ("host:port"), also the Host
     * header's value now; NULL for any other form. */
    const char *authority;
    int minor_version;  /* 0 or 1: HTTP/1.0, or HTTP/1.1 (and later 1.x) */
    mcp_header_t *headers; /* the caller's array, in arrival order */
    size_t n_headers;
    int64_t content_length; /* -1: no Content-Length header */
    bool chunked;           /* Transfer-Encoding: chunked */
    /* The connection may carry another request after this one: HTTP/1.1
     * unless "Connection: close", HTTP/1.0 only with "Connection:
     * keep-alive" (Connection is a comma-separated list of tokens, matched
     * case-insensitively). */
    bool keep_alive;
    /* "Expect: 100-continue" (case-insensitive) on HTTP/1.1. On HTTP/1.0
     * it is ignored (RFC 9110 section 10.1.1: such a client does not
     * wait). Any other expectation, on either version, is refused with
     * 417. */
    bool expect_continue;
} mcp_http1_head_t;

/*
 * Finds the end of a request head in buf[0..len): the offset just past the
 * blank line that ends it, or 0 when it is not complete yet. `from` is
 * where the previous call stopped looking (0 on the first), so feeding a
 * head byte by byte costs linear time: pass the value *next_from returned
 * last time (the same bytes must still be at buf[0..from)); *next_from is
 * always set, and `next_from` may be NULL. Empty lines before the request
 * line are allowed (RFC 9112 section 2.2) and belong to the head: the head
 * ends at the first empty line that follows a non-empty one. A line end
 * is CRLF or LF; a terminator cut between two calls is found by the call
 * that receives its last byte.
 */
size_t mcp_http1_head_end(const char *buf, size_t len, size_t from, size_t *next_from);

/*
 * Parses the complete head buf[0..head_len) (head_len as returned by
 * mcp_http1_head_end()), writing NULs into buf to end its strings; the
 * headers go into headers[0..cap), their values trimmed of surrounding
 * SP and HTAB. Returns 0, or the HTTP status to refuse it with:
 *   400  malformed (request line, header syntax, Host, Content-Length,
 *        Transfer-Encoding with Content-Length, on HTTP/1.0 or not ending
 *        in one chunked, bare CR, folding, bytes after the blank line)
 *   417  an Expect other than 100-continue
 *   431  more than `cap` headers (the Host an absolute-form target adds
 *        included)
 *   501  codings before chunked in Transfer-Encoding
 *   505  an HTTP major version other than 1 (HTTP/1.2 to 1.9 are read
 *        as HTTP/1.1, RFC 9110 section 2.5)
 * After a refusal *out is partly filled and must not be used.
 */
int mcp_http1_parse_head(char *buf, size_t head_len, mcp_header_t *headers, size_t cap,
                         mcp_http1_head_t *out);

/*
 * Whether target[0..n) is in absolute-form: "http://" or "https://" (any
 * case), then the authority, up to the first '/', '?' or '#'. Returns
 * where the authority starts (the scheme's length) and its length in
 * *authority_len, or 0 for any other form. mcp_http1_parse_head() turns
 * such a target into origin form itself; this serves engines that get
 * the target as the client sent it.
 */
size_t mcp_http1_absolute_form(const char *target, size_t n, size_t *authority_len);

/*
 * The chunked body decoder: incremental, in place, bounded. Chunk sizes
 * are hex (at most 16 digits, leading zeros included; no sign or prefix);
 * chunk extensions are skipped (at most 4096 bytes per chunk line: all
 * that follows the size digits up to the line end, whitespace before the
 * ';' included); trailer fields are read and dropped (at most 8192 bytes
 * in all, line ends not counted). Chunk-size lines and chunk data end in
 * CRLF (RFC 9112 section 7.1); trailer lines and the final empty line, which
 * are fields, also in a bare LF, as in the head. A bare LF where CRLF is
 * due, a bare CR, or a control character other than HTAB in an extension
 * or trailer, is malformed. Zero-initialise it ({0}) before the
 * first call.
 */
typedef struct mcp_http1_chunked {
    int state;
    uint64_t remaining; /* data bytes left in the current chunk */
    size_t digits;      /* hex digits of the current size line */
    size_t line_bytes;  /* bytes of the current extension or trailer line */
    size_t trailer_bytes;
} mcp_http1_chunked_t;

/*
 * Feeds buf[0..len) (bytes following the head, or following what the last
 * call consumed). Decodes in place: the body bytes found are moved to the
 * front of buf, *data_len of them. Returns how many input bytes were
 * consumed: all of them until the body ends; once *done, the rest belongs
 * to the next request on the connection. Returns -1 (and *data_len 0, and
 * -1 again on any later call) when the coding is malformed or over a
 * limit (the caller answers 400 and closes the connection). *done is set once the
 * final chunk and its trailers have been read; the decoder must not be fed
 * again after that. Input cut anywhere (inside a size, a CRLF, a trailer)
 * is fine: the decoder keeps what it needs in its state.
 */
long mcp_http1_chunked_feed(mcp_http1_chunked_t *dec, char *buf, size_t len, size_t *data_len,
                            bool *done);

#ifdef __cplusplus
}
#endif

#endif /* MCP_PROTOCOL_HTTP1_H */
