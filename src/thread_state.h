/*
 * thread_state.h - what Linux says of this process's threads: is one
 * blocked, and how many CPUs may they run on?
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

/* The CPUs this process may run on (its affinity mask), at least 1: what
 * sizes the HTTP event threads and decides whether to wait actively
 * (spin.h). A system call: read it once. Thread-safe. */
int mcp_cpus_usable(void);

#endif /* MCP_THREAD_STATE_H */
