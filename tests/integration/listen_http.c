/*
 * subscriptions/listen over the built-in HTTP server (digest sections 2.10
 * and 4.3): a long-lived event stream that proxies must not buffer, SSE
 * comment keep-alives at the configured interval, a client that hangs up
 * noticed at once (its subscription freed), the listen result for every
 * stream when the server stops -- and scale: 1,000 idle streams on one
 * server, held by one client thread, each hearing one change exactly once,
 * with the server's memory per idle stream measured.
 *
 * The 1,000-stream test runs the server in a child process (this program
 * again, with --listen-server), so that the memory measured is the
 * server's alone; the child takes commands on its stdin.
 *
 * Timing: the machine may be loaded (2 cores, sanitizers), so the tests
 * wait for what must happen with a generous patience, and bound only what
 * the server promises: a client that hangs up is noticed within a second
 * or so, not at the next keep-alive.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "http_client.h"
#include "mcp/mcp.h"
#include "protocol/sse.h"
#include "schema_check.h"
#include "test_clock.h"
#include "server/server_internal.h" /* listen_count() */

#define REVISION "2026-07-28"
#define LISTEN "subscriptions/listen"
#define ACK "notifications/subscriptions/acknowledged"
#define TOOLS_CHANGED "notifications/tools/list_changed"
#define PATIENCE_MS 20000 /* how long to wait for something that must happen */
#define PROMPT_MS 1500    /* "at once": a client that hangs up is noticed by then */
#define MANY 1000         /* streams in the scale test */
/* Memory per idle stream that fails the scale test (KiB). The target is
 * 16; sanitizers multiply what allocations cost, so only plain builds are
 * held to it. */
#define IDLE_STREAM_KIB_MAX 24

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

static const char *const LISTEN_HEADERS[] = {
    "Content-Type: application/json", "Accept: application/json, text/event-stream",
    "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: subscriptions/listen", NULL};

/* A listen request with the id `id` (borrowed) asking for tool changes. */
static char *listen_text(const json_t *id)
{
    json_t *msg = json_pack(
        "{s:s, s:O, s:s, s:{s:{s:b}, s:{s:s, s:{s:s, s:s}, s:{}}}}", "jsonrpc", "2.0", "id", id,
        "method", LISTEN, "params", "notifications", "toolsListChanged", 1, "_meta",
        MCP_META_PROTOCOL_VERSION, REVISION, MCP_META_CLIENT_INFO, "name", "listen-test",
        "version", "1", MCP_META_CLIENT_CAPABILITIES);
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    return text;
}

/* Checks one message of the stream `id`: valid, and tagged with the id. */
static void expect_tagged(const json_t *msg, const json_t *id, const char *method)
{
    MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
    assert_string_equal(json_string_value(json_object_get(msg, "method")), method);
    const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    const json_t *tag = json_object_get(meta, MCP_META_SUBSCRIPTION_ID);
    assert_non_null(tag);
    assert_int_equal(json_typeof(tag), json_typeof(id));
    assert_true(json_equal(tag, id));
}

/* The listen result ending the stream `id` gracefully. */
static void expect_listen_result(const json_t *msg, const json_t *id)
{
    MCP_ASSERT_SCHEMA_VALID(msg, LISTEN, REVISION);
    assert_true(json_equal(json_object_get(msg, "id"), id));
    const json_t *result = json_object_get(msg, "result");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    const json_t *tag = json_object_get(json_object_get(result, "_meta"), MCP_META_SUBSCRIPTION_ID);
    assert_non_null(tag);
    assert_int_equal(json_typeof(tag), json_typeof(id));
    assert_true(json_equal(tag, id));
}

static int tool_fn(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "ok");
}

/* ------------------------------------------------------------------------
 * One server in this process
 * ------------------------------------------------------------------------ */

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    char base[64];
} fixture_t;

/* A server with the given keep-alive interval and request timeouts (0:
 * the defaults). */
