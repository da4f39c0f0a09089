/*
 * subscriptions/listen: long-lived streams of list-changed,
 * resource-updated and (Tasks extension) task status notifications (digest
 * section 2.10).
 *
 * A listen request becomes a subscription in the hub: its exchange stays
 * open, the acknowledgement is the first message it sends, and every event
 * the bus delivers is forwarded, tagged with the subscription id (the listen
 * request's id), to the streams whose filter asks for it.
 *
 * A stream ends three ways:
 *   - the client goes away (HTTP stream closed, stdio notifications/
 *     cancelled naming the listen id): the exchange is cancelled and the
 *     subscription dropped without a word;
 *   - the server closes it (mcp_server_close_subscriptions, shutdown): the
 *     listen request gets its result ({"resultType":"complete"} with the
 *     subscription id in _meta), which ends the stream. That is the
 *     graceful end the schema defines; libmcp does not also send a
 *     notifications/cancelled on stdio (the digest, section 14.1, allows
 *     either and clients must accept both);
 *   - the transport breaks: as for a client that went away.
 *
 * Memory: an idle stream costs one exchange and one small subscription
 * record; no thread waits per stream.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

typedef struct subscription {
    mcp_exchange_t *ex; /* the core's reference to the listen request */
    bool tools, prompts, resources;
    json_t *uris;       /* resourceSubscriptions: array of strings */
    json_t *task_ids;   /* taskIds (Tasks extension): array of strings */
    bool linked;        /* in the hub's list (guarded by the hub lock) */
    struct subscription *prev, *next;
} subscription_t;

/* A legacy session listening the legacy way: every list change, and the
 * resources it subscribed to, as untagged notifications. */
typedef struct session_link {
    mcp_session_t *session; /* reference */
    struct session_link *next;
} session_link_t;

struct listen_hub {
    pthread_mutex_t lock;
    subscription_t *head;
    size_t count;
    size_t max, max_per_principal; /* mcp_server_options_t.max_listen_streams* */
    session_link_t *sessions;
};

static void send_listen_result(mcp_exchange_t *ex);

struct listen_hub *listen_hub_new(size_t max, size_t max_per_principal)
{
    struct listen_hub *hub = calloc(1, sizeof *hub);
    if (!hub)
        return NULL;
    pthread_mutex_init(&hub->lock, NULL);
    hub->max = max;
    hub->max_per_principal = max_per_principal;
    return hub;
}

/* Is there room for one more stream of `principal`? (hub->lock held.) A
 * walk over the streams: there are at most hub->max of them, and opening
 * one is rare next to what each delivers. */
static bool has_room_locked(const struct listen_hub *hub, const char *principal)
{
    if (hub->count >= hub->max)
        return false;
    if (!principal)
        return true; /* unauthenticated callers cannot be told apart */
    size_t theirs = 0;
    for (const subscription_t *s = hub->head; s; s = s->next)
        if (task_principal_equal(s->ex->principal, principal) && ++theirs >= hub->max_per_principal)
            return false;
    return true;
}

void listen_hub_free(struct listen_hub *hub)
{
    if (!hub)
        return;
    listen_close_all(hub);
    while (hub->sessions) {
        session_link_t *l = hub->sessions;
        hub->sessions = l->next;
        session_unref(l->session);
        free(l);
    }
    pthread_mutex_destroy(&hub->lock);
    free(hub);
}

static void unlink_locked(struct listen_hub *hub, subscription_t *sub)
{
    if (!sub->linked)
        return;
    sub->linked = false;
    if (sub->prev)
        sub->prev->next = sub->next;
    else if (hub->head == sub)
        hub->head = sub->next;
    if (sub->next)
        sub->next->prev = sub->prev;
    sub->prev = sub->next = NULL;
    hub->count--;
}

static void subscription_free(subscription_t *sub)
{
    json_decref(sub->uris);
    json_decref(sub->task_ids);
    free(sub);
}

/* ------------------------------------------------------------------------
 * Delivery
 * ------------------------------------------------------------------------ */

/* The length of the "scheme://authority" that starts `uri` (RFC 3986: a
 * scheme, "//", then up to the first "/", "?" or "#"), or 0 when `uri`
 * has no authority (an opaque "urn:x", a bare "test:"). */
static size_t authority_end(const char *uri)
{
    size_t i = 0;
    if (!isalpha((unsigned char)uri[0]))
        return 0;
    while (isalnum((unsigned char)uri[i]) || uri[i] == '+' || uri[i] == '-' || uri[i] == '.')
        i++;
    if (strncmp(uri + i, "://", 3) != 0)
        return 0;
    i += 3;
    while (uri[i] && uri[i] != '/' && uri[i] != '?' && uri[i] != '#')
        i++;
    return i;
}

