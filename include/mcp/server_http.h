/*
 * The Streamable HTTP transport of the server (the 2026-07-28
 * specification, Basic > Transports > Streamable HTTP): one endpoint,
 * every request POSTed and answered with one JSON document or with an
 * event stream scoped to it.
 * GET and DELETE serve only legacy sessions (see "Sessions" below).
 *
 * Two ways to serve HTTP:
 *
 *   - mcp_http_server_start(): a complete HTTP/1.1 server, bound to
 *     127.0.0.1 unless told otherwise, optionally over TLS.
 *
 *         mcp_http_server_t *http;
 *         mcp_http_server_start(srv, &(mcp_http_options_t){.port = 8080}, &http, &err);
 *         ... serve until asked to stop ...
 *         mcp_http_server_stop(http);
 *
 *   - The endpoint API (mcp_http_endpoint_new(), mcp_http_begin() ...):
 *     the same rules without any HTTP library, to mount libmcp inside
 *     another HTTP server. You hand over the method, path, headers and
 *     body; libmcp hands back the status, headers and body (or event
 *     stream) through your callbacks. The built-in server is written on
 *     top of it, so both apply every rule below identically.
 *
 * What the endpoint enforces, in this order (the first failure answers):
 *
 *   path         the configured path exactly (query string ignored)   404
 *   Host         one of the allowed hosts (DNS rebinding guard)        403
 *   Origin       absent, or one of the allowed origins                 403
 *   method       POST; with MCP_LEGACY_SESSIONS (the default) also
 *                GET and DELETE. A method HTTP defines (RFC 9110, and
 *                PATCH) is refused otherwise, with
 *                "Allow: GET, POST, DELETE" under sessions, and with
 *                "Allow: POST" in the stateless and reject modes       405
 *                any other method is not implemented                   501
 *   auth         the optional callback admits the request         401/403
 *   Content-Type application/json (parameters ignored)                 415
 *   Accept       absent, or admits application/json or
 *                text/event-stream                                     406
 *   body size    at most max_body_bytes (Content-Length or counted)   413
 *   then the server core: -32700/-32600 (400), the validation ladder
 *   (-32020, -32602, -32022: 400; -32601: 404; -32021: 400), handlers.
 *
 * Content-Type, Accept and body size are checked as above for POST. A GET
 * is refused with 406 unless its Accept admits text/event-stream; a DELETE
 * has no body and no content negotiation.
 *
 * Accept: the spec asks clients to list both media types, and the
 * reference server ignores Accept altogether. libmcp refuses (406) only an
 * Accept that admits neither type (wildcards and q-values count; no Accept
 * admits both), and otherwise lets it shape the framing, below.
 *
 * Refusals before the core carry a JSON-RPC error without "id" (code
 * -32600) so that a client can show why, except 404 for a wrong path,
 * which is plain text: a JSON -32601 on 404 would read as "method not
 * found" to a modern client probing the URL.
 *
 * Framing of a request's answer: application/json for a lone response; a
 * text/event-stream (one "event: message" per JSON-RPC message, the final
 * response last, then the stream ends) as soon as the request emits a
 * notification (progress, log) before its response. Accept narrows the
 * choice: a client that admits only application/json gets the response
 * alone (its notifications are dropped); one that admits only
 * text/event-stream gets even a lone successful response as a stream.
 * Notifications POSTed by a client are answered 202 with an empty body.
 *
 * Sessions: this revision has neither sessions nor resumption, so the
 * endpoint ignores Mcp-Session-Id on a request that carries the modern
 * claim, and Last-Event-ID on every POST. In the stateless and reject
 * legacy modes the endpoint is POST only and ignores both headers. With
 * MCP_LEGACY_SESSIONS (the default) a legacy initialize mints an
 * Mcp-Session-Id that the session's later POSTs must carry (400 without
 * it, 404 when unknown or expired); a GET with it opens the session's
 * stream of server messages, and its Last-Event-ID, if any, replays the
 * buffered messages after that event first; a DELETE with it ends the
 * session (200). GET and DELETE also answer 400 without the header and
 * 404 for an unknown session. In every mode, a legacy request after
 * initialize whose MCP-Protocol-Version names no version this server
 * speaks gets 400 and -32022 (mcp_check_legacy_version_header()).
 *
 * Cancellation: a client that goes away (closes the stream or the
 * connection) cancels its request; the handler sees mcp_call_cancelled()
 * and nothing more is sent. Timeouts: every request has an idle timeout,
 * restarted by every message sent for it, and a hard maximum counted from
 * its start; when either passes, the request is cancelled and its response
 * closed unfinished (the specification's Basic > Patterns > Cancellation).
 */
