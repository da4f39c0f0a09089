/*
 * The built-in HTTP/1.1 engine (src/transport/http_server_epoll.c) on the
 * wire: raw TCP sockets write exact bytes and read exact answers, so that
 * what a libcurl client smooths over is seen here -- keep-alive and
 * pipelining, heads and bodies cut anywhere, the chunked coding, Expect:
 * 100-continue, HTTP/1.0, HEAD, every framing error, body limits, clients
 * that hang up or stall (or pipeline and never read), the connection
 * limit, running out of descriptors, stopping with connections open, and
 * a reader too slow for a large answer.
 *
 * The endpoint's MCP rules are test_http_server.c's business; here they
 * only provide answers to frame. Every JSON-RPC answer is still checked
 * against the 2026-07-28 schema.
 *
 * Timing: bounds are what the engine promises (an idle connection closes
 * within a second of its timeout, a hang-up cancels at once); waits for
 * what must happen are generous, so a loaded machine slows the tests down
 * rather than failing them.
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
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "http_client.h"
#include "mcp/mcp.h"
#include "schema_check.h"
#include "test_clock.h"
#include "thread_gone.h"

#define REVISION "2026-07-28"
#define PATIENCE_MS 10000 /* how long to wait for something that must happen */
#define QUIET_MS 200      /* how long "nothing arrives" is watched */
/* A close the server owes at once (after an answer that says so, at the
 * connection limit, on stop): well under its 2 s linger, which would
 * otherwise end the connection anyway. */
#define PROMPT_MS 1000
/* The large answer: more than a loopback socket buffers (tcp_wmem allows
 * 4 MiB), so that it goes out in partial sends, EPOLLOUT after EPOLLOUT. */
#define BIG_SIZE (6 * 1024 * 1024)
#define BIG_URI "big://data"

/* ------------------------------------------------------------------------
 * The server under test
 * ------------------------------------------------------------------------ */

/* Calls of "echo" and "inline" so far, and the thread of the last. */
static atomic_int echo_calls;
static _Atomic pid_t echo_thread;

static int echo(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&echo_calls, 1);
    atomic_store(&echo_thread, gettid());
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

/* "block": echoes once the test releases it; reports its start and a
 * cancellation (and when it saw it). */
static atomic_int block_started, block_release, block_cancelled;
static _Atomic int64_t block_cancelled_at;

static _Atomic pid_t block_thread;

static int block(mcp_call_t *call, void *user)
{
    atomic_store(&block_thread, gettid());
    atomic_fetch_add(&block_started, 1);
    for (int64_t start = now_ms(); !atomic_load(&block_release);) {
        if (mcp_call_sleep(call, 2) != MCP_OK) {
            atomic_store(&block_cancelled_at, now_ms());
            atomic_fetch_add(&block_cancelled, 1);
            return MCP_ECANCELED;
        }
        if (now_ms() - start > 3 * PATIENCE_MS)
            return mcp_call_tool_error(call, "never released");
    }
    return echo(call, user);
}

/* "compute": keeps its CPU busy, never blocking, until released. */
static atomic_int compute_started, compute_release, compute_done;

static int compute(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&compute_started, 1);
    for (int64_t start = now_ms(); !atomic_load_explicit(&compute_release, memory_order_relaxed);)
        if (now_ms() - start > 3 * PATIENCE_MS)
            break;
    atomic_fetch_add(&compute_done, 1);
    return echo(call, user);
}

/* "flood": progress notifications of 32 KiB each, as fast as they go or
 * one every `pause_ms`, until one cannot be sent (the client is gone or
 * cut off); reports when it stopped. */
static atomic_int flood_stopped, flood_sent;
static _Atomic int64_t flood_stopped_at;

static int flood(mcp_call_t *call, void *user)
{
    static char message[32 * 1024];
    memset(message, 'x', sizeof message - 1);
    int64_t pause_ms = 0;
    mcp_call_arg_int(call, "pause_ms", &pause_ms);
    int rc = MCP_OK;
    for (double i = 1; rc == MCP_OK && i < 100000; i++) {
        rc = mcp_call_progress(call, i, -1, message);
        if (rc == MCP_OK)
            atomic_fetch_add(&flood_sent, 1);
        if (rc == MCP_OK && pause_ms > 0)
            rc = mcp_call_sleep(call, pause_ms);
    }
    atomic_store(&flood_stopped_at, now_ms());
    atomic_fetch_add(&flood_stopped, 1);
    return rc == MCP_OK ? echo(call, user) : rc;
}

/* BIG_URI: BIG_SIZE bytes of text that JSON carries unescaped. */
static char *big_text;

static int read_big(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", big_text);
}

static bool wait_count(atomic_int *counter, int want)
{
    for (int64_t start = now_ms(); now_ms() - start < PATIENCE_MS; sleep_ms(2))
        if (atomic_load(counter) >= want)
            return true;
    return atomic_load(counter) >= want;
}

/* The server's log lines that say it cannot accept, and that it can again. */
static atomic_int accept_failed_logs, accept_again_logs;

static void count_log(void *user, mcp_log_level_t level, const char *msg)
{
    (void)user;
    if (strstr(msg, "cannot accept"))
        atomic_fetch_add(&accept_failed_logs, 1);
    if (strstr(msg, "accepting connections again"))
        atomic_fetch_add(&accept_again_logs, 1);
    (void)level;
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    uint16_t port;
} fixture_t;

/* A server with the tools "echo" (a default handler), "inline"
 * (run_inline), "block", "flood" and "compute", and the resource BIG_URI,
 * served by the built-in engine. */
static fixture_t *start(mcp_http_options_t opts)
{
    atomic_store(&block_started, 0);
    atomic_store(&block_release, 0);
    atomic_store(&block_cancelled, 0);
    atomic_store(&block_cancelled_at, 0);
    atomic_store(&compute_started, 0);
    atomic_store(&compute_release, 0);
    atomic_store(&compute_done, 0);
    atomic_store(&flood_stopped, 0);
    atomic_store(&flood_stopped_at, 0);
    atomic_store(&echo_calls, 0);
    atomic_store(&accept_failed_logs, 0);
    atomic_store(&accept_again_logs, 0);

    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "engine-test", .version = "1.0.0",
                                                    .log = count_log},
                            &err);
    assert_non_null(f->srv);
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}";
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "echo", .input_schema = schema, .handler = echo}, &err), MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "inline", .input_schema = schema, .handler = echo, .run_inline = true}, &err),
        MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "block", .input_schema = schema, .handler = block}, &err), MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "flood", .input_schema = schema, .handler = flood}, &err), MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "compute", .input_schema = schema, .handler = compute}, &err), MCP_OK);
    assert_int_equal(mcp_server_add_resource(f->srv, &(mcp_resource_t){
        .uri = BIG_URI, .name = "big", .mime_type = "text/plain", .handler = read_big}, &err),
        MCP_OK);
    opts.engine = MCP_HTTP_ENGINE_BUILTIN;
    assert_int_equal(mcp_http_server_start(f->srv, &opts, &f->http, &err), MCP_OK);
    f->port = mcp_http_server_port(f->http);
    assert_true(f->port != 0);
    return f;
}

static void stop(fixture_t *f)
{
    atomic_store(&block_release, 1); /* a failed test may have left one waiting */
    atomic_store(&compute_release, 1);
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
}

/* ------------------------------------------------------------------------
 * A raw client: exact bytes out, a buffered reader in
 * ------------------------------------------------------------------------ */

typedef struct client {
    int fd;
    char *buf; /* received, not yet parsed: buf[0..len) */
    size_t len, cap;
} client_t;

/* Connects to the server; `rcvbuf` > 0 shrinks the receive buffer. */
static client_t *client_open(const fixture_t *f, int rcvbuf)
{
    client_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    if (rcvbuf > 0)
        assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    /* Small writes leave as separate segments. */
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    c->cap = 64 * 1024;
    c->buf = malloc(c->cap);
    assert_non_null(c->buf);
    return c;
}

static void client_close(client_t *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c->buf);
    free(c);
}

static void client_send(client_t *c, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        data += n;
        len -= (size_t)n;
    }
}

static void client_send_str(client_t *c, const char *text)
{
    client_send(c, text, strlen(text));
}

/* Receives what comes within `ms`: the count, 0 at end of file, -1 when
 * nothing came in time. A reset fails the test: the engine lingers
 * precisely so that its answers are never destroyed by one. */
static ssize_t client_fill(client_t *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int ready = poll(&p, 1, ms);
    assert_true(ready >= 0);
    if (ready == 0)
        return -1;
    if (c->cap - c->len < 16 * 1024) {
        c->cap *= 2;
        c->buf = realloc(c->buf, c->cap);
        assert_non_null(c->buf);
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n < 0)
        fail_msg("recv: %s", strerror(errno));
    c->len += (size_t)n;
    return n;
}

/* Waits until the buffer holds `n` bytes. */
static void client_need(client_t *c, size_t n)
{
    while (c->len < n) {
        ssize_t got = client_fill(c, PATIENCE_MS);
        if (got <= 0)
            fail_msg("%s after %zu of %zu bytes", got == 0 ? "closed" : "nothing more",
                     c->len, n);
    }
}

/* The offset just past the next CRLF at or after `from`, waiting for it. */
static size_t client_line_end(client_t *c, size_t from)
{
    for (;;) {
        for (size_t i = from; i + 1 < c->len; i++)
            if (c->buf[i] == '\r' && c->buf[i + 1] == '\n')
                return i + 2;
        client_need(c, c->len + 1);
    }
}

