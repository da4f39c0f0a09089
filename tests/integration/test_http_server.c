/*
 * The HTTP server's status codes and headers, over real sockets: every
 * HTTP-level refusal (404, 403, 405, 406, 413, 415, 401), what the core
 * answers through HTTP (400 with -32700, -32600, -32020, -32602, -32022;
 * 404 with -32601; 202 for notifications), and the success path. Every
 * JSON-RPC body is checked against the official 2026-07-28 schema.
 */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "http_client.h"
#include "mcp/mcp.h"
#include "schema_check.h"
#include "test_clock.h"

#define REVISION "2026-07-28"
#define BODY_LIMIT 4096

/* ------------------------------------------------------------------------
 * The server under test
 * ------------------------------------------------------------------------ */

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

/* Bearer tokens: "good" is alice, "limited" is known but not allowed. */
static int check_token(void *user, const mcp_headers_t *headers, char **principal,
                       char **www_authenticate)
{
    const char *auth = mcp_headers_get(headers, "Authorization");
    if (auth && strcmp(auth, "Bearer good") == 0) {
        *principal = strdup("alice");
        return 0;
    }
    *www_authenticate = strdup("Bearer resource_metadata=\"http://127.0.0.1/.well-known/x\"");
    return auth && strcmp(auth, "Bearer limited") == 0 ? 403 : 401;
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    char base[64];
} fixture_t;

/* A server with its legacy mode, on HTTP with `opts`. */
static fixture_t *start_legacy(mcp_legacy_mode_t legacy, const mcp_http_options_t *opts)
{
    fixture_t *f = calloc(1, sizeof *f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(
        &(mcp_server_options_t){.name = "http-test", .version = "1.0.0", .legacy = legacy}, &err);
    assert_non_null(f->srv);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "echo",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
        .handler = echo}, &err), MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){
        .name = "whoami", .input_schema = "{\"type\":\"object\"}", .handler = whoami}, &err),
        MCP_OK);
    mcp_http_options_t o = http_test_server_options(opts);
    assert_int_equal(mcp_http_server_start(f->srv, &o, &f->http, &err), MCP_OK);
    uint16_t port = mcp_http_server_port(f->http);
    assert_true(port != 0); /* port 0 asked: the chosen one is reported */
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%u", (unsigned)port);
    return f;
}

static fixture_t *start(const mcp_http_options_t *opts)
{
    return start_legacy(MCP_LEGACY_SESSIONS, opts);
}

static void stop(fixture_t *f)
{
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
}

static const char *const ALLOWED_ORIGINS[] = {"https://app.example", NULL};

static int setup_server(void **state)
{
    *state = start(&(mcp_http_options_t){
        .endpoint = {.max_body_bytes = BODY_LIMIT, .allowed_origins = ALLOWED_ORIGINS}});
    return 0;
}

static int teardown_server(void **state)
{
    stop(*state);
    return 0;
}

/* ------------------------------------------------------------------------
 * The rules, as a table
 * ------------------------------------------------------------------------ */

#define STD "Content-Type: application/json", "Accept: application/json, text/event-stream", \
            "MCP-Protocol-Version: 2026-07-28"

#define ECHO_PARAMS "\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}"

typedef struct rule_case {
    const char *name;
    const char *method;          /* NULL: POST */
    const char *path;            /* NULL: /mcp */
    const char *target;          /* the request line's target; NULL: the path */
    const char *headers[10];
    const char *rpc_method;      /* body: a request for this method ... */
    const char *params;          /* ... with these params members */
    const char *raw_body;        /* or exactly this body */
    bool notification;
    long status;
    const char *content_type;    /* expected; NULL: none at all */
    int code;                    /* JSON-RPC error code; 0: a result or no body */
    const char *extra_header;    /* "Name: value" expected in the response */
} rule_case_t;

