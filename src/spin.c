/* A short, polite active wait; see spin.h for when and why. */
#include "spin.h"
#include "thread_state.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static bool several_cpus;
static pthread_once_t cpus_once = PTHREAD_ONCE_INIT;

/* Read once: a process that later widens its affinity mask keeps the
 * first answer, which errs on the side of not spinning. */
static void count_cpus(void)
{
    several_cpus = mcp_cpus_usable() > 1;
}

int mcp_spin_budget_us(int configured_us)
{
    if (configured_us < 0)
        return 0;
    pthread_once(&cpus_once, count_cpus);
    if (!several_cpus)
        return 0;
    if (configured_us == 0)
        return MCP_SPIN_DEFAULT_US;
    return configured_us > MCP_SPIN_MAX_US ? MCP_SPIN_MAX_US : configured_us;
}

bool mcp_spin_until_helping(const bool *flag, int budget_us, void (*help)(void *), void *arg)
{
    if (budget_us <= 0)
        return false;
    int64_t until = now_ns() + (int64_t)budget_us * 1000;
    for (;;) {
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
            return true;
        if (help) {
            help(arg);
            if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
                return true;
        }
        if (now_ns() >= until)
            return false;
        sched_yield();
    }
}

bool mcp_spin_until(const bool *flag, int budget_us)
{
    return mcp_spin_until_helping(flag, budget_us, NULL, NULL);
}

int mcp_spin_poll(struct pollfd *fds, nfds_t n, int budget_us)
{
    if (budget_us <= 0)
        return 0;
    int64_t until = now_ns() + (int64_t)budget_us * 1000;
    for (;;) {
        int ready = poll(fds, n, 0);
        if (ready != 0 || now_ns() >= until)
            return ready;
        sched_yield();
    }
}

int mcp_spin_epoll(int epfd, struct epoll_event *events, int max_events, int budget_us)
{
    if (budget_us <= 0)
        return 0;
    int64_t until = now_ns() + (int64_t)budget_us * 1000;
    for (;;) {
        int n = epoll_wait(epfd, events, max_events, 0);
        if (n != 0 || now_ns() >= until)
            return n;
        sched_yield();
    }
}
