/*
 * Helpers shared by the tests of the mcp command (cli_*.c): running mcp
 * against a target, starting an HTTP server, and reading JSON output.
 * MCP_CLI, MCP_NOTES_SERVER and CLI_TEST_SERVER are the programs' paths
 * (compile definitions).
 */
#ifndef MCP_TEST_CLI_HARNESS_H
#define MCP_TEST_CLI_HARNESS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

/* Exit statuses of mcp (tools/mcp/cli.h, mcp(1)). */
enum {
    EXIT_OK = 0,
    EXIT_TOOL_ERROR = 1,
    EXIT_USAGE = 2,
    EXIT_PROTOCOL = 3,
    EXIT_CONNECTION = 4,
    EXIT_INTERRUPTED = 130
};

/* Where mcp connects: a URL, or a server command line (after "--"); and
 * options every run gets (NULL-terminated, or NULL). */
typedef struct cli_target {
    const char *url;
    const char *const *server;
    const char *const *options;
} cli_target_t;

/* mcp's argv: MCP_CLI, the target's options, the URL (if any), the
 * words, "--" and the server command (if any). A new array of borrowed
 * strings. */
static inline const char **cli_argv(const cli_target_t *t, const char *const *words)
{
    size_t n_words = 0, n_server = 0, n_options = 0;
    while (words[n_words])
        n_words++;
    while (t && t->server && t->server[n_server])
        n_server++;
    while (t && t->options && t->options[n_options])
        n_options++;
    const char **argv = calloc(n_words + n_server + n_options + 4, sizeof *argv);
    size_t n = 0;
    argv[n++] = MCP_CLI;
    for (size_t i = 0; i < n_options; i++)
        argv[n++] = t->options[i];
    if (t && t->url)
        argv[n++] = t->url;
    for (size_t i = 0; i < n_words; i++)
        argv[n++] = words[i];
    if (n_server) {
        argv[n++] = "--";
        for (size_t i = 0; i < n_server; i++)
            argv[n++] = t->server[i];
    }
    return argv;
}

/* Runs mcp to its end. */
static inline void cli_run(proc_result_t *r, const cli_target_t *t, const char *const *env,
                           const char *input, const char *const *words)
{
    const char **argv = cli_argv(t, words);
    proc_run(r, argv, env, input);
    free(argv);
}

/* Starts mcp in the background. */
static inline void cli_start(proc_t *p, const cli_target_t *t, const char *const *env,
                             const char *const *words)
{
    const char **argv = cli_argv(t, words);
    proc_start(p, argv, env, NULL);
    free(argv);
}

/* CLI(&result, &target, "call", "echo", "text=hi") */
#define CLI(r, t, ...) cli_run((r), (t), NULL, NULL, (const char *const[]){__VA_ARGS__, NULL})
#define CLI_ENV(r, t, env, ...) cli_run((r), (t), (env), NULL, (const char *const[]){__VA_ARGS__, NULL})

/* Fails with mcp's stderr when the exit status is not `status`. */
#define assert_status(r, expected)                                                         \
    do {                                                                                   \
        if ((r)->status != (expected))                                                     \
            fail_msg("exit status %d, expected %d\nstdout:\n%s\nstderr:\n%s", (r)->status, \
                     (expected), (r)->out, (r)->err);                                      \
    } while (0)

/* Fails unless `text` is in `haystack` (saying where it looked). */
#define assert_contains(haystack, text)                                                 \
    do {                                                                                \
        if (!strstr((haystack), (text)))                                                \
            fail_msg("expected \"%s\" in:\n%s", (text), (haystack));                    \
    } while (0)

#define assert_not_contains(haystack, text)                                             \
    do {                                                                                \
        if (strstr((haystack), (text)))                                                 \
            fail_msg("did not expect \"%s\" in:\n%s", (text), (haystack));              \
    } while (0)

/* The member at a slash-separated path ("content/0/text"; numbers index
 * arrays), borrowed, or NULL. */
static inline const json_t *jpath(const json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *at = root;
    char *save = NULL;
    for (char *part = strtok_r(buf, "/", &save); at && part; part = strtok_r(NULL, "/", &save)) {
        char *end;
        long i = strtol(part, &end, 10);
        at = json_is_array(at) && !*end ? json_array_get(at, (size_t)i)
                                        : json_object_get(at, part);
    }
    return at;
}

/* The string at a path, or "" (so that comparisons fail readably). */
static inline const char *jstr(const json_t *root, const char *path)
{
    const char *s = json_string_value(jpath(root, path));
    return s ? s : "";
}

/* A started HTTP server: notes_server --http 0. */
typedef struct http_server {
    proc_t proc;
    char url[128];
} http_server_t;

static inline void http_server_start(http_server_t *s, const char *program)
{
    proc_start(&s->proc, (const char *const[]){program, "--http", "0", NULL}, NULL, NULL);
    if (!proc_wait_for(&s->proc, PROC_STDERR, "/mcp", 20000))
        fail_msg("%s did not say its URL: %s", program, proc_output(&s->proc, PROC_STDERR));
    const char *at = strstr(proc_output(&s->proc, PROC_STDERR), "http://");
    size_t n = strcspn(at, " \n");
    snprintf(s->url, sizeof s->url, "%.*s", (int)n, at);
}

static inline void http_server_stop(http_server_t *s)
{
    proc_result_t r;
    proc_signal(&s->proc, SIGTERM);
    proc_finish(&s->proc, &r, 20000);
    proc_result_free(&r);
}

#endif /* MCP_TEST_CLI_HARNESS_H */
