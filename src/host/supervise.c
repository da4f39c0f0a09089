/*
 * One thread per server keeps it connected.
 *
 *            +--------------------------------------------------+
 *            v                                                  |
 *   nap (backoff) --> CONNECTING --> connect, listen, fetch --> FAILED
 *                                          |                    ^
 *                                          v                    |
 *                                        READY --- serve --- lost
 *
 * While READY the thread waits for what the connection reports: a list
 * changed (refetch it and, when it differs, publish it and tell the user
 * once), the listen subscription ended (re-open it after a growing pause
 * and refetch everything: changes may have been missed), a call failed on
 * the transport (ping: only a failed ping means the connection is gone),
 * or the connection ended (a stdio server exited, an HTTP+SSE stream
 * ended). A lost connection is retired -- calls still running on it keep
 * it until they return -- and a new one is made after the backoff: a
 * stdio server is started again, a legacy one gets a new handshake, and
 * the verdict of the first connection spares every later one the probe.
 *
 * Backoff: the first retry waits retry_initial_ms, each further one twice
 * as long, up to retry_max_ms. A connection that stayed up for
 * retry_max_ms starts the sequence over, so a server that crashes now and
 * then comes back quickly while one that crashes on every start is not
 * restarted in a tight loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/host_internal.h"
#include "clock.h"

/* Waits `ms` unless the server is stopped first (or, with `conn`, the
 * connection is lost); host->lock held. Returns false when stopped. */
static bool nap_locked(host_server_t *s, const host_conn_t *conn, int64_t ms)
{
    mcp_host_t *h = s->host;
    if (ms > 0 && !s->stop) {
        struct timespec deadline = mcp_clock_deadline(ms);
        while (!s->stop && !(conn && (conn->events & CONN_LOST)) &&
               pthread_cond_timedwait(&s->wake, &h->lock, &deadline) != ETIMEDOUT)
            ;
    }
    return !s->stop;
}

static int64_t next_delay(const mcp_host_t *h, int64_t delay)
{
    if (delay <= 0)
        return h->retry_initial_ms;
    return delay >= h->retry_max_ms / 2 ? h->retry_max_ms : delay * 2;
}

/* ------------------------------------------------------------------------
 * States, as the user sees them
 * ------------------------------------------------------------------------ */

static void tell_state(host_server_t *s, mcp_host_server_state_t state, const char *error)
{
    const mcp_host_callbacks_t *cb = &s->host->cb;
    if (cb->server_state)
        cb->server_state(cb->user, s->config.name, state, error);
}

static void tell_changed(host_server_t *s)
{
    const mcp_host_callbacks_t *cb = &s->host->cb;
    if (cb->changed)
        cb->changed(cb->user);
}

/* The first attempt is over, and the user has been told how it went:
 * mcp_host_connect may return. */
static void first_attempt_over(host_server_t *s)
{
    mcp_host_t *h = s->host;
    pthread_mutex_lock(&h->lock);
    if (!s->attempted) {
        s->attempted = true;
        pthread_cond_broadcast(&h->attempted);
    }
    pthread_mutex_unlock(&h->lock);
}

/* Each returns false, telling nothing, when the server is being stopped. */

