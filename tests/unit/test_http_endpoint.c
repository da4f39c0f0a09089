/*
 * The embedding API (mcp_http_begin/body/end and friends) without any
 * socket: a recording responder sees exactly which callbacks libmcp makes,
 * in which order, from which call. Covers the order of the refusals, body
 * streaming and its limit, framing, the callback contract around cancel,
 * responder failures, abort_all, drain and per-request timeouts.
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

#include "mcp/mcp.h"
#include "schema_check.h"
#include "test_clock.h"

#define REVISION "2026-07-28"
#define PATIENCE_MS 20000
#define BODY_LIMIT 2048

/* ------------------------------------------------------------------------
 * A responder that records every callback
 * ------------------------------------------------------------------------ */

typedef struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int starts, writes, finishes;
    int status;
    int64_t content_length;
    char headers[1024]; /* "Name: value\n" lines */
    char body[16384];
    size_t body_len;
    bool complete;
    int fail_writes;    /* write() returns -1 from this write on (0: never) */
} recorder_t;

static void recorder_init(recorder_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
}

static void recorder_destroy(recorder_t *r)
{
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->changed);
}

static int rec_start(void *user, int status, const mcp_header_t *headers, size_t n,
                     int64_t content_length)
{
    recorder_t *r = user;
    pthread_mutex_lock(&r->lock);
    assert_int_equal(r->starts, 0);
    assert_int_equal(r->finishes, 0);
    r->starts++;
    r->status = status;
    r->content_length = content_length;
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(r->headers);
        snprintf(r->headers + used, sizeof r->headers - used, "%s: %s\n", headers[i].name,
                 headers[i].value);
    }
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

