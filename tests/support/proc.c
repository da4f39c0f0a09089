/*
 * proc: running programs with captured output (see proc.h).
 */
#define _GNU_SOURCE
#include "proc.h"
#include "test_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

/* The test's environment with `extra` applied (a new array of borrowed
 * and static strings; free the array only). */
static char **environment(const char *const *extra)
{
    size_t n = 0, n_extra = 0;
    while (environ[n])
        n++;
    while (extra && extra[n_extra])
        n_extra++;
    char **env = calloc(n + n_extra + 1, sizeof *env);
    assert_non_null(env);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < n_extra; j++) {
            const char *eq = strchr(extra[j], '=');
            size_t name_len = eq ? (size_t)(eq - extra[j]) : strlen(extra[j]);
            if (strncmp(environ[i], extra[j], name_len) == 0 && environ[i][name_len] == '=')
                replaced = true;
        }
        if (!replaced)
            env[used++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        if (strchr(extra[j], '='))
            env[used++] = (char *)extra[j];
    return env;
}

void proc_start(proc_t *p, const char *const *argv, const char *const *env, const char *input)
{
    memset(p, 0, sizeof *p);
    signal(SIGPIPE, SIG_IGN);
    int out[2], err[2], in[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char **envp = environment(env);
    int rc = posix_spawn(&p->pid, argv[0], &fa, &attr, (char *const *)argv, envp);
    free(envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    close(err[1]);
    close(in[0]);
    if (rc != 0)
        fail_msg("cannot start %s: %s", argv[0], strerror(rc));
    /* The input is small: a pipe holds it whole. */
    if (input && *input) {
        ssize_t n = write(in[1], input, strlen(input));
        assert_int_equal(n, (ssize_t)strlen(input));
    }
    close(in[1]);
    p->fd[0] = out[0];
    p->fd[1] = err[0];
}

/* Reads what is there (waiting up to wait_ms). False once both streams
 * ended. */
static bool pump(proc_t *p, int wait_ms)
{
    struct pollfd fds[2] = {{p->fd[0], POLLIN, 0}, {p->fd[1], POLLIN, 0}};
    if (p->fd[0] < 0 && p->fd[1] < 0)
        return false;
    int n = poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR)
        fail_msg("poll: %s", strerror(errno));
    for (int s = 0; n > 0 && s < 2; s++) {
        if (p->fd[s] < 0 || !fds[s].revents)
            continue;
        if (p->len[s] + 4096 + 1 > p->cap[s]) {
            p->cap[s] = p->cap[s] ? p->cap[s] * 2 : 8192;
            p->buf[s] = realloc(p->buf[s], p->cap[s]);
            assert_non_null(p->buf[s]);
        }
        ssize_t got = read(p->fd[s], p->buf[s] + p->len[s], 4096);
        if (got > 0) {
            p->len[s] += (size_t)got;
        } else if (got == 0 || errno != EINTR) {
            close(p->fd[s]);
            p->fd[s] = -1;
        }
    }
    return true;
}

const char *proc_output(proc_t *p, proc_stream_t stream)
{
    if (!p->buf[stream]) {
        p->cap[stream] = 8192;
        p->buf[stream] = calloc(1, p->cap[stream]);
        assert_non_null(p->buf[stream]);
    }
    p->buf[stream][p->len[stream]] = '\0';
    return p->buf[stream];
}

bool proc_wait_for(proc_t *p, proc_stream_t stream, const char *text, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        if (strstr(proc_output(p, stream), text))
            return true;
        int64_t left = deadline - now_ms();
        if (left <= 0 || !pump(p, (int)(left > 200 ? 200 : left)))
            return strstr(proc_output(p, stream), text) != NULL;
    }
}

void proc_signal(proc_t *p, int sig)
{
    kill(p->pid, sig);
}

void proc_finish(proc_t *p, proc_result_t *r, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    bool late = false;
    while (pump(p, 200))
        if (now_ms() > deadline && !late) {
            late = true;
            kill(p->pid, SIGKILL);
        }
    int status = 0;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    memset(r, 0, sizeof *r);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    proc_output(p, PROC_STDOUT);
    r->out_len = p->len[PROC_STDOUT];
    r->out = malloc(r->out_len + 1);
    assert_non_null(r->out);
    memcpy(r->out, p->buf[PROC_STDOUT], r->out_len + 1);
    r->err = strdup(proc_output(p, PROC_STDERR));
    free(p->buf[0]);
    free(p->buf[1]);
    r->json = json_loads(r->out, 0, NULL);
    if (late)
        fail_msg("the program did not end within %d ms; stderr:\n%s", timeout_ms, r->err);
}

void proc_run(proc_result_t *r, const char *const *argv, const char *const *env,
              const char *input)
{
    proc_t p;
    proc_start(&p, argv, env, input);
    proc_finish(&p, r, 60000);
}

void proc_result_free(proc_result_t *r)
{
    free(r->out);
    free(r->err);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}
