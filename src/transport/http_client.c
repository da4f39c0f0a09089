/*
 * The Streamable HTTP transport of the client (digest section 4): every
 * request is its own POST, answered with one JSON document or with an event
 * stream that carries the request's notifications and then its response.
 *
 * Threads. One transport thread drives one libcurl multi handle: it adds
 * new transfers, runs them, and delivers every event callback. Other
 * threads never touch the multi handle: start() and notify() build a
 * complete easy handle on the caller's thread (this is also where the
 * token callback runs, since it may block), queue it, and wake the
 * transport thread with curl_multi_wakeup(); cancel() and close() queue a
 * request the same way. All transfers share the multi handle's connection
 * cache, so connections are kept alive and reused across requests, and as
 * many requests run at once as the caller starts.
 *
 * Locking. One mutex guards what other threads hand to the transport
 * thread (the queues and the closing flag); the target keeps its cached
 * token under a lock of its own. Neither is held while a callback runs or
 * while libcurl works. Everything else about a transfer belongs to the
 * transport thread alone.
 *
 * Lifetime of an exchange. start() creates it with two references, the
 * core's (dropped by release()) and the transport's (dropped once its
 * transfer is gone and on_done ran); a queued cancel holds a third. on_done
 * runs exactly once per successful start(), on the transport thread.
 *
 * Ending a stream. Removing a transfer closes its stream, which is the
 * cancel signal on HTTP (digest 4.7). When the response arrives on an event
 * stream, on_done runs at once, but the transfer is left to run out for a
 * moment (drain_ms): a server ends the stream right after the response,
 * and a stream ended by the server leaves its connection reusable.
 *
 * Answers. A legacy server's requests arrive on event streams, and the
 * core answers a ping (or refuses a request) right there, on the
 * transport thread, through notify(), which cannot wait for the POST
 * there. At most CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT such POSTs run at
 * once; the next ones are held, and while any is held the event streams
 * are paused (their write callback returns CURL_WRITEFUNC_PAUSE, and
 * libcurl keeps the bytes), so that the server is throttled to the pace
 * it takes its answers at, as on stdio.
 *
 * Timeouts are the core's: no transfer has one, except notify()'s POSTs
 * (nothing else would end them) and the connect timeout. Long-lived
 * streams (listen) get TCP keep-alive probes so that a vanished peer is
 * noticed; there is no low-speed limit, since a silent stream is normal.
 *
 * libcurl is loaded and initialised once per process, the first time a
 * transport is created (mcp_curl_load() in curl_api.c), and never cleaned
 * up.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mcp/headers.h"
#include "transport/http_client.h"
#include "transport/http_client_internal.h"
#include "transport/http_client_target.h"
#include "clock.h"

/* How long the transport thread sleeps when nothing is due; a wakeup or
 * libcurl's own timers end the wait earlier. */
#define IDLE_POLL_MS 10000
/* What a draining stream may still send before it is cut. */
#define MAX_DRAIN_BYTES ((size_t)64 * 1024)
/* The longest WWW-Authenticate value kept. */
#define MAX_CHALLENGE_BYTES ((size_t)8 * 1024)
/* The longest Location value followed. */
#define MAX_LOCATION_BYTES ((size_t)8 * 1024)
/* How many redirects one request follows before it fails. */
#define MAX_REDIRECTS 5

static const client_transport_ops_t http_ops;



static bool on_transport_thread(const http_client_t *t)
{
    return pthread_equal(pthread_self(), t->thread);
}

/* ------------------------------------------------------------------------
 * Exchanges
 * ------------------------------------------------------------------------ */

void http_client_exchange_unref(client_exchange_t *ex)
{
    if (atomic_fetch_sub(&ex->refs, 1) != 1)
        return;
    if (ex->easy)
        mcp_curl.easy_cleanup(ex->easy);
    mcp_curl.slist_free_all(ex->headers);
    free(ex->body);
    http_reply_free(&ex->reply);
    free(ex->www_authenticate);
    free(ex->location);
    free(ex->url);
    free(ex->redirect_url);
    free(ex);
}

/* Reply events, on the transport thread. */
static void forward_notification(void *user, const json_t *msg)
{
    client_exchange_t *ex = user;
    client_trace_json(&ex->t->base, MCP_TRACE_RECEIVED, msg);
    if (ex->ev.on_notification)
        ex->ev.on_notification(ex->user, msg);
}

