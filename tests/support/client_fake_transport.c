/* A scripted client transport for unit tests; see client_fake_transport.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client_fake_transport.h"
#include "mcp/jsonrpc.h"

struct client_exchange {
    client_exchange_t *next;
    json_int_t id;
    client_exchange_events_t ev;
    void *user;
    bool done;
    bool released;
};

struct fake_transport {
    client_transport_t base; /* must stay first */
    fake_responder_fn responder;
    void *user;
    pthread_mutex_t lock;
    client_exchange_t *exchanges;
    json_t *requests, *hints, *cancels, *notes;
};

static client_exchange_t *find(fake_transport_t *ft, json_int_t id)
{
    for (client_exchange_t *ex = ft->exchanges; ex; ex = ex->next)
        if (ex->id == id && !ex->done)
            return ex;
    return NULL;
}

static void finish(client_exchange_t *ex, json_t *response, int rc)
{
    client_outcome_t outcome = {.response = response, .rc = response ? MCP_OK : rc,
                                .why = response ? NULL : "fake transport"};
    ex->ev.on_done(ex->user, &outcome);
    json_decref(outcome.response);
}

static json_t *hints_json(const client_http_hints_t *h)
{
    json_t *params = json_object();
    for (size_t i = 0; i < h->n_params; i++)
        json_object_set_new(params, h->params[i].name, json_string(h->params[i].value));
    json_t *j = json_pack("{s:s?, s:s?, s:o, s:b}", "version", h->protocol_version, "method",
                          h->method, "params", params, "long_lived", h->long_lived);
    if (h->name)
        json_object_set_new(j, "name", json_string(h->name));
    return j;
}

static int op_start(client_transport_t *base, const json_t *request,
                    const client_http_hints_t *hints, const client_exchange_events_t *ev,
                    void *user, client_exchange_t **out)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    client_exchange_t *ex = calloc(1, sizeof *ex);
    ex->id = fake_id(request);
    ex->ev = *ev;
    ex->user = user;
    pthread_mutex_lock(&ft->lock);
    ex->next = ft->exchanges;
    ft->exchanges = ex;
    json_array_append(ft->requests, (json_t *)request);
    json_array_append_new(ft->hints, hints_json(hints));
    pthread_mutex_unlock(&ft->lock);
    *out = ex;
    json_t *response = ft->responder(ft->user, ft, request);
    if (response)
        fake_finish(ft, ex->id, response, MCP_OK);
    return MCP_OK;
}

static void op_cancel(client_transport_t *base, client_exchange_t *ex, bool notify_peer)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    pthread_mutex_lock(&ft->lock);
    bool was = !ex->done;
    ex->done = true;
    json_array_append_new(ft->cancels, json_pack("{s:I, s:b}", "id", (json_int_t)ex->id,
                                                 "notify", notify_peer));
    pthread_mutex_unlock(&ft->lock);
    if (was)
        finish(ex, NULL, MCP_ECANCELED);
}

static void op_release(client_transport_t *base, client_exchange_t *ex)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    pthread_mutex_lock(&ft->lock);
    ex->released = true;
    pthread_mutex_unlock(&ft->lock);
}

static int op_notify(client_transport_t *base, const json_t *n, const client_http_hints_t *h)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    pthread_mutex_lock(&ft->lock);
    json_array_append(ft->notes, (json_t *)n);
    pthread_mutex_unlock(&ft->lock);
    return MCP_OK;
}

static void op_close(client_transport_t *base)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    for (;;) {
        pthread_mutex_lock(&ft->lock);
        client_exchange_t *ex = ft->exchanges;
        while (ex && ex->done)
            ex = ex->next;
        if (ex)
            ex->done = true;
        pthread_mutex_unlock(&ft->lock);
        if (!ex)
            return;
        finish(ex, NULL, MCP_ECLOSED);
    }
}

static void op_free(client_transport_t *base)
{
    fake_transport_t *ft = (fake_transport_t *)base;
    for (client_exchange_t *ex = ft->exchanges, *next; ex; ex = next) {
        next = ex->next;
        free(ex);
    }
    json_decref(ft->requests);
    json_decref(ft->hints);
    json_decref(ft->cancels);
    json_decref(ft->notes);
    pthread_mutex_destroy(&ft->lock);
    free(ft);
}

static const client_transport_ops_t fake_ops = {
    .start = op_start,
    .cancel = op_cancel,
    .release = op_release,
    .notify = op_notify,
    .close = op_close,
    .free = op_free,
};

