/*
 * The active wait (src/spin.c): budgets resolve as documented (0 picks the
 * default, negative is off, large ones are clamped, one CPU means off),
 * and both waits end as soon as what they wait for happens, or when the
 * budget is spent, and not before.
 */
#define _GNU_SOURCE /* sched_setaffinity, pipe2 */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "spin.h"

static int64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* The budget resolution reads the CPU count once per process, so each
 * case runs in a child of its own, pinned to `cpus` CPUs first. The exit
 * status carries the answers' agreement with what is expected. */
static void expect_budgets_with_cpus(int cpus, const int configured[], const int expected[],
                                     size_t n)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) != 0)
            _exit(2);
        if (CPU_COUNT(&set) < cpus)
            _exit(3); /* this machine cannot show the case */
        cpu_set_t use;
        CPU_ZERO(&use);
        for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < cpus; cpu++)
            if (CPU_ISSET(cpu, &set)) {
                CPU_SET(cpu, &use);
                taken++;
            }
        if (sched_setaffinity(0, sizeof use, &use) != 0)
            _exit(2);
        for (size_t i = 0; i < n; i++)
            if (mcp_spin_budget_us(configured[i]) != expected[i])
                _exit(10 + (int)i);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_budgets_with_several_cpus(void **state)
{
    (void)state;
    static const int configured[] = {0, -1, -50, 1, 200, MCP_SPIN_MAX_US, MCP_SPIN_MAX_US + 1,
                                     1000000};
    static const int expected[] = {MCP_SPIN_DEFAULT_US, 0, 0, 1, 200, MCP_SPIN_MAX_US,
                                   MCP_SPIN_MAX_US, MCP_SPIN_MAX_US};
    expect_budgets_with_cpus(2, configured, expected, sizeof configured / sizeof configured[0]);
}

/* With one CPU the peer needs the CPU a spinner would hold: never spin. */
static void test_no_budget_with_one_cpu(void **state)
{
    (void)state;
    static const int configured[] = {0, -1, 200, 1000000};
    static const int expected[] = {0, 0, 0, 0};
    expect_budgets_with_cpus(1, configured, expected, sizeof configured / sizeof configured[0]);
}

typedef struct later {
    int delay_us;
    bool flag;   /* set with release ordering after delay_us */
    int fd;      /* or, when >= 0, a byte written to it */
} later_t;

static void *act_later(void *arg)
{
    later_t *l = arg;
    struct timespec pause = {0, (long)l->delay_us * 1000};
    nanosleep(&pause, NULL);
    if (l->fd >= 0) {
        char b = 1;
        assert_int_equal(write(l->fd, &b, 1), 1);
    } else {
        __atomic_store_n(&l->flag, true, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void test_until_sees_the_flag(void **state)
{
    (void)state;
    /* Already set: true at once. */
    bool set = true;
    assert_true(mcp_spin_until(&set, 100));

    /* Set by another thread 2 ms into a 2 s budget: seen long before the
     * budget ends. */
    later_t l = {.delay_us = 2000, .fd = -1};
    pthread_t t;
    int64_t start = now_us();
    assert_int_equal(pthread_create(&t, NULL, act_later, &l), 0);
    assert_true(mcp_spin_until(&l.flag, 2000000));
    int64_t took = now_us() - start;
    pthread_join(t, NULL);
    assert_true(took >= 2000);
    assert_true(took < 1000000);
}

static void test_until_gives_up_after_the_budget(void **state)
{
    (void)state;
    bool never = false;
    int64_t start = now_us();
    assert_false(mcp_spin_until(&never, 3000));
    assert_true(now_us() - start >= 3000);

    /* No budget: no wait, not even a look at a flag that is set. */
    bool set = true;
    assert_false(mcp_spin_until(&set, 0));
    assert_false(mcp_spin_until(&set, -5));
}

static void test_poll_sees_input(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);

    /* Nothing to read: 0 once the budget is spent, and not before. */
    struct pollfd fds[1] = {{.fd = p[0], .events = POLLIN}};
    int64_t start = now_us();
    assert_int_equal(mcp_spin_poll(fds, 1, 3000), 0);
    assert_true(now_us() - start >= 3000);
    assert_int_equal(mcp_spin_poll(fds, 1, 0), 0);

    /* A byte written 2 ms into a 2 s budget is seen long before its end. */
    later_t l = {.delay_us = 2000, .fd = p[1]};
    pthread_t t;
    start = now_us();
    assert_int_equal(pthread_create(&t, NULL, act_later, &l), 0);
    assert_int_equal(mcp_spin_poll(fds, 1, 2000000), 1);
    int64_t took = now_us() - start;
    pthread_join(t, NULL);
    assert_true(fds[0].revents & POLLIN);
    assert_true(took >= 2000);
    assert_true(took < 1000000);

    /* Input waiting: a budget of 0 still means no look at all; any other
     * budget sees it at once. */
    assert_int_equal(mcp_spin_poll(fds, 1, 0), 0);
    assert_int_equal(mcp_spin_poll(fds, 1, 1), 1);

    /* A descriptor that is not open is an answer too (POLLNVAL). */
    struct pollfd bad[1] = {{.fd = p[1], .events = POLLIN}};
    close(p[1]);
    assert_int_equal(mcp_spin_poll(bad, 1, 1000), 1);
    assert_true(bad[0].revents & POLLNVAL);
    close(p[0]);
}

static void test_epoll_sees_events(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    assert_true(epfd >= 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
    assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_ADD, p[0], &ev), 0);
    struct epoll_event got[4];

    /* Nothing ready: 0 once the budget is spent, and not before. */
    int64_t start = now_us();
    assert_int_equal(mcp_spin_epoll(epfd, got, 4, 3000), 0);
    assert_true(now_us() - start >= 3000);

    /* A byte written 2 ms into a 2 s budget is seen long before its end. */
    later_t l = {.delay_us = 2000, .fd = p[1]};
    pthread_t t;
    start = now_us();
    assert_int_equal(pthread_create(&t, NULL, act_later, &l), 0);
    assert_int_equal(mcp_spin_epoll(epfd, got, 4, 2000000), 1);
    int64_t took = now_us() - start;
    pthread_join(t, NULL);
    assert_int_equal(got[0].data.u32, 7);
    assert_true(got[0].events & EPOLLIN);
    assert_true(took >= 2000);
    assert_true(took < 1000000);

    /* Ready, but no budget: no look at all. */
    assert_int_equal(mcp_spin_epoll(epfd, got, 4, 0), 0);
    assert_int_equal(mcp_spin_epoll(epfd, got, 4, -1), 0);

    /* A descriptor that is not an epoll set fails at once. */
    assert_int_equal(mcp_spin_epoll(p[0], got, 4, 1000000), -1);
    close(epfd);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budgets_with_several_cpus),
        cmocka_unit_test(test_no_budget_with_one_cpu),
        cmocka_unit_test(test_until_sees_the_flag),
        cmocka_unit_test(test_until_gives_up_after_the_budget),
        cmocka_unit_test(test_poll_sees_input),
        cmocka_unit_test(test_epoll_sees_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
