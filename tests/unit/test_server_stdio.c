/*
 * The stdio transport in-process, over pipes: what a child process cannot
 * show -- mcp_server_stop_stdio() ends a run whose input is still open,
 * one run at a time per server, a new run after the last one ended, and
 * MCP_EIO once the reader of our output went away. (Framing, limits and
 * shutdown are tested with real processes in tests/integration.)
 */
#define _GNU_SOURCE /* pipe2 */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"

#include "modern_request.h"
#include "schema_check.h"
#include "test_clock.h"

typedef struct run {
    mcp_server_t *srv;
    int in[2], out[2]; /* the server reads in[0] and writes out[1] */
    pthread_t thread;
    int rc;
    bool running;
    int grace_ms;      /* shutdown_grace_ms; 0: 2000 */
    bool out_socket;   /* out is a socket pair rather than a pipe */
} run_t;

static int echo(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, mcp_call_arg_string(call, "text"));
}

/* Answers after a pause longer than any spin budget, so that the reader
 * is asleep in poll() when the answer goes out. */
static int slow_echo(mcp_call_t *call, void *user)
{
    struct timespec pause = {0, 30 * 1000000L};
    nanosleep(&pause, NULL);
    return echo(call, user);
}

static void *run_main(void *arg)
{
    run_t *r = arg;
    r->rc = mcp_server_run_stdio(
        r->srv, &(mcp_stdio_options_t){.in_fd = r->in[0], .out_fd = r->out[1],
                                       .shutdown_grace_ms = r->grace_ms ? r->grace_ms : 2000});
    return NULL;
}

/* Starts a run as `how` says (grace_ms, out_socket). */
static void run_start_as(run_t *r, mcp_server_t *srv, run_t how)
{
    memset(r, 0, sizeof *r);
    r->srv = srv;
    r->grace_ms = how.grace_ms;
    r->out_socket = how.out_socket;
    assert_int_equal(pipe2(r->in, O_CLOEXEC), 0);
    if (how.out_socket)
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, r->out), 0);
    else
        assert_int_equal(pipe2(r->out, O_CLOEXEC), 0);
    assert_int_equal(pthread_create(&r->thread, NULL, run_main, r), 0);
    r->running = true;
}

static void run_start(run_t *r, mcp_server_t *srv)
{
    run_start_as(r, srv, (run_t){0});
}

static int run_join(run_t *r)
{
    pthread_join(r->thread, NULL);
    r->running = false;
    for (int i = 0; i < 2; i++) {
        if (r->in[i] >= 0)
            close(r->in[i]);
        close(r->out[i]);
    }
    return r->rc;
}

static void send_call(run_t *r, json_int_t id, const char *tool, const char *text)
{
    json_t *request = modern_request(id, "tools/call",
                                     json_pack("{s:s, s:{s:s}}", "name", tool, "arguments",
                                               "text", text));
    size_t len;
    char *line = mcp_json_dump(request, &len);
    json_decref(request);
    line[len] = '\n';
    ssize_t n = write(r->in[1], line, len + 1);
    free(line);
    assert_int_equal(n, (ssize_t)len + 1);
}

static void send_echo(run_t *r, json_int_t id, const char *text)
{
    send_call(r, id, "echo", text);
}

/* Reads one line of output (a small one fits in the pipe at once). */
static json_t *read_message(run_t *r)
{
    char buf[4096];
    size_t used = 0;
    while (used < sizeof buf - 1) {
        struct pollfd pfd = {.fd = r->out[0], .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, 20000), 1);
        ssize_t n = read(r->out[0], buf + used, 1);
        assert_int_equal(n, 1);
        if (buf[used] == '\n')
            break;
        used++;
    }
    buf[used] = '\0';
    json_t *msg = json_loads(buf, 0, NULL);
    assert_non_null(msg);
    MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", "2026-07-28");
    return msg;
}

/* spin_us: mcp_server_options_t.spin_us */
static mcp_server_t *new_server_spinning(int spin_us)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "stdio", .version = "1", .spin_us = spin_us}, NULL);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo", .handler = echo},
                                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo_inline",
                                                            .handler = echo, .run_inline = true},
                                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "slow_echo",
                                                            .handler = slow_echo},
                                         NULL),
                     MCP_OK);
    return srv;
}

static mcp_server_t *new_server(void)
{
    return new_server_spinning(0);
}

/* Handlers registered run_inline run on the reader thread: each answer is
 * written before the next line is read, so they come back in order, and
 * the end of input still ends the run cleanly. */
