/*
 * One request on the wire: hand it to the transport, wait for the outcome,
 * and turn a timeout or a cancellation into a cancel of the exchange (which
 * the stdio transport signals with notifications/cancelled, HTTP by
 * closing the stream).
 *
 * The waiting call owns a small heap object the transport's callbacks fill;
 * it is freed only after release(), when the transport no longer calls them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "mcp/jsonrpc.h"
#include "clock.h"
#include "spin.h"

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;                /* guarded by lock; on_done also stores it with release
                               * ordering for wait_for's unlocked active wait */
    json_t *response;
    int rc;
    char why[MCP_ERROR_MESSAGE_MAX];
    mcp_client_t *client;
    mcp_progress_fn progress;
    void *progress_user;
    client_wire_t wire;       /* what came back besides the response */
    bool dpop_nonce;          /* refused for want of a DPoP nonce (transport.h) */
} waiter_t;

/* A request refused with 401/403 is sent again once with the token
 * callback's answer to the challenge, and once more when that refusal
 * only asked for a DPoP nonce (RFC 9449 §9): a new token's first proof
 * cannot know the resource server's nonce. */
#define MAX_REAUTHORIZATIONS 2

/* A legacy stream that broke before its response is resumed for as long
 * as the call's deadline allows, and as each resumed stream brings new
 * events (a server may close its streams at will and have the client
 * poll: 2025-11-25 resumability); this many in a row that bring none end
 * the call. */
#define MAX_IDLE_RESUMES 3

void client_wire_clear(client_wire_t *w)
{
    if (!w)
        return;
    free(w->content_type);
    free(w->body);
    free(w->last_event_id);
    memset(w, 0, sizeof *w);
}

void client_resolve_opts(const mcp_client_t *c, const mcp_request_options_t *opts,
                         client_call_opts_t *out)
{
    memset(out, 0, sizeof *out);
    out->timeout_ms = c->timeout_ms;
    if (!opts)
        return;
    if (opts->timeout_ms != 0)
        out->timeout_ms = opts->timeout_ms;
    out->progress = opts->progress;
    out->progress_user = opts->progress_user;
    out->cancel = opts->cancel;
    out->bypass_cache = opts->bypass_cache;
}

static void deliver_progress(waiter_t *w, const json_t *params)
{
    json_t *progress = json_object_get(params, "progress");
    if (!w->progress || !json_is_number(progress))
        return;
    json_t *total = json_object_get(params, "total");
    w->progress(w->progress_user, json_number_value(progress),
                json_is_number(total) ? json_number_value(total) : -1.0,
                json_string_value(json_object_get(params, "message")));
}

