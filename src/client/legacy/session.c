/*
 * A legacy session (digest sections 10.1 and 10.3): the initialize
 * handshake and its version negotiation, notifications/initialized, the
 * server's GET stream, a new handshake when an HTTP server forgot the
 * session or a stdio server was restarted, and the end of it all.
 *
 * The GET stream is watched by a thread of its own: when it breaks it is
 * opened again (with Last-Event-ID, after the server's retry delay, at most
 * CLIENT_MAX_RETRY_MS, or a growing backoff); a server that offers none
 * (405, or any other refusal) is left alone, as the spec allows. The
 * handshake waits until the server answered the first GET: a server may
 * send its requests there the moment the session is up (and drop them
 * while no stream is open).
 *
 * A stdio server restarted by the transport (mcp_stdio_target_t.restart)
 * is a new process that knows nothing: a keeper thread sends it the
 * handshake, then the log level and the resource subscriptions the old one
 * had. Calls wait for the handshake meanwhile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/legacy/legacy.h"
#include "mcp/jsonrpc.h"
#include "mcp/version.h"
#include "clock.h"

#define STREAM_FIRST_DELAY_MS 250
#define STREAM_MAX_DELAY_MS 10000
/* A stream that keeps breaking before it carried anything is given up
 * after this many attempts in a row. */
#define STREAM_MAX_BARREN 8
/* How long the handshake waits for the server to answer the GET; a server
 * slower than this still gets its stream, only later. */
#define STREAM_OPEN_WAIT_MS 5000

struct client_legacy {
    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t cond;
    uint64_t generation;         /* bumped by every re-initialize */
    bool closing;                /* no new threads for server requests */
    client_inbound_t *answering; /* server requests being answered */
    size_t n_answering;          /* how many; at most CLIENT_LEGACY_MAX_ANSWERING */
    bool stream_stop;            /* the watcher is asked to stop */

    /* The GET stream. */
    bool has_stream_thread;
    pthread_t stream_thread;
    client_exchange_t *stream_ex;
    bool stream_done;
    bool stream_heard;           /* a message arrived since it opened */
    bool stream_ready;           /* the first GET since start_stream was
                                    answered (or failed, or was not sent) */
    int stream_status;
    int stream_rc;
    char *stream_last_event_id;
    int64_t stream_retry_ms;

    /* A restarted stdio server. */
    bool stale;                  /* it runs but is not initialized yet */
    bool renew_pending;          /* the keeper has a restart to handle */
    bool has_keeper;
    pthread_t keeper;
    mcp_cancel_t *cancel;        /* triggered at close: ends the session's own calls */

    pthread_mutex_t handshake;   /* one (re-)initialize at a time */
};

/* ------------------------------------------------------------------------
 * The handshake
 * ------------------------------------------------------------------------ */

static const char *legacy_version_named(const char *v)
{
    size_t n;
    const char *const *legacy = mcp_protocol_versions_legacy(&n);
    for (size_t i = 0; v && i < n; i++)
        if (strcmp(legacy[i], v) == 0)
            return legacy[i];
    return NULL;
}

static int rpc_failure(const json_t *error, const char *what, mcp_error_t *err)
{
    mcp_error_t e = {0};
    int rc = mcp_error_from_json(&e, error) == MCP_OK ? MCP_ERPC : MCP_EPROTO;
    if (rc == MCP_ERPC)
        mcp_error_set(err, MCP_ERPC, e.code, json_incref(e.data), "%s: %s", what, e.message);
    else
        mcp_error_set(err, rc, 0, NULL, "%s: a malformed error", what);
    mcp_error_clear(&e);
    return rc;
}

