/*
 * The Streamable HTTP client transport (src/transport/http_client.c),
 * driven directly, without the client core, against a scripted HTTP server
 * (libmicrohttpd, one thread per connection, optionally over TLS) that
 * plays canned answers: JSON, event streams with every quirk, error
 * statuses, oversized bodies, and a raw socket that never answers at all.
 */
#define _GNU_SOURCE /* clock_gettime, nanosleep, strdup */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "client/transport.h"
#include "mcp/jsonrpc.h"
#include "mcp/probe.h"
#include "schema_check.h"
#include "transport/http_client.h"
#include "test_clock.h"

#define REVISION "2026-07-28"
#define WAIT_MS 10000 /* generous: the suite runs under sanitizers on 2 shared cores */

static void deadline_from_now(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* ------------------------------------------------------------------------
 * The scripted server
 * ------------------------------------------------------------------------ */

/* What the server answers, for every request until the next scene. "$ID"
 * in a chunk becomes the request's id. */
typedef struct scene {
    int status;
    const char *content_type;
    const char *header_name, *header_value; /* one extra response header */
    const char *chunks[16];                  /* the body, NULL-terminated */
    int gap_ms;       /* pause before each chunk after the first */
    bool forever;     /* after the chunks, a keep-alive comment every 20 ms */
    int barrier;      /* hold every answer until this many requests arrived */
    const struct scene *elsewhere; /* for any path but /mcp, when set */
} scene_t;

typedef struct server {
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    const scene_t *scene;
    bool stopping;
    int connections; /* TCP connections accepted */
    int requests;    /* requests read completely */
    int arrived;     /* for the barrier */
    int aborted;     /* requests that ended with an error (the client left) */
    int completed;   /* requests answered completely */
    char headers[8192]; /* the last request's headers: "lowercase-name\tvalue\n" */
    char body[8192];    /* and its body */
    char paths[1024];   /* the paths of the requests, in order, each followed by ' ' */
} server_t;

typedef struct request_state {
    char headers[8192];
    size_t headers_len;
    char *body;
    size_t body_len;
} request_state_t;

/* One answer being streamed. */
typedef struct stream {
    server_t *server;
    char *chunks[16];
    size_t count, index, offset;
    int gap_ms;
    bool forever;
} stream_t;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    request_state_t *rq = cls;
    char line[2048];
    int n = snprintf(line, sizeof line, "%s\t%s\n", key, value ? value : "");
    for (int i = 0; line[i] != '\t'; i++)
        line[i] = (char)(line[i] >= 'A' && line[i] <= 'Z' ? line[i] + 32 : line[i]);
    if (n > 0 && rq->headers_len + (size_t)n < sizeof rq->headers) {
        memcpy(rq->headers + rq->headers_len, line, (size_t)n);
        rq->headers_len += (size_t)n;
        rq->headers[rq->headers_len] = '\0';
    }
    return MHD_YES;
}

static char *replace_id(const char *text, const char *id)
{
    size_t cap = strlen(text) * 2 + strlen(id) * 8 + 1;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t len = 0;
    for (const char *p = text; *p;) {
        if (strncmp(p, "$ID", 3) == 0) {
            size_t n = strlen(id);
            assert_true(len + n < cap);
            memcpy(out + len, id, n);
            len += n;
            p += 3;
        } else {
            assert_true(len + 1 < cap);
            out[len++] = *p++;
        }
    }
    out[len] = '\0';
    return out;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream_t *st = cls;
    if (st->index < st->count) {
        if (st->offset == 0 && st->index > 0 && st->gap_ms)
            sleep_ms(st->gap_ms);
        const char *chunk = st->chunks[st->index];
        size_t n = strlen(chunk + st->offset);
        if (n > max)
            n = max;
        memcpy(buf, chunk + st->offset, n);
        st->offset += n;
        if (chunk[st->offset] == '\0') {
            st->index++;
            st->offset = 0;
        }
        if (n > 0)
            return (ssize_t)n;
    }
    if (!st->forever)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&st->server->lock);
    bool stopping = st->server->stopping;
    pthread_mutex_unlock(&st->server->lock);
    if (stopping)
        return MHD_CONTENT_READER_END_OF_STREAM;
    sleep_ms(20);
    static const char ping[] = ": keep-alive\n\n";
    memcpy(buf, ping, sizeof ping - 1);
    return (ssize_t)(sizeof ping - 1);
}

static void free_stream(void *cls)
{
    stream_t *st = cls;
    for (size_t i = 0; i < st->count; i++)
        free(st->chunks[i]);
    free(st);
}

/* The request's id as JSON text ("null" for a notification). */
static char *request_id_text(const request_state_t *rq)
{
    json_t *body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);
    json_t *id = json_object_get(body, "id");
    char *text = id ? json_dumps(id, JSON_ENCODE_ANY) : strdup("null");
    json_decref(body);
    return text;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req_cls)
{
    server_t *s = cls;
    request_state_t *rq = *req_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        assert_non_null(rq);
        MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, rq);
        *req_cls = rq;
        return MHD_YES;
    }
    if (*upload_size) {
        rq->body = realloc(rq->body, rq->body_len + *upload_size + 1);
        assert_non_null(rq->body);
        memcpy(rq->body + rq->body_len, upload, *upload_size);
        rq->body_len += *upload_size;
        rq->body[rq->body_len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }

    pthread_mutex_lock(&s->lock);
    s->requests++;
    s->arrived++;
    snprintf(s->headers, sizeof s->headers, "%s", rq->headers);
    snprintf(s->body, sizeof s->body, "%s", rq->body ? rq->body : "");
    size_t used = strlen(s->paths);
    snprintf(s->paths + used, sizeof s->paths - used, "%s ", url);
    const scene_t *scene = s->scene;
    if (scene->elsewhere && strcmp(url, "/mcp") != 0)
        scene = scene->elsewhere;
    pthread_cond_broadcast(&s->changed);
    if (scene->barrier) {
        struct timespec until;
        deadline_from_now(&until, WAIT_MS);
        while (s->arrived < scene->barrier && !s->stopping)
            if (pthread_cond_timedwait(&s->changed, &s->lock, &until) != 0)
                break;
    }
    pthread_mutex_unlock(&s->lock);

    stream_t *st = calloc(1, sizeof *st);
    assert_non_null(st);
    st->server = s;
    st->gap_ms = scene->gap_ms;
    st->forever = scene->forever;
    char *id = request_id_text(rq);
    for (; scene->chunks[st->count]; st->count++)
        st->chunks[st->count] = replace_id(scene->chunks[st->count], id);
    free(id);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_stream, st, free_stream);
    assert_non_null(r);
    if (scene->content_type)
        MHD_add_response_header(r, "Content-Type", scene->content_type);
    if (scene->header_name)
        MHD_add_response_header(r, scene->header_name, scene->header_value);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)scene->status, r);
    MHD_destroy_response(r);
    return ok;
}

static void request_done(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    server_t *s = cls;
    request_state_t *rq = *req_cls;
    if (rq) {
        free(rq->body);
        free(rq);
        *req_cls = NULL;
    }
    pthread_mutex_lock(&s->lock);
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        s->completed++;
    else
        s->aborted++;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode toe)
{
    server_t *s = cls;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED)
        return;
    pthread_mutex_lock(&s->lock);
    s->connections++;
    pthread_mutex_unlock(&s->lock);
}