static void client_consume(client_t *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* True when nothing arrives for `ms`, and the connection stays open. */
static bool client_quiet(client_t *c, int ms)
{
    return c->len == 0 && client_fill(c, ms) == -1;
}

/* True when the server closes the connection within `ms`, sending nothing
 * more; the time it took goes to *took_ms when not NULL. */
static bool client_closed_within(client_t *c, int ms, int64_t *took_ms)
{
    int64_t start = now_ms();
    for (;;) {
        int left = (int)(ms - (now_ms() - start));
        if (c->len > 0 || left <= 0)
            return false;
        ssize_t n = client_fill(c, left);
        if (n == 0) {
            if (took_ms)
                *took_ms = now_ms() - start;
            return true;
        }
        if (n < 0)
            return false;
    }
}

/* Reads until the server closes the connection (end of file, or a reset:
 * a socket closed with unsent data may end either way); the bytes
 * received, or -1 when it is still open after `ms`. */
static long client_drain_until_closed(client_t *c, int ms)
{
    long total = (long)c->len;
    c->len = 0;
    for (int64_t start = now_ms(); now_ms() - start < ms;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(c->fd, c->buf, c->cap, 0);
        if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
            return total;
        if (n > 0)
            total += n;
    }
    return -1;
}

typedef struct response {
    int minor; /* HTTP/1.<minor> */
    int status;
    char *head; /* the header lines, each NUL-terminated in place */
    const char *names[64], *values[64];
    size_t n_headers;
    char *body; /* NUL-terminated */
    size_t body_len;
} response_t;

static const char *header(const response_t *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcasecmp(r->names[i], name) == 0)
            return r->values[i];
    return NULL;
}

static void response_free(response_t *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static bool is_token_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Reads one response: "HTTP/1.x NNN reason", "Name: value" lines, then a
 * body framed by Content-Length or the chunked coding (without trailers,
 * which the engine never sends) -- or none, for a HEAD request (`no_body`)
 * and 1xx/204. Anything else fails the test: it is what our server sends,
 * read strictly. */
static void read_response(client_t *c, response_t *r, bool no_body)
{
    memset(r, 0, sizeof *r);
    size_t head_len = 0;
    while (head_len == 0) {
        for (size_t i = 0; i + 3 < c->len && !head_len; i++)
            if (memcmp(c->buf + i, "\r\n\r\n", 4) == 0)
                head_len = i + 4;
        if (!head_len)
            client_need(c, c->len + 1);
    }
    r->head = malloc(head_len + 1);
    assert_non_null(r->head);
    memcpy(r->head, c->buf, head_len);
    r->head[head_len] = '\0';
    client_consume(c, head_len);

    /* The status line. */
    char *line = r->head;
    char *eol = strstr(line, "\r\n");
    *eol = '\0';
    if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') ||
        line[8] != ' ' || line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9' ||
        line[11] < '0' || line[11] > '9' || line[12] != ' ' || line[13] == '\0')
        fail_msg("malformed status line \"%s\"", line);
    r->minor = line[7] - '0';
    r->status = atoi(line + 9);

    /* Header lines, "Name: value". */
    for (line = eol + 2; *line != '\r'; line = eol + 2) {
        eol = strstr(line, "\r\n");
        *eol = '\0';
        char *colon = strchr(line, ':');
        if (!colon || colon == line || colon[1] != ' ' || colon[2] == ' ')
            fail_msg("malformed header line \"%s\"", line);
        for (char *p = line; p < colon; p++)
            if (!is_token_char(*p))
                fail_msg("malformed header name in \"%s\"", line);
        *colon = '\0';
        assert_true(r->n_headers < sizeof r->names / sizeof r->names[0]);
        r->names[r->n_headers] = line;
        r->values[r->n_headers++] = colon + 2;
    }

    const char *length = header(r, "Content-Length");
    const char *coding = header(r, "Transfer-Encoding");
    assert_false(length && coding);
    if (no_body || r->status / 100 == 1 || r->status == 204) {
        r->body = calloc(1, 1);
        return;
    }
    if (coding) {
        assert_string_equal(coding, "chunked");
        size_t cap = 1024;
        r->body = malloc(cap);
        for (;;) {
            size_t end = client_line_end(c, 0);
            char *digits_end;
            unsigned long size = strtoul(c->buf, &digits_end, 16);
            assert_true(digits_end == c->buf + end - 2 && digits_end > c->buf);
            client_consume(c, end);
            if (size == 0) {
                client_need(c, 2);
                assert_memory_equal(c->buf, "\r\n", 2);
                client_consume(c, 2);
                break;
            }
            client_need(c, size + 2);
            assert_memory_equal(c->buf + size, "\r\n", 2);
            while (r->body_len + size + 1 > cap)
                cap *= 2;
            r->body = realloc(r->body, cap);
            memcpy(r->body + r->body_len, c->buf, size);
            r->body_len += size;
            client_consume(c, size + 2);
        }
        r->body[r->body_len] = '\0';
        return;
    }
    if (!length) {
        /* Delimited by the close, as HTTP/1.0 must be for a stream. */
        const char *connection = header(r, "Connection");
        if (!connection || strcasecmp(connection, "close") != 0)
            fail_msg("a %d answer with no length that does not close", r->status);
        while (client_fill(c, PATIENCE_MS) > 0)
            continue;
        r->body_len = c->len;
        r->body = malloc(r->body_len + 1);
        memcpy(r->body, c->buf, r->body_len);
        r->body[r->body_len] = '\0';
        client_consume(c, r->body_len);
        return;
    }
    char *digits_end;
    r->body_len = strtoul(length, &digits_end, 10);
    assert_true(*digits_end == '\0' && digits_end > length);
    client_need(c, r->body_len);
    r->body = malloc(r->body_len + 1);
    memcpy(r->body, c->buf, r->body_len);
    r->body[r->body_len] = '\0';
    client_consume(c, r->body_len);
}

/* Asserts an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110
 * section 5.6.7) naming the right weekday, within a minute of now. */
static void assert_imf_fixdate(const char *date)
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char shape[] = "Www, 00 Mmm 0000 00:00:00 GMT";
    assert_non_null(date);
    assert_int_equal(strlen(date), sizeof shape - 1);
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == '0')
            assert_true(date[i] >= '0' && date[i] <= '9');
        else if (shape[i] == 'W' || shape[i] == 'M')
            assert_true(date[i] >= 'A' && date[i] <= 'Z');
        else if (shape[i] == 'w' || shape[i] == 'm')
            assert_true(date[i] >= 'a' && date[i] <= 'z');
        else
            assert_int_equal(date[i], shape[i]);
    }
    struct tm tm = {0};
    const char *end = strptime(date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    assert_non_null(end);
    assert_int_equal(*end, '\0');
    time_t when = timegm(&tm);
    assert_true(llabs((long long)(when - time(NULL))) <= 60);
    struct tm check;
    gmtime_r(&when, &check);
    assert_memory_equal(date, days[check.tm_wday], 3);
}

/* ------------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------------ */

/* printf into a new malloc'd string. (Helpers that return what asprintf()
 * wrote through the address of their local made gcc 12 warn, once
 * inlined, of a pointer to that local used after its scope.) */
static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

#define MODERN_HEADERS                                                    \
    "Host: 127.0.0.1\r\n"                                                 \
    "Content-Type: application/json\r\n"                                  \
    "Accept: application/json, text/event-stream\r\n"                     \
    "MCP-Protocol-Version: 2026-07-28\r\n"

/* The body of a tools/call of `tool` with the argument text. */
static char *call_body(const char *tool, int id, const char *text)
{
    char params[256];
    snprintf(params, sizeof params, "\"name\":\"%s\",\"arguments\":{\"text\":\"%s\"}", tool,
             text);
    return mcp_text(id, "tools/call", params, NULL);
}

/* The head of that call without its blank line: the framing headers are
 * the caller's. */
static char *call_head(const char *version, const char *tool, const char *extra)
{
    char *head;
    assert_true(asprintf(&head,
                         "POST /mcp HTTP/%s\r\n" MODERN_HEADERS
                         "Mcp-Method: tools/call\r\nMcp-Name: %s\r\n%s",
                         version, tool, extra ? extra : "") > 0);
    return head;
}

/* A whole request calling `tool` with Content-Length; `extra`: more
 * header lines, each ending in CRLF. */
static char *call_request(const char *version, const char *tool, int id, const char *text,
                          const char *extra)
{
    char *body = call_body(tool, id, text);
    char *head = call_head(version, tool, extra);
    char *request;
    assert_true(asprintf(&request, "%sContent-Length: %zu\r\n\r\n%s", head, strlen(body), body) >
                0);
    free(head);
    free(body);
    return request;
}

static void send_call(client_t *c, const char *tool, int id, const char *text)
{
    char *request = call_request("1.1", tool, id, text, NULL);
    client_send_str(c, request);
    free(request);
}

