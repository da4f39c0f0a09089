/*
 * mcp_cancel_t: a flag another thread raises to cancel calls.
 *
 * A call waiting on its own mutex/condition variable registers them here, so
 * that mcp_cancel_trigger() wakes it at once instead of the waiter polling
 * the flag. Lock order: the cancel's lock, then a waiter's lock; a waiter
 * never takes the cancel's lock while holding its own. A call that only
 * waits for time to pass (between the polls of a task, before resuming a
 * stream) sleeps in client_cancel_sleep_until(), which a trigger ends.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "client/client_internal.h"
#include "clock.h"

struct mcp_cancel {
    pthread_mutex_t lock;      /* guards `waiters` */
    bool triggered;            /* read and written atomically */
    client_cancel_waiter_t *waiters;
};

mcp_cancel_t *mcp_cancel_new(void)
{
    mcp_cancel_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void mcp_cancel_trigger(mcp_cancel_t *cancel)
{
    if (!cancel)
        return;
    pthread_mutex_lock(&cancel->lock);
    __atomic_store_n(&cancel->triggered, true, __ATOMIC_RELEASE);
    for (client_cancel_waiter_t *w = cancel->waiters; w; w = w->next) {
        pthread_mutex_lock(w->lock);
        pthread_cond_broadcast(w->cond);
        pthread_mutex_unlock(w->lock);
    }
    pthread_mutex_unlock(&cancel->lock);
}

bool mcp_cancel_triggered(const mcp_cancel_t *cancel)
{
    return cancel && __atomic_load_n(&cancel->triggered, __ATOMIC_ACQUIRE);
}

void mcp_cancel_free(mcp_cancel_t *cancel)
{
    if (!cancel)
        return;
    pthread_mutex_destroy(&cancel->lock);
    free(cancel);
}

void client_cancel_watch(mcp_cancel_t *cancel, client_cancel_waiter_t *w)
{
    if (!cancel)
        return;
    pthread_mutex_lock(&cancel->lock);
    w->next = cancel->waiters;
    cancel->waiters = w;
    pthread_mutex_unlock(&cancel->lock);
}

void client_cancel_unwatch(mcp_cancel_t *cancel, client_cancel_waiter_t *w)
{
    if (!cancel)
        return;
    pthread_mutex_lock(&cancel->lock);
    for (client_cancel_waiter_t **p = &cancel->waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_mutex_unlock(&cancel->lock);
}

int client_cancel_wait_until(mcp_cancel_t *cancel, pthread_mutex_t *lock, pthread_cond_t *cond,
                             const bool *woken, const struct timespec *until)
{
    client_cancel_waiter_t w = {lock, cond, NULL};
    client_cancel_watch(cancel, &w);
    int rc = MCP_OK;
    pthread_mutex_lock(lock);
    /* The flag is read under the waiter's lock, which the trigger takes to
     * broadcast: a trigger cannot slip between the check and the wait. */
    while (rc == MCP_OK && !(woken && *woken)) {
        if (mcp_cancel_triggered(cancel))
            rc = MCP_ECANCELED;
        else if (pthread_cond_timedwait(cond, lock, until) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(lock);
    client_cancel_unwatch(cancel, &w);
    return rc;
}

int client_cancel_sleep_until(mcp_cancel_t *cancel, const struct timespec *until)
{
    pthread_mutex_t lock;
    pthread_cond_t cond;
    mcp_clock_cond_init(&cond);
    pthread_mutex_init(&lock, NULL);
    int rc = client_cancel_wait_until(cancel, &lock, &cond, NULL, until);
    pthread_mutex_destroy(&lock);
    pthread_cond_destroy(&cond);
    return rc;
}