static fixture_t *start_with(int64_t keepalive_ms, int64_t request_timeout_ms,
                             int64_t max_request_timeout_ms)
{
    fixture_t *f = calloc(1, sizeof *f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "listen-http", .version = "1"}, &err);
    assert_non_null(f->srv);
    assert_int_equal(
        mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "echo", .handler = tool_fn}, &err),
        MCP_OK);
    mcp_http_options_t opts = {.endpoint = {.keepalive_ms = keepalive_ms,
                                            .request_timeout_ms = request_timeout_ms,
                                            .max_request_timeout_ms = max_request_timeout_ms}};
    assert_int_equal(mcp_http_server_start(f->srv, &opts, &f->http, &err), MCP_OK);
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%u",
             (unsigned)mcp_http_server_port(f->http));
    return f;
}

static fixture_t *start(int64_t keepalive_ms)
{
    return start_with(keepalive_ms, 0, 0);
}

static void stop(fixture_t *f)
{
    if (f->http)
        mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
}

/* Waits until the server holds `want` streams; the time it took, or -1. */
static int64_t wait_streams(mcp_server_t *srv, size_t want)
{
    int64_t start = now_ms();
    while (listen_count(srv) != want) {
        if (now_ms() - start > PATIENCE_MS)
            return -1;
        sleep_ms(2);
    }
    return now_ms() - start;
}

/* A client holding one listen stream on its own thread (http_call blocks
 * for the stream's life). It watches the bytes as they arrive. */
typedef struct listener {
    pthread_t thread;
    const char *base;
    json_t *id;
    /* When the client hangs up: after the ack, or after `comments` SSE
     * comment lines; 0/0: never (the server ends the stream). */
    bool hang_up_after_ack;
    int hang_up_after_comments;

    pthread_mutex_t lock;
    char *seen; /* every body byte so far */
    size_t seen_len;
    bool acked;
    int comments;
    int64_t acked_at, comment_at[4];
    http_response_t resp;
} listener_t;

/* Counts SSE comment lines (":" at the start of a line) in the bytes. */
static int count_comments(const char *bytes, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += bytes[i] == ':' && (i == 0 || bytes[i - 1] == '\n');
    return n;
}

static bool listener_on_body(void *user, const char *data, size_t len)
{
    listener_t *l = user;
    pthread_mutex_lock(&l->lock);
    char *grown = realloc(l->seen, l->seen_len + len + 1);
    if (!grown)
        abort(); /* a curl thread: no cmocka here */
    memcpy(grown + l->seen_len, data, len);
    l->seen = grown;
    l->seen_len += len;
    l->seen[l->seen_len] = '\0';
    if (!l->acked && strstr(l->seen, ACK)) {
        l->acked = true;
        l->acked_at = now_ms();
    }
    int comments = count_comments(l->seen, l->seen_len);
    for (int i = l->comments; i < comments && i < 4; i++)
        l->comment_at[i] = now_ms();
    l->comments = comments;
    bool go_on = !(l->hang_up_after_ack && l->acked) &&
                 !(l->hang_up_after_comments && l->comments >= l->hang_up_after_comments);
    pthread_mutex_unlock(&l->lock);
    return go_on;
}

static void *listener_main(void *arg)
{
    listener_t *l = arg;
    char *body = listen_text(l->id);
    http_call(&(http_request_t){.base = l->base, .headers = LISTEN_HEADERS, .body = body,
                                .timeout_ms = 2 * PATIENCE_MS, .on_body = listener_on_body,
                                .user = l},
              &l->resp);
    free(body);
    return NULL;
}

static void listener_start(listener_t *l, const char *base, json_t *id_new)
{
    l->base = base;
    l->id = id_new;
    pthread_mutex_init(&l->lock, NULL);
    assert_int_equal(pthread_create(&l->thread, NULL, listener_main, l), 0);
}

static bool listener_acked(listener_t *l)
{
    pthread_mutex_lock(&l->lock);
    bool acked = l->acked;
    pthread_mutex_unlock(&l->lock);
    return acked;
}

