/*
 * HTTP/1.1 request framing (RFC 9112): where a request head ends, what it
 * says, and the chunked body coding.
 *
 * These bytes come straight off a socket, so the reader refuses rather
 * than guesses: a byte that two HTTP implementations could read two ways
 * is how a request gets smuggled past a proxy. Only the plain forms pass.
 */
#include <limits.h>
#include <string.h>

#include "protocol/headers_internal.h"
#include "protocol/hex.h"
#include "protocol/http1.h"

#define CR '\r'
#define LF '\n'

/* The chunked coding's bounds, as the header documents them. */
#define CHUNK_SIZE_MAX_DIGITS 16 /* 2^64 - 1: the most a uint64_t holds */
#define CHUNK_EXT_MAX_BYTES 4096
#define TRAILER_MAX_BYTES 8192

/* ------------------------------------------------------------------------
 * Character classes
 * ------------------------------------------------------------------------ */

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(unsigned char c)
{
    unsigned char lower = (unsigned char)(c | 0x20);
    return is_digit(c) || (lower >= 'a' && lower <= 'z');
}

/* Is `c` one of the (non-NUL) bytes of `set`? */
static bool is_one_of(unsigned char c, const char *set)
{
    return c != '\0' && strchr(set, c) != NULL;
}

/* Control characters: C0 and DEL. */
static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Optional whitespace (RFC 9110 OWS). */
static bool is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* Does `s` equal `word`, ignoring ASCII case? `s` is n bytes long. */
static bool same_word(const char *s, size_t n, const char *word)
{
    for (size_t i = 0; i < n; i++, word++)
        if (*word == '\0' || !mcp_ascii_same_nocase((unsigned char)s[i], (unsigned char)*word))
            return false;
    return *word == '\0';
}

/* ------------------------------------------------------------------------
 * The end of the head
 * ------------------------------------------------------------------------ */

/*
 * Does the LF at buf[lf] end the head: does it end an empty line that
 * follows a non-empty one? Leading empty lines are empty lines that follow
 * nothing, so they do not count. The answer looks back at most four bytes
 * (the optional CR, the LF ending the line before, its optional CR and one
 * byte of that line), which is why a terminator cut between two calls of
 * mcp_http1_head_end() needs no state: the call that sees its last LF
 * sees all of it.
 */
static bool ends_head(const char *buf, size_t lf)
{
    size_t i = lf;
    if (i > 0 && buf[i - 1] == CR)
        i--;
    if (i == 0 || buf[i - 1] != LF)
        return false; /* the line has content */
    i--;
    if (i > 0 && buf[i - 1] == CR)
        i--;
    return i > 0 && buf[i - 1] != LF;
}

size_t mcp_http1_head_end(const char *buf, size_t len, size_t from, size_t *next_from)
{
    if (from > len)
        from = 0; /* not a value we returned: look at everything */
    const char *p = buf + from, *end = buf + len;
    while (p < end && (p = memchr(p, LF, (size_t)(end - p))) != NULL) {
        size_t lf = (size_t)(p - buf);
        if (ends_head(buf, lf)) {
            if (next_from)
                *next_from = lf + 1;
            return lf + 1;
        }
        p++;
    }
    if (next_from)
        *next_from = len;
    return 0;
}

/* ------------------------------------------------------------------------
 * Lines of the head
 * ------------------------------------------------------------------------ */

/* One line: its bytes without the CRLF or LF that ends it. */
typedef struct line {
    char *start;
    size_t len;
} line_t;

typedef struct line_reader {
    char *buf;
    size_t len, pos;
} line_reader_t;

/* The next line, or false when no line end is left in the head. */
static bool next_line(line_reader_t *r, line_t *line)
{
    char *start = r->buf + r->pos;
    char *lf = memchr(start, LF, r->len - r->pos);
    if (!lf)
        return false;
    char *end = lf > start && lf[-1] == CR ? lf - 1 : lf;
    *line = (line_t){start, (size_t)(end - start)};
    r->pos = (size_t)(lf + 1 - r->buf);
    return true;
}

/* A CR that does not end a line: old parsers treat it as a line end, new
 * ones as data, so a header could hide behind it. */
static bool has_bare_cr(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while ((p = memchr(p, CR, (size_t)(end - p))) != NULL) {
        if (p + 1 == end || p[1] != LF)
            return true;
        p += 2;
    }
    return false;
}

/* ------------------------------------------------------------------------
 * The request line: METHOD SP request-target SP HTTP-version
 * ------------------------------------------------------------------------ */

