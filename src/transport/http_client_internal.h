/*
 * The Streamable HTTP client transport's internals, shared by
 * http_client.c (the transport thread, POSTs) and http_client_legacy.c
 * (what only legacy servers need: the session, the GET stream, DELETE).
 * See http_client.c for threads, locking and lifetimes.
 */
#ifndef MCP_TRANSPORT_HTTP_CLIENT_INTERNAL_H
#define MCP_TRANSPORT_HTTP_CLIENT_INTERNAL_H

#include "transport/curl_api.h"
#include <pthread.h>
#include <stdatomic.h>

#include "transport/http_client.h"
#include "transport/http_client_target.h"

/* How long DELETE of a session may take. */
#define HTTP_SESSION_END_TIMEOUT_MS 5000
/* The longest Mcp-Session-Id kept. */
#define HTTP_MAX_SESSION_ID 256

typedef enum exchange_phase {
    PHASE_QUEUED,   /* built, waiting for the transport thread */
    PHASE_RUNNING,  /* its transfer runs; no outcome yet */
    PHASE_DRAINING, /* on_done ran; the server may still end the stream */
    PHASE_FINISHED  /* on_done ran, the transfer is gone */
} exchange_phase_t;

typedef struct http_client http_client_t;

struct client_exchange {
    http_client_t *t;
    atomic_int refs;
    client_exchange_events_t ev;
    void *user;

    /* The POST. */
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    size_t body_len;
    char error[CURL_ERROR_SIZE];

    /* The answer. */
    http_reply_t reply;
    char *www_authenticate;
    bool dpop_nonce;              /* the final response carried a DPoP-Nonce */
    char *location;               /* the Location of the last response, or NULL */

    /* Redirects (transport thread only). */
    char *url;                    /* where it was sent last, NULL: the target's URL */
    char *redirect_url;           /* the answer redirects it there: send it again */
    int redirects;                /* how many times it was sent again */

    /* Transport thread only. */
    bool opened;                     /* ev.on_open ran */
    bool timed;                      /* it has an overall timeout (notify()) */
    bool paused;                     /* its stream waits for the answers held */
    bool answer;                     /* counted in t->answers (a notify() from
                                        the transport thread) */
    client_exchange_t *next_held;    /* t->held */
    exchange_phase_t phase;
    int64_t drain_deadline;
    size_t drained;
    client_exchange_t *prev, *next;  /* t->active */
    client_exchange_t *next_settled; /* t->settled */

    /* Under t->lock. */
    client_exchange_t *next_queued;
    client_exchange_t *next_cancel;
    bool cancel_queued;
};

struct http_client {
    client_transport_t base; /* first: the core sees only this */
    client_http_limits_t limits;

    http_target_t target;
    CURLM *multi;
    pthread_t thread;

    pthread_mutex_t lock;
    /* Under `lock`. */
    client_exchange_t *queued, *queued_tail; /* to start */
    client_exchange_t *cancels;              /* to cancel */
    bool closing;     /* close() was called: nothing new is accepted */
    /* Legacy sessions (http_client_legacy.c). */
    bool sessions;    /* keep and send Mcp-Session-Id */
    char *session_id; /* the server's, or NULL */
    bool stopped;     /* the transport thread ended every exchange */
    bool joined;      /* a thread has taken the join */

    /* Transport thread only. */
    bool redirect_logged;       /* a redirect was followed and said so */
    client_exchange_t *active;  /* transfers in `multi` */
    client_exchange_t *settled; /* outcomes found during the last perform */
    /* Answers to the server's requests (see
     * CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT): how many are on the wire, those
     * waiting for their turn, and whether a stream was paused for them. */
    int answers;
    client_exchange_t *held, *held_tail;
    bool paused;
};

/* A complete exchange: a POST of `msg` (a request with `id`, or a
 * notification when id is NULL), or a GET when msg is NULL (with
 * Last-Event-ID when last_event_id is not NULL); two references. */
int http_client_exchange_new(http_client_t *t, const json_t *msg, const json_t *id,
                    const client_http_hints_t *hints, const char *last_event_id,
                    const client_exchange_events_t *ev, void *user, long timeout_ms,
                    client_exchange_t **out);

/* Drops a reference; the last one frees the exchange. */
void http_client_exchange_unref(client_exchange_t *ex);

/* Hands an exchange to the transport thread. MCP_ECLOSED when the
 * transport is closing: then the exchange, which never reached it, is
 * freed (both its references dropped). */
int http_client_submit(http_client_t *t, client_exchange_t *ex);

/* ------------------------------------------------------------------------
 * http_client_legacy.c
 * ------------------------------------------------------------------------ */

/* A Mcp-Session-Id header value arrived (raw bytes after the colon). */
void http_client_keep_session(http_client_t *t, const char *value, size_t len);

/* Appends Mcp-Session-Id (when there is a session) and Last-Event-ID (when
 * given) to *headers. */
int http_client_session_headers(http_client_t *t, const char *last_event_id,
                                struct curl_slist **headers);

/* The legacy operations of client_transport_ops_t. */
void http_client_session_begin(client_transport_t *base);
bool http_client_session_active(client_transport_t *base);
void http_client_session_reset(client_transport_t *base);
void http_client_session_end(client_transport_t *base, const char *protocol_version);
int http_client_open_stream(client_transport_t *base, const char *protocol_version,
                            const char *last_event_id, const json_t *request_id,
                            const client_exchange_events_t *ev, void *user,
                            client_exchange_t **out);

#endif /* MCP_TRANSPORT_HTTP_CLIENT_INTERNAL_H */
