/*
 * subscriptions/listen (digest section 2.10): a long-lived request whose
 * notifications the transport routes to it by subscriptionId.
 *
 * mcp_client_listen() opens the stream on the caller's thread and waits for
 * notifications/subscriptions/acknowledged. From then on a supervisor thread
 * per subscription watches it: events invalidate the cache as they arrive
 * (on the transport's thread) and are queued for the supervisor, which calls
 * the user's callback -- so the callback may make calls on the client even
 * over stdio, whose reader thread it would otherwise block; when the stream
 * ends the
 * supervisor tells a graceful end (the listen result, or a server-sent
 * notifications/cancelled for the listen id) from a broken one, which it
 * re-opens with exponential backoff unless told not to. Only the
 * supervisor (or the opener, before it exists) starts, cancels and releases
 * exchanges, so a transport callback never has to.
 *
 * The queue between the two is a ring of MCP_LISTEN_MAX_PENDING events: a
 * callback slower than the server must not make the client hold every
 * event the server ever sent, so a full ring drops its oldest event for
 * the new one (the newest tell the current state), counts it, and warns
 * once until the callback has caught up.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "client/legacy/legacy.h"
#include "mcp/request.h"
#include "clock.h"

#define REOPEN_ATTEMPTS 6
#define REOPEN_FIRST_DELAY_MS 100

typedef enum stream_state { STREAM_OPENING, STREAM_ACKED, STREAM_ENDED } stream_state_t;

struct mcp_subscription {
    mcp_client_t *client;
    mcp_subscription_t *next;      /* in client->subs; guarded by client->lock */
    json_t *params;                /* {"notifications": SubscriptionFilter} */
    mcp_listen_fn fn;
    void *user;
    bool no_reopen;
    void (*on_end)(void *user, int rc);
    int64_t ack_timeout_ms;        /* < 0: wait as long as it takes */

    pthread_mutex_t lock;          /* guards the fields below */
    pthread_cond_t cond;
    client_exchange_t *ex;         /* the current stream, until released */
    stream_state_t state;
    bool server_cancelled;         /* notifications/cancelled for our id */
    json_t *end_response;          /* the response that ended the stream */
    int end_rc;                    /* the transport's failure, if no response */
    json_t *honoured;              /* the acknowledged filter */
    /* {"method","params"} events waiting for the callback: a ring of
     * MCP_LISTEN_MAX_PENDING, `n_events` from `head` on. */
    json_t **events;
    size_t head, n_events;
    uint64_t dropped;              /* events the full ring pushed out */
    bool overflowing;              /* dropping since the ring last emptied */
    bool closing;
    bool has_thread;
    pthread_t thread;
};

/* ------------------------------------------------------------------------
 * Invalidation
 * ------------------------------------------------------------------------ */

void client_invalidate_for(mcp_client_t *c, const char *method, const json_t *params)
{
    client_tools_t old = {0}; /* freed once the lock is dropped */
    pthread_mutex_lock(&c->lock);
    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        client_cache_invalidate_method(c->cache, "tools/list");
        client_tools_forget(&c->tools, &old);
    } else if (strcmp(method, "notifications/prompts/list_changed") == 0) {
        client_cache_invalidate_method(c->cache, "prompts/list");
    } else if (strcmp(method, "notifications/resources/list_changed") == 0) {
        client_cache_invalidate_method(c->cache, "resources/list");
        client_cache_invalidate_method(c->cache, "resources/templates/list");
        /* A skill's files are resources: a server announces a change of
         * its skills as one of its resource list (libmcp's server does). */
        client_cache_invalidate_method(c->cache, "skills/list");
        client_cache_invalidate_method(c->cache, "skills/get");
    } else if (strcmp(method, "notifications/resources/updated") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (uri)
            client_cache_invalidate_uri(c->cache, uri);
    }
    pthread_mutex_unlock(&c->lock);
    client_tools_clear(&old);
}

/* After a broken stream events may have been missed: forget whatever the
 * filter covers. */
