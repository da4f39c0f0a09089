/*
 * stdio_child: runs an MCP server as a child process and talks to it over
 * its stdin/stdout, one JSON message per line, the way an MCP client does.
 *
 *     stdio_child_t child;
 *     stdio_child_start(&child, NOTES_SERVER, NULL);
 *     stdio_child_send(&child, request);
 *     json_t *msg = stdio_child_read(&child, 5000);
 *     ...
 *     stdio_child_close_stdin(&child);
 *     assert_int_equal(stdio_child_wait(&child, 10000), 0);
 *
 * Every line the child writes must be one JSON object: anything else on
 * stdout fails the test (the spec allows nothing but MCP messages there).
 * The child's stderr is inherited, so its diagnostics (and sanitizer
 * reports) show in the test log.
 *
 * Functions call cmocka assertions: use them from the test's thread only.
 */
#ifndef MCP_TEST_STDIO_CHILD_H
#define MCP_TEST_STDIO_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

typedef struct stdio_child {
    pid_t pid;
    int in_fd;  /* the child's stdin (we write), -1 once closed */
    int out_fd; /* the child's stdout (we read) */
    char *buf;  /* bytes read but not yet returned as lines */
    size_t used, cap;
    bool eof;   /* the child closed its stdout */
} stdio_child_t;

/*
 * Starts `path` with the arguments `argv` (NULL-terminated, argv[0]
 * included; NULL for just the path) and the extra environment entries
 * `env` ("NAME=value", NULL-terminated; may be NULL), which are added to
 * the test's own environment. Ignores SIGPIPE in the test process, so a
 * child that died makes writes fail instead of killing the test.
 */
void stdio_child_start(stdio_child_t *child, const char *path, char *const argv[],
                       char *const env[]);

/* Writes `msg` as one compact line. */
void stdio_child_send(stdio_child_t *child, const json_t *msg);

/* Writes raw bytes (no newline added). */
void stdio_child_send_raw(stdio_child_t *child, const char *bytes, size_t len);

/* The next line the child wrote, parsed (new reference); NULL when nothing
 * came within `timeout_ms` or the child closed its stdout. A line that is
 * not a JSON object fails the test. */
json_t *stdio_child_read(stdio_child_t *child, int timeout_ms);

/* Reads until a response (a message with a "result" or an "error")
 * arrives; the messages before it (notifications, other
 * responses) are appended to `before` when it is not NULL. Fails the test
 * after `timeout_ms`. Returns the response (new reference). */
json_t *stdio_child_read_response(stdio_child_t *child, int timeout_ms, json_t *before);

/* Closes the child's stdin (EOF for the server). */
void stdio_child_close_stdin(stdio_child_t *child);

/*
 * Waits for the child to exit: its exit code, 128 + signal when a signal
 * ended it, or -1 when it was still running after `timeout_ms` (it is then
 * killed). Closes the pipes and frees the buffer: the child is finished.
 */
int stdio_child_wait(stdio_child_t *child, int timeout_ms);

#endif