/* A whole resources/read request of BIG_URI. */
static char *read_big_request(int id)
{
    char *body = mcp_text(id, "resources/read", "\"uri\":\"" BIG_URI "\"", NULL);
    char *request;
    assert_true(asprintf(&request,
                         "POST /mcp HTTP/1.1\r\n" MODERN_HEADERS
                         "Mcp-Method: resources/read\r\nMcp-Name: " BIG_URI "\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         strlen(body), body) > 0);
    free(body);
    return request;
}

/* Asserts a 200 application/json answer to tools/call `id` whose text is
 * `text`, valid against the schema. */
static void assert_call_answer(const response_t *r, int id, const char *text)
{
    assert_int_equal(r->status, 200);
    assert_non_null(header(r, "Content-Type"));
    assert_string_equal(header(r, "Content-Type"), "application/json");
    json_error_t jerr;
    json_t *msg = json_loadb(r->body, r->body_len, 0, &jerr);
    if (!msg)
        fail_msg("answer is not JSON (%s): %s", jerr.text, r->body);
    MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", REVISION);
    assert_int_equal(json_integer_value(json_object_get(msg, "id")), id);
    json_t *block0 = json_array_get(json_object_get(json_object_get(msg, "result"), "content"), 0);
    assert_non_null(json_string_value(json_object_get(block0, "text")));
    assert_string_equal(json_string_value(json_object_get(block0, "text")), text);
    json_decref(msg);
}

/* Reads the answer to call `id` and checks it, and that the connection
 * stays open after it. */
static void expect_call_answer(client_t *c, int id, const char *text)
{
    response_t r;
    read_response(c, &r, false);
    assert_int_equal(r.minor, 1);
    assert_call_answer(&r, id, text);
    assert_null(header(&r, "Connection"));
    response_free(&r);
}

static void call_ok(client_t *c, const char *tool, int id, const char *text)
{
    send_call(c, tool, id, text);
    expect_call_answer(c, id, text);
}

/* Asserts a refusal: `status`, a JSON error -32600 without id,
 * "Connection: close". */
static void assert_json_refusal(const response_t *r, int status)
{
    assert_int_equal(r->status, status);
    assert_non_null(header(r, "Content-Type"));
    assert_string_equal(header(r, "Content-Type"), "application/json");
    assert_non_null(strstr(r->body, "-32600"));
    json_t *msg = json_loadb(r->body, r->body_len, 0, NULL);
    assert_non_null(msg);
    assert_null(json_object_get(msg, "id"));
    MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
    json_decref(msg);
}

static bool has_connection_close(const response_t *r)
{
    const char *v = header(r, "Connection");
    return v && strcasecmp(v, "close") == 0;
}

/* ------------------------------------------------------------------------
 * 1. Keep-alive
 * ------------------------------------------------------------------------ */

/* Requests one after another on one connection, through the worker pool,
 * inline and without a handler: each answered HTTP/1.1 with a
 * Content-Length and an IMF-fixdate Date, the connection kept. */
static void test_keep_alive(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    static const char *const tools[] = {"echo", "inline", "echo", "inline", "echo", "echo"};
    for (int i = 0; i < 6; i++) {
        char text[32];
        snprintf(text, sizeof text, "round %d", i);
        send_call(c, tools[i], 100 + i, text);
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.minor, 1);
        assert_call_answer(&r, 100 + i, text);
        assert_non_null(header(&r, "Content-Length"));
        assert_null(header(&r, "Transfer-Encoding"));
        assert_null(header(&r, "Connection"));
        assert_imf_fixdate(header(&r, "Date"));
        response_free(&r);
    }
    /* server/discover, answered by the core without a handler. */
    char *body = mcp_text(7, "server/discover", NULL, NULL);
    char *request;
    assert_true(asprintf(&request,
                         "POST /mcp HTTP/1.1\r\n" MODERN_HEADERS
                         "Mcp-Method: server/discover\r\nContent-Length: %zu\r\n\r\n%s",
                         strlen(body), body) > 0);
    client_send_str(c, request);
    response_t r;
    read_response(c, &r, false);
    assert_int_equal(r.status, 200);
    json_t *msg = json_loadb(r.body, r.body_len, 0, NULL);
    assert_non_null(msg);
    MCP_ASSERT_SCHEMA_VALID(msg, "server/discover", REVISION);
    json_decref(msg);
    response_free(&r);
    assert_true(client_quiet(c, 50));
    free(request);
    free(body);
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 2. Pipelining
 * ------------------------------------------------------------------------ */

/* `count` calls of `tools[i]` sent in one write; the answers come back in
 * order on the same connection. */
static void pipeline(client_t *c, const char *const *tools, int count, int first_id)
{
    char *all = NULL;
    size_t all_len = 0;
    FILE *out = open_memstream(&all, &all_len);
    for (int i = 0; i < count; i++) {
        char text[32];
        snprintf(text, sizeof text, "pipelined %d", first_id + i);
        char *request = call_request("1.1", tools[i], first_id + i, text, NULL);
        fputs(request, out);
        free(request);
    }
    fclose(out);
    client_send(c, all, all_len);
    free(all);
    for (int i = 0; i < count; i++) {
        char text[32];
        snprintf(text, sizeof text, "pipelined %d", first_id + i);
        expect_call_answer(c, first_id + i, text);
    }
}

static void test_pipelining(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    static const char *const pooled[] = {"echo", "echo", "echo"};
    static const char *const inlined[] = {"inline", "inline", "inline"};
    static const char *const mixed[] = {"inline", "echo", "inline"};
    pipeline(c, pooled, 2, 1);
    pipeline(c, pooled, 3, 10);
    pipeline(c, inlined, 2, 20);
    pipeline(c, inlined, 3, 30);
    pipeline(c, mixed, 3, 40);
    /* Still an ordinary connection afterwards. */
    call_ok(c, "echo", 50, "after");

    /* The first request holds a worker: the second, read along with it,
     * waits its turn and is answered after it, in order. */
    char *all;
    char *one = call_request("1.1", "block", 60, "first", NULL);
    char *two = call_request("1.1", "echo", 61, "second", NULL);
    assert_true(asprintf(&all, "%s%s", one, two) > 0);
    client_send_str(c, all);
    assert_true(wait_count(&block_started, 1));
    assert_true(client_quiet(c, QUIET_MS));
    atomic_store(&block_release, 1);
    expect_call_answer(c, 60, "first");
    expect_call_answer(c, 61, "second");
    free(one);
    free(two);
    free(all);

    /* Behind a held worker, more pipelined requests than the connection
     * buffers (twice max_header_bytes): it stops reading, and takes up
     * the rest once the first answer is out. */
    enum { DEEP = 80 };
    atomic_store(&block_started, 0);
    atomic_store(&block_release, 0);
    FILE *out = open_memstream(&all, &(size_t){0});
    for (int i = 0; i <= DEEP; i++) {
        char *request = call_request("1.1", i == 0 ? "block" : i % 2 ? "echo" : "inline",
                                     200 + i, "deep", NULL);
        fputs(request, out);
        free(request);
    }
    fclose(out);
    assert_true(strlen(all) > 2 * 8192 + 4096);
    client_send_str(c, all);
    free(all);
    assert_true(wait_count(&block_started, 1));
    assert_true(client_quiet(c, QUIET_MS));
    atomic_store(&block_release, 1);
    for (int i = 0; i <= DEEP; i++)
        expect_call_answer(c, 200 + i, "deep");
    assert_true(client_quiet(c, 50));
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Handlers on the event thread, and the loop moving away from a slow one
 * ------------------------------------------------------------------------ */

/* The thread "echo" or "inline" ran its last call on. */
static pid_t echo_ran_on(client_t *c, const char *tool, int id)
{
    call_ok(c, tool, id, "where");
    return atomic_load(&echo_thread);
}

static void test_lent_thread(void **state)
{
    /* One event thread: every connection is on the same loop. */
    fixture_t *f = start((mcp_http_options_t){.threads = 1});
    client_t *a = client_open(f, 0), *b = client_open(f, 0);

    /* A pooled handler runs on the event thread that read its request,
     * as an inline one does. */
    pid_t loop_thread = echo_ran_on(a, "inline", 1);
    assert_int_equal(echo_ran_on(a, "echo", 2), loop_thread);
    assert_int_equal(echo_ran_on(b, "echo", 3), loop_thread);

    /* "block" starts there too, and blocks: within a few milliseconds the
     * loop moves to another thread, which serves the other connection
     * while "block" still holds the first. Without the move, b's answer
     * would wait for the release below. */
    send_call(a, "block", 4, "held");
    assert_true(wait_count(&block_started, 1));
    assert_int_equal(atomic_load(&block_thread), loop_thread);
    int64_t asked = now_ms();
    pid_t new_loop_thread = echo_ran_on(b, "echo", 5);
    assert_true(now_ms() - asked < PATIENCE_MS);
    assert_int_equal(atomic_load(&block_cancelled), 0);
    assert_int_not_equal(new_loop_thread, loop_thread);
    assert_int_equal(echo_ran_on(b, "inline", 6), new_loop_thread);
    /* The held connection's next request, pipelined behind "block", waits
     * its turn. */
    send_call(a, "echo", 7, "behind");
    assert_true(client_quiet(a, QUIET_MS));

    /* Released, "block" answers from the thread it ran on; then the loop's
     * new thread serves the connection on. */
    atomic_store(&block_release, 1);
    expect_call_answer(a, 4, "held");
    expect_call_answer(a, 7, "behind");
    assert_int_equal(atomic_load(&echo_thread), new_loop_thread);
    assert_int_equal(echo_ran_on(a, "echo", 8), new_loop_thread);

    /* "block" held its thread too long: its next call goes to the pool
     * (it returns at once now), while "echo" still runs on the loop. That
     * is settled when its thread, the loop's old one, is done with it:
     * the answer above goes out before. */
    assert_true(thread_gone_within(loop_thread, PATIENCE_MS));
    call_ok(a, "block", 9, "pooled");
    assert_int_not_equal(atomic_load(&block_thread), new_loop_thread);
    assert_int_equal(echo_ran_on(b, "echo", 10), new_loop_thread);

    client_close(a);
    client_close(b);
    stop(f);
}

/* A handler that computes, never blocking, has the loop moved from it too:
 * another connection is served while it still runs (within 1-2 ms, by
 * the CPU-clock probe, where waiting for the 20 ms limit would do too). */
static void test_computing_handler_moved(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.threads = 1});
    client_t *a = client_open(f, 0), *b = client_open(f, 0);
    send_call(a, "compute", 1, "computed");
    assert_true(wait_count(&compute_started, 1));
    call_ok(b, "echo", 2, "meanwhile");
    assert_int_equal(atomic_load(&compute_done), 0);
    atomic_store(&compute_release, 1);
    expect_call_answer(a, 1, "computed");
    client_close(a);
    client_close(b);
    stop(f);
}

/* One event thread, "block" holding it on *a, and *b served after the
 * loop moved on. */
static fixture_t *start_lent_and_moved(client_t **a, client_t **b)
{
    fixture_t *f = start((mcp_http_options_t){.threads = 1});
    *a = client_open(f, 0);
    *b = client_open(f, 0);
    send_call(*a, "block", 1, "held");
    assert_true(wait_count(&block_started, 1));
    call_ok(*b, "echo", 2, "meanwhile");
    return f;
}

/* A connection that hangs up while its handler holds the loop's former
 * thread: the loop closes it and cancels the handler, and the thread,
 * coming back, touches nothing that is gone (ASan watches). */
static void test_hangup_while_lent(void **state)
{
    client_t *a, *b;
    fixture_t *f = start_lent_and_moved(&a, &b);
    client_close(a);
    assert_true(wait_count(&block_cancelled, 1));
    call_ok(b, "echo", 3, "after");
    client_close(b);
    stop(f);
}

/* Stopping the server while a handler holds a lent thread waits for it. */
static void test_stop_while_lent(void **state)
{
    client_t *a, *b;
    fixture_t *f = start_lent_and_moved(&a, &b);
    /* It cancels "block", and returns once the thread that ran it is
     * done. */
    mcp_http_server_stop(f->http);
    assert_int_equal(atomic_load(&block_cancelled), 1);
    mcp_server_free(f->srv);
    free(f);
    client_close(a);
    client_close(b);
}

/* ------------------------------------------------------------------------
 * 3. A request in many small writes
 * ------------------------------------------------------------------------ */

static void test_split_writes(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    char *request = call_request("1.1", "echo", 5, "in pieces", NULL);
    size_t len = strlen(request);
    size_t head_len = (size_t)(strstr(request, "\r\n\r\n") + 4 - request);
    for (size_t i = 0; i < head_len; i++) { /* the head byte by byte */
        client_send(c, request + i, 1);
        if (i % 8 == 0)
            sleep_ms(1);
    }
    /* Nothing is answered before the body is whole. */
    assert_true(client_quiet(c, 20));
    for (size_t i = head_len; i < len; i += 13) {
        client_send(c, request + i, len - i < 13 ? len - i : 13);
        sleep_ms(1);
    }
    expect_call_answer(c, 5, "in pieces");
    /* And a request cut right after its head's blank line. */
    request[head_len - 1] = '\0';
    client_send_str(c, request);
    sleep_ms(20);
    client_send(c, "\n", 1);
    sleep_ms(20);
    request[head_len - 1] = '\n';
    client_send_str(c, request + head_len);
    expect_call_answer(c, 5, "in pieces");
    free(request);
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 4. Chunked request bodies
 * ------------------------------------------------------------------------ */

/* `body` in the chunked coding: three chunks (hex sizes in both cases, a
 * chunk extension on the first), then a trailer field. */
static char *chunked(const char *body)
{
    size_t len = strlen(body), a = len / 3, b = len / 3;
    char *text;
    assert_true(asprintf(&text,
                         "%zx;name=value\r\n%.*s\r\n"
                         "%zX\r\n%.*s\r\n"
                         "%zx\r\n%s\r\n"
                         "0\r\nX-Trailer: yes\r\n\r\n",
                         a, (int)a, body, b, (int)b, body + a, len - a - b, body + a + b) > 0);
    return text;
}

static void test_chunked_body(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);

    /* The same call, first with Content-Length... */
    send_call(c, "echo", 9, "chunks");
    response_t plain;
    read_response(c, &plain, false);
    assert_call_answer(&plain, 9, "chunks");

    /* ...then chunked, sent whole and then a few bytes at a time. */
    char *body = call_body("echo", 9, "chunks");
    char *head = call_head("1.1", "echo", "Transfer-Encoding: chunked\r\n\r\n");
    char *coded = chunked(body);
    for (int round = 0; round < 2; round++) {
        client_send_str(c, head);
        if (round == 0) {
            client_send_str(c, coded);
        } else {
            for (size_t i = 0, n = strlen(coded); i < n; i += 5) {
                client_send(c, coded + i, n - i < 5 ? n - i : 5);
                sleep_ms(1);
            }
        }
        response_t r;
        read_response(c, &r, false);
        assert_call_answer(&r, 9, "chunks");
        assert_null(header(&r, "Connection"));
        assert_int_equal(r.body_len, plain.body_len);
        assert_memory_equal(r.body, plain.body, r.body_len);
        response_free(&r);
    }
    /* The connection is still usable, for either framing. */
    call_ok(c, "inline", 10, "after chunks");
    free(coded);
    free(head);
    free(body);
    response_free(&plain);
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 5. Expect: 100-continue
 * ------------------------------------------------------------------------ */

static const char CONTINUE[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* `text` with its first `from` replaced by `to` (which must be there).
 * Not inlined: inlined, gcc 12 reports a dangling pointer that is not. */
__attribute__((noinline)) static char *replace_once(const char *text, const char *from,
                                                  const char *to)
{
    const char *found = strstr(text, from);
    assert_non_null(found);
    size_t before = (size_t)(found - text), from_len = strlen(from), to_len = strlen(to);
    size_t after = strlen(found + from_len);
    char *out = malloc(before + to_len + after + 1);
    assert_non_null(out);
    memcpy(out, text, before);
    memcpy(out + before, to, to_len);
    memcpy(out + before + to_len, found + from_len, after + 1);
    return out;
}

static void test_expect_continue(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    char *body = call_body("echo", 3, "continued");
    char *extra;
    assert_true(asprintf(&extra, "Expect: 100-continue\r\nContent-Length: %zu\r\n\r\n",
                         strlen(body)) > 0);
    char *head = call_head("1.1", "echo", extra);

    /* The head alone: the server invites the body, and waits for it. */
    client_send_str(c, head);
    client_need(c, sizeof CONTINUE - 1);
    assert_memory_equal(c->buf, CONTINUE, sizeof CONTINUE - 1);
    client_consume(c, sizeof CONTINUE - 1);
    assert_true(client_quiet(c, 50));
    client_send_str(c, body);
    expect_call_answer(c, 3, "continued");

    /* Head and body in one write: the client did not wait, the server
     * has the body already and sends no 100. */
    char *whole;
    assert_true(asprintf(&whole, "%s%s", head, body) > 0);
    client_send_str(c, whole);
    expect_call_answer(c, 3, "continued");
    client_close(c);

    /* A chunked body is invited the same way. */
    c = client_open(f, 0);
    char *chunked_head =
        call_head("1.1", "echo", "Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n");
    client_send_str(c, chunked_head);
    client_need(c, sizeof CONTINUE - 1);
    assert_memory_equal(c->buf, CONTINUE, sizeof CONTINUE - 1);
    client_consume(c, sizeof CONTINUE - 1);
    char *coded = chunked(body);
    client_send_str(c, coded);
    expect_call_answer(c, 3, "continued");
    free(coded);
    free(chunked_head);
    client_close(c);

    /* Refused at the head: the refusal instead of 100, then the close (the
     * client may never send the body it was not invited to send). */
    static const struct {
        const char *from, *to;
        int status;
    } refusals[] = {
        {"POST /mcp ", "POST /other ", 404},
        {"Host: 127.0.0.1", "Host: evil.example", 403},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        char *refused = replace_once(head, refusals[i].from, refusals[i].to);
        c = client_open(f, 0);
        client_send_str(c, refused);
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.status, refusals[i].status); /* not 100 */
        assert_true(has_connection_close(&r));
        assert_true(client_closed_within(c, PROMPT_MS, NULL));
        response_free(&r);
        client_close(c);
        free(refused);
    }
    free(whole);
    free(head);
    free(extra);
    free(body);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 6, 7. HTTP/1.0 and Connection: close
 * ------------------------------------------------------------------------ */

static void test_http10(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});

    /* Without keep-alive: answered in 1.0, then closed. */
    client_t *c = client_open(f, 0);
    char *request = call_request("1.0", "echo", 1, "old", NULL);
    client_send_str(c, request);
    response_t r;
    read_response(c, &r, false);
    assert_int_equal(r.minor, 0);
    assert_call_answer(&r, 1, "old");
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
    client_close(c);
    free(request);

    /* With keep-alive: kept (and said so) as long as the client asks. */
    c = client_open(f, 0);
    request = call_request("1.0", "inline", 2, "kept", "Connection: keep-alive\r\n");
    for (int i = 0; i < 2; i++) {
        client_send_str(c, request);
        read_response(c, &r, false);
        assert_int_equal(r.minor, 0);
        assert_call_answer(&r, 2, "kept");
        assert_non_null(header(&r, "Connection"));
        assert_string_equal(header(&r, "Connection"), "keep-alive");
        response_free(&r);
    }
    free(request);
    request = call_request("1.0", "echo", 3, "last", NULL);
    client_send_str(c, request);
    read_response(c, &r, false);
    assert_int_equal(r.minor, 0);
    assert_call_answer(&r, 3, "last");
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
    client_close(c);
    free(request);
    stop(f);
}

static void test_connection_close(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    static const char *const tools[] = {"echo", "inline"};
    for (int i = 0; i < 2; i++) {
        client_t *c = client_open(f, 0);
        call_ok(c, tools[i], 1, "first");
        char *request = call_request("1.1", tools[i], 2, "bye", "Connection: close\r\n");
        client_send_str(c, request);
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.minor, 1);
        assert_call_answer(&r, 2, "bye");
        assert_true(has_connection_close(&r));
        response_free(&r);
        assert_true(client_closed_within(c, PROMPT_MS, NULL));
        client_close(c);
        free(request);
    }
    stop(f);
}

