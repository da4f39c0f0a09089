/*
 * The event streams of a legacy Streamable HTTP session (2025-11-25),
 * against a scripted server (threads of this test, one per connection):
 *
 *   - connecting waits until the server answered the GET for its own
 *     stream, so that a request the server sends there right after the
 *     handshake is not lost (servers drop what they cannot deliver);
 *   - a call whose POST stream ends before its response, after an event ID
 *     and a `retry` field, is resumed with a GET carrying Last-Event-ID,
 *     no sooner than the retry delay (the spec: the client MUST respect
 *     it), and gets its response there;
 *   - a call whose timeout comes before the retry delay fails with
 *     MCP_ETIMEDOUT when it expires, without resuming; and since closing
 *     a stream does not cancel a legacy request, the client POSTs
 *     notifications/cancelled for it (with the MCP-Protocol-Version
 *     header, as every request after initialize);
 *   - so does a call that times out while its stream is still open;
 *   - a server that closes every stream after one event, so that the
 *     client polls, gets its answer however many resumptions it takes;
 *   - a POST stream cut by the network (a chunked body that never ends)
 *     is resumed like one the server closed;
 *   - resumptions that bring nothing new end the call after three, even
 *     without a timeout;
 *   - a retry field of a thousand hours is honoured as CLIENT_MAX_RETRY_MS,
 *     both before resuming a call's stream (a call without a timeout
 *     would otherwise wait that long) and before opening the session's
 *     GET stream again;
 *   - a server that never acknowledges notifications/initialized fails
 *     the connect within the client's timeout;
 *   - a call's stream that carries more pings than
 *     CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT, whose answers the server holds
 *     open, never has more than that many answers on the wire: the others
 *     wait, and every ping is answered once the server takes them.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client_internal.h" /* CLIENT_MAX_RETRY_MS */
#include "transport/http_client.h"  /* CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT */
#include "mcp/client.h"
#include "mcp/mcp.h"
#include "scripted_http.h"
#include "test_clock.h"

/* ------------------------------------------------------------------------
 * The scripted server
 * ------------------------------------------------------------------------ */

typedef struct server {
    scripted_http_t http;

    /* The script. */
    int get_delay_ms;   /* before answering the GET of the server's stream */
    int64_t get_retry_ms; /* > 0: the server's stream names this retry
                             delay in its first event and ends */
    int64_t retry_ms;   /* the retry field of the tools/call stream */
    int polls;          /* resumptions that bring one new event and close
                           before the one that answers */
    bool cut_chunked;   /* the tools/call stream is chunked and cut short */
    bool stale;         /* resumptions bring nothing new, ever */
    int resumptions;    /* GETs with Last-Event-ID so far */

    pthread_mutex_t lock; /* guards what follows */
    bool get_open;        /* the server's own stream was answered */
    long pending_call;    /* the id of the tools/call whose stream was cut */
    int64_t cut_ms;       /* when it was cut */
    int64_t resumed_ms;   /* when the GET with Last-Event-ID came (0: never) */
    char last_event_id[64];
    long cancelled_id;    /* requestId of a notifications/cancelled (0: none) */
    bool cancel_versioned; /* it carried MCP-Protocol-Version: 2025-11-25 */
    pthread_cond_t cond;  /* answers, below, changed */
    int pings;            /* the "flood" call's stream carries this many */
    int answers;          /* answers to them received */
    int answers_open;     /* answers whose POST the server holds open */
    int most_open;        /* the most held open at once */
    bool take_answers;    /* the server completes those POSTs */
    bool hold_initialized; /* notifications/initialized is never answered */
} server_t;

static void begin_events(int fd)
{
    scripted_send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
}

/* Pings on the call's stream; the response comes once every one was
 * answered. */
