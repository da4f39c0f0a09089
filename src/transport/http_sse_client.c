/*
 * The HTTP+SSE transport of 2024-11-05, the last fallback of the legacy
 * client (digest section 10.3): one long GET whose event stream first
 * names the endpoint (the `endpoint` event) and then carries every message
 * of the server; every message of the client is a POST to that endpoint,
 * answered 202.
 *
 * Threads: a reader thread runs the GET (a blocking libcurl transfer,
 * stopped through its progress callback) and hands each message to the
 * message channel (message_channel.h), which routes it by id as on stdio:
 * the stream is shared by every request in flight. POSTs run on the
 * caller's thread with an easy handle of their own, and end at the
 * request's deadline (its call's timeout) or after POST_TIMEOUT_MS,
 * whichever comes first.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/transport.h"
#include "mcp/jsonrpc.h"
#include "transport/http_client_target.h"
#include "transport/http_sse_stream.h"
#include "transport/message_channel.h"
#include "clock.h"

#define DEFAULT_ENDPOINT_WAIT_MS 10000
/* The longest a POST may take when its call allows more (or has no
 * timeout), and for notifications and answers, which have no call: the
 * server only has to take the message and say 202. */
#define POST_TIMEOUT_MS 30000

typedef struct sse_transport {
    client_transport_t base;  /* must stay first */
    http_target_t target;

    message_channel_t channel; /* takes exchanges until the stream ends */
    pthread_mutex_t lock;     /* guards everything below; taken before the channel's */
    pthread_cond_t cond;
    char *endpoint;           /* where to POST, once known */
    bool ended;               /* the stream is over */
    bool opened;              /* the constructor succeeded: an end is reported */
    char why[200];            /* why it ended */
    atomic_bool closing;      /* read by the progress callback */
    bool has_reader;
    pthread_t reader;
} sse_transport_t;


