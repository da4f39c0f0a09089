/*
 * The era probe against peers that need nothing from npm:
 *
 *   - notes_server (libmcp, 2026-07-28) over stdio: modern;
 *   - tests/integration/servers/legacy_stdio_server: a legacy server that
 *     answers the probe -32601 (legacy), ignores it (timeout, legacy on the
 *     same process), exits on it (restarted, reconnect_legacy, its stderr
 *     in the error when the era option is modern), or answers it and
 *     exits (restarted for initialize, reconnect_legacy); then calls,
 *     progress, a sampling request from the server, a subscription update,
 *     ping and logging/setLevel through the public API;
 *   - a scripted HTTP endpoint (a thread of this test) answering the probe
 *     401, 429, 503 and 404 with -32601: each verdict asserted, and the
 *     legacy session (Mcp-Session-Id, MCP-Protocol-Version, 404 =>
 *     re-initialize, DELETE on close).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "scripted_http.h"

/* client.h: transient failures are tried three times. */
#define CLIENT_PROBE_ATTEMPTS_EXPECTED 3

static mcp_client_t *client_new(mcp_client_era_t era, mcp_sample_fn sample)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "era-test", .version = "1", .era = era, .timeout_ms = 10000,
        .sample = sample}, NULL);
    assert_non_null(c);
    return c;
}

static int connect_legacy_server(mcp_client_t *c, const char *mode, int64_t probe_ms,
                                 mcp_error_t *err)
{
    return mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
        .argv = (const char *const[]){LEGACY_STDIO_SERVER, mode, NULL},
        .probe_timeout_ms = probe_ms}, err);
}

static void assert_verdict(mcp_client_t *c, mcp_verdict_kind_t kind, bool probed)
{
    mcp_client_verdict_t v;
    assert_int_equal(mcp_client_verdict(c, &v), MCP_OK);
    assert_int_equal(v.kind, kind);
    assert_int_equal(v.probed, probed);
    assert_non_null(v.reason);
}

/* The connection speaks the legacy protocol, and the legacy server's two
 * tools come back through it. */
static void assert_legacy_tools(mcp_client_t *c)
{
    assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
    json_t *tools = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    assert_int_equal(json_array_size(tools), 2);
    json_decref(tools);
}

/* ------------------------------------------------------------------------
 * stdio
 * ------------------------------------------------------------------------ */

static void test_notes_server_is_modern(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
        .argv = (const char *const[]){MCP_NOTES_SERVER, NULL}}, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_MODERN, true);
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    assert_int_equal(mcp_client_ping(c, NULL, &err), MCP_OK);
    assert_int_equal(mcp_client_set_log_level(c, "debug", &err), MCP_OK);
    mcp_client_free(c);
}

static void test_legacy_by_error(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "error", 0, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, true);
    assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
    assert_string_equal(mcp_client_protocol_version(c), "2025-11-25");
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(c), "name")),
                        "legacy-stdio");
    /* server/discover does not exist there: an error that says so. */
    json_t *r = NULL;
    assert_int_equal(mcp_client_discover(c, NULL, &r, &err), MCP_EUNSUPPORTED);
    mcp_client_free(c);
}

static void test_legacy_by_timeout(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "ignore", 300, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, true);
    mcp_client_verdict_t v;
    mcp_client_verdict(c, &v);
    assert_string_equal(v.reason, "timeout");
    mcp_client_free(c);

    /* A server that never answers at all: legacy, then initialize times
     * out too. */
    c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1",
                                                .timeout_ms = 300}, NULL);
    assert_int_equal(connect_legacy_server(c, "silent", 200, &err), MCP_ETIMEDOUT);
    assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
    assert_int_equal(mcp_client_verdict(c, &v), MCP_ESTATE);
    mcp_error_clear(&err);
    mcp_client_free(c);
}

static void test_exits_on_probe(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "exit", 0, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_RECONNECT_LEGACY, true);
    assert_legacy_tools(c);
    mcp_client_free(c);

    /* The modern option refuses, and says why with the server's stderr. */
    c = client_new(MCP_CLIENT_ERA_MODERN, NULL);
    assert_int_equal(connect_legacy_server(c, "exit", 0, &err), MCP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "legacy"));
    assert_non_null(strstr(err.message, "unknown method server/discover"));
    mcp_error_clear(&err);
    mcp_client_free(c);
}

