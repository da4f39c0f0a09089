/*
 * HTTP/1.1 request framing (src/protocol/http1.c): where a head ends,
 * however its bytes arrive; what a good head says; the status every
 * malformed head is refused with; and the chunked decoder, whole, byte by
 * byte and cut anywhere, at its limits and past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/http1.h"

#define CAP 8 /* header slots the tests give the parser */

#define N_ROWS(rows) (sizeof rows / sizeof rows[0])

/* A row whose bytes include a NUL: its length cannot come from strlen. */
#define WITH_NUL(s) s, sizeof(s) - 1

/* ------------------------------------------------------------------------
 * Good heads and what they say
 * ------------------------------------------------------------------------ */

static const struct good_head {
    const char *raw;
    const char *method, *target;
    int minor;
    const char *headers; /* "name: value\n" for each, in order */
    int64_t length;
    bool chunked, keep_alive, expect;
} GOOD[] = {
    {.raw = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: example.com\n", .length = -1, .keep_alive = true},
    {.raw = "POST /mcp?x=1&y=%20 HTTP/1.1\r\nHost: localhost:3000\r\nContent-Length: 42\r\n"
            "Content-Type: application/json\r\n\r\n",
     .method = "POST", .target = "/mcp?x=1&y=%20", .minor = 1,
     .headers = "Host: localhost:3000\nContent-Length: 42\nContent-Type: application/json\n",
     .length = 42, .keep_alive = true},
    /* Bare LF line ends, and mixed ones. */
    {.raw = "GET /a HTTP/1.1\nHost: a\n\n", .method = "GET", .target = "/a", .minor = 1,
     .headers = "Host: a\n", .length = -1, .keep_alive = true},
    {.raw = "GET /a HTTP/1.1\r\nHost: a\n\r\n", .method = "GET", .target = "/a", .minor = 1,
     .headers = "Host: a\n", .length = -1, .keep_alive = true},
    {.raw = "GET /a HTTP/1.1\nHost: a\r\n\n", .method = "GET", .target = "/a", .minor = 1,
     .headers = "Host: a\n", .length = -1, .keep_alive = true},
    /* Empty lines before the request line belong to the head. */
    {.raw = "\r\n\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: a\n", .length = -1, .keep_alive = true},
    /* HTTP/1.0: Host optional, keep-alive only when asked for. */
    /* HTTP/1.2 to 1.9: processed as HTTP/1.1 (RFC 9110 section 2.5). */
    {.raw = "GET / HTTP/1.2\r\nHost: a\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: a\n", .length = -1, .keep_alive = true},
    {.raw = "POST / HTTP/1.9\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
     .method = "POST", .target = "/", .minor = 1, .headers = "Host: a\nTransfer-Encoding: chunked\n",
     .length = -1, .chunked = true, .keep_alive = true},
    {.raw = "GET / HTTP/1.0\r\n\r\n", .method = "GET", .target = "/", .minor = 0,
     .headers = "", .length = -1},
    {.raw = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", .method = "GET", .target = "/",
     .minor = 0, .headers = "Connection: Keep-Alive\n", .length = -1, .keep_alive = true},
    {.raw = "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", .method = "GET",
     .target = "/", .minor = 0, .headers = "Connection: keep-alive, close\n", .length = -1},
    /* Connection is a token list, across headers; "closed" is not "close". */
    {.raw = "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo\r\nconnection: bar ,\tCLOSE \r\n\r\n",
     .method = "GET", .target = "/", .minor = 1,
     .headers = "Host: a\nConnection: foo\nconnection: bar ,\tCLOSE\n", .length = -1},
    {.raw = "GET / HTTP/1.1\r\nHost: a\r\nConnection: closed, x-close\r\n\r\n", .method = "GET",
     .target = "/", .minor = 1, .headers = "Host: a\nConnection: closed, x-close\n",
     .length = -1, .keep_alive = true},
    /* Values lose surrounding SP and HTAB, keep inner ones and obs-text. */
    {.raw = "GET / HTTP/1.1\r\nHost:a\r\nX-Pad: \t a \tb \t\r\nX-Empty:\r\nX-Blank:  \t \r\n"
            "X-Text: caf\xc3\xa9 \x80\xff\r\n\r\n",
     .method = "GET", .target = "/", .minor = 1,
     .headers = "Host: a\nX-Pad: a \tb\nX-Empty: \nX-Blank: \nX-Text: caf\xc3\xa9 \x80\xff\n",
     .length = -1, .keep_alive = true},
    /* Names are matched ignoring case. */
    {.raw = "PUT /x HTTP/1.1\r\nhOST: a\r\ncontent-LENGTH: 007\r\n\r\n", .method = "PUT",
     .target = "/x", .minor = 1, .headers = "hOST: a\ncontent-LENGTH: 007\n", .length = 7,
     .keep_alive = true},
    {.raw = "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 999999999999999999\r\n\r\n",
     .method = "PUT", .target = "/x", .minor = 1,
     .headers = "Host: a\nContent-Length: 999999999999999999\n", .length = 999999999999999999,
     .keep_alive = true},
    {.raw = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \tChunked \r\n\r\n",
     .method = "POST", .target = "/", .minor = 1,
     .headers = "Host: a\nTransfer-Encoding: Chunked\n", .length = -1, .chunked = true,
     .keep_alive = true},
    {.raw = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n\r\n", .method = "POST",
     .target = "/", .minor = 1, .headers = "Host: a\nExpect: 100-Continue\n", .length = -1,
     .keep_alive = true, .expect = true},
    /* HTTP/1.0 clients do not wait for 100 Continue: ignored. */
    {.raw = "POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", .method = "POST", .target = "/",
     .minor = 0, .headers = "Expect: 100-continue\n", .length = -1},
    {.raw = "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", .method = "OPTIONS", .target = "*",
     .minor = 1, .headers = "Host: a\n", .length = -1, .keep_alive = true},
    /* Every tchar, in a method and in a name. */
    {.raw = "X!#$%&'*+-.^_`|~9 / HTTP/1.1\r\nHost: a\r\na!#$%&'*+-.^_`|~Z9: v\r\n\r\n",
     .method = "X!#$%&'*+-.^_`|~9", .target = "/", .minor = 1,
     .headers = "Host: a\na!#$%&'*+-.^_`|~Z9: v\n", .length = -1, .keep_alive = true},
    /* Host forms: IP literal, IPv4, empty, empty port, percent-encoded. */
    {.raw = "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: [::1]:8080\n", .length = -1, .keep_alive = true},
    {.raw = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: 127.0.0.1\n", .length = -1, .keep_alive = true},
    {.raw = "GET / HTTP/1.1\r\nHost:\r\n\r\n", .method = "GET", .target = "/", .minor = 1,
     .headers = "Host: \n", .length = -1, .keep_alive = true},
    {.raw = "GET / HTTP/1.1\r\nHost: a-b.c_d~e:\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: a-b.c_d~e:\n", .length = -1, .keep_alive = true},
    {.raw = "GET / HTTP/1.1\r\nHost: %41b\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: %41b\n", .length = -1, .keep_alive = true},
    /* Absolute-form (RFC 9112 section 3.2.2): the target is given back in
     * origin form and its host replaces the Host header. */
    {.raw = "POST http://example.com:8080/mcp?x=1 HTTP/1.1\r\nHost: other\r\n\r\n",
     .method = "POST", .target = "/mcp?x=1", .minor = 1, .headers = "Host: example.com:8080\n",
     .length = -1, .keep_alive = true},
    {.raw = "GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n", .method = "GET", .target = "/",
     .minor = 1, .headers = "Host: h\n", .length = -1, .keep_alive = true},
    {.raw = "GET hTtP://h?q=1 HTTP/1.1\r\nA: 1\r\nHost: x\r\n\r\n", .method = "GET",
     .target = "/?q=1", .minor = 1, .headers = "A: 1\nHost: h\n", .length = -1,
     .keep_alive = true},
    {.raw = "GET http://[::1]:3000/a/b HTTP/1.0\r\n\r\n", .method = "GET", .target = "/a/b",
     .minor = 0, .headers = "Host: [::1]:3000\n", .length = -1},
    /* Exactly CAP headers fit. */
    {.raw = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\n"
            "G: 7\r\n\r\n",
     .method = "GET", .target = "/", .minor = 1,
     .headers = "Host: a\nA: 1\nB: 2\nC: 3\nD: 4\nE: 5\nF: 6\nG: 7\n", .length = -1,
     .keep_alive = true},
};

/* ------------------------------------------------------------------------
 * Bad heads and the status each is refused with
 * ------------------------------------------------------------------------ */

#define H11 " HTTP/1.1\r\nHost: a\r\n" /* the rest of a good request line, and Host */

static const struct bad_head {
    const char *raw;
    size_t len; /* 0: strlen(raw) */
    int status;
} BAD[] = {
    /* The request line. */
    {"GET\r\nHost: a\r\n\r\n", 0, 400},
    {"GET /\r\nHost: a\r\n\r\n", 0, 400},
    {"GET  /" H11 "\r\n", 0, 400},
    {"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 0, 400},
    {" GET /" H11 "\r\n", 0, 400},
    {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 0, 400},
    {"G(ET /" H11 "\r\n", 0, 400},
    {"G\x7f" "ET /" H11 "\r\n", 0, 400},
    {"GET\t/" H11 "\r\n", 0, 400},
    /* Absolute-form needs an http(s) scheme and a well-formed host. */
    {"GET http:///mcp" H11 "\r\n", 0, 400},
    {"GET http://?q" H11 "\r\n", 0, 400},
    {"GET http://user@a/" H11 "\r\n", 0, 400},
    {"GET http://a b/" H11 "\r\n", 0, 400},
    {"GET ftp://a/" H11 "\r\n", 0, 400},
    {"GET http:/a" H11 "\r\n", 0, 400},
    {"GET http:" H11 "\r\n", 0, 400},
    /* The Host it adds to an HTTP/1.0 request must fit. */
    {"GET http://a/ HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\nG: 7\r\n"
     "H: 8\r\n\r\n", 0, 431},
    {"CONNECT a:443" H11 "\r\n", 0, 400},
    {"GET *" H11 "\r\n", 0, 400},
    {"GET /a\x01" H11 "\r\n", 0, 400},
    {"GET /a\x7f" H11 "\r\n", 0, 400},
    {"GET /a\t" H11 "\r\n", 0, 400},
    {"GET /caf\xc3\xa9" H11 "\r\n", 0, 400},
    {WITH_NUL("GET /a\0b" H11 "\r\n"), 400},
    {"GET / http/1.1\r\nHost: a\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1x\r\nHost: a\r\n\r\n", 0, 400},
    /* A later HTTP/1 minor version is HTTP/1.1, Host rules included. */
    {"GET / HTTP/1.2\r\n\r\n", 0, 400},
    {"GET / HTTP/1.9\r\nHost: a\r\nHost: b\r\n\r\n", 0, 400},
    {"GET / HTTP/1\r\nHost: a\r\n\r\n", 0, 400},
    {"GET / HTTP/11.1\r\nHost: a\r\n\r\n", 0, 400},
    {"GET / HTTP/1,1\r\nHost: a\r\n\r\n", 0, 400},
    {"GET / HTTPS/1.1\r\nHost: a\r\n\r\n", 0, 400},
    /* Well-formed versions we do not speak. */
    {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 0, 505},
    {"GET / HTTP/0.9\r\nHost: a\r\n\r\n", 0, 505},
    {"GET / HTTP/9.1\r\nHost: a\r\n\r\n", 0, 505},
    /* Bare CR: as a line end, inside a value, before a CRLF. */
    {"GET / HTTP/1.1\rHost: a\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\rb\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\r\r\n\r\n", 0, 400},
    {"\r\r\nGET /" H11 "\r\n", 0, 400},
    /* Folding, and whitespace before the first header. */
    {"GET /" H11 "X: a\r\n b\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\r\n\tb\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 0, 400},
    /* Header names: whitespace before the colon, no name, no colon, not a
     * token. */
    {"GET /" H11 "X : a\r\n\r\n", 0, 400},
    {"GET /" H11 "X\t: a\r\n\r\n", 0, 400},
    {"GET /" H11 ": a\r\n\r\n", 0, 400},
    {"GET /" H11 "X a\r\n\r\n", 0, 400},
    {"GET /" H11 "X-\xc3\xa9: a\r\n\r\n", 0, 400},
    {"GET /" H11 "X(y): a\r\n\r\n", 0, 400},
    {"GET /" H11 "X/y: a\r\n\r\n", 0, 400},
    /* Control characters in values, DEL included. */
    {WITH_NUL("GET /" H11 "X: a\0b\r\n\r\n"), 400},
    {"GET /" H11 "X: a\x01" "b\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\x0b" "b\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\x1f\r\n\r\n", 0, 400},
    {"GET /" H11 "X: a\x7f" "b\r\n\r\n", 0, 400},
    /* Content-Length. */
    {"POST /" H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 5, 5\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length:\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: +5\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: -1\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 0x5\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 5a\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 1 2\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 1000000000000000000\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 0000000000000000000\r\n\r\n", 0, 400},
    /* Transfer-Encoding: with Content-Length, repeated, on HTTP/1.0. */
    {"POST /" H11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 0, 400},
    {"POST /" H11 "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 400},
    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 400},
    /* Codings other than exactly chunked. */
    /* Chunked after codings this server does not decode: 501. */
    {"POST /" H11 "Transfer-Encoding: gzip, chunked\r\n\r\n", 0, 501},
    {"POST /" H11 "Transfer-Encoding: GZIP ,, Chunked \r\n\r\n", 0, 501},
    {"POST /" H11 "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 501},
    /* No chunked at the end, or chunked twice: the body's length is
     * unknown (RFC 9112 section 6.3), 400. */
    {"POST /" H11 "Transfer-Encoding: gzip\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunked, gzip\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunked, chunked\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunkedx\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: chunked;x=1\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: identity\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding:\r\n\r\n", 0, 400},
    {"POST /" H11 "Transfer-Encoding: ,\r\n\r\n", 0, 400},
    /* Host: missing, repeated, malformed. */
    {"GET / HTTP/1.1\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nX: a\r\n\r\n", 0, 400},
    {"GET /" H11 "host: b\r\n\r\n", 0, 400},
    {"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: a:80x\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: a:80:80\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: [::1/]\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: %4\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: %zz\r\n\r\n", 0, 400},
    {"GET / HTTP/1.1\r\nHost: a\xc3\xa9\r\n\r\n", 0, 400},
    /* Expectations other than 100-continue, on either version. */
    {"POST /" H11 "Expect: foo\r\n\r\n", 0, 417},
    {"POST /" H11 "Expect: 100-continue, foo\r\n\r\n", 0, 417},
    {"POST /" H11 "Expect: 100-continue\r\nExpect: 200-ok\r\n\r\n", 0, 417},
    {"POST /" H11 "Expect:\r\n\r\n", 0, 417},
    {"POST / HTTP/1.0\r\nExpect: foo\r\n\r\n", 0, 417},
    /* One header more than CAP. */
    {"GET /" H11 "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\nG: 7\r\nH: 8\r\n\r\n", 0,
     431},
};

static size_t bad_len(const struct bad_head *row)
{
    return row->len ? row->len : strlen(row->raw);
}

/* "name: value\n" for every parsed header. */
static void list_headers(const mcp_http1_head_t *head, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < head->n_headers; i++)
        used += (size_t)snprintf(out + used, size - used, "%s: %s\n", head->headers[i].name,
                                 head->headers[i].value);
}

static void test_good_heads(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS(GOOD); i++) {
        const struct good_head *row = &GOOD[i];
        size_t len = strlen(row->raw);
        char buf[512];
        memcpy(buf, row->raw, len);
        size_t end = mcp_http1_head_end(buf, len, 0, NULL);
        if (end != len)
            fail_msg("good row %zu: head ends at %zu of %zu", i, end, len);

        mcp_header_t headers[CAP];
        mcp_http1_head_t head;
        int status = mcp_http1_parse_head(buf, end, headers, CAP, &head);
        if (status != 0)
            fail_msg("good row %zu refused with %d", i, status);
        char listed[512];
        list_headers(&head, listed, sizeof listed);
        assert_string_equal(head.method, row->method);
        assert_string_equal(head.target, row->target);
        assert_int_equal(head.minor_version, row->minor);
        assert_ptr_equal(head.headers, headers);
        assert_string_equal(listed, row->headers);
        assert_int_equal(head.content_length, row->length);
        if (head.chunked != row->chunked || head.keep_alive != row->keep_alive ||
            head.expect_continue != row->expect)
            fail_msg("good row %zu: chunked %d keep_alive %d expect %d", i, head.chunked,
                     head.keep_alive, head.expect_continue);
        /* Every string lies in the head. */
        assert_true(head.method >= buf && head.method < buf + end);
        assert_true(head.target >= buf && head.target < buf + end);
        for (size_t h = 0; h < head.n_headers; h++)
            assert_true(headers[h].value >= buf && headers[h].value < buf + end);
    }
}

static void test_bad_heads(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS(BAD); i++) {
        const struct bad_head *row = &BAD[i];
        size_t len = bad_len(row);
        char buf[512];
        memcpy(buf, row->raw, len);
        /* The whole row is one head: the parser, not the framing, refuses
         * it. */
        size_t end = mcp_http1_head_end(buf, len, 0, NULL);
        if (end != len)
            fail_msg("bad row %zu: head ends at %zu of %zu", i, end, len);
        mcp_header_t headers[CAP];
        mcp_http1_head_t head;
        int status = mcp_http1_parse_head(buf, end, headers, CAP, &head);
        if (status != row->status)
            fail_msg("bad row %zu (\"%.*s\"): %d, expected %d", i, (int)len, row->raw, status,
                     row->status);
    }
}

/* A head must end where head_end() said: what follows is not its own. */
static void test_parse_refuses_what_follows_the_blank_line(void **state)
{
    (void)state;
    static const char *const rows[] = {
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nX",
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n",    /* no blank line */
        "GET / HTTP/1.1\r\nHost: a\r\n\r", /* cut inside it */
        "\r\n\r\n",                        /* empty lines only */
        "",
    };
    for (size_t i = 0; i < N_ROWS(rows); i++) {
        char buf[64];
        size_t len = strlen(rows[i]);
        memcpy(buf, rows[i], len);
        mcp_header_t headers[CAP];
        mcp_http1_head_t head;
        assert_int_equal(mcp_http1_parse_head(buf, len, headers, CAP, &head), 400);
    }
}

/* With no room for headers at all, the first one is one too many. */
static void test_no_header_room(void **state)
{
    (void)state;
    char buf[] = "GET / HTTP/1.0\r\n\r\n";
    mcp_http1_head_t head;
    assert_int_equal(mcp_http1_parse_head(buf, strlen(buf), NULL, 0, &head), 0);
    char more[] = "GET / HTTP/1.0\r\nX: 1\r\n\r\n";
    assert_int_equal(mcp_http1_parse_head(more, strlen(more), NULL, 0, &head), 431);
}

/* ------------------------------------------------------------------------
 * The end of the head, however the bytes arrive
 * ------------------------------------------------------------------------ */

/* Where the head ends when buf[0..len) arrives in pieces of the sizes
 * step() gives (at least 1), calling head_end() after each. */
static size_t head_end_in_pieces(const char *buf, size_t len, size_t (*step)(size_t *),
                                 size_t *seed)
{
    size_t from = 0, have = 0;
    while (have < len) {
        size_t n = step(seed);
        have = n > len - have ? len : have + n;
        size_t next = (size_t)-1;
        size_t end = mcp_http1_head_end(buf, have, from, &next);
        if (end)
            return end;
        assert_true(next <= have); /* a place to resume from, in what was given */
        from = next;
    }
    return 0;
}

static size_t one_byte(size_t *seed)
{
    (void)seed;
    return 1;
}

/* Pieces of 1 to 7 bytes, from a small linear congruential generator. */
static size_t random_piece(size_t *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return 1 + (*seed >> 16) % 7;
}

static void check_head_end(const char *buf, size_t len, size_t expected, const char *what)
{
    size_t whole = mcp_http1_head_end(buf, len, 0, NULL);
    if (whole != expected)
        fail_msg("%s: whole %zu, expected %zu", what, whole, expected);
    size_t seed = 0;
    if (head_end_in_pieces(buf, len, one_byte, &seed) != expected)
        fail_msg("%s: byte by byte differs", what);
    for (seed = 1; seed < 40; seed++) {
        size_t s = seed;
        if (head_end_in_pieces(buf, len, random_piece, &s) != expected)
            fail_msg("%s: cut with seed %zu differs", what, seed);
    }
}

static void test_head_end_every_sample_in_pieces(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS(GOOD); i++)
        check_head_end(GOOD[i].raw, strlen(GOOD[i].raw), strlen(GOOD[i].raw), "good row");
    for (size_t i = 0; i < N_ROWS(BAD); i++)
        check_head_end(BAD[i].raw, bad_len(&BAD[i]), bad_len(&BAD[i]), "bad row");
}

static void test_head_end_cases(void **state)
{
    (void)state;
    static const struct {
        const char *raw;
        size_t end; /* 0: not complete */
    } rows[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\n\r", 0},
        {"GET / HTTP/1.1\r\n\r\n", 18},
        {"GET / HTTP/1.1\n\n", 16},
        {"GET / HTTP/1.1\r\n\n", 17},
        {"GET / HTTP/1.1\n\r\n", 17},
        {"GET\n\nGET / HTTP/1.1\r\n\r\n", 5}, /* the first head, not the pipelined one */
        {"", 0},
        {"\r\n", 0},
        {"\r\n\r\n\n\n\r\n", 0},              /* empty lines do not end a head on their own */
        {"\r\n\r\nA\r\n\r\n", 9},
        {"\n\nA\n\n", 5},
        {"A\r\r\n", 0},                     /* "A\r" is a line, not the end of one */
        {"A\r\n\r\r\n", 0},                 /* neither is "\r" */
        {"\r\r\n\r\n", 5},                  /* a line holding "\r" ends the leading ones */
        {"A\r\n\r\nB\r\n\r\n", 5},
    };
    for (size_t i = 0; i < N_ROWS(rows); i++)
        check_head_end(rows[i].raw, strlen(rows[i].raw), rows[i].end, rows[i].raw);
}

static void test_head_end_resumes_where_told(void **state)
{
    (void)state;
    const char buf[] = "A\n\nB";
    size_t next = 99;
    assert_int_equal(mcp_http1_head_end(buf, 4, 0, &next), 3);
    assert_int_equal(next, 3);
    /* Told the first three bytes were looked at, it does not look again. */
    assert_int_equal(mcp_http1_head_end(buf, 4, 3, &next), 0);
    assert_int_equal(next, 4);
    /* A `from` past the end is no place to resume: it starts over. */
    assert_int_equal(mcp_http1_head_end(buf, 4, 5, &next), 3);
}

/* ------------------------------------------------------------------------
 * The chunked decoder
 * ------------------------------------------------------------------------ */

typedef struct decoded {
    bool error, done;
    size_t consumed;
    char *data;
    size_t data_len;
} decoded_t;

/*
 * Decodes body[0..len) fed in pieces: the piece sizes are cuts[0..n_cuts)
 * (then the rest). As an engine would, each piece is handed over in a
 * buffer of its own, and feeding stops at an error or at the end.
 */
static decoded_t decode(const char *body, size_t len, const size_t *cuts, size_t n_cuts)
{
    decoded_t r = {.data = malloc(len + 1)};
    assert_non_null(r.data);
    mcp_http1_chunked_t dec = {0};
    size_t pos = 0;
    for (size_t k = 0; k <= n_cuts && !r.done && !r.error; k++) {
        size_t n = k < n_cuts ? cuts[k] : len - pos;
        if (n > len - pos)
            n = len - pos;
        char *piece = malloc(n + 1);
        assert_non_null(piece);
        memcpy(piece, body + pos, n);
        size_t data_len = (size_t)-1;
        bool done = false;
        long used = mcp_http1_chunked_feed(&dec, piece, n, &data_len, &done);
        if (used < 0) {
            assert_int_equal(data_len, 0);
            r.error = true;
        } else {
            assert_true((size_t)used <= n);
            assert_true(data_len <= (size_t)used);
            if (!done)
                assert_int_equal(used, n); /* all of it, until the end */
            /* What was not consumed is the next request's, untouched. */
            assert_memory_equal(piece + used, body + pos + used, n - (size_t)used);
            memcpy(r.data + r.data_len, piece, data_len);
            r.data_len += data_len;
            r.consumed += (size_t)used;
            r.done = done;
        }
        free(piece);
        pos += n;
    }
    return r;
}

static void assert_same_decoding(const decoded_t *a, const decoded_t *b, const char *what)
{
    if (a->error != b->error || a->done != b->done ||
        (!a->error && (a->consumed != b->consumed || a->data_len != b->data_len ||
                       memcmp(a->data, b->data, a->data_len) != 0)))
        fail_msg("%s: decoded differently when cut", what);
}

/* Whole, byte by byte, and cut in two at every place: one result. */
static decoded_t decode_every_way(const char *body, size_t len, bool every_split)
{
    decoded_t whole = decode(body, len, NULL, 0);
    size_t *ones = malloc((len + 1) * sizeof *ones);
    assert_non_null(ones);
    for (size_t i = 0; i < len; i++)
        ones[i] = 1;
    decoded_t bytewise = decode(body, len, ones, len);
    assert_same_decoding(&whole, &bytewise, "byte by byte");
    free(bytewise.data);
    free(ones);
    for (size_t cut = 0; every_split && cut <= len; cut++) {
        decoded_t split = decode(body, len, &cut, 1);
        assert_same_decoding(&whole, &split, "split");
        free(split.data);
    }
    return whole;
}

static const struct chunked_sample {
    const char *body;
    const char *data;
    size_t consumed; /* 0: all of body */
} CHUNKED[] = {
    {"5\r\nhello\r\n0\r\n\r\n", "hello", 0},
    {"0\r\n\r\n", "", 0},
    {"3\r\nabc\r\nA\r\n0123456789\r\na\r\nABCDEFGHIJ\r\n0\r\n\r\n",
     "abc0123456789ABCDEFGHIJ", 0},
    {"5;name=value;q=\"a;b\"\r\nhello\r\n0;last\r\n\r\n", "hello", 0},
    {"5 ;a\r\nhello\r\n0\t \t;b\r\n\r\n", "hello", 0},
    {"5\r\nhello\r\n0\r\nX-Trailer: a\r\nY:\tb \xff\r\n\r\n", "hello", 0},
    /* Trailer lines are fields: a bare LF ends them, as in the head. */
    {"5\r\nhello\r\n0\r\nT: x\n\n", "hello", 0},
    {"1\r\nx\r\n0\r\nT: x\n\r\n", "x", 0},
    {"0005\r\nhello\r\n000\r\n\r\n", "hello", 0},
    {"0000000000000003\r\nabc\r\n0\r\n\r\n", "abc", 0},
    /* Data that looks like the coding is data. */
    {"9\r\n0\r\n\r\n\r\nxx\r\n0\r\n\r\n", "0\r\n\r\n\r\nxx", 0},
    /* Pipelined bytes after the body are left for the next request. */
    {"0\r\n\r\nGET / HTTP/1.1\r\n", "", 5},
    {"2\r\nhi\r\n0\r\nT: 1\r\n\r\n0\r\n\r\n", "hi", 18},
    {"1\r\nx\r\n0\r\n\nGET", "x", 10},
};

static void test_chunked_samples(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS(CHUNKED); i++) {
        const struct chunked_sample *row = &CHUNKED[i];
        size_t len = strlen(row->body);
        decoded_t r = decode_every_way(row->body, len, true);
        if (r.error || !r.done)
            fail_msg("chunked sample %zu: error %d done %d", i, r.error, r.done);
        assert_int_equal(r.consumed, row->consumed ? row->consumed : len);
        assert_int_equal(r.data_len, strlen(row->data));
        assert_memory_equal(r.data, row->data, r.data_len);
        free(r.data);
    }
}

static const char *const CHUNKED_BAD[] = {
    "\r\n",                              /* no size */
    "x\r\n",
    "-5\r\nhello\r\n0\r\n\r\n",
    "+5\r\nhello\r\n0\r\n\r\n",
    "0x5\r\nhello\r\n0\r\n\r\n",
    " 5\r\nhello\r\n0\r\n\r\n",
    "00000000000000001\r\nx\r\n0\r\n\r\n", /* 17 digits */
    "10000000000000000\r\n",
    "5\rhello\r\n0\r\n\r\n",               /* bare CR ends no line */
    "5;a\rb\r\nhello\r\n0\r\n\r\n",
    "5 \r\nhello\r\n0\r\n\r\n",            /* whitespace with no ';' after it */
    "5 x\r\nhello\r\n0\r\n\r\n",
    "5;a\x01\r\nhello\r\n0\r\n\r\n",       /* controls in an extension */
    "5;a\x7f\r\nhello\r\n0\r\n\r\n",
    "5\r\nhelloX\r\n0\r\n\r\n",            /* no line end after the data */
    "5\r\nhelloX0\r\n\r\n",
    "5\r\nhello\rX\n0\r\n\r\n",
    "5\r\nhello0\r\n\r\n",
    "0\r\nX: a\rb\r\n\r\n",                /* bare CR in a trailer */
    "0\r\nX: a\x01\r\n\r\n",
    "0\r\nX: a\r\r\n\r\n",
    "0\r\n\rX",                             /* the final line end */
    /* Chunk lines end in CRLF only (RFC 9112 section 7.1). */
    "5\nhello\r\n0\r\n\r\n",
    "5;a=b\nhello\r\n0\r\n\r\n",
    "5 ;a\nhello\r\n0\r\n\r\n",
    "5\r\nhello\n0\r\n\r\n",
    "5\r\nhello\r\n0\n\r\n",
    "0;x\n\r\n",
    /* A CRLF-only front end reads one extension "a\nb", then "0": one
     * chunk of 2 bytes; a lenient reader would see 3 chunks. */
    "2;a\n3\r\nxyz\r\n0\r\n\r\n",
};

static void test_chunked_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ROWS(CHUNKED_BAD); i++) {
        decoded_t r = decode_every_way(CHUNKED_BAD[i], strlen(CHUNKED_BAD[i]), true);
        if (!r.error)
            fail_msg("chunked bad row %zu accepted", i);
        free(r.data);
    }
}

