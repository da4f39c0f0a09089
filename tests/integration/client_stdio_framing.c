/*
 * How the client reads a stdio server that misbehaves on its streams,
 * against this program started again with --scripted-server (a peer that
 * answers server/discover and, for the tool "noisy", writes the following
 * before its answer):
 *   - a line over the 16 MiB message limit on stdout: dropped whole, with
 *     a warning, and the stream stays in step (the next line is read as
 *     the next message, not as the tail of the long one);
 *   - a line that is not JSON, and a response to an id nobody asked:
 *     dropped, the call unharmed;
 *   - the answer itself ending in CRLF;
 *   - a 20,000-byte line on stderr: delivered in pieces of at most 8 KiB,
 *     none lost, and the lines after it intact.
 * An answer over the limit (the tool "huge", its id last) fails its call
 * at once with MCP_ELIMIT, not at the call's timeout.
 * And a request of 3 MiB, far over a pipe's buffer, reaches the peer
 * whole (the tool "measure" answers the length it received).
 *
 * The write timeout: after the tool "stall" the peer reads nothing for
 * STALL_MS. A 3 MiB request sent meanwhile fails with MCP_ETIMEDOUT once
 * write_timeout_ms has passed, without waiting for the peer; its line,
 * cut short in the pipe, reaches the peer ended by a byte that makes it
 * invalid JSON, so the peer rejects it instead of running it; and the
 * next call is answered as usual.
 *
 * The call's own timeout bounds its write too: with the default (long)
 * write timeout, a 3 MiB request whose call allows 600 ms fails with
 * MCP_ETIMEDOUT after about 600 ms, and a call that meanwhile waits for
 * its turn to write gives up at its own 300 ms, having sent nothing.
 *
 * And a legacy server that never answers initialize: the handshake times
 * out, and the client does not cancel it (clients MUST NOT cancel
 * initialize): nothing but initialize reaches the peer (--silent-server,
 * which records every line it reads).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_fake_transport.h"
#include "mcp/mcp.h"
#include "test_clock.h"

#define LONG_LINE_BYTES (MCP_DEFAULT_MAX_MESSAGE_BYTES + 10)
#define STDERR_LINE_BYTES 20000
#define STALL_MS 3000
#define WRITE_TIMEOUT_MS 200

static char self_path[4096];

/* ------------------------------------------------------------------------
 * The scripted server
 * ------------------------------------------------------------------------ */

static void write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n <= 0)
            exit(3);
        data += n;
        len -= (size_t)n;
    }
}

static void send_line(json_t *msg_new, const char *end)
{
    char *text = json_dumps(msg_new, JSON_COMPACT);
    json_decref(msg_new);
    write_all(1, text, strlen(text));
    write_all(1, end, strlen(end));
    free(text);
}

static void misbehave(void)
{
    /* stdout: a line over the limit, which happens to look like the
     * start of a message, then junk and an answer to no request. */
    char *big = malloc(LONG_LINE_BYTES + 1);
    if (!big)
        exit(4);
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"padding\":\"";
    memcpy(big, head, sizeof head - 1);
    memset(big + sizeof head - 1, 'x', LONG_LINE_BYTES - (sizeof head - 1));
    big[LONG_LINE_BYTES] = '\n';
    write_all(1, big, LONG_LINE_BYTES + 1);
    free(big);
    write_all(1, "this is not json\n", 17);
    send_line(json_pack("{s:s, s:i, s:{}}", "jsonrpc", "2.0", "id", 999999, "result"), "\n");

    /* stderr: one long line, then a short one. */
    char *line = malloc(STDERR_LINE_BYTES + 1);
    if (!line)
        exit(4);
    memset(line, 'e', STDERR_LINE_BYTES);
    line[STDERR_LINE_BYTES] = '\n';
    write_all(2, line, STDERR_LINE_BYTES + 1);
    free(line);
    write_all(2, "after\n", 6);
}

/* An answer to `id` over the message limit, its id last (as the
 * TypeScript SDK writes answers). */
static void answer_too_large(const json_t *id)
{
    static const char head[] =
        "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"";
    char *id_text = json_dumps(id, JSON_ENCODE_ANY);
    char tail[96];
    int tail_len = snprintf(tail, sizeof tail, "\"}]},\"jsonrpc\":\"2.0\",\"id\":%s}\n", id_text);
    free(id_text);
    char *big = malloc(LONG_LINE_BYTES);
    if (!big || tail_len <= 0 || (size_t)tail_len >= sizeof tail)
        exit(4);
    memcpy(big, head, sizeof head - 1);
    memset(big + sizeof head - 1, 'x', LONG_LINE_BYTES - (sizeof head - 1));
    write_all(1, big, LONG_LINE_BYTES);
    write_all(1, tail, (size_t)tail_len);
    free(big);
}

