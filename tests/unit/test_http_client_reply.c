/* Reading the answer to one POST (src/transport/http_client_reply.h): JSON
 * bodies, event streams, error statuses and limits, each fed whole and one
 * byte at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/http_client_reply.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* What the reply handed out, as text: "n:<method>" per notification and
 * "o:<id or method>" per other message, comma-separated. */
typedef struct seen {
    char log[1024];
} seen_t;

static void note(seen_t *s, const char *tag, const json_t *msg)
{
    const json_t *method = json_object_get(msg, "method");
    const json_t *id = json_object_get(msg, "id");
    char what[128];
    if (json_is_string(method))
        snprintf(what, sizeof what, "%s", json_string_value(method));
    else if (json_is_integer(id))
        snprintf(what, sizeof what, "%lld", (long long)json_integer_value(id));
    else
        snprintf(what, sizeof what, "?");
    size_t len = strlen(s->log);
    snprintf(s->log + len, sizeof s->log - len, "%s%s:%s", len ? "," : "", tag, what);
}

static void on_notification(void *user, const json_t *msg)
{
    note(user, "n", msg);
}

static void on_other(void *user, const json_t *msg)
{
    note(user, "o", msg);
}

typedef struct reply_case {
    const char *name;
    bool notification;           /* no request id (a notify() POST) */
    int status;
    const char *content_type;
    const char *body;
    int transfer_rc;             /* how the transfer ended */
    size_t max_body, max_event, max_error_body; /* 0: defaults */
    /* expected */
    int rc;
    http_reply_state_t state;    /* after the last byte */
    const char *response;        /* "result", "error", or NULL */
    const char *seen;            /* the notifications/other log */
    const char *why;             /* a substring of why, or NULL */
    size_t body_len;             /* the raw body handed out */
} reply_case_t;

#define SSE "text/event-stream"
#define JSON "application/json"
#define RESULT1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}"
#define PROGRESS(n) \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":" #n "}}"
#define LOGMSG "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}"
#define ERROR_32022                                                                          \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"message\":\"Unsupported\"," \
    "\"data\":{\"supported\":[\"2026-07-28\"],\"requested\":\"2099-01-01\"}}}"
#define ERROR_32601_NO_ID \
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}"
#define HTML "<html><body>Internal Server Error</body></html>"

