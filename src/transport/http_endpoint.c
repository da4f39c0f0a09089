/*
 * The endpoint object: its options, the list of live exchanges, and the
 * shutdown helpers (drain, abort_all) built on that list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/http_endpoint.h"
#include "clock.h"

#define DEFAULT_PATH "/mcp"
#define DEFAULT_MAX_BODY ((size_t)4 * 1024 * 1024)
#define DEFAULT_IDLE_MS 60000
#define DEFAULT_MAX_MS 600000
#define DEFAULT_KEEPALIVE_MS 15000


void http_signals_block(sigset_t *saved)
{
    static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    sigset_t blocked;
    sigfillset(&blocked);
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        sigdelset(&blocked, fault_signals[i]);
    pthread_sigmask(SIG_SETMASK, &blocked, saved);
}

static void free_list(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}

/* A NULL-terminated copy of a NULL-terminated list (NULL stays NULL).
 * Returns false on allocation failure. */
static bool copy_list(const char *const *src, char ***dst)
{
    *dst = NULL;
    if (!src)
        return true;
    size_t n = 0;
    while (src[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    if (!copy)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!(copy[i] = strdup(src[i]))) {
            free_list(copy);
            return false;
        }
    }
    *dst = copy;
    return true;
}

static void endpoint_destroy(mcp_http_endpoint_t *ep)
{
    free(ep->path);
    free_list(ep->allowed_origins);
    free_list(ep->allowed_hosts);
    pthread_mutex_destroy(&ep->lock);
    pthread_cond_destroy(&ep->changed);
    pthread_cond_destroy(&ep->timer_wake);
    free(ep);
}

void http_endpoint_ref(mcp_http_endpoint_t *ep)
{
    atomic_fetch_add(&ep->refs, 1);
}

void http_endpoint_unref(mcp_http_endpoint_t *ep)
{
    if (atomic_fetch_sub(&ep->refs, 1) == 1)
        endpoint_destroy(ep);
}

mcp_http_endpoint_t *http_endpoint_new(mcp_server_t *srv, const mcp_http_endpoint_options_t *opts,
                                       bool any_host_by_default, mcp_error_t *err)
{
    static const mcp_http_endpoint_options_t defaults = {0};
    static const char *const any_host[] = {"*", NULL};
    if (!opts)
        opts = &defaults;
    if (!srv) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "an endpoint needs a server");
        return NULL;
    }
    if (opts->path && opts->path[0] != '/') {
        mcp_error_set(err, MCP_EINVAL, 0, NULL,
                      "the endpoint path must start with '/'");
        return NULL;
    }
    if (opts->request_timeout_ms < 0 || opts->max_request_timeout_ms < 0 ||
        opts->keepalive_ms < 0) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL,
                      "request timeouts and the keep-alive interval must not be negative");
        return NULL;
    }
    mcp_http_endpoint_t *ep = calloc(1, sizeof *ep);
    if (!ep) {
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        return NULL;
    }
    atomic_init(&ep->refs, 1);
    ep->srv = srv;
    ep->timer_due = INT64_MAX; /* no thread yet: the first request starts one */
    pthread_mutex_init(&ep->lock, NULL);
    mcp_clock_cond_init(&ep->changed);
    mcp_clock_cond_init(&ep->timer_wake);

    const char *const *hosts = opts->allowed_hosts;
    if (!hosts && any_host_by_default)
        hosts = any_host;
    ep->path = strdup(opts->path ? opts->path : DEFAULT_PATH);
    if (!ep->path || !copy_list(opts->allowed_origins, &ep->allowed_origins) ||
        !copy_list(hosts, &ep->allowed_hosts)) {
        endpoint_destroy(ep);
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        return NULL;
    }
    ep->max_body = opts->max_body_bytes ? opts->max_body_bytes : DEFAULT_MAX_BODY;
    ep->max_ms = opts->max_request_timeout_ms ? opts->max_request_timeout_ms : DEFAULT_MAX_MS;
    ep->idle_ms = opts->request_timeout_ms ? opts->request_timeout_ms : DEFAULT_IDLE_MS;
    ep->keepalive_ms = opts->keepalive_ms > 0 ? opts->keepalive_ms : DEFAULT_KEEPALIVE_MS;
    if (ep->idle_ms > ep->max_ms)
        ep->idle_ms = ep->max_ms;
    ep->auth = opts->auth;
    ep->auth_user = opts->auth_user;
    ep->cors = opts->cors;
    return ep;
}

