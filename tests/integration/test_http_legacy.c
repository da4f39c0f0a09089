/*
 * Legacy clients of the HTTP server, over real sockets (libcurl):
 *   sessions mode: the session's whole life (initialize, Mcp-Session-Id,
 *   400 without it, 404 for an unknown, deleted or expired one, DELETE);
 *   the GET stream dropped and resumed with Last-Event-ID, nothing lost or
 *   repeated; a tool's elicitation bridged to a real elicitation/create on
 *   the POST's event stream and answered by another POST; the bridge's
 *   timeout; the client cancelling while the server waits (by closing the
 *   stream, or with notifications/cancelled);
 *   modern and legacy clients at once on one endpoint, each getting its own
 *   results, including a modern input_required round trip while a legacy
 *   elicitation waits;
 *   stateless and reject modes: what changes on the wire.
 * Every message is checked against the schema of its era.
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

#include "http_client.h"
#include "mcp/mcp.h"
#include "protocol/sse.h"
#include "schema_check.h"

#define LEGACY "2025-11-25"
#define MODERN "2026-07-28"
#define PATIENCE_MS 20000

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "(none)");
}

static atomic_int confirm_runs;

/* Asks "Proceed?" and reports the answer (the same code for both eras). */
static int confirm(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&confirm_runs, 1);
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties",
                                   "ok", "type", "boolean", "required", "ok");
        int rc = mcp_call_elicit(call, "confirm", "Proceed?", schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_textf(call, "%s (%s)",
                              json_string_value(json_object_get(answer, "action")),
                              mcp_call_protocol_version(call));
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    char base[64];
} fixture_t;

typedef struct fixture_options {
    mcp_legacy_mode_t legacy;
    int64_t idle_ms;
    int64_t input_timeout_ms;
    size_t max_sessions;
} fixture_options_t;

static fixture_t *start(fixture_options_t o)
{
    fixture_t *f = calloc(1, sizeof *f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "legacy-http",
                                                    .version = "1.0.0",
                                                    .legacy = o.legacy,
                                                    .session_idle_ms = o.idle_ms,
                                                    .legacy_input_timeout_ms =
                                                        o.input_timeout_ms,
                                                    .max_sessions = o.max_sessions},
                            &err);
    assert_non_null(f->srv);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "echo", .handler = echo},
                                         &err),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "confirm", .handler = confirm}, &err),
        MCP_OK);
    assert_int_equal(mcp_http_server_start(f->srv, NULL, &f->http, &err), MCP_OK);
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%u",
             (unsigned)mcp_http_server_port(f->http));
    atomic_store(&confirm_runs, 0);
    return f;
}

static void stop(fixture_t *f)
{
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
}

/* Makes a list change every legacy session hears. */
static void change_tools(fixture_t *f, int n)
{
    char name[32];
    snprintf(name, sizeof name, "added_%d", n);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = name, .handler = echo},
                                         NULL),
                     MCP_OK);
}

/* ------------------------------------------------------------------------
 * Legacy HTTP, one request at a time
 * ------------------------------------------------------------------------ */

/* Header lines of a legacy POST in `session` (NULL or "": none). */
typedef struct legacy_headers {
    char session[160];
    const char *lines[6];
} legacy_headers_t;

static const char *const *legacy_headers(legacy_headers_t *h, const char *session)
{
    size_t n = 0;
    h->lines[n++] = "Content-Type: application/json";
    h->lines[n++] = "Accept: application/json, text/event-stream";
    h->lines[n++] = "MCP-Protocol-Version: " LEGACY;
    if (session && *session) {
        snprintf(h->session, sizeof h->session, "Mcp-Session-Id: %s", session);
        h->lines[n++] = h->session;
    }
    h->lines[n] = NULL;
    return h->lines;
}

/* POSTs `msg_new` (stolen) in `session`; fills *resp. */
static void post(fixture_t *f, const char *session, json_t *msg_new, http_response_t *resp)
{
    legacy_headers_t h;
    char *body = json_dumps(msg_new, JSON_COMPACT);
    json_decref(msg_new);
    http_call(&(http_request_t){.base = f->base, .headers = legacy_headers(&h, session),
                                .body = body},
              resp);
    free(body);
}

static json_t *request(int id, const char *method, json_t *params_new)
{
    json_t *r = json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    if (params_new)
        json_object_set_new(r, "params", params_new);
    return r;
}

static json_t *tool_call(int id, const char *name, const char *text)
{
    return request(id, "tools/call",
                   json_pack("{s:s, s:{s:s}}", "name", name, "arguments", "text", text));
}

/* The one response of a legacy answer body (JSON or an event stream),
 * checked against the 2025-11-25 schema as the answer to `method`. */
