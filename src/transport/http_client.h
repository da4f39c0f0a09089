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

#define CLIENT_HTTP_DEFAULT_DRAIN_MS 500
#define CLIENT_HTTP_DEFAULT_NOTIFY_TIMEOUT_MS 30000
#define CLIENT_HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000

/* client_http_new() with explicit limits (NULL: the defaults). */
int client_http_new_with_limits(const mcp_http_target_t *target,
                                const client_http_limits_t *limits,
                                const client_transport_hooks_t *hooks, client_transport_t **out,
                                mcp_error_t *err);

#endif /* MCP_TRANSPORT_HTTP_CLIENT_H */
