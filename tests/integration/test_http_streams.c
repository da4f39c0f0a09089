/*
 * The HTTP server while requests are in flight: event-stream framing,
 * the first event leaving at once, 32 requests in parallel, clients that
 * go away, request timeouts, stopping with requests in flight, and a
 * stream whose client does not read.
 *
 * Timing: the machine may be loaded (2 cores, sanitizers), so the tests
 * wait for what must happen with a generous patience, and bound only the
 * delays the server promises: a cancelled handler hears of it within a
 * second or so.
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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_client.h"
#include "mcp/mcp.h"
#include "schema_check.h"
#include "test_clock.h"

#define REVISION "2026-07-28"
#define PATIENCE_MS 20000 /* how long to wait for something that must happen */
#define PROMPT_MS 1500    /* "promptly": a cancelled handler hears of it by then */
#define PARALLEL 32

/* Polls an atomic counter until it reaches `want`; false after PATIENCE_MS. */
static bool wait_count(atomic_int *counter, int want)
{
    for (int64_t start = now_ms(); now_ms() - start < PATIENCE_MS; sleep_ms(2))
        if (atomic_load(counter) >= want)
            return true;
    return atomic_load(counter) >= want;
}

/* ------------------------------------------------------------------------
 * Tools, and what they report to the test
 * ------------------------------------------------------------------------ */

static atomic_int first_event_seen;  /* set by the client when the first event arrives */
static atomic_int gate_open;         /* the "gate" tool waits for it */
static atomic_int gate_started, gate_finished;
static atomic_int slow_started, slow_cancelled;
static _Atomic int64_t slow_cancelled_at; /* now_ms() when a slow handler saw the cancel */
static atomic_int progress_after_cancel;  /* mcp_call_progress() result after the cancel */
static atomic_int flood_sent, flood_done;

static void reset_reports(void)
{
    atomic_store(&first_event_seen, 0);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_started, 0);
    atomic_store(&gate_finished, 0);
    atomic_store(&slow_started, 0);
    atomic_store(&slow_cancelled, 0);
    atomic_store(&slow_cancelled_at, 0);
    atomic_store(&progress_after_cancel, 1);
    atomic_store(&flood_sent, 0);
    atomic_store(&flood_done, 0);
}

/* Logs once, reports `steps` progress notifications, then answers. With
 * wait_for_client it pauses after the first one until the client has it. */
static int progress(mcp_call_t *call, void *user)
{
    int64_t steps = 3;
    bool wait_for_client = false;
    mcp_call_arg_int(call, "steps", &steps);
    mcp_call_arg_bool(call, "wait_for_client", &wait_for_client);
    mcp_call_logf(call, "info", "starting %lld steps", (long long)steps);
    bool seen = false;
    for (int64_t i = 1; i <= steps; i++) {
        mcp_call_progress(call, (double)i, (double)steps, "step");
        if (i == 1 && wait_for_client) {
            for (int64_t start = now_ms(); !seen && now_ms() - start < PATIENCE_MS;) {
                seen = atomic_load(&first_event_seen) != 0;
                if (!seen && mcp_call_sleep(call, 2) != MCP_OK)
                    return MCP_ECANCELED;
            }
        }
    }
    return mcp_call_add_text(call, wait_for_client ? (seen ? "seen" : "not seen") : "done");
}

/* Sleeps `ms` (cancellable), after one progress report when asked. */
static int slow(mcp_call_t *call, void *user)
{
    int64_t ms = 10000;
    bool report = false;
    mcp_call_arg_int(call, "ms", &ms);
    mcp_call_arg_bool(call, "report", &report);
    if (report)
        mcp_call_progress(call, 1, -1, "started");
    atomic_fetch_add(&slow_started, 1);
    if (mcp_call_sleep(call, ms) != MCP_OK) {
        atomic_store(&slow_cancelled_at, now_ms());
        /* Nothing may go out any more: this must fail. */
        atomic_store(&progress_after_cancel, mcp_call_progress(call, 2, -1, "after cancel"));
        atomic_fetch_add(&slow_cancelled, 1);
        return MCP_ECANCELED;
    }
    return mcp_call_add_text(call, "slept");
}