#ifndef MCP_SERVER_HTTP_H
#define MCP_SERVER_HTTP_H

#include "mcp/common.h"
#include "mcp/headers.h"
#include "mcp/server.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Endpoint rules (shared by the built-in server and embedders)
 * ------------------------------------------------------------------------ */

/*
 * Authentication hook: sees the request headers (borrowed, valid during the
 * call) before the body is read. Return one of:
 *   0    admitted. Optionally store a malloc'd principal in *principal
 *        (libmcp frees it with free()); handlers read it with
 *        mcp_call_principal(), and requestState is bound to it.
 *   401  not authenticated: answered 401; a malloc'd value stored in
 *        *www_authenticate is sent as the WWW-Authenticate header
 *        ("Bearer" when none is: a 401 always carries a challenge, RFC
 *        9110 section 15.5.2).
 *   403  authenticated but not allowed: answered 403 (WWW-Authenticate as
 *        for 401, e.g. Bearer error="insufficient_scope").
 * Any other value is treated as 403 (fail closed). Called from transport
 * threads, several at once: keep it quick and thread-safe.
 */
typedef int (*mcp_http_auth_fn)(void *user, const mcp_headers_t *headers, char **principal,
                                char **www_authenticate);

typedef struct mcp_http_endpoint_options {
    /* The endpoint's path; "/mcp" when NULL. */
    const char *path;
    /*
     * Origins a browser page may call from, NULL-terminated, compared
     * case-insensitively with the Origin header ("https://app.example").
     * Loopback origins (http or https, localhost / 127.0.0.1 / [::1], any
     * port) are always allowed; "*" allows any origin. NULL: loopback only.
     * A request without Origin (not from a browser) is never refused for it.
     */
    const char *const *allowed_origins;
    /*
     * Host header values to accept, NULL-terminated: "example.com" accepts
     * that name with any port, "example.com:8443" only that port, "*" any
     * Host. Loopback names (localhost, 127.0.0.1, [::1], any port) are
     * always accepted. NULL: loopback names only -- the DNS-rebinding guard
     * a local server needs; list your public names when serving others.
     */
    const char *const *allowed_hosts;
    /* Largest accepted request body; 0 picks 4 MiB. */
    size_t max_body_bytes;
    /* Idle timeout of a request: how long it may go without sending
     * anything (a notification or its response); 0 picks 60000. */
    int64_t request_timeout_ms;
    /* Hard maximum of a request from its start, whatever it sends, also
     * capping request_timeout_ms and per-request timeouts; 0 picks 600000. */
    int64_t max_request_timeout_ms;
    /* subscriptions/listen streams live as long as the client keeps them
     * (neither timeout applies); after this many ms without an event they
     * get an SSE comment line, which keeps proxies from closing them and
     * reveals a client that vanished. 0 picks 15000. */
    int64_t keepalive_ms;
    /* Optional authentication (see mcp_http_auth_fn). */
    mcp_http_auth_fn auth;
    void *auth_user;
    /*
     * Cross-origin access for browser clients (CORS). When true, every
     * answer to a request whose Origin passed allowed_origins names that
     * origin in Access-Control-Allow-Origin (with Vary: Origin) and
     * exposes the headers a client reads (Mcp-Session-Id,
     * WWW-Authenticate); a preflight (OPTIONS with
     * Access-Control-Request-Method) is answered 204 No Content, allowing
     * the endpoint's methods and the request headers the page asked for,
     * before authentication (a browser sends no credentials in a
     * preflight). false, the default: no CORS headers, so a page on
     * another origin cannot call the endpoint, whatever allowed_origins
     * says.
     */
    bool cors;
} mcp_http_endpoint_options_t;

/* ------------------------------------------------------------------------
 * The built-in HTTP server
 * ------------------------------------------------------------------------ */

/*
 * What carries the bytes. libmcp's own HTTP/1.1 engine serves plain HTTP:
 * event threads on epoll, an answer written to the socket by the thread
 * that produced it, no TLS library in the process. TLS goes through
 * libmicrohttpd and GnuTLS, loaded only then. Both apply the same
 * endpoint rules and the same options below.
 */
