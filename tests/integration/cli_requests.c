/*
 * The mcp command answering what a server asks (tests/integration/servers/
 * cli_test_server.c, over stdio), without a terminal: elicitation forms
 * and URLs answered by --answer, --yes and --decline; sampling through
 * --sample-command; roots from --root; server logs; tool errors, binary
 * resources, timeouts, a server that dies, and Ctrl-C. Twice: in the
 * modern era (input_required rounds) and in the legacy one (the server's
 * own requests).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_harness.h"

static const char *const server[] = {CLI_TEST_SERVER, NULL};
static const char *const legacy_options[] = {"--era", "legacy", NULL};
/* The server, in the era of the group running. */
static cli_target_t target = {.server = server};

static int setup_modern(void **state)
{
    target.options = NULL;
    return 0;
}

/* The same answers through a legacy session, where the server sends real
 * requests (elicitation/create, sampling/createMessage, roots/list). */
static int setup_legacy(void **state)
{
    target.options = legacy_options;
    return 0;
}

/* The JSON the tool answered with (its first text block), new reference. */
static json_t *tool_json(const proc_result_t *r)
{
    json_t *value = json_loads(jstr(r->json, "content/0/text"), JSON_DECODE_ANY, NULL);
    if (!value)
        fail_msg("the tool's text is not JSON:\n%s", r->out);
    return value;
}

/* ------------------------------------------------------------------------
 * Forms
 * ------------------------------------------------------------------------ */

static void test_form_answered_by_flags(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "--json", "call", "profile", "--answer", "name=Ann", "-a",
        "email=ann@example.com");
    assert_status(&r, EXIT_OK);
    json_t *answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "accept");
    const json_t *content = jpath(answer, "content");
    assert_string_equal(jstr(content, "name"), "Ann");
    assert_string_equal(jstr(content, "email"), "ann@example.com");
    /* Defaults fill the rest; optional fields without one stay out. */
    assert_string_equal(jstr(content, "color"), "g");
    assert_true(json_is_false(json_object_get(content, "news")));
    assert_null(json_object_get(content, "age"));
    assert_null(json_object_get(content, "tags"));
    assert_int_equal(json_object_size(content), 4);
    json_decref(answer);
    assert_contains(r.err, "Tell us about you");
    proc_result_free(&r);

    /* Typed by the schema: an integer, a multi-select, a boolean. */
    CLI(&r, &target, "--json", "call", "profile", "-a", "name=Bob", "-a", "email=b@example.com",
        "-a", "age=42", "-a", "tags=x,z", "-a", "news=yes", "-a", "color=b", "-a",
        "unrelated=ignored");
    assert_status(&r, EXIT_OK);
    answer = tool_json(&r);
    assert_true(json_integer_value(jpath(answer, "content/age")) == 42);
    assert_true(json_is_integer(jpath(answer, "content/age")));
    assert_string_equal(jstr(answer, "content/tags/0"), "x");
    assert_string_equal(jstr(answer, "content/tags/1"), "z");
    assert_int_equal(json_array_size(jpath(answer, "content/tags")), 2);
    assert_true(json_is_true(jpath(answer, "content/news")));
    assert_string_equal(jstr(answer, "content/color"), "b");
    assert_null(jpath(answer, "content/unrelated"));
    json_decref(answer);
    proc_result_free(&r);
}

static void test_form_declined_or_unanswerable(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "--json", "call", "profile", "--decline");
    assert_status(&r, EXIT_OK);
    json_t *answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "decline");
    assert_null(jpath(answer, "content"));
    json_decref(answer);
    proc_result_free(&r);

    /* No terminal and no flags: nobody to ask. */
    CLI(&r, &target, "--json", "call", "profile");
    assert_status(&r, EXIT_OK);
    answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "cancel");
    json_decref(answer);
    assert_contains(r.err, "no terminal to ask on");
    proc_result_free(&r);

    /* --yes cannot invent a name. */
    CLI(&r, &target, "--json", "call", "profile", "--yes", "-a", "email=a@example.com");
    assert_status(&r, EXIT_OK);
    answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "cancel");
    json_decref(answer);
    assert_contains(r.err, "the form needs \"name\"");
    assert_contains(r.err, "--answer name=VALUE");
    proc_result_free(&r);

    /* An answer the schema refuses. */
    CLI(&r, &target, "--json", "call", "profile", "-a", "name=Cy", "-a", "email=c@example.com",
        "-a", "age=200");
    assert_status(&r, EXIT_OK);
    answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "cancel");
    json_decref(answer);
    assert_contains(r.err, "--answer age: \"200\" must be at most 150");
    proc_result_free(&r);

    CLI(&r, &target, "--json", "call", "profile", "-a", "name=Cy", "-a", "email=not-an-address");
    answer = tool_json(&r);
    assert_string_equal(jstr(answer, "action"), "cancel");
    json_decref(answer);
    assert_contains(r.err, "must be an email address");
    proc_result_free(&r);
}

