/*
 * Sampling through --sample-command.
 */
#include "sample.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mcp/common.h>

#include "signals.h"
#include "term.h"

/* What the command may print; a result is far smaller. */
#define MAX_OUTPUT ((size_t)16 << 20)

extern char **environ;

/* Starts `sh -c command` with pipes on its stdin and stdout. */
static int spawn(const char *command, pid_t *pid, int *in_fd, int *out_fd)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawnattr_init(&attr);
    /* mcp blocks SIGINT and SIGTERM for its signal thread; the command
     * gets the ordinary defaults. */
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const char *const argv[] = {"sh", "-c", command, NULL};
    int rc = posix_spawn(pid, "/bin/sh", &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        errno = rc;
        return -1;
    }
    *in_fd = in[1];
    *out_fd = out[0];
    fcntl(*in_fd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Feeds `input` to in_fd while collecting out_fd until EOF. Returns
 * MCP_OK, MCP_ECANCELED (Ctrl-C) or MCP_ELIMIT (too much output). */
static int exchange(int in_fd, int out_fd, const char *input, size_t in_len, char **output,
                    size_t *out_len)
{
    size_t written = 0, len = 0, cap = 0;
    char *buf = NULL;
    int rc = MCP_OK;
    for (;;) {
        struct pollfd p[3] = {{out_fd, POLLIN, 0}, {signals_fd(), POLLIN, 0}, {in_fd, POLLOUT, 0}};
        if (poll(p, in_fd >= 0 ? 3 : 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = MCP_EIO;
            break;
        }
        if (p[1].revents) {
            rc = MCP_ECANCELED;
            break;
        }
        if (in_fd >= 0 && p[2].revents) {
            ssize_t n = write(in_fd, input + written, in_len - written);
            if (n > 0)
                written += (size_t)n;
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == in_len) {
                close(in_fd); /* done, or the command does not read: EOF either way */
                in_fd = -1;
            }
        }
        if (p[0].revents) {
            if (len + 65536 + 1 > cap) {
                cap = cap ? cap * 2 : 65536 * 2;
                char *grown = cap <= MAX_OUTPUT ? realloc(buf, cap) : NULL;
                if (!grown) {
                    rc = MCP_ELIMIT;
                    break;
                }
                buf = grown;
            }
            ssize_t n = read(out_fd, buf + len, cap - len - 1);
            if (n == 0)
                break;
            if (n > 0)
                len += (size_t)n;
            else if (errno != EINTR && errno != EAGAIN) {
                rc = MCP_EIO;
                break;
            }
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    if (rc != MCP_OK) {
        free(buf);
        return rc;
    }
    if (buf)
        buf[len] = '\0';
    *output = buf;
    *out_len = len;
    return MCP_OK;
}

int sample_with_command(void *user, const json_t *params, json_t **result_out)
{
    const char *command = user;
    json_t *request = json_pack("{s:s, s:O}", "method", "sampling/createMessage", "params",
                                params);
    char *input = request ? json_dumps(request, JSON_COMPACT) : NULL;
    json_decref(request);
    if (!input)
        return MCP_ENOMEM;

    pid_t pid;
    int in_fd, out_fd;
    if (spawn(command, &pid, &in_fd, &out_fd) != 0) {
        term_errorf("--sample-command: cannot run %s: %s", command, strerror(errno));
        free(input);
        return MCP_EINVAL;
    }
    char *output = NULL;
    size_t out_len = 0;
    size_t in_len = strlen(input);
    input[in_len++] = '\n'; /* replaces the NUL: one line of JSON */
    int rc = exchange(in_fd, out_fd, input, in_len, &output, &out_len);
    free(input);
    close(out_fd);
    if (rc != MCP_OK)
        kill(pid, SIGTERM);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == MCP_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        term_errorf("--sample-command failed (%s %d)", WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        rc = MCP_EINVAL;
    }
    json_error_t jerr;
    json_t *result = rc == MCP_OK && output ? json_loadb(output, out_len, 0, &jerr) : NULL;
    if (rc == MCP_OK && !json_is_object(result)) {
        term_errorf("--sample-command did not print a JSON object (a CreateMessageResult)%s%s",
                    result || !output ? "" : ": ", result || !output ? "" : jerr.text);
        rc = MCP_EINVAL;
    } else if (rc == MCP_ELIMIT) {
        term_errorf("--sample-command printed more than %zu bytes", MAX_OUTPUT);
    }
    free(output);
    if (rc != MCP_OK) {
        json_decref(result);
        return rc;
    }
    *result_out = result;
    return MCP_OK;
}
