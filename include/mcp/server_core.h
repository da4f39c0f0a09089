/*
 * The transport-agnostic server core, for transport authors and for
 * embedding libmcp in another HTTP server or event loop.
 *
 * One entry point, mcp_server_submit(), takes one incoming message (raw
 * bytes) plus its context and answers through a sink: zero or more
 * request-scoped notifications (progress, log, listen-stream events), then
 * the response. The built-in stdio and HTTP transports are thin adapters
 * over it.
 *
 * Messages that belong together (a stdio pipe pair, where a later
 * notifications/cancelled names an earlier request id) share an mcp_conn_t.
 * Independent HTTP POSTs of the modern era need none (pass NULL).
 *
 * Thread safety: every function may be called from any thread. Sinks are
 * called from worker threads, possibly concurrently for different requests,
 * but never concurrently for the same request.
 */
#ifndef MCP_SERVER_CORE_H
#define MCP_SERVER_CORE_H

#include "mcp/common.h"
#include "mcp/headers.h"
#include "mcp/probe.h"
#include "mcp/server.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the core hands to a sink. */
typedef enum mcp_out_kind {
    /* A notification scoped to the request (progress, log) or, for
     * subscriptions/listen, an event of the stream. More will follow. */
    MCP_OUT_NOTIFICATION = 0,
    /* The response to the request: the last message for it. */
    MCP_OUT_RESPONSE = 1,
    /* The incoming message was a notification (or a response) and was
     * accepted; there is nothing to send back (HTTP: 202, empty body). */
    MCP_OUT_ACCEPTED = 2,
    /* A request from the server to a legacy client, on behalf of the
     * request being served (elicitation, sampling, roots). More will
     * follow; the client answers with a message of its own. */
    MCP_OUT_REQUEST = 3
} mcp_out_kind_t;

typedef struct mcp_sink mcp_sink_t;

/* One submitted request in flight, for cancellation by the transport. */
typedef struct mcp_exchange mcp_exchange_t;

/*
 * Where the core sends the outgoing messages of one submitted message.
 * Embed it as the first member of your own struct. The sink must stay
 * valid until release() is called.
 */
struct mcp_sink {
    /*
     * Delivers one outgoing message (borrowed: serialise it, or take a
     * reference, during the call; NULL for MCP_OUT_ACCEPTED). For
     * MCP_OUT_RESPONSE and MCP_OUT_ACCEPTED, `http_status` is the status the
     * message maps to on HTTP (200, 202, 400, 404, ...). Return 0, or a
     * negative value when the peer is gone: the core then cancels the
     * request and sends nothing more.
     */
    int (*send)(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int http_status);
    /* Called exactly once per successful mcp_server_submit(), after the
     * last send() for it (or instead of any, when cancelled). */
    void (*release)(mcp_sink_t *sink);
    /* Optional (NULL: not supported). A response header to send with the
     * response, called before its send(): the Mcp-Session-Id an initialize
     * mints. */
    void (*set_header)(mcp_sink_t *sink, const char *name, const char *value);
    /* Optional (NULL: not supported). Sends a message of a resumable
     * stream with its SSE event id (a legacy session's stream). Returns like
     * send(). */
    int (*send_event)(mcp_sink_t *sink, const json_t *msg, const char *event_id);
    /* Optional (NULL: send() is used). Delivers a final response
     * (MCP_OUT_RESPONSE) the core has already serialised: `text` is the
     * compact JSON of the message, `len` bytes, NUL-terminated, borrowed
     * for the call; `http_status` as for send(). The core then never
     * builds the message as a tree: for a small result that is a tenth of
     * the work of answering. Returns like send(). */
    int (*send_text)(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text, size_t len,
                     int http_status);
    /* Optional (NULL: not called). For a request that runs a handler,
     * called at most once, on the submitting thread, with the handle
     * mcp_server_submit() stores in *exchange_out (borrowed: the same
     * reference), when the caller asked for one, and before the handler
     * starts. A handler can run inside
     * mcp_server_submit() (mcp_tool_t.run_inline, and the built-in HTTP
     * engine's event threads: see mcp_server_options_t.worker_threads);
     * a transport that must be able to cancel the request meanwhile (its
     * client left) takes the handle from here. */
    void (*started)(mcp_sink_t *sink, mcp_exchange_t *exchange);
};

/* Context of an incoming message, as the transport saw it. Borrowed for the
 * duration of mcp_server_submit() (the core copies what it keeps). */
typedef struct mcp_request_context {
    mcp_transport_kind_t transport;
    const mcp_headers_t *headers; /* HTTP request headers; NULL off HTTP */
    const char *principal;        /* authenticated principal, or NULL */
} mcp_request_context_t;

/* A sequence of messages from one client (a stdio connection). */
typedef struct mcp_conn mcp_conn_t;


/* Creates a connection for `transport` on `srv`. NULL on allocation
 * failure. */
MCP_API mcp_conn_t *mcp_conn_new(mcp_server_t *srv, mcp_transport_kind_t transport);

/* Cancels every request still in flight on the connection (their sinks are
 * released without further sends once their handlers return). */
MCP_API void mcp_conn_cancel_all(mcp_conn_t *conn);

/* Frees a connection. Requests still running keep what they need alive.
 * NULL-safe. */
MCP_API void mcp_conn_free(mcp_conn_t *conn);

