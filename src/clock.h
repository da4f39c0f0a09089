/*
 * clock.h - monotonic time for timeouts and deadlines.
 *
 * Every wait in libmcp (a request's timeout, an idle worker, a stream that
 * must open in time) measures on CLOCK_MONOTONIC, so that setting the wall
 * clock neither fires nor stalls a timeout. Condition variables that wait
 * on these deadlines are created with mcp_clock_cond_init().
 *
 * The functions are thread-safe and cannot fail.
 */
#ifndef MCP_CLOCK_H
#define MCP_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds on the monotonic clock; only differences are meaningful. */
int64_t mcp_clock_ms(void);

/* Microseconds on the monotonic clock; only differences are meaningful. */
int64_t mcp_clock_us(void);

/* Milliseconds read from the coarse monotonic clock: a few milliseconds
 * behind at most, and several times cheaper to read, for timeouts counted
 * in seconds that are restarted on every request. */
int64_t mcp_clock_coarse_ms(void);

/* The monotonic instant `ms` milliseconds from now, for
 * pthread_cond_timedwait on a monotonic condition variable. A negative
 * `ms` is taken as 0. */
struct timespec mcp_clock_deadline(int64_t ms);

/* The same instant on the wall clock (CLOCK_REALTIME), for the waits that
 * count on it, such as pthread_mutex_timedlock(): a wall clock stepped
 * during the wait stretches or shortens it. */
struct timespec mcp_clock_wall_deadline(int64_t ms);

/* Initialises `cond` to time its waits on the monotonic clock, as
 * mcp_clock_deadline() needs. (Linux cannot fail this.) */
void mcp_clock_cond_init(pthread_cond_t *cond);

#endif /* MCP_CLOCK_H */