static const rule_case_t RULES[] = {
    {"discover", .headers = {STD, "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"tools/call", .headers = {STD, "Mcp-Method: tools/call", "Mcp-Name: echo"},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 200,
     .content_type = "application/json"},
    {"charset parameter on Content-Type",
     .headers = {"Content-Type: application/json; charset=utf-8",
                 "Accept: application/json, text/event-stream",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},

    /* HTTP method and path */
    /* GET and DELETE belong to legacy sessions (served by default): without
     * a session id they are bad requests, with an unknown one not found. */
    {"GET without a session", .method = "GET", .headers = {"Accept: text/event-stream"},
     .status = 400, .content_type = "application/json", .code = -32600},
    {"GET that takes no event stream", .method = "GET",
     .headers = {"Accept: application/json", "Mcp-Session-Id: abc"}, .status = 406,
     .content_type = "application/json", .code = -32600},
    {"DELETE of an unknown session", .method = "DELETE", .headers = {"Mcp-Session-Id: abc"},
     .status = 404, .content_type = "application/json", .code = -32600},
    {"PUT", .method = "PUT", .headers = {STD, "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 405, .content_type = "application/json",
     .code = -32600, .extra_header = "Allow: GET, POST, DELETE"},
    {"wrong path", .path = "/other", .headers = {STD, "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 404, .content_type = "text/plain"},
    {"path with a trailing slash", .path = "/mcp/",
     .headers = {STD, "Mcp-Method: server/discover"}, .rpc_method = "server/discover",
     .status = 404, .content_type = "text/plain"},
    {"query string ignored", .path = "/mcp?x=1", .headers = {STD, "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},

    /* Media types */
    {"Content-Type text/plain",
     .headers = {"Content-Type: text/plain", "Accept: application/json, text/event-stream",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 415, .content_type = "application/json",
     .code = -32600},
    {"no Content-Type",
     .headers = {"Content-Type:", "Accept: application/json, text/event-stream",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 415, .content_type = "application/json",
     .code = -32600},
    {"Accept names neither type",
     .headers = {"Content-Type: application/json", "Accept: image/png",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 406, .content_type = "application/json",
     .code = -32600},
    {"Accept refuses both with q=0",
     .headers = {"Content-Type: application/json",
                 "Accept: application/json;q=0, text/event-stream;q=0, */*",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 406, .content_type = "application/json",
     .code = -32600},
    {"no Accept at all",
     .headers = {"Content-Type: application/json", "Accept:",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"Accept application/json alone",
     .headers = {"Content-Type: application/json", "Accept: application/json",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"Accept text/event-stream alone: even a lone result is a stream",
     .headers = {"Content-Type: application/json", "Accept: text/event-stream",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "text/event-stream"},
    {"subscriptions/listen that takes no event stream",
     .headers = {"Content-Type: application/json", "Accept: application/json",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: subscriptions/listen"},
     .rpc_method = "subscriptions/listen", .params = "\"notifications\":{}", .status = 406,
     .content_type = "application/json", .code = -32600},
    {"Accept */*",
     .headers = {"Content-Type: application/json", "Accept: */*",
                 "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},

    /* Bodies the core refuses */
    {"unparsable body", .headers = {STD, "Mcp-Method: tools/list"},
     .raw_body = "{\"jsonrpc\":", .status = 400, .content_type = "application/json",
     .code = -32700},
    {"batch", .headers = {STD},
     .raw_body = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                 "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}]",
     .status = 400, .content_type = "application/json", .code = -32600},
    {"notification", .headers = {STD, "Mcp-Method: notifications/cancelled"},
     .rpc_method = "notifications/cancelled", .params = "\"requestId\":99",
     .notification = true, .status = 202, .content_type = NULL},

    /* The validation ladder through HTTP */
    {"Mcp-Method disagrees", .headers = {STD, "Mcp-Method: prompts/list"},
     .rpc_method = "tools/list", .status = 400, .content_type = "application/json",
     .code = -32020},
    {"MCP-Protocol-Version missing",
     .headers = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
                 "Mcp-Method: tools/list"},
     .rpc_method = "tools/list", .status = 400, .content_type = "application/json",
     .code = -32020},
    {"Mcp-Name missing", .headers = {STD, "Mcp-Method: tools/call"},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 400,
     .content_type = "application/json", .code = -32020},
    {"Mcp-Name disagrees", .headers = {STD, "Mcp-Method: tools/call", "Mcp-Name: other"},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 400,
     .content_type = "application/json", .code = -32020},
    {"Mcp-Name in Base64", .headers = {STD, "Mcp-Method: tools/call",
                                       "Mcp-Name: =?base64?ZWNobw==?="},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 200,
     .content_type = "application/json"},
    {"Mcp-Name with a broken Base64 sentinel",
     .headers = {STD, "Mcp-Method: tools/call", "Mcp-Name: =?base64?%%%?="},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 400,
     .content_type = "application/json", .code = -32020},
    {"header names in odd case, values padded",
     .headers = {"content-type: application/json", "ACCEPT: application/json, text/event-stream",
                 "mcp-protocol-version:   2026-07-28  ", "MCP-METHOD:  tools/call ",
                 "mcp-NAME:  echo "},
     .rpc_method = "tools/call", .params = ECHO_PARAMS, .status = 200,
     .content_type = "application/json"},
    {"_meta missing", .headers = {STD, "Mcp-Method: tools/list"},
     .raw_body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}",
     .status = 400, .content_type = "application/json", .code = -32602},
    {"unsupported version",
     .headers = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
                 "MCP-Protocol-Version: 2099-01-01", "Mcp-Method: tools/list"},
     .raw_body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                 "{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
     .status = 400, .content_type = "application/json", .code = -32022},
    {"removed method", .headers = {STD, "Mcp-Method: ping"}, .rpc_method = "ping", .status = 404,
     .content_type = "application/json", .code = -32601},
    {"session and resumption headers are ignored",
     .headers = {STD, "Mcp-Method: server/discover", "Mcp-Session-Id: abc",
                 "Last-Event-ID: 42"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},

    /* DNS rebinding: Origin and Host */
    {"foreign Origin",
     .headers = {STD, "Mcp-Method: server/discover", "Origin: http://evil.example.com"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    {"two Origins", .headers = {STD, "Mcp-Method: server/discover",
                                "Origin: http://localhost", "Origin: http://localhost"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    {"loopback Origin",
     .headers = {STD, "Mcp-Method: server/discover", "Origin: http://localhost:5173"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"listed Origin",
     .headers = {STD, "Mcp-Method: server/discover", "Origin: https://app.example"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"foreign Host",
     .headers = {STD, "Mcp-Method: server/discover", "Host: evil.example.com"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    {"foreign Host with port",
     .headers = {STD, "Mcp-Method: server/discover", "Host: evil.example.com:80"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    {"Host localhost:port",
     .headers = {STD, "Mcp-Method: server/discover", "Host: localhost:8080"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"Host [::1]", .headers = {STD, "Mcp-Method: server/discover", "Host: [::1]"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"Host 127.0.0.1:port",
     .headers = {STD, "Mcp-Method: server/discover", "Host: 127.0.0.1:1"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    /* An absolute-form target (RFC 9112 section 3.2.2) is served like its
     * path, and the host it names is the one the Host check judges. */
    {"absolute-form target", .target = "http://127.0.0.1/mcp",
     .headers = {STD, "Mcp-Method: server/discover"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
    {"absolute-form target naming a foreign host", .target = "HTTP://evil.example.com/mcp",
     .headers = {STD, "Mcp-Method: server/discover", "Host: 127.0.0.1"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    /* The conformance suite's dns-rebinding-protection scenario. */
    {"rebinding: foreign Host and Origin",
     .headers = {STD, "Mcp-Method: server/discover", "Host: evil.example.com",
                 "Origin: http://evil.example.com"},
     .rpc_method = "server/discover", .status = 403, .content_type = "application/json",
     .code = -32600},
    {"rebinding: the server's own Host and Origin",
     .headers = {STD, "Mcp-Method: server/discover", "Host: 127.0.0.1:3000",
                 "Origin: http://127.0.0.1:3000"},
     .rpc_method = "server/discover", .status = 200, .content_type = "application/json"},
};

static void check_rule(const char *base, const rule_case_t *c)
{
    char *body = c->raw_body ? strdup(c->raw_body)
                             : c->rpc_method ? mcp_text(c->notification ? -1 : 7, c->rpc_method,
                                                        c->params, NULL)
                                             : NULL;
    http_request_t req = {.base = base, .method = c->method, .path = c->path,
                          .target = c->target, .headers = c->headers, .body = body};
    http_response_t resp;
    http_call(&req, &resp);
    print_message("case: %s -> %ld\n", c->name, resp.status);
    assert_int_equal(resp.curl_code, 0);
    assert_int_equal(resp.status, c->status);

    char *type = http_header(&resp, "Content-Type");
    if (c->content_type) {
        assert_non_null(type);
        assert_string_equal(type, c->content_type);
    } else {
        assert_null(type);
        assert_int_equal(resp.body_len, 0);
    }
    free(type);
    assert_false(http_header_is(&resp, "Mcp-Session-Id", "abc"));
    char *session = http_header(&resp, "Mcp-Session-Id");
    assert_null(session); /* never minted, never echoed */
    if (c->extra_header) {
        char name[64];
        const char *colon = strchr(c->extra_header, ':');
        snprintf(name, sizeof name, "%.*s", (int)(colon - c->extra_header), c->extra_header);
        assert_true(http_header_is(&resp, name, colon + 2));
    }

    if (c->content_type && strcmp(c->content_type, "text/plain") != 0) {
        json_t *msgs = mcp_messages(&resp);
        assert_non_null(msgs);
        assert_int_equal(json_array_size(msgs), 1);
        json_t *msg = json_array_get(msgs, 0);
        json_t *error = json_object_get(msg, "error");
        if (c->code) {
            assert_non_null(error);
            assert_int_equal(json_integer_value(json_object_get(error, "code")), c->code);
            MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
        } else {
            assert_null(error);
            MCP_ASSERT_SCHEMA_VALID(msg, c->rpc_method, REVISION);
        }
        json_decref(msgs);
    }
    http_response_free(&resp);
    free(body);
}

static void test_rules(void **state)
{
    fixture_t *f = *state;
    for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++)
        check_rule(f->base, &RULES[i]);
}

/* A request with more headers than the server keeps inline: the ones
 * at the end still count (a bad Origin there, or a second one, is refused). */
static void test_many_headers(void **state)
{
    fixture_t *f = *state;
    enum { FILL = 40 };
    static const struct {
        const char *first, *last; /* before and after the fill, or NULL */
        long status;
    } rows[] = {
        {NULL, NULL, 200},
        {NULL, "Origin: https://app.example", 200},
        {NULL, "Origin: https://evil.example", 403},
        {"Origin: https://app.example", "Origin: https://app.example", 403},
    };
    char fill[FILL][32];
    char *body = mcp_text(7, "server/discover", NULL, NULL);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *headers[FILL + 8] = {STD, "Mcp-Method: server/discover"};
        size_t n = 4;
        if (rows[i].first)
            headers[n++] = rows[i].first;
        for (size_t k = 0; k < FILL; k++) {
            snprintf(fill[k], sizeof fill[k], "X-Fill-%zu: %zu", k, k);
            headers[n++] = fill[k];
        }
        headers[n] = rows[i].last;
        http_response_t resp;
        http_call(&(http_request_t){.base = f->base, .headers = headers, .body = body}, &resp);
        print_message("%s ... %s -> %ld\n", rows[i].first ? rows[i].first : "-",
                      rows[i].last ? rows[i].last : "-", resp.status);
        assert_int_equal(resp.curl_code, 0);
        assert_int_equal(resp.status, rows[i].status);
        json_t *msgs = mcp_messages(&resp);
        assert_non_null(msgs);
        json_t *msg = json_array_get(msgs, 0);
        MCP_ASSERT_SCHEMA_VALID(msg, rows[i].status == 200 ? "server/discover" : NULL, REVISION);
        json_decref(msgs);
        http_response_free(&resp);
    }
    free(body);
}

/* ------------------------------------------------------------------------
 * Body limits (413), Content-Length and chunked
 * ------------------------------------------------------------------------ */

static char *padded_discover(size_t size)
{
    /* A valid discover request padded inside a string to `size` bytes. */
    char *base = mcp_text(1, "server/discover", "\"pad\":\"\"", NULL);
    size_t len = strlen(base);
    assert_true(size > len);
    char *text = malloc(size + 1);
    char *quote = strstr(base, "\"pad\":\"") + 7;
    size_t head = (size_t)(quote - base);
    memcpy(text, base, head);
    memset(text + head, 'x', size - len);
    memcpy(text + head + (size - len), quote, len - head + 1);
    free(base);
    return text;
}

static long post_sized(const char *base, size_t size, bool chunked, int *code)
{
    static const char *const headers[] = {STD, "Mcp-Method: server/discover", NULL};
    char *body = padded_discover(size);
    http_request_t req = {.base = base, .headers = headers, .body = body, .chunked = chunked};
    http_response_t resp;
    http_call(&req, &resp);
    long status = resp.status;
    json_t *msgs = mcp_messages(&resp);
    json_t *msg = json_array_get(msgs, 0);
    assert_non_null(msg);
    MCP_ASSERT_SCHEMA_VALID(msg, json_object_get(msg, "error") ? NULL : "server/discover",
                            REVISION);
    *code = (int)json_integer_value(json_object_get(json_object_get(msg, "error"), "code"));
    json_decref(msgs);
    http_response_free(&resp);
    free(body);
    return status;
}

static void test_body_limit(void **state)
{
    fixture_t *f = *state;
    int code;
    assert_int_equal(post_sized(f->base, BODY_LIMIT, false, &code), 200);
    assert_int_equal(post_sized(f->base, BODY_LIMIT + 1, false, &code), 413);
    assert_int_equal(code, -32600);
    assert_int_equal(post_sized(f->base, 20 * BODY_LIMIT, false, &code), 413);
    /* Chunked: no Content-Length to refuse early; the count decides. */
    assert_int_equal(post_sized(f->base, BODY_LIMIT, true, &code), 200);
    assert_int_equal(post_sized(f->base, BODY_LIMIT + 1, true, &code), 413);
    assert_int_equal(post_sized(f->base, 20 * BODY_LIMIT, true, &code), 413);
    /* The server is still fine. */
    assert_int_equal(post_sized(f->base, 1000, true, &code), 200);
}

/* ------------------------------------------------------------------------
 * Request heads (431) and large bodies
 * ------------------------------------------------------------------------ */

/* The status of a server/discover request with an extra header of `pad`
 * bytes and a body of `body_size` bytes (0: the plain request). */
static long discover_padded(const char *base, size_t pad, size_t body_size)
{
    char *extra = malloc(pad + 8);
    assert_non_null(extra);
    memcpy(extra, "X-Pad: ", 7);
    memset(extra + 7, 'x', pad);
    extra[7 + pad] = '\0';
    const char *headers[] = {STD, "Mcp-Method: server/discover", extra, NULL};
    char *body = body_size ? padded_discover(body_size)
                           : mcp_text(1, "server/discover", NULL, NULL);
    http_response_t resp;
    http_call(&(http_request_t){.base = base, .headers = headers, .body = body}, &resp);
    long status = resp.status;
    if (status == 200) {
        json_t *msgs = mcp_messages(&resp);
        assert_non_null(msgs);
        MCP_ASSERT_SCHEMA_VALID(json_array_get(msgs, 0), "server/discover", REVISION);
        json_decref(msgs);
    }
    http_response_free(&resp);
    free(body);
    free(extra);
    return status;
}

/* max_header_bytes bounds the request head (8 KiB by default), never the
 * body, which passes through to the endpoint's own buffer. */
static void test_header_limit(void **state)
{
    fixture_t *f = start(NULL);
    assert_int_equal(discover_padded(f->base, 7 * 1024, 0), 200);
    assert_int_equal(discover_padded(f->base, 10 * 1024, 0), 431);
    assert_int_equal(discover_padded(f->base, 7 * 1024, 1024 * 1024), 200);
    assert_int_equal(discover_padded(f->base, 0, 4 * 1024 * 1024), 200);
    stop(f);
    f = start(&(mcp_http_options_t){.max_header_bytes = 64 * 1024});
    assert_int_equal(discover_padded(f->base, 60 * 1024, 0), 200);
    assert_int_equal(discover_padded(f->base, 70 * 1024, 0), 431);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Authentication
 * ------------------------------------------------------------------------ */

static long call_whoami(const char *base, const char *authorization, char **text,
                        char **challenge)
{
    const char *headers[] = {STD, "Mcp-Method: tools/call", "Mcp-Name: whoami", authorization,
                             NULL};
    char *body = mcp_text(3, "tools/call", "\"name\":\"whoami\"", NULL);
    http_request_t req = {.base = base, .headers = headers, .body = body};
    http_response_t resp;
    http_call(&req, &resp);
    long status = resp.status;
    json_t *msgs = mcp_messages(&resp);
    json_t *msg = json_array_get(msgs, 0);
    assert_non_null(msg);
    MCP_ASSERT_SCHEMA_VALID(msg, json_object_get(msg, "error") ? NULL : "tools/call", REVISION);
    json_t *block = json_array_get(json_object_get(json_object_get(msg, "result"), "content"), 0);
    *text = block ? strdup(json_string_value(json_object_get(block, "text"))) : NULL;
    *challenge = http_header(&resp, "WWW-Authenticate");
    json_decref(msgs);
    http_response_free(&resp);
    free(body);
    return status;
}

static void test_auth(void **state)
{
    fixture_t *f = start(&(mcp_http_options_t){.endpoint = {.auth = check_token}});
    char *text, *challenge;

    assert_int_equal(call_whoami(f->base, "Authorization: Bearer good", &text, &challenge), 200);
    assert_string_equal(text, "alice"); /* the principal reached the handler */
    assert_null(challenge);
    free(text);

    assert_int_equal(call_whoami(f->base, "X-Nothing: 1", &text, &challenge), 401);
    assert_null(text);
    assert_non_null(challenge);
    assert_string_equal(challenge, "Bearer resource_metadata=\"http://127.0.0.1/.well-known/x\"");
    free(challenge);

    assert_int_equal(call_whoami(f->base, "Authorization: Bearer limited", &text, &challenge),
                     403);
    assert_null(text);
    assert_non_null(challenge);
    free(challenge);
    stop(f);
}

/* ------------------------------------------------------------------------
 * CORS: browser pages at an allowed origin
 * ------------------------------------------------------------------------ */

/* One request to `base`; its status, the response kept in *resp. */
static long cors_call(const char *base, const char *method, const char *const *headers,
                      const char *body, http_response_t *resp)
{
    http_request_t req = {.base = base, .method = method, .headers = headers, .body = body};
    http_call(&req, resp);
    assert_int_equal(resp->curl_code, 0);
    return resp->status;
}

/* The response allows `origin` and varies by Origin, or (origin NULL) has
 * no CORS header at all. */
static void assert_allows(const http_response_t *resp, const char *origin)
{
    char *allowed = http_header(resp, "Access-Control-Allow-Origin");
    if (!origin) {
        assert_null(allowed);
        return;
    }
    assert_non_null(allowed);
    assert_string_equal(allowed, origin);
    free(allowed);
    assert_true(http_header_is(resp, "Vary", "Origin"));
}

#define PAGE "https://app.example"

static void test_cors(void **state)
{
    (void)state;
    fixture_t *f = start(&(mcp_http_options_t){
        .endpoint = {.allowed_origins = ALLOWED_ORIGINS, .auth = check_token, .cors = true}});
    http_response_t resp;

    /* The preflight: 204, before authentication, allowing the methods
     * (this server serves legacy sessions too: GET and DELETE as well as
     * POST) and the headers asked for, remembered for a while. */
    static const char *const preflight[] = {
        "Origin: " PAGE, "Access-Control-Request-Method: POST",
        "Access-Control-Request-Headers: authorization, content-type, mcp-method, mcp-name, "
        "mcp-protocol-version, mcp-param-region",
        NULL};
    assert_int_equal(cors_call(f->base, "OPTIONS", preflight, NULL, &resp), 204);
    assert_allows(&resp, PAGE);
    assert_true(http_header_is(&resp, "Access-Control-Allow-Methods", "GET, POST, DELETE"));
    assert_true(http_header_is(&resp, "Access-Control-Allow-Headers",
                               "authorization, content-type, mcp-method, mcp-name, "
                               "mcp-protocol-version, mcp-param-region"));
    assert_true(http_header_is(&resp, "Access-Control-Max-Age", "600"));
    assert_int_equal(resp.body_len, 0);
    char *length = http_header(&resp, "Content-Length");
    if (length) /* RFC 9110 section 8.6: none on a 204, or at most 0 */
        assert_string_equal(length, "0");
    free(length);
    http_response_free(&resp);

    /* A loopback page is allowed too; a list that is not plain names is
     * not echoed. */
    static const char *const odd[] = {"Origin: http://localhost:5173",
                                      "Access-Control-Request-Method: POST",
                                      "Access-Control-Request-Headers: a(b)", NULL};
    assert_int_equal(cors_call(f->base, "OPTIONS", odd, NULL, &resp), 204);
    assert_allows(&resp, "http://localhost:5173");
    assert_false(http_header_is(&resp, "Access-Control-Allow-Headers", "a(b)"));
    http_response_free(&resp);

    /* A page at a foreign origin is refused, and told nothing. */
    static const char *const foreign[] = {"Origin: https://evil.example",
                                          "Access-Control-Request-Method: POST", NULL};
    assert_int_equal(cors_call(f->base, "OPTIONS", foreign, NULL, &resp), 403);
    assert_allows(&resp, NULL);
    http_response_free(&resp);

    /* The call itself: its answer is the page's to read. */
    char *body = mcp_text(3, "tools/call", "\"name\":\"whoami\",\"arguments\":{}", NULL);
    static const char *const call[] = {STD, "Mcp-Method: tools/call", "Mcp-Name: whoami",
                                       "Origin: " PAGE, "Authorization: Bearer good", NULL};
    assert_int_equal(cors_call(f->base, NULL, call, body, &resp), 200);
    assert_allows(&resp, PAGE);
    char *exposed = http_header(&resp, "Access-Control-Expose-Headers");
    assert_non_null(exposed);
    assert_non_null(strstr(exposed, "WWW-Authenticate"));
    assert_non_null(strstr(exposed, "Mcp-Session-Id"));
    free(exposed);
    assert_non_null(strstr(resp.body, "alice"));
    http_response_free(&resp);

    /* So are its refusals: the challenge of a 401, a 415. */
    static const char *const anonymous[] = {STD, "Mcp-Method: tools/call", "Mcp-Name: whoami",
                                            "Origin: " PAGE, NULL};
    assert_int_equal(cors_call(f->base, NULL, anonymous, body, &resp), 401);
    assert_allows(&resp, PAGE);
    http_response_free(&resp);
    static const char *const text_plain[] = {"Content-Type: text/plain", "Origin: " PAGE,
                                             "Authorization: Bearer good", NULL};
    assert_int_equal(cors_call(f->base, NULL, text_plain, body, &resp), 415);
    assert_allows(&resp, PAGE);
    http_response_free(&resp);

    /* Not from a browser: no CORS headers. */
    static const char *const no_origin[] = {STD, "Mcp-Method: tools/call", "Mcp-Name: whoami",
                                            "Authorization: Bearer good", NULL};
    assert_int_equal(cors_call(f->base, NULL, no_origin, body, &resp), 200);
    assert_allows(&resp, NULL);
    http_response_free(&resp);
    stop(f);

    /* Without legacy sessions, the endpoint takes POST alone. */
    f = start_legacy(MCP_LEGACY_STATELESS, &(mcp_http_options_t){.endpoint = {.cors = true}});
    assert_int_equal(cors_call(f->base, "OPTIONS", odd, NULL, &resp), 204);
    assert_true(http_header_is(&resp, "Access-Control-Allow-Methods", "POST"));
    http_response_free(&resp);
    stop(f);

    /* CORS off (the default): the same preflight is an OPTIONS the
     * endpoint does not take, and answers carry no CORS header. */
    f = start(&(mcp_http_options_t){.endpoint = {.allowed_origins = ALLOWED_ORIGINS}});
    assert_int_equal(cors_call(f->base, "OPTIONS", preflight, NULL, &resp), 405);
    assert_allows(&resp, NULL);
    http_response_free(&resp);
    static const char *const echo_call[] = {STD, "Mcp-Method: tools/call", "Mcp-Name: whoami",
                                            "Origin: " PAGE, NULL};
    assert_int_equal(cors_call(f->base, NULL, echo_call, body, &resp), 200);
    assert_allows(&resp, NULL);
    http_response_free(&resp);
    free(body);
    stop(f);
}

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------ */

static void test_options(void **state)
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "o", .version = "1"},
                                       &err);
    mcp_http_server_t *http = NULL;
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){.bind_address = "nowhere"},
                                           &http, &err),
                     MCP_EINVAL);
    assert_null(http);
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){
                                               .tls_cert_file = "/nonexistent/cert.pem"},
                                           &http, &err),
                     MCP_EINVAL);
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){
                                               .tls_cert_file = "/nonexistent/cert.pem",
                                               .tls_key_file = "/nonexistent/key.pem"},
                                           &http, &err),
                     MCP_EIO);
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){
                                               .endpoint = {.path = "mcp"}},
                                           &http, &err),
                     MCP_EINVAL);

    /* A custom path, and a second server on the port the first holds. */
    fixture_t *f = start(&(mcp_http_options_t){.endpoint = {.path = "/api/mcp"}});
    static const char *const headers[] = {STD, "Mcp-Method: server/discover", NULL};
    char *body = mcp_text(1, "server/discover", NULL, NULL);
    http_response_t resp;
    http_call(&(http_request_t){.base = f->base, .path = "/api/mcp", .headers = headers,
                                .body = body}, &resp);
    assert_int_equal(resp.status, 200);
    json_t *msgs = mcp_messages(&resp);
    assert_non_null(msgs);
    MCP_ASSERT_SCHEMA_VALID(json_array_get(msgs, 0), "server/discover", REVISION);
    json_decref(msgs);
    http_response_free(&resp);
    http_call(&(http_request_t){.base = f->base, .headers = headers, .body = body}, &resp);
    assert_int_equal(resp.status, 404);
    http_response_free(&resp);
    assert_int_equal(mcp_http_server_start(srv, &(mcp_http_options_t){
                                               .port = mcp_http_server_port(f->http)},
                                           &http, &err),
                     MCP_EIO);
    free(body);
    stop(f);
    mcp_error_clear(&err);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------------
 * Connection limit and slow clients
 * ------------------------------------------------------------------------ */

/* A raw TCP connection to the server, optionally sending `text`. */
static int raw_connect(mcp_http_server_t *http, const char *text)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(mcp_http_server_port(http))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    if (text)
        assert_int_equal(send(fd, text, strlen(text), 0), (ssize_t)strlen(text));
    return fd;
}

/* Waits up to `ms` for the server to close the connection. */
static bool closed_within(int fd, int ms)
{
    for (int64_t start = now_ms(); now_ms() - start < ms;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0) {
            char buf[256];
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                return true;
        }
    }
    return false;
}

static long discover_status(const char *base, long timeout_ms)
{
    static const char *const headers[] = {STD, "Mcp-Method: server/discover", NULL};
    char *body = mcp_text(1, "server/discover", NULL, NULL);
    http_response_t resp;
    http_call(&(http_request_t){.base = base, .headers = headers, .body = body,
                                .timeout_ms = timeout_ms}, &resp);
    long status = resp.status;
    if (status == 200) {
        json_t *msgs = mcp_messages(&resp);
        assert_non_null(msgs);
        MCP_ASSERT_SCHEMA_VALID(json_array_get(msgs, 0), "server/discover", REVISION);
        json_decref(msgs);
    }
    http_response_free(&resp);
    free(body);
    return status;
}

/* Bound to the IPv6 loopback: served there (the Host "[::1]:port" is a
 * loopback name), and not on IPv4. */
static void test_ipv6(void **state)
{
    (void)state;
    fixture_t *f = start(&(mcp_http_options_t){.bind_address = "::1"});
    unsigned port = mcp_http_server_port(f->http);
    snprintf(f->base, sizeof f->base, "http://[::1]:%u", port);
    assert_int_equal(discover_status(f->base, 0), 200);
    char v4[64];
    snprintf(v4, sizeof v4, "http://127.0.0.1:%u", port);
    assert_int_equal(discover_status(v4, 2000), 0); /* nothing listens there */
    stop(f);
}

static void test_connection_limits(void **state)
{
    /* Two connections at most: a third is not served while two are open. */
    fixture_t *f = start(&(mcp_http_options_t){.threads = 1, .connection_limit = 2});
    int a = raw_connect(f->http, NULL), b = raw_connect(f->http, NULL);
    assert_int_equal(discover_status(f->base, 500), 0);
    close(a);
    close(b);
    long status = 0;
    for (int64_t start = now_ms(); status != 200 && now_ms() - start < 20000;)
        status = discover_status(f->base, 2000);
    assert_int_equal(status, 200);
    stop(f);

    /* A client that stalls in its headers loses the connection after the
     * connection timeout; nothing waits on it meanwhile. */
    f = start(&(mcp_http_options_t){.connection_timeout_s = 1});
    int slow = raw_connect(f->http, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le");
    assert_int_equal(discover_status(f->base, 0), 200);
    int64_t t0 = now_ms();
    assert_true(closed_within(slow, 20000));
    assert_true(now_ms() - t0 >= 500);
    close(slow);
    stop(f);
}

int main(void)
{
    http_client_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_many_headers),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_header_limit),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_cors),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_connection_limits),
        cmocka_unit_test(test_ipv6),
    };
    return cmocka_run_group_tests(tests, setup_server, teardown_server);
}