static void test_inline_handlers(void **state)
{
    mcp_server_t *srv = new_server();
    run_t r;
    run_start(&r, srv);
    for (json_int_t id = 1; id <= 3; id++)
        send_call(&r, id, "echo_inline", "inline");
    close(r.in[1]);
    r.in[1] = -1;
    for (json_int_t id = 1; id <= 3; id++) {
        json_t *msg = read_message(&r);
        assert_int_equal(json_integer_value(json_object_get(msg, "id")), id);
        const json_t *block = json_array_get(
            json_object_get(json_object_get(msg, "result"), "content"), 0);
        assert_string_equal(json_string_value(json_object_get(block, "text")), "inline");
        json_decref(msg);
    }
    assert_int_equal(run_join(&r), MCP_OK);
    mcp_server_free(srv);
}

static void test_stop_ends_a_run_and_another_may_follow(void **state)
{
    mcp_server_t *srv = new_server();
    mcp_server_stop_stdio(srv); /* not running: nothing happens */
    mcp_server_stop_stdio(NULL);
    assert_int_equal(mcp_server_run_stdio(NULL, NULL), MCP_EINVAL);

    for (int pass = 0; pass < 2; pass++) {
        run_t r;
        run_start(&r, srv);
        send_echo(&r, 1, "hello");
        json_t *msg = read_message(&r);
        assert_int_equal(json_integer_value(json_object_get(msg, "id")), 1);
        json_decref(msg);

        /* A second run of the same server while this one runs is refused. */
        assert_int_equal(mcp_server_run_stdio(srv, &(mcp_stdio_options_t){.in_fd = r.in[0],
                                                                           .out_fd = r.out[1]}),
                         MCP_ESTATE);

        /* Input still open: only the stop ends the run, cleanly. */
        mcp_server_stop_stdio(srv);
        assert_int_equal(run_join(&r), MCP_OK);
    }
    mcp_server_free(srv);
}

static void expect_echo(run_t *r, json_int_t id, const char *text)
{
    json_t *msg = read_message(r);
    assert_int_equal(json_integer_value(json_object_get(msg, "id")), id);
    const json_t *block =
        json_array_get(json_object_get(json_object_get(msg, "result"), "content"), 0);
    assert_string_equal(json_string_value(json_object_get(block, "text")), text);
    json_decref(msg);
}

/* Whether the server's idle threads never wait actively (< 0), wait the default time
 * (0) or the longest (10000 µs, also asked beyond it), every request of a
 * sequential client is answered: those that come while it waits actively,
 * and those after a slow answer, which went out while the reader slept in
 * poll() and woke it. A stop still ends the run at any point. */
static void test_sequential_calls_whatever_the_active_wait(void **state)
{
    static const int SPINS[] = {-1, 0, 10000, 1000000};
    for (size_t i = 0; i < sizeof SPINS / sizeof SPINS[0]; i++) {
        mcp_server_t *srv = new_server_spinning(SPINS[i]);
        run_t r;
        run_start(&r, srv);
        json_int_t id = 0;
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < 50; k++) {
                send_call(&r, ++id, k % 2 ? "echo" : "echo_inline", "quick");
                expect_echo(&r, id, "quick");
            }
            send_call(&r, ++id, "slow_echo", "slow");
            expect_echo(&r, id, "slow");
        }
        /* Input still open: the stop ends the run, right after an answer
         * that woke the sleeping reader. */
        send_call(&r, ++id, "slow_echo", "last");
        expect_echo(&r, id, "last");
        mcp_server_stop_stdio(srv);
        assert_int_equal(run_join(&r), MCP_OK);
        mcp_server_free(srv);
    }
}

/* The reader of our output is gone: the run ends with MCP_EIO (and the
 * process is not killed by SIGPIPE). */
