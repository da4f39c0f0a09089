/*
 * The event stream of the HTTP+SSE transport of 2024-11-05 (internal): the
 * client GETs the server's URL and reads an event stream whose first
 * `endpoint` event names where to POST messages, and whose `message`
 * events carry the server's JSON-RPC messages.
 *
 * The decoding is kept apart from the I/O so that the fuzz target can
 * drive it with any bytes. No threads, no clocks.
 */
#ifndef MCP_TRANSPORT_HTTP_SSE_STREAM_H
#define MCP_TRANSPORT_HTTP_SSE_STREAM_H

#include "protocol/sse.h"

typedef struct http_sse_stream_events {
    /* The endpoint, resolved against the stream's URL (borrowed). */
    void (*on_endpoint)(void *user, const char *url);
    /* The data of a `message` event (a JSON-RPC message, unparsed). */
    void (*on_message)(void *user, const char *data, size_t len);
    void *user;
} http_sse_stream_events_t;

typedef struct http_sse_stream {
    mcp_sse_decoder_t sse;
    const char *base_url;          /* borrowed: the URL the stream was got from */
    http_sse_stream_events_t ev;
    bool have_endpoint;
    int failure;                   /* non-zero once the stream is unusable */
    char why[160];
} http_sse_stream_t;

/* Prepares *s for a stream got from `base_url` (borrowed for the life of
 * *s). Release with http_sse_stream_free(). */
void http_sse_stream_init(http_sse_stream_t *s, const char *base_url, size_t max_event_bytes,
                          const http_sse_stream_events_t *ev);

/* Decodes more bytes. Returns MCP_OK, or the failure that ends the stream
 * (MCP_EPROTO: a second endpoint, or an endpoint that is not a URL of the
 * same origin; MCP_ELIMIT; MCP_ENOMEM), with s->why saying why. */
int http_sse_stream_feed(http_sse_stream_t *s, const char *bytes, size_t len);

void http_sse_stream_free(http_sse_stream_t *s);

/*
 * Resolves the data of an endpoint event against `base_url`: a relative
 * reference or an absolute URL, which must keep the base's scheme, host
 * and port (a server must not send the client's messages, and its token,
 * elsewhere). Returns MCP_OK with a malloc'd URL in *url_out, MCP_EPROTO
 * for anything else, MCP_ENOMEM, or mcp_curl_load()'s failure.
 */
int http_sse_endpoint_resolve(const char *base_url, const char *data, size_t len,
                              char **url_out);

#endif /* MCP_TRANSPORT_HTTP_SSE_STREAM_H */
