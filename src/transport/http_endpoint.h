/*
 * Internals of the Streamable HTTP endpoint, shared by its files:
 *
 *   http_rules.c     which requests reach the core (Accept, Host, ...)
 *   http_endpoint.c  the endpoint object: options, live list, drain
 *   http_exchange.c  one request: checks, body, the sink, framing
 *   http_timeouts.c  the thread that enforces request timeouts
 *   http_watch.c     disconnect detection for parked connections
 *   http_server*.c   the built-in server on top of all this: its options,
 *                    and its two engines (http_server_engine.h)
 *
 * Locks: an exchange's lock may be held while taking its endpoint's lock,
 * never the other way round. Responder callbacks run with the exchange
 * lock held, which is what serialises them and lets cancel() promise that
 * none runs after it returns.
 */
#ifndef MCP_TRANSPORT_HTTP_ENDPOINT_H
#define MCP_TRANSPORT_HTTP_ENDPOINT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "mcp/server_core.h"
#include "mcp/server_http.h"
#include "transport/http_rules.h"

struct mcp_http_endpoint {
    atomic_int refs; /* the owner's, plus one per exchange not yet freed */
    mcp_server_t *srv;

    /* Options (immutable). */
    char *path;
    char **allowed_origins; /* NULL-terminated copy, or NULL */
    char **allowed_hosts;   /* NULL-terminated copy, or NULL */
    size_t max_body;
    int64_t idle_ms;
    int64_t max_ms;
    int64_t keepalive_ms;
    mcp_http_auth_fn auth;
    void *auth_user;
    bool cors;

    pthread_mutex_t lock;    /* guards everything below */
    pthread_cond_t changed;  /* an exchange was freed (drain waits on it) */
    struct mcp_http_exchange *live; /* every exchange not yet freed, newest first */
    size_t n_live;

    /* The timeout thread (http_timeouts.c), started on first use. */
    pthread_t timer;
    pthread_cond_t timer_wake;
    int64_t timer_due; /* when the thread wakes next by itself (INT64_MAX: never) */
    bool timer_running;
    bool timer_stop;
};

enum { HTTP_VERB_POST = 0, HTTP_VERB_GET, HTTP_VERB_DELETE };

/* Where an exchange is in its life. */
typedef enum exchange_state {
    EXCHANGE_READING = 0, /* begun: the body is arriving */
    EXCHANGE_SUBMITTED,   /* with the core: waiting for its answer */
    EXCHANGE_DONE         /* finished, aborted or cancelled: no more callbacks */
} exchange_state_t;

struct mcp_http_exchange {
    mcp_sink_t sink; /* must stay first: the core hands this back */
    atomic_int refs; /* the caller's handle, plus the core's while it has the sink */
    mcp_http_endpoint_t *ep;

    pthread_mutex_t lock; /* guards the state and serialises the responder */
    exchange_state_t state;
    mcp_http_responder_t out;
    bool started;   /* out.start() was called */
    bool streaming; /* ... with an event stream */
    http_accept_t accept;

    /* The request, copied at begin. */
    mcp_header_t *headers;
    size_t n_headers;
    char *principal;
    char *body;
    size_t body_len, body_cap;
    size_t body_declared; /* the Content-Length (at most max_body), or 0 */
    bool body_too_large;
    bool ended; /* mcp_http_end() was called */
    int64_t idle_ms;
    bool long_lived; /* a listen or session stream: keep-alives, no timeouts */
    int verb;        /* HTTP_VERB_POST, _GET or _DELETE */
    const char *cors_origin; /* the Origin the answer allows (CORS on; in headers), or NULL */
    char *extra_header_name; /* set by the core (Mcp-Session-Id), sent with the answer */
    char *extra_header_value;
    mcp_exchange_t *core; /* the core's handle, once submitted */
    /* The endpoint closed its streams before this exchange had its core:
     * a stream it opens ends as soon as the core is known. */
    bool end_stream_pending;

    /* Under ep->lock: the live list and the deadlines. */
    struct mcp_http_exchange *prev, *next;
    bool armed;
    int64_t idle_due; /* monotonic ms */
    int64_t hard_due;
};

void http_endpoint_ref(mcp_http_endpoint_t *ep);
void http_endpoint_unref(mcp_http_endpoint_t *ep);

/*
 * Blocks every asynchronous signal in the calling thread (saving the old
 * mask in *saved), so that threads started now -- ours or
 * an engine's -- leave signals to the application's threads. Fault
 * signals stay open so that crashes are still reported. Restore with
 * pthread_sigmask(SIG_SETMASK, saved, NULL).
 */
void http_signals_block(sigset_t *saved);

/* Cancels an exchange and closes its response with finish(false) unless
 * it is over already. `why` ("timed out") is logged when not NULL. Called
 * without locks held, holding a reference. */
void http_exchange_abort(mcp_http_exchange_t *x, const char *why);
void http_exchange_ref(mcp_http_exchange_t *x);
void http_exchange_unref(mcp_http_exchange_t *x);
/* A reference to an exchange found on the live list (ep->lock held),
 * unless its last one is being dropped: then false, and it is about to
 * leave the list. */
bool http_exchange_tryref(mcp_http_exchange_t *x);

/* Deadlines (http_timeouts.c). Arm starts the clocks when the request goes
 * to the core; touch restarts the idle clock; disarm stops both. Each takes
 * ep->lock. */
void http_timeouts_arm(mcp_http_exchange_t *x);
void http_timeouts_touch(mcp_http_exchange_t *x);
void http_timeouts_disarm(mcp_http_exchange_t *x);
/* Writes an SSE comment on an idle listen stream; a failed write ends it.
 * Called without locks held, holding a reference. */
void http_exchange_keepalive(mcp_http_exchange_t *x);
/* Ends this endpoint's subscriptions/listen streams gracefully (each gets
 * its listen result), as a server that stops must. */
void http_endpoint_close_streams(mcp_http_endpoint_t *ep);
/* Stops the timeout thread and waits for it (endpoint teardown). */
void http_timeouts_stop(mcp_http_endpoint_t *ep);

/* Creates an endpoint; `any_host_by_default` makes a NULL allowed_hosts
 * accept every Host (the server bound to a non-loopback address). */
mcp_http_endpoint_t *http_endpoint_new(mcp_server_t *srv, const mcp_http_endpoint_options_t *opts,
                                       bool any_host_by_default, mcp_error_t *err);

#endif /* MCP_TRANSPORT_HTTP_ENDPOINT_H */
