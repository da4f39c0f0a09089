/* A server child process over stdio pipes; see stdio_child.h. */
#define _GNU_SOURCE

#include "stdio_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/jsonrpc.h"
#include "test_clock.h"

extern char **environ;

void stdio_child_start(stdio_child_t *child, const char *path, char *const argv[],
                       char *const env[])
{
    memset(child, 0, sizeof *child);
    signal(SIGPIPE, SIG_IGN);
    int to_child[2], from_child[2];
    assert_int_equal(pipe2(to_child, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from_child, O_CLOEXEC), 0);

    /* The environment: ours plus the extra entries. */
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env])
        n_env++;
    while (env && env[n_extra])
        n_extra++;
    char **envp = calloc(n_env + n_extra + 1, sizeof *envp);
    assert_non_null(envp);
    memcpy(envp, environ, n_env * sizeof *envp);
    for (size_t i = 0; i < n_extra; i++)
        envp[n_env + i] = env[i];

    char *const default_argv[] = {(char *)path, NULL};
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. */
        if (dup2(to_child[0], 0) < 0 || dup2(from_child[1], 1) < 0)
            _exit(126);
        execve(path, argv ? argv : default_argv, envp);
        _exit(127);
    }
    free(envp);
    close(to_child[0]);
    close(from_child[1]);
    child->pid = pid;
    child->in_fd = to_child[1];
    child->out_fd = from_child[0];
}

void stdio_child_send_raw(stdio_child_t *child, const char *bytes, size_t len)
{
    assert_true(child->in_fd >= 0);
    while (len > 0) {
        ssize_t n = write(child->in_fd, bytes, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail_msg("writing to the server failed: %s", strerror(errno));
        bytes += n;
        len -= (size_t)n;
    }
}

void stdio_child_send(stdio_child_t *child, const json_t *msg)
{
    size_t len = 0;
    char *line = mcp_json_dump(msg, &len);
    assert_non_null(line);
    line[len] = '\n'; /* replaces the terminating NUL */
    stdio_child_send_raw(child, line, len + 1);
    free(line);
}

/* Takes one complete line out of the buffer, or NULL. */
static char *take_line(stdio_child_t *child)
{
    char *nl = child->used ? memchr(child->buf, '\n', child->used) : NULL;
    if (!nl)
        return NULL;
    size_t len = (size_t)(nl - child->buf);
    char *line = malloc(len + 1);
    assert_non_null(line);
    memcpy(line, child->buf, len);
    line[len] = '\0';
    child->used -= len + 1;
    memmove(child->buf, nl + 1, child->used);
    return line;
}

json_t *stdio_child_read(stdio_child_t *child, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    char *line;
    while (!(line = take_line(child))) {
        if (child->eof)
            return NULL;
        int left = (int)(deadline - now_ms());
        if (left <= 0)
            return NULL;
        struct pollfd pfd = {.fd = child->out_fd, .events = POLLIN};
        int rc = poll(&pfd, 1, left);
        if (rc < 0 && errno == EINTR)
            continue;
        assert_true(rc >= 0);
        if (rc == 0)
            return NULL;
        if (child->cap - child->used < 65536) {
            child->cap = child->cap ? child->cap * 2 : 131072;
            child->buf = realloc(child->buf, child->cap);
            assert_non_null(child->buf);
        }
        ssize_t n = read(child->out_fd, child->buf + child->used, child->cap - child->used);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n >= 0);
        if (n == 0) {
            child->eof = true;
            if (child->used)
                fail_msg("the server's output ends with an unterminated line");
        }
        child->used += (size_t)n;
    }
    json_error_t jerr;
    json_t *msg = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(msg))
        fail_msg("the server wrote a line that is not a JSON object: %.200s", line);
    free(line);
    return msg;
}

json_t *stdio_child_read_response(stdio_child_t *child, int timeout_ms, json_t *before)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int left = (int)(deadline - now_ms());
        json_t *msg = stdio_child_read(child, left > 0 ? left : 0);
        if (!msg)
            fail_msg("no response from the server within %d ms", timeout_ms);
        /* A response has a result or an error (an error to a message
         * whose id could not be read has no id). */
        if (json_object_get(msg, "result") || json_object_get(msg, "error"))
            return msg;
        if (before)
            json_array_append(before, msg);
        json_decref(msg);
    }
}

void stdio_child_close_stdin(stdio_child_t *child)
{
    if (child->in_fd >= 0)
        close(child->in_fd);
    child->in_fd = -1;
}

int stdio_child_wait(stdio_child_t *child, int timeout_ms)
{
    stdio_child_close_stdin(child);
    int64_t deadline = now_ms() + timeout_ms;
    int status = 0;
    int result = -1;
    for (;;) {
        pid_t done = waitpid(child->pid, &status, WNOHANG);
        if (done == child->pid) {
            result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (now_ms() >= deadline) {
            kill(child->pid, SIGKILL);
            waitpid(child->pid, &status, 0);
            break;
        }
        struct timespec pause = {0, 10 * 1000000L};
        nanosleep(&pause, NULL);
    }
    close(child->out_fd);
    free(child->buf);
    child->buf = NULL;
    child->used = child->cap = 0;
    return result;
}