static void listener_wait_ack(listener_t *l)
{
    for (int64_t start = now_ms(); !listener_acked(l); sleep_ms(2))
        if (now_ms() - start > PATIENCE_MS)
            fail_msg("no acknowledgement within %d ms", PATIENCE_MS);
}

static void listener_join(listener_t *l)
{
    pthread_join(l->thread, NULL);
}

static void listener_cleanup(listener_t *l)
{
    http_response_free(&l->resp);
    free(l->seen);
    json_decref(l->id);
    pthread_mutex_destroy(&l->lock);
}

/* ------------------------------------------------------------------------
 * The stream and its keep-alives
 * ------------------------------------------------------------------------ */

/* An event stream proxies must not buffer; after the acknowledgement,
 * comment lines at the keep-alive interval, and events in between. The
 * request timeouts do not apply: the stream outlives them. */
static void test_stream_and_keepalives(void **state)
{
    enum { KEEPALIVE_MS = 150 };
    fixture_t *f = start_with(KEEPALIVE_MS, 40, 80);
    listener_t l = {.hang_up_after_comments = 3};
    int64_t opened_at = now_ms();
    listener_start(&l, f->base, json_integer(7));
    listener_wait_ack(&l);
    /* An event does not end the stream, and restarts the quiet period. */
    assert_int_equal(
        mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "more", .handler = tool_fn}, NULL),
        MCP_OK);
    listener_join(&l);
    /* The client hung up after the third comment. */
    assert_int_equal(l.resp.status, 200);
    assert_int_equal(l.resp.curl_code, CURLE_WRITE_ERROR);
    assert_true(http_header_is(&l.resp, "Content-Type", "text/event-stream"));
    assert_true(http_header_is(&l.resp, "X-Accel-Buffering", "no"));
    assert_true(http_header_is(&l.resp, "Cache-Control", "no-cache"));
    /* The comments came after the acknowledgement, each once the stream
     * had been quiet for the interval: the third cannot arrive before
     * three intervals have passed since the stream was asked for. (Late is
     * possible on a loaded machine; early would be wrong.) */
    assert_int_equal(l.comments, 3);
    const char *first_comment = strstr(l.seen, "\n:");
    assert_non_null(first_comment);
    assert_true(strstr(l.seen, ACK) < first_comment);
    for (int i = 1; i < 3; i++)
        print_message("keep-alive %d arrived %lld ms after the previous one\n", i,
                      (long long)(l.comment_at[i] - l.comment_at[i - 1]));
    assert_true(l.comment_at[2] - opened_at >= 3 * KEEPALIVE_MS);
    /* Between the comments, exactly the events of the stream. */
    http_response_t copy = l.resp;
    copy.body = l.seen;
    copy.body_len = l.seen_len;
    json_t *msgs = mcp_messages(&copy);
    assert_non_null(msgs);
    assert_int_equal(json_array_size(msgs), 2);
    expect_tagged(json_array_get(msgs, 0), l.id, ACK);
    expect_tagged(json_array_get(msgs, 1), l.id, TOOLS_CHANGED);
    json_decref(msgs);
    /* The hang-up freed the subscription. */
    assert_true(wait_streams(f->srv, 0) >= 0);
    listener_cleanup(&l);
    stop(f);
}

/* A client that hangs up is noticed at once (long before the next
 * keep-alive), and its subscription is freed; the others go on. */