/* Reports progress every `interval` ms, `count` times, then answers. */
static int ticker(mcp_call_t *call, void *user)
{
    int64_t interval = 100, count = 5;
    mcp_call_arg_int(call, "interval", &interval);
    mcp_call_arg_int(call, "count", &count);
    for (int64_t i = 1; i <= count; i++) {
        if (mcp_call_sleep(call, interval) != MCP_OK) {
            atomic_store(&slow_cancelled_at, now_ms());
            atomic_fetch_add(&slow_cancelled, 1);
            return MCP_ECANCELED;
        }
        mcp_call_progress(call, (double)i, (double)count, NULL);
    }
    return mcp_call_add_text(call, "ticked");
}

static int gate(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&gate_started, 1);
    while (!atomic_load(&gate_open))
        if (mcp_call_sleep(call, 2) != MCP_OK)
            return MCP_ECANCELED;
    atomic_fetch_add(&gate_finished, 1);
    return mcp_call_add_text(call, "through");
}

/* Progress notifications of 32 KiB, as fast as they go, until one cannot
 * be sent (or FLOOD_MAX were, 64 MiB: the stream is not bounded). */
#define FLOOD_MAX 2048

static int flood(mcp_call_t *call, void *user)
{
    static char message[32 * 1024];
    memset(message, 'x', sizeof message - 1);
    int rc = MCP_OK;
    for (int i = 1; rc == MCP_OK && i <= FLOOD_MAX; i++) {
        rc = mcp_call_progress(call, i, -1, message);
        if (rc == MCP_OK)
            atomic_fetch_add(&flood_sent, 1);
    }
    atomic_store(&flood_done, 1);
    return rc == MCP_OK ? mcp_call_add_text(call, "flooded") : rc;
}

static int fast(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "fast");
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    char base[64];
} fixture_t;

static fixture_t *start(const mcp_http_options_t *opts)
{
    static const struct {
        const char *name;
        mcp_tool_fn fn;
        bool run_inline;
    } tools[] = {{"progress", progress, false}, {"slow", slow, false},
                 {"ticker", ticker, false},     {"gate", gate, false},
                 {"fast", fast, false},         {"progress_inline", progress, true},
                 {"fast_inline", fast, true},   {"flood", flood, false}};
    fixture_t *f = calloc(1, sizeof *f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "streams", .version = "1.0.0"},
                            &err);
    assert_non_null(f->srv);
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
                             .name = tools[i].name, .input_schema = "{\"type\":\"object\"}",
                             .handler = tools[i].fn, .run_inline = tools[i].run_inline}, &err),
                         MCP_OK);
    mcp_http_options_t o = http_test_server_options(opts);
    assert_int_equal(mcp_http_server_start(f->srv, &o, &f->http, &err), MCP_OK);
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%u",
             (unsigned)mcp_http_server_port(f->http));
    reset_reports();
    return f;
}

static void stop(fixture_t *f)
{
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
}

/* ------------------------------------------------------------------------
 * Calling a tool
 * ------------------------------------------------------------------------ */

/* Connects a raw socket with a small receive buffer and sends a call of
 * `tool` with a progress token; nothing is read. */
static int call_unread(const fixture_t *f, const char *tool)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    int rcvbuf = 4096;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(mcp_http_server_port(f->http))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char params[128];
    snprintf(params, sizeof params, "\"name\":\"%s\",\"arguments\":{}", tool);
    char *body = mcp_text(1, "tools/call", params, "\"progressToken\":1");
    char *request;
    assert_true(asprintf(&request,
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "Content-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\n"
                         "MCP-Protocol-Version: " REVISION "\r\n"
                         "Mcp-Method: tools/call\r\nMcp-Name: %s\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         tool, strlen(body), body) > 0);
    assert_true(send(fd, request, strlen(request), MSG_NOSIGNAL) == (ssize_t)strlen(request));
    free(request);
    free(body);
    return fd;
}

typedef struct call_spec {
    const char *tool;
    const char *args;    /* JSON object text */
    const char *meta;    /* extra _meta members, or NULL */
    const char *accept;  /* Accept value; NULL: both types */
    long timeout_ms;
    bool (*on_body)(void *user, const char *data, size_t len);
} call_spec_t;

static void call_tool(const char *base, const call_spec_t *spec, http_response_t *resp)
{
    char name[96], accept[128], params[512];
    snprintf(name, sizeof name, "Mcp-Name: %s", spec->tool);
    snprintf(accept, sizeof accept, "Accept: %s",
             spec->accept ? spec->accept : "application/json, text/event-stream");
    snprintf(params, sizeof params, "\"name\":\"%s\",\"arguments\":%s", spec->tool,
             spec->args ? spec->args : "{}");
    const char *headers[] = {"Content-Type: application/json", accept,
                             "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", name,
                             NULL};
    char *body = mcp_text(5, "tools/call", params, spec->meta);
    http_call(&(http_request_t){.base = base, .headers = headers, .body = body,
                                .timeout_ms = spec->timeout_ms, .on_body = spec->on_body},
              resp);
    free(body);
}

/* The messages of a complete answer, each checked against the schema;
 * the last must be the response. */
static json_t *checked_messages(const http_response_t *resp)
{
    json_t *msgs = mcp_messages(resp);
    assert_non_null(msgs);
    assert_true(json_array_size(msgs) >= 1);
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        bool last = i + 1 == json_array_size(msgs);
        assert_true(last == (json_object_get(msg, "id") != NULL));
        MCP_ASSERT_SCHEMA_VALID(msg, last && !json_object_get(msg, "error") ? "tools/call" : NULL,
                                REVISION);
    }
    return msgs;
}

