/*
 * How the client core talks to a transport (stdio, Streamable HTTP).
 *
 * The core builds complete JSON-RPC requests (with _meta) and hands each to
 * the transport with start(); the transport delivers the request-scoped
 * notifications it receives for it (progress, log, listen events) and then
 * exactly one outcome: the JSON-RPC response, or a failure. Timeouts,
 * retries, MRTR rounds and caching are the core's business; framing,
 * routing by id and connection handling are the transport's.
 *
 * Routing of notifications on a shared stream (stdio): a notification
 * belongs to the exchange whose request id equals its params.progressToken
 * (the core always uses a request's own id as its progress token), its
 * params._meta["io.modelcontextprotocol/subscriptionId"], or, for
 * notifications/cancelled (a server ending a listen stream), its
 * params.requestId; anything else goes to on_unrouted. On HTTP each request
 * has its own stream.
 *
 * An exchange's own callbacks must not call cancel() on it (the transport
 * serialises an exchange's callbacks, so that would wait on itself).
 *
 * Threading: start/cancel/release/notify may be called from any thread,
 * concurrently. Event callbacks run on transport threads, never while the
 * transport holds a lock the core could need, and never concurrently for
 * the same exchange.
 */
#ifndef MCP_CLIENT_TRANSPORT_H
#define MCP_CLIENT_TRANSPORT_H

#include "mcp/client.h"
#include "mcp/headers.h"

typedef struct client_transport client_transport_t;
typedef struct client_exchange client_exchange_t; /* one request on the wire */

/* The end of one request, as the transport saw it. */
typedef struct client_outcome {
    /* The JSON-RPC response (a result or an error message), or NULL. The
     * callee may take it (set the field to NULL); otherwise the transport
     * releases it after on_done returns. */
    json_t *response;
    /* MCP_OK when `response` is set; otherwise why there is none:
     * MCP_ECANCELED (cancel() was called), MCP_ECLOSED (the peer closed or
     * exited), MCP_EIO (network/pipe error), MCP_EPROTO (unparsable reply),
     * MCP_EAUTH (HTTP 401/403), MCP_ELIMIT (the reply outgrew a size
     * limit). */
    int rc;
    const char *why;              /* a sentence for error messages, or NULL */
    /* HTTP only (0/NULL on stdio): what came back, so that the era probe
     * can classify it (mcp_classify_probe) and auth can react. */
    int http_status;
    const char *content_type;
    const char *body;             /* raw body bytes when `response` is NULL */
    size_t body_len;
    const char *www_authenticate; /* the challenge of a 401/403 */
    /* A 401 that came with a DPoP-Nonce (RFC 9449 §9): the server wants
     * the proof to carry it, and the transport now has it. */
    bool dpop_nonce;
    /* Legacy HTTP event streams: the last event ID seen ("" or NULL when
     * none), to resume with, and the server's retry delay (-1: none). */
    const char *last_event_id;
    int64_t retry_ms;
} client_outcome_t;

typedef struct client_exchange_events {
    /* A notification that belongs to this request (borrowed). */
    void (*on_notification)(void *user, const json_t *msg);
    /* The outcome; called exactly once per successful start(). */
    void (*on_done)(void *user, client_outcome_t *outcome);
    /* HTTP only, and optional (NULL): the final status line and headers
     * arrived, so a stream the server keeps open is open now. At most once,
     * before any notification and before on_done. */
    void (*on_open)(void *user, int http_status);
} client_exchange_events_t;

/* What a request needs beyond its body: the HTTP headers (ignored by
 * stdio) and the deadline of its call (all transports). */
