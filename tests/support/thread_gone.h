/*
 * Waiting for a thread of this process to end, by its kernel id: for tests
 * of a transport whose lent thread ends on its own once its handler has
 * returned. Header-only.
 */
#ifndef MCP_TEST_THREAD_GONE_H
#define MCP_TEST_THREAD_GONE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "test_clock.h"

/* Waits up to `ms` for thread `tid` of this process to end; false if it
 * still runs then. */
static inline bool thread_gone_within(pid_t tid, int ms)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
    struct timespec pause = {0, 1000000L};
    for (int64_t start = now_ms(); access(path, F_OK) == 0;) {
        if (now_ms() - start > ms)
            return false;
        nanosleep(&pause, NULL);
    }
    return true;
}

#endif /* MCP_TEST_THREAD_GONE_H */