static void serve_flood(server_t *s, int fd, long id)
{
    begin_events(fd);
    for (int i = 0; i < s->pings; i++) {
        char event[128];
        snprintf(event, sizeof event,
                 "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n\n",
                 9000 + i);
        scripted_send_text(fd, event);
    }
    pthread_mutex_lock(&s->lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (s->answers < s->pings &&
           pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&s->lock);
    char event[256];
    snprintf(event, sizeof event,
             "data: {\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"content\":"
             "[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n",
             id);
    scripted_send_text(fd, event);
}

/* An answer to a ping: held open until the test lets the server take
 * answers. */
static void serve_answer(server_t *s, int fd)
{
    pthread_mutex_lock(&s->lock);
    s->answers_open++;
    if (s->answers_open > s->most_open)
        s->most_open = s->answers_open;
    pthread_cond_broadcast(&s->cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!s->take_answers && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0)
        ;
    s->answers_open--;
    s->answers++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    scripted_send_text(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n"
                           "Connection: close\r\n\r\n");
}

static void serve_get(server_t *s, int fd, const char *req)
{
    const char *last = strcasestr(req, "Last-Event-ID:");
    if (!last) {
        /* The server's own stream: answered late, then kept open. */
        sleep_ms(s->get_delay_ms);
        /* Marked open before the headers go out: the client may return
         * from connect the moment it reads them. */
        pthread_mutex_lock(&s->lock);
        s->get_open = true;
        pthread_mutex_unlock(&s->lock);
        begin_events(fd);
        if (s->get_retry_ms > 0) {
            char priming[64];
            snprintf(priming, sizeof priming, "id: g1\nretry: %lld\ndata: \n\n",
                     (long long)s->get_retry_ms);
            scripted_send_text(fd, priming);
            return;
        }
        scripted_until_closed(fd);
        return;
    }
    /* A resumption: the response of the call whose stream was cut, or
     * (while polls remain) one more event and the end of the stream. */
    pthread_mutex_lock(&s->lock);
    s->resumed_ms = now_ms();
    sscanf(last + 14, " %63[^\r\n]", s->last_event_id);
    long id = s->pending_call;
    int n = ++s->resumptions;
    bool poll_again = n <= s->polls;
    bool stale = s->stale;
    pthread_mutex_unlock(&s->lock);
    begin_events(fd);
    if (stale) {
        scripted_send_text(fd, ": nothing new\n\n");
        return;
    }
    if (poll_again) {
        char event[64];
        snprintf(event, sizeof event, "id: p%d\ndata: \n\n", n);
        scripted_send_text(fd, event);
        return;
    }
    char event[256];
    snprintf(event, sizeof event,
             "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"content\":"
             "[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n",
             id);
    scripted_send_text(fd, event);
}

static void serve_post(server_t *s, int fd, const char *req, const char *body)
{
    if (strstr(body, "\"notifications/cancelled\"")) {
        const char *id = strstr(body, "\"requestId\":");
        pthread_mutex_lock(&s->lock);
        s->cancelled_id = id ? strtol(id + 12, NULL, 10) : -1;
        s->cancel_versioned = strcasestr(req, "MCP-Protocol-Version: 2025-11-25") != NULL;
        pthread_mutex_unlock(&s->lock);
    }
    if (strstr(body, "\"initialize\"")) {
        char answer[512];
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":"
                 "\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
                 "{\"name\":\"streams\",\"version\":\"1\"}}}",
                 scripted_request_id(body));
        scripted_respond_json(fd, 200, "Mcp-Session-Id: s1\r\n", answer);
    } else if (strstr(body, "\"id\":9") && !strstr(body, "\"method\"")) {
        serve_answer(s, fd);
    } else if (strstr(body, "\"tools/call\"") && strstr(body, "\"flood\"")) {
        serve_flood(s, fd, scripted_request_id(body));
    } else if (s->hold_initialized && strstr(body, "\"notifications/initialized\"")) {
        scripted_until_closed(fd);
    } else if (!strstr(body, "\"id\"")) {
        scripted_send_text(fd, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n");
    } else if (strstr(body, "\"tools/call\"") && strstr(body, "\"hang\"")) {
        /* The stream opens and nothing more comes until the client goes. */
        pthread_mutex_lock(&s->lock);
        s->pending_call = scripted_request_id(body);
        pthread_mutex_unlock(&s->lock);
        begin_events(fd);
        scripted_until_closed(fd);
    } else if (strstr(body, "\"tools/call\"") && s->cut_chunked) {
        /* A chunked stream whose priming event arrives, and then the
         * connection drops before the last chunk: a network failure. */
        pthread_mutex_lock(&s->lock);
        s->pending_call = scripted_request_id(body);
        s->cut_ms = now_ms();
        pthread_mutex_unlock(&s->lock);
        scripted_send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        static const char priming[] = "id: d1\nretry: 50\ndata: \n\n";
        char chunk[64];
        snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", sizeof priming - 1, priming);
        scripted_send_text(fd, chunk);
    } else if (strstr(body, "\"tools/call\"")) {
        /* A priming event with an ID and a retry delay, then the stream
         * ends without the response. */
        begin_events(fd);
        char priming[64];
        snprintf(priming, sizeof priming, "id: e1\nretry: %lld\ndata: \n\n",
                 (long long)s->retry_ms);
        scripted_send_text(fd, priming);
        pthread_mutex_lock(&s->lock);
        s->pending_call = scripted_request_id(body);
        s->cut_ms = now_ms();
        pthread_mutex_unlock(&s->lock);
    } else {
        scripted_respond_json(fd, 404, NULL, "");
    }
}

/* The script: GET for the server's stream and resumptions, POST for
 * the messages. */
static void serve(void *owner, int fd, const char *req, const char *body)
{
    server_t *s = owner;
    if (strncmp(req, "GET", 3) == 0)
        serve_get(s, fd, req);
    else if (strncmp(req, "POST", 4) == 0)
        serve_post(s, fd, req, body);
    else
        scripted_respond_json(fd, 405, NULL, ""); /* DELETE: sessions end with the client */
}

static void server_start(server_t *s)
{
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    scripted_http_start(&s->http, serve, s);
}

/* After the client is freed (which closes its streams). */
static void server_stop(server_t *s)
{
    scripted_http_stop(&s->http);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

/* A client that logs to `log` (NULL: nowhere). */
static mcp_client_t *connect_client_logging(server_t *s, mcp_log_fn log, void *log_user)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "streams-test", .version = "1", .era = MCP_CLIENT_ERA_LEGACY,
        .timeout_ms = 10000, .log = log, .log_user = log_user}, NULL);
    assert_non_null(c);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", s->http.port);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err), MCP_OK);
    return c;
}

