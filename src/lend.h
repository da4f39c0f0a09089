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

#include <stdbool.h>

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
 * event threads (the built-in HTTP engine), NULL everywhere else. */
extern _Thread_local mcp_lender_t *mcp_thread_lender;

#endif /* MCP_LEND_H */