static int rec_write(void *user, const char *data, size_t len)
{
    recorder_t *r = user;
    pthread_mutex_lock(&r->lock);
    assert_int_equal(r->starts, 1);
    assert_int_equal(r->finishes, 0);
    r->writes++;
    int rc = r->fail_writes && r->writes >= r->fail_writes ? -1 : 0;
    assert_true(r->body_len + len < sizeof r->body);
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static void rec_finish(void *user, bool complete)
{
    recorder_t *r = user;
    pthread_mutex_lock(&r->lock);
    assert_int_equal(r->finishes, 0);
    r->finishes++;
    r->complete = complete;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

static mcp_http_responder_t responder_of(recorder_t *r)
{
    return (mcp_http_responder_t){rec_start, rec_write, rec_finish, r};
}

/* Waits until finish() was called; false after PATIENCE_MS. */
static bool wait_finished(recorder_t *r)
{
    for (int64_t start = now_ms(); now_ms() - start < PATIENCE_MS; sleep_ms(1)) {
        pthread_mutex_lock(&r->lock);
        bool done = r->finishes > 0;
        pthread_mutex_unlock(&r->lock);
        if (done)
            return true;
    }
    return false;
}

static bool has_header(const recorder_t *r, const char *line)
{
    char want[256];
    snprintf(want, sizeof want, "%s\n", line);
    return strstr(r->headers, want) != NULL;
}

/* The JSON-RPC message of a complete JSON answer (new reference). */
static json_t *body_message(const recorder_t *r)
{
    json_t *msg = json_loadb(r->body, r->body_len, 0, NULL);
    assert_non_null(msg);
    return msg;
}

/* ------------------------------------------------------------------------
 * The server behind the endpoint
 * ------------------------------------------------------------------------ */

static atomic_int slow_started, slow_cancelled;

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

static int whoami(mcp_call_t *call, void *user)
{
    const char *who = mcp_call_principal(call);
    return mcp_call_add_text(call, who ? who : "(anonymous)");
}

static int progress(mcp_call_t *call, void *user)
{
    for (int i = 1; i <= 3; i++)
        mcp_call_progress(call, i, 3, NULL);
    return mcp_call_add_text(call, "done");
}

static int slow(mcp_call_t *call, void *user)
{
    mcp_call_progress(call, 1, -1, NULL);
    atomic_fetch_add(&slow_started, 1);
    if (mcp_call_sleep(call, 60000) != MCP_OK) {
        atomic_fetch_add(&slow_cancelled, 1);
        return MCP_ECANCELED;
    }
    return mcp_call_add_text(call, "slept");
}

static bool wait_count(atomic_int *counter, int want)
{
    for (int64_t start = now_ms(); now_ms() - start < PATIENCE_MS; sleep_ms(1))
        if (atomic_load(counter) >= want)
            return true;
    return false;
}

static int auth(void *user, const mcp_headers_t *headers, char **principal,
                char **www_authenticate)
{
    const char *token = mcp_headers_get(headers, "Authorization");
    if (!token) {
        *www_authenticate = strdup("Bearer realm=\"test\"");
        return 401;
    }
    if (strcmp(token, "Bearer mute") == 0)
        return 401; /* and no challenge: the endpoint supplies one */
    if (strcmp(token, "Bearer bob") != 0)
        return 403;
    *principal = strdup("bob");
    return 0;
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_endpoint_t *ep;
} fixture_t;

static int setup(void **state)
{
    static const struct {
        const char *name;
        mcp_tool_fn fn;
    } tools[] = {{"echo", echo}, {"whoami", whoami}, {"progress", progress}, {"slow", slow}};
    fixture_t *f = calloc(1, sizeof *f);
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "ep", .version = "1"}, NULL);
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
                             .name = tools[i].name, .input_schema = "{\"type\":\"object\"}",
                             .handler = tools[i].fn}, NULL),
                         MCP_OK);
    f->ep = mcp_http_endpoint_new(f->srv, &(mcp_http_endpoint_options_t){
                                      .max_body_bytes = BODY_LIMIT}, NULL);
    assert_non_null(f->ep);
    atomic_store(&slow_started, 0);
    atomic_store(&slow_cancelled, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(mcp_http_endpoint_drain(f->ep, PATIENCE_MS), MCP_OK);
    mcp_http_endpoint_free(f->ep);
    mcp_server_free(f->srv);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------------ */

#define MAX_HEADERS 12

typedef struct request {
    mcp_header_t items[MAX_HEADERS];
    mcp_http_request_t req;
    char *body;
} request_t;

/* A well-formed tools/call of `tool` (or a request for `method` when tool
 * is NULL), plus extra "Name: value" headers. */
static void request_init(request_t *r, const char *method, const char *tool, const char *meta,
                         const char *const *extra)
{
    memset(r, 0, sizeof *r);
    size_t n = 0;
    r->items[n++] = (mcp_header_t){"Content-Type", "application/json"};
    r->items[n++] = (mcp_header_t){"Accept", "application/json, text/event-stream"};
    r->items[n++] = (mcp_header_t){"MCP-Protocol-Version", "2026-07-28"};
    r->items[n++] = (mcp_header_t){"Mcp-Method", method};
    if (tool)
        r->items[n++] = (mcp_header_t){"Mcp-Name", tool};
    for (size_t i = 0; extra && extra[i]; i += 2)
        r->items[n++] = (mcp_header_t){extra[i], extra[i + 1]};
    r->req = (mcp_http_request_t){.method = "POST", .path = "/mcp", .headers = {r->items, n}};
    char params[256] = "";
    if (tool)
        snprintf(params, sizeof params, "\"name\":\"%s\",", tool);
    if (asprintf(&r->body,
                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"%s\",\"params\":{%s\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}%s%s}}}",
                 method, params, meta ? "," : "", meta ? meta : "") < 0)
        fail();
}

static void request_free(request_t *r)
{
    free(r->body);
}

/* Sends the request in one go; returns the exchange handle (or NULL). */
static mcp_http_exchange_t *send_request(fixture_t *f, request_t *r, recorder_t *rec)
{
    mcp_http_responder_t resp = responder_of(rec);
    mcp_http_exchange_t *x = NULL;
    assert_int_equal(mcp_http_handle(f->ep, &r->req, r->body, strlen(r->body), &resp, &x),
                     MCP_OK);
    return x;
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

/* Each refusal is answered before mcp_http_begin() returns, and the first
 * failing check decides. */
static void test_refusal_order(void **state)
{
    static const struct {
        const char *name;
        const char *method, *path;
        const char *headers[8];
        long status;
        const char *header; /* expected among the answer's headers */
    } rows[] = {
        {"path before everything", "GET", "/elsewhere",
         {"Host", "evil.example", "Content-Type", "text/plain"}, 404, "Content-Type: text/plain"},
        {"Host before method", "GET", "/mcp", {"Host", "evil.example"}, 403, NULL},
        {"Origin before method", "GET", "/mcp", {"Origin", "http://evil.example"}, 403, NULL},
        {"method", "PUT", "/mcp", {"Content-Type", "text/plain"}, 405, "Allow: GET, POST, DELETE"},
        {"a method HTTP defines", "PATCH", "/mcp", {NULL}, 405, "Allow: GET, POST, DELETE"},
        {"an unknown method", "BREW", "/mcp", {"Content-Type", "text/plain"}, 501, NULL},
        {"methods are case-sensitive", "post", "/mcp", {NULL}, 501, NULL},
        {"auth before media types", "POST", "/mcp", {"Content-Type", "text/plain"}, 401,
         "WWW-Authenticate: Bearer realm=\"test\""},
        {"auth refusal", "POST", "/mcp", {"Authorization", "Bearer eve"}, 403, NULL},
        {"401 without a challenge", "POST", "/mcp", {"Authorization", "Bearer mute"}, 401,
         "WWW-Authenticate: Bearer"},
        {"Content-Type", "POST", "/mcp",
         {"Authorization", "Bearer bob", "Content-Type", "text/plain", "Accept", "image/png"}, 415,
         NULL},
        {"Accept", "POST", "/mcp",
         {"Authorization", "Bearer bob", "Content-Type", "application/json", "Accept",
          "image/png", "Content-Length", "999999"},
         406, NULL},
        {"declared length", "POST", "/mcp",
         {"Authorization", "Bearer bob", "Content-Type", "application/json", "Content-Length",
          "2049"},
         413, NULL},
    };
    fixture_t *f = *state;
    mcp_server_t *srv = f->srv;
    mcp_http_endpoint_t *ep = mcp_http_endpoint_new(srv, &(mcp_http_endpoint_options_t){
                                                        .max_body_bytes = BODY_LIMIT,
                                                        .auth = auth}, NULL);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[4];
        size_t n = 0;
        for (; n < 4 && rows[i].headers[2 * n]; n++)
            items[n] = (mcp_header_t){rows[i].headers[2 * n], rows[i].headers[2 * n + 1]};
        mcp_http_request_t req = {rows[i].method, rows[i].path, {items, n}, 0};
        recorder_t rec;
        recorder_init(&rec);
        mcp_http_responder_t resp = responder_of(&rec);
        mcp_http_exchange_t *x = (mcp_http_exchange_t *)&rec; /* must be overwritten */
        print_message("%s\n", rows[i].name);
        assert_int_equal(mcp_http_begin(ep, &req, &resp, &x), MCP_OK);
        assert_null(x);
        assert_int_equal(rec.finishes, 1); /* answered already */
        assert_true(rec.complete);
        assert_int_equal(rec.status, rows[i].status);
        assert_int_equal(rec.content_length, (int64_t)rec.body_len);
        if (rows[i].header)
            assert_true(has_header(&rec, rows[i].header));
        if (rows[i].status != 404) {
            json_t *msg = body_message(&rec);
            assert_int_equal(json_integer_value(json_object_get(json_object_get(msg, "error"),
                                                                "code")),
                             -32600);
            assert_null(json_object_get(msg, "id"));
            MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
            json_decref(msg);
        }
        recorder_destroy(&rec);
    }

    /* Admitted: the principal reaches the handler. */
    request_t r;
    static const char *const bob[] = {"Authorization", "Bearer bob", NULL};
    request_init(&r, "tools/call", "whoami", NULL, bob);
    recorder_t rec;
    recorder_init(&rec);
    mcp_http_responder_t resp = responder_of(&rec);
    assert_int_equal(mcp_http_handle(ep, &r.req, r.body, strlen(r.body), &resp, NULL), MCP_OK);
    assert_true(wait_finished(&rec));
    assert_int_equal(rec.status, 200);
    assert_non_null(strstr(rec.body, "\"text\":\"bob\""));
    recorder_destroy(&rec);
    request_free(&r);
    assert_int_equal(mcp_http_endpoint_drain(ep, PATIENCE_MS), MCP_OK);
    mcp_http_endpoint_free(ep);

    /* Bad arguments: nothing is called. */
    recorder_init(&rec);
    resp = responder_of(&rec);
    mcp_http_exchange_t *x;
    mcp_http_request_t no_method = {NULL, "/mcp", {NULL, 0}, 0};
    assert_int_equal(mcp_http_begin(f->ep, &no_method, &resp, &x), MCP_EINVAL);
    assert_int_equal(mcp_http_begin(f->ep, &r.req, &resp, NULL), MCP_EINVAL);
    assert_int_equal(mcp_http_begin(NULL, &r.req, &resp, &x), MCP_EINVAL);
    assert_int_equal(rec.starts + rec.finishes, 0);
    recorder_destroy(&rec);
    assert_null(mcp_http_endpoint_new(srv, &(mcp_http_endpoint_options_t){.path = "mcp"}, NULL));
    assert_null(mcp_http_endpoint_new(NULL, NULL, NULL));
}

/* The body may come in pieces; an answer known at once comes before
 * mcp_http_end() returns. */
static void test_body_in_chunks(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "server/discover", NULL, NULL, NULL);
    recorder_t rec;
    recorder_init(&rec);
    mcp_http_responder_t resp = responder_of(&rec);
    mcp_http_exchange_t *x;
    assert_int_equal(mcp_http_begin(f->ep, &r.req, &resp, &x), MCP_OK);
    assert_non_null(x);
    size_t len = strlen(r.body), third = len / 3;
    assert_int_equal(mcp_http_body(x, r.body, third), MCP_OK);
    assert_int_equal(mcp_http_body(x, r.body + third, third), MCP_OK);
    assert_int_equal(mcp_http_body(x, r.body + 2 * third, len - 2 * third), MCP_OK);
    assert_int_equal(rec.starts, 0);
    assert_int_equal(mcp_http_end(x), MCP_OK);
    assert_int_equal(rec.finishes, 1);
    assert_true(rec.complete);
    assert_int_equal(rec.status, 200);
    assert_true(has_header(&rec, "Content-Type: application/json"));
    assert_int_equal(rec.content_length, (int64_t)rec.body_len);
    assert_int_equal(rec.writes, 1);
    json_t *msg = body_message(&rec);
    MCP_ASSERT_SCHEMA_VALID(msg, "server/discover", REVISION);
    json_decref(msg);
    /* Over: more body or another end are refused. */
    assert_int_equal(mcp_http_body(x, "x", 1), MCP_ESTATE);
    assert_int_equal(mcp_http_end(x), MCP_ESTATE);
    mcp_http_exchange_release(x);
    recorder_destroy(&rec);

    /* Past the limit: ELIMIT, then 413 at the end. */
    recorder_init(&rec);
    resp = responder_of(&rec);
    assert_int_equal(mcp_http_begin(f->ep, &r.req, &resp, &x), MCP_OK);
    char chunk[1000];
    memset(chunk, ' ', sizeof chunk);
    assert_int_equal(mcp_http_body(x, chunk, sizeof chunk), MCP_OK);
    assert_int_equal(mcp_http_body(x, chunk, sizeof chunk), MCP_OK);
    assert_int_equal(mcp_http_body(x, chunk, BODY_LIMIT - 2 * sizeof chunk), MCP_OK);
    assert_int_equal(mcp_http_body(x, chunk, 1), MCP_ELIMIT);
    assert_int_equal(mcp_http_body(x, chunk, 1), MCP_ELIMIT);
    assert_int_equal(mcp_http_end(x), MCP_OK);
    assert_int_equal(rec.status, 413);
    assert_int_equal(rec.finishes, 1);
    mcp_http_exchange_release(x);
    recorder_destroy(&rec);
    request_free(&r);
}