static json_t *only_response(const http_response_t *resp, const char *method)
{
    json_t *msgs = mcp_messages(resp);
    assert_non_null(msgs);
    assert_int_equal(json_array_size(msgs), 1);
    json_t *response = json_incref(json_array_get(msgs, 0));
    json_decref(msgs);
    MCP_ASSERT_SCHEMA_VALID(response, json_object_get(response, "error") ? NULL : method, LEGACY);
    return response;
}

/* initialize + notifications/initialized; the session id into `id` ("" in
 * the stateless mode). */
static void initialize(fixture_t *f, const char *caps, char id[160])
{
    http_response_t resp;
    json_t *params = json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion", LEGACY,
                               "capabilities", json_loads(caps ? caps : "{}", 0, NULL),
                               "clientInfo", "name", "curl", "version", "1");
    post(f, NULL, request(0, "initialize", params), &resp);
    assert_int_equal(resp.status, 200);
    json_t *response = only_response(&resp, "initialize");
    assert_string_equal(json_string_value(json_object_get(json_object_get(response, "result"),
                                                          "protocolVersion")),
                        LEGACY);
    json_decref(response);
    char *session = http_header(&resp, "Mcp-Session-Id");
    snprintf(id, 160, "%s", session ? session : "");
    free(session);
    http_response_free(&resp);
    post(f, id, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"),
         &resp);
    assert_int_equal(resp.status, 202);
    assert_int_equal(resp.body_len, 0);
    http_response_free(&resp);
}

/* tools/call echo in `session`: the HTTP status, and the text on 200. */
static long echo_status(fixture_t *f, const char *session, const char *text)
{
    http_response_t resp;
    post(f, session, tool_call(3, "echo", text), &resp);
    long status = resp.status;
    json_t *response = only_response(&resp, "tools/call");
    if (status == 200) {
        const json_t *result = json_object_get(response, "result");
        assert_null(json_object_get(result, "resultType"));
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(json_object_get(result, "content"), 0), "text")),
                            text);
    } else {
        assert_int_equal(json_integer_value(json_object_get(json_object_get(response, "error"),
                                                            "code")),
                         MCP_INVALID_REQUEST);
    }
    json_decref(response);
    http_response_free(&resp);
    return status;
}

/* GET or DELETE on the endpoint in `session`; the HTTP status. */
static long session_verb(fixture_t *f, const char *verb, const char *session, char **allow)
{
    char line[200];
    snprintf(line, sizeof line, "Mcp-Session-Id: %s", session ? session : "");
    const char *headers[] = {"Accept: text/event-stream", session ? line : NULL, NULL};
    http_response_t resp;
    /* A GET that is accepted streams until the test gives up on it. */
    http_call(&(http_request_t){.base = f->base, .method = verb, .headers = headers,
                                .timeout_ms = 1000},
              &resp);
    long status = resp.status;
    if (allow)
        *allow = http_header(&resp, "Allow");
    http_response_free(&resp);
    return status;
}

/* ------------------------------------------------------------------------
 * Event streams read as they arrive (a GET, or a POST answered with one)
 * ------------------------------------------------------------------------ */

typedef struct stream {
    pthread_t thread;
    char base[64];
    char *body; /* NULL: GET */
    char header_lines[2][200];
    const char *headers[6];
    size_t stop_after; /* close the connection after this many events; 0: never */

    pthread_mutex_t lock;
    pthread_cond_t changed;
    json_t *events; /* [{"id": event id or null, "msg": message}] */
    size_t bytes;   /* received so far: the GET stream sends a comment at once */
    bool done;
    http_response_t resp;
    mcp_sse_decoder_t decoder;
} stream_t;