/* Starts the server on a loopback port; with a key and certificate (PEM)
 * it speaks HTTPS. */
static void server_start_tls(server_t *s, const scene_t *scene, const char *key_pem,
                             const char *cert_pem)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    s->scene = scene;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | (key_pem ? MHD_USE_TLS : 0);
    struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key_pem},
                                   {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert_pem},
                                   {MHD_OPTION_END, 0, NULL}};
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
                                 request_done, s, MHD_OPTION_NOTIFY_CONNECTION,
                                 connection_event, s, MHD_OPTION_ARRAY,
                                 key_pem ? tls : tls + 2, MHD_OPTION_END);
    assert_non_null(s->daemon);
    s->port = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
}

static void server_start(server_t *s, const scene_t *scene)
{
    server_start_tls(s, scene, NULL, NULL);
}

static void server_play(server_t *s, const scene_t *scene)
{
    pthread_mutex_lock(&s->lock);
    s->scene = scene;
    s->arrived = 0;
    pthread_mutex_unlock(&s->lock);
}

static void server_stop(server_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    MHD_stop_daemon(s->daemon);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
}

/* Reads a counter of the server under its lock. */
static int server_count(server_t *s, const int *counter)
{
    pthread_mutex_lock(&s->lock);
    int n = *counter;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Waits until *counter reaches `want`. */
static bool server_wait(server_t *s, const int *counter, int want)
{
    struct timespec until;
    deadline_from_now(&until, WAIT_MS);
    pthread_mutex_lock(&s->lock);
    while (*counter < want)
        if (pthread_cond_timedwait(&s->changed, &s->lock, &until) != 0)
            break;
    bool ok = *counter >= want;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* The value of a header of the last request, or NULL. */
static const char *last_header(server_t *s, const char *name, char *out, size_t size)
{
    pthread_mutex_lock(&s->lock);
    const char *found = NULL;
    size_t n = strlen(name);
    for (const char *line = s->headers; *line;) {
        const char *end = strchr(line, '\n');
        if (strncasecmp(line, name, n) == 0 && line[n] == '\t') {
            size_t len = (size_t)(end - line) - n - 1;
            snprintf(out, size, "%.*s", (int)len, line + n + 1);
            found = out;
            break;
        }
        line = end + 1;
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

static char *url_of(const server_t *s)
{
    char *url = malloc(64);
    assert_non_null(url);
    snprintf(url, 64, "http://127.0.0.1:%d/mcp", s->port);
    return url;
}

/* The last request's body, parsed (NULL when it is not JSON). */
static json_t *last_body(server_t *s)
{
    pthread_mutex_lock(&s->lock);
    json_t *body = json_loads(s->body, 0, NULL);
    pthread_mutex_unlock(&s->lock);
    return body;
}

/* The paths of the requests so far, each followed by a space. */
static void assert_paths(server_t *s, const char *want)
{
    pthread_mutex_lock(&s->lock);
    char paths[sizeof s->paths];
    memcpy(paths, s->paths, sizeof paths);
    pthread_mutex_unlock(&s->lock);
    assert_string_equal(paths, want);
}

/* ------------------------------------------------------------------------
 * A server that accepts one connection and never answers
 * ------------------------------------------------------------------------ */

typedef struct silent_server {
    int listen_fd;
    int port;
    pthread_t thread;
    pthread_mutex_t lock;
    bool accepted, closed_by_client;
} silent_server_t;

static void *silent_main(void *arg)
{
    silent_server_t *s = arg;
    struct pollfd pfd = {s->listen_fd, POLLIN, 0};
    if (poll(&pfd, 1, WAIT_MS) != 1)
        return NULL;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    pthread_mutex_lock(&s->lock);
    s->accepted = true;
    pthread_mutex_unlock(&s->lock);
    char buf[4096];
    for (;;) {
        struct pollfd cfd = {fd, POLLIN, 0};
        if (poll(&cfd, 1, WAIT_MS) != 1)
            break;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            pthread_mutex_lock(&s->lock);
            s->closed_by_client = true;
            pthread_mutex_unlock(&s->lock);
            break;
        }
    }
    close(fd);
    return NULL;
}

static void silent_start(silent_server_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->listen_fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(s->listen_fd, 4), 0);
    socklen_t len = sizeof sa;
    getsockname(s->listen_fd, (struct sockaddr *)&sa, &len);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, silent_main, s), 0);
}

static bool silent_flag(silent_server_t *s, const bool *flag)
{
    pthread_mutex_lock(&s->lock);
    bool v = *flag;
    pthread_mutex_unlock(&s->lock);
    return v;
}

static void silent_stop(silent_server_t *s)
{
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    pthread_mutex_destroy(&s->lock);
}

/* ------------------------------------------------------------------------
 * The client side: one call and what the transport told it
 * ------------------------------------------------------------------------ */

typedef struct call {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;               /* how many times on_done ran (must end at 1) */
    bool late_notification; /* a notification after on_done */
    int rc, status;
    char why[256], content_type[128], challenge[512];
    char body[1024];
    size_t body_len;
    json_t *response;
    json_t *notifications; /* every notification, in order */
} call_t;

static void call_init(call_t *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->notifications = json_array();
}

static void call_clear(call_t *c)
{
    json_decref(c->response);
    json_decref(c->notifications);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
}

static void on_notification(void *user, const json_t *msg)
{
    call_t *c = user;
    pthread_mutex_lock(&c->lock);
    if (c->done)
        c->late_notification = true;
    json_array_append(c->notifications, (json_t *)msg);
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
    snprintf(c->challenge, sizeof c->challenge, "%s",
             out->www_authenticate ? out->www_authenticate : "");
    c->body_len = out->body_len < sizeof c->body ? out->body_len : sizeof c->body - 1;
    if (c->body_len)
        memcpy(c->body, out->body, c->body_len);
    c->body[c->body_len] = '\0';
    /* Take the response, as the core does. */
    c->response = out->response;
    out->response = NULL;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static const client_exchange_events_t events = {on_notification, on_done};

static bool call_wait(call_t *c, int ms)
{
    struct timespec until;
    deadline_from_now(&until, ms);
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &until) != 0)
            break;
    bool done = c->done > 0;
    pthread_mutex_unlock(&c->lock);
    return done;
}