static mcp_client_t *connect_client(server_t *s)
{
    return connect_client_logging(s, NULL, NULL);
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

/* Calls `tool`, which must succeed with the text "resumed" (the answer
 * the server gives on a resumed stream). */
static void expect_resumed(mcp_client_t *c, const char *tool)
{
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, tool, NULL, NULL, &result, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result, "content"), 0), "text")),
                        "resumed");
    json_decref(result);
}

static void test_connect_waits_for_the_get_stream(void **state)
{
    (void)state;
    static server_t s; /* static: its threads may outlive a failed assertion */
    s = (server_t){.get_delay_ms = 300};
    server_start(&s);
    int64_t start = now_ms();
    mcp_client_t *c = connect_client(&s);
    pthread_mutex_lock(&s.lock);
    bool open = s.get_open;
    pthread_mutex_unlock(&s.lock);
    assert_true(open);
    assert_true(now_ms() - start >= s.get_delay_ms);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_resume_after_the_retry_delay(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.retry_ms = 400};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    expect_resumed(c, "cut");
    pthread_mutex_lock(&s.lock);
    char last_event_id[64];
    snprintf(last_event_id, sizeof last_event_id, "%s", s.last_event_id);
    int64_t paused = s.resumed_ms - s.cut_ms;
    pthread_mutex_unlock(&s.lock);
    assert_string_equal(last_event_id, "e1");
    assert_true(paused >= s.retry_ms);
    mcp_client_free(c);
    server_stop(&s);
}

/* The server received notifications/cancelled for its pending call, with
 * the version header. The notice goes out without the caller waiting for
 * its 202, so it may come a little after the call returned. */