/* Ends the stream: every exchange fails with MCP_ECLOSED. */
static void end_all(sse_transport_t *t, const char *why)
{
    pthread_mutex_lock(&t->lock);
    stdio_router_t pending;
    message_channel_shut(&t->channel, &pending);
    if (!t->ended) {
        t->ended = true;
        snprintf(t->why, sizeof t->why, "%s", why);
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    message_channel_fail(&t->channel, &pending, MCP_ECLOSED, why);
}

/* ------------------------------------------------------------------------
 * The stream (reader thread)
 * ------------------------------------------------------------------------ */

static void on_endpoint(void *user, const char *url)
{
    sse_transport_t *t = user;
    char *copy = strdup(url);
    pthread_mutex_lock(&t->lock);
    /* A server may name its endpoint again; the newest one wins. */
    free(t->endpoint);
    t->endpoint = copy;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void on_message(void *user, const char *data, size_t len)
{
    sse_transport_t *t = user;
    mcp_error_t why = {0};
    if (!message_channel_receive(&t->channel, data, len, &why))
        client_transport_log(&t->base, MCP_LOG_DEBUG, "dropped a message from the server: %s",
                             why.message);
    mcp_error_clear(&why);
}

typedef struct reading {
    sse_transport_t *t;
    http_sse_stream_t stream;
} reading_t;

static size_t on_body(char *bytes, size_t size, size_t n, void *user)
{
    reading_t *r = user;
    return http_sse_stream_feed(&r->stream, bytes, size * n) == MCP_OK ? size * n
                                                                       : CURL_WRITEFUNC_ERROR;
}

/* libcurl calls it often (at least once a second): the way to stop the
 * blocking transfer from another thread. */
static int on_progress(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    sse_transport_t *t = user;
    return atomic_load(&t->closing) ? 1 : 0;
}

static void *read_stream(void *arg)
{
    sse_transport_t *t = arg;
    reading_t r = {.t = t};
    http_sse_stream_events_t ev = {on_endpoint, on_message, t};
    http_sse_stream_init(&r.stream, t->target.url, MCP_DEFAULT_MAX_MESSAGE_BYTES, &ev);
    CURL *e = mcp_curl.easy_init();
    struct curl_slist *headers = NULL;
    char error[CURL_ERROR_SIZE] = "";
    CURLcode c = e ? http_target_configure(&t->target, e) : CURLE_OUT_OF_MEMORY;
    if (c == CURLE_OK)
        headers = mcp_curl.slist_append(NULL, "Accept: text/event-stream");
    int hrc = MCP_OK;
    if (c == CURLE_OK && headers) {
        /* Authorization and the extra headers, without the JSON ones. */
        struct curl_slist *all = NULL;
        hrc = http_target_headers(&t->target, "GET", NULL, NULL, &all);
        for (struct curl_slist *h = all; hrc == MCP_OK && h; h = h->next)
            if (strncasecmp(h->data, "Content-Type", 12) != 0 &&
                strncasecmp(h->data, "Accept", 6) != 0)
                headers = mcp_curl.slist_append(headers, h->data);
        mcp_curl.slist_free_all(all);
    }
#define SET(opt, value) \
    if (c == CURLE_OK)  \
    c = mcp_curl.easy_setopt(e, opt, value)
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, &r);
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(CURLOPT_XFERINFODATA, t);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_ERRORBUFFER, error);
    SET(CURLOPT_FAILONERROR, 1L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
#undef SET
    if (c == CURLE_OK && headers && hrc == MCP_OK)
        c = mcp_curl.easy_perform(e);
    char why[sizeof t->why];
    if (r.stream.failure)
        snprintf(why, sizeof why, "%s", r.stream.why);
    else if (atomic_load(&t->closing))
        snprintf(why, sizeof why, "the connection was closed");
    else if (c != CURLE_OK)
        snprintf(why, sizeof why, "the event stream failed: %.150s",
                 error[0] ? error : mcp_curl.easy_strerror(c));
    else
        snprintf(why, sizeof why, "the server ended the event stream");
    mcp_curl.slist_free_all(headers);
    if (e)
        mcp_curl.easy_cleanup(e);
    http_sse_stream_free(&r.stream);
    end_all(t, why);
    /* A stream that ends before its endpoint came fails the constructor,
     * which says so itself: `ended` and `opened` are decided under the
     * same lock. */
    pthread_mutex_lock(&t->lock);
    bool report = t->opened && !atomic_load(&t->closing);
    pthread_mutex_unlock(&t->lock);
    if (report && t->base.hooks.on_closed)
        t->base.hooks.on_closed(t->base.hooks.user, MCP_ECLOSED, why);
    return NULL;
}

/* ------------------------------------------------------------------------
 * POSTs
 * ------------------------------------------------------------------------ */

static size_t discard(char *bytes, size_t size, size_t n, void *user)
{
    (void)bytes, (void)user;
    return size * n;
}

/* POSTs `msg` to the endpoint by `deadline_ms` (mcp_clock_ms(); 0: none)
 * and within POST_TIMEOUT_MS; any 2xx is success (the answer comes on
 * the stream). MCP_ETIMEDOUT when time ran out, as for a call that waited
 * too long for its answer. */
static int post(void *transport, const json_t *msg, int64_t deadline_ms)
{
    sse_transport_t *t = transport;
    int64_t timeout_ms = POST_TIMEOUT_MS;
    if (deadline_ms > 0 && deadline_ms - mcp_clock_ms() < timeout_ms)
        timeout_ms = deadline_ms - mcp_clock_ms();
    if (timeout_ms <= 0)
        return MCP_ETIMEDOUT; /* not even started: nothing went out */
    pthread_mutex_lock(&t->lock);
    char *endpoint = t->endpoint ? strdup(t->endpoint) : NULL;
    bool ended = t->ended;
    pthread_mutex_unlock(&t->lock);
    if (ended || !endpoint) {
        free(endpoint);
        return MCP_ECLOSED;
    }
    size_t len;
    char *body = mcp_json_dump(msg, &len);
    if (body)
        client_trace_text(&t->base, MCP_TRACE_SENT, body, len);
    CURL *e = mcp_curl.easy_init();
    struct curl_slist *headers = NULL;
    int rc = body && e ? http_target_headers(&t->target, "POST", endpoint, NULL, &headers)
                       : MCP_ENOMEM;
    CURLcode c = rc == MCP_OK ? http_target_configure(&t->target, e) : CURLE_OUT_OF_MEMORY;
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_URL, endpoint);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_POSTFIELDS, body);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    if (c == CURLE_OK)
        c = mcp_curl.easy_perform(e);
    long status = 0;
    if (c == CURLE_OK)
        mcp_curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (rc == MCP_OK)
        rc = c == CURLE_OPERATION_TIMEDOUT    ? MCP_ETIMEDOUT
             : c != CURLE_OK                  ? MCP_EIO
             : status == 401 || status == 403 ? MCP_EAUTH
             : status >= 200 && status < 300  ? MCP_OK
                                              : MCP_EIO;
    if (rc == MCP_ETIMEDOUT)
        client_transport_log(&t->base, MCP_LOG_WARNING,
                             "POST to the endpoint not answered within %lld ms",
                             (long long)timeout_ms);
    else if (rc != MCP_OK)
        client_transport_log(&t->base, MCP_LOG_WARNING,
                             "POST to the endpoint failed (%s, HTTP %ld)",
                             c != CURLE_OK ? mcp_curl.easy_strerror(c) : "refused", status);
    mcp_curl.slist_free_all(headers);
    if (e)
        mcp_curl.easy_cleanup(e);
    free(body);
    free(endpoint);
    return rc;
}

