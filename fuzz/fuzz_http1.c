/*
 * Fuzzes the HTTP/1.1 request framing (src/protocol/http1.c) as the
 * built-in server meets it: socket bytes in arbitrary pieces.
 *
 * Input: a request head, then whatever follows its blank line, read as a
 * chunked body. The head's end is looked for all at once and in pieces
 * (cut where the input's own bytes say), a complete head is parsed in a
 * copy, and the rest is decoded all at once and in pieces. Each way of
 * cutting must give the same answer, and every answer must keep the
 * contract's promises: pointers and lengths inside what was given, values
 * as the parser says it leaves them, pipelined bytes untouched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/http1.h"

#define CAP 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sizes for the pieces, 1 to 16 bytes, read from the input itself
 * (from `next` on, so the head and the body are cut differently). */
typedef struct cutter {
    const uint8_t *data;
    size_t size, next;
} cutter_t;

static size_t next_piece(cutter_t *c)
{
    if (c->size == 0)
        return 1;
    return 1 + c->data[c->next++ % c->size] % 16;
}

static void check_head_end_in_pieces(const char *buf, size_t len, size_t whole, cutter_t *c)
{
    size_t from = 0, have = 0, end = 0;
    while (have < len && !end) {
        size_t n = next_piece(c);
        have = n > len - have ? len : have + n;
        size_t next;
        end = mcp_http1_head_end(buf, have, from, &next);
        if (next > have || (end && next != end))
            __builtin_trap();
        from = next;
    }
    if (end != whole)
        __builtin_trap();
}

/* Does the NUL-terminated string at s end before `end`? */
static int ends_within(const char *s, const char *start, const char *end)
{
    return s && s >= start && s < end && memchr(s, '\0', (size_t)(end - s)) != NULL;
}

static int parse_copy(const char *head, size_t len, size_t cap, mcp_http1_head_t *out,
                      mcp_header_t *headers, char **copy)
{
    *copy = malloc(len ? len : 1);
    if (!*copy)
        abort();
    memcpy(*copy, head, len);
    return mcp_http1_parse_head(*copy, len, headers, cap, out);
}

static void check_head(const char *head, size_t len)
{
    mcp_header_t headers[CAP], more_headers[4 * CAP];
    mcp_http1_head_t out, more;
    char *copy, *more_copy;
    int status = parse_copy(head, len, CAP, &out, headers, &copy);
    int more_status = parse_copy(head, len, 4 * CAP, &more, more_headers, &more_copy);
    if (status != 0 && status != 400 && status != 417 && status != 431 && status != 501 &&
        status != 505)
        __builtin_trap();
    /* More room changes nothing unless the headers did not fit. */
    if (status != 431 &&
        (more_status != status || (status == 0 && more.n_headers != out.n_headers)))
        __builtin_trap();
    if (status == 0) {
        const char *end = copy + len;
        if ((out.minor_version != 0 && out.minor_version != 1) || out.n_headers > CAP ||
            out.headers != headers || !ends_within(out.method, copy, end) ||
            !ends_within(out.target, copy, end) || out.content_length < -1 ||
            (out.chunked && out.content_length != -1) ||
            (out.expect_continue && out.minor_version != 1))
            __builtin_trap();
        /* The target is given back in origin form, or "*". */
        if (out.target[0] != '/' && strcmp(out.target, "*") != 0)
            __builtin_trap();
        /* An absolute-form target's host is the one Host header. */
        size_t hosts = 0;
        for (size_t i = 0; i < out.n_headers; i++)
            if (strcasecmp(headers[i].name, "Host") == 0)
                hosts++;
        if (out.authority && (!ends_within(out.authority, copy, end) || !*out.authority ||
                              hosts != 1 ||
                              strcmp(mcp_headers_get(&(mcp_headers_t){headers, out.n_headers},
                                                     "Host"),
                                     out.authority) != 0))
            __builtin_trap();
        for (size_t i = 0; i < out.n_headers; i++) {
            const char *name = headers[i].name, *value = headers[i].value;
            /* Names lie in the head, but for the Host an absolute-form
             * target adds to an HTTP/1.0 request. */
            bool added_host = out.authority && value == out.authority;
            if ((!added_host && !ends_within(name, copy, end)) || !ends_within(value, copy, end) ||
                !*name)
                __builtin_trap();
            size_t n = strlen(value);
            if (n && (value[0] == ' ' || value[0] == '\t' || value[n - 1] == ' ' ||
                      value[n - 1] == '\t'))
                __builtin_trap();
            for (size_t k = 0; k < n; k++)
                if (((unsigned char)value[k] < 0x20 && value[k] != '\t') || value[k] == 0x7f)
                    __builtin_trap();
        }
    }
    free(copy);
    free(more_copy);
}

typedef struct decoded {
    int error, done;
    size_t consumed, data_len;
    char *data;
} decoded_t;

/* Decodes body[0..len) in pieces of the sizes `c` gives (all at once when
 * c is NULL), each in a buffer of its own, as the server would. */
static decoded_t decode(const char *body, size_t len, cutter_t *c)
{
    decoded_t r = {.data = malloc(len ? len : 1)};
    char *piece = malloc(len ? len : 1);
    if (!r.data || !piece)
        abort();
    mcp_http1_chunked_t dec = {0};
    for (size_t pos = 0; pos < len && !r.done && !r.error;) {
        size_t n = c ? next_piece(c) : len;
        if (n > len - pos)
            n = len - pos;
        memcpy(piece, body + pos, n);
        size_t data_len;
        bool done;
        long used = mcp_http1_chunked_feed(&dec, piece, n, &data_len, &done);
        if (used < 0) {
            r.error = 1;
            break;
        }
        /* Consumed bytes only, all of them until the end, and what was
         * not consumed is left as it was. */
        if ((size_t)used > n || data_len > (size_t)used || (!done && (size_t)used != n) ||
            memcmp(piece + used, body + pos + used, n - (size_t)used) != 0)
            __builtin_trap();
        memcpy(r.data + r.data_len, piece, data_len);
        r.data_len += data_len;
        r.consumed += (size_t)used;
        r.done = done;
        pos += n;
    }
    free(piece);
    return r;
}

static void check_body(const char *body, size_t len, cutter_t *c)
{
    decoded_t whole = decode(body, len, NULL);
    decoded_t cut = decode(body, len, c);
    if (whole.error != cut.error || whole.done != cut.done ||
        (!whole.error && (whole.consumed != cut.consumed || whole.data_len != cut.data_len ||
                          memcmp(whole.data, cut.data, whole.data_len) != 0)))
        __builtin_trap();
    free(whole.data);
    free(cut.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t next;
    size_t end = mcp_http1_head_end(in, size, 0, &next);
    if (next != (end ? end : size))
        __builtin_trap();
    cutter_t head_cuts = {data, size, 0};
    check_head_end_in_pieces(in, size, end, &head_cuts);
    if (end)
        check_head(in, end);
    /* With no complete head, all of the input is the body. */
    cutter_t body_cuts = {data, size, size / 2};
    check_body(in + end, size - end, &body_cuts);
    return 0;
}
