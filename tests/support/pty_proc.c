/*
 * pty_proc: a program on a pseudo-terminal (see pty_proc.h).
 */
#define _GNU_SOURCE
#include "pty_proc.h"
#include "test_clock.h"

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

void pty_start(pty_proc_t *p, const char *const *argv, const char *const *env)
{
    memset(p, 0, sizeof *p);
    p->cap = 16384;
    p->seen = calloc(1, p->cap);
    assert_non_null(p->seen);
    /* The environment is built before fork: the child only execs. */
    size_t n = 0, n_extra = 0;
    while (environ[n])
        n++;
    while (env && env[n_extra])
        n_extra++;
    char **envp = calloc(n + n_extra + 1, sizeof *envp);
    assert_non_null(envp);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < n_extra; j++) {
            const char *eq = strchr(env[j], '=');
            size_t name_len = eq ? (size_t)(eq - env[j]) : strlen(env[j]);
            replaced = replaced || (strncmp(environ[i], env[j], name_len) == 0 &&
                                    environ[i][name_len] == '=');
        }
        if (!replaced)
            envp[used++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        if (strchr(env[j], '='))
            envp[used++] = (char *)env[j];

    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    p->pid = forkpty(&p->fd, NULL, NULL, &ws);
    if (p->pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], (char *const *)argv, envp);
        _exit(127);
    }
    free(envp);
    assert_true(p->pid > 0);
}

/* Reads what is there, waiting up to wait_ms; false at EOF. */
static bool pump(pty_proc_t *p, int wait_ms)
{
    if (p->fd < 0)
        return false;
    struct pollfd fd = {p->fd, POLLIN, 0};
    int n = poll(&fd, 1, wait_ms);
    if (n <= 0)
        return true;
    if (p->len + 4096 + 1 > p->cap) {
        p->cap *= 2;
        p->seen = realloc(p->seen, p->cap);
        assert_non_null(p->seen);
    }
    ssize_t got = read(p->fd, p->seen + p->len, 4096);
    if (got > 0) {
        p->len += (size_t)got;
        p->seen[p->len] = '\0';
        return true;
    }
    if (got < 0 && errno == EINTR)
        return true;
    /* EIO: the program closed the terminal (it ended). */
    close(p->fd);
    p->fd = -1;
    return false;
}

bool pty_expect(pty_proc_t *p, const char *text, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        const char *found = strstr(p->seen + p->mark, text);
        if (found) {
            p->mark = (size_t)(found - p->seen) + strlen(text);
            return true;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0 || !pump(p, (int)(left > 200 ? 200 : left)))
            return false;
    }
}

void pty_send(pty_proc_t *p, const char *text)
{
    size_t len = strlen(text);
    assert_true(p->fd >= 0);
    assert_int_equal(write(p->fd, text, len), (ssize_t)len);
}

int pty_finish(pty_proc_t *p, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    bool late = false;
    int status = 0;
    for (;;) {
        pid_t done = waitpid(p->pid, &status, WNOHANG);
        if (done == p->pid)
            break;
        if (now_ms() > deadline && !late) {
            late = true;
            kill(p->pid, SIGKILL);
        }
        pump(p, 50);
    }
    while (pump(p, 0) && p->fd >= 0) {
        struct pollfd fd = {p->fd, POLLIN, 0};
        if (poll(&fd, 1, 0) <= 0)
            break;
    }
    if (late)
        fail_msg("the program did not end within %d ms; it wrote:\n%s", timeout_ms, p->seen);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *pty_output(const pty_proc_t *p)
{
    return p->seen;
}

void pty_free(pty_proc_t *p)
{
    if (p->fd >= 0)
        close(p->fd);
    free(p->seen);
    memset(p, 0, sizeof *p);
}