static void invalidate_filter(mcp_client_t *c, const json_t *filter)
{
    static const struct {
        const char *flag;
        const char *event;
    } flags[] = {
        {"toolsListChanged", "notifications/tools/list_changed"},
        {"promptsListChanged", "notifications/prompts/list_changed"},
        {"resourcesListChanged", "notifications/resources/list_changed"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (json_is_true(json_object_get(filter, flags[i].flag)))
            client_invalidate_for(c, flags[i].event, NULL);
    size_t i;
    json_t *uri;
    json_array_foreach(json_object_get(filter, "resourceSubscriptions"), i, uri) {
        json_t *p = json_pack("{s:O}", "uri", uri);
        client_invalidate_for(c, "notifications/resources/updated", p);
        json_decref(p);
    }
}

/* ------------------------------------------------------------------------
 * Transport callbacks (transport threads)
 * ------------------------------------------------------------------------ */

static bool is_event(const char *method)
{
    return strcmp(method, "notifications/tools/list_changed") == 0 ||
           strcmp(method, "notifications/prompts/list_changed") == 0 ||
           strcmp(method, "notifications/resources/list_changed") == 0 ||
           strcmp(method, "notifications/resources/updated") == 0 ||
           strcmp(method, "notifications/tasks") == 0;
}

/*
 * Queues an event for the callback (sub->lock held); on a full ring the
 * oldest waiting event makes room. Returns true when this starts a run of
 * drops, which the caller reports once it holds no lock (client_log calls
 * the user's log callback).
 */
static bool queue_event_locked(mcp_subscription_t *sub, const char *method,
                               const json_t *params)
{
    /* The event's params are copied, not referenced: the transport frees
     * its message on its own thread, and jansson's reference counts do
     * not order that against the callback thread. */
    json_t *ev = json_pack("{s:s, s:o?}", "method", method, "params", json_deep_copy(params));
    if (!ev)
        return false;
    bool started = false;
    if (sub->n_events == MCP_LISTEN_MAX_PENDING) {
        json_decref(sub->events[sub->head]);
        sub->head = (sub->head + 1) % MCP_LISTEN_MAX_PENDING;
        sub->n_events--;
        sub->dropped++;
        started = !sub->overflowing;
        sub->overflowing = true;
    }
    sub->events[(sub->head + sub->n_events) % MCP_LISTEN_MAX_PENDING] = ev;
    sub->n_events++;
    pthread_cond_broadcast(&sub->cond);
    return started;
}

static void warn_overflow(mcp_client_t *c)
{
    client_log(c, MCP_LOG_WARNING,
               "a subscription callback fell more than %d events behind; dropping the oldest",
               MCP_LISTEN_MAX_PENDING);
}

static void on_notification(void *user, const json_t *msg)
{
    mcp_subscription_t *sub = user;
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    if (!method)
        return;
    bool deliver = false, overflow = false;
    if (is_event(method))
        client_invalidate_for(sub->client, method, params);
    pthread_mutex_lock(&sub->lock);
    if (strcmp(method, "notifications/subscriptions/acknowledged") == 0) {
        if (sub->state == STREAM_OPENING) {
            const json_t *honoured = json_object_get(params, "notifications");
            json_decref(sub->honoured);
            sub->honoured = json_is_object(honoured) ? json_deep_copy(honoured) : json_object();
            sub->state = STREAM_ACKED;
            pthread_cond_broadcast(&sub->cond);
        }
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        sub->server_cancelled = true;
        pthread_cond_broadcast(&sub->cond);
    } else if (is_event(method)) {
        /* Nothing may precede the acknowledgement; a server that does
         * anyway is still heard once the stream is acknowledged. */
        deliver = sub->state == STREAM_ACKED && !sub->closing && sub->fn;
        if (deliver)
            overflow = queue_event_locked(sub, method, params);
    }
    pthread_mutex_unlock(&sub->lock);
    if (overflow)
        warn_overflow(sub->client);
    if (!deliver && strcmp(method, "notifications/message") == 0)
        client_deliver_log(sub->client, msg);
}

static void on_done(void *user, client_outcome_t *outcome)
{
    mcp_subscription_t *sub = user;
    pthread_mutex_lock(&sub->lock);
    sub->state = STREAM_ENDED;
    sub->end_response = outcome->response;
    outcome->response = NULL;
    sub->end_rc = sub->end_response ? MCP_OK : outcome->rc != MCP_OK ? outcome->rc : MCP_EPROTO;
    pthread_cond_broadcast(&sub->cond);
    pthread_mutex_unlock(&sub->lock);
}

static const client_exchange_events_t events = {.on_notification = on_notification,
                                                .on_done = on_done};

/* ------------------------------------------------------------------------
 * Opening and ending streams (the opener's or the supervisor's thread)
 * ------------------------------------------------------------------------ */

/* With sub->lock held: cancels the current stream unless it ended, waits
 * for its end and releases it. */
static void end_stream_locked(mcp_subscription_t *sub, bool notify_peer)
{
    client_transport_t *t = sub->client->transport;
    if (!sub->ex)
        return;
    if (sub->state != STREAM_ENDED) {
        pthread_mutex_unlock(&sub->lock);
        t->ops->cancel(t, sub->ex, notify_peer);
        pthread_mutex_lock(&sub->lock);
        while (sub->state != STREAM_ENDED)
            pthread_cond_wait(&sub->cond, &sub->lock);
    }
    client_exchange_t *ex = sub->ex;
    sub->ex = NULL;
    pthread_mutex_unlock(&sub->lock);
    t->ops->release(t, ex);
    pthread_mutex_lock(&sub->lock);
}

/* Was the end of the stream graceful? The listen result, or the server's
 * notifications/cancelled. */
static bool ended_gracefully(const mcp_subscription_t *sub)
{
    return sub->server_cancelled || json_object_get(sub->end_response, "result") != NULL;
}


/* Sends subscriptions/listen and waits for the acknowledgement. */
static int open_stream(mcp_subscription_t *sub, mcp_error_t *err)
{
    mcp_client_t *c = sub->client;
    client_transport_t *t = c->transport;
    if (!t)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL, "the client is not connected");
    pthread_mutex_lock(&c->lock);
    json_int_t id = c->next_id++;
    client_meta_t meta = {c->version, c->capabilities, c->client_info, c->log_level};
    pthread_mutex_unlock(&c->lock);
    client_hints_t hints;
    json_t *request = NULL;
    if (client_hints_build(&hints, meta.protocol_version, "subscriptions/listen", sub->params,
                           NULL) == MCP_OK)
        request = client_request_build(id, "subscriptions/listen", sub->params, &meta, false);
    if (!request) {
        client_hints_clear(&hints);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }

    pthread_mutex_lock(&sub->lock);
    sub->state = STREAM_OPENING;
    sub->server_cancelled = false;
    json_decref(sub->end_response);
    sub->end_response = NULL;
    sub->end_rc = MCP_OK;
    pthread_mutex_unlock(&sub->lock);

    client_exchange_t *ex = NULL;
    int rc = t->ops->start(t, request, &hints.h, &events, sub, &ex);
    client_hints_clear(&hints);
    json_decref(request);
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "cannot send subscriptions/listen: %s",
                             mcp_strerror(rc));

    struct timespec deadline;
    if (sub->ack_timeout_ms >= 0)
        deadline = mcp_clock_deadline(sub->ack_timeout_ms);
    pthread_mutex_lock(&sub->lock);
    sub->ex = ex;
    bool timed_out = false;
    while (sub->state == STREAM_OPENING && !sub->closing && !timed_out) {
        if (sub->ack_timeout_ms < 0)
            pthread_cond_wait(&sub->cond, &sub->lock);
        else
            timed_out = pthread_cond_timedwait(&sub->cond, &sub->lock, &deadline) != 0 &&
                        sub->state == STREAM_OPENING;
    }
    if (sub->state == STREAM_ACKED && !sub->closing) {
        pthread_mutex_unlock(&sub->lock);
        return MCP_OK;
    }
    end_stream_locked(sub, true);
    if (sub->closing) {
        rc = mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the subscription was closed");
    } else if (timed_out) {
        rc = mcp_error_set(err, MCP_ETIMEDOUT, 0, NULL, "no acknowledgement within %lld ms",
                           (long long)sub->ack_timeout_ms);
    } else if (json_object_get(sub->end_response, "error")) {
        mcp_error_t e = {0};
        rc = mcp_error_from_json(&e, json_object_get(sub->end_response, "error")) == MCP_OK
                 ? MCP_ERPC
                 : MCP_EPROTO;
        if (err)
            mcp_error_move(err, &e);
        mcp_error_clear(&e);
    } else if (sub->end_response || sub->server_cancelled) {
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "the server ended the subscription before acknowledging it");
    } else {
        rc = mcp_error_set(err, sub->end_rc, 0, NULL, "the subscription stream ended: %s",
                           mcp_strerror(sub->end_rc));
    }
    pthread_mutex_unlock(&sub->lock);
    return rc;
}

