/*
 * Time for the tests: monotonic milliseconds to measure what took how
 * long, and a sleep that sleeps its whole time even when a signal cuts it
 * short. Header-only, for tests and test support alike.
 */
#ifndef MCP_TEST_CLOCK_H
#define MCP_TEST_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The instant `ms` milliseconds from now on `clock`: CLOCK_REALTIME for
 * pthread_cond_timedwait on a default condition variable and
 * pthread_timedjoin_np, CLOCK_MONOTONIC for a monotonic condition. */
static inline struct timespec time_in(clockid_t clock, int ms)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif /* MCP_TEST_CLOCK_H */