static int call_done_count(call_t *c)
{
    pthread_mutex_lock(&c->lock);
    int n = c->done;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* A tools/call request with the 2026-07-28 envelope. */
static json_t *tool_request(json_int_t id, const char *name)
{
    return json_pack("{s:s, s:I, s:s, s:{s:s, s:{}, s:{s:s, s:{}, s:{s:s, s:s}}}}", "jsonrpc",
                     "2.0", "id", id, "method", "tools/call", "params", "name", name,
                     "arguments", "_meta", "io.modelcontextprotocol/protocolVersion", REVISION,
                     "io.modelcontextprotocol/clientCapabilities",
                     "io.modelcontextprotocol/clientInfo", "name", "test", "version", "1");
}

static const client_http_hints_t tool_hints = {
    .protocol_version = REVISION, .method = "tools/call", .name = "echo"};

/* The transport for `target`, or NULL when client_http_new() refused it. */
static client_transport_t *new_http(const mcp_http_target_t *target,
                                    const client_transport_hooks_t *hooks, mcp_error_t *err)
{
    client_transport_t *t = NULL;
    return client_http_new(target, hooks, &t, err) == MCP_OK ? t : NULL;
}

static client_transport_t *transport_hooked(const server_t *s, const client_http_limits_t *limits,
                                            const client_transport_hooks_t *hooks)
{
    char *url = url_of(s);
    mcp_error_t err = {0};
    client_transport_t *t = NULL;
    if (client_http_new_with_limits(&(mcp_http_target_t){.url = url}, limits, hooks, &t, &err) !=
        MCP_OK)
        fail_msg("client_http_new: %s", err.message);
    free(url);
    return t;
}

static client_transport_t *transport_for(const server_t *s, const client_http_limits_t *limits)
{
    return transport_hooked(s, limits, NULL);
}

/* Starts a tools/call on t and waits for its outcome. */
static void call_tool(client_transport_t *t, json_int_t id, call_t *c)
{
    call_init(c);
    json_t *req = tool_request(id, "echo");
    client_exchange_t *ex = NULL;
    assert_int_equal(t->ops->start(t, req, &tool_hints, &events, c, &ex), MCP_OK);
    json_decref(req);
    if (!call_wait(c, WAIT_MS))
        fail_msg("call %lld: no outcome", (long long)id);
    t->ops->release(t, ex);
}

static void transport_free(client_transport_t *t)
{
    t->ops->close(t);
    t->ops->free(t);
}

/* One tools/call against a server that plays `scene`; the server and the
 * transport are gone when it returns, the outcome stays in *c
 * (call_clear it). */
static void call_scene(const scene_t *scene, json_int_t id, call_t *c)
{
    server_t s;
    server_start(&s, scene);
    client_transport_t *t = transport_for(&s, NULL);
    call_tool(t, id, c);
    transport_free(t);
    server_stop(&s);
}

/* The probe verdict for an outcome, as the core would classify it. */
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
 * Canned messages
 * ------------------------------------------------------------------------ */

#define SERVER_INFO \
    "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"script\",\"version\":\"1\"}}"
#define TOOL_RESULT                                                                         \
    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":" \
    "\"hi\"}],\"resultType\":\"complete\"," SERVER_INFO "}}"
#define PROGRESS(n)                                                               \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"     \
    "\"progressToken\":$ID,\"progress\":" #n ",\"total\":2}}"
#define LOG_MESSAGE                                                                          \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"," \
    "\"data\":\"working\"}}"
#define ERROR_32022                                                                         \
    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"error\":{\"code\":-32022,\"message\":\"Unsupported " \
    "protocol version\",\"data\":{\"supported\":[\"2026-07-28\"],\"requested\":\"2099-01-01\"}}}"
#define ERROR_32601 \
    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}"

static void assert_tool_result(const call_t *c, json_int_t id)
{
    if (c->rc != MCP_OK)
        fail_msg("rc %d (%s)", c->rc, c->why);
    assert_non_null(c->response);
    assert_int_equal(json_integer_value(json_object_get(c->response, "id")), id);
    MCP_ASSERT_SCHEMA_VALID(c->response, "tools/call", REVISION);
}

/* ------------------------------------------------------------------------
 * Answers
 * ------------------------------------------------------------------------ */

static void test_json_response(void **state)
{
    (void)state;
    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    call_t c;
    call_scene(&json, 7, &c);
    assert_tool_result(&c, 7);
    assert_int_equal(c.status, 200);
    assert_string_equal(c.content_type, "application/json");
    assert_int_equal(json_array_size(c.notifications), 0);
    call_clear(&c);
}

static void test_sse_notifications_then_response(void **state)
{
    (void)state;
    static const scene_t sse = {200, "text/event-stream", .gap_ms = 20,
                                .chunks = {"event: message\ndata: " PROGRESS(1) "\n\n",
                                           "event: message\ndata: " LOG_MESSAGE "\n\n",
                                           "event: message\ndata: " PROGRESS(2) "\n\n",
                                           "event: message\ndata: " TOOL_RESULT "\n\n"}};
    call_t c;
    call_scene(&sse, 3, &c);
    assert_tool_result(&c, 3);
    assert_int_equal(json_array_size(c.notifications), 3);
    const char *methods[] = {"notifications/progress", "notifications/message",
                             "notifications/progress"};
    for (size_t i = 0; i < 3; i++) {
        json_t *n = json_array_get(c.notifications, i);
        assert_string_equal(json_string_value(json_object_get(n, "method")), methods[i]);
        MCP_ASSERT_SCHEMA_VALID(n, NULL, REVISION);
    }
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(c.notifications, 2), "params"),
                         "progress")),
                     2);
    assert_false(c.late_notification);
    call_clear(&c);
}

/* Comments, event names, CRLF line ends, a legacy priming event with an id
 * and empty data, a retry field, and a message cut across TCP writes in
 * the middle of a line and of a CRLF. */
static void test_sse_quirks(void **state)
{
    (void)state;
    static const scene_t quirks = {
        200, "text/event-stream; charset=utf-8", .gap_ms = 15,
        .chunks = {": stream opened\r\n\r\n",
                   "id: 73f29b04\r\ndata: \r\n\r\n",
                   "retry: 3000\r\nevent: message\r\nid: 2\r\ndata: " PROGRESS(1) "\r\n\r\n",
                   "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":",
                   "$ID,\"result\":{\"content\":[],\"resultType\":\"complete\"," SERVER_INFO
                   "}}\r",
                   "\n\r\n"}};
    call_t c;
    call_scene(&quirks, 11, &c);
    assert_tool_result(&c, 11);
    assert_int_equal(json_array_size(c.notifications), 1);
    call_clear(&c);
}

static void test_sse_ends_without_response(void **state)
{
    (void)state;
    static const scene_t cut = {200, "text/event-stream",
                                .chunks = {"data: " PROGRESS(1) "\n\n"}};
    call_t c;
    call_scene(&cut, 1, &c);
    assert_int_equal(c.rc, MCP_ECLOSED);
    assert_non_null(strstr(c.why, "ended before the response"));
    assert_null(c.response);
    assert_int_equal(json_array_size(c.notifications), 1);
    call_clear(&c);
}

/* A legacy server's request on the stream goes to on_unrouted. */
static int unrouted_count;
static void count_unrouted(void *user, const json_t *msg)
{
    (void)user;
    if (json_object_get(msg, "method"))
        __atomic_add_fetch(&unrouted_count, 1, __ATOMIC_SEQ_CST);
}

static void test_sse_other_messages_unrouted(void **state)
{
    (void)state;
    static const scene_t legacy = {
        200, "text/event-stream",
        .chunks = {"data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"roots/list\"}\n\n",
                   "data: " TOOL_RESULT "\n\n"}};
    server_t s;
    server_start(&s, &legacy);
    unrouted_count = 0;
    client_transport_t *t =
        transport_hooked(&s, NULL, &(client_transport_hooks_t){.on_unrouted = count_unrouted});
    call_t c;
    call_tool(t, 2, &c);
    assert_tool_result(&c, 2);
    assert_int_equal(__atomic_load_n(&unrouted_count, __ATOMIC_SEQ_CST), 1);
    call_clear(&c);
    transport_free(t);
    server_stop(&s);
}

/* Callbacks run on the transport thread and may call the transport: a
 * notification sent from there is queued (not waited for, which would
 * deadlock), and a cancel from there ends the exchange. */
typedef struct reentrant {
    client_transport_t *t;
    client_exchange_t *ex;
    call_t call;
    int notify_rc;
} reentrant_t;

