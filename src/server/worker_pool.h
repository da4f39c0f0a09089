/*
 * An elastic pool of worker threads that runs jobs in FIFO order.
 *
 * The server runs every handler here, never on a transport's own threads,
 * so a slow tool cannot stall other requests or streams. The pool is
 * elastic because handlers block (on the network, on a database, on a
 * client's answer): a fixed pool of N threads would let N slow handlers
 * freeze the server.
 *
 *   - No thread exists until the first job is submitted: a server that is
 *     built but never used costs nothing.
 *   - A job that finds no idle thread to take it starts a new thread at
 *     once while fewer than min_threads run. Beyond that it first waits a
 *     few milliseconds for a thread to come free. If none did, a monitor
 *     thread starts one for it, up to max_threads -- but only in place of
 *     a thread blocked in its job (sleeping or waiting for I/O, as Linux
 *     reports in /proc): threads that compute, or wait for a CPU, would
 *     only take turns with another. The pool keeps min_threads (at least
 *     one) threads that are not blocked. Beyond max_threads, jobs wait in
 *     the queue.
 *   - A thread beyond the first min_threads that has found no work for
 *     idle_ms milliseconds exits. The first min_threads, once started,
 *     stay until shutdown.
 *   - Jobs start in the order they were submitted. With several threads
 *     they may of course finish in any order.
 *
 * Worker threads block all asynchronous signals, so that a process-directed
 * signal (SIGINT, SIGTERM, SIGPIPE...) is delivered to one of the
 * application's own threads rather than interrupting a handler at an
 * arbitrary point.
 *
 * Thread safety: every function may be called from any thread, including
 * from inside a job, except mcp_pool_shutdown() and mcp_pool_free(), which
 * must not be called from a job of the same pool (they wait for all jobs,
 * that one included) and must not race with each other.
 */
#ifndef MCP_SERVER_WORKER_POOL_H
#define MCP_SERVER_WORKER_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/common.h"

typedef struct mcp_pool mcp_pool_t;

/* A unit of work. `arg` is whatever was given to mcp_pool_submit(). */
typedef void (*mcp_pool_job_fn)(void *arg);

/* A snapshot of the pool's state, for tests and benchmarks. */
typedef struct mcp_pool_stats {
    int threads;         /* threads alive now */
    int busy;            /* of those, running a job now */
    int peak_threads;    /* most threads ever alive at once */
    size_t queued;       /* jobs submitted but not started */
    bool spinning;       /* a thread is waiting actively for a job now */
    /* Times a sleeping thread was woken and found no job to take (another
     * thread took it first): wake-ups that cost a context switch for
     * nothing. */
    uint64_t futile_wakeups;
} mcp_pool_stats_t;

/*
 * Creates a pool that will run at most `max_threads` jobs at once and keeps
 * up to `min_threads` threads alive when idle; other threads exit after
 * `idle_ms` milliseconds without work (0: as soon as the queue is empty).
 * No thread is started here. Returns NULL when allocation fails or the
 * arguments are out of range (0 <= min_threads <= max_threads,
 * max_threads >= 1, idle_ms >= 0).
 */
mcp_pool_t *mcp_pool_new(int min_threads, int max_threads, int idle_ms);

/*
 * Lets one idle thread among the first min_threads wait actively for the
 * next job for up to budget_us before it sleeps (src/spin.h; <= 0: never,
 * the default). A job submitted moments after the last one finished then
 * finds that thread awake instead of paying a wake-up. One thread at a
 * time, so that the pool never holds more than one CPU while it waits.
 */
void mcp_pool_set_spin(mcp_pool_t *pool, int budget_us);

/*
 * Queues `fn(arg)` to run on a worker thread, starting a thread when none
 * is idle and fewer than max_threads are alive. Returns:
 *   MCP_OK        the job will run (the pool owns nothing: `arg` stays the
 *                 caller's business);
 *   MCP_EINVAL    `fn` is NULL;
 *   MCP_ECLOSED   mcp_pool_shutdown() has begun and the caller is not one of
 *                 this pool's jobs (see below); the job will not run;
 *   MCP_ENOMEM    the queue could not grow, or the pool has no thread and
 *                 none could be started; the job will not run.
 * When a thread cannot be started but others are alive, the job stays
 * queued for them and MCP_OK is returned.
 *
 * A job may submit further jobs. That keeps working during shutdown: a job
 * of this pool that submits while the pool drains is accepted, and the new
 * job runs before mcp_pool_shutdown() returns, so that work a job hands on
 * is never lost. (A job that resubmits itself forever therefore keeps
 * shutdown waiting forever.)
 */
int mcp_pool_submit(mcp_pool_t *pool, mcp_pool_job_fn fn, void *arg);

/*
 * Did the last job this thread submitted, to any pool, go straight to a
 * pool thread that was waiting actively for work (the only job queued, a
 * thread spinning)? Such a job is running within microseconds, so a
 * submitter that would otherwise park until its outcome may wait a moment
 * for it instead. Clears the answer: a second call says false until the
 * next submission. Per thread; cannot fail.
 */
bool mcp_pool_take_direct_handoff(void);

/*
 * Stops accepting jobs from outside the pool, lets queued and running jobs
 * (and the jobs they submit) finish, then joins every thread. Idempotent.
 * Must not be called from a job of this pool.
 */
void mcp_pool_shutdown(mcp_pool_t *pool);

/* Shuts the pool down if that has not happened yet, then frees it.
 * NULL-safe. Must not be called from a job of this pool. */
void mcp_pool_free(mcp_pool_t *pool);

/* Fills *out with a consistent snapshot of the pool's counters. */
void mcp_pool_get_stats(mcp_pool_t *pool, mcp_pool_stats_t *out);

#endif /* MCP_SERVER_WORKER_POOL_H */
