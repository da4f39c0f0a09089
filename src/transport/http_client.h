/*
 * The Streamable HTTP transport of the client (internal): the knobs that
 * client_http_new() (src/client/transport.h) sets to their defaults, for
 * tests that need small limits or short waits.
 */
#ifndef MCP_TRANSPORT_HTTP_CLIENT_H
#define MCP_TRANSPORT_HTTP_CLIENT_H

#include "client/transport.h"
#include "transport/http_client_reply.h"

/* Zero fields pick the defaults. */
typedef struct client_http_limits {
    http_reply_limits_t reply;
    /* After the response arrived on an event stream, how long the server
     * may take to end the stream; a stream ended by the server leaves its
     * connection reusable, one cut by the client does not. Default 500. */
    int64_t drain_ms;
    /* How long notify() waits for the server's 202. Default 30000. */
    int64_t notify_timeout_ms;
} client_http_limits_t;

/*
 * How many answers to a legacy server's requests (ping, and the refusals
 * the reading thread sends itself) may be on the wire at once. Each is a
 * POST of its own, which the transport thread cannot wait for: a server
 * that streams requests and never completes those POSTs would otherwise
 * have the client open a connection per request until it runs out of
 * file descriptors. Past this many, the next answers wait their turn and
 * the event streams are not read until they had it, which throttles the
 * server to the pace it takes the answers at, as the blocking write does
 * on stdio; no answer is dropped. What waits is bounded by what libcurl
 * hands over in one write (CURL_MAX_WRITE_SIZE, 16 KB) per stream.
 */
#define CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT 8

#define CLIENT_HTTP_DEFAULT_DRAIN_MS 500
#define CLIENT_HTTP_DEFAULT_NOTIFY_TIMEOUT_MS 30000
#define CLIENT_HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000

/* client_http_new() with explicit limits (NULL: the defaults). */
int client_http_new_with_limits(const mcp_http_target_t *target,
                                const client_http_limits_t *limits,
                                const client_transport_hooks_t *hooks, client_transport_t **out,
                                mcp_error_t *err);

#endif /* MCP_TRANSPORT_HTTP_CLIENT_H */
