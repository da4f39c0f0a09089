/*
 * The stdio transport's framing and lifecycle, against
 * tests/integration/servers/stdio_config_server as a child process:
 * the line-size limit (an oversized line gets -32600 naming its request's
 * id and is skipped, the stream goes on), line endings, concurrency (requests really run at
 * once; responses leave in completion order), large messages, and the
 * bounded grace period on EOF.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"

#include "modern_request.h"
#include "schema_check.h"
#include "stdio_child.h"

#define PATIENCE_MS 20000

static json_t *tool_call(json_int_t id, const char *name, json_t *arguments_new)
{
    return modern_request(id, "tools/call",
                          json_pack("{s:s, s:o}", "name", name, "arguments",
                                    arguments_new ? arguments_new : json_object()));
}

static void start(stdio_child_t *child, const char *max_line, const char *grace_ms)
{
    char line_env[64], grace_env[64];
    snprintf(line_env, sizeof line_env, "MCP_TEST_MAX_LINE=%s", max_line ? max_line : "0");
    snprintf(grace_env, sizeof grace_env, "MCP_TEST_GRACE_MS=%s", grace_ms ? grace_ms : "0");
    char *env[] = {line_env, grace_env, NULL};
    stdio_child_start(child, STDIO_CONFIG_SERVER, NULL, env);
}

/* The next response, schema-checked as an answer to tools/call. */
static json_t *next_response(stdio_child_t *child)
{
    json_t *response = stdio_child_read_response(child, PATIENCE_MS, NULL);
    MCP_ASSERT_SCHEMA_VALID(response, "tools/call", "2026-07-28");
    return response;
}

static const char *first_text(const json_t *response)
{
    const json_t *result = json_object_get(response, "result");
    if (!result)
        fail_msg("expected a result, got %s", json_dumps(response, JSON_COMPACT));
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static void expect_error_code(const json_t *response, int code)
{
    const json_t *error = json_object_get(response, "error");
    if (!error)
        fail_msg("expected error %d, got %s", code, json_dumps(response, JSON_COMPACT));
    assert_int_equal(json_integer_value(json_object_get(error, "code")), code);
}

static void finish(stdio_child_t *child)
{
    stdio_child_close_stdin(child);
    json_t *extra = stdio_child_read(child, PATIENCE_MS);
    if (extra)
        fail_msg("unexpected output: %s", json_dumps(extra, JSON_COMPACT));
    assert_int_equal(stdio_child_wait(child, PATIENCE_MS), 0);
}

/* An echo request whose line (without the newline) is exactly `size`
 * bytes; malloc'd. */
static char *echo_line_of_size(json_int_t id, size_t size)
{
    json_t *request = tool_call(id, "echo", json_pack("{s:s}", "text", ""));
    size_t base;
    free(mcp_json_dump(request, &base));
    assert_true(size >= base);
    char *text = malloc(size - base + 1);
    memset(text, 'a', size - base);
    text[size - base] = '\0';
    json_object_set_new(json_object_get(json_object_get(request, "params"), "arguments"), "text",
                        json_string(text));
    free(text);
    size_t len;
    char *line = mcp_json_dump(request, &len);
    json_decref(request);
    assert_int_equal(len, size);
    line = realloc(line, len + 2);
    line[len] = '\n';
    line[len + 1] = '\0';
    return line;
}

static void send_string(stdio_child_t *child, const char *s)
{
    stdio_child_send_raw(child, s, strlen(s));
}

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ------------------------------------------------------------------ */

static void test_line_limit(void **state)
{
    stdio_child_t child;
    start(&child, "1024", NULL);

    /* Exactly the limit: served. One byte more: refused, naming the
     * request, so that its caller need not wait for a timeout. */
    char *line = echo_line_of_size(1, 1024);
    send_string(&child, line);
    free(line);
    json_t *response = next_response(&child);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 1);
    json_decref(response);

    line = echo_line_of_size(2, 1025);
    send_string(&child, line);
    free(line);
    response = next_response(&child);
    expect_error_code(response, MCP_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 2);
    json_decref(response);

    /* Far beyond the limit and beyond one read: one refusal. */
    line = echo_line_of_size(3, 300000);
    send_string(&child, line);
    free(line);
    response = next_response(&child);
    expect_error_code(response, MCP_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 3);
    json_decref(response);

    /* A notification has no id to name: the refusal has none (the
     * schema's JSONRPCErrorResponse may leave it out). */
    line = echo_line_of_size(0, 2000);
    char *id_member = strstr(line, "\"id\":0,");
    assert_non_null(id_member);
    memcpy(id_member, "\"xx\":0,", 7); /* the same length, no longer an id */
    send_string(&child, line);
    free(line);
    response = next_response(&child);
    expect_error_code(response, MCP_INVALID_REQUEST);
    assert_null(json_object_get(response, "id"));
    json_decref(response);

    /* An oversized line trickling in, in pieces. */
    line = echo_line_of_size(4, 3000);
    for (size_t off = 0; off < 3001; off += 700) {
        size_t n = 3001 - off < 700 ? 3001 - off : 700;
        stdio_child_send_raw(&child, line + off, n);
        pause_ms(20);
    }
    free(line);
    response = next_response(&child);
    expect_error_code(response, MCP_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 4);
    json_decref(response);

    /* Several lines in one write, the long one in the middle. */
    char *good1 = echo_line_of_size(5, 400);
    char *bad = echo_line_of_size(6, 5000);
    char *good2 = echo_line_of_size(7, 500);
    size_t total = strlen(good1) + strlen(bad) + strlen(good2);
    char *all = malloc(total + 1);
    snprintf(all, total + 1, "%s%s%s", good1, bad, good2);
    send_string(&child, all);
    free(good1);
    free(bad);
    free(good2);
    free(all);
    /* The refusal is written by the reader at once; the two answers come
     * from workers, in any order. */
    int answered = 0, refused = 0;
    for (int i = 0; i < 3; i++) {
        response = next_response(&child);
        json_int_t id = json_integer_value(json_object_get(response, "id"));
        if (id == 5 || id == 7) {
            answered++;
        } else {
            expect_error_code(response, MCP_INVALID_REQUEST);
            assert_int_equal(id, 6);
            refused++;
        }
        json_decref(response);
    }
    assert_int_equal(answered, 2);
    assert_int_equal(refused, 1);

    /* The stream goes on. */
    json_t *request = tool_call(8, "echo", json_pack("{s:s}", "text", "after"));
    stdio_child_send(&child, request);
    json_decref(request);
    response = next_response(&child);
    assert_string_equal(first_text(response), "after");
    json_decref(response);
    finish(&child);
}

