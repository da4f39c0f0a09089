/*
 * Elastic worker pool (contract in worker_pool.h).
 *
 * One mutex guards everything; jobs run outside it. A thread is "idle" when
 * it is alive and not running a job: waiting for work, starting up, or on
 * its way back to the queue. Every idle thread looks at the queue before it
 * sleeps, so a submitted job needs a new thread only when the queue holds
 * more jobs than there are idle threads.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/worker_pool.h"
#include "clock.h"
#include "spin.h"
#include "thread_state.h"

/* First allocation of the queue, and the capacity above which an emptied
 * queue gives its memory back (so a burst does not pin it forever). */
#define QUEUE_INITIAL_CAPACITY 64
#define QUEUE_RETAINED_CAPACITY 4096

/* How long a job may wait for a thread, once min_threads are running,
 * before the pool starts another for it. Jobs wait that long only when
 * every thread is busy: either the CPUs are (another thread would only
 * compete for them) or handlers are blocked (then it is worth a thread). */
#define GROW_DELAY_MS 5

struct job {
    mcp_pool_job_fn fn;
    void *arg;
    int64_t queued_ms; /* when it was submitted (mcp_clock_ms) */
};

/* A live thread of the pool, on its own stack, listed so the monitor can
 * tell busy threads that are blocked from those that compute. */
struct worker {
    pid_t tid;
    bool busy;
    int64_t job_started_ms; /* when it took its job (mcp_clock_ms) */
    struct worker *prev, *next;
};

/* Jobs not yet started, oldest first: a ring buffer that doubles when full. */
struct job_queue {
    struct job *ring;
    size_t capacity;
    size_t head; /* index of the oldest job */
    size_t count;
};

struct mcp_pool {
    pthread_mutex_t lock;
    pthread_cond_t work_available; /* a job was queued, or shutdown began */
    pthread_cond_t all_exited;     /* the last thread exited */
    pthread_cond_t monitor_wake;   /* a job is waiting, or shutdown began */

    struct job_queue queue;
    int min_threads;
    int max_threads;
    int idle_ms;

    struct worker *workers; /* the threads that have started, newest first */
    int threads;      /* alive: from pthread_create until worker_exit */
    int busy;         /* running a job */
    int peak_threads;
    bool closing;     /* mcp_pool_shutdown has begun */

    /* Waiting actively for the next job (mcp_pool_set_spin): the budget,
     * whether a thread is doing it now, and whether it should stop: a job
     * is queued or shutdown began. That thread reads spin_wake without the
     * lock; it is stored atomically, with the lock held, whenever the
     * queue or `closing` changes. */
    int spin_us;
    bool spinning;
    bool spin_wake;

    uint64_t futile_wakeups; /* see mcp_pool_stats_t */

    /* The thread that exited last and has not been joined yet. A thread
     * cannot join itself, so each exiting thread joins its predecessor;
     * mcp_pool_shutdown joins the last one. */
    pthread_t unjoined;
    bool has_unjoined;

    /* The monitor starts threads beyond min_threads for jobs that waited
     * GROW_DELAY_MS (see grow_if_stuck). Started with the first job that
     * has to wait; gone once shutdown begins, after which jobs start
     * threads at once, as they do when the monitor cannot be started. */
    pthread_t monitor;
    bool has_monitor;     /* started, not joined yet */
    bool monitor_running; /* started, not exited yet */
    bool monitor_idle;    /* waiting without a deadline: a waiting job must wake it */
};

/* The pool whose job the calling thread is running, if any: lets jobs keep
 * submitting while their pool drains. */
static _Thread_local mcp_pool_t *current_pool;

/* ------------------------------------------------------------------------
 * The queue
 * ------------------------------------------------------------------------ */

