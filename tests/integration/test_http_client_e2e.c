/*
 * The client's Streamable HTTP transport against libmcp's own HTTP server,
 * in process and over real sockets, without the client core: the headers
 * it sends pass the server's validation ladder (Mcp-Name, Base64 Mcp-Param
 * values), JSON and event-stream answers come back whole, the era probe
 * can classify what it reports, cancelling closes the stream (and the
 * handler hears of it), and parallel requests share few connections.
 */
#define _GNU_SOURCE

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

#include "client/transport.h"
#include "mcp/mcp.h"
#include "schema_check.h"
#include "test_clock.h"

#define REVISION "2026-07-28"
#define PATIENCE_MS 20000 /* how long to wait for something that must happen */
#define PROMPT_MS 2000    /* "promptly" */
#define PARALLEL 20

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

static atomic_int slow_started, slow_cancelled;
static _Atomic int64_t slow_cancelled_at;

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

/* Logs, reports three steps, then answers: an event stream. */
static int steps(mcp_call_t *call, void *user)
{
    mcp_call_logf(call, "info", "starting");
    for (int i = 1; i <= 3; i++)
        mcp_call_progress(call, i, 3, "step");
    return mcp_call_add_text(call, "done");
}

static int slow(mcp_call_t *call, void *user)
{
    mcp_call_progress(call, 1, -1, "started");
    atomic_fetch_add(&slow_started, 1);
    if (mcp_call_sleep(call, PATIENCE_MS) != MCP_OK) {
        atomic_store(&slow_cancelled_at, now_ms());
        atomic_fetch_add(&slow_cancelled, 1);
        return MCP_ECANCELED;
    }
    return mcp_call_add_text(call, "slept");
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    client_transport_t *t;
} fixture_t;

static int setup(void **state)
{
    static const mcp_tool_t tools[] = {
        {.name = "echo", .handler = echo,
         .input_schema = "{\"type\":\"object\",\"properties\":{"
                         "\"text\":{\"type\":\"string\",\"x-mcp-header\":\"Text\"},"
                         "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}"},
        {.name = "steps", .handler = steps},
        {.name = "slow", .handler = slow},
    };
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "e2e", .version = "1.0.0"}, &err);
    assert_non_null(f->srv);
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (mcp_server_add_tool(f->srv, &tools[i], &err) != MCP_OK)
            fail_msg("add_tool %s: %s", tools[i].name, err.message);
    assert_int_equal(mcp_http_server_start(f->srv, &(mcp_http_options_t){0}, &f->http, &err),
                     MCP_OK);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(f->http));
    assert_int_equal(client_http_new(&(mcp_http_target_t){.url = url}, NULL, &f->t, &err), MCP_OK);
    atomic_store(&slow_started, 0);
    atomic_store(&slow_cancelled, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    f->t->ops->close(f->t);
    f->t->ops->free(f->t);
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------------
 * One exchange, as the client core would drive it
 * ------------------------------------------------------------------------ */

typedef struct call {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int rc, status;
    char why[256];
    char content_type[128];
    char body[2048];
    size_t body_len;
    json_t *response;
    json_t *notifications;
    client_exchange_t *ex;
} call_t;

static void on_notification(void *user, const json_t *msg)
{
    call_t *c = user;
    pthread_mutex_lock(&c->lock);
    json_array_append(c->notifications, (json_t *)msg);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void on_done(void *user, client_outcome_t *out)
{
    call_t *c = user;
    pthread_mutex_lock(&c->lock);
    c->done++;
    c->rc = out->rc;
    c->status = out->http_status;
    snprintf(c->why, sizeof c->why, "%s", out->why ? out->why : "");
    snprintf(c->content_type, sizeof c->content_type, "%s",
             out->content_type ? out->content_type : "");
    c->body_len = out->body_len < sizeof c->body ? out->body_len : sizeof c->body - 1;
    if (c->body_len)
        memcpy(c->body, out->body, c->body_len);
    c->body[c->body_len] = '\0';
    c->response = out->response;
    out->response = NULL;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static const client_exchange_events_t events = {on_notification, on_done};

/* A request with the 2026-07-28 envelope; extra_meta (stolen, may be NULL)
 * adds members to _meta. */
static json_t *request(json_int_t id, const char *method, json_t *params, json_t *extra_meta,
                       const char *version)
{
    if (!params)
        params = json_object();
    json_t *meta = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "io.modelcontextprotocol/protocolVersion",
                             version, "io.modelcontextprotocol/clientCapabilities",
                             "io.modelcontextprotocol/clientInfo", "name", "e2e", "version", "1");
    if (extra_meta)
        json_object_update(meta, extra_meta);
    json_decref(extra_meta);
    json_object_set_new(params, "_meta", meta);
    return json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
                     "params", params);
}

static void start(fixture_t *f, call_t *c, json_t *req_new, const client_http_hints_t *hints)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->notifications = json_array();
    int rc = f->t->ops->start(f->t, req_new, hints, &events, c, &c->ex);
    json_decref(req_new);
    assert_int_equal(rc, MCP_OK);
}