static int on_event(void *user, const mcp_sse_event_t *event)
{
    stream_t *s = user;
    json_t *msg = json_loadb(event->data, event->data_len, 0, NULL);
    if (!msg)
        return 0; /* an empty priming event, say */
    pthread_mutex_lock(&s->lock);
    json_array_append_new(
        s->events, json_pack("{s:s?, s:o}", "id", event->last_event_id[0] ? event->last_event_id
                                                                          : NULL,
                             "msg", msg));
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static bool on_body(void *user, const char *data, size_t len)
{
    stream_t *s = user;
    mcp_sse_decoder_feed(&s->decoder, data, len);
    pthread_mutex_lock(&s->lock);
    s->bytes += len;
    pthread_cond_broadcast(&s->changed);
    bool go_on = s->stop_after == 0 || json_array_size(s->events) < s->stop_after;
    pthread_mutex_unlock(&s->lock);
    return go_on;
}

static void *stream_main(void *arg)
{
    stream_t *s = arg;
    http_call(&(http_request_t){.base = s->base, .method = s->body ? "POST" : "GET",
                                .headers = s->headers, .body = s->body, .timeout_ms = 60000,
                                .on_body = on_body, .user = s},
              &s->resp);
    pthread_mutex_lock(&s->lock);
    s->done = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Starts a GET of `session`'s stream (after `last_event_id` when not
 * NULL), or a legacy POST of `body_new` (stolen) when not NULL. */
static void stream_start(stream_t *s, fixture_t *f, const char *session, const char *last_event_id,
                         json_t *body_new, size_t stop_after)
{
    memset(s, 0, sizeof *s);
    snprintf(s->base, sizeof s->base, "%s", f->base);
    size_t n = 0;
    if (body_new) {
        s->body = json_dumps(body_new, JSON_COMPACT);
        json_decref(body_new);
        s->headers[n++] = "Content-Type: application/json";
        s->headers[n++] = "Accept: application/json, text/event-stream";
        s->headers[n++] = "MCP-Protocol-Version: " LEGACY;
    } else {
        s->headers[n++] = "Accept: text/event-stream";
    }
    snprintf(s->header_lines[0], sizeof s->header_lines[0], "Mcp-Session-Id: %s", session);
    if (session && *session)
        s->headers[n++] = s->header_lines[0];
    if (last_event_id) {
        snprintf(s->header_lines[1], sizeof s->header_lines[1], "Last-Event-ID: %s",
                 last_event_id);
        s->headers[n++] = s->header_lines[1];
    }
    s->stop_after = stop_after;
    s->events = json_array();
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    mcp_sse_decoder_init(&s->decoder, SIZE_MAX, on_event, s);
    assert_int_equal(pthread_create(&s->thread, NULL, stream_main, s), 0);
}

/* Waits until the stream has `n` events (true) or PATIENCE_MS passed. */
static bool stream_wait(stream_t *s, size_t n)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += PATIENCE_MS / 1000;
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    while (json_array_size(s->events) < n && rc == 0)
        rc = pthread_cond_timedwait(&s->changed, &s->lock, &deadline);
    bool ok = json_array_size(s->events) >= n;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Waits until the server started the stream (its first bytes came). */
static bool stream_wait_started(stream_t *s)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += PATIENCE_MS / 1000;
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    while (s->bytes == 0 && !s->done && rc == 0)
        rc = pthread_cond_timedwait(&s->changed, &s->lock, &deadline);
    bool ok = s->bytes > 0;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Waits until the transfer ended (true) or PATIENCE_MS passed. */
static bool stream_wait_done(stream_t *s)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += PATIENCE_MS / 1000;
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    while (!s->done && rc == 0)
        rc = pthread_cond_timedwait(&s->changed, &s->lock, &deadline);
    bool ok = s->done;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Number of events so far. */
static size_t stream_count(stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = json_array_size(s->events);
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* The i-th event's message (new reference). */
static json_t *stream_msg(stream_t *s, size_t i)
{
    pthread_mutex_lock(&s->lock);
    json_t *msg = json_incref(json_object_get(json_array_get(s->events, i), "msg"));
    pthread_mutex_unlock(&s->lock);
    return msg;
}

/* The stream's events as "id:method" or "id:response", space-separated. */
static void stream_summary(stream_t *s, char *out, size_t size)
{
    out[0] = '\0';
    pthread_mutex_lock(&s->lock);
    size_t i;
    json_t *e;
    json_array_foreach(s->events, i, e) {
        const json_t *msg = json_object_get(e, "msg");
        const char *method = json_string_value(json_object_get(msg, "method"));
        const char *id = json_string_value(json_object_get(e, "id"));
        char one[128];
        snprintf(one, sizeof one, "%s%s:%s", out[0] ? " " : "", id ? id : "-",
                 method ? method + (strncmp(method, "notifications/", 14) == 0 ? 14 : 0)
                        : "response");
        strncat(out, one, size - strlen(out) - 1);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Joins the transfer (it must end by itself) and frees the stream. */
static void stream_join(stream_t *s)
{
    pthread_join(s->thread, NULL);
    mcp_sse_decoder_free(&s->decoder);
    json_decref(s->events);
    http_response_free(&s->resp);
    free(s->body);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
}

/* Every message of the stream is valid in the schema of `revision`. */
static void stream_check_schema(stream_t *s, const char *method, const char *revision)
{
    pthread_mutex_lock(&s->lock);
    size_t i;
    json_t *e;
    json_array_foreach(s->events, i, e) {
        const json_t *msg = json_object_get(e, "msg");
        bool response = json_object_get(msg, "result") != NULL;
        MCP_ASSERT_SCHEMA_VALID(msg, response ? method : NULL, revision);
    }
    pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------------------
 * Sessions
 * ------------------------------------------------------------------------ */

static void test_session_lifecycle(void **state)
{
    fixture_t *f = start((fixture_options_t){0});
    char id[160], other[160];
    initialize(f, NULL, id);
    initialize(f, NULL, other);
    assert_int_equal(strlen(id), 64);
    assert_string_not_equal(id, other);

    assert_int_equal(echo_status(f, id, "in session"), 200);
    assert_int_equal(echo_status(f, NULL, "no session"), 400);
    assert_int_equal(echo_status(f, "feedfacefeedface", "unknown"), 404);
    assert_int_equal(session_verb(f, "GET", NULL, NULL), 400);
    assert_int_equal(session_verb(f, "GET", "feedfacefeedface", NULL), 404);
    assert_int_equal(session_verb(f, "DELETE", "feedfacefeedface", NULL), 404);

    assert_int_equal(session_verb(f, "DELETE", id, NULL), 200);
    assert_int_equal(echo_status(f, id, "deleted"), 404);
    assert_int_equal(session_verb(f, "DELETE", id, NULL), 404);
    assert_int_equal(session_verb(f, "GET", id, NULL), 404);
    assert_int_equal(echo_status(f, other, "still here"), 200);
    stop(f);
}

/* Sessions are capped (max_sessions): one initialize too many is 503 with
 * -32603, and the sessions already open are unharmed; once one ends, a new
 * one may open. */
static void test_session_limit(void **state)
{
    fixture_t *f = start((fixture_options_t){.max_sessions = 3});
    char ids[3][160];
    for (int i = 0; i < 3; i++)
        initialize(f, NULL, ids[i]);

    http_response_t resp;
    json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", LEGACY,
                               "capabilities", "clientInfo", "name", "curl", "version", "1");
    post(f, NULL, request(0, "initialize", params), &resp);
    assert_int_equal(resp.status, 503);
    char *minted = http_header(&resp, "Mcp-Session-Id");
    assert_null(minted);
    json_t *response = only_response(&resp, "initialize");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(response, "error"),
                                                        "code")),
                     MCP_INTERNAL_ERROR);
    json_decref(response);
    http_response_free(&resp);
    for (int i = 0; i < 3; i++)
        assert_int_equal(echo_status(f, ids[i], "open"), 200);

    assert_int_equal(session_verb(f, "DELETE", ids[0], NULL), 200);
    char again[160];
    initialize(f, NULL, again);
    assert_int_equal(echo_status(f, again, "in its place"), 200);
    stop(f);
}

static void test_session_expiry(void **state)
{
    fixture_t *f = start((fixture_options_t){.idle_ms = 800});
    char id[160];
    initialize(f, NULL, id);
    for (int i = 0; i < 5; i++) {
        sleep_ms(200); /* 1 s in all, each request within 800 ms */
        assert_int_equal(echo_status(f, id, "alive"), 200);
    }
    sleep_ms(1600);
    assert_int_equal(echo_status(f, id, "expired"), 404);
    assert_int_equal(session_verb(f, "GET", id, NULL), 404);
    stop(f);
}

/* The GET stream drops after two messages; three more come while it is
 * away; the client reconnects with Last-Event-ID and gets exactly those
 * three, then the next live one: nothing lost, nothing twice. */
static void test_stream_resumption(void **state)
{
    fixture_t *f = start((fixture_options_t){0});
    char id[160];
    initialize(f, NULL, id);
    char summary[512];

    stream_t first;
    stream_start(&first, f, id, NULL, NULL, 2);
    assert_true(stream_wait_started(&first));
    change_tools(f, 1);
    change_tools(f, 2);
    assert_true(stream_wait(&first, 2));
    stream_summary(&first, summary, sizeof summary);
    assert_string_equal(summary, "1:tools/list_changed 2:tools/list_changed");
    stream_check_schema(&first, NULL, LEGACY);
    stream_join(&first); /* the client closed it after two events */

    change_tools(f, 3);
    change_tools(f, 4);
    change_tools(f, 5);
    stream_t second;
    stream_start(&second, f, id, "2", NULL, 4);
    assert_true(stream_wait(&second, 3));
    change_tools(f, 6);
    assert_true(stream_wait(&second, 4));
    stream_summary(&second, summary, sizeof summary);
    assert_string_equal(summary, "3:tools/list_changed 4:tools/list_changed "
                                 "5:tools/list_changed 6:tools/list_changed");
    stream_join(&second);

    stream_start(&second, f, id, "4", NULL, 2); /* once more, from the middle */
    assert_true(stream_wait(&second, 2));
    stream_summary(&second, summary, sizeof summary);
    assert_string_equal(summary, "5:tools/list_changed 6:tools/list_changed");
    stream_join(&second);
    stop(f);
}

/* ------------------------------------------------------------------------
 * MRTR bridged over HTTP
 * ------------------------------------------------------------------------ */

/* Starts tools/call confirm in `session` and returns the elicitation
 * request that arrives on the POST's stream (new reference); the client
 * closes the stream after `stop_after` events (0: never). */
static json_t *start_confirm(fixture_t *f, stream_t *s, const char *session, int call_id,
                             size_t stop_after)
{
    stream_start(s, f, session, NULL,
                 request(call_id, "tools/call",
                         json_pack("{s:s, s:{}}", "name", "confirm", "arguments")),
                 stop_after);
    assert_true(stream_wait(s, 1));
    json_t *ask = stream_msg(s, 0);
    MCP_ASSERT_SCHEMA_VALID(ask, NULL, LEGACY);
    assert_string_equal(json_string_value(json_object_get(ask, "method")), "elicitation/create");
    return ask;
}

/* The client POSTs its answer to a server request: 202, no body. */
static void post_answer(fixture_t *f, const char *session, json_t *answer_new)
{
    http_response_t resp;
    post(f, session, answer_new, &resp);
    assert_int_equal(resp.status, 202);
    assert_int_equal(resp.body_len, 0);
    http_response_free(&resp);
}

static json_t *accept_answer(const json_t *ask)
{
    return json_pack("{s:s, s:O, s:{s:s, s:{s:b}}}", "jsonrpc", "2.0", "id",
                     json_object_get(ask, "id"), "result", "action", "accept", "content", "ok",
                     1);
}

/* The stream's last message: the response to the call (new reference). */
static json_t *call_response(stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = json_array_size(s->events);
    pthread_mutex_unlock(&s->lock);
    assert_true(n >= 1);
    json_t *last = stream_msg(s, n - 1);
    assert_non_null(json_object_get(last, "id"));
    assert_null(json_object_get(last, "method"));
    return last;
}

static const char *response_text(const json_t *response)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(response, "result"), "content"), 0),
        "text"));
}