/* Does an update of `uri` concern a subscription to `subscribed`? The
 * same resource, or a sub-resource of it (the spec allows updates of a
 * child to be reported under the subscription of its parent). A plain
 * prefix would make "test:" or "file:///" a wildcard over every resource
 * of the scheme, and so tell any client the URIs of everyone's updated
 * resources: a sub-resource is a path below a subscribed URI that has an
 * authority ("scheme://host", "file:///dir"), without query or fragment,
 * and names more than a scheme's root; the path continues at a segment
 * boundary ("/"). */
static bool uri_covered(const char *subscribed, const char *uri)
{
    if (strcmp(subscribed, uri) == 0)
        return true;
    size_t n = strlen(subscribed);
    if (strncmp(subscribed, uri, n) != 0)
        return false;
    size_t end = authority_end(subscribed);
    if (end == 0 || strcspn(subscribed, "?#") < n)
        return false;
    size_t scheme_end = (size_t)(strchr(subscribed, ':') - subscribed) + 3; /* after "://" */
    if (end == scheme_end && n <= end + 1)
        return false; /* "test://" or "file:///": no authority, no path */
    return uri[n] == '/' || subscribed[n - 1] == '/';
}

static bool has_string(const json_t *array, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v) {
        if (s && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

static bool wants(const subscription_t *sub, const server_event_t *ev)
{
    switch (ev->kind) {
    case SERVER_EVENT_TASK_CHANGED:
        /* A task is its principal's only, on a stream as on tasks/get. */
        return has_string(sub->task_ids, ev->task_id) &&
               task_principal_equal(sub->ex->principal, ev->principal);
    case SERVER_EVENT_TOOLS_CHANGED:
        return sub->tools;
    case SERVER_EVENT_PROMPTS_CHANGED:
        return sub->prompts;
    case SERVER_EVENT_RESOURCES_CHANGED:
        return sub->resources;
    case SERVER_EVENT_RESOURCE_UPDATED: {
        size_t i;
        json_t *u;
        json_array_foreach(sub->uris, i, u) {
            if (ev->uri && uri_covered(json_string_value(u), ev->uri))
                return true;
        }
        return false;
    }
    }
    return false;
}

static const char *notification_method(server_event_kind_t kind)
{
    switch (kind) {
    case SERVER_EVENT_TOOLS_CHANGED:
        return "notifications/tools/list_changed";
    case SERVER_EVENT_PROMPTS_CHANGED:
        return "notifications/prompts/list_changed";
    case SERVER_EVENT_RESOURCES_CHANGED:
        return "notifications/resources/list_changed";
    case SERVER_EVENT_RESOURCE_UPDATED:
        return "notifications/resources/updated";
    case SERVER_EVENT_TASK_CHANGED:
        return "notifications/tasks";
    }
    return NULL;
}

static json_t *tagged_params(const mcp_exchange_t *ex)
{
    return json_pack("{s:{s:O}}", "_meta", MCP_META_SUBSCRIPTION_ID, ex->msg.id);
}

void listen_hub_add_session(struct listen_hub *hub, mcp_session_t *s)
{
    session_link_t *l = calloc(1, sizeof *l);
    if (!l)
        return;
    session_ref(s);
    l->session = s;
    pthread_mutex_lock(&hub->lock);
    l->next = hub->sessions;
    hub->sessions = l;
    pthread_mutex_unlock(&hub->lock);
}

void listen_hub_remove_session(struct listen_hub *hub, mcp_session_t *s)
{
    session_link_t *gone = NULL;
    pthread_mutex_lock(&hub->lock);
    for (session_link_t **link = &hub->sessions; *link; link = &(*link)->next) {
        if ((*link)->session == s) {
            gone = *link;
            *link = gone->next;
            break;
        }
    }
    pthread_mutex_unlock(&hub->lock);
    if (gone) {
        session_unref(gone->session);
        free(gone);
    }
}

/* Does a legacy session want this event? List changes always (the server
 * declares listChanged); resource updates for its subscriptions. */
static bool session_wants(mcp_session_t *s, const server_event_t *ev)
{
    if (ev->kind == SERVER_EVENT_TASK_CHANGED)
        return false; /* tasks are a 2026-07-28 extension */
    if (ev->kind != SERVER_EVENT_RESOURCE_UPDATED)
        return true;
    bool wanted = false;
    pthread_mutex_lock(&s->lock);
    size_t i;
    json_t *u;
    json_array_foreach(s->subscriptions, i, u) {
        if (ev->uri && uri_covered(json_string_value(u), ev->uri))
            wanted = true;
    }
    pthread_mutex_unlock(&s->lock);
    return wanted;
}

static void deliver_to_sessions(struct listen_hub *hub, const server_event_t *ev)
{
    pthread_mutex_lock(&hub->lock);
    size_t n = 0;
    for (session_link_t *l = hub->sessions; l; l = l->next)
        n++;
    mcp_session_t **targets = n ? calloc(n, sizeof *targets) : NULL;
    size_t k = 0;
    for (session_link_t *l = hub->sessions; l && targets; l = l->next) {
        session_ref(l->session);
        targets[k++] = l->session;
    }
    pthread_mutex_unlock(&hub->lock);
    for (size_t i = 0; i < k; i++) {
        if (session_wants(targets[i], ev)) {
            json_t *params = ev->kind == SERVER_EVENT_RESOURCE_UPDATED
                                 ? json_pack("{s:s}", "uri", ev->uri)
                                 : NULL;
            session_push(targets[i],
                         mcp_jsonrpc_notification(notification_method(ev->kind), params));
        }
        session_unref(targets[i]);
    }
    free(targets);
}

void listen_hub_deliver(void *user, const server_event_t *ev)
{
    struct listen_hub *hub = user;
    deliver_to_sessions(hub, ev);
    /* Collect the matching streams under the lock, send outside it: a slow
     * stream must not hold up the others or the publisher's registry. */
    pthread_mutex_lock(&hub->lock);
    mcp_exchange_t **targets = hub->count ? calloc(hub->count, sizeof *targets) : NULL;
    size_t n = 0;
    for (subscription_t *sub = hub->head; sub && targets; sub = sub->next) {
        if (wants(sub, ev)) {
            exchange_ref(sub->ex);
            targets[n++] = sub->ex;
        }
    }
    pthread_mutex_unlock(&hub->lock);

    for (size_t i = 0; i < n; i++) {
        json_t *params = tagged_params(targets[i]);
        if (params && ev->kind == SERVER_EVENT_RESOURCE_UPDATED)
            json_object_set_new(params, "uri", json_string(ev->uri));
        if (params && ev->kind == SERVER_EVENT_TASK_CHANGED)
            json_object_update(params, (json_t *)ev->task); /* the DetailedTask */
        exchange_notify(targets[i], mcp_jsonrpc_notification(notification_method(ev->kind), params));
        exchange_unref(targets[i]);
    }
    free(targets);
}

/* ------------------------------------------------------------------------
 * Opening and ending streams
 * ------------------------------------------------------------------------ */

/* The client went away: drop the subscription silently. */
static void listen_cancelled(mcp_exchange_t *ex)
{
    subscription_t *sub = ex->listen;
    struct listen_hub *hub = ex->srv->hub;
    pthread_mutex_lock(&hub->lock);
    unlink_locked(hub, sub);
    pthread_mutex_unlock(&hub->lock);
    subscription_free(sub);
    exchange_release_sink(ex);
    exchange_unref(ex);
}

/* taskIds (Tasks extension): an array of task ids. */
static bool read_task_ids(const json_t *ids, subscription_t *sub, mcp_error_t *err)
{
    sub->task_ids = json_array();
    if (!ids)
        return true;
    size_t i;
    json_t *id;
    bool ok = json_is_array(ids);
    json_array_foreach(ids, i, id) {
        ok = ok && json_is_string(id) && json_string_length(id) > 0 &&
             strlen(json_string_value(id)) == json_string_length(id);
        if (ok)
            json_array_append(sub->task_ids, id);
    }
    if (!ok)
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "notifications.taskIds must be an array of task ids");
    return ok;
}

/* Reads the client's filter. Returns false with *err for a malformed one. */
static bool read_filter(const json_t *filter, subscription_t *sub, mcp_error_t *err)
{
    if (!json_is_object(filter)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "params.notifications must be an object");
        return false;
    }
    static const char *const flags[] = {"toolsListChanged", "promptsListChanged",
                                        "resourcesListChanged"};
    bool *targets[] = {&sub->tools, &sub->prompts, &sub->resources};
    for (size_t i = 0; i < 3; i++) {
        const json_t *v = json_object_get(filter, flags[i]);
        if (v && !json_is_boolean(v)) {
            mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                          "notifications.%s must be a boolean", flags[i]);
            return false;
        }
        *targets[i] = json_is_true(v);
    }
    const json_t *uris = json_object_get(filter, "resourceSubscriptions");
    sub->uris = json_array();
    if (uris) {
        size_t i;
        json_t *u;
        if (!json_is_array(uris)) {
            mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                          "notifications.resourceSubscriptions must be an array of URIs");
            return false;
        }
        json_array_foreach(uris, i, u) {
            /* Matching compares C strings: a URI with a NUL inside would
             * be cut short, so it is refused like an empty one. */
            if (!json_is_string(u) || json_string_length(u) == 0 ||
                strlen(json_string_value(u)) != json_string_length(u)) {
                mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                              "notifications.resourceSubscriptions must be an array of URIs");
                return false;
            }
            json_array_append(sub->uris, u);
        }
    }
    return read_task_ids(json_object_get(filter, "taskIds"), sub, err);
}