typedef struct client_http_hints {
    const char *protocol_version;  /* MCP-Protocol-Version */
    const char *method;            /* Mcp-Method */
    const char *name;              /* Mcp-Name, unencoded (the transport encodes), or NULL */
    /* Mcp-Param-* headers: `name` is the x-mcp-header value (the suffix;
     * the transport prepends "Mcp-Param-"), `value` is already encoded. */
    const mcp_header_t *params;
    size_t n_params;
    bool long_lived;               /* a listen stream: no idle/overall timeout */
    bool no_wait;                  /* notify(): do not wait for the server's 2xx */
    /* start(): the instant (mcp_clock_ms()) by which the request must
     * have gone out, its call's deadline; 0: none but the transport's
     * own. Transports that write on the caller's thread (stdio, HTTP+SSE)
     * give up sending then, and start() fails with MCP_ETIMEDOUT.
     * notify() over Streamable HTTP waits for the server's 2xx until then
     * at most (its own limit still applies when it comes first). */
    int64_t deadline_ms;
} client_http_hints_t;

typedef struct client_transport_ops {
    /* Sends `request` (borrowed; serialise or reference it) and starts
     * waiting for its outcome. On success *out is the exchange handle, which
     * the core releases with release() after on_done ran. Fails (without
     * calling on_done) with MCP_ECLOSED when the transport is closed. */
    int (*start)(client_transport_t *t, const json_t *request, const client_http_hints_t *hints,
                 const client_exchange_events_t *ev, void *user, client_exchange_t **out);
    /* Stops waiting for `ex`: HTTP closes its stream (which is the cancel
     * signal); stdio sends notifications/cancelled for its id when
     * `notify_peer` and ignores a late response. on_done follows with
     * MCP_ECANCELED unless it already ran. */
    void (*cancel)(client_transport_t *t, client_exchange_t *ex, bool notify_peer);
    /* Drops the core's handle. */
    void (*release)(client_transport_t *t, client_exchange_t *ex);
    /* Sends a message that expects no answer: a notification, or (legacy)
     * the response to a server's request (stdio: a line; HTTP: a POST
     * answered 202). */
    int (*notify)(client_transport_t *t, const json_t *notification,
                  const client_http_hints_t *hints);
    /* Closes the connection: every exchange still waiting gets on_done with
     * MCP_ECLOSED. stdio: close the server's stdin, wait, SIGTERM, SIGKILL. */
    void (*close)(client_transport_t *t);
    /* Frees a closed transport. */
    void (*free)(client_transport_t *t);
    /* Optional (NULL: not offered). Called again and again by a thread
     * waiting actively for an answer (spin.h): reads and routes what the
     * connection has ready right now, unless another thread is reading it.
     * Never blocks. Outcomes it routes are delivered on the calling thread,
     * as they would be on the transport's own reader. */
    void (*assist)(client_transport_t *t);
    /* Optional (NULL: the credentials never change). A number that changes
     * whenever the credentials the transport sends change (the token
     * callback answered with a new token): results a server marked
     * "private" are kept apart by it (digest 6). */
    uint64_t (*auth_generation)(client_transport_t *t);

    /* Legacy Streamable HTTP sessions (2025-03-26 ... 2025-11-25). NULL on
     * transports without them (stdio, HTTP+SSE). */

    /* From now on keep the Mcp-Session-Id the server assigns (on the
     * initialize answer) and send it on every request, and send no
     * session after session_reset(). */
    void (*session_begin)(client_transport_t *t);
    /* Whether the server assigned a session. */
    bool (*session_active)(client_transport_t *t);
    /* Forgets the session (the server answered 404: it is gone), so that
     * the next initialize starts a new one. */
    void (*session_reset)(client_transport_t *t);
    /* Ends the session with DELETE (waits at most a few seconds; a 405 is
     * the server's right), sending `protocol_version` (NULL: none) as the
     * MCP-Protocol-Version header, as on every request after initialize.
     * No-op without a session. */
    void (*session_end)(client_transport_t *t, const char *protocol_version);
    /*
     * GETs the endpoint for an event stream (Accept: text/event-stream,
     * with the session and `protocol_version` headers, and Last-Event-ID
     * when `last_event_id` is not NULL). With `request_id` NULL it is the
     * server's own stream: notifications go to ev->on_notification, requests
     * to on_unrouted, and the outcome is its end (status 405: the server
     * offers none). With a request id it resumes the POST stream of that
     * request: the response ends it, like start().
     */
    int (*open_stream)(client_transport_t *t, const char *protocol_version,
                       const char *last_event_id, const json_t *request_id,
                       const client_exchange_events_t *ev, void *user,
                       client_exchange_t **out);
} client_transport_ops_t;

