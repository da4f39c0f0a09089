/*
 * spin.h - a short, polite active wait before sleeping.
 *
 * A thread that sleeps in poll() or on a condition variable and is woken
 * a few microseconds later pays for the wake-up: on virtual machines an
 * idle vCPU halts, and waking it costs tens of microseconds (a bare C
 * ping-pong over two pipes measured 13k round trips/s sleeping and 480k
 * spinning on a 2-vCPU VM). Where the answer usually comes within
 * microseconds (a stdio peer answering, the next request of a sequential
 * client) libmcp first waits actively for a bounded time.
 *
 * The wait is polite: between checks it calls sched_yield(), so any thread
 * ready to run on the same CPU runs first. It costs at most the budget in
 * CPU time per wait, and it is off on a machine (or affinity mask) with a
 * single CPU, where the peer needs the CPU the spinner would hold.
 *
 * All functions are thread-safe and cannot fail.
 */
#ifndef MCP_SPIN_H
#define MCP_SPIN_H

#include <poll.h>
#include <stdbool.h>

/* The budget libmcp picks when an option leaves it at 0. */
#define MCP_SPIN_DEFAULT_US 50
/* The largest budget accepted; larger ones are clamped to it. */
#define MCP_SPIN_MAX_US 10000

/* The budget in microseconds for an option's value: 0 picks
 * MCP_SPIN_DEFAULT_US, a negative value turns spinning off (0), and a value
 * above MCP_SPIN_MAX_US is clamped. 0 as well when this process may run on
 * only one CPU. */
int mcp_spin_budget_us(int configured_us);

/* Waits actively, up to budget_us, until *flag is true. The flag is read
 * with acquire ordering, so its writer must store it with release ordering
 * (__atomic_store_n(..., __ATOMIC_RELEASE)). Returns whether it became
 * true; false at once when budget_us <= 0. */
bool mcp_spin_until(const bool *flag, int budget_us);

/* poll(fds, n, 0) again and again, up to budget_us, until one of the
 * descriptors is ready. Returns what the last poll() returned: > 0 when
 * ready, 0 when the budget ran out (or budget_us <= 0), -1 on an error
 * (errno set; EINTR is not retried, as with poll()). */
int mcp_spin_poll(struct pollfd *fds, nfds_t n, int budget_us);

/* epoll_wait(epfd, events, max_events, 0) again and again, up to
 * budget_us, until it reports events. Returns what the last call returned:
 * the number of events, 0 when the budget ran out (or budget_us <= 0), -1
 * on an error (errno set; EINTR is not retried). */
struct epoll_event;
int mcp_spin_epoll(int epfd, struct epoll_event *events, int max_events, int budget_us);

/* mcp_spin_until(), calling help(arg) between looks at the flag: for a
 * waiter that can make its answer come sooner (read it off the connection
 * itself). help must not block. */
bool mcp_spin_until_helping(const bool *flag, int budget_us, void (*help)(void *), void *arg);

#endif /* MCP_SPIN_H */
