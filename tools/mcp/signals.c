/*
 * Ctrl-C: a thread that waits for SIGINT, SIGTERM and SIGHUP.
 */
#include "signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "cli.h"

static atomic_bool interrupted;
static mcp_cancel_t *cancel;
static int wake[2] = {-1, -1};

static void *watch(void *arg)
{
    sigset_t *set = arg;
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0)
            continue;
        if (atomic_exchange(&interrupted, true)) {
            /* The second one: stop now. The server is in a group of its
             * own (target.c), where the terminal's signal did not reach
             * it: it goes too, or it could outlive mcp. */
            mcp_stdio_servers_kill();
            _exit(CLI_EXIT_INTERRUPTED);
        }
        mcp_cancel_trigger(cancel);
        char b = 1;
        ssize_t n = write(wake[1], &b, 1);
        (void)n; /* a full pipe is readable already */
    }
    return NULL;
}

bool signals_start(void)
{
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    /* The terminal hung up: the server, in a group of its own, did not get
     * the SIGHUP; mcp must live to stop it. */
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
        return false;
    cancel = mcp_cancel_new();
    if (!cancel || pipe2(wake, O_CLOEXEC) != 0)
        return false;
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch, &set) != 0)
        return false;
    pthread_detach(thread);
    return true;
}

bool signals_interrupted(void)
{
    return atomic_load(&interrupted);
}

mcp_cancel_t *signals_cancel(void)
{
    return cancel;
}

int signals_fd(void)
{
    return wake[0];
}
