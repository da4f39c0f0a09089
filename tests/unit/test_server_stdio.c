/*
 * The stdio transport in-process, over pipes: what a child process cannot
 * show -- mcp_server_stop_stdio() ends a run whose input is still open,
 * one run at a time per server, a new run after the last one ended, and
 * MCP_EIO once the reader of our output went away. (Framing, limits and
 * shutdown are tested with real processes in tests/integration.)
 */
#define _GNU_SOURCE /* pipe2, gettid */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"

#include "modern_request.h"
#include "schema_check.h"
#include "test_clock.h"
#include "thread_gone.h"

typedef struct run {
    mcp_server_t *srv;
    int in[2], out[2]; /* the server reads in[0] and writes out[1] */
    pthread_t thread;
    int rc;
    bool running;
    int grace_ms;      /* shutdown_grace_ms; 0: 2000 */
    bool out_socket;   /* out is a socket pair rather than a pipe */
} run_t;

/* The thread the last "echo" or "echo_inline" ran on. */
static _Atomic pid_t echo_thread;

static int echo(mcp_call_t *call, void *user)
{
    atomic_store(&echo_thread, gettid());
    return mcp_call_add_text(call, mcp_call_arg_string(call, "text"));
}

/* How long a test waits for what must come (sanitizers are slow). */
#define PATIENCE_MS 3000

/* "block": echoes once the test releases it, or fails once cancelled;
 * reports its thread, its start and the cancellation. */
static atomic_int block_started, block_release, block_cancelled;
static _Atomic pid_t block_thread;

static int block(mcp_call_t *call, void *user)
{
    atomic_store(&block_thread, gettid());
    atomic_fetch_add(&block_started, 1);
    for (int64_t start = now_ms(); !atomic_load(&block_release);) {
        if (mcp_call_sleep(call, 2) != MCP_OK) {
            atomic_fetch_add(&block_cancelled, 1);
            return MCP_ECANCELED;
        }
        if (now_ms() - start > 3 * PATIENCE_MS)
            return mcp_call_tool_error(call, "never released");
    }
    return echo(call, user);
}

/* "compute": keeps its CPU busy, never blocking, until released. */
static atomic_int compute_started, compute_release;

static int compute(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&compute_started, 1);
    for (int64_t start = now_ms(); !atomic_load_explicit(&compute_release, memory_order_relaxed);)
        if (now_ms() - start > 3 * PATIENCE_MS)
            break;
    return mcp_call_add_text(call, mcp_call_arg_string(call, "text"));
}

static void reset_handlers(void)
{
    atomic_store(&block_started, 0);
    atomic_store(&block_release, 0);
    atomic_store(&block_cancelled, 0);
    atomic_store(&compute_started, 0);
    atomic_store(&compute_release, 0);
}

/* Waits up to PATIENCE_MS for *count to reach n. */
static bool wait_count(atomic_int *count, int n)
{
    struct timespec pause = {0, 1000000L};
    for (int64_t start = now_ms(); atomic_load(count) < n;) {
        if (now_ms() - start > PATIENCE_MS)
            return false;
        nanosleep(&pause, NULL);
    }
    return true;
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
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "block", .handler = block},
                                         NULL),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = "compute", .handler = compute}, NULL),
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

/* ------------------------------------------------------------------ */
/* Handlers on the reader's thread, and the reading moving away        */
/* ------------------------------------------------------------------ */

/* The thread "echo" or "echo_inline" ran call `id` on. */
static pid_t echo_ran_on(run_t *r, const char *tool, json_int_t id)
{
    send_call(r, id, tool, "where");
    expect_echo(r, id, "where");
    return atomic_load(&echo_thread);
}

/* A default handler runs on the reader's thread, as an inline one does.
 * One that blocks there has the reading moved to another thread within a
 * few milliseconds: the lines behind it are served meanwhile, those of
 * the same write included (the new reader goes on from the next line).
 * Having held the reader, the handler's next call goes to the pool. */