/* The largest limit there is means "no limit", not "64 KiB". */
static void test_unbounded_line_limit(void **state)
{
    char max[32];
    snprintf(max, sizeof max, "%zu", SIZE_MAX);
    stdio_child_t child;
    start(&child, max, NULL);
    char *line = echo_line_of_size(1, 300000);
    send_string(&child, line);
    free(line);
    json_t *response = next_response(&child);
    assert_true(strlen(first_text(response)) > 299000);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 1);
    json_decref(response);
    finish(&child);
}

/* A long line grows the reader's buffer, which shrinks back once the line
 * is served: lines after it, short and long, in one write with it or
 * after, are still read whole. */
static void test_long_lines_then_short(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    for (int round = 0; round < 2; round++) {
        char *long_line = echo_line_of_size(10 * round + 1, 200000);
        char *short_line = echo_line_of_size(10 * round + 2, 300);
        size_t total = strlen(long_line) + strlen(short_line);
        char *both = malloc(total + 1);
        snprintf(both, total + 1, "%s%s", long_line, short_line);
        send_string(&child, both);
        free(both);
        free(long_line);
        free(short_line);
        size_t lengths[2] = {0, 0};
        for (int i = 0; i < 2; i++) {
            json_t *response = next_response(&child);
            json_int_t id = json_integer_value(json_object_get(response, "id"));
            assert_true(id == 10 * round + 1 || id == 10 * round + 2);
            lengths[id - 10 * round - 1] = strlen(first_text(response));
            json_decref(response);
        }
        assert_true(lengths[0] > 199000);
        assert_true(lengths[1] < 300);
    }
    finish(&child);
}

static void test_line_endings(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    json_t *request = tool_call(1, "echo", json_pack("{s:s}", "text", "crlf"));
    size_t len;
    char *line = mcp_json_dump(request, &len);
    json_decref(request);
    send_string(&child, "\n\n \t \r\n");
    send_string(&child, line);
    send_string(&child, "\r\n");
    free(line);
    json_t *response = next_response(&child);
    assert_string_equal(first_text(response), "crlf");
    json_decref(response);
    finish(&child);
}

/* Four calls that each wait until all four run: concurrency, not luck. */
static void test_requests_run_concurrently(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    for (int i = 1; i <= 4; i++) {
        json_t *request = tool_call(i, "meet", json_pack("{s:i}", "n", 4));
        stdio_child_send(&child, request);
        json_decref(request);
    }
    for (int i = 1; i <= 4; i++) {
        json_t *response = next_response(&child);
        assert_string_equal(first_text(response), "met 4");
        json_decref(response);
    }
    finish(&child);
}