/* A server that answers the probe with an error and then exits (digest
 * 5.4: any error is legacy; 5.2: a client SHOULD restart a server that
 * exited): the verdict came before the exit, so initialize finds the
 * process gone, and the server is started once more for it. */
static void test_error_then_exit_on_probe(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    if (connect_legacy_server(c, "error_exit", 0, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
    assert_verdict(c, MCP_VERDICT_RECONNECT_LEGACY, true);
    assert_legacy_tools(c);
    mcp_client_free(c);
}

static void test_modern_refuses_legacy(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_MODERN, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "error", 0, &err), MCP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "legacy"));
    mcp_error_clear(&err);
    mcp_client_free(c);
}

static void test_previous_verdict_skips_probe(void **state)
{
    (void)state;
    /* "exit" would die on a probe: a previous legacy verdict sends
     * initialize first. */
    mcp_client_verdict_t prev = {.kind = MCP_VERDICT_LEGACY};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .previous_verdict = &prev}, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "exit", 0, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, false);
    mcp_client_free(c);

    c = client_new(MCP_CLIENT_ERA_LEGACY, NULL);
    assert_int_equal(connect_legacy_server(c, "exit", 0, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, false);
    mcp_client_free(c);
}

/* A server that changed eras since the verdict was saved: the client
 * probes again instead of failing, and the new verdict says so. */
static void test_outdated_verdict_probes_again(void **state)
{
    (void)state;
    mcp_client_verdict_t prev = {.kind = MCP_VERDICT_MODERN};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .previous_verdict = &prev}, NULL);
    mcp_error_t err = {0};
    if (connect_legacy_server(c, "error", 0, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
    assert_verdict(c, MCP_VERDICT_LEGACY, true);
    assert_legacy_tools(c);
    mcp_client_free(c);
}

static int sample(void *user, const json_t *params, json_t **result_out)
{
    (void)user;
    assert_non_null(json_object_get(params, "messages"));
    *result_out = json_pack("{s:s, s:{s:s, s:s}, s:s}", "role", "assistant", "content", "type",
                            "text", "text", "sampled!", "model", "test-model");
    return 0;
}

static int progress_calls;
static void on_progress(void *user, double progress, double total, const char *message)
{
    (void)user, (void)message;
    assert_true(progress == 1 && total == 2);
    progress_calls++;
}

static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t events_cond = PTHREAD_COND_INITIALIZER;
static int updates;

static void on_event(void *user, const char *method, const json_t *params)
{
    (void)user;
    pthread_mutex_lock(&events_lock);
    if (strcmp(method, "notifications/resources/updated") == 0 &&
        strcmp(json_string_value(json_object_get(params, "uri")), "note://a") == 0)
        updates++;
    pthread_cond_broadcast(&events_cond);
    pthread_mutex_unlock(&events_lock);
}

static void test_legacy_calls(void **state)
{
    (void)state;
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, sample);
    mcp_error_t err = {0};
    assert_int_equal(connect_legacy_server(c, "error", 0, &err), MCP_OK);

    json_t *args = json_pack("{s:s}", "message", "hello legacy"), *r = NULL;
    mcp_request_options_t ro = {.progress = on_progress};
    assert_int_equal(mcp_client_call_tool(c, "echo", args, &ro, &r, &err), MCP_OK);
    json_decref(args);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "hello legacy");
    assert_int_equal(progress_calls, 1);
    json_decref(r);

    /* The server asks the client (sampling/createMessage) mid-call. */
    assert_int_equal(mcp_client_call_tool(c, "ask", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "sampled!");
    json_decref(r);

    assert_int_equal(mcp_client_ping(c, NULL, &err), MCP_OK);
    assert_int_equal(mcp_client_set_log_level(c, "info", &err), MCP_OK);
    assert_int_equal(mcp_client_set_log_level(c, "loud", &err), MCP_EINVAL);

    /* listen: resources/subscribe, whose update the server sends at once. */
    const char *uris[] = {"note://a"};
    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL;
    assert_int_equal(mcp_client_listen(c, &(mcp_listen_filter_t){
                         .tools_list_changed = true, .prompts_list_changed = true,
                         .resource_uris = uris, .n_resource_uris = 1},
                         on_event, NULL, NULL, &sub, &honoured, &err), MCP_OK);
    /* tools.listChanged is promised, prompts are not. */
    assert_true(json_is_true(json_object_get(honoured, "toolsListChanged")));
    assert_null(json_object_get(honoured, "promptsListChanged"));
    assert_int_equal(json_array_size(json_object_get(honoured, "resourceSubscriptions")), 1);
    json_decref(honoured);
    pthread_mutex_lock(&events_lock);
    while (updates == 0)
        pthread_cond_wait(&events_cond, &events_lock);
    pthread_mutex_unlock(&events_lock);
    mcp_subscription_close(sub);
    mcp_client_free(c);
}