/* ------------------------------------------------------------------------
 * Streamed answers: chunked on HTTP/1.1, delimited by the close on 1.0
 * ------------------------------------------------------------------------ */

/* A call whose client accepts only text/event-stream: even its lone
 * response comes as a stream. */
static char *stream_request(const char *version, const char *tool, int id, const char *text)
{
    char *body = call_body(tool, id, text);
    char *request = format("POST /mcp HTTP/%s\r\nHost: 127.0.0.1\r\n"
                           "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                           "MCP-Protocol-Version: 2026-07-28\r\n"
                           "Mcp-Method: tools/call\r\nMcp-Name: %s\r\n"
                           "Content-Length: %zu\r\n\r\n%s",
                           version, tool, strlen(body), body);
    free(body);
    return request;
}

/* Asserts an event stream of one message: the answer to call `id`. */
static void assert_stream_answer(const response_t *r, int id, const char *text)
{
    assert_int_equal(r->status, 200);
    assert_non_null(header(r, "Content-Type"));
    assert_string_equal(header(r, "Content-Type"), "text/event-stream");
    const char *data = strstr(r->body, "data: ");
    assert_non_null(data);
    data += 6;
    const char *eol = strchr(data, '\n');
    assert_non_null(eol);
    assert_null(strstr(eol, "data: ")); /* one message */
    response_t inner = {.status = 200, .n_headers = 1, .names = {"Content-Type"},
                        .values = {"application/json"}, .body = (char *)data,
                        .body_len = (size_t)(eol - data)};
    assert_call_answer(&inner, id, text);
}

