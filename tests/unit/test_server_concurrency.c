/*
 * Server core, concurrency: handlers run on the worker pool, never on the
 * submitting thread; a slow handler blocks no one; the configured number
 * of workers really run at once; many requests in flight all end exactly
 * once; and registries can change while requests are being served.
 *
 * Threads other than the test's own never call cmocka: they count
 * failures and keep the first reason, which the test thread asserts on.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "mcp/request.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

static mcp_server_t *new_server(int workers)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "conc-test", .version = "1", .worker_threads = workers},
        NULL);
    assert_non_null(srv);
    return srv;
}

static void add(mcp_server_t *srv, const char *name, mcp_tool_fn fn, void *user)
{
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = fn, .user = user}, NULL),
        MCP_OK);
}

static json_t *call_request(json_int_t id, const char *name)
{
    return modern_request(id, "tools/call", json_pack("{s:s}", "name", name));
}

static struct timespec deadline_in(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* ------------------------------------------------------------------ */
/* A gate handlers wait behind, counting who arrived                   */
/* ------------------------------------------------------------------ */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived;
    int open_at; /* the gate opens by itself once this many arrived (0: never) */
    bool open;
    pthread_t thread; /* the thread of the last arrival */
} gate_t;

static void gate_init(gate_t *g, int open_at)
{
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->arrived = 0;
    g->open_at = open_at;
    g->open = false;
}

static void gate_destroy(gate_t *g)
{
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
}

static void gate_open(gate_t *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* Arrives and waits until the gate opens; false after the patience. */
static bool gate_pass(gate_t *g)
{
    struct timespec deadline = deadline_in(CAPTURE_PATIENCE_MS);
    pthread_mutex_lock(&g->lock);
    g->arrived++;
    g->thread = pthread_self();
    if (g->open_at && g->arrived >= g->open_at)
        g->open = true;
    pthread_cond_broadcast(&g->cond);
    int rc = 0;
    while (!g->open && rc == 0)
        rc = pthread_cond_timedwait(&g->cond, &g->lock, &deadline);
    bool passed = g->open;
    pthread_mutex_unlock(&g->lock);
    return passed;
}

static void gate_wait_arrivals(gate_t *g, int n)
{
    struct timespec deadline = deadline_in(CAPTURE_PATIENCE_MS);
    pthread_mutex_lock(&g->lock);
    int rc = 0;
    while (g->arrived < n && rc == 0)
        rc = pthread_cond_timedwait(&g->cond, &g->lock, &deadline);
    int arrived = g->arrived;
    pthread_mutex_unlock(&g->lock);
    if (arrived < n)
        fail_msg("only %d of %d handlers arrived at the gate", arrived, n);
}

static int wait_at_gate(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, gate_pass(user));
    return mcp_call_add_text(call, "passed");
}

static int quick(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "quick");
}

/* ------------------------------------------------------------------ */

static void test_slow_handler_blocks_no_one(void **state)
{
    /* One worker asked for: the pool still grows for a blocked handler. */
    mcp_server_t *srv = new_server(1);
    gate_t gate;
    gate_init(&gate, 0);
    add(srv, "slow", wait_at_gate, &gate);
    add(srv, "quick", quick, NULL);

    capture_sink_t slow;
    capture_init(&slow);
    json_t *request = call_request(1, "slow");
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &slow, NULL), MCP_OK);
    json_decref(request);
    gate_wait_arrivals(&gate, 1);
    /* Handlers run on the pool, not on the thread that submitted. */
    assert_false(pthread_equal(gate.thread, pthread_self()));

    for (int i = 0; i < 5; i++) {
        json_t *response = serve(srv, call_request(2 + i, "quick"), NULL);
        expect_complete(response);
        json_decref(response);
        response = serve(srv, modern_request(10 + i, "tools/list", NULL), NULL);
        expect_complete(response);
        json_decref(response);
    }
    assert_false(capture_released(&slow));

    gate_open(&gate);
    assert_true(capture_wait_released(&slow, CAPTURE_PATIENCE_MS));
    capture_assert_done(&slow);
    expect_all_schema_valid(&slow, "tools/call");
    expect_complete(capture_response(&slow, NULL));
    capture_cleanup(&slow);
    mcp_server_free(srv);
    gate_destroy(&gate);
}

/* N handlers that each wait for all N: they can only finish if N run at
 * the same time. */