static void expect_cancelled(server_t *s)
{
    long cancelled = 0;
    for (int64_t until = now_ms() + 10000; now_ms() < until; sleep_ms(10)) {
        pthread_mutex_lock(&s->lock);
        cancelled = s->cancelled_id;
        pthread_mutex_unlock(&s->lock);
        if (cancelled)
            break;
    }
    pthread_mutex_lock(&s->lock);
    assert_int_equal(cancelled, s->pending_call);
    assert_true(s->cancel_versioned);
    pthread_mutex_unlock(&s->lock);
}

static void test_timeout_before_the_retry_delay(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.retry_ms = 5000};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    json_t *result = NULL;
    mcp_error_t err = {0};
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "cut", NULL,
                                          &(mcp_request_options_t){.timeout_ms = 300}, &result,
                                          &err),
                     MCP_ETIMEDOUT);
    assert_null(result);
    int64_t took = now_ms() - start;
    assert_true(took >= 300 && took < s.retry_ms);
    pthread_mutex_lock(&s.lock);
    int64_t resumed = s.resumed_ms;
    pthread_mutex_unlock(&s.lock);
    assert_int_equal(resumed, 0);

    expect_cancelled(&s);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_polling(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.retry_ms = 20, .polls = 5};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    expect_resumed(c, "poll");
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.resumptions, 6);
    assert_string_equal(s.last_event_id, "p5"); /* each from the newest event */
    pthread_mutex_unlock(&s.lock);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_resume_after_a_network_failure(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.cut_chunked = true};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    expect_resumed(c, "drop");
    pthread_mutex_lock(&s.lock);
    assert_string_equal(s.last_event_id, "d1");
    pthread_mutex_unlock(&s.lock);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_resumptions_without_progress(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.retry_ms = 20, .stale = true};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "stale", NULL,
                                          &(mcp_request_options_t){.timeout_ms = -1}, &result,
                                          &err),
                     MCP_ECLOSED);
    assert_null(result);
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.resumptions, 3);
    assert_string_equal(s.last_event_id, "e1"); /* always from the last event */
    pthread_mutex_unlock(&s.lock);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_timeout_with_the_stream_open(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){0};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "hang", NULL,
                                          &(mcp_request_options_t){.timeout_ms = 300}, &result,
                                          &err),
                     MCP_ETIMEDOUT);
    assert_null(result);
    expect_cancelled(&s);
    mcp_client_free(c);
    server_stop(&s);
}

/* The delay the client said it waits before resuming a stream or
 * opening one again (-1 until it said one). A resumption also cancels
 * `cancel`, so that the call ends instead of waiting. */
typedef struct delay_log {
    pthread_mutex_t lock;
    long long resume_ms, reopen_ms;
    mcp_cancel_t *cancel;
} delay_log_t;

static void on_log(void *user, mcp_log_level_t level, const char *msg)
{
    (void)level;
    delay_log_t *d = user;
    const char *resume = strstr(msg, "resuming after event e1 in ");
    const char *reopen = strstr(msg, "opening it again in ");
    pthread_mutex_lock(&d->lock);
    if (resume)
        d->resume_ms = strtoll(resume + strlen("resuming after event e1 in "), NULL, 10);
    if (reopen)
        d->reopen_ms = strtoll(reopen + strlen("opening it again in "), NULL, 10);
    pthread_mutex_unlock(&d->lock);
    if (resume)
        mcp_cancel_trigger(d->cancel);
}

#define THOUSAND_HOURS_MS (1000LL * 3600 * 1000)

static void test_retry_capped_before_resuming(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.retry_ms = THOUSAND_HOURS_MS};
    server_start(&s);
    static delay_log_t d;
    d = (delay_log_t){PTHREAD_MUTEX_INITIALIZER, -1, -1, mcp_cancel_new()};
    mcp_client_t *c = connect_client_logging(&s, on_log, &d);
    json_t *result = NULL;
    mcp_error_t err = {0};
    /* No timeout: only the cap bounds the pause. */
    assert_int_equal(mcp_client_call_tool(c, "cut", NULL,
                                          &(mcp_request_options_t){.timeout_ms = -1,
                                                                   .cancel = d.cancel},
                                          &result, &err),
                     MCP_ECANCELED);
    assert_null(result);
    pthread_mutex_lock(&d.lock);
    long long resume_ms = d.resume_ms;
    pthread_mutex_unlock(&d.lock);
    assert_int_equal(resume_ms, CLIENT_MAX_RETRY_MS);
    mcp_client_free(c);
    mcp_cancel_free(d.cancel);
    server_stop(&s);
}