static void forward_other(void *user, const json_t *msg)
{
    client_exchange_t *ex = user;
    http_client_t *t = ex->t;
    client_trace_json(&t->base, MCP_TRACE_RECEIVED, msg);
    if (t->base.hooks.on_unrouted)
        t->base.hooks.on_unrouted(t->base.hooks.user, msg);
    else
        client_transport_log(&t->base, MCP_LOG_DEBUG,
                             "dropping a message that is neither a notification nor the "
                             "response, received on a request's event stream");
}

/* ------------------------------------------------------------------------
 * Building a POST
 * ------------------------------------------------------------------------ */

static size_t on_body(char *bytes, size_t size, size_t n, void *user);
static size_t on_header(char *line, size_t size, size_t n, void *user);

static int build_easy(http_client_t *t, client_exchange_t *ex, bool long_lived, long timeout_ms,
                      bool get)
{
    CURL *e = ex->easy = mcp_curl.easy_init();
    if (!e)
        return MCP_ENOMEM;
    CURLcode c;
#define SET(opt, value) \
    if (c == CURLE_OK)  \
    c = mcp_curl.easy_setopt(e, opt, value)
    c = http_target_configure(&t->target, e);
    if (get) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)ex->body_len);
        SET(CURLOPT_POSTFIELDS, ex->body);
    }
    SET(CURLOPT_HTTPHEADER, ex->headers);
    SET(CURLOPT_USERAGENT, "libmcp/" MCP_LIB_VERSION);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, ex);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, ex);
    SET(CURLOPT_PRIVATE, ex);
    SET(CURLOPT_ERRORBUFFER, ex->error);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TCP_NODELAY, 1L);
    if (long_lived) {
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_TCP_KEEPIDLE, 30L);
        SET(CURLOPT_TCP_KEEPINTVL, 15L);
    }
    if (timeout_ms > 0)
        SET(CURLOPT_TIMEOUT_MS, timeout_ms);
#undef SET
    if (c == CURLE_OK)
        return MCP_OK;
    client_transport_log(&t->base, MCP_LOG_ERROR, "cannot set up a request: %s",
                         mcp_curl.easy_strerror(c));
    return c == CURLE_OUT_OF_MEMORY ? MCP_ENOMEM : MCP_EINVAL;
}

/* A complete exchange for `msg` (a request with `id`, or a notification
 * when id is NULL; a GET when msg is NULL), with two references. */
static int exchange_new(http_client_t *t, const json_t *msg, const json_t *id,
                        const client_http_hints_t *hints, const client_exchange_events_t *ev,
                        void *user, long timeout_ms, client_exchange_t **out)
{
    return http_client_exchange_new(t, msg, id, hints, NULL, ev, user, timeout_ms, out);
}

int http_client_exchange_new(http_client_t *t, const json_t *msg, const json_t *id,
                    const client_http_hints_t *hints, const char *last_event_id,
                    const client_exchange_events_t *ev, void *user, long timeout_ms,
                    client_exchange_t **out)
{
    client_exchange_t *ex = calloc(1, sizeof *ex);
    if (!ex)
        return MCP_ENOMEM;
    ex->t = t;
    atomic_init(&ex->refs, 2);
    ex->ev = *ev;
    ex->user = user;
    ex->phase = PHASE_QUEUED;
    ex->timed = timeout_ms > 0;
    http_reply_events_t reply_events = {forward_notification, forward_other, ex};
    int rc = http_reply_init(&ex->reply, id, &t->limits.reply, &reply_events);
    if (rc == MCP_OK && msg && !(ex->body = mcp_json_dump(msg, &ex->body_len)))
        rc = MCP_ENOMEM;
    if (rc == MCP_OK && msg)
        client_trace_text(&t->base, MCP_TRACE_SENT, ex->body, ex->body_len);
    if (rc == MCP_OK)
        rc = http_target_headers(&t->target, msg ? "POST" : "GET", NULL, hints,
                                 &ex->headers);
    if (rc == MCP_OK)
        rc = http_client_session_headers(t, last_event_id, &ex->headers);
    if (rc == MCP_OK)
        rc = build_easy(t, ex, (hints && hints->long_lived) || !msg, timeout_ms, !msg);
    if (rc != MCP_OK) {
        atomic_store(&ex->refs, 1);
        http_client_exchange_unref(ex);
        return rc;
    }
    *out = ex;
    return MCP_OK;
}

/* An exchange refused because the transport is closing: it never reached
 * the transport, so both references are ours. MCP_ECLOSED. */
static int refuse_closed(client_exchange_t *ex)
{
    atomic_store(&ex->refs, 1);
    http_client_exchange_unref(ex);
    return MCP_ECLOSED;
}

