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

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif /* MCP_TEST_CLOCK_H */