static void test_handlers_run_on_the_reader(void **state)
{
    reset_handlers();
    mcp_server_t *srv = new_server();
    run_t r;
    run_start(&r, srv);
    pid_t reader = echo_ran_on(&r, "echo_inline", 1);
    assert_int_equal(echo_ran_on(&r, "echo", 2), reader);
    assert_int_equal(echo_ran_on(&r, "echo", 3), reader);

    /* "block" and two echoes in one write. */
    char *lines = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&lines, &size);
    for (json_int_t id = 4; id <= 6; id++) {
        json_t *request = modern_request(
            id, "tools/call",
            json_pack("{s:s, s:{s:s}}", "name", id == 4 ? "block" : "echo", "arguments", "text",
                      id == 4 ? "held" : "behind"));
        char *text = json_dumps(request, JSON_COMPACT);
        fprintf(out, "%s\n", text);
        free(text);
        json_decref(request);
    }
    fclose(out);
    assert_int_equal(write(r.in[1], lines, size), (ssize_t)size);
    free(lines);
    assert_true(wait_count(&block_started, 1));
    assert_int_equal(atomic_load(&block_thread), reader);
    int64_t asked = now_ms();
    expect_echo(&r, 5, "behind");
    expect_echo(&r, 6, "behind");
    assert_true(now_ms() - asked < PATIENCE_MS);
    pid_t new_reader = atomic_load(&echo_thread);
    assert_int_not_equal(new_reader, reader);
    assert_int_equal(echo_ran_on(&r, "echo_inline", 7), new_reader);

    /* Released, "block" answers from the thread it ran on. */
    atomic_store(&block_release, 1);
    expect_echo(&r, 4, "held");
    assert_int_equal(atomic_load(&block_cancelled), 0);

    /* It held the reader too long: its next call runs on the pool (it
     * returns at once now), while "echo" still runs on the reader. That
     * is settled when its thread, the old reader, is done with it: the
     * answer above goes out before. */
    assert_true(thread_gone_within(reader, PATIENCE_MS));
    send_call(&r, 8, "block", "pooled");
    expect_echo(&r, 8, "pooled");
    assert_int_not_equal(atomic_load(&block_thread), new_reader);
    assert_int_not_equal(atomic_load(&block_thread), reader);
    assert_int_equal(echo_ran_on(&r, "echo", 9), new_reader);

    mcp_server_stop_stdio(srv);
    assert_int_equal(run_join(&r), MCP_OK);
    mcp_server_free(srv);
}

/* A handler that computes, never blocking, has the reading moved from it
 * too: the next line is answered while it still runs. */
static void test_computing_handler_moved(void **state)
{
    reset_handlers();
    mcp_server_t *srv = new_server();
    run_t r;
    run_start(&r, srv);
    send_call(&r, 1, "compute", "computed");
    assert_true(wait_count(&compute_started, 1));
    send_echo(&r, 2, "meanwhile");
    expect_echo(&r, 2, "meanwhile");
    atomic_store(&compute_release, 1);
    expect_echo(&r, 1, "computed");
    mcp_server_stop_stdio(srv);
    assert_int_equal(run_join(&r), MCP_OK);
    mcp_server_free(srv);
}

/* The input ends, or a stop comes, while a handler holds a reader that
 * was lent away: the run waits the grace period, cancels the handler and
 * returns; mcp_server_free() waits for that thread to be done (ASan
 * watches what it touches). */
static void test_end_while_lent(void **state)
{
    for (int stop = 0; stop < 2; stop++) {
        reset_handlers();
        mcp_server_t *srv = new_server();
        run_t r;
        run_start_as(&r, srv, (run_t){.grace_ms = 200});
        send_call(&r, 1, "block", "held");
        assert_true(wait_count(&block_started, 1));
        send_echo(&r, 2, "meanwhile");
        expect_echo(&r, 2, "meanwhile");
        if (stop) {
            mcp_server_stop_stdio(srv);
        } else {
            close(r.in[1]);
            r.in[1] = -1;
        }
        assert_true(run_ends_within(&r, PATIENCE_MS));
        assert_int_equal(r.rc, MCP_OK);
        assert_true(wait_count(&block_cancelled, 1));
        mcp_server_free(srv);
        close_all(&r);
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
        cmocka_unit_test(test_handlers_run_on_the_reader),
        cmocka_unit_test(test_computing_handler_moved),
        cmocka_unit_test(test_end_while_lent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