static void notify_and_cancel(void *user, const json_t *msg)
{
    reentrant_t *r = user;
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/progress");
    r->notify_rc = r->t->ops->notify(r->t, note, NULL);
    json_decref(note);
    on_notification(&r->call, msg);
    pthread_mutex_lock(&r->call.lock);
    client_exchange_t *ex = r->ex; /* set once start() returned */
    pthread_mutex_unlock(&r->call.lock);
    if (ex)
        r->t->ops->cancel(r->t, ex, true);
}

static void reentrant_done(void *user, client_outcome_t *out)
{
    on_done(&((reentrant_t *)user)->call, out);
}

static void test_callbacks_may_call_the_transport(void **state)
{
    (void)state;
    static const scene_t endless = {200, "text/event-stream", .forever = true, .gap_ms = 50,
                                    .chunks = {": hi\n\n", "data: " PROGRESS(1) "\n\n",
                                               "data: " PROGRESS(1) "\n\n",
                                               "data: " PROGRESS(1) "\n\n",
                                               "data: " PROGRESS(1) "\n\n"}};
    server_t s;
    server_start(&s, &endless);
    reentrant_t r = {.t = transport_for(&s, NULL)};
    call_init(&r.call);
    static const client_exchange_events_t reentrant_events = {notify_and_cancel, reentrant_done};
    json_t *req = tool_request(1, "slow");
    client_exchange_t *ex = NULL;
    assert_int_equal(r.t->ops->start(r.t, req, &tool_hints, &reentrant_events, &r, &ex), MCP_OK);
    json_decref(req);
    pthread_mutex_lock(&r.call.lock);
    r.ex = ex;
    pthread_mutex_unlock(&r.call.lock);
    assert_true(call_wait(&r.call, WAIT_MS));
    assert_int_equal(r.call.rc, MCP_ECANCELED);
    assert_int_equal(r.notify_rc, MCP_OK);
    assert_true(server_wait(&s, &s.requests, 2)); /* the notification went out */
    r.t->ops->release(r.t, ex);
    transport_free(r.t);
    call_clear(&r.call);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * Error statuses, as the era probe sees them
 * ------------------------------------------------------------------------ */

static void test_400_unsupported_version(void **state)
{
    (void)state;
    static const scene_t bad_version = {400, "application/json", .chunks = {ERROR_32022}};
    call_t c;
    call_scene(&bad_version, 4, &c);
    assert_int_equal(c.rc, MCP_OK);
    assert_int_equal(c.status, 400);
    assert_non_null(c.response);
    MCP_ASSERT_SCHEMA_VALID(c.response, NULL, REVISION);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c.response, "error"),
                                                        "code")),
                     -32022);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_MODERN_RETRY);
    call_clear(&c);
}

static void test_404_method_not_found(void **state)
{
    (void)state;
    static const scene_t not_found = {404, "application/json", .chunks = {ERROR_32601}};
    call_t c;
    call_scene(&not_found, 5, &c);
    assert_int_equal(c.rc, MCP_OK);
    assert_int_equal(c.status, 404);
    assert_non_null(c.response);
    MCP_ASSERT_SCHEMA_VALID(c.response, NULL, REVISION);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_LEGACY);
    call_clear(&c);
}

static void test_405_empty(void **state)
{
    (void)state;
    static const scene_t not_allowed = {405, NULL, .header_name = "Allow",
                                        .header_value = "GET"};
    call_t c;
    call_scene(&not_allowed, 6, &c);
    assert_int_equal(c.rc, MCP_EIO);
    assert_int_equal(c.status, 405);
    assert_string_equal(c.why, "HTTP 405");
    assert_int_equal(c.body_len, 0);
    assert_null(c.response);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_LEGACY);
    call_clear(&c);
}

static void test_401_challenge(void **state)
{
    (void)state;
    static const scene_t unauthorized = {
        401, "application/json", .header_name = "WWW-Authenticate",
        .header_value = "Bearer resource_metadata=\"http://127.0.0.1/.well-known/x\"",
        .chunks = {"{\"error\":\"invalid_token\"}"}};
    call_t c;
    call_scene(&unauthorized, 8, &c);
    assert_int_equal(c.rc, MCP_EAUTH);
    assert_int_equal(c.status, 401);
    assert_string_equal(c.challenge,
                        "Bearer resource_metadata=\"http://127.0.0.1/.well-known/x\"");
    assert_string_equal(c.body, "{\"error\":\"invalid_token\"}");
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_AUTHORIZE);
    call_clear(&c);
}

static void test_500_html(void **state)
{
    (void)state;
    static const scene_t broken = {500, "text/html",
                                   .chunks = {"<html><body>Internal Server Error</body></html>"}};
    call_t c;
    call_scene(&broken, 9, &c);
    assert_int_equal(c.rc, MCP_EIO);
    assert_int_equal(c.status, 500);
    assert_string_equal(c.content_type, "text/html");
    assert_string_equal(c.body, "<html><body>Internal Server Error</body></html>");
    assert_null(c.response);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_RETRY);
    call_clear(&c);
}