mcp_http_endpoint_t *mcp_http_endpoint_new(mcp_server_t *srv,
                                           const mcp_http_endpoint_options_t *opts,
                                           mcp_error_t *err)
{
    return http_endpoint_new(srv, opts, false, err);
}

void http_endpoint_close_streams(mcp_http_endpoint_t *ep)
{
    /* Every live exchange is held while the list is walked; whether it is
     * a stream is read under its own lock afterwards, since that lock may
     * not be taken while the endpoint's is held. */
    pthread_mutex_lock(&ep->lock);
    mcp_http_exchange_t **live = ep->n_live ? calloc(ep->n_live, sizeof *live) : NULL;
    size_t n = 0;
    for (mcp_http_exchange_t *x = ep->live; x && live; x = x->next)
        if (http_exchange_tryref(x))
            live[n++] = x;
    pthread_mutex_unlock(&ep->lock);
    for (size_t i = 0; i < n; i++) {
        mcp_http_exchange_t *x = live[i];
        pthread_mutex_lock(&x->lock);
        mcp_exchange_t *stream = x->long_lived ? x->core : NULL;
        /* Not submitted yet, or its submission has not returned: the
         * stream it may open is ended when it has (http_exchange.c). */
        if (!x->core)
            x->end_stream_pending = true;
        pthread_mutex_unlock(&x->lock);
        /* x keeps its core until it is freed, and x is held. */
        if (stream)
            mcp_exchange_end_stream(stream);
        http_exchange_unref(x);
    }
    free(live);
}

int mcp_http_endpoint_drain(mcp_http_endpoint_t *ep, int64_t timeout_ms)
{
    if (!ep)
        return MCP_EINVAL;
    /* Unused when timeout_ms < 0: then the wait has no end. */
    struct timespec deadline = mcp_clock_deadline(timeout_ms);
    pthread_mutex_lock(&ep->lock);
    int rc = 0;
    while (ep->n_live > 0 && rc != ETIMEDOUT) {
        if (timeout_ms < 0)
            pthread_cond_wait(&ep->changed, &ep->lock);
        else
            rc = pthread_cond_timedwait(&ep->changed, &ep->lock, &deadline);
    }
    bool idle = ep->n_live == 0;
    pthread_mutex_unlock(&ep->lock);
    return idle ? MCP_OK : MCP_ETIMEDOUT;
}

/* The first exchange from `x` on that is not being freed, with a
 * reference taken; the caller holds ep->lock. One whose last reference is
 * gone stays linked until its freeing thread gets ep->lock: it is skipped,
 * never revived. */
static mcp_http_exchange_t *hold_next_live(mcp_http_exchange_t *x)
{
    while (x && !http_exchange_tryref(x))
        x = x->next;
    return x;
}

/* Aborting needs the exchange's lock, which may not be taken under the
 * endpoint's, so the walk holds a reference on the current exchange: a
 * referenced exchange stays linked, so its `next` is valid after relocking.
 * Exchanges begun during the walk are added at the head and not visited. */
void mcp_http_endpoint_abort_all(mcp_http_endpoint_t *ep)
{
    if (!ep)
        return;
    pthread_mutex_lock(&ep->lock);
    mcp_http_exchange_t *x = hold_next_live(ep->live);
    pthread_mutex_unlock(&ep->lock);
    while (x) {
        http_exchange_abort(x, NULL);
        pthread_mutex_lock(&ep->lock);
        mcp_http_exchange_t *next = hold_next_live(x->next);
        pthread_mutex_unlock(&ep->lock);
        http_exchange_unref(x);
        x = next;
    }
}

void mcp_http_endpoint_free(mcp_http_endpoint_t *ep)
{
    if (!ep)
        return;
    mcp_http_endpoint_abort_all(ep);
    http_timeouts_stop(ep);
    http_endpoint_unref(ep);
}