static const reply_case_t cases[] = {
    /* JSON bodies */
    {"json result", false, 200, JSON, RESULT1, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "result", "", NULL, sizeof RESULT1 - 1},
    {"json with charset", false, 200, "Application/JSON; charset=utf-8", RESULT1, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "result", "", NULL, sizeof RESULT1 - 1},
    {"json without content type", false, 200, NULL, RESULT1, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "result", "", NULL, sizeof RESULT1 - 1},
    {"json error response", false, 200, JSON, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"
     "{\"code\":-32602,\"message\":\"Unknown tool\"}}", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "error", "", NULL, 73},
    {"json response to another id", false, 200, JSON,
     "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}", MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_READING, NULL, "", "not the response", 36},
    {"json notification instead", false, 200, JSON, LOGMSG, MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_READING, NULL, "", "not the response", sizeof LOGMSG - 1},
    {"json not json", false, 200, JSON, "{\"jsonrpc\":", MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_READING, NULL, "", "not a JSON-RPC message", 11},
    {"json empty", false, 200, JSON, "", MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_READING, NULL, "", "empty body", 0},
    {"202 to a request", false, 202, NULL, "", MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_READING, NULL, "", "HTTP 202", 0},
    {"json cut by the network", false, 200, JSON, "{\"jsonrpc\":\"2.0\",", MCP_EIO, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "connection reset", 17},
    {"json cut by the exchange's timeout", false, 200, JSON, "{\"jsonrpc\":\"2.0\",",
     MCP_ETIMEDOUT, 0, 0, 0, MCP_ETIMEDOUT, HTTP_REPLY_READING, NULL, "", "connection reset", 17},
    {"json over the limit", false, 200, JSON, RESULT1, MCP_OK, 20, 0, 0,
     MCP_ELIMIT, HTTP_REPLY_STOPPED, NULL, "", "exceeds 20 bytes", 0},
    {"json exactly at the limit", false, 200, JSON, RESULT1, MCP_OK, sizeof RESULT1 - 1, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "result", "", NULL, sizeof RESULT1 - 1},

    /* Event streams */
    {"sse notifications then the response", false, 200, SSE,
     "event: message\ndata: " PROGRESS(1) "\n\n"
     "event: message\ndata: " LOGMSG "\n\n"
     "event: message\ndata: " RESULT1 "\n\n"
     "event: message\ndata: " PROGRESS(2) "\n\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "result", "n:notifications/progress,n:notifications/message",
     NULL, 0},
    {"sse comments, names, CRLF, priming, retry", false, 200, "text/event-stream; charset=utf-8",
     ": hello\r\n\r\nid: 7f3a\r\ndata: \r\n\r\nretry: 1000\r\n: keep-alive\r\n"
     "event: message\r\nid: 8\r\nunknown: field\r\ndata: " PROGRESS(1) "\r\n\r\n"
     "data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"result\":{}}\r\n\r\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "result", "n:notifications/progress", NULL, 0},
    {"sse blank-data event skipped", false, 200, SSE,
     "data:  \ndata:\n\ndata: " RESULT1 "\n\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "result", "", NULL, 0},
    {"sse other event types skipped", false, 200, SSE,
     "event: ping\ndata: not json at all\n\nevent: endpoint\ndata: /messages\n\n"
     "data: " RESULT1 "\n\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "result", "", NULL, 0},
    {"sse legacy request and stray response go elsewhere", false, 200, SSE,
     "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"roots/list\"}\n\n"
     "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n"
     "data: " RESULT1 "\n\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "result", "o:roots/list,o:5", NULL, 0},
    {"sse error without id is the response", false, 200, SSE,
     "data: " ERROR_32601_NO_ID "\n\n", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_ANSWERED, "error", "", NULL, 0},
    {"sse ends without the response", false, 200, SSE,
     "data: " PROGRESS(1) "\n\n", MCP_OK, 0, 0, 0,
     MCP_ECLOSED, HTTP_REPLY_READING, NULL, "n:notifications/progress", "ended before", 0},
    {"sse ends inside an event", false, 200, SSE,
     "data: " PROGRESS(1) "\n\ndata: {\"jsonrpc\"", MCP_OK, 0, 0, 0,
     MCP_ECLOSED, HTTP_REPLY_READING, NULL, "n:notifications/progress", "middle of an event", 0},
    {"sse cut by the network", false, 200, SSE,
     "data: " PROGRESS(1) "\n\n", MCP_EIO, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "n:notifications/progress", "connection reset", 0},
    {"sse event that is not JSON-RPC", false, 200, SSE,
     "data: " PROGRESS(1) "\n\ndata: [1,2]\n\ndata: " RESULT1 "\n\n", MCP_OK, 0, 0, 0,
     MCP_EPROTO, HTTP_REPLY_STOPPED, NULL, "n:notifications/progress", "not a JSON-RPC message",
     0},
    {"sse event over the limit", false, 200, SSE,
     "data: " LOGMSG "\n\ndata: " PROGRESS(1) "\n\n", MCP_OK, 0, 72, 0,
     MCP_ELIMIT, HTTP_REPLY_STOPPED, NULL, "n:notifications/message", "exceeds 72 bytes", 0},

    /* Error statuses */
    {"400 with -32022", false, 400, JSON, ERROR_32022, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "error", "", NULL, sizeof ERROR_32022 - 1},
    {"404 with -32601 and no id", false, 404, JSON, ERROR_32601_NO_ID, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, "error", "", NULL, sizeof ERROR_32601_NO_ID - 1},
    {"400 with another request's error", false, 400, JSON,
     "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32600,\"message\":\"x\"}}", MCP_OK,
     0, 0, 0, MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 400", 62},
    {"400 with a non-JSON-RPC body", false, 400, JSON,
     "{\"code\":-32000,\"message\":\"Method not allowed.\"}", MCP_OK, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 400", 47},
    {"405 empty", false, 405, NULL, "", MCP_OK, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 405", 0},
    {"401 is authorization whatever the body", false, 401, JSON, ERROR_32601_NO_ID, MCP_OK,
     0, 0, 0, MCP_EAUTH, HTTP_REPLY_READING, NULL, "", "HTTP 401",
     sizeof ERROR_32601_NO_ID - 1},
    {"403", false, 403, NULL, "", MCP_OK, 0, 0, 0,
     MCP_EAUTH, HTTP_REPLY_READING, NULL, "", "HTTP 403", 0},
    {"500 with HTML", false, 500, "text/html", HTML, MCP_OK, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 500", sizeof HTML - 1},
    {"500 body cut at the error limit", false, 500, "text/html", HTML, MCP_OK, 0, 0, 10,
     MCP_EIO, HTTP_REPLY_STOPPED, NULL, "", "HTTP 500", 10},
    {"400 event stream is kept raw", false, 400, SSE, "data: " ERROR_32022 "\n\n", MCP_OK,
     0, 0, 0, MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 400", sizeof ERROR_32022 + 7},
    {"no response at all", false, 0, NULL, "", MCP_EIO, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "connection reset", 0},

    /* Notifications */
    {"notification accepted", true, 202, NULL, "", MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, NULL, "", NULL, 0},
    {"notification answered 200 with a body", true, 200, JSON, RESULT1, MCP_OK, 0, 0, 0,
     MCP_OK, HTTP_REPLY_READING, NULL, "", NULL, 0},
    {"notification refused with an error body", true, 400, JSON, ERROR_32601_NO_ID, MCP_OK,
     0, 0, 0, MCP_OK, HTTP_REPLY_READING, "error", "", NULL, sizeof ERROR_32601_NO_ID - 1},
    {"notification refused", true, 400, NULL, "", MCP_OK, 0, 0, 0,
     MCP_EIO, HTTP_REPLY_READING, NULL, "", "HTTP 400", 0},
};

static void run(const reply_case_t *c, size_t chunk)
{
    json_t *id = json_integer(1);
    seen_t seen = {{0}};
    http_reply_limits_t limits = {c->max_body, c->max_event, c->max_error_body};
    http_reply_events_t events = {on_notification, on_other, &seen};
    http_reply_t r;
    assert_int_equal(http_reply_init(&r, c->notification ? NULL : id, &limits, &events), MCP_OK);
    json_decref(id); /* the reply keeps its own copy */

    http_reply_begin(&r, c->status, c->content_type);
    size_t len = strlen(c->body);
    http_reply_state_t state = HTTP_REPLY_READING;
    for (size_t at = 0; at < len; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        state = http_reply_feed(&r, c->body + at, n);
    }
    if (len == 0)
        state = http_reply_feed(&r, NULL, 0);

    client_outcome_t out;
    http_reply_finish(&r, c->transfer_rc, "connection reset by peer", &out);
    if (out.rc != c->rc || state != c->state || strcmp(seen.log, c->seen) != 0 ||
        out.body_len != c->body_len)
        fail_msg("%s (chunk %zu): rc %d, state %d, seen \"%s\", body %zu, why \"%s\"", c->name,
                 chunk, out.rc, state, seen.log, out.body_len, out.why ? out.why : "");
    assert_int_equal(out.http_status, c->status);
    if (c->content_type)
        assert_string_equal(out.content_type, c->content_type);
    else
        assert_null(out.content_type);
    assert_int_equal(out.body_len, c->body_len);
    if (c->body_len)
        assert_memory_equal(out.body, c->body, c->body_len);
    if (c->rc == MCP_OK)
        assert_null(out.why);
    if (c->why) {
        assert_non_null(out.why);
        if (!strstr(out.why, c->why))
            fail_msg("%s: why \"%s\" lacks \"%s\"", c->name, out.why, c->why);
    }
    if (c->response) {
        assert_non_null(out.response);
        assert_non_null(json_object_get(out.response, c->response));
    } else {
        assert_null(out.response);
    }
    json_decref(out.response);
    http_reply_free(&r);
}

static void test_table_whole(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cases); i++)
        run(&cases[i], SIZE_MAX);
}

static void test_table_byte_by_byte(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cases); i++)
        run(&cases[i], 1);
}

static void test_table_odd_chunks(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cases); i++) {
        run(&cases[i], 3);
        run(&cases[i], 7);
    }
}

/* Once the response is in, what follows is not even looked at. */
static void test_bytes_after_the_response_are_ignored(void **state)
{
    (void)state;
    seen_t seen = {{0}};
    http_reply_events_t events = {on_notification, on_other, &seen};
    json_t *id = json_string("req-1");
    http_reply_t r;
    assert_int_equal(http_reply_init(&r, id, NULL, &events), MCP_OK);
    http_reply_begin(&r, 200, SSE);
    const char *answer = "data: {\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"result\":{}}\n\n";
    assert_int_equal(http_reply_feed(&r, answer, strlen(answer)), HTTP_REPLY_ANSWERED);
    const char *more = "data: " PROGRESS(9) "\n\ndata: garbage\n\n";
    assert_int_equal(http_reply_feed(&r, more, strlen(more)), HTTP_REPLY_ANSWERED);
    assert_string_equal(seen.log, "");
    client_outcome_t out;
    http_reply_finish(&r, MCP_EIO, "reset", &out);
    assert_int_equal(out.rc, MCP_OK);
    assert_true(json_equal(json_object_get(out.response, "id"), id));
    json_decref(out.response);
    json_decref(id);
    http_reply_free(&r);
}

/* A string id "1" is not the integer id 1. */
static void test_ids_compare_by_type(void **state)
{
    (void)state;
    json_t *id = json_string("1");
    http_reply_t r;
    assert_int_equal(http_reply_init(&r, id, NULL, NULL), MCP_OK);
    http_reply_begin(&r, 200, JSON);
    http_reply_feed(&r, RESULT1, strlen(RESULT1));
    client_outcome_t out;
    http_reply_finish(&r, MCP_OK, NULL, &out);
    assert_int_equal(out.rc, MCP_EPROTO);
    assert_null(out.response);
    json_decref(id);
    http_reply_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_whole),
        cmocka_unit_test(test_table_byte_by_byte),
        cmocka_unit_test(test_table_odd_chunks),
        cmocka_unit_test(test_bytes_after_the_response_are_ignored),
        cmocka_unit_test(test_ids_compare_by_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
