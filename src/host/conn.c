/*
 * One connection of the host to a server: a client whose callbacks are the
 * host's (told the server's name), its listen subscription, and the
 * reference count that keeps it alive while calls still use it after the
 * server has moved on to a new connection.
 *
 * The client's callbacks run on its threads. The input and notification
 * ones go straight to the user; the ones about the connection itself (a
 * list changed, the connection ended, the subscription ended) only record
 * an event for the server's supervisor and wake it: the supervisor acts,
 * so that no client thread ever waits on a client call or frees its own
 * client.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_internal.h"

/* ------------------------------------------------------------------------
 * The client's callbacks
 * ------------------------------------------------------------------------ */

static int on_elicit(void *user, const json_t *params, json_t **result_out)
{
    host_conn_t *conn = user;
    const mcp_host_callbacks_t *cb = &conn->host->cb;
    return cb->elicit(cb->user, conn->name, params, result_out);
}

static int on_sample(void *user, const json_t *params, json_t **result_out)
{
    host_conn_t *conn = user;
    const mcp_host_callbacks_t *cb = &conn->host->cb;
    return cb->sample(cb->user, conn->name, params, result_out);
}

static int on_roots(void *user, json_t **result_out)
{
    host_conn_t *conn = user;
    const mcp_host_callbacks_t *cb = &conn->host->cb;
    return cb->roots(cb->user, conn->name, result_out);
}

static void on_log(void *user, const char *level, const char *logger, const json_t *data)
{
    host_conn_t *conn = user;
    const mcp_host_callbacks_t *cb = &conn->host->cb;
    cb->log(cb->user, conn->name, level, logger, data);
}

static void on_progress(void *user, double progress, double total, const char *message)
{
    host_conn_t *conn = user;
    const mcp_host_callbacks_t *cb = &conn->host->cb;
    cb->progress(cb->user, conn->name, progress, total, message);
}

static void on_stderr(void *user, const char *line)
{
    host_conn_t *conn = user;
    host_log(conn->host, MCP_LOG_DEBUG, "server \"%s\" says: %s", conn->name, line);
}

static void on_closed(void *user, int rc, const char *why)
{
    host_conn_t *conn = user;
    mcp_host_t *h = conn->host;
    pthread_mutex_lock(&h->lock);
    snprintf(conn->lost_why, sizeof conn->lost_why, "%s", why ? why : mcp_strerror(rc));
    pthread_mutex_unlock(&h->lock);
    host_conn_flag(conn, CONN_LOST);
}