/* Once malformed, always malformed. */
static void test_chunked_error_is_sticky(void **state)
{
    (void)state;
    mcp_http1_chunked_t dec = {0};
    char bad[] = "x";
    size_t data_len;
    bool done;
    assert_int_equal(mcp_http1_chunked_feed(&dec, bad, 1, &data_len, &done), -1);
    char good[] = "0\r\n\r\n";
    assert_int_equal(mcp_http1_chunked_feed(&dec, good, 5, &data_len, &done), -1);
    assert_false(done);
}

/* A body of the given shape, malloc'd: a chunk line with `ext` extension
 * bytes (";" then x's), one data byte, a last chunk and `trailer` bytes of
 * trailer fields (lines of at most 100 bytes, line ends not counted). */
static char *shaped_body(size_t ext, size_t trailer, size_t *len)
{
    char *b = malloc(ext + trailer * 2 + 64);
    assert_non_null(b);
    size_t n = 0;
    b[n++] = '1';
    if (ext) {
        b[n++] = ';';
        memset(b + n, 'x', ext - 1);
        n += ext - 1;
    }
    memcpy(b + n, "\r\nA\r\n0\r\n", 8);
    n += 8;
    for (size_t left = trailer; left > 0;) {
        size_t line = left < 100 ? left : 100;
        b[n] = 'T';
        memset(b + n + 1, 'y', line - 1);
        n += line;
        memcpy(b + n, "\r\n", 2);
        n += 2;
        left -= line;
    }
    memcpy(b + n, "\r\n", 2);
    n += 2;
    *len = n;
    return b;
}