static void test_url_elicitation(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "call", "visit", "--yes");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "accept\n");
    assert_contains(r.err, "Sign in to continue");
    assert_contains(r.err, "https://example.com/login?session=42");
    assert_contains(r.err, "the page is on example.com");
    proc_result_free(&r);

    CLI(&r, &target, "call", "visit", "--decline");
    assert_string_equal(r.out, "decline\n");
    proc_result_free(&r);

    CLI(&r, &target, "call", "visit");
    assert_string_equal(r.out, "cancel\n");
    assert_contains(r.err, "the server asks you to visit https://example.com/login?session=42");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * Sampling and roots
 * ------------------------------------------------------------------------ */

static void test_sampling(void **state)
{
    proc_result_t r;
    /* Not declared without --sample-command: the server says it needs it. */
    CLI(&r, &target, "call", "think");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "--sample-command");
    proc_result_free(&r);

    char request_file[] = "/tmp/mcp-cli-sample-XXXXXX";
    int fd = mkstemp(request_file);
    assert_true(fd >= 0);
    close(fd);
    char command[512];
    snprintf(command, sizeof command,
             "cat > %s; echo '{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
             "\"text\":\"42\"},\"model\":\"shell\"}'",
             request_file);
    CLI(&r, &target, "call", "think", "--sample-command", command);
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "the model said: 42\n");
    proc_result_free(&r);
    /* The command got the request on its stdin. */
    json_t *request = json_load_file(request_file, 0, NULL);
    unlink(request_file);
    assert_string_equal(jstr(request, "method"), "sampling/createMessage");
    assert_true(json_integer_value(jpath(request, "params/maxTokens")) == 10);
    assert_string_equal(jstr(request, "params/messages/0/content/text"), "What is 6 times 7?");
    json_decref(request);

    /* A command that fails: the call fails (a legacy server is told, and
     * answers the call with an error of its own). */
    int failed = target.options ? EXIT_PROTOCOL : EXIT_USAGE;
    CLI(&r, &target, "call", "think", "--sample-command", "echo not json");
    assert_status(&r, failed);
    assert_contains(r.err, "--sample-command did not print a JSON object");
    proc_result_free(&r);

    CLI(&r, &target, "call", "think", "--sample-command", "exit 7");
    assert_status(&r, failed);
    assert_contains(r.err, "--sample-command failed (exit status 7)");
    proc_result_free(&r);
}

static void test_roots(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "--json", "call", "where", "--root", "/tmp", "--root", "/");
    assert_status(&r, EXIT_OK);
    json_t *roots = tool_json(&r);
    char *tmp = realpath("/tmp", NULL);
    char expected[4200];
    snprintf(expected, sizeof expected, "file://%s", tmp);
    assert_string_equal(jstr(roots, "0/uri"), expected);
    assert_string_equal(jstr(roots, "0/name"), strrchr(tmp, '/') + 1);
    assert_string_equal(jstr(roots, "1/uri"), "file:///");
    free(tmp);
    json_decref(roots);
    proc_result_free(&r);

    CLI(&r, &target, "call", "where");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "--root PATH");
    proc_result_free(&r);

    CLI(&r, &target, "call", "where", "--root", "/no/such/dir");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "--root /no/such/dir");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * What else a server does
 * ------------------------------------------------------------------------ */

static void test_server_logs(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "call", "chatty", "--log-level", "info");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "ok\n");
    assert_contains(r.err, "server info [chatty]: an informative line");
    assert_contains(r.err, "server warning [chatty]: {\"bad\":1}");
    proc_result_free(&r);

    CLI(&r, &target, "call", "chatty", "--log-level", "warning");
    assert_not_contains(r.err, "an informative line");
    assert_contains(r.err, "server warning [chatty]");
    proc_result_free(&r);

    /* Not asked for, not sent. */
    CLI(&r, &target, "call", "chatty");
    assert_not_contains(r.err, "chatty");
    proc_result_free(&r);
}

static void test_tool_error(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "call", "fail");
    assert_status(&r, EXIT_TOOL_ERROR);
    assert_string_equal(r.out, "");
    assert_contains(r.err, "tool \"fail\" reported an error:");
    assert_contains(r.err, "it went wrong on purpose");
    proc_result_free(&r);

    CLI(&r, &target, "--json", "call", "fail");
    assert_status(&r, EXIT_TOOL_ERROR);
    assert_true(json_is_true(jpath(r.json, "isError")));
    assert_string_equal(jstr(r.json, "content/0/text"), "it went wrong on purpose");
    proc_result_free(&r);
}

