/*
 * mcp and tasks it does not follow to the end in one run (the Tasks
 * extension): call --detach leaves a task running and prints its id, task
 * ID shows it, task ID --wait follows it (answering its question), task
 * ID --cancel stops it, listen --task ID hears it change. The server is
 * servers/cli_test_server over HTTP, so that a task outlives the mcp run
 * that started it; its "job" tool sleeps, then asks "Proceed?".
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "cli_harness.h"

static http_server_t server;
static cli_target_t target;

static int setup(void **state)
{
    (void)state;
    http_server_start(&server, CLI_TEST_SERVER);
    target.url = server.url;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    http_server_stop(&server);
    return 0;
}

/* call TOOL [ARG] --detach: the task's id (a new string). */
static char *detach(const char *tool, const char *arg)
{
    proc_result_t r;
    if (arg)
        CLI(&r, &target, "call", tool, arg, "--detach");
    else
        CLI(&r, &target, "call", tool, "--detach");
    assert_status(&r, EXIT_OK);
    assert_contains(r.err, "runs on as task");
    size_t n = strcspn(r.out, "\n");
    assert_true(n > 0);
    assert_string_equal(r.out + n, "\n"); /* the id alone, on one line */
    char *id = strndup(r.out, n);
    proc_result_free(&r);
    return id;
}

/* Runs `--json task ID` until the status is `status` (up to 10 s). */
static void await_status(const char *id, const char *status)
{
    for (int i = 0; i < 200; i++) {
        proc_result_t r;
        CLI(&r, &target, "--json", "task", id);
        bool there = strcmp(jstr(r.json, "status"), status) == 0;
        assert_string_equal(jstr(r.json, "taskId"), id);
        proc_result_free(&r);
        if (there)
            return;
        struct timespec pause = {0, 50 * 1000000L};
        nanosleep(&pause, NULL);
    }
    fail_msg("task %s never became %s", id, status);
}

/* Detached, shown while it asks, then followed to its end: the question
 * is answered by --answer, and the result is printed as call prints it. */
static void test_detach_show_wait(void **state)
{
    (void)state;
    char *id = detach("job", "ms=100");
    await_status(id, "input_required");

    proc_result_t r;
    CLI(&r, &target, "task", id);
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "Task ");
    assert_contains(r.out, id);
    assert_contains(r.out, "\nStatus ");
    assert_contains(r.out, " input_required\n");
    assert_contains(r.out, "proceed: Proceed?");
    assert_contains(r.err, "task --wait answers");
    proc_result_free(&r);

    CLI(&r, &target, "-v", "task", id, "--wait", "-a", "go=yes");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "job done: go=true\n");
    assert_contains(r.err, "\"method\":\"tasks/update\"");
    assert_contains(r.err, "\"taskIds\""); /* it listened while it waited */
    proc_result_free(&r);

    /* Over: its result again, and no question. */
    CLI(&r, &target, "task", id);
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "job done: go=true\n");
    proc_result_free(&r);
    CLI(&r, &target, "--json", "task", id);
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "status"), "completed");
    assert_string_equal(jstr(r.json, "result/content/0/text"), "job done: go=true");
    proc_result_free(&r);
    free(id);
}

/* listen --task ID prints the task's states as they change. */
static void test_listen_to_task(void **state)
{
    (void)state;
    char *id = detach("job", "ms=1500");
    proc_t listener;
    cli_start(&listener, &target, NULL,
              (const char *const[]){"listen", "--task", id, "--count", "1", NULL});
    assert_true(proc_wait_for(&listener, PROC_STDERR, "listening for task", 20000));
    proc_result_t r;
    proc_finish(&listener, &r, 20000);
    assert_status(&r, EXIT_OK);
    char line[256];
    snprintf(line, sizeof line, " task %s input_required", id);
    assert_contains(r.out, line);
    proc_result_free(&r);

    CLI(&r, &target, "--json", "listen", "--task", id, "--timeout", "1");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);

    CLI(&r, &target, "task", id, "--cancel");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    free(id);
}

/* --cancel stops a running task; showing it afterwards says it was
 * cancelled, with status 3. */
static void test_cancel(void **state)
{
    (void)state;
    char *id = detach("job", "ms=30000");
    proc_result_t r;
    CLI(&r, &target, "-v", "task", id, "--cancel");
    assert_status(&r, EXIT_OK);
    assert_contains(r.err, "\"method\":\"tasks/cancel\"");
    proc_result_free(&r);
    await_status(id, "cancelled");
    CLI(&r, &target, "task", id);
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "was cancelled");
    proc_result_free(&r);
    free(id);
}