static void test_bridged_elicitation(void **state)
{
    fixture_t *f = start((fixture_options_t){0});
    char id[160];
    initialize(f, "{\"elicitation\":{}}", id);
    stream_t call;
    json_t *ask = start_confirm(f, &call, id, 7, 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ask, "params"), "mode")),
                        "form");
    post_answer(f, id, accept_answer(ask));
    assert_true(stream_wait(&call, 2));
    json_t *response = call_response(&call);
    MCP_ASSERT_SCHEMA_VALID(response, "tools/call", LEGACY);
    assert_string_equal(response_text(response), "accept (2025-11-25)");
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 7);
    json_decref(response);
    json_decref(ask);
    stream_join(&call);
    stop(f);
}

/* Asserts that event `i` of `s` is the server's notifications/cancelled
 * for its request `ask`. */
static void expect_cancellation(stream_t *s, size_t i, const json_t *ask)
{
    json_t *msg = stream_msg(s, i);
    MCP_ASSERT_SCHEMA_VALID(msg, NULL, LEGACY);
    assert_string_equal(json_string_value(json_object_get(msg, "method")),
                        "notifications/cancelled");
    assert_true(json_equal(json_object_get(json_object_get(msg, "params"), "requestId"),
                           json_object_get(ask, "id")));
    json_decref(msg);
}