/* ------------------------------------------------------------------------
 * A scripted HTTP endpoint
 * ------------------------------------------------------------------------ */

typedef struct endpoint {
    scripted_http_t http;
    /* What to answer server/discover. */
    int discover_status;
    const char *discover_body;
    const char *discover_headers;
    /* What to answer initialize (status 0: a 2025-06-18 InitializeResult;
     * "@ID@" in the body stands for the request's id). */
    int initialize_status;
    const char *initialize_body;
    /* Answer the next tools/list 404, with this body ("": none), once. */
    const char *forget_session_with;
    /* What came (under lock). */
    pthread_mutex_t lock;
    int discovers, initializes, lists, deletes, gets;
    bool session_sent, version_sent, delete_version_sent;
} endpoint_t;

static void respond(int fd, int status, const char *headers, const char *body)
{
    if (body[0]) {
        scripted_respond_json(fd, status, headers, body);
        return;
    }
    char head[512];
    snprintf(head, sizeof head,
             "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n%s\r\n", status,
             headers ? headers : "");
    scripted_send_text(fd, head);
}

static bool has_header(const char *req, const char *line)
{
    return strcasestr(req, line) != NULL;
}

/* The script, for each request (one per connection). */
static void serve(void *owner, int fd, const char *req, const char *body)
{
    endpoint_t *e = owner;
    pthread_mutex_lock(&e->lock);
    if (strncmp(req, "GET", 3) == 0) {
        e->gets++;
        pthread_mutex_unlock(&e->lock);
        respond(fd, 405, "Allow: POST, DELETE\r\n", "");
        return;
    }
    if (strncmp(req, "DELETE", 6) == 0) {
        e->deletes++;
        e->delete_version_sent = has_header(req, "MCP-Protocol-Version: 2025-06-18");
        pthread_mutex_unlock(&e->lock);
        respond(fd, 200, NULL, "");
        return;
    }
    if (strstr(body, "\"server/discover\"")) {
        e->discovers++;
        pthread_mutex_unlock(&e->lock);
        respond(fd, e->discover_status, e->discover_headers, e->discover_body);
    } else if (strstr(body, "\"initialize\"")) {
        e->initializes++;
        pthread_mutex_unlock(&e->lock);
        if (e->initialize_status) {
            /* The body's "@ID@" stands for the request's id. */
            const char *id = strstr(body, "\"id\":");
            const char *at = strstr(e->initialize_body, "@ID@");
            char answer[512];
            if (at)
                snprintf(answer, sizeof answer, "%.*s%ld%s", (int)(at - e->initialize_body),
                         e->initialize_body, id ? strtol(id + 5, NULL, 10) : 0L, at + 4);
            else
                snprintf(answer, sizeof answer, "%s", e->initialize_body);
            respond(fd, e->initialize_status, NULL, answer);
            return;
        }
        char sid[64];
        snprintf(sid, sizeof sid, "Mcp-Session-Id: s%d\r\n", e->initializes);
        const char *id = strstr(body, "\"id\":");
        char answer[512];
        snprintf(answer, sizeof answer,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":"
                 "\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
                 "{\"name\":\"scripted\",\"version\":\"1\"}}}",
                 id ? strtol(id + 5, NULL, 10) : 0L);
        respond(fd, 200, sid, answer);
    } else if (!strstr(body, "\"id\"")) {
        pthread_mutex_unlock(&e->lock);
        respond(fd, 202, NULL, "");
    } else {
        e->lists++;
        e->session_sent = has_header(req, "Mcp-Session-Id: s");
        e->version_sent = has_header(req, "MCP-Protocol-Version: 2025-06-18");
        const char *forget = e->forget_session_with;
        e->forget_session_with = NULL;
        pthread_mutex_unlock(&e->lock);
        if (forget) {
            respond(fd, 404, NULL, forget);
            return;
        }
        const char *id = strstr(body, "\"id\":");
        char answer[256];
        snprintf(answer, sizeof answer, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":"
                 "{\"tools\":[]}}", id ? strtol(id + 5, NULL, 10) : 0L);
        respond(fd, 200, NULL, answer);
    }
}