typedef enum mcp_http_engine {
    MCP_HTTP_ENGINE_DEFAULT = 0,   /* built-in for plain HTTP, libmicrohttpd for TLS */
    MCP_HTTP_ENGINE_BUILTIN,       /* libmcp's engine; TLS options are refused */
    MCP_HTTP_ENGINE_LIBMICROHTTPD, /* libmicrohttpd, with or without TLS */
} mcp_http_engine_t;

typedef struct mcp_http_options {
    /* Numeric IPv4 or IPv6 address, or "localhost"; NULL picks "127.0.0.1".
     * A non-loopback address with endpoint.allowed_hosts NULL accepts any
     * Host header (the names you are reached by are yours to list). */
    const char *bind_address;
    /* TCP port; 0 picks a free one (see mcp_http_server_port()). */
    uint16_t port;
    /* The endpoint rules above. */
    mcp_http_endpoint_options_t endpoint;
    /* Event threads accepting connections and moving bytes; 0 picks, on
     * the built-in engine, one fewer than the CPUs the process may run on
     * (at least one, at most 16), and 2 on libmicrohttpd. On the built-in
     * engine they also run the handlers: a handler runs on the thread that
     * read its request, and if it has not returned within a millisecond or
     * two (blocked, or computing), the thread's other connections move to
     * a new thread while it finishes, and its next calls go to the
     * server's worker pool for a while (1 s, doubling each time it
     * happens again). Handlers that may become tasks always run on the
     * pool. On libmicrohttpd, handlers run on the pool. */
    unsigned threads;
    /* Most simultaneous connections; 0 picks 1024, or the open-file limit
     * (RLIMIT_NOFILE) less 64 when that is lower (half of it when it is
     * under 128), so that connections alone never use up the process's
     * descriptors. */
    unsigned connection_limit;
    /* Seconds a connection may stay idle (no bytes while reading a request
     * or while writing a response that is not waiting on a handler);
     * 0 picks 30. Slow clients cannot hold a thread: I/O is non-blocking.
     * Built-in engine: past this many seconds after its first byte, a
     * request must also have come at 500 bytes a second on average, or
     * the connection is closed, so a client trickling its head or body a
     * byte at a time cannot hold a connection either; output that the
     * client does not read for this long closes the connection, whatever
     * it sends meanwhile; and a connection with more than 64 KiB of
     * answers unread serves no further pipelined request until they are
     * read. */
    unsigned connection_timeout_s;
    /* Largest request head (request line and headers) in bytes; a larger
     * one is refused with 431 (414 when the request line alone is longer:
     * a target that long). 0 picks 8192. The built-in engine keeps no
     * input buffer on a connection between requests; on libmicrohttpd
     * every open connection keeps one of about this size, roughly half of
     * it resident, which sets what an idle connection or listen stream
     * costs there. */
    size_t max_header_bytes;
    /* On stop, how long requests in flight may finish before they are
     * cancelled; 0 picks 5000, negative cancels at once. */
    int shutdown_grace_ms;
    /* TLS: PEM certificate (chain) and private key files, both or
     * neither. Read once at start. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* Which engine serves (see mcp_http_engine_t). */
    mcp_http_engine_t engine;
} mcp_http_options_t;

typedef struct mcp_http_server mcp_http_server_t;

/*
 * Starts serving `srv` over HTTP in background threads and stores the
 * running server in *out. `opts` may be NULL (127.0.0.1, a free port,
 * "/mcp"); it is copied. Returns MCP_OK; MCP_EINVAL for a bad option (an
 * address that is not numeric, one TLS file without the other), MCP_EIO
 * when a TLS file cannot be read or the address cannot be bound,
 * MCP_EUNSUPPORTED when TLS is asked of MCP_HTTP_ENGINE_BUILTIN or when
 * libmicrohttpd is needed but missing or built without TLS, MCP_ENOMEM;
 * *err says which. `srv` must outlive the HTTP server. Thread-safe.
 */
MCP_API int mcp_http_server_start(mcp_server_t *srv, const mcp_http_options_t *opts,
                                  mcp_http_server_t **out, mcp_error_t *err);

/* The TCP port the server listens on (the chosen one when port 0 was
 * asked). Thread-safe. */