static void finish(fixture_t *f, call_t *c)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += PATIENCE_MS / 1000;
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &until) != 0)
            break;
    pthread_mutex_unlock(&c->lock);
    assert_int_equal(c->done, 1);
    f->t->ops->release(f->t, c->ex);
}

static void clear(call_t *c)
{
    json_decref(c->response);
    json_decref(c->notifications);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
}

static json_t *result_of(const call_t *c)
{
    if (c->rc != MCP_OK)
        fail_msg("rc %d (%s), HTTP %d: %s", c->rc, c->why, c->status, c->body);
    assert_non_null(c->response);
    json_t *result = json_object_get(c->response, "result");
    if (!result) {
        char *text = json_dumps(c->response, 0);
        fail_msg("not a result: %s", text);
    }
    return result;
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static mcp_verdict_kind_t probe_verdict(const call_t *c)
{
    static const char *const versions[] = {REVISION};
    mcp_probe_outcome_t outcome = {
        .event = c->status ? MCP_PROBE_RESPONSE : MCP_PROBE_NETWORK_ERROR,
        .http_status = c->status,
        .content_type = c->content_type[0] ? c->content_type : NULL,
        .body = c->body,
        .body_len = c->body_len,
        .message = c->response,
    };
    mcp_probe_verdict_t verdict;
    mcp_classify_probe(MCP_TRANSPORT_HTTP, &outcome, versions, 1, &verdict);
    mcp_verdict_kind_t kind = verdict.kind;
    mcp_probe_verdict_clear(&verdict);
    return kind;
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

static void test_discover(void **state)
{
    fixture_t *f = *state;
    call_t c;
    client_http_hints_t hints = {.protocol_version = REVISION, .method = "server/discover"};
    start(f, &c, request(1, "server/discover", NULL, NULL, REVISION), &hints);
    finish(f, &c);
    result_of(&c);
    MCP_ASSERT_SCHEMA_VALID(c.response, "server/discover", REVISION);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_MODERN);
    clear(&c);
}

/* Mcp-Name and Mcp-Param-* exactly as the server checks them, including a
 * value that needs the Base64 form. */
static void test_tool_call_headers_pass_validation(void **state)
{
    fixture_t *f = *state;
    const char *text = "Hello, \xe4\xb8\x96\xe7\x95\x8c";
    char *encoded = NULL;
    assert_int_equal(mcp_header_value_encode(text, strlen(text), &encoded), MCP_OK);
    const mcp_header_t params[] = {{"Text", encoded}, {"Region", "us-west1"}};
    client_http_hints_t hints = {.protocol_version = REVISION,
                                 .method = "tools/call",
                                 .name = "echo",
                                 .params = params,
                                 .n_params = 2};
    call_t c;
    start(f, &c,
          request(2, "tools/call",
                  json_pack("{s:s, s:{s:s, s:s}}", "name", "echo", "arguments", "text", text,
                            "region", "us-west1"),
                  NULL, REVISION),
          &hints);
    finish(f, &c);
    json_t *result = result_of(&c);
    MCP_ASSERT_SCHEMA_VALID(c.response, "tools/call", REVISION);
    assert_string_equal(first_text(result), text);
    assert_int_equal(c.status, 200);
    clear(&c);

    /* A header that disagrees with the body is refused: -32020 on 400. */
    const mcp_header_t wrong[] = {{"Text", encoded}, {"Region", "eu-west1"}};
    hints.params = wrong;
    start(f, &c,
          request(3, "tools/call",
                  json_pack("{s:s, s:{s:s, s:s}}", "name", "echo", "arguments", "text", text,
                            "region", "us-west1"),
                  NULL, REVISION),
          &hints);
    finish(f, &c);
    assert_int_equal(c.rc, MCP_OK);
    assert_int_equal(c.status, 400);
    MCP_ASSERT_SCHEMA_VALID(c.response, NULL, REVISION);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c.response, "error"),
                                                        "code")),
                     -32020);
    clear(&c);
    free(encoded);
}

static void test_event_stream(void **state)
{
    fixture_t *f = *state;
    client_http_hints_t hints = {.protocol_version = REVISION, .method = "tools/call",
                                 .name = "steps"};
    call_t c;
    start(f, &c,
          request(4, "tools/call", json_pack("{s:s, s:{}}", "name", "steps", "arguments"),
                  json_pack("{s:I, s:s}", "progressToken", (json_int_t)4,
                            "io.modelcontextprotocol/logLevel", "info"),
                  REVISION),
          &hints);
    finish(f, &c);
    json_t *result = result_of(&c);
    MCP_ASSERT_SCHEMA_VALID(c.response, "tools/call", REVISION);
    assert_string_equal(first_text(result), "done");
    assert_string_equal(c.content_type, "text/event-stream");
    assert_int_equal(json_array_size(c.notifications), 4);
    size_t i;
    json_t *n;
    json_array_foreach(c.notifications, i, n) {
        MCP_ASSERT_SCHEMA_VALID(n, NULL, REVISION);
        if (i > 0) /* in order: 1, 2, 3 */
            assert_int_equal((int)json_number_value(json_object_get(
                                 json_object_get(n, "params"), "progress")),
                             (int)i);
    }
    clear(&c);
}

