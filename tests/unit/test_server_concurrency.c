/*
 * Server core, concurrency: handlers run on the worker pool, never on the
 * submitting thread; a slow handler blocks no one; the configured number
 * of workers really run at once; a request cancelled in the queue never
 * runs; many requests in flight all end exactly once; and registries can
 * change while requests are being served.
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
#include "test_clock.h"

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
    return time_in(CLOCK_REALTIME, ms);
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

/* A handler that computes (it stays runnable, so the pool sends no extra
 * thread for the queue) until `release` is set. */
static atomic_bool spinning, release;
static atomic_int counted;

static int spin(mcp_call_t *call, void *user)
{
    (void)user;
    atomic_store(&spinning, true);
    while (!atomic_load(&release))
        ;
    return mcp_call_add_text(call, "spun");
}

static int count(mcp_call_t *call, void *user)
{
    (void)user;
    atomic_fetch_add(&counted, 1);
    return mcp_call_add_text(call, "counted");
}

/* A request cancelled while it waits in the pool's queue never runs: its
 * handler is not called and nothing is sent for it. The request before
 * it, and the one after, are served as usual. */
static void test_cancelled_before_it_runs(void **state)
{
    mcp_server_t *srv = new_server(1);
    add(srv, "spin", spin, NULL);
    add(srv, "count", count, NULL);
    atomic_store(&spinning, false);
    atomic_store(&release, false);
    atomic_store(&counted, 0);

    capture_sink_t first, queued;
    capture_init(&first);
    capture_init(&queued);
    json_t *request = call_request(1, "spin");
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &first, NULL), MCP_OK);
    json_decref(request);
    for (int64_t until = now_ms() + CAPTURE_PATIENCE_MS;
         !atomic_load(&spinning) && now_ms() < until;)
        sleep_ms(1);
    assert_true(atomic_load(&spinning));

    mcp_exchange_t *ex = NULL;
    request = call_request(2, "count");
    assert_int_equal(capture_submit(srv, NULL, request, NULL, &queued, &ex), MCP_OK);
    json_decref(request);
    assert_non_null(ex);
    mcp_exchange_cancel(ex);
    atomic_store(&release, true);

    assert_true(capture_wait_released(&first, CAPTURE_PATIENCE_MS));
    expect_complete(capture_response(&first, NULL));
    assert_true(capture_wait_released(&queued, CAPTURE_PATIENCE_MS));
    capture_assert_done(&queued);
    assert_null(capture_response(&queued, NULL));
    assert_int_equal(atomic_load(&counted), 0);
    mcp_exchange_release(ex);

    /* The next one runs. */
    json_t *response = serve(srv, call_request(3, "count"), NULL);
    expect_complete(response);
    json_decref(response);
    assert_int_equal(atomic_load(&counted), 1);
    capture_cleanup(&first);
    capture_cleanup(&queued);
    mcp_server_free(srv);
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
        expect_all_schema_valid(&caps[i], "tools/call");
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
    expect_all_schema_valid(&cap, "tools/call");
    expect_complete(capture_response(&cap, NULL));
    capture_cleanup(&cap);
    mcp_server_free(srv);
    gate_destroy(&gate);
}

/* ------------------------------------------------------------------ */
/* Registry changes while serving                                      */
/* ------------------------------------------------------------------ */

#define CHURN_TOOLS 8
#define CHURN_ROUNDS 2000

typedef struct churn {
    mcp_server_t *srv;
    atomic_bool stop;
    atomic_int failures;
    atomic_int served;
    pthread_mutex_t lock;
    char first_failure[512];
} churn_t;

static void churn_fail(churn_t *c, const char *fmt, ...)
{
    atomic_fetch_add(&c->failures, 1);
    pthread_mutex_lock(&c->lock);
    if (!c->first_failure[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->first_failure, sizeof c->first_failure, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&c->lock);
}

static int named(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, mcp_call_target(call));
}

static int read_churn(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, NULL, "r");
}

static int prompt_churn(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user", mcp_content_text("p"));
}