/* "HTTP/1.0" sets *minor to 0, "HTTP/1.1" to "HTTP/1.9" to 1: a minor
 * version above the highest this server implements is processed as that
 * one (RFC 9110 section 2.5). Any other major version is 505, anything
 * that is not "HTTP/d.d" 400. */
static int parse_version(const char *s, size_t n, int *minor)
{
    if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || !is_digit((unsigned char)s[5]) || s[6] != '.' ||
        !is_digit((unsigned char)s[7]))
        return 400;
    if (s[5] != '1')
        return 505;
    *minor = s[7] == '0' ? 0 : 1;
    return 0;
}

size_t mcp_http1_absolute_form(const char *target, size_t n, size_t *authority_len)
{
    static const char *const schemes[] = {"http://", "https://"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t k = strlen(schemes[i]);
        if (n >= k && same_word(target, k, schemes[i])) {
            size_t len = 0;
            while (k + len < n && !strchr("/?#", target[k + len]))
                len++;
            *authority_len = len;
            return k;
        }
    }
    return 0;
}

/* Origin-form ("/path?query"), absolute-form ("http://host/path") or, for
 * OPTIONS, "*". A URI is visible ASCII: anything else would have been
 * percent-encoded by a real client. */
static bool is_valid_target(const char *method, const char *target, size_t n)
{
    if (n == 1 && target[0] == '*')
        return strcmp(method, "OPTIONS") == 0;
    size_t authority_len;
    if (target[0] != '/' && mcp_http1_absolute_form(target, n, &authority_len) == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)target[i] <= ' ' || (unsigned char)target[i] >= 0x7f)
            return false;
    return true;
}

/*
 * Splits the absolute-form target "scheme://authority/path" (its authority
 * at `at`, `len` bytes long) into out->authority and an origin-form
 * out->target, "/" standing for an empty path ("http://h?q" is "/?q").
 * Both stay in the buffer: the authority moves two bytes left, over the
 * "//", which leaves room after it for its NUL and for the "/" an empty
 * path needs.
 */
static void split_absolute_form(char *target, size_t at, size_t len, mcp_http1_head_t *out)
{
    char *authority = target + at, *rest = authority + len;
    memmove(authority - 2, authority, len);
    authority -= 2;
    authority[len] = '\0';
    out->authority = authority;
    if (*rest == '/') {
        out->target = rest;
    } else { /* the byte just before `rest` is free */
        rest[-1] = '/';
        out->target = rest - 1;
    }
}

static int parse_request_line(line_t line, mcp_http1_head_t *out)
{
    char *p = line.start, *end = line.start + line.len;

    char *method = p;
    while (p < end && mcp_is_tchar((unsigned char)*p))
        p++;
    if (p == method || p == end || *p != ' ')
        return 400;
    *p++ = '\0';

    char *target = p;
    while (p < end && *p != ' ')
        p++;
    size_t target_len = (size_t)(p - target);
    if (p == target || p == end || !is_valid_target(method, target, target_len))
        return 400;
    *p++ = '\0';

    out->method = method;
    out->target = target;
    size_t authority_len;
    size_t authority_at = mcp_http1_absolute_form(target, target_len, &authority_len);
    if (authority_at)
        split_absolute_form(target, authority_at, authority_len, out);
    return parse_version(p, (size_t)(end - p), &out->minor_version);
}

/* ------------------------------------------------------------------------
 * Header lines: name ":" OWS value OWS
 * ------------------------------------------------------------------------ */

static int parse_field_line(line_t line, mcp_header_t *header)
{
    char *p = line.start, *end = line.start + line.len;

    /* The name must run from the first byte to the colon. So a line
     * starting with whitespace is refused: obsolete folding, or a header
     * hidden after the request line. So is whitespace before the colon
     * (RFC 9112 section 5.1), which some proxies would strip and others
     * keep in the name. */
    char *name = p;
    while (p < end && mcp_is_tchar((unsigned char)*p))
        p++;
    if (p == name || p == end || *p != ':')
        return 400;
    *p++ = '\0';

    while (p < end && is_ows((unsigned char)*p))
        p++;
    char *value = p, *value_end = end;
    while (value_end > value && is_ows((unsigned char)value_end[-1]))
        value_end--;
    for (const char *c = value; c < value_end; c++)
        if (is_ctl((unsigned char)*c) && *c != '\t')
            return 400;
    *value_end = '\0'; /* at worst over the line's CR or LF */

    *header = (mcp_header_t){name, value};
    return 0;
}