static bool become_connecting(host_server_t *s)
{
    mcp_host_t *h = s->host;
    pthread_mutex_lock(&h->lock);
    bool stop = s->stop, entering = s->state != MCP_HOST_CONNECTING;
    if (!stop) {
        s->state = MCP_HOST_CONNECTING;
        free(s->error);
        s->error = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    if (!stop && entering)
        tell_state(s, MCP_HOST_CONNECTING, NULL);
    return !stop;
}

/* Publishes the connection and its lists (moved into the server). */
static bool become_ready(host_server_t *s, host_conn_t *conn, host_lists_t *lists)
{
    mcp_host_t *h = s->host;
    pthread_mutex_lock(&h->lock);
    bool stop = s->stop;
    if (!stop) {
        s->state = MCP_HOST_READY;
        s->conn = conn;
        host_lists_clear(&s->lists);
        s->lists = *lists;
        memset(lists, 0, sizeof *lists);
    }
    pthread_mutex_unlock(&h->lock);
    if (!stop) {
        tell_state(s, MCP_HOST_READY, NULL);
        tell_changed(s);
        first_attempt_over(s);
    }
    return !stop;
}

/* Unpublishes the connection (if any) and its lists. */
static void become_failed(host_server_t *s, const char *why)
{
    mcp_host_t *h = s->host;
    pthread_mutex_lock(&h->lock);
    bool stop = s->stop, was_ready = s->state == MCP_HOST_READY;
    s->conn = NULL;
    host_lists_clear(&s->lists);
    if (!stop) {
        s->state = MCP_HOST_FAILED;
        free(s->error);
        s->error = strdup(why);
    }
    pthread_mutex_unlock(&h->lock);
    if (!stop) {
        tell_state(s, MCP_HOST_FAILED, why);
        if (was_ready)
            tell_changed(s);
        first_attempt_over(s);
    }
}

/* Drops the supervisor's reference: the connection reports no more. When
 * no call holds it, it is freed (its stdio server stopped) right here;
 * otherwise the reaper frees it after the last call. */
static void retire(host_conn_t *conn)
{
    mcp_host_t *h = conn->host;
    pthread_mutex_lock(&h->lock);
    conn->server = NULL;
    conn->events = 0;
    pthread_mutex_unlock(&h->lock);
    host_conn_release_here(conn);
}

/* ------------------------------------------------------------------------
 * Serving a ready connection
 * ------------------------------------------------------------------------ */

/* Is the server still there? A ping it answers, even with an error, says
 * so; a failure of the transport says it is gone (*why). */
static bool still_there(host_conn_t *conn, char *why, size_t why_size)
{
    mcp_error_t err = {0};
    int rc = mcp_client_ping(conn->client, NULL, &err);
    bool there = rc == MCP_OK || rc == MCP_ERPC;
    if (!there)
        snprintf(why, why_size, "%s", err.message[0] ? err.message : mcp_strerror(rc));
    mcp_error_clear(&err);
    return there;
}

/* Refetches the lists `which` and publishes them; tells the user when
 * they changed. False (with *why) when the connection turned out lost. */
static bool refresh(host_server_t *s, host_conn_t *conn, unsigned which, char *why,
                    size_t why_size)
{
    mcp_host_t *h = s->host;
    pthread_mutex_lock(&h->lock);
    host_lists_t lists = host_lists_share(&s->lists);
    pthread_mutex_unlock(&h->lock);
    mcp_error_t err = {0};
    int rc = host_lists_fetch(conn, which, &lists, &err);
    if (rc != MCP_OK) {
        host_lists_clear(&lists);
        bool there = still_there(conn, why, why_size);
        if (there)
            host_log(h, MCP_LOG_WARNING, "server \"%s\": cannot refresh its lists: %s",
                     s->config.name, err.message);
        mcp_error_clear(&err);
        return there;
    }
    pthread_mutex_lock(&h->lock);
    bool changed = !s->stop && !host_lists_equal(&s->lists, &lists);
    if (changed) {
        host_lists_t old = s->lists;
        s->lists = lists;
        lists = old;
    }
    pthread_mutex_unlock(&h->lock);
    host_lists_clear(&lists);
    if (changed)
        tell_changed(s);
    return true;
}

/*
 * Acts on what the connection reports until it is lost (true, with *why)
 * or the server is stopped (false).
 */
static bool serve(host_server_t *s, host_conn_t *conn, char *why, size_t why_size)
{
    mcp_host_t *h = s->host;
    int64_t relisten_delay = 0;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!s->stop && !conn->events)
            pthread_cond_wait(&s->wake, &h->lock);
        if (s->stop)
            break;
        unsigned events = conn->events;
        conn->events = 0;
        if (events & CONN_LOST) {
            snprintf(why, why_size, "%s", conn->lost_why);
            pthread_mutex_unlock(&h->lock);
            return true;
        }
        if (events & CONN_RELISTEN) {
            /* A server that keeps ending its subscriptions is not asked
             * again in a tight loop. */
            relisten_delay = next_delay(h, relisten_delay);
            if (!nap_locked(s, conn, relisten_delay))
                break;
            if (conn->events & CONN_LOST)
                continue;
        }
        pthread_mutex_unlock(&h->lock);
        if ((events & (CONN_CHECK | CONN_RELISTEN)) && !still_there(conn, why, why_size))
            return true;
        if (events & CONN_RELISTEN) {
            host_conn_listen(conn);
            events |= HOST_LIST_ALL; /* changes may have gone unheard meanwhile */
        }
        if ((events & HOST_LIST_ALL) &&
            !refresh(s, conn, events & HOST_LIST_ALL, why, why_size))
            return true;
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return false;
}

/* ------------------------------------------------------------------------
 * The thread
 * ------------------------------------------------------------------------ */

/* One connection, from connecting to its loss (or the server's stop).
 * Returns the pause before the next attempt. */
static int64_t attempt(host_server_t *s, int64_t delay)
{
    mcp_host_t *h = s->host;
    if (!become_connecting(s))
        return delay;
    mcp_error_t err = {0};
    host_conn_t *conn = NULL;
    host_lists_t lists = {0};
    int rc = host_conn_open(s, &conn, &err);
    if (rc == MCP_OK)
        rc = host_lists_fetch(conn, HOST_LIST_ALL, &lists, &err);
    if (rc != MCP_OK) {
        int64_t next = next_delay(h, delay);
        char why[MCP_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err.message[0] ? err.message : mcp_strerror(rc));
        host_log(h, MCP_LOG_WARNING, "server \"%s\": cannot connect (retrying in %lld ms): %s",
                 s->config.name, (long long)next, why);
        become_failed(s, why);
        if (conn)
            retire(conn);
        host_lists_clear(&lists);
        mcp_error_clear(&err);
        return next;
    }
    host_log(h, MCP_LOG_INFO, "server \"%s\": ready (protocol %s)", s->config.name,
             mcp_client_protocol_version(conn->client));
    if (!become_ready(s, conn, &lists)) {
        host_lists_clear(&lists);
        retire(conn);
        return delay;
    }

    int64_t since = mcp_clock_ms();
    char why[MCP_ERROR_MESSAGE_MAX];
    bool lost = serve(s, conn, why, sizeof why);
    if (!lost) {
        pthread_mutex_lock(&h->lock);
        s->conn = NULL;
        pthread_mutex_unlock(&h->lock);
        retire(conn);
        return delay;
    }
    bool steady = mcp_clock_ms() - since >= h->retry_max_ms;
    int64_t next = steady ? h->retry_initial_ms : next_delay(h, delay);
    host_log(h, MCP_LOG_WARNING, "server \"%s\": connection lost (reconnecting in %lld ms): %s",
             s->config.name, (long long)next, why);
    become_failed(s, why);
    retire(conn);
    return next;
}

void *host_supervise(void *server)
{
    host_server_t *s = server;
    mcp_host_t *h = s->host;
    int64_t delay = 0;
    pthread_mutex_lock(&h->lock);
    while (nap_locked(s, NULL, delay)) {
        pthread_mutex_unlock(&h->lock);
        delay = attempt(s, delay);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}