/* Hands ex to the transport thread. */
int http_client_submit(http_client_t *t, client_exchange_t *ex)
{
    pthread_mutex_lock(&t->lock);
    if (t->closing || t->stopped) {
        pthread_mutex_unlock(&t->lock);
        return refuse_closed(ex);
    }
    if (t->queued_tail)
        t->queued_tail->next_queued = ex;
    else
        t->queued = ex;
    t->queued_tail = ex;
    pthread_mutex_unlock(&t->lock);
    mcp_curl.multi_wakeup(t->multi);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * libcurl callbacks (transport thread, inside curl_multi_perform)
 * ------------------------------------------------------------------------ */

/* The headers are complete once the body starts (or the transfer ends). */
static void begin_reply(client_exchange_t *ex)
{
    if (ex->reply.started)
        return;
    long status = 0;
    char *content_type = NULL;
    mcp_curl.easy_getinfo(ex->easy, CURLINFO_RESPONSE_CODE, &status);
    mcp_curl.easy_getinfo(ex->easy, CURLINFO_CONTENT_TYPE, &content_type);
    http_reply_begin(&ex->reply, (int)status, content_type);
}

static size_t on_body(char *bytes, size_t size, size_t n, void *user)
{
    client_exchange_t *ex = user;
    size_t len = size * n;
    if (ex->redirect_url) {
        /* The body of a redirect that is followed: of no use. */
        ex->drained += len;
        return ex->drained <= MAX_DRAIN_BYTES ? len : CURL_WRITEFUNC_ERROR;
    }
    begin_reply(ex);
    if (ex->reply.state != HTTP_REPLY_READING) {
        /* Answered: let the stream run out, within reason. */
        ex->drained += len;
        return ex->drained <= MAX_DRAIN_BYTES ? len : CURL_WRITEFUNC_ERROR;
    }
    if (ex->t->held && ex->reply.body_kind == HTTP_REPLY_BODY_EVENTS) {
        /* Answers wait for their turn: no more requests are read until
         * they had it (pump_answers). */
        ex->paused = ex->t->paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    http_reply_state_t state = http_reply_feed(&ex->reply, bytes, len);
    if (state == HTTP_REPLY_READING)
        return len;
    ex->next_settled = ex->t->settled;
    ex->t->settled = ex;
    return state == HTTP_REPLY_STOPPED ? CURL_WRITEFUNC_ERROR : len;
}

/*
 * A 307 or 308 moves the request, method and body unchanged (RFC 9110
 * 15.4.8, 15.4.9), and the request goes again where it points, within the
 * origin it was sent to (http_target_redirect says why), at most
 * MAX_REDIRECTS times. The other redirects are not followed: 301, 302 and
 * 303 turn a POST into a GET, which no MCP endpoint answers; the outcome
 * names where they point (deliver).
 */
static bool redirect_followed(client_exchange_t *ex, long status)
{
    if ((status != 307 && status != 308) || !ex->location || ex->redirects >= MAX_REDIRECTS)
        return false;
    ex->redirect_url = http_target_redirect(&ex->t->target, ex->url, ex->location);
    return ex->redirect_url != NULL;
}

/* The blank line after the headers of the final response: whoever waits
 * for a stream to be open may go on (a server need not send anything on a
 * stream it opens). */
static void headers_done(client_exchange_t *ex)
{
    long status = 0;
    mcp_curl.easy_getinfo(ex->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || ex->opened)
        return; /* an interim response (100 Continue): the real one follows */
    if (redirect_followed(ex, status))
        return; /* the stream opens where it is sent */
    ex->opened = true;
    if (ex->ev.on_open)
        ex->ev.on_open(ex->user, (int)status);
}

/* Whether the header line (`len` bytes, with its CRLF) is `name` (with
 * the colon, any case); if so, its value without surrounding blanks. */
static bool header_named(const char *line, size_t len, const char *name, const char **value,
                         size_t *value_len)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0)
        return false;
    const char *start = line + n, *end = line + len;
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    while (end > start && strchr(" \t\r\n", end[-1]))
        end--;
    *value = start;
    *value_len = (size_t)(end - start);
    return true;
}

/* Keeps the WWW-Authenticate challenges of the final response (several
 * headers are joined with ", ", as HTTP allows) and its DPoP-Nonce (for
 * the target's next proofs), and tells when the headers are complete. */
