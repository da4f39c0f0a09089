/*
 * http_child: runs an MCP server that serves Streamable HTTP as a child
 * process, for tests that connect to it the way a client does.
 *
 *     http_child_t server;
 *     if (http_child_start(&server, (const char *const[]){NOTES_SERVER, "--http", NULL},
 *                          10000) != 0)
 *         ...;
 *     connect to server.url ...
 *     assert_int_equal(http_child_stop(&server, 10000), 0);
 *
 * The server names its endpoint on stderr: the first stderr line that
 * contains "http://" gives the URL (up to the next space). Every stderr line
 * is copied to the test's stderr, so the server's diagnostics (and
 * sanitizer reports) show in the test log. Stopping is SIGTERM, and a clean
 * exit is status 0: a leak or a sanitizer report in the server fails the
 * test that checks it.
 *
 * These functions do not use cmocka assertions: they fit group setup and
 * teardown too.
 */
#ifndef MCP_TEST_HTTP_CHILD_H
#define MCP_TEST_HTTP_CHILD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct http_child {
    pid_t pid;
    char url[256];
    /* Internals: the thread that copies the child's stderr. */
    int err_fd;
    pthread_t relay;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool ended; /* its stderr reached EOF */
} http_child_t;

/*
 * Starts argv[0] (looked up on PATH) with `argv` (NULL-terminated, argv[0]
 * included; stdin is /dev/null, stdout is the test's) and waits up to
 * `timeout_ms` for its URL. Returns 0, or -1 after printing why (the child
 * is then stopped and nothing needs freeing).
 */
int http_child_start(http_child_t *child, const char *const argv[], int timeout_ms);

/*
 * Stops the child with SIGTERM and waits up to `timeout_ms` for it: its exit
 * status, 128 + the signal that ended it, or -1 when it had to be killed
 * with SIGKILL. Releases everything. Use once per started child.
 */
int http_child_stop(http_child_t *child, int timeout_ms);

#endif