static void test_connection_refused(void **state)
{
    (void)state;
    /* A port nobody listens on: bind one, then close it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", ntohs(sa.sin_port));
    client_transport_t *t =
        new_http(&(mcp_http_target_t){.url = url}, NULL, NULL);
    assert_non_null(t);
    call_t c;
    call_tool(t, 1, &c);
    assert_int_equal(c.rc, MCP_EIO);
    assert_int_equal(c.status, 0);
    assert_true(strlen(c.why) > 0);
    assert_int_equal(probe_verdict(&c), MCP_VERDICT_RETRY);
    call_clear(&c);
    transport_free(t);
}

/* ------------------------------------------------------------------------
 * Limits
 * ------------------------------------------------------------------------ */

#define KB_OF_X                                                                             \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxx"

static void test_body_over_limit(void **state)
{
    (void)state;
    static const client_http_limits_t small = {.reply = {.max_body_bytes = 2048,
                                                         .max_event_bytes = 2048,
                                                         .max_error_body_bytes = 512}};
    /* A JSON body of about 4 KiB, an endless one, an event of 4 KiB, and an
     * error page of 4 KiB. */
    static const scene_t big_json = {
        200, "application/json",
        .chunks = {"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"x\":\"", KB_OF_X, KB_OF_X,
                   KB_OF_X, KB_OF_X, "\"}}"}};
    static const scene_t endless_json = {200, "application/json", .forever = true,
                                         .chunks = {"{\"jsonrpc\":\"2.0\",\"id\":$ID,"}};
    static const scene_t big_event = {
        200, "text/event-stream",
        .chunks = {"data: " PROGRESS(1) "\n\ndata: {\"jsonrpc\":\"2.0\",\"x\":\"", KB_OF_X,
                   KB_OF_X, KB_OF_X, KB_OF_X, "\"}\n\n"}};
    static const scene_t big_error = {500, "text/html",
                                      .chunks = {KB_OF_X, KB_OF_X, KB_OF_X, KB_OF_X}};
    server_t s;
    server_start(&s, &big_json);
    client_transport_t *t = transport_for(&s, &small);
    call_t c;

    call_tool(t, 1, &c);
    assert_int_equal(c.rc, MCP_ELIMIT);
    assert_non_null(strstr(c.why, "exceeds 2048 bytes"));
    call_clear(&c);

    server_play(&s, &endless_json);
    call_tool(t, 2, &c);
    assert_int_equal(c.rc, MCP_ELIMIT);
    call_clear(&c);

    server_play(&s, &big_event);
    call_tool(t, 3, &c);
    assert_int_equal(c.rc, MCP_ELIMIT);
    assert_non_null(strstr(c.why, "event"));
    assert_int_equal(json_array_size(c.notifications), 1);
    call_clear(&c);

    server_play(&s, &big_error);
    call_tool(t, 4, &c);
    assert_int_equal(c.rc, MCP_EIO);
    assert_int_equal(c.status, 500);
    assert_int_equal(c.body_len, 512);
    call_clear(&c);

    transport_free(t);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * Cancellation and closing
 * ------------------------------------------------------------------------ */

static void test_cancel_never_answers(void **state)
{
    (void)state;
    silent_server_t s;
    silent_start(&s);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", s.port);
    client_transport_t *t = new_http(&(mcp_http_target_t){.url = url}, NULL, NULL);
    assert_non_null(t);

    call_t c;
    call_init(&c);
    json_t *req = tool_request(1, "slow");
    client_exchange_t *ex = NULL;
    assert_int_equal(t->ops->start(t, req, &tool_hints, &events, &c, &ex), MCP_OK);
    json_decref(req);
    for (int i = 0; i < 500 && !silent_flag(&s, &s.accepted); i++)
        sleep_ms(10);
    assert_true(silent_flag(&s, &s.accepted));
    assert_false(call_wait(&c, 200)); /* it really hangs */

    int64_t start = now_ms();
    t->ops->cancel(t, ex, true);
    assert_true(call_wait(&c, WAIT_MS));
    assert_true(now_ms() - start < 2000);
    assert_int_equal(c.rc, MCP_ECANCELED);
    for (int i = 0; i < 500 && !silent_flag(&s, &s.closed_by_client); i++)
        sleep_ms(10);
    assert_true(silent_flag(&s, &s.closed_by_client));

    t->ops->cancel(t, ex, true); /* again: nothing more happens */
    t->ops->release(t, ex);
    transport_free(t);
    assert_int_equal(call_done_count(&c), 1);
    call_clear(&c);
    silent_stop(&s);
}

static void test_cancel_open_stream(void **state)
{
    (void)state;
    static const scene_t endless = {200, "text/event-stream", .forever = true,
                                    .chunks = {"data: " PROGRESS(1) "\n\n"}};
    server_t s;
    server_start(&s, &endless);
    client_transport_t *t = transport_for(&s, NULL);
    call_t c;
    call_init(&c);
    json_t *req = tool_request(1, "slow");
    client_exchange_t *ex = NULL;
    client_http_hints_t listen = tool_hints;
    listen.long_lived = true;
    assert_int_equal(t->ops->start(t, req, &listen, &events, &c, &ex), MCP_OK);
    json_decref(req);
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&c.lock);
        size_t n = json_array_size(c.notifications);
        pthread_mutex_unlock(&c.lock);
        if (n)
            break;
        sleep_ms(10);
    }
    assert_false(call_wait(&c, 100));
    t->ops->cancel(t, ex, false);
    assert_true(call_wait(&c, WAIT_MS));
    assert_int_equal(c.rc, MCP_ECANCELED);
    assert_int_equal(json_array_size(c.notifications), 1);
    /* The server notices on its next keep-alive write. */
    assert_true(server_wait(&s, &s.aborted, 1));
    t->ops->release(t, ex);
    transport_free(t);
    call_clear(&c);
    server_stop(&s);
}

static void test_close_ends_everything(void **state)
{
    (void)state;
    static const scene_t endless = {200, "text/event-stream", .forever = true,
                                    .chunks = {": open\n\n"}};
    server_t s;
    server_start(&s, &endless);
    client_transport_t *t = transport_for(&s, NULL);
    call_t calls[3];
    client_exchange_t *ex[3];
    for (int i = 0; i < 3; i++) {
        call_init(&calls[i]);
        json_t *req = tool_request(i + 1, "slow");
        assert_int_equal(t->ops->start(t, req, &tool_hints, &events, &calls[i], &ex[i]), MCP_OK);
        json_decref(req);
    }
    assert_true(server_wait(&s, &s.requests, 3));
    t->ops->close(t);
    for (int i = 0; i < 3; i++) {
        /* close() returns once every outcome went out. */
        assert_int_equal(call_done_count(&calls[i]), 1);
        assert_int_equal(calls[i].rc, MCP_ECLOSED);
        t->ops->release(t, ex[i]);
        call_clear(&calls[i]);
    }
    /* Nothing starts on a closed transport. */
    call_t late;
    call_init(&late);
    json_t *req = tool_request(9, "echo");
    client_exchange_t *none = NULL;
    assert_int_equal(t->ops->start(t, req, &tool_hints, &events, &late, &none), MCP_ECLOSED);
    assert_int_equal(t->ops->notify(t, req, &tool_hints), MCP_ECLOSED);
    json_decref(req);
    assert_int_equal(call_done_count(&late), 0);
    call_clear(&late);
    t->ops->close(t); /* twice is fine */
    t->ops->free(t);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * Concurrency and connection reuse
 * ------------------------------------------------------------------------ */

#define CONCURRENT 50

static void test_concurrent_requests(void **state)
{
    (void)state;
    /* The server holds every answer until all requests arrived: they can
     * only all succeed if they were in flight together. */
    static const scene_t together = {200, "text/event-stream", .barrier = CONCURRENT,
                                     .chunks = {"data: " PROGRESS(1) "\n\n",
                                                "data: " TOOL_RESULT "\n\n"}};
    server_t s;
    server_start(&s, &together);
    client_transport_t *t = transport_for(&s, NULL);
    static call_t calls[CONCURRENT];
    client_exchange_t *ex[CONCURRENT];
    for (int i = 0; i < CONCURRENT; i++) {
        call_init(&calls[i]);
        json_t *req = tool_request(100 + i, "echo");
        assert_int_equal(t->ops->start(t, req, &tool_hints, &events, &calls[i], &ex[i]), MCP_OK);
        json_decref(req);
    }
    for (int i = 0; i < CONCURRENT; i++) {
        assert_true(call_wait(&calls[i], WAIT_MS));
        assert_tool_result(&calls[i], 100 + i);
        assert_int_equal(json_array_size(calls[i].notifications), 1);
        t->ops->release(t, ex[i]);
        call_clear(&calls[i]);
    }
    assert_int_equal(server_count(&s, &s.requests), CONCURRENT);
    transport_free(t);
    server_stop(&s);
}

static void test_connection_reuse(void **state)
{
    (void)state;
    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    /* The stream ends a moment after the response (the empty chunk). */
    static const scene_t sse = {200, "text/event-stream", .gap_ms = 30,
                                .chunks = {"data: " PROGRESS(1) "\n\n",
                                           "data: " TOOL_RESULT "\n\n", ""}};
    static const scene_t accepted = {202, NULL};
    server_t s;
    server_start(&s, &json);
    client_transport_t *t = transport_for(&s, NULL);
    for (int i = 0; i < 5; i++) {
        call_t c;
        call_tool(t, i, &c);
        assert_tool_result(&c, i);
        call_clear(&c);
    }
    /* Streams the server ends after the response are drained, not cut. */
    server_play(&s, &sse);
    for (int i = 0; i < 5; i++) {
        call_t c;
        call_tool(t, 10 + i, &c);
        assert_tool_result(&c, 10 + i);
        call_clear(&c);
        assert_true(server_wait(&s, &s.completed, 6 + i));
    }
    server_play(&s, &accepted);
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
                             "notifications/initialized");
    assert_int_equal(t->ops->notify(t, note, NULL), MCP_OK);
    json_decref(note);
    assert_int_equal(server_count(&s, &s.requests), 11);
    assert_int_equal(server_count(&s, &s.connections), 1);
    assert_int_equal(server_count(&s, &s.aborted), 0);
    transport_free(t);
    server_stop(&s);
}