static size_t on_header(char *line, size_t size, size_t n, void *user)
{
    client_exchange_t *ex = user;
    size_t len = size * n;
    if ((len == 2 && line[0] == '\r' && line[1] == '\n') || (len == 1 && line[0] == '\n')) {
        headers_done(ex);
        return len;
    }
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue, say): forget the last. */
        free(ex->www_authenticate);
        ex->www_authenticate = NULL;
        free(ex->location);
        ex->location = NULL;
        ex->dpop_nonce = false;
        return len;
    }
    const char *value;
    size_t value_len;
    if (header_named(line, len, "Location:", &value, &value_len)) {
        free(ex->location);
        ex->location = value_len && value_len <= MAX_LOCATION_BYTES ? strndup(value, value_len)
                                                                    : NULL;
        return len;
    }
    if (header_named(line, len, "DPoP-Nonce:", &value, &value_len)) {
        if (value_len) {
            http_target_keep_nonce(&ex->t->target, value, value_len);
            ex->dpop_nonce = true;
        }
        return len;
    }
    if (len > 15 && strncasecmp(line, "Mcp-Session-Id:", 15) == 0) {
        http_client_keep_session(ex->t, line + 15, len - 15);
        return len;
    }
    if (!header_named(line, len, "WWW-Authenticate:", &value, &value_len))
        return len;

    size_t old = ex->www_authenticate ? strlen(ex->www_authenticate) : 0;
    size_t total = old + (old ? 2 : 0) + value_len;
    if (total > MAX_CHALLENGE_BYTES)
        return len;
    char *joined = realloc(ex->www_authenticate, total + 1);
    if (!joined)
        return len;
    if (old)
        memcpy(joined + old, ", ", 2);
    memcpy(joined + total - value_len, value, value_len);
    joined[total] = '\0';
    ex->www_authenticate = joined;
    return len;
}

/* ------------------------------------------------------------------------
 * The transport thread
 * ------------------------------------------------------------------------ */

static void link_active(http_client_t *t, client_exchange_t *ex)
{
    ex->prev = NULL;
    ex->next = t->active;
    if (t->active)
        t->active->prev = ex;
    t->active = ex;
}

static void unlink_active(http_client_t *t, client_exchange_t *ex)
{
    if (ex->prev)
        ex->prev->next = ex->next;
    else
        t->active = ex->next;
    if (ex->next)
        ex->next->prev = ex->prev;
    ex->prev = ex->next = NULL;
}

/* Traces the end of a reply: its JSON-RPC response, or what came instead
 * (an HTTP status without one). Notifications of an event stream were
 * traced as they arrived. */
static void trace_reply(http_client_t *t, const client_outcome_t *out)
{
    if (!t->base.hooks.trace)
        return;
    if (out->response) {
        client_trace_json(&t->base, MCP_TRACE_RECEIVED, out->response);
        return;
    }
    if (out->http_status == 0 || (out->http_status >= 200 && out->http_status < 300))
        return; /* no answer at all (the transfer failed), or a notification's 2xx */
    char line[512];
    int n = snprintf(line, sizeof line, "HTTP %d (%s)%s%.*s", out->http_status,
                     out->content_type ? out->content_type : "no content type",
                     out->body_len ? ": " : "", (int)(out->body_len < 300 ? out->body_len : 300),
                     out->body ? out->body : "");
    client_trace_text(&t->base, MCP_TRACE_RECEIVED, line,
                      n < (int)sizeof line ? (size_t)n : sizeof line - 1);
}

/*
 * Delivers the outcome. `forced` outcomes (cancel, close, a failed start)
 * carry rc and why as given; otherwise the reply decides, given the
 * transfer's result (rc) and its description (why).
 */
static void deliver(http_client_t *t, client_exchange_t *ex, bool forced, int rc,
                    const char *why)
{
    client_outcome_t out;
    char redirect_why[MAX_LOCATION_BYTES + 160];
    if (forced) {
        memset(&out, 0, sizeof out);
        out.rc = rc;
        out.why = why;
    } else {
        http_reply_finish(&ex->reply, rc, why, &out);
        trace_reply(t, &out);
        if (out.rc != MCP_OK && out.http_status >= 300 && out.http_status < 400 && ex->location) {
            /* Say where, so that the user can point the client there. */
            snprintf(redirect_why, sizeof redirect_why,
                     "HTTP %d: the server redirects to %s (followed: 307 and 308 within the "
                     "same origin, %d times at most)",
                     out.http_status, ex->location, MAX_REDIRECTS);
            out.why = redirect_why;
        }
    }
    out.www_authenticate = ex->www_authenticate;
    out.dpop_nonce = out.rc == MCP_EAUTH && out.http_status == 401 && ex->dpop_nonce;
    if (out.rc == MCP_EAUTH)
        http_target_auth_failed(&t->target, ex->www_authenticate);
    ex->ev.on_done(ex->user, &out);
    json_decref(out.response);
}

/* Takes ex out of the transport: its transfer (if any) stops, which
 * closes its stream, and its outcome goes out unless it already did. */