/* No answer within legacy_input_timeout_ms: the call fails on its stream,
 * after the server cancelled the request it gave up on. */
static void test_bridge_timeout(void **state)
{
    fixture_t *f = start((fixture_options_t){.input_timeout_ms = 300});
    char id[160];
    initialize(f, "{\"elicitation\":{}}", id);
    stream_t call;
    json_t *ask = start_confirm(f, &call, id, 8, 0);
    assert_true(stream_wait(&call, 3));
    expect_cancellation(&call, 1, ask);
    json_t *response = call_response(&call);
    MCP_ASSERT_SCHEMA_VALID(response, NULL, LEGACY);
    const json_t *error = json_object_get(response, "error");
    assert_int_equal(json_integer_value(json_object_get(error, "code")), MCP_INTERNAL_ERROR);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "in time"));
    stream_join(&call);
    post_answer(f, id, accept_answer(ask)); /* too late: accepted, ignored */
    assert_int_equal(atomic_load(&confirm_runs), 1);
    json_decref(response);
    json_decref(ask);
    stop(f);
}

/* The client cancels while the server waits for its answer: the server
 * cancels its own request in turn, the handler never runs again, and the
 * late answer is ignored. */
static void test_bridge_cancellation(void **state)
{
    fixture_t *f = start((fixture_options_t){0});
    char id[160];
    initialize(f, "{\"elicitation\":{}}", id);

    /* notifications/cancelled: the stream ends without a response. */
    stream_t call;
    json_t *ask = start_confirm(f, &call, id, 9, 0);
    http_response_t resp;
    post(f, id,
         json_pack("{s:s, s:s, s:{s:i}}", "jsonrpc", "2.0", "method", "notifications/cancelled",
                   "params", "requestId", 9),
         &resp);
    assert_int_equal(resp.status, 202);
    http_response_free(&resp);
    assert_true(stream_wait_done(&call)); /* the server ended the stream */
    assert_int_equal(stream_count(&call), 2);
    expect_cancellation(&call, 1, ask);
    stream_join(&call);
    post_answer(f, id, accept_answer(ask));
    json_decref(ask);

    /* The client closes the stream once it has the request. libmcp does
     * not resume POST streams, so a closed stream ends the request (the
     * server hears of it within a second or so, see test_http_streams.c). */
    ask = start_confirm(f, &call, id, 10, 1);
    stream_join(&call);
    sleep_ms(3000);
    post_answer(f, id, accept_answer(ask));
    json_decref(ask);
    sleep_ms(200);
    assert_int_equal(atomic_load(&confirm_runs), 2); /* the first runs only */
    assert_int_equal(echo_status(f, id, "session fine"), 200);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Both eras at once
 * ------------------------------------------------------------------------ */

/* A modern tools/call of `tool` with `params_members` and caps; fills resp. */
static void modern_post(fixture_t *f, int id, const char *tool, const char *params_members,
                        http_response_t *resp)
{
    char name[64];
    snprintf(name, sizeof name, "Mcp-Name: %s", tool);
    const char *headers[] = {"Content-Type: application/json",
                             "Accept: application/json, text/event-stream",
                             "MCP-Protocol-Version: " MODERN, "Mcp-Method: tools/call", name,
                             NULL};
    char *body = mcp_text(id, "tools/call", params_members, NULL);
    /* Declare elicitation in the envelope. */
    char *caps = strstr(body, "\"io.modelcontextprotocol/clientCapabilities\":{}");
    char *full = NULL;
    if (caps) {
        *caps = '\0';
        assert_true(asprintf(&full, "%s\"io.modelcontextprotocol/clientCapabilities\":"
                                    "{\"elicitation\":{}}%s",
                             body, caps + strlen("\"io.modelcontextprotocol/clientCapabilities\":{}")) >
                    0);
    }
    http_call(&(http_request_t){.base = f->base, .headers = headers, .body = full}, resp);
    free(full);
    free(body);
}

typedef struct worker {
    fixture_t *f;
    int index;
    bool legacy;
    int failures;
    char why[SCHEMA_CHECK_REASON_MAX + 256];
} worker_t;

#define CALLS_PER_WORKER 20

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    char session[160] = "";
    if (w->legacy) {
        /* initialize by hand: cmocka assertions are for the test thread */
        char body[256];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"" LEGACY "\",\"capabilities\":{},"
                 "\"clientInfo\":{\"name\":\"w%d\",\"version\":\"1\"}}}",
                 w->index);
        legacy_headers_t h;
        http_response_t resp;
        http_call(&(http_request_t){.base = w->f->base, .headers = legacy_headers(&h, NULL),
                                    .body = body},
                  &resp);
        char *id = http_header(&resp, "Mcp-Session-Id");
        snprintf(session, sizeof session, "%s", id ? id : "");
        free(id);
        http_response_free(&resp);
    }
    for (int i = 0; i < CALLS_PER_WORKER; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s-%d-%d", w->legacy ? "legacy" : "modern", w->index, i);
        http_response_t resp;
        if (w->legacy) {
            legacy_headers_t h;
            char body[256];
            snprintf(body, sizeof body,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                     "\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}}",
                     i + 1, text);
            http_call(&(http_request_t){.base = w->f->base, .headers = legacy_headers(&h, session),
                                        .body = body},
                      &resp);
        } else {
            char params[128];
            snprintf(params, sizeof params, "\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}",
                     text);
            modern_post(w->f, i + 1, "echo", params, &resp);
        }
        json_t *msgs = mcp_messages(&resp);
        json_t *response = json_array_get(msgs, json_array_size(msgs) - 1);
        const json_t *result = json_object_get(response, "result");
        const char *got = response_text(response);
        const char *shape = json_string_value(json_object_get(result, "resultType"));
        char reason[SCHEMA_CHECK_REASON_MAX] = "";
        bool valid = response &&
                     schema_check_server_message(response, "tools/call",
                                                 w->legacy ? LEGACY : MODERN, reason,
                                                 sizeof reason) == 0;
        bool ok = resp.status == 200 && valid && got && strcmp(got, text) == 0 &&
                  (w->legacy ? shape == NULL : shape && strcmp(shape, "complete") == 0);
        if (!ok && !w->failures++)
            snprintf(w->why, sizeof w->why, "%s: status %ld, text %s, %s", text, resp.status,
                     got ? got : "(none)", reason);
        json_decref(msgs);
        http_response_free(&resp);
    }
    return NULL;
}

