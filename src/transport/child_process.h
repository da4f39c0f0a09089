/*
 * A server process the client starts: its stdin, stdout and stderr are
 * pipes, nothing else of the client's leaks into it, and stopping it is
 * bounded (digest section 5.2).
 */
#ifndef MCP_TRANSPORT_CHILD_PROCESS_H
#define MCP_TRANSPORT_CHILD_PROCESS_H

#include <sys/types.h>

#include "mcp/common.h"

typedef struct child_process {
    pid_t pid;     /* 0 when there is no process */
    int in_fd;     /* the child's stdin (non-blocking write end), or -1 */
    int out_fd;    /* the child's stdout (read end), or -1 */
    int err_fd;    /* the child's stderr (read end), or -1 */
    bool own_group; /* it leads a process group of its own (child_spawn) */
} child_process_t;

/*
 * Starts argv[0] (looked up on PATH) with environment `envp` and working
 * directory `cwd` (NULL: the client's). The child gets default signal
 * dispositions and an empty signal mask, and no descriptor but 0, 1 and 2.
 * With own_group it leads a new process group (mcp_stdio_target_t's
 * own_process_group), and mcp_stdio_servers_kill() kills that group until
 * child_stop() has reaped it. Errors: MCP_EIO (with the reason in *err),
 * MCP_ENOMEM.
 */
int child_spawn(child_process_t *cp, const char *const *argv, char *const *envp,
                const char *cwd, bool own_group, mcp_error_t *err);

/*
 * Stops the child: closes its stdin, waits up to grace_ms for it to exit,
 * then SIGTERM and another grace_ms, then SIGKILL (to its whole group when
 * it has one of its own); reaps it and closes the remaining descriptors.
 * Returns the wait status (as waitpid gives it), or -1 when there was no
 * child.
 */
int child_stop(child_process_t *cp, int grace_ms);

/* Closes the descriptors still open (the process itself is left alone). */
void child_close_fds(child_process_t *cp);

/* A sentence for a wait status: "exited with status 3", "was killed by
 * signal 9". */
void child_describe_status(int status, char *buf, size_t size);

#endif /* MCP_TRANSPORT_CHILD_PROCESS_H */