/* Begins `r` with "Content-Length: declared" (none when NULL), sends `len`
 * bytes of `body` in `pieces` parts, ends it and returns the status of the
 * answer (0: none yet). `last_rc` gets mcp_http_body()'s last result. */
static int send_declared(fixture_t *f, const char *declared, const char *body, size_t len,
                         size_t pieces, int *last_rc)
{
    request_t r;
    const char *const extra[] = {"Content-Length", declared, NULL};
    request_init(&r, "server/discover", NULL, NULL, declared ? extra : NULL);
    recorder_t rec;
    recorder_init(&rec);
    mcp_http_responder_t resp = responder_of(&rec);
    mcp_http_exchange_t *x;
    assert_int_equal(mcp_http_begin(f->ep, &r.req, &resp, &x), MCP_OK);
    assert_non_null(x);
    size_t piece = len / pieces;
    for (size_t i = 0, off = 0; i < pieces; i++, off += piece)
        *last_rc = mcp_http_body(x, body + off, i + 1 < pieces ? piece : len - off);
    assert_int_equal(mcp_http_end(x), MCP_OK);
    assert_true(wait_finished(&rec));
    int status = rec.status;
    if (status == 200) {
        json_t *msg = body_message(&rec);
        assert_int_equal(json_integer_value(json_object_get(msg, "id")), 9);
        MCP_ASSERT_SCHEMA_VALID(msg, "server/discover", REVISION);
        json_decref(msg);
    }
    mcp_http_exchange_release(x);
    recorder_destroy(&rec);
    request_free(&r);
    return status;
}