static void endpoint_start(endpoint_t *e)
{
    pthread_mutex_init(&e->lock, NULL);
    scripted_http_start(&e->http, serve, e);
}

/* After the client is freed (which closes its connections). */
static void endpoint_stop(endpoint_t *e)
{
    scripted_http_stop(&e->http);
    pthread_mutex_destroy(&e->lock);
}

static int connect_http(mcp_client_t *c, endpoint_t *e, mcp_token_fn token, void *user,
                        mcp_error_t *err)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", e->http.port);
    return mcp_client_connect_http(c, &(mcp_http_target_t){.url = url, .token = token,
                                                           .token_user = user}, err);
}

static int token_calls;
static char last_challenge[128];

static int give_token(void *user, const char *url, const char *challenge, char **token_out)
{
    (void)user, (void)url;
    token_calls++;
    snprintf(last_challenge, sizeof last_challenge, "%s", challenge ? challenge : "");
    *token_out = strdup("t0ken");
    return 0;
}

static void test_http_401(void **state)
{
    (void)state;
    endpoint_t e = {.discover_status = 401, .discover_body = "",
                    .discover_headers = "WWW-Authenticate: Bearer realm=\"mcp\"\r\n"};
    endpoint_start(&e);
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_http(c, &e, NULL, NULL, &err), MCP_EAUTH);
    assert_int_equal(e.discovers, 1);
    mcp_client_free(c);

    /* A token callback is asked again with the challenge, and the probe
     * runs once more. */
    c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    assert_int_equal(connect_http(c, &e, give_token, NULL, &err), MCP_EAUTH);
    assert_int_equal(e.discovers, 3);
    assert_int_equal(token_calls, 2);
    assert_string_equal(last_challenge, "Bearer realm=\"mcp\"");
    assert_int_equal(e.initializes, 0); /* never taken for legacy */
    mcp_error_clear(&err);
    mcp_client_free(c);
    endpoint_stop(&e);
}

static void test_http_transient(void **state)
{
    (void)state;
    static const int statuses[] = {429, 503};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        endpoint_t e = {.discover_status = statuses[i], .discover_body = ""};
        endpoint_start(&e);
        mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
        mcp_error_t err = {0};
        assert_int_equal(connect_http(c, &e, NULL, NULL, &err), MCP_EIO);
        assert_int_equal(e.discovers, CLIENT_PROBE_ATTEMPTS_EXPECTED);
        assert_int_equal(e.initializes, 0); /* retry, never a downgrade */
        assert_non_null(strstr(err.message, "not available"));
        mcp_error_clear(&err);
        mcp_client_free(c);
        endpoint_stop(&e);
    }
}

/* A target that is not one is the caller's mistake (MCP_EINVAL); a
 * server that cannot be started, the system's (MCP_EIO). */
static void test_bad_targets(void **state)
{
    (void)state;
    static const char *const urls[] = {"not a url", "ftp://example.com/mcp", "http://"};
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
        mcp_error_t err = {0};
        assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = urls[i]}, &err),
                         MCP_EINVAL);
        assert_true(err.message[0] != '\0');
        mcp_error_clear(&err);
        mcp_client_free(c);
    }
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(
                         c,
                         &(mcp_stdio_target_t){.argv = (const char *const[]){
                                                   "/nonexistent/mcp-server", NULL}},
                         &err),
                     MCP_EIO);
    assert_non_null(strstr(err.message, "/nonexistent/mcp-server"));
    mcp_error_clear(&err);
    mcp_client_free(c);
}

static void test_http_legacy_session(void **state)
{
    (void)state;
    endpoint_t e = {.discover_status = 404,
                    .discover_body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"
                                     "{\"code\":-32601,\"message\":\"Method not found\"}}"};
    endpoint_start(&e);
    mcp_client_t *c = client_new(MCP_CLIENT_ERA_AUTO, NULL);
    mcp_error_t err = {0};
    assert_int_equal(connect_http(c, &e, NULL, NULL, &err), MCP_OK);
    assert_verdict(c, MCP_VERDICT_LEGACY, true);
    assert_string_equal(mcp_client_protocol_version(c), "2025-06-18");
    json_t *r = NULL;
    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &r, &err), MCP_OK);
    json_decref(r);
    assert_true(e.session_sent);
    assert_true(e.version_sent);

    /* The server forgets the session: a new initialize, then the request
     * again -- whether the 404 is bare or carries a JSON-RPC error for no
     * id, as the TypeScript SDK's server sends it. */
    static const char *const forgotten[] = {
        "", "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":"
            "\"Session not found\"},\"id\":null}"};
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&e.lock);
        e.forget_session_with = forgotten[i];
        pthread_mutex_unlock(&e.lock);
        mcp_request_options_t fresh = {.bypass_cache = true};
        assert_int_equal(mcp_client_list_tools(c, NULL, &fresh, &r, &err), MCP_OK);
        json_decref(r);
        assert_int_equal(e.initializes, 2 + i);
    }
    mcp_client_free(c);
    assert_int_equal(e.deletes, 1);
    assert_true(e.delete_version_sent); /* on every request after initialize */
    endpoint_stop(&e);
}