/* Sleeps `ms` unless the subscription is closed first (sub->lock held).
 * Returns false when closed. */
static bool backoff(mcp_subscription_t *sub, int64_t ms)
{
    struct timespec deadline;
    deadline = mcp_clock_deadline(ms);
    while (!sub->closing)
        if (pthread_cond_timedwait(&sub->cond, &sub->lock, &deadline) != 0)
            break;
    return !sub->closing;
}

/* Calls the callback for the queued events (sub->lock held; released
 * around each call). Once the ring empties after drops, says how many. */
static void deliver_events(mcp_subscription_t *sub)
{
    while (sub->n_events > 0 && !sub->closing) {
        json_t *ev = sub->events[sub->head];
        sub->events[sub->head] = NULL;
        sub->head = (sub->head + 1) % MCP_LISTEN_MAX_PENDING;
        sub->n_events--;
        pthread_mutex_unlock(&sub->lock);
        sub->fn(sub->user, json_string_value(json_object_get(ev, "method")),
                json_object_get(ev, "params"));
        json_decref(ev);
        pthread_mutex_lock(&sub->lock);
    }
    if (sub->overflowing && sub->n_events == 0) {
        sub->overflowing = false;
        uint64_t dropped = sub->dropped;
        pthread_mutex_unlock(&sub->lock);
        client_log(sub->client, MCP_LOG_INFO,
                   "a subscription callback caught up; %llu events dropped so far",
                   (unsigned long long)dropped);
        pthread_mutex_lock(&sub->lock);
    }
}

