/*
 * The exchanges of a client transport whose messages all come back on one
 * shared stream: stdio (a line out; stdout lines back) and the HTTP+SSE
 * transport of 2024-11-05 (a POST out; events of one long GET back). Such a
 * transport sends each message its own way, through the `send` function it
 * gives the channel, and hands every message it reads to
 * message_channel_receive(), which routes it by id (stdio_route.h) to the
 * exchange it belongs to.
 *
 * Exchanges are reference-counted: the core's handle is one reference, the
 * routing table another. Each exchange has its own `deliver` mutex held
 * while its callbacks run, so they never run concurrently, and a `done`
 * flag so on_done runs exactly once, whoever gets there first (the
 * response, cancel(), the end of the stream or close()).
 *
 * Locking: the channel's lock guards the table, whether it takes new
 * exchanges, and the exchanges' reference counts. The channel never sends,
 * calls back or takes another lock while holding it, so a transport may
 * call message_channel_shut() and message_channel_reopen() under a lock of
 * its own (to change its state and the channel's at once), never the other
 * way round.
 */
#ifndef MCP_TRANSPORT_MESSAGE_CHANNEL_H
#define MCP_TRANSPORT_MESSAGE_CHANNEL_H

#include <pthread.h>

#include "client/transport.h"
#include "transport/stdio_route.h"

/* How long notifications/cancelled for a request whose call has timed out
 * may still take to go out: a short chance (a POST on a slow network),
 * never the transport's whole write limit, so that a server that stopped
 * reading holds the caller at most this much past its timeout. */
#define MESSAGE_CHANNEL_NOTICE_GRACE_MS 1000

/* Sends one message (borrowed) to the peer by `deadline_ms` (mcp_clock_ms();
 * 0: the transport's own limit): MCP_OK, MCP_ETIMEDOUT when the deadline
 * came first, or why it could not. */
typedef int (*message_channel_send_fn)(void *ctx, const json_t *msg, int64_t deadline_ms);

typedef struct message_channel {
    client_transport_t *base; /* whose hooks (on_unrouted, trace) serve it */
    message_channel_send_fn send;
    void *send_ctx;
    pthread_mutex_t lock;     /* guards what follows and the exchanges' refs */
    stdio_router_t pending;   /* the exchanges waiting for an answer, by id */
    bool accepting;           /* whether start() takes new exchanges */
} message_channel_t;

/* Readies a channel for `base`, taking exchanges. */
void message_channel_init(message_channel_t *ch, client_transport_t *base,
                          message_channel_send_fn send, void *send_ctx);
/* Frees the channel's table; every exchange must have ended (shut/fail). */
void message_channel_destroy(message_channel_t *ch);

/* The transport's start, cancel and release (client/transport.h), minus
 * the HTTP hints these transports have no use for: start() takes the
 * call's deadline (hints->deadline_ms, 0: none) and sends by then. It
 * fails with MCP_ECLOSED while the channel is shut, MCP_EINVAL for a
 * request whose id is not a string or integer or is already in flight,
 * MCP_ENOMEM, or what send() returned (MCP_ETIMEDOUT: not sent in time).
 * cancel() sends notifications/cancelled through send(), by the
 * exchange's deadline or, once that has passed, within
 * MESSAGE_CHANNEL_NOTICE_GRACE_MS. */
int message_channel_start(message_channel_t *ch, const json_t *request, int64_t deadline_ms,
                          const client_exchange_events_t *ev, void *user,
                          client_exchange_t **out);
void message_channel_cancel(message_channel_t *ch, client_exchange_t *ex, bool notify_peer);
void message_channel_release(message_channel_t *ch, client_exchange_t *ex);

/*
 * Routes one message read from the stream (`len` bytes of JSON, traced as
 * received): a response ends its exchange, a notification goes to its
 * exchange, anything else to base->hooks.on_unrouted. Returns false, with
 * the reason in *why, when it was dropped (not a JSON-RPC message, or an
 * answer nobody waits for).
 */
bool message_channel_receive(message_channel_t *ch, const char *text, size_t len,
                             mcp_error_t *why);

/* The answer to the request `id` came but could not be read (a line over
 * the message limit): its exchange, if one waits, ends at once with rc
 * and `why`. Returns whether one waited. */
bool message_channel_lost(message_channel_t *ch, const json_t *id, int rc, const char *why);

/*
 * The stream ended: stops taking exchanges (start() fails with MCP_ECLOSED
 * until message_channel_reopen()) and moves every pending one to *taken,
 * at once. The caller ends them with message_channel_fail() once it holds
 * no lock.
 */
void message_channel_shut(message_channel_t *ch, stdio_router_t *taken);
/* Ends every exchange of `taken` with `rc` and `why`, and frees the table. */
void message_channel_fail(message_channel_t *ch, stdio_router_t *taken, int rc,
                          const char *why);
/* Takes exchanges again (a new stream: the restarted server's). */
void message_channel_reopen(message_channel_t *ch);

#endif /* MCP_TRANSPORT_MESSAGE_CHANNEL_H */