static void end_exchange(http_client_t *t, client_exchange_t *ex, bool forced, int rc,
                         const char *why)
{
    exchange_phase_t phase = ex->phase;
    if (phase == PHASE_FINISHED)
        return;
    if (phase == PHASE_RUNNING || phase == PHASE_DRAINING) {
        mcp_curl.multi_remove_handle(t->multi, ex->easy);
        mcp_curl.easy_cleanup(ex->easy);
        ex->easy = NULL;
        unlink_active(t, ex);
    }
    ex->phase = PHASE_FINISHED;
    if (phase == PHASE_QUEUED || phase == PHASE_RUNNING)
        deliver(t, ex, forced, rc, why);
    http_client_exchange_unref(ex); /* the transport's reference */
}

static void launch(http_client_t *t, client_exchange_t *ex)
{
    CURLMcode mc = mcp_curl.multi_add_handle(t->multi, ex->easy);
    if (mc != CURLM_OK) {
        end_exchange(t, ex, true, MCP_EIO, mcp_curl.multi_strerror(mc));
        return;
    }
    ex->phase = PHASE_RUNNING;
    link_active(t, ex);
}

/* Outcomes the write callback found during the last perform. */
static void settle(http_client_t *t)
{
    client_exchange_t *ex;
    while ((ex = t->settled)) {
        t->settled = ex->next_settled;
        ex->next_settled = NULL;
        if (ex->reply.state == HTTP_REPLY_ANSWERED) {
            deliver(t, ex, false, MCP_OK, NULL);
            ex->phase = PHASE_DRAINING;
            ex->drain_deadline = mcp_clock_ms() + t->limits.drain_ms;
        } else {
            end_exchange(t, ex, false, MCP_OK, NULL);
        }
    }
}

/* Sends ex again, to ex->redirect_url. */
static void follow_redirect(http_client_t *t, client_exchange_t *ex)
{
    mcp_curl.multi_remove_handle(t->multi, ex->easy);
    free(ex->url);
    ex->url = ex->redirect_url;
    ex->redirect_url = NULL;
    ex->redirects++;
    ex->drained = 0;
    ex->error[0] = '\0';
    if (!t->redirect_logged) {
        t->redirect_logged = true;
        client_transport_log(&t->base, MCP_LOG_INFO,
                             "the server redirects requests to %s; pointing the client there "
                             "saves a round trip per request", ex->url);
    }
    bool get = !ex->body;
    int rc = http_target_reproof(&t->target, get ? "GET" : "POST", ex->url, &ex->headers);
    CURLcode c = mcp_curl.easy_setopt(ex->easy, CURLOPT_URL, ex->url);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(ex->easy, CURLOPT_HTTPHEADER, ex->headers);
    CURLMcode mc = c == CURLE_OK && rc == MCP_OK ? mcp_curl.multi_add_handle(t->multi, ex->easy)
                                                 : CURLM_OK;
    if (rc != MCP_OK || c != CURLE_OK || mc != CURLM_OK) {
        char why[160];
        snprintf(why, sizeof why, "cannot follow the redirect: %s",
                 rc != MCP_OK ? mcp_strerror(rc)
                 : c != CURLE_OK ? mcp_curl.easy_strerror(c)
                                 : mcp_curl.multi_strerror(mc));
        end_exchange(t, ex, true, rc != MCP_OK ? rc : MCP_EIO, why);
    }
}