/* Legacy sessions and modern requests at once on one endpoint: each
 * client gets its own results in its own era's shape. Meanwhile a legacy
 * elicitation waits while a modern input_required round trip completes. */
static void test_both_eras_at_once(void **state)
{
    fixture_t *f = start((fixture_options_t){0});
    char id[160];
    initialize(f, "{\"elicitation\":{}}", id);
    stream_t legacy_call;
    json_t *ask = start_confirm(f, &legacy_call, id, 11, 0);

    enum { WORKERS = 6 };
    worker_t workers[WORKERS];
    pthread_t threads[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        workers[i] = (worker_t){.f = f, .index = i, .legacy = i % 2 == 0};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
    }

    /* A modern MRTR round trip of the same tool. */
    http_response_t resp;
    modern_post(f, 20, "confirm", "\"name\":\"confirm\",\"arguments\":{}", &resp);
    assert_int_equal(resp.status, 200);
    json_t *msgs = mcp_messages(&resp);
    json_t *first = json_array_get(msgs, 0);
    MCP_ASSERT_SCHEMA_VALID(first, "tools/call", MODERN);
    const json_t *result = json_object_get(first, "result");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")),
                        "input_required");
    char params[4096];
    snprintf(params, sizeof params,
             "\"name\":\"confirm\",\"arguments\":{},\"inputResponses\":{\"confirm\":"
             "{\"action\":\"decline\"}},\"requestState\":\"%s\"",
             json_string_value(json_object_get(result, "requestState")));
    json_decref(msgs);
    http_response_free(&resp);
    modern_post(f, 21, "confirm", params, &resp);
    msgs = mcp_messages(&resp);
    json_t *done = json_array_get(msgs, 0);
    MCP_ASSERT_SCHEMA_VALID(done, "tools/call", MODERN);
    assert_string_equal(response_text(done), "decline (2026-07-28)");
    json_decref(msgs);
    http_response_free(&resp);

    /* The legacy client answers its elicitation. */
    post_answer(f, id, accept_answer(ask));
    assert_true(stream_wait(&legacy_call, 2));
    json_t *response = call_response(&legacy_call);
    MCP_ASSERT_SCHEMA_VALID(response, "tools/call", LEGACY);
    assert_string_equal(response_text(response), "accept (2025-11-25)");
    json_decref(response);
    json_decref(ask);
    stream_join(&legacy_call);

    for (int i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].failures)
            fail_msg("worker %d: %d failures, first: %s", i, workers[i].failures, workers[i].why);
    }
    stop(f);
}