static void test_retry_capped_before_reopening(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.get_retry_ms = THOUSAND_HOURS_MS};
    server_start(&s);
    static delay_log_t d;
    d = (delay_log_t){PTHREAD_MUTEX_INITIALIZER, -1, -1, NULL};
    mcp_client_t *c = connect_client_logging(&s, on_log, &d);
    long long reopen_ms = -1;
    for (int64_t until = now_ms() + 10000; reopen_ms < 0 && now_ms() < until; sleep_ms(10)) {
        pthread_mutex_lock(&d.lock);
        reopen_ms = d.reopen_ms;
        pthread_mutex_unlock(&d.lock);
    }
    assert_int_equal(reopen_ms, CLIENT_MAX_RETRY_MS);
    mcp_client_free(c); /* ends the wait at once */
    server_stop(&s);
}

typedef struct flood_call {
    mcp_client_t *c;
    int rc;
} flood_call_t;

static void *call_flood(void *arg)
{
    flood_call_t *f = arg;
    json_t *result = NULL;
    f->rc = mcp_client_call_tool(f->c, "flood", NULL, NULL, &result, NULL);
    json_decref(result);
    return NULL;
}

/* A server that never acknowledges notifications/initialized holds the
 * connect for the client's timeout, not for the transport's own 30 s. */
static void test_initialized_within_the_timeout(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.hold_initialized = true};
    server_start(&s);
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "streams-test", .version = "1", .era = MCP_CLIENT_ERA_LEGACY,
        .timeout_ms = 1000}, NULL);
    assert_non_null(c);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", s.http.port);
    mcp_error_t err = {0};
    int64_t start = now_ms();
    int rc = mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err);
    int64_t took = now_ms() - start;
    assert_int_equal(rc, MCP_ETIMEDOUT);
    assert_non_null(strstr(err.message, "notifications/initialized"));
    mcp_error_clear(&err);
    assert_true(took < 5000);
    mcp_client_free(c);
    server_stop(&s);
}

static void test_answers_to_a_ping_flood_wait_their_turn(void **state)
{
    (void)state;
    static server_t s;
    s = (server_t){.pings = 2 * CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT + 3};
    server_start(&s);
    mcp_client_t *c = connect_client(&s);
    flood_call_t f = {c, -1};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, call_flood, &f), 0);

    /* The server holds the answers: once the first ones are open, the
     * client has had time to send all of them if it did not wait. */
    pthread_mutex_lock(&s.lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (s.answers_open < CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT &&
           pthread_cond_timedwait(&s.cond, &s.lock, &until) == 0)
        ;
    pthread_mutex_unlock(&s.lock);
    sleep_ms(300);
    pthread_mutex_lock(&s.lock);
    int most_open = s.most_open;
    s.take_answers = true;
    pthread_cond_broadcast(&s.cond);
    pthread_mutex_unlock(&s.lock);

    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(f.rc, MCP_OK);
    assert_int_equal(most_open, CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT);
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.answers, s.pings);
    assert_int_equal(s.most_open, CLIENT_HTTP_MAX_ANSWERS_IN_FLIGHT);
    pthread_mutex_unlock(&s.lock);
    mcp_client_free(c);
    server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_waits_for_the_get_stream),
        cmocka_unit_test(test_resume_after_the_retry_delay),
        cmocka_unit_test(test_timeout_before_the_retry_delay),
        cmocka_unit_test(test_timeout_with_the_stream_open),
        cmocka_unit_test(test_polling),
        cmocka_unit_test(test_resume_after_a_network_failure),
        cmocka_unit_test(test_resumptions_without_progress),
        cmocka_unit_test(test_retry_capped_before_resuming),
        cmocka_unit_test(test_retry_capped_before_reopening),
        cmocka_unit_test(test_answers_to_a_ping_flood_wait_their_turn),
        cmocka_unit_test(test_initialized_within_the_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