/* Content-Length sizes the body buffer, but only the bytes that arrive
 * count: a body longer or shorter than it claims, or without any claim,
 * reaches the core whole, and the limit holds whatever was declared. */
static void test_body_and_declared_length(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "server/discover", NULL, NULL, NULL);
    /* The request padded with spaces to exactly the limit, plus one. */
    char padded[BODY_LIMIT + 1];
    size_t len = strlen(r.body);
    memset(padded, ' ', sizeof padded);
    memcpy(padded, r.body, len);
    char exact[32], more[32];
    snprintf(exact, sizeof exact, "%zu", len);
    snprintf(more, sizeof more, "%zu", len + 500);
    static const char limit[] = "2048"; /* BODY_LIMIT */
    const struct {
        const char *name;
        const char *declared; /* NULL: no Content-Length */
        size_t pieces;
    } rows[] = {
        {"as declared, whole", exact, 1},
        {"as declared, in pieces", exact, 3},
        {"longer than declared", "10", 3},
        {"declared zero", "0", 2},
        {"shorter than declared", more, 2},
        {"not a number", "12abc", 4},
        {"no Content-Length, many pieces", NULL, 40},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int rc = -1;
        print_message("%s\n", rows[i].name);
        assert_int_equal(send_declared(f, rows[i].declared, r.body, len, rows[i].pieces, &rc), 200);
        assert_int_equal(rc, MCP_OK);
    }

    /* At the limit, declared or not, and one byte past it. */
    int rc = -1;
    assert_int_equal(send_declared(f, limit, padded, BODY_LIMIT, 1, &rc), 200);
    assert_int_equal(rc, MCP_OK);
    assert_int_equal(send_declared(f, limit, padded, BODY_LIMIT, 5, &rc), 200);
    assert_int_equal(send_declared(f, NULL, padded, BODY_LIMIT, 5, &rc), 200);
    assert_int_equal(send_declared(f, limit, padded, BODY_LIMIT + 1, 1, &rc), 413);
    assert_int_equal(rc, MCP_ELIMIT);
    assert_int_equal(send_declared(f, exact, padded, BODY_LIMIT + 1, 3, &rc), 413);
    assert_int_equal(rc, MCP_ELIMIT);
    assert_int_equal(send_declared(f, NULL, padded, BODY_LIMIT + 1, 3, &rc), 413);
    assert_int_equal(rc, MCP_ELIMIT);
    request_free(&r);
}