static void test_client_gone(void **state)
{
    fixture_t *f = start(60000);
    listener_t stays = {0}, leaves = {.hang_up_after_ack = true};
    listener_start(&stays, f->base, json_string("stays"));
    listener_wait_ack(&stays);
    listener_start(&leaves, f->base, json_string("leaves"));
    listener_join(&leaves);
    int64_t left_at = now_ms();
    assert_int_equal(leaves.resp.curl_code, CURLE_WRITE_ERROR);
    int64_t took = wait_streams(f->srv, 1);
    print_message("the subscription of a client that left was freed after %lld ms\n",
                  (long long)took);
    assert_true(took >= 0);
    assert_true(now_ms() - left_at < PROMPT_MS);

    /* The stream that stayed still hears events. */
    assert_int_equal(
        mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "more", .handler = tool_fn}, NULL),
        MCP_OK);
    for (int64_t start = now_ms(); now_ms() - start < PATIENCE_MS; sleep_ms(2)) {
        pthread_mutex_lock(&stays.lock);
        bool heard = stays.seen && strstr(stays.seen, TOOLS_CHANGED);
        pthread_mutex_unlock(&stays.lock);
        if (heard)
            break;
    }
    mcp_http_server_stop(f->http);
    f->http = NULL;
    listener_join(&stays);
    json_t *msgs = mcp_messages(&stays.resp);
    assert_non_null(msgs);
    assert_int_equal(json_array_size(msgs), 3);
    expect_tagged(json_array_get(msgs, 0), stays.id, ACK);
    expect_tagged(json_array_get(msgs, 1), stays.id, TOOLS_CHANGED);
    expect_listen_result(json_array_get(msgs, 2), stays.id);
    json_decref(msgs);
    listener_cleanup(&stays);
    listener_cleanup(&leaves);
    stop(f);
}

/* Stopping the server ends every stream gracefully: the listen result,
 * then the end of the stream, for integer and string ids alike. */
static void test_stop_ends_streams(void **state)
{
    fixture_t *f = start(0);
    listener_t l[3] = {{0}};
    listener_start(&l[0], f->base, json_integer(1));
    listener_start(&l[1], f->base, json_string("two"));
    listener_start(&l[2], f->base, json_integer(3));
    for (int i = 0; i < 3; i++)
        listener_wait_ack(&l[i]);
    assert_int_equal(listen_count(f->srv), 3);
    int64_t t0 = now_ms();
    mcp_http_server_stop(f->http);
    f->http = NULL;
    int64_t took = now_ms() - t0;
    print_message("stop with 3 streams took %lld ms\n", (long long)took);
    /* The streams ended at once: nothing waited for the grace period. */
    assert_true(took < 5000);
    assert_int_equal(listen_count(f->srv), 0);
    for (int i = 0; i < 3; i++) {
        listener_join(&l[i]);
        assert_int_equal(l[i].resp.curl_code, CURLE_OK); /* a complete response */
        assert_int_equal(l[i].resp.status, 200);
        json_t *msgs = mcp_messages(&l[i].resp);
        assert_non_null(msgs);
        assert_int_equal(json_array_size(msgs), 2);
        expect_tagged(json_array_get(msgs, 0), l[i].id, ACK);
        expect_listen_result(json_array_get(msgs, 1), l[i].id);
        json_decref(msgs);
        listener_cleanup(&l[i]);
    }
    stop(f);
}

/* ------------------------------------------------------------------------
 * 1,000 streams: the server in a child process
 * ------------------------------------------------------------------------ */

/* The child: serves HTTP and obeys one-line commands on stdin, answering
 * each with one line on stdout ("grow": add a tool; "count": the open
 * streams). "quit" or EOF: stop the HTTP server (which ends the open
 * streams gracefully) and exit. */
static int serve_listen_child(void)
{
    mcp_error_t err = {0};
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "listen-many", .version = "1",
                                               .max_listen_streams = MANY}, &err);
    if (!srv ||
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo", .handler = tool_fn}, &err) != 0)
        return 1;
    mcp_http_server_t *http;
    mcp_http_options_t opts = {.connection_limit = 2 * MANY + 64};
    if (mcp_http_server_start(srv, &opts, &http, &err) != MCP_OK) {
        fprintf(stderr, "listen child: %s\n", err.message);
        return 1;
    }
    printf("%u\n", (unsigned)mcp_http_server_port(http));
    fflush(stdout);
    char line[64];
    int grown = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (strcmp(line, "grow\n") == 0) {
            char name[32];
            snprintf(name, sizeof name, "grown%d", grown++);
            printf("%d\n",
                   mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = tool_fn},
                                       NULL));
        } else if (strcmp(line, "count\n") == 0) {
            printf("%zu\n", listen_count(srv));
        } else {
            break;
        }
        fflush(stdout);
    }
    mcp_http_server_stop(http);
    mcp_server_free(srv);
    return 0;
}