/* What the era probe sees from the real server. */
static void test_errors_as_the_probe_sees_them(void **state)
{
    fixture_t *f = *state;
    call_t c;
    client_http_hints_t old = {.protocol_version = "2099-01-01", .method = "server/discover"};
    start(f, &c, request(5, "server/discover", NULL, NULL, "2099-01-01"), &old);
    finish(f, &c);
    assert_int_equal(c.status, 400);
    MCP_ASSERT_SCHEMA_VALID(c.response, NULL, REVISION);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_MODERN_RETRY);
    clear(&c);

    client_http_hints_t unknown = {.protocol_version = REVISION, .method = "no/such"};
    start(f, &c, request(6, "no/such", NULL, NULL, REVISION), &unknown);
    finish(f, &c);
    assert_int_equal(c.status, 404);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c.response, "error"),
                                                        "code")),
                     -32601);
    clear(&c);

    /* Without the MCP headers: -32020, never a legacy verdict. */
    start(f, &c, request(7, "server/discover", NULL, NULL, REVISION), NULL);
    finish(f, &c);
    assert_int_equal(c.status, 400);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_ERROR);
    clear(&c);
}

static void test_cancel_closes_the_stream(void **state)
{
    fixture_t *f = *state;
    client_http_hints_t hints = {.protocol_version = REVISION, .method = "tools/call",
                                 .name = "slow"};
    call_t c;
    start(f, &c,
          request(8, "tools/call", json_pack("{s:s, s:{}}", "name", "slow", "arguments"),
                  json_pack("{s:I}", "progressToken", (json_int_t)8), REVISION),
          &hints);
    /* Wait for the "started" progress: the stream is open. */
    for (int64_t t0 = now_ms(); now_ms() - t0 < PATIENCE_MS; sleep_ms(5)) {
        pthread_mutex_lock(&c.lock);
        size_t n = json_array_size(c.notifications);
        pthread_mutex_unlock(&c.lock);
        if (n)
            break;
    }
    assert_int_equal(atomic_load(&slow_started), 1);
    int64_t cancelled_at = now_ms();
    f->t->ops->cancel(f->t, c.ex, true);
    finish(f, &c);
    assert_int_equal(c.rc, MCP_ECANCELED);
    for (int64_t t0 = now_ms(); now_ms() - t0 < PATIENCE_MS && !atomic_load(&slow_cancelled);)
        sleep_ms(5);
    assert_int_equal(atomic_load(&slow_cancelled), 1);
    assert_true(atomic_load(&slow_cancelled_at) - cancelled_at < PROMPT_MS);
    clear(&c);
}

static void test_parallel_requests(void **state)
{
    fixture_t *f = *state;
    client_http_hints_t hints = {.protocol_version = REVISION, .method = "tools/call",
                                 .name = "echo"};
    static call_t calls[PARALLEL];
    for (int i = 0; i < PARALLEL; i++) {
        char text[16];
        snprintf(text, sizeof text, "n%d", i);
        const mcp_header_t params[] = {{"Text", text}};
        hints.params = params;
        hints.n_params = 1;
        start(f, &calls[i],
              request(100 + i, "tools/call",
                      json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments", "text", text),
                      NULL, REVISION),
              &hints);
    }
    for (int i = 0; i < PARALLEL; i++) {
        finish(f, &calls[i]);
        char text[16];
        snprintf(text, sizeof text, "n%d", i);
        assert_string_equal(first_text(result_of(&calls[i])), text);
        assert_int_equal(json_integer_value(json_object_get(calls[i].response, "id")), 100 + i);
        clear(&calls[i]);
    }
}

static void test_notification_accepted(void **state)
{
    fixture_t *f = *state;
    /* With the envelope, as a modern notification must be (wire-ts2 1.10). */
    json_t *note = request(0, "notifications/cancelled", json_pack("{s:i}", "requestId", 99),
                           NULL, REVISION);
    json_object_del(note, "id");
    client_http_hints_t hints = {.protocol_version = REVISION,
                                 .method = "notifications/cancelled"};
    assert_int_equal(f->t->ops->notify(f->t, note, &hints), MCP_OK);
    json_decref(note);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_discover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tool_call_headers_pass_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_as_the_probe_sees_them, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_closes_the_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parallel_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notification_accepted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