/*
 * Gives the connection a sink for messages that belong to no request: the
 * list_changed and resources/updated notifications of a legacy session on
 * stdio. The sink is released when the connection is freed. Set it before
 * the first submit.
 */
MCP_API void mcp_conn_set_outbound(mcp_conn_t *conn, mcp_sink_t *sink);

/*
 * Legacy sessions over HTTP (MCP_LEGACY_SESSIONS), for transports and
 * embedders:
 *
 * GET on the endpoint opens the server-to-client stream of a session.
 * `session_id` is the request's Mcp-Session-Id, `last_event_id` its
 * Last-Event-ID (NULL when absent: only new messages follow; otherwise the
 * session's buffered messages after that id are replayed first). The
 * stream's messages go through sink->send_event (which the sink must
 * provide) with their event ids; a newer stream of the same session
 * replaces an older one, which is released.
 *
 * Returns MCP_OK when the sink was taken (release() will be called exactly
 * once); then, when `exchange_out` is not NULL, *exchange_out holds a
 * reference to the stream's exchange: cancel it with mcp_exchange_cancel()
 * when the client goes away, and drop it with mcp_exchange_release() in
 * any case. Otherwise *exchange_out is set to NULL, the sink is not taken
 * (no callback of it is ever called) and the result is one of: MCP_EINVAL
 * for a NULL srv or sink, a sink without send_event, or no session id
 * (400); MCP_ENOTFOUND (unknown or expired: 404); MCP_EUNSUPPORTED
 * (sessions are not in use: 405); MCP_ENOMEM.
 *
 * A session belongs to the principal of its initialize request
 * (mcp_request_context_t.principal; NULL: unauthenticated). Only that
 * principal may use it: to any other, its POSTs, responses, GET and
 * DELETE find no session (404), as if the id were unknown. This function
 * acts for no principal; a transport that authenticates requests calls
 * mcp_server_open_session_stream_as() with the GET's principal.
 */
MCP_API int mcp_server_open_session_stream(mcp_server_t *srv, const char *session_id,
                                           const char *last_event_id, mcp_sink_t *sink,
                                           mcp_exchange_t **exchange_out);

/* mcp_server_open_session_stream() for the authenticated `principal` of
 * the GET (NULL: none): MCP_ENOTFOUND for a session another principal
 * opened. */
MCP_API int mcp_server_open_session_stream_as(mcp_server_t *srv, const char *session_id,
                                              const char *principal, const char *last_event_id,
                                              mcp_sink_t *sink, mcp_exchange_t **exchange_out);

/*
 * DELETE on the endpoint: ends a session (its stream closes, requests it
 * has in flight are cancelled). Returns MCP_OK, MCP_EINVAL (no id),
 * MCP_ENOTFOUND (unknown, or opened by a principal: 404), MCP_EUNSUPPORTED
 * (sessions not in use: 405). Acts for no principal, as
 * mcp_server_open_session_stream() does.
 */
MCP_API int mcp_server_end_session(mcp_server_t *srv, const char *session_id);

/* mcp_server_end_session() for the authenticated `principal` of the
 * DELETE (NULL: none): MCP_ENOTFOUND for a session another principal
 * opened, which goes on. */
MCP_API int mcp_server_end_session_as(mcp_server_t *srv, const char *session_id,
                                      const char *principal);

/*
 * Submits one incoming message: `len` bytes of JSON (one JSON-RPC message;
 * `bytes` may be NULL only when len is 0). Validation failures are
 * answered at once through the sink; method work runs on the worker pool
 * (or, for a quick handler, inside this call: see mcp_sink_t.started) and
 * answers later. `srv`, `ctx` and `sink`, with its send and release,
 * are required. Returns MCP_OK when the sink was taken (release() will be
 * called exactly once), or a negative code when the core could not take
 * it: MCP_EINVAL for a missing argument or NULL bytes with len > 0,
 * MCP_ENOMEM, MCP_ECLOSED after the server started shutting down. The sink
 * is then untouched.
 *
 * `conn` may be NULL (a one-off HTTP POST). When `exchange_out` is not NULL
 * it receives a handle to cancel the request (NULL for messages answered
 * at once); release it with mcp_exchange_release(). The handle is set,
 * and sink->started() called with it, before the handler starts: a
 * handler that runs inside this call (see mcp_sink_t.started) can be
 * cancelled from another thread through it.
 */
MCP_API int mcp_server_submit(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                              const mcp_request_context_t *ctx, mcp_sink_t *sink,
                              mcp_exchange_t **exchange_out);

/* Cancels a submitted request (the HTTP client went away): its handler sees
 * mcp_call_cancelled(), nothing more is sent, and the sink is released.
 * Once the request was answered (its sink released) this does nothing: a
 * tools/call that became a task goes on after its answer, and only
 * tasks/cancel stops it. */
MCP_API void mcp_exchange_cancel(mcp_exchange_t *ex);

/*
 * Ends a subscriptions/listen stream gracefully: the listen request gets
 * its result ({"resultType":"complete"} with the subscription id), which
 * closes the stream, and the sink is released. A transport that stops
 * calls it for its open streams first. No-op for any other request and for
 * a stream that already ended. NULL-safe.
 */
MCP_API void mcp_exchange_end_stream(mcp_exchange_t *ex);

/* Drops the transport's handle. NULL-safe. */
MCP_API void mcp_exchange_release(mcp_exchange_t *ex);

#ifdef __cplusplus
}
#endif
#endif /* MCP_SERVER_CORE_H */