static void test_streamed_answers(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    static const char *const tools[] = {"echo", "inline"};

    /* HTTP/1.1: chunked, ended by the last chunk; the connection goes on. */
    client_t *c = client_open(f, 0);
    for (int i = 0; i < 2; i++) {
        char *request = stream_request("1.1", tools[i], 1 + i, "streamed");
        client_send_str(c, request);
        free(request);
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.minor, 1);
        assert_non_null(header(&r, "Transfer-Encoding"));
        assert_null(header(&r, "Connection"));
        assert_stream_answer(&r, 1 + i, "streamed");
        response_free(&r);
        call_ok(c, tools[i], 10 + i, "after the stream");
    }
    client_close(c);

    /* HTTP/1.0 has no chunked coding: the close ends the stream, even
     * when the client asked to keep the connection. */
    for (int i = 0; i < 2; i++) {
        c = client_open(f, 0);
        char *request = stream_request("1.0", tools[i], 3, "old stream");
        if (i == 1) {
            char *keep;
            assert_true(asprintf(&keep, "POST /mcp HTTP/1.0\r\nConnection: keep-alive\r\n%s",
                                 strstr(request, "\r\n") + 2) > 0);
            free(request);
            request = keep;
        }
        client_send_str(c, request);
        free(request);
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.minor, 0);
        assert_null(header(&r, "Transfer-Encoding"));
        assert_null(header(&r, "Content-Length"));
        assert_true(has_connection_close(&r));
        assert_stream_answer(&r, 3, "old stream");
        response_free(&r);
        client_close(c); /* read_response read it to its end of file */
    }
    stop(f);
}

/* ------------------------------------------------------------------------
 * 8. HEAD
 * ------------------------------------------------------------------------ */

static void test_head(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    client_send_str(c, "HEAD /mcp HTTP/1.1\r\n" MODERN_HEADERS "\r\n");
    response_t r;
    read_response(c, &r, true);
    assert_int_equal(r.status, 405);
    assert_non_null(header(&r, "Allow"));
    assert_non_null(strstr(header(&r, "Allow"), "POST"));
    assert_non_null(header(&r, "Content-Length"));
    assert_null(header(&r, "Connection"));
    response_free(&r);
    /* No body bytes follow: the next answer starts right away. */
    assert_true(client_quiet(c, 100));
    call_ok(c, "echo", 2, "after HEAD");
    client_close(c);
    stop(f);
}

/* An absolute-form target (RFC 9112 section 3.2.2: a server must accept
 * it) is served like its origin form, and the host it names is the one
 * the Host check sees: a loopback server refuses another host even when
 * the Host header says 127.0.0.1. */
static void test_absolute_form(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 0);
    static const struct {
        const char *prefix;
        int status;
    } targets[] = {
        {"POST http://127.0.0.1:%u/mcp", 200},
        {"POST HTTP://localhost/mcp", 200},
        {"POST http://evil.example:%u/mcp", 403},
        {"POST http://127.0.0.1:%u/other", 404},
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        print_message("target: %s\n", targets[i].prefix);
        char *request = call_request("1.1", "echo", (int)i + 1, "absolute", NULL);
        char prefix[64];
        snprintf(prefix, sizeof prefix, targets[i].prefix, (unsigned)f->port);
        char *full;
        assert_true(asprintf(&full, "%s%s", prefix, request + strlen("POST /mcp")) > 0);
        client_send_str(c, full);
        free(full);
        free(request);
        if (targets[i].status == 200) {
            expect_call_answer(c, (int)i + 1, "absolute");
            continue;
        }
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.status, targets[i].status);
        response_free(&r);
    }
    /* The connection served every one of them and serves on. */
    call_ok(c, "echo", 9, "origin form");
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 9. Framing errors
 * ------------------------------------------------------------------------ */

/* A refusal of the engine: `status`, a JSON -32600, "Connection: close",
 * then the close. */
static void expect_framing_refusal(client_t *c, int status)
{
    response_t r;
    read_response(c, &r, false);
    assert_json_refusal(&r, status);
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
}

#define HOST "Host: 127.0.0.1\r\n"

