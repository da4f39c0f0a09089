/*
 * pty_proc: runs a program on a pseudo-terminal, the way a person at a
 * terminal would, and talks to it expect-style:
 *
 *     pty_proc_t p;
 *     pty_start(&p, (const char *const[]){MCP_CLI, "call", ..., NULL}, NULL);
 *     assert_true(pty_expect(&p, "[y/n]", 10000));
 *     pty_send(&p, "y\n");
 *     assert_int_equal(pty_finish(&p, 10000), 0);
 *     ... pty_output(&p) is everything it wrote (stdout and stderr, both
 *     on the terminal) ...
 *     pty_free(&p);
 *
 * The functions call cmocka assertions: use them from the test's thread.
 */
#ifndef MCP_TEST_PTY_PROC_H
#define MCP_TEST_PTY_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct pty_proc {
    pid_t pid;
    int fd;          /* the terminal's master side, -1 at EOF */
    char *seen;      /* everything read, NUL-terminated */
    size_t len, cap;
    size_t mark;     /* pty_expect searches from here */
} pty_proc_t;

/* Starts argv[0] (a path) on a new 80x24 terminal, with `env` entries
 * added to the test's environment (NULL-terminated, may be NULL). */
void pty_start(pty_proc_t *p, const char *const *argv, const char *const *env);

/* Waits until `text` appears after what earlier expectations matched;
 * true when it did (the mark moves past it). */
bool pty_expect(pty_proc_t *p, const char *text, int timeout_ms);

/* Types `text` (e.g. "y\n"). */
void pty_send(pty_proc_t *p, const char *text);

/* Waits for the end (killing it after timeout_ms, which fails the test);
 * returns the exit status (128 + signal when killed by one). */
int pty_finish(pty_proc_t *p, int timeout_ms);

/* Everything the program wrote so far. */
const char *pty_output(const pty_proc_t *p);

void pty_free(pty_proc_t *p);

#endif /* MCP_TEST_PTY_PROC_H */