/* initialize refused by a server that speaks only 2026-07-28 (digest 2
 * and 1.5: -32601 at 404, or -32022 at 400 naming its versions): that is a
 * JSON-RPC answer, so the endpoint exists and is not an HTTP+SSE one. The
 * server's error reaches the caller, code and data intact, and no GET for
 * an HTTP+SSE stream is sent. Without a JSON-RPC answer the fallback is
 * still tried. */
static void test_http_initialize_error_is_no_sse_endpoint(void **state)
{
    (void)state;
    static const char modern_only_400[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"bad\"}}";
    const struct {
        mcp_client_era_t era;
        int status;
        const char *body;
        int code; /* 0: no JSON-RPC answer, HTTP+SSE is tried */
    } cases[] = {
        {MCP_CLIENT_ERA_LEGACY, 404,
         "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"error\":{\"code\":-32601,\"message\":"
         "\"Method not found: initialize\"}}",
         -32601},
        {MCP_CLIENT_ERA_AUTO, 400,
         "{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"error\":{\"code\":-32022,\"message\":"
         "\"Unsupported protocol version\",\"data\":{\"supported\":[\"2026-07-28\"]}}}",
         -32022},
        {MCP_CLIENT_ERA_LEGACY, 404, "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* In the auto era a bare -32602 at 400 makes the probe's verdict
         * legacy (digest 4.9), so initialize follows. */
        endpoint_t e = {.discover_status = 400, .discover_body = modern_only_400,
                        .initialize_status = cases[i].status,
                        .initialize_body = cases[i].body};
        endpoint_start(&e);
        mcp_client_t *c = client_new(cases[i].era, NULL);
        mcp_error_t err = {0};
        int rc = connect_http(c, &e, NULL, NULL, &err);
        pthread_mutex_lock(&e.lock);
        int gets = e.gets, initializes = e.initializes;
        pthread_mutex_unlock(&e.lock);
        assert_int_equal(initializes, 1);
        if (cases[i].code) {
            if (rc != MCP_ERPC)
                fail_msg("case %zu: rc %d (%s), expected the server's error", i, rc,
                         err.message);
            assert_int_equal(err.code, cases[i].code);
            assert_non_null(strstr(err.message, cases[i].code == -32601
                                                    ? "Method not found: initialize"
                                                    : "Unsupported protocol version"));
            assert_non_null(strstr(err.message, "2026-07-28 server"));
            if (cases[i].code == -32022)
                assert_string_equal(json_string_value(json_array_get(
                                        json_object_get(err.data, "supported"), 0)),
                                    "2026-07-28");
            assert_int_equal(gets, 0);
        } else {
            assert_int_not_equal(rc, MCP_OK);
            assert_true(gets >= 1); /* the HTTP+SSE stream was asked for */
        }
        assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        mcp_error_clear(&err);
        mcp_client_free(c);
        endpoint_stop(&e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notes_server_is_modern),
        cmocka_unit_test(test_legacy_by_error),
        cmocka_unit_test(test_legacy_by_timeout),
        cmocka_unit_test(test_exits_on_probe),
        cmocka_unit_test(test_error_then_exit_on_probe),
        cmocka_unit_test(test_modern_refuses_legacy),
        cmocka_unit_test(test_previous_verdict_skips_probe),
        cmocka_unit_test(test_outdated_verdict_probes_again),
        cmocka_unit_test(test_legacy_calls),
        cmocka_unit_test(test_http_401),
        cmocka_unit_test(test_http_transient),
        cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_http_legacy_session),
        cmocka_unit_test(test_http_initialize_error_is_no_sse_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