/* ------------------------------------------------------------------------
 * The headers that frame the request
 * ------------------------------------------------------------------------ */

/* RFC 9110 section 7.2: Host = uri-host [":" port], where uri-host is an
 * IP literal in brackets or a reg-name (which includes IPv4 addresses),
 * possibly empty. Anything else, userinfo ("@") included, is 400 (RFC
 * 9112 section 3.2). */
static bool is_valid_host(const char *s)
{
    /* RFC 3986 unreserved and sub-delims, less the letters and digits. */
    static const char marks[] = "-._~!$&'()*+,;=";
    const unsigned char *p = (const unsigned char *)s;
    if (*p == '[') {
        for (p++; *p != ']'; p++)
            if (!(is_alnum(*p) || is_one_of(*p, marks) || *p == ':'))
                return false; /* the NUL included */
        p++;
    } else {
        for (; *p != '\0' && *p != ':'; p++) {
            if (*p == '%') {
                if (mcp_hex_digit(p[1]) < 0 || mcp_hex_digit(p[2]) < 0)
                    return false;
                p += 2;
            } else if (!(is_alnum(*p) || is_one_of(*p, marks))) {
                return false;
            }
        }
    }
    if (*p == ':')
        for (p++; is_digit(*p); p++)
            ;
    return *p == '\0';
}

/* 1 to 18 decimal digits: nothing else, and never more than fits. */
static bool parse_content_length(const char *s, int64_t *out)
{
    int64_t n = 0;
    size_t digits = 0;
    for (; digits < 18 && is_digit((unsigned char)*s); s++, digits++)
        n = n * 10 + (*s - '0');
    if (*s != '\0' || digits == 0)
        return false; /* a 19th digit, or not a digit */
    *out = n;
    return true;
}

/*
 * The next element of the comma-separated list at *s (RFC 9110 section
 * 5.6.1), trimmed of OWS, in *item and *len; *s moves past it. Empty
 * elements are skipped, as the list syntax allows them. False at the end
 * of the list.
 */
static bool next_list_item(const char **s, const char **item, size_t *len)
{
    while (**s) {
        const char *start = *s, *end = start + strcspn(start, ",");
        *s = *end ? end + 1 : end;
        while (start < end && is_ows((unsigned char)*start))
            start++;
        while (end > start && is_ows((unsigned char)end[-1]))
            end--;
        if (end > start) {
            *item = start;
            *len = (size_t)(end - start);
            return true;
        }
    }
    return false;
}

/* Connection is a list of options: sees whether "close" and "keep-alive"
 * are among them. */
static void read_connection_options(const char *s, bool *close, bool *keep_alive)
{
    const char *option;
    size_t len;
    while (next_list_item(&s, &option, &len)) {
        if (same_word(option, len, "close"))
            *close = true;
        else if (same_word(option, len, "keep-alive"))
            *keep_alive = true;
    }
}

/*
 * The codings of every Transfer-Encoding header, in order, as one list
 * (RFC 9110 section 5.3). A body's length is known only when chunked is
 * the last coding and appears once (RFC 9112 sections 6.1 and 6.3):
 * otherwise 400. Chunked alone sets *chunked; chunked after codings this
 * server does not decode (gzip and the like) is 501.
 */
static int read_transfer_codings(const mcp_headers_t *all, bool *chunked)
{
    size_t codings = 0, chunked_seen = 0;
    bool last_is_chunked = false;
    for (size_t i = 0; i < all->count; i++) {
        if (!mcp_header_name_is(all->items[i].name, "Transfer-Encoding"))
            continue;
        const char *s = all->items[i].value, *coding;
        size_t len;
        while (next_list_item(&s, &coding, &len)) {
            codings++;
            last_is_chunked = same_word(coding, len, "chunked");
            chunked_seen += last_is_chunked;
        }
    }
    if (!last_is_chunked || chunked_seen > 1)
        return 400;
    if (codings > 1)
        return 501;
    *chunked = true;
    return 0;
}

/*
 * An absolute-form target names the host itself, and RFC 9112 section
 * 3.2.2 has it replace the Host header: the Host entry now points at the
 * target's authority (one is added on an HTTP/1.0 request that sent
 * none), so whoever checks the Host checks the host the client asked for.
 * An empty or malformed authority is 400; no room left to add Host, 431.
 */
static int adopt_authority(mcp_http1_head_t *out, size_t cap)
{
    if (out->authority[0] == '\0' || !is_valid_host(out->authority))
        return 400;
    for (size_t i = 0; i < out->n_headers; i++) {
        if (mcp_header_name_is(out->headers[i].name, "Host")) {
            out->headers[i].value = out->authority;
            return 0;
        }
    }
    if (out->n_headers == cap)
        return 431;
    out->headers[out->n_headers++] = (mcp_header_t){"Host", out->authority};
    return 0;
}