typedef struct child {
    pid_t pid;
    FILE *to, *from;
    char base[64];
} child_t;

static void child_start(child_t *c)
{
    int down[2], up[2];
    assert_int_equal(pipe2(down, O_CLOEXEC), 0);
    assert_int_equal(pipe2(up, O_CLOEXEC), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(down[0], 0);
        dup2(up[1], 1);
        execl("/proc/self/exe", "listen_http", "--listen-server", (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    c->to = fdopen(down[1], "w");
    c->from = fdopen(up[0], "r");
    assert_non_null(c->to);
    assert_non_null(c->from);
    unsigned port = 0;
    assert_int_equal(fscanf(c->from, "%u", &port), 1);
    snprintf(c->base, sizeof c->base, "http://127.0.0.1:%u", port);
}

/* Sends a command; returns the number the child answered. */
static long child_ask(child_t *c, const char *command)
{
    fprintf(c->to, "%s\n", command);
    fflush(c->to);
    long answer;
    assert_int_equal(fscanf(c->from, "%ld", &answer), 1);
    return answer;
}

/* The child's resident set in KiB. */
static long child_rss_kib(const child_t *c)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)c->pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    assert_true(kib > 0);
    return kib;
}

/* Asks the child to stop its HTTP server and exit. */
static void child_quit(child_t *c)
{
    fprintf(c->to, "quit\n");
    fclose(c->to);
    c->to = NULL;
}

static void child_wait(child_t *c)
{
    if (c->to)
        child_quit(c);
    fclose(c->from);
    int status = 0;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    /* A clean exit: no sanitizer report, no leak, in the server. */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* One stream of the many, driven by the libcurl multi interface. */
typedef struct stream {
    CURL *easy;
    json_t *id;
    char *body;
    mcp_sse_decoder_t dec;
    int acks, changes, results, others;
    bool finished;   /* the transfer is over */
    CURLcode result; /* ... and how */
    char bad[SCHEMA_CHECK_REASON_MAX + 64]; /* the first thing wrong, or "" */
} stream_t;

static int stream_on_event(void *user, const mcp_sse_event_t *event)
{
    stream_t *s = user;
    json_t *msg = json_loadb(event->data, event->data_len, 0, NULL);
    char reason[SCHEMA_CHECK_REASON_MAX] = "";
    bool response = json_object_get(msg, "id") != NULL;
    const char *method = json_string_value(json_object_get(msg, "method"));
    /* Notifications carry the tag in params._meta, the result in its own. */
    const json_t *holder = json_object_get(msg, response ? "result" : "params");
    const json_t *tag =
        json_object_get(json_object_get(holder, "_meta"), MCP_META_SUBSCRIPTION_ID);
    if (!msg || schema_check_server_message(msg, response ? LISTEN : NULL, REVISION, reason,
                                            sizeof reason) != 0)
        snprintf(s->bad, sizeof s->bad, "invalid message: %s", reason);
    else if (!tag || !json_equal(tag, s->id))
        snprintf(s->bad, sizeof s->bad, "message not tagged with the stream's id");
    else if (response && json_equal(json_object_get(msg, "id"), s->id) && s->acks == 1)
        s->results++;
    else if (method && strcmp(method, ACK) == 0 && s->acks + s->changes + s->others == 0)
        s->acks++;
    else if (method && strcmp(method, TOOLS_CHANGED) == 0 && s->results == 0)
        s->changes++;
    else
        s->others++;
    json_decref(msg);
    return 0;
}

static size_t stream_on_data(char *data, size_t size, size_t n, void *user)
{
    stream_t *s = user;
    mcp_sse_decoder_feed(&s->dec, data, size * n);
    return size * n;
}

static void stream_add(CURLM *multi, stream_t *s, const char *url, struct curl_slist *headers,
                       int id)
{
    s->id = json_integer(id);
    s->body = listen_text(s->id);
    mcp_sse_decoder_init(&s->dec, 65536, stream_on_event, s);
    s->easy = curl_easy_init();
    assert_non_null(s->easy);
    curl_easy_setopt(s->easy, CURLOPT_URL, url);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, stream_on_data);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    assert_int_equal(curl_multi_add_handle(multi, s->easy), CURLM_OK);
}

static void stream_remove(CURLM *multi, stream_t *s)
{
    curl_multi_remove_handle(multi, s->easy);
    curl_easy_cleanup(s->easy); /* closes the connection */
    mcp_sse_decoder_free(&s->dec);
    free(s->body);
    json_decref(s->id);
}

/* Moves bytes until every stream has `acks` acknowledgements and
 * `changes` change events, or the patience runs out. No stream may end:
 * listen streams stay open. */
static void pump_until(CURLM *multi, stream_t *streams, int n, int acks, int changes)
{
    int64_t start = now_ms();
    for (;;) {
        int running, done = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left)))
            if (m->msg == CURLMSG_DONE)
                fail_msg("a listen stream ended: %s", curl_easy_strerror(m->data.result));
        for (int i = 0; i < n; i++) {
            if (streams[i].bad[0])
                fail_msg("stream %d: %s", i, streams[i].bad);
            done += streams[i].acks >= acks && streams[i].changes >= changes;
        }
        if (done == n)
            return;
        if (now_ms() - start > 3 * PATIENCE_MS)
            fail_msg("after %d ms only %d of %d streams are there", 3 * PATIENCE_MS, done, n);
        curl_multi_poll(multi, NULL, 0, 50, NULL);
    }
}