/* ------------------------------------------------------------------------
 * Other modes
 * ------------------------------------------------------------------------ */

/* The MCP-Protocol-Version header after initialize (2025-06-18 transport):
 * a value that is no version, or one this server does not speak, is 400
 * -- on POST, GET and DELETE -- naming the versions it does speak, and
 * the session is unharmed. */
static long with_version(fixture_t *f, const char *verb, const char *session, const char *version,
                         json_t *msg_new, json_t **error_out)
{
    char session_line[200], version_line[100];
    snprintf(session_line, sizeof session_line, "Mcp-Session-Id: %s", session);
    snprintf(version_line, sizeof version_line, "MCP-Protocol-Version: %s", version);
    const char *headers[] = {"Content-Type: application/json",
                             "Accept: application/json, text/event-stream", version_line,
                             *session ? session_line : NULL, NULL};
    char *body = msg_new ? json_dumps(msg_new, JSON_COMPACT) : NULL;
    json_decref(msg_new);
    http_response_t resp;
    http_call(&(http_request_t){.base = f->base, .method = verb, .headers = headers,
                                .body = body, .timeout_ms = 1000},
              &resp);
    free(body);
    long status = resp.status;
    json_t *msgs = mcp_messages(&resp);
    *error_out = json_incref(json_object_get(json_array_get(msgs, 0), "error"));
    json_decref(msgs);
    http_response_free(&resp);
    return status;
}

