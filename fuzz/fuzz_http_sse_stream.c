/*
 * Fuzzes the event stream of the HTTP+SSE transport (2024-11-05,
 * src/transport/http_sse_stream.h): the endpoint event resolved against
 * the stream's URL, and the message events after it.
 *
 * The stream is read twice, in one piece and in fuzzer-chosen chunks; both
 * runs must agree on the endpoint, the messages and the failure. An
 * endpoint that comes out must resolve to itself (same origin, already
 * normal).
 *
 * Input: [chunk seed: 1 byte][stream bytes...]
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/http_sse_stream.h"

#define BASE "http://127.0.0.1:8080/sse?x=1"

typedef struct seen {
    char *endpoint;
    uint64_t hash;
    size_t messages;
} seen_t;

static void on_endpoint(void *user, const char *url)
{
    seen_t *s = user;
    /* Never a second endpoint; and what came out is itself an endpoint of
     * the base's origin. */
    char *again = NULL;
    if (s->endpoint || http_sse_endpoint_resolve(BASE, url, strlen(url), &again) != MCP_OK ||
        strcmp(again, url) != 0)
        abort();
    free(again);
    s->endpoint = strdup(url);
}

static void on_message(void *user, const char *data, size_t len)
{
    seen_t *s = user;
    s->messages++;
    for (size_t i = 0; i < len; i++)
        s->hash = (s->hash ^ (unsigned char)data[i]) * 0x100000001b3ULL;
    s->hash = (s->hash ^ 0xff) * 0x100000001b3ULL;
}

static int run(const uint8_t *data, size_t size, unsigned seed, seen_t *seen)
{
    http_sse_stream_events_t ev = {on_endpoint, on_message, seen};
    http_sse_stream_t s;
    http_sse_stream_init(&s, BASE, 4096, &ev);
    int rc = 0;
    size_t at = 0;
    while (at < size && rc == 0) {
        size_t n = seed ? 1 + (seed + at) % 7 : size;
        if (n > size - at)
            n = size - at;
        rc = http_sse_stream_feed(&s, (const char *)data + at, n);
        at += n;
    }
    http_sse_stream_free(&s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    seen_t whole = {0}, chunked = {0};
    int a = run(data + 1, size - 1, 0, &whole);
    int b = run(data + 1, size - 1, data[0] | 1u, &chunked);
    if (a != b || whole.messages != chunked.messages || whole.hash != chunked.hash ||
        (whole.endpoint == NULL) != (chunked.endpoint == NULL) ||
        (whole.endpoint && strcmp(whole.endpoint, chunked.endpoint) != 0))
        abort();
    free(whole.endpoint);
    free(chunked.endpoint);
    return 0;
}