/* Moves bytes until the `n` transfers of `streams` are over. */
static void pump_until_done(CURLM *multi, stream_t *streams, int n)
{
    int64_t start = now_ms();
    for (int done = 0; done < n;) {
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            stream_t *s = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            if (m->msg != CURLMSG_DONE || s < streams || s >= streams + n)
                continue;
            s->finished = true;
            s->result = m->data.result;
            done++;
        }
        if (now_ms() - start > 3 * PATIENCE_MS)
            fail_msg("after %d ms only %d of %d streams ended", 3 * PATIENCE_MS, done, n);
        curl_multi_poll(multi, NULL, 0, 50, NULL);
    }
}

/* Moves bytes for `ms` milliseconds (to see that nothing more comes). */
static void pump_for(CURLM *multi, int ms)
{
    for (int64_t start = now_ms(); now_ms() - start < ms;) {
        int running;
        curl_multi_perform(multi, &running);
        curl_multi_poll(multi, NULL, 0, 20, NULL);
    }
}

/* Waits until the child holds `want` streams; the time it took. */
static int64_t child_wait_streams(child_t *c, long want)
{
    int64_t start = now_ms();
    while (child_ask(c, "count") != want) {
        if (now_ms() - start > PATIENCE_MS)
            fail_msg("the server still holds %ld streams", child_ask(c, "count"));
        sleep_ms(5);
    }
    return now_ms() - start;
}