static void test_framing(void **state)
{
    fixture_t *f = *state;
    request_t r;
    recorder_t rec;

    /* A notification: 202, nothing else. */
    request_init(&r, "notifications/cancelled", NULL, NULL, NULL);
    char *notification = strdup(r.body);
    char *id = strstr(notification, "\"id\":9,");
    memmove(id, id + 7, strlen(id + 7) + 1);
    recorder_init(&rec);
    mcp_http_responder_t resp = responder_of(&rec);
    assert_int_equal(mcp_http_handle(f->ep, &r.req, notification, strlen(notification), &resp,
                                     NULL),
                     MCP_OK);
    assert_int_equal(rec.status, 202);
    assert_int_equal(rec.content_length, 0);
    assert_int_equal(rec.writes, 0);
    assert_true(rec.complete);
    assert_string_equal(rec.headers, "");
    recorder_destroy(&rec);
    free(notification);
    request_free(&r);

    /* Progress: a stream of events, the response last. */
    request_init(&r, "tools/call", "progress", "\"progressToken\":\"tok\"", NULL);
    recorder_init(&rec);
    mcp_http_exchange_release(send_request(f, &r, &rec));
    assert_true(wait_finished(&rec));
    assert_true(rec.complete);
    assert_int_equal(rec.status, 200);
    assert_int_equal(rec.content_length, -1);
    assert_true(has_header(&rec, "Content-Type: text/event-stream"));
    assert_true(has_header(&rec, "Cache-Control: no-cache"));
    assert_true(has_header(&rec, "X-Accel-Buffering: no"));
    assert_int_equal(rec.writes, 4); /* one write per event */
    const char *p = rec.body;
    for (int i = 0; i < 4; i++) {
        assert_true(strncmp(p, "event: message\ndata: ", 21) == 0);
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        json_t *msg = json_loadb(p + 21, (size_t)(end - p - 21), 0, NULL);
        assert_non_null(msg);
        MCP_ASSERT_SCHEMA_VALID(msg, i == 3 ? "tools/call" : NULL, REVISION);
        json_decref(msg);
        p = end + 2;
    }
    assert_string_equal(p, "");
    recorder_destroy(&rec);
    request_free(&r);
}