static json_t *text_result(const char *text)
{
    return json_pack("{s:s, s:[{s:s, s:s}]}", "resultType", "complete", "content", "type", "text",
                     "text", text);
}

static int scripted_server(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rejected = 0, measured = 0;
    bool stall = false;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_t *req = json_loadb(line, (size_t)n, 0, NULL);
        if (!req) {
            /* As a real server does: a parse error, for no id. */
            rejected++;
            send_line(json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error",
                                "code", MCP_PARSE_ERROR, "message", "Parse error"),
                      "\n");
            continue;
        }
        const char *method = json_string_value(json_object_get(req, "method"));
        json_t *id = json_object_get(req, "id");
        if (!method || !id) {
            json_decref(req); /* a notification */
            continue;
        }
        const char *tool =
            json_string_value(json_object_get(json_object_get(req, "params"), "name"));
        if (strcmp(method, "server/discover") == 0) {
            send_line(mcp_jsonrpc_result(id, fake_discover_result()), "\n");
        } else if (strcmp(method, "tools/call") == 0 && tool && strcmp(tool, "noisy") == 0) {
            misbehave();
            send_line(mcp_jsonrpc_result(id, json_pack("{s:s, s:[{s:s, s:s}]}", "resultType",
                                                       "complete", "content", "type", "text",
                                                       "text", "survived")),
                      "\r\n");
        } else if (strcmp(method, "tools/call") == 0 && tool && strcmp(tool, "huge") == 0) {
            answer_too_large(id);
        } else if (strcmp(method, "tools/call") == 0 && tool && strcmp(tool, "measure") == 0) {
            /* The length of arguments.text, as received. */
            const char *text = json_string_value(json_object_get(
                json_object_get(json_object_get(req, "params"), "arguments"), "text"));
            char size[32];
            snprintf(size, sizeof size, "%zu", text ? strlen(text) : 0);
            measured++;
            send_line(mcp_jsonrpc_result(id, json_pack("{s:s, s:[{s:s, s:s}]}", "resultType",
                                                       "complete", "content", "type", "text",
                                                       "text", size)),
                      "\n");
        } else if (strcmp(method, "tools/call") == 0 && tool && strcmp(tool, "stall") == 0) {
            send_line(mcp_jsonrpc_result(id, text_result("stalling")), "\n");
            stall = true;
        } else if (strcmp(method, "tools/call") == 0 && tool && strcmp(tool, "tally") == 0) {
            char tally[64];
            snprintf(tally, sizeof tally, "rejected %d, measured %d", rejected, measured);
            send_line(mcp_jsonrpc_result(id, text_result(tally)), "\n");
        } else if (strcmp(method, "tools/call") == 0) {
            send_line(mcp_jsonrpc_result(id, text_result("calm")), "\n");
        } else {
            send_line(mcp_jsonrpc_error(id, MCP_METHOD_NOT_FOUND, "Method not found", NULL),
                      "\n");
        }
        json_decref(req);
        if (stall) {
            stall = false;
            sleep_ms(STALL_MS);
            write_all(2, "awake\n", 6);
        }
    }
    free(line);
    return 0;
}

/* ------------------------------------------------------------------------
 * What the client reports
 * ------------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int dropped_warnings;
static size_t stderr_pieces, stderr_bytes, longest_piece;
static bool saw_after, saw_awake;
static int cut_short_warnings;

static void on_log(void *user, mcp_log_level_t level, const char *msg)
{
    (void)user;
    pthread_mutex_lock(&lock);
    if (level == MCP_LOG_WARNING && strstr(msg, "line over 16777216 bytes; dropped"))
        dropped_warnings++;
    if (level == MCP_LOG_WARNING && strstr(msg, "the line marked invalid"))
        cut_short_warnings++;
    pthread_mutex_unlock(&lock);
}

static void on_stderr(void *user, const char *line)
{
    (void)user;
    pthread_mutex_lock(&lock);
    size_t len = strlen(line);
    if (strcmp(line, "after") == 0) {
        saw_after = true;
    } else if (strcmp(line, "awake") == 0) {
        saw_awake = true;
    } else if (len > 0 && strspn(line, "e") == len) {
        stderr_pieces++;
        stderr_bytes += len;
        if (len > longest_piece)
            longest_piece = len;
    }
    pthread_mutex_unlock(&lock);
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* Calls `tool` (no arguments), which must answer the text `want`. */
static void expect_text(mcp_client_t *c, const char *tool, const char *want)
{
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, tool, NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), want);
    json_decref(r);
}