/* Transfers libcurl has finished. */
static void collect_finished(http_client_t *t)
{
    CURLMsg *msg;
    int left;
    while ((msg = mcp_curl.multi_info_read(t->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURLcode result = msg->data.result;
        char *private = NULL;
        mcp_curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &private);
        client_exchange_t *ex = (client_exchange_t *)private;
        if (ex->phase == PHASE_RUNNING && ex->redirect_url) {
            follow_redirect(t, ex);
            continue;
        }
        if (ex->phase == PHASE_RUNNING)
            begin_reply(ex);
        char why[CURL_ERROR_SIZE + 64];
        snprintf(why, sizeof why, "%s", ex->error[0] ? ex->error : mcp_curl.easy_strerror(result));
        /* A timeout of its own is a deadline that passed; a connection
         * that timed out without one is a network failure. */
        int rc = result == CURLE_OK                                  ? MCP_OK
                 : result == CURLE_OPERATION_TIMEDOUT && ex->timed ? MCP_ETIMEDOUT
                                                                   : MCP_EIO;
        end_exchange(t, ex, false, rc, why);
    }
}

/* Ends the draining streams whose time is up; returns how long until the
 * next one is due (or IDLE_POLL_MS). */
static int expire_drains(http_client_t *t)
{
    int64_t now = mcp_clock_ms(), wait = IDLE_POLL_MS;
    client_exchange_t *ex = t->active;
    while (ex) {
        client_exchange_t *next = ex->next;
        if (ex->phase == PHASE_DRAINING) {
            if (ex->drain_deadline <= now)
                end_exchange(t, ex, false, MCP_OK, NULL);
            else if (ex->drain_deadline - now < wait)
                wait = ex->drain_deadline - now;
        }
        ex = next;
    }
    return (int)wait;
}

static void cancel_now(http_client_t *t, client_exchange_t *ex)
{
    end_exchange(t, ex, true, MCP_ECANCELED, "cancelled");
    http_client_exchange_unref(ex); /* the cancel queue's reference */
}

/* Starts held answers while fewer than CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT
 * run; once none is held, resumes the streams paused for them. Returns
 * whether it started or resumed anything. */
static bool pump_answers(http_client_t *t)
{
    bool moved = false;
    while (t->held && t->answers < CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT) {
        client_exchange_t *ex = t->held;
        t->held = ex->next_held;
        if (!t->held)
            t->held_tail = NULL;
        ex->next_held = NULL;
        ex->answer = true;
        t->answers++;
        launch(t, ex);
        moved = true;
    }
    if (t->held || !t->paused)
        return moved;
    t->paused = false;
    /* Resuming may deliver the bytes kept at once, and pause the stream
     * again (on_body): the list of transfers does not change meanwhile. */
    for (client_exchange_t *ex = t->active; ex; ex = ex->next)
        if (ex->paused) {
            ex->paused = false;
            mcp_curl.easy_pause(ex->easy, CURLPAUSE_CONT);
        }
    return true;
}

/* Ends every exchange with rc (close, or a failure of libcurl itself). */
static void shut_down(http_client_t *t, int rc, const char *why)
{
    pthread_mutex_lock(&t->lock);
    t->stopped = true;
    client_exchange_t *queued = t->queued, *cancels = t->cancels;
    t->queued = t->queued_tail = t->cancels = NULL;
    pthread_mutex_unlock(&t->lock);

    while (queued) {
        client_exchange_t *next = queued->next_queued;
        end_exchange(t, queued, true, rc, why);
        queued = next;
    }
    while (cancels) {
        client_exchange_t *next = cancels->next_cancel;
        http_client_exchange_unref(cancels);
        cancels = next;
    }
    while (t->held) {
        client_exchange_t *ex = t->held;
        t->held = ex->next_held;
        end_exchange(t, ex, true, rc, why);
    }
    t->held_tail = NULL;
    while (t->active)
        end_exchange(t, t->active, true, rc, why);
}

/* libcurl itself failed: nothing can run any more. */
static void *fail_transport(http_client_t *t, CURLMcode mc)
{
    char why[128];
    snprintf(why, sizeof why, "the HTTP client failed: %s", mcp_curl.multi_strerror(mc));
    client_transport_log(&t->base, MCP_LOG_ERROR, "%s", why);
    shut_down(t, MCP_EIO, why);
    if (t->base.hooks.on_closed)
        t->base.hooks.on_closed(t->base.hooks.user, MCP_EIO, why);
    return NULL;
}

/*
 * The loop: run the transfers, hand out what they produced, then take the
 * new work. New transfers start at once, after the running ones had their
 * turn: a stream that just ended hands its connection back first, so the
 * next request reuses it.
 */
static void *transport_main(void *arg)
{
    http_client_t *t = arg;
    for (;;) {
        int running;
        CURLMcode mc = mcp_curl.multi_perform(t->multi, &running);
        if (mc != CURLM_OK)
            return fail_transport(t, mc);
        settle(t);
        collect_finished(t);
        int wait_ms = expire_drains(t);

        pthread_mutex_lock(&t->lock);
        bool closing = t->closing;
        client_exchange_t *queued = t->queued, *cancels = t->cancels;
        if (!closing)
            t->queued = t->queued_tail = t->cancels = NULL;
        pthread_mutex_unlock(&t->lock);
        if (closing)
            break;

        bool launched = pump_answers(t) || queued != NULL;
        while (queued) {
            client_exchange_t *next = queued->next_queued;
            launch(t, queued);
            queued = next;
        }
        while (cancels) {
            client_exchange_t *next = cancels->next_cancel;
            cancel_now(t, cancels);
            cancels = next;
        }
        if (launched)
            continue;
        mc = mcp_curl.multi_poll(t->multi, NULL, 0, wait_ms, NULL);
        if (mc != CURLM_OK)
            return fail_transport(t, mc);
    }
    shut_down(t, MCP_ECLOSED, "the connection was closed");
    return NULL;
}

/* ------------------------------------------------------------------------
 * The transport operations
 * ------------------------------------------------------------------------ */

static int http_start(client_transport_t *base, const json_t *request,
                      const client_http_hints_t *hints, const client_exchange_events_t *ev,
                      void *user, client_exchange_t **out)
{
    http_client_t *t = (http_client_t *)base;
    const json_t *id = json_is_object(request) ? json_object_get(request, "id") : NULL;
    if (!id || !ev || !ev->on_done || !out)
        return MCP_EINVAL;
    client_exchange_t *ex;
    int rc = exchange_new(t, request, id, hints, ev, user, 0, &ex);
    if (rc != MCP_OK)
        return rc;
    rc = http_client_submit(t, ex);
    if (rc != MCP_OK)
        return rc;
    *out = ex;
    return MCP_OK;
}

static void http_cancel(client_transport_t *base, client_exchange_t *ex, bool notify_peer)
{
    (void)notify_peer; /* closing the stream is the only signal HTTP has */
    http_client_t *t = (http_client_t *)base;
    pthread_mutex_lock(&t->lock);
    bool queue = !t->stopped && !ex->cancel_queued;
    if (queue) {
        ex->cancel_queued = true;
        atomic_fetch_add(&ex->refs, 1);
        ex->next_cancel = t->cancels;
        t->cancels = ex;
    }
    pthread_mutex_unlock(&t->lock);
    if (queue)
        mcp_curl.multi_wakeup(t->multi);
}

static void http_release(client_transport_t *base, client_exchange_t *ex)
{
    (void)base;
    if (ex)
        http_client_exchange_unref(ex);
}

/* notify() waits for the server's answer on this. */
typedef struct notify_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int rc;
} notify_wait_t;