/* After cancel() returns nothing is called, finish() included, and the
 * handler hears of it. */
static void test_cancel(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "tools/call", "slow", "\"progressToken\":1", NULL);
    recorder_t rec;
    recorder_init(&rec);
    mcp_http_exchange_t *x = send_request(f, &r, &rec);
    assert_non_null(x);
    assert_true(wait_count(&slow_started, 1));
    mcp_http_exchange_cancel(x);
    pthread_mutex_lock(&rec.lock);
    int starts = rec.starts, writes = rec.writes;
    pthread_mutex_unlock(&rec.lock);
    assert_true(wait_count(&slow_cancelled, 1));
    assert_int_equal(mcp_http_endpoint_drain(f->ep, 0), MCP_ETIMEDOUT); /* we hold x */
    mcp_http_exchange_release(x);
    assert_int_equal(mcp_http_endpoint_drain(f->ep, PATIENCE_MS), MCP_OK);
    assert_int_equal(rec.starts, starts);
    assert_int_equal(rec.writes, writes);
    assert_int_equal(rec.finishes, 0);
    mcp_http_exchange_cancel(NULL);
    mcp_http_exchange_release(NULL);
    recorder_destroy(&rec);
    request_free(&r);
}

/* A write that fails means the client is gone: the request is cancelled
 * and finish(false) ends the exchange. */
static void test_responder_failure(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "tools/call", "slow", "\"progressToken\":1", NULL);
    recorder_t rec;
    recorder_init(&rec);
    rec.fail_writes = 1;
    mcp_http_exchange_release(send_request(f, &r, &rec));
    assert_true(wait_finished(&rec));
    assert_false(rec.complete);
    assert_true(wait_count(&slow_cancelled, 1));
    assert_int_equal(rec.writes, 1);
    recorder_destroy(&rec);
    request_free(&r);
}