static bool queue_push(struct job_queue *q, struct job job)
{
    if (q->count == q->capacity) {
        size_t capacity = q->capacity ? q->capacity * 2 : QUEUE_INITIAL_CAPACITY;
        if (capacity > SIZE_MAX / sizeof(struct job))
            return false;
        struct job *ring = malloc(capacity * sizeof *ring);
        if (!ring)
            return false;
        /* Unroll the old ring so that the oldest job is at index 0. */
        for (size_t i = 0; i < q->count; i++)
            ring[i] = q->ring[(q->head + i) % q->capacity];
        free(q->ring);
        q->ring = ring;
        q->capacity = capacity;
        q->head = 0;
    }
    q->ring[(q->head + q->count) % q->capacity] = job;
    q->count++;
    return true;
}

static struct job queue_pop(struct job_queue *q)
{
    struct job job = q->ring[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    if (q->count == 0 && q->capacity > QUEUE_RETAINED_CAPACITY) {
        free(q->ring);
        q->ring = NULL;
        q->capacity = 0;
        q->head = 0;
    }
    return job;
}

/* Takes back the job queue_push() just added. */
static void queue_drop_newest(struct job_queue *q)
{
    q->count--;
}

/* Tells a thread waiting actively whether to stop (lock held; after every
 * change to the queue or to `closing`). */
static void note_spin_wake(mcp_pool_t *pool)
{
    __atomic_store_n(&pool->spin_wake, pool->queue.count != 0 || pool->closing,
                     __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------
 * Worker threads
 * ------------------------------------------------------------------------ */

/*
 * Before a core thread sleeps (lock held): unless another thread does it
 * already, waits actively for a job for up to spin_us, with the lock
 * released. Returns true when the caller should look at the queue again
 * instead of sleeping: a job came, or shutdown began (whose broadcast a
 * thread that is not waiting on the condition misses; spin_wake tells it
 * instead).
 */
static bool wait_actively(mcp_pool_t *pool)
{
    if (pool->spin_us <= 0 || pool->spinning)
        return false;
    pool->spinning = true;
    int budget_us = pool->spin_us;
    pthread_mutex_unlock(&pool->lock);
    mcp_spin_until(&pool->spin_wake, budget_us);
    pthread_mutex_lock(&pool->lock);
    pool->spinning = false;
    return pool->queue.count != 0 || pool->closing;
}

/* After a sleeping thread was woken (lock held): counts the wake-up as
 * futile when there is nothing for it to do. */
static void note_wakeup(mcp_pool_t *pool)
{
    if (pool->queue.count == 0 && !pool->closing)
        pool->futile_wakeups++;
}

/*
 * Waits (lock held) until a job is queued. Returns false when the thread
 * should exit instead: the pool is shutting down and the queue is drained,
 * or the thread is beyond min_threads and found no work for idle_ms.
 */
static bool wait_for_work(mcp_pool_t *pool)
{
    struct timespec deadline;
    bool have_deadline = false;

    while (pool->queue.count == 0) {
        if (pool->closing)
            return false;
        if (pool->threads <= pool->min_threads) {
            if (!wait_actively(pool)) {
                pthread_cond_wait(&pool->work_available, &pool->lock);
                note_wakeup(pool);
            }
            continue;
        }
        /* The deadline is fixed once, so wakeups that find no work (another
         * thread took it) do not extend this thread's idle time. */
        if (!have_deadline) {
            deadline = mcp_clock_deadline(pool->idle_ms);
            have_deadline = true;
        }
        int rc = pthread_cond_timedwait(&pool->work_available, &pool->lock, &deadline);
        if (rc != ETIMEDOUT)
            note_wakeup(pool);
        /* Re-check under the lock: a job may have been queued for us just
         * as the time ran out, or other threads may have exited meanwhile
         * and left this one among the min_threads that stay. */
        if (rc == ETIMEDOUT && pool->queue.count == 0 && pool->threads > pool->min_threads)
            return false;
    }
    return true;
}

/* Leaves the pool (lock held on entry, released here). */
static void worker_exit(mcp_pool_t *pool)
{
    pthread_t predecessor = pool->unjoined;
    bool join_predecessor = pool->has_unjoined;

    pool->unjoined = pthread_self();
    pool->has_unjoined = true;
    pool->threads--;
    if (pool->threads == 0)
        pthread_cond_broadcast(&pool->all_exited);
    pthread_mutex_unlock(&pool->lock);

    /* The pool may be freed from here on: touch only locals. */
    if (join_predecessor)
        pthread_join(predecessor, NULL);
}

static void workers_link(mcp_pool_t *pool, struct worker *w)
{
    w->prev = NULL;
    w->next = pool->workers;
    if (w->next)
        w->next->prev = w;
    pool->workers = w;
}

static void workers_unlink(mcp_pool_t *pool, struct worker *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        pool->workers = w->next;
    if (w->next)
        w->next->prev = w->prev;
}

static void *worker_main(void *arg)
{
    mcp_pool_t *pool = arg;
    struct worker self = {.tid = gettid()};
    current_pool = pool;

    pthread_mutex_lock(&pool->lock);
    workers_link(pool, &self);
    while (wait_for_work(pool)) {
        struct job job = queue_pop(&pool->queue);
        note_spin_wake(pool);
        pool->busy++;
        self.busy = true;
        self.job_started_ms = mcp_clock_ms();
        pthread_mutex_unlock(&pool->lock);

        job.fn(job.arg);

        pthread_mutex_lock(&pool->lock);
        pool->busy--;
        self.busy = false;
    }
    workers_unlink(pool, &self);
    worker_exit(pool);
    return NULL;
}

/*
 * Starts one worker (lock held). Asynchronous signals are blocked in the new
 * thread (it inherits the mask in effect at pthread_create); the signals
 * that report a fault in the thread itself stay open so that crashes are
 * still reported (and sanitizers still see them).
 */
static bool spawn(pthread_t *tid, void *(*main_fn)(void *), mcp_pool_t *pool)
{
    static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    sigset_t blocked, saved;

    sigfillset(&blocked);
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        sigdelset(&blocked, fault_signals[i]);
    pthread_sigmask(SIG_SETMASK, &blocked, &saved);
    int rc = pthread_create(tid, NULL, main_fn, pool);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return rc == 0;
}

static bool start_thread(mcp_pool_t *pool)
{
    pthread_t tid;
    if (!spawn(&tid, worker_main, pool))
        return false;

    pool->threads++;
    if (pool->threads > pool->peak_threads)
        pool->peak_threads = pool->threads;
    return true;
}

/* How many busy threads are blocked in a job they took GROW_DELAY_MS ago
 * or more (lock held). Younger jobs are left out: a quick job may sleep
 * for a moment on a lock, which is no reason for another thread. */
static int blocked_threads(const mcp_pool_t *pool, int64_t now)
{
    int blocked = 0;
    for (const struct worker *w = pool->workers; w; w = w->next)
        if (w->busy && now - w->job_started_ms >= GROW_DELAY_MS && mcp_thread_blocked(w->tid))
            blocked++;
    return blocked;
}

/*
 * Starts threads for jobs that have waited GROW_DELAY_MS while no thread
 * was free (lock held). Returns when to look again (ms on mcp_clock_ms),
 * or -1 when no job waits.
 *
 * A job left waiting means every thread is busy, but a thread added helps
 * only if some of them are blocked in their handler: threads that compute,
 * or wait for a CPU, would only take turns with the new one, and on a
 * loaded machine a thread can wait for a CPU longer than GROW_DELAY_MS.
 * So the pool keeps min_threads (at least one) threads that are not
 * blocked, and starts one for each blocked thread beyond that while jobs
 * wait; it looks again every GROW_DELAY_MS while they do.
 */
static int64_t grow_if_stuck(mcp_pool_t *pool)
{
    int64_t now = mcp_clock_ms();
    size_t idle = (size_t)(pool->threads - pool->busy);
    size_t stuck = 0; /* jobs that waited too long, oldest first */
    while (stuck < pool->queue.count) {
        const struct job *job =
            &pool->queue.ring[(pool->queue.head + stuck) % pool->queue.capacity];
        if (now - job->queued_ms < GROW_DELAY_MS)
            break;
        stuck++;
    }
    if (stuck > idle) {
        int runnable_floor = pool->min_threads > 0 ? pool->min_threads : 1;
        int blocked = blocked_threads(pool, now);
        while (stuck > idle && pool->threads < pool->max_threads &&
               pool->threads - blocked < runnable_floor && start_thread(pool))
            idle++;
    }
    if (pool->threads >= pool->max_threads)
        return -1; /* no thread may be added */
    if (stuck > idle)
        return now + GROW_DELAY_MS; /* they wait on computing threads */
    if (pool->queue.count <= stuck)
        return -1; /* nothing younger waits */
    const struct job *next = &pool->queue.ring[(pool->queue.head + stuck) % pool->queue.capacity];
    return next->queued_ms + GROW_DELAY_MS;
}

static void *monitor_main(void *arg)
{
    mcp_pool_t *pool = arg;
    pthread_mutex_lock(&pool->lock);
    while (!pool->closing) {
        int64_t due = pool->queue.count > (size_t)(pool->threads - pool->busy)
                          ? grow_if_stuck(pool)
                          : -1;
        pool->monitor_idle = due < 0;
        if (due < 0) {
            pthread_cond_wait(&pool->monitor_wake, &pool->lock);
        } else {
            struct timespec deadline = mcp_clock_deadline(due - mcp_clock_ms());
            pthread_cond_timedwait(&pool->monitor_wake, &pool->lock, &deadline);
        }
    }
    pool->monitor_running = false;
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* Whether the monitor will see to a job that has to wait (lock held):
 * starts it on first need and wakes it from a wait without deadline. */
static bool monitor_watches(mcp_pool_t *pool)
{
    if (!pool->has_monitor) {
        if (pool->closing || !spawn(&pool->monitor, monitor_main, pool))
            return false;
        pool->has_monitor = true;
        pool->monitor_running = true;
        pool->monitor_idle = false; /* it looks at the queue when it starts */
        return true;
    }
    if (!pool->monitor_running)
        return false;
    if (pool->monitor_idle) {
        pool->monitor_idle = false;
        pthread_cond_signal(&pool->monitor_wake);
    }
    return true;
}

/* ------------------------------------------------------------------------
 * The API
 * ------------------------------------------------------------------------ */

mcp_pool_t *mcp_pool_new(int min_threads, int max_threads, int idle_ms)
{
    if (min_threads < 0 || max_threads < 1 || min_threads > max_threads || idle_ms < 0)
        return NULL;

    mcp_pool_t *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->min_threads = min_threads;
    pool->max_threads = max_threads;
    pool->idle_ms = idle_ms;

    /* Idle timeouts are measured on the monotonic clock, immune to the
     * wall clock being set. */
    pthread_condattr_t monotonic;
    if (pthread_condattr_init(&monotonic) != 0)
        goto fail_pool;
    if (pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&pool->work_available, &monotonic) != 0) {
        pthread_condattr_destroy(&monotonic);
        goto fail_pool;
    }
    if (pthread_cond_init(&pool->monitor_wake, &monotonic) != 0) {
        pthread_condattr_destroy(&monotonic);
        goto fail_work_available;
    }
    pthread_condattr_destroy(&monotonic);
    if (pthread_cond_init(&pool->all_exited, NULL) != 0)
        goto fail_monitor_wake;
    if (pthread_mutex_init(&pool->lock, NULL) != 0)
        goto fail_all_exited;
    return pool;

fail_all_exited:
    pthread_cond_destroy(&pool->all_exited);
fail_monitor_wake:
    pthread_cond_destroy(&pool->monitor_wake);
fail_work_available:
    pthread_cond_destroy(&pool->work_available);
fail_pool:
    free(pool);
    return NULL;
}

/* Whether this thread's last submitted job went to a thread waiting
 * actively for work (mcp_pool_take_direct_handoff). */
static _Thread_local bool handed_off_directly;

/* mcp_pool_submit with the lock held. */
static int submit_locked(mcp_pool_t *pool, mcp_pool_job_fn fn, void *arg)
{
    if (pool->closing && current_pool != pool)
        return MCP_ECLOSED;
    if (!queue_push(&pool->queue, (struct job){fn, arg, mcp_clock_ms()}))
        return MCP_ENOMEM;
    note_spin_wake(pool);

    size_t idle = (size_t)(pool->threads - pool->busy);
    if (pool->queue.count > idle && pool->threads < pool->max_threads) {
        /* Up to min_threads a job starts a thread at once; beyond, it
         * waits GROW_DELAY_MS for one to come free first (the monitor),
         * unless there is no monitor to see to it. */
        bool at_once = pool->threads < pool->min_threads || pool->threads == 0 ||
                       !monitor_watches(pool);
        if (at_once && !start_thread(pool) && pool->threads == 0) {
            /* Nobody would ever run the job. (With threads alive, it
             * simply waits for one of them.) */
            queue_drop_newest(&pool->queue);
            note_spin_wake(pool);
            return MCP_ENOMEM;
        }
    }
    /* A thread waiting actively takes this job without being signalled: it
     * looks at the queue under the lock when its wait ends, which this job
     * ends. Signalling would also wake a sleeping thread only to find the
     * queue empty. With more jobs queued than that, one sleeper is woken.
     * Signalled under the lock: a submitter that is not one of the pool's
     * threads (a timer, say) could otherwise still be inside
     * pthread_cond_signal when the pool is shut down and freed. With no
     * thread waiting, the signal costs no system call. */
    if (!pool->spinning || pool->queue.count > 1)
        pthread_cond_signal(&pool->work_available);
    handed_off_directly = pool->spinning && pool->queue.count == 1;
    return MCP_OK;
}

bool mcp_pool_take_direct_handoff(void)
{
    bool direct = handed_off_directly;
    handed_off_directly = false;
    return direct;
}

void mcp_pool_set_spin(mcp_pool_t *pool, int budget_us)
{
    pthread_mutex_lock(&pool->lock);
    pool->spin_us = budget_us > 0 ? budget_us : 0;
    pthread_mutex_unlock(&pool->lock);
}

int mcp_pool_submit(mcp_pool_t *pool, mcp_pool_job_fn fn, void *arg)
{
    if (!fn)
        return MCP_EINVAL;
    pthread_mutex_lock(&pool->lock);
    int rc = submit_locked(pool, fn, arg);
    pthread_mutex_unlock(&pool->lock);
    return rc;
}

void mcp_pool_shutdown(mcp_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->closing = true;
    note_spin_wake(pool);
    pthread_cond_broadcast(&pool->work_available);
    pthread_cond_signal(&pool->monitor_wake);
    bool join_monitor = pool->has_monitor;
    pool->has_monitor = false;
    pthread_mutex_unlock(&pool->lock);
    /* From here jobs submitted by running jobs start threads at once. */
    if (join_monitor)
        pthread_join(pool->monitor, NULL);

    pthread_mutex_lock(&pool->lock);
    while (pool->threads > 0)
        pthread_cond_wait(&pool->all_exited, &pool->lock);
    pthread_t last = pool->unjoined;
    bool join_last = pool->has_unjoined;
    pool->has_unjoined = false;
    pthread_mutex_unlock(&pool->lock);

    /* Each exited thread joined its predecessor before returning, so
     * joining the last one waits for all of them. */
    if (join_last)
        pthread_join(last, NULL);
}

void mcp_pool_free(mcp_pool_t *pool)
{
    if (!pool)
        return;
    mcp_pool_shutdown(pool);
    free(pool->queue.ring);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->all_exited);
    pthread_cond_destroy(&pool->monitor_wake);
    pthread_cond_destroy(&pool->work_available);
    free(pool);
}

void mcp_pool_get_stats(mcp_pool_t *pool, mcp_pool_stats_t *out)
{
    pthread_mutex_lock(&pool->lock);
    out->threads = pool->threads;
    out->busy = pool->busy;
    out->peak_threads = pool->peak_threads;
    out->queued = pool->queue.count;
    out->spinning = pool->spinning;
    out->futile_wakeups = pool->futile_wakeups;
    pthread_mutex_unlock(&pool->lock);
}
