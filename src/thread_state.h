/*
 * thread_state.h - is a thread of this process blocked, as Linux sees it?
 *
 * The worker pool (a busy thread blocked in its job is worth replacing)
 * and the HTTP engine's watchdog (a handler blocked on a lent event thread
 * is worth moving the loop away from) both need to tell a thread that
 * waits for something from one that computes or waits for a CPU: on a
 * loaded machine a thread can wait for a CPU for milliseconds, and
 * starting another thread then only adds a contender.
 */
#ifndef MCP_THREAD_STATE_H
#define MCP_THREAD_STATE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Whether thread `tid` of this process is blocked: sleeping, waiting for
 * I/O or stopped, rather than running or ready to run. Read from the state
 * field of /proc/self/task/TID/stat (a system call or three: for the
 * occasional look, not for every request). When it cannot be read, the
 * thread counts as blocked. Thread-safe.
 */
bool mcp_thread_blocked(pid_t tid);

#endif /* MCP_THREAD_STATE_H */