static void *supervise(void *arg)
{
    mcp_subscription_t *sub = arg;
    mcp_client_t *c = sub->client;
    pthread_mutex_lock(&sub->lock);
    for (;;) {
        while (sub->state != STREAM_ENDED && !sub->server_cancelled && !sub->closing &&
               sub->n_events == 0)
            pthread_cond_wait(&sub->cond, &sub->lock);
        deliver_events(sub);
        if (sub->closing)
            break;
        if (sub->state != STREAM_ENDED && !sub->server_cancelled)
            continue;
        /* A server-sent notifications/cancelled ends the stream; the
         * exchange is dropped without telling the server back. */
        end_stream_locked(sub, false);
        if (sub->closing)
            break;
        int end_rc;
        if (ended_gracefully(sub))
            end_rc = MCP_OK;
        else if (json_object_get(sub->end_response, "error"))
            end_rc = MCP_ERPC;
        else
            end_rc = sub->end_rc != MCP_OK ? sub->end_rc : MCP_EPROTO;

        int rc = end_rc;
        if (end_rc != MCP_OK && !sub->no_reopen) {
            client_log(c, MCP_LOG_INFO, "subscription stream broke (%s); re-opening",
                       mcp_strerror(end_rc));
            int64_t delay = REOPEN_FIRST_DELAY_MS;
            for (int attempt = 0; attempt < REOPEN_ATTEMPTS; attempt++, delay *= 2) {
                if (!backoff(sub, delay))
                    break;
                pthread_mutex_unlock(&sub->lock);
                rc = open_stream(sub, NULL);
                if (rc == MCP_OK)
                    invalidate_filter(c, json_object_get(sub->params, "notifications"));
                pthread_mutex_lock(&sub->lock);
                if (rc == MCP_OK || sub->closing)
                    break;
            }
            if (sub->closing)
                break;
            if (rc == MCP_OK)
                continue;
        }
        pthread_mutex_unlock(&sub->lock);
        if (sub->on_end)
            sub->on_end(sub->user, rc);
        pthread_mutex_lock(&sub->lock);
        break;
    }
    end_stream_locked(sub, true);
    pthread_mutex_unlock(&sub->lock);
    return NULL;
}