/* A stream the server keeps open after the response (here with endless
 * keep-alive comments) is cut after drain_ms; the outcome does not wait. */
static void test_drain_expires(void **state)
{
    (void)state;
    static const client_http_limits_t short_drain = {.drain_ms = 50};
    static const scene_t lingering = {200, "text/event-stream", .forever = true,
                                      .chunks = {"data: " TOOL_RESULT "\n\n"}};
    server_t s;
    server_start(&s, &lingering);
    client_transport_t *t = transport_for(&s, &short_drain);
    call_t c;
    call_tool(t, 1, &c);
    assert_tool_result(&c, 1);
    call_clear(&c);
    /* The server finds the connection gone on its next writes. */
    assert_true(server_wait(&s, &s.aborted, 1));
    assert_int_equal(server_count(&s, &s.completed), 0);
    transport_free(t);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * What goes on the wire
 * ------------------------------------------------------------------------ */

static void assert_header(server_t *s, const char *name, const char *want)
{
    char value[1024];
    const char *got = last_header(s, name, value, sizeof value);
    if (!want) {
        if (got)
            fail_msg("header %s: unexpected \"%s\"", name, got);
        return;
    }
    if (!got)
        fail_msg("header %s: missing", name);
    if (strcmp(got, want) != 0)
        fail_msg("header %s: \"%s\", want \"%s\"", name, got, want);
}

static void test_headers_sent(void **state)
{
    (void)state;
    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    server_t s;
    server_start(&s, &json);
    char *url = url_of(&s);
    const char *extra[] = {"X-Trace: abc-123", "X-Tenant:blue", NULL};
    client_transport_t *t = new_http(
        &(mcp_http_target_t){.url = url, .headers = extra, .bearer_token = "tok-42"}, NULL, NULL);
    assert_non_null(t);
    free(url);

    const mcp_header_t params[] = {{"Region", "us-west1"},
                                   {"Greeting", "=?base64?SGVsbG8sIOS4lueVjA==?="},
                                   {"Empty", ""}};
    client_http_hints_t hints = {.protocol_version = REVISION,
                                 .method = "tools/call",
                                 .name = "h\xc3\xa9llo",
                                 .params = params,
                                 .n_params = 3};
    call_t c;
    call_init(&c);
    json_t *req = tool_request(12, "h\xc3\xa9llo");
    client_exchange_t *ex;
    assert_int_equal(t->ops->start(t, req, &hints, &events, &c, &ex), MCP_OK);
    assert_true(call_wait(&c, WAIT_MS));
    assert_tool_result(&c, 12);

    assert_header(&s, "Content-Type", "application/json");
    assert_header(&s, "Accept", "application/json, text/event-stream");
    assert_header(&s, "MCP-Protocol-Version", REVISION);
    assert_header(&s, "Mcp-Method", "tools/call");
    assert_header(&s, "Mcp-Name", "=?base64?aMOpbGxv?=");
    assert_header(&s, "Mcp-Param-Region", "us-west1");
    assert_header(&s, "Mcp-Param-Greeting", "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_header(&s, "Mcp-Param-Empty", "");
    assert_header(&s, "X-Trace", "abc-123");
    assert_header(&s, "X-Tenant", "blue");
    assert_header(&s, "Authorization", "Bearer tok-42");
    assert_header(&s, "Expect", NULL);
    /* The body is the request, unchanged. */
    json_t *body = last_body(&s);
    assert_non_null(body);
    assert_true(json_equal(body, req));
    json_decref(body);
    json_decref(req);
    t->ops->release(t, ex);
    call_clear(&c);

    /* A plain name goes as is; notifications carry the same headers. */
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/cancelled");
    client_http_hints_t note_hints = {.protocol_version = REVISION,
                                      .method = "notifications/cancelled"};
    static const scene_t accepted = {202, NULL};
    server_play(&s, &accepted);
    assert_int_equal(t->ops->notify(t, note, &note_hints), MCP_OK);
    json_decref(note);
    assert_header(&s, "Mcp-Method", "notifications/cancelled");
    assert_header(&s, "Mcp-Name", NULL);
    assert_header(&s, "Authorization", "Bearer tok-42");

    transport_free(t);
    server_stop(&s);
}

/* Headers that would break the framing are refused before anything is sent. */
static void test_header_injection_refused(void **state)
{
    (void)state;
    client_transport_t *t =
        new_http(&(mcp_http_target_t){.url = "http://127.0.0.1:9/mcp"}, NULL, NULL);
    assert_non_null(t);
    json_t *req = tool_request(1, "echo");
    call_t c;
    call_init(&c);
    client_exchange_t *ex = NULL;
    const client_http_hints_t bad[] = {
        {.protocol_version = "2026-07-28\r\nX-Evil: 1", .method = "tools/call"},
        {.method = "tools/call\nX-Evil: 1"},
        {.name = "bad\xff utf-8"},
        {.params = (const mcp_header_t[]){{"Bad Name", "v"}}, .n_params = 1},
        {.params = (const mcp_header_t[]){{"Region", "v\r\nX-Evil: 1"}}, .n_params = 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(t->ops->start(t, req, &bad[i], &events, &c, &ex), MCP_EINVAL);
    json_t *not_request = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "x");
    assert_int_equal(t->ops->start(t, not_request, &tool_hints, &events, &c, &ex), MCP_EINVAL);
    json_decref(not_request);
    json_decref(req);
    assert_int_equal(call_done_count(&c), 0);
    call_clear(&c);
    transport_free(t);
}

static void test_bad_targets(void **state)
{
    (void)state;
    const char *bad_line[] = {"no colon", NULL};
    const char *bad_name[] = {"Bad Name: x", NULL};
    const char *crlf[] = {"X-A: 1\r\nX-B: 2", NULL};
    const char *managed[] = {"mcp-method: tools/call", NULL};
    const char *param[] = {"Mcp-Param-Region: x", NULL};
    const char *auth[] = {"Authorization: Basic eA==", NULL};
    const mcp_http_target_t targets[] = {
        {.url = NULL},
        {.url = "ftp://example.com/mcp"},
        {.url = "file:///etc/passwd"},
        {.url = "not a url"},
        {.url = "http://127.0.0.1/mcp", .headers = bad_line},
        {.url = "http://127.0.0.1/mcp", .headers = bad_name},
        {.url = "http://127.0.0.1/mcp", .headers = crlf},
        {.url = "http://127.0.0.1/mcp", .headers = managed},
        {.url = "http://127.0.0.1/mcp", .headers = param},
        {.url = "http://127.0.0.1/mcp", .headers = auth, .bearer_token = "t"},
        {.url = "http://127.0.0.1/mcp", .bearer_token = "t\r\nX-Evil: 1"},
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        mcp_error_t err = {0};
        client_transport_t *t = NULL;
        int rc = client_http_new(&targets[i], NULL, &t, &err);
        if (t || rc != MCP_EINVAL)
            fail_msg("target %zu: rc %d, expected MCP_EINVAL", i, rc);
        assert_true(strlen(err.message) > 0);
        mcp_error_clear(&err);
    }
    client_transport_t *none = NULL;
    assert_int_equal(client_http_new(NULL, NULL, &none, NULL), MCP_EINVAL);
    assert_null(none);
    /* Authorization is the user's when no token is configured. */
    client_transport_t *t = new_http(
        &(mcp_http_target_t){.url = "HTTPS://example.com/mcp", .headers = auth}, NULL, NULL);
    assert_non_null(t);
    transport_free(t);
}

/* ------------------------------------------------------------------------
 * TLS
 * ------------------------------------------------------------------------ */

/* A self-signed certificate for 127.0.0.1, and its key, as PEM. */
static void make_certificate(char **key_pem, char **cert_pem)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    assert_non_null(key);
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    const char *exts[][2] = {{"subjectAltName", "IP:127.0.0.1"},
                             {"basicConstraints", "critical,CA:TRUE"}};
    for (size_t i = 0; i < 2; i++) {
        X509_EXTENSION *ext = X509V3_EXT_nconf(NULL, &ctx, exts[i][0], exts[i][1]);
        assert_non_null(ext);
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
    }
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);

    BIO *kb = BIO_new(BIO_s_mem()), *cb = BIO_new(BIO_s_mem());
    assert_true(PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL));
    assert_true(PEM_write_bio_X509(cb, x));
    char *data;
    long n = BIO_get_mem_data(kb, &data);
    *key_pem = strndup(data, (size_t)n);
    n = BIO_get_mem_data(cb, &data);
    *cert_pem = strndup(data, (size_t)n);
    BIO_free(kb);
    BIO_free(cb);
    X509_free(x);
    EVP_PKEY_free(key);
}