static void test_framing_errors(void **state)
{
    static const struct {
        const char *name;
        const char *request;
        int status;
    } cases[] = {
        {"garbage request line", "GARBAGE\r\n\r\n", 400},
        {"no HTTP version", "POST /mcp\r\n" HOST "\r\n", 400},
        {"two spaces in the request line", "POST  /mcp HTTP/1.1\r\n" HOST "\r\n", 400},
        {"space before a colon", "POST /mcp HTTP/1.1\r\n" HOST "Content-Type : x\r\n\r\n", 400},
        {"header without a colon", "POST /mcp HTTP/1.1\r\n" HOST "Nonsense\r\n\r\n", 400},
        {"obsolete line folding", "POST /mcp HTTP/1.1\r\n" HOST "X-A: 1\r\n folded\r\n\r\n", 400},
        {"no Host on HTTP/1.1", "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400},
        {"Content-Length and Transfer-Encoding",
         "POST /mcp HTTP/1.1\r\n" HOST "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\n\r\n", 400},
        {"two Content-Lengths",
         "POST /mcp HTTP/1.1\r\n" HOST "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400},
        {"Content-Length with a sign", "POST /mcp HTTP/1.1\r\n" HOST "Content-Length: +2\r\n\r\n{}",
         400},
        {"Transfer-Encoding gzip, chunked",
         "POST /mcp HTTP/1.1\r\n" HOST "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
        {"Transfer-Encoding not ending in chunked",
         "POST /mcp HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked, gzip\r\n\r\n", 400},
        {"HTTP/2.0", "POST /mcp HTTP/2.0\r\n" HOST "\r\n", 505},
        {"Expect something else", "POST /mcp HTTP/1.1\r\n" HOST "Expect: 200-ok\r\n\r\n", 417},
    };
    fixture_t *f = start((mcp_http_options_t){0});
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("case: %s\n", cases[i].name);
        client_t *c = client_open(f, 0);
        client_send_str(c, cases[i].request);
        expect_framing_refusal(c, cases[i].status);
        client_close(c);
    }

    /* A framing error on a connection that served a request already. */
    client_t *c = client_open(f, 0);
    call_ok(c, "echo", 1, "fine");
    client_send_str(c, "POST /mcp HTTP/1.1\r\n" HOST "Bad Name: x\r\n\r\n");
    expect_framing_refusal(c, 400);
    client_close(c);

    /* More than 100 header fields: 431. */
    char *many = NULL;
    size_t many_len = 0;
    FILE *out = open_memstream(&many, &many_len);
    fputs("POST /mcp HTTP/1.1\r\n" HOST, out);
    for (int i = 0; i < 100; i++)
        fprintf(out, "X-H%d: %d\r\n", i, i);
    fputs("\r\n", out);
    fclose(out);
    c = client_open(f, 0);
    client_send(c, many, many_len);
    expect_framing_refusal(c, 431);
    client_close(c);
    free(many);

    /* A chunked body that breaks its coding, once the request has begun:
     * a size that is not hex, then a chunk without its CRLF. */
    static const char *const bad_chunks[] = {"zz\r\n{}\r\n0\r\n\r\n", "2\r\n{}XX0\r\n\r\n"};
    for (size_t i = 0; i < 2; i++) {
        char *head = call_head("1.1", "echo", "Transfer-Encoding: chunked\r\n\r\n");
        c = client_open(f, 0);
        client_send_str(c, head);
        client_send_str(c, bad_chunks[i]);
        expect_framing_refusal(c, 400);
        client_close(c);
        free(head);
    }
    stop(f);

    /* A head over max_header_bytes, complete or not: 431 (its request
     * line is short). */
    f = start((mcp_http_options_t){.max_header_bytes = 1024});
    char pad[1500];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    for (int complete = 0; complete < 2; complete++) {
        char *request;
        assert_true(asprintf(&request, "POST /mcp HTTP/1.1\r\n" HOST "X-Pad: %s\r\n%s", pad,
                             complete ? "Content-Length: 0\r\n\r\n" : "") > 0);
        c = client_open(f, 0);
        client_send_str(c, request);
        expect_framing_refusal(c, 431);
        client_close(c);
        free(request);
    }
    /* A request line that alone passes the limit, ended or not: the
     * target is too long, 414. */
    for (int ended = 0; ended < 2; ended++) {
        char *request;
        assert_true(asprintf(&request, "\r\nPOST /mcp?%s HTTP/1.1\r\n%s", pad,
                             ended ? HOST "Content-Length: 0\r\n\r\n" : "") > 0);
        c = client_open(f, 0);
        client_send_str(c, request);
        expect_framing_refusal(c, 414);
        client_close(c);
        free(request);
    }
    /* The limit's worth of empty lines and no request line: 400. */
    char blank[1100];
    for (size_t i = 0; i + 1 < sizeof blank; i += 2)
        memcpy(blank + i, "\r\n", 2);
    blank[sizeof blank - 1] = '\0';
    c = client_open(f, 0);
    client_send_str(c, blank);
    expect_framing_refusal(c, 400);
    client_close(c);
    /* Just under the limit is served. */
    c = client_open(f, 0);
    call_ok(c, "echo", 1, "small head");
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 10, 11. Bodies of refused requests, and body limits
 * ------------------------------------------------------------------------ */

/* A request refused at its head, sent with its body: 415 for text/plain. */
static char *text_plain_request(size_t body_len)
{
    char *body = malloc(body_len + 1);
    assert_non_null(body);
    memset(body, 'b', body_len);
    body[body_len] = '\0';
    char *request = format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                           "Accept: application/json, text/event-stream\r\n"
                           "Content-Length: %zu\r\n\r\n%s",
                           body_len, body);
    free(body);
    return request;
}

static void test_refused_body_dropped(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    /* Small bodies are read and dropped: the connection goes on. */
    static const size_t sizes[] = {10, 500, 60 * 1024};
    client_t *c = client_open(f, 0);
    response_t r;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *request = text_plain_request(sizes[i]);
        client_send_str(c, request);
        read_response(c, &r, false);
        assert_json_refusal(&r, 415);
        assert_null(header(&r, "Connection"));
        response_free(&r);
        call_ok(c, "echo", (int)i, "after a refusal");
        /* Pipelined: the next request right behind the dropped body. */
        char *next = call_request("1.1", "echo", 100 + (int)i, "right behind", NULL);
        char *both;
        assert_true(asprintf(&both, "%s%s", request, next) > 0);
        client_send_str(c, both);
        read_response(c, &r, false);
        assert_json_refusal(&r, 415);
        response_free(&r);
        expect_call_answer(c, 100 + (int)i, "right behind");
        free(both);
        free(next);
        free(request);
    }
    /* The body may also come after the answer, and in pieces. */
    char *request = text_plain_request(3000);
    size_t head_len = (size_t)(strstr(request, "\r\n\r\n") + 4 - request);
    client_send(c, request, head_len);
    read_response(c, &r, false);
    assert_json_refusal(&r, 415);
    response_free(&r);
    for (size_t i = head_len, n = strlen(request); i < n; i += 1000)
        client_send(c, request + i, n - i < 1000 ? n - i : 1000);
    call_ok(c, "inline", 9, "body dropped");
    free(request);
    client_close(c);

    /* A large one is not worth reading: the connection closes. */
    c = client_open(f, 0);
    request = text_plain_request(100 * 1024);
    client_send_str(c, request);
    read_response(c, &r, false);
    assert_json_refusal(&r, 415);
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
    free(request);
    client_close(c);
    stop(f);
}

static void test_body_limit(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.endpoint = {.max_body_bytes = 1000}});

    /* Content-Length over the limit: 413 at the head, before any body is
     * sent. Too large to drop: the connection closes. */
    client_t *c = client_open(f, 0);
    char *head = call_head("1.1", "echo", "Content-Length: 100000\r\n\r\n");
    client_send_str(c, head);
    response_t r;
    read_response(c, &r, false);
    assert_json_refusal(&r, 413);
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
    client_close(c);
    free(head);

    /* Over the limit but small enough to drop: 413 at the head all the
     * same, then the body is read and dropped, and the connection goes on. */
    c = client_open(f, 0);
    head = call_head("1.1", "echo", "Content-Length: 5000\r\n\r\n");
    client_send_str(c, head);
    read_response(c, &r, false);
    assert_json_refusal(&r, 413);
    response_free(&r);
    char filler[5000];
    memset(filler, ' ', sizeof filler);
    client_send(c, filler, sizeof filler);
    call_ok(c, "echo", 2, "after 413");
    client_close(c);
    free(head);

    /* Chunked, growing over the limit: 413 as soon as it does, without
     * waiting for the last chunk; then the close. */
    c = client_open(f, 0);
    head = call_head("1.1", "echo", "Transfer-Encoding: chunked\r\n\r\n");
    client_send_str(c, head);
    char chunk[600 + 16];
    int n = snprintf(chunk, sizeof chunk, "%x\r\n", 600);
    memset(chunk + n, ' ', 600);
    memcpy(chunk + n + 600, "\r\n", 2);
    client_send(c, chunk, (size_t)n + 602);
    assert_true(client_quiet(c, 50)); /* 600 bytes: within the limit */
    client_send(c, chunk, (size_t)n + 602);
    read_response(c, &r, false);
    assert_json_refusal(&r, 413);
    assert_true(has_connection_close(&r));
    response_free(&r);
    assert_true(client_closed_within(c, PROMPT_MS, NULL));
    client_close(c);
    free(head);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 12. A client that hangs up mid-request
 * ------------------------------------------------------------------------ */

static void test_hangup_cancels(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *gone = client_open(f, 0);
    client_t *other = client_open(f, 0);
    send_call(gone, "block", 1, "never");
    assert_true(wait_count(&block_started, 1));
    call_ok(other, "echo", 2, "meanwhile"); /* a blocked worker holds no one else up */

    int64_t closed_at = now_ms();
    client_close(gone);
    assert_true(wait_count(&block_cancelled, 1));
    int64_t took = atomic_load(&block_cancelled_at) - closed_at;
    print_message("cancelled %lld ms after the hang-up\n", (long long)took);
    assert_true(took < 1000);

    call_ok(other, "inline", 3, "still serving");
    client_t *fresh = client_open(f, 0);
    call_ok(fresh, "echo", 4, "new connection");
    client_close(fresh);
    client_close(other);
    stop(f);
}

/* The same with the connection's input full (requests pipelined behind
 * the one in flight, more than the engine keeps), so that the engine is
 * not reading it: the hang-up, FIN or reset, is seen all the same. */
static void test_hangup_with_input_full(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    for (int reset = 0; reset < 2; reset++) {
        atomic_store(&block_started, 0);
        atomic_store(&block_cancelled, 0);
        client_t *c = client_open(f, 0);
        send_call(c, "block", 1, "never");
        assert_true(wait_count(&block_started, 1));
        for (int i = 0; i < 100; i++) /* about 35 KB: over the 20 KiB kept */
            send_call(c, "echo", 2 + i, "behind");
        sleep_ms(200); /* the engine reads what it keeps, then stops */
        if (reset) {
            struct linger now = {.l_onoff = 1, .l_linger = 0};
            assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &now, sizeof now), 0);
        }
        int64_t closed_at = now_ms();
        client_close(c);
        assert_true(wait_count(&block_cancelled, 1));
        int64_t took = atomic_load(&block_cancelled_at) - closed_at;
        print_message("%s: cancelled %lld ms after the hang-up\n", reset ? "reset" : "FIN",
                      (long long)took);
        assert_true(took < 1000);
        assert_int_equal(atomic_load(&echo_calls), 0);
    }
    client_t *other = client_open(f, 0);
    call_ok(other, "echo", 200, "still serving");
    client_close(other);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 13. Idle timeout
 * ------------------------------------------------------------------------ */