static void expect_unsupported(long status, json_t *error_new, const char *requested)
{
    assert_int_equal(status, 400);
    assert_non_null(error_new);
    assert_int_equal(json_integer_value(json_object_get(error_new, "code")),
                     MCP_UNSUPPORTED_PROTOCOL_VERSION);
    const json_t *data = json_object_get(error_new, "data");
    if (data) { /* POST: the JSON-RPC error in full */
        assert_string_equal(json_string_value(json_object_get(data, "requested")), requested);
        assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"),
                                                             0)),
                            LEGACY);
    }
    json_decref(error_new);
}

static void test_protocol_version_header(void **state)
{
    static const char *const bad[] = {"garbage", "1999-01-01", "2024-11-05"};
    for (int stateless = 0; stateless < 2; stateless++) {
        fixture_t *f = start((fixture_options_t){
            .legacy = stateless ? MCP_LEGACY_STATELESS : MCP_LEGACY_SESSIONS});
        char id[160];
        initialize(f, NULL, id);
        json_t *error = NULL;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            long status = with_version(f, "POST", id, bad[i], tool_call(5, "echo", "x"), &error);
            expect_unsupported(status, error, bad[i]);
        }
        if (!stateless) {
            expect_unsupported(with_version(f, "GET", id, "1999-01-01", NULL, &error), error,
                               "1999-01-01");
            expect_unsupported(with_version(f, "DELETE", id, "1999-01-01", NULL, &error), error,
                               "1999-01-01");
        }
        /* Versions it speaks pass; the session lives on. */
        assert_int_equal(with_version(f, "POST", id, "2025-06-18", tool_call(6, "echo", "y"),
                                      &error),
                         200);
        json_decref(error);
        assert_int_equal(echo_status(f, id, "still here"), 200);
        stop(f);
    }
}

/* Stateless: no session is minted or needed; GET and DELETE do not exist
 * (405, Allow: POST), which legacy clients take to mean "no stream". */
static void test_stateless_mode(void **state)
{
    fixture_t *f = start((fixture_options_t){.legacy = MCP_LEGACY_STATELESS});
    char id[160];
    initialize(f, "{\"elicitation\":{}}", id);
    assert_string_equal(id, "");
    assert_int_equal(echo_status(f, NULL, "stateless"), 200);
    char *allow = NULL;
    assert_int_equal(session_verb(f, "GET", NULL, &allow), 405);
    assert_string_equal(allow, "POST");
    free(allow);
    assert_int_equal(session_verb(f, "DELETE", "abc", NULL), 405);

    /* Bridging still works within one instance: the answer is a POST of
     * its own, found by the request's random id. */
    stream_t call;
    json_t *ask = start_confirm(f, &call, NULL, 12, 0);
    post_answer(f, NULL, accept_answer(ask));
    assert_true(stream_wait(&call, 2));
    json_t *response = call_response(&call);
    assert_string_equal(response_text(response), "accept (2025-11-25)");
    json_decref(response);
    json_decref(ask);
    stream_join(&call);
    stop(f);
}

/* Reject: a modern-only endpoint answers initialize with 400 and -32022
 * naming the version it speaks, as the digest (4.9) says a dual-era client
 * recognizes; GET is not allowed. */
static void test_reject_mode(void **state)
{
    fixture_t *f = start((fixture_options_t){.legacy = MCP_LEGACY_REJECT});
    http_response_t resp;
    json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", LEGACY,
                               "capabilities", "clientInfo", "name", "curl", "version", "1");
    post(f, NULL, request(0, "initialize", params), &resp);
    assert_int_equal(resp.status, 400);
    json_t *msgs = mcp_messages(&resp);
    json_t *error = json_object_get(json_array_get(msgs, 0), "error");
    MCP_ASSERT_SCHEMA_VALID(json_array_get(msgs, 0), NULL, MODERN);
    assert_int_equal(json_integer_value(json_object_get(error, "code")),
                     MCP_UNSUPPORTED_PROTOCOL_VERSION);
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(error, "data"), "supported"), 0)),
        MODERN);
    json_decref(msgs);
    http_response_free(&resp);
    char *allow = NULL;
    assert_int_equal(session_verb(f, "GET", NULL, &allow), 405);
    assert_string_equal(allow, "POST");
    free(allow);
    stop(f);
}

int main(void)
{
    http_client_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_lifecycle),
        cmocka_unit_test(test_session_limit),
        cmocka_unit_test(test_session_expiry),
        cmocka_unit_test(test_stream_resumption),
        cmocka_unit_test(test_bridged_elicitation),
        cmocka_unit_test(test_bridge_timeout),
        cmocka_unit_test(test_bridge_cancellation),
        cmocka_unit_test(test_both_eras_at_once),
        cmocka_unit_test(test_stateless_mode),
        cmocka_unit_test(test_protocol_version_header),
        cmocka_unit_test(test_reject_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