static void test_chunked_limits(void **state)
{
    (void)state;
    static const struct {
        size_t ext, trailer;
        bool ok;
    } rows[] = {
        {4096, 0, true}, {4097, 0, false}, {0, 8192, true}, {0, 8193, false},
        {4096, 8192, true},
    };
    for (size_t i = 0; i < N_ROWS(rows); i++) {
        size_t len;
        char *body = shaped_body(rows[i].ext, rows[i].trailer, &len);
        decoded_t r = decode_every_way(body, len, false);
        if (r.error == rows[i].ok || (rows[i].ok && (!r.done || r.consumed != len)))
            fail_msg("limits row %zu: error %d done %d", i, r.error, r.done);
        if (rows[i].ok) {
            assert_int_equal(r.data_len, 1);
            assert_int_equal(r.data[0], 'A');
        }
        free(r.data);
        free(body);
    }
}

/* The largest chunk size there is: read, and waiting for its data. */
static void test_chunked_largest_size(void **state)
{
    (void)state;
    mcp_http1_chunked_t dec = {0};
    char line[] = "ffffffffffffffff\r\nabc";
    size_t data_len;
    bool done;
    assert_int_equal(mcp_http1_chunked_feed(&dec, line, strlen(line), &data_len, &done),
                     (long)strlen(line));
    assert_false(done);
    assert_int_equal(data_len, 3);
    assert_memory_equal(line, "abc", 3);
    assert_true(dec.remaining == UINT64_MAX - 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_heads),
        cmocka_unit_test(test_bad_heads),
        cmocka_unit_test(test_parse_refuses_what_follows_the_blank_line),
        cmocka_unit_test(test_no_header_room),
        cmocka_unit_test(test_head_end_every_sample_in_pieces),
        cmocka_unit_test(test_head_end_cases),
        cmocka_unit_test(test_head_end_resumes_where_told),
        cmocka_unit_test(test_chunked_samples),
        cmocka_unit_test(test_chunked_malformed),
        cmocka_unit_test(test_chunked_error_is_sticky),
        cmocka_unit_test(test_chunked_limits),
        cmocka_unit_test(test_chunked_largest_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