MCP_API uint16_t mcp_http_server_port(const mcp_http_server_t *http);

/*
 * Stops and frees the server: stops accepting connections, lets requests
 * in flight finish for up to shutdown_grace_ms, cancels the rest (their
 * connections are closed), then closes every connection. Blocks until the
 * HTTP threads are gone, among them those running handlers on the built-in
 * engine (see `threads`); handlers that ignore cancellation may still be
 * running on the worker pool (mcp_server_free() waits for them). Call it
 * once, from a thread that is not an HTTP or handler thread. NULL-safe.
 */
MCP_API void mcp_http_server_stop(mcp_http_server_t *http);

/* ------------------------------------------------------------------------
 * Embedding: the endpoint without an HTTP library
 *
 * Your HTTP server receives a request and calls:
 *
 *     mcp_http_exchange_t *x;
 *     mcp_http_begin(ep, &req, &responder, &x);   // request line + headers
 *     if (x) {                                    // NULL: already answered
 *         while (more body)
 *             mcp_http_body(x, chunk, n);
 *         mcp_http_end(x);                        // answered, now or later
 *     }
 *     ... if the client disconnects before finish(): mcp_http_exchange_cancel(x)
 *     ... when you no longer need the handle:        mcp_http_exchange_release(x)
 *
 * (mcp_http_handle() does the first three steps for a body in memory.)
 * libmcp answers through the responder: start() once, write() zero or more
 * times, finish() once. Callbacks run on the thread calling begin/end (for
 * answers known at once), on worker threads, or on the endpoint's timeout
 * thread; never two at a time for one exchange, and never from inside
 * mcp_http_exchange_cancel() or mcp_http_exchange_release().
 *
 * Thread safety: any number of threads may call mcp_http_begin() and
 * mcp_http_handle() on one endpoint at once. Feed one exchange
 * (mcp_http_body(), mcp_http_end()) from one thread at a time, so that its
 * body arrives in order. mcp_http_exchange_cancel() and
 * mcp_http_exchange_release() may be called from any thread. Call
 * mcp_http_endpoint_free() only once no thread can still call
 * mcp_http_begin(), mcp_http_handle() or any other endpoint function on it.
 * ------------------------------------------------------------------------ */

typedef struct mcp_http_endpoint mcp_http_endpoint_t;
typedef struct mcp_http_exchange mcp_http_exchange_t;

/* The request line and headers, all borrowed for the duration of
 * mcp_http_begin() (the endpoint copies what it keeps). */
typedef struct mcp_http_request {
    const char *method;    /* "POST", "GET", ... (case-sensitive) */
    const char *path;      /* the request target; a "?query" is ignored */
    mcp_headers_t headers; /* every header as received, repeats included */
    /* This request's idle timeout in ms, instead of request_timeout_ms;
     * 0 keeps the endpoint's. Capped by max_request_timeout_ms. */
    int64_t timeout_ms;
} mcp_http_request_t;

/*
 * Where the answer goes. Every callback gets `user`.
 *
 * start(status, headers, content_length): the status line and headers
 *   (borrowed during the call; Content-Type and friends included, never
 *   Content-Length or Transfer-Encoding). content_length >= 0 announces a
 *   complete body of exactly that many bytes, delivered by one write()
 *   (none when 0); -1 announces an event stream: send it chunked (or until
 *   close) and push every write() to the client at once.
 * write(data, len): body bytes (borrowed during the call).
 * finish(complete): the last call. complete true: the response is whole,
 *   end it normally. false: abandon it and close the connection (a timeout,
 *   a write failure, or the server shutting down); start() may not have
 *   been called.
 *
 * start() and write() return 0, or a negative value when the client is
 * gone: the request is then cancelled and finish(false) follows.
 * finish() is called exactly once per exchange -- unless you cancelled the
 * exchange before it was called: then no callback runs any more.
 */
typedef struct mcp_http_responder {
    int (*start)(void *user, int status, const mcp_header_t *headers, size_t n_headers,
                 int64_t content_length);
    int (*write)(void *user, const char *data, size_t len);
    void (*finish)(void *user, bool complete);
    void *user;
} mcp_http_responder_t;

/*
 * Creates an endpoint serving `srv` with the rules in `opts` (may be NULL
 * for the defaults; copied). Returns NULL with *err filled on a bad option
 * or allocation failure. `srv` must outlive the endpoint and every exchange
 * of it. Thread-safe; the endpoint may serve any number of threads.
 */