static void test_broken_output(void **state)
{
    mcp_server_t *srv = new_server();
    run_t r;
    run_start(&r, srv);
    close(r.out[0]);
    r.out[0] = -1;
    /* Each line wakes the reader; once a response failed to go out, the
     * run ends. */
    struct timespec pause = {0, 20 * 1000000L};
    for (int i = 0; i < 500; i++) {
        if (pthread_tryjoin_np(r.thread, NULL) == 0) {
            r.running = false;
            break;
        }
        send_echo(&r, i, "into the void");
        nanosleep(&pause, NULL);
    }
    assert_false(r.running);
    assert_int_equal(r.rc, MCP_EIO);
    close(r.in[0]);
    close(r.in[1]);
    close(r.out[1]);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* A client that stops reading our output                              */
/* ------------------------------------------------------------------ */

/* A text of `n` bytes, for answers that fill a pipe in a few lines. */
static char *big_text(size_t n, char fill)
{
    char *text = malloc(n + 1);
    assert_non_null(text);
    memset(text, fill, n);
    text[n] = '\0';
    return text;
}

/* Waits up to `ms` for the run to end; false if it still runs. */
static bool run_ends_within(run_t *r, int ms)
{
    struct timespec deadline = time_in(CLOCK_REALTIME, ms);
    if (pthread_timedjoin_np(r->thread, NULL, &deadline) != 0)
        return false;
    r->running = false;
    return true;
}

static void close_all(run_t *r)
{
    for (int i = 0; i < 2; i++) {
        if (r->in[i] >= 0)
            close(r->in[i]);
        if (r->out[i] >= 0)
            close(r->out[i]);
    }
}

/* Fills the output with answers nobody reads, so that writers (a worker,
 * then the reader thread itself, for the inline tool) are stuck on the
 * full pipe or socket. The inline call goes last: the reader reads no
 * more input once it is stuck. */
static void fill_output(run_t *r)
{
    /* 500 KB: more than a pipe (64 KiB) or a local socket (~200 KiB) holds */
    char *text = big_text(100 * 1024, 'x');
    for (json_int_t id = 1; id <= 4; id++)
        send_call(r, id, "echo", text);
    struct timespec settle = {0, 50 * 1000000L};
    nanosleep(&settle, NULL);
    send_call(r, 5, "echo_inline", text);
    free(text);
    struct timespec pause = {0, 100 * 1000000L};
    nanosleep(&pause, NULL); /* let them get stuck */
}

/* The client stops reading and closes our input: the run ends once the
 * grace period is over, with MCP_EIO (answers were lost), instead of
 * hanging in write() with the reader blocked behind it. On a pipe and on
 * a socket. */
static void test_unread_output_and_end_of_input(void **state)
{
    for (int socket = 0; socket < 2; socket++) {
        mcp_server_t *srv = new_server();
        run_t r;
        run_start_as(&r, srv, (run_t){.grace_ms = 300, .out_socket = socket});
        fill_output(&r);
        close(r.in[1]);
        r.in[1] = -1;
        assert_true(run_ends_within(&r, 10000));
        assert_int_equal(r.rc, MCP_EIO);
        close_all(&r);
        mcp_server_free(srv);
    }
}

/* The same client, input still open: mcp_server_stop_stdio() ends the
 * run after the grace period. */
static void test_unread_output_and_stop(void **state)
{
    mcp_server_t *srv = new_server();
    run_t r;
    run_start_as(&r, srv, (run_t){.grace_ms = 300});
    fill_output(&r);
    mcp_server_stop_stdio(srv);
    assert_true(run_ends_within(&r, 10000));
    assert_int_equal(r.rc, MCP_EIO);
    close_all(&r);
    mcp_server_free(srv);
}

typedef struct sender {
    run_t *r;
    int calls;
    size_t size;
} sender_t;

static void *send_many(void *arg)
{
    sender_t *s = arg;
    for (int i = 0; i < s->calls; i++) {
        char *text = big_text(s->size, (char)('a' + i % 26));
        send_call(s->r, i + 1, i % 3 ? "echo" : "echo_inline", text);
        free(text);
    }
    close(s->r->in[1]);
    s->r->in[1] = -1;
    return NULL;
}

/* A slow client that reads everything in the end: it gets every answer,
 * whole (non-blocking writes never split or interleave lines), and the
 * reader kept reading meanwhile. */
static void test_slow_reader_loses_nothing(void **state)
{
    for (int socket = 0; socket < 2; socket++) {
        mcp_server_t *srv = new_server();
        run_t r;
        run_start_as(&r, srv, (run_t){.out_socket = socket});
        sender_t sender = {.r = &r, .calls = 30, .size = 20 * 1024};
        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, send_many, &sender), 0);
        FILE *out = fdopen(dup(r.out[0]), "r");
        assert_non_null(out);
        bool seen[31] = {false};
        char *line = NULL;
        size_t cap = 0;
        struct timespec pause = {0, 2 * 1000000L};
        for (int n = 0; n < sender.calls; n++) {
            nanosleep(&pause, NULL);
            assert_true(getline(&line, &cap, out) > 0);
            json_t *msg = json_loads(line, 0, NULL);
            assert_non_null(msg);
            json_int_t id = json_integer_value(json_object_get(msg, "id"));
            assert_true(id >= 1 && id <= sender.calls && !seen[id]);
            seen[id] = true;
            const char *text = json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(msg, "result"), "content"), 0),
                "text"));
            assert_non_null(text);
            assert_int_equal(strlen(text), sender.size);
            assert_int_equal(text[0], 'a' + (id - 1) % 26);
            assert_int_equal(text[sender.size - 1], 'a' + (id - 1) % 26);
            json_decref(msg);
        }
        free(line);
        fclose(out);
        pthread_join(thread, NULL);
        assert_true(run_ends_within(&r, 10000));
        assert_int_equal(r.rc, MCP_OK);
        close_all(&r);
        mcp_server_free(srv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_ends_a_run_and_another_may_follow),
        cmocka_unit_test(test_broken_output),
        cmocka_unit_test(test_unread_output_and_end_of_input),
        cmocka_unit_test(test_unread_output_and_stop),
        cmocka_unit_test(test_slow_reader_loses_nothing),
        cmocka_unit_test(test_inline_handlers),
        cmocka_unit_test(test_sequential_calls_whatever_the_active_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