/* ------------------------------------------------------------------------
 * The public API
 * ------------------------------------------------------------------------ */

/* obj[key] = the n strings of list, when there are any; false when one
 * is NULL or not UTF-8 (or memory ran out). */
static bool add_strings(json_t *obj, const char *key, const char *const *list, size_t n)
{
    if (n == 0)
        return true;
    json_t *array = json_array();
    if (!array || json_object_set_new(obj, key, array) != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!list[i] || json_array_append_new(array, json_string(list[i])) != 0)
            return false;
    return true;
}

static json_t *filter_params(const mcp_listen_filter_t *f)
{
    json_t *n = json_object();
    json_t *params = json_pack("{s:o}", "notifications", n);
    if (!params)
        return NULL;
    bool ok = true;
    if (f->tools_list_changed)
        ok = ok && json_object_set_new(n, "toolsListChanged", json_true()) == 0;
    if (f->prompts_list_changed)
        ok = ok && json_object_set_new(n, "promptsListChanged", json_true()) == 0;
    if (f->resources_list_changed)
        ok = ok && json_object_set_new(n, "resourcesListChanged", json_true()) == 0;
    ok = ok && add_strings(n, "resourceSubscriptions", f->resource_uris, f->n_resource_uris);
    ok = ok && add_strings(n, "taskIds", f->task_ids, f->n_task_ids);
    if (!ok) {
        json_decref(params);
        return NULL;
    }
    return params;
}