/* Adds and removes tools, a resource, a template and a prompt. */
static void *mutator(void *arg)
{
    churn_t *c = arg;
    unsigned seed = 7;
    for (int round = 0; round < CHURN_ROUNDS; round++) {
        char name[32];
        snprintf(name, sizeof name, "tool_%u", (unsigned)rand_r(&seed) % CHURN_TOOLS);
        int rc = mcp_server_add_tool(c->srv, &(mcp_tool_t){.name = name, .handler = named}, NULL);
        if (rc == MCP_EEXIST)
            rc = mcp_server_remove_tool(c->srv, name);
        /* The other mutator may have removed it in between. */
        if (rc != MCP_OK && rc != MCP_ENOTFOUND)
            churn_fail(c, "add/remove %s: %d", name, rc);
        if (round % 3 == 0) {
            if (mcp_server_add_resource(c->srv,
                                        &(mcp_resource_t){.uri = "test://r", .name = "r",
                                                          .handler = read_churn},
                                        NULL) == MCP_EEXIST)
                mcp_server_remove_resource(c->srv, "test://r");
            if (mcp_server_add_resource_template(
                    c->srv,
                    &(mcp_resource_template_t){.uri_template = "test://t/{x}", .name = "t",
                                               .handler = read_churn},
                    NULL) == MCP_EEXIST)
                mcp_server_remove_resource_template(c->srv, "test://t/{x}");
            if (mcp_server_add_prompt(c->srv, &(mcp_prompt_t){.name = "p", .handler = prompt_churn},
                                      NULL) == MCP_EEXIST)
                mcp_server_remove_prompt(c->srv, "p");
        }
    }
    return NULL;
}

/* Which answers a request may get while its target comes and goes. */
static bool acceptable(const json_t *response, const char *method)
{
    const json_t *error = json_object_get(response, "error");
    if (!error)
        return true;
    json_int_t code = json_integer_value(json_object_get(error, "code"));
    /* -32601: nothing of the kind registered at that moment; -32602: the
     * tool, prompt or resource is gone. */
    return code == MCP_METHOD_NOT_FOUND ||
           (code == MCP_INVALID_PARAMS && strcmp(method, "server/discover") != 0 &&
            strstr(method, "/list") == NULL);
}

/* Sends requests of every kind and checks every answer. */
static void *client(void *arg)
{
    churn_t *c = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    const char *methods[] = {"tools/list",     "tools/call",  "server/discover",
                             "resources/read", "prompts/get", "resources/templates/list"};
    for (json_int_t id = 0; !atomic_load(&c->stop); id++) {
        const char *method = methods[rand_r(&seed) % 6];
        json_t *params = json_object();
        char name[32];
        snprintf(name, sizeof name, "tool_%u", (unsigned)rand_r(&seed) % CHURN_TOOLS);
        if (strcmp(method, "tools/call") == 0)
            json_object_set_new(params, "name", json_string(name));
        if (strcmp(method, "prompts/get") == 0)
            json_object_set_new(params, "name", json_string("p"));
        if (strcmp(method, "resources/read") == 0)
            json_object_set_new(params, "uri", json_string(id % 2 ? "test://r" : "test://t/1"));
        json_t *request = modern_request(id, method, params);
        size_t len;
        char *text = mcp_json_dump(request, &len);
        json_decref(request);

        capture_sink_t cap;
        capture_init(&cap);
        mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
        int rc = mcp_server_submit(c->srv, NULL, text, len, &ctx, &cap.sink, NULL);
        free(text);
        char reason[SCHEMA_CHECK_REASON_MAX];
        const json_t *response;
        if (rc != MCP_OK)
            churn_fail(c, "submit: %d", rc);
        else if (!capture_wait_released(&cap, CAPTURE_PATIENCE_MS))
            churn_fail(c, "%s never released", method);
        else if (cap.breach[0])
            churn_fail(c, "%s: %s", method, cap.breach);
        else if (!(response = capture_response(&cap, NULL)))
            churn_fail(c, "%s: no response", method);
        else if (schema_check_server_message(response, method, "2026-07-28", reason,
                                             sizeof reason) != 0)
            churn_fail(c, "%s: %s", method, reason);
        else if (!acceptable(response, method))
            churn_fail(c, "%s: unexpected %s", method,
                       json_string_value(json_object_get(json_object_get(response, "error"),
                                                         "message")));
        else
            atomic_fetch_add(&c->served, 1);
        capture_cleanup(&cap);
    }
    return NULL;
}

static void test_registry_changes_while_serving(void **state)
{
    churn_t c = {.srv = new_server(0)};
    atomic_init(&c.stop, false);
    atomic_init(&c.failures, 0);
    atomic_init(&c.served, 0);
    pthread_mutex_init(&c.lock, NULL);
    pthread_t mutators[2], clients[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&clients[i], NULL, client, &c), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&mutators[i], NULL, mutator, &c), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(mutators[i], NULL);
    atomic_store(&c.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(clients[i], NULL);
    if (atomic_load(&c.failures))
        fail_msg("%d failures, the first: %s", atomic_load(&c.failures), c.first_failure);
    assert_true(atomic_load(&c.served) > 0);
    print_message("served %d requests while the registries changed\n", atomic_load(&c.served));
    pthread_mutex_destroy(&c.lock);
    mcp_server_free(c.srv);
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
        cmocka_unit_test(test_cancelled_before_it_runs),
        cmocka_unit_test(test_workers_run_at_once),
        cmocka_unit_test(test_remove_tool_while_it_runs),
        cmocka_unit_test(test_registry_changes_while_serving),
        cmocka_unit_test(test_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