static void test_idle_timeout(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_timeout_s = 1});
    client_t *idle = client_open(f, 0);
    client_t *half = client_open(f, 0);
    client_t *busy = client_open(f, 0);
    call_ok(idle, "echo", 1, "then nothing");
    client_send_str(half, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le");
    /* A request waiting on its handler is not idle: it outlives the
     * timeout. */
    send_call(busy, "block", 2, "slow but alive");
    int64_t busy_since = now_ms();
    assert_true(wait_count(&block_started, 1));

    int64_t took;
    assert_true(client_closed_within(idle, 2500, &took));
    print_message("idle connection closed after %lld ms\n", (long long)took);
    assert_true(took >= 500);
    assert_true(client_closed_within(half, PROMPT_MS, &took));

    /* Two sweeps past the timeout, the busy connection is still open. */
    int64_t wait = busy_since + 3000 - now_ms();
    if (wait > 0)
        sleep_ms((int)wait);
    assert_true(client_quiet(busy, 300));
    atomic_store(&block_release, 1);
    expect_call_answer(busy, 2, "slow but alive");
    client_close(idle);
    client_close(half);
    client_close(busy);
    stop(f);
}

/* Sends `text` a byte every 300 ms (well within the idle timeout) until
 * the server closes the connection; how long that took, or -1 when it
 * stayed open for `patience_ms`. */
static int64_t trickle_until_closed(client_t *c, const char *text, int patience_ms)
{
    int64_t start = now_ms();
    for (size_t i = 0; now_ms() - start < patience_ms; i = (i + 1) % strlen(text)) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 300) > 0) {
            char byte;
            if (recv(c->fd, &byte, 1, 0) <= 0)
                return now_ms() - start; /* end of file, or a reset */
        }
        if (send(c->fd, text + i, 1, MSG_NOSIGNAL) < 0)
            return now_ms() - start;
    }
    return -1;
}

/* A request trickled a byte at a time never lets the connection go idle,
 * but once the idle timeout has passed since its first byte it must have
 * come at 500 bytes a second: the head and the body alike are cut off,
 * while a request that comes at once is answered as ever. */
static void test_trickled_request(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_timeout_s = 1});
    client_t *head = client_open(f, 0);
    int64_t took = trickle_until_closed(head, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ",
                                        10000);
    print_message("trickled head cut after %lld ms\n", (long long)took);
    assert_true(took >= 900);
    assert_true(took < 6000);
    client_close(head);

    client_t *body = client_open(f, 0);
    client_send_str(body, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Content-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\n"
                          "Content-Length: 1000\r\n\r\n");
    took = trickle_until_closed(body, "{\"jsonrpc\":\"2.0\",", 10000);
    print_message("trickled body cut after %lld ms\n", (long long)took);
    assert_true(took >= 900);
    assert_true(took < 6000);
    client_close(body);

    client_t *prompt = client_open(f, 0);
    call_ok(prompt, "echo", 1, "at once");
    client_close(prompt);
    stop(f);
}

/* True when bytes wait to be read within `ms`; nothing is read. */
static bool client_readable_within(client_t *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return c->len > 0 || poll(&p, 1, ms) > 0;
}

/* An answer the client does not read: the output stalls, and the
 * connection is idle all the same. */
static void test_stalled_answer_times_out(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_timeout_s = 1});
    client_t *stuck = client_open(f, 4096);
    char *big = read_big_request(3);
    client_send_str(stuck, big);
    free(big);
    /* The answer goes out as soon as it is made, as far as the socket
     * takes it: its first bytes mark the start of the stall. (Making 6 MB
     * of JSON can take a second under a sanitizer, so the request's own
     * time would not do.) */
    assert_true(client_readable_within(stuck, PATIENCE_MS));
    /* Its close cannot be seen without reading, which would unstall it:
     * wait out the timeout and the sweep's second, then read. The rest of
     * the answer never comes. */
    sleep_ms(3000);
    long got = client_drain_until_closed(stuck, PATIENCE_MS);
    print_message("stalled answer cut after %ld bytes\n", got);
    assert_true(got >= 0 && got < BIG_SIZE);
    client_close(stuck);
    stop(f);
}

/* Calls "flood" on a connection whose client never reads; returns how
 * long the flood lasted, once the server has closed the connection. */
static int64_t stall_flood(fixture_t *f, int pause_ms)
{
    client_t *c = client_open(f, 4096);
    char params[96];
    snprintf(params, sizeof params, "\"name\":\"flood\",\"arguments\":{\"pause_ms\":%d}",
             pause_ms);
    char *body = mcp_text(1, "tools/call", params, "\"progressToken\":1");
    char *head = call_head("1.1", "flood", NULL);
    char *request;
    assert_true(asprintf(&request, "%sContent-Length: %zu\r\n\r\n%s", head, strlen(body),
                         body) > 0);
    atomic_store(&flood_stopped, 0);
    atomic_store(&flood_sent, 0);
    client_send_str(c, request);
    int64_t sent_at = now_ms();
    free(request);
    free(head);
    free(body);
    assert_true(wait_count(&flood_stopped, 1));
    int64_t took = atomic_load(&flood_stopped_at) - sent_at;
    assert_true(client_drain_until_closed(c, PATIENCE_MS) >= 0);
    client_close(c);
    return took;
}

/* A stream whose client stops reading: its events pile up in the server
 * only so far, and the handler, whose next notification then fails,
 * stops rather than producing for nobody. A fast producer passes the
 * pile's cap (8 MiB) at once; a slow one, 0.8 MB/s, meets the timeout of
 * output that does not move (1 s, seen within the sweep's second) long
 * before: once the kernel's buffers are full (a few MB), it is cut within
 * about two seconds' worth of events, well short of the cap. */
static void test_stalled_stream(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_timeout_s = 1});
    int64_t fast = stall_flood(f, 0);
    long fast_kib = 32L * atomic_load(&flood_sent);
    print_message("a fast flood stopped after %lld ms, %ld KiB\n", (long long)fast, fast_kib);
    assert_true(fast_kib >= 8 * 1024); /* the cap, past what the kernel holds */
    int64_t slow = stall_flood(f, 40);
    long slow_kib = 32L * atomic_load(&flood_sent);
    print_message("a slow flood stopped after %lld ms, %ld KiB\n", (long long)slow, slow_kib);
    assert_true(slow >= 1000);
    assert_true(slow_kib < 8 * 1024); /* the timeout, not the cap */

    /* The server goes on. */
    client_t *c = client_open(f, 0);
    call_ok(c, "echo", 2, "still here");
    client_close(c);
    stop(f);
}

/* Sends the large resource's request, and returns once its answer has
 * begun to arrive: made, and stalled in a socket the client does not read
 * (its receive buffer is small). */
static client_t *open_stalled(fixture_t *f)
{
    client_t *c = client_open(f, 4096);
    char *big = read_big_request(1);
    client_send_str(c, big);
    free(big);
    assert_true(client_readable_within(c, PATIENCE_MS));
    return c;
}

/* A client that pipelines requests behind an answer it does not read:
 * none is served while that answer waits unsent (the server would
 * otherwise buffer every answer, without bound). Once the client reads,
 * all are answered, in order. */
static void test_unread_answers_hold_the_pipeline(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = open_stalled(f);
    enum { QUEUED = 100 }; /* about 35 KB of requests */
    for (int i = 0; i < QUEUED; i++)
        send_call(c, i % 2 ? "echo" : "inline", 2 + i, "queued");
    sleep_ms(500);
    assert_int_equal(atomic_load(&echo_calls), 0);

    response_t r;
    read_response(c, &r, false);
    assert_int_equal(r.status, 200);
    assert_true(r.body_len > BIG_SIZE);
    response_free(&r);
    for (int i = 0; i < QUEUED; i++)
        expect_call_answer(c, 2 + i, "queued");
    assert_int_equal(atomic_load(&echo_calls), QUEUED);
    call_ok(c, "echo", 200, "and on");
    client_close(c);
    stop(f);
}

/* The same client, sending a request now and then: each arrival is
 * input, not progress. Output that does not move for the idle timeout
 * closes the connection. */
