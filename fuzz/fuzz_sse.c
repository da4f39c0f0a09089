/*
 * Fuzzes the SSE codec (src/protocol/sse.h) and checks two properties:
 *
 *   1. Chunking never matters: the stream decoded in one piece and cut at a
 *      fuzzer-chosen point give the same events and the same results, with
 *      or without a tight memory limit.
 *   2. Round trip: an event encoded from the input decodes back to exactly
 *      that event (line breaks in the data normalised to LF).
 *
 * Input: [cut: 2 bytes][limit: 1 byte][stream bytes...]. The event name and
 * ID of the round trip are the stream bytes up to the first NUL (at most
 * 16), its data is the whole stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/sse.h"

/* Folds every event into a 64-bit FNV-1a digest. */
typedef struct digest {
    uint64_t hash;
    size_t events;
} digest_t;

static void fold(digest_t *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        d->hash = (d->hash ^ b[i]) * 0x100000001b3ULL;
    d->hash = (d->hash ^ 0xff) * 0x100000001b3ULL; /* field separator */
}

static int on_event(void *user, const mcp_sse_event_t *ev)
{
    digest_t *d = user;
    if (ev->data[ev->data_len] != '\0')
        abort();
    fold(d, ev->type, strlen(ev->type));
    fold(d, ev->data, ev->data_len);
    fold(d, ev->last_event_id, strlen(ev->last_event_id));
    fold(d, &ev->retry_ms, sizeof ev->retry_ms);
    d->events++;
    return 0;
}

typedef struct run {
    digest_t digest;
    int feed_rc;
    int finish_rc;
} run_t;

static run_t decode(const uint8_t *data, size_t size, size_t cut, size_t max)
{
    run_t r = {{0xcbf29ce484222325ULL, 0}, 0, 0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, max, on_event, &r.digest);
    int rc1 = mcp_sse_decoder_feed(&dec, data, cut);
    int rc2 = mcp_sse_decoder_feed(&dec, data + cut, size - cut);
    r.feed_rc = rc1 ? rc1 : rc2;
    r.finish_rc = mcp_sse_decoder_finish(&dec);
    mcp_sse_decoder_free(&dec);
    return r;
}

static void check_chunking(const uint8_t *data, size_t size, size_t cut, size_t max)
{
    run_t whole = decode(data, size, size, max);
    run_t split = decode(data, size, cut, max);
    if (whole.digest.hash != split.digest.hash || whole.digest.events != split.digest.events ||
        whole.feed_rc != split.feed_rc || whole.finish_rc != split.finish_rc)
        abort();
    if (whole.feed_rc != MCP_OK && whole.feed_rc != MCP_ELIMIT)
        abort();
}

/* What the round trip must give back. */
typedef struct expected {
    const char *type, *id;
    const char *data;
    size_t data_len;
    size_t events;
} expected_t;

static int on_round_trip_event(void *user, const mcp_sse_event_t *ev)
{
    expected_t *want = user;
    if (strcmp(ev->type, want->type) != 0 || strcmp(ev->last_event_id, want->id) != 0 ||
        ev->data_len != want->data_len || memcmp(ev->data, want->data, ev->data_len) != 0 ||
        ev->retry_ms != -1)
        abort();
    want->events++;
    return 0;
}

/* LF, CR and CRLF all become LF, as the decoder reports them. */
static size_t normalise_line_breaks(const uint8_t *in, size_t n, char *out)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '\r') {
            out[len++] = '\n';
            if (i + 1 < n && in[i + 1] == '\n')
                i++;
        } else {
            out[len++] = (char)in[i];
        }
    }
    return len;
}

static void check_round_trip(const uint8_t *data, size_t size, size_t cut)
{
    char name[17];
    size_t name_len = 0;
    while (name_len < size && name_len < 16 && data[name_len] != 0) {
        name[name_len] = (char)data[name_len];
        name_len++;
    }
    name[name_len] = '\0';

    char *wire = NULL;
    size_t wire_len = 0;
    int rc = mcp_sse_format_event(name, name, (const char *)data, size, &wire, &wire_len);
    if (strpbrk(name, "\r\n")) {
        if (rc != MCP_EINVAL)
            abort();
        return;
    }
    if (rc != MCP_OK)
        abort();

    char *normal = malloc(size + 1);
    if (!normal)
        abort();
    expected_t want = {name[0] ? name : "message", name, normal,
                       normalise_line_breaks(data, size, normal), 0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, SIZE_MAX, on_round_trip_event, &want);
    cut = cut % (wire_len + 1);
    if (mcp_sse_decoder_feed(&dec, wire, cut) != MCP_OK ||
        mcp_sse_decoder_feed(&dec, wire + cut, wire_len - cut) != MCP_OK ||
        mcp_sse_decoder_finish(&dec) != MCP_OK || want.events != 1)
        abort();
    mcp_sse_decoder_free(&dec);
    free(normal);
    free(wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t cut_seed = (size_t)data[0] << 8 | data[1];
    /* A small limit half the time, to exercise MCP_ELIMIT. */
    size_t max = data[2] < 128 ? data[2] : SIZE_MAX;
    data += 3;
    size -= 3;
    size_t cut = cut_seed % (size + 1);

    check_chunking(data, size, cut, max);
    check_chunking(data, size, cut, SIZE_MAX);
    check_round_trip(data, size, cut_seed);
    return 0;
}
