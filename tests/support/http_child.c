/* An HTTP server child process; see http_child.h. */
#define _GNU_SOURCE

#include "http_child.h"
#include "test_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Remembers the URL of the first line that names one. */
static void take_url(http_child_t *child, const char *line)
{
    const char *at = strstr(line, "http://");
    if (!at || child->url[0])
        return;
    size_t n = strcspn(at, " \t\r\n");
    if (n >= sizeof child->url)
        n = sizeof child->url - 1;
    pthread_mutex_lock(&child->lock);
    memcpy(child->url, at, n);
    child->url[n] = '\0';
    pthread_cond_broadcast(&child->cond);
    pthread_mutex_unlock(&child->lock);
}

/* Copies the child's stderr to ours, line by line, until EOF. */
static void *relay(void *arg)
{
    http_child_t *child = arg;
    FILE *in = fdopen(child->err_fd, "r");
    char *line = NULL;
    size_t cap = 0;
    while (in && getline(&line, &cap, in) >= 0) {
        fputs(line, stderr);
        take_url(child, line);
    }
    free(line);
    if (in)
        fclose(in);
    else
        close(child->err_fd);
    pthread_mutex_lock(&child->lock);
    child->ended = true;
    pthread_cond_broadcast(&child->cond);
    pthread_mutex_unlock(&child->lock);
    return NULL;
}

static int wait_exit(pid_t pid, int timeout_ms)
{
    for (int waited = 0;; waited += 10) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited >= timeout_ms)
            return -1;
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
}

int http_child_start(http_child_t *child, const char *const argv[], int timeout_ms)
{
    memset(child, 0, sizeof *child);
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        perror("http_child: pipe");
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
    int rc = posix_spawnp(&child->pid, argv[0], &actions, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (rc != 0) {
        fprintf(stderr, "http_child: cannot start %s: %s\n", argv[0], strerror(rc));
        close(pipe_fds[0]);
        return -1;
    }

    child->err_fd = pipe_fds[0];
    pthread_mutex_init(&child->lock, NULL);
    pthread_cond_init(&child->cond, NULL);
    pthread_create(&child->relay, NULL, relay, child);

    struct timespec deadline = time_in(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&child->lock);
    while (!child->url[0] && !child->ended &&
           pthread_cond_timedwait(&child->cond, &child->lock, &deadline) == 0)
        ;
    bool ready = child->url[0] != '\0';
    pthread_mutex_unlock(&child->lock);
    if (!ready) {
        fprintf(stderr, "http_child: %s did not name its URL within %d ms\n", argv[0],
                timeout_ms);
        http_child_stop(child, 5000);
        return -1;
    }
    return 0;
}

int http_child_stop(http_child_t *child, int timeout_ms)
{
    kill(child->pid, SIGTERM);
    int status = wait_exit(child->pid, timeout_ms);
    if (status < 0) {
        kill(child->pid, SIGKILL);
        wait_exit(child->pid, 5000);
    }
    /* Its stderr ends with it (unless a grandchild holds it: then the
     * relay ends when that one does). */
    pthread_join(child->relay, NULL);
    pthread_cond_destroy(&child->cond);
    pthread_mutex_destroy(&child->lock);
    return status;
}