static void test_unread_answers_time_out(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_timeout_s = 1});
    client_t *c = open_stalled(f);
    int64_t start_at = now_ms(), took = -1;
    for (int id = 2; took < 0 && now_ms() - start_at < 8000; id++) {
        char *request = call_request("1.1", "inline", id, "now and then", NULL);
        if (send(c->fd, request, strlen(request), MSG_NOSIGNAL) < 0)
            took = now_ms() - start_at; /* reset: closed with our requests unread */
        free(request);
        struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
        if (took < 0 && poll(&p, 1, 250) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            took = now_ms() - start_at;
    }
    print_message("stalled pipeline closed after %lld ms\n", (long long)took);
    assert_true(took >= 0);
    assert_true(took < 4000);
    client_close(c);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 14. Connection limit
 * ------------------------------------------------------------------------ */

static void test_connection_limit(void **state)
{
    fixture_t *f = start((mcp_http_options_t){.connection_limit = 2});
    client_t *a = client_open(f, 0), *b = client_open(f, 0);
    call_ok(a, "echo", 1, "a");
    call_ok(b, "echo", 2, "b");
    /* The third is closed at once, unanswered. */
    client_t *third = client_open(f, 0);
    assert_true(client_closed_within(third, PROMPT_MS, NULL));
    client_close(third);
    call_ok(a, "inline", 3, "a again");
    call_ok(b, "echo", 4, "b again");

    /* Once one leaves, a new connection is served. */
    client_close(a);
    bool served = false;
    for (int64_t start_at = now_ms(); !served && now_ms() - start_at < PATIENCE_MS;) {
        /* Refused ones are closed at once; one that stays open was
         * accepted (sending first could meet a reset instead). */
        client_t *next = client_open(f, 0);
        if (!client_closed_within(next, 300, NULL)) {
            call_ok(next, "echo", 5, "next");
            served = true;
        }
        client_close(next);
    }
    assert_true(served);
    client_close(b);
    stop(f);
}

/* The default connection limit stays below the open-file limit, so that
 * connections alone never use up the descriptors: the connection over it
 * is refused at once (not left waiting in the backlog for a descriptor).
 * The limit is fixed when the server starts, so the open-file limit is
 * lowered only for the start: this process holds both ends of every
 * connection and needs the room. */
static void test_default_limit_follows_descriptors(void **state)
{
    struct rlimit saved, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_true(saved.rlim_cur >= 400);
    low = saved;
    low.rlim_cur = 200; /* 64 kept for the rest: 136 connections */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    fixture_t *f = start((mcp_http_options_t){0});
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);

    enum { LIMIT = 200 - 64 };
    client_t *clients[LIMIT];
    for (int n = 0; n < LIMIT; n++) {
        clients[n] = client_open(f, 0);
        call_ok(clients[n], "inline", n + 1, "held");
    }
    client_t *over = client_open(f, 0);
    assert_true(client_closed_within(over, PROMPT_MS, NULL));
    client_close(over);
    client_close(clients[0]);
    /* A slot freed is a slot to take, once the server has seen the close
     * (until then the newcomer is refused too). */
    client_t *next;
    for (int64_t since = now_ms();; sleep_ms(5)) {
        next = client_open(f, 0);
        if (!client_closed_within(next, 100, NULL) || now_ms() - since > PATIENCE_MS)
            break;
        client_close(next);
    }
    call_ok(next, "inline", LIMIT + 1, "in its place");
    client_close(next);
    for (int n = 1; n < LIMIT; n++)
        client_close(clients[n]);
    stop(f);
    assert_int_equal(atomic_load(&accept_failed_logs), 0);
}

/* CPU time this process has used, in ms. */
static int64_t cpu_ms(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* Out of descriptors: a client waits in the backlog, which the server
 * cannot accept. Its event threads must not spin on the listening
 * socket meanwhile (this process's CPU time is theirs: the test sleeps),
 * the connections open are served, the episode is logged once, and the
 * waiting client is served once descriptors are free again. */
static void test_out_of_descriptors(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *held = client_open(f, 0);
    call_ok(held, "inline", 1, "before");

    /* Every descriptor below a lowered limit in use, but one, which the
     * waiting client takes. */
    struct rlimit saved, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    int first = open("/dev/null", O_RDONLY | O_CLOEXEC); /* the lowest free */
    assert_true(first >= 0);
    low = saved;
    low.rlim_cur = (rlim_t)first + 32;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fill[64], n_fill = 0;
    for (int fd; n_fill < 64 && (fd = dup(first)) >= 0;)
        fill[n_fill++] = fd;
    assert_true(n_fill > 0 && n_fill < 64);
    close(fill[--n_fill]);
    client_t *waiting = client_open(f, 0);

    int64_t cpu_before = cpu_ms(), wall_before = now_ms();
    sleep_ms(1500);
    int64_t cpu = cpu_ms() - cpu_before, wall = now_ms() - wall_before;
    print_message("out of descriptors: %lld ms of CPU in %lld ms\n", (long long)cpu,
                  (long long)wall);
    /* Served meanwhile (no schema check: it would open a file). */
    char *request = call_request("1.1", "inline", 2, "during", NULL);
    client_send_str(held, request);
    free(request);
    response_t r;
    read_response(held, &r, false);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "during"));
    response_free(&r);
    int failed_logs = atomic_load(&accept_failed_logs);
    int again_logs = atomic_load(&accept_again_logs);

    /* Descriptors back (before any check that could fail the test). */
    while (n_fill > 0)
        close(fill[--n_fill]);
    close(first);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_true(cpu < 300);
    assert_int_equal(failed_logs, 1);
    assert_int_equal(again_logs, 0);
    call_ok(waiting, "echo", 3, "accepted at last");
    assert_int_equal(atomic_load(&accept_again_logs), 1);
    call_ok(held, "echo", 4, "after");
    client_close(waiting);
    client_close(held);
    stop(f);
}

/* ------------------------------------------------------------------------
 * 15. Stopping with connections open
 * ------------------------------------------------------------------------ */

static void *release_later(void *arg)
{
    sleep_ms(200);
    atomic_store(&block_release, 1);
    return NULL;
}

static void test_stop_with_connections(void **state)
{
    /* Cancel at once: the request in flight is cut, every connection
     * closes. */
    fixture_t *f = start((mcp_http_options_t){.shutdown_grace_ms = -1});
    client_t *idle = client_open(f, 0);
    client_t *busy = client_open(f, 0);
    client_t *half = client_open(f, 0);
    call_ok(idle, "echo", 1, "idle");
    send_call(busy, "block", 2, "cut");
    client_send_str(half, "POST /mcp HTTP/1.1\r\n");
    assert_true(wait_count(&block_started, 1));
    int64_t t0 = now_ms();
    mcp_http_server_stop(f->http);
    print_message("stopped in %lld ms\n", (long long)(now_ms() - t0));
    assert_true(now_ms() - t0 < 3000);
    assert_true(client_closed_within(idle, PROMPT_MS, NULL));
    assert_true(client_closed_within(busy, PROMPT_MS, NULL));
    assert_true(client_closed_within(half, PROMPT_MS, NULL));
    assert_true(wait_count(&block_cancelled, 1));
    mcp_server_free(f->srv);
    free(f);
    client_close(idle);
    client_close(busy);
    client_close(half);

    /* With a grace period: the request in flight finishes and is
     * answered, then its connection closes. */
    f = start((mcp_http_options_t){.shutdown_grace_ms = 5000});
    busy = client_open(f, 0);
    send_call(busy, "block", 3, "finished in grace");
    assert_true(wait_count(&block_started, 1));
    pthread_t releaser;
    assert_int_equal(pthread_create(&releaser, NULL, release_later, NULL), 0);
    t0 = now_ms();
    mcp_http_server_stop(f->http);
    assert_true(now_ms() - t0 < 4000);
    pthread_join(releaser, NULL);
    response_t r;
    read_response(busy, &r, false);
    assert_call_answer(&r, 3, "finished in grace");
    response_free(&r);
    assert_true(client_closed_within(busy, PROMPT_MS, NULL));
    assert_int_equal(atomic_load(&block_cancelled), 0);
    mcp_server_free(f->srv);
    free(f);
    client_close(busy);
}

/* ------------------------------------------------------------------------
 * 16. A slow reader of a large answer
 * ------------------------------------------------------------------------ */

/* A client with a small receive buffer asks for the large resource and
 * reads nothing for a while, then all of it: every byte arrives, in
 * order, and the connection serves the next request. */
static void test_slow_reader(void **state)
{
    fixture_t *f = start((mcp_http_options_t){0});
    client_t *c = client_open(f, 4096);
    char *request = read_big_request(4);
    for (int round = 0; round < 2; round++) {
        client_send_str(c, request);
        sleep_ms(round == 0 ? 500 : 50); /* the server fills the socket, and waits */
        response_t r;
        read_response(c, &r, false);
        assert_int_equal(r.status, 200);
        assert_true(r.body_len > BIG_SIZE);
        json_t *msg = json_loadb(r.body, r.body_len, 0, NULL);
        assert_non_null(msg);
        assert_int_equal(json_integer_value(json_object_get(msg, "id")), 4);
        json_t *contents =
            json_array_get(json_object_get(json_object_get(msg, "result"), "contents"), 0);
        const char *text = json_string_value(json_object_get(contents, "text"));
        assert_non_null(text);
        assert_int_equal(json_string_length(json_object_get(contents, "text")), BIG_SIZE);
        assert_memory_equal(text, big_text, BIG_SIZE);
        if (round == 0)
            MCP_ASSERT_SCHEMA_VALID(msg, "resources/read", REVISION);
        json_decref(msg);
        response_free(&r);
    }
    call_ok(c, "echo", 5, "after the big one");
    free(request);
    client_close(c);
    stop(f);
}

int main(void)
{
    big_text = malloc(BIG_SIZE + 1);
    for (size_t i = 0; i < BIG_SIZE; i++)
        big_text[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    big_text[BIG_SIZE] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_pipelining),
        cmocka_unit_test(test_lent_thread),
        cmocka_unit_test(test_hangup_while_lent),
        cmocka_unit_test(test_stop_while_lent),
        cmocka_unit_test(test_computing_handler_moved),
        cmocka_unit_test(test_split_writes),
        cmocka_unit_test(test_chunked_body),
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_connection_close),
        cmocka_unit_test(test_streamed_answers),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_absolute_form),
        cmocka_unit_test(test_framing_errors),
        cmocka_unit_test(test_refused_body_dropped),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_hangup_cancels),
        cmocka_unit_test(test_hangup_with_input_full),
        cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_trickled_request),
        cmocka_unit_test(test_stalled_answer_times_out),
        cmocka_unit_test(test_stalled_stream),
        cmocka_unit_test(test_unread_answers_hold_the_pipeline),
        cmocka_unit_test(test_unread_answers_time_out),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_default_limit_follows_descriptors),
        cmocka_unit_test(test_out_of_descriptors),
        cmocka_unit_test(test_stop_with_connections),
        cmocka_unit_test(test_slow_reader),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    free(big_text);
    return failed;
}