static void test_tls(void **state)
{
    (void)state;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        skip();
    char *key_pem, *cert_pem;
    make_certificate(&key_pem, &cert_pem);
    char ca_file[] = "/tmp/mcp-test-ca-XXXXXX";
    int fd = mkstemp(ca_file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cert_pem, strlen(cert_pem)), (ssize_t)strlen(cert_pem));
    close(fd);

    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    server_t s;
    server_start_tls(&s, &json, key_pem, cert_pem);
    char url[64];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/mcp", s.port);
    const mcp_http_target_t targets[] = {
        {.url = url},                    /* verified by default: refused */
        {.url = url, .insecure = true},  /* not verified */
        {.url = url, .ca_file = ca_file} /* verified against our CA */
    };
    for (size_t i = 0; i < 3; i++) {
        client_transport_t *t = new_http(&targets[i], NULL, NULL);
        assert_non_null(t);
        call_t c;
        call_tool(t, (json_int_t)i, &c);
        if (i == 0) {
            assert_int_equal(c.rc, MCP_EIO);
            assert_int_equal(c.status, 0);
            assert_non_null(strstr(c.why, "certificate"));
        } else {
            assert_tool_result(&c, (json_int_t)i);
        }
        call_clear(&c);
        transport_free(t);
    }
    server_stop(&s);
    unlink(ca_file);
    free(key_pem);
    free(cert_pem);
}

/* ------------------------------------------------------------------------
 * Tokens
 * ------------------------------------------------------------------------ */

typedef struct token_source {
    int calls;
    char challenge[256];
    bool saw_challenge;
} token_source_t;

static int next_token(void *user, const char *url, const char *challenge, char **token_out)
{
    token_source_t *src = user;
    src->calls++;
    src->saw_challenge = challenge != NULL;
    snprintf(src->challenge, sizeof src->challenge, "%s", challenge ? challenge : "");
    char token[32];
    snprintf(token, sizeof token, "t%d", src->calls);
    *token_out = strdup(token);
    return 0;
}

static int refuse_token(void *user, const char *url, const char *challenge, char **token_out)
{
    *token_out = NULL;
    return MCP_EAUTH;
}

static int broken_token(void *user, const char *url, const char *challenge, char **token_out)
{
    *token_out = strdup("abc\r\nX-Evil: 1");
    return 0;
}

/* A token callback that fails, or answers a token that would break the
 * framing, fails start() before anything is sent. */
static void test_token_callback_failures(void **state)
{
    (void)state;
    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    server_t s;
    server_start(&s, &json);
    char *url = url_of(&s);
    mcp_token_fn fns[] = {refuse_token, broken_token};
    int want[] = {MCP_EAUTH, MCP_EINVAL};
    for (size_t i = 0; i < 2; i++) {
        client_transport_t *t =
            new_http(&(mcp_http_target_t){.url = url, .token = fns[i]}, NULL, NULL);
        assert_non_null(t);
        call_t c;
        call_init(&c);
        json_t *req = tool_request(1, "echo");
        client_exchange_t *ex = NULL;
        assert_int_equal(t->ops->start(t, req, &tool_hints, &events, &c, &ex), want[i]);
        json_decref(req);
        transport_free(t);
        assert_int_equal(call_done_count(&c), 0);
        call_clear(&c);
    }
    free(url);
    assert_int_equal(server_count(&s, &s.requests), 0);
    server_stop(&s);
}