/* Honours only what this server offers; the acknowledgement tells the
 * client which part of its filter that is. */
static json_t *honour(mcp_server_t *srv, subscription_t *sub, const char *principal)
{
    bool has_resources = registry_has(srv, ENTRY_RESOURCE) || registry_has(srv, ENTRY_TEMPLATE);
    sub->tools = sub->tools && registry_has(srv, ENTRY_TOOL);
    sub->prompts = sub->prompts && registry_has(srv, ENTRY_PROMPT);
    sub->resources = sub->resources && has_resources;
    /* Only URIs that name a resource resources/read serves: anything
     * else is no subscription to honour, and could only serve to watch
     * what others' resources are called. The acknowledgement leaves them
     * out. */
    json_t *known = json_array();
    size_t k;
    json_t *uri;
    json_array_foreach(sub->uris, k, uri) {
        if (has_resources && registry_resource_known(srv, json_string_value(uri)))
            json_array_append(known, uri);
    }
    json_decref(sub->uris);
    sub->uris = known;

    json_t *honoured = json_object();
    if (sub->tools)
        json_object_set_new(honoured, "toolsListChanged", json_true());
    if (sub->prompts)
        json_object_set_new(honoured, "promptsListChanged", json_true());
    if (sub->resources)
        json_object_set_new(honoured, "resourcesListChanged", json_true());
    if (json_array_size(sub->uris))
        json_object_set(honoured, "resourceSubscriptions", sub->uris);
    /* Tasks that exist and are the client's: telling it which do, and no
     * more, says nothing about anybody else's. */
    json_t *visible = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(sub->task_ids, i, id) {
        if (task_visible(srv, json_string_value(id), principal))
            json_array_append(visible, id);
    }
    json_decref(sub->task_ids);
    sub->task_ids = visible;
    if (json_array_size(sub->task_ids))
        json_object_set(honoured, "taskIds", sub->task_ids);
    return honoured;
}

