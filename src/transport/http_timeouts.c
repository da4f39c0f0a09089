/*
 * Request timeouts (digest section 4.7): one thread per endpoint sleeps
 * until the earliest deadline of the exchanges with the core, and aborts
 * those whose time is up.
 *
 * Each armed exchange has two deadlines: an idle one, pushed back every
 * time the request sends something, and a hard one fixed at submission.
 * A subscriptions/listen stream has neither: it lives as long as its
 * client keeps it. Its idle deadline instead says when to send the next
 * keep-alive comment.
 * The list is scanned on each wake. Wakes happen only at deadlines and
 * when a request arrives whose deadline comes before the one the thread
 * sleeps towards -- rarely, since every request gets the same timeouts: a
 * wake (and a scan of every live request under the endpoint lock) per
 * request cost a third of the server's throughput.
 */
#include <stdint.h>
#include <time.h>

#include "server/server_internal.h"
#include "transport/http_endpoint.h"
#include "clock.h"

static int64_t due_of(const mcp_http_exchange_t *x)
{
    return x->idle_due < x->hard_due ? x->idle_due : x->hard_due;
}

static void *timer_main(void *arg)
{
    mcp_http_endpoint_t *ep = arg;
    pthread_mutex_lock(&ep->lock);
    while (!ep->timer_stop) {
        int64_t now = mcp_clock_ms();
        int64_t next = INT64_MAX;
        mcp_http_exchange_t *expired = NULL;
        for (mcp_http_exchange_t *x = ep->live; x; x = x->next) {
            if (!x->armed)
                continue;
            if (due_of(x) <= now && !http_exchange_tryref(x)) {
                /* Its last reference is gone and its freeing thread waits
                 * for ep->lock to unlink it: nothing left to time out. */
                x->armed = false;
                continue;
            }
            if (due_of(x) <= now) {
                expired = x;
                break;
            }
            if (due_of(x) < next)
                next = due_of(x);
        }
        if (expired && expired->long_lived) {
            expired->idle_due = now + ep->keepalive_ms;
            pthread_mutex_unlock(&ep->lock); /* expired is held (tryref above) */
            http_exchange_keepalive(expired);
            http_exchange_unref(expired);
            pthread_mutex_lock(&ep->lock);
            continue;
        }
        if (expired) {
            expired->armed = false;
            pthread_mutex_unlock(&ep->lock); /* expired is held (tryref above) */
            http_exchange_abort(expired, "timed out");
            http_exchange_unref(expired);
            pthread_mutex_lock(&ep->lock);
            continue;
        }
        ep->timer_due = next;
        if (next == INT64_MAX) {
            pthread_cond_wait(&ep->timer_wake, &ep->lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(next / 1000),
                                  .tv_nsec = (long)(next % 1000) * 1000000L};
            pthread_cond_timedwait(&ep->timer_wake, &ep->lock, &ts);
        }
    }
    pthread_mutex_unlock(&ep->lock);
    return NULL;
}

void http_timeouts_arm(mcp_http_exchange_t *x)
{
    mcp_http_endpoint_t *ep = x->ep;
    int64_t now = mcp_clock_ms();
    pthread_mutex_lock(&ep->lock);
    x->hard_due = x->long_lived ? INT64_MAX : now + ep->max_ms;
    x->idle_due = now + (x->long_lived ? ep->keepalive_ms : x->idle_ms);
    x->armed = true;
    bool wake = due_of(x) < ep->timer_due;
    if (!ep->timer_running && !ep->timer_stop) {
        sigset_t saved;
        http_signals_block(&saved);
        ep->timer_running = pthread_create(&ep->timer, NULL, timer_main, ep) == 0;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (!ep->timer_running)
            server_log(ep->srv, MCP_LOG_ERROR,
                       "HTTP: cannot start the timeout thread; requests will not time out");
    }
    if (wake) {
        ep->timer_due = due_of(x); /* one signal is enough until the thread rescans */
        pthread_cond_signal(&ep->timer_wake);
    }
    pthread_mutex_unlock(&ep->lock);
}

void http_timeouts_touch(mcp_http_exchange_t *x)
{
    mcp_http_endpoint_t *ep = x->ep;
    int64_t now = mcp_clock_ms();
    pthread_mutex_lock(&ep->lock);
    if (x->armed) /* later than before: no need to wake the thread */
        x->idle_due = now + (x->long_lived ? ep->keepalive_ms : x->idle_ms);
    pthread_mutex_unlock(&ep->lock);
}

void http_timeouts_disarm(mcp_http_exchange_t *x)
{
    mcp_http_endpoint_t *ep = x->ep;
    pthread_mutex_lock(&ep->lock);
    x->armed = false;
    pthread_mutex_unlock(&ep->lock);
}

void http_timeouts_stop(mcp_http_endpoint_t *ep)
{
    pthread_mutex_lock(&ep->lock);
    ep->timer_stop = true;
    bool running = ep->timer_running;
    ep->timer_running = false;
    pthread_cond_signal(&ep->timer_wake);
    pthread_mutex_unlock(&ep->lock);
    if (running)
        pthread_join(ep->timer, NULL);
}