static const char *result_text(const json_t *msgs)
{
    const json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const json_t *block =
        json_array_get(json_object_get(json_object_get(last, "result"), "content"), 0);
    return json_string_value(json_object_get(block, "text"));
}

#define WITH_PROGRESS "\"progressToken\":\"p1\",\"io.modelcontextprotocol/logLevel\":\"info\""

/* ------------------------------------------------------------------------
 * Framing
 * ------------------------------------------------------------------------ */

static void test_event_stream(void **state)
{
    fixture_t *f = start(NULL);
    http_response_t resp;

    /* Notifications before the result: an event stream. */
    call_tool(f->base, &(call_spec_t){.tool = "progress", .meta = WITH_PROGRESS}, &resp);
    assert_int_equal(resp.curl_code, 0);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "text/event-stream"));
    assert_true(http_header_is(&resp, "Cache-Control", "no-cache"));
    assert_true(http_header_is(&resp, "X-Accel-Buffering", "no"));
    assert_true(strncmp(resp.body, "event: message\ndata: {", 22) == 0);
    json_t *msgs = checked_messages(&resp);
    assert_int_equal(json_array_size(msgs), 5); /* log, 3 x progress, result */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "method")),
                        "notifications/message");
    for (size_t i = 1; i <= 3; i++) {
        json_t *params = json_object_get(json_array_get(msgs, i), "params");
        assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, i), "method")),
                            "notifications/progress");
        assert_string_equal(json_string_value(json_object_get(params, "progressToken")), "p1");
        assert_int_equal((int)json_number_value(json_object_get(params, "progress")), (int)i);
    }
    assert_string_equal(result_text(msgs), "done");
    json_decref(msgs);
    http_response_free(&resp);

    /* No notifications asked for: one JSON document. */
    call_tool(f->base, &(call_spec_t){.tool = "progress"}, &resp);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "application/json"));
    msgs = checked_messages(&resp);
    assert_int_equal(json_array_size(msgs), 1);
    json_decref(msgs);
    http_response_free(&resp);

    /* A client that admits only JSON gets the result alone. */
    call_tool(f->base, &(call_spec_t){.tool = "progress", .meta = WITH_PROGRESS,
                                      .accept = "application/json"}, &resp);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "application/json"));
    msgs = checked_messages(&resp);
    assert_int_equal(json_array_size(msgs), 1);
    assert_string_equal(result_text(msgs), "done");
    json_decref(msgs);
    http_response_free(&resp);
    stop(f);
}

/* A handler registered run_inline runs on the event thread, inside the
 * call that read the request: its notifications and result must still be
 * framed exactly as a pooled handler's. */
static void test_inline_handler_framing(void **state)
{
    fixture_t *f = start(NULL);
    http_response_t resp;

    call_tool(f->base, &(call_spec_t){.tool = "progress_inline", .meta = WITH_PROGRESS}, &resp);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "text/event-stream"));
    json_t *msgs = checked_messages(&resp);
    assert_int_equal(json_array_size(msgs), 5); /* log, 3 x progress, result */
    assert_string_equal(result_text(msgs), "done");
    json_decref(msgs);
    http_response_free(&resp);

    call_tool(f->base, &(call_spec_t){.tool = "fast_inline"}, &resp);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "application/json"));
    msgs = checked_messages(&resp);
    assert_string_equal(result_text(msgs), "fast");
    json_decref(msgs);
    http_response_free(&resp);
    stop(f);
}

static bool note_first_event(void *user, const char *data, size_t len)
{
    /* curl hands over body bytes only after the headers: both are here. */
    if (memmem(data, len, "notifications/progress", 22))
        atomic_store(&first_event_seen, 1);
    return true;
}