void listen_open(mcp_server_t *srv, mcp_exchange_t *ex)
{
    mcp_error_t err = {0};
    subscription_t *sub = calloc(1, sizeof *sub);
    if (!sub) {
        mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        goto fail;
    }
    if (!read_filter(json_object_get(ex->msg.params, "notifications"), sub, &err))
        goto fail;
    if (json_array_size(sub->task_ids) && atomic_load(&srv->tasks_offered) &&
        !task_client_declares(ex->client_caps)) {
        /* The extension's MUST: task notifications for declaring clients
         * only. (A server without tasks ignores the member, as any other
         * it does not know.) */
        mcp_error_missing_capability(&err, task_required_capabilities());
        goto fail;
    }
    json_t *ack_params = tagged_params(ex);
    json_t *honoured = honour(srv, sub, ex->principal);
    json_object_set_new(ack_params, "notifications", honoured);
    json_t *ack = mcp_jsonrpc_notification("notifications/subscriptions/acknowledged", ack_params);

    sub->ex = ex;
    ex->listen = sub;

    /* Once linked, the stream may be ended by another thread (the server
     * closing it drops the core's reference): hold one of our own. */
    exchange_ref(ex);
    /* The acknowledgement must be the stream's first message: hold the
     * send lock while the subscription becomes visible to publishers, so
     * any event they deliver waits until the ack is out. */
    pthread_mutex_lock(&ex->send_lock);
    struct listen_hub *hub = srv->hub;
    pthread_mutex_lock(&hub->lock);
    if (!has_room_locked(hub, ex->principal)) {
        pthread_mutex_unlock(&hub->lock);
        pthread_mutex_unlock(&ex->send_lock);
        json_decref(ack);
        ex->listen = NULL;
        exchange_unref(ex); /* ours, taken above */
        /* As for tasks: a bound of the server's, not a fault of the
         * request; the client may try again once streams have ended. */
        mcp_error_set(&err, MCP_ELIMIT, MCP_INTERNAL_ERROR, NULL,
                      "Server busy: too many subscriptions; try again later");
        goto fail;
    }
    sub->next = hub->head;
    if (hub->head)
        hub->head->prev = sub;
    hub->head = sub;
    hub->count++;
    sub->linked = true;
    pthread_mutex_unlock(&hub->lock);
    int rc = ack ? ex->sink->send(ex->sink, MCP_OUT_NOTIFICATION, ack, 0) : -1;
    pthread_mutex_unlock(&ex->send_lock);
    json_decref(ack);

    /* Only now, with the record linked, may a cancellation end the stream
     * (and free the record). One that came earlier found no handler: it is
     * caught up here, as is a client that left before the ack. */
    pthread_mutex_lock(&ex->wait_lock);
    ex->on_cancel = listen_cancelled;
    bool cancelled = atomic_load(&ex->cancelled);
    pthread_mutex_unlock(&ex->wait_lock);
    if (rc < 0 || cancelled)
        exchange_cancel(ex);
    exchange_unref(ex);
    return;
fail:
    if (sub)
        subscription_free(sub);
    exchange_fail(ex, &err, false);
    mcp_error_clear(&err);
    exchange_unref(ex);
}