static void run_all_at_once(int workers, int n)
{
    mcp_server_t *srv = new_server(workers);
    gate_t gate;
    gate_init(&gate, n);
    add(srv, "meet", wait_at_gate, &gate);
    capture_sink_t *caps = calloc((size_t)n, sizeof *caps);
    for (int i = 0; i < n; i++) {
        capture_init(&caps[i]);
        json_t *request = call_request(i, "meet");
        assert_int_equal(capture_submit(srv, NULL, request, NULL, &caps[i], NULL), MCP_OK);
        json_decref(request);
    }
    for (int i = 0; i < n; i++) {
        assert_true(capture_wait_released(&caps[i], CAPTURE_PATIENCE_MS));
        capture_assert_done(&caps[i]);
        const json_t *response = capture_response(&caps[i], NULL);
        expect_complete(response);
        assert_int_equal(json_integer_value(json_object_get(response, "id")), i);
        capture_cleanup(&caps[i]);
    }
    free(caps);
    mcp_server_free(srv);
    gate_destroy(&gate);
}

static void test_workers_run_at_once(void **state)
{
    run_all_at_once(4, 4);
    run_all_at_once(0, 8);  /* the default */
    run_all_at_once(70, 70); /* more than the pool's usual ceiling */
}

/* A tool removed while its call runs finishes that call normally. */
static void test_remove_tool_while_it_runs(void **state)
{
    mcp_server_t *srv = new_server(0);
    gate_t gate;
    gate_init(&gate, 0);
    add(srv, "slow", wait_at_gate, &gate);
    add(srv, "keep", quick, NULL);
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = call_request(1, "slow");
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &cap, NULL), MCP_OK);
    json_decref(request);
    gate_wait_arrivals(&gate, 1);

    assert_int_equal(mcp_server_remove_tool(srv, "slow"), MCP_OK);
    json_t *response = serve(srv, call_request(2, "slow"), NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);

    gate_open(&gate);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_assert_done(&cap);
    expect_complete(capture_response(&cap, NULL));
    capture_cleanup(&cap);
    mcp_server_free(srv);
    gate_destroy(&gate);
}

/* Many requests in flight at once, submitted from several threads: each
 * is answered exactly once, with its own id. */
#define FLOOD 400

static int tiny_sleep(mcp_call_t *call, void *user)
{
    mcp_call_sleep(call, 1);
    return mcp_call_add_textf(call, "%s", json_string_value(mcp_call_arg(call, "tag")));
}

typedef struct flood {
    mcp_server_t *srv;
    capture_sink_t *caps;
    int from, to;
} flood_t;

static void *flood_submit(void *arg)
{
    flood_t *f = arg;
    for (int i = f->from; i < f->to; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", i);
        json_t *request = modern_request(
            i, "tools/call", json_pack("{s:s, s:{s:s}}", "name", "tiny", "arguments", "tag", tag));
        size_t len;
        char *text = mcp_json_dump(request, &len);
        mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
        if (mcp_server_submit(f->srv, NULL, text, len, &ctx, &f->caps[i].sink, NULL) != MCP_OK)
            f->caps[i].releases = -1000; /* noticed by the test thread */
        free(text);
        json_decref(request);
    }
    return NULL;
}

static void test_flood(void **state)
{
    mcp_server_t *srv = new_server(0);
    add(srv, "tiny", tiny_sleep, NULL);
    capture_sink_t *caps = calloc(FLOOD, sizeof *caps);
    for (int i = 0; i < FLOOD; i++)
        capture_init(&caps[i]);
    pthread_t threads[4];
    flood_t parts[4];
    for (int t = 0; t < 4; t++) {
        parts[t] = (flood_t){srv, caps, t * FLOOD / 4, (t + 1) * FLOOD / 4};
        assert_int_equal(pthread_create(&threads[t], NULL, flood_submit, &parts[t]), 0);
    }
    for (int t = 0; t < 4; t++)
        pthread_join(threads[t], NULL);
    for (int i = 0; i < FLOOD; i++) {
        assert_true(capture_wait_released(&caps[i], CAPTURE_PATIENCE_MS));
        capture_assert_done(&caps[i]);
        const json_t *response = capture_response(&caps[i], NULL);
        MCP_ASSERT_SCHEMA_VALID(response, "tools/call", "2026-07-28");
        assert_int_equal(json_integer_value(json_object_get(response, "id")), i);
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", i);
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(json_object_get(expect_complete(response), "content"), 0), "text")),
            tag);
        capture_cleanup(&caps[i]);
    }
    free(caps);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_handler_blocks_no_one),
        cmocka_unit_test(test_workers_run_at_once),
        cmocka_unit_test(test_remove_tool_while_it_runs),
        cmocka_unit_test(test_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