static void on_notification(void *user, const json_t *msg)
{
    waiter_t *w = user;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (!method)
        return;
    if (strcmp(method, "notifications/progress") == 0)
        deliver_progress(w, json_object_get(msg, "params"));
    else if (strcmp(method, "notifications/message") == 0)
        client_deliver_log(w->client, msg);
    else
        /* A legacy server sends session notifications (list_changed,
         * resources/updated) on whichever stream is open. */
        client_on_unrouted(w->client, msg);
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = s ? malloc(n + 1) : NULL;
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void on_done(void *user, client_outcome_t *outcome)
{
    waiter_t *w = user;
    pthread_mutex_lock(&w->lock);
    w->response = outcome->response;
    outcome->response = NULL;
    w->rc = w->response ? MCP_OK : outcome->rc != MCP_OK ? outcome->rc : MCP_EPROTO;
    snprintf(w->why, sizeof w->why, "%s",
             outcome->why ? outcome->why : mcp_strerror(w->rc));
    client_wire_clear(&w->wire);
    w->wire.http_status = outcome->http_status;
    w->wire.content_type = outcome->content_type ? strdup(outcome->content_type) : NULL;
    if (!w->response)
        w->wire.body = dup_bytes(outcome->body, outcome->body_len);
    w->wire.body_len = w->wire.body ? outcome->body_len : 0;
    if (outcome->last_event_id && outcome->last_event_id[0])
        w->wire.last_event_id = strdup(outcome->last_event_id);
    w->wire.retry_ms = outcome->retry_ms;
    w->dpop_nonce = outcome->dpop_nonce;
    /* Release ordering for wait_for's active wait, which reads it unlocked. */
    __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static const client_exchange_events_t events = {.on_notification = on_notification,
                                                .on_done = on_done};


static void assist_transport(void *transport)
{
    client_transport_t *t = transport;
    t->ops->assist(t);
}

/* Waits for the exchange's outcome, cancelling it on expiry or on the
 * caller's cancel. Returns why waiting stopped early (MCP_OK: it did not). */
static int wait_for(client_transport_t *t, client_exchange_t *ex, waiter_t *w,
                    const client_call_opts_t *o, const struct timespec *deadline)
{
    client_cancel_waiter_t cw = {&w->lock, &w->cond, NULL};
    client_cancel_watch(o->cancel, &cw);
    int stopped = MCP_OK;
    /* The answer is often moments away: wait for it actively first
     * (spin.h), reading it off the connection ourselves where the
     * transport lets us. The lock below orders everything else on_done
     * wrote. */
    mcp_spin_until_helping(&w->done, w->client->spin_us,
                           t->ops->assist ? assist_transport : NULL, t);
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        if (stopped == MCP_OK && mcp_cancel_triggered(o->cancel))
            stopped = MCP_ECANCELED;
        if (stopped == MCP_OK && o->timeout_ms >= 0 &&
            pthread_cond_timedwait(&w->cond, &w->lock, deadline) == ETIMEDOUT && !w->done)
            stopped = MCP_ETIMEDOUT;
        else if (stopped == MCP_OK && o->timeout_ms < 0)
            pthread_cond_wait(&w->cond, &w->lock);
        if (stopped != MCP_OK && !w->done) {
            /* cancel() delivers on_done (ECANCELED) unless the answer won
             * the race; either way `done` is set when it returns. */
            pthread_mutex_unlock(&w->lock);
            t->ops->cancel(t, ex, !o->no_cancel_notice);
            pthread_mutex_lock(&w->lock);
            while (!w->done)
                pthread_cond_wait(&w->cond, &w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    client_cancel_unwatch(o->cancel, &cw);
    t->ops->release(t, ex);
    return stopped;
}

/* Is `a` earlier than `b`? */
static bool before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Waits `ms` before resuming a stream, as the server's retry field asks
 * (the spec: the client MUST respect it), unless the call's deadline or
 * its cancellation comes first. Returns MCP_OK when the delay passed. */
static int pause_before_resuming(const client_call_opts_t *o, const struct timespec *deadline,
                                 int64_t ms)
{
    struct timespec until = mcp_clock_deadline(ms);
    bool capped = o->timeout_ms >= 0 && before(deadline, &until);
    int rc = client_cancel_sleep_until(o->cancel, capped ? deadline : &until);
    return rc == MCP_OK && capped ? MCP_ETIMEDOUT : rc;
}

/* A legacy event stream ended before its response, after naming an
 * event ID: the server may replay the rest on a GET with Last-Event-ID.
 * Ended cleanly, or cut by the network after a 2xx: the spec resumes
 * after either kind of disconnection. */
static bool resumable(const mcp_client_t *c, const client_transport_t *t, const waiter_t *w)
{
    bool broke = w->rc == MCP_ECLOSED ||
                 (w->rc == MCP_EIO && w->wire.http_status >= 200 && w->wire.http_status < 300);
    return c->legacy && t->ops->open_stream && broke && !w->response && w->wire.last_event_id;
}

/*
 * A legacy Streamable HTTP request the caller gave up on. Closing its
 * stream does not cancel it there (2025-11-25 transports: the client
 * SHOULD send notifications/cancelled), and a stream waiting to be
 * resumed has no connection to close at all; so the notification goes out,
 * without waiting for the server's 202. stdio and HTTP+SSE send theirs as
 * their cancel(); modern HTTP needs none.
 */
static void notify_given_up(mcp_client_t *c, client_transport_t *t, const json_t *request,
                            const client_http_hints_t *hints)
{
    if (!c->legacy || !t->ops->session_begin)
        return;
    json_t *note = mcp_jsonrpc_notification(
        "notifications/cancelled",
        json_pack("{s:O, s:s}", "requestId", json_object_get(request, "id"), "reason",
                  "the client stopped waiting"));
    client_http_hints_t h = {.protocol_version = hints ? hints->protocol_version : NULL,
                             .no_wait = true};
    if (note)
        t->ops->notify(t, note, &h);
    json_decref(note);
}

int client_roundtrip_wire(mcp_client_t *c, const json_t *request,
                          const client_http_hints_t *hints, const client_call_opts_t *o,
                          json_t **response_out, client_wire_t *wire, mcp_error_t *err)
{
    *response_out = NULL;
    client_transport_t *t = c->transport;
    if (!t)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL, "the client is not connected");
    if (mcp_cancel_triggered(o->cancel))
        return mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the call was cancelled");

    waiter_t *w = calloc(1, sizeof *w);
    if (!w)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    mcp_clock_cond_init(&w->cond);
    pthread_mutex_init(&w->lock, NULL);
    w->client = c;
    w->progress = o->progress;
    w->progress_user = o->progress_user;

    /* The call's timeout counts from here, and bounds the sending too: a
     * transport that writes on this thread gives up at the deadline. */
    struct timespec deadline;
    client_http_hints_t timed = hints ? *hints : (client_http_hints_t){0};
    if (o->timeout_ms >= 0) {
        deadline = mcp_clock_deadline(o->timeout_ms);
        /* 0 means no deadline: a timeout of 0 ms still gets 1. */
        timed.deadline_ms = mcp_clock_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 1);
    }
    hints = &timed;
    client_exchange_t *ex = NULL;
    int rc = t->ops->start(t, request, hints, &events, w, &ex);
    if (rc != MCP_OK) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
        if (rc == MCP_ETIMEDOUT)
            return mcp_error_set(err, rc, 0, NULL,
                                 "the server did not take the request within %lld ms",
                                 (long long)o->timeout_ms);
        return mcp_error_set(err, rc, 0, NULL, "cannot send the request: %s", mcp_strerror(rc));
    }
    int stopped = wait_for(t, ex, w, o, &deadline);
    for (int resends = 0; stopped == MCP_OK && w->rc == MCP_EAUTH && c->reauthorizes &&
                          resends < MAX_REAUTHORIZATIONS && (resends == 0 || w->dpop_nonce);
         resends++) {
        /* Refused with 401/403: the transport gave the challenge to the
         * token callback, which answers it as the request goes again. */
        client_log(c, MCP_LOG_INFO, "authorization refused (%s); sending again with a new token",
                   w->why);
        client_wire_clear(&w->wire);
        w->done = false;
        int src = t->ops->start(t, request, hints, &events, w, &ex);
        if (src == MCP_OK) {
            stopped = wait_for(t, ex, w, o, &deadline);
        } else {
            w->rc = src;
            snprintf(w->why, sizeof w->why, "cannot send the request again: %s",
                     mcp_strerror(src));
            w->done = true;
        }
    }
    /* The last the server named, up to CLIENT_MAX_RETRY_MS. */
    int64_t retry_ms = client_retry_honoured_ms(w->wire.retry_ms);
    for (int idle = 0; stopped == MCP_OK && idle < MAX_IDLE_RESUMES && resumable(c, t, w);) {
        char *last = w->wire.last_event_id;
        w->wire.last_event_id = NULL;
        w->done = false;
        if (w->wire.retry_ms >= 0)
            retry_ms = client_retry_honoured_ms(w->wire.retry_ms);
        client_log(c, MCP_LOG_INFO, "the event stream broke before the response; resuming "
                                    "after event %s in %lld ms", last,
                   (long long)(retry_ms > 0 ? retry_ms : 0));
        if (retry_ms > 0 &&
            (stopped = pause_before_resuming(o, &deadline, retry_ms)) != MCP_OK) {
            free(last);
            w->done = true;
            break;
        }
        int src = t->ops->open_stream(t, hints ? hints->protocol_version : NULL, last,
                                      json_object_get(request, "id"), &events, w, &ex);
        if (src != MCP_OK) {
            w->wire.last_event_id = last; /* the first failure stands */
            w->done = true;
            break;
        }
        stopped = wait_for(t, ex, w, o, &deadline);
        /* A stream that named no event after `last` brought nothing: the
         * next resumption starts from `last` again. */
        if (w->wire.last_event_id && strcmp(w->wire.last_event_id, last) != 0) {
            idle = 0;
            free(last);
        } else {
            idle++;
            free(w->wire.last_event_id);
            w->wire.last_event_id = last;
        }
    }

    if (stopped != MCP_OK) {
        if (!w->response && !o->no_cancel_notice)
            notify_given_up(c, t, request, hints);
        json_decref(w->response); /* a late answer: the caller gave up on it */
        w->response = NULL;
        rc = stopped == MCP_ETIMEDOUT
                 ? mcp_error_set(err, MCP_ETIMEDOUT, 0, NULL, "no answer within %lld ms",
                                 (long long)o->timeout_ms)
                 : mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the call was cancelled");
    } else if (w->rc != MCP_OK) {
        rc = mcp_error_set(err, w->rc, 0, NULL, "%s", w->why);
    } else {
        *response_out = w->response;
        rc = MCP_OK;
    }
    if (wire) {
        *wire = w->wire;
        memset(&w->wire, 0, sizeof w->wire);
        wire->answered = *response_out != NULL;
    }
    client_wire_clear(&w->wire);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
    return rc;
}

int client_roundtrip(mcp_client_t *c, const json_t *request, const client_http_hints_t *hints,
                     const client_call_opts_t *o, json_t **response_out, mcp_error_t *err)
{
    return client_roundtrip_wire(c, request, hints, o, response_out, NULL, err);
}
