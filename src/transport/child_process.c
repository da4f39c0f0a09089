/*
 * Starting and stopping a stdio server process. posix_spawn (vfork-speed,
 * and safe in a multi-threaded client, unlike fork + arbitrary code) with
 * pipes created close-on-exec, so the only descriptors the child keeps are
 * the three it is given; glibc's closefrom action also closes whatever the
 * application opened without O_CLOEXEC. A server may lead a process group
 * of its own (mcp_stdio_target_t.own_process_group); it is then stopped,
 * and killed by mcp_stdio_servers_kill(), group and all.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mcp/client.h"
#include "transport/child_process.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define HAVE_ADDCLOSEFROM 1
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define HAVE_ADDCHDIR 1
#endif

#define POLL_STEP_MS 5

/*
 * The children started with a process group of their own, from their start
 * until child_stop() reaped them: what mcp_stdio_servers_kill() kills.
 * Starting, reaping and killing them hold groups_lock, so that a child
 * being started is not missed and a group is never signalled after its
 * leader was reaped, when its id may be another process's.
 */
static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t *groups;
static size_t n_groups, groups_cap;

/* Room for one more; false when out of memory. Under groups_lock. */
static bool groups_reserve(void)
{
    if (n_groups < groups_cap)
        return true;
    size_t cap = groups_cap ? groups_cap * 2 : 8;
    pid_t *grown = realloc(groups, cap * sizeof *grown);
    if (!grown)
        return false;
    groups = grown;
    groups_cap = cap;
    return true;
}

/* Frees the list once it is empty. Under groups_lock. */
static void groups_trim(void)
{
    if (n_groups == 0) {
        free(groups);
        groups = NULL;
        groups_cap = 0;
    }
}

/* Under groups_lock. */
static void groups_forget(pid_t pid)
{
    for (size_t i = 0; i < n_groups; i++) {
        if (groups[i] == pid) {
            groups[i] = groups[--n_groups];
            break;
        }
    }
    groups_trim();
}

void mcp_stdio_servers_kill(void)
{
    pthread_mutex_lock(&groups_lock);
    for (size_t i = 0; i < n_groups; i++) {
        kill(-groups[i], SIGKILL);
        kill(groups[i], SIGKILL); /* in case it left its group */
    }
    pthread_mutex_unlock(&groups_lock);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void child_close_fds(child_process_t *cp)
{
    close_fd(&cp->in_fd);
    close_fd(&cp->out_fd);
    close_fd(&cp->err_fd);
}

/*
 * Why chdir(cwd) would fail (an errno), or 0. posix_spawn reports a failed
 * chdir action with the same errno as a failed exec (ENOENT for both), so a
 * missing directory would read as a missing program; when a spawn with a
 * working directory fails, this tells which it was. The child changes
 * directory before it execs, so a directory that cannot be entered is the
 * cause whatever else is wrong. Asked only after a failure: no cost, and
 * nothing to race with on success.
 */
static int cwd_problem(const char *cwd)
{
    struct stat st;
    if (stat(cwd, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    /* chdir needs search permission, checked as the child will be: with
     * the effective ids. */
    if (faccessat(AT_FDCWD, cwd, X_OK, AT_EACCESS) != 0)
        return errno;
    return 0;
}

int child_spawn(child_process_t *cp, const char *const *argv, char *const *envp,
                const char *cwd, bool own_group, mcp_error_t *err)
{
    *cp = (child_process_t){0, -1, -1, -1, false};
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        int e = errno;
        close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]);
        close_fd(&errp[0]), close_fd(&errp[1]);
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot create pipes: %s", strerror(e));
    }

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    /* dup2 clears close-on-exec on the target descriptor. */
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
#ifdef HAVE_ADDCLOSEFROM
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
    int rc = 0;
    if (cwd) {
#ifdef HAVE_ADDCHDIR
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
#else
        rc = ENOSYS;
#endif
    }
    /* The application may ignore SIGPIPE or block signals; the server
     * starts with the defaults. */
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (own_group) {
        /* A group whose id is the child's pid: signals sent to the
         * application's group (a terminal's Ctrl-C) do not reach it. */
        posix_spawnattr_setpgroup(&attr, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr, flags);

    pid_t pid = 0;
    if (own_group) {
        pthread_mutex_lock(&groups_lock);
        if (rc == 0 && !groups_reserve())
            rc = ENOMEM;
    }
    if (rc == 0)
        rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, envp);
    if (own_group) {
        if (rc == 0)
            groups[n_groups++] = pid;
        else
            groups_trim(); /* what groups_reserve() took for nothing */
        pthread_mutex_unlock(&groups_lock);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&errp[1]);
    if (rc != 0) {
        close_fd(&in[1]), close_fd(&out[0]), close_fd(&errp[0]);
        int dir_rc = cwd && rc != ENOSYS ? cwd_problem(cwd) : 0;
        if (dir_rc != 0)
            return mcp_error_set(err, MCP_EIO, 0, NULL,
                                 "cannot start %s: cannot enter its working directory %s: %s",
                                 argv[0], cwd, strerror(dir_rc));
        return mcp_error_set(err, MCP_EIO, 0, NULL, "cannot start %s: %s", argv[0], strerror(rc));
    }
    /* Writes must never block the client forever on a server that stopped
     * reading: the writer polls with a deadline instead. */
    fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
    /* Reads of its stdout never block either: more than one thread may
     * read it (stdio_client.c), each after poll() said it was ready. */
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    *cp = (child_process_t){pid, in[1], out[0], errp[0], own_group};
    return MCP_OK;
}