static void test_thousand_streams(void **state)
{
    /* A thousand connections on each side: raise the descriptor limit. */
    struct rlimit nofile;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    nofile.rlim_cur = nofile.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &nofile), 0);
    if (nofile.rlim_cur < 2 * MANY + 200)
        skip();

    child_t c;
    child_start(&c);
    char url[96];
    snprintf(url, sizeof url, "%s/mcp", c.base);
    struct curl_slist *headers = curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; LISTEN_HEADERS[i]; i++)
        headers = curl_slist_append(headers, LISTEN_HEADERS[i]);
    CURLM *multi = curl_multi_init();
    assert_non_null(multi);
    stream_t *streams = calloc(MANY, sizeof *streams);
    assert_non_null(streams);

    /* Warm up (threads, pools, first allocations), then measure idle. */
    for (int i = 0; i < 8; i++)
        stream_add(multi, &streams[i], url, headers, i);
    pump_until(multi, streams, 8, 1, 0);
    for (int i = 0; i < 8; i++)
        stream_remove(multi, &streams[i]);
    memset(streams, 0, 8 * sizeof *streams);
    child_wait_streams(&c, 0);
    sleep_ms(100);
    long rss_before = child_rss_kib(&c);

    int64_t t0 = now_ms();
    for (int i = 0; i < MANY; i++)
        stream_add(multi, &streams[i], url, headers, i);
    pump_until(multi, streams, MANY, 1, 0);
    int64_t opened_ms = now_ms() - t0;
    assert_int_equal(child_ask(&c, "count"), MANY);
    sleep_ms(100);
    long rss_after = child_rss_kib(&c);
    print_message("%d listen streams opened and acknowledged in %lld ms\n", MANY,
                  (long long)opened_ms);
    double per_stream = (double)(rss_after - rss_before) / MANY;
    print_message("server memory per idle listen stream: %.1f KiB (RSS %ld KiB -> %ld KiB)\n",
                  per_stream, rss_before, rss_after);
#ifndef UNDER_SANITIZER
    if (per_stream > IDLE_STREAM_KIB_MAX)
        fail_msg("an idle listen stream costs %.1f KiB (at most %d expected)", per_stream,
                 IDLE_STREAM_KIB_MAX);
#endif

    /* One change: every stream hears it exactly once. */
    t0 = now_ms();
    assert_int_equal(child_ask(&c, "grow"), MCP_OK);
    pump_until(multi, streams, MANY, 1, 1);
    print_message("one change reached %d streams in %lld ms\n", MANY,
                  (long long)(now_ms() - t0));
    pump_for(multi, 200);
    for (int i = 0; i < MANY; i++) {
        if (streams[i].acks != 1 || streams[i].changes != 1 || streams[i].others != 0)
            fail_msg("stream %d: %d acks, %d changes, %d other messages", i, streams[i].acks,
                     streams[i].changes, streams[i].others);
    }

    /* Half the clients leave: their subscriptions are freed. */
    enum { LEAVING = MANY / 2 };
    t0 = now_ms();
    for (int i = 0; i < LEAVING; i++)
        stream_remove(multi, &streams[i]);
    child_wait_streams(&c, MANY - LEAVING);
    print_message("%d subscriptions freed within %lld ms after their clients left\n", LEAVING,
                  (long long)(now_ms() - t0));

    /* The server stops with the others open: each gets its listen result,
     * then the end of its stream. */
    t0 = now_ms();
    child_quit(&c);
    pump_until_done(multi, streams + LEAVING, MANY - LEAVING);
    print_message("%d streams ended gracefully %lld ms after the server was told to stop\n",
                  MANY - LEAVING, (long long)(now_ms() - t0));
    for (int i = LEAVING; i < MANY; i++) {
        stream_t *s = &streams[i];
        if (s->bad[0])
            fail_msg("stream %d: %s", i, s->bad);
        if (s->result != CURLE_OK || s->results != 1 || s->others != 0)
            fail_msg("stream %d ended with %s, %d results, %d other messages", i,
                     curl_easy_strerror(s->result), s->results, s->others);
        stream_remove(multi, s);
    }
    child_wait(&c);

    free(streams);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--listen-server") == 0)
        return serve_listen_child();
    http_client_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_and_keepalives),
        cmocka_unit_test(test_client_gone),
        cmocka_unit_test(test_stop_ends_streams),
        cmocka_unit_test(test_thousand_streams),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