/* Waits up to 10 s for *flag (set by on_stderr). */
static bool wait_for(const bool *flag)
{
    int64_t until = now_ms() + 10000;
    for (;;) {
        pthread_mutex_lock(&lock);
        bool done = *flag;
        pthread_mutex_unlock(&lock);
        if (done || now_ms() > until)
            return done;
        sleep_ms(10);
    }
}

/* {"text": "aaa..."}, 3 MiB of text: far more than a pipe's buffer. */
#define BIG_TEXT_BYTES (3 * 1024 * 1024)

static json_t *big_arguments(void)
{
    char *text = malloc(BIG_TEXT_BYTES + 1);
    assert_non_null(text);
    memset(text, 'a', BIG_TEXT_BYTES);
    text[BIG_TEXT_BYTES] = '\0';
    json_t *args = json_pack("{s:s}", "text", text);
    free(text);
    assert_non_null(args);
    return args;
}

/* A client connected to this program's --scripted-server (0: the default
 * write timeout), reporting to on_log and on_stderr. */
static mcp_client_t *scripted_client(int64_t write_timeout_ms)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(
        &(mcp_client_options_t){.name = "framing", .version = "1", .log = on_log}, &err);
    assert_non_null(c);
    const char *argv[] = {self_path, "--scripted-server", NULL};
    assert_int_equal(mcp_client_connect_stdio(c,
                                              &(mcp_stdio_target_t){
                                                  .argv = argv,
                                                  .on_stderr = on_stderr,
                                                  .write_timeout_ms = write_timeout_ms,
                                              },
                                              &err),
                     MCP_OK);
    return c;
}

static void test_misbehaving_streams(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_client_t *c = scripted_client(0);
    assert_string_equal(mcp_client_protocol_version(c), "2026-07-28");

    json_t *r = NULL;
    expect_text(c, "noisy", "survived");
    /* In step: the next call gets its own answer. */
    expect_text(c, "calm", "calm");

    /* A request far larger than the pipe's buffer: written as the server
     * reads it, and received whole. */
    json_t *args = big_arguments();
    assert_int_equal(mcp_client_call_tool(c, "measure", args, NULL, &r, &err), MCP_OK);
    json_decref(args);
    assert_string_equal(first_text(r), "3145728");
    json_decref(r);

    /* stderr is read on its own thread: wait for its last line. */
    assert_true(wait_for(&saw_after));
    pthread_mutex_lock(&lock);
    assert_int_equal(dropped_warnings, 1);
    assert_int_equal(stderr_bytes, STDERR_LINE_BYTES);
    assert_int_equal(stderr_pieces, (STDERR_LINE_BYTES + 8191) / 8192);
    assert_true(longest_piece <= 8192);
    pthread_mutex_unlock(&lock);
    mcp_client_free(c);
}

/* An answer over the message limit is dropped, and the call it answers
 * fails at once with MCP_ELIMIT (not at its timeout, a minute away); the
 * stream stays in step. */
static void test_answer_over_the_limit(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_client_t *c = scripted_client(0);
    json_t *r = NULL;
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "huge", NULL, NULL, &r, &err), MCP_ELIMIT);
    int64_t took = now_ms() - start;
    assert_null(r);
    assert_non_null(strstr(err.message, "exceeds 16777216 bytes"));
    mcp_error_clear(&err);
    assert_true(took < 20000);
    expect_text(c, "calm", "calm");
    mcp_client_free(c);
}

static void test_write_timeout(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_client_t *c = scripted_client(WRITE_TIMEOUT_MS);

    json_t *r = NULL;
    expect_text(c, "stall", "stalling");

    /* The peer reads nothing now: the request fills the pipe and gives
     * up after the write timeout, long before the peer wakes. */
    json_t *args = big_arguments();
    int64_t started = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "measure", args, NULL, &r, &err), MCP_ETIMEDOUT);
    int64_t took = now_ms() - started;
    json_decref(args);
    assert_null(r);
    assert_true(took >= WRITE_TIMEOUT_MS - 10);
    assert_true(took < STALL_MS - 500);
    pthread_mutex_lock(&lock);
    assert_int_equal(cut_short_warnings, 1);
    pthread_mutex_unlock(&lock);

    /* Once the peer reads again, the next call is answered: the cut line
     * was ended first and rejected, not run. */
    assert_true(wait_for(&saw_awake));
    expect_text(c, "calm", "calm");
    expect_text(c, "tally", "rejected 1, measured 0");
    mcp_client_free(c);
}

