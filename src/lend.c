/*
 * lend.c - the calling thread's lender, how a watchdog judges a lent
 * thread, and the watchdog thread (lend.h).
 */
#include "lend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#include "clock.h"
#include "thread_state.h"

_Thread_local mcp_lender_t *mcp_thread_lender = NULL;

/* A lent thread that is neither blocked nor seen computing keeps its
 * transport up to this long: it waits for a CPU. On a loaded machine a
 * thread waits for one for milliseconds at a time (4 ms and more on a
 * 2-vCPU VM under load), and a new thread would only wait beside it, while
 * the handler, quick after all, went to the pool for nothing. */
#define LEND_RUNNABLE_LIMIT_US (20 * MCP_LEND_BUDGET_US)

void mcp_lend_watch_init(mcp_lend_watch_t *watch)
{
    atomic_init(&watch->lent_at_us, 0);
    atomic_init(&watch->thread_id, 0);
    /* Replaced by mcp_lend_watch_serve() before the first lend. */
    atomic_init(&watch->thread_clock, CLOCK_THREAD_CPUTIME_ID);
    watch->probed = 0;
    watch->probed_cpu_ns = 0;
}

void mcp_lend_watch_serve(mcp_lend_watch_t *watch)
{
    atomic_store_explicit(&watch->thread_id, gettid(), memory_order_relaxed);
    clockid_t clock;
    if (pthread_getcpuclockid(pthread_self(), &clock) == 0)
        atomic_store_explicit(&watch->thread_clock, clock, memory_order_relaxed);
}

void mcp_lend_watch_lent(mcp_lend_watch_t *watch)
{
    atomic_store_explicit(&watch->lent_at_us, mcp_clock_us(), memory_order_relaxed);
}

/* CPU time the serving thread has used, in ns; -1 when it cannot be read. */
static int64_t thread_cpu_ns(const mcp_lend_watch_t *watch)
{
    struct timespec ts;
    if (clock_gettime(atomic_load_explicit(&watch->thread_clock, memory_order_relaxed), &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool mcp_lend_overdue(mcp_lend_watch_t *watch, uint64_t word, int64_t now_us)
{
    if (!(word & MCP_LEND_LENT))
        return false;
    int64_t lent_for = now_us - atomic_load_explicit(&watch->lent_at_us, memory_order_relaxed);
    if (lent_for < MCP_LEND_BUDGET_US)
        return false;
    if (lent_for >= LEND_RUNNABLE_LIMIT_US ||
        mcp_thread_blocked(atomic_load_explicit(&watch->thread_id, memory_order_relaxed)))
        return true;
    int64_t cpu = thread_cpu_ns(watch);
    if (cpu < 0)
        return false;
    if (watch->probed != word) {
        watch->probed = word;
        watch->probed_cpu_ns = cpu;
        return false;
    }
    return cpu - watch->probed_cpu_ns >= (int64_t)MCP_LEND_BUDGET_US * 1000 / 2;
}

/* How many looks in a row without a lend beginning or ending before the
 * watchdog sleeps. */
#define WATCH_QUIET_LOOKS 100

void mcp_lend_watchdog_init(mcp_lend_watchdog_t *watchdog, uint64_t (*look)(void *, int64_t),
                            bool (*any_lent)(void *), void *user)
{
    watchdog->look = look;
    watchdog->any_lent = any_lent;
    watchdog->user = user;
    watchdog->started = false;
    watchdog->stop = false;
    pthread_mutex_init(&watchdog->lock, NULL);
    mcp_clock_cond_init(&watchdog->wake);
    atomic_init(&watchdog->idle, false);
}

static void *watchdog_main(void *arg)
{
    mcp_lend_watchdog_t *wd = arg;
    uint64_t last_sum = 0;
    int quiet = 0;
    pthread_mutex_lock(&wd->lock);
    while (!wd->stop) {
        if (quiet >= WATCH_QUIET_LOOKS) {
            /* Nothing lent for a while: sleep until a lend wakes us. */
            atomic_store(&wd->idle, true);
            while (!wd->stop && atomic_load(&wd->idle) && !wd->any_lent(wd->user))
                pthread_cond_wait(&wd->wake, &wd->lock);
            atomic_store(&wd->idle, false);
            quiet = 0;
            continue;
        }
        struct timespec deadline = mcp_clock_deadline(MCP_LEND_BUDGET_US / 1000);
        pthread_cond_timedwait(&wd->wake, &wd->lock, &deadline);
        if (wd->stop)
            break;
        pthread_mutex_unlock(&wd->lock);
        uint64_t sum = wd->look(wd->user, mcp_clock_us());
        quiet = sum == last_sum ? quiet + 1 : 0;
        last_sum = sum;
        pthread_mutex_lock(&wd->lock);
    }
    pthread_mutex_unlock(&wd->lock);
    return NULL;
}

bool mcp_lend_watchdog_start(mcp_lend_watchdog_t *watchdog)
{
    watchdog->started = pthread_create(&watchdog->thread, NULL, watchdog_main, watchdog) == 0;
    return watchdog->started;
}

void mcp_lend_watchdog_lent(mcp_lend_watchdog_t *watchdog)
{
    if (!atomic_load(&watchdog->idle))
        return;
    pthread_mutex_lock(&watchdog->lock);
    atomic_store(&watchdog->idle, false);
    pthread_cond_signal(&watchdog->wake);
    pthread_mutex_unlock(&watchdog->lock);
}

void mcp_lend_watchdog_stop(mcp_lend_watchdog_t *watchdog)
{
    if (!watchdog->started)
        return;
    pthread_mutex_lock(&watchdog->lock);
    watchdog->stop = true;
    pthread_cond_signal(&watchdog->wake);
    pthread_mutex_unlock(&watchdog->lock);
    pthread_join(watchdog->thread, NULL);
    watchdog->started = false;
}

void mcp_lend_watchdog_destroy(mcp_lend_watchdog_t *watchdog)
{
    pthread_mutex_destroy(&watchdog->lock);
    pthread_cond_destroy(&watchdog->wake);
}

/* One step of a lend word's sequence number, above the lent bit. */
#define LEND_SEQ_ONE 2u

uint64_t mcp_lend_begin(_Atomic uint64_t *lend, mcp_lend_watch_t *watch,
                        mcp_lend_watchdog_t *watchdog)
{
    /* The next sequence number, lent. (Only the serving thread changes
     * the word while it is not lent.) */
    uint64_t word = atomic_load_explicit(lend, memory_order_relaxed) + LEND_SEQ_ONE + MCP_LEND_LENT;
    mcp_lend_watch_lent(watch);
    /* Sequentially consistent, as is the watchdog's idle flag: either the
     * watchdog sees this lend before it sleeps, or the wake below sees it
     * asleep. */
    atomic_store(lend, word);
    mcp_lend_watchdog_lent(watchdog);
    return word;
}

bool mcp_lend_settle(_Atomic uint64_t *lend, uint64_t word)
{
    return atomic_compare_exchange_strong(lend, &word, word - MCP_LEND_LENT);
}