MCP_API mcp_http_endpoint_t *mcp_http_endpoint_new(mcp_server_t *srv,
                                                   const mcp_http_endpoint_options_t *opts,
                                                   mcp_error_t *err);

/*
 * Starts an exchange for a request whose line and headers have arrived.
 * Runs every check that needs no body (path, Host, Origin, method, auth,
 * Content-Type, Accept, a Content-Length over the limit). Returns MCP_OK
 * and sets *out to the exchange to feed the body to -- or to NULL when the
 * request was refused: it has been answered through the responder already
 * (start, write, finish) before this returns. The responder is copied.
 * Returns MCP_EINVAL for NULL arguments or MCP_ENOMEM, without calling the
 * responder. An exchange handle is yours until mcp_http_exchange_release().
 */
MCP_API int mcp_http_begin(mcp_http_endpoint_t *ep, const mcp_http_request_t *req,
                           const mcp_http_responder_t *responder, mcp_http_exchange_t **out);

/*
 * Appends body bytes (copied). Returns MCP_OK; MCP_ELIMIT once the body
 * outgrew max_body_bytes (later bytes are dropped; stop reading if you can
 * and call mcp_http_end(), which answers 413); MCP_ENOMEM; MCP_ESTATE
 * after mcp_http_end().
 */
MCP_API int mcp_http_body(mcp_http_exchange_t *x, const void *data, size_t len);

/*
 * The body is complete: the request goes to the server core. The answer
 * comes through the responder, possibly before this returns (refusals and
 * methods answered without a handler), otherwise later from another
 * thread. Returns MCP_OK, or MCP_ESTATE when called a second time. (An
 * exchange aborted or cancelled while its body was read is over: this
 * then does nothing and returns MCP_OK.)
 */
MCP_API int mcp_http_end(mcp_http_exchange_t *x);

/*
 * mcp_http_begin() + mcp_http_body() + mcp_http_end() for a body already in
 * memory (`body` may be NULL when len is 0). `out` may be NULL when you
 * will never cancel; otherwise it receives the handle (or NULL when the
 * request was answered at once). Returns as mcp_http_begin().
 */
MCP_API int mcp_http_handle(mcp_http_endpoint_t *ep, const mcp_http_request_t *req,
                            const char *body, size_t len, const mcp_http_responder_t *responder,
                            mcp_http_exchange_t **out);

/*
 * The client went away: cancels the request (its handler sees
 * mcp_call_cancelled()). Unless finish() was called already, no callback
 * runs after this returns and none will. Do not call it from inside a
 * responder callback (return a negative value there instead).
 * Thread-safe; NULL-safe; harmless after finish.
 */
MCP_API void mcp_http_exchange_cancel(mcp_http_exchange_t *x);

/* Drops your handle; the exchange goes on (use cancel to stop it).
 * NULL-safe. */
MCP_API void mcp_http_exchange_release(mcp_http_exchange_t *x);

/*
 * Waits until every exchange of the endpoint is over and released by
 * everyone (you, the server core) or `timeout_ms` passed (negative: no
 * limit). Returns MCP_OK, or MCP_ETIMEDOUT. Use it with
 * mcp_http_endpoint_abort_all() for a graceful shutdown. Thread-safe.
 */
MCP_API int mcp_http_endpoint_drain(mcp_http_endpoint_t *ep, int64_t timeout_ms);

/* Cancels every exchange in flight and closes its response: finish(false)
 * is called for each that had not finished, from this thread. Exchanges
 * begun afterwards are served normally. Thread-safe. */
MCP_API void mcp_http_endpoint_abort_all(mcp_http_endpoint_t *ep);

/*
 * Aborts what is still in flight (as mcp_http_endpoint_abort_all()), stops
 * the endpoint's timeout thread and frees the endpoint. Exchange handles
 * you still hold stay valid until released. Call it once, when no other
 * thread can still call mcp_http_begin(), mcp_http_handle(),
 * mcp_http_endpoint_drain() or mcp_http_endpoint_abort_all() on the
 * endpoint; none of them may be called on it afterwards. NULL-safe.
 */
MCP_API void mcp_http_endpoint_free(mcp_http_endpoint_t *ep);

#ifdef __cplusplus
}
#endif
#endif /* MCP_SERVER_HTTP_H */
