/*
 * lend.h - a transport's thread lent to a handler, taken back if it is slow.
 *
 * Handlers run on the worker pool so that a slow one never holds up the
 * event thread that read its request. Most handlers finish in
 * microseconds, though, and for them the hand-off costs more than the
 * handler: queueing the job, waking a worker, and two threads taking turns
 * on the CPUs cost ~2 µs of machine time per HTTP request, a fifth of the
 * throughput of a trivial tool (docs/benchmarks.md).
 *
 * So a transport whose event loop can move to another thread offers its
 * thread here, while it reads a request. The server runs the handler at
 * once on that thread. If the handler has held it MCP_LEND_BUDGET_US and
 * blocks, or computes, the transport gives its event loop to a new
 * thread: the loop's other connections wait about one to two budgets,
 * once (longer only while every CPU is busy, when another thread would
 * wait for one too).
 * The lent thread finishes the handler, sends its answer as a worker would,
 * and exits. The server then sends later calls of that handler to the
 * pool, where blocking costs nothing.
 *
 * Only the thread that set mcp_thread_lender uses it: there is no locking.
 */
#ifndef MCP_LEND_H
#define MCP_LEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* How long a handler may hold a lent thread before the transport moves its
 * event loop to another. */
#define MCP_LEND_BUDGET_US 1000

typedef struct mcp_lender mcp_lender_t;

struct mcp_lender {
    /* May a handler run on this thread now? True: it may, and the lender
     * watches the time from here. False: use the pool (the thread is not
     * reading a request, is lent already, or the transport is stopping). */
    bool (*begin)(mcp_lender_t *self);
    /* The handler returned. True: the thread is still the transport's and
     * goes on. False: its event loop moved to another thread while the
     * handler ran; the caller finishes what it was doing for the request
     * and returns, and the transport retires the thread. Called once per
     * begin() that returned true. */
    bool (*end)(mcp_lender_t *self);
};

/* The lender of the calling thread, or NULL: set by a transport on its own
 * event threads (the built-in HTTP engine, the stdio reader), NULL
 * everywhere else. */
extern _Thread_local mcp_lender_t *mcp_thread_lender;

/*
 * A lender's transport is watched by a thread of its own (its watchdog),
 * which looks every MCP_LEND_BUDGET_US while a handler holds the lent
 * thread. What it needs to judge that thread, and how it judges, is the
 * same for every transport: this.
 */

/*
 * A lender's lend word: a sequence number counting its lends and, in the
 * lowest bit, whether its thread is lent now. The words of one lender
 * differ from lend to lend, so a thread that takes the transport over
 * names the lend it ends.
 */
#define MCP_LEND_LENT 1u

typedef struct mcp_lend_watch {
    /* Set by the thread that serves the transport, when it starts to
     * (mcp_lend_watch_serve()), and at each lend (lent_at_us). */
    _Atomic int64_t lent_at_us;     /* mcp_clock_us() when the handler started */
    _Atomic pid_t thread_id;        /* gettid() of the serving thread */
    _Atomic clockid_t thread_clock; /* its CPU-time clock */
    /* The watchdog's own: the lend it last looked at closely, and the CPU
     * time its thread had used then. */
    uint64_t probed;
    int64_t probed_cpu_ns;
} mcp_lend_watch_t;

/* Ready to use, with no thread serving yet. */
void mcp_lend_watch_init(mcp_lend_watch_t *watch);

/* The calling thread serves the transport from now on: the watchdog will
 * look at this thread. */
void mcp_lend_watch_serve(mcp_lend_watch_t *watch);

/* A lend starts now, on the serving thread. */
void mcp_lend_watch_lent(mcp_lend_watch_t *watch);

/*
 * Has the handler of lend `word` held the thread too long (never, when
 * the word says the thread is not lent), so that the watchdog should give the transport to a new thread?
 * When it has held it MCP_LEND_BUDGET_US and is blocked, yes. When it is
 * not blocked, it either computes or waits for a CPU: this notes the
 * thread's CPU time, and at the next look (a budget later) says yes if the
 * thread computed for at least half of the time between. A thread that
 * does neither waits for a CPU, which a new thread would wait for too: it
 * keeps the transport up to 20 budgets. For the watchdog's thread only.
 */
bool mcp_lend_overdue(mcp_lend_watch_t *watch, uint64_t word, int64_t now_us);

/*
 * The watchdog thread itself. It calls look() every MCP_LEND_BUDGET_US
 * while the transport lends, and sleeps once a hundred looks in a row saw
 * no lend begin or end, until mcp_lend_watchdog_lent() wakes it: an idle
 * transport costs no wake-ups.
 */
typedef struct mcp_lend_watchdog {
    /* One look at every lent thread of the transport, giving the work of
     * those overdue (mcp_lend_overdue()) to new threads. Returns a sum of
     * the transport's lend words: the same sum as at the last look says
     * that no lend began or ended between. On the watchdog's thread. */
    uint64_t (*look)(void *user, int64_t now_us);
    /* Is a thread of the transport lent now? On the watchdog's thread. */
    bool (*any_lent)(void *user);
    void *user;

    /* The watchdog's own. */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop; /* under lock */
    atomic_bool idle;
} mcp_lend_watchdog_t;

/* Ready to start, looking with look() and any_lent() at `user`. */
void mcp_lend_watchdog_init(mcp_lend_watchdog_t *watchdog, uint64_t (*look)(void *, int64_t),
                            bool (*any_lent)(void *), void *user);

/* Starts the thread; false when it cannot be started. Once. */
bool mcp_lend_watchdog_start(mcp_lend_watchdog_t *watchdog);

/* A lend began: wakes the watchdog if it sleeps. Call it after storing the
 * lend word with sequential consistency: either the watchdog sees that
 * lend before it sleeps, or this sees it asleep. Any thread. */
void mcp_lend_watchdog_lent(mcp_lend_watchdog_t *watchdog);

/* Stops the thread and waits for it (nothing when it never started). No
 * look happens after it returns. */
void mcp_lend_watchdog_stop(mcp_lend_watchdog_t *watchdog);

/* Frees what init() made; after stop(). */
void mcp_lend_watchdog_destroy(mcp_lend_watchdog_t *watchdog);

/* The serving thread lends itself: notes the time in `watch`, stores the
 * next lend word (lent) in *lend with sequential consistency and wakes
 * `watchdog` if it sleeps. Returns the word, for mcp_lend_settle(). */
uint64_t mcp_lend_begin(_Atomic uint64_t *lend, mcp_lend_watch_t *watch,
                        mcp_lend_watchdog_t *watchdog);

/* Ends lend `word` for whichever thread comes first: the lent one, its
 * handler returned (true: it serves on), or one that takes the transport
 * over (true: it serves from now on). The other one gets false. */
bool mcp_lend_settle(_Atomic uint64_t *lend, uint64_t word);

#endif /* MCP_LEND_H */