static void test_binary_and_multiple_contents(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "read", "data://blob");
    assert_status(&r, EXIT_OK);
    assert_int_equal(r.out_len, 256); /* written as it is: stdout is not a terminal */
    for (int i = 0; i < 256; i++)
        assert_int_equal((unsigned char)r.out[i], i);
    proc_result_free(&r);

    CLI(&r, &target, "--json", "read", "data://blob");
    assert_string_equal(jstr(r.json, "contents/0/mimeType"), "application/octet-stream");
    assert_true(json_is_string(jpath(r.json, "contents/0/blob")));
    proc_result_free(&r);

    CLI(&r, &target, "read", "data://two");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "first\nsecond\n");
    proc_result_free(&r);
}

static void test_timeout(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "call", "slow", "ms=10000", "--timeout", "0.5");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "no answer within 500 ms (see --timeout)");
    proc_result_free(&r);
}

static void test_server_dies_mid_call(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "call", "crash");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "tools/call crash");
    /* What the server last said on its stderr explains it. */
    assert_contains(r.err, "crashing on purpose");
    proc_result_free(&r);

    CLI(&r, &target, "--json", "call", "crash");
    assert_status(&r, EXIT_CONNECTION);
    assert_int_equal(json_integer_value(jpath(r.json, "error/status")), EXIT_CONNECTION);
    assert_string_equal(jstr(r.json, "error/kind"), "connection");
    proc_result_free(&r);
}

static void test_interrupted(void **state)
{
    proc_t p;
    cli_start(&p, &target, NULL,
              (const char *const[]){"-v", "call", "slow", "ms=30000", NULL});
    /* Sent: the request is on the wire. */
    assert_true(proc_wait_for(&p, PROC_STDERR, "\"method\":\"tools/call\"", 20000));
    proc_signal(&p, SIGINT);
    proc_result_t r;
    proc_finish(&p, &r, 10000);
    assert_status(&r, EXIT_INTERRUPTED);
    assert_contains(r.err, "interrupted");
    /* The call was cancelled on the wire. */
    assert_contains(r.err, "\"method\":\"notifications/cancelled\"");
    proc_result_free(&r);
}

/* A tool that answers with a task: mcp follows it, answers the question
 * the task asks, and prints the result like any other. In the modern era
 * the server makes the task and the answer goes in tasks/update; a legacy
 * (2025-11-25) server lists the tool with execution.taskSupport, mcp asks
 * for a task, and the question comes as a request while tasks/result
 * waits. */
static void test_task(void **state)
{
    proc_result_t r;
    CLI(&r, &target, "-v", "call", "job", "ms=50", "-a", "go=yes");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "job done: go=true");
    assert_contains(r.err, "\"method\":\"tasks/get\"");
    if (target.options == NULL) {
        assert_contains(r.err, "\"resultType\":\"task\"");
        assert_contains(r.err, "\"method\":\"tasks/update\"");
    } else {
        assert_contains(r.err, "\"task\":{}");
        assert_contains(r.err, "\"method\":\"tasks/result\"");
        assert_contains(r.err, "\"io.modelcontextprotocol/related-task\"");
        assert_not_contains(r.err, "tasks/update");
    }
    proc_result_free(&r);
}

/* Ctrl-C while mcp waits for a task: the task is cancelled on the
 * server (tasks/cancel), not just forgotten. */
static void test_task_interrupted(void **state)
{
    proc_t p;
    cli_start(&p, &target, NULL, (const char *const[]){"-v", "call", "job", "ms=30000", NULL});
    assert_true(proc_wait_for(&p, PROC_STDERR, "\"method\":\"tasks/get\"", 20000));
    proc_signal(&p, SIGINT);
    proc_result_t r;
    proc_finish(&p, &r, 10000);
    assert_status(&r, EXIT_INTERRUPTED);
    assert_contains(r.err, "\"method\":\"tasks/cancel\"");
    proc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_form_answered_by_flags),
        cmocka_unit_test(test_form_declined_or_unanswerable),
        cmocka_unit_test(test_url_elicitation),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_roots),
        cmocka_unit_test(test_server_logs),
        cmocka_unit_test(test_tool_error),
        cmocka_unit_test(test_binary_and_multiple_contents),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_server_dies_mid_call),
        cmocka_unit_test(test_interrupted),
        cmocka_unit_test(test_task),
        cmocka_unit_test(test_task_interrupted),
    };
    int failed = cmocka_run_group_tests_name("modern", tests, setup_modern, NULL);
    failed += cmocka_run_group_tests_name("legacy era", tests, setup_legacy, NULL);
    return failed;
}
