/*
 * proc: runs a program with its stdout and stderr captured, for tests of
 * command-line programs (the mcp CLI) and of servers started as processes.
 *
 *     proc_result_t r;
 *     proc_run(&r, (const char *const[]){MCP_CLI, "--version", NULL}, NULL, NULL);
 *     assert_int_equal(r.status, 0);
 *     assert_non_null(strstr(r.out, "libmcp"));
 *     proc_result_free(&r);
 *
 * Or in the background, waiting for something it says:
 *
 *     proc_t p;
 *     proc_start(&p, argv, NULL);
 *     proc_wait_for(&p, PROC_STDERR, "listening", 10000);
 *     ... proc_signal(&p, SIGINT); proc_finish(&p, &r, 10000);
 *
 * A program that does not end in time is killed and fails the test. The
 * functions call cmocka assertions: use them from the test's thread only.
 */
#ifndef MCP_TEST_PROC_H
#define MCP_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* How a run ended and what it wrote. */
typedef struct proc_result {
    int status;   /* the exit status, or 128 + the signal that killed it */
    char *out;    /* stdout, NUL-terminated */
    size_t out_len; /* its length (binary output may hold NULs) */
    char *err;    /* stderr, NUL-terminated */
    json_t *json; /* stdout parsed as one JSON document, or NULL */
} proc_result_t;

typedef enum proc_stream { PROC_STDOUT = 0, PROC_STDERR = 1 } proc_stream_t;

typedef struct proc {
    pid_t pid;
    int fd[2];        /* stdout, stderr (-1 once at EOF) */
    char *buf[2];
    size_t len[2], cap[2];
} proc_t;

/*
 * Starts argv[0] (a path; argv NULL-terminated) with `env` entries
 * ("NAME=value", NULL-terminated, may be NULL) added to the test's
 * environment (an entry "NAME" without "=" removes NAME), stdin from
 * `input` (NULL: /dev/null).
 */
void proc_start(proc_t *p, const char *const *argv, const char *const *env, const char *input);

/* Reads until `text` appears in the stream (true), or the program ends or
 * timeout_ms passes (false). */
bool proc_wait_for(proc_t *p, proc_stream_t stream, const char *text, int timeout_ms);

/* What the stream said so far (NUL-terminated; valid until the next call). */
const char *proc_output(proc_t *p, proc_stream_t stream);

void proc_signal(proc_t *p, int sig);

/* Waits for the end (killing the program after timeout_ms, which fails the
 * test) and collects everything into *r. */
void proc_finish(proc_t *p, proc_result_t *r, int timeout_ms);

/* proc_start + proc_finish with a 60 s limit. */
void proc_run(proc_result_t *r, const char *const *argv, const char *const *env,
              const char *input);

void proc_result_free(proc_result_t *r);

#endif /* MCP_TEST_PROC_H */