/*
 * Who hears from a transport: the callbacks through which it reports what
 * belongs to no exchange, and where it logs and traces. Every field may be
 * NULL.
 *
 * The constructor copies the hooks into the transport's header before it
 * starts any thread, and nothing changes them afterwards, so transport
 * threads read them without a lock, and an event that comes at once (a
 * server that exits as soon as it starts, a line it prints before any
 * request) reaches them like any later one. The callbacks run on transport
 * threads and may run before the constructor has returned.
 */
typedef struct client_transport_hooks {
    /* Messages that belong to no request in flight (stdio: log messages,
     * notifications of unknown subscriptions; legacy: the server's requests
     * and session notifications). Borrowed. */
    void (*on_unrouted)(void *user, const json_t *msg);
    /* The connection ended by itself (stdio: the server exited; HTTP+SSE:
     * the event stream ended; Streamable HTTP: libcurl failed), with rc
     * and a reason. At most once, and never for a transport whose
     * constructor failed, nor once close() has returned. */
    void (*on_closed)(void *user, int rc, const char *why);
    /* stdio with restart: the server exited (every exchange failed with
     * MCP_ECLOSED) and a new process runs, which knows nothing the old one
     * did. Called on the transport's thread before it reads the new
     * process's output, so it must not wait for an exchange; it may start
     * some on another thread. */
    void (*on_restarted)(void *user);
    void *user;                     /* for the three callbacks above */
    /* Sees every message sent or received (the client's trace option). */
    mcp_trace_fn trace;
    void *trace_user;
    /* The library's own diagnostics (the client's log option). */
    mcp_log_fn log;
    void *log_user;
} client_transport_hooks_t;

/* Every transport starts with this header. */
struct client_transport {
    const client_transport_ops_t *ops;
    client_transport_hooks_t hooks; /* set by the constructor, then fixed */
};

/* Formats a diagnostic for t->hooks.log (nothing without one).
 * wire_trace.c. */
void client_transport_log(const client_transport_t *t, mcp_log_level_t level, const char *fmt,
                          ...) MCP_PRINTF(3, 4);

/* Report a message to t->hooks.trace, if set: as text (`len` bytes), or
 * as JSON (dumped compactly). wire_trace.c. */
void client_trace_text(const client_transport_t *t, mcp_trace_direction_t direction,
                       const char *text, size_t len);
void client_trace_json(const client_transport_t *t, mcp_trace_direction_t direction,
                       const json_t *msg);

/*
 * The constructors. Each copies `hooks` (NULL: none; the caller's struct
 * is not kept) into the new transport before its threads start, so the
 * callbacks may run before it returns (see client_transport_hooks_t). They
 * return MCP_OK with the transport in *out, or the error (MCP_EINVAL for a
 * target that is not one, MCP_EUNSUPPORTED for a library that cannot be
 * loaded, MCP_EIO, MCP_ENOMEM, ...) with *err filled, *out NULL and no
 * on_closed.
 */

/* The stdio transport: spawns target->argv. */
int client_stdio_new(const mcp_stdio_target_t *target, const client_transport_hooks_t *hooks,
                     client_transport_t **out, mcp_error_t *err);

/* The Streamable HTTP transport for target->url. */
int client_http_new(const mcp_http_target_t *target, const client_transport_hooks_t *hooks,
                    client_transport_t **out, mcp_error_t *err);

/* The HTTP+SSE transport of 2024-11-05 for target->url: GETs the URL, waits
 * for the `endpoint` event and POSTs every message there; answers come on
 * the event stream and are routed by id as on stdio. Fails when the stream
 * cannot be opened or names no endpoint within `connect_timeout_ms`. */
int client_http_sse_new(const mcp_http_target_t *target, const client_transport_hooks_t *hooks,
                        client_transport_t **out, mcp_error_t *err);

#endif /* MCP_CLIENT_TRANSPORT_H */