static void test_abort_all(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "tools/call", "slow", NULL, NULL);
    recorder_t rec;
    recorder_init(&rec);
    mcp_http_exchange_t *x = send_request(f, &r, &rec);
    assert_true(wait_count(&slow_started, 1));
    mcp_http_endpoint_abort_all(f->ep);
    assert_int_equal(rec.finishes, 1); /* from inside abort_all */
    assert_false(rec.complete);
    assert_int_equal(rec.starts, 0);
    assert_true(wait_count(&slow_cancelled, 1));
    mcp_http_exchange_release(x);

    /* An exchange still reading its body is aborted too. */
    recorder_t reading;
    recorder_init(&reading);
    mcp_http_responder_t resp = responder_of(&reading);
    assert_int_equal(mcp_http_begin(f->ep, &r.req, &resp, &x), MCP_OK);
    mcp_http_endpoint_abort_all(f->ep);
    assert_int_equal(reading.finishes, 1);
    assert_int_equal(mcp_http_body(x, "{}", 2), MCP_ESTATE);
    assert_int_equal(mcp_http_end(x), MCP_OK);
    assert_int_equal(reading.finishes, 1);
    mcp_http_exchange_release(x);
    recorder_destroy(&reading);
    recorder_destroy(&rec);
    request_free(&r);
}

/* abort_all while other threads begin and release exchanges: an exchange
 * whose last reference is going is skipped, never taken back (which freed
 * it twice). A race, so a stress test: ASan or TSan see it within a few
 * thousand rounds when the walk takes plain references. */
typedef struct churn {
    fixture_t *f;
    atomic_bool *stop;
} churn_t;

static int quiet_start(void *user, int status, const mcp_header_t *headers, size_t n,
                       int64_t content_length)
{
    (void)user, (void)status, (void)headers, (void)n, (void)content_length;
    return 0;
}
static int quiet_write(void *user, const char *data, size_t len)
{
    (void)user, (void)data, (void)len;
    return 0;
}
static void quiet_finish(void *user, bool complete)
{
    (void)user, (void)complete;
}

static void *begin_and_release(void *arg)
{
    churn_t *c = arg;
    request_t r;
    request_init(&r, "tools/call", "slow", NULL, NULL);
    mcp_http_responder_t quiet = {quiet_start, quiet_write, quiet_finish, NULL};
    for (int i = 0; i < 20000 && !atomic_load(c->stop); i++) {
        mcp_http_exchange_t *x = NULL;
        if (mcp_http_begin(c->f->ep, &r.req, &quiet, &x) == MCP_OK)
            mcp_http_exchange_release(x);
    }
    request_free(&r);
    return NULL;
}

static void test_abort_all_races_releases(void **state)
{
    fixture_t *f = *state;
    atomic_bool stop = false;
    churn_t c = {f, &stop};
    pthread_t churners[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&churners[i], NULL, begin_and_release, &c), 0);
    int64_t until = now_ms() + 1500;
    while (now_ms() < until)
        mcp_http_endpoint_abort_all(f->ep);
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(churners[i], NULL);
    assert_int_equal(mcp_http_endpoint_drain(f->ep, PATIENCE_MS), MCP_OK);
}

/* A request's own timeout: the handler is cancelled and the response
 * closed unfinished. */
static void test_request_timeout(void **state)
{
    fixture_t *f = *state;
    request_t r;
    request_init(&r, "tools/call", "slow", NULL, NULL);
    r.req.timeout_ms = 100;
    recorder_t rec;
    recorder_init(&rec);
    int64_t t0 = now_ms();
    mcp_http_exchange_release(send_request(f, &r, &rec));
    assert_true(wait_finished(&rec));
    assert_true(now_ms() - t0 >= 95);
    assert_false(rec.complete);
    assert_true(wait_count(&slow_cancelled, 1));
    recorder_destroy(&rec);
    request_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refusal_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_in_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_and_declared_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_responder_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_all_races_releases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_timeout, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