static void test_first_event_leaves_at_once(void **state)
{
    fixture_t *f = start(NULL);
    http_response_t resp;
    /* The handler holds its result back until the client has the first
     * progress event: held headers or events would make it say "not seen". */
    call_tool(f->base, &(call_spec_t){.tool = "progress", .args = "{\"wait_for_client\":true}",
                                      .meta = WITH_PROGRESS, .on_body = note_first_event},
              &resp);
    assert_int_equal(resp.status, 200);
    json_t *msgs = checked_messages(&resp);
    assert_string_equal(result_text(msgs), "seen");
    json_decref(msgs);
    http_response_free(&resp);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Concurrency
 * ------------------------------------------------------------------------ */

typedef struct gate_call {
    const char *base;
    pthread_t thread;
    http_response_t resp;
} gate_call_t;

static void *call_gate(void *arg)
{
    gate_call_t *c = arg;
    call_tool(c->base, &(call_spec_t){.tool = "gate"}, &c->resp);
    return NULL;
}

static void test_parallel_requests(void **state)
{
    fixture_t *f = start(NULL);
    gate_call_t calls[PARALLEL - 1];
    for (int i = 0; i < PARALLEL - 1; i++) {
        calls[i].base = f->base;
        assert_int_equal(pthread_create(&calls[i].thread, NULL, call_gate, &calls[i]), 0);
    }
    /* All slow requests are in their handlers... */
    assert_true(wait_count(&gate_started, PARALLEL - 1));
    /* ...and a fast one still goes straight through. */
    http_response_t resp;
    call_tool(f->base, &(call_spec_t){.tool = "fast"}, &resp);
    assert_int_equal(resp.status, 200);
    json_t *msgs = checked_messages(&resp);
    assert_string_equal(result_text(msgs), "fast");
    assert_int_equal(atomic_load(&gate_finished), 0);
    json_decref(msgs);
    http_response_free(&resp);

    atomic_store(&gate_open, 1);
    for (int i = 0; i < PARALLEL - 1; i++) {
        pthread_join(calls[i].thread, NULL);
        assert_int_equal(calls[i].resp.status, 200);
        msgs = checked_messages(&calls[i].resp);
        assert_string_equal(result_text(msgs), "through");
        json_decref(msgs);
        http_response_free(&calls[i].resp);
    }
    stop(f);
}

/* ------------------------------------------------------------------------
 * Clients that go away
 * ------------------------------------------------------------------------ */

static bool abort_on_first_event(void *user, const char *data, size_t len)
{
    return false;
}

/* The handler must hear of the client's departure promptly, and send
 * nothing after it. */
static void expect_prompt_cancel(int64_t left_at)
{
    assert_true(wait_count(&slow_cancelled, 1));
    int64_t delay = atomic_load(&slow_cancelled_at) - left_at;
    print_message("cancel seen %lld ms after the client left\n", (long long)delay);
    assert_true(delay < PROMPT_MS);
    assert_int_equal(atomic_load(&progress_after_cancel), MCP_ECANCELED);
}

/* Sends a tools/call of `tool` on a fresh connection and closes it at once. */
static void send_and_leave(const fixture_t *f, const char *tool)
{
    char params[128];
    snprintf(params, sizeof params, "\"name\":\"%s\",\"arguments\":{}", tool);
    char *body = mcp_text(9, "tools/call", params, "\"progressToken\":1");
    char head[512];
    int head_len = snprintf(head, sizeof head,
                            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                            "Content-Type: application/json\r\n"
                            "Accept: application/json, text/event-stream\r\n"
                            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                            "Mcp-Name: %s\r\nContent-Length: %zu\r\n\r\n",
                            (unsigned)mcp_http_server_port(f->http), tool, strlen(body));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons(mcp_http_server_port(f->http)),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(send(fd, head, (size_t)head_len, 0), head_len);
    assert_int_equal(send(fd, body, strlen(body), 0), (ssize_t)strlen(body));
    close(fd);
    free(body);
}

static void test_client_abort(void **state)
{
    fixture_t *f = start(NULL);
    http_response_t resp;

    /* A parked request (no byte sent yet): the client times out and
     * closes the connection. */
    call_tool(f->base, &(call_spec_t){.tool = "slow", .meta = "\"progressToken\":1",
                                      .timeout_ms = 500}, &resp);
    int64_t left_at = now_ms();
    assert_int_equal(resp.status, 0);
    assert_int_not_equal(resp.curl_code, 0);
    assert_int_equal(atomic_load(&slow_started), 1);
    expect_prompt_cancel(left_at);
    http_response_free(&resp);

    /* A stream: the client reads the first event and hangs up. */
    reset_reports();
    call_tool(f->base, &(call_spec_t){.tool = "slow", .args = "{\"report\":true}",
                                      .meta = "\"progressToken\":1",
                                      .on_body = abort_on_first_event}, &resp);
    left_at = now_ms();
    assert_int_equal(resp.status, 200);
    assert_int_not_equal(resp.curl_code, 0);
    expect_prompt_cancel(left_at);
    http_response_free(&resp);

    /* A client that hangs up the moment it has sent its request (before
     * libmicrohttpd's watcher has even started to look at the parked
     * socket). The built-in engine may see the hang-up before a worker
     * has picked the request up: then the handler never starts, which
     * is as good. Either way it must not run its 10 s. */
    reset_reports();
    send_and_leave(f, "slow");
    left_at = now_ms();
    if (wait_count(&slow_started, 1))
        expect_prompt_cancel(left_at);
    else
        assert_int_equal(atomic_load(&slow_cancelled), 0);

    /* The server goes on serving. */
    call_tool(f->base, &(call_spec_t){.tool = "fast"}, &resp);
    assert_int_equal(resp.status, 200);
    json_decref(checked_messages(&resp));
    http_response_free(&resp);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Timeouts
 * ------------------------------------------------------------------------ */

/* A legacy session (initialize, notifications/initialized), then its
 * tools/call of "slow" with Mcp-Method: subscriptions/listen; *took is how
 * long that call lasted. */
static void legacy_slow_call(const char *base, http_response_t *resp, int64_t *took)
{
    const char *plain[] = {"Content-Type: application/json",
                           "Accept: application/json, text/event-stream", NULL};
    http_call(&(http_request_t){.base = base, .headers = plain,
                                .body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                                        "\"params\":{\"protocolVersion\":\"2025-11-25\","
                                        "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
                                        "\"version\":\"1\"}}}"},
              resp);
    assert_int_equal(resp->status, 200);
    char *session = http_header(resp, "Mcp-Session-Id");
    assert_non_null(session);
    http_response_free(resp);
    char session_line[200];
    snprintf(session_line, sizeof session_line, "Mcp-Session-Id: %s", session);
    free(session);
    const char *in_session[] = {"Content-Type: application/json",
                                "Accept: application/json, text/event-stream",
                                "MCP-Protocol-Version: 2025-11-25", session_line, NULL};
    http_call(&(http_request_t){.base = base, .headers = in_session,
                                .body = "{\"jsonrpc\":\"2.0\","
                                        "\"method\":\"notifications/initialized\"}"},
              resp);
    assert_int_equal(resp->status, 202);
    http_response_free(resp);

    const char *claiming[] = {"Content-Type: application/json",
                              "Accept: application/json, text/event-stream",
                              "MCP-Protocol-Version: 2025-11-25", session_line,
                              "Mcp-Method: subscriptions/listen", NULL};
    int64_t t0 = now_ms();
    http_call(&(http_request_t){.base = base, .headers = claiming,
                                .body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                                        "\"params\":{\"name\":\"slow\",\"arguments\":{}}}"},
              resp);
    *took = now_ms() - t0;
}

static void test_timeouts(void **state)
{
    fixture_t *f = start(&(mcp_http_options_t){
        .endpoint = {.request_timeout_ms = 300, .max_request_timeout_ms = 1500}});
    http_response_t resp;

    /* Silent past the idle timeout: cancelled, connection closed unanswered. */
    int64_t t0 = now_ms();
    call_tool(f->base, &(call_spec_t){.tool = "slow"}, &resp);
    int64_t took = now_ms() - t0;
    assert_int_equal(resp.status, 0);
    assert_int_not_equal(resp.curl_code, 0);
    assert_true(took >= 290 && took < 300 + PATIENCE_MS);
    assert_true(wait_count(&slow_cancelled, 1));
    http_response_free(&resp);

    /* Progress restarts the idle clock: 8 x 100 ms outlives 300 ms. */
    reset_reports();
    call_tool(f->base, &(call_spec_t){.tool = "ticker", .args = "{\"interval\":100,\"count\":8}",
                                      .meta = "\"progressToken\":\"t\""}, &resp);
    assert_int_equal(resp.curl_code, 0);
    assert_int_equal(resp.status, 200);
    json_t *msgs = checked_messages(&resp);
    assert_string_equal(result_text(msgs), "ticked");
    json_decref(msgs);
    http_response_free(&resp);

    /* But not past the hard maximum: the stream is cut without a result. */
    t0 = now_ms();
    call_tool(f->base, &(call_spec_t){.tool = "ticker", .args = "{\"interval\":100,\"count\":50}",
                                      .meta = "\"progressToken\":\"t\""}, &resp);
    took = now_ms() - t0;
    assert_int_equal(resp.status, 200);
    assert_int_not_equal(resp.curl_code, 0); /* the stream ended unfinished */
    assert_true(took >= 1450 && took < 1500 + PATIENCE_MS);
    assert_null(strstr(resp.body, "ticked"));
    assert_true(wait_count(&slow_cancelled, 1));
    http_response_free(&resp);

    /* A legacy request cannot claim to be a listen stream to escape the
     * timeouts: nothing checks a legacy request's Mcp-Method. */
    legacy_slow_call(f->base, &resp, &took);
    assert_int_equal(resp.status, 0);
    assert_int_not_equal(resp.curl_code, 0);
    assert_true(took >= 290 && took < 300 + PATIENCE_MS);
    assert_true(wait_count(&slow_cancelled, 1));
    http_response_free(&resp);

    /* A per-request timeout through the embedding API is covered by the
     * endpoint's unit test; the server goes on serving. */
    call_tool(f->base, &(call_spec_t){.tool = "fast"}, &resp);
    assert_int_equal(resp.status, 200);
    json_decref(checked_messages(&resp));
    http_response_free(&resp);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Stopping with requests in flight
 * ------------------------------------------------------------------------ */

/* A stream whose client does not read: what the server holds for it is
 * bounded (8 MiB), past what the kernel's buffers take, and the handler's
 * next notification then fails, rather than every event being kept
 * until the connection times out (30 s). */
static void test_unread_stream_is_bounded(void **state)
{
    fixture_t *f = start(NULL);
    int fd = call_unread(f, "flood");
    assert_true(wait_count(&flood_done, 1));
    int sent = atomic_load(&flood_sent);
    print_message("an unread stream stopped after %d KiB\n", 32 * sent);
    assert_true(sent < FLOOD_MAX);
    close(fd);
    stop(f);
}

typedef struct pending {
    const char *base;
    const char *args;
    pthread_t thread;
    http_response_t resp;
} pending_t;

static void *call_slow(void *arg)
{
    pending_t *p = arg;
    call_tool(p->base, &(call_spec_t){.tool = "slow", .args = p->args}, &p->resp);
    return NULL;
}

static void test_stop_in_flight(void **state)
{
    /* Within the grace period: the request finishes and is answered. */
    fixture_t *f = start(&(mcp_http_options_t){.shutdown_grace_ms = 10000});
    pending_t p = {.base = f->base, .args = "{\"ms\":300}"};
    assert_int_equal(pthread_create(&p.thread, NULL, call_slow, &p), 0);
    assert_true(wait_count(&slow_started, 1));
    stop(f);
    pthread_join(p.thread, NULL);
    assert_int_equal(p.resp.status, 200);
    json_t *msgs = checked_messages(&p.resp);
    assert_string_equal(result_text(msgs), "slept");
    json_decref(msgs);
    http_response_free(&p.resp);

    /* Past it: cancelled, the connection closed, stop returns. */
    f = start(&(mcp_http_options_t){.shutdown_grace_ms = 200});
    p = (pending_t){.base = f->base, .args = "{\"ms\":60000}"};
    assert_int_equal(pthread_create(&p.thread, NULL, call_slow, &p), 0);
    assert_true(wait_count(&slow_started, 1));
    int64_t t0 = now_ms();
    mcp_http_server_stop(f->http);
    int64_t took = now_ms() - t0;
    print_message("stop took %lld ms\n", (long long)took);
    assert_true(took < 200 + PATIENCE_MS);
    pthread_join(p.thread, NULL);
    assert_int_equal(p.resp.status, 0);
    assert_int_not_equal(p.resp.curl_code, 0);
    assert_true(wait_count(&slow_cancelled, 1));
    http_response_free(&p.resp);
    mcp_server_free(f->srv);
    free(f);
}

int main(void)
{
    http_client_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_stream),
        cmocka_unit_test(test_inline_handler_framing),
        cmocka_unit_test(test_first_event_leaves_at_once),
        cmocka_unit_test(test_parallel_requests),
        cmocka_unit_test(test_client_abort),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_stop_in_flight),
        cmocka_unit_test(test_unread_stream_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