/* The headers that decide how the body is framed, whether the connection
 * lives on and whether the client waits for 100 Continue. */
static int read_framing(mcp_http1_head_t *out, size_t cap)
{
    const mcp_headers_t all = {out->headers, out->n_headers};
    size_t n;

    const char *host = mcp_headers_lookup(&all, "Host", &n);
    if (n > 1 || (n == 0 && out->minor_version == 1) || (host && !is_valid_host(host)))
        return 400;
    if (out->authority) {
        int status = adopt_authority(out, cap);
        if (status)
            return status;
    }

    const char *length = mcp_headers_lookup(&all, "Content-Length", &n);
    if (n > 1 || (length && !parse_content_length(length, &out->content_length)))
        return 400;

    /* Transfer-Encoding with Content-Length, or on HTTP/1.0 (RFC 9112
     * section 6.1), is how smuggling starts: faulty framing, 400. */
    if (mcp_headers_lookup(&all, "Transfer-Encoding", &n)) {
        if (length || out->minor_version == 0)
            return 400;
        int status = read_transfer_codings(&all, &out->chunked);
        if (status)
            return status;
    }

    bool close = false, keep_alive = false, expect = false;
    for (size_t i = 0; i < out->n_headers; i++) {
        const mcp_header_t *h = &out->headers[i];
        if (mcp_header_name_is(h->name, "Connection")) {
            read_connection_options(h->value, &close, &keep_alive);
        } else if (mcp_header_name_is(h->name, "Expect")) {
            if (!same_word(h->value, strlen(h->value), "100-continue"))
                return 417;
            expect = true;
        }
    }
    out->keep_alive = !close && (out->minor_version == 1 || keep_alive);
    /* An HTTP/1.0 client does not wait for 100 Continue: RFC 9110 section
     * 10.1.1 has the server ignore the expectation. */
    out->expect_continue = expect && out->minor_version == 1;
    return 0;
}

int mcp_http1_parse_head(char *buf, size_t head_len, mcp_header_t *headers, size_t cap,
                         mcp_http1_head_t *out)
{
    *out = (mcp_http1_head_t){.headers = headers, .content_length = -1};
    if (has_bare_cr(buf, head_len))
        return 400;

    line_reader_t reader = {buf, head_len, 0};
    line_t line;
    do { /* empty lines before the request line are skipped */
        if (!next_line(&reader, &line))
            return 400;
    } while (line.len == 0);
    int status = parse_request_line(line, out);
    if (status)
        return status;

    for (;;) {
        if (!next_line(&reader, &line))
            return 400;
        if (line.len == 0)
            break;
        if (out->n_headers == cap)
            return 431;
        status = parse_field_line(line, &headers[out->n_headers]);
        if (status)
            return status;
        out->n_headers++;
    }
    if (reader.pos != head_len)
        return 400; /* bytes after the blank line: not what head_end() found */
    return read_framing(out, cap);
}

/* ------------------------------------------------------------------------
 * The chunked body
 * ------------------------------------------------------------------------ */

/* The decoder's states (mcp_http1_chunked_t.state); zero is the start. */
enum {
    CHUNK_SIZE,         /* the hex digits of a chunk size */
    CHUNK_SIZE_BWS,     /* whitespace after them, which only ';' may follow */
    CHUNK_EXT,          /* chunk extensions, skipped */
    CHUNK_SIZE_LF,      /* the LF ending the size line */
    CHUNK_DATA,         /* `remaining` bytes of data */
    CHUNK_DATA_END,     /* the CR after the data */
    CHUNK_DATA_LF,      /* its LF */
    TRAILER_LINE_START, /* a trailer field, or the empty line ending the body */
    TRAILER_LINE,       /* within a trailer field, dropped */
    TRAILER_LF,         /* the LF ending a trailer field */
    FINAL_LF,           /* the LF of the empty line ending the body */
    CHUNKED_DONE,
    CHUNKED_BROKEN, /* sticky: the coding was malformed */
};

/* The size line has ended: data follows, or the trailers after the last
 * chunk (size 0). */
static int size_line_end(const mcp_http1_chunked_t *dec)
{
    return dec->remaining ? CHUNK_DATA : TRAILER_LINE_START;
}