static void on_listen(void *user, const char *method, const json_t *params)
{
    (void)params;
    static const struct {
        const char *method;
        unsigned event;
    } events[] = {
        {"notifications/tools/list_changed", CONN_TOOLS_CHANGED},
        {"notifications/resources/list_changed", CONN_RESOURCES_CHANGED},
        {"notifications/prompts/list_changed", CONN_PROMPTS_CHANGED},
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (strcmp(method, events[i].method) == 0)
            host_conn_flag(user, events[i].event);
}

static void on_listen_end(void *user, int rc)
{
    host_conn_t *conn = user;
    host_log(conn->host, MCP_LOG_INFO, "server \"%s\": the list subscription ended (%s)",
             conn->name, rc == MCP_OK ? "by the server" : mcp_strerror(rc));
    host_conn_flag(conn, CONN_RELISTEN);
}

/* ------------------------------------------------------------------------
 * Opening
 * ------------------------------------------------------------------------ */

void host_conn_listen(host_conn_t *conn)
{
    const json_t *caps = mcp_client_server_capabilities(conn->client);
    mcp_listen_filter_t filter = {
        .tools_list_changed = json_object_get(caps, "tools") != NULL,
        .resources_list_changed = json_object_get(caps, "resources") != NULL,
        .prompts_list_changed = json_object_get(caps, "prompts") != NULL,
    };
    mcp_subscription_close(conn->sub);
    conn->sub = NULL;
    if (!filter.tools_list_changed && !filter.resources_list_changed &&
        !filter.prompts_list_changed)
        return;
    mcp_error_t err = {0};
    if (mcp_client_listen(conn->client, &filter, on_listen, conn,
                          &(mcp_listen_options_t){.on_end = on_listen_end}, &conn->sub, NULL,
                          &err) != MCP_OK)
        host_log(conn->host, MCP_LOG_INFO,
                 "server \"%s\": its lists are fetched only on connect (no list subscription: "
                 "%s)", conn->name, err.message);
    mcp_error_clear(&err);
}

int host_conn_open(host_server_t *s, host_conn_t **out, mcp_error_t *err)
{
    mcp_host_t *h = s->host;
    *out = NULL;
    host_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn || !(conn->name = strdup(s->config.name))) {
        free(conn);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    conn->host = h;
    conn->refs = 1;

    mcp_client_options_t o = h->client;
    mcp_server_config_client_options(&s->config, &o);
    o.previous_verdict = s->has_verdict ? &s->verdict : NULL;
    if (h->cb.elicit) {
        o.elicit = on_elicit;
        o.elicit_modes = h->cb.elicit_modes;
        o.elicit_user = conn;
    }
    if (h->cb.sample) {
        o.sample = on_sample;
        o.sample_user = conn;
    }
    if (h->cb.roots) {
        o.roots = on_roots;
        o.roots_user = conn;
    }
    if (h->cb.log) {
        o.on_log = on_log;
        o.on_log_user = conn;
    }
    o.on_closed = on_closed;
    o.on_closed_user = conn;
    if (!(conn->client = mcp_client_new(&o, err))) {
        free(conn->name);
        free(conn);
        return MCP_ENOMEM; /* mcp_host_new checked the options: memory ran out */
    }
    pthread_mutex_lock(&h->lock);
    conn->server = s;
    conn->next = h->conns;
    h->conns = conn;
    pthread_mutex_unlock(&h->lock);

    int rc = mcp_server_config_connect(&s->config, conn->client,
                                       &(mcp_server_connect_options_t){
                                           .on_stderr = h->client.log ? on_stderr : NULL,
                                           .stderr_user = conn,
                                           .token = s->oauth ? mcp_oauth_token : NULL,
                                           .token_user = s->oauth,
                                           .token_proof = s->oauth && s->config.oauth_dpop
                                                              ? mcp_oauth_proof
                                                              : NULL},
                                       err);
    if (rc != MCP_OK) {
        /* Why the sign-in failed (an ID token file gone, a refusal) says
         * more than the transport failure it caused. */
        if (s->oauth && mcp_oauth_last_error(s->oauth, NULL) != MCP_OK)
            mcp_oauth_last_error(s->oauth, err);
        /* A verdict that no longer fits (the server changed era) would
         * fail every attempt: after an answer that is not a transport
         * failure, the next attempt probes. */
        if (rc != MCP_EIO && rc != MCP_ECLOSED && rc != MCP_ETIMEDOUT)
            s->has_verdict = false;
        pthread_mutex_lock(&h->lock);
        conn->server = NULL;
        pthread_mutex_unlock(&h->lock);
        host_conn_release_here(conn); /* on the supervisor, with no call on it yet */
        return rc;
    }
    s->has_verdict = mcp_client_verdict(conn->client, &s->verdict) == MCP_OK;
    host_conn_listen(conn);
    *out = conn;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Events and references
 * ------------------------------------------------------------------------ */

void host_conn_flag(host_conn_t *conn, unsigned events)
{
    mcp_host_t *h = conn->host;
    pthread_mutex_lock(&h->lock);
    if (conn->server) {
        conn->events |= events;
        pthread_cond_signal(&conn->server->wake);
    }
    pthread_mutex_unlock(&h->lock);
}

void host_conn_ref_locked(host_conn_t *conn)
{
    conn->refs++;
}

void host_conn_free(host_conn_t *conn)
{
    mcp_subscription_close(conn->sub);
    mcp_client_free(conn->client);
    free(conn->name);
    free(conn);
}

/* Drops a reference; host->lock held. True when it was the last one and
 * the connection is now the caller's to free (out of host->conns). */
static bool release_locked(host_conn_t *conn)
{
    mcp_host_t *h = conn->host;
    /* Once mcp_host_free took the list it frees every connection in it,
     * whatever their counts: a call still ending (a callback's, while
     * its client is being freed) must not free one too. */
    if (--conn->refs > 0 || h->freeing)
        return false;
    for (host_conn_t **p = &h->conns; *p; p = &(*p)->next)
        if (*p == conn) {
            *p = conn->next;
            break;
        }
    conn->next = NULL;
    return true;
}

/* Frees what is queued until mcp_host_free says to stop and the queue is
 * empty. */
static void *reap(void *arg)
{
    mcp_host_t *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->reap && !h->reaper_stop)
            pthread_cond_wait(&h->reap_wake, &h->lock);
        host_conn_t *conn = h->reap;
        if (!conn)
            break;
        h->reap = conn->next;
        pthread_mutex_unlock(&h->lock);
        host_conn_free(conn);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

void host_conn_release(host_conn_t *conn)
{
    mcp_host_t *h = conn->host;
    bool no_reaper = false;
    char name[128];
    pthread_mutex_lock(&h->lock);
    if (release_locked(conn)) {
        /* Freeing the client here could wait for this very thread: a
         * legacy client, say, waits for the callbacks it is answering,
         * and a callback's host call may hold the last reference of a
         * connection retired meanwhile (its server removed, or
         * reconnected after a crash). The reaper frees it instead. */
        conn->next = h->reap;
        h->reap = conn;
        if (!h->has_reaper)
            h->has_reaper = pthread_create(&h->reaper, NULL, reap, h) == 0;
        /* Without a thread now, the next release or mcp_host_free frees it. */
        if ((no_reaper = !h->has_reaper))
            snprintf(name, sizeof name, "%s", conn->name);
        pthread_cond_signal(&h->reap_wake);
    }
    pthread_mutex_unlock(&h->lock);
    if (no_reaper) /* told outside the lock: the log is the user's callback */
        host_log(h, MCP_LOG_ERROR, "server \"%s\": cannot start the thread that frees its "
                 "old connection now; it stays up until later", name);
}

void host_conn_release_here(host_conn_t *conn)
{
    mcp_host_t *h = conn->host;
    pthread_mutex_lock(&h->lock);
    bool last = release_locked(conn);
    pthread_mutex_unlock(&h->lock);
    if (last)
        host_conn_free(conn);
}

mcp_request_options_t host_conn_request_options(host_conn_t *conn,
                                                const mcp_request_options_t *opts)
{
    mcp_request_options_t o = opts ? *opts : (mcp_request_options_t){0};
    if (!o.progress && conn->host->cb.progress) {
        o.progress = on_progress;
        o.progress_user = conn;
    }
    return o;
}