fake_transport_t *fake_transport_new(mcp_client_t *client, fake_responder_fn responder,
                                     void *user)
{
    fake_transport_t *ft = calloc(1, sizeof *ft);
    ft->base.ops = &fake_ops;
    ft->base.hooks = client_transport_hooks(client);
    ft->responder = responder;
    ft->user = user;
    pthread_mutex_init(&ft->lock, NULL);
    ft->requests = json_array();
    ft->hints = json_array();
    ft->cancels = json_array();
    ft->notes = json_array();
    return ft;
}

client_transport_t *fake_transport_base(fake_transport_t *ft)
{
    return &ft->base;
}

fake_transport_t *fake_transport_connect(mcp_client_t *client, fake_responder_fn responder,
                                         void *user)
{
    fake_transport_t *ft = fake_transport_new(client, responder, user);
    if (!ft || client_connect_transport(client, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                        NULL) != MCP_OK)
        return NULL;
    return ft;
}

bool fake_emit(fake_transport_t *ft, json_int_t id, const json_t *msg)
{
    pthread_mutex_lock(&ft->lock);
    client_exchange_t *ex = find(ft, id);
    pthread_mutex_unlock(&ft->lock);
    if (ex && ex->ev.on_notification)
        ex->ev.on_notification(ex->user, msg);
    return ex != NULL;
}

bool fake_finish(fake_transport_t *ft, json_int_t id, json_t *response_new, int rc)
{
    pthread_mutex_lock(&ft->lock);
    client_exchange_t *ex = find(ft, id);
    if (ex)
        ex->done = true;
    pthread_mutex_unlock(&ft->lock);
    if (!ex) {
        json_decref(response_new);
        return false;
    }
    finish(ex, response_new, rc);
    return true;
}

void fake_unrouted(fake_transport_t *ft, const json_t *msg)
{
    if (ft->base.hooks.on_unrouted)
        ft->base.hooks.on_unrouted(ft->base.hooks.user, msg);
}

static json_t *copy_of(fake_transport_t *ft, json_t *a)
{
    pthread_mutex_lock(&ft->lock);
    json_t *copy = json_deep_copy(a);
    pthread_mutex_unlock(&ft->lock);
    return copy;
}

json_t *fake_requests(fake_transport_t *ft) { return copy_of(ft, ft->requests); }
json_t *fake_hints(fake_transport_t *ft) { return copy_of(ft, ft->hints); }
json_t *fake_cancels(fake_transport_t *ft) { return copy_of(ft, ft->cancels); }
json_t *fake_notes(fake_transport_t *ft) { return copy_of(ft, ft->notes); }

size_t fake_outstanding(fake_transport_t *ft)
{
    size_t n = 0;
    pthread_mutex_lock(&ft->lock);
    for (client_exchange_t *ex = ft->exchanges; ex; ex = ex->next)
        n += !ex->released;
    pthread_mutex_unlock(&ft->lock);
    return n;
}

json_t *fake_discover_result(void)
{
    return json_pack("{s:s, s:[s], s:{s:{}, s:{s:b}, s:{}}, s:{s:{s:s, s:s}}, s:i, s:s}",
                     "resultType", "complete", "supportedVersions", "2026-07-28",
                     "capabilities", "tools", "resources", "subscribe", 1, "prompts",
                     "_meta", "io.modelcontextprotocol/serverInfo", "name", "fake", "version",
                     "1", "ttlMs", 0, "cacheScope", "private");
}

json_t *fake_result(const json_t *request, json_t *result_new)
{
    return mcp_jsonrpc_result(json_object_get(request, "id"), result_new);
}

json_t *fake_error(const json_t *request, int code, const char *message, json_t *data_new)
{
    return mcp_jsonrpc_error(json_object_get(request, "id"), code, message, data_new);
}

json_t *fake_requests_of(fake_transport_t *ft, const char *method)
{
    json_t *all = fake_requests(ft), *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
        if (strcmp(fake_method(r), method) == 0)
            json_array_append(out, r);
    json_decref(all);
    return out;
}

size_t fake_count(fake_transport_t *ft, const char *method)
{
    json_t *r = fake_requests_of(ft, method);
    size_t n = json_array_size(r);
    json_decref(r);
    return n;
}

const char *fake_method(const json_t *request)
{
    return json_string_value(json_object_get(request, "method"));
}

json_t *fake_params(const json_t *request)
{
    return json_object_get(request, "params");
}

json_int_t fake_id(const json_t *request)
{
    return json_integer_value(json_object_get(request, "id"));
}