/* initialize, its answer checked and kept, then notifications/initialized. */
static int handshake(mcp_client_t *c, client_wire_t *wire, mcp_error_t *err)
{
    json_t *params = json_pack("{s:s, s:O, s:O}", "protocolVersion", c->legacy_version,
                               "capabilities", c->legacy_capabilities, "clientInfo",
                               c->client_info);
    json_t *id = json_integer(client_next_id(c));
    json_t *request = params && id ? mcp_jsonrpc_request(id, "initialize", params) : NULL;
    json_decref(id);
    if (!request)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    /* No MCP-Protocol-Version header: nothing is negotiated yet. */
    client_http_hints_t hints = {0};
    client_call_opts_t o = {
        .timeout_ms = c->timeout_ms, .cancel = c->legacy->cancel, .no_cancel_notice = true};
    /* The whole handshake, notifications/initialized included, within the
     * client's timeout. */
    int64_t deadline_ms = c->timeout_ms > 0 ? mcp_clock_ms() + c->timeout_ms : 0;
    json_t *response = NULL;
    int rc = client_roundtrip_wire(c, request, &hints, &o, &response, wire, err);
    json_decref(request);
    if (rc != MCP_OK)
        return rc;

    const json_t *result = json_object_get(response, "result");
    const json_t *error = json_object_get(response, "error");
    const char *version = NULL;
    if (error) {
        rc = rpc_failure(error, "initialize failed", err);
    } else if (!json_is_object(result) ||
               !json_is_string(json_object_get(result, "protocolVersion")) ||
               !json_is_object(json_object_get(result, "capabilities"))) {
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL, "the InitializeResult is malformed");
    } else if (!(version = legacy_version_named(
                     json_string_value(json_object_get(result, "protocolVersion"))))) {
        /* The spec: a client that cannot use the answered version SHOULD
         * disconnect. */
        rc = mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                           "the server answered initialize with version \"%s\", which this "
                           "client does not speak",
                           json_string_value(json_object_get(result, "protocolVersion")));
    } else if (client_adopt_server(c, json_object_get(result, "serverInfo"),
                                   json_object_get(result, "capabilities"),
                                   json_string_value(json_object_get(result, "instructions"))) !=
               MCP_OK) {
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    } else {
        pthread_mutex_lock(&c->lock);
        c->version = version;
        c->era = MCP_ERA_LEGACY;
        pthread_mutex_unlock(&c->lock);
    }
    json_decref(response);
    if (rc != MCP_OK)
        return rc;

    json_t *note = mcp_jsonrpc_notification("notifications/initialized", NULL);
    client_http_hints_t after = {.protocol_version = client_legacy_header_version(version),
                                 .deadline_ms = deadline_ms};
    rc = note ? c->transport->ops->notify(c->transport, note, &after) : MCP_ENOMEM;
    json_decref(note);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "cannot send notifications/initialized: %s",
                             mcp_strerror(rc));
    return MCP_OK;
}

/* A log level chosen before connecting (or before a new session) is asked
 * for once the session is up (when the server logs at all). */
static void apply_log_level(mcp_client_t *c)
{
    pthread_mutex_lock(&c->lock);
    const char *level = c->log_level;
    pthread_mutex_unlock(&c->lock);
    if (!level || !json_is_object(json_object_get(c->server_caps, "logging")))
        return;
    json_t *params = json_pack("{s:s}", "level", level), *result = NULL;
    mcp_error_t e = {0};
    int rc = params ? client_call(c, "logging/setLevel", params,
                                  &(mcp_request_options_t){.cancel = c->legacy->cancel},
                                  &result, &e)
                    : mcp_error_set(&e, MCP_ENOMEM, 0, NULL, "out of memory");
    if (rc != MCP_OK)
        client_log(c, MCP_LOG_WARNING, "logging/setLevel failed: %s", e.message);
    json_decref(params);
    json_decref(result);
    mcp_error_clear(&e);
}

/* ------------------------------------------------------------------------
 * The GET stream
 * ------------------------------------------------------------------------ */

static void stream_message(void *user, const json_t *msg)
{
    mcp_client_t *c = user;
    pthread_mutex_lock(&c->legacy->lock);
    c->legacy->stream_heard = true;
    pthread_mutex_unlock(&c->legacy->lock);
    client_legacy_on_message(c, msg);
}