/* ------------------------------------------------------------------------
 * The operations
 * ------------------------------------------------------------------------ */

static int op_start(client_transport_t *base, const json_t *request,
                    const client_http_hints_t *hints, const client_exchange_events_t *ev,
                    void *user, client_exchange_t **out)
{
    /* 2024-11-05 has no MCP headers: only the deadline counts. */
    return message_channel_start(&((sse_transport_t *)base)->channel, request,
                                 hints ? hints->deadline_ms : 0, ev, user, out);
}

static void op_cancel(client_transport_t *base, client_exchange_t *ex, bool notify_peer)
{
    message_channel_cancel(&((sse_transport_t *)base)->channel, ex, notify_peer);
}

static void op_release(client_transport_t *base, client_exchange_t *ex)
{
    message_channel_release(&((sse_transport_t *)base)->channel, ex);
}

static int op_notify(client_transport_t *base, const json_t *msg,
                     const client_http_hints_t *hints)
{
    (void)hints;
    return post((sse_transport_t *)base, msg, 0);
}

static void op_close(client_transport_t *base)
{
    sse_transport_t *t = (sse_transport_t *)base;
    atomic_store(&t->closing, true);
    if (t->has_reader) {
        pthread_join(t->reader, NULL);
        t->has_reader = false;
    }
    end_all(t, "the connection was closed");
}

static void op_free(client_transport_t *base)
{
    sse_transport_t *t = (sse_transport_t *)base;
    if (!t)
        return;
    op_close(base);
    message_channel_destroy(&t->channel);
    http_target_free(&t->target);
    free(t->endpoint);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    free(t);
}

static const client_transport_ops_t sse_ops = {
    .start = op_start,
    .cancel = op_cancel,
    .release = op_release,
    .notify = op_notify,
    .close = op_close,
    .free = op_free,
};

/* ------------------------------------------------------------------------
 * Creating the transport
 * ------------------------------------------------------------------------ */

int client_http_sse_new(const mcp_http_target_t *target, const client_transport_hooks_t *hooks,
                        client_transport_t **out, mcp_error_t *err)
{
    *out = NULL;
    sse_transport_t *t = calloc(1, sizeof *t);
    if (!t)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    t->base.ops = &sse_ops;
    if (hooks)
        t->base.hooks = *hooks; /* before the reader thread, which reads them, starts */
    pthread_mutex_init(&t->lock, NULL);
    mcp_clock_cond_init(&t->cond);
    message_channel_init(&t->channel, &t->base, post, t);
    int rc = http_target_init(&t->target, target, err);
    if (rc != MCP_OK) {
        op_free(&t->base);
        return rc;
    }
    if (pthread_create(&t->reader, NULL, read_stream, t) != 0) {
        op_free(&t->base);
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot start the event stream reader");
    }
    t->has_reader = true;

    /* Nothing can be sent before the server names its endpoint. */
    int64_t wait = target->connect_timeout_ms > 0 ? target->connect_timeout_ms
                                                  : DEFAULT_ENDPOINT_WAIT_MS;
    struct timespec until = mcp_clock_deadline(wait);
    pthread_mutex_lock(&t->lock);
    while (!t->endpoint && !t->ended)
        if (pthread_cond_timedwait(&t->cond, &t->lock, &until) != 0)
            break;
    bool ready = t->endpoint != NULL && !t->ended;
    t->opened = ready;
    char why[sizeof t->why];
    snprintf(why, sizeof why, "%s", t->ended ? t->why : "no endpoint event in time");
    char *endpoint = ready ? strdup(t->endpoint) : NULL;
    pthread_mutex_unlock(&t->lock);
    if (!ready) {
        op_free(&t->base);
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "HTTP+SSE: %s", why);
    }
    client_transport_log(&t->base, MCP_LOG_INFO, "HTTP+SSE endpoint: %s",
                         endpoint ? endpoint : "(out of memory)");
    free(endpoint);
    *out = &t->base;
    return MCP_OK;
}