/* Reaps the child if it has exited; true (and *status) when it did, or
 * when it is not ours to wait for. A child with a group of its own leaves
 * the list of groups in the same step, under the lock that
 * mcp_stdio_servers_kill() holds. */
static bool reaped(const child_process_t *cp, int *status)
{
    if (cp->own_group)
        pthread_mutex_lock(&groups_lock);
    if (cp->own_group) {
        /* A server of its own group that exited may leave what it started
         * running (a shell's background job, what npx spawned): the group
         * stops with it. Signalled before the reaping, while the exited
         * leader still holds the group's id, so that it names no other. */
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)cp->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == cp->pid)
            kill(-cp->pid, SIGTERM);
    }
    pid_t r = waitpid(cp->pid, status, WNOHANG);
    bool done = r == cp->pid || (r < 0 && errno != EINTR);
    if (done && cp->own_group)
        groups_forget(cp->pid);
    if (cp->own_group)
        pthread_mutex_unlock(&groups_lock);
    return done;
}

/* Waits up to ms (< 0: for ever) for the child to exit; true (and
 * *status) when it did. */
static bool wait_exit(const child_process_t *cp, int ms, int *status)
{
    for (int waited = 0;; waited += POLL_STEP_MS) {
        if (reaped(cp, status))
            return true;
        if (ms >= 0 && waited >= ms)
            return false;
        struct timespec step = {0, POLL_STEP_MS * 1000000L};
        nanosleep(&step, NULL);
    }
}

/* The child is not reaped yet (only child_stop reaps it), so its pid is
 * still its own, and so is its group's id. */
static void signal_child(const child_process_t *cp, int sig)
{
    /* Its group too: what it started stops with it (a shell's or npx's
     * children), as they would have on a terminal's Ctrl-C. */
    if (cp->own_group)
        kill(-cp->pid, sig);
    kill(cp->pid, sig);
}

int child_stop(child_process_t *cp, int grace_ms)
{
    close_fd(&cp->in_fd);
    if (cp->pid <= 0) {
        child_close_fds(cp);
        return -1;
    }
    int status = 0;
    if (!wait_exit(cp, grace_ms, &status)) {
        signal_child(cp, SIGTERM);
        if (!wait_exit(cp, grace_ms, &status)) {
            signal_child(cp, SIGKILL);
            wait_exit(cp, -1, &status);
        }
    }
    cp->pid = 0;
    child_close_fds(cp);
    return status;
}

void child_describe_status(int status, char *buf, size_t size)
{
    if (status < 0)
        snprintf(buf, size, "is gone");
    else if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, size, "stopped");
}