/* Ctrl-C while --wait follows: mcp stops waiting, the task runs on. */
static void test_wait_interrupted(void **state)
{
    (void)state;
    char *id = detach("job", "ms=30000");
    proc_t p;
    cli_start(&p, &target, NULL, (const char *const[]){"-v", "task", id, "--wait", NULL});
    assert_true(proc_wait_for(&p, PROC_STDERR, "\"method\":\"tasks/get\"", 20000));
    proc_signal(&p, SIGINT);
    proc_result_t r;
    proc_finish(&p, &r, 10000);
    assert_status(&r, EXIT_INTERRUPTED);
    assert_contains(r.err, "runs on");
    assert_not_contains(r.err, "tasks/cancel");
    proc_result_free(&r);

    CLI(&r, &target, "--json", "task", id);
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "status"), "working");
    proc_result_free(&r);
    CLI(&r, &target, "task", id, "--cancel");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    free(id);
}

/* A task that fails: its error, status 3, whether shown or waited for;
 * and a call that follows it says the same. */
static void test_failed_task(void **state)
{
    (void)state;
    char *id = detach("broken_job", NULL);
    await_status(id, "failed");
    proc_result_t r;
    CLI(&r, &target, "task", id);
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "failed: the job broke (-32603)");
    proc_result_free(&r);
    CLI(&r, &target, "task", id, "--wait");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "the job broke");
    proc_result_free(&r);
    CLI(&r, &target, "--json", "task", id);
    assert_status(&r, EXIT_PROTOCOL);
    assert_int_equal(json_integer_value(jpath(r.json, "error/code")), -32603);
    proc_result_free(&r);
    free(id);

    CLI(&r, &target, "call", "broken_job");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "the job broke");
    proc_result_free(&r);
}

/* A task whose tool reports an error: exit 1, and the line above its
 * content names the task (its state does not name the tool). */
static void test_tool_error_task(void **state)
{
    (void)state;
    char *id = detach("job", "ms=1");
    await_status(id, "input_required");
    proc_result_t r;
    CLI(&r, &target, "task", id, "--wait", "-a", "go=no");
    assert_status(&r, EXIT_TOOL_ERROR);
    char line[160];
    snprintf(line, sizeof line, "the tool of task %s reported an error:", id);
    assert_contains(r.err, line);
    assert_contains(r.err, "job declined");
    assert_string_equal(r.out, "");
    proc_result_free(&r);
    CLI(&r, &target, "task", id);
    assert_status(&r, EXIT_TOOL_ERROR);
    assert_contains(r.err, line);
    proc_result_free(&r);
    free(id);
}

/* What is not a task of this server, or not asked the right way. */
static void test_mistakes(void **state)
{
    (void)state;
    proc_result_t r;
    CLI(&r, &target, "task", "no-such-task");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "(-32602)");
    proc_result_free(&r);

    CLI(&r, &target, "task", "x", "--wait", "--cancel");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "contradict");
    proc_result_free(&r);
    CLI(&r, &target, "tools", "--detach");
    assert_status(&r, EXIT_USAGE);
    proc_result_free(&r);
    CLI(&r, &target, "task");
    assert_status(&r, EXIT_USAGE);
    proc_result_free(&r);

    /* A call the server answers at once prints its result, --detach or
     * not. */
    CLI(&r, &target, "call", "slow", "ms=1", "--detach");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "slept\n");
    proc_result_free(&r);

    /* The legacy protocol has no tasks. */
    CLI(&r, &target, "--era", "legacy", "task", "x");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "legacy");
    proc_result_free(&r);

    /* Over stdio the task ends with the server, and mcp says so. */
    cli_target_t stdio = {.server = (const char *const[]){CLI_TEST_SERVER, NULL}};
    CLI(&r, &stdio, "call", "job", "ms=1", "--detach");
    assert_status(&r, EXIT_OK);
    assert_contains(r.err, "ends with the server");
    proc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detach_show_wait),
        cmocka_unit_test(test_listen_to_task),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_wait_interrupted),
        cmocka_unit_test(test_failed_task),
        cmocka_unit_test(test_tool_error_task),
        cmocka_unit_test(test_mistakes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