typedef struct timed_call {
    mcp_client_t *c;
    const char *tool;
    json_t *args;
    int64_t timeout_ms;
    int rc;
    int64_t took;
} timed_call_t;

static void *run_timed_call(void *arg)
{
    timed_call_t *tc = arg;
    json_t *r = NULL;
    int64_t started = now_ms();
    tc->rc = mcp_client_call_tool(tc->c, tc->tool, tc->args,
                                  &(mcp_request_options_t){.timeout_ms = tc->timeout_ms}, &r,
                                  NULL);
    tc->took = now_ms() - started;
    json_decref(r);
    return NULL;
}

static void test_call_timeout_bounds_the_write(void **state)
{
    (void)state;
    pthread_mutex_lock(&lock);
    saw_awake = false;
    pthread_mutex_unlock(&lock);
    mcp_client_t *c = scripted_client(0); /* the write timeout is 30 s */
    expect_text(c, "stall", "stalling");

    /* The peer reads nothing now. A big request fills the pipe and waits
     * for room; its call's timeout, not the write timeout, ends that. */
    timed_call_t big = {c, "measure", big_arguments(), 600, 0, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, run_timed_call, &big), 0);
    sleep_ms(100);
    /* Meanwhile a small call waits for its turn to write, and gives up at
     * its own deadline without writing anything. */
    timed_call_t small = {c, "calm", NULL, 300, 0, 0};
    run_timed_call(&small);
    pthread_join(thread, NULL);
    json_decref(big.args);
    assert_int_equal(small.rc, MCP_ETIMEDOUT);
    assert_true(small.took >= 290);
    assert_true(small.took < STALL_MS - 1500);
    assert_int_equal(big.rc, MCP_ETIMEDOUT);
    assert_true(big.took >= 590);
    assert_true(big.took < STALL_MS - 1000);

    /* The stream stayed in step: the cut line was rejected, the small
     * request never went out, and the next calls are answered. */
    assert_true(wait_for(&saw_awake));
    expect_text(c, "calm", "calm");
    expect_text(c, "tally", "rejected 1, measured 0");
    mcp_client_free(c);
}

/* Appends every line it reads to `record`; answers nothing. */
static int silent_server(const char *record)
{
    FILE *out = fopen(record, "w");
    if (!out)
        return 2;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        fwrite(line, 1, (size_t)n, out);
        fflush(out);
    }
    free(line);
    fclose(out);
    return 0;
}

static void test_initialize_is_never_cancelled(void **state)
{
    (void)state;
    char record[] = "/tmp/mcp-silent-XXXXXX";
    int fd = mkstemp(record);
    assert_true(fd >= 0);
    close(fd);
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "framing",
                                                             .version = "1",
                                                             .era = MCP_CLIENT_ERA_LEGACY,
                                                             .timeout_ms = 300},
                                     &err);
    assert_non_null(c);
    const char *argv[] = {self_path, "--silent-server", record, NULL};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){.argv = argv}, &err),
                     MCP_ETIMEDOUT);
    mcp_error_clear(&err);
    mcp_client_free(c); /* closes the peer's stdin: it has read everything */

    FILE *in = fopen(record, "r");
    assert_non_null(in);
    char line[4096];
    int lines = 0;
    while (fgets(line, sizeof line, in)) {
        lines++;
        assert_non_null(strstr(line, "\"initialize\""));
        assert_null(strstr(line, "notifications/cancelled"));
    }
    fclose(in);
    unlink(record);
    assert_int_equal(lines, 1);
}

static void test_negative_write_timeout(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_client_t *c =
        mcp_client_new(&(mcp_client_options_t){.name = "framing", .version = "1"}, &err);
    assert_non_null(c);
    const char *argv[] = {self_path, "--scripted-server", NULL};
    assert_int_equal(mcp_client_connect_stdio(
                         c, &(mcp_stdio_target_t){.argv = argv, .write_timeout_ms = -1}, &err),
                     MCP_EINVAL);
    assert_non_null(strstr(err.message, "write_timeout_ms"));
    mcp_error_clear(&err);
    mcp_client_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--scripted-server") == 0)
        return scripted_server();
    if (argc > 2 && strcmp(argv[1], "--silent-server") == 0)
        return silent_server(argv[2]);
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        return 1;
    self_path[n] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misbehaving_streams),
        cmocka_unit_test(test_answer_over_the_limit),
        cmocka_unit_test(test_write_timeout),
        cmocka_unit_test(test_call_timeout_bounds_the_write),
        cmocka_unit_test(test_negative_write_timeout),
        cmocka_unit_test(test_initialize_is_never_cancelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