static void stream_open(void *user, int http_status)
{
    mcp_client_t *c = user;
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    l->stream_ready = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void stream_done(void *user, client_outcome_t *out)
{
    mcp_client_t *c = user;
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    l->stream_done = true;
    l->stream_ready = true;
    l->stream_status = out->http_status;
    l->stream_rc = out->rc;
    l->stream_retry_ms = client_retry_honoured_ms(out->retry_ms);
    if (out->last_event_id && out->last_event_id[0]) {
        free(l->stream_last_event_id);
        l->stream_last_event_id = strdup(out->last_event_id);
    }
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static const client_exchange_events_t stream_events = {
    .on_notification = stream_message, .on_done = stream_done, .on_open = stream_open};


static void *watch_stream(void *arg)
{
    mcp_client_t *c = arg;
    client_legacy_t *l = c->legacy;
    client_transport_t *t = c->transport;
    int64_t delay = STREAM_FIRST_DELAY_MS;
    int barren = 0;
    pthread_mutex_lock(&l->lock);
    while (!l->stream_stop) {
        char *last = l->stream_last_event_id ? strdup(l->stream_last_event_id) : NULL;
        l->stream_done = false;
        l->stream_heard = false;
        pthread_mutex_unlock(&l->lock);
        pthread_mutex_lock(&c->lock);
        const char *version = client_legacy_header_version(c->version);
        pthread_mutex_unlock(&c->lock);
        client_exchange_t *ex = NULL;
        int rc = t->ops->open_stream(t, version, last, NULL, &stream_events, c, &ex);
        free(last);
        pthread_mutex_lock(&l->lock);
        if (rc != MCP_OK)
            break;
        l->stream_ex = ex;
        while (!l->stream_done && !l->stream_stop)
            pthread_cond_wait(&l->cond, &l->lock);
        if (!l->stream_done) {
            pthread_mutex_unlock(&l->lock);
            t->ops->cancel(t, ex, false);
            pthread_mutex_lock(&l->lock);
            while (!l->stream_done)
                pthread_cond_wait(&l->cond, &l->lock);
        }
        l->stream_ex = NULL;
        pthread_mutex_unlock(&l->lock);
        t->ops->release(t, ex);
        pthread_mutex_lock(&l->lock);
        if (l->stream_stop)
            break;
        int status = l->stream_status;
        if (status != 0 && (status < 200 || status > 299)) {
            /* 405: the server offers no stream; 404: the session is gone,
             * and the next request starts a new one (and a new watcher). */
            client_log(c, MCP_LOG_DEBUG, "no GET stream (HTTP %d)", status);
            break;
        }
        barren = l->stream_heard ? 0 : barren + 1;
        if (barren >= STREAM_MAX_BARREN) {
            client_log(c, MCP_LOG_WARNING, "the GET stream keeps breaking; giving it up");
            break;
        }
        if (l->stream_heard)
            delay = STREAM_FIRST_DELAY_MS;
        int64_t wait = l->stream_retry_ms >= 0 ? l->stream_retry_ms : delay;
        delay = delay * 2 > STREAM_MAX_DELAY_MS ? STREAM_MAX_DELAY_MS : delay * 2;
        pthread_mutex_unlock(&l->lock); /* client_log calls the user's callback */
        client_log(c, MCP_LOG_DEBUG, "the GET stream ended; opening it again in %lld ms",
                   (long long)wait);
        pthread_mutex_lock(&l->lock);
        if (l->stream_stop)
            break;
        struct timespec until;
        until = mcp_clock_deadline(wait);
        while (!l->stream_stop && pthread_cond_timedwait(&l->cond, &l->lock, &until) == 0)
            ;
    }
    l->stream_ready = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Starts the watcher unless one runs (the transport has a GET stream),
 * and waits until the server answered its first GET. */
static void start_stream(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    if (!c->transport->ops->open_stream)
        return;
    pthread_mutex_lock(&l->lock);
    if (l->has_stream_thread) {
        pthread_mutex_unlock(&l->lock);
        return;
    }
    l->stream_ready = false;
    l->has_stream_thread = pthread_create(&l->stream_thread, NULL, watch_stream, c) == 0;
    struct timespec until;
    until = mcp_clock_deadline(STREAM_OPEN_WAIT_MS);
    while (l->has_stream_thread && !l->stream_ready &&
           pthread_cond_timedwait(&l->cond, &l->lock, &until) == 0)
        ;
    if (l->has_stream_thread && !l->stream_ready)
        client_log(c, MCP_LOG_DEBUG, "the GET stream is not open yet; going on without it");
    pthread_mutex_unlock(&l->lock);
}

/* Stops the watcher (and its stream) and waits for it. */
static void stop_stream(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    bool joined = l->has_stream_thread;
    l->has_stream_thread = false;
    l->stream_stop = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    if (joined)
        pthread_join(l->stream_thread, NULL);
    pthread_mutex_lock(&l->lock);
    l->stream_stop = false;
    pthread_mutex_unlock(&l->lock);
}

/* ------------------------------------------------------------------------
 * The session
 * ------------------------------------------------------------------------ */

static client_legacy_t *legacy_new(void)
{
    client_legacy_t *l = calloc(1, sizeof *l);
    if (!l || !(l->cancel = mcp_cancel_new())) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_mutex_init(&l->handshake, NULL);
    mcp_clock_cond_init(&l->cond);
    l->stream_retry_ms = -1;
    return l;
}

int client_legacy_connect(mcp_client_t *c, client_wire_t *wire, mcp_error_t *err)
{
    if (!c->legacy) {
        client_legacy_t *l = legacy_new();
        if (!l)
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        pthread_mutex_lock(&c->lock);
        c->legacy = l;
        pthread_mutex_unlock(&c->lock);
    }
    client_transport_t *t = c->transport;
    if (t->ops->session_begin)
        t->ops->session_begin(t);
    int rc = handshake(c, wire, err);
    if (rc != MCP_OK)
        return rc;
    start_stream(c);
    apply_log_level(c);
    return MCP_OK;
}

uint64_t client_legacy_generation(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    uint64_t g = l->generation;
    pthread_mutex_unlock(&l->lock);
    return g;
}

int client_legacy_reinitialize(mcp_client_t *c, uint64_t generation, mcp_error_t *err)
{
    client_legacy_t *l = c->legacy;
    client_transport_t *t = c->transport;
    pthread_mutex_lock(&l->handshake);
    int rc = MCP_OK;
    if (client_legacy_generation(c) == generation) {
        stop_stream(c);
        if (t->ops->session_reset)
            t->ops->session_reset(t);
        pthread_mutex_lock(&l->lock);
        free(l->stream_last_event_id); /* events of the old session */
        l->stream_last_event_id = NULL;
        pthread_mutex_unlock(&l->lock);
        rc = handshake(c, NULL, err);
        pthread_mutex_lock(&l->lock);
        l->generation++;
        pthread_mutex_unlock(&l->lock);
        if (rc == MCP_OK) {
            start_stream(c);
            apply_log_level(c);
        }
    }
    pthread_mutex_unlock(&l->handshake);
    return rc;
}

void client_legacy_close(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    if (!l)
        return;
    /* Under the client's lock too: a restart reported from now on finds the
     * session closing (client_legacy_restarted). */
    pthread_mutex_lock(&c->lock);
    pthread_mutex_lock(&l->lock);
    l->closing = true;
    bool keeper = l->has_keeper;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_unlock(&c->lock);
    mcp_cancel_trigger(l->cancel);
    if (keeper)
        pthread_join(l->keeper, NULL);
    stop_stream(c);
    client_legacy_drain_inbound(c);
    if (c->transport && c->transport->ops->session_end) {
        pthread_mutex_lock(&c->lock);
        const char *version = client_legacy_header_version(c->version);
        pthread_mutex_unlock(&c->lock);
        c->transport->ops->session_end(c->transport, version);
    }
}

void client_legacy_free(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    if (!l)
        return;
    pthread_mutex_lock(&c->lock);
    c->legacy = NULL;
    pthread_mutex_unlock(&c->lock);
    mcp_cancel_free(l->cancel);
    free(l->stream_last_event_id);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->handshake);
    pthread_cond_destroy(&l->cond);
    free(l);
}

/* ------------------------------------------------------------------------
 * A restarted stdio server
 * ------------------------------------------------------------------------ */

/* The handshake with the new process (calls wait for it), then what the
 * old one had been told: the log level and the resource subscriptions. */
static void renew_session(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    client_log(c, MCP_LOG_INFO, "initializing the restarted server");
    pthread_mutex_lock(&l->handshake);
    mcp_error_t e = {0};
    int rc = handshake(c, NULL, &e);
    pthread_mutex_lock(&l->lock);
    l->generation++;
    /* It was restarted again meanwhile: the next round initializes that. */
    bool again = l->renew_pending;
    if (!again)
        l->stale = false;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_unlock(&l->handshake);
    if (rc != MCP_OK)
        client_log(c, MCP_LOG_WARNING, "cannot initialize the restarted server: %s", e.message);
    mcp_error_clear(&e);
    if (rc != MCP_OK || again)
        return;
    apply_log_level(c);
    client_legacy_listen_renew(c, &(mcp_request_options_t){.cancel = l->cancel});
}

static void *keep_session(void *arg)
{
    mcp_client_t *c = arg;
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->renew_pending && !l->closing)
            pthread_cond_wait(&l->cond, &l->lock);
        if (l->closing)
            break;
        l->renew_pending = false;
        pthread_mutex_unlock(&l->lock);
        renew_session(c);
        pthread_mutex_lock(&l->lock);
    }
    l->stale = false;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

bool client_legacy_restarted(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    bool ok = !l->closing;
    if (ok && !l->has_keeper)
        ok = l->has_keeper = pthread_create(&l->keeper, NULL, keep_session, c) == 0;
    if (ok) {
        l->stale = true;
        l->renew_pending = true;
        pthread_cond_broadcast(&l->cond);
    }
    pthread_mutex_unlock(&l->lock);
    return ok;
}

int client_legacy_await_session(mcp_client_t *c, const client_call_opts_t *o, mcp_error_t *err)
{
    client_legacy_t *l = c->legacy;
    struct timespec until;
    if (o->timeout_ms >= 0)
        until = mcp_clock_deadline(o->timeout_ms);
    client_cancel_waiter_t cw = {&l->lock, &l->cond, NULL};
    client_cancel_watch(o->cancel, &cw);
    int rc = MCP_OK;
    pthread_mutex_lock(&l->lock);
    /* The keeper's own calls (after a newer restart) never wait for it. */
    bool keeper = l->has_keeper && pthread_equal(pthread_self(), l->keeper);
    while (l->stale && !l->closing && !keeper && rc == MCP_OK) {
        if (mcp_cancel_triggered(o->cancel))
            rc = MCP_ECANCELED;
        else if (o->timeout_ms < 0)
            pthread_cond_wait(&l->cond, &l->lock);
        else if (pthread_cond_timedwait(&l->cond, &l->lock, &until) == ETIMEDOUT && l->stale)
            rc = MCP_ETIMEDOUT;
    }
    pthread_mutex_unlock(&l->lock);
    client_cancel_unwatch(o->cancel, &cw);
    if (rc == MCP_ECANCELED)
        return mcp_error_set(err, rc, 0, NULL, "the call was cancelled");
    if (rc == MCP_ETIMEDOUT)
        return mcp_error_set(err, rc, 0, NULL,
                             "the restarted server was not initialized within %lld ms",
                             (long long)o->timeout_ms);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Server requests being answered (inbound.c lists them here)
 * ------------------------------------------------------------------------ */

int client_legacy_inbound_enter(mcp_client_t *c, client_inbound_t *in)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    int rc = l->closing                                      ? MCP_ECLOSED
             : l->n_answering >= CLIENT_LEGACY_MAX_ANSWERING ? MCP_ELIMIT
                                                              : MCP_OK;
    if (rc == MCP_OK) {
        in->next = l->answering;
        l->answering = in;
        l->n_answering++;
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void client_legacy_inbound_leave(mcp_client_t *c, client_inbound_t *in)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    for (client_inbound_t **p = &l->answering; *p; p = &(*p)->next)
        if (*p == in) {
            *p = in->next;
            l->n_answering--;
            break;
        }
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

bool client_legacy_inbound_cancel(mcp_client_t *c, const json_t *request_id)
{
    client_legacy_t *l = c->legacy;
    bool found = false;
    pthread_mutex_lock(&l->lock);
    for (client_inbound_t *in = l->answering; in && request_id; in = in->next)
        if (json_equal(json_object_get(in->request, "id"), request_id)) {
            in->cancelled = true;
            found = true;
        }
    pthread_mutex_unlock(&l->lock);
    return found;
}

bool client_legacy_inbound_cancelled(mcp_client_t *c, const client_inbound_t *in)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    bool cancelled = in->cancelled;
    pthread_mutex_unlock(&l->lock);
    return cancelled;
}

void client_legacy_drain_inbound(mcp_client_t *c)
{
    client_legacy_t *l = c->legacy;
    pthread_mutex_lock(&l->lock);
    l->closing = true;
    while (l->answering)
        pthread_cond_wait(&l->cond, &l->lock);
    pthread_mutex_unlock(&l->lock);
}