static int next_chunk(mcp_http1_chunked_t *dec)
{
    dec->digits = 0;
    dec->line_bytes = 0;
    return CHUNK_SIZE;
}

/* One byte after the size digits, before the line end: counted against
 * the extension limit. */
static int extension_byte(mcp_http1_chunked_t *dec, unsigned char c, int state)
{
    if ((is_ctl(c) && c != '\t') || ++dec->line_bytes > CHUNK_EXT_MAX_BYTES)
        return CHUNKED_BROKEN;
    return state;
}

static int trailer_byte(mcp_http1_chunked_t *dec, unsigned char c)
{
    if ((is_ctl(c) && c != '\t') || ++dec->trailer_bytes > TRAILER_MAX_BYTES)
        return CHUNKED_BROKEN;
    return TRAILER_LINE;
}

/* The state after byte `c`, in any state but CHUNK_DATA (whose bytes are
 * moved in bulk) and the two final ones. The size line and the data end
 * in CRLF only: RFC 9112 section 2.2 allows a bare LF in the start line
 * and fields, not in the chunk grammar (section 7.1), and a front end
 * that reads `5;a\nb` as one extension would frame the body differently
 * ("funky chunks", request smuggling). Trailer lines are fields: a bare
 * LF ends them, as in the head. A CR must be followed by LF. */
static int chunked_step(mcp_http1_chunked_t *dec, unsigned char c)
{
    switch (dec->state) {
    case CHUNK_SIZE: {
        int digit = mcp_hex_digit(c);
        if (digit >= 0) {
            if (++dec->digits > CHUNK_SIZE_MAX_DIGITS)
                return CHUNKED_BROKEN;
            dec->remaining = dec->remaining << 4 | (uint64_t)digit;
            return CHUNK_SIZE;
        }
        if (dec->digits == 0)
            return CHUNKED_BROKEN;
        if (c == CR)
            return CHUNK_SIZE_LF;
        if (c == ';')
            return extension_byte(dec, c, CHUNK_EXT);
        return is_ows(c) ? extension_byte(dec, c, CHUNK_SIZE_BWS) : CHUNKED_BROKEN;
    }
    case CHUNK_SIZE_BWS:
        if (c == ';')
            return extension_byte(dec, c, CHUNK_EXT);
        return is_ows(c) ? extension_byte(dec, c, CHUNK_SIZE_BWS) : CHUNKED_BROKEN;
    case CHUNK_EXT:
        if (c == CR)
            return CHUNK_SIZE_LF;
        return extension_byte(dec, c, CHUNK_EXT);
    case CHUNK_SIZE_LF:
        return c == LF ? size_line_end(dec) : CHUNKED_BROKEN;
    case CHUNK_DATA_END:
        return c == CR ? CHUNK_DATA_LF : CHUNKED_BROKEN;
    case CHUNK_DATA_LF:
        return c == LF ? next_chunk(dec) : CHUNKED_BROKEN;
    case TRAILER_LINE_START:
        if (c == CR)
            return FINAL_LF;
        if (c == LF)
            return CHUNKED_DONE;
        return trailer_byte(dec, c);
    case TRAILER_LINE:
        if (c == CR)
            return TRAILER_LF;
        if (c == LF)
            return TRAILER_LINE_START;
        return trailer_byte(dec, c);
    case TRAILER_LF:
        return c == LF ? TRAILER_LINE_START : CHUNKED_BROKEN;
    case FINAL_LF:
        return c == LF ? CHUNKED_DONE : CHUNKED_BROKEN;
    default:
        return CHUNKED_BROKEN;
    }
}

long mcp_http1_chunked_feed(mcp_http1_chunked_t *dec, char *buf, size_t len, size_t *data_len,
                            bool *done)
{
    if (len > LONG_MAX)
        len = LONG_MAX; /* the count must fit the return value */
    size_t in = 0, out = 0;
    while (in < len && dec->state != CHUNKED_DONE && dec->state != CHUNKED_BROKEN) {
        if (dec->state == CHUNK_DATA) {
            size_t n = len - in;
            if (n > dec->remaining)
                n = (size_t)dec->remaining;
            memmove(buf + out, buf + in, n);
            in += n;
            out += n;
            dec->remaining -= n;
            if (dec->remaining == 0)
                dec->state = CHUNK_DATA_END;
        } else {
            dec->state = chunked_step(dec, (unsigned char)buf[in++]);
        }
    }
    bool broken = dec->state == CHUNKED_BROKEN;
    *data_len = broken ? 0 : out;
    *done = dec->state == CHUNKED_DONE;
    return broken ? -1 : (long)in;
}