static void test_responses_leave_in_completion_order(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    json_t *request = tool_call(1, "sleep", json_pack("{s:i}", "ms", 1500));
    stdio_child_send(&child, request);
    json_decref(request);
    request = tool_call(2, "sleep", json_pack("{s:i}", "ms", 0));
    stdio_child_send(&child, request);
    json_decref(request);
    json_t *response = next_response(&child);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 2);
    json_decref(response);
    response = next_response(&child);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 1);
    assert_string_equal(first_text(response), "slept 1500");
    json_decref(response);
    finish(&child);
}

/* Big messages in both directions, each on one line. */
static void test_large_messages(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    json_t *request = tool_call(1, "big", json_pack("{s:i}", "bytes", 3 * 1024 * 1024));
    stdio_child_send(&child, request);
    json_decref(request);
    json_t *response = next_response(&child);
    assert_int_equal(strlen(first_text(response)), 3 * 1024 * 1024);
    json_decref(response);

    char *line = echo_line_of_size(2, 2 * 1024 * 1024);
    send_string(&child, line);
    free(line);
    response = next_response(&child);
    assert_true(strlen(first_text(response)) > 2000000);
    json_decref(response);
    finish(&child);
}

/* Many handlers writing at once, big responses and notifications mixed:
 * lines never interleave (stdio_child_read fails on a broken line). */
static void test_concurrent_writers_never_interleave(void **state)
{
    stdio_child_t child;
    start(&child, NULL, NULL);
    const int calls = 8;
    for (int i = 1; i <= calls; i++) {
        json_t *request = tool_call(i, "big", json_pack("{s:i, s:i}", "bytes", 100000 + i,
                                                        "progress", 50));
        json_object_set_new(modern_meta(request), "progressToken", json_integer(i));
        stdio_child_send(&child, request);
        json_decref(request);
    }
    int notifications = 0;
    for (int answered = 0; answered < calls;) {
        json_t *msg = stdio_child_read(&child, PATIENCE_MS);
        assert_non_null(msg);
        MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", "2026-07-28");
        if (json_object_get(msg, "id")) {
            json_int_t id = json_integer_value(json_object_get(msg, "id"));
            assert_int_equal(strlen(first_text(msg)), 100000 + id);
            answered++;
        } else {
            notifications++;
        }
        json_decref(msg);
    }
    assert_int_equal(notifications, calls * 50);
    finish(&child);
}

/* EOF with work in flight: what finishes within the grace period is
 * answered; what does not is cancelled, and the server still exits 0. */
static void test_bounded_grace_on_eof(void **state)
{
    stdio_child_t child;
    start(&child, NULL, "500");
    json_t *request = tool_call(1, "sleep", json_pack("{s:i}", "ms", 100));
    stdio_child_send(&child, request);
    json_decref(request);
    request = tool_call(2, "sleep", json_pack("{s:i}", "ms", 600000));
    stdio_child_send(&child, request);
    json_decref(request);
    stdio_child_close_stdin(&child);

    json_t *response = next_response(&child);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 1);
    json_decref(response);
    /* Nothing for the request cut short. */
    json_t *extra = stdio_child_read(&child, PATIENCE_MS);
    if (extra)
        fail_msg("unexpected output: %s", json_dumps(extra, JSON_COMPACT));
    assert_true(child.eof);
    assert_int_equal(stdio_child_wait(&child, PATIENCE_MS), 0);
}

/* The client vanishes while a response is pending: the server notices the
 * broken pipe and exits without being killed by SIGPIPE. */
static void test_reader_goes_away(void **state)
{
    stdio_child_t child;
    start(&child, NULL, "100");
    json_t *request = tool_call(1, "sleep", json_pack("{s:i}", "ms", 200));
    stdio_child_send(&child, request);
    json_decref(request);
    close(child.out_fd);
    child.out_fd = -1;
    int rc = stdio_child_wait(&child, PATIENCE_MS);
    assert_true(rc == 0 || rc == 1); /* clean end, or MCP_EIO reported */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_unbounded_line_limit),
        cmocka_unit_test(test_long_lines_then_short),
        cmocka_unit_test(test_line_endings),
        cmocka_unit_test(test_requests_run_concurrently),
        cmocka_unit_test(test_responses_leave_in_completion_order),
        cmocka_unit_test(test_large_messages),
        cmocka_unit_test(test_concurrent_writers_never_interleave),
        cmocka_unit_test(test_bounded_grace_on_eof),
        cmocka_unit_test(test_reader_goes_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