/* Takes sub out of the client's list (if it is there). */
static void unlink_subscription(mcp_subscription_t *sub)
{
    mcp_client_t *c = sub->client;
    pthread_mutex_lock(&c->lock);
    for (mcp_subscription_t **p = &c->subs; *p; p = &(*p)->next)
        if (*p == sub) {
            *p = sub->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
}

/* A legacy server has no listen stream: the subscription is acknowledged
 * at once with what the server's capabilities promise, and the session's
 * notifications reach it through client_listen_deliver(). It is listed
 * before resources/subscribe goes out: the first update may follow the
 * answer at once. */
static int open_legacy(mcp_subscription_t *sub, mcp_error_t *err)
{
    mcp_client_t *c = sub->client;
    json_t *honoured = client_legacy_listen_honoured(c, sub->params);
    if (!honoured)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    pthread_mutex_lock(&sub->lock);
    sub->honoured = honoured;
    sub->state = STREAM_ACKED;
    pthread_mutex_unlock(&sub->lock);
    pthread_mutex_lock(&c->lock);
    sub->next = c->subs;
    c->subs = sub;
    pthread_mutex_unlock(&c->lock);
    int rc = client_legacy_listen_subscribe(c, honoured, err);
    if (rc != MCP_OK)
        unlink_subscription(sub);
    return rc;
}

void client_listen_deliver(mcp_client_t *c, const char *method, const json_t *params)
{
    bool overflow = false;
    pthread_mutex_lock(&c->lock);
    for (mcp_subscription_t *sub = c->subs; sub; sub = sub->next) {
        pthread_mutex_lock(&sub->lock);
        if (sub->state == STREAM_ACKED && !sub->closing && sub->fn &&
            client_legacy_filter_matches(sub->honoured, method, params))
            overflow |= queue_event_locked(sub, method, params);
        pthread_mutex_unlock(&sub->lock);
    }
    pthread_mutex_unlock(&c->lock);
    if (overflow)
        warn_overflow(c);
}

json_t *client_listen_filters(mcp_client_t *c, const mcp_subscription_t *except)
{
    json_t *filters = json_array();
    pthread_mutex_lock(&c->lock);
    for (mcp_subscription_t *sub = c->subs; filters && sub; sub = sub->next)
        if (sub != except)
            json_array_append(filters, sub->params);
    pthread_mutex_unlock(&c->lock);
    return filters;
}

static void subscription_free(mcp_subscription_t *sub)
{
    json_decref(sub->params);
    json_decref(sub->end_response);
    json_decref(sub->honoured);
    for (size_t i = 0; sub->events && i < sub->n_events; i++)
        json_decref(sub->events[(sub->head + i) % MCP_LISTEN_MAX_PENDING]);
    free(sub->events);
    pthread_mutex_destroy(&sub->lock);
    pthread_cond_destroy(&sub->cond);
    free(sub);
}

int mcp_client_listen(mcp_client_t *client, const mcp_listen_filter_t *filter,
                      mcp_listen_fn fn, void *user, const mcp_listen_options_t *opts,
                      mcp_subscription_t **sub_out, json_t **honoured_out, mcp_error_t *err)
{
    if (sub_out)
        *sub_out = NULL;
    if (honoured_out)
        *honoured_out = NULL;
    if (!client || !filter || !sub_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client, filter and sub_out are required");
    if (filter->n_task_ids > 0 && !client->tasks)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL,
                             "task ids need the Tasks extension declared (option tasks)");
    if (filter->n_task_ids > 0 && client->legacy)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the legacy protocol this server speaks has no Tasks extension");
    mcp_subscription_t *sub = calloc(1, sizeof *sub);
    if (!sub)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    pthread_mutex_init(&sub->lock, NULL);
    mcp_clock_cond_init(&sub->cond);
    sub->client = client;
    sub->fn = fn;
    sub->user = user;
    sub->no_reopen = opts && opts->no_reopen;
    sub->on_end = opts ? opts->on_end : NULL;
    sub->ack_timeout_ms =
        opts && opts->ack_timeout_ms > 0 ? opts->ack_timeout_ms : client->timeout_ms;
    if (!(sub->events = calloc(MCP_LISTEN_MAX_PENDING, sizeof *sub->events))) {
        subscription_free(sub);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    if (!(sub->params = filter_params(filter))) {
        subscription_free(sub);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a resource URI or task id is NULL or not UTF-8");
    }

    int rc = client->legacy ? open_legacy(sub, err) : open_stream(sub, err);
    if (rc == MCP_OK && pthread_create(&sub->thread, NULL, supervise, sub) != 0) {
        pthread_mutex_lock(&sub->lock);
        end_stream_locked(sub, true);
        pthread_mutex_unlock(&sub->lock);
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "cannot start the subscription thread");
    }
    if (rc != MCP_OK) {
        unlink_subscription(sub);
        subscription_free(sub);
        return rc;
    }
    sub->has_thread = true;
    if (honoured_out) {
        pthread_mutex_lock(&sub->lock);
        *honoured_out = json_deep_copy(sub->honoured);
        pthread_mutex_unlock(&sub->lock);
    }
    if (!client->legacy) {
        pthread_mutex_lock(&client->lock);
        sub->next = client->subs;
        client->subs = sub;
        pthread_mutex_unlock(&client->lock);
    }
    *sub_out = sub;
    return MCP_OK;
}

uint64_t mcp_subscription_dropped(mcp_subscription_t *sub)
{
    if (!sub)
        return 0;
    pthread_mutex_lock(&sub->lock);
    uint64_t dropped = sub->dropped;
    pthread_mutex_unlock(&sub->lock);
    return dropped;
}

void mcp_subscription_close(mcp_subscription_t *sub)
{
    if (!sub)
        return;
    mcp_client_t *c = sub->client;
    unlink_subscription(sub);

    pthread_mutex_lock(&sub->lock);
    sub->closing = true;
    pthread_cond_broadcast(&sub->cond);
    pthread_mutex_unlock(&sub->lock);
    if (sub->has_thread)
        pthread_join(sub->thread, NULL);
    if (c->legacy) {
        json_t *others = client_listen_filters(c, sub);
        client_legacy_listen_close(c, sub->params, others);
        json_decref(others);
    }
    subscription_free(sub);
}

void client_close_subscriptions(mcp_client_t *c)
{
    for (;;) {
        pthread_mutex_lock(&c->lock);
        mcp_subscription_t *sub = c->subs;
        pthread_mutex_unlock(&c->lock);
        if (!sub)
            return;
        mcp_subscription_close(sub);
    }
}