static void test_token_callback(void **state)
{
    (void)state;
    static const scene_t json = {200, "application/json", .chunks = {TOOL_RESULT}};
    static const scene_t unauthorized = {401, NULL, .header_name = "WWW-Authenticate",
                                         .header_value = "Bearer error=\"invalid_token\""};
    server_t s;
    server_start(&s, &json);
    char *url = url_of(&s);
    token_source_t src = {0};
    client_transport_t *t = new_http(
        &(mcp_http_target_t){.url = url, .token = next_token, .token_user = &src}, NULL, NULL);
    assert_non_null(t);
    free(url);
    call_t c;

    /* Asked once, before the first request; its answer is kept. */
    for (int i = 0; i < 2; i++) {
        call_tool(t, i, &c);
        assert_tool_result(&c, i);
        call_clear(&c);
        assert_header(&s, "Authorization", "Bearer t1");
    }
    assert_int_equal(src.calls, 1);
    assert_false(src.saw_challenge);

    /* A 401: the next request asks again, with the challenge. */
    server_play(&s, &unauthorized);
    call_tool(t, 3, &c);
    assert_int_equal(c.rc, MCP_EAUTH);
    assert_string_equal(c.challenge, "Bearer error=\"invalid_token\"");
    call_clear(&c);
    server_play(&s, &json);
    call_tool(t, 4, &c);
    assert_tool_result(&c, 4);
    call_clear(&c);
    assert_int_equal(src.calls, 2);
    assert_true(src.saw_challenge);
    assert_string_equal(src.challenge, "Bearer error=\"invalid_token\"");
    assert_header(&s, "Authorization", "Bearer t2");

    transport_free(t);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * Notifications
 * ------------------------------------------------------------------------ */

static void test_notify(void **state)
{
    (void)state;
    static const scene_t accepted = {202, NULL};
    static const scene_t refused = {400, NULL};
    static const scene_t refused_rpc = {
        400, "application/json",
        .chunks = {"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"no\"}}"}};
    server_t s;
    server_start(&s, &accepted);
    client_transport_t *t = transport_for(&s, NULL);
    json_t *note = json_pack("{s:s, s:s, s:{s:i}}", "jsonrpc", "2.0", "method",
                             "notifications/cancelled", "params", "requestId", 3);
    assert_int_equal(t->ops->notify(t, note, NULL), MCP_OK);
    server_play(&s, &refused);
    assert_int_equal(t->ops->notify(t, note, NULL), MCP_EIO);
    server_play(&s, &refused_rpc);
    assert_int_equal(t->ops->notify(t, note, NULL), MCP_ERPC);
    assert_int_equal(t->ops->notify(t, NULL, NULL), MCP_EINVAL);
    json_decref(note);
    assert_int_equal(server_count(&s, &s.requests), 3);
    transport_free(t);
    server_stop(&s);
}

/* ------------------------------------------------------------------------
 * Redirects
 * ------------------------------------------------------------------------ */

static const scene_t answer_elsewhere = {200, "application/json", .chunks = {TOOL_RESULT}};

/* A 307 (relative Location) and a 308 (absolute) within the origin: the
 * request goes again, the same POST with the same headers and body, and
 * its answer is the outcome. */
static void test_redirect_within_the_origin(void **state)
{
    (void)state;
    scene_t moved = {307, "text/plain", .header_name = "Location", .header_value = "/mcp/",
                     .chunks = {"moved"}, .elsewhere = &answer_elsewhere};
    server_t s;
    server_start(&s, &moved);
    char *url = url_of(&s);
    const char *const extra[] = {"X-Api-Key: k1", NULL};
    client_transport_t *t = new_http(
        &(mcp_http_target_t){.url = url, .bearer_token = "tok", .headers = extra}, NULL, NULL);
    assert_non_null(t);
    call_t c;
    call_tool(t, 1, &c);
    assert_tool_result(&c, 1);
    assert_int_equal(c.status, 200);
    call_clear(&c);
    assert_paths(&s, "/mcp /mcp/ ");
    assert_header(&s, "Authorization", "Bearer tok");
    assert_header(&s, "X-Api-Key", "k1");
    assert_header(&s, "Mcp-Method", "tools/call");
    json_t *body = last_body(&s);
    assert_int_equal(json_integer_value(json_object_get(body, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(body, "method")), "tools/call");
    json_decref(body);

    /* 308 to an absolute URL of the same origin. */
    char absolute[96];
    snprintf(absolute, sizeof absolute, "http://127.0.0.1:%d/mcp/v2", s.port);
    scene_t permanent = {308, NULL, .header_name = "Location", .header_value = absolute,
                         .elsewhere = &answer_elsewhere};
    server_play(&s, &permanent);
    call_tool(t, 2, &c);
    assert_tool_result(&c, 2);
    call_clear(&c);
    assert_paths(&s, "/mcp /mcp/ /mcp /mcp/v2 ");

    transport_free(t);
    free(url);
    server_stop(&s);
}

/* A tools/call answered `status` fails with MCP_EIO saying `why`, and the
 * server has seen `paths` since it started. */
static void expect_not_followed(server_t *s, client_transport_t *t, int status, const char *why,
                                const char *paths)
{
    call_t c;
    call_tool(t, 1, &c);
    assert_int_equal(c.rc, MCP_EIO);
    assert_int_equal(c.status, status);
    assert_non_null(strstr(c.why, why));
    call_clear(&c);
    assert_paths(s, paths);
}

/* What is not followed fails the request with MCP_EIO, and says where the
 * server points: a redirect that turns POST into GET, one that leaves the
 * origin (another host name for the same address is another origin), and
 * a loop, after five. */
static void test_redirect_not_followed(void **state)
{
    (void)state;
    server_t s;
    scene_t found = {302, NULL, .header_name = "Location", .header_value = "/mcp/",
                     .elsewhere = &answer_elsewhere};
    server_start(&s, &found);
    char *url = url_of(&s);
    client_transport_t *t = new_http(&(mcp_http_target_t){.url = url}, NULL, NULL);
    assert_non_null(t);
    expect_not_followed(&s, t, 302, "HTTP 302: the server redirects to /mcp/", "/mcp ");

    char other[96];
    snprintf(other, sizeof other, "http://localhost:%d/mcp/", s.port);
    scene_t away = {307, NULL, .header_name = "Location", .header_value = other,
                    .elsewhere = &answer_elsewhere};
    server_play(&s, &away);
    expect_not_followed(&s, t, 307, other, "/mcp /mcp ");

    scene_t loop = {307, NULL, .header_name = "Location", .header_value = "/mcp"};
    server_play(&s, &loop);
    expect_not_followed(&s, t, 307, "redirects to /mcp ",
                        "/mcp /mcp /mcp /mcp /mcp /mcp /mcp /mcp ");

    transport_free(t);
    free(url);
    server_stop(&s);
}

/* A DPoP proof names the URL of its request: a redirected request carries
 * a new one, made for where it goes. */
static int fixed_token(void *user, const char *url, const char *challenge, char **token_out)
{
    (void)user;
    (void)url;
    (void)challenge;
    *token_out = strdup("tk");
    return 0;
}

static int proof_naming_the_url(void *user, const char *method, const char *url,
                                const char *token, const char *nonce, char **proof_out)
{
    (void)user;
    (void)nonce;
    char proof[256];
    snprintf(proof, sizeof proof, "%s %s %s", method, url, token);
    *proof_out = strdup(proof);
    return 0;
}

static void test_redirect_makes_a_new_proof(void **state)
{
    (void)state;
    scene_t moved = {307, NULL, .header_name = "Location", .header_value = "/mcp/",
                     .elsewhere = &answer_elsewhere};
    server_t s;
    server_start(&s, &moved);
    char *url = url_of(&s);
    client_transport_t *t = new_http(&(mcp_http_target_t){.url = url, .token = fixed_token,
                                                          .token_proof = proof_naming_the_url},
                                     NULL, NULL);
    assert_non_null(t);
    call_t c;
    call_tool(t, 1, &c);
    assert_tool_result(&c, 1);
    call_clear(&c);
    assert_paths(&s, "/mcp /mcp/ ");
    char want[128];
    snprintf(want, sizeof want, "POST http://127.0.0.1:%d/mcp/ tk", s.port);
    assert_header(&s, "DPoP", want);
    assert_header(&s, "Authorization", "DPoP tk");
    transport_free(t);
    free(url);
    server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_response),
        cmocka_unit_test(test_sse_notifications_then_response),
        cmocka_unit_test(test_sse_quirks),
        cmocka_unit_test(test_sse_ends_without_response),
        cmocka_unit_test(test_sse_other_messages_unrouted),
        cmocka_unit_test(test_callbacks_may_call_the_transport),
        cmocka_unit_test(test_400_unsupported_version),
        cmocka_unit_test(test_404_method_not_found),
        cmocka_unit_test(test_405_empty),
        cmocka_unit_test(test_401_challenge),
        cmocka_unit_test(test_500_html),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_body_over_limit),
        cmocka_unit_test(test_cancel_never_answers),
        cmocka_unit_test(test_cancel_open_stream),
        cmocka_unit_test(test_close_ends_everything),
        cmocka_unit_test(test_concurrent_requests),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_drain_expires),
        cmocka_unit_test(test_headers_sent),
        cmocka_unit_test(test_header_injection_refused),
        cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_token_callback),
        cmocka_unit_test(test_token_callback_failures),
        cmocka_unit_test(test_notify),
        cmocka_unit_test(test_redirect_within_the_origin),
        cmocka_unit_test(test_redirect_not_followed),
        cmocka_unit_test(test_redirect_makes_a_new_proof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