/* A notification's outcome as one code: a JSON-RPC error body is an
 * MCP_ERPC. */
static int notify_rc(const client_outcome_t *out)
{
    return out->rc == MCP_OK && out->response ? MCP_ERPC : out->rc;
}

static void notify_waited(void *user, client_outcome_t *out)
{
    notify_wait_t *w = user;
    pthread_mutex_lock(&w->lock);
    w->rc = notify_rc(out);
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void notify_unwaited(void *user, client_outcome_t *out)
{
    int rc = notify_rc(out);
    if (rc != MCP_OK)
        client_transport_log(&((http_client_t *)user)->base, MCP_LOG_WARNING,
                             "a notification was not accepted: %s",
                             out->why ? out->why : mcp_strerror(rc));
}

/* The end of a notify() from the transport thread (user: the exchange). */
static void answer_done(void *user, client_outcome_t *out)
{
    client_exchange_t *ex = user;
    if (ex->answer) {
        ex->answer = false;
        ex->t->answers--;
    }
    notify_unwaited(ex->t, out);
}

/* Sends an answer the transport thread made: now, or once fewer than
 * CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT are on the wire (pump_answers). */
static int submit_answer(http_client_t *t, client_exchange_t *ex)
{
    ex->user = ex;
    if (t->answers < CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT) {
        int rc = http_client_submit(t, ex);
        if (rc == MCP_OK) {
            ex->answer = true;
            t->answers++;
        }
        return rc;
    }
    pthread_mutex_lock(&t->lock);
    bool open = !t->closing && !t->stopped;
    pthread_mutex_unlock(&t->lock);
    if (!open)
        return refuse_closed(ex);
    if (t->held_tail)
        t->held_tail->next_held = ex;
    else
        t->held = ex;
    t->held_tail = ex;
    return MCP_OK;
}

/*
 * Waits until the server accepted the notification (2xx), up to
 * notify_timeout_ms, or to hints->deadline_ms when that comes first (the
 * legacy handshake's notifications/initialized, within the connect's
 * timeout). From the transport thread itself (a callback sending
 * a notification: the answer to a legacy server's request) waiting would
 * deadlock, so the notification is only queued, in turn (submit_answer),
 * and a failure is logged.
 */
static int http_notify(client_transport_t *base, const json_t *notification,
                       const client_http_hints_t *hints)
{
    http_client_t *t = (http_client_t *)base;
    if (!json_is_object(notification))
        return MCP_EINVAL;
    bool answer = on_transport_thread(t);
    bool wait = !answer && !(hints && hints->no_wait);
    notify_wait_t w = {.done = false, .rc = MCP_OK};
    client_exchange_events_t ev = {.on_done = wait     ? notify_waited
                                              : answer ? answer_done
                                                       : notify_unwaited};
    int64_t timeout_ms = t->limits.notify_timeout_ms;
    if (hints && hints->deadline_ms > 0) {
        int64_t left = hints->deadline_ms - mcp_clock_ms();
        if (left < timeout_ms)
            timeout_ms = left > 1 ? left : 1;
    }
    client_exchange_t *ex;
    int rc = exchange_new(t, notification, NULL, hints, &ev, wait ? (void *)&w : (void *)t,
                          (long)timeout_ms, &ex);
    if (rc != MCP_OK)
        return rc;
    if (wait) {
        pthread_mutex_init(&w.lock, NULL);
        pthread_cond_init(&w.cond, NULL);
    }
    rc = answer ? submit_answer(t, ex) : http_client_submit(t, ex);
    if (rc == MCP_OK) {
        if (wait) {
            pthread_mutex_lock(&w.lock);
            while (!w.done)
                pthread_cond_wait(&w.cond, &w.lock);
            rc = w.rc;
            pthread_mutex_unlock(&w.lock);
        }
        http_client_exchange_unref(ex);
    }
    if (wait) {
        pthread_mutex_destroy(&w.lock);
        pthread_cond_destroy(&w.cond);
    }
    return rc;
}

/* Ends every exchange with MCP_ECLOSED and stops the transport thread.
 * From a transport callback it can only ask the thread to stop: free()
 * then waits for it (and must not itself run in a callback). */
static void http_close(client_transport_t *base)
{
    http_client_t *t = (http_client_t *)base;
    pthread_mutex_lock(&t->lock);
    t->closing = true;
    bool join = !t->joined && !on_transport_thread(t);
    if (join)
        t->joined = true;
    pthread_mutex_unlock(&t->lock);
    mcp_curl.multi_wakeup(t->multi);
    if (join)
        pthread_join(t->thread, NULL);
}

/* Everything client_http_new_with_limits() may have set up, in reverse. */
static void destroy(http_client_t *t)
{
    if (t->multi)
        mcp_curl.multi_cleanup(t->multi);
    pthread_mutex_destroy(&t->lock);
    http_target_free(&t->target);
    free(t->session_id);
    free(t);
}

static void http_free(client_transport_t *base)
{
    if (!base)
        return;
    http_client_t *t = (http_client_t *)base;
    http_close(base);
    destroy(t);
}

static uint64_t http_auth_generation(client_transport_t *base)
{
    return http_target_auth_generation(&((http_client_t *)base)->target);
}

static const client_transport_ops_t http_ops = {
    .start = http_start,
    .cancel = http_cancel,
    .release = http_release,
    .notify = http_notify,
    .close = http_close,
    .free = http_free,
    .session_begin = http_client_session_begin,
    .session_active = http_client_session_active,
    .session_reset = http_client_session_reset,
    .session_end = http_client_session_end,
    .open_stream = http_client_open_stream,
    .auth_generation = http_auth_generation,
};

/* ------------------------------------------------------------------------
 * Creating the transport
 * ------------------------------------------------------------------------ */

/* The transport thread takes no signals: they are the application's. */
static int start_thread(http_client_t *t)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->thread, NULL, transport_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int client_http_new_with_limits(const mcp_http_target_t *target,
                                const client_http_limits_t *limits,
                                const client_transport_hooks_t *hooks, client_transport_t **out,
                                mcp_error_t *err)
{
    *out = NULL;
    if (!target)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "no HTTP target");
    int rc = mcp_curl_load(err);
    if (rc != MCP_OK)
        return rc;
    http_client_t *t = calloc(1, sizeof *t);
    if (!t)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    pthread_mutex_init(&t->lock, NULL);
    t->base.ops = &http_ops;
    if (hooks)
        t->base.hooks = *hooks; /* before the transport thread, which reads them, starts */
    if (limits)
        t->limits = *limits;
    if (t->limits.drain_ms <= 0)
        t->limits.drain_ms = CLIENT_HTTP_DEFAULT_DRAIN_MS;
    if (t->limits.notify_timeout_ms <= 0)
        t->limits.notify_timeout_ms = CLIENT_HTTP_DEFAULT_NOTIFY_TIMEOUT_MS;

    if ((rc = http_target_init(&t->target, target, err)) != MCP_OK) {
        destroy(t);
        return rc;
    }
    if (!(t->multi = mcp_curl.multi_init())) {
        destroy(t);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    if (start_thread(t) != 0) {
        destroy(t);
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot start the HTTP client thread");
    }
    *out = &t->base;
    return MCP_OK;
}

int client_http_new(const mcp_http_target_t *target, const client_transport_hooks_t *hooks,
                    client_transport_t **out, mcp_error_t *err)
{
    return client_http_new_with_limits(target, NULL, hooks, out, err);
}
