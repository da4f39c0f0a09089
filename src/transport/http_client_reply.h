/*
 * The answer to one POST of the Streamable HTTP client (internal).
 *
 * The transport hands over what the server sends back as it arrives: the
 * status and Content-Type once the headers are in, then the body in chunks
 * cut anywhere. The reply reads the body and decides how the exchange ends
 * (digest sections 4.3 and 4.4):
 *
 *   2xx text/event-stream   one JSON-RPC message per event: notifications go
 *                           to on_notification in order, the response to the
 *                           request ends the exchange, anything else (a
 *                           legacy server's request, a response to another
 *                           id) goes to on_other. Events named other than
 *                           "message" and events without data (a legacy
 *                           server's priming event) are skipped.
 *   other 2xx               the body is the JSON-RPC response, whatever the
 *                           Content-Type says.
 *   401 / 403               MCP_EAUTH, with the raw body.
 *   any other status        the raw body, cut at a bound, and the JSON-RPC
 *                           response in it when there is one, so that the
 *                           caller (the era probe) can classify it.
 *
 * For a notification (no request id) any 2xx is success and the body is
 * ignored.
 *
 * Memory is bounded: a JSON body and each event by their own limit, the raw
 * body of an error status by a smaller one. No I/O, no clocks, no threads:
 * the fuzz target drives a reply without any network. A reply is used by
 * one thread at a time.
 */
#ifndef MCP_TRANSPORT_HTTP_CLIENT_REPLY_H
#define MCP_TRANSPORT_HTTP_CLIENT_REPLY_H

#include "client/transport.h"
#include "mcp/jsonrpc.h"
#include "protocol/sse.h"

/* Limits on what a server may make the client hold; zero picks the default. */
typedef struct http_reply_limits {
    size_t max_body_bytes;       /* the JSON body of a 2xx answer */
    size_t max_event_bytes;      /* one event of an event stream */
    size_t max_error_body_bytes; /* what is kept of any other body */
} http_reply_limits_t;

#define HTTP_REPLY_DEFAULT_MAX_BODY MCP_DEFAULT_MAX_MESSAGE_BYTES
#define HTTP_REPLY_DEFAULT_MAX_EVENT MCP_DEFAULT_MAX_MESSAGE_BYTES
#define HTTP_REPLY_DEFAULT_MAX_ERROR_BODY ((size_t)64 * 1024)

/* Where the messages of an event stream go (each `msg` is borrowed). */
typedef struct http_reply_events {
    void (*on_notification)(void *user, const json_t *msg);
    void (*on_other)(void *user, const json_t *msg); /* may be NULL: dropped */
    void *user;
} http_reply_events_t;

typedef enum http_reply_state {
    HTTP_REPLY_READING = 0, /* go on feeding */
    HTTP_REPLY_ANSWERED,    /* the response is in: the rest of the stream is
                               of no interest, but may be let run out */
    HTTP_REPLY_STOPPED      /* the outcome is known: abort the transfer */
} http_reply_state_t;

typedef enum http_reply_body {
    HTTP_REPLY_BODY_BUFFERED = 0, /* one document, kept whole */
    HTTP_REPLY_BODY_EVENTS,       /* an event stream, decoded as it comes */
    HTTP_REPLY_BODY_IGNORED       /* a notification's 2xx body */
} http_reply_body_t;

/* Treat the fields as private; use the functions below. */
typedef struct http_reply {
    json_t *request_id; /* own copy; NULL for a notification */
    http_reply_limits_t limits;
    http_reply_events_t events;

    bool started;
    int status;
    char *content_type;
    http_reply_body_t body_kind;
    char *body;
    size_t body_len, body_cap;
    mcp_sse_decoder_t sse;

    http_reply_state_t state;
    json_t *response;
    char *last_event_id; /* of the event stream so far, or NULL */
    int64_t retry_ms;    /* the stream's retry field, or -1 */
    int failure;     /* non-zero once a failure decided the outcome */
    char why[200];
} http_reply_t;

/*
 * Prepares *r for the answer to a request with `request_id` (borrowed;
 * copied), or to a notification when it is NULL. `limits` may be NULL for
 * the defaults. Returns MCP_OK or MCP_ENOMEM; in both cases release *r
 * with http_reply_free().
 */
int http_reply_init(http_reply_t *r, const json_t *request_id, const http_reply_limits_t *limits,
                    const http_reply_events_t *events);

/* The response headers are in: the status (0 when there was no HTTP
 * response) and the Content-Type (NULL when absent). Called once, before
 * the first http_reply_feed(); later calls are ignored. */
void http_reply_begin(http_reply_t *r, int status, const char *content_type);

/* Reads `len` more body bytes. Message callbacks run from here. Returns
 * the state after them; once it is not READING, further bytes are
 * ignored. */
http_reply_state_t http_reply_feed(http_reply_t *r, const char *bytes, size_t len);

/*
 * The body ended: `transfer_rc` is MCP_OK when it ended cleanly (or the
 * caller stopped it because the state said so), MCP_EIO when the
 * connection failed, MCP_ETIMEDOUT when the exchange's own timeout
 * passed, with `transfer_why` saying how; an outcome that is a failure
 * of the transfer keeps MCP_ETIMEDOUT, any other is MCP_EIO. Fills *out; its
 * strings point into *r and its response is moved out of *r (the caller
 * releases what is still there after use). Call once.
 */
void http_reply_finish(http_reply_t *r, int transfer_rc, const char *transfer_why,
                       client_outcome_t *out);

/* Releases everything *r holds. NULL-safe. */
void http_reply_free(http_reply_t *r);

#endif /* MCP_TRANSPORT_HTTP_CLIENT_REPLY_H */