void listen_close_all(struct listen_hub *hub)
{
    if (!hub)
        return;
    /* Detach every stream under the lock, keeping a reference to each
     * exchange. The subscription records belong to whoever ends the
     * stream -- here, or a client cancellation racing with us, which may
     * free its record as soon as the lock is released -- so only the
     * exchanges are kept, and a record is read only once it is ours. */
    pthread_mutex_lock(&hub->lock);
    size_t n = hub->count;
    mcp_exchange_t **streams = n ? calloc(n, sizeof *streams) : NULL;
    size_t k = 0;
    while (hub->head && streams) {
        subscription_t *sub = hub->head;
        exchange_ref(sub->ex);
        streams[k++] = sub->ex;
        unlink_locked(hub, sub);
    }
    pthread_mutex_unlock(&hub->lock);

    for (size_t i = 0; i < k; i++) {
        mcp_exchange_t *ex = streams[i];
        if (!atomic_exchange(&ex->cancel_handled, true)) {
            send_listen_result(ex);
            subscription_free(ex->listen);
            exchange_unref(ex); /* the core's reference to the listen request */
        }
        /* else: a cancellation won; it frees the record. */
        exchange_unref(ex);
    }
    free(streams);
}

/* The graceful end of one stream: its result closes it. */
static void send_listen_result(mcp_exchange_t *ex)
{
    json_t *result = json_pack("{s:s, s:{s:O}}", "resultType", "complete", "_meta",
                               MCP_META_SUBSCRIPTION_ID, ex->msg.id);
    mcp_result_shape_t shape;
    server_result_shape(ex->srv, &shape);
    mcp_shape_modern_result(ex->msg.method, result, &shape, NULL);
    exchange_finish(ex, mcp_jsonrpc_result(ex->msg.id, result), 200);
}

void listen_close_one(mcp_exchange_t *ex)
{
    subscription_t *sub = ex ? ex->listen : NULL;
    /* Whoever flips cancel_handled owns the record: a client cancellation
     * that got here first has freed it already. */
    if (!sub || atomic_exchange(&ex->cancel_handled, true))
        return;
    struct listen_hub *hub = ex->srv->hub;
    pthread_mutex_lock(&hub->lock);
    unlink_locked(hub, sub);
    pthread_mutex_unlock(&hub->lock);
    send_listen_result(ex);
    subscription_free(sub);
    exchange_unref(ex); /* the core's reference to the listen request */
}

size_t listen_count(mcp_server_t *srv)
{
    struct listen_hub *hub = srv->hub;
    pthread_mutex_lock(&hub->lock);
    size_t n = hub->count;
    pthread_mutex_unlock(&hub->lock);
    return n;
}

void mcp_exchange_end_stream(mcp_exchange_t *ex)
{
    listen_close_one(ex);
}

int mcp_server_close_subscriptions(mcp_server_t *srv)
{
    if (!srv)
        return MCP_EINVAL;
    listen_close_all(srv->hub);
    return MCP_OK;
}
